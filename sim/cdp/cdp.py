"""Golden model of the CDP (cross-channel local response normalization) and CDP_RDMA.

One call runs one hardware layer, bit-exactly on whole cubes (int64 numpy, no per-element
Python loops):

    result = run_cdp(cfg, rdma_view, cdp_view, memory, lut)

``memory(ram_type, where)`` gives the SparseMemory a RAM-type field selects
(:meth:`sim.core.GoldenCore.memory`); ``lut`` is the :class:`CdpLut` holding the LE/LO RAMs.

Datapath, per element (c, h, w) of the cube with its channels padded to whole surfaces
(``S x atom / bytes`` channels); every integer is signed two's complement::

    in -> converter -> square sum over the channel window -> LUT -> x input? -> out converter

Input converter (int8: 9-bit result, int16: 17-bit)
    ``saturate(round((x - offset) * DATIN_SCALE >> DATIN_SHIFTER))``, offset = the low 8 (int8)
    or 16 (int16) bits of DATIN_OFFSET as a signed value. Channels outside the cube -- below 0,
    and from C up to the end of the window past the last surface -- enter as the offset, i.e.
    as 0 after the converter (the padding channels of the last surface are computed and
    written like real ones). On int16 layers NVDLA's C model fills those channels byte by byte
    with the offset's low byte (and its fill of the last surface's padding channels reaches
    past them); this model keeps the int8 rule, padding = offset = 0 after the converter.
Square sum
    the sum of the squares of the converted values of channels c - n .. c + n (window 2n + 1 =
    3/5/7/9 of D_LRN_CFG.NORMALZ_LEN); with SQSUM_BYPASS the converted value itself.
LUT (both tables look up the square sum ``s``)
    LE linear / LO: ``i = (s - start) >> INDEX_SELECT`` (a negative select shifts left, leaving
    no fraction); underflow when ``s - start <= 0``, overflow when ``i >= 64`` (LE) / ``256``
    (LO). LE exponent: ``i = floor(log2(s - LE_START)) - LE_INDEX_OFFSET``; underflow when
    ``s - LE_START <= 0`` or ``i < 0``, overflow when ``i >= 64``. A hit interpolates
    ``y0 + round((y1 - y0) * f / 2^16)`` with the 16-bit fraction ``f`` (the bits below the
    index, aligned to 16 bits; exponent mode: the bits below the leading one); a miss
    extrapolates ``y_edge + round(((s - ref) * slope_scale) * 2^-slope_shift)`` from entry 0 and
    ``ref = start`` (underflow; LE exponent mode also subtracts ``2^LE_INDEX_OFFSET`` when the
    offset is >= 0) or from the last entry and ``ref = end`` (overflow), saturated to 56 then
    16 bits. Rounding is half away from zero. Table choice and counters: both underflow ->
    UFLOW_PRIORITY (counted as uflow), both overflow -> OFLOW_PRIORITY (oflow), only one hits ->
    that one (le_hit / lo_hit), otherwise HYBRID_PRIORITY (hybrid); see
    :func:`sim.lut.select_table`.
Multiplier
    ``lut * converted input`` (int8: 25 bits, int16: 33 bits); MUL_BYPASS passes the LUT value.
Output converter
    ``round(((x - offset) * DATOUT_SCALE) >> DATOUT_SHIFTER)`` saturated to int8 / int16, offset
    = DATOUT_OFFSET's low 25 (int8) or 32 (int16) bits, signed. D_OUT_SATURATION counts the
    elements whose truncated quotient lies more than 1 away from the saturated result.

fp16 layers (INPUT_DATA=FP16, builds with fp16) run NVDLA's floating-point datapath instead:
fp16 -> fp17 converter (NaN flush), fp32 square sum in NVDLA's adder order, the LUT in fp mode
(fp16 table entries, fp32 START/END, fp16 slope scales; :func:`lut_lookup_fp16`), fp17
multiplier and fp17 -> fp16 converter; see the notes above :func:`input_convert_fp16`.

Counters written back (as NVDLA's C model writes them, every layer, padding channels
included): D_OUT_SATURATION (0 for fp16), D_PERF_LUT_UFLOW / OFLOW / HYBRID / LE_HIT / LO_HIT,
and D_NAN_INPUT_NUM / D_INF_INPUT_NUM (NaN / infinite codes among the elements read, whole
atoms, before the flush) / D_NAN_OUTPUT_NUM (NaN codes among the elements written, whole
atoms), 0 for integer layers. NVDLA's Verilog input counters (``_DP_nan``) latch at the
cube's last transfer and may miss its last beats; not modelled.

Memory: CDP_RDMA reads ``S`` surfaces of ``W x H`` atoms (``base + s * surface_stride + h *
line_stride + w * atom``); CDP writes the same layout at its destination, whole atoms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lut import (CAT_HYBRID, CAT_LE_HIT, CAT_LO_HIT, CAT_OFLOW, CAT_UFLOW, LutRam,
                   bit_length, select_table)
from ..nvfloat import (fp16_is_inf, fp16_is_nan, fp16_to_fp17, fp16_to_fp32, fp17_add,
                       fp17_mul, fp17_to_fp16, fp17_to_fp32, fp32_add, fp32_is_nan, fp32_mul,
                       fp32_sub, fp32_to_fp17, fraction_to_fp17)
from ..sdp.sdp import saturate, sign_extend
from .program import FP16, INT8, CdpLutParams, CdpProgram, decode

__all__ = ["CdpLut", "CdpResult", "run_cdp", "compute", "input_convert", "square_sum",
           "lut_lookup", "output_convert", "round_half_away", "shift_round_saturate",
           "CdpLutOutput", "input_convert_fp16", "square_sum_fp16", "multiply_fp16",
           "output_convert_fp16", "fp16_nan_inf_counts", "fp16_nan_count", "lut_index_fp16",
           "interpolate_fp16", "lut_lookup_fp16", "compute_fp16"]

LUT_FRACTION_BITS = 16                  # interpolation weight precision
EXTRAPOLATION_BITS = 56                 # slope term width


class CdpLut(LutRam):
    """The CDP's LE (65) and LO (257) tables and access pointer: a data access moves the
    pointer only in its own direction, and it stops at the table's last entry."""

    pointer = "hold"


# =========================================================================================
# Integer helpers
# =========================================================================================
def round_half_away(x, shift: int):
    """``x / 2^shift`` rounded half away from zero (``shift`` >= 0 scalar, int64 ``x``)."""
    x = np.asarray(x, dtype=np.int64)
    s = min(int(shift), 62)
    if s <= 0:
        return x.copy()
    floor = x >> s
    half = (x >> (s - 1)) & 1
    sticky = (x & ((np.int64(1) << (s - 1)) - 1)) != 0
    return floor + ((half == 1) & ((x >= 0) | sticky))


def shift_round_saturate(x, shift, bits: int):
    """``x * 2^-shift`` (``shift`` signed, scalar or array) rounded half away from zero and
    saturated to ``bits`` signed bits."""
    x = np.asarray(x, dtype=np.int64)
    shift = np.broadcast_to(np.asarray(shift, dtype=np.int64), x.shape)
    out = np.zeros(x.shape, dtype=np.int64)
    lim = 1 << (bits - 1)
    for s in np.unique(shift):                       # a handful of distinct shifts
        m = shift == s
        s = int(s)
        if s >= 0:
            out[m] = round_half_away(x[m], s)
        else:
            n = -s
            bound = (lim >> n) + 1
            out[m] = np.clip(x[m], -bound, bound) << n
    return saturate(out, bits)


# =========================================================================================
# Stages
# =========================================================================================
def input_convert(raw, precision: int, offset: int, scale: int, shift: int):
    """Input converter on raw int8/int16 values; int8 gives 9-bit, int16 17-bit results."""
    bits = 8 if precision == INT8 else 16
    off = sign_extend(offset, bits)
    v = (np.asarray(raw, dtype=np.int64) - off) * int(scale)
    return saturate(round_half_away(v, shift), bits + 1)


def square_sum(x, window: int, bypass: bool = False):
    """Sum of squares over ``window`` channels centred on each channel of ``x[C, ...]``;
    channels outside ``x`` count 0. With ``bypass`` the centre value itself."""
    x = np.asarray(x, dtype=np.int64)
    if bypass:
        return x.copy()
    n = window // 2
    sq = x * x
    c = sq.shape[0]
    zeros = np.zeros((n,) + sq.shape[1:], dtype=np.int64)
    cs = np.cumsum(np.concatenate([zeros, sq, zeros]), axis=0)
    cs = np.concatenate([np.zeros((1,) + sq.shape[1:], np.int64), cs])
    return cs[2 * n + 1:2 * n + 1 + c] - cs[:c]


@dataclass
class CdpLutOutput:
    value: np.ndarray                  #: int16 LUT results
    category: np.ndarray               #: sim.lut CAT_* per element
    le: np.ndarray                     #: LE result per element (before the choice)
    lo: np.ndarray                     #: LO result per element

    def count(self, cat) -> int:
        return int(np.count_nonzero(self.category == cat))


def _interpolate(table, index, frac):
    y0 = table[index]
    y1 = table[np.minimum(index + 1, table.size - 1)]
    return saturate(y0 + round_half_away((y1 - y0) * frac, LUT_FRACTION_BITS), 16)


def _extrapolate(edge, s, ref, scale, shift):
    slope = shift_round_saturate((s - ref) * int(scale), int(shift), EXTRAPOLATION_BITS)
    return saturate(int(edge) + slope, 16)


def _align_fraction(rem, bits):
    """The ``bits`` low bits ``rem`` of a difference, aligned to a 16-bit fraction."""
    bits = np.asarray(bits, dtype=np.int64)
    down = np.clip(bits - LUT_FRACTION_BITS, 0, 62)
    up = np.clip(LUT_FRACTION_BITS - bits, 0, LUT_FRACTION_BITS)
    return np.where(bits > LUT_FRACTION_BITS, rem >> down, rem << up)


def _linear(s, table, start, end, select, uscale, ushift, oscale, oshift):
    depth_limit = table.size - 1                    # 64 (LE) / 256 (LO)
    diff = s - start
    under = diff <= 0
    if select >= 0:
        sel = min(select, 62)
        index = np.where(under, 0, diff >> sel)
        over = ~under & (index >= depth_limit)
        frac = _align_fraction(diff & ((np.int64(1) << sel) - 1), sel)
    else:
        n = -select
        threshold = -(-depth_limit // (1 << n))     # diff << n >= limit  <=>  diff >= this
        over = ~under & (diff >= threshold)
        index = np.where(under | over, 0, np.clip(diff, 0, threshold) << n)
        frac = np.zeros_like(diff)
    hit = ~under & ~over
    idx = np.where(hit, index, 0)
    value = np.where(hit, _interpolate(table, idx, np.where(hit, frac, 0)), 0)
    value = np.where(under, _extrapolate(table[0], s, start, uscale, ushift), value)
    value = np.where(over, _extrapolate(table[-1], s, end, oscale, oshift), value)
    return value, under, over


def _exponent(s, table, p: CdpLutParams):
    diff = s - p.le_start
    positive = diff > 0
    log2 = np.where(positive, bit_length(np.maximum(diff, 0)) - 1, 0)
    index = log2 - p.le_index_offset
    under = ~positive | (index < 0)
    over = ~under & (index >= table.size - 1)
    hit = ~under & ~over
    idx = np.where(hit, index, 0)
    rem = np.where(hit, diff - (np.int64(1) << np.clip(log2, 0, 62)), 0)
    frac = _align_fraction(rem, log2)
    value = np.where(hit, _interpolate(table, idx, frac), 0)
    bias = (1 << p.le_index_offset) if p.le_index_offset >= 0 else 0
    value = np.where(under, _extrapolate(table[0], s, p.le_start + bias, p.le_uflow_scale,
                                         p.le_uflow_shift), value)
    value = np.where(over, _extrapolate(table[-1], s, p.le_end, p.le_oflow_scale,
                                        p.le_oflow_shift), value)
    return value, under, over


def lut_lookup(lut: LutRam, s, p: CdpLutParams) -> CdpLutOutput:
    """Look the square sums ``s`` (int64, any shape) up in both tables and choose."""
    s = np.asarray(s, dtype=np.int64)
    if p.le_linear:
        le, le_u, le_o = _linear(s, lut.le, p.le_start, p.le_end, p.le_index_select,
                                 p.le_uflow_scale, p.le_uflow_shift, p.le_oflow_scale,
                                 p.le_oflow_shift)
    else:
        le, le_u, le_o = _exponent(s, lut.le, p)
    lo, lo_u, lo_o = _linear(s, lut.lo, p.lo_start, p.lo_end, p.lo_index_select,
                             p.lo_uflow_scale, p.lo_uflow_shift, p.lo_oflow_scale,
                             p.lo_oflow_shift)
    use_lo, cat = select_table(le_u, le_o, lo_u, lo_o, p.uflow_priority_lo,
                               p.oflow_priority_lo, p.hybrid_priority_lo)
    return CdpLutOutput(value=np.where(use_lo, lo, le), category=cat, le=le, lo=lo)


def output_convert(x, precision: int, offset: int, scale: int, shift: int):
    """Output converter; returns ``(value, saturated)``."""
    bits = 8 if precision == INT8 else 16
    off = sign_extend(offset, 25 if precision == INT8 else 32)
    v = (np.asarray(x, dtype=np.int64) - off) * int(scale)
    rounded = round_half_away(v, shift)
    out = saturate(rounded, bits)
    truncated = v >> min(int(shift), 62)
    return out, np.abs(truncated - out) > 1


# =========================================================================================
# fp16 stages (INPUT_DATA=FP16): fp17 values, fp32 square sums
# =========================================================================================
# NVDLA's fp16 CDP (vmod/nvdla/cdp: _DP_nan, _DP_cvtin / HLS_cdp_icvt, _DP_sum / fp_sum_block,
# _DP_LUT_ctrl, _DP_lut / fp_format_cvt, _DP_intp, _DP_mul / _DP_MUL_unit, _DP_cvtout /
# HLS_cdp_ocvt, _wdma) per element, on raw codes:
#
#   fp16 --(NAN_TO_ZERO)--> fp17 --fp32 square sum--> LUT (fp32 in, fp17 out) --x input--> fp16
#
# The DATIN_* / DATOUT_* converter fields play no part (the converters only change format),
# and nothing saturates in the output converter's sense (D_OUT_SATURATION counts 0).
#
# The LUT in fp16 mode (lut_lookup_fp16), as NVDLA's Verilog wires it (checked bit for bit
# against NVDLA's LUT_ctrl -> lut -> intp Verilog in Icarus, tests/test_cdp_fp16):
# - _DP_LUT_CTRL_unit, per table (LE, LO): lut_index_fp16 -- d = fp32_sub(sum, START) with
#   START the low 32 bits of *_START read as fp32; underflow when d is a NaN, +-0 or negative;
#   exponent mode index = exponent of d - 127 - LE_INDEX_OFFSET, linear modes d x
#   2^-INDEX_SELECT as a fixed-point number; overflow when the index reaches 64 / 256.
# - _DP_lut: the table choice of the integer modes (sim.lut.select_table on the two tables'
#   underflow / overflow flags, same priorities and hit categories). The chosen table gives
#   y0 / y1 = its entries at index / index + 1 on a hit, entry 0 twice on underflow, the last
#   entry twice on overflow; fp_format_cvt widens them (HLS_fp16_to_fp32 for y0 and y1,
#   HLS_fp16_to_fp17 for y0) and the 16-bit fraction (HLS_uint16_to_fp17 =
#   fraction_to_fp17(f, 16)).
# - _DP_intp feeds the interpolation unit (interpolate_fp16: fp17_add(fp17_mul(fp32_to_fp17(
#   fp32_sub(in1, in0)), scale), y)) with y = y0 in fp17 and, on a hit, in0 / in1 = y0 / y1 in
#   fp32 and scale = the fraction in fp17; on a miss in1 = the fp32 square sum, in0 = the
#   reference and scale = the *_SLOPE_*_SCALE field read as fp16, widened to fp17. References:
#   LE underflow fp32_add(2^LE_INDEX_OFFSET, LE_START) with the power an fp32 (exponent field
#   offset + 127) in exponent mode for offsets -126..127 and +0 otherwise (linear mode,
#   offsets -128 / -127); LO underflow LO_START; overflow LE_END / LO_END (low 32 bits of the
#   registers as fp32). The *_SLOPE_*_SHIFT fields are unused in fp16 mode, and the
#   INDEX_SELECT / INDEX_OFFSET fields are used at their full 8 bits.
# - A NaN square sum bypasses the interpolation: the LUT gives the fp17 NaN with the sum's
#   sign and low 10 mantissa bits (NaN_flag_* in _DP_intp); its two tables both underflow,
#   so it counts as an underflow.
# Counters (D_PERF_LUT_*): one per element, padding channels included, as NVDLA's C model
# counts them (cmod HLS_CDP_lookup_fp16), which the Verilog matches except for its hybrid
# counter: it counts 8 lanes per cycle, and in fp16 mode lanes 4..7 carry zero flags read as
# "both hit", so D_PERF_LUT_HYBRID gains 4 per 4-element beat (seen in the Icarus run of
# tests/test_cdp_fp16); that artefact is not modelled.
# The C model (cmod/hls_wrapper/cdp_hls_wrapper.cpp) differs from the Verilog in places this
# model follows the Verilog: it computes the linear index in C float arithmetic, adds the LE
# underflow bias as fp32_add(LE_START, 2^offset) in exponent mode only, and interpolates a NaN
# square sum instead of bypassing it.


def input_convert_fp16(raw, nan_to_zero: bool = False):
    """fp16 input codes -> fp17 codes: NaNs replaced by +0 first when ``nan_to_zero``
    (``D_NAN_FLUSH_TO_ZERO``), then NVDLA's fp16 -> fp17 (:func:`sim.nvfloat.fp16_to_fp17`:
    exact, infinities become the largest finite fp17 value, NaNs keep sign and payload)."""
    h = np.asarray(raw, dtype=np.int64) & 0xFFFF
    if nan_to_zero:
        h = np.where(fp16_is_nan(h), 0, h)
    return fp16_to_fp17(h)


def square_sum_fp16(x, window: int, bypass: bool = False):
    """fp32 square sums of fp17 codes ``x[C, ...]`` over ``window`` channels centred on each
    channel (channels outside ``x`` count +0); with ``bypass`` the centre value in fp32.

    Each value is widened to fp32 and squared with NVDLA's fp32 multiplier; the squares of
    channels c-k and c+k are added pairwise, then accumulated in the order of NVDLA's adder
    tree, all with NVDLA's fp32 adder (not associative: the order is part of the result)::

        ((((sq[c-1] + sq[c+1]) + sq[c]) + (sq[c-2] + sq[c+2])) + (sq[c-3] + sq[c+3]))
                                                                + (sq[c-4] + sq[c+4])

    stopping after the window's last pair (window 3: the first two additions)."""
    w = fp17_to_fp32(np.asarray(x, dtype=np.int64))
    if bypass:
        return w
    n = window // 2
    sq = fp32_mul(w, w)
    c = sq.shape[0]
    zeros = np.zeros((n,) + sq.shape[1:], dtype=np.int64)
    padded = np.concatenate([zeros, sq, zeros])          # padded[n + k] = sq[k]

    def at(d):                                           # sq[c + d] for every c
        return padded[n + d:n + d + c]

    s = fp32_add(fp32_add(at(-1), at(1)), at(0))
    for k in range(2, n + 1):
        s = fp32_add(s, fp32_add(at(-k), at(k)))
    return s


def multiply_fp16(lut, x, bypass: bool = False):
    """The multiplier on fp17 codes: ``x * lut`` (NVDLA's fp17 multiplier, the input first);
    with ``bypass`` (MUL_BYPASS) the LUT value, except that a NaN input passes itself."""
    x = np.asarray(x, dtype=np.int64)
    lut = np.asarray(lut, dtype=np.int64)
    if bypass:
        nan = (((x >> 10) & 0x3F) == 0x3F) & ((x & 0x3FF) != 0)
        return np.where(nan, x, lut)
    return fp17_mul(x, lut)


def output_convert_fp16(y):
    """fp17 codes -> fp16 output codes (NVDLA's fp17 -> fp16: nearest even, saturating to
    +-65504, no infinities; NaNs keep sign and payload); never counts a saturation."""
    return fp17_to_fp16(np.asarray(y, dtype=np.int64))


def lut_index_fp16(s, start: int, exponent: bool, index_offset: int, index_select: int,
                   entries: int):
    """The index stage of one table of the fp16 LUT (NVDLA's ``_DP_LUT_CTRL_unit``), on fp32
    square sums ``s`` (used by :func:`lut_lookup_fp16`).

    ``start``: the low 32 bits of ``S_LUT_LE_START`` / ``S_LUT_LO_START``, an fp32 code;
    ``exponent``: LE exponent mode (else linear); ``index_offset`` / ``index_select``: the
    signed 8-bit fields; ``entries``: 65 (LE) / 257 (LO). ``d = fp32_sub(s, start)``;
    underflow when ``d`` is a NaN, +-0 or negative. Exponent mode: ``log2 = exponent field -
    127``, index ``log2 - index_offset`` (underflow when negative), fraction = ``d``'s mantissa
    bits 22:7. Linear mode: ``d x 2^-index_select`` exactly, index = its integer part,
    fraction = the 16 bits below (truncated). Overflow when the index reaches ``entries - 1``
    (the index is then ``entries - 1``); an infinite ``d`` (possible with a -inf start) is
    exponent 128 read as -128 in exponent mode, and index 0 (a hit) in linear mode. Returns
    ``(index, fraction, under, over)``; the index is 0 on underflow, the fraction is defined
    on hits only (NVDLA keeps a stale value on linear underflow)."""
    s = np.asarray(s, dtype=np.int64)
    d = fp32_sub(s, np.int64(start & 0xFFFFFFFF))
    e = (d >> 23) & 0xFF
    m = d & 0x7FFFFF
    nan = (e == 0xFF) & (m != 0)
    under = nan | ((d & 0x7FFFFFFF) == 0) | (((d >> 31) & 1) == 1)
    limit = entries - 1
    if exponent:
        log2 = ((e - 127 + 128) & 0xFF) - 128               # 8 bits: e = 255 reads as -128
        index = log2 - int(index_offset)
        under = under | (index < 0)
        frac = m >> 7
    else:
        sig = m | (1 << 23)
        q = e - 127 - int(index_select) - 23                 # scaled = sig x 2^q
        big = q >= 16                                        # >= 2^39: overflows any table
        qc = np.clip(q, -80, 15)
        index = np.where(qc >= 0, sig << np.maximum(qc, 0), sig >> np.clip(-qc, 0, 63))
        index = np.where(big, limit, index)
        f = qc + 16                                          # fraction bits: sig x 2^(q+16)
        frac = np.where(f >= 0, (sig << np.clip(f, 0, 16)),
                        sig >> np.clip(-f, 0, 63)) & 0xFFFF
        frac = np.where(qc >= 0, 0, frac)
        # d = infinity (e.g. START = -inf): NVDLA's 128-bit integer part wraps to 0, a hit at 0
        inf = e == 0xFF
        index = np.where(inf, 0, index)
        frac = np.where(inf, 0, frac)
    over = ~under & (index >= limit)
    index = np.where(under, 0, np.where(over, limit, index))
    return index, np.where(under, 0, frac), under, over


def interpolate_fp16(in0, in1, y, scale):
    """NVDLA's fp16 interpolation unit (``_DP_INTP_unit`` in fp16 mode): ``(in1 - in0) x scale
    + y`` as ``fp17_add(fp17_mul(fp32_to_fp17(fp32_sub(in1, in0)), scale), y)`` (``in0``,
    ``in1`` fp32 codes; ``y``, ``scale`` fp17 codes; the product first in the addition);
    :func:`lut_lookup_fp16` feeds it."""
    d = fp32_to_fp17(fp32_sub(np.asarray(in1, dtype=np.int64), np.asarray(in0, dtype=np.int64)))
    return fp17_add(fp17_mul(d, np.asarray(scale, dtype=np.int64)),
                    np.asarray(y, dtype=np.int64))


def _le_underflow_ref_fp16(p: CdpLutParams) -> int:
    """fp32 code of the LE underflow reference: ``fp32_add(2^LE_INDEX_OFFSET, LE_START)``, the
    power +0 in linear mode and for offsets -128 / -127."""
    off = int(p.le_index_offset)
    power = 0 if p.le_linear or off <= -127 else ((off + 127) & 0xFF) << 23
    return int(fp32_add(np.int64(power), np.int64(p.le_start & 0xFFFFFFFF)))


def _table_fp16(s, table, index, frac, under, over, ref_under: int, ref_over: int,
                uscale: int, oscale: int):
    """One table's fp17 result on fp32 sums ``s`` (hit: interpolation between its entries;
    miss: extrapolation from the edge entry with the slope scale read as fp16)."""
    t = np.asarray(table, dtype=np.int64) & 0xFFFF                  # fp16 codes
    last = t.size - 1
    hit = ~under & ~over
    i0 = np.where(under, 0, np.where(over, last, index))
    i1 = np.where(hit, np.minimum(index + 1, last), i0)
    y0, y1 = t[i0], t[i1]
    in0 = np.where(hit, fp16_to_fp32(y0), np.where(under, ref_under, ref_over))
    in1 = np.where(hit, fp16_to_fp32(y1), s)
    scale = np.where(hit, fraction_to_fp17(frac, 16),
                     np.where(under, fp16_to_fp17(uscale & 0xFFFF),
                              fp16_to_fp17(oscale & 0xFFFF)))
    return interpolate_fp16(in0, in1, fp16_to_fp17(y0), scale)


def lut_lookup_fp16(lut: LutRam, s, p: CdpLutParams) -> CdpLutOutput:
    """The LUT in fp16 mode on fp32 square sums ``s`` (int64 codes, any shape): both tables
    indexed (:func:`lut_index_fp16`), one chosen as in the integer modes
    (:func:`sim.lut.select_table`), its result interpolated or extrapolated in NVDLA's fp
    units (:func:`interpolate_fp16`); a NaN sum gives the fp17 NaN of its sign and low 10
    mantissa bits. Entries are fp16 codes (the tables' 16-bit words); ``value``, ``le`` and
    ``lo`` are fp17 codes. See the notes above :func:`input_convert_fp16`."""
    s = np.asarray(s, dtype=np.int64) & 0xFFFFFFFF
    xi, xf, xu, xo = lut_index_fp16(s, p.le_start, not p.le_linear, p.le_index_offset,
                                    p.le_index_select, lut.le.size)
    yi, yf, yu, yo = lut_index_fp16(s, p.lo_start, False, 0, p.lo_index_select, lut.lo.size)
    le = _table_fp16(s, lut.le, xi, xf, xu, xo, _le_underflow_ref_fp16(p),
                     p.le_end & 0xFFFFFFFF, p.le_uflow_scale, p.le_oflow_scale)
    lo = _table_fp16(s, lut.lo, yi, yf, yu, yo, p.lo_start & 0xFFFFFFFF,
                     p.lo_end & 0xFFFFFFFF, p.lo_uflow_scale, p.lo_oflow_scale)
    use_lo, cat = select_table(xu, xo, yu, yo, p.uflow_priority_lo, p.oflow_priority_lo,
                               p.hybrid_priority_lo)
    value = np.where(use_lo, lo, le)
    nan = fp32_is_nan(s)
    value = np.where(nan, (((s >> 31) & 1) << 16) | (0x3F << 10) | (s & 0x3FF), value)
    return CdpLutOutput(value=value, category=cat, le=le, lo=lo)


def fp16_nan_inf_counts(raw):
    """``(NaN, Inf)`` counts of fp16 input codes (``D_NAN_INPUT_NUM`` / ``D_INF_INPUT_NUM``,
    before any flush)."""
    h = np.asarray(raw, dtype=np.int64)
    return int(np.count_nonzero(fp16_is_nan(h))), int(np.count_nonzero(fp16_is_inf(h)))


def fp16_nan_count(out):
    """NaN count of fp16 output codes (``D_NAN_OUTPUT_NUM``)."""
    return int(np.count_nonzero(fp16_is_nan(np.asarray(out, dtype=np.int64))))


# =========================================================================================
# Layer
# =========================================================================================
@dataclass
class CdpResult:
    """Output and counters of one CDP layer (counts include the padding channels)."""
    output: np.ndarray                 #: [C, H, W] int64 output values
    padded_output: np.ndarray          #: [S x channels per atom, H, W]
    out_saturation: int = 0
    lut_uflow: int = 0
    lut_oflow: int = 0
    lut_hybrid: int = 0
    lut_le_hit: int = 0
    lut_lo_hit: int = 0
    dst_extent: tuple = None           #: (first byte address, end address) written
    nan_input: int = 0                 #: fp16: NaN codes among the elements read
    inf_input: int = 0                 #: fp16: infinities among the elements read
    nan_output: int = 0                #: fp16: NaN codes among the elements written

    def status_registers(self) -> dict:
        """``{block: {register: word}}`` of the hardware-written registers."""
        cdp = {"D_OUT_SATURATION": self.out_saturation,
               "D_PERF_LUT_UFLOW": self.lut_uflow, "D_PERF_LUT_OFLOW": self.lut_oflow,
               "D_PERF_LUT_HYBRID": self.lut_hybrid, "D_PERF_LUT_LE_HIT": self.lut_le_hit,
               "D_PERF_LUT_LO_HIT": self.lut_lo_hit, "D_NAN_INPUT_NUM": self.nan_input,
               "D_INF_INPUT_NUM": self.inf_input, "D_NAN_OUTPUT_NUM": self.nan_output}
        return {"CDP": {k: min(int(v), (1 << 32) - 1) for k, v in cdp.items()}}


def compute(prog: CdpProgram, raw, lut: LutRam):
    """The datapath on raw input values ``raw[S x channels per atom, H, W]`` (channels past C
    are ignored: they enter as padding). Returns ``(output, saturated, lut_output)``; fp16
    layers go to :func:`compute_fp16`."""
    if prog.precision == FP16:
        return compute_fp16(prog, raw, lut)
    raw = np.asarray(raw, dtype=np.int64)
    x = input_convert(raw, prog.precision, prog.datin_offset, prog.datin_scale,
                      prog.datin_shift)
    x[prog.channel:] = 0                             # padding channels: the offset, i.e. 0
    s = square_sum(x, prog.window, prog.sqsum_bypass)
    lut_out = lut_lookup(lut, s, prog.lut)
    y = lut_out.value if prog.mul_bypass else lut_out.value * x
    out, sat = output_convert(y, prog.precision, prog.datout_offset, prog.datout_scale,
                              prog.datout_shift)
    return out, sat, lut_out


def compute_fp16(prog: CdpProgram, raw, lut: LutRam):
    """The fp16 datapath on raw fp16 codes ``raw[S x channels per atom, H, W]``: input
    converter (NaN flush), fp32 square sum, fp16-mode LUT, fp17 multiplier, output converter.
    Channels past C enter as +0 after the converter (like the integer modes' padding; NVDLA's
    C model fills the last surface's padding channels with DATIN_OFFSET's code read as fp16,
    which agrees when DATIN_OFFSET is 0, as the random programs keep it on fp16 layers; the
    Verilog's fill of those channels is not simulated here). Returns ``(fp16 output codes,
    saturated (all False), lut_output)``."""
    x = input_convert_fp16(raw, prog.nan_to_zero)
    x[prog.channel:] = 0                             # padding channels: +0
    s = square_sum_fp16(x, prog.window, prog.sqsum_bypass)
    lut_out = lut_lookup_fp16(lut, s, prog.lut)
    out = output_convert_fp16(multiply_fp16(lut_out.value, x, prog.mul_bypass))
    return out, np.zeros(out.shape, dtype=bool), lut_out


def _addresses(base, line, surf, S, H, W, atom):
    s = np.arange(S, dtype=np.int64)[:, None, None, None]
    h = np.arange(H, dtype=np.int64)[None, :, None, None]
    w = np.arange(W, dtype=np.int64)[None, None, :, None]
    b = np.arange(atom, dtype=np.int64)[None, None, None, :]
    return base + s * surf + h * line + w * atom + b            # [S, H, W, atom]


def run_cdp(cfg, rdma, cdp, memory, lut: LutRam | None = None) -> CdpResult:
    """Run one CDP layer: decode (raising :class:`~sim.cdp.program.CdpProgramError` on an
    invalid program, before any memory access), read, compute, write."""
    prog = decode(cfg, rdma, cdp)
    lut = lut if lut is not None else CdpLut()
    atom = cfg.memory_atom
    nb = prog.bytes_per_element
    cpa = atom // nb
    W, H, C = prog.width, prog.height, prog.channel
    S = -(-C // cpa)
    ram, base, line, surf = prog.src
    addrs = _addresses(base, line, surf, S, H, W, atom)
    data = memory(ram, "CDP_RDMA.D_SRC_DMA_CFG.SRC_RAM_TYPE").gather(addrs.reshape(-1))
    data = np.asarray(data, dtype=np.uint8).reshape(S, H, W, cpa, nb).astype(np.int64)
    vals = data[..., 0] if nb == 1 else data[..., 0] | (data[..., 1] << 8)
    vals = sign_extend(vals, 8 * nb)
    raw = vals.transpose(0, 3, 1, 2).reshape(S * cpa, H, W)

    out, sat, lut_out = compute(prog, raw, lut)
    nan_in = inf_in = nan_out = 0
    if prog.precision == FP16:
        nan_in, inf_in = fp16_nan_inf_counts(raw)
        nan_out = fp16_nan_count(out)

    ram, base, line, surf = prog.dst
    waddrs = _addresses(base, line, surf, S, H, W, atom)
    elems = (out & ((1 << (8 * nb)) - 1)).reshape(S, cpa, H, W).transpose(0, 2, 3, 1)
    bytes_ = np.stack([(elems >> (8 * k)) & 0xFF for k in range(nb)], axis=-1)
    memory(ram, "CDP.D_DST_DMA_CFG.DST_RAM_TYPE").scatter(
        waddrs.reshape(-1), bytes_.reshape(-1).astype(np.uint8))
    return CdpResult(
        output=out[:C].copy(), padded_output=out, out_saturation=int(sat.sum()),
        lut_uflow=lut_out.count(CAT_UFLOW), lut_oflow=lut_out.count(CAT_OFLOW),
        lut_hybrid=lut_out.count(CAT_HYBRID), lut_le_hit=lut_out.count(CAT_LE_HIT),
        lut_lo_hit=lut_out.count(CAT_LO_HIT),
        dst_extent=(int(waddrs.min()), int(waddrs.max()) + 1),
        nan_input=nan_in, inf_input=inf_in, nan_output=nan_out)

