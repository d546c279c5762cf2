"""Weight formats: direct convolution, image input (pre/post channel extension), deconvolution.

Follows "Weight Format" of in_memory_data_formats.md ("Basic Weight for Direct Convolution",
Fig. 13; "Basic Weight for image input", Fig. 14; "Weight Channel Post-extension for image
input", Fig. 16) and the deconvolution set split of the NVDLA programming guide. Winograd
weights are in :mod:`sim.formats.winograd`, sparse compression in :mod:`sim.formats.sparse`.

Kernels are arrays indexed ``[K, C, R, S]`` (kernel, channel, height, width).

Direct convolution mapping:

* kernels are grouped ``group_k`` at a time (32 for int8, 16 for int16/fp16; the last group may
  be smaller);
* each kernel is cut along C into 1 x 1 x ``cube_c`` small cubes (64 elements; the last one is
  shorter, never zero-filled);
* inside a group the small cubes are scanned C' -> K -> W -> H -> C (C' fastest) and packed
  back to back; groups follow each other back to back; the whole surface is zero-filled to a
  multiple of 128 bytes.

Element (k, c, r, s) therefore lands at element offset::

    g*group_k*C*R*S + j*cube_c*R*S*Kg + ((r*S + s)*Kg + k % group_k)*Cj + c % cube_c

with g = k // group_k, Kg the size of group g, j = c // cube_c and Cj the size of cube j.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import (FormatError, align_up, bytes_to_raw, ceil_div, check_precision,
                     element_bytes, raw_to_bytes, raw_to_values, values_to_raw)
from .rules import WeightOptionError, check_weight_options

__all__ = [
    "WeightSurface", "WEIGHT_ALIGN", "default_group_k", "weight_geometry", "dc_weight_offsets",
    "pack_dc_weights", "unpack_dc_weights", "pad_image_weight_channels",
    "pre_extend_image_weights", "undo_pre_extension", "check_post_extension",
    "image_weight_offsets", "pack_image_weights", "unpack_image_weights",
    "split_deconv_weights", "merge_deconv_weights", "pack_deconv_weights",
    "unpack_deconv_weights", "weight_bytes",
]

#: Weight surfaces (and WMB / WGS surfaces) are zero-filled to a multiple of this (Table 35).
WEIGHT_ALIGN = 128


@dataclass(frozen=True)
class WeightSurface:
    """A mapped weight surface.

    ``data`` is the whole surface including the zero fill to ``WEIGHT_ALIGN``; ``size`` the
    bytes of real weights (the WEIGHT_BYTES register: R*S*C*K*bytes-per-element of the mapped
    kernels); ``group_elements`` the elements of each kernel group, in memory order (what sparse
    compression needs).
    """
    data: np.ndarray
    precision: str
    size: int
    group_elements: tuple
    kind: str = "dc"



def _kernel_grid(K, C, R, S, group_k):
    """Broadcastable [K,C,R,S] index grids, plus each kernel's group, index in its group and
    group size (the last group may be short)."""
    k = np.arange(K, dtype=np.int64)[:, None, None, None]
    c = np.arange(C, dtype=np.int64)[None, :, None, None]
    r = np.arange(R, dtype=np.int64)[None, None, :, None]
    s = np.arange(S, dtype=np.int64)[None, None, None, :]
    g, kk = k // group_k, k % group_k
    return k, c, r, s, g, kk, np.minimum(group_k, K - g * group_k)

def default_group_k(precision: str) -> int:
    """Kernels per group: 32 for int8, 16 for int16 and fp16."""
    return 32 if check_precision(precision) == "int8" else 16


def weight_geometry(precision: str, atomic_c: int = 64, atomic_k: int = 32) -> tuple[int, int]:
    """(cube_c, group_k) for a build: small cubes of ``atomic_c`` elements and groups of
    ``atomic_k`` kernels for int8, half that for int16/fp16.

    ``atomic_k`` counts int8 kernels, as the NVDLA compiler does; the defaults give the spec's
    64-element cubes and 32/16-kernel groups.
    """
    check_precision(precision)
    return atomic_c, atomic_k if precision == "int8" else max(atomic_k // 2, 1)


def weight_bytes(K: int, C: int, R: int, S: int, precision: str) -> int:
    """WEIGHT_BYTES: R x S x C x K x bytes-per-element, independent of compression."""
    return K * C * R * S * element_bytes(precision)


def _as_kcrs(w) -> np.ndarray:
    a = np.asarray(w)
    if a.ndim != 4:
        raise FormatError(f"weights are indexed [K, C, R, S]; got shape {a.shape}")
    if 0 in a.shape:
        raise FormatError(f"weights must not be empty; got shape {a.shape}")
    return a


def _group_sizes(K: int, group_k: int) -> np.ndarray:
    return np.minimum(group_k, K - np.arange(ceil_div(K, group_k)) * group_k)


def dc_weight_offsets(K: int, C: int, R: int, S: int, group_k: int, cube_c: int,
                      reverse_spatial: bool = False) -> np.ndarray:
    """Element offset of every weight in the direct-convolution mapping, int64 [K, C, R, S].

    ``reverse_spatial`` scans (r, s) from the last position to the first, as deconvolution
    weights are laid out.
    """
    if group_k < 1 or cube_c < 1:
        raise FormatError(f"group_k {group_k} and cube_c {cube_c} must be positive")
    k, c, r, s, g, kk, gsize = _kernel_grid(K, C, R, S, group_k)
    j, ci = c // cube_c, c % cube_c
    csize = np.minimum(cube_c, C - j * cube_c)
    pos = ((R - 1 - r) * S + (S - 1 - s)) if reverse_spatial else (r * S + s)
    return g * group_k * C * R * S + j * cube_c * R * S * gsize + (pos * gsize + kk) * csize + ci


def _scatter(raw: np.ndarray, offsets: np.ndarray, precision: str, align: int) -> np.ndarray:
    codes = np.zeros(raw.size, raw.dtype)
    codes[offsets.reshape(-1)] = raw.reshape(-1)
    data = raw_to_bytes(codes, precision)
    out = np.zeros(align_up(data.size, align), np.uint8)
    out[:data.size] = data
    return out


def _gather(data, offsets: np.ndarray, precision: str) -> np.ndarray:
    n = offsets.size * element_bytes(precision)
    data = np.asarray(data, np.uint8).reshape(-1)
    if data.size < n:
        raise FormatError(f"weight surface has {data.size} bytes, the layout needs {n}")
    codes = bytes_to_raw(data[:n], precision)
    return raw_to_values(codes[offsets], precision)


def pack_dc_weights(w, precision: str, group_k: int | None = None, cube_c: int = 64,
                    align: int = WEIGHT_ALIGN, reverse_spatial: bool = False) -> WeightSurface:
    """Map [K, C, R, S] weights for direct convolution (Fig. 13)."""
    a = _as_kcrs(w)
    K, C, R, S = a.shape
    gk = default_group_k(precision) if group_k is None else group_k
    off = dc_weight_offsets(K, C, R, S, gk, cube_c, reverse_spatial)
    data = _scatter(values_to_raw(a, precision), off, precision, align)
    groups = tuple(int(n) * C * R * S for n in _group_sizes(K, gk))
    return WeightSurface(data, precision, weight_bytes(K, C, R, S, precision), groups,
                         "deconv" if reverse_spatial else "dc")


def unpack_dc_weights(data, K: int, C: int, R: int, S: int, precision: str,
                      group_k: int | None = None, cube_c: int = 64,
                      reverse_spatial: bool = False) -> np.ndarray:
    """Inverse of :func:`pack_dc_weights`: [K, C, R, S] values from a mapped surface."""
    gk = default_group_k(precision) if group_k is None else group_k
    return _gather(data, dc_weight_offsets(K, C, R, S, gk, cube_c, reverse_spatial), precision)


# ---------------------------------------------------------------------------------------------
# image input


def pad_image_weight_channels(w, channels: int) -> np.ndarray:
    """Zero-pad kernels to the image's channel count (e.g. RGB weights for an RGBA format)."""
    a = _as_kcrs(w)
    if channels < a.shape[1]:
        raise FormatError(f"cannot pad {a.shape[1]} weight channels down to {channels}")
    out = np.zeros((a.shape[0], channels) + a.shape[2:], a.dtype)
    out[:, :a.shape[1]] = a
    return out


def pre_extend_image_weights(w) -> np.ndarray:
    """Channel pre-extension (Fig. 14): each kernel line becomes one channel vector.

    [K, C, R, S] -> [K, S*C, R, 1], new channel ``s*C + c`` holding weight (c, r, s): the pixels
    of a line follow each other with their channels adjacent, as pixels sit in memory.
    """
    a = _as_kcrs(w)
    K, C, R, S = a.shape
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2).reshape(K, S * C, R)[..., None])


def undo_pre_extension(w_ext, C: int) -> np.ndarray:
    """Inverse of :func:`pre_extend_image_weights`: [K, S*C, R, 1] -> [K, C, R, S]."""
    a = _as_kcrs(w_ext)
    K, SC, R, one = a.shape
    if one != 1 or SC % C:
        raise FormatError(f"shape {a.shape} is not a pre-extended kernel of {C} channels")
    return np.ascontiguousarray(a[..., 0].reshape(K, SC // C, C, R).transpose(0, 2, 3, 1))


def check_post_extension(post_extension: int, C: int, S: int, stride_x: int = 1,
                         cube_c: int = 64) -> None:
    """Limits of channel post-extension (programming guide, scaled to the small-cube size).

    Parameter 1 (off) always works. For 2 (4) lines the pre-extended channel size S*C and
    conv_x_stride*C must each fit in half (a quarter) of a ``cube_c``-element small cube (the
    guide's <= 32 / <= 16 for 64-element cubes), so one combined line fits one small cube.
    """
    if post_extension not in (1, 2, 4):
        raise WeightOptionError(f"post-extension parameter {post_extension}: must be 1, 2 or 4")
    if post_extension == 1:
        return
    limit = cube_c // post_extension
    if S * C > limit:
        raise WeightOptionError(f"{post_extension}-line post-extension: pre-extended channel "
                                f"size S*C = {S * C} exceeds {limit}")
    if stride_x * C > limit:
        raise WeightOptionError(f"{post_extension}-line post-extension: conv_x_stride*C = "
                                f"{stride_x * C} exceeds {limit}")


def image_weight_offsets(K: int, C: int, R: int, S: int, group_k: int, cube_c: int,
                         post_extension: int = 1) -> np.ndarray:
    """Element offset of every weight [K, C, R, S] of an image-input surface.

    Pre-extension first (channel s*C + c of line r); with post-extension p > 1 the lines of each
    kernel are combined p at a time into one channel vector of p*S*C elements (row group
    ``r // p``, channel ``(r % p)*S*C + s*C + c``); the last row group keeps only the remaining
    R % p lines -- no zero lines are added. Row groups then map like direct convolution.
    """
    Cpre = S * C
    if post_extension == 1:
        off = dc_weight_offsets(K, Cpre, R, 1, group_k, cube_c)[..., 0]   # [K, Cpre, R]
        c = np.arange(C)[:, None]
        s = np.arange(S)[None, :]
        return off[:, s * C + c, :].transpose(0, 1, 3, 2)                  # [K, C, R, S]
    p = post_extension
    k, c, r, s, g, kk, gsize = _kernel_grid(K, C, R, S, group_k)
    rg, ri = r // p, r % p
    rows = np.minimum(p, R - rg * p)
    return g * group_k * Cpre * R + rg * p * Cpre * gsize + kk * rows * Cpre + ri * Cpre \
        + s * C + c


def pack_image_weights(w, precision: str, post_extension: int = 1, stride_x: int = 1,
                       group_k: int | None = None, cube_c: int = 64,
                       align: int = WEIGHT_ALIGN, channels: int | None = None) -> WeightSurface:
    """Map image-input weights: (channel padding), pre-extension, optional post-extension 2/4,
    then the direct-convolution grouping (Figs. 14 and 16)."""
    a = _as_kcrs(w)
    if channels is not None:
        a = pad_image_weight_channels(a, channels)
    K, C, R, S = a.shape
    check_weight_options("image", post_extension=post_extension)
    check_post_extension(post_extension, C, S, stride_x, cube_c)
    gk = default_group_k(precision) if group_k is None else group_k
    off = image_weight_offsets(K, C, R, S, gk, cube_c, post_extension)
    data = _scatter(values_to_raw(a, precision), off, precision, align)
    groups = tuple(int(n) * C * R * S for n in _group_sizes(K, gk))
    return WeightSurface(data, precision, weight_bytes(K, C, R, S, precision), groups, "image")


def unpack_image_weights(data, K: int, C: int, R: int, S: int, precision: str,
                         post_extension: int = 1, group_k: int | None = None,
                         cube_c: int = 64) -> np.ndarray:
    """Inverse of :func:`pack_image_weights` (C is the padded channel count)."""
    gk = default_group_k(precision) if group_k is None else group_k
    return _gather(data, image_weight_offsets(K, C, R, S, gk, cube_c, post_extension), precision)


# ---------------------------------------------------------------------------------------------
# deconvolution


def split_deconv_weights(w, stride_x: int, stride_y: int) -> np.ndarray:
    """Set split for deconvolution: stride_x*stride_y sets of [K, C, ceil(R/sy), ceil(S/sx)].

    Set ``y*stride_x + x`` holds weights (r*sy + y, s*sx + x) of the original kernel, zero where
    that falls outside it. Returns an array [sets, K, C, R', S'].
    """
    a = _as_kcrs(w)
    if stride_x < 1 or stride_y < 1:
        raise FormatError(f"deconvolution strides must be >= 1, got ({stride_x}, {stride_y})")
    K, C, R, S = a.shape
    Rs, Ss = ceil_div(R, stride_y), ceil_div(S, stride_x)
    padded = np.zeros((K, C, Rs * stride_y, Ss * stride_x), a.dtype)
    padded[:, :, :R, :S] = a
    # [K, C, Rs, sy, Ss, sx] -> [sy, sx, K, C, Rs, Ss]
    sets = padded.reshape(K, C, Rs, stride_y, Ss, stride_x).transpose(3, 5, 0, 1, 2, 4)
    return np.ascontiguousarray(sets.reshape(stride_y * stride_x, K, C, Rs, Ss))


def merge_deconv_weights(sets, R: int, S: int, stride_x: int, stride_y: int) -> np.ndarray:
    """Inverse of :func:`split_deconv_weights`."""
    a = np.asarray(sets)
    n, K, C, Rs, Ss = a.shape
    if n != stride_x * stride_y:
        raise FormatError(f"{n} sets for strides ({stride_x}, {stride_y})")
    full = a.reshape(stride_y, stride_x, K, C, Rs, Ss).transpose(2, 3, 4, 0, 5, 1)
    return np.ascontiguousarray(full.reshape(K, C, Rs * stride_y, Ss * stride_x)[:, :, :R, :S])


def pack_deconv_weights(w, precision: str, stride_x: int, stride_y: int,
                        group_k: int | None = None, cube_c: int = 64,
                        align: int = WEIGHT_ALIGN) -> list:
    """One weight surface per set (each set is its own convolution hardware layer), mapped like
    direct convolution but scanning the kernel positions in reverse raster order."""
    return [pack_dc_weights(s, precision, group_k, cube_c, align, reverse_spatial=True)
            for s in split_deconv_weights(w, stride_x, stride_y)]


def unpack_deconv_weights(surfaces, K: int, C: int, R: int, S: int, precision: str,
                          stride_x: int, stride_y: int, group_k: int | None = None,
                          cube_c: int = 64) -> np.ndarray:
    """Inverse of :func:`pack_deconv_weights`; ``surfaces`` are byte arrays or WeightSurfaces."""
    Rs, Ss = ceil_div(R, stride_y), ceil_div(S, stride_x)
    sets = [unpack_dc_weights(getattr(s, "data", s), K, C, Rs, Ss, precision, group_k, cube_c,
                              reverse_spatial=True) for s in surfaces]
    return merge_deconv_weights(np.stack(sets), R, S, stride_x, stride_y)
