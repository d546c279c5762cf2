"""hw.conv.fp16_wino_cell.Fp16WinoCell against the golden model's fp16 Winograd cell
(sim.conv.cmac.fp16_wino_cell): random tiles of fp16 codes of every kind (zeros, denormals,
infinities, NaNs, narrow exponent spreads) under random gaps on ``i`` and random
back-pressure on ``o``, the four 44-bit codes compared exactly."""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.back import verilog

from hw.conv.fp16_wino_cell import Fp16WinoCell, fp16_wino_in_layout
from sim.conv.cmac import fp16_wino_cell
from tests.test_cmac import Sink, Source, simulate
from tests.test_conv_pra import _FP16_SPECIAL


def codes(rng, n):
    """[n, 64] fp16 codes: any code, special codes more and more often, and tiles of one
    narrow exponent range (the alignment keeps every pair); NaNs in about a tenth of the
    tiles (any code would put one in most)."""
    t = rng.integers(0, 1 << 16, (n, 64))
    sel = rng.random((n, 64)) < np.linspace(0, 0.5, n)[:, None] ** 2
    t[sel] = rng.choice(_FP16_SPECIAL, int(sel.sum()))
    narrow = rng.random(n) < 0.4
    e = rng.integers(10, 16, (n, 64))
    t[narrow] = (t[narrow] & 0x83FF) | (e[narrow] << 10)
    nan = ((t >> 10) & 0x1F == 0x1F) & (t & 0x3FF != 0)
    keep = rng.random((n, 1)) < 0.1                       # NaNs kept in a tenth of the tiles
    return np.where(nan & ~keep, t & ~0x400, t)           # others: exponent 30


def run_cell(n_ops, seed, p_gap=0.3, p_ready=0.7):
    rng = np.random.default_rng(seed)
    w, d = codes(rng, n_ops), codes(rng, n_ops)
    want, nan = fp16_wino_cell(w, d)
    assert nan.any() and not nan.all()
    lay = fp16_wino_in_layout()
    items = [lay.const({"wt": a.tolist(), "data": b.tolist()}) for a, b in zip(w, d)]
    r = random.Random(seed)
    dut = Fp16WinoCell()
    src = Source(dut.i, items, r, p_gap)
    out = Sink(dut.o, r, p_ready)
    simulate(dut, [src, out], lambda: len(out.got) == n_ops, max_cycles=20 * n_ops + 100)
    for k, p in enumerate(out.got):
        got = [int(p.res[j]) for j in range(4)]
        assert got == want[k].tolist(), f"op {k}: {got} != {want[k].tolist()}"
    return out, dut


def test_fp16_wino_cell_random():
    """100 tiles under back-pressure."""
    run_cell(100, 1)


def test_fp16_wino_cell_full_rate():
    out, dut = run_cell(20, 2, p_gap=0, p_ready=1.0)
    assert out.when[0] == dut.latency
    assert out.when[-1] - out.when[0] == len(out.when) - 1


@pytest.mark.slow
def test_fp16_wino_cell_sweep():
    """Thousands of tiles."""
    run_cell(2000, 3)


@pytest.mark.slow
def test_fp16_wino_cell_verilog():
    """(slow: the 64 Booth products take most of a minute to convert)"""
    assert "module fp16_wino_cell" in verilog.convert(Fp16WinoCell(), name="fp16_wino_cell")


def _coefficients(i: int, j: int) -> np.ndarray:
    """The POA coefficient of each of a small cube's 64 elements ((y x 4 + x) x 4 + c) for
    output (i, j) of the 2 x 2 tile."""
    at = ((1, 1, 1, 0), (0, 1, -1, -1))
    return np.array([at[i][e >> 4] * at[j][(e >> 2) & 3] for e in range(64)])


@pytest.mark.parametrize("n_t,seed", [
    (3, 11), pytest.param(60, 12, marks=pytest.mark.slow)], ids=["3-tiles", "60-tiles"])
def test_two_pass_cell_weighs_parts_by_the_poa_row(n_t, seed):
    """The direct cell's Winograd mode (hw.conv.fp16_cell.Fp16Cell ``two_pass`` + ``wino``,
    what the Cmac uses on builds where hw.conv.common.conv_winograd_fp16 holds): a small
    cube as two operations of 32 pairs, each pair's aligned part weighed by output (i, j)'s
    coefficient (``neg`` / ``zero``), gives output (i, j) of NVDLA's Winograd cell, for every
    output of random tiles (NaNs, infinities, zeros, wide and narrow exponent spreads), back
    to back at full rate (slow: 60 tiles, several minutes)."""
    from amaranth.sim import Simulator
    from hw.conv.fp16_cell import Fp16Cell

    rng = np.random.default_rng(seed)
    w, d = codes(rng, n_t), codes(rng, n_t)
    want, nan = fp16_wino_cell(w, d)
    assert nan.any() and not nan.all()
    stages = 4
    dut = Fp16Cell(32, stages, two_pass=True, wino=True)
    ops = []                    # (role, w, d, neg, zero) per cycle; (tile, output) per result
    expect = []
    for t in range(n_t):
        for r in range(4):
            coef = _coefficients(r >> 1, r & 1)
            for half in range(2):
                sl = slice(32 * half, 32 * half + 32)
                ops.append((1 + half, w[t, sl], d[t, sl], coef[sl] < 0, coef[sl] == 0))
            expect.append((len(ops) - 1, int(want[t, r]), t, r))
    got = {}

    async def bench(ctx):
        ctx.set(dut.en, 1)
        for k, (role, wt, dt, ng, zr) in enumerate(ops + [(0, w[0, :32], d[0, :32],
                                                             np.zeros(32, bool),
                                                             np.zeros(32, bool))] * stages):
            ctx.set(dut.role, role)
            for c in range(32):
                ctx.set(dut.w[c], int(wt[c]))
                ctx.set(dut.d[c], int(dt[c]))
            ctx.set(dut.neg, sum(1 << c for c in range(32) if ng[c]))
            ctx.set(dut.zero, sum(1 << c for c in range(32) if zr[c]))
            await ctx.tick()
            got[k] = ctx.get(dut.out)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for k, code, t, r in expect:
        assert got[k + stages - 1] == code, \
            f"tile {t} output {r}: {got[k + stages - 1]:#x} != {code:#x}"
