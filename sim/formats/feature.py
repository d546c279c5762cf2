"""Feature data format: the pitch-linear C' -> W -> H -> C layout of activation cubes.

Follows "Feature Data Format" of in_memory_data_formats.md (Figs. 10 and 11):

* the channels of a W x H x C cube are grouped into *surfaces* of ``atom / element_bytes``
  channels; the last surface is padded with zero channels (fp16 +0.0, never NaN);
* a 1 x 1 x atom piece of one surface is an *atom cube*; within a line the atom cubes of
  consecutive x are adjacent, lines are ``line_stride`` apart, surfaces ``surface_stride`` apart
  and, in multi-batch mode, whole cubes ``batch_stride`` apart;
* strides and the start address are multiples of the memory atom (Table 35; 32 bytes in the
  spec, the build's ``memory_atom`` in general -- 8 bytes for nv_small);
* "packed" means line_stride = W x atom (line packed) and surface_stride = H x line_stride
  (surface packed); a surface-packed 1 x 1 x C cube is byte-identical to the
  (C / channels-per-atom) x 1 x channels-per-atom cube (:func:`surface_packed_equivalent`).

Byte address of element (c, h, w) of batch n::

    base + n*batch_stride + (c // cpa)*surface_stride + h*line_stride + w*atom + (c % cpa)*bpe

Cubes are numpy arrays indexed ``[C, H, W]`` (batched: ``[N, C, H, W]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import (FormatError, ceil_div, element_bytes, raw_to_values, raw_dtype,
                     values_to_raw)
from .rules import check_alignments

__all__ = [
    "ATOM_SIZES", "FeatureStrides", "channels_per_atom", "surface_count", "packed_strides",
    "check_feature_strides", "feature_footprint", "feature_byte_offsets", "pack_feature",
    "unpack_feature", "pack_feature_batch", "unpack_feature_batch", "is_line_packed",
    "is_surface_packed", "surface_packed_equivalent", "to_surface_packed_cube",
    "from_surface_packed_cube", "write_atoms", "read_atoms",
]

#: Memory atom sizes a build may have (arch/config.py ``memory_atom``).
ATOM_SIZES = (8, 32)


@dataclass(frozen=True)
class FeatureStrides:
    """Byte strides of a feature cube in memory (all multiples of the memory atom)."""
    line_stride: int
    surface_stride: int
    batch_stride: int = 0


def _check_atom(atom: int) -> int:
    if atom not in ATOM_SIZES:
        raise FormatError(f"memory atom {atom}: must be one of {ATOM_SIZES} bytes")
    return atom


def channels_per_atom(atom: int, precision: str) -> int:
    """Channels one atom cube holds: 32/16 for a 32-byte atom, 8/4 for an 8-byte atom."""
    return _check_atom(atom) // element_bytes(precision)


def surface_count(C: int, atom: int, precision: str) -> int:
    """Number of channel surfaces of a C-channel cube, ceil(C / channels per atom)."""
    return ceil_div(C, channels_per_atom(atom, precision))


def packed_strides(C: int, H: int, W: int, atom: int, precision: str,
                   batches: int = 1) -> FeatureStrides:
    """Strides of the fully packed layout (Fig. 10): lines and surfaces back to back."""
    _check_atom(atom)
    line = W * atom
    surf = H * line
    batch = surface_count(C, atom, precision) * surf if batches > 1 else 0
    return FeatureStrides(line, surf, batch)


def feature_footprint(C: int, H: int, W: int, atom: int, precision: str,
                      strides: FeatureStrides, batches: int = 1) -> int:
    """Bytes from the start address to the end of the last atom cube of the last batch."""
    S = surface_count(C, atom, precision)
    one = (S - 1) * strides.surface_stride + (H - 1) * strides.line_stride + W * atom
    return (batches - 1) * strides.batch_stride + one


def check_feature_strides(C: int, H: int, W: int, atom: int, precision: str,
                          strides: FeatureStrides, batches: int = 1, base: int = 0) -> None:
    """Check Table 35 alignment and that no two atom cubes of the cube(s) overlap.

    Lines must hold W atom cubes (line_stride >= W*atom); consecutive surfaces must not overlap
    (surface_stride >= (H-1)*line_stride + W*atom); batches likewise (batch_stride >= one cube's
    footprint). Raises :class:`FormatError` (or its :class:`AlignmentError` subclass).
    """
    _check_atom(atom)
    if min(C, H, W) < 1 or batches < 1:
        raise FormatError(f"cube dimensions must be positive: C={C} H={H} W={W} N={batches}")
    check_alignments("feature", atom=atom, start_address=base, line_stride=strides.line_stride,
                     surface_stride=strides.surface_stride,
                     planar_stride=strides.batch_stride if batches > 1 else None)
    if H > 1 and strides.line_stride < W * atom:
        raise FormatError(f"line_stride {strides.line_stride} < W*atom = {W * atom}: "
                          "lines overlap")
    one_surface = (H - 1) * strides.line_stride + W * atom
    if surface_count(C, atom, precision) > 1 and strides.surface_stride < one_surface:
        raise FormatError(f"surface_stride {strides.surface_stride} < {one_surface} bytes of "
                          "one surface: surfaces overlap")
    if batches > 1:
        one_cube = feature_footprint(C, H, W, atom, precision, strides)
        if strides.batch_stride < one_cube:
            raise FormatError(f"batch_stride {strides.batch_stride} < {one_cube} bytes of one "
                              "cube: batches overlap")


def _resolve_strides(C, H, W, atom, precision, line_stride, surface_stride, batch_stride=None,
                     batches=1) -> FeatureStrides:
    p = packed_strides(C, H, W, atom, precision)
    ls = p.line_stride if line_stride is None else int(line_stride)
    ss = H * ls if surface_stride is None else int(surface_stride)
    if batch_stride is None:
        bs = surface_count(C, atom, precision) * ss if batches > 1 else 0
    else:
        bs = int(batch_stride)
    return FeatureStrides(ls, ss, bs)


def feature_byte_offsets(C: int, H: int, W: int, atom: int, precision: str,
                         strides: FeatureStrides) -> np.ndarray:
    """Byte offset (from the start address) of every element, as an int64 array [C, H, W]."""
    cpa = channels_per_atom(atom, precision)
    bpe = element_bytes(precision)
    c = np.arange(C, dtype=np.int64)[:, None, None]
    h = np.arange(H, dtype=np.int64)[None, :, None]
    w = np.arange(W, dtype=np.int64)[None, None, :]
    return ((c // cpa) * strides.surface_stride + h * strides.line_stride + w * atom
            + (c % cpa) * bpe)


def _atom_starts(S, H, W, atom, strides: FeatureStrides) -> np.ndarray:
    s = np.arange(S, dtype=np.int64)[:, None, None]
    h = np.arange(H, dtype=np.int64)[None, :, None]
    w = np.arange(W, dtype=np.int64)[None, None, :]
    return s * strides.surface_stride + h * strides.line_stride + w * atom


def write_atoms(mem: np.ndarray, starts: np.ndarray, atoms: np.ndarray) -> None:
    """Scatter ``atoms[..., atom]`` bytes into ``mem`` at byte addresses ``starts[...]``."""
    atom = atoms.shape[-1]
    idx = starts.reshape(-1, 1) + np.arange(atom, dtype=np.int64)
    mem[idx] = atoms.reshape(-1, atom)


def read_atoms(mem: np.ndarray, starts: np.ndarray, atom: int) -> np.ndarray:
    """Gather ``atom`` bytes at each of ``starts``; result shape ``starts.shape + (atom,)``."""
    idx = starts.reshape(-1, 1) + np.arange(atom, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= mem.size):
        raise FormatError(f"layout reaches bytes [{idx.min()}, {idx.max()}] outside the "
                          f"{mem.size}-byte memory")
    return np.asarray(mem)[idx].reshape(starts.shape + (atom,))


def _cube_to_atoms(cube, atom: int, precision: str) -> np.ndarray:
    """[C, H, W] values -> [S, H, W, atom] bytes with zero channel padding."""
    raw = values_to_raw(cube, precision)
    if raw.ndim != 3:
        raise FormatError(f"a feature cube is indexed [C, H, W]; got shape {raw.shape}")
    C, H, W = raw.shape
    cpa = channels_per_atom(atom, precision)
    S = ceil_div(C, cpa)
    padded = np.zeros((S * cpa, H, W), raw.dtype)
    padded[:C] = raw
    per_atom = padded.reshape(S, cpa, H, W).transpose(0, 2, 3, 1)       # [S, H, W, cpa]
    per_atom = np.ascontiguousarray(per_atom)
    if per_atom.dtype == np.uint16:
        per_atom = per_atom.astype("<u2")
    return per_atom.view(np.uint8).reshape(S, H, W, atom)


def _atoms_to_cube(atoms: np.ndarray, C: int, precision: str) -> np.ndarray:
    S, H, W, atom = atoms.shape
    dt = raw_dtype(precision)
    raw = np.ascontiguousarray(atoms).view("<u2" if dt == np.uint16 else np.uint8)
    raw = raw.reshape(S, H, W, -1).transpose(0, 3, 1, 2).reshape(-1, H, W)[:C]
    return raw_to_values(raw, precision)


def pack_feature(cube, atom: int, precision: str, line_stride: int | None = None,
                 surface_stride: int | None = None):
    """Lay a [C, H, W] cube out in feature data format.

    Strides default to the packed layout (Fig. 10); larger ones give the unpacked layout
    (Fig. 11) with zero bytes in the gaps. Returns ``(mem, strides)`` where ``mem`` is a
    ``uint8`` array starting at the cube's (atom-aligned) start address and ending with its
    last atom cube.
    """
    atoms = _cube_to_atoms(cube, atom, precision)
    S, H, W, _ = atoms.shape
    C = np.shape(cube)[0]
    strides = _resolve_strides(C, H, W, atom, precision, line_stride, surface_stride)
    check_feature_strides(C, H, W, atom, precision, strides)
    size = feature_footprint(C, H, W, atom, precision, strides)
    if strides == packed_strides(C, H, W, atom, precision):
        return atoms.reshape(-1).copy(), strides
    mem = np.zeros(size, np.uint8)
    write_atoms(mem, _atom_starts(S, H, W, atom, strides), atoms)
    return mem, strides


def unpack_feature(mem, base: int, C: int, H: int, W: int, atom: int, precision: str,
                   line_stride: int | None = None, surface_stride: int | None = None):
    """Read a [C, H, W] cube in feature data format starting at byte ``base`` of ``mem``.

    Strides default to packed. Padding channels are dropped. Returns int64 values for
    int8/int16 and ``float16`` for fp16.
    """
    strides = _resolve_strides(C, H, W, atom, precision, line_stride, surface_stride)
    check_feature_strides(C, H, W, atom, precision, strides, base=base)
    S = surface_count(C, atom, precision)
    atoms = read_atoms(np.asarray(mem, np.uint8), base + _atom_starts(S, H, W, atom, strides),
                       atom)
    return _atoms_to_cube(atoms, C, precision)


def pack_feature_batch(cubes, atom: int, precision: str, line_stride: int | None = None,
                       surface_stride: int | None = None, batch_stride: int | None = None):
    """Multi-batch layout: cube n of ``cubes[N, C, H, W]`` starts at ``n * batch_stride``.

    ``batch_stride`` defaults to surfaces x surface_stride (cubes back to back). Returns
    ``(mem, strides)``.
    """
    cubes = np.asarray(cubes)
    if cubes.ndim != 4:
        raise FormatError(f"batched cubes are indexed [N, C, H, W]; got shape {cubes.shape}")
    N, C, H, W = cubes.shape
    strides = _resolve_strides(C, H, W, atom, precision, line_stride, surface_stride,
                               batch_stride, batches=N)
    check_feature_strides(C, H, W, atom, precision, strides, batches=N)
    S = surface_count(C, atom, precision)
    mem = np.zeros(feature_footprint(C, H, W, atom, precision, strides, N), np.uint8)
    starts = (np.arange(N, dtype=np.int64)[:, None, None, None] * strides.batch_stride
              + _atom_starts(S, H, W, atom, strides)[None])
    atoms = np.stack([_cube_to_atoms(c, atom, precision) for c in cubes]) if N else None
    write_atoms(mem, starts, atoms)
    return mem, strides


def unpack_feature_batch(mem, base: int, N: int, C: int, H: int, W: int, atom: int,
                         precision: str, line_stride: int | None = None,
                         surface_stride: int | None = None, batch_stride: int | None = None):
    """Inverse of :func:`pack_feature_batch`: returns an [N, C, H, W] array."""
    strides = _resolve_strides(C, H, W, atom, precision, line_stride, surface_stride,
                               batch_stride, batches=N)
    check_feature_strides(C, H, W, atom, precision, strides, batches=N, base=base)
    S = surface_count(C, atom, precision)
    starts = (base + np.arange(N, dtype=np.int64)[:, None, None, None] * strides.batch_stride
              + _atom_starts(S, H, W, atom, strides)[None])
    atoms = read_atoms(np.asarray(mem, np.uint8), starts, atom)
    return np.stack([_atoms_to_cube(a, C, precision) for a in atoms])


def is_line_packed(W: int, atom: int, line_stride: int) -> bool:
    """LINE_PACKED: line_stride equals the bytes of one line (W x atom)."""
    return line_stride == W * atom


def is_surface_packed(H: int, line_stride: int, surface_stride: int) -> bool:
    """SURF_PACKED: surface_stride equals H x line_stride."""
    return surface_stride == H * line_stride


def surface_packed_equivalent(C: int, atom: int, precision: str) -> tuple[int, int, int]:
    """(C', H', W') of the cube a surface-packed 1 x 1 x C cube can be treated as:
    W' = ceil(C / channels per atom), H' = 1, C' = channels per atom."""
    cpa = channels_per_atom(atom, precision)
    return cpa, 1, ceil_div(C, cpa)


def to_surface_packed_cube(cube, atom: int, precision: str) -> np.ndarray:
    """Reshape a [C, 1, 1] cube into its surface-packed equivalent [cpa, 1, W'] (zero padded).

    Channel ``c`` of the input becomes element (c % cpa, 0, c // cpa).
    """
    a = np.asarray(cube)
    if a.ndim != 3 or a.shape[1:] != (1, 1):
        raise FormatError(f"the surface-packed reshape applies to 1x1xC cubes, got {a.shape}")
    cpa, _, Wp = surface_packed_equivalent(a.shape[0], atom, precision)
    out = np.zeros(cpa * Wp, a.dtype)
    out[:a.shape[0]] = a[:, 0, 0]
    return out.reshape(Wp, cpa).T.reshape(cpa, 1, Wp).copy()


def from_surface_packed_cube(cube, C: int) -> np.ndarray:
    """Inverse of :func:`to_surface_packed_cube`: back to a [C, 1, 1] cube."""
    a = np.asarray(cube)
    return a[:, 0, :].T.reshape(-1)[:C].reshape(C, 1, 1).copy()
