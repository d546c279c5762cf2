"""The Rubik datapath: whole-layer byte moves with numpy (see :mod:`sim.rubik`).

The layout functions work on arrays of bytes, independent of memory:

- :func:`contract_atoms`: ``[S, H, sy, sx, W, A]`` input atoms (surface, input line,
  deconvolution y / x step, input column) -> ``[S, H * sy, W * sx * A]`` output lines.
- :func:`split_atoms`: ``[S, H, W, A]`` feature atoms -> ``[C, H, W * b]`` planar lines.
- :func:`merge_planes`: ``[C, H, W * b]`` planar lines -> ``[S, H, W * A]`` feature lines
  (channels past C zero).

:func:`run_program` gathers the input from memory, applies the layout and scatters the
output; :func:`run_rubik` decodes the registers first and returns the hardware-written
fields.
"""

from __future__ import annotations

import numpy as np

from .program import CONTRACT, MERGE, SPLIT, RubikProgram, decode

__all__ = ["contract_atoms", "split_atoms", "merge_planes", "run_program", "run_rubik",
           "status_fields"]


def contract_atoms(atoms: np.ndarray) -> np.ndarray:
    """Deconvolution contraction: atom (s, h, dy, dx, w) becomes output pixel
    (x = w * sx + dx, y = h * sy + dy) of surface s."""
    S, H, sy, sx, W, A = atoms.shape
    return atoms.transpose(0, 1, 2, 4, 3, 5).reshape(S, H * sy, W * sx * A)


def split_atoms(atoms: np.ndarray, C: int, element_bytes: int) -> np.ndarray:
    """Feature atoms -> planes: element k of atom (s, h, w) is byte run
    ``[w * b, (w + 1) * b)`` of line h of plane ``s * (A / b) + k``."""
    S, H, W, A = atoms.shape
    b = element_bytes
    e = atoms.reshape(S, H, W, A // b, b).transpose(0, 3, 1, 2, 4)     # [S, k, H, W, b]
    return e.reshape(S * (A // b), H, W * b)[:C]


def merge_planes(planes: np.ndarray, atom: int, element_bytes: int) -> np.ndarray:
    """Planes -> feature lines (the inverse of :func:`split_atoms`; the channel padding of
    the last surface is zero)."""
    C, H, Wb = planes.shape
    b = element_bytes
    per = atom // b
    S = -(-C // per)
    e = np.zeros((S * per, H, Wb // b, b), np.uint8)
    e[:C] = planes.reshape(C, H, Wb // b, b)
    return e.reshape(S, per, H, Wb // b, b).transpose(0, 2, 3, 1, 4).reshape(S, H, -1)


def _ar(n):
    return np.arange(n, dtype=np.int64)


def _write_lines(mem, starts: np.ndarray, lines: np.ndarray) -> None:
    """Write ``lines[..., L]`` at byte addresses ``starts[...]`` (same leading shape)."""
    starts = starts.reshape(-1)
    lines = lines.reshape(starts.size, -1)
    L = lines.shape[1]
    if starts.size == 1 or np.all(np.diff(starts) == L):
        mem.write(int(starts[0]), lines.reshape(-1))
        return
    mem.scatter(starts[:, None] + _ar(L)[None, :], lines)


def _read_lines(mem, starts: np.ndarray, L: int) -> np.ndarray:
    """``starts.shape + (L,)`` bytes read at ``starts``."""
    flat = starts.reshape(-1)
    if flat.size == 1 or np.all(np.diff(flat) == L):
        data = mem.read(int(flat[0]), flat.size * L)
    else:
        data = mem.gather(flat[:, None] + _ar(L)[None, :])
    return data.reshape(starts.shape + (L,))


def run_program(p: RubikProgram, src_mem, dst_mem) -> None:
    """Perform the (checked) program ``p``: read ``src_mem``, write ``dst_mem``."""
    A, W, H, S = p.atom, p.width, p.height, p.surfaces
    b = p.element_bytes
    if p.mode == CONTRACT:
        sx, sy = p.sx, p.sy
        starts = (p.src + _ar(S)[:, None, None, None] * p.src_surf
                  + _ar(H)[None, :, None, None] * p.src_line
                  + (_ar(sy)[:, None] * sx + _ar(sx)[None, :])[None, None] * p.contract0)
        atoms = _read_lines(src_mem, starts, W * A).reshape(S, H, sy, sx, W, A)
        out = contract_atoms(atoms)
        dst = (p.dst + _ar(S)[:, None] * p.dst_surf + _ar(H * sy)[None, :] * p.dst_line)
        _write_lines(dst_mem, dst, out)
    elif p.mode == SPLIT:
        C = p.channels
        starts = p.src + _ar(S)[:, None] * p.src_surf + _ar(H)[None, :] * p.src_line
        atoms = _read_lines(src_mem, starts, W * A).reshape(S, H, W, A)
        planes = split_atoms(atoms, C, b)
        out = np.zeros((C, H, p.plane_line_bytes), np.uint8)
        out[:, :, :W * b] = planes
        dst = p.dst + _ar(C)[:, None] * p.dst_planar + _ar(H)[None, :] * p.dst_line
        _write_lines(dst_mem, dst, out)
    elif p.mode == MERGE:
        C = p.channels
        starts = p.src + _ar(C)[:, None] * p.src_planar + _ar(H)[None, :] * p.src_line
        planes = _read_lines(src_mem, starts, W * b)
        out = merge_planes(planes, A, b)
        dst = p.dst + _ar(S)[:, None] * p.dst_surf + _ar(H)[None, :] * p.dst_line
        _write_lines(dst_mem, dst, out)
    else:                                                  # decode() rejects it
        raise ValueError(f"RBK.D_MISC_CFG.RUBIK_MODE={p.mode}: not a defined mode")


def status_fields() -> dict:
    """The hardware-written RBK fields of a finished layer. The golden model's memories never
    stall, so the read and write stall counters (D_PERF_ENABLE.PERF_EN or not) are 0."""
    return {"RBK": {"D_PERF_READ_STALL": {"RD_STALL_CNT": 0},
                    "D_PERF_WRITE_STALL": {"WR_STALL_CNT": 0}}}


def run_rubik(cfg, view, dbb, sram=None) -> dict:
    """Decode and run the RBK group ``view``; returns its hardware-written fields."""
    p = decode(cfg, view)
    mems = {1: dbb, 0: sram}
    run_program(p, mems[p.src_ram], mems[p.dst_ram])
    return status_fields()
