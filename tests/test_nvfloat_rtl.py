"""hw.nvfloat: the fp17 hardware units against sim.nvfloat, bit for bit (Amaranth's simulator):
the fp16 -> fp17 conversion on every fp16 code, fp17 -> fp16 on every fp17 code, add and
multiply on random and edge-case operand pairs (those of tests/test_nvfloat.py's NVDLA
digests: 8,000 in the default suite, all 200,000 under ``slow``)."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.nvfloat import (Fp16ToFp17, Fp16ToFp32, Fp17Add, Fp17Mul, Fp17ToFp16, Fp17ToFp32,
                        Fp32Add, Fp32MaxMin, Fp32Mul, Fp32ToFp16, Fp32ToFp17, FractionToFp17,
                        Int17ToFp16)
from sim import nvfloat

from .test_nvfloat import _vectors


def _run(unit, inputs):
    """Outputs of the combinational ``unit`` for each row of ``inputs`` (dict of arrays)."""
    names = list(inputs)
    cols = [np.asarray(inputs[k], np.int64) for k in names]
    ports = [getattr(unit, k) for k in names]
    out = np.empty(len(cols[0]), np.int64)
    sim = Simulator(unit)

    async def bench(ctx):
        for i in range(len(out)):
            for p, c in zip(ports, cols):
                ctx.set(p, int(c[i]))
            out[i] = ctx.get(unit.o)

    sim.add_testbench(bench)
    sim.run()
    return out


def _pairs(n):
    a, b = _vectors()
    if n is None:
        return a, b
    rng = np.random.default_rng(7)
    pick = rng.choice(len(a), n, replace=False)
    return a[pick], b[pick]


def test_fp16_to_fp17_all_codes():
    h = np.arange(1 << 16)
    np.testing.assert_array_equal(_run(Fp16ToFp17(), {"a": h}), nvfloat.fp16_to_fp17(h))


def test_fp17_to_fp16_all_codes():
    x = np.arange(1 << 17)
    np.testing.assert_array_equal(_run(Fp17ToFp16(), {"a": x}), nvfloat.fp17_to_fp16(x))


@pytest.mark.parametrize("n", [8000, pytest.param(None, marks=pytest.mark.slow)],
                         ids=["subset", "all"])
def test_fp17_add(n):
    a, b = _pairs(n)
    np.testing.assert_array_equal(_run(Fp17Add(), {"a": a, "b": b}), nvfloat.fp17_add(a, b))


@pytest.mark.parametrize("n", [8000, pytest.param(None, marks=pytest.mark.slow)],
                         ids=["subset", "all"])
def test_fp17_mul(n):
    a, b = _pairs(n)
    np.testing.assert_array_equal(_run(Fp17Mul(), {"a": a, "b": b}), nvfloat.fp17_mul(a, b))


def test_pdp_kernel_width_codes():
    """The PDP's table of kernel widths 1..8 as fp17 codes (the vertical padding's factor)."""
    from hw.pdp.pool import _KW_FP17
    assert _KW_FP17 == [int(nvfloat.fp17_from_float(k)) for k in range(1, 9)]


# -----------------------------------------------------------------------------------------
# fp32 units (the SDP's fp16 datapath) against sim.nvfloat's fp32_*: the operand pairs of
# tests/test_nvfloat_fp32.py (random codes, near exponents, x and -x, specials against
# anything)
# -----------------------------------------------------------------------------------------
def _pairs32(n):
    from .test_nvfloat_fp32 import _vectors as _vectors32
    a, b = _vectors32()
    if n is None:
        return a, b
    rng = np.random.default_rng(8)
    pick = rng.choice(len(a), n, replace=False)
    sp = np.flatnonzero(np.isin(a, _SPECIALS32) | np.isin(b, _SPECIALS32))
    pick = np.union1d(pick, sp[:2000])
    return a[pick], b[pick]


_SPECIALS32 = [0, 1 << 31, 0x3F800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
               0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x00000001, 0x007FFFFF, 0x00800000]


@pytest.mark.parametrize("n", [4000, pytest.param(None, marks=pytest.mark.slow)],
                         ids=["subset", "all"])
def test_fp32_add(n):
    a, b = _pairs32(n)
    np.testing.assert_array_equal(_run(Fp32Add(), {"a": a, "b": b}), nvfloat.fp32_add(a, b))


@pytest.mark.parametrize("n", [4000, pytest.param(None, marks=pytest.mark.slow)],
                         ids=["subset", "all"])
def test_fp32_mul(n):
    a, b = _pairs32(n)
    np.testing.assert_array_equal(_run(Fp32Mul(), {"a": a, "b": b}), nvfloat.fp32_mul(a, b))


def test_fp32_max_min():
    a, b = _pairs32(3000)
    a = np.concatenate([a, _SPECIALS32 * len(_SPECIALS32)])
    b = np.concatenate([b, np.repeat(_SPECIALS32, len(_SPECIALS32))])
    for minimum, fn in ((0, nvfloat.fp32_max), (1, nvfloat.fp32_min)):
        got = _run(Fp32MaxMin(), {"a": a, "b": b, "minimum": np.full(len(a), minimum)})
        np.testing.assert_array_equal(got, fn(a, b))


def test_fp16_to_fp32_all_codes():
    h = np.arange(1 << 16)
    np.testing.assert_array_equal(_run(Fp16ToFp32(), {"a": h}), nvfloat.fp16_to_fp32(h))


def test_fp32_to_fp16():
    """Every exponent with random mantissas (rounding ties and carries included), both signs,
    and the NaN codes."""
    rng = np.random.default_rng(9)
    e = np.repeat(np.arange(256), 24)
    mant = rng.integers(0, 1 << 23, len(e))
    mant[::8] = (mant[::8] >> 13) << 13 | (1 << 12)            # exact ties
    mant[1::8] = (1 << 23) - 1 - rng.integers(0, 1 << 12, len(mant[1::8]))   # carries
    s = rng.integers(0, 2, len(e))
    x = np.concatenate([(s << 31) | (e << 23) | mant, _SPECIALS32])
    np.testing.assert_array_equal(_run(Fp32ToFp16(), {"a": x}), nvfloat.fp32_to_fp16(x))


# -----------------------------------------------------------------------------------------
# fp17 <-> fp32 and the 16-bit fraction (the CDP's fp16 datapath)
# -----------------------------------------------------------------------------------------
def test_fp17_to_fp32_all_codes():
    x = np.arange(1 << 17)
    np.testing.assert_array_equal(_run(Fp17ToFp32(), {"a": x}), nvfloat.fp17_to_fp32(x))


def test_fp32_to_fp17():
    """Every exponent with random mantissas (rounding ties and carries included), both signs,
    and the specials."""
    rng = np.random.default_rng(10)
    e = np.repeat(np.arange(256), 24)
    mant = rng.integers(0, 1 << 23, len(e))
    mant[::8] = (mant[::8] >> 13) << 13 | (1 << 12)            # exact ties
    mant[1::8] = (1 << 23) - 1 - rng.integers(0, 1 << 12, len(mant[1::8]))   # carries
    s = rng.integers(0, 2, len(e))
    x = np.concatenate([(s << 31) | (e << 23) | mant, _SPECIALS32])
    np.testing.assert_array_equal(_run(Fp32ToFp17(), {"a": x}), nvfloat.fp32_to_fp17(x))


def test_fraction16_to_fp17_all_codes():
    f = np.arange(1 << 16)
    np.testing.assert_array_equal(_run(FractionToFp17(16), {"a": f}),
                                  nvfloat.fraction_to_fp17(f, 16))


def test_fraction35_to_fp17():
    """35-bit fractions (the SDP's fp16 LUT weights): every leading-one position, values
    around 2^-30 (the smallest fp17 normal: below it +0 unless rounding reaches it), ties and
    carries."""
    rng = np.random.default_rng(11)
    msb = np.repeat(np.arange(35), 40)
    f = (np.int64(1) << msb) | (rng.integers(0, 1 << 34, len(msb)) & ((np.int64(1) << msb) - 1))
    ties = (np.int64(1) << msb[::5]) | (np.int64(1) << np.maximum(msb[::5] - 11, 0))
    carries = (np.int64(1) << (msb[::7] + 1)) - 1
    f = np.concatenate([f, ties, carries, [0, 1, 2, 3, 4, 5, 31, 32, 33, (1 << 35) - 1]]) \
        & ((np.int64(1) << 35) - 1)
    np.testing.assert_array_equal(_run(FractionToFp17(35), {"a": f}),
                                  nvfloat.fraction_to_fp17(f, 35))


def test_int17_to_fp16_all_values():
    """The CDMA convertor's integer -> fp16 step on every 17-bit value against the golden
    model's (:func:`sim.conv.image.int_to_fp16`: nearest, ties to even, infinity past 65504)."""
    from sim.conv.image import int_to_fp16
    v = np.arange(-(1 << 16), 1 << 16)
    got = _run(Int17ToFp16(), {"a": v})
    np.testing.assert_array_equal(got, int_to_fp16(v) & 0xFFFF)
    assert got[(1 << 16) + 65519] == 0x7BFF and got[(1 << 16) + 65520] == 0x7C00
    assert got[0] == 0xFC00 and got[1 << 16] == 0
