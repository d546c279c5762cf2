"""hw.conv.cmac.Cmac against numpy: random blocks (a weight load, then N data atoms with
``swap`` on the first) under random gaps on ``dat`` / ``wt`` and random back-pressure on
``psum``; every partial sum is compared with ``weights @ data`` in int64."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from arch.config import load_config
from hw.conv.cmac import Cmac
from hw.conv.common import dat_layout, max_stripe, psum_bits, wt_layout


def wt_rows(cfg, w, kmask=None):
    """A weight set ``w[k][c]`` as the Csc sends it: ``AK`` row transfers, row 0 first
    (``kmask``: bit ``k`` for row ``k``, fp16 builds)."""
    wl = wt_layout(cfg)
    rows = []
    for k, row in enumerate(np.asarray(w).tolist()):
        extra = {} if kmask is None else {"kmask": (kmask >> k) & 1}
        rows.append(wl.const({"data": row, **extra}))
    return rows


# ------------------------------------------------------------------------------------------
# port-level agents; each cycle every agent drives its inputs, then every agent observes

class Source:
    """Drives a stream with ``items`` (layout constants), random gaps."""

    def __init__(self, stream, items, rng, p_gap):
        self.s, self.items, self.rng, self.p = stream, list(items), rng, p_gap
        self.cur = None

    def drive(self, ctx, now):
        if self.cur is None and self.items and self.rng.random() >= self.p:
            self.cur = self.items.pop(0)
            ctx.set(self.s.payload, self.cur)
        ctx.set(self.s.valid, self.cur is not None)

    def observe(self, ctx, now):
        if self.cur is not None and ctx.get(self.s.ready):
            self.cur = None


class Sink:
    """Accepts a stream with random back-pressure, records payloads."""

    def __init__(self, stream, rng, p_ready):
        self.s, self.rng, self.p = stream, rng, p_ready
        self.got, self.when, self.rdy = [], [], 0

    def drive(self, ctx, now):
        self.rdy = self.rng.random() < self.p
        ctx.set(self.s.ready, self.rdy)

    def observe(self, ctx, now):
        if self.rdy and ctx.get(self.s.valid):
            self.got.append(ctx.get(self.s.payload))
            self.when.append(now)


async def pump(ctx, agents, finished, max_cycles):
    """Drive and observe ``agents`` cycle by cycle until ``finished()`` (or fail after
    ``max_cycles``)."""
    for now in range(max_cycles):
        for a in agents:
            a.drive(ctx, now)
        for a in agents:
            a.observe(ctx, now)
        if finished():
            return
        await ctx.tick()
    raise AssertionError(f"timeout after {max_cycles} cycles (deadlock?)")


def simulate(dut, agents, finished, max_cycles, setup=None):
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def tb(ctx):
        if setup is not None:
            await setup(ctx)
        await pump(ctx, agents, finished, max_cycles)

    sim.add_testbench(tb)
    sim.run()


# ------------------------------------------------------------------------------------------

def _int8(rng, shape):
    """int8 values with the extremes well represented."""
    full = rng.integers(-128, 128, size=shape)
    ext = rng.choice(np.array([-128, 127, 0, -1, 1]), size=shape)
    return np.where(rng.random(shape) < 0.2, ext, full).astype(np.int64)


def random_blocks(cfg, rng, n_blocks, max_atoms=None):
    """[(weights [AK, AC], data [N, AC], first, last, end)] blocks of a stripe sequence."""
    ms = max_stripe(cfg)
    max_atoms = max_atoms or ms
    blocks = []
    for b in range(n_blocks):
        n = int(rng.integers(1, max_atoms + 1))
        blocks.append((_int8(rng, (cfg.atomic_k, cfg.atomic_c)),
                       _int8(rng, (n, cfg.atomic_c)),
                       bool(rng.random() < 0.5), bool(rng.random() < 0.5),
                       b == n_blocks - 1))
    return blocks


def run_cmac(cfg, blocks, seed, p_gap_wt=0.3, p_gap_dat=0.3, p_ready=0.7):
    rng = random.Random(seed)
    dut = Cmac(cfg)
    dl = dat_layout(cfg)
    wts, dats, expect = [], [], []
    for w, d, first, last, end in blocks:
        wts.extend(wt_rows(cfg, w))
        for i, row in enumerate(d):
            dats.append(dl.const({"data": row.tolist(), "swap": i == 0, "first": first,
                                  "last": last, "pos": i, "end": end and i == len(d) - 1}))
            expect.append((w @ row, first, last, i, end and i == len(d) - 1))
    wt = Source(dut.wt, wts, rng, p_gap_wt)
    dat = Source(dut.dat, dats, rng, p_gap_dat)
    out = Sink(dut.psum, rng, p_ready)

    async def setup(ctx):
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)

    simulate(dut, [wt, dat, out], lambda: len(out.got) == len(expect),
             max_cycles=20 * len(expect) + 200, setup=setup)
    lim = 1 << (psum_bits(cfg) - 1)
    for i, (p, (sums, first, last, pos, end)) in enumerate(zip(out.got, expect)):
        got = [int(p.sums[k]) for k in range(cfg.atomic_k)]
        assert all(-lim <= int(s) < lim for s in sums)
        assert got == sums.tolist(), f"atom {i}: sums {got} != {sums.tolist()}"
        assert (p.first, p.last, p.pos, p.end) == (first, last, pos, end), f"atom {i}: tags"
    return out, dut


@pytest.mark.parametrize("seed", range(3))
def test_cmac_random_blocks_nv_small(seed):
    cfg = load_config("nv_small")
    rng = np.random.default_rng(seed)
    run_cmac(cfg, random_blocks(cfg, rng, 40), seed)


def test_cmac_extremes_nv_small():
    """Every product at -128 x -128 and -128 x 127: the sums' extreme values are exact."""
    cfg = load_config("nv_small")
    ak, ac = cfg.atomic_k, cfg.atomic_c
    w = np.full((ak, ac), -128, dtype=np.int64)
    w[ak // 2:] = 127
    d = np.full((3, ac), -128, dtype=np.int64)
    d[1] = 127
    run_cmac(cfg, [(w, d, True, True, False), (-w - 1, d, False, True, True)], 7)


def test_cmac_full_rate_nv_small():
    """No gaps and psum always ready: one atom per cycle, including across blocks (the next
    load's AK rows enter the shadow set while the current block streams: blocks of more than
    AK atoms), and the stated latency."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(11)
    blocks = random_blocks(cfg, rng, 6, max_atoms=max_stripe(cfg))
    blocks = [(w, np.resize(d, (max(d.shape[0], cfg.atomic_k + 1), d.shape[1])), f, l, e)
              for w, d, f, l, e in blocks]
    out, dut = run_cmac(cfg, blocks, 11, p_gap_wt=0, p_gap_dat=0, p_ready=1.0)
    n = len(out.when)
    # the first atom waits for the first set's AK rows (one per cycle from the setup tick
    # on), its psum comes the latency later; then one per cycle
    assert out.when[0] == cfg.atomic_k + dut.latency, out.when[0]
    assert out.when[-1] - out.when[0] == n - 1, "not one atom per cycle"


class _LateSink(Sink):
    """A sink that refuses everything before cycle ``start``, then takes every cycle."""

    def __init__(self, stream, start):
        super().__init__(stream, random.Random(0), 1.0)
        self.start = start

    def drive(self, ctx, now):
        self.rdy = now >= self.start
        ctx.set(self.s.ready, self.rdy)


def test_cmac_never_stalls_its_stages():
    """A stalled ``psum`` holds back ``dat``, not the stages: while the CACC takes nothing the
    CMAC still takes as many atoms as its output FIFO holds (every one of them computed into
    the FIFO meanwhile: a ready-gated pipeline would take only as many as it has stages),
    then none; released, it gives a psum every cycle and every value is right."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(5)
    w = _int8(rng, (cfg.atomic_k, cfg.atomic_c))
    d = _int8(rng, (30, cfg.atomic_c))
    dut = Cmac(cfg)
    dl = dat_layout(cfg)
    dats = [dl.const({"data": row.tolist(), "swap": i == 0, "first": True, "last": True,
                      "pos": i, "end": i == len(d) - 1}) for i, row in enumerate(d)]
    wt = Source(dut.wt, wt_rows(cfg, w), random.Random(1), 0)
    dat = Source(dut.dat, dats, random.Random(2), 0)
    start = 40
    out = _LateSink(dut.psum, start)
    taken = []

    class Count:                     # atoms taken while the psum side is stalled
        def drive(self, ctx, now):
            pass

        def observe(self, ctx, now):
            if now < start and ctx.get(dut.dat.valid) and ctx.get(dut.dat.ready):
                taken.append(now)

    async def setup(ctx):
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)

    simulate(dut, [wt, dat, out, Count()], lambda: len(out.got) == len(d),
             max_cycles=400, setup=setup)
    assert dut._fifo_depth > dut.latency
    assert len(taken) == dut._fifo_depth, taken
    assert out.when[0] == start and out.when[-1] - out.when[0] == len(d) - 1
    for i, p in enumerate(out.got):
        assert [int(p.sums[k]) for k in range(cfg.atomic_k)] == (w @ d[i]).tolist(), i


def test_cmac_nv_large():
    """nv_large (64 x 32): the build parameters drive the array; a few short blocks."""
    cfg = load_config("nv_large")
    # the weight payload is AK x AC x 8 = 16384 bits: more decimal digits than Python's
    # default int <-> str limit, which the simulator's code generation hits
    sys.set_int_max_str_digits(max(sys.get_int_max_str_digits(), 20000))
    rng = np.random.default_rng(3)
    run_cmac(cfg, random_blocks(cfg, rng, 3, max_atoms=3), 3)


@pytest.mark.parametrize("name", ["nv_small", "nv_large"])
def test_cmac_verilog(name):
    v = verilog.convert(Cmac(load_config(name)), name="cmac")
    assert "module cmac" in v
