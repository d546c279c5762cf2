"""Winograd convolution layers and constrained-random Winograd traces.

:func:`wino_layer` programs one Winograd layer (CDMA, CSC, CMAC_A/B, CACC with
``CONV_MODE=WINOGRAD``; SDP and SDP_RDMA with ``D_FEATURE_MODE_CFG.WINOGRAD=ON``) as register
words and memory images, in the form of :func:`sim.conv.random_programs.conv_layer` (its
output side, :func:`~sim.conv.random_programs.output_program`, is shared). The weights are
given as the stored 4 x 4 values ``[K, C_ext, 4, 4]`` (the compiler's ``G W G^T`` of the
channel-extended kernels, :func:`sim.formats.prepare_winograd_weights`) and written in
Winograd's phase-2 layout, optionally compressed. Winograd layers are single-batch.

:func:`random_wino_program` draws a valid layer (strides 1..3, padding on all sides with pad
values, PRA and CACC truncation, random SDP stages, input convertor, some compressed
weights, random bank splits); :func:`random_wino_pair` two layers ping-ponged through
register groups 0 and 1, as :func:`sim.conv.random_programs.random_pair`'s: Winograd layers
sharing the CBUF (full data reuse: SKIP_DATA_RLS then DATA_REUSE; partial data reuse: the
first releases ``D_RELEASE`` extended lines of the top of a tensor, the second fetches the
next rows and convolves kept + fetched lines; weight reuse: SKIP_WEIGHT_RLS then
WEIGHT_REUSE; data and weights; nothing) or a direct and a Winograd layer in either order, the
second asking for what the first kept (NVDLA's CDMA fetches anew after a change of mode).
:func:`write_random_wino_traces` writes single layers and a share of pairs as trace
directories with golden CRCs (int8 / int16 / fp16 on nv_full, int8 on nv_large).
"""

from __future__ import annotations

import numpy as np

from arch.registers import register_map
from sim.formats.common import align_up, ceil_div
from sim.formats.feature import pack_feature
from sim.formats.winograd import pack_winograd_weights

from ..random_traces import (BYTES as _BYTES, GUARD as _GUARD, SLOT as _SLOT, Redraw, Regs,
                             RejectLog, set_fields, write_random)
from .random_programs import (CONV_BLOCKS, REUSE_KINDS, _BASES, _addr64, _banks, _group_k,
                              _intr_mask, cdma_weights_and_convertor, golden_core,
                              output_program, random_program, sdp_program, weight_images,
                              write_trace)

__all__ = ["wino_layer", "wino_geometry", "random_wino_program", "random_wino_pair",
           "WINO_PAIR_KINDS", "ask_reuse", "write_random_wino_traces", "wino_reject_log"]


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
    (``pad`` applies to them), as :func:`sim.conv.random_programs.conv_layer`'s. Returns
    ``{"regs", "images", "window", "info"}`` as :func:`sim.conv.random_programs.conv_layer`."""
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
        wbytes = weight_images(surf, compress, emit_weights, wbytes,
                               (wbase, wmb_base, wgs_base), weight_ram, images)
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
    cdma_weights_and_convertor(cfg, cdma, bpk=bpk, K=K, weight_ram=weight_ram, wbase=wbase,
                               compress=compress, wmb_base=wmb_base, wgs_base=wgs_base, cvt=cvt,
                               stride=(sx, sy), pad=(pl, pr, pt, pb), nan_to_zero=nan_to_zero)

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
def _precs(cfg):
    return [p for p, n in ((0, "int8"), (1, "int16"), (2, "fp16")) if n in cfg.data_types]


def _values(rng, prec, shape, weights=False):
    """Random data (or stored weights): fp16 codes (1 % special: zeros, denormals, extremes,
    infinities, NaN) as int16 values, or integers that leave the int8 / int16 PRA some
    headroom."""
    if prec == 2:
        from sim.nvfloat import fp16_from_float
        a = fp16_from_float(rng.uniform(-1, 1, shape) if weights else rng.uniform(-2, 2, shape))
        special = np.array([0, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x7C00, 0xFC00, 0x7E00])
        m = rng.random(a.shape) < 0.01
        a[m] = rng.choice(special, int(m.sum()))
        return np.where(a >= 0x8000, a - 0x10000, a)
    if weights:
        lim = 40 if prec == 0 else 2000
    else:
        lim = 60 if prec == 0 else 3000
    return rng.integers(-lim, lim + 1, shape)


def _pads(rng, total, after=True):
    """(before, after) padding of a padded size ``total``: 0..2 each (``after`` False: 0)."""
    a = int(rng.integers(0, min(3, total - 1)))
    return a, int(rng.integers(0, min(3, total - a - 1))) if after else 0


def random_wino_program(cfg, rng, prec=None, max_macs=400_000, slot=0, prev=None,
                        reuse="none") -> dict:
    """One valid random Winograd layer for ``cfg`` (see the module docstring).

    ``reuse`` as :func:`sim.conv.random_programs.random_program`'s: one of
    :data:`~sim.conv.random_programs.REUSE_KINDS` for the second layer of a pair (``prev``
    the first layer, a Winograd one), ``"first:<kind>"`` for the first layer, which then keeps
    its data (``SKIP_DATA_RLS``) or releases 4..H_ext - 4 extended lines of the top of a
    taller tensor (``D_RELEASE``; data_partial: its bottom is not padded, the next layer
    fetches the rest) and keeps its weights (``SKIP_WEIGHT_RLS``). A data-reusing layer keeps
    the first's width, channels, stride, pad value, convertor and NaN flush and convolves
    the kept lines (all or the top ones, multiples of 4) or the kept and fetched ones; a
    weight-reusing one keeps the kernels, channels, stride, format and bank split and draws
    its input anew. The :func:`wino_layer` arguments are in ``info["spec"]``."""
    kind = reuse.split(":")[-1]
    first = reuse.startswith("first:")
    second = prev is not None and reuse != "none"
    data_reuse = second and "data" in kind
    weight_reuse = second and "weight" in kind
    partial = "data_partial" in kind
    ps = prev["info"]["spec"] if second else None
    if second:
        prec = ps["prec"]
    elif prec is None:
        prec = int(rng.choice(_precs(cfg)))
    nbytes = _BYTES[prec]
    depth, gk = cfg.cbuf_entry_depth, _group_k(cfg, prec)
    bank_bytes = depth * cfg.cbuf_entry_bytes
    if second:
        C, (sx, sy) = ps["C"], ps["stride"]
    else:
        C = cfg.memory_atom // nbytes * int(rng.integers(1, 3))
        sx, sy = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    ce = C * sx * sy
    bpk = 16 * ce * nbytes

    # input: the kept one, or padded sizes 4 x stride x (2..4) with 0..2 pads a side
    fetch_rows = csc_height = next_rows = None
    if data_reuse:
        W, (pl, pr), data = ps["W"], ps["pad"][:2], ps["data"]
        if partial:
            r0, n1 = ps["fetch_rows"]
            H2, pb = prev["info"]["next_rows"]
            pt, fetch_rows = 0, (r0 + n1, H2)
            csc_height = prev["info"]["in_h"] - ps["rls_slices"] + (H2 + pb) // sy
        else:
            pt, pb = ps["pad"][2:]
            fetch_rows, in1 = ps["fetch_rows"], prev["info"]["in_h"]
            csc_height = in1 - 4 * int(rng.integers(0, (in1 - 8) // 4 + 1)) \
                if rng.random() < 0.3 else in1
        we = (pl + W + pr) // sx
        he = (pt + fetch_rows[1] + pb) // sy
        lines, entries = csc_height, prev["info"]["entries"]
    else:
        # a weight-reusing layer's input must fit the data banks the first layer left it
        for _ in range(20 if weight_reuse else 1):
            we, he = 4 * int(rng.integers(2, 5)), 4 * int(rng.integers(2, 5))
            pl, pr = _pads(rng, we * sx)
            pt, pb = _pads(rng, he * sy, after=not (first and partial))
            W, H = we * sx - pl - pr, he * sy - pt - pb
            lines = he
            if first and partial:
                # the next layer fetches 4 or 8 more extended lines of the tensor and holds
                # them with the kept ones (at most H_ext - 4)
                th2 = 4 * sy * int(rng.integers(1, 3))
                pb2 = int(rng.integers(0, min(3, th2 - 1)))
                next_rows = (th2 - pb2, pb2)
                lines = max(he, he - 4 + th2 // sy)
            entries = wino_geometry(W, H, C, (sx, sy), (pl, pr, pt, 0), prec,
                                    cfg.cbuf_entry_bytes)[3]
            if not weight_reuse or lines * entries <= prev["info"]["banks"][0] * depth:
                break
        else:
            raise Redraw()
        fetch_rows = (0, H)
        data = _values(rng, prec, (C, H + (next_rows[0] if next_rows else 0), W))
    if entries > 1024:
        raise Redraw()
    in_h = csc_height if csc_height is not None else he

    # kernels and output
    if weight_reuse:
        K = ps["K"]
    else:
        K = int(rng.integers(1, 2 * gk + 1))
        if data_reuse:      # one kernel group must fit the weight banks the pair shares
            wcap = prev["info"]["banks"][1] * bank_bytes
            K = K if min(K, gk) * bpk <= wcap else max(1, wcap // bpk)
    Wo = 4 * int(rng.integers(1, (we - 4) // 4 + 1))
    Ho = 4 * int(rng.integers(1, (in_h - 4) // 4 + 1))
    if Wo * Ho * K * ce * 4 > max_macs:
        raise Redraw()

    cvt = None
    if data_reuse:
        pad_value, cvt, nan_to_zero = ps["pad_value"], ps["cvt"], ps["nan_to_zero"]
    elif prec == 2:
        pad_value = int(rng.choice([0, 0x3C00, 0xBC00, int(rng.integers(0, 0x7C00))]))
    else:
        pad_value = int(rng.integers(0, 1 << 16))
    pra = int(rng.integers(0, 4))       # the fp16 PRA does not truncate
    if not data_reuse:
        if prec != 2 and rng.random() < 0.25:
            cvt = (int(rng.integers(-20, 21)), int(rng.integers(1, 4)), int(rng.integers(0, 3)))
        nan_to_zero = bool(rng.integers(2))
    if weight_reuse:
        wt4, compress = ps["wt4"], ps["compress"]
    else:
        wt4 = _values(rng, prec, (K, ce, 4, 4), weights=True)
        compress = bool(cfg.weight_compression and rng.random() < 0.25)
        if data_reuse and sum(prev["info"]["banks"]) == cfg.cbuf_banks:
            compress = False        # the mask needs the last bank, the first layer's split
        # NVDLA's CDMA: a mask larger than its bank streams through it a kernel group at a
        # time (128 bytes of the bank free) and a kept mask must fit it
        wmb = align_up(ceil_div(K * bpk // nbytes, 8), 128)
        if wmb > bank_bytes and (first and "weight" in kind or
                                 min(K, gk) * bpk // nbytes > 8 * (bank_bytes - 128)):
            compress = False
        if compress:
            wt4 = np.where(rng.random(wt4.shape) < 0.4, 0, wt4)
    bits = 8 if prec == 0 else 16
    clip = min(int(rng.integers(0, 5)) + (bits - 3 if prec != 2 else 0), 16)
    sdp = sdp_program(cfg, rng, Wo, Ho, K, prec, slot, shift=0 if prec == 2 else 2)
    if second:
        line_extra, surf_extra = ps["line_extra"], ps["surf_extra"]
    else:
        line_extra, surf_extra = int(rng.integers(0, 2)), int(rng.integers(0, 2))

    # CBUF: releases, what is kept, the bank split (a reusing layer's is the first's)
    reuse_bits = (int(data_reuse), int(weight_reuse), int(first and "data_full" in kind),
                  int(first and "weight" in kind))
    if first and partial:
        rls = 4 * int(rng.integers(1, he // 4))          # keeps 4 lines or more
    else:
        rls = 4 * int(rng.integers(1, in_h // 4 + 1))
    if data_reuse or weight_reuse:
        banks = prev["info"]["banks"]
    else:
        total = cfg.cbuf_banks - int(compress)     # the last bank holds a compressed mask
        dmin = max(1, ceil_div(lines * entries, depth))
        wneed = align_up(bpk * K, 128) if reuse_bits[3] else min(K, gk) * bpk
        wmin = max(1, ceil_div(wneed, bank_bytes))
        if dmin + wmin > total:
            raise Redraw()
        banks = _banks(cfg, rng, dmin, wmin, rng.random() < 0.5, total)

    spec = dict(W=W, H=data.shape[1], C=C, K=K, wt4=wt4, data=data, stride=(sx, sy),
                pad=(pl, pr, pt, pb), pad_value=pad_value, prec=prec, Wo=Wo, Ho=Ho, clip=clip,
                pra_truncate=pra, cvt=cvt, compress=compress, sdp=sdp, slot=slot,
                line_extra=line_extra, surf_extra=surf_extra, nan_to_zero=nan_to_zero,
                banks=banks, reuse=reuse_bits, rls_slices=rls, csc_height=csc_height,
                fetch_rows=fetch_rows, emit_feature=not data_reuse,
                feature_base=prev["info"]["feature_base"] if data_reuse else None,
                emit_weights=not weight_reuse,
                weight_base=prev["info"]["weight_base"] if weight_reuse else None)
    layer = wino_layer(cfg, **spec)
    layer["info"]["spec"] = spec
    if next_rows is not None:
        layer["info"]["next_rows"] = next_rows
    return layer


#: the kinds of two-layer programs: the Winograd reuse kinds of
#: :data:`sim.conv.random_programs.REUSE_KINDS`, two independent Winograd layers ("none"), and
#: a change of mode either way (the first layer keeps what a reuse kind keeps and the second
#: asks for it: NVDLA's CDMA fetches anew)
WINO_PAIR_KINDS = ("none",) + REUSE_KINDS + ("direct>wino", "wino>direct")


def _direct_layer(cfg, rng, prec, slot, reuse, max_macs):
    """A random direct layer of precision ``prec`` (:func:`random_program`; at most
    ``max_macs`` multiplies, and its generator's default 200000)."""
    layer = random_program(cfg, rng, min(max_macs, 200_000), slot, reuse=reuse,
                           compress=bool(cfg.weight_compression and rng.random() < 0.25),
                           int8_only=prec == 0, fp16=1.0 if prec == 2 else 0.0)
    if layer["info"]["prec"] != prec:
        raise Redraw()
    return layer


def ask_reuse(cfg, layer, kept):
    """Set ``layer``'s DATA_REUSE / WEIGHT_REUSE (CDMA and CSC) to ask for what a first layer
    of reuse kind ``kept`` kept (in place)."""
    dr, wr = int("data" in kept), int("weight" in kept)
    for b in ("CDMA", "CSC"):
        set_fields(cfg, layer, b, "D_MISC_CFG", DATA_REUSE=dr, WEIGHT_REUSE=wr)
    info = layer["info"]
    info["reuse"] = (dr, wr) + tuple(info["reuse"][2:])
    if "spec" in info:
        info["spec"]["reuse"] = info["reuse"]


def random_wino_pair(cfg, rng, kind=None, prec=None, max_macs=400_000, kept=None) -> list:
    """Two layers (register groups 0 and 1) of kind ``kind`` (one of :data:`WINO_PAIR_KINDS`,
    default drawn) and precision ``prec`` (default drawn): Winograd layers sharing the CBUF,
    or a direct and a Winograd layer (either order) whose first keeps data and / or weights
    as reuse kind ``kept`` does (default drawn; "none": nothing) and whose second asks to
    reuse them."""
    kind = kind or str(rng.choice(WINO_PAIR_KINDS))
    prec = int(rng.choice(_precs(cfg))) if prec is None else prec
    if kind == "none":
        return [random_wino_program(cfg, rng, prec, max_macs, 0),
                random_wino_program(cfg, rng, prec, max_macs, 1)]
    if kind in REUSE_KINDS:
        first = random_wino_program(cfg, rng, prec, max_macs, 0, reuse="first:" + kind)
        return [first, random_wino_program(cfg, rng, prec, max_macs, 1, prev=first,
                                           reuse=kind)]
    kept = kept or str(rng.choice(("none",) + REUSE_KINDS))
    reuse = "none" if kept == "none" else "first:" + kept
    if kind == "direct>wino":
        layers = [_direct_layer(cfg, rng, prec, 0, reuse, max_macs),
                  random_wino_program(cfg, rng, prec, max_macs, 1)]
    elif kind == "wino>direct":
        layers = [random_wino_program(cfg, rng, prec, max_macs, 0, reuse=reuse),
                  _direct_layer(cfg, rng, prec, 1, "none", max_macs)]
    else:
        raise ValueError(f"random_wino_pair: unknown kind {kind!r}")
    ask_reuse(cfg, layers[1], kept)
    return layers


def write_random_wino_traces(cfg, directory: str, count: int, seed: int = 0,
                             prefix: str = "wino_random", prec=None, pair_share: float = 0.4,
                             kinds=None, max_macs: int = 400_000) -> list:
    """``count`` random Winograd programs as trace directories with golden CRCs: one layer,
    or (``pair_share`` of them) two of :func:`random_wino_pair` (kinds drawn from ``kinds``,
    default :data:`WINO_PAIR_KINDS`); ``max_macs`` bounds a Winograd layer's multiplies. A
    program the golden model rejects is redrawn; :data:`wino_reject_log` lists why."""
    def draw(rng):
        if rng.random() < pair_share:
            kind = str(rng.choice(kinds)) if kinds else None
            return random_wino_pair(cfg, rng, kind, prec, max_macs)
        return [random_wino_program(cfg, rng, prec, max_macs)]
    return wino_reject_log.keep(write_random(cfg, directory, count, seed, prefix, draw,
                                             write_trace, golden_core))


#: the golden model's messages for the programs the last :func:`write_random_wino_traces`
#: redrew
wino_reject_log = RejectLog()
