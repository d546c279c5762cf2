"""CMAC golden model: Atomic-K dot products of Atomic-C operands, summed over the layer.

int8 and int16 products are exact (NVDLA's MAC cells keep every bit: an int8 partial sum of
Atomic-C products is at most 22 bits on nv_small), so the layer's raw sums are the exact
integer convolution; the CMAC_A / CMAC_B halves each take half of the kernels of an Atomic-K
group, which does not change the values.
"""

from __future__ import annotations

import numpy as np

from .csc import padded_input, windows
from .program import ConvProgram

__all__ = ["convolve"]


def convolve(p: ConvProgram, cube: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Exact sums int64 [B, K, Ho, Wo] of the layer (cube [B, H, W, C*], weights [K, C, R, S]).

    One numpy contraction per kernel position; no per-element loops.
    """
    padded = padded_input(p, cube)
    B = cube.shape[0]
    acc = np.zeros((B, p.out_height, p.out_width, p.kernels), dtype=np.int64)
    w = weights.astype(np.int64)
    for ky, kx, win in windows(p, padded):
        # [B, Ho, Wo, C] . [C, K] -> [B, Ho, Wo, K]
        acc += np.tensordot(win, w[:, :, ky, kx].T, axes=([3], [0]))
    return acc.transpose(0, 3, 1, 2)
