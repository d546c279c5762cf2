"""hw.conv.csc.Csc against a behavioral CBUF and a CMAC/CACC model in the testbench.

Each case is a random small int8 layer (kernels 1..4 each way, strides and dilations 1..3,
pads with a random pad value, C and K not multiples of AC / AK). The testbench plays:

* Cdma: fills the CBUF model (numpy entries, the layout of :mod:`hw.conv.common`, garbage
  everywhere else and in the channels past C) slice by slice and weight chunk by weight chunk
  at random times, raising ``dat_slices`` / ``wt_bytes``; weight bytes go into a ring of the
  weight region (random base, so it wraps) and byte ``i`` is written only when ``i <
  wt_released + cap x BW`` (cap <= the ring, down to a group), so the CSC must release groups
  for the layer to finish and the Cdma overwrites released lanes of a live entry;
* Cbuf: answers ``dat_rd`` / ``wt_rd`` one cycle later;
* Cmac + Cacc: random ready on ``dat``, the Cmac's level on ``wt`` (weight rows while the
  shadow set is not full, AK rows a set), shadow/active weights (a ``swap`` atom waits for
  a full shadow), sums per ``pos`` reset on ``first`` and emitted on ``last``.

Checks: every ``wt`` load and every ``dat`` atom (values and tags) equals the contract's
sequence computed here, the reconstructed outputs equal :func:`sim.conv.cmac.convolve`,
``wt_released`` ends at the weight total, ``done`` pulses once after the ``end`` atom.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from arch.config import load_config
from hw.conv.common import dat_layout, max_stripe
from hw.conv.csc import Csc, stripe_length
from sim.conv.cmac import convolve
from sim.conv.program import INT8, ConvProgram, entries_per_slice
from sim.formats.weight import dc_weight_offsets


# ------------------------------------------------------------------------------------------
# layer generation and the contract's reference sequence

def random_layer(cfg, rng, max_out=6, max_c=None, max_k=None, channels=None, max_w=9):
    """A random valid layer; outputs as many as the padded input allows, down to half."""
    AC, AK = cfg.atomic_c, cfg.atomic_k
    while True:
        kw, kh = rng.randint(1, 4), rng.randint(1, 4)
        sx, sy, dx, dy = (rng.choice([1, 1, 2, 3]) for _ in range(4))
        pl, pt, pr, pb = (rng.choice([0, 0, 1, 2, 3]) for _ in range(4))
        W, H = rng.randint(1, max_w), rng.randint(1, 7)
        span_w, span_h = (kw - 1) * dx + 1, (kh - 1) * dy + 1
        if span_w > W + pl + pr or span_h > H + pt + pb:
            continue
        fw = (W + pl + pr - span_w) // sx + 1
        fh = (H + pt + pb - span_h) // sy + 1
        ow = min(max_out, rng.randint(-(-fw // 2), fw))
        oh = min(max_out, rng.randint(-(-fh // 2), fh))
        C = channels if channels is not None else rng.randint(1, max_c or 2 * AC + 3)
        K = rng.randint(1, max_k or 2 * AK + 3)
        return dict(W=W, H=H, C=C, K=K, kw=kw, kh=kh, sx=sx, sy=sy, dx=dx, dy=dy, pl=pl,
                    pt=pt, ow=ow, oh=oh, pad=rng.randrange(1 << 16))


def program(L) -> ConvProgram:
    """The golden model's program for the fields :func:`convolve` uses (others dummies)."""
    return ConvProgram(
        precision=INT8, in_precision=INT8, width=L["W"], height=L["H"], channels=L["C"],
        batches=1, base=0, line_stride=0, surf_stride=0, batch_stride=0, line_packed=False,
        surf_packed=False, ram_type=1, grain=1, entries=0, cvt=None, in_width=L["W"],
        in_height=L["H"], in_channels=L["C"], kernels=L["K"], kw=L["kw"], kh=L["kh"],
        byte_per_kernel=L["kw"] * L["kh"] * L["C"], weight_bytes=0, weight_base=0,
        weight_ram=1, stride_x=L["sx"], stride_y=L["sy"], dil_x=L["dx"], dil_y=L["dy"],
        pad_left=L["pl"], pad_top=L["pt"], pad_value=L["pad"], out_width=L["ow"],
        out_height=L["oh"], out_channels=L["K"], data_bank=1, weight_bank=1,
        data_reuse=False, weight_reuse=False, skip_data_rls=False, skip_weight_rls=False,
        rls_slices=1, clip_truncate=0)


def reference(cfg, L, cube, wts):
    """The contract's sequence: list of weight loads [AK, AC] and of data atoms
    (data[AC], swap, first, last, pos, end)."""
    AC, AK = cfg.atomic_c, cfg.atomic_k
    ms = max_stripe(cfg)
    C, K, R, S = L["C"], L["K"], L["kh"], L["kw"]
    pad = L["pad"] & 0xFF
    pad = pad - 256 if pad & 0x80 else pad
    N = L["ow"] * L["oh"]
    nj, ng = -(-C // AC), -(-K // AK)
    loads, atoms = [], []
    for g in range(ng):
        k0, kg = g * AK, min(AK, K - g * AK)
        p0 = 0
        while p0 < N:
            ln = stripe_length(N - p0, ms)
            for j in range(nj):
                c0, cj = j * AC, min(AC, C - j * AC)
                for r in range(R):
                    for s in range(S):
                        w = np.zeros((AK, AC), np.int64)
                        w[:kg, :cj] = wts[k0:k0 + kg, c0:c0 + cj, r, s]
                        loads.append(w)
                        first = j == 0 and r == 0 and s == 0
                        last = j == nj - 1 and r == R - 1 and s == S - 1
                        for i in range(ln):
                            oy, ox = divmod(p0 + i, L["ow"])
                            iy = oy * L["sy"] + r * L["dy"] - L["pt"]
                            ix = ox * L["sx"] + s * L["dx"] - L["pl"]
                            d = np.zeros(AC, np.int64)
                            if 0 <= iy < L["H"] and 0 <= ix < L["W"]:
                                d[:cj] = cube[iy, ix, c0:c0 + cj]
                            else:
                                d[:cj] = pad
                            end = (g == ng - 1 and p0 + ln == N and last and i == ln - 1)
                            atoms.append((d, i == 0, first, last, i, end))
            p0 += ln
    return loads, atoms


# ------------------------------------------------------------------------------------------
# CBUF layout (the contract of hw.conv.common)

def slice_entries(cfg, L, cube_y):
    """{in-slice entry: {lane: byte}} of one input line (cube_y [W, C_atoms*ATOM] uint8)."""
    BW, ATOM = cfg.cbuf_bank_width, cfg.memory_atom
    P = BW // ATOM
    W = L["W"]
    atoms = -(-L["C"] // ATOM)
    whole, rem = divmod(atoms, P)
    share = 2 if rem and rem * 2 == P else 4 if rem and rem * 4 == P else 1
    out = {}
    for x in range(W):
        for a in range(atoms):
            j = a // P
            if j < whole or share == 1:
                e, lane = j * W + x, (a % P) * ATOM
            else:
                e = whole * W + x // share
                lane = (x % share) * (BW // share) + (a % P) * ATOM
            out.setdefault(e, {})
            for b in range(ATOM):
                out[e][lane + b] = cube_y[x, a * ATOM + b]
    return out


# ------------------------------------------------------------------------------------------
# the Cmac model's ready and the Cbuf model's read ports

def cmac_ready(ctx, dut, rng, p_ready, loaded):
    """The Cmac model's ready this cycle, (wt, dat): ``wt`` as the Cmac's, a level, high
    while the shadow set is not full (``loaded``: it holds a whole set); ``dat`` random with
    probability ``p_ready``, a ``swap`` atom only once the shadow is full. A weight row
    offered while ``wt`` is low (the Cmac would lose it) fails the test."""
    wt_rdy = not loaded
    ctx.set(dut.wt.ready, wt_rdy)
    assert wt_rdy or not ctx.get(dut.wt.valid), "a weight row offered into a full shadow set"
    swap = ctx.get(dut.dat.payload.swap)
    dat_rdy = rng.random() < p_ready and (loaded or not swap)
    ctx.set(dut.dat.ready, dat_rdy)
    return wt_rdy, dat_rdy


def cbuf_reads(ctx, dut, n_dat, n_wt):
    """The Csc's CBUF reads this cycle, ((en, addr) data, (en, addr) weights), checked to stay
    in their regions (data rows ``[0, n_dat)``, weight rows ``[n_dat, n_dat + n_wt)``)."""
    rd_d = ctx.get(dut.dat_rd.en), ctx.get(dut.dat_rd.addr)
    rd_w = ctx.get(dut.wt_rd.en), ctx.get(dut.wt_rd.addr)
    if rd_d[0]:
        assert rd_d[1] < n_dat, "data read outside the data region"
    if rd_w[0]:
        assert n_dat <= rd_w[1] < n_dat + n_wt, "weight read outside the region"
    return rd_d, rd_w


def cbuf_answer(ctx, dut, cbuf, reads):
    """After the clock edge: the rows ``reads`` (:func:`cbuf_reads`) asked for, from ``cbuf``
    (numpy [rows, bank width] uint8)."""
    (d_en, d_addr), (w_en, w_addr) = reads
    if d_en:
        ctx.set(dut.dat_rd.data, int.from_bytes(cbuf[d_addr].tobytes(), "little"))
    if w_en:
        ctx.set(dut.wt_rd.data, int.from_bytes(cbuf[w_addr].tobytes(), "little"))


# ------------------------------------------------------------------------------------------

def set_regs(ctx, regs, L, E1, data_banks, weight_banks, wbytes):
    r = regs
    vals = [
        (r.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT, L["W"] - 1),
        (r.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT, L["H"] - 1),
        (r.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT, L["C"] - 1),
        (r.D_ENTRY_PER_SLICE.ENTRIES, E1 - 1),
        (r.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT, L["kw"] - 1),
        (r.D_WEIGHT_SIZE_EXT_0.WEIGHT_HEIGHT_EXT, L["kh"] - 1),
        (r.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT, L["C"] - 1),
        (r.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL, L["K"] - 1),
        (r.D_WEIGHT_BYTES.WEIGHT_BYTES, wbytes),
        (r.D_DATAOUT_SIZE_0.DATAOUT_WIDTH, L["ow"] - 1),
        (r.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT, L["oh"] - 1),
        (r.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL, L["K"] - 1),
        (r.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT, L["sx"] - 1),
        (r.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT, L["sy"] - 1),
        (r.D_DILATION_EXT.X_DILATION_EXT, L["dx"] - 1),
        (r.D_DILATION_EXT.Y_DILATION_EXT, L["dy"] - 1),
        (r.D_ZERO_PADDING.PAD_LEFT, L["pl"]),
        (r.D_ZERO_PADDING.PAD_TOP, L["pt"]),
        (r.D_ZERO_PADDING_VALUE.PAD_VALUE, L["pad"]),
        (r.D_BANK.DATA_BANK, data_banks - 1),
        (r.D_BANK.WEIGHT_BANK, weight_banks - 1),
    ]
    for sig, v in vals:
        ctx.set(sig, v)


def run_layer(cfg, L, seed, p_ready=0.7, p_feed=0.5, p_slice=None, instant=False,
              max_cycles=200_000):
    """Simulate one layer; returns (cycles from start to done, atoms). ``p_feed`` /
    ``p_slice``: per-cycle probability that the Cdma model adds weight bytes / a slice."""
    p_slice = p_feed if p_slice is None else p_slice
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    AC, AK, BW, ATOM = cfg.atomic_c, cfg.atomic_k, cfg.cbuf_bank_width, cfg.memory_atom
    DEPTH, NB = cfg.cbuf_bank_depth, cfg.cbuf_banks
    C, K, R, S = L["C"], L["K"], L["kh"], L["kw"]
    catoms = -(-C // ATOM)
    cube = nrng.integers(-128, 128, (L["H"], L["W"], catoms * ATOM)).astype(np.int64)
    wts = nrng.integers(-128, 128, (K, C, R, S)).astype(np.int64)
    E1 = entries_per_slice(L["W"], C, INT8, ATOM, BW)

    # CBUF split: enough data banks, a weight region at least a group big
    data_banks = -(-L["H"] * E1 // DEPTH) + rng.randint(0, 1)
    gbytes = min(AK, K) * C * R * S
    weight_banks = max(1, -(-(gbytes + 2 * BW) // (DEPTH * BW)))
    assert data_banks + weight_banks <= NB
    n_dat, n_wt = data_banks * DEPTH, weight_banks * DEPTH
    wbase_flat = n_dat
    dat_base = rng.choice([0, rng.randrange(n_dat), n_dat - 1 - rng.randrange(min(n_dat, 4))])
    wt_base = rng.choice([0, rng.randrange(n_wt), n_wt - 1 - rng.randrange(min(n_wt, 4))])
    # the Cdma model keeps at most this many weight entries live (wt_released + cap)
    cap = n_wt if instant else rng.randint(-(-gbytes // BW) + 1, n_wt)

    # weight surface bytes (direct-convolution layout, group_k = AK, cube_c = AC)
    total = K * C * R * S
    surf = np.zeros(total, np.int64)
    surf[dc_weight_offsets(K, C, R, S, AK, AC).reshape(-1)] = wts.reshape(-1)
    surf = (surf & 0xFF).astype(np.uint8)

    cbuf = nrng.integers(0, 256, (NB * DEPTH, BW)).astype(np.uint8)   # garbage
    cube_u8 = (cube & 0xFF).astype(np.uint8)

    def write_slice(y):
        for e, lanes in slice_entries(cfg, L, cube_u8[y]).items():
            assert e < E1
            flat = (dat_base + y * E1 + e) % n_dat
            for lane, v in lanes.items():
                cbuf[flat, lane] = v

    def write_weights(lo, hi):
        for i in range(lo, hi):
            cbuf[wbase_flat + (wt_base + i // BW) % n_wt, i % BW] = surf[i]

    loads, atoms = reference(cfg, L, cube, wts)
    dut = Csc(cfg)
    dl = dat_layout(cfg)
    off = {f: dl[f].offset for f in ("swap", "first", "last", "pos", "end")}
    posw = dl["pos"].width
    res = dict(cycles=None)

    def to_i8(v, n):
        return np.frombuffer(int(v).to_bytes(n, "little"), np.int8).astype(np.int64)

    async def tb(ctx):
        set_regs(ctx, dut.regs, L, E1, data_banks, weight_banks, total)
        ctx.set(dut.dat_base, dat_base)
        ctx.set(dut.wt_base, wt_base)
        slices, wbytes = 0, 0
        if instant:
            for y in range(L["H"]):
                write_slice(y)
            write_weights(0, total)
            slices, wbytes = L["H"], total
        ctx.set(dut.dat_slices, slices)
        ctx.set(dut.wt_bytes, wbytes)
        await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        shadow, active = None, None
        acc, outs = {}, []
        ia, iw, done_seen = 0, 0, 0
        rows = []                                  # the weight load's rows so far
        released_seen = [0]
        for cyc in range(max_cycles):
            # --- Cdma model
            if slices < L["H"] and rng.random() < p_slice:
                write_slice(slices)
                slices += 1
                ctx.set(dut.dat_slices, slices)
            released = ctx.get(dut.wt_released)
            assert released >= released_seen[-1]
            if released != released_seen[-1]:
                released_seen.append(released)
            if wbytes < total and rng.random() < p_feed:
                limit = released + cap * BW        # hw.conv.common: i < released + ring
                nb = min(total, wbytes + rng.randint(1, 2 * BW), limit)
                if nb > wbytes:
                    write_weights(wbytes, nb)
                    wbytes = nb
                    ctx.set(dut.wt_bytes, wbytes)
            wt_rdy, dat_rdy = cmac_ready(ctx, dut, rng, p_ready, shadow is not None)
            # --- observe
            if wt_rdy and ctx.get(dut.wt.valid):
                rows.append(to_i8(ctx.get(dut.wt.payload.as_value()), AC))
            if len(rows) == AK:
                w = np.array(rows)
                rows = []
                assert iw < len(loads), "too many weight loads"
                np.testing.assert_array_equal(w, loads[iw], err_msg=f"weight load {iw}")
                iw += 1
                shadow = w
            if dat_rdy and ctx.get(dut.dat.valid):
                v = ctx.get(dut.dat.payload.as_value())
                d = to_i8(v & ((1 << (8 * AC)) - 1), AC)
                tags = tuple(((v >> off[f]) & ((1 << posw) - 1 if f == "pos" else 1))
                             for f in ("swap", "first", "last", "pos", "end"))
                assert ia < len(atoms), "too many atoms"
                ed, *etags = atoms[ia]
                assert tags == tuple(int(t) for t in etags), f"atom {ia}: tags {tags} != {etags}"
                np.testing.assert_array_equal(d, ed, err_msg=f"atom {ia} data")
                ia += 1
                sw, first, last, pos, end = tags
                if sw:
                    active, shadow = shadow, None
                psum = active @ d
                acc[pos] = psum if first else acc[pos] + psum
                if last:
                    outs.append(acc[pos])
            reads = cbuf_reads(ctx, dut, n_dat, n_wt)
            if ctx.get(dut.done):
                done_seen += 1
                assert ia == len(atoms)
                res["cycles"] = cyc
                break
            await ctx.tick()
            cbuf_answer(ctx, dut, cbuf, reads)      # Cbuf model: data one cycle after
        else:
            raise AssertionError(f"timeout: {ia}/{len(atoms)} atoms, {iw}/{len(loads)} loads")
        assert iw == len(loads) and done_seen == 1
        # a few cycles more: no second done, nothing more offered
        for _ in range(4):
            await ctx.tick()
            assert not ctx.get(dut.done) and not ctx.get(dut.dat.valid)
        assert ctx.get(dut.wt_released) == total
        ng = -(-K // AK)
        ends = [min((g + 1) * AK, K) * C * R * S for g in range(ng)]
        assert released_seen[1:] == ends[:len(released_seen) - 1]
        # CMAC/CACC reconstruction against the golden model
        N = L["ow"] * L["oh"]
        assert len(outs) == ng * N
        got = np.stack(outs).reshape(ng, N, AK)
        exp = convolve(program(L), cube[None], wts)[0]          # [K, OH, OW]
        for g in range(ng):
            kg = min(AK, K - g * AK)
            np.testing.assert_array_equal(got[g, :, :kg].T,
                                          exp[g * AK:g * AK + kg].reshape(kg, N))
            assert not got[g, :, kg:].any()

    # pysim writes wide constants (nv_large's weight register) as decimal literals
    sys.set_int_max_str_digits(max(sys.get_int_max_str_digits(), 20000))
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    return res["cycles"], len(atoms)


# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(16))
def test_random_layers_nv_small(seed):
    cfg = load_config("nv_small")
    rng = random.Random(seed)
    L = random_layer(cfg, rng, max_out=7, max_c=20, max_k=19)
    # every other case: slices arrive slowly (the CSC must wait for them)
    run_layer(cfg, L, seed, p_ready=rng.choice([0.4, 0.7, 1.0]),
              p_slice=0.03 if seed % 2 else 0.5)


@pytest.mark.parametrize("seed,channels", [(0, 8), (1, 16), (2, 40), (3, 20), (4, 4), (5, 48)])
def test_cripple_nv_small_256(seed, channels):
    """nv_small_256: 4 memory atoms per entry; C = 4 / 8 / 40 share an entry between 4
    positions, C = 16 / 48 between 2, C = 20 (3 atoms) not."""
    cfg = load_config("nv_small_256")
    rng = random.Random(100 + seed)
    L = random_layer(cfg, rng, max_out=5, max_k=10, channels=channels)
    L.update(W=7, kw=rng.randint(1, 3), dx=1, sx=rng.randint(1, 2), pl=1)
    L["ow"] = (7 + 1 - L["kw"]) // L["sx"] + 1
    run_layer(cfg, L, 100 + seed, p_slice=0.05 if seed % 2 else 0.5)


def test_nv_large_small_layer():
    cfg = load_config("nv_large")
    L = random_layer(cfg, random.Random(7), max_out=3, max_k=34, channels=30)
    L.update(kw=2, kh=1, dx=1, dy=1, sx=1, sy=1, pl=1, pt=0, W=3, H=2, ow=2, oh=2)
    run_layer(cfg, L, 7)


def test_pad_only_and_full_stalls():
    """Outputs reading only padding, with heavy back-pressure."""
    cfg = load_config("nv_small")
    L = dict(W=1, H=1, C=3, K=5, kw=1, kh=1, sx=3, sy=3, dx=1, dy=1, pl=3, pt=3, ow=2,
             oh=2, pad=0x1F80)
    run_layer(cfg, L, 11, p_ready=0.3)


def test_throughput_long_stripes(capsys):
    """All data and weights present, no back-pressure: one atom per cycle in steady state
    (each stripe of max_stripe positions hides its weight load)."""
    cfg = load_config("nv_small")
    L = dict(W=18, H=6, C=16, K=8, kw=3, kh=3, sx=1, sy=1, dx=1, dy=1, pl=0, pt=0, ow=16,
             oh=4, pad=0)
    cycles, atoms = run_layer(cfg, L, 3, p_ready=1.0, instant=True)
    rate = atoms / cycles
    with capsys.disabled():
        print(f"\nCsc nv_small: {atoms} atoms in {cycles} cycles = {rate:.3f} atoms/cycle")
    assert rate > 0.9


@pytest.mark.parametrize("name", ["nv_small", "nv_large"])
def test_verilog(name):
    v = verilog.convert(Csc(load_config(name)), name="csc")
    assert "module csc" in v
