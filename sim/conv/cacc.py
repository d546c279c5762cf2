"""CACC golden model: assembly, truncation and delivery to the SDP.

The assembly buffer holds each output's sum in 48 bits (NVDLA's C model; exact for every
int8 layer). Delivery shifts right by ``D_CLIP_CFG.CLIP_TRUNCATE`` rounding to nearest with
ties away from zero, then saturates to int32; every saturated element counts in
``D_OUT_SATURATION`` (spec "Convolution Accumulator").
"""

from __future__ import annotations

import numpy as np

from sim.formats.common import round_shift_right

from .program import ASSEMBLY_BITS

__all__ = ["deliver"]

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _wrap(x, bits):
    m = np.int64(1) << (bits - 1)
    return ((x + m) & ((m << 1) - 1)) - m


def deliver(sums: np.ndarray, truncate: int):
    """(int32-range values int64, saturation count) from the assembly sums."""
    a = _wrap(np.asarray(sums, dtype=np.int64), ASSEMBLY_BITS)
    t = round_shift_right(a, truncate)
    sat = int(np.count_nonzero((t > _I32_MAX) | (t < _I32_MIN)))
    return np.clip(t, _I32_MIN, _I32_MAX), sat
