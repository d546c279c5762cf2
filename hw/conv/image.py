"""Image input (``D_DATAIN_FORMAT.DATAIN_FORMAT=PIXEL``) on the RTL: the pixel formats of the
build and the layer-start rules of :func:`sim.conv.program.decode` for images.

The formats come from the build (``cfg.image_packed_formats`` / ``cfg.image_semi_formats``,
Table 33 through :mod:`sim.formats.pixel`); an integer format is *accepted* for every
processing precision (Table 29: integer pixels convert to int8, int16 and fp16), an fp16 one
(the ``_F`` formats) for fp16 processing only, on builds with fp16. Everything is computed at
elaboration, so a build carries only the formats it enables (a ``Switch`` on
``PIXEL_FORMAT``).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Mux, Signal

from sim.formats.pixel import PixelFormat, max_x_offset, pixel_format
from sim.formats.rules import PrecisionConversionError, check_precision_conversion

__all__ = ["ImageFormat", "image_formats", "image_rules", "times_small"]

_PREC_CODE = {"int8": 0, "int16": 1, "fp16": 2}


@dataclass(frozen=True)
class ImageFormat:
    """One enabled pixel format as the RTL sees it."""
    fmt: PixelFormat
    code: int
    channels: int
    in_prec: int             #: IN_PRECISION the format needs (Table 33)
    xmax: int                #: largest PIXEL_X_OFFSET (first pixel in the first atom)
    bpp: tuple               #: bytes per pixel of each plane
    uv_mod: int              #: the U/V X offset is taken modulo this many bytes
    accepted: bool           #: the golden decode takes it into int8 processing (an integer one)
    is_float: bool           #: fp16 pixels: fp16 processing only


def image_formats(cfg) -> list:
    """The build's pixel formats (packed, then semi-planar), in code order."""
    out = []
    names = set(cfg.image_packed_formats) | set(cfg.image_semi_formats)
    for name in names:
        f = pixel_format(name)
        try:
            check_precision_conversion("conv", f.name, "int8")
            ok = not f.is_float
        except PrecisionConversionError:
            ok = False
        esize = 1 if f.bytes_per_pixel[0] == 1 else 2
        out.append(ImageFormat(f, f.code, f.channels, _PREC_CODE[f.precision],
                               max_x_offset(f, cfg.memory_atom), tuple(f.bytes_per_pixel),
                               cfg.memory_atom * esize, ok, f.is_float))
    return sorted(out, key=lambda x: x.code)


def times_small(x, n):
    """``x * n`` for a small runtime factor ``n`` in 0..4 (adds and shifts only)."""
    return Mux(n == 4, x << 2, Mux(n == 3, x + (x << 1), Mux(n == 2, x << 1,
                                                             Mux(n == 1, x, 0))))


def _mod3(v):
    """``v % 3 == 0`` for an unsigned value: base-4 digits sum to the value mod 3."""
    s = sum(v[i:i + 2] for i in range(0, len(v), 2))
    return (s % 3) == 0


def image_rules(m, cfg, D, C, *, byte_value, address, misaligned, product, height, width,
                p_lines, line_stride, eps, wide=None):
    """The image-only rules (an image layer fails when any is true): returns
    ``(img, errs, late)``: ``img`` (the layer takes image input; the feature-only rules are
    gated with it), ``errs`` valid from the registers, ``late`` once the products are
    (``product`` is the check's shift-and-add multiplier). ``wide``: the layer processes
    2-byte elements (int16 / fp16; builds with them), so the CBUF line holds 2 bytes per
    element."""
    aw = cfg.address_width
    AC = cfg.atomic_c
    fmts = image_formats(cfg)
    img = Signal(name="img")
    m.d.comb += img.eq(D.D_DATAIN_FORMAT.DATAIN_FORMAT == 1)
    dfmt = D.D_DATAIN_FORMAT

    # the format's properties (a reserved or disabled code: fmt_ok stays 0)
    fmt_ok = Signal(name="img_fmt_ok")
    f_ch, f_prec, f_xmax = Signal(3, name="img_f_ch"), Signal(2, name="img_f_prec"), \
        Signal(6, name="img_f_xmax")
    f_b0, f_semi, f_b1 = Signal(2, name="img_f_b0"), Signal(name="img_f_semi"), \
        Signal(2, name="img_f_b1")
    f_uvmask = Signal(8, name="img_f_uvmask")
    has_float = any(f.is_float for f in fmts)
    f_float = Signal(name="img_f_float")

    def int_only(e):                                # a rule for integer pixels only
        return e & ~f_float if has_float else e
    with m.Switch(dfmt.PIXEL_FORMAT):
        for f in fmts:
            with m.Case(f.code):
                # (an fp16 format: on builds with fp16, for fp16 processing only)
                ok = int(f.accepted)
                if f.is_float and "fp16" in cfg.data_types:
                    ok = D.D_MISC_CFG.PROC_PRECISION == 2
                if has_float:
                    m.d.comb += f_float.eq(int(f.is_float))
                m.d.comb += [fmt_ok.eq(ok), f_ch.eq(f.channels),
                             f_prec.eq(f.in_prec), f_xmax.eq(f.xmax),
                             f_b0.eq(f.bpp[0].bit_length() - 1),
                             f_semi.eq(len(f.bpp) == 2),
                             f_b1.eq((f.bpp[-1]).bit_length() - 1),
                             f_uvmask.eq(f.uv_mod - 1)]

    in_c = Signal(14, name="img_in_c")
    m.d.comb += in_c.eq(D.D_DATAIN_SIZE_1.DATAIN_CHANNEL + 1)
    cvt_en = D.D_CVT_CFG.CVT_EN
    misc = D.D_MISC_CFG
    xo = D.D_PIXEL_OFFSET.PIXEL_X_OFFSET
    y_ext = C.D_POST_Y_EXTENSION.Y_EXTENSION
    wc = Signal(14, name="img_wc")
    m.d.comb += wc.eq(C.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT + 1)
    pl, pr = D.D_ZERO_PADDING.PAD_LEFT, D.D_ZERO_PADDING.PAD_RIGHT
    seq_w = Signal(15, name="img_seq_w")            # the padded line in pixels
    m.d.comb += seq_w.eq(pl + width + pr)
    if wide is None:
        line_bytes = Signal(18, name="img_line_bytes")  # ... in CBUF bytes (int8)
        m.d.comb += line_bytes.eq(times_small(seq_w, in_c))
        line_elems = line_bytes
    else:
        line_elems = Signal(18, name="img_line_elems")  # ... in elements
        m.d.comb += line_elems.eq(times_small(seq_w, in_c))
        line_bytes = Signal(19, name="img_line_bytes")  # ... in CBUF bytes (2 per element)
        m.d.comb += line_bytes.eq(line_elems << wide)
    img_eps = Signal(16, name="img_eps")            # register entries (two-column: 2 x BW)
    EB = cfg.cbuf_entry_bytes
    lb = (EB - 1).bit_length()
    m.d.comb += img_eps.eq((line_bytes + EB - 1) >> lb)
    need0 = Signal(20, name="img_need0")            # (x offset + W) x bytes per pixel
    m.d.comb += need0.eq((xo + width) << f_b0)

    # second plane (semi-planar)
    base1 = address(D, "CDMA", "D_DAIN_ADDR_LOW_1", "DATAIN_ADDR_LOW_1",
                    "D_DAIN_ADDR_HIGH_1", "DATAIN_ADDR_HIGH_1")
    uv = byte_value(D, "CDMA", "D_LINE_UV_STRIDE", "UV_LINE_STRIDE")
    u = Signal(8, name="img_u")                     # U/V X offset bytes (modulo)
    m.d.comb += u.eq((xo << f_b1) & f_uvmask)
    need1 = Signal(20, name="img_need1")
    m.d.comb += need1.eq(u + (width << f_b1))

    # kernel width x channels: a multiple of the channels (1, 3 or 4 for the Table 33 formats)
    wc_mult = Signal(name="img_wc_mult")
    m.d.comb += wc_mult.eq(Mux(in_c == 4, wc[:2] == 0, Mux(in_c == 2, ~wc[0],
                                                           Mux(in_c == 3, _mod3(wc), 1))))
    sx = C.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT + 1
    lanes = Signal(range(AC + 1), name="img_lanes")  # Atomic-C / post-extension lines
    m.d.comb += lanes.eq(Mux(y_ext == 2, AC // 4, Mux(y_ext == 1, AC // 2, AC)))
    # (out - 1) x stride x C + S x C, in two registered steps (the product and the sum:
    # the fields' multiplier in front of the rule was the routed critical path of the ECP5
    # board; it settles three cycles after ``start``, far inside the check's cycles)
    reach_ws = Signal(17, name="img_reach_ws")
    reach = Signal(24, name="img_reach")
    m.d.sync += [reach_ws.eq(C.D_DATAOUT_SIZE_0.DATAOUT_WIDTH * sx),
                 reach.eq(times_small(reach_ws, in_c) + wc)]

    errs = [
        D.D_DATAIN_FORMAT.DATAIN_FORMAT != C.D_DATAIN_FORMAT.DATAIN_FORMAT,
        ~img & (y_ext != 0),
        y_ext == 3,
        img & ~fmt_ok,
        img & dfmt.PIXEL_MAPPING,
        img & (misc.IN_PRECISION != f_prec),
        img & (C.D_MISC_CFG.IN_PRECISION != misc.IN_PRECISION),
        int_only(img & ~cvt_en) & (misc.IN_PRECISION != misc.PROC_PRECISION),
        img & (in_c != f_ch),
        img & (xo > f_xmax),
        img & (D.D_PIXEL_OFFSET.PIXEL_Y_OFFSET != 0),
        img & (line_stride < need0),
        img & f_semi & (misaligned(base1) | misaligned(uv) | (uv < need1)),
        int_only(img & ~dfmt.PIXEL_SIGN_OVERRIDE & ~cvt_en),
        img & ~misc.DATA_REUSE & (C.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT
                                  != D.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT),
        img & (img_eps != eps),
        img & (img_eps != C.D_ENTRY_PER_SLICE.ENTRIES + 1),
        img & (C.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT != 0),
        img & ~wc_mult,
        img & (y_ext != 0) & ((wc > lanes) | (times_small(sx, in_c) > lanes)),
        img & (wc > line_elems),
        img & (reach > line_elems),
    ]
    if has_float:
        errs.append(img & f_float & cvt_en)
    # the surfaces inside the address space (plane 0 from the line products of the check)
    p_uv = product("p_uv_h", height, uv, 32)        # UV_LINE_STRIDE x H
    end0 = Signal(aw + 20, name="img_end0")
    end1 = Signal(aw + 20, name="img_end1")
    base = address(D, "CDMA", "D_DAIN_ADDR_LOW_0", "DATAIN_ADDR_LOW_0",
                   "D_DAIN_ADDR_HIGH_0", "DATAIN_ADDR_HIGH_0")
    m.d.comb += [end0.eq(base + p_lines - line_stride + need0),
                 end1.eq(base1 + p_uv - uv + need1)]
    late = [img & (end0 > (1 << aw)), img & f_semi & (end1 > (1 << aw))]
    return img, errs, late
