"""Sparse weight compression and decompression.

Follows "Sparse Compression option" of in_memory_data_formats.md (Fig. 17), applied to a mapped
weight surface (any of the four weight types, after post-extension):

* one mask bit per weight element (1 = non-zero, 0 = zero); an int16/fp16 element is one bit
  for its two bytes. Zero means the raw code is 0, so an fp16 -0.0 (0x8000) is kept -- that is
  what makes decompression bit-exact;
* the bits of one kernel group form its WMB; WMBs follow each other in the WMB surface, stored
  little-endian (element i of the surface is bit i % 8 of byte i // 8), zero-filled to 128 bytes;
* the non-zero elements, in surface order, packed back to back form the compressed weight
  surface, zero-filled to 128 bytes;
* WGS: the byte count of each compressed group, one 32-bit little-endian word per group, in the
  WGS surface (zero-filled to 128 bytes, Table 35's data-size alignment).

The three surfaces start at 256-byte aligned addresses (Table 35); see
:func:`sim.formats.rules.check_alignment` with "weight", "wmb" and "wgs".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import FormatError, align_up, bytes_to_raw, element_bytes, raw_to_bytes
from .weight import WEIGHT_ALIGN, WeightSurface

__all__ = ["CompressedWeights", "SparseFormatError", "compress_weights", "decompress_weights",
           "wmb_bits", "compressed_size"]


class SparseFormatError(FormatError):
    """WGS, WMB and compressed surfaces that do not agree with each other."""


@dataclass(frozen=True)
class CompressedWeights:
    """The three memory surfaces of a compressed weight, each zero-filled to 128 bytes."""
    wgs: np.ndarray          #: uint8, 32-bit LE byte count per group
    wmb: np.ndarray          #: uint8, little-endian mask bits
    weights: np.ndarray      #: uint8, non-zero elements back to back
    group_bytes: tuple       #: compressed bytes of each group (the WGS values)
    wmb_bytes: int           #: bytes of mask bits before the zero fill (D_WMB_BYTES)
    weight_bytes: int        #: bytes of compressed weights before the zero fill


def _pad(a: np.ndarray, align: int) -> np.ndarray:
    out = np.zeros(align_up(a.size, align), np.uint8)
    out[:a.size] = a
    return out


def wmb_bits(data, precision: str, elements: int) -> np.ndarray:
    """The mask bits (bool, one per element) of the first ``elements`` elements of ``data``."""
    n = elements * element_bytes(precision)
    data = np.asarray(data, np.uint8).reshape(-1)
    if data.size < n:
        raise FormatError(f"weight surface has {data.size} bytes, {n} needed")
    return bytes_to_raw(data[:n], precision) != 0


def compress_weights(surface: WeightSurface | np.ndarray, group_elements=None,
                     precision: str | None = None, align: int = WEIGHT_ALIGN
                     ) -> CompressedWeights:
    """Compress a mapped weight surface group by group.

    Pass a :class:`~sim.formats.weight.WeightSurface`, or raw surface bytes together with the
    elements of each group (memory order) and the precision.
    """
    if isinstance(surface, WeightSurface):
        data, group_elements, precision = surface.data, surface.group_elements, surface.precision
    else:
        data = surface
        if group_elements is None or precision is None:
            raise FormatError("raw surface bytes need group_elements and precision")
    groups = np.asarray(group_elements, dtype=np.int64)
    if groups.ndim != 1 or groups.size == 0 or groups.min() < 1:
        raise FormatError(f"group_elements must be positive counts, got {group_elements}")
    total = int(groups.sum())
    bpe = element_bytes(precision)
    raw = bytes_to_raw(np.asarray(data, np.uint8).reshape(-1)[:total * bpe], precision)
    if raw.size != total:
        raise FormatError(f"weight surface holds {raw.size} elements, groups need {total}")
    mask = raw != 0
    wmb = np.packbits(mask, bitorder="little")
    kept = raw[mask]
    group_id = np.repeat(np.arange(groups.size), groups)
    counts = np.bincount(group_id, weights=mask, minlength=groups.size).astype(np.int64) * bpe
    wgs = counts.astype("<u4").view(np.uint8)
    comp = raw_to_bytes(kept, precision)
    return CompressedWeights(_pad(wgs, align), _pad(wmb, align), _pad(comp, align),
                             tuple(int(c) for c in counts), int(wmb.size), int(comp.size))


def compressed_size(cw: CompressedWeights) -> int:
    """Total bytes of the three surfaces (compare with the uncompressed surface to decide)."""
    return cw.wgs.size + cw.wmb.size + cw.weights.size


def decompress_weights(cw: CompressedWeights | tuple, group_elements, precision: str,
                       align: int = WEIGHT_ALIGN) -> np.ndarray:
    """Rebuild the uncompressed surface (zero-filled to ``align``) from WGS, WMB and weights.

    ``cw`` is a :class:`CompressedWeights` or a ``(wgs, wmb, weights)`` tuple of byte arrays.
    The WGS words are checked against the mask; a mismatch raises :class:`SparseFormatError`.
    """
    if isinstance(cw, CompressedWeights):
        wgs, wmb, comp = cw.wgs, cw.wmb, cw.weights
    else:
        wgs, wmb, comp = cw
    groups = np.asarray(group_elements, dtype=np.int64)
    total = int(groups.sum())
    bpe = element_bytes(precision)
    wmb = np.asarray(wmb, np.uint8).reshape(-1)
    if wmb.size * 8 < total:
        raise SparseFormatError(f"WMB has {wmb.size * 8} bits, {total} elements need a bit each")
    mask = np.unpackbits(wmb, bitorder="little")[:total].astype(bool)
    if np.unpackbits(wmb, bitorder="little")[total:].any():
        raise SparseFormatError("WMB has set bits past the last weight element")
    wgs = np.asarray(wgs, np.uint8).reshape(-1)
    if wgs.size < 4 * groups.size:
        raise SparseFormatError(f"WGS has {wgs.size // 4} words for {groups.size} groups")
    sizes = wgs[:4 * groups.size].view("<u4").astype(np.int64)
    group_id = np.repeat(np.arange(groups.size), groups)
    expect = np.bincount(group_id, weights=mask, minlength=groups.size).astype(np.int64) * bpe
    bad = np.nonzero(sizes != expect)[0]
    if bad.size:
        g = int(bad[0])
        raise SparseFormatError(f"WGS of group {g} is {sizes[g]} bytes but its WMB marks "
                                f"{expect[g]} bytes of non-zero weights")
    n = int(mask.sum())
    comp = np.asarray(comp, np.uint8).reshape(-1)
    if comp.size < n * bpe:
        raise SparseFormatError(f"compressed surface has {comp.size} bytes, WMB needs {n * bpe}")
    kept = bytes_to_raw(comp[:n * bpe], precision)
    raw = np.zeros(total, kept.dtype)
    raw[mask] = kept
    return _pad(raw_to_bytes(raw, precision), align)
