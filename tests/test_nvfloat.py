"""sim.nvfloat: NVDLA's fp16/fp17 units.

The digests below are of the outputs of NVDLA's own Verilog units (nvdla/hw ``nvdlav1``,
``vmod/vlibs/HLS_fp16_to_fp17.v``, ``HLS_fp17_to_fp16.v``, ``HLS_fp17_add.v``,
``HLS_fp17_mul.v``), simulated with Icarus Verilog on the inputs :func:`_vectors` draws
(exhaustive for the conversions, 200,000 random and edge-case operand pairs for add and
multiply); the model must reproduce them bit for bit."""

import hashlib

import numpy as np

from sim.nvfloat import (FP17_MAX, fp16_from_float, fp16_to_fp17, fp17_add, fp17_from_float,
                         fp17_mul, fp17_to_float, fp17_to_fp16)

ONE = 0x7C00          # fp17 1.0 (exponent 31)
NEG = 1 << 16


def _digest(x):
    return hashlib.sha256(np.asarray(x, dtype="<i8").tobytes()).hexdigest()[:16]


def _vectors():
    rng = np.random.default_rng(1)
    n = 200000

    def rand17(k):
        return rng.integers(0, 1 << 17, k)

    def near(k, spread):
        s = rng.integers(0, 2, (2, k))
        m = rng.integers(0, 1024, (2, k))
        e0 = rng.integers(0, 64, k)
        e1 = np.clip(e0 + rng.integers(-spread, spread + 1, k), 0, 63)
        return (s[0] << 16) | (e0 << 10) | m[0], (s[1] << 16) | (e1 << 10) | m[1]

    a1, b1 = rand17(n // 4), rand17(n // 4)
    a2, b2 = near(n // 2, 14)
    k = n // 8
    a3 = rand17(k)
    b3 = a3 ^ (rng.integers(0, 2, k) << 16)
    sp = np.array([0, 1 << 16, 0x7c00, 0xfc00 | (1 << 16), 0xfbff, 0x1fbff, 0x0400, 0x0001,
                   0x0fc01, 0x1ffff, 0x03ff])
    a4 = rng.choice(sp, k)
    b4 = np.where(rng.random(k) < .5, rng.choice(sp, k), rand17(k))
    a = np.concatenate([a1, a2, a3, a4])
    b = np.concatenate([b1, b2, b3, b4])
    sw = rng.random(len(a)) < .5
    return np.where(sw, b, a), np.where(sw, a, b)


def test_against_nvdla_verilog_digests():
    a, b = _vectors()
    assert _digest(np.stack([a, b])) == "d06cb54b96ba05e6", "operand generator changed"
    assert _digest(fp17_add(a, b)) == "0f3d2f6ddfd1700b"
    assert _digest(fp17_mul(a, b)) == "0022dbcb3fc3a06d"
    assert _digest(fp16_to_fp17(np.arange(1 << 16))) == "d26755f4911c509a"
    assert _digest(fp17_to_fp16(np.arange(1 << 17))) == "f0791a215ecc2f35"


def test_conversions_known_answers():
    assert fp16_to_fp17(0x3C00) == ONE                       # 1.0
    assert fp16_to_fp17(0x0001) == 7 << 10                   # 2^-24: a normal fp17 number
    assert fp16_to_fp17(0x0300) == (16 << 10) | 0x200        # 0.75 x 2^-14 = 1.5 x 2^-15
    assert fp16_to_fp17(0x8000) == NEG                       # -0 stays -0
    assert fp16_to_fp17(0x7C00) == FP17_MAX                  # +inf -> largest finite
    assert fp16_to_fp17(0xFC00) == NEG | FP17_MAX
    assert fp16_to_fp17(0xFE01) == NEG | (63 << 10) | 0x201  # NaN: sign and payload kept
    assert fp17_to_fp16(ONE) == 0x3C00
    assert fp17_to_fp16(FP17_MAX) == 0x7BFF                  # 2^31: saturates to 65504
    assert fp17_to_fp16(63 << 10) == 0x7BFF                  # fp17 "inf" too
    assert fp17_to_fp16((46 << 10) | 0x3FF) == 0x7BFF        # 65504 exactly
    assert fp17_to_fp16(NEG | (63 << 10) | 5) == 0xFC05      # NaN payload kept
    # denormal results, nearest even: 2^-25 is a tie between 0 and 2^-24
    assert fp17_to_fp16(6 << 10) == 0x0000
    assert fp17_to_fp16((6 << 10) | 0x200) == 0x0001         # 1.5 x 2^-25 -> 2^-24
    assert fp17_to_fp16((7 << 10) | 0x200) == 0x0002         # 1.5 x 2^-24 -> tie -> even
    assert fp17_to_fp16(5 << 10) == 0                        # 2^-26: zero
    assert fp17_to_fp16((16 << 10) | 0x3FF) == 0x0400        # rounds up to the smallest normal


def test_add_known_answers():
    assert fp17_add(ONE, ONE) == 32 << 10                    # 1 + 1 = 2
    assert fp17_add(ONE, NEG | ONE) == 0                     # 1 + (-1) = +0 (a's sign)
    assert fp17_add(NEG | ONE, ONE) == NEG                   # (-1) + 1 = -0: not IEEE
    assert fp17_add(0, NEG) == 0 and fp17_add(NEG, 0) == NEG
    assert fp17_add(ONE, 0) == ONE
    # 1 + 2^-11 is a tie: to even (1.0); 1 + 1.5 x 2^-11 -> 1 + 2^-10
    assert fp17_add(ONE, 20 << 10) == ONE
    assert fp17_add(ONE, (20 << 10) | 0x200) == ONE | 1
    assert fp17_add(FP17_MAX, FP17_MAX) == FP17_MAX          # saturation, not inf
    assert fp17_add(63 << 10, 63 << 10) == FP17_MAX
    nan = (63 << 10) | 1
    assert fp17_add(nan, ONE) == nan and fp17_add(ONE, NEG | nan) == NEG | nan
    assert fp17_add(nan | 2, nan) == nan | 2                 # first operand's NaN


def test_mul_known_answers():
    third = fp17_from_float(1 / 3)
    assert third == (29 << 10) | 0x155
    three = (32 << 10) | 0x200
    assert fp17_mul(three, third) == ONE          # 4095/4096: a tie between 11-bit values -> 1
    assert fp17_mul(ONE, NEG) == NEG                         # signed zero
    assert fp17_mul(16 << 10, 15 << 10) == 0                 # exponent sum 31 -> exponent 0
    assert fp17_mul(FP17_MAX, 32 << 10) == FP17_MAX          # overflow saturates
    assert fp17_mul(NEG | ONE, FP17_MAX) == NEG | FP17_MAX


def test_add_mul_are_correctly_rounded_in_range():
    """Operands 12 or fewer binades apart, results in range: the units round exactly (their
    sums and products are exact in float64, then rounded to nearest even)."""
    rng = np.random.default_rng(7)
    n = 50000
    e0 = rng.integers(8, 55, n)
    e1 = e0 + rng.integers(-12, 13, n)
    a = (rng.integers(0, 2, n) << 16) | (e0 << 10) | rng.integers(0, 1024, n)
    b = (rng.integers(0, 2, n) << 16) | (e1 << 10) | rng.integers(0, 1024, n)
    s = fp17_to_float(a) + fp17_to_float(b)
    ok = (s != 0) & (np.abs(s) > 2.0 ** -29) & (np.abs(s) < 2.0 ** 31)
    assert np.array_equal(fp17_add(a, b)[ok], fp17_from_float(s)[ok])
    p = fp17_to_float(a) * fp17_to_float(b)
    ok = (np.abs(p) > 2.0 ** -29) & (np.abs(p) < 2.0 ** 31)
    assert np.array_equal(fp17_mul(a, b)[ok], fp17_from_float(p)[ok])


def test_float_helpers():
    assert fp16_from_float(1.0) == 0x3C00
    assert fp17_from_float(1.0) == ONE and fp17_from_float(-2.0) == NEG | (32 << 10)
    assert fp17_to_float(ONE) == 1.0
