"""SDP precision conversion: the number conversions of SDP's output converter.

Public functions (vectorized, integer-exact, codes as int64 arrays):

* :func:`int17_to_fp16` -- 17-bit integers -> fp16 codes (nearest even; magnitudes that
  round past 65504 saturate to +-65504): the int16 -> fp16 output (PROC=INT16, OUT=FP16).
* :func:`fp16_to_int16` -- fp16 codes -> int16 (round half away from zero, saturate, NaN ->
  -32768, an infinity saturates): second step of the fp16 -> int16 output.
* :func:`fp32_to_int16` -- fp32 codes -> int16: NVDLA's fp32 -> fp16
  (:func:`sim.nvfloat.fp32_to_fp16`) then :func:`fp16_to_int16` (PROC=FP16, OUT=INT16).
* :func:`fp16_saturated` -- the fp16 output codes the saturation counter counts (+-65504).
* :func:`conversion_mode` -- the name of the conversion a layer's precision fields select.

Where the conversions sit (see :func:`sim.sdp.sdp.run_sdp`): int8 <-> int16 is a matter of
the DMAs (the read DMA's "16to8" mode, SDP_RDMA IN_PRECISION=INT16 with PROC_PRECISION=INT8;
the write DMA's "8to16" mode, SDP PROC_PRECISION=INT8 with OUT_PRECISION=INT16) around an
unchanged integer datapath and output converter; int16 <-> fp16 happens in the output
converter.
"""

from __future__ import annotations

import numpy as np

from ..lut import bit_length
from ..nvfloat import fp16_is_nan, fp32_to_fp16

__all__ = ["int17_to_fp16", "fp16_to_int16", "fp32_to_int16", "fp16_saturated",
           "conversion_mode", "INT8", "INT16", "FP16"]

INT8, INT16, FP16 = 0, 1, 2
FP16_MAX = 0x7BFF


def int17_to_fp16(t):
    """fp16 codes of signed integers within 17 bits (NVDLA's int -> fp16 of the output
    converter): the magnitude rounded to 11 significant bits, nearest even (a carry moves
    the exponent up); a result past the largest finite value (magnitudes from 65520 up)
    saturates to 65504 of the sign (NVDLA's Verilog; its HLS C source gives an infinity
    there). 0 gives +0."""
    t = np.asarray(t, dtype=np.int64)
    sign = (t < 0).astype(np.int64)
    v = np.abs(t)
    n = bit_length(v)                                   # significant bits (0 for 0)
    drop = np.maximum(n - 11, 0)
    d1 = np.maximum(drop - 1, 0)
    q = v >> drop
    guard = np.where(drop > 0, (v >> d1) & 1, 0)
    sticky = (drop > 1) & ((v & ((np.int64(1) << d1) - 1)) != 0)
    q = q + (guard & (sticky | (q & 1)).astype(np.int64))
    carry = q >> 11                                     # rounded up to 2^11
    q = np.where(carry == 1, q >> 1, q)
    q = np.where(n < 11, v << np.maximum(11 - n, 0), q)  # exact: left-align to 11 bits
    expo = n - 1 + carry + 15
    code = (expo << 10) | (q & 0x3FF)
    code = np.where(expo >= 31, FP16_MAX, code)
    code = np.where(v == 0, 0, code)
    return (sign << 15) | code


def fp16_to_int16(h):
    """int16 values of fp16 codes (NVDLA's fp16 -> int16 of the output converter): the
    magnitude rounded to an integer, half away from zero, then saturated to the sign's
    int16 limit (an infinity too); a NaN gives -32768. The hidden bit is set whatever the
    exponent (an exponent-0 code reads as 1.m x 2^-15: below 1/2, so 0)."""
    h = np.asarray(h, dtype=np.int64) & 0xFFFF
    sign = h >> 15
    e = (h >> 10) & 0x1F
    p = 0x400 | (h & 0x3FF)                             # 1.m as an 11-bit integer
    right = np.maximum(25 - e, 1)                       # value = p x 2^(e - 25)
    mag = np.where(e >= 25, p << np.maximum(e - 25, 0),
                   (p + (np.int64(1) << (right - 1))) >> right)
    v = np.where(mag > 32767, np.where(sign == 1, -32768, 32767),
                 np.where(sign == 1, -mag, mag))
    return np.where(fp16_is_nan(h), -32768, v)


def fp32_to_int16(x):
    """int16 values of fp32 codes the way NVDLA's output converter makes them from an fp16
    pipeline: fp32 -> fp16 (:func:`sim.nvfloat.fp32_to_fp16`: nearest even, saturating at
    65504, NaNs kept except those whose payload lies only in the upper mantissa bits, which
    become infinities) then :func:`fp16_to_int16`."""
    return fp16_to_int16(fp32_to_fp16(np.asarray(x, dtype=np.int64) & 0xFFFFFFFF))


def fp16_saturated(codes):
    """The fp16 outputs NVDLA's saturation counter counts: the codes of +-65504."""
    return (np.asarray(codes, dtype=np.int64) & 0x7FFF) == 0x7BFF


_NAMES = {(INT16, INT8, INT8): "16to8", (INT8, INT8, INT16): "8to16",
          (INT16, INT8, INT16): "16to8to16", (INT16, INT16, FP16): "int16_to_fp16",
          (FP16, FP16, INT16): "fp16_to_int16"}


def conversion_mode(in_prec: int, proc: int, out: int) -> str | None:
    """The conversion of a (valid) layer: None without one, else "16to8" (read DMA),
    "8to16" (write DMA), "16to8to16" (both), "int16_to_fp16" or "fp16_to_int16" (output
    converter). ``in_prec`` is the input precision (the processing precision when flying)."""
    return _NAMES.get((in_prec, proc, out))
