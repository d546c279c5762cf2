"""Cdma (hw/conv/cdma.py) into a Cbuf (hw/conv/cbuf.py) through the real memory interfaces and
AXI memory models under random back-pressure and latency, against the golden CDMA
(``sim.conv.cdma.load_cbuf`` / ``fetch_feature`` / ``fetch_weights``).

The testbench plays the CSC: whenever ``dat_slices`` grows it checks the announced slices in
the CBUF (contract layout of :mod:`hw.conv.common`) against the golden model's input lines;
it checks the weight bytes announced by ``wt_bytes`` and releases them at random
(``wt_released``), so weights larger than the weight banks stream through the ring and an
entry overwritten before its release is caught. At the end of every layer all the layer's
slices and (when they fit the ring) weights are checked again. Layers run back to back in one
simulation, so reuse (partial, full, weights) is checked against ``load_cbuf``'s state.

Winograd layers (``test_cdma_winograd``): the extended slices against the golden
``fetch_winograd`` on a 32 x 32 test build with bank-row entries (default suite), on its
two-column variant with fp16 and on nv_large (slow suite).
"""

import random
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from arch.config import load_config
from arch.registers import register_map
from hw.conv.cbuf import Cbuf
from hw.conv.cdma import Cdma
from hw.mem.dmaif import DmaInterfaces
from sim.conv.cdma import CbufState, load_cbuf
from sim.conv.program import FP16, INT8, INT16, ConvProgram, WinogradInput, entries_per_slice
from sim.formats.weight import dc_weight_offsets
from sim.memory import SparseMemory
from tb.axi_model import AxiMemoryModel
from tb.sdp_unit import view_value


class Bench(Elaboratable):
    def __init__(self, cfg):
        self.cfg = cfg
        self.cdma = Cdma(cfg)
        self.cbuf = Cbuf(cfg)
        # the MCIF needs a write client: an idle one stands in for the rest of the core
        self.dmaif = DmaInterfaces(cfg, ["cdma_dat", "cdma_wt"], ["idle"])

    def elaborate(self, platform):
        m = Module()
        m.submodules.cdma, m.submodules.cbuf = self.cdma, self.cbuf
        m.submodules.dmaif = self.dmaif
        wiring.connect(m, self.cdma.rd_dat, self.dmaif.rd_cdma_dat)
        wiring.connect(m, self.cdma.rd_wt, self.dmaif.rd_cdma_wt)
        m.d.comb += [self.cbuf.wr.eq(self.cdma.cbuf_wr),
                     self.cbuf.data_banks.eq(self.cdma.regs.D_BANK.DATA_BANK + 1)]
        return m


# ------------------------------------------------------------------------------------------
# layers

def make_layer(cfg, rng, *, H=None, W=None, C=None, mode=None, big_weights=False, **flags):
    """A random valid layer (dict of the fetch geometry and reuse flags)."""
    A, BW, DEPTH = cfg.memory_atom, cfg.cbuf_bank_width, cfg.cbuf_bank_depth
    mode = mode or rng.choice(["plain", "packed", "grain", "1x1"])
    if mode == "1x1":
        W = H = 1
    W = W or rng.randint(1, 7)
    H = H or rng.randint(1, 5)
    C = C or rng.randint(1, 5 * A)
    S = -(-C // A)
    line_packed = mode in ("packed", "grain", "1x1")
    ls = W * A if line_packed else W * A + rng.randint(1, 3) * A
    grain = rng.randint(2, H) if mode == "grain" and H > 1 else 1
    surf_packed = mode == "1x1" or rng.random() < 0.3
    ss = ls * H if surf_packed and mode != "1x1" else ls * H + rng.randint(0, 4) * A
    if mode == "1x1":
        ss = rng.randint(2, 6) * A       # the quirk reads base + s*atom whatever the stride
    E = entries_per_slice(W, C, INT8, A, BW)
    need = H
    dbanks = min(cfg.cbuf_banks - 2, -(-(need * E) // DEPTH) + rng.randint(0, 1))
    wbanks = 1
    if big_weights:
        K, kh, kw, wc = 4, 3, 3, 0
        wc = -(-(DEPTH * BW * 3 // 2) // (K * kh * kw))      # 1.5 weight banks
    else:
        K, kh, kw, wc = rng.randint(1, 9), rng.randint(1, 3), rng.randint(1, 3), C
    L = dict(W=W, H=H, C=C, S=S, line_packed=line_packed, surf_packed=surf_packed, ls=ls,
             ss=ss, grain=grain, E=E, need=need, rls=rng.randint(1, need), dbanks=dbanks,
             wbanks=wbanks, K=K, kh=kh, kw=kw, wc=wc, wbytes=K * kh * kw * wc,
             ram=1, wram=1, data_reuse=False, weight_reuse=False, skip_data_rls=False,
             skip_weight_rls=False, mode=mode, cvt=None)
    if cfg.sramif:
        L["ram"], L["wram"] = rng.randint(0, 1), rng.randint(0, 1)
    L.update(flags)
    return L


def place_memory(cfg, rng, mem, L, region):
    """Random bytes under the layer's input and weights; sets the base addresses."""
    A = cfg.memory_atom
    L["base"] = region + rng.randint(0, 7) * A
    extent = L["ss"] * L["S"] + L["ls"] * L["H"] + 16 * A
    L["wbase"] = L["base"] + extent + rng.randint(0, 7) * A
    mem.write(region, np.frombuffer(rng.randbytes(L["wbase"] + L["wbytes"] + 64 - region),
                                    dtype=np.uint8))


def program(L):
    """The golden model's view of the layer."""
    if L.get("wino"):
        return wino_program(L)
    return ConvProgram(
        precision=INT8, in_precision=INT8, width=L["W"], height=L["H"], channels=L["C"],
        batches=1, base=L["base"], line_stride=L["ls"], surf_stride=L["ss"], batch_stride=0,
        line_packed=L["line_packed"], surf_packed=L["surf_packed"], ram_type=L["ram"],
        grain=L["grain"], entries=L["E"], cvt=L["cvt"], in_width=L["W"], in_height=L["need"],
        in_channels=L["wc"], kernels=L["K"], kw=L["kw"], kh=L["kh"],
        byte_per_kernel=L["kw"] * L["kh"] * L["wc"], weight_bytes=L["wbytes"],
        weight_base=L["wbase"], weight_ram=L["wram"], stride_x=1, stride_y=1, dil_x=1,
        dil_y=1, pad_left=0, pad_top=0, pad_value=0, out_width=1, out_height=1,
        out_channels=L["K"], data_bank=L["dbanks"], weight_bank=L["wbanks"],
        data_reuse=L["data_reuse"], weight_reuse=L["weight_reuse"],
        skip_data_rls=L["skip_data_rls"], skip_weight_rls=L["skip_weight_rls"],
        rls_slices=L["rls"], clip_truncate=0)


def make_wino_layer(cfg, rng, *, prec=INT8, W=None, H=None, S=None, sx=None, sy=None,
                    **flags):
    """A random Winograd layer's fetch (:mod:`sim.conv.winograd` rules): ``S`` memory atoms
    per position (whole 32-byte atoms), padding to multiples of 4 x the stride."""
    A, eb = cfg.memory_atom, 2 if prec != INT8 else 1
    S = S or rng.randint(1, 3)
    C = S * A // eb
    sx, sy = sx or rng.randint(1, 2), sy or rng.randint(1, 2)
    L = make_layer(cfg, rng, W=W or rng.randint(1, 9), H=H or rng.randint(1, 6), C=C * eb,
                   mode=flags.pop("mode", None))
    W, H = L["W"], L["H"]

    def pads(n, s):
        lo = rng.randint(0, 3)
        hi = -(lo + n) % (4 * s) + 4 * s * rng.randint(0, 1)
        return lo, hi
    (pl, pr), (pt, pb) = pads(W, sx), pads(H, sy)
    w_ext, h_ext, c_ext = (pl + W + pr) // sx, (pt + H + pb) // sy, C * sx * sy
    E = -(-(w_ext * c_ext * eb) // cfg.cbuf_entry_bytes)
    K = rng.randint(1, 4)
    dbanks = min(cfg.cbuf_banks - 2, -(-(h_ext * E) // cfg.cbuf_entry_depth))
    L.update(C=C, S=S, prec=prec, E=E, need=h_ext, rls=4 * rng.randint(1, h_ext // 4),
             dbanks=dbanks, K=K, kh=4, kw=4, wc=c_ext, wbytes=K * 16 * c_ext * eb,
             wino=dict(pad=(pl, pr, pt, pb), pad_value=rng.randrange(1 << 16), sx=sx, sy=sy,
                       w_ext=w_ext, h_ext=h_ext))
    L.update(flags)
    return L


def wino_program(L):
    """The golden model's view of a Winograd layer's fetch."""
    wg, prec = L["wino"], L.get("prec", INT8)
    eb = 2 if prec != INT8 else 1
    p = program(dict(L, wino=None))
    return replace(p, precision=prec, in_precision=prec, in_width=wg["w_ext"],
                   in_height=wg["h_ext"], in_channels=L["wc"], kw=4, kh=4,
                   byte_per_kernel=16 * L["wc"] * eb, stride_x=wg["sx"], stride_y=wg["sy"],
                   nan_to_zero=bool(L.get("ntz")),
                   winograd=WinogradInput(pad=wg["pad"], pad_value=wg["pad_value"],
                                          pra_truncate=0, pra_truncate_field=0))


def registers(cfg, L):
    """CDMA register words of the layer."""
    blk = register_map(cfg)["CDMA"]
    words = {}

    def setf(reg, **fields):
        r = blk[reg]
        word = words.get(reg, r.reset)
        for name, v in fields.items():
            f = r[name]
            word = (word & ~f.mask) | ((int(v) << f.lsb) & f.mask)
        words[reg] = word

    def setb(reg, value):                  # an address / stride / size register, in bytes
        words[reg] = value & 0xFFFFFFFF

    setf("D_MISC_CFG", DATA_REUSE=L["data_reuse"], WEIGHT_REUSE=L["weight_reuse"],
         SKIP_DATA_RLS=L["skip_data_rls"], SKIP_WEIGHT_RLS=L["skip_weight_rls"])
    setf("D_DATAIN_SIZE_0", DATAIN_WIDTH=L["W"] - 1, DATAIN_HEIGHT=L["H"] - 1)
    setf("D_DATAIN_SIZE_1", DATAIN_CHANNEL=L["C"] - 1)
    setf("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=L["W"] - 1, DATAIN_HEIGHT_EXT=L["H"] - 1)
    setf("D_DAIN_RAM_TYPE", DATAIN_RAM_TYPE=L["ram"])
    setf("D_WEIGHT_RAM_TYPE", WEIGHT_RAM_TYPE=L["wram"])
    setb("D_DAIN_ADDR_LOW_0", L["base"])
    setb("D_DAIN_ADDR_HIGH_0", L["base"] >> 32)
    setb("D_LINE_STRIDE", L["ls"])
    setb("D_SURF_STRIDE", L["ss"])
    setf("D_DAIN_MAP", LINE_PACKED=L["line_packed"], SURF_PACKED=L["surf_packed"])
    setf("D_ENTRY_PER_SLICE", ENTRIES=L["E"] - 1)
    setf("D_FETCH_GRAIN", GRAINS=L["grain"] - 1)
    setf("D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=L["kw"] * L["kh"] * L["wc"] - 1)
    setf("D_WEIGHT_SIZE_1", WEIGHT_KERNEL=L["K"] - 1)
    setb("D_WEIGHT_ADDR_LOW", L["wbase"])
    setb("D_WEIGHT_ADDR_HIGH", L["wbase"] >> 32)
    setb("D_WEIGHT_BYTES", L["wbytes"])
    setf("D_BANK", DATA_BANK=L["dbanks"] - 1, WEIGHT_BANK=L["wbanks"] - 1)
    setf("D_PERF_ENABLE", DMA_EN=1)
    if L.get("wino"):
        wg = L["wino"]
        pl, pr, pt, pb = wg["pad"]
        setf("D_MISC_CFG", CONV_MODE=1, IN_PRECISION=L.get("prec", INT8),
             PROC_PRECISION=L.get("prec", INT8))
        setf("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=wg["w_ext"] - 1,
             DATAIN_HEIGHT_EXT=wg["h_ext"] - 1)
        setf("D_ZERO_PADDING", PAD_LEFT=pl, PAD_RIGHT=pr, PAD_TOP=pt, PAD_BOTTOM=pb)
        setf("D_ZERO_PADDING_VALUE", PAD_VALUE=wg["pad_value"])
        setf("D_CONV_STRIDE", CONV_X_STRIDE=wg["sx"] - 1, CONV_Y_STRIDE=wg["sy"] - 1)
        setf("D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=L["wbytes"] // L["K"] - 1)
        if L.get("ntz"):
            setf("D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=1)
    if L["cvt"] is not None:
        off, scale, trunc = L["cvt"]
        setf("D_CVT_CFG", CVT_EN=1, CVT_TRUNCATE=trunc)
        setf("D_CVT_OFFSET", CVT_OFFSET=off & 0xFFFF)
        setf("D_CVT_SCALE", CVT_SCALE=scale & 0xFFFF)
    return blk, words


def slice_layout(cfg, line, E, wino=False):
    """{entry offset in the slice: {byte lane: value}} of one input line [W, S*atom] (bytes)
    per the contract (independent of the RTL's counters); ``wino``: a Winograd layer's
    extended line, its cripple atoms packed densely (:mod:`hw.conv.cdma`, "Winograd")."""
    A, BW = cfg.memory_atom, cfg.cbuf_entry_bytes
    P = BW // A
    W, S = line.shape[0], line.shape[1] // A
    whole, r = divmod(S, P)
    share = 2 if r * 2 == P else 4 if r * 4 == P else 1
    out = {}
    for a in range(S):
        for x in range(W):
            j = a // P
            if j < whole:
                e, lane = j * W + x, (a % P) * A
            elif wino:                      # the leftover atoms of all positions, packed
                c = x * r + a % P
                e, lane = whole * W + c // P, (c % P) * A
            else:                           # shared by ``share`` positions
                e, lane = whole * W + x // share, (x % share) * (BW // share) + (a % P) * A
            assert e < E, (e, E)
            for k in range(A):
                out.setdefault(e, {})[lane + k] = int(line[x, a * A + k]) & 0xFF
    return out


# ------------------------------------------------------------------------------------------
# the run

def run_layers(cfg, layers, seed, *, latency=(0, 16), backpressure=0.3, max_cycles=30000):
    rng = random.Random(seed)
    bench = Bench(cfg)
    cdma, cbuf = bench.cdma, bench.cbuf
    A, BW, DEPTH = cfg.memory_atom, cfg.cbuf_bank_width, cfg.cbuf_bank_depth
    mem = SparseMemory()
    axis = [AxiMemoryModel(bench.dmaif, "dbb", cfg.dbbif_width, rng=random.Random(seed + 1),
                           latency=latency, backpressure=backpressure,
                           max_burst=cfg.max_burst_length, memory=mem)]
    if cfg.sramif:
        axis.append(AxiMemoryModel(bench.dmaif, "sram", cfg.sramif_width,
                                   rng=random.Random(seed + 2), latency=latency,
                                   backpressure=backpressure, max_burst=cfg.max_burst_length,
                                   memory=mem))
    core = SimpleNamespace(dbb=mem, sram=mem)
    state = CbufState()
    for n, L in enumerate(layers):
        place_memory(cfg, rng, mem, L, 0x10_0000 * (n + 1))
    stats = []
    last_wraw = [None]

    def peek(ctx, flat):
        v = cbuf.peek(ctx, flat)
        return v.to_bytes(BW, "little")

    def peek_entry(ctx, e):                 # a register entry of the data region
        if cfg.cbuf_entry_bytes == BW:
            return peek(ctx, e)
        return peek(ctx, 2 * e) + peek(ctx, 2 * e + 1)

    async def tb(ctx):
        for n, L in enumerate(layers):
            p = program(L)
            cube, weights = load_cbuf(core, cfg, p, state)
            log = state.log[-2:]
            lines = cube[0]                                  # [need, W, C_atoms]
            n_dat = L["dbanks"] * cfg.cbuf_entry_depth
            n_wrow = L["dbanks"] * DEPTH        # the weight region's first bank row
            n_wt = L["wbanks"] * DEPTH
            if log[1] == "weights: reused":
                wraw = last_wraw[0]
            else:
                wraw = last_wraw[0] = mem.gather(L["wbase"] + np.arange(L["wbytes"]))
            blk, words = registers(cfg, L)
            ctx.set(cdma.regs, view_value(cdma.regs.shape(), blk, words))
            ctx.set(cdma.csc, {"rls_slices": L["rls"] - 1, "height_ext": L["need"] - 1})
            ctx.set(cdma.wt_released, 0)
            ars = sum(len(a.ar_log) for a in axis)
            ctx.set(cdma.start, 1)
            await ctx.tick()
            ctx.set(cdma.start, 0)

            seen_slices, released, dat_done, wt_done = 0, 0, False, False
            dat_base = None

            if L.get("prec", INT8) != INT8:           # 16-bit elements as byte pairs
                lines = (lines & 0xFFFF).astype("<u2").view(np.uint8).reshape(
                    *lines.shape[:-1], -1)

            def check_slice(k):
                exp = slice_layout(cfg, lines[k], L["E"], bool(L.get("wino")))
                pos = (dat_base + k * L["E"]) % n_dat
                for e, lanes in exp.items():
                    got = peek_entry(ctx, (pos + e) % n_dat)
                    for lane, v in lanes.items():
                        assert got[lane] == v, (n, "slice", k, "entry", e, "lane", lane, got.hex(), bytes(lanes.values()).hex())

            def check_weights(lo, hi):
                for e in range(lo // BW, -(-hi // BW)):
                    got = peek(ctx, n_wrow + (e % n_wt))
                    for i in range(max(lo, e * BW), min(hi, (e + 1) * BW)):
                        assert got[i % BW] == wraw[i], (n, "weight byte", i, got.hex(), bytes(wraw[e * BW:(e + 1) * BW]).hex(), released, hi)

            cycles = 0
            while not (dat_done and wt_done):
                await ctx.tick()
                cycles += 1
                assert cycles < max_cycles, (n, "timeout", seen_slices, released)
                if ctx.get(cdma.busy) and dat_base is None:
                    dat_base = ctx.get(cdma.dat_base)
                if dat_base is None:
                    continue
                sl = ctx.get(cdma.dat_slices)
                assert sl >= seen_slices
                for k in range(seen_slices, min(sl, L["need"])):
                    check_slice(k)
                seen_slices = sl
                wb = ctx.get(cdma.wt_bytes)
                assert wb <= released + n_wt * BW or L["skip_weight_rls"], (n, "ring overrun")
                if wb > released and (rng.random() < 0.1 or wb == L["wbytes"]):
                    check_weights(released, wb)
                    if not L["skip_weight_rls"]:
                        released = rng.randint(released, wb)
                        ctx.set(cdma.wt_released, released)
                dat_done |= bool(ctx.get(cdma.dat_done))
                wt_done |= bool(ctx.get(cdma.wt_done))
            assert ctx.get(cdma.dat_slices) >= L["need"]
            assert ctx.get(cdma.wt_bytes) == L["wbytes"]
            # the whole layer once more: slices, and the weights when they fit the ring
            for k in range(L["need"]):
                check_slice(k)
            if L["wbytes"] <= n_wt * BW and not L.get("wino"):
                check_weights(0, L["wbytes"])
                got = np.frombuffer(b"".join(peek(ctx, n_wrow + e) for e in
                                             range(-(-L["wbytes"] // BW))), np.uint8)
                raw = got[:L["wbytes"]].astype(np.int64)
                raw = np.where(raw >= 128, raw - 256, raw)
                off = dc_weight_offsets(L["K"], L["wc"], L["kh"], L["kw"], cfg.atomic_k,
                                        cfg.atomic_c)
                assert np.array_equal(raw[:L["K"] * L["kh"] * L["kw"] * L["wc"]][off],
                                      weights), (n, "weights")
            reads = sum(len(a.ar_log) for a in axis) - ars
            if log == ["data: full reuse", "weights: reused"]:
                assert reads == 0, (n, "full reuse must not read memory")
            if L.get("prec") == FP16:              # the padded cube's NaN / Inf counts
                st = cdma.status
                got = (ctx.get(st.D_NAN_INPUT_DATA_NUM.NAN_DATA_NUM),
                       ctx.get(st.D_INF_INPUT_DATA_NUM.INF_DATA_NUM))
                assert got == state.stats["data"], (n, "fp16 counts", got, state.stats)
            stall = ctx.get(cdma.status.D_PERF_DAT_READ_STALL.DAT_RD_STALL)
            stats.append(dict(cycles=cycles, log=log, dat_stall=stall))
            ctx.set(cdma.wt_released, L["wbytes"])
            for _ in range(rng.randint(0, 5)):
                await ctx.tick()
            ctx.set(cdma.end, 1)
            await ctx.tick()
            ctx.set(cdma.end, 0)
            while ctx.get(cdma.busy):
                await ctx.tick()

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    for a in axis:
        a.add_to(sim)
    sim.add_testbench(tb)
    sim.run()
    return stats


# ------------------------------------------------------------------------------------------
# tests

@pytest.mark.parametrize("name,count", [("nv_small", 12), ("nv_small_256", 8), ("nv_large", 4)])
def test_cdma_random_layers(name, count):
    """Fresh layers of every fetch mode (plain, packed lines, fetch grains, packed 1x1;
    channels not a multiple of the atom), one with weights larger than the weight bank."""
    cfg = load_config(name)
    rng = random.Random(7)
    modes = ["plain", "packed", "grain", "1x1"]
    layers = [make_layer(cfg, rng, mode=modes[i % 4]) for i in range(count)]
    P = cfg.cbuf_bank_width // cfg.memory_atom
    for r in range(1, P):                   # every cripple group: shared by 4, 2, or not
        layers.append(make_layer(cfg, rng, mode="plain", W=4 + r, H=2,
                                 C=(P + r) * cfg.memory_atom - r))
    if name == "nv_small":
        layers.append(make_layer(cfg, rng, mode="plain", big_weights=True))
    stats = run_layers(cfg, layers, seed=3)
    assert all(s["log"] == ["data: fetched", "weights: fetched"] for s in stats)
    assert sum(s["dat_stall"] for s in stats) > 0       # D_PERF_DAT_READ_STALL counts


def test_cdma_feature_convertor():
    """The input convertor on feature input (every byte of every atom, cripple groups
    included): negative, large and identity scales, truncation with ties, saturation both
    ways, and a plain layer after them (the convertor is off again)."""
    cfg = load_config("nv_small_256")
    rng = random.Random(11)
    A = cfg.memory_atom
    cvts = [(-3, 37, 4), (100, -300, 3), (0, 1, 0), (-32768, 32767, 20), (5, 3, 1),
            (17, 1000, 63)]
    modes = ["plain", "packed", "grain", "1x1", "plain", "packed"]
    layers = [make_layer(cfg, rng, mode=md, cvt=c) for md, c in zip(modes, cvts)]
    layers.append(make_layer(cfg, rng, mode="plain", W=5, H=2, C=3 * A - 1, cvt=(9, -7, 2)))
    layers.append(make_layer(cfg, rng, mode="plain"))
    stats = run_layers(cfg, layers, seed=5)
    assert all(s["log"] == ["data: fetched", "weights: fetched"] for s in stats)


def test_cdma_reuse():
    """Partial data reuse + weight reuse, then full data reuse (no memory reads at all)."""
    cfg = load_config("nv_small")
    rng = random.Random(11)
    l1 = make_layer(cfg, rng, mode="plain", W=5, H=5, C=20, skip_weight_rls=True)
    l1.update(rls=2, dbanks=4)
    l2 = make_layer(cfg, rng, mode="packed", W=5, H=3, C=20, data_reuse=True,
                    weight_reuse=True, skip_data_rls=True, skip_weight_rls=True)
    # the weights are kept: same geometry; the CSC uses the 3 kept + 3 new lines
    l2.update({k: l1[k] for k in ("K", "kh", "kw", "wc", "wbytes", "dbanks", "wbanks")})
    l2.update(need=6)
    l3 = dict(l2, data_reuse=True, weight_reuse=True, skip_data_rls=False, rls=4)
    stats = run_layers(cfg, [l1, l2, l3], seed=5)
    assert [s["log"] for s in stats] == [
        ["data: fetched", "weights: fetched"],
        ["data: partial reuse of 3 slices", "weights: reused"],
        ["data: full reuse", "weights: reused"]]


def test_cdma_reuse_ring_wrap():
    """Partial reuse whose new lines run past the end of the data ring (and wrap to 0)."""
    cfg = load_config("nv_small")
    rng = random.Random(13)
    l1 = make_layer(cfg, rng, mode="packed", W=8, H=60, C=8)
    l1.update(rls=30, dbanks=1)
    l2 = make_layer(cfg, rng, mode="plain", W=8, H=20, C=8, data_reuse=True)
    l2.update(need=50, dbanks=1, rls=50)
    stats = run_layers(cfg, [l1, l2], seed=9)
    assert stats[1]["log"][0] == "data: partial reuse of 30 slices"


@pytest.mark.parametrize("name", ["nv_small", "nv_large"])
def test_cdma_verilog(name):
    text = verilog.convert(Cdma(load_config(name)), name="cdma")
    assert "module cdma" in text


# ------------------------------------------------------------------------------------------
# Winograd (CONV_MODE=WINOGRAD): the padded, channel-extended cube

#: the smallest Winograd datapath (32-byte atoms, Atomic-C 32) with int16 beside int8 (a
#: 256-bit DBBIF: an atom a beat)
WINO_SMALL = load_config("nv_small_256").replace(
    name="nv_small_wino", winograd=True, atomic_k=32, memory_atom=32, dbbif_width=256,
    data_types=frozenset({"int8", "int16"}))
#: the same on two-column entries (two 32-byte atoms per register entry), fp16 too
WINO_SMALL_2COL = WINO_SMALL.replace(name="nv_small_wino_2col", cbuf_entry_width=64,
                                     data_types=frozenset({"int8", "int16", "fp16"}))


@pytest.mark.parametrize("cfg", [
    WINO_SMALL, pytest.param(WINO_SMALL_2COL, marks=pytest.mark.slow),
    pytest.param(load_config("nv_large"), marks=pytest.mark.slow)], ids=lambda c: c.name)
def test_cdma_winograd(cfg):
    """Winograd layers (strides 1..3, every padding position, pad values, int8, and int16 and
    fp16 on builds with them (fp16: NaN / infinity counts of the padded cube, NaN flush), the input convertor on the padded cube, cripple atoms of the extended
    channels), direct layers between them, then a Winograd layer reusing a Winograd layer's
    kept slices: every extended slice in the CBUF equals the golden ``fetch_winograd``."""
    rng = random.Random(21)
    precs = [INT8] + [q for q, n in ((INT16, "int16"), (FP16, "fp16")) if n in cfg.data_types]
    layers = []
    for i in range(7):
        prec = precs[i % len(precs)]
        L = make_wino_layer(cfg, rng, prec=prec, sx=1 + i % 3, sy=1 + (i // 2) % 3,
                            mode=["plain", "packed", "grain", "1x1"][i % 4])
        if prec == FP16:                # a NaN or an infinity pad value, flushed or not
            L["wino"]["pad_value"] = rng.choice([0x7E01, 0xFC00, 0x3C00])
            L["ntz"] = rng.random() < 0.5
        if i % 3 == 2 and prec == INT8:
            L["cvt"] = (rng.randint(-50, 50), rng.randint(-300, 300), rng.randint(0, 6))
        layers.append(L)
        if i == 3:                      # a direct layer between (the mode switches back)
            layers.append(make_layer(cfg, rng, mode="plain", H=2, C=2 * cfg.cbuf_entry_bytes))
    # partial reuse: the kept extended slices, then the layer's own fetch
    l1 = make_wino_layer(cfg, rng, W=6, H=6, S=1, sx=1, sy=1, mode="plain")
    l1.update(rls=4, dbanks=cfg.cbuf_banks - 2)
    l2 = dict(l1, data_reuse=True)
    stats = run_layers(cfg, layers + [l1, l2], seed=23)
    assert all(s["log"][0] == "data: fetched" for s in stats[:-1])
    assert stats[-1]["log"][0] == f"data: partial reuse of {l1['need'] - 4} slices"


def test_cdma_winograd_does_not_reuse_direct_weights():
    """A Winograd layer with WEIGHT_REUSE after a direct layer that kept weights of the same
    WEIGHT_BYTES under the same bank split fetches its own weights (NVDLA's CDMA and the
    golden load_cbuf: kept weights of the other mode are not reused; ConvCheck accepts the
    layer), and so does a direct layer after a Winograd one."""
    cfg = WINO_SMALL
    rng = random.Random(31)
    l2 = make_wino_layer(cfg, rng, W=4, H=4, S=1, sx=1, sy=1, mode="plain",
                         weight_reuse=True, skip_weight_rls=True)
    l1 = make_layer(cfg, rng, mode="plain", W=4, H=4, C=l2["wc"], skip_weight_rls=True)
    l1.update({k: l2[k] for k in ("K", "kh", "kw", "wc", "wbytes", "dbanks", "wbanks")})
    l3 = dict(l1, weight_reuse=True, skip_weight_rls=False)
    stats = run_layers(cfg, [l1, l2, l3], seed=31)
    assert [s["log"][1] for s in stats] == ["weights: fetched"] * 3
