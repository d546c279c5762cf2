"""The arithmetic of NVDLA v1's Winograd convolution F(2x2, 3x3), integer-exact.

* Channel extension (CDMA): the padded input [H_p, W_p, C] of a stride (sx, sy) layer becomes
  the cube [H_p / sy, W_p / sx, sy x sx x C] whose channel ``(a x sx + b) x C + c`` at
  (Y, X) is the padded input at (Y x sy + a, X x sx + b), channel ``c`` (NVDLA's CDMA writes
  the CBUF this way; the weights are extended alike, :func:`sim.formats.winograd_extend_stride`).
* Tiles (CSC): output tile (ty, tx) -- the outputs (2ty .. 2ty+1, 2tx .. 2tx+1) -- reads the
  4 x 4 input tile at (2ty, 2tx) of the extended cube.
* PRA (CSC's pre-addition, ``NV_NVDLA_CSC_pra_cell``): ``B^T d B`` per channel with
  ``B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]``, exact in 18 bits,
  then shifted right by ``PRA_TRUNCATE`` rounding half away from zero and saturated to the
  processing precision. fp16: the same additions in NVDLA's fp17 (:mod:`sim.nvfloat`; a
  subtraction adds the second operand with its sign flipped), rows first, in the cell's
  operand order, converted back to fp16 (:func:`pra_fp16`).
* POA (CMAC's post-addition in Winograd mode): the MAC cell multiplies the 16 positions of a
  tile by the stored (transformed) 4 x 4 weights, sums 4 channels per position and applies
  ``A^T M A`` with ``A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]``: four outputs per cell.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from sim.formats.common import round_shift_right, saturate
from sim.nvfloat import fp16_to_fp17, fp17_add, fp17_to_fp16

__all__ = ["WINO_BT", "WINO_AT", "extend_channels", "input_tiles", "pra_int", "pra_fp16", "poa",
           "wino_cell_int",
           "place_tiles"]

#: the data transform B^T (rows: the PRA cell's first pass over the tile's rows)
WINO_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.int64)
#: the output transform A^T
WINO_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.int64)


def extend_channels(padded: np.ndarray, sx: int, sy: int) -> np.ndarray:
    """[..., H_p, W_p, C] -> [..., H_p / sy, W_p / sx, sy x sx x C] (see the module
    docstring); H_p and W_p are multiples of the strides."""
    *lead, hp, wp, c = padded.shape
    a = padded.reshape(*lead, hp // sy, sy, wp // sx, sx, c)
    n = len(lead)
    order = list(range(n)) + [n, n + 2, n + 1, n + 3, n + 4]
    return a.transpose(order).reshape(*lead, hp // sy, wp // sx, sy * sx * c)


def input_tiles(ext: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """The 4 x 4 input tiles of the outputs: ext [H, W, C] -> [Ho/2, Wo/2, C, 4, 4]."""
    win = sliding_window_view(ext, (4, 4), axis=(0, 1))          # [H-3, W-3, C, 4, 4]
    return win[0:out_h - 1:2, 0:out_w - 1:2]


def pra_int(tiles: np.ndarray, truncate: int, bits: int) -> np.ndarray:
    """Integer PRA of tiles [..., 4, 4]: saturate(round(B^T d B / 2^truncate)) to ``bits``
    (``truncate`` is the shift the cell applies: NVDLA's CSC clamps PRA_TRUNCATE=3 to 2)."""
    t = np.matmul(np.matmul(WINO_BT, np.asarray(tiles, np.int64)), WINO_BT.T)
    return saturate(round_shift_right(t, truncate), bits)


def _fp17_sub(a, b):
    return fp17_add(a, np.asarray(b, np.int64) ^ (1 << 16))


def _bt_pass(rows):
    """One pass of B^T over the first of the two last axes' 4 entries (a list of 4 fp17
    arrays): (r0 - r2, r1 + r2, r2 - r1, r1 - r3), as NVDLA's PRA cell orders its
    operands."""
    r0, r1, r2, r3 = rows
    return [_fp17_sub(r0, r2), fp17_add(r1, r2), _fp17_sub(r2, r1), _fp17_sub(r1, r3)]


def pra_fp16(tiles: np.ndarray) -> np.ndarray:
    """fp16 PRA of tiles [..., 4, 4] of fp16 codes: B^T d B in fp17 (rows, then columns),
    back to fp16 codes (``PRA_TRUNCATE`` plays no part)."""
    d = fp16_to_fp17(np.asarray(tiles, np.int64) & 0xFFFF)
    m = _bt_pass([d[..., i, :] for i in range(4)])                 # rows: [..., x]
    m = np.stack(m, axis=-2)                                       # [..., y, x]
    t = _bt_pass([m[..., :, j] for j in range(4)])                 # columns
    return fp17_to_fp16(np.stack(t, axis=-1))


def poa(m: np.ndarray) -> np.ndarray:
    """CMAC's output transform of [..., 4, 4] sums: A^T M A [..., 2, 2] (exact)."""
    return np.matmul(np.matmul(WINO_AT, np.asarray(m, np.int64)), WINO_AT.T)


def wino_cell_int(weights: np.ndarray, data: np.ndarray) -> np.ndarray:
    """One integer MAC cell operation in Winograd mode: weights and data [..., 64] (element
    ``(y x 4 + x) x 4 + c`` of a 4 x 4 tile of 4 channels) -> the 2 x 2 outputs [..., 4]
    (row-major), exact (NVDLA's cell keeps 38 bits for int16 and 22 for int8, enough for
    every operand). CACC's sum of these over the channel blocks is :func:`poa` of the whole
    channel sum (the layer model computes it that way)."""
    p = np.asarray(weights, np.int64) * np.asarray(data, np.int64)
    m = p.reshape(*p.shape[:-1], 4, 4, 4).sum(-1)
    return poa(m).reshape(*p.shape[:-1], 4)


def place_tiles(y: np.ndarray) -> np.ndarray:
    """Output tiles [..., Ty, Tx, 2, 2] -> the output plane [..., 2Ty, 2Tx]."""
    *lead, ty, tx, _, _ = y.shape
    n = len(lead)
    order = list(range(n)) + [n, n + 2, n + 1, n + 3]
    return y.transpose(order).reshape(*lead, 2 * ty, 2 * tx)
