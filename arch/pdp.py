"""The PDP line buffer: how wide one pooling pass (the whole output width, or one split of
it) may be. The RTL (``hw/pdp``), the golden model's program check (``sim/pdp/program.py``)
and its random program generator all take the limit from here.

NVDLA's cal2d keeps the output lines still being summed in 8 line-buffer banks; a bank
holds 16 output positions of an atom's channels on every build (its depth is
16 x atom / throughput entries of ``pdp_throughput`` elements). The banks are merged 8, 4,
2 or 1 ways by the number of output lines the kernel height and vertical stride keep open
(1 line when stride >= kernel, else kernel, ceil(kernel / 2), 2 or 3, 2 lines for strides 1,
2, 3, >= 4), so one pass is at most 128, 64, 32 or 16 positions wide.
"""

from __future__ import annotations

__all__ = ["LINE_BUFFER_BANKS", "bank_positions", "buffer_lines", "max_pass_width",
           "line_buffer_positions"]

LINE_BUFFER_BANKS = 8


def bank_positions(cfg) -> int:
    """Output positions of one line-buffer bank: 16 x (atom / throughput) entries of
    ``pdp_throughput`` elements = 16 atoms of channels."""
    entries = 16 * (cfg.memory_atom // max(cfg.pdp_throughput, 1))
    return entries * max(cfg.pdp_throughput, 1) // cfg.memory_atom


def buffer_lines(kernel_h: int, stride_h: int) -> int:
    """Output lines the vertical pooling keeps open at once."""
    if stride_h >= kernel_h:
        return 1
    if stride_h == 1:
        return kernel_h
    if stride_h == 2:
        return (kernel_h + 1) // 2
    if stride_h == 3:
        return 2 if kernel_h <= 6 else 3
    return 2


def max_pass_width(cfg, kernel_h: int, stride_h: int) -> int:
    """Widest output (positions) one pass can produce with this kernel height and stride."""
    lines = buffer_lines(kernel_h, stride_h)
    merge = 8 if lines == 1 else 4 if lines == 2 else 2 if lines <= 4 else 1
    return bank_positions(cfg) * merge


def line_buffer_positions(cfg) -> int:
    """Output positions the whole line buffer holds (one open line, all banks merged)."""
    return bank_positions(cfg) * LINE_BUFFER_BANKS
