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
