"""CSC golden model: the convolution sequencer's operands.

For output position (oy, ox) and kernel position (ky, kx) the sequencer feeds the MAC array
the input at::

    iy = oy*stride_y + ky*dilation_y - pad_top,   ix = ox*stride_x + kx*dilation_x - pad_left

Positions outside the input cube read ``D_ZERO_PADDING_VALUE`` (its low byte, sign-extended,
for int8; all 16 bits for int16), and channels past ``DATAIN_CHANNEL_EXT`` read 0 in both
cases (spec "Convolution Sequence Controller"; the order of stripes, kernel positions and
channel groups does not change an exact integer sum, so it is not modelled here).
"""

from __future__ import annotations

import numpy as np

from .program import INT8, ConvProgram

__all__ = ["pad_value", "padded_input", "windows"]


def pad_value(p: ConvProgram) -> int:
    """The padding element in the processing precision."""
    if p.precision == INT8:
        v = p.pad_value & 0xFF
        return v - 0x100 if v & 0x80 else v
    v = p.pad_value & 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def padded_input(p: ConvProgram, cube: np.ndarray) -> np.ndarray:
    """[B, Hp, Wp, C] with the padding around the input cube, exactly as far as the outputs
    reach (C = DATAIN_CHANNEL_EXT; extra channels of the CBUF atoms are dropped, which equals
    the sequencer's zeroing)."""
    B = cube.shape[0]
    C = p.in_channels
    hp = (p.out_height - 1) * p.stride_y + (p.kh - 1) * p.dil_y + 1
    wp = (p.out_width - 1) * p.stride_x + (p.kw - 1) * p.dil_x + 1
    out = np.full((B, hp, wp, C), pad_value(p), dtype=np.int64)
    # input rows/cols that fall inside [-pad, extent - pad)
    y0, x0 = p.pad_top, p.pad_left
    h = max(0, min(p.in_height, hp - y0))
    w = max(0, min(p.in_width, wp - x0))
    if h and w:
        out[:, y0:y0 + h, x0:x0 + w, :] = cube[:, :h, :w, :C]
    return out


def windows(p: ConvProgram, padded: np.ndarray):
    """Yield ``(ky, kx, [B, Ho, Wo, C])``: the data operands of each kernel position."""
    ho, wo = p.out_height, p.out_width
    for ky in range(p.kh):
        y = ky * p.dil_y
        rows = padded[:, y:y + (ho - 1) * p.stride_y + 1:p.stride_y]
        for kx in range(p.kw):
            x = kx * p.dil_x
            yield ky, kx, rows[:, :, x:x + (wo - 1) * p.stride_x + 1:p.stride_x, :]
