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
from sim.formats.pixel import pack_pixels, pixel_format
from sim.formats.weight import pack_image_weights

from ..sdp.random_programs import Regs
from .program import image_entries_per_slice, uv_x_offset_bytes
from .random_programs import (_BASES, _GUARD, _SLOT, CONV_BLOCKS, _addr64, _group_k,
                              _intr_mask, min_banks, output_program)

__all__ = ["image_layer"]

_PREC = {"int8": 0, "int16": 1, "fp16": 2}
_UV_BASE = 0x8080_0000


def image_layer(cfg, *, fmt, image, weights, stride=(1, 1), pad=(0, 0, 0, 0),
                pad_value=0, csc_pad_value=None, x_offset=0, signed=False, cvt=None,
                mean=None, post_extension=1, clip=0, prec=0, line_extra=0, uv_extra=0,
                banks=None, data_ram=1, weight_ram=1, dst_ram=1, slot=0, sdp=None,
                dst=None) -> dict:
    """One image-input layer for ``cfg`` (see the module docstring).

    ``pad`` = (left, right, top, bottom); ``pad_value`` is CDMA's D_ZERO_PADDING_VALUE (left /
    right padding), ``csc_pad_value`` CSC's (top / bottom; default the same); ``cvt`` =
    (offset, scale, truncate) enables the input convertor; ``mean`` = (RY, GU, BV, AX)
    enables D_MEAN_FORMAT; ``post_extension`` is 1, 2 or 4 lines. Returns
    ``{"regs", "images", "window", "info", "intr_mask"}`` like ``conv_layer``.
    """
    f = pixel_format(fmt)
    rmap = register_map(cfg)
    atom = cfg.memory_atom
    pname = {0: "int8", 1: "int16"}[prec]
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

    entries = image_entries_per_slice(W, pl, pr, C, prec, cfg.cbuf_bank_width)
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
    cdma.set("D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=0)
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
                dst=(dbase, dline, dsurf), dst_ram=dst_ram, clip=clip)
    return {"regs": regs, "images": images, "window": window, "info": info,
            "intr_mask": _intr_mask(cfg)}
