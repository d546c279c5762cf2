"""Element precisions and the conversions between values, raw element codes and bytes.

Follows "Precision Type" of in_memory_data_formats.md: an element is an 8-bit signed integer
(int8), a 16-bit signed integer (int16) or an IEEE half (fp16). Memory is little-endian.

Three representations are used throughout :mod:`sim.formats`:

* *values*: what a golden model computes with -- int64 arrays for int8/int16, ``np.float16``
  arrays for fp16;
* *raw codes*: the element's bit pattern as an unsigned integer (``uint8`` or ``uint16``); this is
  the lossless form (NaN payloads, -0.0) and what every layout moves around;
* *bytes*: a flat ``uint8`` array, little-endian, as it sits in memory.

Padding written by a layout is always raw code 0 (integer 0, fp16 +0.0, never NaN).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "PRECISIONS", "ELEMENT_BYTES", "FormatError", "check_precision", "element_bytes",
    "align_up", "ceil_div", "values_to_raw", "raw_to_values", "raw_to_bytes", "bytes_to_raw",
    "values_to_bytes", "bytes_to_values", "saturate", "round_shift_right", "raw_dtype",
]

PRECISIONS = ("int8", "int16", "fp16")
ELEMENT_BYTES = {"int8": 1, "int16": 2, "fp16": 2}
_INT_BITS = {"int8": 8, "int16": 16}


class FormatError(ValueError):
    """A layout parameter or a piece of data does not satisfy the in-memory format rules."""


def check_precision(precision: str) -> str:
    """Return ``precision`` if it is one of :data:`PRECISIONS`, else raise :class:`FormatError`."""
    if precision not in ELEMENT_BYTES:
        raise FormatError(f"precision {precision!r}: must be one of {list(PRECISIONS)}")
    return precision


def element_bytes(precision: str) -> int:
    """Bytes per element: 1 for int8, 2 for int16 and fp16."""
    return ELEMENT_BYTES[check_precision(precision)]


def raw_dtype(precision: str):
    """The unsigned dtype holding one raw element code of ``precision``."""
    return np.uint8 if element_bytes(precision) == 1 else np.uint16


def align_up(x: int, alignment: int) -> int:
    """Smallest multiple of ``alignment`` that is >= ``x``."""
    return -(-int(x) // alignment) * alignment


def ceil_div(a: int, b: int) -> int:
    """Integer ceil(a / b) for non-negative a, positive b."""
    return -(-int(a) // int(b))


def saturate(x, bits: int):
    """Clamp integers to the signed ``bits``-bit range (int64 in, int64 out)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.clip(np.asarray(x, dtype=np.int64), lo, hi)


def round_shift_right(x, shift: int):
    """``x / 2**shift`` rounded to nearest, ties away from zero, in exact int64 arithmetic.

    This is the rounding of NVDLA's input convertor (``(int)(t + (t > 0 ? 0.5 : -0.5))``).
    """
    x = np.asarray(x, dtype=np.int64)
    if shift <= 0:
        return x << (-shift)
    half = np.int64(1) << (shift - 1)
    mag = (np.abs(x) + half) >> shift
    return np.where(x < 0, -mag, mag)


def values_to_raw(values, precision: str) -> np.ndarray:
    """Encode element values as raw codes (``uint8`` for int8, ``uint16`` for int16/fp16).

    int8/int16 take integer arrays and reject out-of-range values (no silent wrap). fp16 takes a
    ``float16`` array (bits kept exactly), any other float array (rounded to nearest fp16), or a
    ``uint16`` array, which is taken to already hold fp16 bit patterns.
    """
    check_precision(precision)
    a = np.asarray(values)
    if precision == "fp16":
        if a.dtype == np.float16:
            return a.view(np.uint16).copy()
        if a.dtype == np.uint16:
            return a.copy()
        if a.dtype.kind == "f":
            return a.astype(np.float16).view(np.uint16)
        if a.size == 0:
            return np.zeros(a.shape, np.uint16)
        raise FormatError(f"fp16 data must be a float array or uint16 bit patterns, got {a.dtype}")
    if a.size and a.dtype.kind not in "iub":
        raise FormatError(f"{precision} data must be an integer array, got {a.dtype}")
    bits = _INT_BITS[precision]
    a = a.astype(np.int64)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if a.size and (a.min() < lo or a.max() > hi):
        raise FormatError(f"{precision} data out of range [{lo}, {hi}]: "
                          f"min {a.min()}, max {a.max()}")
    return (a & ((1 << bits) - 1)).astype(raw_dtype(precision))


def raw_to_values(raw, precision: str) -> np.ndarray:
    """Decode raw codes: int64 (sign-extended) for int8/int16, ``float16`` for fp16."""
    check_precision(precision)
    r = np.asarray(raw).astype(raw_dtype(precision))
    if precision == "fp16":
        return r.view(np.float16)
    return r.view(np.int8 if precision == "int8" else np.int16).astype(np.int64)


def raw_to_bytes(raw, precision: str) -> np.ndarray:
    """Raw codes (any shape) to a flat little-endian ``uint8`` array."""
    r = np.ascontiguousarray(np.asarray(raw).astype(raw_dtype(precision)))
    if r.dtype == np.uint16:
        r = r.astype("<u2")
    return r.reshape(-1).view(np.uint8)


def bytes_to_raw(data, precision: str) -> np.ndarray:
    """A flat byte array (length a multiple of the element size) to raw codes."""
    b = np.ascontiguousarray(np.asarray(data, dtype=np.uint8).reshape(-1))
    if element_bytes(precision) == 1:
        return b.copy()
    if b.size % 2:
        raise FormatError(f"{b.size} bytes is not a whole number of {precision} elements")
    return b.view("<u2").astype(np.uint16)


def values_to_bytes(values, precision: str) -> np.ndarray:
    """Element values to little-endian bytes (row-major order of ``values``)."""
    return raw_to_bytes(values_to_raw(values, precision), precision)


def bytes_to_values(data, precision: str) -> np.ndarray:
    """Little-endian bytes to a flat array of element values."""
    return raw_to_values(bytes_to_raw(data, precision), precision)
