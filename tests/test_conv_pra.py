"""hw.conv.pra.Pra against the golden model's PRA (sim.conv.winograd_math.pra_int / pra_fp16):
random tiles under random gaps on ``i`` and random back-pressure on ``o``, every output element
compared bit for bit; a mix of precisions, truncations and halves from transfer to transfer
(fp16: half ``h`` gives elements ``8h .. 8h + 7``, output element ``e`` holding ``8h + (e &
7)``; integer layers ignore ``half``)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.back import verilog

from arch.config import NvdlaConfig
from hw.conv.pra import Pra, pra_elem_bits, pra_layout
from sim.conv.winograd_math import WINO_BT, pra_fp16, pra_int
from tests.test_cmac import Sink, Source, simulate

NV_FULL = NvdlaConfig.preset("nv_full")
NV_LARGE = NvdlaConfig.preset("nv_large")

_FP16_SPECIAL = np.array([0, 0x8000, 1, 0x8001, 0x3FF, 0x83FF, 0x400, 0x7C00, 0xFC00, 0x7BFF,
                          0xFBFF, 0x7C01, 0xFE00, 0x7FFF, 0x3C00, 0x0200, 0x7800, 0xF800])


def int_tiles(rng, n, bits):
    """[n, 4, 4] int tiles: uniform, edge values, small values (rounding ties), and tiles
    pushing one output to its largest or smallest sum (saturating at every truncation)."""
    lim = 1 << (bits - 1)
    t = rng.integers(-lim, lim, (n, 4, 4))
    edge = rng.choice([-lim, -lim + 1, lim - 1, 0, 1, -1, 2, -2, 3], (n, 4, 4))
    small = rng.integers(-9, 10, (n, 4, 4))
    i, j = rng.integers(4, size=(2, n))
    coef = WINO_BT[i][:, :, None] * WINO_BT[j][:, None, :] * rng.choice([-1, 1], (n, 1, 1))
    push = np.where(coef > 0, lim - 1, np.where(coef < 0, -lim, t))
    sel = rng.random((n, 1, 1))
    return np.where(sel < 0.25, edge, np.where(sel < 0.45, small, np.where(sel < 0.65, push, t)))


def fp16_tiles(rng, n):
    """[n, 4, 4] fp16 codes: any code, special codes (zeros, denormals, infinities, NaNs,
    extremes) more and more often, narrow exponent spreads where the additions round."""
    t = rng.integers(0, 1 << 16, (n, 4, 4))
    sel = rng.random((n, 4, 4)) < np.linspace(0, 0.7, n)[:, None, None]
    t[sel] = rng.choice(_FP16_SPECIAL, int(sel.sum()))
    narrow = rng.random(n) < 0.3
    e = rng.integers(12, 18, (n, 4, 4))
    t[narrow] = (t[narrow] & 0x83FF) | (e[narrow] << 10)
    return t


def make_ops(cfg, rng, n_ops, lanes, kinds):
    """[(precision, truncate field, half, tiles [lanes, 4, 4], expected [lanes, 16] codes)]."""
    ops = []
    for _ in range(n_ops):
        prec = kinds[int(rng.integers(len(kinds)))]
        trunc = int(rng.integers(4))
        half = int(rng.integers(2))
        if prec == 2:
            tiles = fp16_tiles(rng, lanes)
            want = pra_fp16(tiles).reshape(lanes, 16)[:, 8 * half + (np.arange(16) & 7)]
        else:
            bits = 16 if prec == 1 else 8
            tiles = int_tiles(rng, lanes, bits)
            want = pra_int(tiles, min(trunc, 2), bits).reshape(lanes, 16)
        ops.append((prec, trunc, half, tiles, want))
    return ops


def run_pra(cfg, ops, lanes, seed, p_gap=0.3, p_ready=0.7):
    """Runs ``ops`` through a ``Pra(cfg, lanes)``; returns (sink, dut) after checking."""
    rng = random.Random(seed)
    dut = Pra(cfg, lanes)
    w = pra_elem_bits(cfg)
    mask = (1 << w) - 1
    lay = pra_layout(cfg, lanes, True)
    items = [lay.const({"data": [[int(v) & mask for v in t.reshape(16)] for t in tiles],
                        "precision": prec, "truncate": trunc, "half": half})
             for prec, trunc, half, tiles, _ in ops]
    src = Source(dut.i, items, rng, p_gap)
    out = Sink(dut.o, rng, p_ready)
    simulate(dut, [src, out], lambda: len(out.got) == len(ops), max_cycles=20 * len(ops) + 100)
    for k, (p, (prec, trunc, half, tiles, want)) in enumerate(zip(out.got, ops)):
        got = np.array([[int(p.data[ln][e]) for e in range(16)] for ln in range(lanes)])
        exp = np.asarray(want, np.int64) & mask
        assert (got == exp).all(), \
            f"op {k} prec {prec} truncate {trunc} half {half}: {got.tolist()} != " \
            f"{exp.tolist()} " \
            f"(tiles {tiles.reshape(lanes, 16).tolist()})"
    return out, dut


def saturated(ops):
    """{(precision, truncate field)} of the integer operations where some element saturates."""
    seen = set()
    for prec, trunc, _, tiles, _ in ops:
        if prec != 2:
            bits = 16 if prec == 1 else 8
            exact = pra_int(tiles, min(trunc, 2), 64)
            if (np.abs(exact) >= 1 << (bits - 1)).any():
                seen.add((prec, trunc))
    return seen


@pytest.mark.parametrize("seed", range(2))
def test_pra_nv_full_mixed(seed):
    """nv_full (int8, int16, fp16): 2 lanes, 200 operations of random precision / truncate;
    int8 and int16 saturate at every truncation."""
    rng = np.random.default_rng(seed)
    ops = make_ops(NV_FULL, rng, 200, 2, [0, 1, 2])
    assert saturated(ops) == {(p, t) for p in (0, 1) for t in range(4)}
    run_pra(NV_FULL, ops, 2, seed)


def test_pra_nv_large_int8():
    """nv_large (int8 only: 8-bit lanes, no fp16 logic): 3 lanes, 400 operations."""
    rng = np.random.default_rng(5)
    ops = make_ops(NV_LARGE, rng, 400, 3, [0])
    assert saturated(ops) == {(0, t) for t in range(4)}
    run_pra(NV_LARGE, ops, 3, 5)


def test_pra_full_rate():
    """No gaps, output always ready: one operation a cycle at the stated latency."""
    rng = np.random.default_rng(9)
    out, dut = run_pra(NV_FULL, make_ops(NV_FULL, rng, 40, 1, [0, 1, 2]), 1, 9, p_gap=0,
                       p_ready=1.0)
    assert out.when[0] == dut.latency
    assert out.when[-1] - out.when[0] == len(out.when) - 1


@pytest.mark.slow
@pytest.mark.parametrize("prec", [0, 1, 2], ids=["int8", "int16", "fp16"])
def test_pra_sweep(prec):
    """Thousands of tiles per precision (4 lanes x 1500 operations) on nv_full."""
    rng = np.random.default_rng(100 + prec)
    run_pra(NV_FULL, make_ops(NV_FULL, rng, 1500, 4, [prec]), 4, prec)


@pytest.mark.parametrize("name", ["nv_large", "nv_full"])
def test_pra_verilog(name):
    v = verilog.convert(Pra(NvdlaConfig.preset(name), 2), name="pra")
    assert "module pra" in v
