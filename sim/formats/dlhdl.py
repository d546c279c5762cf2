"""Converter between NVDLA feature data and another accelerator's external-memory layout.

Follows dlhdl_external_memory_format.txt (a deep-learning processor IP core with a 32-bit AXI4
master):

* ``ConvThreadNumber`` T gives the thread number C = sqrt(T) (channels processed at once) and
  the parallel transfer number N = 2^nextpow2(sqrt(T)) (values moved per beat);
* convolution data: the Z feature planes are taken C at a time; each group of C planes is
  padded with zero planes to N, and the groups are stored one after another, each as
  for y: for x: the N values of that pixel (the "NXY block"). With C a power of two (C == N) this
  is simply Z padded to a multiple of N; otherwise zero planes follow every C real planes;
* the memory size is H * W * ceil(Z / C) * N values;
* fully connected data: a 1 x X vector padded with zeros to a multiple of N;
* ``single`` values take 4 bytes, ``int8`` values one byte, little-endian, so the byte stream is
  the value stream.

Cubes are indexed ``[Z, H, W]`` like NVDLA cubes; x is the W axis, varying fastest after the N
values of a pixel (one row is completed before the next). The converters go through
:mod:`sim.formats.feature` for the NVDLA side.
"""

from __future__ import annotations

import math

import numpy as np

from .common import FormatError, ceil_div
from .feature import pack_feature, unpack_feature

__all__ = [
    "thread_number", "parallel_transfer_number", "dlhdl_conv_size", "pack_dlhdl_conv",
    "unpack_dlhdl_conv", "pack_dlhdl_fc", "unpack_dlhdl_fc", "dlhdl_to_bytes",
    "dlhdl_from_bytes", "nvdla_to_dlhdl", "dlhdl_to_nvdla", "DLHDL_DTYPES",
]

#: Element encodings of the external memory: MATLAB ``single`` (float32) and ``int8``.
DLHDL_DTYPES = {"single": np.dtype("<f4"), "int8": np.dtype("i1")}


def thread_number(conv_thread_number: int) -> int:
    """C = sqrt(ConvThreadNumber); ConvThreadNumber must be a perfect square."""
    t = int(conv_thread_number)
    c = math.isqrt(t) if t > 0 else 0
    if t < 1 or c * c != t:
        raise FormatError(f"ConvThreadNumber {conv_thread_number} must be a positive square")
    return c


def parallel_transfer_number(conv_thread_number: int) -> int:
    """N = 2^nextpow2(sqrt(ConvThreadNumber)): 9 -> 4, 16 -> 4, 64 -> 8."""
    c = thread_number(conv_thread_number)
    return 1 << (c - 1).bit_length()


def _cn(conv_thread_number, C, N):
    if conv_thread_number is not None:
        C = thread_number(conv_thread_number)
        N = parallel_transfer_number(conv_thread_number)
    if C is None or N is None or C < 1 or N < C:
        raise FormatError(f"need thread number C >= 1 and parallel transfer number N >= C, "
                          f"got C={C} N={N}")
    return C, N


def dlhdl_conv_size(H: int, W: int, Z: int, conv_thread_number: int | None = None,
                    C: int | None = None, N: int | None = None) -> int:
    """Values in memory for an H x W x Z cube: dimension1 * dimension2 * ceil(Z/C) * N."""
    C, N = _cn(conv_thread_number, C, N)
    return H * W * ceil_div(Z, C) * N


def _slot_of_plane(Z, C, N):
    z = np.arange(Z)
    return (z // C) * N + z % C          # position among the padded planes


def pack_dlhdl_conv(cube, conv_thread_number: int | None = None, C: int | None = None,
                    N: int | None = None) -> np.ndarray:
    """Lay a [Z, H, W] cube out as the 1-D convolution-module vector (zeros in pad slots)."""
    a = np.asarray(cube)
    if a.ndim != 3:
        raise FormatError(f"convolution data is indexed [Z, H, W]; got shape {a.shape}")
    C, N = _cn(conv_thread_number, C, N)
    Z, H, W = a.shape
    G = ceil_div(Z, C)
    slots = np.zeros((G * N, H, W), a.dtype)
    slots[_slot_of_plane(Z, C, N)] = a
    # [G, N, H, W] -> [G, H, W, N]
    return np.ascontiguousarray(slots.reshape(G, N, H, W).transpose(0, 2, 3, 1)).reshape(-1)


def unpack_dlhdl_conv(vec, Z: int, H: int, W: int, conv_thread_number: int | None = None,
                      C: int | None = None, N: int | None = None) -> np.ndarray:
    """Read a [Z, H, W] cube back from the 1-D vector, dropping the padding planes."""
    C, N = _cn(conv_thread_number, C, N)
    v = np.asarray(vec).reshape(-1)
    n = dlhdl_conv_size(H, W, Z, C=C, N=N)
    if v.size < n:
        raise FormatError(f"vector has {v.size} values, an {H}x{W}x{Z} cube needs {n}")
    G = ceil_div(Z, C)
    slots = v[:n].reshape(G, H, W, N).transpose(0, 3, 1, 2).reshape(G * N, H, W)
    return np.ascontiguousarray(slots[_slot_of_plane(Z, C, N)])


def pack_dlhdl_fc(vec, conv_thread_number: int | None = None, N: int | None = None
                  ) -> np.ndarray:
    """Fully connected data: the 1 x X vector zero-padded to a multiple of N."""
    if conv_thread_number is not None:
        N = parallel_transfer_number(conv_thread_number)
    if not N or N < 1:
        raise FormatError("need the parallel transfer number N")
    v = np.asarray(vec).reshape(-1)
    out = np.zeros(ceil_div(v.size, N) * N, v.dtype)
    out[:v.size] = v
    return out


def unpack_dlhdl_fc(vec, X: int) -> np.ndarray:
    """The first X values of a padded fully-connected vector."""
    v = np.asarray(vec).reshape(-1)
    if v.size < X:
        raise FormatError(f"vector has {v.size} values, {X} needed")
    return v[:X].copy()


def dlhdl_to_bytes(vec, dtype: str = "single") -> np.ndarray:
    """Values to little-endian memory bytes (4 per ``single``, 1 per ``int8``)."""
    if dtype not in DLHDL_DTYPES:
        raise FormatError(f"dtype {dtype!r}: must be one of {sorted(DLHDL_DTYPES)}")
    v = np.asarray(vec)
    if dtype == "int8" and v.size and (v.min() < -128 or v.max() > 127):
        raise FormatError("int8 values out of range [-128, 127]")
    return np.ascontiguousarray(v.astype(DLHDL_DTYPES[dtype])).reshape(-1).view(np.uint8)


def dlhdl_from_bytes(data, dtype: str = "single") -> np.ndarray:
    """Memory bytes to values (float32 for ``single``, int64 for ``int8``)."""
    if dtype not in DLHDL_DTYPES:
        raise FormatError(f"dtype {dtype!r}: must be one of {sorted(DLHDL_DTYPES)}")
    b = np.ascontiguousarray(np.asarray(data, np.uint8).reshape(-1))
    if b.size % DLHDL_DTYPES[dtype].itemsize:
        raise FormatError(f"{b.size} bytes is not a whole number of {dtype} values")
    v = b.view(DLHDL_DTYPES[dtype])
    return v.astype(np.float32) if dtype == "single" else v.astype(np.int64)


_NVDLA_TO_DLHDL = {"int8": "int8", "fp16": "single"}


def nvdla_to_dlhdl(mem, base: int, C: int, H: int, W: int, atom: int, precision: str,
                   conv_thread_number: int, line_stride: int | None = None,
                   surface_stride: int | None = None) -> np.ndarray:
    """NVDLA feature data in ``mem`` -> external-memory bytes of the other accelerator.

    int8 stays int8; fp16 becomes ``single`` (exact widening). int16 has no counterpart.
    """
    if precision not in _NVDLA_TO_DLHDL:
        raise FormatError(f"{precision} feature data has no external-memory counterpart "
                          f"(int8 -> int8, fp16 -> single)")
    cube = unpack_feature(mem, base, C, H, W, atom, precision, line_stride, surface_stride)
    vec = pack_dlhdl_conv(cube.astype(np.float32) if precision == "fp16" else cube,
                          conv_thread_number)
    return dlhdl_to_bytes(vec, _NVDLA_TO_DLHDL[precision])


def dlhdl_to_nvdla(data, Z: int, H: int, W: int, conv_thread_number: int, atom: int,
                   precision: str, line_stride: int | None = None,
                   surface_stride: int | None = None):
    """External-memory bytes -> NVDLA feature data; returns ``(mem, strides)``.

    ``int8`` bytes map to int8 features; ``single`` bytes to fp16 (rounded to nearest, values
    beyond +/-65504 saturate -- NVDLA outputs never hold infinities).
    """
    if precision not in _NVDLA_TO_DLHDL:
        raise FormatError(f"{precision} feature data has no external-memory counterpart")
    vec = dlhdl_from_bytes(data, _NVDLA_TO_DLHDL[precision])
    cube = unpack_dlhdl_conv(vec, Z, H, W, conv_thread_number)
    if precision == "fp16":
        cube = np.clip(cube, -65504.0, 65504.0).astype(np.float16)
    return pack_feature(cube, atom, precision, line_stride, surface_stride)
