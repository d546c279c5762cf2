"""CACC golden model: assembly, truncation and delivery to the SDP.

The assembly buffer holds each output's sum in 48 bits (NVDLA's C model; exact for every
int8 layer). Delivery shifts right by ``D_CLIP_CFG.CLIP_TRUNCATE`` rounding to nearest with
ties away from zero, then saturates to int32; every saturated element counts in
``D_OUT_SATURATION`` (spec "Convolution Accumulator").
"""

from __future__ import annotations

import numpy as np

from sim.formats.common import round_shift_right

from .program import ASSEMBLY_BITS

__all__ = ["deliver", "fp48_add", "fp48_to_fp32", "accumulate_fp16"]

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _wrap(x, bits):
    m = np.int64(1) << (bits - 1)
    return ((x + m) & ((m << 1) - 1)) - m


def deliver(sums: np.ndarray, truncate: int):
    """(int32-range values int64, saturation count) from the assembly sums."""
    a = _wrap(np.asarray(sums, dtype=np.int64), ASSEMBLY_BITS)
    t = round_shift_right(a, truncate)
    sat = int(np.count_nonzero((t > _I32_MAX) | (t < _I32_MIN)))
    return np.clip(t, _I32_MIN, _I32_MAX), sat


# -----------------------------------------------------------------------------------------
# fp16 layers: NVDLA's fp accumulator cell, bit for bit
# -----------------------------------------------------------------------------------------
# An fp16 layer's assembly buffer holds each output as a 48-bit float: an 8-bit exponent
# (bias 63; all ones for NaN) over a 40-bit two's-complement significand with two integer
# bits, kept normalized (01.x or 10.x, except zero and -2 = 10.000). Each CMAC partial sum
# (a 44-bit code of :func:`sim.conv.cmac.fp16_mac_cell`) is added to it; the first one of an
# output (no assembly value yet) is added to zero. The sum is not IEEE:
#
# - the partial sum's 38-bit two's-complement sum is read from its low 36 bits only (its
#   sign, for the fill of a far-shifted operand, from bit 37), normalized by its redundant
#   sign bits, and widened by four zero bits to 40;
# - the operand with the smaller exponent is shifted right arithmetically; of the bits
#   shifted out only the first two and an OR of the rest are kept (guard, round, sticky);
#   an operand 40 or more places below is its sign fill;
# - the 41-bit sum and those three bits are normalized by their redundant sign bits, the
#   bits below the 40 kept folded into a guard bit and a sticky bit, and rounded by adding
#   half an ulp unless the value is negative and exactly halfway (ties away from zero);
#   rounding that carries out of the significand renormalizes; a zero sum gives exponent 0;
# - a NaN (partial-sum exponent field 0x3F, or assembly exponent all ones) wins: the result
#   is a NaN carrying the NaN's sign and mantissa (the assembly value's first).
#
# Delivery to SDP happens on the layer's last addition of an output: the 48-bit result is
# converted to fp32 (its magnitude rounded to 24 bits, half up; exponent + 64; a NaN keeps
# its 10-bit mantissa in the low bits). ``D_CLIP_CFG`` and ``D_OUT_SATURATION`` play no part
# (the fp cell has neither). Checked against NVDLA's ``NV_NVDLA_CACC_CALC_fp_48b`` in Icarus;
# see tests/test_cacc_fp16.py.

_M40 = (1 << 40) - 1


def _sx(v, bits):
    """Sign-extend the low ``bits`` of int64 ``v``."""
    m = np.int64(1) << (bits - 1)
    return ((v & ((m << 1) - 1)) ^ m) - m


def _lsd(v, bits):
    """Redundant sign bits of the ``bits``-bit value ``v`` (``bits - 1`` for 0 and -1)."""
    v = v & ((np.int64(1) << bits) - 1)
    y = (v ^ (v >> 1)) & ((np.int64(1) << (bits - 1)) - 1)
    return bits - 1 - np.frexp(y.astype(np.float64))[1].astype(np.int64)


def fp48_add(psum, acc, acc_valid):
    """One step of CACC's fp accumulator: ``psum`` (44-bit CMAC codes) + ``acc`` (48-bit
    assembly codes; read as zero where ``acc_valid`` is false) -> 48-bit assembly codes."""
    di = np.asarray(psum, dtype=np.int64)
    oi = np.where(acc_valid, np.asarray(acc, dtype=np.int64), 0)
    di, oi = np.broadcast_arrays(di, oi)
    di_sign = (di >> 37) & 1
    di_pre = di & ((1 << 38) - 1)
    di_mant = _sx(di, 36)
    di_expn = (di >> 38) & 0x3F
    di_zero = di_pre == 0
    di_nan = di_expn == 0x3F
    oi_mant = _sx(oi, 40)
    oi_sign = (oi >> 39) & 1
    oi_expn = (oi >> 40) & 0xFF
    oi_zero = (oi & _M40) == 0
    oi_nan = oi_expn == 0xFF
    nan = di_nan | oi_nan
    lead = _lsd(di_mant, 36)
    di_expm = (di_expn + 47 - lead) & 0x7F
    di_manm = _sx(di_mant << lead, 36)
    di_mans = np.where(oi_nan, 0, np.where(di_nan, _sx((di_pre >> 27) << 25, 36), di_manm))
    oi_mans = np.where(oi_nan, _sx((oi >> 29 & 0x7FF) << 29, 40), np.where(di_nan, 0, oi_mant))
    di_expo = np.where(nan, 0xFF, np.where(di_zero, 0, di_expm))
    oi_expo = np.where(nan, 0xFF, np.where(oi_zero, 0, oi_expn))
    emax = np.maximum(di_expo, oi_expo)

    def align(x, s, sign):          # 40-bit signed x, shift s >= 0: (kept 40 bits, 3 cut bits)
        kept = np.where(s >= 40, -sign, x >> np.minimum(s, 63))
        small = s <= 40
        cut = np.where(small, (x & ((np.int64(1) << np.minimum(s, 40)) - 1))
                       << (40 - np.minimum(s, 40)),
                       (x >> np.clip(s - 40, 0, 63)) & _M40)
        cut = cut & _M40
        return kept, (cut >> 38 << 1) | ((cut & ((1 << 38) - 1)) != 0)

    da, dcut = align(di_mans << 4, emax - di_expo, di_sign)
    oa, ocut = align(oi_mans, emax - oi_expo, oi_sign)
    cut = np.where(di_expo > oi_expo, ocut, np.where(di_expo < oi_expo, dcut, 0))
    msum = _sx(da + oa, 41)
    total = _sx((msum << 3) | cut, 44)
    ln = _lsd(total, 44)
    expo = (emax + 1 - ln) & 0xFF
    comp = total << 1
    scmp = _sx(np.where(ln != 0, comp << np.maximum(ln - 1, 0), comp >> 1), 45)
    ncmp = np.where(nan, (msum & _M40) << 2,
                    (((scmp >> 3) & ((1 << 41) - 1)) << 1) | ((scmp & 7) != 0))
    sign = (ncmp >> 41) & 1
    eff = _sx(ncmp >> 2, 40)
    guard, stick = (ncmp >> 1) & 1, ncmp & 1
    half = guard & ((1 - sign) | stick)
    rnd = _sx(eff + half, 41)
    effu = eff & _M40
    all38 = (effu & ((1 << 38) - 1)) == (1 << 38) - 1
    carry_pos = (sign == 0) & ((effu & ((1 << 39) - 1)) == (1 << 39) - 1) & (half == 1)
    carry_neg = (sign == 1) & (((effu >> 38) & 1) == 0) & all38 & (half == 1)
    mant = np.where(carry_neg, (rnd << 1) & _M40, (rnd >> carry_pos.astype(np.int64)) & _M40)
    expo = np.where(carry_neg, expo - 1, expo + carry_pos) & 0xFF
    expo = np.where(nan, 0xFF, np.where(mant == 0, 0, expo))
    return (expo << 40) | mant


def fp48_to_fp32(acc):
    """CACC's delivery of 48-bit assembly codes as fp32 codes (int64)."""
    a = np.asarray(acc, dtype=np.int64)
    mant = a & _M40
    expo = (a >> 40) & 0xFF
    sign = (mant >> 39) & 1
    um = mant & ((1 << 39) - 1)
    nan = expo == 0xFF
    zero = mant == 0
    neg2 = (sign == 1) & (um == 0)
    mabs = np.where(sign == 1, (~um + 1) & ((1 << 39) - 1), um)
    eff = mabs >> 15
    half = (mabs >> 14) & 1
    carry = (eff == (1 << 24) - 1) & (half == 1)
    rnd = eff + half
    m23 = np.where(carry, 0, rnd & ((1 << 23) - 1))
    e = (expo + 64 + (carry | neg2)) & 0xFF
    m23 = np.where(nan, (um >> 29) & 0x3FF, m23)
    e = np.where(zero, 0, np.where(nan, 0xFF, e))
    return (sign << 31) | (e << 23) | m23


def accumulate_fp16(psums):
    """Fold CMAC partial sums [n, ...] (in CACC's arrival order) through the assembly buffer;
    returns the fp32 codes CACC delivers to SDP [...] (n >= 1)."""
    p = np.asarray(psums, dtype=np.int64)
    acc = fp48_add(p[0], 0, False)
    for step in p[1:]:
        acc = fp48_add(step, acc, True)
    return fp48_to_fp32(acc)
