"""This core's own limits on a convolution layer, beyond NVDLA's rules.

:func:`sim.conv.program.decode` applies NVDLA's register rules: it is the golden model of
what NVDLA v1 accepts. The convolution RTL (:mod:`hw.conv.check`) rejects a few programs
NVDLA would run, because its datapath is built differently; the layer then finishes without
DMA, like any invalid layer. :func:`check_core_limits` names those rules, so tests can
predict the RTL check's verdict (``decode`` and then this) and random-program generators can
stay inside them. Every message says it is this core's rule, not NVDLA's.
"""

from __future__ import annotations

from arch.config import rtl_winograd, rtl_winograd_fp16

from .program import FP16, INT8, ConvProgram, ConvProgramError

__all__ = ["check_core_limits", "rtl_winograd"]


def _err(where: str, rule: str):
    raise ConvProgramError(f"{where}: {rule} (a limit of this core's RTL; NVDLA v1 runs it)")


def check_core_limits(cfg, p: ConvProgram) -> None:
    """Raise :class:`ConvProgramError` when the decoded layer ``p`` is beyond this core's RTL.

    * Compressed weights: this core's CDMA expands them as it fetches (:mod:`hw.conv.wdecomp`),
      so the CBUF holds the uncompressed surface. One uncompressed kernel group must fit the
      weight banks, and kept weights (``SKIP_WEIGHT_RLS``) are kept expanded, so the whole
      uncompressed surface must fit. NVDLA keeps compressed groups in the CBUF and needs
      only their WGS sizes to fit.
    * Winograd (``CONV_MODE=WINOGRAD``): this core's RTL runs int8 and int16 Winograd
      layers on the builds of :func:`arch.config.rtl_winograd` (Atomic-C 64, 32-byte atoms:
      nv_large, nv_full), and fp16 ones on those of :func:`arch.config.rtl_winograd_fp16`
      (an fp16 CBUF entry is a whole small cube: nv_full); elsewhere its check
      (:mod:`hw.conv.check`) rejects a Winograd layer, which finishes without output.
      The golden model runs it (:mod:`sim.conv.winograd`).
    Batched layers whose weights exceed the weight banks (compressed ones expanded) are
    fetched once per batch (:mod:`hw.conv.common`, "Weight copies"), not a limit.
    fp16 layers run as int16 ones (NVDLA's fp16 MAC cells and 48-bit float accumulator,
    :mod:`hw.conv.fp16_cell`, :mod:`hw.conv.fp48`), on bank-row and two-column entries.
    """
    if p.winograd is not None and not rtl_winograd(cfg):
        _err("CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD", "this build's convolution pipeline is "
             "direct only (Winograd needs Atomic-C 64 and 32-byte memory atoms; its check "
             "rejects Winograd layers)")
    if p.winograd is not None and p.precision == FP16 and not rtl_winograd_fp16(cfg):
        _err("CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD", "this build's Winograd datapath is int8 "
             "and int16 only (fp16 Winograd needs a CBUF entry of 2 x Atomic-C bytes, one "
             "small cube of fp16 codes per MAC cell; its check rejects an fp16 Winograd "
             "layer)")
    wcap = p.weight_bank * cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
    if p.compression is not None:
        group_k = cfg.atomic_k if p.precision == INT8 else max(cfg.atomic_k // 2, 1)
        group = min(p.kernels, group_k) * p.byte_per_kernel
        if group > wcap:
            _err(f"CDMA.D_BANK.WEIGHT_BANK={p.weight_bank - 1}",
                 f"compressed weights are expanded into the CBUF: one uncompressed kernel "
                 f"group needs {group} bytes; {p.weight_bank} weight bank(s) hold {wcap}")
        surface = p.kernels * p.byte_per_kernel
        if p.skip_weight_rls and surface > wcap:
            _err("CDMA.D_MISC_CFG.SKIP_WEIGHT_RLS=ENABLE",
                 f"kept compressed weights are kept expanded: BYTE_PER_KERNEL x kernels = "
                 f"{surface} bytes > {p.weight_bank} weight bank(s) of {wcap} bytes")
