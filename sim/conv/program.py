"""Decode and check a direct-convolution register program (CDMA, CSC, CMAC_A/B, CACC).

The convolution pipeline is programmed through five register files whose settings must agree
(NVDLA's compiler writes the same geometry into CDMA, CSC and CACC). :func:`decode` reads the
consumer groups, checks every rule the golden model relies on and returns a
:class:`ConvProgram`; a program the hardware cannot run raises :class:`ConvProgramError` naming
the register field and the rule. Follows the hardware architectural spec ("Convolution DMA",
"Convolution Sequence Controller", "Convolution Accumulator") and the data-format spec
(feature data, weights for direct convolution, precision conversion tables).

Image input (``D_DATAIN_FORMAT.DATAIN_FORMAT=PIXEL``, :class:`ImageInput`; the fetch is
:mod:`.image`): the format must be one the build enables (``image_packed_formats`` /
``image_semi_formats``), pitch linear, with Table 33's input precision and channel count and
Table 29's conversion to the processing precision (the convertor, ``D_CVT_CFG.CVT_EN``, is
needed whenever they differ and for unsigned integer pixels; fp16 pixels go to fp16
processing unconverted, integer pixels to fp16 through the convertor); PIXEL_X_OFFSET
within the first atom, PIXEL_Y_OFFSET 0, line strides covering the ROI, one batch, no data reuse. The CDMA writes
each line with its left/right padding, so ``D_ENTRY_PER_SLICE`` counts
``PAD_LEFT + width + PAD_RIGHT`` pixels; the CSC takes pre-extended weights
(``WEIGHT_WIDTH_EXT`` 0, ``WEIGHT_CHANNEL_EXT + 1`` = kernel width x channels), ignores
dilation, and combines 2 or 4 lines with ``D_POST_Y_EXTENSION`` when kernel width x channels
and x stride x channels fit Atomic-C / lines (post-extension is rejected for feature data).

Winograd (``D_MISC_CFG.CONV_MODE=WINOGRAD``, builds with ``winograd``): after the feature
input's rules (shared), :func:`sim.conv.winograd.decode_winograd` checks the rest and returns
the program with its :class:`WinogradInput`; the bank, weight-surface, reuse-flag and
truncation rules are the shared helpers :func:`cbuf_banks`, :func:`weight_surface`,
:func:`reuse_flags` and :func:`clip_truncate`.

Batches (``D_BATCH_NUMBER.BATCHES`` + 1, the same in CDMA, CSC and CACC; builds with
``batching``, at most ``max_batch``; feature input only): batch ``b``'s cube is read from
``base + b x D_BATCH_STRIDE`` (an atom multiple, at least SURF_STRIDE x surfaces, as NVDLA's
CDMA requires), with the same line / surface strides, grain and packing; the CBUF holds the
slices line-major with the batches interleaved (slice ``y x B + b``), so every size in slices
(the data banks, ``D_RELEASE``, data reuse) counts ``height x B``; ``D_ATOMICS`` counts the
output positions of one batch. The geometry, weights and output cube are per batch; SDP takes
the batches in its batch mode (:mod:`sim.sdp.sdp`), and CACC's output address and strides must
agree with SDP's modulo two memory atoms (:func:`check_batch_delivery`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.formats.common import ceil_div
from sim.formats.pixel import PixelFormat, max_x_offset, pixel_format
from sim.formats.rules import PrecisionConversionError, check_precision_conversion

__all__ = ["ConvProgramError", "ConvProgram", "ImageInput", "FeatureInput", "WinogradInput",
           "decode", "check_batch_delivery", "cbuf_banks", "weight_surface", "reuse_flags",
           "clip_truncate",
           "PRECISIONS",
           "entries_per_slice", "image_entries_per_slice", "uv_x_offset_bytes", "RAM_CV",
           "RAM_MC"]

RAM_CV, RAM_MC = 0, 1
INT8, INT16, FP16 = 0, 1, 2
PRECISIONS = {INT8: "int8", INT16: "int16", FP16: "fp16"}
_BYTES = {INT8: 1, INT16: 2, FP16: 2}
#: CACC assembly width (bits) and delivery width: a truncation may drop at most 16 bits.
ASSEMBLY_BITS, DELIVERY_BITS = 48, 32
#: WEIGHT_BYTES granule (data-format spec Table 35: weight data size alignment).
WEIGHT_BYTES_ALIGN = 128


class ConvProgramError(ValueError):
    """A convolution register program the hardware cannot run; the message names the register
    field and the rule."""


def _err(where: str, rule: str):
    raise ConvProgramError(f"{where}: {rule}")


def entries_per_slice(width: int, channels: int, precision: int, atom: int,
                      entry_bytes: int) -> int:
    """CBUF entries one input line (a slice in direct convolution) takes.

    A line holds ``ceil(C x element bytes / atom)`` memory atoms per position; whole entries
    hold ``entry_bytes / atom`` atoms of one position, and a last, partial entry ("cripple"
    atoms) is shared between 2 or 4 positions when it holds at most half / a quarter of an
    entry. Atoms are counted in bytes, as NVDLA v1's C model does (its int16 traces prove it;
    for int8 this is the same count as the nv_small C model's atoms of Atomic-M elements).
    ``entry_bytes`` is ``cfg.cbuf_entry_bytes``.
    """
    per_entry = max(entry_bytes // atom, 1)
    atoms = ceil_div(channels * _BYTES[precision], atom)
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


def image_entries_per_slice(width: int, pad_left: int, pad_right: int, channels: int,
                            precision: int, bank_width: int) -> int:
    """CBUF entries one image line takes: the CDMA writes the line with its left and right
    padding, ``channels`` elements per pixel in the processing precision, packed back to back
    and rounded up to whole entries."""
    return ceil_div((pad_left + width + pad_right) * channels * _BYTES[precision], bank_width)


@dataclass(frozen=True)
class Compression:
    """A compressed weight (``D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED``): where its WGS and WMB
    surfaces are (data-format spec, "Sparse Compression option"; the compressed weights
    themselves are ``WEIGHT_BYTES`` bytes from ``WEIGHT_ADDR``)."""
    wgs_base: int             #: one 32-bit byte count per kernel group
    wmb_base: int             #: one mask bit per weight element, little-endian
    wmb_bytes: int            #: D_WMB_BYTES in bytes
    groups: tuple             #: weight elements of each kernel group (memory order)


@dataclass(frozen=True)
class ImageInput:
    """The image-input settings of a layer (``D_DATAIN_FORMAT.DATAIN_FORMAT=PIXEL``)."""
    fmt: PixelFormat
    x_offset: int             #: PIXEL_X_OFFSET (pixels before the ROI in each line)
    base1: int                #: plane-1 (U/V) base address of semi-planar formats
    uv_line_stride: int
    signed: bool              #: PIXEL_SIGN_OVERRIDE=SIGNED_INT
    mean: tuple | None        #: (RY, GU, BV, AX) signed 16-bit, when MEAN_FORMAT=ENABLE
    pad_left: int             #: CDMA's left / right padding (done while writing the CBUF)
    pad_right: int
    pad_value: int            #: CDMA's D_ZERO_PADDING_VALUE (left / right padding)
    post_extension: int       #: CSC D_POST_Y_EXTENSION as a line count (1, 2, 4)


@dataclass(frozen=True)
class FeatureInput:
    """The checked feature-input settings :func:`decode` hands the Winograd decoder
    (:func:`sim.conv.winograd.decode_winograd`): precisions, the input cube in memory and
    how the CDMA fetches it."""
    precision: int
    in_precision: int
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
    weight_ram: int
    grain: int
    cvt: tuple | None
    nan_to_zero: bool


@dataclass(frozen=True)
class WinogradInput:
    """The Winograd settings of a layer (``D_MISC_CFG.CONV_MODE=WINOGRAD``): CDMA pads the
    input on all four sides and extends its channels by the stride; the CSC sees that cube
    (``ConvProgram.in_width`` / ``in_height`` / ``in_channels``)."""
    pad: tuple                #: CDMA's (left, right, top, bottom)
    pad_value: int            #: CDMA's D_ZERO_PADDING_VALUE (16 bits; int8 takes the low byte)
    pra_truncate: int         #: the shift the PRA applies (PRA_TRUNCATE, 3 read as 2)
    pra_truncate_field: int   #: CSC.D_PRA_CFG.PRA_TRUNCATE as programmed


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
    #: image input (None: feature data). For an image the CSC view is the padded line:
    #: ``in_width`` = PAD_LEFT + width + PAD_RIGHT, ``pad_left`` 0, ``kw`` the original
    #: kernel width S (WEIGHT_CHANNEL_EXT = S x channels), dilation 1.
    image: ImageInput | None = None
    #: compressed weights (None: the uncompressed weight surface)
    compression: Compression | None = None
    #: CDMA's D_NAN_FLUSH_TO_ZERO (fp16 input: fetched NaN elements become +0)
    nan_to_zero: bool = False
    #: Winograd (None: direct convolution). Its CSC view is the padded, channel-extended
    #: cube; ``kw`` = ``kh`` = 4, strides and dilation 1, no CSC padding.
    winograd: WinogradInput | None = None

    @property
    def element_bytes(self) -> int:
        return _BYTES[self.precision]

    @property
    def name(self) -> str:
        return PRECISIONS[self.precision]


def _compression(cfg, cdma, csc, kernels, bpk, ebytes, group_k, data_bank, weight_bank,
                 atom) -> Compression:
    """Decode and check a compressed weight's registers (data-format spec "Sparse Compression
    option"; NVDLA v1's CDMA: the WMB streams through the last CBUF bank, one mask bit per
    weight element, ``WMB_BYTES`` = the mask rounded up to 128 bytes)."""
    groups = tuple(min(group_k, kernels - g) * bpk // ebytes for g in range(0, kernels, group_k))
    elements = sum(groups)
    need = ceil_div(elements, 8 * WEIGHT_BYTES_ALIGN) * WEIGHT_BYTES_ALIGN
    wmb_bytes = _bytes(cdma, "D_WMB_BYTES", "WMB_BYTES")
    if wmb_bytes != need:
        _err(f"CDMA.D_WMB_BYTES.WMB_BYTES={wmb_bytes}",
             f"must be {need}: one mask bit for each of the {elements} weight elements, "
             f"rounded up to {WEIGHT_BYTES_ALIGN} bytes")
    _same("CDMA.D_WMB_BYTES.WMB_BYTES", wmb_bytes, "CSC.D_WMB_BYTES.WMB_BYTES",
          _bytes(csc, "D_WMB_BYTES", "WMB_BYTES"), "one weight mask")
    bases = []
    for what in ("WGS", "WMB"):
        base = _addr(cfg, cdma, f"D_{what}_ADDR_LOW", f"{what}_ADDR_LOW", f"D_{what}_ADDR_HIGH",
                     f"{what}_ADDR_HIGH")
        if base % atom:
            _err(f"CDMA.D_{what}_ADDR_LOW.{what}_ADDR_LOW={base:#x}",
                 f"must be a multiple of the {atom}-byte memory atom")
        bases.append(base)
    if data_bank + weight_bank > cfg.cbuf_banks - 1:
        _err(f"CDMA.D_BANK.WEIGHT_BANK={weight_bank - 1}",
             f"compressed weights keep the last CBUF bank for the weight mask: data banks + "
             f"weight banks = {data_bank + weight_bank} must be at most {cfg.cbuf_banks - 1}")
    bank = cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
    if cdma.D_MISC_CFG.SKIP_WEIGHT_RLS and wmb_bytes > bank:
        _err("CDMA.D_MISC_CFG.SKIP_WEIGHT_RLS=ENABLE",
             f"a kept weight mask must fit its CBUF bank: WMB_BYTES {wmb_bytes} > {bank}")
    # NVDLA's CDMA ("Run out of weight buffer: WMB"): a mask larger than its bank streams
    # through it a kernel group at a time, 128 bytes of the bank kept free
    if wmb_bytes > bank and max(groups) > 8 * (bank - WEIGHT_BYTES_ALIGN):
        _err(f"CDMA.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL={bpk - 1}",
             f"the mask of one kernel group ({max(groups)} bits) must fit the mask bank less "
             f"{WEIGHT_BYTES_ALIGN} bytes ({8 * (bank - WEIGHT_BYTES_ALIGN)} bits) when the "
             f"whole mask (WMB_BYTES {wmb_bytes}) does not fit it")
    return Compression(bases[0], bases[1], wmb_bytes, groups)


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


_PREC_CODE = {"int8": INT8, "int16": INT16, "fp16": FP16}


def _s16(v: int) -> int:
    return v - (1 << 16) if v & 0x8000 else v


def _image_format(cfg, cdma, in_prec: int, prec: int) -> PixelFormat:
    """The pixel format of an image-input layer, checked against the build, Table 33 (input
    precision, channels) and Table 29 (precision conversion)."""
    code = cdma.D_DATAIN_FORMAT.PIXEL_FORMAT
    try:
        f = pixel_format(int(code))
    except ValueError:
        _err(f"CDMA.D_DATAIN_FORMAT.PIXEL_FORMAT={code}", "reserved value (Table 33: 0..35)")
    where = f"CDMA.D_DATAIN_FORMAT.PIXEL_FORMAT={f.name}"
    enabled = set(cfg.image_packed_formats) | set(cfg.image_semi_formats)
    if f.name[2:] not in enabled:
        _err(where, "this build does not take this image format (image_packed_formats / "
             "image_semi_formats: " + ", ".join(sorted(enabled)) + ")")
    if cdma.D_DATAIN_FORMAT.PIXEL_MAPPING:
        _err("CDMA.D_DATAIN_FORMAT.PIXEL_MAPPING=RESERVED_LINEAR",
             "image input is pitch linear only")
    if in_prec != _PREC_CODE[f.precision]:
        _err(f"CDMA.D_MISC_CFG.IN_PRECISION={PRECISIONS[in_prec].upper()}",
             f"{f.name} pixels are {f.precision.upper()} input (Table 33)")
    try:
        check_precision_conversion("conv", f.name, PRECISIONS[prec])
    except PrecisionConversionError as e:
        _err(f"CDMA.D_MISC_CFG.PROC_PRECISION={PRECISIONS[prec].upper()}", str(e))
    return f


def _image_input(cfg, cdma, csc, f: PixelFormat, width: int, channels: int,
                 line_stride: int, cvt) -> ImageInput:
    """The remaining image-input rules (channels, pixel offsets, strides and the second plane,
    sign, post-extension) and the :class:`ImageInput` of the layer."""
    atom = cfg.memory_atom
    if channels != f.channels:
        _err(f"CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL={channels - 1}",
             f"{f.name} has {f.channels} channel(s) (Table 33): must be {f.channels - 1}")
    xo = cdma.D_PIXEL_OFFSET.PIXEL_X_OFFSET
    xmax = max_x_offset(f, atom)
    if xo > xmax:
        _err(f"CDMA.D_PIXEL_OFFSET.PIXEL_X_OFFSET={xo}",
             f"{f.name}: the first pixel must lie in the first {atom}-byte atom of the line "
             f"(0..{xmax})")
    if cdma.D_PIXEL_OFFSET.PIXEL_Y_OFFSET:
        _err(f"CDMA.D_PIXEL_OFFSET.PIXEL_Y_OFFSET={cdma.D_PIXEL_OFFSET.PIXEL_Y_OFFSET}",
             "must be 0 for pitch-linear image input")
    bpp0 = f.bytes_per_pixel[0]
    need = (xo + width) * bpp0
    if line_stride < need:
        _err(f"CDMA.D_LINE_STRIDE.LINE_STRIDE={line_stride}",
             f"a line of PIXEL_X_OFFSET {xo} + {width} pixels of {bpp0} bytes needs {need}")
    base1 = uv = 0
    if f.planes == 2:
        base1 = _addr(cfg, cdma, "D_DAIN_ADDR_LOW_1", "DATAIN_ADDR_LOW_1",
                      "D_DAIN_ADDR_HIGH_1", "DATAIN_ADDR_HIGH_1")
        uv = _bytes(cdma, "D_LINE_UV_STRIDE", "UV_LINE_STRIDE")
        for name, v in (("D_DAIN_ADDR_LOW_1.DATAIN_ADDR_LOW_1", base1),
                        ("D_LINE_UV_STRIDE.UV_LINE_STRIDE", uv)):
            if v % atom:
                _err(f"CDMA.{name}={v:#x}", f"must be a multiple of the {atom}-byte memory atom")
        bpp1 = f.bytes_per_pixel[1]
        need1 = uv_x_offset_bytes(f, xo, atom) + width * bpp1
        if uv < need1:
            _err(f"CDMA.D_LINE_UV_STRIDE.UV_LINE_STRIDE={uv}",
                 f"a U/V line of {width} pixels of {bpp1} bytes from its offset needs {need1}")
    signed = bool(cdma.D_DATAIN_FORMAT.PIXEL_SIGN_OVERRIDE)
    if not signed and cvt is None and not f.is_float:
        _err("CDMA.D_DATAIN_FORMAT.PIXEL_SIGN_OVERRIDE=UNSIGNED_INT",
             "unsigned pixels reach the MAC only through the input convertor: needs "
             "D_CVT_CFG.CVT_EN=ENABLE (or SIGNED_INT)")
    mean = None
    if cdma.D_MEAN_FORMAT.MEAN_FORMAT:
        g0, g1 = cdma.D_MEAN_GLOBAL_0, cdma.D_MEAN_GLOBAL_1
        mean = (_s16(g0.MEAN_RY), _s16(g0.MEAN_GU), _s16(g1.MEAN_BV), _s16(g1.MEAN_AX))
    return ImageInput(
        fmt=f, x_offset=xo, base1=base1, uv_line_stride=uv, signed=signed, mean=mean,
        pad_left=cdma.D_ZERO_PADDING.PAD_LEFT, pad_right=cdma.D_ZERO_PADDING.PAD_RIGHT,
        pad_value=cdma.D_ZERO_PADDING_VALUE.PAD_VALUE,
        post_extension=1 << csc.D_POST_Y_EXTENSION.Y_EXTENSION)


def uv_x_offset_bytes(f: PixelFormat, x_offset: int, atom: int) -> int:
    """Bytes from the plane-1 (U/V) line start to the first ROI pixel: the X offset in U/V
    bytes within one atom (NVDLA's CDMA takes it modulo the atom, so the plane-1 address must
    point at the atom holding the first U/V pixel). The atom counts 16-bit elements for the
    10/12/16-bit semi-planar formats, as NVDLA's C model does."""
    esize = 1 if f.bytes_per_pixel[0] == 1 else 2
    return (x_offset * f.bytes_per_pixel[1]) % (atom * esize)


def decode(cfg, cdma, csc, cmac_a, cmac_b, cacc) -> ConvProgram:
    """Check the consumer groups' program and return it (see the module docstring)."""
    D = "CDMA"
    fmt = _enum(cdma, D, "D_DATAIN_FORMAT", "DATAIN_FORMAT")
    _same("CDMA.D_DATAIN_FORMAT.DATAIN_FORMAT", fmt, "CSC.D_DATAIN_FORMAT.DATAIN_FORMAT",
          _enum(csc, "CSC", "D_DATAIN_FORMAT", "DATAIN_FORMAT"), "one input format per layer")
    mode = _enum(cdma, D, "D_MISC_CFG", "CONV_MODE")
    if mode:
        if fmt:
            _err("CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD",
                 "image input (DATAIN_FORMAT=PIXEL) is direct convolution only")
        if not cfg.winograd:
            _err("CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD", "this build has no Winograd")
    for blk, v in (("CSC", csc), ("CMAC_A", cmac_a), ("CMAC_B", cmac_b), ("CACC", cacc)):
        _same("CDMA.D_MISC_CFG.CONV_MODE", mode, f"{blk}.D_MISC_CFG.CONV_MODE",
              _enum(v, blk, "D_MISC_CFG", "CONV_MODE"), "one mode per layer")
    in_prec = _enum(cdma, D, "D_MISC_CFG", "IN_PRECISION")
    prec = _enum(cdma, D, "D_MISC_CFG", "PROC_PRECISION")
    pix = None
    if fmt:
        pix = _image_format(cfg, cdma, in_prec, prec)
    # image input takes the pixel's own precision (Table 33) whenever the build takes the
    # format; the convertor brings it to a processing precision the build computes
    for what, p in ((("IN_PRECISION", in_prec),) if pix is None else ()) + \
            (("PROC_PRECISION", prec),):
        if PRECISIONS[p] not in cfg.data_types:
            _err(f"CDMA.D_MISC_CFG.{what}={PRECISIONS[p].upper()}",
                 f"this build computes {'/'.join(cfg.data_types)} only")
    for blk, v in (("CSC", csc), ("CMAC_A", cmac_a), ("CMAC_B", cmac_b), ("CACC", cacc)):
        _same("CDMA.D_MISC_CFG.PROC_PRECISION", prec, f"{blk}.D_MISC_CFG.PROC_PRECISION",
              _enum(v, blk, "D_MISC_CFG", "PROC_PRECISION"), "one precision per layer")
    _same("CDMA.D_MISC_CFG.IN_PRECISION", in_prec, "CSC.D_MISC_CFG.IN_PRECISION",
          _enum(csc, "CSC", "D_MISC_CFG", "IN_PRECISION"), "one input precision per layer")

    cvt = None
    if _enum(cdma, D, "D_CVT_CFG", "CVT_EN"):
        if in_prec == FP16 or (pix is not None and pix.is_float):
            _err("CDMA.D_CVT_CFG.CVT_EN=ENABLE", "the input convertor takes integer input "
                 "(int8 / int16 features, integer pixels); fp16 features and the _F pixel "
                 "formats go to the CBUF unconverted")
        off = cdma.D_CVT_OFFSET.CVT_OFFSET
        scale = cdma.D_CVT_SCALE.CVT_SCALE
        cvt = (off - (1 << 16) if off & 0x8000 else off,
               scale - (1 << 16) if scale & 0x8000 else scale,
               cdma.D_CVT_CFG.CVT_TRUNCATE)
    if pix is None and in_prec != prec:
        # Table 29: direct convolution converts no precision (int8 feature data into an int16
        # pipeline, int16 into int8, and the fp16 pairs are invalid cases); the convertor
        # only scales within the precision
        try:
            check_precision_conversion("conv", PRECISIONS[in_prec], PRECISIONS[prec])
        except PrecisionConversionError as e:
            _err(f"CDMA.D_MISC_CFG.IN_PRECISION={PRECISIONS[in_prec].upper()}",
                 f"must equal PROC_PRECISION={PRECISIONS[prec].upper()} for feature input: "
                 f"{e}")
    elif in_prec != prec and cvt is None and not pix.is_float:
        # (T_R16_F is INT16 input in Table 33 but fp16 codes: they go to fp16 unconverted)
        _err(f"CDMA.D_MISC_CFG.IN_PRECISION={PRECISIONS[in_prec].upper()}",
             f"must equal PROC_PRECISION={PRECISIONS[prec].upper()} unless "
             "D_CVT_CFG.CVT_EN converts it (precision conversion table)")
    y_ext = csc.D_POST_Y_EXTENSION.Y_EXTENSION
    if y_ext and pix is None:
        _err(f"CSC.D_POST_Y_EXTENSION.Y_EXTENSION={y_ext}",
             "channel post-extension is for image input only (Table 34); must be 0")
    if y_ext == 3:
        _err("CSC.D_POST_Y_EXTENSION.Y_EXTENSION=3", "reserved (0, 1, 2: 1, 2 or 4 lines)")

    batches = cdma.D_BATCH_NUMBER.BATCHES + 1
    max_batch = cfg.max_batch if cfg.batching else 1
    if batches > max_batch:
        _err(f"CDMA.D_BATCH_NUMBER.BATCHES={batches - 1}",
             f"this build convolves at most {max_batch} batch(es)")
    if pix is not None and batches > 1:
        _err(f"CDMA.D_BATCH_NUMBER.BATCHES={batches - 1}", "image input has one batch")
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
    checked = [("D_DAIN_ADDR_LOW_0.DATAIN_ADDR_LOW_0", base),
               ("D_LINE_STRIDE.LINE_STRIDE", line_stride)]
    if pix is None:
        checked.append(("D_SURF_STRIDE.SURF_STRIDE", surf_stride))
    if batches > 1:
        checked.append(("D_BATCH_STRIDE.BATCH_STRIDE", batch_stride))
    for name, v in checked:
        if v % atom:
            _err(f"CDMA.{name}={v:#x}", f"must be a multiple of the {atom}-byte memory atom")
    line_packed = bool(_enum(cdma, D, "D_DAIN_MAP", "LINE_PACKED"))
    surf_packed = bool(_enum(cdma, D, "D_DAIN_MAP", "SURF_PACKED"))
    grain = cdma.D_FETCH_GRAIN.GRAINS + 1
    if pix is None:
        if line_packed != (line_stride == width * atom):
            _err(f"CDMA.D_DAIN_MAP.LINE_PACKED={int(line_packed)}",
                 f"must be 1 exactly when LINE_STRIDE ({line_stride}) = width x atom "
                 f"({width * atom})")
        if line_stride < width * atom:
            _err(f"CDMA.D_LINE_STRIDE.LINE_STRIDE={line_stride}",
                 f"lines overlap: must be at least width x atom = {width * atom}")
        if not line_packed and grain != 1:
            _err(f"CDMA.D_FETCH_GRAIN.GRAINS={grain - 1}",
                 "must be 0 when lines are not packed")
        if grain > height:
            _err(f"CDMA.D_FETCH_GRAIN.GRAINS={grain - 1}",
                 f"fetch grain {grain} exceeds the input height {height}")
        surfaces = ceil_div(channels * in_bytes, atom)
        if surfaces > 1 and surf_stride < line_stride * height:
            _err(f"CDMA.D_SURF_STRIDE.SURF_STRIDE={surf_stride}",
                 f"surfaces overlap: must be at least LINE_STRIDE x height = "
                 f"{line_stride * height}")
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

    if mode:
        from .winograd import decode_winograd
        return decode_winograd(cfg, cdma, csc, cacc, FeatureInput(
            precision=prec, in_precision=in_prec, width=width, height=height,
            channels=channels, batches=batches, base=base, line_stride=line_stride,
            surf_stride=surf_stride, batch_stride=batch_stride, line_packed=line_packed,
            surf_packed=surf_packed, ram_type=ram_type, weight_ram=weight_ram, grain=grain,
            cvt=cvt, nan_to_zero=bool(_enum(cdma, D, "D_NAN_FLUSH_TO_ZERO", "NAN_TO_ZERO"))))

    # the CSC's (extended) view of the input: for feature data and images it is the fetched
    # cube (an image's left/right padding is added by the CDMA, its top/bottom by the CSC)
    # CDMA's own D_DATAIN_SIZE_EXT is Winograd's (NVDLA's C model never reads it and its RTL
    # only in the Winograd path): direct-convolution feature input ignores it (NVDLA's nv_full
    # traceplayer tests leave it 0); image input here keeps it equal to the fetched size
    ext_w = cdma.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1
    ext_h = cdma.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1
    if pix is not None:
        _same("CDMA.D_DATAIN_SIZE_0.DATAIN_WIDTH", width - 1,
              "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT", ext_w - 1, "image input")
        _same("CDMA.D_DATAIN_SIZE_0.DATAIN_HEIGHT", height - 1,
              "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT", ext_h - 1, "image input")
    in_w = csc.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1
    in_h = csc.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1
    in_c = csc.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT + 1
    _same("CDMA.D_DATAIN_SIZE_0.DATAIN_WIDTH", width - 1,
          "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT", in_w - 1, "one input cube")
    _same("CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL", channels - 1,
          "CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT", in_c - 1, "one input cube")
    if pix is not None and not (cdma.D_MISC_CFG.DATA_REUSE and csc.D_MISC_CFG.DATA_REUSE):
        # (with DATA_REUSE the CSC's lines are the kept ones plus the fetch: load_cbuf)
        _same("CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT", ext_h - 1,
              "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT", in_h - 1,
              "image input without data reuse is fetched whole")

    image = None
    if pix is not None:
        image = _image_input(cfg, cdma, csc, pix, width, channels, line_stride, cvt)
    if pix is None:
        entries = entries_per_slice(width, channels, prec, atom, cfg.cbuf_entry_bytes)
        line_what = f"a {width}-wide line of {channels} channels"
    else:
        pl_, pr_ = cdma.D_ZERO_PADDING.PAD_LEFT, cdma.D_ZERO_PADDING.PAD_RIGHT
        entries = image_entries_per_slice(width, pl_, pr_, channels, prec,
                                          cfg.cbuf_entry_bytes)
        line_what = (f"an image line of PAD_LEFT {pl_} + {width} + PAD_RIGHT {pr_} pixels of "
                     f"{channels} {PRECISIONS[prec]} elements")
    for blk, v in (("CDMA", cdma), ("CSC", csc)):
        if v.D_ENTRY_PER_SLICE.ENTRIES != entries - 1:
            _err(f"{blk}.D_ENTRY_PER_SLICE.ENTRIES={v.D_ENTRY_PER_SLICE.ENTRIES}",
                 f"must be {entries - 1}: {line_what} takes {entries} CBUF entries")

    data_bank, weight_bank = cbuf_banks(cfg, cdma, csc, in_h * batches, entries,
                                        f"{in_h} lines x {batches} batch(es) x {entries}")

    # weights
    kw = csc.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT + 1
    kh = csc.D_WEIGHT_SIZE_EXT_0.WEIGHT_HEIGHT_EXT + 1
    wc = csc.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT + 1
    kernels = csc.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL + 1
    if image is None:
        _same("CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT", in_c - 1,
              "CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT", wc - 1, "kernels span the input")
    else:
        # image weights are pre-extended: one kernel line is one channel vector of S x C
        if kw != 1:
            _err(f"CSC.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT={kw - 1}",
                 "must be 0 for image input: weights are pre-extended (kernel width 1, "
                 "WEIGHT_CHANNEL_EXT + 1 = kernel width x channels)")
        if wc % in_c:
            _err(f"CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT={wc - 1}",
                 f"image input: WEIGHT_CHANNEL_EXT + 1 = kernel width x {in_c} channels "
                 f"(pre-extension); {wc} is not a multiple of {in_c}")
    _same("CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL", kernels - 1,
          "CDMA.D_WEIGHT_SIZE_1.WEIGHT_KERNEL", cdma.D_WEIGHT_SIZE_1.WEIGHT_KERNEL,
          "one kernel count")
    ebytes = _BYTES[prec]
    bpk = kw * kh * wc * ebytes
    _same("kernel width x height x channels x element bytes", bpk,
          "CDMA.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL", cdma.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL + 1,
          "bytes per kernel")
    wbytes, weight_base, compression = weight_surface(cfg, cdma, csc, prec, kernels, bpk,
                                                      data_bank, weight_bank)

    # sequencing
    sx = csc.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT + 1
    sy = csc.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT + 1
    _same("CSC.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT", sx - 1,
          "CDMA.D_CONV_STRIDE.CONV_X_STRIDE", cdma.D_CONV_STRIDE.CONV_X_STRIDE, "one stride")
    _same("CSC.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT", sy - 1,
          "CDMA.D_CONV_STRIDE.CONV_Y_STRIDE", cdma.D_CONV_STRIDE.CONV_Y_STRIDE, "one stride")
    dx = csc.D_DILATION_EXT.X_DILATION_EXT + 1
    dy = csc.D_DILATION_EXT.Y_DILATION_EXT + 1
    if image is not None:
        dx = dy = 1                 # the sequencer ignores dilation for image input
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
    seq_w, seq_pl, seq_pr = in_w, pl, pr
    if image is not None:
        # the CDMA wrote the left/right padding into each CBUF line; the sequencer walks the
        # padded line with the original kernel width S
        kw = wc // in_c
        seq_w, seq_pl, seq_pr = pl + in_w + pr, 0, 0
        p_ext = image.post_extension
        if p_ext > 1:
            lanes = cfg.atomic_c // p_ext
            for what_, v in (("kernel width x channels (WEIGHT_CHANNEL_EXT + 1)", wc),
                             ("CONV_X_STRIDE_EXT + 1 x channels", sx * in_c)):
                if v > lanes:
                    _err(f"CSC.D_POST_Y_EXTENSION.Y_EXTENSION={p_ext // 2}",
                         f"{p_ext}-line post-extension needs {what_} = {v} <= Atomic-C / "
                         f"{p_ext} = {lanes}")
    span_w, span_h = (kw - 1) * dx + 1, (kh - 1) * dy + 1
    for axis, o, s, span, n, a, b, fo, fa, fb in (
            ("width", ow, sx, span_w, seq_w, seq_pl, seq_pr, "DATAOUT_WIDTH", "PAD_LEFT",
             "PAD_RIGHT"),
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

    if image is None and csc.D_ATOMICS.ATOMICS + 1 != ow * oh:
        # the sequencer walks ATOMICS + 1 output positions of a feature layer (an image
        # layer's count comes from DATAOUT_WIDTH)
        _err(f"CSC.D_ATOMICS.ATOMICS={csc.D_ATOMICS.ATOMICS}",
             f"must be DATAOUT_WIDTH x DATAOUT_HEIGHT - 1 = {ow * oh - 1} (the output "
             "positions of the layer)")

    clip = clip_truncate(cacc)

    misc = reuse_flags(cdma, csc)
    rls = csc.D_RELEASE.RLS_SLICES + 1
    if not misc.SKIP_DATA_RLS and rls > in_h * batches:
        _err(f"CSC.D_RELEASE.RLS_SLICES={rls - 1}",
             f"cannot release {rls} slices of a {in_h * batches}-slice input")

    return ConvProgram(
        precision=prec, in_precision=in_prec, width=width, height=height, channels=channels,
        batches=batches, base=base, line_stride=line_stride, surf_stride=surf_stride,
        batch_stride=batch_stride, line_packed=line_packed, surf_packed=surf_packed,
        ram_type=ram_type, grain=grain, entries=entries, cvt=cvt, in_width=seq_w,
        in_height=in_h, in_channels=in_c, kernels=kernels, kw=kw, kh=kh, byte_per_kernel=bpk,
        weight_bytes=wbytes, weight_base=weight_base, weight_ram=weight_ram, stride_x=sx,
        stride_y=sy, dil_x=dx, dil_y=dy, pad_left=seq_pl, pad_top=pt, pad_value=pad_value,
        out_width=ow, out_height=oh, out_channels=oc, data_bank=data_bank,
        weight_bank=weight_bank, data_reuse=bool(misc.DATA_REUSE),
        weight_reuse=bool(misc.WEIGHT_REUSE), skip_data_rls=bool(misc.SKIP_DATA_RLS),
        skip_weight_rls=bool(misc.SKIP_WEIGHT_RLS), rls_slices=rls, clip_truncate=clip,
        image=image, compression=compression,
        nan_to_zero=bool(_enum(cdma, D, "D_NAN_FLUSH_TO_ZERO", "NAN_TO_ZERO")))


def cbuf_banks(cfg, cdma, csc, slices: int, entries: int, what: str) -> tuple[int, int]:
    """(data banks, weight banks) of ``D_BANK``, checked: CDMA and CSC agree, the build has
    them, and ``slices`` CBUF slices of ``entries`` entries (``what`` says how they count)
    fit the data banks."""
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
    depth = cfg.cbuf_entry_depth
    if slices * entries > data_bank * depth:
        _err(f"CDMA.D_BANK.DATA_BANK={data_bank - 1}",
             f"the input needs {slices * entries} CBUF entries ({what}); {data_bank} data "
             f"bank(s) hold {data_bank * depth}")
    return data_bank, weight_bank


def weight_surface(cfg, cdma, csc, prec: int, kernels: int, bpk: int, data_bank: int,
                   weight_bank: int):
    """(WEIGHT_BYTES, weight base, :class:`Compression` or None) of the layer's weight
    surface of ``kernels`` kernels of ``bpk`` bytes, checked (format, sizes, alignment, the
    CBUF's weight banks, the compressed surfaces)."""
    D = "CDMA"
    atom = cfg.memory_atom
    depth = cfg.cbuf_entry_depth
    ebytes = _BYTES[prec]
    compressed = _enum(cdma, D, "D_WEIGHT_FORMAT", "WEIGHT_FORMAT")
    if compressed and not cfg.weight_compression:
        _err("CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED",
             "this build has no weight compression")
    _same("CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT", compressed, "CSC.D_WEIGHT_FORMAT.WEIGHT_FORMAT",
          csc.D_WEIGHT_FORMAT.WEIGHT_FORMAT, "one weight format per layer")
    wbytes = _bytes(cdma, "D_WEIGHT_BYTES", "WEIGHT_BYTES")
    if not compressed and wbytes < bpk * kernels:
        _err(f"CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES={wbytes}",
             f"uncompressed weights need BYTE_PER_KERNEL x kernels = {bpk * kernels} bytes")
    if compressed and not wbytes:
        _err("CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES=0", "compressed weights need at least one "
             f"{WEIGHT_BYTES_ALIGN}-byte granule")
    if wbytes % WEIGHT_BYTES_ALIGN:
        _err(f"CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES={wbytes}",
             f"must be a multiple of {WEIGHT_BYTES_ALIGN} bytes (weight data size alignment, "
             "data-format spec Table 35)")
    _same("CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES", wbytes, "CSC.D_WEIGHT_BYTES.WEIGHT_BYTES",
          _bytes(csc, "D_WEIGHT_BYTES", "WEIGHT_BYTES"), "one weight surface")
    weight_base = _addr(cfg, cdma, "D_WEIGHT_ADDR_LOW", "WEIGHT_ADDR_LOW",
                        "D_WEIGHT_ADDR_HIGH", "WEIGHT_ADDR_HIGH")
    if weight_base % atom:
        _err(f"CDMA.D_WEIGHT_ADDR_LOW.WEIGHT_ADDR_LOW={weight_base:#x}",
             f"must be a multiple of the {atom}-byte memory atom")
    group_k = cfg.atomic_k if prec == INT8 else max(cfg.atomic_k // 2, 1)
    group_bytes = min(kernels, group_k) * bpk
    wcap = weight_bank * depth * cfg.cbuf_entry_bytes
    if cdma.D_MISC_CFG.SKIP_WEIGHT_RLS and wbytes > wcap:
        _err("CDMA.D_MISC_CFG.SKIP_WEIGHT_RLS=ENABLE",
             f"kept weights must fit the weight banks: WEIGHT_BYTES {wbytes} > {weight_bank} "
             f"weight bank(s) of {depth * cfg.cbuf_entry_bytes} bytes")
    # one kernel group at a time must fit the weight banks; compressed groups are checked at
    # the fetch, where their WGS sizes are read (this core's own rule on expanded compressed
    # groups is in sim.conv.core_limits)
    if not compressed and group_bytes > wcap:
        _err(f"CDMA.D_BANK.WEIGHT_BANK={weight_bank - 1}",
             f"one kernel group needs {group_bytes} bytes; {weight_bank} weight bank(s) "
             f"hold {wcap}")
    compression = None
    if compressed:
        compression = _compression(cfg, cdma, csc, kernels, bpk, ebytes, group_k, data_bank,
                                   weight_bank, atom)
    return wbytes, weight_base, compression


def reuse_flags(cdma, csc):
    """CDMA's ``D_MISC_CFG`` view, checked: CDMA and CSC agree on the CBUF reuse fields."""
    misc = cdma.D_MISC_CFG
    for fld in ("DATA_REUSE", "WEIGHT_REUSE", "SKIP_DATA_RLS", "SKIP_WEIGHT_RLS"):
        _same(f"CDMA.D_MISC_CFG.{fld}", misc[fld], f"CSC.D_MISC_CFG.{fld}",
              csc.D_MISC_CFG[fld], "CDMA and CSC manage one CBUF")
    return misc


def clip_truncate(cacc) -> int:
    """CACC's ``D_CLIP_CFG.CLIP_TRUNCATE``, checked (at most 48 - 32 bits)."""
    clip = cacc.D_CLIP_CFG.CLIP_TRUNCATE
    if clip > ASSEMBLY_BITS - DELIVERY_BITS:
        _err(f"CACC.D_CLIP_CFG.CLIP_TRUNCATE={clip}",
             f"at most {ASSEMBLY_BITS - DELIVERY_BITS} bits can be truncated")
    return clip


def check_batch_delivery(cfg, p: ConvProgram, cacc, sdp) -> None:
    """The batched output's delivery rule (``cacc``, ``sdp``: register views of CACC and SDP).

    NVDLA's CACC hands a batched layer to SDP position pairs at a time, the pairs starting
    where an output line's address is a multiple of two memory atoms (one 64-byte DMA
    transaction in NVDLA v1), and it finds them from its own ``D_DATAOUT_ADDR``,
    ``D_LINE_STRIDE`` and ``D_SURF_STRIDE``; SDP writes the atoms it receives as pairs found
    from its ``DST`` address and strides. Unless the two agree modulo two atoms the batches'
    atoms land in each other's places, so they must (for an output wider than one position;
    strides only when there is more than one line / surface)."""
    if p.batches == 1 or p.out_width == 1:
        return
    pair = 2 * cfg.memory_atom
    surfaces = ceil_div(p.out_channels * _BYTES[p.precision], cfg.memory_atom)
    pairs = [("D_DATAOUT_ADDR", "DATAOUT_ADDR", "D_DST_BASE_ADDR_LOW", "DST_BASE_ADDR_LOW",
              True)]
    pairs.append(("D_LINE_STRIDE", "LINE_STRIDE", "D_DST_LINE_STRIDE", "DST_LINE_STRIDE",
                  p.out_height > 1))
    pairs.append(("D_SURF_STRIDE", "SURF_STRIDE", "D_DST_SURFACE_STRIDE",
                  "DST_SURFACE_STRIDE", surfaces > 1))
    for creg, cfld, sreg, sfld, used in pairs:
        a, b = _bytes(cacc, creg, cfld), _bytes(sdp, sreg, sfld)
        if used and (a - b) % pair:
            _err(f"CACC.{creg}.{cfld}={a:#x}",
                 f"with {p.batches} batches it must equal SDP.{sreg}.{sfld}={b:#x} modulo "
                 f"{pair} bytes (two memory atoms): CACC pairs the output positions it "
                 "delivers by its own output addresses, SDP writes them by its own")
