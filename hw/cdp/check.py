"""Program checks of a CDP layer, decided in the cycle after both groups are enabled: a layer
that fails any rule issues no DMA and completes at once (``done`` + interrupt), so an invalid
program never hangs the core.

Rules (any one fails the layer):

* precision: CDP ``INPUT_DATA_TYPE`` and CDP_RDMA ``INPUT_DATA`` must be INT8 (the only
  precision this datapath has; int16 / fp16 are rejected even on builds that list them);
* source and destination RAM type CV (SRAMIF) on a build without SRAMIF;
* source / destination base address, line stride or surface stride not a multiple of the
  memory atom.
"""

from amaranth.hdl import Cat, Const

from ..mem.dma import RAM_CV

__all__ = ["INT8", "program_errors"]

INT8 = 0


def program_errors(cfg, geom, regs, rdma_regs, src, dst):
    """The rule violations as a 1-bit value. ``src`` / ``dst``: (base, line stride, surface
    stride, ram type) of the input and output cubes (byte values)."""
    ash = geom.atom_shift

    def misaligned(v):
        return v[:ash].any() if ash else Const(0)

    errs = [regs.D_DATA_FORMAT.INPUT_DATA_TYPE != INT8,
            rdma_regs.D_DATA_FORMAT.INPUT_DATA != INT8]
    for base, ls, ss, ram in (src, dst):
        errs += [misaligned(base), misaligned(ls), misaligned(ss)]
        if not cfg.sramif:
            errs.append(ram == RAM_CV)
    return Cat(*errs).any()
