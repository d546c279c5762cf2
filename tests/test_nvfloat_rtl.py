"""hw.nvfloat: the fp17 hardware units against sim.nvfloat, bit for bit (Amaranth's simulator):
the fp16 -> fp17 conversion on every fp16 code, fp17 -> fp16 on every fp17 code, add and
multiply on random and edge-case operand pairs (those of tests/test_nvfloat.py's NVDLA
digests: 8,000 in the default suite, all 200,000 under ``slow``)."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.nvfloat import Fp16ToFp17, Fp17Add, Fp17Mul, Fp17ToFp16
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
