"""Program checks of a CDP layer, decided in the cycle after both groups are enabled: a layer
that fails any rule issues no DMA and completes at once (``done`` + interrupt), so an invalid
program never hangs the core.

The rules are those of the golden decode (:func:`sim.cdp.program.decode`); any one fails the
layer:

* precision: CDP_RDMA ``INPUT_DATA`` must be INT8, or INT16 / FP16 on a build whose
  ``data_types`` has it, and CDP ``INPUT_DATA_TYPE`` must equal it;
* source and destination RAM type CV (SRAMIF) on a build without SRAMIF;
* source / destination base address, line stride or surface stride not a multiple of the
  memory atom;
* destination overlap: ``D_DST_LINE_STRIDE`` < W x atom when H > 1, or
  ``D_DST_SURFACE_STRIDE`` < (H-1) x line stride + W x atom when there are several surfaces;
* a source or destination cube that ends past the build's address space;
* integer layers: ``S_LUT_INFO.LUT_LO_INDEX_SELECT`` (and ``LUT_LE_INDEX_SELECT`` in linear
  mode) outside -32..31; ``LUT_LE_INDEX_OFFSET`` > 39 in exponent mode (fp16 layers read the
  fields at their full 8 bits).
"""

from amaranth.hdl import Cat, Const

from ..mem.dma import RAM_CV

__all__ = ["INT8", "INT16", "FP16", "program_errors"]

INT8, INT16, FP16 = 0, 1, 2
INDEX_SELECT_RANGE = (-32, 31)
LE_INDEX_OFFSET_MAX = 39


def program_errors(cfg, geom, regs, rdma_regs, s, src, dst, dims):
    """The rule violations as a 1-bit value. ``src`` / ``dst``: (base, line stride, surface
    stride, ram type) of the input and output cubes (byte values); ``dims``: (W-1, H-1,
    surfaces-1) of the cube; ``s``: the single-group CDP registers (LUT configuration)."""
    ash = geom.atom_shift
    aw = geom.addr_width
    wm1, hm1, sm1 = dims

    def misaligned(v):
        return v[:ash].any() if ash else Const(0)

    prec, cprec = rdma_regs.D_DATA_FORMAT.INPUT_DATA, regs.D_DATA_FORMAT.INPUT_DATA_TYPE
    fp16 = "fp16" in cfg.data_types
    if fp16:
        ok = [INT8, FP16] + ([INT16] if "int16" in cfg.data_types else [])
        errs = [~Cat(*[prec == v for v in ok]).any(), cprec != prec]
    elif "int16" in cfg.data_types:
        errs = [(prec != INT8) & (prec != INT16), cprec != prec]
    else:
        errs = [cprec != INT8, prec != INT8]
    line_bytes = (wm1 + 1) << ash                  # W x atom
    for i, (base, ls, ss, ram) in enumerate((src, dst)):
        errs += [misaligned(base), misaligned(ls), misaligned(ss)]
        if not cfg.sramif:
            errs.append(ram == RAM_CV)
        one = hm1 * ls + line_bytes                # one surface, bytes
        if i == 1:                                 # destination: no overlapping lines/surfaces
            errs += [(hm1 != 0) & (ls < line_bytes),
                     (sm1 != 0) & (ss < one)]
        end = base + sm1 * ss + one
        errs.append(end > (1 << aw))

    info = s.S_LUT_INFO
    le_linear = s.S_LUT_CFG.LUT_LE_FUNCTION
    lo_, hi_ = INDEX_SELECT_RANGE

    def out_of_range(v):
        v = v.as_signed()
        return (v < lo_) | (v > hi_)

    lut_errs = [out_of_range(info.LUT_LO_INDEX_SELECT),
                le_linear & out_of_range(info.LUT_LE_INDEX_SELECT),
                ~le_linear & (info.LUT_LE_INDEX_OFFSET.as_signed() > LE_INDEX_OFFSET_MAX)]
    if fp16:                                       # integer layers only
        lut_errs = [(cprec != FP16) & e for e in lut_errs]
    errs += lut_errs
    return Cat(*errs).any()
