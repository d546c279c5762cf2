"""Decode and check a PDP (pooling) register program: PDP and, offline, PDP_RDMA.

:func:`decode` reads the consumer groups and returns a :class:`PdpProgram`, or raises
:class:`PdpProgramError` naming the register field and the rule the program breaks. The rules
are those NVDLA's own PDP relies on (C model and RTL of nvdla/hw, re-stated here):

- precision: ``D_DATA_FORMAT.INPUT_DATA`` one the build has (output precision = input
  precision, data-format spec Table 32): int8, int16, fp16 (fp16: the pad values and the
  reciprocals are fp17 codes, see :mod:`sim.pdp.pdp`);
- kernel 1..8 in each direction (``KERNEL_WIDTH``/``KERNEL_HEIGHT`` codes 8..15 are
  reserved), stride 1..16, padding 0..7 on each side;
- geometry: the kernel fits the padded input, ``CUBE_OUT_WIDTH``/``HEIGHT`` equal the number
  of windows ``(in + pad_a + pad_b - kernel) // stride + 1``, ``CUBE_OUT_CHANNEL`` equals
  ``CUBE_IN_CHANNEL``, every window holds at least one input element (``PAD_LEFT``/``PAD_TOP``
  below the kernel size, the last window not entirely in the right/bottom padding);
- line buffer: the output width of one pass (the whole width, or one split) is at most
  16 x (8 / banks per line) positions; the banks an output line needs follow from the kernel
  height and vertical stride (1 line when stride >= kernel, else kernel, ceil(kernel / 2),
  2 or 3, 2 lines for strides 1, 2, 3, >= 4; 8 banks are merged 8/4/2/1 ways for 1/2/3-4/5+
  lines) -- wider outputs need split-width mode;
- split width (``SPLIT_NUM`` > 0, offline only): ``SPLIT_NUM + 1`` passes whose input widths
  ``PARTIAL_WIDTH_IN_FIRST + (n - 2) x MID + LAST`` add up to the cube width and output widths
  to the output width; each pass after the first re-reads the ``kernel - stride`` overlapping
  columns (none when the stride is larger: it skips them), so the first pass must end where
  the next window starts (``(first + PAD_LEFT - kernel) % stride == 0``) and be at least
  ``kernel - stride`` wide (the overlap the next pass re-reads), middle passes are
  whole strides, and each pass's output width is the window count of its input (the first
  pass has the left padding, the last the right). Such a split computes exactly the unsplit
  pooling; the model still runs it pass by pass as the hardware does;
- PDP_RDMA (offline): ``D_FLYING_MODE=OFF_FLYING``, and its cube, data format, split count,
  partial input widths, kernel width and stride width equal PDP's; addresses and strides on the
  memory atom; ``SRC_RAM_TYPE``/``DST_RAM_TYPE`` CV only on builds with an SRAMIF; output lines
  and surfaces must not overlap.

PDP's own ``D_SRC_*`` registers and PDP_RDMA's ``D_POOLING_PADDING_CFG`` are not used by the
datapath (NVDLA's traces leave junk there); ``D_NAN_FLUSH_TO_ZERO`` matters for offline fp16
layers only.
"""

from __future__ import annotations

from dataclasses import dataclass

from arch.config import NvdlaConfig
from arch.pdp import max_pass_width as _arch_max_pass_width

__all__ = ["PdpProgramError", "PdpProgram", "Split", "decode", "decode_flying", "AVERAGE",
           "MAX", "MIN", "METHODS", "INT8", "INT16", "FP16", "PRECISIONS", "max_pass_width",
           "out_size", "split_passes", "RAM_CV", "RAM_MC"]

AVERAGE, MAX, MIN = 0, 1, 2
METHODS = {AVERAGE: "AVERAGE", MAX: "MAX", MIN: "MIN"}
INT8, INT16, FP16 = 0, 1, 2
PRECISIONS = {INT8: "int8", INT16: "int16", FP16: "fp16"}
BYTES = {INT8: 1, INT16: 2, FP16: 2}
RAM_CV, RAM_MC = 0, 1
ON_FLYING, OFF_FLYING = 0, 1
P, R = "PDP", "PDP_RDMA"


class PdpProgramError(ValueError):
    """A PDP / PDP_RDMA register program the hardware cannot run; the message names the
    register field and the rule."""


def _err(where: str, rule: str):
    raise PdpProgramError(f"{where}: {rule}")


@dataclass(frozen=True)
class Split:
    """One pass over the width: input columns ``[in_start, in_start + in_width)`` of the cube
    (the overlap re-read included) with its own left/right padding, producing output columns
    ``[out_start, out_start + out_width)``."""
    in_start: int
    in_width: int
    pad_left: int
    pad_right: int
    out_start: int
    out_width: int


@dataclass
class PdpProgram:
    flying: bool
    method: int
    precision: int
    width: int
    height: int
    channel: int
    out_width: int
    out_height: int
    kernel_w: int
    kernel_h: int
    stride_w: int
    stride_h: int
    pad_left: int
    pad_top: int
    pad_right: int
    pad_bottom: int
    pad_values: tuple           #: raw 19-bit PAD_VALUE_1X..7X fields (index n - 1)
    recip_w: int                #: RECIP_KERNEL_WIDTH (17 bits: int 1.16 fixed point, fp16 fp17)
    recip_h: int
    nan_to_zero: bool           #: D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO (fp16 NaN inputs -> +0)
    splits: tuple               #: :class:`Split` per pass (one when SPLIT_NUM = 0)
    src: tuple | None           #: (ram, base, line stride, surface stride); None when flying
    dst: tuple                  #: (ram, base, line stride, surface stride)

    @property
    def element_bytes(self) -> int:
        return BYTES[self.precision]


def out_size(n: int, pad_a: int, pad_b: int, kernel: int, stride: int) -> int:
    """Windows of ``kernel`` at ``stride`` over ``pad_a + n + pad_b`` positions (0 if none)."""
    span = n + pad_a + pad_b
    return 0 if span < kernel else (span - kernel) // stride + 1


def max_pass_width(kernel_h: int, stride_h: int, cfg=None) -> int:
    """Widest output one pass can produce (:func:`arch.pdp.max_pass_width`, shared with the
    RTL): 8 line-buffer banks of 16 positions, merged 8, 4, 2 or 1 ways by the number of
    output lines the kernel height and stride keep in flight."""
    return _arch_max_pass_width(cfg if cfg is not None else NvdlaConfig.preset("nv_small"),
                                kernel_h, stride_h)


def split_passes(width, out_width, kw, sw, pad_left, pad_right, split_num, part_in, part_out):
    """The passes of a split-width program (``part_in``/``part_out``: (first, mid, last) as
    widths, i.e. field + 1); checks the split rules and returns the :class:`Split` list."""
    n = split_num + 1
    (fi, mi, li), (fo, mo, lo) = part_in, part_out
    where_in, where_out = f"{P}.D_PARTIAL_WIDTH_IN", f"{P}.D_PARTIAL_WIDTH_OUT"
    total_in = fi + (n - 2) * mi + li
    if total_in != width:
        _err(f"{where_in} (FIRST {fi - 1}, MID {mi - 1}, LAST {li - 1})",
             f"{n} split widths FIRST + {n - 2} x MID + LAST = {total_in} must add up to the "
             f"input width {width} (D_DATA_CUBE_IN_WIDTH + 1)")
    total_out = fo + (n - 2) * mo + lo
    if total_out != out_width:
        _err(f"{where_out} (FIRST {fo - 1}, MID {mo - 1}, LAST {lo - 1})",
             f"{n} split output widths FIRST + {n - 2} x MID + LAST = {total_out} must add up "
             f"to the output width {out_width} (D_DATA_CUBE_OUT_WIDTH + 1)")
    overlap = kw - sw
    if fi + pad_left < kw:
        _err(f"{where_in}.PARTIAL_WIDTH_IN_FIRST={fi - 1}",
             f"the first split ({fi} + PAD_LEFT {pad_left}) is narrower than the kernel "
             f"width {kw}")
    if (fi + pad_left - kw) % sw:
        _err(f"{where_in}.PARTIAL_WIDTH_IN_FIRST={fi - 1}",
             f"the first split must end where a window ends: (width {fi} + PAD_LEFT "
             f"{pad_left} - kernel {kw}) must be a multiple of the stride {sw}")
    if fi < overlap:
        _err(f"{where_in}.PARTIAL_WIDTH_IN_FIRST={fi - 1}",
             f"the next split re-reads kernel - stride = {overlap} columns before the split "
             f"boundary; the first split has only {fi}")
    f_out = out_size(fi, pad_left, 0, kw, sw)
    if fo != f_out:
        _err(f"{where_out}.PARTIAL_WIDTH_OUT_FIRST={fo - 1}",
             f"the first split (width {fi}, PAD_LEFT {pad_left}, kernel {kw}, stride {sw}) "
             f"has {f_out} windows: must be {f_out - 1}")
    if n > 2:
        if mi < sw or mi % sw:
            _err(f"{where_in}.PARTIAL_WIDTH_IN_MID={mi - 1}",
                 f"a middle split must be a whole number of strides ({sw}): {mi} is not")
        if mo != mi // sw:
            _err(f"{where_out}.PARTIAL_WIDTH_OUT_MID={mo - 1}",
                 f"a middle split of {mi} columns at stride {sw} has {mi // sw} windows: must "
                 f"be {mi // sw - 1}")
    l_out = out_size(li + overlap, 0, pad_right, kw, sw)
    if li + overlap <= 0 or lo != l_out:
        _err(f"{where_out}.PARTIAL_WIDTH_OUT_LAST={lo - 1}",
             f"the last split (width {li} + overlap {overlap}, PAD_RIGHT {pad_right}, kernel "
             f"{kw}, stride {sw}) has {l_out} windows"
             + (f": must be {l_out - 1}" if l_out else ""))
    passes = [Split(0, fi, pad_left, 0, 0, fo)]
    start, ostart = fi, fo
    for i in range(1, n):
        last = i == n - 1
        w, o = (li, lo) if last else (mi, mo)
        passes.append(Split(start - overlap, w + overlap, 0, pad_right if last else 0, ostart,
                            o))
        start, ostart = start + w, ostart + o
    return passes


def _enum(view, block, reg, fld):
    f = view.block[reg][fld]
    v = view[reg][fld]
    if f.enum and v not in {x for _, x in f.enum}:
        names = ", ".join(f"{n}={x}" for n, x in f.enum)
        _err(f"{block}.{reg}.{fld}={v}", f"reserved value (valid: {names})")
    return v


def _bytes(view, reg, fld):
    """An address or stride field in bytes (full-layout fields drop the atom's low bits)."""
    f = view.block[reg][fld]
    return view[reg][fld] << f.lsb


def _address(cfg, view, block, prefix):
    low = _bytes(view, f"D_{prefix}_BASE_ADDR_LOW", f"{prefix}_BASE_ADDR_LOW")
    if cfg.address_width > 32:
        low |= view[f"D_{prefix}_BASE_ADDR_HIGH"][f"{prefix}_BASE_ADDR_HIGH"] << 32
    return low


def _aligned(cfg, value, where):
    if value % cfg.memory_atom:
        _err(f"{where}={value:#x}", f"must be a multiple of the {cfg.memory_atom}-byte memory "
             "atom")


def _ram(cfg, ram, where):
    if ram == RAM_CV and not cfg.sramif:
        _err(f"{where}=CV", "this build has no SRAMIF (CVIF); use MC")


def _precision(cfg, view, block):
    prec = _enum(view, block, "D_DATA_FORMAT", "INPUT_DATA")
    name = PRECISIONS[prec]
    if name not in cfg.data_types:
        _err(f"{block}.D_DATA_FORMAT.INPUT_DATA={name.upper()}",
             f"this build pools {'/'.join(cfg.data_types)} only")
    return prec


def _same(a_where, a, b_where, b, what):
    if a != b:
        _err(f"{b_where}={b}", f"must equal {a_where}={a} ({what})")


def decode(cfg, pdp, rdma=None, flying: bool | None = None) -> PdpProgram:
    """Check the consumer groups' program (``rdma`` needed offline) and return it.

    ``flying`` (default: from ``D_OPERATION_MODE_CFG.FLYING_MODE``) says how the layer is
    being run: True for SDP->PDP, False for input through PDP_RDMA; a mismatch with the
    register is an error naming it."""
    if not cfg.pdp:
        _err("PDP", "this build has no PDP (pdp_throughput=0)")
    op = pdp.D_OPERATION_MODE_CFG
    method = _enum(pdp, P, "D_OPERATION_MODE_CFG", "POOLING_METHOD")
    reg_flying = op.FLYING_MODE == ON_FLYING
    if flying is None:
        flying = reg_flying
    elif flying != reg_flying:
        _err(f"{P}.D_OPERATION_MODE_CFG.FLYING_MODE={'ON' if reg_flying else 'OFF'}_FLYING",
             "SDP sends its output to PDP (OUTPUT_DST=PDP): must be ON_FLYING" if flying else
             "must be OFF_FLYING for input read by PDP_RDMA")
    prec = _precision(cfg, pdp, P)

    width = pdp.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH + 1
    height = pdp.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT + 1
    channel = pdp.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL + 1
    ow = pdp.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH + 1
    oh = pdp.D_DATA_CUBE_OUT_HEIGHT.CUBE_OUT_HEIGHT + 1
    oc = pdp.D_DATA_CUBE_OUT_CHANNEL.CUBE_OUT_CHANNEL + 1
    if oc != channel:
        _err(f"{P}.D_DATA_CUBE_OUT_CHANNEL.CUBE_OUT_CHANNEL={oc - 1}",
             f"must equal D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL={channel - 1} (pooling keeps "
             "the channels)")

    k = pdp.D_POOLING_KERNEL_CFG
    kw = _enum(pdp, P, "D_POOLING_KERNEL_CFG", "KERNEL_WIDTH") + 1
    kh = _enum(pdp, P, "D_POOLING_KERNEL_CFG", "KERNEL_HEIGHT") + 1
    sw, sh = k.KERNEL_STRIDE_WIDTH + 1, k.KERNEL_STRIDE_HEIGHT + 1
    pc = pdp.D_POOLING_PADDING_CFG
    pl, pt, pr, pb = pc.PAD_LEFT, pc.PAD_TOP, pc.PAD_RIGHT, pc.PAD_BOTTOM
    for axis, n, a, b, kern, s, o, fa, fb, fo, kf in (
            ("width", width, pl, pr, kw, sw, ow, "PAD_LEFT", "PAD_RIGHT",
             "D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH", "KERNEL_WIDTH"),
            ("height", height, pt, pb, kh, sh, oh, "PAD_TOP", "PAD_BOTTOM",
             "D_DATA_CUBE_OUT_HEIGHT.CUBE_OUT_HEIGHT", "KERNEL_HEIGHT")):
        if kern > n + a + b:
            _err(f"{P}.D_POOLING_KERNEL_CFG.{kf}={kern - 1}",
                 f"the {kern}-wide kernel is larger than the padded input ({fa} {a} + {n} + "
                 f"{fb} {b})")
        if a >= kern:
            _err(f"{P}.D_POOLING_PADDING_CFG.{fa}={a}",
                 f"must be smaller than the kernel {axis} {kern} (the first window would hold "
                 "only padding)")
        want = out_size(n, a, b, kern, s)
        if o != want:
            _err(f"{P}.{fo}={o - 1}",
                 f"{want} windows of {kern} at stride {s} fit the padded input ({fa} {a} + {n} "
                 f"+ {fb} {b}): must be {want - 1}")
        if (o - 1) * s >= a + n:
            _err(f"{P}.D_POOLING_PADDING_CFG.{fb}={b}",
                 f"the last window (from padded position {(o - 1) * s}) would hold only "
                 "padding")

    split_num = op.SPLIT_NUM
    limit = max_pass_width(kh, sh, cfg)
    if split_num == 0:
        if ow > limit:
            _err(f"{P}.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH={ow - 1}",
                 f"{ow} output positions exceed the line buffer ({limit} with kernel height "
                 f"{kh}, stride {sh}); use split-width mode (SPLIT_NUM)")
        splits = (Split(0, width, pl, pr, 0, ow),)
    else:
        if flying:
            _err(f"{P}.D_OPERATION_MODE_CFG.SPLIT_NUM={split_num}",
                 "split-width mode re-reads overlapping columns through PDP_RDMA: it needs "
                 "FLYING_MODE=OFF_FLYING")
        pi, po = pdp.D_PARTIAL_WIDTH_IN, pdp.D_PARTIAL_WIDTH_OUT
        part_in = (pi.PARTIAL_WIDTH_IN_FIRST + 1, pi.PARTIAL_WIDTH_IN_MID + 1,
                   pi.PARTIAL_WIDTH_IN_LAST + 1)
        part_out = (po.PARTIAL_WIDTH_OUT_FIRST + 1, po.PARTIAL_WIDTH_OUT_MID + 1,
                    po.PARTIAL_WIDTH_OUT_LAST + 1)
        splits = tuple(split_passes(width, ow, kw, sw, pl, pr, split_num, part_in, part_out))
        for name, w in (("FIRST", part_out[0]), ("MID", part_out[1] if split_num > 1 else 0),
                        ("LAST", part_out[2])):
            if w > limit:
                _err(f"{P}.D_PARTIAL_WIDTH_OUT.PARTIAL_WIDTH_OUT_{name}={w - 1}",
                     f"{w} output positions exceed the line buffer ({limit} with kernel "
                     f"height {kh}, stride {sh})")

    pad_values = tuple(pdp[f"D_POOLING_PADDING_VALUE_{n}_CFG"][f"PAD_VALUE_{n}X"]
                       for n in range(1, 8))
    recip_w = pdp.D_RECIP_KERNEL_WIDTH.RECIP_KERNEL_WIDTH
    recip_h = pdp.D_RECIP_KERNEL_HEIGHT.RECIP_KERNEL_HEIGHT

    # -- output surface ------------------------------------------------------------------
    dram = _enum(pdp, P, "D_DST_RAM_CFG", "DST_RAM_TYPE")
    _ram(cfg, dram, f"{P}.D_DST_RAM_CFG.DST_RAM_TYPE")
    dbase = _address(cfg, pdp, P, "DST")
    dline = _bytes(pdp, "D_DST_LINE_STRIDE", "DST_LINE_STRIDE")
    dsurf = _bytes(pdp, "D_DST_SURFACE_STRIDE", "DST_SURFACE_STRIDE")
    _aligned(cfg, dbase, f"{P}.D_DST_BASE_ADDR_LOW.DST_BASE_ADDR_LOW")
    _aligned(cfg, dline, f"{P}.D_DST_LINE_STRIDE.DST_LINE_STRIDE")
    _aligned(cfg, dsurf, f"{P}.D_DST_SURFACE_STRIDE.DST_SURFACE_STRIDE")
    atom = cfg.memory_atom
    surfaces = -(-channel * BYTES[prec] // atom)
    if oh > 1 and dline < ow * atom:
        _err(f"{P}.D_DST_LINE_STRIDE.DST_LINE_STRIDE={dline:#x}",
             f"output lines of {ow} atoms ({ow * atom} bytes) would overlap")
    if surfaces > 1 and dsurf < (oh - 1) * dline + ow * atom:
        _err(f"{P}.D_DST_SURFACE_STRIDE.DST_SURFACE_STRIDE={dsurf:#x}",
             f"output surfaces of {oh} lines x stride {dline:#x} would overlap")

    # -- input (PDP_RDMA) ----------------------------------------------------------------
    src = None
    if not flying:
        if rdma is None:
            _err(f"{R}", "an offline PDP layer reads its input through PDP_RDMA")
        if rdma.D_FLYING_MODE.FLYING_MODE != OFF_FLYING:
            _err(f"{R}.D_FLYING_MODE.FLYING_MODE=ON_FLYING",
                 f"must be OFF_FLYING like {P}.D_OPERATION_MODE_CFG.FLYING_MODE")
        for reg, fld, v in (("D_DATA_CUBE_IN_WIDTH", "CUBE_IN_WIDTH", width),
                            ("D_DATA_CUBE_IN_HEIGHT", "CUBE_IN_HEIGHT", height),
                            ("D_DATA_CUBE_IN_CHANNEL", "CUBE_IN_CHANNEL", channel)):
            _same(f"{P}.{reg}.{fld}", v - 1, f"{R}.{reg}.{fld}", rdma[reg][fld],
                  "the read DMA and the pooling unit must agree on the cube")
        rprec = _enum(rdma, R, "D_DATA_FORMAT", "INPUT_DATA")
        _same(f"{P}.D_DATA_FORMAT.INPUT_DATA", prec, f"{R}.D_DATA_FORMAT.INPUT_DATA", rprec,
              "one precision per layer")
        _same(f"{P}.D_OPERATION_MODE_CFG.SPLIT_NUM", split_num,
              f"{R}.D_OPERATION_MODE_CFG.SPLIT_NUM", rdma.D_OPERATION_MODE_CFG.SPLIT_NUM,
              "one split per layer")
        rk = rdma.D_POOLING_KERNEL_CFG
        _same(f"{P}.D_POOLING_KERNEL_CFG.KERNEL_WIDTH", kw - 1,
              f"{R}.D_POOLING_KERNEL_CFG.KERNEL_WIDTH", rk.KERNEL_WIDTH,
              "the read DMA re-reads kernel - stride columns per split")
        _same(f"{P}.D_POOLING_KERNEL_CFG.KERNEL_STRIDE_WIDTH", sw - 1,
              f"{R}.D_POOLING_KERNEL_CFG.KERNEL_STRIDE_WIDTH", rk.KERNEL_STRIDE_WIDTH,
              "the read DMA re-reads kernel - stride columns per split")
        if split_num:
            for fld in ("PARTIAL_WIDTH_IN_FIRST", "PARTIAL_WIDTH_IN_MID",
                        "PARTIAL_WIDTH_IN_LAST"):
                if split_num == 1 and fld.endswith("MID"):
                    continue
                _same(f"{P}.D_PARTIAL_WIDTH_IN.{fld}", pdp.D_PARTIAL_WIDTH_IN[fld],
                      f"{R}.D_PARTIAL_WIDTH_IN.{fld}", rdma.D_PARTIAL_WIDTH_IN[fld],
                      "one split per layer")
        sram = _enum(rdma, R, "D_SRC_RAM_CFG", "SRC_RAM_TYPE")
        _ram(cfg, sram, f"{R}.D_SRC_RAM_CFG.SRC_RAM_TYPE")
        sbase = _address(cfg, rdma, R, "SRC")
        sline = _bytes(rdma, "D_SRC_LINE_STRIDE", "SRC_LINE_STRIDE")
        ssurf = _bytes(rdma, "D_SRC_SURFACE_STRIDE", "SRC_SURFACE_STRIDE")
        _aligned(cfg, sbase, f"{R}.D_SRC_BASE_ADDR_LOW.SRC_BASE_ADDR_LOW")
        _aligned(cfg, sline, f"{R}.D_SRC_LINE_STRIDE.SRC_LINE_STRIDE")
        _aligned(cfg, ssurf, f"{R}.D_SRC_SURFACE_STRIDE.SRC_SURFACE_STRIDE")
        src = (sram, sbase, sline, ssurf)

    return PdpProgram(
        flying=flying, method=method, precision=prec, width=width, height=height,
        channel=channel, out_width=ow, out_height=oh, kernel_w=kw, kernel_h=kh, stride_w=sw,
        stride_h=sh, pad_left=pl, pad_top=pt, pad_right=pr, pad_bottom=pb,
        pad_values=pad_values, recip_w=recip_w, recip_h=recip_h,
        nan_to_zero=bool(pdp.D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO), splits=tuple(splits),
        src=src, dst=(dram, dbase, dline, dsurf))


def decode_flying(cfg, pdp) -> PdpProgram:
    """:func:`decode` for a layer whose input comes from SDP."""
    return decode(cfg, pdp, None, flying=True)
