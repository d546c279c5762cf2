"""Winograd convolution weights: phase 1 (extension and G W G^T) and phase 2 (grouping).

Follows "Basic Weight for Winograd Convolution" of in_memory_data_formats.md (Fig. 15).

Phase 1, per kernel:

1. zero-pad C to a whole number of 32-byte small cubes (16 int16/fp16 or 32 int8 channels);
2. if the convolution stride is not 1, extend channels so the kernel becomes 3 x 3: kernel
   position (r, s) moves to (r // sy, s // sx) and channel ``((r % sy)*sx + s % sx)*C + c``
   (requires ceil(R/sy) == ceil(S/sx) == 3; positions past R x S are zero);
3. transform every 3 x 3 plane to 4 x 4 with G W G^T,
   G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].

Phase 2: group kernels (32 int8 / 16 int16, fp16), cut the 4 x 4 x C' kernels into 4 x 4 x 4
small cubes (channel fastest, then width, then height inside a cube), scan the small cubes of a
group K -> C (cube 0 of K0..K15, cube 1 of K0..K15, ...), groups back to back, zero fill to
128 bytes.
"""

from __future__ import annotations

import numpy as np

from .common import (FormatError, ceil_div, check_precision, element_bytes, round_shift_right,
                     saturate, values_to_raw)
from .weight import (WEIGHT_ALIGN, WeightSurface, _as_kcrs, _gather, _group_sizes, _scatter,
                     default_group_k)

__all__ = [
    "WINOGRAD_G", "WINOGRAD_CUBE_CHANNELS", "winograd_pad_channels",
    "winograd_extend_stride", "winograd_reduce_stride", "winograd_transform",
    "winograd_inverse_transform", "winograd_weight_offsets", "pack_winograd_weights",
    "unpack_winograd_weights", "prepare_winograd_weights",
]

#: The weight transform matrix G (4 x 3).
WINOGRAD_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
_G2 = np.array([[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]], dtype=np.int64)   # 2 G
_G_LEFT_INV = np.array([[1, 0, 0, 0], [0, 1, -1, 0], [0, 0, 0, 1]], dtype=np.int64)
#: Channels of one phase-2 small cube.
WINOGRAD_CUBE_CHANNELS = 4
_FP16_MAX = 65504.0


def winograd_pad_channels(w, precision: str) -> np.ndarray:
    """Append zero channels so C is a multiple of 32 bytes (16 or 32 channels)."""
    a = _as_kcrs(w)
    step = 32 // element_bytes(precision)
    C = a.shape[1]
    Cp = ceil_div(C, step) * step
    if Cp == C:
        return a.copy()
    out = np.zeros((a.shape[0], Cp) + a.shape[2:], a.dtype)
    out[:, :C] = a
    return out


def winograd_extend_stride(w, stride_x: int, stride_y: int) -> np.ndarray:
    """Channel extension for a strided Winograd convolution: [K, C, R, S] -> [K, C*sx*sy, 3, 3].

    Needs ceil(R/sy) == 3 and ceil(S/sx) == 3. With stride 1 the kernel must already be 3 x 3
    and is returned unchanged.
    """
    a = _as_kcrs(w)
    K, C, R, S = a.shape
    if ceil_div(R, stride_y) != 3 or ceil_div(S, stride_x) != 3:
        raise FormatError(f"Winograd needs ceil(R/stride_y) == ceil(S/stride_x) == 3; got "
                          f"R={R} S={S} strides=({stride_x}, {stride_y})")
    full = np.zeros((K, C, 3 * stride_y, 3 * stride_x), a.dtype)
    full[:, :, :R, :S] = a
    # [K, C, 3, sy, 3, sx] -> [K, sy, sx, C, 3, 3]
    ext = full.reshape(K, C, 3, stride_y, 3, stride_x).transpose(0, 3, 5, 1, 2, 4)
    return np.ascontiguousarray(ext.reshape(K, stride_y * stride_x * C, 3, 3))


def winograd_reduce_stride(w_ext, C: int, R: int, S: int, stride_x: int,
                           stride_y: int) -> np.ndarray:
    """Inverse of :func:`winograd_extend_stride` (drops the zero positions past R x S)."""
    a = _as_kcrs(w_ext)
    K = a.shape[0]
    full = a.reshape(K, stride_y, stride_x, C, 3, 3).transpose(0, 3, 4, 1, 5, 2)
    return np.ascontiguousarray(full.reshape(K, C, 3 * stride_y, 3 * stride_x)[:, :, :R, :S])


def winograd_transform(w3, precision: str, scale_log2: int = 0) -> np.ndarray:
    """G W G^T of every 3 x 3 plane (last two axes), times ``2**scale_log2``.

    int8/int16: computed exactly in int64 as (2G) W (2G)^T = 4 G W G^T, then scaled, rounded to
    nearest (ties away from zero) and saturated to the precision. ``scale_log2=2`` keeps the
    result exact. fp16: computed in float64 (exact for fp16 inputs), clamped to +/-65504 and
    rounded to nearest fp16. Returns int64 or float16 values with the last two axes 4 x 4.
    """
    check_precision(precision)
    a = np.asarray(w3)
    if a.shape[-2:] != (3, 3):
        raise FormatError(f"Winograd transform takes 3x3 planes, got shape {a.shape}")
    if precision == "fp16":
        g = (a.view(np.float16) if a.dtype == np.uint16 else a.astype(np.float16))
        g = g.astype(np.float64)
        t = WINOGRAD_G @ g @ WINOGRAD_G.T * (2.0 ** scale_log2)
        return np.clip(t, -_FP16_MAX, _FP16_MAX).astype(np.float16)
    t4 = _G2 @ a.astype(np.int64) @ _G2.T                       # 4 x exact value
    t = round_shift_right(t4, 2 - scale_log2)
    return saturate(t, 8 if precision == "int8" else 16)


def winograd_inverse_transform(w4, precision: str, scale_log2: int = 0) -> np.ndarray:
    """Recover 3 x 3 planes from an exact G W G^T (rows/cols 0, 1-2 and 3 of the 4 x 4).

    Exact when the forward transform did not round or saturate (e.g. ``scale_log2=2`` for
    integers); ``scale_log2`` must match the forward call.
    """
    check_precision(precision)
    a = np.asarray(w4)
    if precision == "fp16":
        g = _G_LEFT_INV @ a.astype(np.float64) @ _G_LEFT_INV.T / (2.0 ** scale_log2)
        return g.astype(np.float16)
    g = _G_LEFT_INV @ a.astype(np.int64) @ _G_LEFT_INV.T
    return round_shift_right(g, scale_log2)


def winograd_weight_offsets(K: int, C: int, group_k: int) -> np.ndarray:
    """Element offset of every transformed weight [K, C, 4, 4] in the phase-2 mapping."""
    if C % WINOGRAD_CUBE_CHANNELS:
        raise FormatError(f"Winograd channel count {C} must be a multiple of 4")
    k = np.arange(K, dtype=np.int64)[:, None, None, None]
    c = np.arange(C, dtype=np.int64)[None, :, None, None]
    r = np.arange(4, dtype=np.int64)[None, None, :, None]
    s = np.arange(4, dtype=np.int64)[None, None, None, :]
    g, kk = k // group_k, k % group_k
    gsize = np.minimum(group_k, K - g * group_k)
    cg, ci = c // WINOGRAD_CUBE_CHANNELS, c % WINOGRAD_CUBE_CHANNELS
    cube = 16 * WINOGRAD_CUBE_CHANNELS
    return g * group_k * C * 16 + cg * gsize * cube + kk * cube + (r * 4 + s) * 4 + ci


def pack_winograd_weights(w4, precision: str, group_k: int | None = None,
                          align: int = WEIGHT_ALIGN) -> WeightSurface:
    """Phase 2: map transformed [K, C', 4, 4] kernels (C' a multiple of 4)."""
    a = _as_kcrs(w4)
    K, C, R, S = a.shape
    if (R, S) != (4, 4):
        raise FormatError(f"phase 2 takes 4x4 transformed kernels, got {R}x{S}")
    gk = default_group_k(precision) if group_k is None else group_k
    off = winograd_weight_offsets(K, C, gk)
    data = _scatter(values_to_raw(a, precision), off, precision, align)
    groups = tuple(int(n) * C * 16 for n in _group_sizes(K, gk))
    return WeightSurface(data, precision, K * C * 16 * element_bytes(precision), groups,
                         "winograd")


def unpack_winograd_weights(data, K: int, C: int, precision: str,
                            group_k: int | None = None) -> np.ndarray:
    """Inverse of :func:`pack_winograd_weights`: [K, C', 4, 4] values."""
    gk = default_group_k(precision) if group_k is None else group_k
    return _gather(data, winograd_weight_offsets(K, C, gk), precision)


def prepare_winograd_weights(w, precision: str, stride_x: int = 1, stride_y: int = 1,
                             scale_log2: int = 0, group_k: int | None = None,
                             align: int = WEIGHT_ALIGN) -> WeightSurface:
    """Phase 1 (pad, stride extension, transform) then phase 2, from raw [K, C, R, S] weights."""
    padded = winograd_pad_channels(w, precision)
    ext = winograd_extend_stride(padded, stride_x, stride_y)
    return pack_winograd_weights(winograd_transform(ext, precision, scale_log2), precision,
                                 group_k, align)
