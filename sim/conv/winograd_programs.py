"""Winograd convolution layers and constrained-random Winograd traces.

:func:`wino_layer` programs one Winograd layer (CDMA, CSC, CMAC_A/B, CACC with
``CONV_MODE=WINOGRAD``; SDP and SDP_RDMA with ``D_FEATURE_MODE_CFG.WINOGRAD=ON``) as register
words and memory images, in the form of :func:`sim.conv.random_programs.conv_layer` (its
output side, :func:`~sim.conv.random_programs.output_program`, is shared). The weights are
given as the stored 4 x 4 values ``[K, C_ext, 4, 4]`` (the compiler's ``G W G^T`` of the
channel-extended kernels, :func:`sim.formats.prepare_winograd_weights`) and written in
Winograd's phase-2 layout, optionally compressed. Winograd layers are single-batch, one per
trace here (the CBUF reuse cases are in tests/test_conv_winograd.py).

:func:`random_wino_program` draws a valid layer (strides 1..3, padding on all sides with pad
values, PRA and CACC truncation, random SDP stages, input convertor, some compressed
weights); :func:`write_random_wino_traces` writes them as trace directories with golden CRCs
(int8 / int16 / fp16 on nv_full, int8 on nv_large).
"""

from __future__ import annotations

import numpy as np

from arch.registers import register_map
from sim.formats.common import align_up, ceil_div
from sim.formats.feature import pack_feature
from sim.formats.sparse import compress_weights
from sim.formats.winograd import pack_winograd_weights

from ..random_traces import (BYTES as _BYTES, GUARD as _GUARD, SLOT as _SLOT, Redraw, Regs,
                             RejectLog, write_random)
from .random_programs import (CONV_BLOCKS, _BASES, _addr64, _group_k, _intr_mask, golden_core,
                              output_program, sdp_program, write_trace)

__all__ = ["wino_layer", "wino_geometry", "random_wino_program", "write_random_wino_traces",
           "wino_reject_log"]


def wino_geometry(W, H, C, stride, pad, prec, entry_bytes):
    """(W_ext, H_ext, C_ext, ENTRY_PER_SLICE + 1) of a Winograd input."""
    sx, sy = stride
    pl, pr, pt, pb = pad
    we, he, ce = (pl + W + pr) // sx, (pt + H + pb) // sy, C * sx * sy
    return we, he, ce, ceil_div(we * ce * _BYTES[prec], entry_bytes)


def wino_layer(cfg, *, W, H, C, K, wt4=None, data=None, stride=(1, 1), pad=(0, 0, 0, 0),
               pad_value=0, prec=0, Wo=None, Ho=None, clip=0, pra_truncate=0, atomics=None,
               banks=None, data_ram=1, weight_ram=1, dst_ram=1, slot=0, line_extra=0,
               surf_extra=0, cvt=None, compress=False, weight_bytes=None, sdp=None,
               reuse=(0, 0, 0, 0), rls_slices=4, csc_height=None, emit_feature=True,
               feature_base=None, emit_weights=True, weight_base=None,
               nan_to_zero=False, fetch_rows=None) -> dict:
    """One Winograd layer for ``cfg`` (``data`` [C, H, W] in memory; ``wt4`` [K, C_ext, 4, 4]
    the stored weights); ``pad`` = (left, right, top, bottom) done by the CDMA; ``Wo`` /
    ``Ho`` default to the largest output the extended input allows. ``atomics`` overrides
    ``D_ATOMICS`` (default ``Wo x Ho - 1``). ``csc_height`` (default the fetched extended
    height) is what the CSC convolves after a data reuse. ``fetch_rows`` = (first, count)
    (default all ``H`` rows) are the rows of the tensor in memory the CDMA fetches and pads
    (``pad`` applies to them), as :func:`sim.conv.random_programs.conv_layer`'s. Returns ``{"regs", "images",
    "window", "info"}`` as :func:`sim.conv.random_programs.conv_layer`."""
    rmap = register_map(cfg)
    atom = cfg.memory_atom
    nbytes = _BYTES[prec]
    pname = "int8" if prec == 0 else "int16"
    sx, sy = stride
    pl, pr, pt, pb = pad
    row0, fetch_h = fetch_rows if fetch_rows is not None else (0, H)
    we, he, ce, entries = wino_geometry(W, fetch_h, C, stride, pad, prec, cfg.cbuf_entry_bytes)
    in_h = csc_height if csc_height is not None else he
    Wo = Wo if Wo is not None else (we - 4) // 4 * 4
    Ho = Ho if Ho is not None else (in_h - 4) // 4 * 4
    images = []

    line_stride = W * atom + atom * line_extra
    surf_stride = H * line_stride + atom * surf_extra
    fbase = feature_base if feature_base is not None else \
        _BASES["feature"] + slot * _SLOT + atom * (slot * 3 % 7)
    if emit_feature:
        mem, _ = pack_feature(np.asarray(data), atom, pname, line_stride, surf_stride)
        images.append((fbase, mem, data_ram))
    cdma_base = fbase + row0 * line_stride
    line_packed = line_stride == W * atom
    surf_packed = line_packed and surf_stride == fetch_h * line_stride

    bpk = 16 * ce * nbytes
    wbytes = align_up(bpk * K, 128)
    wbase = weight_base if weight_base is not None else _BASES["weight"] + slot * _SLOT
    wmb_base, wgs_base = (_BASES[k] + slot * _SLOT for k in ("wmb", "wgs"))
    wmb_bytes = align_up(ceil_div(bpk * K // nbytes, 8), 128)
    if compress and wt4 is None:
        wbytes = weight_bytes
    if wt4 is not None:
        surf = pack_winograd_weights(np.asarray(wt4), pname, group_k=_group_k(cfg, prec))
        if compress:
            cw = compress_weights(surf)
            wbytes = cw.weights.size
            if emit_weights:
                images += [(wbase, cw.weights, weight_ram), (wmb_base, cw.wmb, weight_ram),
                           (wgs_base, cw.wgs, weight_ram)]
        elif emit_weights:
            wdata = np.zeros(wbytes, np.uint8)
            wdata[:min(wbytes, surf.data.size)] = surf.data[:wbytes]
            images.append((wbase, wdata, weight_ram))
    if banks is None:
        depth = cfg.cbuf_entry_depth
        dmin = max(1, ceil_div(in_h * entries, depth))
        banks = (dmin, cfg.cbuf_banks - dmin - int(compress))
    data_bank, weight_bank = banks

    out_surfaces = ceil_div(K * nbytes, atom)
    dbase = _BASES["dst"] + slot * _SLOT + _GUARD
    dline, dsurf = Wo * atom, Wo * Ho * atom
    extent = (out_surfaces - 1) * dsurf + (Ho - 1) * dline + Wo * atom
    window = (dbase - _GUARD, align_up(extent, atom) + 2 * _GUARD, dst_ram)

    R = {b: Regs(rmap[b]) for b in CONV_BLOCKS}
    cdma, csc = R["CDMA"], R["CSC"]
    dr, wr, sdr, swr = reuse
    for b in ("CDMA", "CSC"):
        R[b].set("D_MISC_CFG", CONV_MODE=1, IN_PRECISION=prec, PROC_PRECISION=prec,
                 DATA_REUSE=dr, WEIGHT_REUSE=wr, SKIP_DATA_RLS=sdr, SKIP_WEIGHT_RLS=swr)
        R[b].set("D_DATAIN_FORMAT", DATAIN_FORMAT=0)
        R[b].set("D_BATCH_NUMBER", BATCHES=0)
        R[b].set("D_ENTRY_PER_SLICE", ENTRIES=entries - 1)
        R[b].set("D_WEIGHT_FORMAT", WEIGHT_FORMAT=int(compress))
        R[b].addr("D_WEIGHT_BYTES", wbytes)
        R[b].addr("D_WMB_BYTES", wmb_bytes if compress else 0)
        R[b].set("D_BANK", DATA_BANK=data_bank - 1, WEIGHT_BANK=weight_bank - 1)
        R[b].set("D_ZERO_PADDING_VALUE", PAD_VALUE=pad_value & 0xFFFF)
    for b in ("CMAC_A", "CMAC_B", "CACC"):
        R[b].set("D_MISC_CFG", CONV_MODE=1, PROC_PRECISION=prec)
    cdma.set("D_DATAIN_SIZE_0", DATAIN_WIDTH=W - 1, DATAIN_HEIGHT=fetch_h - 1)
    cdma.set("D_DATAIN_SIZE_1", DATAIN_CHANNEL=C - 1)
    cdma.set("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=we - 1, DATAIN_HEIGHT_EXT=he - 1)
    cdma.set("D_DAIN_RAM_TYPE", DATAIN_RAM_TYPE=data_ram)
    _addr64(cfg, cdma, "D_DAIN_ADDR_LOW_0", "D_DAIN_ADDR_HIGH_0", cdma_base)
    cdma.addr("D_LINE_STRIDE", line_stride)
    cdma.addr("D_SURF_STRIDE", surf_stride)
    cdma.set("D_DAIN_MAP", LINE_PACKED=int(line_packed), SURF_PACKED=int(surf_packed))
    cdma.set("D_FETCH_GRAIN", GRAINS=0)
    cdma.set("D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=bpk - 1)
    cdma.set("D_WEIGHT_SIZE_1", WEIGHT_KERNEL=K - 1)
    cdma.set("D_WEIGHT_RAM_TYPE", WEIGHT_RAM_TYPE=weight_ram)
    _addr64(cfg, cdma, "D_WEIGHT_ADDR_LOW", "D_WEIGHT_ADDR_HIGH", wbase)
    if compress:
        _addr64(cfg, cdma, "D_WMB_ADDR_LOW", "D_WMB_ADDR_HIGH", wmb_base)
        _addr64(cfg, cdma, "D_WGS_ADDR_LOW", "D_WGS_ADDR_HIGH", wgs_base)
    cdma.set("D_MEAN_FORMAT", MEAN_FORMAT=0)
    if cvt is None:
        cdma.set("D_CVT_CFG", CVT_EN=0, CVT_TRUNCATE=0)
        cdma.set("D_CVT_OFFSET", CVT_OFFSET=0)
        cdma.set("D_CVT_SCALE", CVT_SCALE=1)
    else:
        cdma.set("D_CVT_CFG", CVT_EN=1, CVT_TRUNCATE=cvt[2])
        cdma.set("D_CVT_OFFSET", CVT_OFFSET=cvt[0] & 0xFFFF)
        cdma.set("D_CVT_SCALE", CVT_SCALE=cvt[1] & 0xFFFF)
    cdma.set("D_CONV_STRIDE", CONV_X_STRIDE=sx - 1, CONV_Y_STRIDE=sy - 1)
    cdma.set("D_ZERO_PADDING", PAD_LEFT=pl, PAD_RIGHT=pr, PAD_TOP=pt, PAD_BOTTOM=pb)
    cdma.set("D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=int(nan_to_zero))
    cdma.set("D_PERF_ENABLE", DMA_EN=1)

    csc.set("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=we - 1, DATAIN_HEIGHT_EXT=in_h - 1)
    csc.set("D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=ce - 1)
    csc.set("D_POST_Y_EXTENSION", Y_EXTENSION=0)
    csc.set("D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=3, WEIGHT_HEIGHT_EXT=3)
    csc.set("D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=ce - 1, WEIGHT_KERNEL=K - 1)
    csc.set("D_DATAOUT_SIZE_0", DATAOUT_WIDTH=Wo - 1, DATAOUT_HEIGHT=Ho - 1)
    csc.set("D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=K - 1)
    csc.set("D_ATOMICS", ATOMICS=Wo * Ho - 1 if atomics is None else atomics)
    csc.set("D_RELEASE", RLS_SLICES=rls_slices - 1)
    csc.set("D_CONV_STRIDE_EXT", CONV_X_STRIDE_EXT=0, CONV_Y_STRIDE_EXT=0)
    csc.set("D_DILATION_EXT", X_DILATION_EXT=0, Y_DILATION_EXT=0)
    csc.set("D_ZERO_PADDING", PAD_LEFT=0, PAD_TOP=0)
    csc.set("D_PRA_CFG", PRA_TRUNCATE=pra_truncate)

    regs = output_program(cfg, rmap, R, Wo=Wo, Ho=Ho, K=K, dbase=dbase, dline=dline,
                          dsurf=dsurf, clip=clip, sdp=sdp, prec=prec, slot=slot,
                          dst_ram=dst_ram, images=images)
    for blk in ("SDP", "SDP_RDMA"):
        if blk in regs:
            r = Regs(rmap[blk])
            r.words.update(regs[blk])
            r.set("D_FEATURE_MODE_CFG", WINOGRAD=1)
            regs[blk] = r.words
    info = dict(W=W, H=H, C=C, K=K, stride=stride, pad=pad, pad_value=pad_value, prec=prec,
                Wo=Wo, Ho=Ho, ext=(we, he, ce), in_h=in_h, entries=entries, banks=banks,
                wbytes=wbytes, clip=clip, pra_truncate=pra_truncate, cvt=cvt,
                feature_base=fbase, weight_base=wbase, compress=compress,
                dst=(dbase, dline, dsurf), dst_ram=dst_ram, reuse=reuse, batches=1,
                fetch_rows=(row0, fetch_h), rls_slices=rls_slices,
                macs=Wo * Ho * K * ce * 4)
    return {"regs": regs, "images": images, "window": window, "info": info,
            "intr_mask": _intr_mask(cfg)}


# ------------------------------------------------------------------------------------------
# Random layers
# ------------------------------------------------------------------------------------------
def random_wino_program(cfg, rng, prec=None, max_macs=400_000, slot=0) -> dict:
    """One valid random Winograd layer for ``cfg`` (see the module docstring)."""
    precs = [p for p, n in ((0, "int8"), (1, "int16"), (2, "fp16")) if n in cfg.data_types]
    prec = int(rng.choice(precs)) if prec is None else prec
    nbytes = _BYTES[prec]
    atom_c = cfg.memory_atom // nbytes
    C = atom_c * int(rng.integers(1, 3))
    sx, sy = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    # padded sizes: multiples of 4 x stride, at least 8 extended columns / lines
    we = 4 * int(rng.integers(2, 5))
    he = 4 * int(rng.integers(2, 5))
    tw, th = we * sx, he * sy
    pl, pt = int(rng.integers(0, min(3, tw - 1))), int(rng.integers(0, min(3, th - 1)))
    pr, pb = int(rng.integers(0, min(3, tw - pl - 1))), int(rng.integers(0, min(3, th - pt - 1)))
    W, H = tw - pl - pr, th - pt - pb
    ce = C * sx * sy
    K = int(rng.integers(1, 2 * _group_k(cfg, prec) + 1))
    Wo = 4 * int(rng.integers(1, (we - 4) // 4 + 1))
    Ho = 4 * int(rng.integers(1, (he - 4) // 4 + 1))
    if Wo * Ho * K * ce * 4 > max_macs:
        raise Redraw()
    _, _, _, entries = wino_geometry(W, H, C, (sx, sy), (pl, pr, pt, pb), prec,
                                     cfg.cbuf_entry_bytes)
    if entries > 1024 or he * entries > (cfg.cbuf_banks - 2) * cfg.cbuf_entry_depth:
        raise Redraw()
    cvt = None
    if prec == 2:
        from sim.nvfloat import fp16_from_float
        data = fp16_from_float(rng.uniform(-2, 2, (C, H, W)))
        wt4 = fp16_from_float(rng.uniform(-1, 1, (K, ce, 4, 4)))
        special = np.array([0, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x7C00, 0xFC00, 0x7E00])
        for a in (data, wt4):
            m = rng.random(a.shape) < 0.01
            a[m] = rng.choice(special, int(m.sum()))
        data = np.where(data >= 0x8000, data - 0x10000, data)
        wt4 = np.where(wt4 >= 0x8000, wt4 - 0x10000, wt4)
        pad_value = int(rng.choice([0, 0x3C00, 0xBC00, int(rng.integers(0, 0x7C00))]))
        pra = int(rng.integers(0, 4))       # the fp16 PRA does not truncate
    else:
        dr = 60 if prec == 0 else 3000
        data = rng.integers(-dr, dr + 1, (C, H, W))
        wt4 = rng.integers(-40, 41, (K, ce, 4, 4)) if prec == 0 else \
            rng.integers(-2000, 2001, (K, ce, 4, 4))
        pad_value = int(rng.integers(0, 1 << 16))
        pra = int(rng.integers(0, 4))
        if rng.random() < 0.25:
            cvt = (int(rng.integers(-20, 21)), int(rng.integers(1, 4)), int(rng.integers(0, 3)))
    compress = cfg.weight_compression and rng.random() < 0.25
    if compress:
        wt4 = np.where(rng.random(wt4.shape) < 0.4, 0, wt4)
    bits = 8 if prec == 0 else 16
    clip = int(rng.integers(0, 5)) + (bits - 3 if prec != 2 else 0)
    clip = min(clip, 16)
    sdp = sdp_program(cfg, rng, Wo, Ho, K, prec, slot, shift=0 if prec == 2 else 2)
    return wino_layer(cfg, W=W, H=H, C=C, K=K, wt4=wt4, data=data, stride=(sx, sy),
                      pad=(pl, pr, pt, pb), pad_value=pad_value, prec=prec, Wo=Wo, Ho=Ho,
                      clip=clip, pra_truncate=pra, cvt=cvt, compress=bool(compress), sdp=sdp,
                      slot=slot, line_extra=int(rng.integers(0, 2)),
                      surf_extra=int(rng.integers(0, 2)), nan_to_zero=bool(rng.integers(2)))


def write_random_wino_traces(cfg, directory: str, count: int, seed: int = 0,
                             prefix: str = "wino_random", prec=None) -> list:
    """``count`` random Winograd programs as trace directories with golden CRCs (a program the
    golden model rejects is redrawn; :data:`wino_reject_log` lists why)."""
    def draw(rng):
        return [random_wino_program(cfg, rng, prec)]
    return wino_reject_log.keep(write_random(cfg, directory, count, seed, prefix, draw,
                                             write_trace, golden_core))


#: the golden model's messages for the programs the last :func:`write_random_wino_traces`
#: redrew
wino_reject_log = RejectLog()
