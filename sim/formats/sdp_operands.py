"""SDP operand data in memory: bias, PReLU, batch-normalization and element-wise data.

Follows "Bias Data Format", "PRELU Data Format", "Batch Normalization Data Format" and
"Element-Wise Data Format" of in_memory_data_formats.md (Figs. 18-27) and the BytesPerAtom rule
that closes them:

    BytesPerAtom = ElementPerAtom x ComponentsPerElement x BytesPerComponent

with ElementPerAtom 32 for an INT8 processing precision and 16 for INT16/FP16 (a 32-byte atom's
worth of processing-precision elements; 8 and 4 with 8-byte atoms), ComponentsPerElement 2 for
batch normalization and for element-wise data feeding both ALU and MUL (1 otherwise), and
BytesPerComponent the DATA_SIZE (1 or 2 bytes).

Layout: an operand cube W x H x C is cut into surfaces of ElementPerAtom channels, exactly like
feature data but with BytesPerAtom-byte atoms. Inside an atom channels follow each other and the
two components of a channel sit side by side (the batch-norm pairing rule):
``[c0.alu, c0.mul, c1.alu, c1.mul, ...]``. Per-channel data (1 x 1 x C) is therefore plain
contiguous channel data; per-layer data lives in registers, not memory.

Data arrays are indexed ``[components, C, H, W]`` (per element) or ``[components, C]`` (per
channel); a single-component operand may drop the leading axis.
"""

from __future__ import annotations

import numpy as np

from .common import (FormatError, align_up, ceil_div, check_precision, raw_to_values,
                     values_to_raw)
from .feature import FeatureStrides, read_atoms, write_atoms
from .rules import check_alignments

__all__ = [
    "OPERAND_USES", "elements_per_atom", "components_per_element", "bytes_per_atom",
    "operand_precision", "sdp_operand_precision", "pack_sdp_operand", "unpack_sdp_operand",
    "pack_per_channel", "unpack_per_channel", "operand_packed_strides",
]

#: ComponentsPerElement by use case (DATA_USE).
OPERAND_USES = {"bias": 1, "prelu": 1, "batch_norm": 2, "eltwise": 1, "eltwise_both": 2}
_ALIGN_FORMAT = {"bias": "bias", "prelu": "prelu", "batch_norm": "batch_norm",
                 "eltwise": "eltwise", "eltwise_both": "eltwise"}


def elements_per_atom(proc_precision: str, atom: int = 32) -> int:
    """ElementPerAtom: 32 for INT8, 16 for INT16/FP16 processing precision (32-byte atom)."""
    check_precision(proc_precision)
    return atom // (1 if proc_precision == "int8" else 2)


def components_per_element(use: str) -> int:
    """ComponentsPerElement of a use case (see :data:`OPERAND_USES`)."""
    if use not in OPERAND_USES:
        raise FormatError(f"operand use {use!r}: must be one of {sorted(OPERAND_USES)}")
    return OPERAND_USES[use]


def _check_data_size(proc_precision, data_size):
    if data_size not in (1, 2):
        raise FormatError(f"data_size {data_size}: must be 1 (ONE_BYTE) or 2 (TWO_BYTE)")
    if proc_precision == "fp16" and data_size != 2:
        raise FormatError("fp16 operands are 2 bytes per component (data_size=2)")


def bytes_per_atom(proc_precision: str, use: str, data_size: int, atom: int = 32) -> int:
    """BytesPerAtom = ElementPerAtom x ComponentsPerElement x BytesPerComponent."""
    _check_data_size(proc_precision, data_size)
    return elements_per_atom(proc_precision, atom) * components_per_element(use) * data_size


def operand_precision(proc_precision: str, data_size: int) -> str:
    """Encoding of one component: int8 (1 byte), int16 (2 bytes, integer pipe) or fp16."""
    _check_data_size(proc_precision, data_size)
    if proc_precision == "fp16":
        return "fp16"
    return "int8" if data_size == 1 else "int16"


def sdp_operand_precision(in_precision: str, out_precision: str) -> str:
    """Processing precision the operand data must be prepared for.

    The notes to the batch-norm and element-wise formats: with an int8 <-> int16 conversion the
    operand data is set to the processing precision, which is int8; otherwise it follows the
    input precision.
    """
    check_precision(in_precision)
    check_precision(out_precision)
    if {in_precision, out_precision} == {"int8", "int16"}:
        return "int8"
    return in_precision


def operand_packed_strides(C: int, H: int, W: int, proc_precision: str, use: str,
                           data_size: int, atom: int = 32) -> FeatureStrides:
    """Packed strides of an operand cube: line = W x BytesPerAtom rounded up to the atom
    (only a 16-byte BytesPerAtom needs the rounding), surface = H x line."""
    bpa = bytes_per_atom(proc_precision, use, data_size, atom)
    line = W * bpa if H * W == 1 else align_up(W * bpa, atom)
    return FeatureStrides(line, H * line)


def _as4(data, ncomp):
    a = np.asarray(data)
    if a.ndim == 3 and ncomp == 1:
        a = a[None]
    if a.ndim != 4 or a.shape[0] != ncomp:
        raise FormatError(f"operand data must be [{ncomp}, C, H, W]"
                          f"{' or [C, H, W]' if ncomp == 1 else ''}, got shape {a.shape}")
    return a



def _operand_geometry(C, H, W, proc_precision, use, data_size, atom, line_stride,
                      surface_stride):
    """(operand precision, elements per atom, bytes per atom, line stride, surface stride);
    strides default to the packed ones."""
    prec = operand_precision(proc_precision, data_size)
    epa = elements_per_atom(proc_precision, atom)
    bpa = bytes_per_atom(proc_precision, use, data_size, atom)
    p = operand_packed_strides(C, H, W, proc_precision, use, data_size, atom)
    ls = p.line_stride if line_stride is None else line_stride
    ss = H * ls if surface_stride is None else surface_stride
    return prec, epa, bpa, ls, ss

def pack_sdp_operand(data, proc_precision: str, use: str, data_size: int, atom: int = 32,
                     line_stride: int | None = None, surface_stride: int | None = None):
    """Lay per-element operand data [components, C, H, W] out in memory.

    Returns ``(mem, strides)``; strides default to packed (line = W x BytesPerAtom). Padding
    channels of the last surface are zero.
    """
    ncomp = components_per_element(use)
    a = _as4(data, ncomp)
    _, C, H, W = a.shape
    prec, epa, bpa, ls, ss = _operand_geometry(C, H, W, proc_precision, use, data_size, atom,
                                               line_stride, surface_stride)
    fmt = _ALIGN_FORMAT[use]
    if H * W > 1:  # a 1 x 1 x C operand has no strides to program
        check_alignments(fmt, atom=atom, line_stride=ls if fmt in ("bias", "eltwise") else None,
                         surface_stride=ss if fmt == "bias" else None)
    S = ceil_div(C, epa)
    if H > 1 and ls < W * bpa:
        raise FormatError(f"line_stride {ls} < W x BytesPerAtom = {W * bpa}")
    if S > 1 and ss < (H - 1) * ls + W * bpa:
        raise FormatError(f"surface_stride {ss} overlaps the previous surface")
    raw = values_to_raw(a, prec)                                  # [k, C, H, W]
    padded = np.zeros((ncomp, S * epa, H, W), raw.dtype)
    padded[:, :C] = raw
    # [k, S, epa, H, W] -> [S, H, W, epa, k]
    atoms = padded.reshape(ncomp, S, epa, H, W).transpose(1, 3, 4, 2, 0)
    atoms = np.ascontiguousarray(atoms)
    if atoms.dtype == np.uint16:
        atoms = atoms.astype("<u2")
    atoms = atoms.view(np.uint8).reshape(S, H, W, bpa)
    strides = FeatureStrides(ls, ss)
    mem = np.zeros((S - 1) * ss + (H - 1) * ls + W * bpa, np.uint8)
    starts = (np.arange(S, dtype=np.int64)[:, None, None] * ss
              + np.arange(H, dtype=np.int64)[None, :, None] * ls
              + np.arange(W, dtype=np.int64)[None, None, :] * bpa)
    write_atoms(mem, starts, atoms)
    return mem, strides


def unpack_sdp_operand(mem, base: int, C: int, H: int, W: int, proc_precision: str, use: str,
                       data_size: int, atom: int = 32, line_stride: int | None = None,
                       surface_stride: int | None = None) -> np.ndarray:
    """Inverse of :func:`pack_sdp_operand`: returns [components, C, H, W] values."""
    ncomp = components_per_element(use)
    prec, epa, bpa, ls, ss = _operand_geometry(C, H, W, proc_precision, use, data_size, atom,
                                               line_stride, surface_stride)
    check_alignments(_ALIGN_FORMAT[use], atom=atom, start_address=base)
    S = ceil_div(C, epa)
    starts = (base + np.arange(S, dtype=np.int64)[:, None, None] * ss
              + np.arange(H, dtype=np.int64)[None, :, None] * ls
              + np.arange(W, dtype=np.int64)[None, None, :] * bpa)
    atoms = read_atoms(np.asarray(mem, np.uint8), starts, bpa)       # [S, H, W, bpa]
    dt = "<u2" if data_size == 2 else np.uint8
    raw = np.ascontiguousarray(atoms).view(dt).reshape(S, H, W, epa, ncomp)
    raw = raw.transpose(4, 0, 3, 1, 2).reshape(ncomp, S * epa, H, W)[:, :C]
    return raw_to_values(raw, prec)


def pack_per_channel(data, proc_precision: str, use: str, data_size: int,
                     atom: int = 32) -> np.ndarray:
    """Per-channel operand data [components, C] (or [C]) as contiguous bytes (1 x 1 x C).

    The last atom is completed with zero channels, so the result is a whole number of
    BytesPerAtom.
    """
    ncomp = components_per_element(use)
    a = np.asarray(data)
    if a.ndim == 1 and ncomp == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[0] != ncomp:
        raise FormatError(f"per-channel data must be [{ncomp}, C], got shape {a.shape}")
    return pack_sdp_operand(a[:, :, None, None], proc_precision, use, data_size, atom)[0]


def unpack_per_channel(mem, base: int, C: int, proc_precision: str, use: str, data_size: int,
                       atom: int = 32) -> np.ndarray:
    """Inverse of :func:`pack_per_channel`: returns [components, C] values."""
    return unpack_sdp_operand(mem, base, C, 1, 1, proc_precision, use, data_size,
                              atom)[:, :, 0, 0]
