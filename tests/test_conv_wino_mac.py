"""hw.conv.wino_mac.WinoMac against the golden model's Winograd MAC cell
(sim.conv.winograd_math.wino_cell_int): random operations (int8 two kernels, int16 one) under
random gaps on ``i`` and random back-pressure on ``o``, every result compared exactly."""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.back import verilog

from arch.config import NvdlaConfig
from hw.conv.wino_mac import WinoMac, wino_in_layout
from sim.conv.winograd_math import wino_cell_int
from tests.test_cmac import Sink, Source, simulate

NV_FULL = NvdlaConfig.preset("nv_full")
NV_LARGE = NvdlaConfig.preset("nv_large")


def operands(rng, n, bits):
    """[n, 64] values: uniform, with extremes more and more often."""
    lim = 1 << (bits - 1)
    a = rng.integers(-lim, lim, (n, 64))
    edge = rng.random((n, 64)) < np.linspace(0, 0.8, n)[:, None]
    a[edge] = rng.choice([-lim, lim - 1, 0, -1, 1], int(edge.sum()))
    return a


def make_ops(rng, n_ops, kinds):
    """[(int16, data, wt0, wt1, res0, res1)] with the golden results."""
    ops = []
    for _ in range(n_ops):
        i16 = bool(kinds[int(rng.integers(len(kinds)))])
        bits = 16 if i16 else 8
        d, w0 = operands(rng, 1, bits)[0], operands(rng, 1, bits)[0]
        ops.append(_op(i16, d, w0, operands(rng, 1, 8)[0]))
    return ops


def _op(i16, d, w0, w1):
    r0 = wino_cell_int(w0, d)
    r1 = np.zeros(4, np.int64) if i16 else wino_cell_int(w1, d)
    return (i16, d, w0, w1, r0, r1)


def extreme_ops(i16):
    """For each output and sign, data at the most negative value and weights whose products
    all push that output one way: its largest magnitudes (int16 +-9 x 2^32 + ..., 37 bits of
    the 38)."""
    bits = 16 if i16 else 8
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    at = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])
    ops = []
    for i in range(2):
        for j in range(2):
            sgn = np.repeat(np.outer(at[i], at[j]).reshape(16), 4)      # per element
            for pol in (1, -1):
                d = np.full(64, lo)
                w = np.where(sgn * pol > 0, lo, np.where(sgn * pol < 0, hi, 0))
                w1 = np.where(sgn * pol > 0, -128, np.where(sgn * pol < 0, 127, 0))
                ops.append(_op(i16, d, w, w1))
    return ops


def run_wino_mac(cfg, ops, seed, p_gap=0.3, p_ready=0.7):
    rng = random.Random(seed)
    dut = WinoMac(cfg)
    lay = wino_in_layout(cfg)
    items = []
    for i16, d, w0, w1, _, _ in ops:
        v = {"data": d.tolist(), "wt0": w0.tolist(), "wt1": w1.tolist()}
        if cfg is NV_FULL:
            v["int16"] = i16
        items.append(lay.const(v))
    src = Source(dut.i, items, rng, p_gap)
    out = Sink(dut.o, rng, p_ready)
    simulate(dut, [src, out], lambda: len(out.got) == len(ops), max_cycles=20 * len(ops) + 100)
    for k, (p, (i16, d, w0, w1, r0, r1)) in enumerate(zip(out.got, ops)):
        g0 = [int(p.res0[j]) for j in range(4)]
        g1 = [int(p.res1[j]) for j in range(4)]
        assert (g0, g1) == (r0.tolist(), r1.tolist()), f"op {k} int16={i16}"
    return out, dut


@pytest.mark.parametrize("seed", range(2))
def test_wino_mac_nv_full_mixed(seed):
    """nv_full (int16 build): int8 and int16 operations mixed, 300 of them."""
    rng = np.random.default_rng(seed)
    run_wino_mac(NV_FULL, make_ops(rng, 300, [0, 1]), seed)


def test_wino_mac_nv_large_int8():
    """nv_large (int8 only: 8 x 8 multipliers, 22-bit results): 300 operations."""
    rng = np.random.default_rng(7)
    run_wino_mac(NV_LARGE, make_ops(rng, 300, [0]), 7)


@pytest.mark.parametrize("cfg", [NV_FULL, NV_LARGE], ids=["nv_full", "nv_large"])
def test_wino_mac_extremes(cfg):
    """Every operand at the extremes: the widest sums (38 / 22 bits) are exact."""
    ops = extreme_ops(False) + (extreme_ops(True) if cfg is NV_FULL else [])
    for kind in {op[0] for op in ops}:          # 9 positions x 4 channels of (-lim)^2
        assert max(int(op[4].max()) for op in ops if op[0] == kind) == 36 << (30 if kind else 14)
    run_wino_mac(cfg, ops, 3)


def test_wino_mac_full_rate():
    """No gaps, output always ready: one operation a cycle at the stated latency."""
    rng = np.random.default_rng(9)
    out, dut = run_wino_mac(NV_FULL, make_ops(rng, 40, [0, 1]), 9, p_gap=0, p_ready=1.0)
    assert out.when[0] == dut.latency
    assert out.when[-1] - out.when[0] == len(out.when) - 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", [0, 1], ids=["int8", "int16"])
def test_wino_mac_sweep(kind):
    """Thousands of operations per precision on nv_full."""
    rng = np.random.default_rng(200 + kind)
    run_wino_mac(NV_FULL, make_ops(rng, 3000, [kind]), kind)


@pytest.mark.parametrize("name", ["nv_large", "nv_full"])
def test_wino_mac_verilog(name):
    v = verilog.convert(WinoMac(NvdlaConfig.preset(name)), name="wino_mac")
    assert "module wino_mac" in v
