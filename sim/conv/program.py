"""Decode and check a direct-convolution register program (CDMA, CSC, CMAC_A/B, CACC).

The convolution pipeline is programmed through five register files whose settings must agree
(NVDLA's compiler writes the same geometry into CDMA, CSC and CACC). :func:`decode` reads the
consumer groups, checks every rule the golden model relies on and returns a
:class:`ConvProgram`; a program the hardware cannot run raises :class:`ConvProgramError` naming
the register field and the rule. Follows the hardware architectural spec ("Convolution DMA",
"Convolution Sequence Controller", "Convolution Accumulator") and the data-format spec
(feature data, weights for direct convolution, precision conversion tables).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.formats.common import ceil_div

__all__ = ["ConvProgramError", "ConvProgram", "decode", "PRECISIONS", "entries_per_slice",
           "RAM_CV", "RAM_MC"]

RAM_CV, RAM_MC = 0, 1
INT8, INT16, FP16 = 0, 1, 2
PRECISIONS = {INT8: "int8", INT16: "int16", FP16: "fp16"}
_BYTES = {INT8: 1, INT16: 2, FP16: 2}
#: CACC assembly width (bits) and delivery width: a truncation may drop at most 16 bits.
ASSEMBLY_BITS, DELIVERY_BITS = 48, 32


class ConvProgramError(ValueError):
    """A convolution register program the hardware cannot run; the message names the register
    field and the rule."""


def _err(where: str, rule: str):
    raise ConvProgramError(f"{where}: {rule}")


def entries_per_slice(width: int, channels: int, precision: int, atom: int,
                      bank_width: int) -> int:
    """CBUF entries one input line (a slice in direct convolution) takes.

    A line holds ``ceil(C / atom-elements)`` memory atoms per position; whole entries hold
    ``bank_width / atom`` atoms of one position, and a last, partial entry ("cripple" atoms) is
    shared between 2 or 4 positions when it holds at most half / a quarter of an entry.
    """
    # NVDLA counts an atom as ``atom`` elements of the precision (so an int16 atom is twice
    # the bytes of an int8 one) and fits bank_width / atom-bytes of them in one entry.
    per_entry = max(bank_width // (atom * _BYTES[precision]), 1)
    atoms = ceil_div(channels, atom)
    whole, cripple = divmod(atoms, per_entry)
    n = whole * width
    if cripple:
        if cripple > per_entry // 2:
            n += width
        elif cripple * 2 == per_entry:
            n += ceil_div(width, 2)
        elif cripple * 4 == per_entry:
            n += ceil_div(width, 4)
        else:
            n += width
    return n


@dataclass
class ConvProgram:
    """One direct-convolution hardware layer, as the five register files describe it."""
    precision: int            #: processing precision (INT8/INT16/FP16)
    in_precision: int         #: CDMA input precision
    # input cube (CDMA fetch)
    width: int
    height: int
    channels: int
    batches: int
    base: int
    line_stride: int
    surf_stride: int
    batch_stride: int
    line_packed: bool
    surf_packed: bool
    ram_type: int
    grain: int
    entries: int
    cvt: tuple | None          #: (offset, scale, truncate) of the CDMA input convertor
    # CSC view of the input (the extended cube)
    in_width: int
    in_height: int
    in_channels: int
    # weights
    kernels: int
    kw: int
    kh: int
    byte_per_kernel: int
    weight_bytes: int
    weight_base: int
    weight_ram: int
    # sequencing
    stride_x: int
    stride_y: int
    dil_x: int
    dil_y: int
    pad_left: int
    pad_top: int
    pad_value: int
    out_width: int
    out_height: int
    out_channels: int
    data_bank: int
    weight_bank: int
    data_reuse: bool
    weight_reuse: bool
    skip_data_rls: bool
    skip_weight_rls: bool
    rls_slices: int
    clip_truncate: int

    @property
    def element_bytes(self) -> int:
        return _BYTES[self.precision]

    @property
    def name(self) -> str:
        return PRECISIONS[self.precision]


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


def _addr(cfg, view, low_reg, low_fld, high_reg, high_fld):
    low = _bytes(view, low_reg, low_fld)
    return low | (view[high_reg][high_fld] << 32) if cfg.address_width > 32 else low


def _same(a_name, a, b_name, b, what):
    if a != b:
        _err(f"{b_name}={b}", f"must equal {a_name}={a} ({what})")


def decode(cfg, cdma, csc, cmac_a, cmac_b, cacc) -> ConvProgram:
    """Check the consumer groups' program and return it (see the module docstring)."""
    D = "CDMA"
    mode = _enum(cdma, D, "D_MISC_CFG", "CONV_MODE")
    if mode:
        if not cfg.winograd:
            _err("CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD", "this build has no Winograd")
        _err("CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD", "Winograd is not modelled yet")
    for blk, v in (("CSC", csc), ("CMAC_A", cmac_a), ("CMAC_B", cmac_b), ("CACC", cacc)):
        _same("CDMA.D_MISC_CFG.CONV_MODE", mode, f"{blk}.D_MISC_CFG.CONV_MODE",
              _enum(v, blk, "D_MISC_CFG", "CONV_MODE"), "one mode per layer")
    in_prec = _enum(cdma, D, "D_MISC_CFG", "IN_PRECISION")
    prec = _enum(cdma, D, "D_MISC_CFG", "PROC_PRECISION")
    for what, p in (("IN_PRECISION", in_prec), ("PROC_PRECISION", prec)):
        if PRECISIONS[p] not in cfg.data_types:
            _err(f"CDMA.D_MISC_CFG.{what}={PRECISIONS[p].upper()}",
                 f"this build computes {'/'.join(cfg.data_types)} only")
    for blk, v in (("CSC", csc), ("CMAC_A", cmac_a), ("CMAC_B", cmac_b), ("CACC", cacc)):
        _same("CDMA.D_MISC_CFG.PROC_PRECISION", prec, f"{blk}.D_MISC_CFG.PROC_PRECISION",
              _enum(v, blk, "D_MISC_CFG", "PROC_PRECISION"), "one precision per layer")
    _same("CDMA.D_MISC_CFG.IN_PRECISION", in_prec, "CSC.D_MISC_CFG.IN_PRECISION",
          _enum(csc, "CSC", "D_MISC_CFG", "IN_PRECISION"), "one input precision per layer")
    if prec == FP16:
        _err("CDMA.D_MISC_CFG.PROC_PRECISION=FP16", "fp16 convolution is not modelled yet")

    fmt = _enum(cdma, D, "D_DATAIN_FORMAT", "DATAIN_FORMAT")
    _same("CDMA.D_DATAIN_FORMAT.DATAIN_FORMAT", fmt, "CSC.D_DATAIN_FORMAT.DATAIN_FORMAT",
          _enum(csc, "CSC", "D_DATAIN_FORMAT", "DATAIN_FORMAT"), "one input format per layer")
    if fmt:
        _err("CDMA.D_DATAIN_FORMAT.DATAIN_FORMAT=PIXEL", "image input is not modelled yet")

    cvt = None
    if _enum(cdma, D, "D_CVT_CFG", "CVT_EN"):
        if in_prec == FP16 or prec == FP16:
            _err("CDMA.D_CVT_CFG.CVT_EN=ENABLE", "the input convertor takes int8/int16 only")
        off = cdma.D_CVT_OFFSET.CVT_OFFSET
        scale = cdma.D_CVT_SCALE.CVT_SCALE
        cvt = (off - (1 << 16) if off & 0x8000 else off,
               scale - (1 << 16) if scale & 0x8000 else scale,
               cdma.D_CVT_CFG.CVT_TRUNCATE)
    elif in_prec != prec:
        _err(f"CDMA.D_MISC_CFG.IN_PRECISION={PRECISIONS[in_prec].upper()}",
             f"must equal PROC_PRECISION={PRECISIONS[prec].upper()} unless "
             "D_CVT_CFG.CVT_EN converts it (precision conversion table)")

    batches = cdma.D_BATCH_NUMBER.BATCHES + 1
    max_batch = cfg.max_batch if cfg.batching else 1
    if batches > max_batch:
        _err(f"CDMA.D_BATCH_NUMBER.BATCHES={batches - 1}",
             f"this build convolves at most {max_batch} batch(es)")
    for blk, v in (("CSC", csc), ("CACC", cacc)):
        _same("CDMA.D_BATCH_NUMBER.BATCHES", batches - 1, f"{blk}.D_BATCH_NUMBER.BATCHES",
              v.D_BATCH_NUMBER.BATCHES, "one batch count per layer")

    width = cdma.D_DATAIN_SIZE_0.DATAIN_WIDTH + 1
    height = cdma.D_DATAIN_SIZE_0.DATAIN_HEIGHT + 1
    channels = cdma.D_DATAIN_SIZE_1.DATAIN_CHANNEL + 1
    atom = cfg.memory_atom
    in_bytes = _BYTES[in_prec]
    line_stride = _bytes(cdma, "D_LINE_STRIDE", "LINE_STRIDE")
    surf_stride = _bytes(cdma, "D_SURF_STRIDE", "SURF_STRIDE")
    batch_stride = _bytes(cdma, "D_BATCH_STRIDE", "BATCH_STRIDE")
    base = _addr(cfg, cdma, "D_DAIN_ADDR_LOW_0", "DATAIN_ADDR_LOW_0",
                 "D_DAIN_ADDR_HIGH_0", "DATAIN_ADDR_HIGH_0")
    for name, v in (("D_DAIN_ADDR_LOW_0.DATAIN_ADDR_LOW_0", base),
                    ("D_LINE_STRIDE.LINE_STRIDE", line_stride),
                    ("D_SURF_STRIDE.SURF_STRIDE", surf_stride)):
        if v % atom:
            _err(f"CDMA.{name}={v:#x}", f"must be a multiple of the {atom}-byte memory atom")
    line_packed = bool(_enum(cdma, D, "D_DAIN_MAP", "LINE_PACKED"))
    surf_packed = bool(_enum(cdma, D, "D_DAIN_MAP", "SURF_PACKED"))
    grain = cdma.D_FETCH_GRAIN.GRAINS + 1
    if line_packed != (line_stride == width * atom):
        _err(f"CDMA.D_DAIN_MAP.LINE_PACKED={int(line_packed)}",
             f"must be 1 exactly when LINE_STRIDE ({line_stride}) = width x atom "
             f"({width * atom})")
    if not line_packed and grain != 1:
        _err(f"CDMA.D_FETCH_GRAIN.GRAINS={grain - 1}", "must be 0 when lines are not packed")
    if grain > height:
        _err(f"CDMA.D_FETCH_GRAIN.GRAINS={grain - 1}",
             f"fetch grain {grain} exceeds the input height {height}")
    surfaces = ceil_div(channels * in_bytes, atom)
    if surfaces > 1 and surf_stride < line_stride * height:
        _err(f"CDMA.D_SURF_STRIDE.SURF_STRIDE={surf_stride}",
             f"surfaces overlap: must be at least LINE_STRIDE x height = {line_stride * height}")
    if batches > 1 and batch_stride < surf_stride * surfaces:
        _err(f"CDMA.D_BATCH_STRIDE.BATCH_STRIDE={batch_stride}",
             f"batches overlap: must be at least SURF_STRIDE x surfaces = "
             f"{surf_stride * surfaces}")
    ram_type = _enum(cdma, D, "D_DAIN_RAM_TYPE", "DATAIN_RAM_TYPE")
    weight_ram = _enum(cdma, D, "D_WEIGHT_RAM_TYPE", "WEIGHT_RAM_TYPE")
    for name, v in (("D_DAIN_RAM_TYPE.DATAIN_RAM_TYPE", ram_type),
                    ("D_WEIGHT_RAM_TYPE.WEIGHT_RAM_TYPE", weight_ram)):
        if v == RAM_CV and not cfg.sramif:
            _err(f"CDMA.{name}=CVIF", "this build has no SRAMIF; use MCIF")

    # the CSC's (extended) view of the input: for feature data it is the fetched cube
    ext_w = cdma.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1
    ext_h = cdma.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1
    _same("CDMA.D_DATAIN_SIZE_0.DATAIN_WIDTH", width - 1,
          "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT", ext_w - 1, "feature input")
    _same("CDMA.D_DATAIN_SIZE_0.DATAIN_HEIGHT", height - 1,
          "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT", ext_h - 1, "feature input")
    in_w = csc.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1
    in_h = csc.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1
    in_c = csc.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT + 1
    _same("CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT", ext_w - 1,
          "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT", in_w - 1, "one input cube")
    _same("CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL", channels - 1,
          "CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT", in_c - 1, "one input cube")

    entries = entries_per_slice(width, channels, prec, atom, cfg.cbuf_bank_width)
    for blk, v in (("CDMA", cdma), ("CSC", csc)):
        if v.D_ENTRY_PER_SLICE.ENTRIES != entries - 1:
            _err(f"{blk}.D_ENTRY_PER_SLICE.ENTRIES={v.D_ENTRY_PER_SLICE.ENTRIES}",
                 f"must be {entries - 1}: a {width}-wide line of {channels} channels takes "
                 f"{entries} CBUF entries")

    data_bank = cdma.D_BANK.DATA_BANK + 1
    weight_bank = cdma.D_BANK.WEIGHT_BANK + 1
    _same("CDMA.D_BANK.DATA_BANK", data_bank - 1, "CSC.D_BANK.DATA_BANK",
          csc.D_BANK.DATA_BANK, "one CBUF split")
    _same("CDMA.D_BANK.WEIGHT_BANK", weight_bank - 1, "CSC.D_BANK.WEIGHT_BANK",
          csc.D_BANK.WEIGHT_BANK, "one CBUF split")
    if data_bank + weight_bank > cfg.cbuf_banks:
        _err(f"CDMA.D_BANK={data_bank - 1}/{weight_bank - 1}",
             f"{data_bank} data + {weight_bank} weight banks exceed the build's "
             f"{cfg.cbuf_banks} CBUF banks")
    depth = cfg.cbuf_bank_depth
    if in_h * batches * entries > data_bank * depth:
        _err(f"CDMA.D_BANK.DATA_BANK={data_bank - 1}",
             f"the input needs {in_h * batches * entries} CBUF entries "
             f"({in_h} lines x {batches} batch(es) x {entries}); {data_bank} data bank(s) hold "
             f"{data_bank * depth}")

    # weights
    if _enum(cdma, D, "D_WEIGHT_FORMAT", "WEIGHT_FORMAT"):
        if not cfg.weight_compression:
            _err("CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED",
                 "this build has no weight compression")
        _err("CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED",
             "compressed weights are not modelled yet")
    _same("CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT", 0, "CSC.D_WEIGHT_FORMAT.WEIGHT_FORMAT",
          csc.D_WEIGHT_FORMAT.WEIGHT_FORMAT, "one weight format per layer")
    kw = csc.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT + 1
    kh = csc.D_WEIGHT_SIZE_EXT_0.WEIGHT_HEIGHT_EXT + 1
    wc = csc.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT + 1
    kernels = csc.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL + 1
    _same("CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT", in_c - 1,
          "CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT", wc - 1, "kernels span the input")
    _same("CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL", kernels - 1,
          "CDMA.D_WEIGHT_SIZE_1.WEIGHT_KERNEL", cdma.D_WEIGHT_SIZE_1.WEIGHT_KERNEL,
          "one kernel count")
    ebytes = _BYTES[prec]
    bpk = kw * kh * wc * ebytes
    _same("kernel width x height x channels x element bytes", bpk,
          "CDMA.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL", cdma.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL + 1,
          "bytes per kernel")
    wbytes = _bytes(cdma, "D_WEIGHT_BYTES", "WEIGHT_BYTES")
    if wbytes < bpk * kernels:
        _err(f"CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES={wbytes}",
             f"uncompressed weights need BYTE_PER_KERNEL x kernels = {bpk * kernels} bytes")
    _same("CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES", wbytes, "CSC.D_WEIGHT_BYTES.WEIGHT_BYTES",
          _bytes(csc, "D_WEIGHT_BYTES", "WEIGHT_BYTES"), "one weight surface")
    weight_base = _addr(cfg, cdma, "D_WEIGHT_ADDR_LOW", "WEIGHT_ADDR_LOW",
                        "D_WEIGHT_ADDR_HIGH", "WEIGHT_ADDR_HIGH")
    if weight_base % atom:
        _err(f"CDMA.D_WEIGHT_ADDR_LOW.WEIGHT_ADDR_LOW={weight_base:#x}",
             f"must be a multiple of the {atom}-byte memory atom")
    group_k = cfg.atomic_k if prec == INT8 else max(cfg.atomic_k // 2, 1)
    group_bytes = min(kernels, group_k) * bpk
    wcap = weight_bank * depth * cfg.cbuf_bank_width
    if group_bytes > wcap:
        _err(f"CDMA.D_BANK.WEIGHT_BANK={weight_bank - 1}",
             f"one kernel group needs {group_bytes} bytes; {weight_bank} weight bank(s) hold "
             f"{wcap}")

    # sequencing
    sx = csc.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT + 1
    sy = csc.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT + 1
    _same("CSC.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT", sx - 1,
          "CDMA.D_CONV_STRIDE.CONV_X_STRIDE", cdma.D_CONV_STRIDE.CONV_X_STRIDE, "one stride")
    _same("CSC.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT", sy - 1,
          "CDMA.D_CONV_STRIDE.CONV_Y_STRIDE", cdma.D_CONV_STRIDE.CONV_Y_STRIDE, "one stride")
    dx = csc.D_DILATION_EXT.X_DILATION_EXT + 1
    dy = csc.D_DILATION_EXT.Y_DILATION_EXT + 1
    pl, pt = csc.D_ZERO_PADDING.PAD_LEFT, csc.D_ZERO_PADDING.PAD_TOP
    _same("CSC.D_ZERO_PADDING.PAD_LEFT", pl, "CDMA.D_ZERO_PADDING.PAD_LEFT",
          cdma.D_ZERO_PADDING.PAD_LEFT, "one padding")
    _same("CSC.D_ZERO_PADDING.PAD_TOP", pt, "CDMA.D_ZERO_PADDING.PAD_TOP",
          cdma.D_ZERO_PADDING.PAD_TOP, "one padding")
    pr, pb = cdma.D_ZERO_PADDING.PAD_RIGHT, cdma.D_ZERO_PADDING.PAD_BOTTOM
    pad_value = csc.D_ZERO_PADDING_VALUE.PAD_VALUE
    ow = csc.D_DATAOUT_SIZE_0.DATAOUT_WIDTH + 1
    oh = csc.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT + 1
    oc = csc.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL + 1
    span_w, span_h = (kw - 1) * dx + 1, (kh - 1) * dy + 1
    for axis, o, s, span, n, a, b, fo, fa, fb in (
            ("width", ow, sx, span_w, in_w, pl, pr, "DATAOUT_WIDTH", "PAD_LEFT", "PAD_RIGHT"),
            ("height", oh, sy, span_h, in_h, pt, pb, "DATAOUT_HEIGHT", "PAD_TOP",
             "PAD_BOTTOM")):
        if span > n + a + b:
            _err(f"CSC.D_WEIGHT_SIZE_EXT_0 ({axis} {span} with dilation)",
                 f"the kernel is larger than the padded input ({n} + {fa} {a} + {fb} {b})")
        if (o - 1) * s + span > n + a + b:
            _err(f"CSC.D_DATAOUT_SIZE_0.{fo}={o - 1}",
                 f"{o} outputs at stride {s} need {(o - 1) * s + span} input positions; the "
                 f"padded input has {n + a + b}")
    _same("CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL", kernels - 1,
          "CSC.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL", oc - 1, "one output channel per kernel")
    for reg, f1, f2 in (("D_DATAOUT_SIZE_0", "DATAOUT_WIDTH", None),
                        ("D_DATAOUT_SIZE_0", "DATAOUT_HEIGHT", None),
                        ("D_DATAOUT_SIZE_1", "DATAOUT_CHANNEL", None)):
        _same(f"CSC.{reg}.{f1}", csc[reg][f1], f"CACC.{reg}.{f1}", cacc[reg][f1],
              "one output cube")

    clip = cacc.D_CLIP_CFG.CLIP_TRUNCATE
    if clip > ASSEMBLY_BITS - DELIVERY_BITS:
        _err(f"CACC.D_CLIP_CFG.CLIP_TRUNCATE={clip}",
             f"at most {ASSEMBLY_BITS - DELIVERY_BITS} bits can be truncated")

    misc = cdma.D_MISC_CFG
    for fld in ("DATA_REUSE", "WEIGHT_REUSE", "SKIP_DATA_RLS", "SKIP_WEIGHT_RLS"):
        _same(f"CDMA.D_MISC_CFG.{fld}", misc[fld], f"CSC.D_MISC_CFG.{fld}",
              csc.D_MISC_CFG[fld], "CDMA and CSC manage one CBUF")
    rls = csc.D_RELEASE.RLS_SLICES + 1
    if not misc.SKIP_DATA_RLS and rls > in_h * batches:
        _err(f"CSC.D_RELEASE.RLS_SLICES={rls - 1}",
             f"cannot release {rls} slices of a {in_h * batches}-slice input")

    return ConvProgram(
        precision=prec, in_precision=in_prec, width=width, height=height, channels=channels,
        batches=batches, base=base, line_stride=line_stride, surf_stride=surf_stride,
        batch_stride=batch_stride, line_packed=line_packed, surf_packed=surf_packed,
        ram_type=ram_type, grain=grain, entries=entries, cvt=cvt, in_width=in_w,
        in_height=in_h, in_channels=in_c, kernels=kernels, kw=kw, kh=kh, byte_per_kernel=bpk,
        weight_bytes=wbytes, weight_base=weight_base, weight_ram=weight_ram, stride_x=sx,
        stride_y=sy, dil_x=dx, dil_y=dy, pad_left=pl, pad_top=pt, pad_value=pad_value,
        out_width=ow, out_height=oh, out_channels=oc, data_bank=data_bank,
        weight_bank=weight_bank, data_reuse=bool(misc.DATA_REUSE),
        weight_reuse=bool(misc.WEIGHT_REUSE), skip_data_rls=bool(misc.SKIP_DATA_RLS),
        skip_weight_rls=bool(misc.SKIP_WEIGHT_RLS), rls_slices=rls, clip_truncate=clip)
