"""Image-input convolution layers (``DATAIN_FORMAT=PIXEL``) as register words and memory
images, in the form of :func:`sim.conv.random_programs.conv_layer` (so
:func:`~sim.conv.random_programs.write_trace` writes them as NVDLA trace directories).

    layer = image_layer(cfg, fmt="A8B8G8R8", image=codes, weights=w, stride=(2, 1),
                        pad=(1, 2, 0, 1), x_offset=1, cvt=(0, 1, 0), mean=(10, 20, 30, 0))

``image`` is [channels, H, W] raw component codes in R, G, B, A (Y, U, V, A) order (what
:func:`sim.formats.pixel.pack_pixels` takes), ``weights`` [K, channels, R, S] in the processing
precision; the surface is packed with :mod:`sim.formats` (``pack_pixels``,
``pack_image_weights``).
"""

from __future__ import annotations

import numpy as np

from arch.registers import register_map
from sim.formats.common import align_up
from sim.formats.pixel import max_x_offset, pack_pixels, pixel_format
from sim.formats.weight import pack_image_weights

from ..sdp.random_programs import Regs
from .program import image_entries_per_slice, uv_x_offset_bytes
from ..random_traces import set_fields
from .random_programs import (_BASES, _GUARD, _SLOT, CONV_BLOCKS, _addr64, _group_k,
                              _intr_mask, min_banks, output_program)

__all__ = ["image_layer", "random_image_layer", "random_image_spec", "write_random_image_traces",
           "image_formats_of", "image_formats_for", "IMAGE_REUSE_KINDS", "image_reuse_pair",
           "reuse_second_alone", "random_image_pair", "write_random_image_pair_traces"]

_PREC = {"int8": 0, "int16": 1, "fp16": 2}
_UV_BASE = 0x8080_0000


def image_layer(cfg, *, fmt, image, weights, stride=(1, 1), pad=(0, 0, 0, 0),
                pad_value=0, csc_pad_value=None, x_offset=0, signed=False, cvt=None,
                mean=None, post_extension=1, clip=0, prec=0, line_extra=0, uv_extra=0,
                banks=None, data_ram=1, weight_ram=1, dst_ram=1, slot=0, sdp=None,
                dst=None, nan_to_zero=False) -> dict:
    """One image-input layer for ``cfg`` (see the module docstring).

    ``pad`` = (left, right, top, bottom); ``pad_value`` is CDMA's D_ZERO_PADDING_VALUE (left /
    right padding), ``csc_pad_value`` CSC's (top / bottom; default the same); ``cvt`` =
    (offset, scale, truncate) enables the input convertor; ``mean`` = (RY, GU, BV, AX)
    enables D_MEAN_FORMAT; ``post_extension`` is 1, 2 or 4 lines. ``prec`` is the processing
    precision (0 int8, 1 int16, 2 fp16: ``weights`` and 16-bit pad values are then fp16
    codes; ``nan_to_zero`` sets CDMA's D_NAN_FLUSH_TO_ZERO). Returns
    ``{"regs", "images", "window", "info", "intr_mask"}`` like ``conv_layer``.
    """
    f = pixel_format(fmt)
    rmap = register_map(cfg)
    atom = cfg.memory_atom
    pname = "int8" if prec == 0 else "int16"      # fp16 codes are laid out as int16 values
    nbytes = 1 if prec == 0 else 2
    codes = np.asarray(image)
    C, H, W = codes.shape
    w = np.asarray(weights)
    K, _, R, S = w.shape
    sx, sy = stride
    pl, pr, pt, pb = pad
    Wo = (pl + W + pr - S) // sx + 1
    Ho = (H + pt + pb - R) // sy + 1
    images = []

    # -- the pixel surface -----------------------------------------------------------------
    bpp0 = f.bytes_per_pixel[0]
    line_stride = align_up((x_offset + W) * bpp0, atom) + atom * line_extra
    uv_stride = None
    if f.planes == 2:
        uv_stride = align_up((x_offset + W) * f.bytes_per_pixel[1], atom) + atom * uv_extra
    surf = pack_pixels(codes, f, x_offset=x_offset, line_stride=line_stride,
                       uv_line_stride=uv_stride, atom=atom)
    base0 = _BASES["feature"] + slot * _SLOT + atom * (slot * 3 % 7)
    images.append((base0, surf.planes[0], data_ram))
    base1 = 0
    if f.planes == 2:
        plane1 = _UV_BASE + slot * _SLOT
        images.append((plane1, surf.planes[1], data_ram))
        # the CDMA takes the U/V X offset modulo the atom: point at the atom of the first pixel
        skip = x_offset * f.bytes_per_pixel[1] - uv_x_offset_bytes(f, x_offset, atom)
        base1 = plane1 + skip

    # -- weights ---------------------------------------------------------------------------
    bpk = R * S * C * nbytes
    wbytes = align_up(bpk * K, 128)
    wbase = _BASES["weight"] + slot * _SLOT
    ws = pack_image_weights(w, pname, post_extension=post_extension, stride_x=sx,
                            group_k=_group_k(cfg, prec), cube_c=cfg.atomic_c)
    wdata = np.zeros(wbytes, np.uint8)
    wdata[:min(wbytes, ws.data.size)] = ws.data[:wbytes]
    images.append((wbase, wdata, weight_ram))

    entries = image_entries_per_slice(W, pl, pr, C, prec, cfg.cbuf_entry_bytes)
    if banks is None:
        dmin, _ = min_banks(cfg, H, entries, wbytes)
        banks = (dmin, cfg.cbuf_banks - dmin)
    data_bank, weight_bank = banks

    # -- output ----------------------------------------------------------------------------
    out_surfaces = -(-K * nbytes // atom)
    if dst is None:
        dbase = _BASES["dst"] + slot * _SLOT + _GUARD
        dline, dsurf = Wo * atom, Wo * Ho * atom
    else:
        dbase, dline, dsurf = dst
    extent = Wo * Ho * out_surfaces * atom if (Wo == 1 and Ho == 1) else \
        (out_surfaces - 1) * dsurf + (Ho - 1) * dline + Wo * atom
    window = (dbase - _GUARD, align_up(extent, atom) + 2 * _GUARD, dst_ram)

    # -- registers -------------------------------------------------------------------------
    Rg = {b: Regs(rmap[b]) for b in CONV_BLOCKS}
    cdma, csc = Rg["CDMA"], Rg["CSC"]
    in_prec = _PREC[f.precision]
    spv = pad_value if csc_pad_value is None else csc_pad_value
    for b, pv in (("CDMA", pad_value), ("CSC", spv)):
        Rg[b].set("D_MISC_CFG", CONV_MODE=0, IN_PRECISION=in_prec, PROC_PRECISION=prec,
                  DATA_REUSE=0, WEIGHT_REUSE=0, SKIP_DATA_RLS=0, SKIP_WEIGHT_RLS=0)
        Rg[b].set("D_DATAIN_FORMAT", DATAIN_FORMAT=1)
        Rg[b].set("D_BATCH_NUMBER", BATCHES=0)
        Rg[b].set("D_ENTRY_PER_SLICE", ENTRIES=entries - 1)
        Rg[b].set("D_WEIGHT_FORMAT", WEIGHT_FORMAT=0)
        Rg[b].addr("D_WEIGHT_BYTES", wbytes)
        Rg[b].set("D_BANK", DATA_BANK=data_bank - 1, WEIGHT_BANK=weight_bank - 1)
        Rg[b].set("D_ZERO_PADDING_VALUE", PAD_VALUE=pv & 0xFFFF)
    for b in ("CMAC_A", "CMAC_B", "CACC"):
        Rg[b].set("D_MISC_CFG", CONV_MODE=0, PROC_PRECISION=prec)
    cdma.set("D_DATAIN_FORMAT", DATAIN_FORMAT=1, PIXEL_FORMAT=f.code, PIXEL_MAPPING=0,
             PIXEL_SIGN_OVERRIDE=int(signed))
    cdma.set("D_DATAIN_SIZE_0", DATAIN_WIDTH=W - 1, DATAIN_HEIGHT=H - 1)
    cdma.set("D_DATAIN_SIZE_1", DATAIN_CHANNEL=C - 1)
    cdma.set("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=W - 1, DATAIN_HEIGHT_EXT=H - 1)
    cdma.set("D_PIXEL_OFFSET", PIXEL_X_OFFSET=x_offset, PIXEL_Y_OFFSET=0)
    cdma.set("D_DAIN_RAM_TYPE", DATAIN_RAM_TYPE=data_ram)
    _addr64(cfg, cdma, "D_DAIN_ADDR_LOW_0", "D_DAIN_ADDR_HIGH_0", base0)
    _addr64(cfg, cdma, "D_DAIN_ADDR_LOW_1", "D_DAIN_ADDR_HIGH_1", base1)
    cdma.addr("D_LINE_STRIDE", line_stride)
    cdma.addr("D_LINE_UV_STRIDE", uv_stride or 0)
    cdma.addr("D_SURF_STRIDE", 0)
    cdma.set("D_DAIN_MAP", LINE_PACKED=0, SURF_PACKED=0)
    cdma.addr("D_BATCH_STRIDE", 0)
    cdma.set("D_FETCH_GRAIN", GRAINS=0)
    cdma.set("D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=bpk - 1)
    cdma.set("D_WEIGHT_SIZE_1", WEIGHT_KERNEL=K - 1)
    cdma.set("D_WEIGHT_RAM_TYPE", WEIGHT_RAM_TYPE=weight_ram)
    _addr64(cfg, cdma, "D_WEIGHT_ADDR_LOW", "D_WEIGHT_ADDR_HIGH", wbase)
    cdma.set("D_MEAN_FORMAT", MEAN_FORMAT=int(mean is not None))
    m = tuple(mean) if mean is not None else (0, 0, 0, 0)
    cdma.set("D_MEAN_GLOBAL_0", MEAN_RY=m[0] & 0xFFFF, MEAN_GU=m[1] & 0xFFFF)
    cdma.set("D_MEAN_GLOBAL_1", MEAN_BV=m[2] & 0xFFFF, MEAN_AX=m[3] & 0xFFFF)
    off, scale, trunc = cvt if cvt is not None else (0, 1, 0)
    cdma.set("D_CVT_CFG", CVT_EN=int(cvt is not None), CVT_TRUNCATE=trunc)
    cdma.set("D_CVT_OFFSET", CVT_OFFSET=off & 0xFFFF)
    cdma.set("D_CVT_SCALE", CVT_SCALE=scale & 0xFFFF)
    cdma.set("D_CONV_STRIDE", CONV_X_STRIDE=sx - 1, CONV_Y_STRIDE=sy - 1)
    cdma.set("D_ZERO_PADDING", PAD_LEFT=pl, PAD_RIGHT=pr, PAD_TOP=pt, PAD_BOTTOM=pb)
    cdma.set("D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=int(nan_to_zero))
    cdma.set("D_PERF_ENABLE", DMA_EN=1)

    csc.set("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=W - 1, DATAIN_HEIGHT_EXT=H - 1)
    csc.set("D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=C - 1)
    csc.set("D_POST_Y_EXTENSION", Y_EXTENSION={1: 0, 2: 1, 4: 2}[post_extension])
    csc.set("D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=0, WEIGHT_HEIGHT_EXT=R - 1)
    csc.set("D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=S * C - 1, WEIGHT_KERNEL=K - 1)
    csc.set("D_DATAOUT_SIZE_0", DATAOUT_WIDTH=Wo - 1, DATAOUT_HEIGHT=Ho - 1)
    csc.set("D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=K - 1)
    csc.set("D_ATOMICS", ATOMICS=Wo * Ho - 1)
    csc.set("D_RELEASE", RLS_SLICES=H - 1)
    csc.set("D_CONV_STRIDE_EXT", CONV_X_STRIDE_EXT=sx - 1, CONV_Y_STRIDE_EXT=sy - 1)
    csc.set("D_DILATION_EXT", X_DILATION_EXT=0, Y_DILATION_EXT=0)
    csc.set("D_ZERO_PADDING", PAD_LEFT=pl, PAD_TOP=pt)
    csc.set("D_PRA_CFG", PRA_TRUNCATE=0)

    regs = output_program(cfg, rmap, Rg, Wo=Wo, Ho=Ho, K=K, dbase=dbase, dline=dline,
                          dsurf=dsurf, clip=clip, sdp=sdp, prec=prec, slot=slot,
                          dst_ram=dst_ram, images=images)
    info = dict(W=W, H=H, C=C, K=K, kh=R, kw=S, stride=stride, pad=pad, prec=prec, Wo=Wo,
                Ho=Ho, entries=entries, banks=banks, wbytes=wbytes, feature_base=base0,
                uv_base=base1, weight_base=wbase, fmt=f.name, x_offset=x_offset,
                line_stride=line_stride,
                dst=(dbase, dline, dsurf), dst_ram=dst_ram, clip=clip)
    return {"regs": regs, "images": images, "window": window, "info": info,
            "intr_mask": _intr_mask(cfg)}


# ------------------------------------------------------------------------------------------
# constrained-random image layers and invalid image programs, as trace directories
# ------------------------------------------------------------------------------------------
def image_formats_of(cfg) -> list:
    """The build's pixel formats (names without ``T_``), packed then semi-planar."""
    return sorted(cfg.image_packed_formats) + sorted(cfg.image_semi_formats)


def _estimate_clip(f, codes, weights, signed, cvt, mean, prec=0):
    """A CACC truncation that brings typical sums near the output range (int8 or int16;
    fp16 layers have no truncation: 0)."""
    from sim.formats.pixel import pixel_to_signed
    from sim.formats.common import round_shift_right, saturate
    if prec == 2:
        return 0
    out_bits = 8 if prec == 0 else 16
    if cvt is None:
        vals = pixel_to_signed(codes, f, sign_override=True)
    else:
        d = pixel_to_signed(codes, f, sign_override=signed)
        off, scale, trunc = cvt
        o = np.array(mean[:codes.shape[0]] if mean is not None else [off] * codes.shape[0],
                     np.int64)[:, None, None]
        vals = saturate(round_shift_right((d - o) * scale, trunc), out_bits)
    K, C, R, S = weights.shape
    est = (np.abs(vals).mean() + 1) * (np.abs(weights).mean() + 0.1) * np.sqrt(C * R * S) * 2
    return int(min(16, max(0, int(est).bit_length() - (6 if prec == 0 else 14))))


def image_formats_for(cfg, prec: int) -> list:
    """The build's pixel formats a layer of processing precision ``prec`` can take (Table 29:
    fp16 pixels go to fp16 only)."""
    return [n for n in image_formats_of(cfg) if prec == 2 or not pixel_format(n).is_float]


def random_image_layer(cfg, rng, max_macs: int = 100_000, fmt=None, slot: int = 0,
                       post=None, prec: int = 0) -> dict:
    """One random valid-looking image layer (the golden decode has the last word: callers
    redraw what it rejects): :func:`image_layer` of :func:`random_image_spec`'s drawing."""
    return image_layer(cfg, **random_image_spec(cfg, rng, max_macs, fmt, slot, post, prec))


def random_image_spec(cfg, rng, max_macs: int = 100_000, fmt=None, slot: int = 0,
                      post=None, prec: int = 0) -> dict:
    """The keyword arguments of :func:`image_layer` for one random image layer. Every format of the build, sign override, convertor with or
    without the mean, X offset, line stride slack, CDMA left/right and CSC top/bottom padding
    with their pad values, strides, kernel sizes, kernel counts over several groups,
    post-extension where the kernel line fits. ``prec`` is the processing precision (0 int8,
    1 int16, 2 fp16): int16 and fp16 take the integer pixels through the convertor where
    Table 29 needs it (fp16 always) and fp16 pixels as they are, with fp16 weights and pad
    values (zeros, denormals, infinities and NaNs among them) and NaN flushing at random."""
    from ..sdp.random_programs import fp16_codes
    f = pixel_format(fmt or str(rng.choice(image_formats_for(cfg, prec))))
    C = f.channels
    AC = cfg.atomic_c
    # a quarter of the layers are drawn for post-extension (kernel line and x stride within
    # Atomic-C / lines), when the format allows it at all
    want_post = [p for p in (2, 4) if C <= AC // p]
    want_post = int(rng.choice(want_post)) if want_post and rng.random() < 0.25 else 1
    if post is not None:                    # forced (the format must allow it)
        want_post = post
    while True:
        W, H = int(rng.integers(1, 100)), int(rng.integers(1, 40))
        S = int(rng.integers(1, 9)) if rng.random() < 0.7 else int(rng.integers(1, 4))
        R = int(rng.integers(1, 9)) if rng.random() < 0.7 else int(rng.integers(1, 4))
        sx, sy = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        if want_post > 1:
            S = int(rng.integers(1, AC // want_post // C + 1))
            sx = int(rng.integers(1, AC // want_post // C + 1))
        pl = int(rng.integers(0, min(S, 32)))
        pr = int(rng.integers(0, min(S, 32)))
        pt, pb = int(rng.integers(0, R)), int(rng.integers(0, R))
        if rng.random() < 0.1:
            pl, pr = int(rng.integers(0, 32)), int(rng.integers(0, 40))
        if W + pl + pr < S or H + pt + pb < R:
            continue
        K = int(rng.integers(1, 3 * cfg.atomic_k + 3))
        Wo = (pl + W + pr - S) // sx + 1
        Ho = (H + pt + pb - R) // sy + 1
        if Wo * Ho * K * C * R * S <= max_macs:
            break
    wide = any(c.width > 8 for c in f.components)
    if f.is_float:
        codes = fp16_codes(rng, C * H * W).astype(np.int64).reshape(C, H, W)
    else:
        codes = np.stack([rng.integers(0, 1 << c.width, (H, W)) for c in f.components])
    signed = bool(rng.integers(0, 2))
    in_bits = 8 if f.precision == "int8" else 16
    if f.is_float:
        use_cvt = False
    elif prec == 2 or (prec == 1 and in_bits == 8) or (prec == 0 and in_bits == 16):
        use_cvt = True                      # Table 29: the convertor changes the precision
    else:
        use_cvt = not signed or rng.random() < 0.6
    cvt = mean = None
    if use_cvt:
        if prec == 0:
            trunc = (6 + int(rng.integers(0, 6))) if wide else int(rng.integers(0, 4))
        elif prec == 1:
            trunc = int(rng.integers(0, 5)) if wide else int(rng.integers(0, 3))
        else:
            trunc = int(rng.integers(0, 9))
        if rng.random() < 0.1:
            trunc = int(rng.integers(0, 64))
        cvt = (int(rng.integers(-200, 201)),
               int(rng.choice([1, 1, 2, 3, -1, -2, 5, 100, -300])), trunc)
        if rng.random() < 0.5:
            span = 1 << (15 if wide else 8)
            mean = tuple(int(rng.integers(-span // 2, span // 2)) for _ in range(4))
    post = 1
    for p in (4, 2):
        if S * C <= AC // p and sx * C <= AC // p and (p == want_post or rng.random() < 0.6):
            post = p
            break
    wmode = rng.random()
    if prec == 2:
        n = K * C * R * S
        weights = fp16_codes(rng, n).astype(np.int64).reshape(K, C, R, S)
        weights = np.where(weights >= 0x8000, weights - 0x10000, weights)
        pads = [int(fp16_codes(rng, 1)[0]) for _ in range(2)]
    else:
        hi = 128 if prec == 0 else 1 << 15
        weights = rng.integers(-hi, hi, (K, C, R, S)) if wmode < 0.3 else \
            rng.integers(-4, 5, (K, C, R, S))
        pads = [int(rng.integers(0, 1 << 16)) for _ in range(2)]
    clip = _estimate_clip(f, codes, weights, signed, cvt, mean, prec)
    return dict(
        fmt=f.name[2:], image=codes, weights=weights, stride=(sx, sy),
        pad=(pl, pr, pt, pb), pad_value=pads[0], csc_pad_value=pads[1],
        x_offset=int(rng.integers(0, max_x_offset(f, cfg.memory_atom) + 1)),
        signed=signed, cvt=cvt, mean=mean, post_extension=post, clip=clip, prec=prec,
        line_extra=int(rng.integers(0, 3)), uv_extra=int(rng.integers(0, 3)), slot=slot,
        nan_to_zero=prec == 2 and rng.random() < 0.5)


#: how two image layers share the CBUF: the second reuses all the first one's lines, or the
#: lines the first one did not release followed by a new band of the image
IMAGE_REUSE_KINDS = ("full", "partial")


def image_reuse_pair(cfg, spec: dict, kind: str, weights, stride=(1, 1), pad_tb=(0, 0),
                     band=None, post_extension=1, keep: int | None = None,
                     banks=None) -> list:
    """Two image layers sharing the CBUF (NVDLA's CDMA image reuse): the first is
    ``image_layer(**spec)`` keeping its lines (``full``: ``SKIP_DATA_RLS``; ``partial``: it
    releases all but its last ``keep`` lines); the second has the same pixel format, width,
    left / right padding, X offset, convertor and precision, its own ``weights``, ``stride``,
    top / bottom padding ``pad_tb`` and post-extension, and ``DATA_REUSE``. ``full``: it
    convolves the kept image; ``partial``: the kept lines followed by ``band`` (new lines
    [channels, H2, W] of the same image), which it fetches (its CSC height is the kept plus
    the band's lines). Its memory holds the whole virtual image (kept lines, then the band)
    with only the band fetched, so it equals the same layer run alone without reuse
    (:func:`reuse_second_alone`). Returns ``[first, second]``."""
    codes = np.asarray(spec["image"])
    C, H, W = codes.shape
    pl, pr = spec["pad"][:2]
    if kind == "full":
        virtual, fetched = codes, H
    elif kind == "partial":
        if keep is None or not 0 < keep < H:
            raise ValueError(f"image_reuse_pair: keep must be 1..{H - 1} lines, not {keep}")
        band = np.asarray(band)
        virtual, fetched = np.concatenate([codes[:, H - keep:], band], axis=1), band.shape[1]
    else:
        raise ValueError(f"image_reuse_pair: kind {kind!r} (one of {IMAGE_REUSE_KINDS})")
    f = pixel_format(spec["fmt"])
    if f.planes != 1:
        raise ValueError("image_reuse_pair: packed formats only (one plane)")
    prec = spec.get("prec", 0)
    entries = image_entries_per_slice(W, pl, pr, C, prec, cfg.cbuf_entry_bytes)
    second_spec = dict(spec, image=virtual, weights=weights, stride=stride,
                       pad=(pl, pr) + tuple(pad_tb), post_extension=post_extension, slot=1)
    if banks is None:
        # one bank split for both: the kept and the fetched lines of the second layer, the
        # first layer's lines, each layer's weights
        need = max(H, virtual.shape[1])
        dmin, _ = min_banks(cfg, need, entries, 0)
        wneed = max(min_banks(cfg, 1, 1, _weight_bytes(cfg, s))[1] for s in (spec, second_spec))
        if dmin + wneed > cfg.cbuf_banks:
            raise ValueError("image_reuse_pair: the lines and the weights do not fit the CBUF")
        banks = (dmin, cfg.cbuf_banks - dmin)
    first = image_layer(cfg, **dict(spec, banks=banks))
    second = image_layer(cfg, **dict(second_spec, banks=banks))
    second["info"]["reuse"] = dict(kind=kind, kept=H if kind == "full" else keep,
                                   fetched=0 if kind == "full" else fetched,
                                   alone=dict(second_spec, banks=banks))
    for b in ("CDMA", "CSC"):
        if kind == "full":
            set_fields(cfg, first, b, "D_MISC_CFG", SKIP_DATA_RLS=1)
        set_fields(cfg, second, b, "D_MISC_CFG", DATA_REUSE=1)
    if kind == "partial":
        set_fields(cfg, first, "CSC", "D_RELEASE", RLS_SLICES=H - keep - 1)
        # the second layer fetches only the band: the last ``fetched`` lines of its image
        info = second["info"]
        _fetch_lines(cfg, second, info["feature_base"]
                     + (virtual.shape[1] - fetched) * info["line_stride"], fetched)
    return [first, second]


def _fetch_lines(cfg, layer, base, lines):
    """Make an image layer's CDMA fetch ``lines`` lines from ``base``."""
    rs = Regs(register_map(cfg)["CDMA"])
    rs.words = layer["regs"]["CDMA"]
    _addr64(cfg, rs, "D_DAIN_ADDR_LOW_0", "D_DAIN_ADDR_HIGH_0", base)
    set_fields(cfg, layer, "CDMA", "D_DATAIN_SIZE_0", DATAIN_HEIGHT=lines - 1)
    set_fields(cfg, layer, "CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=lines - 1)


def _weight_bytes(cfg, spec) -> int:
    w = np.asarray(spec["weights"])
    K, C, R, S = w.shape
    return align_up(R * S * C * (1 if spec.get("prec", 0) == 0 else 2) * K, 128)


def reuse_second_alone(cfg, second: dict) -> dict:
    """The second layer of an :func:`image_reuse_pair` as a layer of its own: no reuse, its
    whole image (the kept lines and the band) fetched from memory."""
    return image_layer(cfg, **second["info"]["reuse"]["alone"])


def random_image_pair(cfg, rng, kind=None, max_macs: int = 100_000, prec: int = 0,
                      fmt=None) -> list:
    """A random :func:`image_reuse_pair` of a packed format of the build: the first layer
    drawn as :func:`random_image_spec`, the second with its own kernels, stride, top / bottom
    padding and (partial reuse) a new band of 1..12 lines after 1..H - 1 kept ones."""
    kind = kind or str(rng.choice(IMAGE_REUSE_KINDS))
    fmts = [x for x in image_formats_for(cfg, prec) if pixel_format(x).planes == 1]
    fmt = fmt or str(rng.choice(fmts))
    while True:
        spec = random_image_spec(cfg, rng, max_macs, fmt=fmt, prec=prec)
        C, H, W = np.asarray(spec["image"]).shape
        if kind == "partial" and H < 2:
            continue
        pl, pr = spec["pad"][:2]
        keep = int(rng.integers(1, H)) if kind == "partial" else None
        band = None
        Hv = H
        if kind == "partial":
            f = pixel_format(fmt)
            H2 = int(rng.integers(1, 13))
            band = np.stack([rng.integers(0, 1 << c.width, (H2, W)) for c in f.components]) \
                if not f.is_float else np.asarray(spec["image"])[:, :1].repeat(H2, axis=1)
            Hv = keep + H2
        # the second layer's kernel: its line within the padded line (post-extension only
        # where the first layer's kernel line fit it: the same x stride bound)
        S = int(rng.integers(1, min(8, W + pl + pr) + 1))
        sx = int(rng.integers(1, 4))
        post = spec["post_extension"] if S * C <= cfg.atomic_c // spec["post_extension"] \
            and sx * C <= cfg.atomic_c // spec["post_extension"] else 1
        pt, pb = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        R = int(rng.integers(1, min(8, Hv + pt + pb) + 1))
        sy = int(rng.integers(1, 4))
        K = int(rng.integers(1, 2 * cfg.atomic_k + 3))
        Wo = (pl + W + pr - S) // sx + 1
        Ho = (Hv + pt + pb - R) // sy + 1
        if Wo < 1 or Ho < 1 or Wo * Ho * K * C * R * S > max_macs:
            continue
        if prec == 2:
            from ..sdp.random_programs import fp16_codes
            w = fp16_codes(rng, K * C * R * S).astype(np.int64).reshape(K, C, R, S)
            weights = np.where(w >= 0x8000, w - 0x10000, w)
        else:
            weights = rng.integers(-4, 5, (K, C, R, S))
        try:
            return image_reuse_pair(cfg, spec, kind, weights, stride=(sx, sy), pad_tb=(pt, pb),
                                    band=band, post_extension=post, keep=keep)
        except ValueError:
            continue


def write_random_image_traces(cfg, directory: str, count: int, seed: int = 0,
                              max_macs: int = 100_000, prefix: str = "img_random",
                              precs=(0,)) -> list:
    """``count`` random image layers (formats in turn, so every format of the build comes up;
    processing precisions ``precs`` in turn, 0 int8 / 1 int16 / 2 fp16) as trace directories
    with golden CRCs; returns their paths. A layer the golden model rejects is redrawn."""
    from .random_programs import _golden_crcs, write_trace
    import shutil
    for prec in precs:
        if ("int8", "int16", "fp16")[prec] not in cfg.data_types:
            raise ValueError(f"precs: {cfg.name} has no {('int8', 'int16', 'fp16')[prec]} "
                             f"(data_types: {', '.join(sorted(cfg.data_types))})")
    rng = np.random.default_rng(seed)
    paths = []
    while len(paths) < count:
        prec = precs[len(paths) % len(precs)]
        fmts = image_formats_for(cfg, prec)
        fmt = fmts[(len(paths) // len(precs) + seed) % len(fmts)]
        layer = random_image_layer(cfg, rng, max_macs, fmt=fmt, prec=prec)
        tag = "" if precs == (0,) else ("_i8", "_i16", "_fp16")[prec]
        name = f"{prefix}_{seed}_{len(paths):04d}_{fmt}{tag}"
        path = write_trace(directory, name, [layer])
        crcs, err = _golden_crcs(cfg, path, 1)
        if crcs is None:
            shutil.rmtree(path)
            continue
        write_trace(directory, name, [layer], crcs)
        paths.append(path)
    return paths


def write_random_image_pair_traces(cfg, directory: str, count: int, seed: int = 0,
                                   max_macs: int = 60_000, prefix: str = "img_pair",
                                   precs=(0,)) -> list:
    """``count`` random :func:`random_image_pair` programs (full and partial reuse in turn,
    precisions ``precs`` in turn) as two-layer trace directories with golden CRCs; returns
    their paths. A pair the golden model rejects is redrawn."""
    from .random_programs import _golden_crcs, write_trace
    import shutil
    rng = np.random.default_rng(seed)
    paths = []
    while len(paths) < count:
        kind = IMAGE_REUSE_KINDS[len(paths) % 2]
        prec = precs[len(paths) // 2 % len(precs)]
        layers = random_image_pair(cfg, rng, kind, max_macs, prec=prec)
        name = f"{prefix}_{seed}_{len(paths):04d}_{kind}_{layers[0]['info']['fmt'][2:]}" + \
            ("" if precs == (0,) else ("_i8", "_i16", "_fp16")[prec])
        path = write_trace(directory, name, layers)
        crcs, _ = _golden_crcs(cfg, path, 2)
        if crcs is None:
            shutil.rmtree(path)
            continue
        write_trace(directory, name, layers, crcs)
        paths.append(path)
    return paths


def _small_image(cfg, fmt="A8B8G8R8", **over):
    rng = np.random.default_rng(3)
    f = pixel_format(fmt)
    wide = any(c.width > 8 for c in f.components)
    spec = dict(fmt=fmt, image=np.stack([rng.integers(0, 1 << c.width, (4, 5))
                                         for c in f.components]),
                weights=rng.integers(-2, 3, (3, f.channels, 2, 2)),
                cvt=(0, 1, 8 if wide else 0), pad=(1, 1, 0, 1))
    spec.update(over)
    return image_layer(cfg, **spec)


def _mset(cfg, layer, block, reg, **fields):
    r = Regs(register_map(cfg)[block])
    r.words = layer["regs"][block]
    r.set(reg, **fields)


def _inv_format_not_in_build(cfg, L):
    from sim.formats.pixel import PIXEL_FORMATS
    off = [f for n, f in PIXEL_FORMATS.items() if n[2:] not in
           set(cfg.image_packed_formats) | set(cfg.image_semi_formats)]
    if not off:
        return None
    _mset(cfg, L, "CDMA", "D_DATAIN_FORMAT", PIXEL_FORMAT=off[0].code)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_FORMAT"


def _inv_reserved_format(cfg, L):
    _mset(cfg, L, "CDMA", "D_DATAIN_FORMAT", PIXEL_FORMAT=40)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_FORMAT=40"


def _inv_in_precision(cfg, L):
    for b in ("CDMA", "CSC"):
        _mset(cfg, L, b, "D_MISC_CFG", IN_PRECISION=1)
    return "CDMA.D_MISC_CFG.IN_PRECISION=INT16"


def _inv_csc_in_precision(cfg, L):
    _mset(cfg, L, "CSC", "D_MISC_CFG", IN_PRECISION=1)
    return "CSC.D_MISC_CFG.IN_PRECISION"


def _inv_x_offset(cfg, L):
    _mset(cfg, L, "CDMA", "D_PIXEL_OFFSET",
          PIXEL_X_OFFSET=max_x_offset("A8B8G8R8", cfg.memory_atom) + 1)
    return "CDMA.D_PIXEL_OFFSET.PIXEL_X_OFFSET"


def _inv_y_offset(cfg, L):
    _mset(cfg, L, "CDMA", "D_PIXEL_OFFSET", PIXEL_Y_OFFSET=1)
    return "CDMA.D_PIXEL_OFFSET.PIXEL_Y_OFFSET"


def _inv_unsigned_without_cvt(cfg, L):
    _mset(cfg, L, "CDMA", "D_CVT_CFG", CVT_EN=0)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_SIGN_OVERRIDE=UNSIGNED_INT"


def _inv_ten_bit_without_cvt(cfg, L):
    if "A2B10G10R10" not in cfg.image_packed_formats:
        return None
    L.update(_small_image(cfg, "A2B10G10R10", signed=True))
    _mset(cfg, L, "CDMA", "D_CVT_CFG", CVT_EN=0)
    return "CDMA.D_MISC_CFG.IN_PRECISION=INT16"


def _inv_channels(cfg, L):
    _mset(cfg, L, "CDMA", "D_DATAIN_SIZE_1", DATAIN_CHANNEL=2)
    _mset(cfg, L, "CSC", "D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=2)
    return "CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL"


def _inv_weight_width(cfg, L):
    _mset(cfg, L, "CSC", "D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=1)
    return "CSC.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT"


def _inv_weight_channels(cfg, L):
    _mset(cfg, L, "CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=6)
    return "CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT"


def _inv_weight_channels_rgb(cfg, L):
    if "Y8___U8V8_N444" not in cfg.image_semi_formats:
        return None
    L.update(_small_image(cfg, "Y8___U8V8_N444"))
    _mset(cfg, L, "CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=4)      # 5 of 3 channels
    return "CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT"


def _inv_post_extension_too_wide(cfg, L):
    _mset(cfg, L, "CSC", "D_POST_Y_EXTENSION", Y_EXTENSION=2)
    return "CSC.D_POST_Y_EXTENSION.Y_EXTENSION"


def _inv_post_extension_reserved(cfg, L):
    _mset(cfg, L, "CSC", "D_POST_Y_EXTENSION", Y_EXTENSION=3)
    return "CSC.D_POST_Y_EXTENSION.Y_EXTENSION=3"


def _inv_entries(cfg, L):
    for b in ("CDMA", "CSC"):
        _mset(cfg, L, b, "D_ENTRY_PER_SLICE", ENTRIES=0 if cfg.cbuf_entry_bytes < 32 else 5)
    return "CDMA.D_ENTRY_PER_SLICE.ENTRIES"


def _inv_line_stride(cfg, L):
    L["regs"]["CDMA"]["D_LINE_STRIDE"] = cfg.memory_atom
    _mset(cfg, L, "CDMA", "D_PIXEL_OFFSET",
          PIXEL_X_OFFSET=max_x_offset("A8B8G8R8", cfg.memory_atom))
    return "CDMA.D_LINE_STRIDE.LINE_STRIDE"


def _inv_mapping(cfg, L):
    _mset(cfg, L, "CDMA", "D_DATAIN_FORMAT", PIXEL_MAPPING=1)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_MAPPING"


def _inv_batches(cfg, L):
    for b in ("CDMA", "CSC", "CACC"):
        _mset(cfg, L, b, "D_BATCH_NUMBER", BATCHES=1)
    return "CDMA.D_BATCH_NUMBER.BATCHES"


def _inv_data_reuse_nothing_kept(cfg, L):
    # DATA_REUSE with nothing kept fetches anew: the CSC's 3 more lines are not in the CBUF
    for b in ("CDMA", "CSC"):
        _mset(cfg, L, b, "D_MISC_CFG", DATA_REUSE=1)
    _mset(cfg, L, "CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=L["info"]["H"] + 2)
    return "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT"


def _inv_csc_format(cfg, L):
    _mset(cfg, L, "CSC", "D_DATAIN_FORMAT", DATAIN_FORMAT=0)
    return "CSC.D_DATAIN_FORMAT.DATAIN_FORMAT"


def _inv_csc_height(cfg, L):
    _mset(cfg, L, "CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=2)
    return "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT"


def _inv_output_too_wide(cfg, L):
    _mset(cfg, L, "CSC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=6)     # 5 + 2 pads - 2 + 1 = 6
    _mset(cfg, L, "CACC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=6)
    return "CSC.D_DATAOUT_SIZE_0.DATAOUT_WIDTH"


def _inv_kernel_too_wide(cfg, L):
    # 8 pixels of kernel line on a 5 + 2 padded line (output width 1)
    _mset(cfg, L, "CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=8 * 4 - 1)
    _mset(cfg, L, "CDMA", "D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=8 * 4 * 2 - 1)
    for b in ("CDMA", "CSC"):
        _mset(cfg, L, b, "D_WEIGHT_BYTES", WEIGHT_BYTES=256 >> register_map(cfg)[b][
            "D_WEIGHT_BYTES"]["WEIGHT_BYTES"].lsb)
    _mset(cfg, L, "CSC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=0)
    _mset(cfg, L, "CACC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=0)
    return "CSC.D_WEIGHT_SIZE_EXT_0"


def _inv_semi_uv_base(cfg, L):
    if "Y8___U8V8_N444" not in cfg.image_semi_formats:
        return None
    L.update(_small_image(cfg, "Y8___U8V8_N444"))
    L["regs"]["CDMA"]["D_DAIN_ADDR_LOW_1"] += 4
    return "CDMA.D_DAIN_ADDR_LOW_1.DATAIN_ADDR_LOW_1"


def _inv_semi_uv_stride(cfg, L):
    if "Y8___U8V8_N444" not in cfg.image_semi_formats:
        return None
    L.update(_small_image(cfg, "Y8___U8V8_N444"))
    L["regs"]["CDMA"]["D_LINE_UV_STRIDE"] = cfg.memory_atom
    return "CDMA.D_LINE_UV_STRIDE.UV_LINE_STRIDE"


def _inv_surface_past_space(cfg, L):
    L["regs"]["CDMA"]["D_LINE_STRIDE"] = 0x7FFF_FFF8 & ~(cfg.memory_atom - 1)
    return "CDMA.D_DAIN_ADDR_LOW_0.DATAIN_ADDR_LOW_0"


def _inv_uv_past_space(cfg, L):
    if "Y8___U8V8_N444" not in cfg.image_semi_formats:
        return None
    L.update(_small_image(cfg, "Y8___U8V8_N444"))
    L["regs"]["CDMA"]["D_LINE_UV_STRIDE"] = 0x7FFF_FFF8 & ~(cfg.memory_atom - 1)
    return "CDMA.D_DAIN_ADDR_LOW_1.DATAIN_ADDR_LOW_1"


def _inv_post_extension_on_feature(cfg, L):
    from .random_programs import _base_layer
    L.update(_base_layer(cfg))
    _mset(cfg, L, "CSC", "D_POST_Y_EXTENSION", Y_EXTENSION=1)
    return "CSC.D_POST_Y_EXTENSION.Y_EXTENSION=1"


INVALID_IMAGE_MUTATIONS = {name[5:]: fn for name, fn in dict(globals()).items()
                           if name.startswith("_inv_")}


def write_invalid_image_traces(cfg, directory: str) -> list:
    """One trace per applicable mutation of :data:`INVALID_IMAGE_MUTATIONS` (a valid small
    image layer made invalid); returns ``[(path, field)]``. Each one's expected CRC is its
    untouched (all-zero) output window: the layer must write nothing."""
    import zlib
    from .random_programs import write_trace
    out = []
    for name, mutate in INVALID_IMAGE_MUTATIONS.items():
        layer = _small_image(cfg)
        fld = mutate(cfg, layer)
        if fld is None:
            continue
        crc = zlib.crc32(bytes(layer["window"][1]))
        out.append((write_trace(directory, f"img_invalid_{name}", [layer], [crc]), fld))
    return out
