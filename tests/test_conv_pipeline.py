"""The whole convolution pipeline (hw/conv/conv.py: Cdma, Cbuf, Csc, Cmac, Cacc with their
layer control) in Amaranth simulation, through the real memory interfaces and AXI memory
models under random back-pressure and latency, against the golden model
(:func:`sim.conv.cdma.load_cbuf`, :func:`sim.conv.cmac.convolve`, :func:`sim.conv.cacc.deliver`).

Programs are the random layers of :mod:`sim.conv.random_programs` (single layers and reuse
pairs, run back to back in one simulation so the CDMA's reuse state carries over) plus
hand-made shapes that once hung the RTL: heavy top / bottom padding (output rows reading
lines past the input), full data reuse after SKIP_DATA_RLS with a CSC height different from
the fetch height, partial reuse. Every output value leaving CACC is checked, in SDP's input
order (kernel group, line, position, channels T at a time).

Builds whose CBUF banks drop the read-before-write guarantee (``no_rw_check``, one memory
atom per entry: :mod:`hw.conv.cbuf`) run with ``poison_collisions``: a read of the entry
written in the same cycle returns inverted data, so these tests fail if the pipeline ever
uses such a read.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from arch.config import load_config
from arch.registers import register_map
import hw.conv.conv
from hw.conv.cbuf import Cbuf
from hw.conv.conv import BLOCKS, ConvPipeline
from hw.mem.dmaif import DmaInterfaces
from sim.conv.cacc import deliver
from sim.conv.cdma import CbufState, load_cbuf
from sim.conv.cmac import convolve
from sim.conv.program import decode
from sim.conv.random_programs import (REUSE_KINDS, _Redraw, conv_layer, random_pair,
                                      random_program)
from sim.memory import SparseMemory
from sim.regs import GroupView
from tb.axi_model import AxiMemoryModel
from tb.sdp_unit import flying_cube, view_value


def _cbuf(cfg):
    return Cbuf(cfg, poison_collisions=cfg.memory_atom == cfg.cbuf_bank_width)


@pytest.fixture(autouse=True)
def poisoned_cbuf(monkeypatch):
    monkeypatch.setattr(hw.conv.conv, "Cbuf", _cbuf)


class Bench(Elaboratable):
    def __init__(self, cfg):
        self.cfg = cfg
        self.rmap = register_map(cfg)
        self.conv = ConvPipeline(cfg, self.rmap)
        self.dmaif = DmaInterfaces(cfg, ["cdma_dat", "cdma_wt"], ["idle"])

    def elaborate(self, platform):
        m = Module()
        m.submodules.conv, m.submodules.dmaif = self.conv, self.dmaif
        wiring.connect(m, self.conv.rd_cdma_dat, self.dmaif.rd_cdma_dat)
        wiring.connect(m, self.conv.rd_cdma_wt, self.dmaif.rd_cdma_wt)
        return m


def expected_stream(cfg, out, precision=0):
    """[(lane values)] of one layer's CACC output ([K, Ho, Wo] int32) in SDP's input order;
    lanes of kernels past K are None (not checked). int16 (``precision`` 1): kernel groups of
    Atomic-K / 2."""
    AK, T = cfg.atomic_k // (2 if precision else 1), cfg.sdp_bs_throughput
    K, Ho, Wo = out.shape
    seq = []
    for g in range(-(-K // AK)):
        for y in range(Ho):
            for x in range(Wo):
                for i in range(AK // T):
                    seq.append(tuple(int(out[k, y, x]) if k < K else None
                                     for k in range(g * AK + i * T, g * AK + i * T + T)))
    return seq


def _probes(conv):
    cdma, csc = conv._cdma, conv._csc
    return {"cdma.busy": cdma.busy, "cdma.dat_base": cdma.dat_base,
            "cdma.dat_slices": cdma.dat_slices, "cdma.wt_bytes": cdma.wt_bytes,
            "csc.busy": csc.busy, "csc.wt_released": csc.wt_released}


def run_layers(cfg, layers, seed, *, latency=(0, 16), backpressure=0.3, out_ready=0.8,
               max_cycles=50_000):
    """Run :func:`conv_layer` dicts back to back; returns the cycles of each layer."""
    rng = random.Random(seed)
    bench = Bench(cfg)
    conv, rmap = bench.conv, bench.rmap
    dbb, sram = SparseMemory(), SparseMemory()
    axis = [AxiMemoryModel(bench.dmaif, "dbb", cfg.dbbif_width, rng=random.Random(seed + 1),
                           latency=latency, backpressure=backpressure,
                           max_burst=cfg.max_burst_length, memory=dbb)]
    if cfg.sramif:
        axis.append(AxiMemoryModel(bench.dmaif, "sram", cfg.sramif_width,
                                   rng=random.Random(seed + 2), latency=latency,
                                   backpressure=backpressure, max_burst=cfg.max_burst_length,
                                   memory=sram))
    class Core:                                  # what load_cbuf needs of the golden core
        pass
    core = Core()
    core.dbb, core.sram = dbb, (sram if cfg.sramif else dbb)
    state = CbufState()
    cycles = []

    async def tb(ctx):
        for n, L in enumerate(layers):
            for addr, data, ram in L["images"]:
                (dbb if ram == 1 or not cfg.sramif else sram).write(addr, data)
            views = [GroupView(rmap[b], L["regs"][b]) for b in BLOCKS]
            p = decode(cfg, *views)
            cube, weights = load_cbuf(core, cfg, p, state)
            out, _ = deliver(convolve(p, cube, weights), p.clip_truncate)
            # every batch's cube in turn (batch-major: CACC delivers batch 0, then 1, ...)
            exp = [t for b in range(out.shape[0])
                   for t in expected_stream(cfg, out[b], p.precision)]
            for b in BLOCKS:
                nm = b.lower()
                port = getattr(conv, f"{nm}_regs")
                ctx.set(port, view_value(port.shape(), rmap[b], L["regs"][b]))
            for _ in range(rng.randint(0, 3)):
                await ctx.tick()
            ctx.set(conv.sdp, flying_cube(rmap["SDP"], L["regs"]["SDP"], cfg))
            ctx.set(conv.sdp_wait, 1)
            for b in BLOCKS:
                ctx.set(getattr(conv, f"{b.lower()}_op_en"), 1)
            got = []
            t = 0
            while True:
                ready = rng.random() < out_ready
                ctx.set(conv.out.ready, ready)
                if ready and ctx.get(conv.out.valid):
                    k = len(got)
                    pl = ctx.get(conv.out.payload)
                    vals = tuple(int(v) for v in pl.data)
                    assert k < len(exp), (n, "extra output", vals)
                    for lane, (g, e) in enumerate(zip(vals, exp[k])):
                        assert e is None or g == e, (n, "transfer", k, "lane", lane, g, e,
                                                     L["info"])
                    assert bool(pl.last) == (k == len(exp) - 1), (n, "last", k)
                    got.append(vals)
                await ctx.tick()
                t += 1
                if t >= max_cycles:
                    state_dump = {k: ctx.get(v) for k, v in _probes(conv).items()}
                    raise AssertionError((n, "timeout", len(got), len(exp), state_dump,
                                          L["info"]))
                assert not ctx.get(conv.flying_abort), (n, "program rejected", L["info"])
                if ctx.get(conv.cdma_done):
                    for b in BLOCKS:
                        ctx.set(getattr(conv, f"{b.lower()}_op_en"), 0)
                    break
            assert len(got) == len(exp), (n, "outputs", len(got), len(exp))
            cycles.append(t)
            await ctx.tick()       # as the register files: the next group the cycle after done

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    for a in axis:
        a.add_to(sim)
    sim.add_testbench(tb)
    sim.run()
    return cycles


def _layer(cfg, rng, slot=0, **kw):
    """A :func:`conv_layer` with random data and weights of the given geometry."""
    C, H, W, K = kw["C"], kw["H"], kw["W"], kw["K"]
    kh, kw_ = kw.get("kh", 1), kw.get("kw", 1)
    data = rng.integers(-128, 128, (C, kw.pop("tensor_h", H), W))
    weights = rng.integers(-128, 128, (K, C, kh, kw_))
    return conv_layer(cfg, data=data, weights=weights, slot=slot, **kw)


# ------------------------------------------------------------------------------------------
# the shapes of conv_random_1_0006 / _0010 / _0023 (seed 1, nv_small), which hung

def test_pipeline_pad_bottom_full_reuse():
    """Output rows reading lines past the input (bottom padding), first layer keeping its
    data (SKIP_DATA_RLS / SKIP_WEIGHT_RLS), second layer reusing all of it with a smaller
    CSC height (conv_random_1_0010)."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(10)
    l1 = _layer(cfg, rng, W=1, H=2, C=14, K=1, kh=5, kw=1, stride=(1, 3), dilation=(2, 1),
                pad=(0, 0, 3, 2), banks=(30, 2), reuse=(0, 0, 1, 1))
    wt = l1["images"][1][1]
    l2 = conv_layer(cfg, W=1, H=2, C=14, K=1, kh=5, kw=1, stride=(1, 3), dilation=(2, 1),
                    pad=(0, 0, 3, 1), banks=(30, 2), reuse=(1, 1, 0, 0), slot=1,
                    emit_feature=False, feature_base=l1["info"]["feature_base"],
                    emit_weights=False, weight_base=l1["info"]["weight_base"], csc_height=1)
    assert wt is not None
    run_layers(cfg, [l1, l2], seed=1)


def test_pipeline_pad_top_full_reuse():
    """Heavy top padding with a tall dilated kernel, SKIP_DATA_RLS then full data reuse with
    another kernel count and a fetch grain (conv_random_1_0006)."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(6)
    l1 = _layer(cfg, rng, W=5, H=12, C=27, K=2, kh=5, kw=3, stride=(4, 4), dilation=(1, 2),
                pad=(0, 0, 8, 0), banks=(12, 20), reuse=(0, 0, 1, 0))
    l2 = _layer(cfg, rng, slot=1, W=5, H=12, C=27, K=18, kh=5, kw=3, stride=(4, 4),
                dilation=(1, 2), pad=(0, 0, 8, 0), banks=(12, 20), reuse=(1, 0, 0, 0),
                grain=12, rls_slices=3, emit_feature=False,
                feature_base=l1["info"]["feature_base"])
    run_layers(cfg, [l1, l2], seed=2)


def test_pipeline_fetch_outlives_csc():
    """The CSC finishes before the CDMA has fetched everything: input lines no output reads
    (stride 8 over 12 lines) and a weight surface far longer than the kernels (WEIGHT_BYTES
    beyond the weight ring); the next layers must not see any of it, and a kept (SKIP_DATA_RLS)
    unread line must be whole for the full reuse that follows."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(5)
    l1 = _layer(cfg, rng, W=16, H=12, C=32, K=3, stride=(1, 8), banks=(8, 1))
    extra = 3 * cfg.cbuf_bank_depth * cfg.cbuf_bank_width
    for b in ("CDMA", "CSC"):
        l1["regs"][b]["D_WEIGHT_BYTES"] += extra
    l2 = _layer(cfg, rng, slot=1, W=6, H=12, C=9, K=2, kh=3, stride=(1, 5), banks=(2, 2),
                reuse=(0, 0, 1, 0))
    l3 = _layer(cfg, rng, slot=0, W=6, H=12, C=9, K=2, kh=3, kw=2, stride=(1, 1),
                banks=(2, 2), reuse=(1, 0, 0, 0), emit_feature=False,
                feature_base=l2["info"]["feature_base"])
    run_layers(cfg, [l1, l2, l3], seed=4)


def test_pipeline_partial_reuse():
    """Partial data reuse: layer 1 releases some lines, layer 2 fetches the rest of the tensor
    and convolves kept + new lines (conv_random_1_0023)."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(23)
    l1 = _layer(cfg, rng, W=13, H=6, C=2, K=1, kh=4, kw=6, stride=(1, 3), pad=(3, 0, 0, 0),
                banks=(1, 1), fetch_rows=(0, 6), tensor_h=7, rls_slices=1)
    l2 = _layer(cfg, rng, slot=1, W=13, H=7, C=2, K=2, kh=4, kw=6, stride=(1, 3),
                pad=(3, 0, 0, 0), banks=(1, 1), reuse=(1, 0, 0, 0), fetch_rows=(6, 1),
                csc_height=6, rls_slices=6, emit_feature=False,
                feature_base=l1["info"]["feature_base"])
    run_layers(cfg, [l1, l2], seed=3)


# ------------------------------------------------------------------------------------------
# random programs

def _random_programs(cfg, seed, count, max_macs):
    rng = np.random.default_rng(seed)
    layers = []
    while len(layers) < count:
        try:
            if rng.random() < 0.5:
                layers += random_pair(cfg, rng, max_macs)
            else:
                layers.append(random_program(cfg, rng, max_macs))
        except _Redraw:
            continue
    return layers


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pipeline_random(seed):
    """Random layers and reuse pairs back to back (nv_small)."""
    cfg = load_config("nv_small")
    layers = _random_programs(cfg, seed, 8, max_macs=20_000)
    run_layers(cfg, layers, seed=seed)


def test_pipeline_random_data_read_regs():
    """The routed board's CBUF (16 banks of 16-bit lanes) with a register after the data
    port's multiplexer (``cbuf_data_read_regs=1``: the CSC's data two cycles after the read)."""
    cfg = load_config("nv_small").replace(cbuf_banks=16, cbuf_ram_width=16,
                                          cbuf_data_read_regs=1)
    layers = _random_programs(cfg, 5, 8, max_macs=20_000)
    run_layers(cfg, layers, seed=5)


@pytest.mark.parametrize("read_regs", [1, 2])
def test_pipeline_random_write_regs(read_regs):
    """The board builds' CBUF timing choices together: the write registered in the CBUF
    (``cbuf_write_regs=1``: the CDMA's announcements a cycle later) and the data port's
    registers (after the multiplexer; with 2 also before the banks: the CSC's data three
    cycles after the read), on all 32 banks of 16-bit lanes."""
    cfg = load_config("nv_small").replace(cbuf_ram_width=16, cbuf_data_read_regs=read_regs,
                                          cbuf_write_regs=1)
    layers = _random_programs(cfg, 7 + read_regs, 8, max_macs=20_000)
    run_layers(cfg, layers, seed=7 + read_regs)


def test_pipeline_reuse_pairs():
    """One pair of every reuse kind (full / partial data reuse, weight reuse, both)."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(17)
    layers = []
    for kind in REUSE_KINDS:
        while True:
            try:
                layers += random_pair(cfg, rng, 15_000, kind=kind)
                break
            except _Redraw:
                continue
    run_layers(cfg, layers, seed=17)


def test_pipeline_random_nv_small_256():
    """Atomic-C 32 (4 memory atoms per CBUF entry: shared cripple entries)."""
    cfg = load_config("nv_small_256")
    layers = _random_programs(cfg, 4, 6, max_macs=30_000)
    run_layers(cfg, layers, seed=4)


@pytest.mark.slow
def test_pipeline_two_column_entries_cripple():
    """Two-column CBUF entries (nv_small_256_2col: register entries of two 32-byte bank rows,
    8 memory atoms): every count of leftover atoms of a line's last entry (0..7: shared by 4
    positions at 2 atoms, by 2 at 4, not shared otherwise) with odd widths, padding, strides
    and a tall kernel, against the golden model."""
    from .conftest import NV_SMALL_256_2COL as cfg
    rng = np.random.default_rng(8)
    layers = []
    for i, C in enumerate((8, 16, 24, 32, 40, 48, 56, 64, 80, 100, 2, 96)):
        W = 3 + i % 5
        layers.append(_layer(cfg, rng, slot=i % 2, W=W, H=4 + i % 3, C=C, K=1 + 3 * i,
                             kh=1 + i % 3, kw=1 + (i + 1) % 3, pad=(i % 2, 1, 1, 0),
                             stride=(1 + i % 2, 1), pad_value=i * 29))
    run_layers(cfg, layers, seed=8)


@pytest.mark.slow
def test_pipeline_random_two_column_entries():
    """Random int8 layers and reuse pairs on two-column CBUF entries (nv_small_256_2col)."""
    from .conftest import NV_SMALL_256_2COL as cfg
    rng = np.random.default_rng(6)
    layers = []
    while len(layers) < 8:
        try:
            layers += random_pair(cfg, rng, 20_000, int8_only=True) if rng.random() < 0.5 \
                else [random_program(cfg, rng, 20_000, int8_only=True)]
        except _Redraw:
            continue
    run_layers(cfg, layers, seed=6)


def _int16_layer(cfg, rng, i, W, H, C, K, kh, kw):
    """An int16 layer of full-range data and weights (layer ``i`` of a test's list: its
    slot, padding, stride and pad value follow ``i``)."""
    data = rng.integers(-32768, 32768, (C, H, W))
    weights = rng.integers(-32768, 32768, (K, C, kh, kw))
    return conv_layer(cfg, W=W, H=H, C=C, K=K, kh=kh, kw=kw, prec=1, data=data,
                      weights=weights, slot=i % 2, pad=(i % 2, 1, 1, 0),
                      stride=(1 + i % 2, 1), pad_value=(i * 4099) & 0xFFFF, clip=16)


@pytest.mark.slow
def test_pipeline_int16_two_column_entries():
    """int16 layers on two-column CBUF entries (nv_small_256_2col): an int16 channel group
    (2 x Atomic-C bytes) is a register entry, its halves the entry's two rows. Leftover
    atoms of a line's last entry 2 (shared by 4 positions), 4 (by 2), 6 and none, odd widths,
    padding, strides; then random int16 layers and reuse pairs; against the golden model."""
    from .conftest import NV_SMALL_256_2COL as cfg
    rng = np.random.default_rng(16)
    layers = []
    for i, C in enumerate((8, 16, 24, 36, 1)):
        W, H, K, kh, kw = 3 + i % 4, 3 + i % 2, 1 + 3 * i, 1 + i % 3, 1 + (i + 1) % 2
        layers.append(_int16_layer(cfg, rng, i, W, H, C, K, kh, kw))
    n = 0
    while n < 4:
        try:
            draw = random_pair(cfg, rng, 6_000) if n % 2 else [random_program(cfg, rng, 6_000)]
        except _Redraw:
            continue
        if draw[0]["info"]["prec"] == 1:
            layers += draw
            n += 1
    run_layers(cfg, layers, seed=16)


@pytest.mark.slow
def test_pipeline_int16_nv_full():
    """int16 layers on nv_full's pipeline (128-byte register entries of two 64-byte rows, 32-byte
    atoms: a line's leftover atoms 1 (shared by 4 positions), 2 (by 2) and 3, kernel groups
    of 16 int16 kernels, 16 SDP lanes) against the golden model (about a minute)."""
    import sys
    sys.set_int_max_str_digits(max(sys.get_int_max_str_digits(), 20000))
    cfg = load_config("nv_full")
    rng = np.random.default_rng(5)
    layers = []
    for i, C in enumerate((16, 32, 48, 80, 8)):
        W, H, K, kh, kw = 3 + i % 3, 3, (3, 17, 1, 33, 5)[i], 1 + i % 2, 2 - i % 2
        layers.append(_int16_layer(cfg, rng, i, W, H, C, K, kh, kw))
    run_layers(cfg, layers, seed=5, max_cycles=20_000)
