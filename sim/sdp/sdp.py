"""Golden model of the SDP (single data point processor) and its read DMA (SDP_RDMA).

Bit-exact with the NVDLA v1 integer datapath, and with its fp16 datapath (builds with fp16;
see "fp16 layers" below). One call runs one hardware layer:

    result = run_sdp(cfg, rdma_view, sdp_view, mem, lut=lut)

``rdma_view`` / ``sdp_view`` are :class:`sim.regs.GroupView` of the active register group of
the SDP_RDMA and SDP blocks (single-group registers included); ``lut`` is the
:class:`sim.sdp.lut.SdpLut` holding the LUT RAMs. Offline mode reads the input cube through
SDP_RDMA; flying mode takes the accumulator's int32 cube as ``flying_input``. The result is
written to memory at the destination surface, unless the output goes to PDP (then it is only
returned). The returned :class:`SdpResult` also carries the status / performance counters that
the caller writes back into the D-group registers (:meth:`SdpResult.status_registers`).

Datapath (each element independently; all integers are signed two's complement)::

    in(32) -> X1 (BS) -> X2 (BN) -> Y (EW) -> C (output converter) -> out(8/16)

X stage (BS and BN are two instances)
    ALU: operand = saturate32(op16 << ALU_SHIFT); MAX / MIN / SUM on 33 bits (SUM keeps the
    33-bit result). MUL: 33 x 16 -> 49 bits, then round_shift_right by MUL_SHIFT to a saturated
    int32. A bypassed MUL still applies MUL_SHIFT (round and saturate). PReLU passes
    non-negative values through untouched (low 32 bits) and multiplies negative ones. ReLU
    clamps negatives to 0. Operands come from the register (16 bits) or per channel / per
    element from the BRDMA / NRDMA (1 byte sign-extended, or 2 bytes).
Y stage (EW)
    DMA operands go through a converter: saturate32(round((op16 - offset32) * scale16 >>
    truncate6)), unless that converter is bypassed (op16 sign-extended); register operands are
    32 bits and used as they are. MUL first: 32 x 32 -> 64 bits, round_shift_right by
    EW_TRUNCATE (10 bits) to int32 (PReLU as in X). Then ALU: MAX / MIN / SUM / EQL (0 if
    equal, else 1) on 33 bits, saturated to int32. Then the LUT (see :func:`lut_lookup`).
C (output converter)
    ((x - CVT_OFFSET) * CVT_SCALE) round_shift_right by CVT_SHIFT into 17 bits (saturating;
    this is the saturation the OUT_SATURATION counter counts on int8 / int16 outputs, flagged
    as NVDLA's Verilog does: only when the truncated value lies beyond 65536 or -65537), then
    saturated to int8 / int16 (that saturation is not counted).

Rounding everywhere is "round half away from zero" (the hardware adds the guard bit, and for
negative values only when a sticky bit is set too). A right shift by at least the operand width
gives 0.

fp16 layers (PROC_PRECISION = OUT_PRECISION = FP16)
    The datapath computes on fp32 codes with NVDLA's own float units (:mod:`sim.nvfloat`:
    no denormals inside the units, no infinities: overflow saturates to the largest finite
    value, NaNs propagate, rounding to nearest even). Input: fp16 from memory widened to fp32
    (:func:`sim.nvfloat.fp16_to_fp32`: an infinity becomes the largest finite fp32 value), or
    the accumulator's fp32 codes in flying mode; with ``D_FEATURE_MODE_CFG.NAN_TO_ZERO`` input
    NaNs (after the widening) become +0. X stage: ALU (MAX / MIN / SUM) then MUL with fp16
    operands widened to fp32 (NaN operands -> +0 with NAN_TO_ZERO), PReLU passing sign-0
    values, ReLU turning every negative value (-0 too) into +0; the shift fields take no
    part. Y stage: MUL then ALU (EQL: integer 0 / 1 on the raw fp32 codes) with DMA operands
    widened from fp16 (NaN -> +0 with NAN_TO_ZERO; the operand converter's offset, scale,
    truncate and bypass take no part) and register operands taken as fp32 codes as they are;
    EW_TRUNCATE takes no part. LUT: :func:`lut_lookup_fp16` (fp32 indexing, fp17
    interpolation, fp16 entries; same table choice and counters). C: fp32 -> fp16
    (:func:`sim.nvfloat.fp32_to_fp16`: beyond 65504 saturates to +-65504, no infinity);
    CVT_OFFSET / SCALE / SHIFT take no part. The
    saturation counter counts outputs of magnitude 65504. Counters: SDP_RDMA's
    D_STATUS_NAN_INPUT_NUM / INF_INPUT_NUM count the fp16 NaN / infinity codes of the input it
    reads (offline, IN_PRECISION=FP16 and its PERF_NAN_INF_COUNT_EN; padding channels
    included); SDP's D_STATUS_NAN_OUTPUT_NUM counts the NaN codes of the output (padding
    included) in every fp16 layer, whatever PERF_NAN_INF_COUNT_EN says (NVDLA's write DMA
    counts ungated); SDP's own D_STATUS_NAN_INPUT_NUM / INF_INPUT_NUM are 0 (NVDLA ties them
    to 0). Outputs (``output``, ``padded_output``) are raw fp16 codes; a flying input is fp32
    codes. Checked stage by stage against NVDLA's Verilog (``tests/test_sdp_fp16_nvdla_rtl.py``).

Precision conversion (SDP_RDMA IN / PROC_PRECISION, SDP PROC / OUT_PRECISION; the two
PROC_PRECISIONs always agree, and so do the two OUT_PRECISIONs when SDP_RDMA takes part in
batch mode, where NVDLA's operand read DMAs read theirs)
    int16 -> int8 (offline): the read DMA's 16to8 mode, SDP_RDMA IN_PRECISION=INT16 with
    PROC_PRECISION=INT8 (SDP: PROC=OUT=INT8). The datapath works in int8 atoms (memory_atom
    channels): int8 atom k holds int16 surfaces 2k and 2k + 1 side by side, so an odd last
    int16 surface is followed by one more read at its surface stride (its values fill the
    padding channels). Operand DMAs use int8 atoms (1-byte operands allowed). The int16
    values go through the integer datapath as they are; the converter saturates to int8.
    SDP PROC=INT16 with OUT=INT8 is rejected (NVDLA's write DMA has no 16to8 mode).
    int8 -> int16 (offline): the write DMA's 8to16 mode, SDP PROC_PRECISION=INT8 with
    OUT_PRECISION=INT16: each int8 atom (memory_atom channels) is written as two int16 atoms,
    surfaces 2k and 2k + 1 at DST_SURFACE_STRIDE steps (2 x ceil(C / memory_atom) surfaces,
    the second of the last pair too); the converter saturates to int16. With IN_PRECISION=
    INT16 on the read side too, both modes run (int16 in and out in int8 atoms).
    int16 -> fp16 (PROC=INT16, OUT=FP16, offline or flying): the integer converter into 17
    bits (its saturation is not counted), then :func:`sim.sdp.convert.int17_to_fp16`
    (nearest even; magnitudes from 65520 saturate to 65504, no infinity). Saturation counts
    outputs of magnitude 65504; NaN outputs are counted (none occur).
    fp16 -> int16 (PROC=FP16, OUT=INT16, offline or flying): fp32 -> fp16 as in fp16 layers,
    then :func:`sim.sdp.convert.fp16_to_int16` (half away from zero, saturating, NaN ->
    -32768); CVT_OFFSET / SCALE / SHIFT take no part; the saturation count is 0, the NaN
    output count 0.
    Invalid: int8 <-> fp16, flying int8 <-> int16 (a flying layer keeps the bit depth),
    Winograd conversion, read-DMA conversions other than 16to8.

Memory layout: feature cubes are surfaces of ``memory_atom / bytes_per_element`` channels;
each line is ``W`` atoms, lines ``LINE_STRIDE`` apart, surfaces ``SURFACE_STRIDE`` apart. A
1x1 cube (W = H = 1) is read and written as one contiguous run of atoms (strides unused;
batched output excepted: each batch's 1x1 cube is written with the strides).
Operand data for BS/BN/EW has ``components x data_size`` bytes per element (ALU and MUL
components interleaved, ALU first when both are used): per kernel it is one contiguous
``surfaces x (channels per surface) x bytes`` block, per element it is a cube of lines of
``W x (channels per surface) x bytes``. Channel padding up to a whole surface is processed
like real data (it is part of every atom) and written back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..lut import LutParams, bit_length, select_table
from ..nvfloat import (fp16_is_inf, fp16_is_nan, fp16_to_fp17, fp16_to_fp32, fp17_add,
                       fp17_mul, fp17_to_fp32, fp32_add, fp32_is_nan, fp32_max, fp32_min,
                       fp32_mul, fp32_relu, fp32_sub, fp32_to_fp16, fp32_to_fp17,
                       fraction_to_fp17)
from .convert import fp16_saturated, fp32_to_int16, int17_to_fp16
from .lut import LE_DEPTH, LO_DEPTH, SdpLut

__all__ = [
    "SdpProgramError", "SdpResult", "run_sdp", "check_flying_cube",
    # integer helpers
    "sign_extend", "wrap_signed", "saturate", "round_shift_right", "shift_left_saturate",
    "shift_signed_saturate",
    # stages
    "XStage", "YStage", "x_stage", "y_stage", "y_operand_convert", "output_convert",
    "x_stage_fp16", "y_stage_fp16", "y_operand_fp16", "fp32_alu", "flush_nan_fp16",
    "flush_nan_fp32", "LutParams", "LutOutput", "lut_lookup", "lut_index_linear",
    "lut_index_exponent", "lut_lookup_fp16", "lut_index_linear_fp16",
    "lut_index_exponent_fp16", "lut_select_fp16", "lut_interp_fp16",
]

INT8, INT16, FP16 = 0, 1, 2
_PRECISION_NAMES = {INT8: "INT8", INT16: "INT16", FP16: "FP16"}
_PRECISION_TYPES = {INT8: "int8", INT16: "int16", FP16: "fp16"}
ALU_MAX, ALU_MIN, ALU_SUM, ALU_EQL = 0, 1, 2, 3
USE_MUL, USE_ALU, USE_BOTH = 0, 1, 2
RAM_CV, RAM_MC = 0, 1
COUNTER_MAX = (1 << 32) - 1
LUT_FRACTION_BITS = 35


class SdpProgramError(ValueError):
    """An SDP / SDP_RDMA register program the hardware cannot run; the message names the
    register field and the rule."""


# =========================================================================================
# Integer helpers (vectorized, int64)
# =========================================================================================
def sign_extend(value, bits: int):
    """Interpret the low ``bits`` bits of ``value`` (int or array) as two's complement."""
    if isinstance(value, (int, np.integer)):
        value = int(value) & ((1 << bits) - 1)
        return value - (1 << bits) if value >> (bits - 1) else value
    v = np.asarray(value, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(v >> (bits - 1), v - (1 << bits), v)


def wrap_signed(x, bits: int):
    """Keep the low ``bits`` bits of ``x`` as a signed value (hardware truncation)."""
    return sign_extend(np.asarray(x, dtype=np.int64), bits)


def saturate(x, bits: int):
    """Clamp ``x`` to the signed ``bits``-bit range."""
    return np.clip(np.asarray(x, dtype=np.int64), -(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def round_shift_right(x, shift, out_bits: int, in_bits: int = 64):
    """Arithmetic right shift with round-half-away-from-zero, saturated to ``out_bits``.

    ``shift`` may be a scalar or an array (>= 0). A shift of ``in_bits`` or more gives 0 (the
    hardware's shifter only has that many bits). Returns ``(value, saturated)``; the
    saturation flag is the hardware's (NVDLA's ``IntShiftRightSat``): set when the truncated
    value ``x >> shift`` differs by more than 1 from the rounded, saturated result, that is when
    it lies above ``hi + 1`` or below ``lo - 1`` (so a floor of ``hi + 1`` or ``lo - 1``, or a
    rounding up onto ``hi + 1``, saturates the value but raises no flag).
    """
    x = np.asarray(x, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    s_c = np.clip(s, 0, 63)
    s_1 = np.maximum(s_c - 1, 0)
    floor = x >> s_c
    guard = np.where(s_c > 0, (x >> s_1) & 1, 0)
    sticky = (s_c > 1) & ((x & ((np.int64(1) << s_1) - 1)) != 0)
    up = (guard == 1) & ((x >= 0) | sticky)
    rounded = floor + up
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    sat = (floor > hi + 1) | (floor < lo - 1)
    value = np.clip(rounded, lo, hi)
    beyond = s >= in_bits
    return np.where(beyond, 0, value), np.where(beyond, False, sat)


def shift_left_saturate(x, shift, out_bits: int):
    """``x << shift`` saturated to signed ``out_bits`` (x at most 16 bits wide)."""
    x = np.asarray(x, dtype=np.int64)
    s = np.minimum(np.asarray(shift, dtype=np.int64), 40)   # any nonzero 16-bit value has
    return saturate(x << s, out_bits)                      # saturated by then


def shift_signed_saturate(x, shift, out_bits: int, in_bits: int = 64):
    """Shift by a signed amount: right (rounded, see :func:`round_shift_right`) when
    ``shift >= 0``, left when negative; saturated to ``out_bits``. Returns (value, sat)."""
    x = np.asarray(x, dtype=np.int64)
    s = np.broadcast_to(np.asarray(shift, dtype=np.int64), np.broadcast(x, shift).shape)
    x = np.broadcast_to(x, s.shape)
    right, right_sat = round_shift_right(x, np.maximum(s, 0), out_bits, in_bits)
    amount = np.clip(-s, 0, out_bits)
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    fits = (x >= (lo >> amount)) & (x <= (hi >> amount))
    left = np.where(fits, np.clip(x, lo >> amount, hi >> amount) << amount,
                    np.where(x < 0, lo, hi))
    neg = s < 0
    return np.where(neg, left, right), np.where(neg, ~fits, right_sat)


# =========================================================================================
# X stage (BS / BN)
# =========================================================================================
@dataclass(frozen=True)
class XStage:
    """Configuration of one X stage (BS = X1, BN = X2); operands are set separately."""
    alu_bypass: bool = True
    alu_algo: int = ALU_MAX
    alu_shift: int = 0            #: 6 bits, left shift of the 16-bit ALU operand
    mul_bypass: bool = True
    mul_prelu: bool = False
    mul_shift: int = 0            #: 6 bits, right shift (rounded) after the multiplier
    relu_bypass: bool = True


def x_stage(data, alu_operand, mul_operand, st: XStage):
    """One X stage on int32 ``data``; operands are 16-bit signed values (scalars or arrays
    broadcastable to ``data``). Returns int32 values."""
    data = np.asarray(data, dtype=np.int64)
    if st.alu_bypass:
        a = data
    else:
        operand = shift_left_saturate(alu_operand, st.alu_shift, 32)
        if st.alu_algo == ALU_MAX:
            a = np.maximum(data, operand)
        elif st.alu_algo == ALU_MIN:
            a = np.minimum(data, operand)
        else:                                          # SUM (a 3 is decoded as SUM too)
            a = data + operand                         # 33 bits, no saturation here
    if st.mul_bypass:
        y, _ = round_shift_right(a, st.mul_shift, 32, in_bits=49)
    else:
        product = a * np.asarray(mul_operand, dtype=np.int64)     # 49 bits
        y, _ = round_shift_right(product, st.mul_shift, 32, in_bits=49)
        if st.mul_prelu:
            y = np.where(a >= 0, wrap_signed(a, 32), y)
    if not st.relu_bypass:
        y = np.maximum(y, 0)
    return y


# =========================================================================================
# Y stage (EW)
# =========================================================================================
@dataclass(frozen=True)
class YStage:
    alu_bypass: bool = True
    alu_algo: int = ALU_MAX
    mul_bypass: bool = True
    mul_prelu: bool = False
    truncate: int = 0             #: EW_TRUNCATE, 10 bits, right shift after the multiplier
    lut_bypass: bool = True


def y_operand_convert(op16, offset: int, scale: int, truncate: int, bypass: bool):
    """The converter in front of a DMA-fed EW operand: 16-bit in, int32 out."""
    op16 = np.asarray(op16, dtype=np.int64)
    if bypass:
        return op16
    value, _ = round_shift_right((op16 - offset) * scale, truncate, 32, in_bits=49)
    return value


def y_stage(data, alu_operand, mul_operand, st: YStage):
    """The EW multiplier and ALU (not the LUT) on int32 ``data``; operands are int32."""
    data = np.asarray(data, dtype=np.int64)
    if st.mul_bypass:
        m = data
    else:
        product = data * np.asarray(mul_operand, dtype=np.int64)   # fits: |p| <= 2^62
        m, _ = round_shift_right(product, st.truncate, 32, in_bits=64)
        if st.mul_prelu:
            m = np.where(data >= 0, data, m)
    if st.alu_bypass:
        return m
    op = np.asarray(alu_operand, dtype=np.int64)
    if st.alu_algo == ALU_MAX:
        r = np.maximum(m, op)
    elif st.alu_algo == ALU_MIN:
        r = np.minimum(m, op)
    elif st.alu_algo == ALU_EQL:
        r = (m != op).astype(np.int64)
    else:
        r = m + op
    return saturate(r, 32)


# =========================================================================================
# fp16 datapath (PROC_PRECISION=FP16): fp32 internal arithmetic
# =========================================================================================
def flush_nan_fp16(h, nan_to_zero: bool):
    """fp16 codes with NaNs replaced by +0 when ``nan_to_zero`` (operands)."""
    h = np.asarray(h, dtype=np.int64) & 0xFFFF
    return np.where(fp16_is_nan(h), 0, h) if nan_to_zero else h


def flush_nan_fp32(x, nan_to_zero: bool):
    """fp32 codes with NaNs replaced by +0 when ``nan_to_zero`` (the layer's input)."""
    x = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    return np.where(fp32_is_nan(x), 0, x) if nan_to_zero else x


def fp32_alu(algo: int, a, b):
    """The fp ALU on fp32 codes: MAX / MIN (NVDLA's sign-magnitude order, a NaN operand wins,
    ``a``'s first), SUM (:func:`sim.nvfloat.fp32_add`), EQL (the integer 0 when the two codes
    are equal bit for bit, else 1)."""
    if algo == ALU_MAX:
        return fp32_max(a, b)
    if algo == ALU_MIN:
        return fp32_min(a, b)
    if algo == ALU_SUM:
        return fp32_add(a, b)
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return (a != b).astype(np.int64)


def _fp32_sign(x):
    return (np.asarray(x, dtype=np.int64) >> 31) & 1


def x_stage_fp16(data, alu_operand, mul_operand, st: XStage, nan_to_zero: bool = False):
    """One X stage of an fp16 layer on fp32 codes ``data``; the operands are fp16 codes
    (register or DMA), NaNs flushed to +0 when ``nan_to_zero``, then widened to fp32
    (:func:`sim.nvfloat.fp16_to_fp32`). ALU: :func:`fp32_alu` (data first). MUL:
    :func:`sim.nvfloat.fp32_mul`; with PReLU a value whose sign bit is 0 passes unchanged.
    ReLU: :func:`sim.nvfloat.fp32_relu`. ALU_SHIFT_VALUE and MUL_SHIFT_VALUE take no part."""
    x = np.asarray(data, dtype=np.int64)
    if not st.alu_bypass:
        x = fp32_alu(st.alu_algo, x, fp16_to_fp32(flush_nan_fp16(alu_operand, nan_to_zero)))
    if not st.mul_bypass:
        y = fp32_mul(x, fp16_to_fp32(flush_nan_fp16(mul_operand, nan_to_zero)))
        x = np.where(_fp32_sign(x) == 0, x, y) if st.mul_prelu else y
    if not st.relu_bypass:
        x = fp32_relu(x)
    return x


def y_operand_fp16(op16, nan_to_zero: bool = False):
    """An EW operand read from memory in an fp16 layer: fp16 code -> fp32 code (NaN flushed
    to +0 first when ``nan_to_zero``); the converter's offset / scale / truncate and its
    bypass take no part."""
    return fp16_to_fp32(flush_nan_fp16(op16, nan_to_zero))


def y_stage_fp16(data, alu_operand, mul_operand, st: YStage):
    """The EW multiplier then ALU (not the LUT) of an fp16 layer on fp32 codes; operands are
    fp32 codes (the 32-bit register value as it is, or :func:`y_operand_fp16`). PReLU passes
    sign-0 values; EW_TRUNCATE takes no part."""
    x = np.asarray(data, dtype=np.int64)
    if not st.mul_bypass:
        y = fp32_mul(x, mul_operand)
        x = np.where(_fp32_sign(x) == 0, x, y) if st.mul_prelu else y
    if not st.alu_bypass:
        x = fp32_alu(st.alu_algo, x, alu_operand)
    return x


# =========================================================================================
# LUT
# =========================================================================================
def _difference_from_start(x, start):
    """Unsigned 32-bit ``x - start`` (0 when underflowing) and the underflow flag x <= start."""
    x = np.asarray(x, dtype=np.int64)
    under = x <= start
    return np.where(under, 0, (x - start) & 0xFFFFFFFF), under


def lut_index_linear(x, start: int, index_select: int, depth: int):
    """Linear table index ``(x - start) >> INDEX_SELECT`` (a negative select shifts left).

    Returns ``(index, fraction, underflow, overflow)``: the fraction is the 35-bit part shifted
    out below the index; the index saturates at 511 (a left shift saturates as soon as it
    reaches 256), and an index of ``depth - 1`` or more is an overflow clamped to
    ``depth - 1``.
    """
    diff, under = _difference_from_start(x, start)
    sel = int(index_select)
    if sel >= 0:
        whole = diff >> min(sel, 63)
        index = np.minimum(whole, 511)
        if sel <= LUT_FRACTION_BITS:
            frac = (diff & ((1 << sel) - 1)) << (LUT_FRACTION_BITS - sel)
        else:
            frac = (diff >> min(sel - LUT_FRACTION_BITS, 63)) & ((1 << LUT_FRACTION_BITS) - 1)
    else:
        amount = -sel                                       # 1 .. 128
        limit = 1 << max(8 - amount, 0)
        index = np.where(diff >= limit, 511, diff << min(amount, 8))
        frac = np.zeros_like(diff)
    over = index >= depth - 1
    return np.where(over, depth - 1, index), frac, under, over


def lut_index_exponent(x, start: int, index_offset: int, depth: int):
    """Exponent table index ``floor(log2(x - start)) - LE_INDEX_OFFSET``.

    The fraction is the part of ``x - start`` below its leading one, aligned to 35 bits. The
    hardware's log2 is a leading-sign detector on the 32-bit difference seen as signed, so a
    difference of 2^31 or more gives ``31 - (leading ones)`` rather than 31 (and an all-ones
    difference overflows). Returns ``(index, fraction, underflow, overflow)``.
    """
    diff, under = _difference_from_start(x, start)
    negative = diff >= (1 << 31)
    leading_ones = 32 - bit_length(np.where(negative, diff ^ 0xFFFFFFFF, 0))
    log2 = np.where(negative, 31 - leading_ones, bit_length(diff) - 1)
    log2 = np.where(under | (diff == 0), 0, log2)
    log2_9 = log2 & 0x1FF                                   # the 9-bit index wire
    under = under | (log2_9 < index_offset)
    index = np.where(under, 0, (log2_9 - index_offset) & 0x1FF)
    safe = np.clip(log2, 0, 31)
    frac = (diff & ((np.int64(1) << safe) - 1)) << (LUT_FRACTION_BITS - safe)
    over = index >= depth - 1
    return np.where(over, depth - 1, index), frac, under, over


@dataclass
class LutOutput:
    value: np.ndarray        #: int32 LUT results
    uflow: int               #: chosen table underflowed
    oflow: int               #: chosen table overflowed
    hybrid: int              #: chosen table hit
    le_hit: int              #: inside the LE table
    lo_hit: int              #: inside the LO table


def lut_lookup(lut: SdpLut, x, p: LutParams) -> LutOutput:
    """Look up int32 ``x`` (any shape) in the LUT, integer pipeline.

    Both tables index ``x``; the chosen table is: both underflow -> UFLOW_PRIORITY, both
    overflow -> OFLOW_PRIORITY, both hit or both miss otherwise -> HYBRID_PRIORITY, else the
    one that hits. A hit interpolates ``round((y0 * (2^35 - f) + y1 * f) / 2^35)``; a miss
    extrapolates ``saturate32(y0 + shift((x - start_or_end - bias) * slope_scale,
    slope_shift))`` from the table's first (underflow) or last (overflow) entry, with ``bias =
    2^LE_INDEX_OFFSET`` for an LE exponent-table underflow (0 if the offset is negative).
    """
    x = np.asarray(x, dtype=np.int64)
    if p.le_linear:
        le_i, le_f, le_u, le_o = lut_index_linear(x, p.le_start, p.le_index_select, LE_DEPTH)
    else:
        le_i, le_f, le_u, le_o = lut_index_exponent(x, p.le_start, p.le_index_offset,
                                                    LE_DEPTH)
    lo_i, lo_f, lo_u, lo_o = lut_index_linear(x, p.lo_start, p.lo_index_select, LO_DEPTH)

    le_hit, lo_hit = ~(le_u | le_o), ~(lo_u | lo_o)
    use_lo, _ = select_table(le_u, le_o, lo_u, lo_o, p.uflow_priority_lo, p.oflow_priority_lo,
                             p.hybrid_priority_lo)
    index = np.where(use_lo, lo_i, le_i)
    frac = np.where(use_lo, lo_f, le_f)
    uflow = np.where(use_lo, lo_u, le_u)
    oflow = np.where(use_lo, lo_o, le_o)
    flow = uflow | oflow

    def entry(i):
        return np.where(use_lo, lut.lo[np.clip(i, 0, LO_DEPTH - 1)],
                        lut.le[np.clip(i, 0, LE_DEPTH - 1)])
    y0 = entry(index)
    y1 = entry(np.where(flow, index, index + 1))
    interpolated, _ = round_shift_right(
        y0 * ((1 << LUT_FRACTION_BITS) - frac) + y1 * frac, LUT_FRACTION_BITS, 32, in_bits=53)

    def by_flow(le_u_v, le_o_v, lo_u_v, lo_o_v):
        return np.where(use_lo, np.where(oflow, lo_o_v, lo_u_v),
                        np.where(oflow, le_o_v, le_u_v))
    offset = by_flow(p.le_start, p.le_end, p.lo_start, p.lo_end)
    scale = by_flow(p.le_uflow_scale, p.le_oflow_scale, p.lo_uflow_scale, p.lo_oflow_scale)
    shift = by_flow(p.le_uflow_shift, p.le_oflow_shift, p.lo_uflow_shift, p.lo_oflow_shift)
    bias = 0
    if not p.le_linear and p.le_index_offset >= 0:
        bias = (1 << p.le_index_offset) & 0xFFFFFFFF
    bias = np.where(~use_lo & uflow, bias, 0)
    slope, _ = shift_signed_saturate((x - (bias + offset)) * scale, shift, 32, in_bits=50)
    extrapolated = saturate(y0 + slope, 32)

    return LutOutput(value=np.where(flow, extrapolated, interpolated),
                     uflow=int(uflow.sum()), oflow=int(oflow.sum()), hybrid=int((~flow).sum()),
                     le_hit=int(le_hit.sum()), lo_hit=int(lo_hit.sum()))


def _fp32_miss(d):
    """Elements whose ``x - start`` (fp32 codes ``d``) underflow a table: negative, zero (of
    either sign) or NaN."""
    d = np.asarray(d, dtype=np.int64)
    e, m = (d >> 23) & 0xFF, d & 0x7FFFFF
    return (((d >> 31) & 1) == 1) | ((e == 0) & (m == 0)) | ((e == 0xFF) & (m != 0))


def lut_index_linear_fp16(x, start: int, index_select: int, depth: int):
    """Linear table index of an fp16 layer: ``d = x - start`` (fp32 codes,
    :func:`sim.nvfloat.fp32_sub`); a negative, zero or NaN ``d`` underflows. Otherwise ``d``'s
    significand (implied 1 always, a denormal too) is shifted by ``exponent - 127 -
    INDEX_SELECT - 23`` (the exponent difference taken as 8-bit signed, so exponent 255 reads
    as -128): the integer part (at most 511) is the index, the bits below the point the 35-bit
    fraction (none for a left shift). An index of ``depth - 1`` or more is an overflow
    clamped to ``depth - 1`` (fraction 0). Returns ``(index, fraction, underflow,
    overflow)``."""
    d = fp32_sub(x, start & 0xFFFFFFFF)
    under = _fp32_miss(d)
    e, m = (d >> 23) & 0xFF, d & 0x7FFFFF
    p1 = m | (1 << 23)
    abs_e = ((e - 127 + 128) & 0xFF) - 128
    ls = abs_e - int(index_select) - 23
    whole = np.where(ls >= 0, 511, np.minimum(p1 >> np.clip(-ls, 0, 63), 511))
    t = LUT_FRACTION_BITS + ls
    frac = np.where(ls >= 0, 0, np.where(
        t >= 0, (p1 << np.clip(t, 0, 40)) & ((1 << LUT_FRACTION_BITS) - 1),
        p1 >> np.clip(-t, 0, 63)))
    over = ~under & (whole >= depth - 1)
    index = np.where(under, 0, np.where(over, depth - 1, whole))
    return index, np.where(under | over, 0, frac), under, over


def lut_index_exponent_fp16(x, start: int, index_offset: int, depth: int):
    """Exponent table index of an fp16 layer: ``d = x - start`` (fp32); a negative, zero or
    NaN ``d``, or one whose unbiased exponent is below LE_INDEX_OFFSET, underflows; else the
    index is ``exponent - 127 - LE_INDEX_OFFSET`` (``depth - 1`` or more: overflow, clamped)
    and the fraction ``d``'s 23 mantissa bits aligned to 35 bits."""
    d = fp32_sub(x, start & 0xFFFFFFFF)
    e, m = (d >> 23) & 0xFF, d & 0x7FFFFF
    se = e - 127
    under = _fp32_miss(d) | (se < int(index_offset))
    diff = (se - int(index_offset)) & 0x1FF
    over = ~under & (diff >= depth - 1)
    index = np.where(under, 0, np.where(over, depth - 1, diff))
    frac = np.where(under | over, 0, m << (LUT_FRACTION_BITS - 23))
    return index, frac, under, over


def lut_select_fp16(x, p: LutParams):
    """Both tables' indices of fp32 codes ``x`` and the table choice (NVDLA's ``Y_idx`` in
    fp16 mode): ``(index, fraction, use_lo, uflow, oflow, le_hit, lo_hit)`` of the chosen
    table (``le_hit`` / ``lo_hit``: each table's own hit)."""
    x = np.asarray(x, dtype=np.int64)
    if p.le_linear:
        le_i, le_f, le_u, le_o = lut_index_linear_fp16(x, p.le_start, p.le_index_select,
                                                       LE_DEPTH)
    else:
        le_i, le_f, le_u, le_o = lut_index_exponent_fp16(x, p.le_start, p.le_index_offset,
                                                         LE_DEPTH)
    lo_i, lo_f, lo_u, lo_o = lut_index_linear_fp16(x, p.lo_start, p.lo_index_select, LO_DEPTH)
    use_lo, _ = select_table(le_u, le_o, lo_u, lo_o, p.uflow_priority_lo, p.oflow_priority_lo,
                             p.hybrid_priority_lo)
    return (np.where(use_lo, lo_i, le_i), np.where(use_lo, lo_f, le_f), use_lo,
            np.where(use_lo, lo_u, le_u), np.where(use_lo, lo_o, le_o), ~(le_u | le_o),
            ~(lo_u | lo_o))


def lut_interp_fp16(x, frac, y0, y1, scale, offset, bias, flow):
    """NVDLA's ``Y_inp`` in fp16 mode: fp32 results of fp32 ``x`` from the fp16 entries
    ``y0`` / ``y1`` (hit: interpolation with the 35-bit ``frac``) or, where ``flow``, from
    ``y0``, the fp16 slope ``scale`` and the fp32 ``offset`` and ``bias`` (extrapolation); see
    :func:`lut_lookup_fp16`."""
    y0, y1 = fp16_to_fp17(y0), fp16_to_fp17(y1)
    frac = np.asarray(frac, dtype=np.int64)
    a0 = np.where(frac == 0, 31 << 10, fraction_to_fp17((1 << LUT_FRACTION_BITS) - frac))
    interpolated = fp17_add(fp17_mul(a0, y0), fp17_mul(fraction_to_fp17(frac), y1))
    xob = fp32_sub(x, fp32_add(offset, bias))
    extrapolated = fp17_add(y0, fp17_mul(fp32_to_fp17(xob), fp16_to_fp17(scale)))
    return fp17_to_fp32(np.where(flow, extrapolated, interpolated))


def lut_lookup_fp16(lut: SdpLut, x, p: LutParams) -> LutOutput:
    """Look up fp32 codes ``x`` in the LUT of an fp16 layer (entries are fp16 codes).

    Indexing: :func:`lut_index_linear_fp16` / :func:`lut_index_exponent_fp16`; the table
    choice and the counters as in :func:`lut_lookup`. A hit interpolates in fp17
    (:mod:`sim.nvfloat`): ``y0 x (1 - f) + y1 x f`` with the weights ``1 - f`` (exactly 1 when
    f = 0) and ``f`` converted from their 35-bit fractions
    (:func:`sim.nvfloat.fraction_to_fp17`), each product and the sum rounded in fp17. A miss
    extrapolates ``y0 + fp17(x - (start_or_end + bias)) x scale`` (the subtraction in fp32,
    then fp32 -> fp17; the slope scale is an fp16 code, the slope shift takes no part;
    ``bias`` is the fp32 ``2^LE_INDEX_OFFSET`` for an LE exponent-table underflow, else 0).
    Results are fp17 widened to fp32."""
    x = np.asarray(x, dtype=np.int64)
    index, frac, use_lo, uflow, oflow, le_hit, lo_hit = lut_select_fp16(x, p)
    flow = uflow | oflow

    def entry(i):
        return np.where(use_lo, lut.lo[np.clip(i, 0, LO_DEPTH - 1)],
                        lut.le[np.clip(i, 0, LE_DEPTH - 1)]) & 0xFFFF

    def by_flow(le_u_v, le_o_v, lo_u_v, lo_o_v):
        return np.where(use_lo, np.where(oflow, lo_o_v, lo_u_v),
                        np.where(oflow, le_o_v, le_u_v))
    mask32 = 0xFFFFFFFF
    offset = by_flow(p.le_start & mask32, p.le_end & mask32, p.lo_start & mask32,
                     p.lo_end & mask32)
    scale = by_flow(p.le_uflow_scale, p.le_oflow_scale, p.lo_uflow_scale,
                    p.lo_oflow_scale) & 0xFFFF
    bias = ((p.le_index_offset + 127) & 0xFF) << 23 if not p.le_linear else 0
    bias = np.where(~use_lo & uflow, bias, 0)
    value = lut_interp_fp16(x, frac, entry(index), entry(np.where(flow, index, index + 1)),
                            scale, offset, bias, flow)
    return LutOutput(value=value, uflow=int(uflow.sum()), oflow=int(oflow.sum()),
                     hybrid=int((~flow).sum()), le_hit=int(le_hit.sum()),
                     lo_hit=int(lo_hit.sum()))


# =========================================================================================
# C (output converter)
# =========================================================================================
def output_convert(data, offset: int, scale: int, shift: int, out_bits: int):
    """``saturate_out(round((x - offset) * scale >> shift) into 17 bits)``; returns
    ``(value, saturated)`` where ``saturated`` marks the 17-bit saturation the hardware
    counts."""
    product = (np.asarray(data, dtype=np.int64) - offset) * scale       # 49 bits
    t, sat = round_shift_right(product, shift, 17, in_bits=49)
    return saturate(t, out_bits), sat


# =========================================================================================
# Result
# =========================================================================================
@dataclass
class SdpResult:
    """Output and status of one SDP layer.

    Counters are None when the hardware does not count them in this layer (their enable bit in
    D_PERF_ENABLE is off, or NaN/Inf counting on a non-fp16 layer): the hardware then leaves
    the corresponding register at its previous value (the NaN / Inf ones of fp16 layers: see
    the module docstring). All counts include the channel padding of the last surface, which
    the datapath processes like real data.
    """
    output: np.ndarray                 #: [C, H, W] int64 output values (int8/int16 range);
    #: [B, C, H, W] for a batched layer
    padded_output: np.ndarray          #: [C rounded up to a surface, H, W] ([B, ...] batched)
    to_pdp: bool = False               #: output went to PDP (nothing written to memory)
    wrote_memory: bool = False
    dst_extent: tuple = None           #: (first byte address, end address) written, or None
    out_saturation: int | None = None
    lut_uflow: int | None = None
    lut_oflow: int | None = None
    lut_hybrid: int | None = None
    lut_le_hit: int | None = None
    lut_lo_hit: int | None = None
    status_unequal: int = 0
    nan_input_num: int | None = None
    inf_input_num: int | None = None
    nan_output_num: int | None = None
    rdma_nan_input_num: int | None = None
    rdma_inf_input_num: int | None = None

    def status_registers(self) -> dict:
        """{block: {register: value}} of the D-group status/perf registers this layer updates
        (counters saturate at 2^32 - 1)."""
        def cap(v):
            return min(int(v), COUNTER_MAX)
        sdp = {"D_STATUS": self.status_unequal & 1}
        for reg, v in (("D_PERF_OUT_SATURATION", self.out_saturation),
                       ("D_PERF_LUT_UFLOW", self.lut_uflow),
                       ("D_PERF_LUT_OFLOW", self.lut_oflow),
                       ("D_PERF_LUT_HYBRID", self.lut_hybrid),
                       ("D_PERF_LUT_LE_HIT", self.lut_le_hit),
                       ("D_PERF_LUT_LO_HIT", self.lut_lo_hit),
                       ("D_STATUS_NAN_INPUT_NUM", self.nan_input_num),
                       ("D_STATUS_INF_INPUT_NUM", self.inf_input_num),
                       ("D_STATUS_NAN_OUTPUT_NUM", self.nan_output_num)):
            if v is not None:
                sdp[reg] = cap(v)
        rdma = {}
        for reg, v in (("D_STATUS_NAN_INPUT_NUM", self.rdma_nan_input_num),
                       ("D_STATUS_INF_INPUT_NUM", self.rdma_inf_input_num)):
            if v is not None:
                rdma[reg] = cap(v)
        return {"SDP": sdp, "SDP_RDMA": rdma}


# =========================================================================================
# Program decoding and validation
# =========================================================================================
def _err(where: str, rule: str):
    raise SdpProgramError(f"{where}: {rule}")


def _enum_check(view, block, reg, fld, value=None):
    """Reject a field value that has no enumerator in the register table."""
    f = view.block[reg][fld]
    v = view[reg][fld] if value is None else value
    if f.enum and v not in {x for _, x in f.enum}:
        names = ", ".join(f"{n}={x}" for n, x in f.enum)
        _err(f"{block}.{reg}.{fld}={v}", f"reserved value (valid: {names})")
    return v


def _byte_field(view, reg, fld):
    """A field holding an address or stride, in bytes (full-layout fields drop low bits)."""
    f = view.block[reg][fld]
    return view[reg][fld] << f.lsb


def _address(cfg, view, block, name):
    """Base address from D_<name>_BASE_ADDR_LOW/HIGH (HIGH only on 64-bit builds)."""
    low = _byte_field(view, f"D_{name}_BASE_ADDR_LOW", f"{name}_BASE_ADDR_LOW")
    high = view[f"D_{name}_BASE_ADDR_HIGH"][f"{name}_BASE_ADDR_HIGH"]
    return low | (high << 32) if cfg.address_width > 32 else low


def _check_aligned(cfg, value, where):
    if value % cfg.memory_atom:
        _err(where + f"={value:#x}",
             f"must be a multiple of the {cfg.memory_atom}-byte memory atom")


@dataclass
class _Dma:
    """One operand read DMA (BRDMA / NRDMA / ERDMA)."""
    name: str
    enabled: bool
    use: int = USE_ALU
    size: int = 1                      #: bytes per component
    per_element: bool = False
    ram_type: int = RAM_MC
    base: int = 0
    line_stride: int = 0
    surf_stride: int = 0


@dataclass
class _Program:
    flying: bool
    to_pdp: bool
    width: int
    height: int
    channel: int
    in_prec: int
    proc_prec: int
    out_prec: int
    bs_on: bool
    bn_on: bool
    ew_on: bool
    bs: XStage
    bn: XStage
    ew: YStage
    eql: bool
    batches: int
    #: (stage, "alu"/"mul") -> ("reg", value) or ("dma", dma name)
    operands: dict = field(default_factory=dict)
    dmas: dict = field(default_factory=dict)
    src: tuple = None                  #: (ram, base, line, surf)
    dst: tuple = None
    ew_alu_cvt: tuple = None           #: (offset, scale, truncate, bypass)
    ew_mul_cvt: tuple = None
    cvt: tuple = None                  #: (offset, scale, shift)
    perf_sat: bool = False
    perf_lut: bool = False
    perf_nan_inf: bool = False
    rdma_perf_nan_inf: bool = False
    nan_to_zero: bool = False          #: D_FEATURE_MODE_CFG.NAN_TO_ZERO (fp16 layers only)
    rdma_in_fp16: bool = False         #: SDP_RDMA.D_FEATURE_MODE_CFG.IN_PRECISION=FP16


_DMA_PREFIX = {"BRDMA": "BS", "NRDMA": "BN", "ERDMA": "EW"}
_DMA_OF_STAGE = {"BS": "BRDMA", "BN": "NRDMA", "EW": "ERDMA"}


def _decode(cfg, rdma, sdp, flying_input) -> _Program:
    S, R = "SDP", "SDP_RDMA"
    fm = sdp.D_FEATURE_MODE_CFG
    flying = bool(fm.FLYING_MODE)
    to_pdp = bool(fm.OUTPUT_DST)
    width = sdp.D_DATA_CUBE_WIDTH.WIDTH + 1
    height = sdp.D_DATA_CUBE_HEIGHT.HEIGHT + 1
    channel = sdp.D_DATA_CUBE_CHANNEL.CHANNEL + 1

    # -- modes the build or this model lacks ---------------------------------------------
    if fm.WINOGRAD:
        if not cfg.winograd:
            _err(f"{S}.D_FEATURE_MODE_CFG.WINOGRAD=ON", "this build has no Winograd support")
        if not flying:
            _err(f"{S}.D_FEATURE_MODE_CFG.WINOGRAD=ON",
                 "Winograd output only arrives from the accumulator (needs FLYING_MODE=ON)")
        # NVDLA's SDP takes the accumulator's 2 x 2 Winograd tiles (4 x 4 output blocks) and
        # writes the ordinary output cube: the values are those of the ordinary mode
        W = f"{S}.D_FEATURE_MODE_CFG.WINOGRAD=ON"
        if to_pdp:
            _err(W, "Winograd output goes to memory (needs OUTPUT_DST=MEM)")
        if fm.BATCH_NUMBER:
            _err(f"{S}.D_FEATURE_MODE_CFG.BATCH_NUMBER={fm.BATCH_NUMBER}",
                 "Winograd output has one batch (must be 0)")
        for n, fld in ((width, "D_DATA_CUBE_WIDTH.WIDTH"), (height, "D_DATA_CUBE_HEIGHT.HEIGHT")):
            if n % 4:
                _err(f"{S}.{fld}={n - 1}", "Winograd output is a multiple of 4 wide and high "
                     "(must be 4n - 1)")
        wproc = _enum_check(sdp, S, "D_DATA_FORMAT", "PROC_PRECISION")
        wout = _enum_check(sdp, S, "D_DATA_FORMAT", "OUT_PRECISION")
        if wproc != wout:
            _err(f"{S}.D_DATA_FORMAT.OUT_PRECISION={_PRECISION_NAMES[wout]}",
                 f"Winograd output converts no precision: must equal PROC_PRECISION="
                 f"{_PRECISION_NAMES[wproc]}")
    batches = fm.BATCH_NUMBER + 1
    if batches > 1:
        where = f"{S}.D_FEATURE_MODE_CFG.BATCH_NUMBER={batches - 1}"
        if not cfg.batching:
            _err(where, "this build has no batching (must be 0)")
        if batches > cfg.max_batch:
            _err(where, f"this build takes at most {cfg.max_batch} batches (max_batch)")
        if not flying:
            _err(where, "batches only arrive from the accumulator (needs FLYING_MODE=ON)")
        if to_pdp:
            _err(where, "batched output is written to memory (needs OUTPUT_DST=MEM)")
    if to_pdp and not cfg.pdp:
        _err(f"{S}.D_FEATURE_MODE_CFG.OUTPUT_DST=PDP", "this build has no PDP")

    # Offline, SDP_RDMA always runs (it fetches the input). In flying mode it only takes part
    # when its group is enabled too (its reset values must not count as a program).
    rdma_active = not flying or bool(rdma.D_OP_ENABLE.OP_EN)

    # -- precision -----------------------------------------------------------------------
    proc = _enum_check(sdp, S, "D_DATA_FORMAT", "PROC_PRECISION")
    out = _enum_check(sdp, S, "D_DATA_FORMAT", "OUT_PRECISION")
    rfm = rdma.D_FEATURE_MODE_CFG
    in_prec = _enum_check(rdma, R, "D_FEATURE_MODE_CFG", "IN_PRECISION")
    rproc = _enum_check(rdma, R, "D_FEATURE_MODE_CFG", "PROC_PRECISION")
    rout = _enum_check(rdma, R, "D_FEATURE_MODE_CFG", "OUT_PRECISION")
    for where, p in ((f"{S}.D_DATA_FORMAT.PROC_PRECISION", proc),
                     (f"{S}.D_DATA_FORMAT.OUT_PRECISION", out)):
        if _PRECISION_TYPES[p] not in cfg.data_types:
            _err(f"{where}={_PRECISION_NAMES[p]}",
                 f"this build only supports {sorted(cfg.data_types)}")
    if rdma_active and rproc != proc:
        _err(f"{R}.D_FEATURE_MODE_CFG.PROC_PRECISION={_PRECISION_NAMES[rproc]}",
             f"must equal {S}.D_DATA_FORMAT.PROC_PRECISION={_PRECISION_NAMES[proc]}")
    if flying:
        in_prec = proc
    else:
        if _PRECISION_TYPES[in_prec] not in cfg.data_types:
            _err(f"{R}.D_FEATURE_MODE_CFG.IN_PRECISION={_PRECISION_NAMES[in_prec]}",
                 f"this build only supports {sorted(cfg.data_types)}")
        if in_prec != proc and (in_prec, proc) != (INT16, INT8):
            _err(f"{R}.D_FEATURE_MODE_CFG.IN_PRECISION={_PRECISION_NAMES[in_prec]}",
                 f"offline input must have the processing precision "
                 f"({_PRECISION_NAMES[proc]}); the read DMA converts only INT16 input to "
                 f"PROC_PRECISION=INT8 (its 16to8 mode)")
    invalid = {(INT8, FP16): "an int8 pipeline cannot produce fp16",
               (FP16, INT8): "an fp16 pipeline cannot produce int8",
               (INT16, INT8): "the output converter does not narrow int16 data to int8 (the "
                              "read DMA does: SDP_RDMA IN_PRECISION=INT16 with SDP_RDMA and SDP "
                              "PROC_PRECISION=INT8)"}
    if (proc, out) in invalid:
        _err(f"{S}.D_DATA_FORMAT.OUT_PRECISION={_PRECISION_NAMES[out]}",
             invalid[(proc, out)] + f" (PROC_PRECISION={_PRECISION_NAMES[proc]})")
    if flying and _BYTES[proc] != _BYTES[out]:
        _err(f"{S}.D_DATA_FORMAT.OUT_PRECISION={_PRECISION_NAMES[out]}",
             f"a flying layer converts only between precisions of the same bit depth "
             f"(PROC_PRECISION={_PRECISION_NAMES[proc]}, FLYING_MODE=ON)")
    if rdma_active and batches > 1 and rout != out:
        # NVDLA's B / N / E read DMAs read their OUT_PRECISION in batch mode only (their
        # operand packing, NV_NVDLA_SDP_{B,N,E}RDMA_eg); elsewhere the field plays no part
        _err(f"{R}.D_FEATURE_MODE_CFG.OUT_PRECISION={_PRECISION_NAMES[rout]}",
             f"must equal {S}.D_DATA_FORMAT.OUT_PRECISION={_PRECISION_NAMES[out]} in batch "
             f"mode (BATCH_NUMBER={batches - 1}: the operand read DMAs lay out their data by "
             f"it)")

    # -- stages --------------------------------------------------------------------------
    def x_cfg(prefix):
        c = sdp[f"D_DP_{prefix}_CFG"]
        on = not c[f"{prefix}_BYPASS"]
        alu_on = on and not c[f"{prefix}_ALU_BYPASS"]
        if alu_on and c[f"{prefix}_ALU_ALGO"] == ALU_EQL:
            _err(f"{S}.D_DP_{prefix}_CFG.{prefix}_ALU_ALGO=3",
                 "reserved for the X stages (MAX, MIN or SUM)")
        st = XStage(
            alu_bypass=not alu_on, alu_algo=c[f"{prefix}_ALU_ALGO"],
            alu_shift=sdp[f"D_DP_{prefix}_ALU_CFG"][f"{prefix}_ALU_SHIFT_VALUE"] & 0x3F,
            mul_bypass=bool(c[f"{prefix}_MUL_BYPASS"]), mul_prelu=bool(c[f"{prefix}_MUL_PRELU"]),
            mul_shift=sdp[f"D_DP_{prefix}_MUL_CFG"][f"{prefix}_MUL_SHIFT_VALUE"] & 0x3F,
            relu_bypass=bool(c[f"{prefix}_RELU_BYPASS"]))
        return on, st

    bs_on, bs = x_cfg("BS")
    bn_on, bn = x_cfg("BN")
    if bs_on and not cfg.sdp_bs:
        _err(f"{S}.D_DP_BS_CFG.BS_BYPASS=NO", "this build has no SDP BS (X1) stage")
    if bn_on and not cfg.sdp_bn:
        _err(f"{S}.D_DP_BN_CFG.BN_BYPASS=NO", "this build has no SDP BN (X2) stage")
    e = sdp.D_DP_EW_CFG
    ew_on = not e.EW_BYPASS
    ew = YStage(alu_bypass=bool(e.EW_ALU_BYPASS), alu_algo=e.EW_ALU_ALGO,
                mul_bypass=bool(e.EW_MUL_BYPASS), mul_prelu=bool(e.EW_MUL_PRELU),
                truncate=sdp.D_DP_EW_TRUNCATE_VALUE.EW_TRUNCATE, lut_bypass=bool(e.EW_LUT_BYPASS))
    if ew_on and not cfg.sdp_ew:
        _err(f"{S}.D_DP_EW_CFG.EW_BYPASS=NO", "this build has no SDP EW (Y) stage")
    if ew_on and not ew.lut_bypass and not cfg.sdp_lut:
        _err(f"{S}.D_DP_EW_CFG.EW_LUT_BYPASS=NO", "this build has no SDP LUT")
    eql = ew_on and not ew.alu_bypass and ew.alu_algo == ALU_EQL

    if eql and fm.WINOGRAD:
        _err(f"{S}.D_DP_EW_CFG.EW_ALU_ALGO=EQL",
             "equal mode is not allowed with D_FEATURE_MODE_CFG.WINOGRAD=ON")
    if eql and batches > 1:
        _err(f"{S}.D_DP_EW_CFG.EW_ALU_ALGO=EQL",
             f"equal mode writes no output: not allowed with batches "
             f"(D_FEATURE_MODE_CFG.BATCH_NUMBER={batches - 1})")
    prog = _Program(flying=flying, to_pdp=to_pdp, width=width, height=height, channel=channel,
                    in_prec=in_prec, proc_prec=proc, out_prec=out, bs_on=bs_on, bn_on=bn_on,
                    ew_on=ew_on, bs=bs, bn=bn, ew=ew, eql=eql, batches=batches,
                    nan_to_zero=proc == FP16 and bool(fm.NAN_TO_ZERO))

    # -- operand sources and their DMAs ---------------------------------------------------
    stages = (("BS", bs_on, bs), ("BN", bn_on, bn), ("EW", ew_on, ew))
    for prefix, on, st in stages:
        needs = set()
        for unit in ("ALU", "MUL"):
            if not on or getattr(st, f"{unit.lower()}_bypass"):
                continue
            src = sdp[f"D_DP_{prefix}_{unit}_CFG"][f"{prefix}_{unit}_SRC"]
            if src:
                needs.add(unit)
                prog.operands[(prefix, unit.lower())] = ("dma", _DMA_OF_STAGE[prefix])
            else:
                reg = f"D_DP_{prefix}_{unit}_SRC_VALUE"
                fld = f"{prefix}_{unit}_OPERAND"
                bits = sdp.block[reg][fld].width
                prog.operands[(prefix, unit.lower())] = ("reg", sign_extend(sdp[reg][fld], bits))
        dname = _DMA_OF_STAGE[prefix]
        c = rdma[f"D_{dname}_CFG"]
        enabled = rdma_active and not c[f"{dname}_DISABLE"]
        dma = _Dma(name=dname, enabled=enabled)
        prog.dmas[dname] = dma
        where = f"{R}.D_{dname}_CFG"
        if not enabled:
            if needs and not rdma_active:
                _err(f"{R}.D_OP_ENABLE.OP_EN=DISABLE",
                     f"{S}.D_DP_{prefix} reads operands from memory (SRC=MEM): in flying mode "
                     f"the SDP_RDMA group must be enabled too")
            if needs:
                units = " and ".join(sorted(needs))
                _err(f"{where}.{dname}_DISABLE=YES",
                     f"{S}.D_DP_{prefix} takes its {units} operand from memory (SRC=MEM): "
                     f"the {dname} must be enabled")
            continue
        if not needs:
            _err(f"{where}.{dname}_DISABLE=NO",
                 f"no {prefix} ALU/MUL operand is read from memory ({S}.D_DP_{prefix}_CFG and "
                 f"_ALU_CFG/_MUL_CFG SRC): the {dname} would stall the layer")
        dma.use = _enum_check(rdma, R, f"D_{dname}_CFG", f"{dname}_DATA_USE")
        expected = (USE_BOTH if needs == {"ALU", "MUL"} else
                    USE_ALU if needs == {"ALU"} else USE_MUL)
        if dma.use != expected:
            names = {USE_MUL: "MUL", USE_ALU: "ALU", USE_BOTH: "BOTH"}
            _err(f"{where}.{dname}_DATA_USE={names[dma.use]}",
                 f"must be {names[expected]}: the {prefix} stage reads "
                 f"{' and '.join(sorted(needs))} operands from memory")
        dma.size = 2 if c[f"{dname}_DATA_SIZE"] else 1
        if proc != INT8 and dma.size == 1:
            _err(f"{where}.{dname}_DATA_SIZE=ONE_BYTE",
                 f"not allowed with PROC_PRECISION={_PRECISION_NAMES[proc]} (use TWO_BYTE)")
        dma.per_element = bool(c[f"{dname}_DATA_MODE"])
        dma.ram_type = c[f"{dname}_RAM_TYPE"]
        p = _DMA_PREFIX[dname]
        dma.base = _address(cfg, rdma, R, p)
        _check_aligned(cfg, dma.base, f"{R}.D_{p}_BASE_ADDR_LOW")
        if dma.per_element:
            dma.line_stride = _byte_field(rdma, f"D_{p}_LINE_STRIDE", f"{p}_LINE_STRIDE")
            dma.surf_stride = _byte_field(rdma, f"D_{p}_SURFACE_STRIDE", f"{p}_SURFACE_STRIDE")
            _check_aligned(cfg, dma.line_stride, f"{R}.D_{p}_LINE_STRIDE")
            _check_aligned(cfg, dma.surf_stride, f"{R}.D_{p}_SURFACE_STRIDE")
        _check_ram(cfg, dma.ram_type, f"{where}.{dname}_RAM_TYPE")

    if ew_on:
        for unit in ("ALU", "MUL"):
            cvt_bypass = sdp[f"D_DP_EW_{unit}_CFG"][f"EW_{unit}_CVT_BYPASS"]
            setattr(prog, f"ew_{unit.lower()}_cvt", (
                sign_extend(sdp[f"D_DP_EW_{unit}_CVT_OFFSET_VALUE"][f"EW_{unit}_CVT_OFFSET"], 32),
                sign_extend(sdp[f"D_DP_EW_{unit}_CVT_SCALE_VALUE"][f"EW_{unit}_CVT_SCALE"], 16),
                sdp[f"D_DP_EW_{unit}_CVT_TRUNCATE_VALUE"][f"EW_{unit}_CVT_TRUNCATE"] & 0x3F,
                bool(cvt_bypass)))

    if bool(rfm.FLYING_MODE) != flying and rdma_active:
        _err(f"{R}.D_FEATURE_MODE_CFG.FLYING_MODE={'ON' if rfm.FLYING_MODE else 'OFF'}",
             f"must match {S}.D_FEATURE_MODE_CFG.FLYING_MODE={'ON' if flying else 'OFF'}")
    if rfm.WINOGRAD != fm.WINOGRAD and rdma_active:
        _err(f"{R}.D_FEATURE_MODE_CFG.WINOGRAD", f"must match {S}.D_FEATURE_MODE_CFG.WINOGRAD")
    if rdma_active and batches > 1 and rfm.BATCH_NUMBER != batches - 1:
        _err(f"{R}.D_FEATURE_MODE_CFG.BATCH_NUMBER={rfm.BATCH_NUMBER}",
             f"must equal {S}.D_FEATURE_MODE_CFG.BATCH_NUMBER={batches - 1} (the operand "
             "read DMAs repeat their data for every batch)")
    if rdma_active:
        for reg, fld, v in (("D_DATA_CUBE_WIDTH", "WIDTH", width),
                            ("D_DATA_CUBE_HEIGHT", "HEIGHT", height),
                            ("D_DATA_CUBE_CHANNEL", "CHANNEL", channel)):
            if rdma[reg][fld] + 1 != v:
                _err(f"{R}.{reg}.{fld}={rdma[reg][fld]}",
                     f"must equal {S}.{reg}.{fld}={v - 1} (the read DMA and the datapath "
                     "must agree on the cube)")

    # -- input / output surfaces ---------------------------------------------------------
    if not flying:
        ram = rdma.D_SRC_DMA_CFG.SRC_RAM_TYPE
        _check_ram(cfg, ram, f"{R}.D_SRC_DMA_CFG.SRC_RAM_TYPE")
        base = _address(cfg, rdma, R, "SRC")
        line = _byte_field(rdma, "D_SRC_LINE_STRIDE", "SRC_LINE_STRIDE")
        surf = _byte_field(rdma, "D_SRC_SURFACE_STRIDE", "SRC_SURFACE_STRIDE")
        _check_aligned(cfg, base, f"{R}.D_SRC_BASE_ADDR_LOW")
        _check_aligned(cfg, line, f"{R}.D_SRC_LINE_STRIDE")
        _check_aligned(cfg, surf, f"{R}.D_SRC_SURFACE_STRIDE")
        prog.src = (ram, base, line, surf)
    elif flying_input is None:
        _err(f"{S}.D_FEATURE_MODE_CFG.FLYING_MODE=ON",
             "needs the accumulator's cube (flying_input)")
    if not to_pdp and not eql:
        ram = sdp.D_DST_DMA_CFG.DST_RAM_TYPE
        _check_ram(cfg, ram, f"{S}.D_DST_DMA_CFG.DST_RAM_TYPE")
        base = _address(cfg, sdp, S, "DST")
        line = _byte_field(sdp, "D_DST_LINE_STRIDE", "DST_LINE_STRIDE")
        surf = _byte_field(sdp, "D_DST_SURFACE_STRIDE", "DST_SURFACE_STRIDE")
        _check_aligned(cfg, base, f"{S}.D_DST_BASE_ADDR_LOW")
        _check_aligned(cfg, line, f"{S}.D_DST_LINE_STRIDE")
        _check_aligned(cfg, surf, f"{S}.D_DST_SURFACE_STRIDE")
        atom = cfg.memory_atom
        # surfaces of the output precision: the processing precision's surfaces, each
        # split in two in the write DMA's 8to16 mode (an int8 atom -> two int16 atoms)
        proc_group = atom // _BYTES[proc]
        surfaces = -(-channel // proc_group) * proc_group // (atom // _BYTES[out])
        # a 1x1 cube of one batch is written as one run of atoms; batched output always
        # follows the strides (NVDLA's WDMA packs 1x1 cubes only without batches)
        if not (width == 1 and height == 1) or batches > 1:
            if height > 1 and line < width * atom:
                _err(f"{S}.D_DST_LINE_STRIDE={line:#x}",
                     f"lines of {width} atoms ({width * atom} bytes) would overlap")
            if surfaces > 1 and surf < (height - 1) * line + width * atom:
                _err(f"{S}.D_DST_SURFACE_STRIDE={surf:#x}",
                     f"surfaces of {height} lines x stride {line:#x} would overlap")
        batch = 0
        if batches > 1:
            batch = _byte_field(sdp, "D_DST_BATCH_STRIDE", "DST_BATCH_STRIDE")
            _check_aligned(cfg, batch, f"{S}.D_DST_BATCH_STRIDE")
            extent = (surfaces - 1) * surf + (height - 1) * line + width * atom
            if batch < extent:
                _err(f"{S}.D_DST_BATCH_STRIDE={batch:#x}",
                     f"batches would overlap: one batch's output spans {extent:#x} bytes "
                     f"({surfaces} surface(s) x {height} line(s) x {width} atoms)")
        prog.dst = (ram, base, line, surf, batch)

    prog.cvt = (sign_extend(sdp.D_CVT_OFFSET.CVT_OFFSET, 32),
                sign_extend(sdp.D_CVT_SCALE.CVT_SCALE, 16), sdp.D_CVT_SHIFT.CVT_SHIFT)
    pe = sdp.D_PERF_ENABLE
    prog.perf_sat, prog.perf_lut = bool(pe.PERF_SAT_EN), bool(pe.PERF_LUT_EN)
    prog.perf_nan_inf = bool(pe.PERF_NAN_INF_COUNT_EN)
    prog.rdma_perf_nan_inf = bool(rdma.D_PERF_ENABLE.PERF_NAN_INF_COUNT_EN)
    prog.rdma_in_fp16 = rfm.IN_PRECISION == FP16
    return prog


_BYTES = {INT8: 1, INT16: 2, FP16: 2}


def _check_ram(cfg, ram_type, where):
    if ram_type == RAM_CV and not cfg.sramif:
        _err(f"{where}=CV", "this build has no SRAMIF (CVIF); use MC")


# =========================================================================================
# Memory access
# =========================================================================================
def _surface_addresses(base, line_stride, surf_stride, surfaces, height, width, pos_bytes,
                       packed):
    """Byte addresses [surfaces, height, width, pos_bytes] of a surface-tiled cube whose
    positions are ``pos_bytes`` wide; ``packed`` reads surfaces back to back (1x1 cubes and
    per-kernel data)."""
    if packed:
        surf_stride = height * width * pos_bytes
        line_stride = width * pos_bytes
    s = np.arange(surfaces, dtype=np.int64)[:, None, None, None] * surf_stride
    h = np.arange(height, dtype=np.int64)[None, :, None, None] * line_stride
    w = np.arange(width, dtype=np.int64)[None, None, :, None] * pos_bytes
    b = np.arange(pos_bytes, dtype=np.int64)[None, None, None, :]
    return base + s + h + w + b


def _decode_values(raw, nbytes):
    """Little-endian signed integers of ``nbytes`` bytes from a uint8 array [..., nbytes]."""
    raw = raw.astype(np.int64)
    if nbytes == 1:
        return sign_extend(raw[..., 0], 8)
    return sign_extend(raw[..., 0] | (raw[..., 1] << 8), 16)


def _encode_values(values, nbytes):
    v = np.asarray(values, dtype=np.int64)
    out = np.empty(v.shape + (nbytes,), dtype=np.uint8)
    for i in range(nbytes):
        out[..., i] = (v >> (8 * i)) & 0xFF
    return out


def _to_channels(elems):
    """[S, H, W, G] -> [S*G, H, W]."""
    s, h, w, g = elems.shape
    return elems.transpose(0, 3, 1, 2).reshape(s * g, h, w)


def _from_channels(cube, group):
    """[S*G, H, W] -> [S, H, W, G]."""
    c, h, w = cube.shape
    return cube.reshape(c // group, group, h, w).transpose(0, 2, 3, 1)


def _pick_memory(ram_type, mem, sram):
    return sram if ram_type == RAM_CV and sram is not None else mem


def _check_address_space(cfg, addrs, where, base):
    if int(addrs.max()) >= (1 << cfg.address_width):
        _err(f"{where}={base:#x}", f"the surface ends past the {cfg.address_width}-bit "
             "address space")


def _read_operand(cfg, prog, dma, mem, sram, atom):
    """The DMA's operand components as {"alu"/"mul": [C_pad, H|1, W|1] int64}."""
    group = atom // _BYTES[prog.proc_prec]
    surfaces = -(-prog.channel // group)
    ncomp = 2 if dma.use == USE_BOTH else 1
    elem_bytes = ncomp * dma.size
    packed = not dma.per_element or (prog.width == 1 and prog.height == 1)
    h, w = (prog.height, prog.width) if dma.per_element else (1, 1)
    addrs = _surface_addresses(dma.base, dma.line_stride, dma.surf_stride, surfaces, h, w,
                               group * elem_bytes, packed)
    _check_address_space(cfg, addrs, f"SDP_RDMA.D_{_DMA_PREFIX[dma.name]}_BASE_ADDR_LOW",
                         dma.base)
    raw = _pick_memory(dma.ram_type, mem, sram).gather(addrs)
    raw = raw.reshape(surfaces, h, w, group, ncomp, dma.size)
    comps = [_to_channels(_decode_values(raw[..., k, :], dma.size)) for k in range(ncomp)]
    if dma.use == USE_BOTH:
        return {"alu": comps[0], "mul": comps[1]}
    return {"alu" if dma.use == USE_ALU else "mul": comps[0]}


# =========================================================================================
# The layer
# =========================================================================================
def check_flying_cube(cfg, sdp, shape, batches: int | None = None) -> None:
    """Raise :class:`SdpProgramError` unless the cube a convolution delivers (``shape`` =
    channels, height, width: CACC's ``D_DATAOUT_SIZE``) is SDP's flying cube (``sdp``, SDP's
    register view): the same width and height, and as many channels as SDP's or SDP's rounded
    up to whole atoms of its processing precision. With ``batches`` (CACC's batch count) SDP's
    ``D_FEATURE_MODE_CFG.BATCH_NUMBER`` must count the same batches."""
    if batches is not None and sdp.D_FEATURE_MODE_CFG.BATCH_NUMBER + 1 != batches:
        raise SdpProgramError(
            f"SDP.D_FEATURE_MODE_CFG.BATCH_NUMBER={sdp.D_FEATURE_MODE_CFG.BATCH_NUMBER}: the "
            f"convolution delivers {batches} batch(es) (CACC.D_BATCH_NUMBER.BATCHES="
            f"{batches - 1}); SDP must take as many")
    W = sdp.D_DATA_CUBE_WIDTH.WIDTH + 1
    H = sdp.D_DATA_CUBE_HEIGHT.HEIGHT + 1
    C = sdp.D_DATA_CUBE_CHANNEL.CHANNEL + 1
    group = cfg.memory_atom // _BYTES.get(sdp.D_DATA_FORMAT.PROC_PRECISION, 1)
    c_pad = -(-C // group) * group
    k, h, w = (int(n) for n in shape)
    if (h, w) != (H, W) or k not in (C, c_pad):
        raise SdpProgramError(
            f"SDP.D_DATA_CUBE_WIDTH/HEIGHT/CHANNEL give a {W} x {H} x {C} cube: a flying "
            f"layer takes the {w} x {h} x {k} cube the convolution delivers "
            "(CACC.D_DATAOUT_SIZE_0/1 width, height, channels), and the two must agree")


def run_sdp(cfg, rdma, sdp, mem, lut: SdpLut | None = None, flying_input=None,
            sram=None) -> SdpResult:
    """Run one SDP hardware layer.

    cfg           the build (:class:`arch.config.NvdlaConfig`)
    rdma, sdp     GroupViews of the SDP_RDMA and SDP blocks' active group
    mem           memory of RAM type MC (DBBIF); also used for CV when ``sram`` is None
    lut           the LUT RAMs (a zero LUT if None)
    flying_input  int32 cube [C, H, W] (or [C rounded up to a surface, H, W]) from the
                  accumulator, for FLYING_MODE=ON (fp32 codes for an fp16 layer);
                  [B, C, H, W] for a batched layer (``D_FEATURE_MODE_CFG.BATCH_NUMBER`` =
                  B - 1)
    sram          memory of RAM type CV (SRAMIF), if the build has one

    Raises :class:`SdpProgramError` for programs the hardware cannot run.

    Precision conversion (see "Precision conversion" in the module docstring): offline int8
    -> int16 (write DMA 8to16), int16 -> int8 (read DMA 16to8), int16 -> fp16 and fp16 ->
    int16 (output converter); flying only int16 <-> fp16.

    Winograd mode (``D_FEATURE_MODE_CFG.WINOGRAD=ON``, builds with Winograd): the accumulator
    delivers a Winograd layer in 2 x 2 output tiles and SDP writes the ordinary output cube,
    the values of the ordinary mode. NVDLA's rules: flying input, output to memory, one batch,
    width and height multiples of 4, no precision conversion, no EW equal mode.

    Batch mode (flying only, output to memory): every batch's cube goes through the same
    datapath with the same operands (the read DMAs' per-element data is shared by all
    batches, as NVDLA's SDP reuses it), the counters sum over the batches, and batch ``b`` is
    written at ``DST_BASE + b x DST_BATCH_STRIDE`` with the line and surface strides (a 1x1
    cube too: only a single batch is written as one run of atoms). ``output`` and
    ``padded_output`` are then [B, C, H, W].
    """
    prog = _decode(cfg, rdma, sdp, flying_input)
    atom = cfg.memory_atom
    in_group = atom // _BYTES[prog.in_prec]
    group = atom // _BYTES[prog.proc_prec]
    out_group = atom // _BYTES[prog.out_prec]
    W, H, C = prog.width, prog.height, prog.channel
    c_pad = -(-C // group) * group
    one_by_one = W == 1 and H == 1

    # -- input ---------------------------------------------------------------------------
    B = prog.batches
    fp = prog.proc_prec == FP16
    rdma_counts = None
    if prog.flying:
        data = np.asarray(flying_input, dtype=np.int64)
        if data.ndim not in (3, 4):
            raise ValueError(f"flying_input must be [C, H, W] or [B, C, H, W], got "
                             f"{list(data.shape)}")
        check_flying_cube(cfg, sdp, data.shape[-3:],
                          batches=data.shape[0] if data.ndim == 4 else 1)
        data = data.reshape(B, *data.shape[-3:])
        if data.shape[1] != c_pad:
            data = np.concatenate([data, np.zeros((B, c_pad - C, H, W), dtype=np.int64)],
                                  axis=1)
        data = data & 0xFFFFFFFF if fp else wrap_signed(data, 32)
    else:
        ram, base, line, surf = prog.src
        nbytes = _BYTES[prog.in_prec]
        surfaces = c_pad // in_group
        addrs = _surface_addresses(base, line, surf, surfaces, H, W, atom, one_by_one)
        _check_address_space(cfg, addrs, "SDP_RDMA.D_SRC_BASE_ADDR_LOW", base)
        raw = _pick_memory(ram, mem, sram).gather(addrs).reshape(surfaces, H, W, in_group, nbytes)
        data = _to_channels(_decode_values(raw, nbytes))[None]
        if fp:
            raw16 = data & 0xFFFF
            if prog.rdma_perf_nan_inf and prog.rdma_in_fp16:
                rdma_counts = (int(fp16_is_nan(raw16).sum()), int(fp16_is_inf(raw16).sum()))
            data = fp16_to_fp32(raw16)
    if fp:
        data = flush_nan_fp32(data, prog.nan_to_zero)

    # -- operands ------------------------------------------------------------------------
    fetched = {}
    for name, dma in prog.dmas.items():
        if dma.enabled:
            fetched[name] = _read_operand(cfg, prog, dma, mem, sram, atom)

    def operand(stage, unit):
        src = prog.operands.get((stage, unit))
        if src is None:
            return 0
        kind, v = src
        if kind == "reg":
            return v
        return fetched[v][unit]

    # -- datapath ------------------------------------------------------------------------
    x = data
    lut_out = None
    if fp:
        for on, name, st in ((prog.bs_on, "BS", prog.bs), (prog.bn_on, "BN", prog.bn)):
            if on:
                x = x_stage_fp16(x, operand(name, "alu"), operand(name, "mul"), st,
                                 prog.nan_to_zero)
        if prog.ew_on:
            ops = {}
            for unit in ("alu", "mul"):
                op = operand("EW", unit)
                if prog.operands.get(("EW", unit), ("reg",))[0] == "dma":
                    op = y_operand_fp16(op, prog.nan_to_zero)
                else:
                    op = np.asarray(op, dtype=np.int64) & 0xFFFFFFFF
                ops[unit] = op
            x = y_stage_fp16(x, ops["alu"], ops["mul"], prog.ew)
            if not prog.ew.lut_bypass:
                lut_out = lut_lookup_fp16(lut if lut is not None else SdpLut(), x,
                                          LutParams.from_view(sdp))
                x = lut_out.value
    if prog.bs_on and not fp:
        x = x_stage(x, operand("BS", "alu"), operand("BS", "mul"), prog.bs)
    if prog.bn_on and not fp:
        x = x_stage(x, operand("BN", "alu"), operand("BN", "mul"), prog.bn)
    if prog.ew_on and not fp:
        ops = {}
        for unit in ("alu", "mul"):
            op = operand("EW", unit)
            if prog.operands.get(("EW", unit), ("reg",))[0] == "dma":
                offset, scale, trunc, bypass = getattr(prog, f"ew_{unit}_cvt")
                op = y_operand_convert(op, offset, scale, trunc, bypass)
            ops[unit] = op
        x = y_stage(x, ops["alu"], ops["mul"], prog.ew)
        if not prog.ew.lut_bypass:
            lut_out = lut_lookup(lut if lut is not None else SdpLut(), x,
                                 LutParams.from_view(sdp))
            x = lut_out.value

    out_bits = 8 * _BYTES[prog.out_prec]
    out_fp = prog.out_prec == FP16
    if prog.eql:
        # Equal mode: the converter passes the comparison result through; nothing is written.
        # NVDLA's converter still runs on it and flags 17-bit saturations (counted on integer
        # layers; fp16 outputs are compared with +-65504, which a 0 / 1 result never is)
        padded = wrap_signed(x, out_bits)
        sat = output_convert(x, *prog.cvt, 17)[1] if not (fp or out_fp) else \
            np.zeros(padded.shape, dtype=bool)
    elif fp and out_fp:
        # fp16 output: fp32 -> fp16 (CVT_OFFSET / SCALE / SHIFT take no part); the
        # saturation counter counts the outputs of magnitude 65504 (the converter's limit)
        padded = fp32_to_fp16(x)
        sat = fp16_saturated(padded)
    elif fp:
        # fp16 pipeline -> int16: fp32 -> fp16 -> int16 (CVT_* take no part); the converter
        # flags no saturation
        padded = fp32_to_int16(x)
        sat = np.zeros(padded.shape, dtype=bool)
    elif out_fp:
        # int16 pipeline -> fp16: the integer converter into 17 bits, then int -> fp16; the
        # counter counts the fp16 outputs of magnitude 65504 (not the 17-bit saturation)
        t, _ = output_convert(x, *prog.cvt, 17)
        padded = int17_to_fp16(t)
        sat = fp16_saturated(padded)
    else:
        padded, sat = output_convert(x, *prog.cvt, out_bits)

    if B == 1:
        padded = padded[0]
        result = SdpResult(output=padded[:C].copy(), padded_output=padded,
                           to_pdp=prog.to_pdp)
    else:
        result = SdpResult(output=padded[:, :C].copy(), padded_output=padded,
                           to_pdp=prog.to_pdp)
    result.status_unequal = int(np.any((padded & ((1 << out_bits) - 1)) != 0))
    if prog.perf_sat:
        result.out_saturation = 0 if sat is None else int(sat.sum())
    if prog.perf_lut:
        result.lut_uflow = result.lut_oflow = result.lut_hybrid = 0
        result.lut_le_hit = result.lut_lo_hit = 0
        if lut_out is not None:
            result.lut_uflow, result.lut_oflow = lut_out.uflow, lut_out.oflow
            result.lut_hybrid = lut_out.hybrid
            result.lut_le_hit, result.lut_lo_hit = lut_out.le_hit, lut_out.lo_hit

    if fp or out_fp:
        # NVDLA's SDP ties its own input counters to 0 (SDP_RDMA counts the input); the
        # WDMA counts NaN outputs of every layer with fp16 output (not gated by
        # PERF_NAN_INF_COUNT_EN), none when an fp16 pipeline writes int16
        result.nan_input_num = result.inf_input_num = 0
        result.nan_output_num = int(fp16_is_nan(padded).sum()) if out_fp else 0
        if rdma_counts is not None:
            result.rdma_nan_input_num, result.rdma_inf_input_num = rdma_counts

    # -- output --------------------------------------------------------------------------
    if prog.dst is not None:
        ram, base, line, surf, batch = prog.dst
        nbytes = _BYTES[prog.out_prec]
        surfaces = c_pad // out_group
        cubes = padded.reshape(B, *padded.shape[-3:])
        addrs = np.stack([_surface_addresses(base + b * batch, line, surf, surfaces, H, W,
                                             atom, one_by_one and B == 1) for b in range(B)])
        _check_address_space(cfg, addrs, "SDP.D_DST_BASE_ADDR_LOW", base)
        values = np.stack([_encode_values(_from_channels(c, out_group), nbytes)
                           for c in cubes])
        _pick_memory(ram, mem, sram).scatter(addrs.reshape(-1), values.reshape(-1))
        result.wrote_memory = True
        result.dst_extent = (int(addrs.min()), int(addrs.max()) + 1)
    return result
