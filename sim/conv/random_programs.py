"""Constrained-random direct-convolution layers, written as NVDLA trace directories.

Each program is one convolution layer -- or two, ping-ponged through register groups 0 and 1 --
programmed the way NVDLA's own ``dc_*`` traces do it: SDP in flying mode writes the output
(BS/BN with operands from registers or from the B/N read DMAs), CDMA, CSC, CMAC_A/B and CACC
carry one consistent geometry, ``poll_reg_equal(S_CBUF_FLUSH_STATUS)`` precedes the first
enable, and the layer is enabled SDP_RDMA (when it reads operands), SDP, CACC, CMAC_A, CMAC_B,
CSC, CDMA. Drawn within what the build allows: kernels 1..8 (sometimes up to 11), strides
1..4 (sometimes up to the field's 8), dilation 1..4, padding on all four sides with nonzero pad
values, channel and kernel counts off the Atomic-C / Atomic-K / memory-atom grid, packed and
unpacked lines and surfaces, fetch grains > 1 with packed lines, CACC truncation 0..16 (and
saturating sums where the CBUF can hold a long enough dot product), D_BANK splits that fit
(sometimes tightly), MC or CV (builds with an SRAMIF) for input, weights, operands and output;
two-layer programs sometimes reuse the CBUF: full data reuse (SKIP_DATA_RLS then DATA_REUSE),
partial data reuse (layer 1 releases ``D_RELEASE`` lines, layer 2 fetches the next lines of
the same tensor and convolves kept + new lines) and weight reuse (SKIP_WEIGHT_RLS then
WEIGHT_REUSE). A quarter of the int8 layers that fetch their input enable the CDMA input
convertor (``D_CVT_*``: offset, signed scale and truncate drawn so that most converted values
stay inside int8), and a chosen share (``int16_cvt``, default none) of the int16 ones (int16 to
int16); a layer that reuses data keeps the convertor of the layer that fetched it.
On builds with batching half the layers convolve 2..``max_batch`` batches (cut to the MAC
budget and the data banks; batch tensors apart by one batch's surfaces plus 0..3 atoms, SDP
writing batch outputs one output extent plus an atom apart); the draws of builds without
batching are unchanged.

    paths = write_random_traces(cfg, out_dir, count=100, seed=1)   # golden CRCs included
    layer = conv_layer(cfg, W=5, H=4, C=3, K=2, kh=3, kw=3, data=..., weights=...)
    path = write_trace(out_dir, "name", [layer], crcs)

Every program :func:`random_program` returns is accepted by :func:`sim.conv.program.decode`
(``write_random_traces`` also runs it on the golden core and redraws anything rejected). A
check covers the output surface plus a zero-initialised guard band before and after it, so a
write outside the output changes the CRC. Layers are kept small for RTL simulation:
``max_macs`` bounds the multiply-accumulates of a layer (and, through the Atomic-C x Atomic-K
array, its atomic operations).
"""

from __future__ import annotations

import shutil

import numpy as np

from arch.registers import register_map
from sim.formats.common import align_up, ceil_div, round_shift_right, saturate
from sim.formats.feature import pack_feature
from sim.formats.sparse import compress_weights
from sim.formats.weight import pack_dc_weights

from .. import random_traces
from ..random_traces import (BYTES as _BYTES, GUARD as _GUARD, SLOT as _SLOT, Redraw as _Redraw,
                             Regs, crc_check, enables, finish_trace, group_writes,
                             random_ram as _ram, set_fields as _mutate, start_trace,
                             RejectLog, write_random, zero_crc)
from ..sdp.random_programs import fp16_codes, fp16_layer
from .program import FP16 as _FP16, entries_per_slice

__all__ = ["conv_layer", "random_program", "random_pair", "sdp_program", "write_trace",
           "write_random_traces", "write_invalid_traces", "INVALID_MUTATIONS", "REUSE_KINDS",
           "reject_log",
           "golden_core", "run_trace_golden", "max_pair"]

_BASES = {"feature": 0x8000_0000, "weight": 0x8100_0000, "B": 0x8200_0000, "N": 0x8300_0000,
          "wmb": 0x8400_0000, "wgs": 0x8500_0000, "dst": 0x9000_0000}
CONV_BLOCKS = ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")
#: enable order of a layer (NVDLA's dc traces: consumers first, CDMA last)
ENABLE_ORDER = ("SDP_RDMA", "SDP", "CACC", "CMAC_A", "CMAC_B", "CSC", "CDMA")


def golden_core(cfg):
    """A GoldenCore whose units include the convolution pipeline (registered or not)."""
    from ..core import GoldenCore
    from ..units import default_units
    from .unit import ConvUnit
    units = default_units(cfg)
    units.setdefault("CONV", ConvUnit())
    return GoldenCore(cfg, units)


def run_trace_golden(path, cfg):
    """Run a trace directory on the golden core with the convolution unit."""
    return random_traces.run_trace_golden(path, cfg, golden_core)


def _group_k(cfg, prec):
    return cfg.atomic_k if prec == 0 else max(cfg.atomic_k // 2, 1)


# ------------------------------------------------------------------------------------------
# One layer from explicit parameters
# ------------------------------------------------------------------------------------------
def weight_images(surf, compress, emit, wbytes, bases, ram, images) -> int:
    """The memory images of a packed weight surface ``surf`` (direct or Winograd): the
    WEIGHT_BYTES-long uncompressed surface at ``bases[0]``, or, with ``compress``, the packed
    non-zero weights, WMB and WGS at ``bases`` (weight, wmb, wgs). Appends them to ``images``
    when ``emit``; returns WEIGHT_BYTES (the packed size when compressed)."""
    wbase, wmb_base, wgs_base = bases
    if compress:
        cw = compress_weights(surf)
        if emit:
            images += [(wbase, cw.weights, ram), (wmb_base, cw.wmb, ram), (wgs_base, cw.wgs, ram)]
        return cw.weights.size
    if emit:
        wdata = np.zeros(wbytes, np.uint8)
        wdata[:min(wbytes, surf.data.size)] = surf.data[:wbytes]
        images.append((wbase, wdata, ram))
    return wbytes


def conv_layer(cfg, *, W, H, C, K, kh=1, kw=1, stride=(1, 1), dilation=(1, 1),
               pad=(0, 0, 0, 0), pad_value=0, clip=0, prec=0, data=None, weights=None,
               line_extra=0, surf_extra=0, grain=1, banks=None, data_ram=1, weight_ram=1,
               dst_ram=1, slot=0, feature_base=None, fetch_rows=None, csc_height=None,
               emit_feature=True, weight_base=None, emit_weights=True, reuse=(0, 0, 0, 0),
               rls_slices=1, sdp=None, dst=None, cya=0, cvt=None, compress=False,
               weight_bytes=None, batches=1, batch_extra=0, dst_batch=None,
               nan_to_zero=False) -> dict:
    """One direct-convolution layer for ``cfg`` as register words and memory images.

    ``data`` [C, H, W] (the tensor in memory, int values of precision ``prec``) and
    ``weights`` [K, C, kh, kw]; ``pad`` is (left, right, top, bottom); ``stride`` and
    ``dilation`` are (x, y). The CDMA fetches rows ``fetch_rows = (first, count)`` of the tensor
    (default all) and the CSC convolves ``csc_height`` lines (default the fetched count; more
    after a partial data reuse). ``reuse`` = (DATA_REUSE, WEIGHT_REUSE, SKIP_DATA_RLS,
    SKIP_WEIGHT_RLS). ``sdp`` = (sdp words, sdp_rdma words or None, images) of the SDP stage
    (default: pass-through with output converter offset 0, scale 1, shift 0); ``dst`` =
    (base, line, surf) of the output (default packed, after a guard band); ``cvt`` =
    (CVT_OFFSET, CVT_SCALE, CVT_TRUNCATE) enables the CDMA input convertor (default off).
    ``compress`` writes the weights in the compressed format (WGS, WMB and the packed non-zero
    weights; builds with weight compression) and leaves the last CBUF bank to the mask;
    without ``weights`` (a layer reusing them) ``weight_bytes`` gives their compressed size.
    ``batches`` > 1 (builds with batching) convolves ``data`` [B, C, H, W]: batch ``b``'s
    tensor lies ``b x BATCH_STRIDE`` after the first (one batch's surfaces plus
    ``batch_extra`` atoms), and SDP writes batch ``b``'s output ``b x dst_batch`` bytes after
    the first (default: one output's extent plus an atom). ``nan_to_zero`` sets CDMA's
    ``D_NAN_FLUSH_TO_ZERO`` (fp16 input: fetched NaNs become +0).

    Returns ``{"regs": {block: {reg: word}}, "images": [(addr, uint8 data, ram)],
    "window": (addr, size, ram), "info": {...}}`` (``ram``: 1 = MC / pri_mem, 0 = CV /
    sec_mem).
    """
    rmap = register_map(cfg)
    atom = cfg.memory_atom
    nbytes = _BYTES[prec]
    pname = "int8" if prec == 0 else "int16"
    sx, sy = stride
    dx, dy = dilation
    pl, pr, pt, pb = pad
    row0, fetch_h = fetch_rows if fetch_rows is not None else (0, H)
    in_h = csc_height if csc_height is not None else fetch_h
    span_w, span_h = (kw - 1) * dx + 1, (kh - 1) * dy + 1
    Wo = (W + pl + pr - span_w) // sx + 1
    Ho = (in_h + pt + pb - span_h) // sy + 1
    images = []

    # -- input tensor ----------------------------------------------------------------------
    line_stride = W * atom + atom * line_extra
    rows_total = max(H, row0 + fetch_h)
    surf_stride = rows_total * line_stride + atom * surf_extra
    fbase = feature_base if feature_base is not None else \
        _BASES["feature"] + slot * _SLOT + atom * (slot * 3 % 7)
    in_surfaces = ceil_div(C * nbytes, atom)
    batch_stride = in_surfaces * surf_stride + atom * batch_extra if batches > 1 else 0
    if emit_feature:
        if data is None:
            raise ValueError("conv_layer: data is needed to emit the feature image")
        cubes = np.asarray(data)
        if cubes.ndim == 3:
            cubes = cubes[None]
        if cubes.shape[0] != batches:
            raise ValueError(f"conv_layer: data holds {cubes.shape[0]} batch(es), the layer "
                             f"{batches}")
        packed = [pack_feature(c, atom, pname, line_stride, surf_stride)[0] for c in cubes]
        if batches == 1:
            mem = packed[0]
        else:
            mem = np.zeros((batches - 1) * batch_stride + packed[-1].size, np.uint8)
            for b, m in enumerate(packed):
                mem[b * batch_stride:b * batch_stride + m.size] = m
        images.append((fbase, mem, data_ram))
    cdma_base = fbase + row0 * line_stride
    line_packed = line_stride == W * atom
    surf_packed = line_packed and surf_stride == fetch_h * line_stride
    entries = entries_per_slice(W, C, prec, atom, cfg.cbuf_entry_bytes)

    # -- weights ---------------------------------------------------------------------------
    bpk = kw * kh * C * nbytes
    wbytes = align_up(bpk * K, 128)
    wbase = weight_base if weight_base is not None else _BASES["weight"] + slot * _SLOT
    wmb_base, wgs_base = (_BASES[k] + slot * _SLOT for k in ("wmb", "wgs"))
    wmb_bytes = align_up(ceil_div(bpk * K // nbytes, 8), 128)
    if compress and weights is None:
        if weight_bytes is None:
            raise ValueError("conv_layer: compressed weights need the weights or weight_bytes")
        wbytes = weight_bytes
    if weights is not None:
        surf = pack_dc_weights(np.asarray(weights), pname, group_k=_group_k(cfg, prec),
                               cube_c=cfg.atomic_c)
        wbytes = weight_images(surf, compress, emit_weights, wbytes,
                               (wbase, wmb_base, wgs_base), weight_ram, images)
    elif emit_weights:
        raise ValueError("conv_layer: weights are needed to emit the weight image")

    if banks is None:
        dmin, wmin = min_banks(cfg, in_h * batches, entries, wbytes)
        banks = (dmin, cfg.cbuf_banks - dmin - int(compress))
    data_bank, weight_bank = banks

    # -- output ----------------------------------------------------------------------------
    out_surfaces = ceil_div(K * nbytes, atom)
    if dst is None:
        dbase = _BASES["dst"] + slot * _SLOT + _GUARD
        dline, dsurf = Wo * atom, Wo * Ho * atom
    else:
        dbase, dline, dsurf = dst
    extent = Wo * Ho * out_surfaces * atom if (Wo == 1 and Ho == 1 and batches == 1) else \
        (out_surfaces - 1) * dsurf + (Ho - 1) * dline + Wo * atom
    if batches > 1:
        dbatch = dst_batch if dst_batch is not None else align_up(extent, atom) + atom
        extent += (batches - 1) * dbatch
    else:
        dbatch = 0
    window = (dbase - _GUARD, align_up(extent, atom) + 2 * _GUARD, dst_ram)

    # -- registers -------------------------------------------------------------------------
    R = {b: Regs(rmap[b]) for b in CONV_BLOCKS}
    cdma, csc = R["CDMA"], R["CSC"]
    dr, wr, sdr, swr = reuse
    for b in ("CDMA", "CSC"):
        R[b].set("D_MISC_CFG", CONV_MODE=0, IN_PRECISION=prec, PROC_PRECISION=prec,
                 DATA_REUSE=dr, WEIGHT_REUSE=wr, SKIP_DATA_RLS=sdr, SKIP_WEIGHT_RLS=swr)
        R[b].set("D_DATAIN_FORMAT", DATAIN_FORMAT=0)
        R[b].set("D_BATCH_NUMBER", BATCHES=batches - 1)
        R[b].set("D_ENTRY_PER_SLICE", ENTRIES=entries - 1)
        R[b].set("D_WEIGHT_FORMAT", WEIGHT_FORMAT=int(compress))
        R[b].addr("D_WEIGHT_BYTES", wbytes)
        R[b].addr("D_WMB_BYTES", wmb_bytes if compress else 0)
        R[b].set("D_BANK", DATA_BANK=data_bank - 1, WEIGHT_BANK=weight_bank - 1)
        R[b].set("D_ZERO_PADDING_VALUE", PAD_VALUE=pad_value & 0xFFFF)
        R[b].set("D_CYA", CYA=cya)
    for b in ("CMAC_A", "CMAC_B", "CACC"):
        R[b].set("D_MISC_CFG", CONV_MODE=0, PROC_PRECISION=prec)
    cdma.set("D_DATAIN_SIZE_0", DATAIN_WIDTH=W - 1, DATAIN_HEIGHT=fetch_h - 1)
    cdma.set("D_DATAIN_SIZE_1", DATAIN_CHANNEL=C - 1)
    cdma.set("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=W - 1, DATAIN_HEIGHT_EXT=fetch_h - 1)
    cdma.set("D_DAIN_RAM_TYPE", DATAIN_RAM_TYPE=data_ram)
    _addr64(cfg, cdma, "D_DAIN_ADDR_LOW_0", "D_DAIN_ADDR_HIGH_0", cdma_base)
    cdma.addr("D_LINE_STRIDE", line_stride)
    cdma.addr("D_SURF_STRIDE", surf_stride)
    cdma.set("D_DAIN_MAP", LINE_PACKED=int(line_packed), SURF_PACKED=int(surf_packed))
    cdma.addr("D_BATCH_STRIDE", batch_stride)
    cdma.set("D_FETCH_GRAIN", GRAINS=grain - 1)
    cdma_weights_and_convertor(cfg, cdma, bpk=bpk, K=K, weight_ram=weight_ram, wbase=wbase,
                               compress=compress, wmb_base=wmb_base, wgs_base=wgs_base, cvt=cvt,
                               stride=(sx, sy), pad=(pl, pr, pt, pb), nan_to_zero=nan_to_zero)

    csc.set("D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=W - 1, DATAIN_HEIGHT_EXT=in_h - 1)
    csc.set("D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=C - 1)
    csc.set("D_POST_Y_EXTENSION", Y_EXTENSION=0)
    csc.set("D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=kw - 1, WEIGHT_HEIGHT_EXT=kh - 1)
    csc.set("D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=C - 1, WEIGHT_KERNEL=K - 1)
    csc.set("D_DATAOUT_SIZE_0", DATAOUT_WIDTH=Wo - 1, DATAOUT_HEIGHT=Ho - 1)
    csc.set("D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=K - 1)
    csc.set("D_ATOMICS", ATOMICS=Wo * Ho - 1)
    csc.set("D_RELEASE", RLS_SLICES=rls_slices - 1)
    csc.set("D_CONV_STRIDE_EXT", CONV_X_STRIDE_EXT=sx - 1, CONV_Y_STRIDE_EXT=sy - 1)
    csc.set("D_DILATION_EXT", X_DILATION_EXT=dx - 1, Y_DILATION_EXT=dy - 1)
    csc.set("D_ZERO_PADDING", PAD_LEFT=pl, PAD_TOP=pt)
    csc.set("D_PRA_CFG", PRA_TRUNCATE=0)

    regs = output_program(cfg, rmap, R, Wo=Wo, Ho=Ho, K=K, dbase=dbase, dline=dline,
                          dsurf=dsurf, clip=clip, cya=cya, sdp=sdp, prec=prec, slot=slot,
                          dst_ram=dst_ram, images=images, batches=batches, dbatch=dbatch)
    info = dict(W=W, H=H, C=C, K=K, kh=kh, kw=kw, stride=stride, dilation=dilation, pad=pad,
                pad_value=pad_value, clip=clip, prec=prec, Wo=Wo, Ho=Ho, in_h=in_h,
                fetch_rows=(row0, fetch_h), entries=entries, banks=banks, wbytes=wbytes,
                feature_base=fbase, line_extra=line_extra, surf_extra=surf_extra,
                weight_base=wbase, compress=compress, data_ram=data_ram, weight_ram=weight_ram, grain=grain,
                macs=Wo * Ho * K * C * kh * kw, reuse=reuse, rls_slices=rls_slices,
                dst=(dbase, dline, dsurf), dst_ram=dst_ram, cvt=cvt, batches=batches,
                batch_extra=batch_extra, dst_batch=dbatch)
    return {"regs": regs, "images": images, "window": window, "info": info,
            "intr_mask": _intr_mask(cfg)}


def cdma_weights_and_convertor(cfg, cdma, *, bpk, K, weight_ram, wbase, compress, wmb_base,
                               wgs_base, cvt, stride, pad, nan_to_zero):
    """The CDMA fields a direct and a Winograd layer program alike: the weight surface
    (``bpk`` bytes per kernel, ``K`` kernels at ``wbase``; the WMB / WGS addresses when
    ``compress``), the input convertor (``cvt`` = (offset, scale, truncate) or None), the
    stride (x, y), the padding (left, right, top, bottom), NaN flushing and the DMA counters."""
    sx, sy = stride
    pl, pr, pt, pb = pad
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


def _addr64(cfg, regs, low, high, value):
    regs.addr(low, value & 0xFFFFFFFF)
    if cfg.address_width > 32:
        regs.addr(high, value >> 32)



def output_program(cfg, rmap, blocks, *, Wo, Ho, K, dbase, dline, dsurf, clip, sdp, prec, slot,
                   dst_ram, images, cya=None, batches=1, dbatch=0) -> dict:
    """The output side of a convolution layer: CACC's output cube and truncation, and SDP in
    flying mode writing the result (``sdp``: a :func:`sdp_program` triple, or None for a
    pass-through; ``batches`` > 1: SDP's batch mode, batch outputs ``dbatch`` bytes apart).
    Returns the register words of every block of the layer (``blocks``: the conv blocks'
    :class:`Regs`) and appends SDP's operand images to ``images``."""
    atom = cfg.memory_atom
    cacc = blocks["CACC"]
    cacc.set("D_DATAOUT_SIZE_0", DATAOUT_WIDTH=Wo - 1, DATAOUT_HEIGHT=Ho - 1)
    cacc.set("D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=K - 1)
    cacc.addr("D_DATAOUT_ADDR", dbase & 0xFFFFFFFF)
    cacc.set("D_BATCH_NUMBER", BATCHES=batches - 1)
    cacc.addr("D_LINE_STRIDE", dline & 0xFFFFFF)
    cacc.addr("D_SURF_STRIDE", dsurf & 0xFFFFFF)
    cacc.set("D_DATAOUT_MAP", LINE_PACKED=int(dline == Wo * atom),
             SURF_PACKED=int(dsurf == Ho * dline))
    cacc.set("D_CLIP_CFG", CLIP_TRUNCATE=clip)
    if cya is not None:
        cacc.set("D_CYA", CYA=cya)

    if sdp is None:
        sdp = sdp_program(cfg, None, Wo, Ho, K, prec, slot)
    sdp_words, rdma_words, sdp_images = sdp
    s = Regs(rmap["SDP"])
    s.words.update(sdp_words)
    s.addr("D_DST_BASE_ADDR_LOW", dbase & 0xFFFFFFFF)
    if "D_DST_BASE_ADDR_HIGH" in rmap["SDP"]:
        s.addr("D_DST_BASE_ADDR_HIGH", dbase >> 32)
    s.addr("D_DST_LINE_STRIDE", dline)
    s.addr("D_DST_SURFACE_STRIDE", dsurf)
    s.set("D_DST_DMA_CFG", DST_RAM_TYPE=dst_ram)
    images.extend(sdp_images)
    if batches > 1:
        s.set("D_FEATURE_MODE_CFG", BATCH_NUMBER=batches - 1)
        s.addr("D_DST_BATCH_STRIDE", dbatch)

    regs = {"SDP": s.words}
    if rdma_words is not None:
        if batches > 1:
            r = Regs(rmap["SDP_RDMA"])
            r.words.update(rdma_words)
            r.set("D_FEATURE_MODE_CFG", BATCH_NUMBER=batches - 1)
            rdma_words = r.words
        regs["SDP_RDMA"] = rdma_words
    regs.update({b: blocks[b].words for b in CONV_BLOCKS})
    return regs

def min_banks(cfg, in_h, entries, wbytes):
    """Smallest (data banks, weight banks) holding ``in_h`` lines of ``entries`` entries and
    the whole weight surface."""
    depth = cfg.cbuf_entry_depth
    return (max(1, ceil_div(in_h * entries, depth)),
            max(1, ceil_div(wbytes, depth * cfg.cbuf_entry_bytes)))


# ------------------------------------------------------------------------------------------
# SDP in flying mode
# ------------------------------------------------------------------------------------------
def sdp_program(cfg, rng, Wo, Ho, K, prec, slot, shift=0, tame=True):
    """SDP (and, when operands come from memory, SDP_RDMA) words for the flying output of a
    Wo x Ho x K convolution, plus the operand images. ``rng=None`` gives a pass-through
    (stages bypassed, converter offset 0, scale 1, shift ``shift``)."""
    rmap = register_map(cfg)
    sdp, rdma = Regs(rmap["SDP"]), Regs(rmap["SDP_RDMA"])
    atom = cfg.memory_atom
    group = atom // _BYTES[prec]
    surfaces = ceil_div(K, group)
    sdp.set("D_DATA_CUBE_WIDTH", WIDTH=Wo - 1)
    sdp.set("D_DATA_CUBE_HEIGHT", HEIGHT=Ho - 1)
    sdp.set("D_DATA_CUBE_CHANNEL", CHANNEL=K - 1)
    sdp.set("D_FEATURE_MODE_CFG", FLYING_MODE=1, OUTPUT_DST=0, WINOGRAD=0, BATCH_NUMBER=0)
    sdp.set("D_DATA_FORMAT", PROC_PRECISION=prec, OUT_PRECISION=prec)
    sdp.set("D_DP_EW_CFG", EW_BYPASS=1, EW_ALU_BYPASS=1, EW_MUL_BYPASS=1, EW_LUT_BYPASS=1)
    images = []
    if rng is None:
        for prefix in ("BS", "BN"):
            sdp.set(f"D_DP_{prefix}_CFG", **{f"{prefix}_BYPASS": 1,
                                              f"{prefix}_ALU_BYPASS": 1,
                                              f"{prefix}_MUL_BYPASS": 1,
                                              f"{prefix}_RELU_BYPASS": 1})
        sdp.set("D_CVT_OFFSET", CVT_OFFSET=0)
        sdp.set("D_CVT_SCALE", CVT_SCALE=1)
        sdp.set("D_CVT_SHIFT", CVT_SHIFT=shift)
        sdp.set("D_PERF_ENABLE", PERF_SAT_EN=1)
        return sdp.words, None, images
    sdp.set("D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)), PERF_LUT_EN=int(rng.integers(2)),
            PERF_SAT_EN=int(rng.integers(2)))

    def s16(lo=-8, hi=9):
        return int(rng.integers(lo, hi)) if tame else int(rng.integers(-(1 << 15), 1 << 15))

    mem_units = {}
    bits = 0                       # extra magnitude bits the stages may add
    for prefix, dma, present in (("BS", "B", cfg.sdp_bs), ("BN", "N", cfg.sdp_bn)):
        on = present and rng.random() < 0.5
        alu_on, mul_on = rng.random() < 0.7, rng.random() < 0.6
        sdp.set(f"D_DP_{prefix}_CFG", **{
            f"{prefix}_BYPASS": int(not on), f"{prefix}_ALU_BYPASS": int(not alu_on),
            f"{prefix}_ALU_ALGO": int(rng.integers(0, 3)),
            f"{prefix}_MUL_BYPASS": int(not mul_on),
            f"{prefix}_MUL_PRELU": int(rng.random() < 0.3),
            f"{prefix}_RELU_BYPASS": int(rng.random() < 0.6)})
        alu_mem = on and alu_on and rng.random() < 0.4
        mul_mem = on and mul_on and rng.random() < 0.4
        sdp.set(f"D_DP_{prefix}_ALU_CFG", **{
            f"{prefix}_ALU_SRC": int(alu_mem),
            f"{prefix}_ALU_SHIFT_VALUE": int(rng.integers(0, 8 if tame else 64))})
        mshift = int(rng.integers(0, 4 if tame else 64))
        sdp.set(f"D_DP_{prefix}_MUL_CFG", **{f"{prefix}_MUL_SRC": int(mul_mem),
                                              f"{prefix}_MUL_SHIFT_VALUE": mshift})
        sdp.set(f"D_DP_{prefix}_ALU_SRC_VALUE", **{f"{prefix}_ALU_OPERAND": s16() & 0xFFFF})
        sdp.set(f"D_DP_{prefix}_MUL_SRC_VALUE", **{f"{prefix}_MUL_OPERAND": s16() & 0xFFFF})
        if on and mul_on:
            bits += max(0, 3 - mshift)
        if alu_mem or mul_mem:
            mem_units[dma] = (alu_mem, mul_mem)

    use_rdma = bool(mem_units)
    if use_rdma:
        for reg, fld, v in (("D_DATA_CUBE_WIDTH", "WIDTH", Wo), ("D_DATA_CUBE_HEIGHT", "HEIGHT",
                            Ho), ("D_DATA_CUBE_CHANNEL", "CHANNEL", K)):
            rdma.set(reg, **{fld: v - 1})
        rdma.set("D_FEATURE_MODE_CFG", FLYING_MODE=1, WINOGRAD=0, IN_PRECISION=prec,
                 PROC_PRECISION=prec, OUT_PRECISION=prec, BATCH_NUMBER=0)
        for dma in ("B", "N", "E"):
            reg = f"D_{dma}RDMA_CFG"
            if reg not in rdma.block:
                continue
            if dma not in mem_units:
                rdma.set(reg, **{f"{dma}RDMA_DISABLE": 1})
                continue
            alu_mem, mul_mem = mem_units[dma]
            use = 2 if alu_mem and mul_mem else (1 if alu_mem else 0)
            size = int(rng.integers(0, 2)) if prec == 0 else 1
            per_element = rng.random() < 0.5
            op_ram = int(rng.random() < 0.7) if cfg.sramif else 1
            rdma.set(reg, **{f"{dma}RDMA_DISABLE": 0, f"{dma}RDMA_DATA_USE": use,
                             f"{dma}RDMA_DATA_SIZE": size,
                             f"{dma}RDMA_DATA_MODE": int(per_element),
                             f"{dma}RDMA_RAM_TYPE": op_ram})
            elem = (2 if use == 2 else 1) * (size + 1)
            prefix = {"B": "BS", "N": "BN"}[dma]
            base = _BASES[dma] + slot * _SLOT + atom * int(rng.integers(0, 16))
            if per_element and not (Wo == 1 and Ho == 1):
                line = Wo * group * elem + atom * int(rng.integers(0, 3))
                surf = Ho * line + atom * int(rng.integers(0, 3))
                nregion = surfaces * surf
            else:
                line = surf = 0
                nregion = surfaces * group * elem * (Wo * Ho if per_element else 1)
            rdma.addr(f"D_{prefix}_BASE_ADDR_LOW", base & 0xFFFFFFFF)
            rdma.addr(f"D_{prefix}_LINE_STRIDE", line)
            rdma.addr(f"D_{prefix}_SURFACE_STRIDE", surf)
            data = (rng.integers(-6, 7, nregion) & 0xFF).astype(np.uint8) if tame else \
                rng.integers(0, 256, nregion, dtype=np.uint8)
            if tame and size:
                data[1::2] = np.where(data[0::2] >= 128, 0xFF, 0)[: data[1::2].size]
            images.append((base, data, op_ram))

    if prec == _FP16:
        # fp16 operands, register and memory; NaN-to-zero and the NaN / Inf counters
        fp16_layer(cfg, rng, sdp, rdma, images)
    if tame:
        sdp.set("D_CVT_OFFSET", CVT_OFFSET=int(rng.integers(-16, 17)) & 0xFFFFFFFF)
        sdp.set("D_CVT_SCALE", CVT_SCALE=int(rng.integers(1, 4)))
        sdp.set("D_CVT_SHIFT", CVT_SHIFT=min(63, max(0, shift + bits + int(rng.integers(-1, 2)))))
    else:
        sdp.set("D_CVT_OFFSET", CVT_OFFSET=int(rng.integers(0, 1 << 32)))
        sdp.set("D_CVT_SCALE", CVT_SCALE=int(rng.integers(0, 1 << 16)))
        sdp.set("D_CVT_SHIFT", CVT_SHIFT=int(rng.integers(0, 64)))
    return sdp.words, (rdma.words if use_rdma else None), images


# ------------------------------------------------------------------------------------------
# Random layers
# ------------------------------------------------------------------------------------------
def _atomic_ops(cfg, Wo, Ho, K, C, kh, kw, prec):
    ce = cfg.atomic_c // _BYTES[prec]
    return Wo * Ho * kh * kw * ceil_div(C, ce) * ceil_div(K, _group_k(cfg, prec))


def max_pair(cfg):
    """Largest dot product (channels x kernel positions) whose int8 sums can exceed int32 and
    that still fits this build's CBUF (0 when none does)."""
    need = (1 << 17) + 1                         # 2^31 / 128^2 products, plus one
    cap = cfg.cbuf_banks * cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
    return need if 2 * need + 4096 < cap else 0


def _draw_geometry(cfg, rng, max_macs, prec):
    """(W, H, C, K, kh, kw, stride, dilation, pad) of a random layer within the budget."""
    atom_e = cfg.memory_atom // _BYTES[prec]
    ce, gk = cfg.atomic_c // _BYTES[prec], _group_k(cfg, prec)
    while True:
        big = rng.random() < 0.08
        kh = int(rng.integers(1, 12 if big else 9))
        kw = int(rng.integers(1, 12 if big else 9))
        if rng.random() < 0.2:
            kh = kw = 1
        dx = 1 if rng.random() < 0.6 else int(rng.integers(1, 5))
        dy = 1 if rng.random() < 0.6 else int(rng.integers(1, 5))
        sx = int(rng.integers(1, 5)) if rng.random() < 0.92 else int(rng.integers(5, 9))
        sy = int(rng.integers(1, 5)) if rng.random() < 0.92 else int(rng.integers(5, 9))
        cmode = rng.random()
        if cmode < 0.3:
            C = int(rng.integers(1, atom_e + 1))
        elif cmode < 0.8:
            C = int(rng.integers(1, 2 * ce + atom_e + 2))
        else:
            C = int(rng.integers(1, 4 * ce + 3))
        K = int(rng.integers(1, 2 * gk + 3)) if rng.random() < 0.8 else \
            int(rng.integers(1, 4 * gk + 2))
        span_w, span_h = (kw - 1) * dx + 1, (kh - 1) * dy + 1

        def pads(span):
            if rng.random() < 0.4:
                return 0, 0
            m = min(span - 1, 31)
            return int(rng.integers(0, m + 1)), int(rng.integers(0, m + 1))

        pl, pr = pads(span_w)
        pt, pb = pads(span_h)
        shape = rng.random()
        if shape < 0.1:
            W = max(1, span_w - pl - pr)
        else:
            W = max(1, span_w - pl - pr) + int(rng.integers(0, 12))
        if shape > 0.9:
            H = max(1, span_h - pt - pb)
        else:
            H = max(1, span_h - pt - pb) + int(rng.integers(0, 12))
        Wo = (W + pl + pr - span_w) // sx + 1
        Ho = (H + pt + pb - span_h) // sy + 1
        if Wo < 1 or Ho < 1:
            continue
        macs = Wo * Ho * K * C * kh * kw
        if macs > max_macs or _atomic_ops(cfg, Wo, Ho, K, C, kh, kw, prec) > max_macs // 32:
            continue
        if W * H * C > 4 * max_macs or K * C * kh * kw > max_macs:
            continue
        entries = entries_per_slice(W, C, prec, cfg.memory_atom, cfg.cbuf_entry_bytes)
        dmin, wmin = min_banks(cfg, H, entries, align_up(kh * kw * C * K * _BYTES[prec], 128))
        if dmin + wmin > cfg.cbuf_banks:
            continue
        return W, H, C, K, kh, kw, (sx, sy), (dx, dy), (pl, pr, pt, pb)


def _values(rng, shape, prec, mode):
    if prec == _FP16:
        # fp16 codes as int16 values (the memory layout is int16's): moderate values, or
        # ("full" / "extreme") wide exponent spreads, zeros, denormals, infinities and NaNs
        n = int(np.prod(shape))
        codes = fp16_codes(rng, n, wild=mode != "tame")
        if mode == "extreme":
            special = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x7BFF, 0xFBFF,
                                0x7C00, 0xFC00, 0x7E00])
            codes = np.where(rng.random(n) < 0.1, rng.choice(special, n), codes)
        codes = codes.astype(np.int64).reshape(shape)
        return np.where(codes >= 0x8000, codes - 0x10000, codes)
    hi = 1 << (8 * _BYTES[prec] - 1)
    if mode == "tame":
        return rng.integers(-8, 9, shape)
    if mode == "extreme":
        return rng.choice(np.array([-hi, hi - 1, -hi, -1, 0]), shape)
    return rng.integers(-hi, hi, shape)


def _banks(cfg, rng, dmin, wmin, tight, total=None):
    total = cfg.cbuf_banks if total is None else total
    free = total - dmin - wmin
    if tight or free == 0:
        return dmin, wmin
    if rng.random() < 0.3:                   # all banks used
        d = dmin + int(rng.integers(0, free + 1))
        return d, total - d
    d = dmin + int(rng.integers(0, free + 1))
    w = wmin + int(rng.integers(0, total - d - wmin + 1))
    return d, w


def _random_cvt(rng, data, dmode, bits=8):
    """A random input convertor (CVT_OFFSET, CVT_SCALE, CVT_TRUNCATE) for int8 (``bits`` 8)
    or int16 (16) feature data: the gain ``|scale| / 2^truncate`` (either sign) and the offset
    keep most converted values inside the precision (some saturate), truncations of 0..14
    (int16: 0..23) with ties."""
    hi = 8 if dmode == "tame" else 1 << (bits - 1)
    trunc = int(rng.integers(0, 15 if bits == 8 else 24))
    gain = float(np.exp(rng.uniform(np.log(0.05), np.log(16.0 if dmode == "tame" else 1.5))))
    scale = max(1, min(32767, int(round(gain * (1 << trunc)))))
    if rng.random() < 0.4:
        scale = -scale
    off = int(rng.integers(-hi // 2, hi // 2 + 1))
    if rng.random() < 0.1:                              # a wide offset: mostly saturated lanes
        off = int(rng.integers(-32768, 32768))
    return off, scale, trunc


def _convert(data, cvt, bits=8):
    """The convertor on int8 (``bits`` 8) or int16 (16) values (as the golden CDMA applies
    it)."""
    off, scale, trunc = cvt
    return saturate(round_shift_right((np.asarray(data, np.int64) - off) * scale, trunc), bits)


def _shift_for(C, kh, kw, dmode, wmode, prec, dsd=None):
    """Rough bits of the layer's sums above the int8 output range (``dsd``: the data's
    standard deviation when known, e.g. after the input convertor)."""
    sd = {"tame": 5.0, "extreme": 90.0, "full": 74.0}
    mag = np.sqrt(C * kh * kw) * (sd[dmode] if dsd is None else max(dsd, 1.0)) * sd[wmode] \
        * (256 if prec else 1)
    return max(0, int(np.log2(mag + 1)) - 6)


def _draw_batches(cfg, rng, max_macs, geometry, prec, lines, avail_entries):
    """A batch count 2..max_batch (small ones more often) for a layer of ``geometry`` (W, H,
    C, K, kh, kw, stride, dilation, pad), cut down to the MAC budget and to ``lines`` input
    lines per batch in ``avail_entries`` CBUF entries; 1 when not even two batches fit."""
    W, H, C, K, kh, kw, (sx, sy), (dx, dy), (pl, pr, pt, pb) = geometry
    B = int(rng.integers(2, min(4, cfg.max_batch) + 1)) if rng.random() < 0.6 else \
        int(rng.integers(2, cfg.max_batch + 1))
    Wo = max(1, (W + pl + pr - ((kw - 1) * dx + 1)) // sx + 1)
    Ho = max(1, (H + pt + pb - ((kh - 1) * dy + 1)) // sy + 1)
    B = min(B, max_macs // max(1, Wo * Ho * K * C * kh * kw),
            (max_macs // 32) // max(1, _atomic_ops(cfg, Wo, Ho, K, C, kh, kw, prec)))
    entries = entries_per_slice(W, C, prec, cfg.memory_atom, cfg.cbuf_entry_bytes)
    B = min(B, avail_entries // max(1, lines * entries))
    return B if B >= 2 else 1


def random_program(cfg, rng, max_macs: int = 200_000, slot: int = 0, prev=None,
                   reuse: str = "none", compress: bool = False, batch_share: float = 0.5,
                   int8_only: bool = False, int16_cvt: float = 0.0,
                   fp16: float = 0.0, wt_stream: float = 0.0) -> dict:
    """One random valid layer (see the module docstring) for ``cfg``.

    ``reuse`` (for the second layer of a pair; ``prev`` is the first layer's result) is one
    of ``"none"``, ``"data_full"``, ``"data_partial"``, ``"weight"``, ``"data_full+weight"``,
    ``"data_partial+weight"``; the first layer of such a pair is drawn with ``reuse`` set to
    ``"first:<kind>"`` so it keeps (SKIP_*_RLS) or partially releases its CBUF contents.
    ``compress`` draws sparse weights (a random share of zeros) in the compressed format (a
    layer reusing weights takes its first layer's format). On builds with batching half the
    layers convolve 2..max_batch batches (a layer reusing data keeps its first layer's);
    other builds draw exactly what they drew before batches existed. ``int8_only``: int8
    layers on a build with int16 too (e.g. for an RTL that runs int8 only there).
    ``int16_cvt``: the share of int16 layers that fetch their input with the input convertor
    (int16 to int16; 0, the default, draws what was drawn before int16 conversion existed).
    ``fp16``: the share of layers that are fp16 (builds with fp16; 0, the default, draws what
    was drawn before fp16 layers existed): fp16 codes with wide exponent spreads, zeros,
    denormals, infinities and NaNs, fp16 pad values, CDMA's NaN flushing at random, an fp16
    SDP layer (fp16 operands, NaN-to-zero at random); no input convertor (it takes integers
    only), no saturating draw.
    ``wt_stream``: the share of layers drawn anew (uncompressed, not keeping their weights)
    whose weight banks hold less than the weight surface, as few as one kernel group needs,
    so the weights stream through them (a batched one's once per batch on this core's RTL;
    0, the default, draws what was drawn before).
    Returns a :func:`conv_layer` dict.
    """
    precs = [0] + ([1] if "int16" in cfg.data_types and not int8_only else [])
    if prev is not None:
        prec = prev["info"]["prec"]
    elif fp16 and "fp16" in cfg.data_types and rng.random() < fp16:
        prec = _FP16
    else:
        prec = int(rng.choice(precs))
    kind = reuse.split(":")[-1]
    first = reuse.startswith("first:")
    second = prev is not None and reuse != "none"
    data_reuse = second and "data" in kind
    weight_reuse = second and "weight" in kind
    atom = cfg.memory_atom
    cya = int(rng.integers(0, 1 << 32)) if rng.random() < 0.2 else 0

    saturating = (prec != _FP16 and reuse == "none" and max_pair(cfg) and max_macs >= max_pair(cfg)
                  and rng.random() < 0.05)
    if saturating:                           # one long int8 dot product that overflows int32
        kh = kw = 8
        C = ceil_div(max_pair(cfg), 64)
        C = align_up(C, cfg.atomic_c)
        W = H = 8
        K = 1
        stride, dilation, pad = (1, 1), (1, 1), (0, 0, 0, 0)
    elif second:
        pi = prev["info"]
        W, C = pi["W"], pi["C"]
        if weight_reuse:
            K, kh, kw = pi["K"], pi["kh"], pi["kw"]
        else:
            K = int(rng.integers(1, 2 * _group_k(cfg, prec) + 3))
            kh, kw = pi["kh"], pi["kw"]
            if data_reuse and pi["batches"] > 1:
                # the batches carry over and so does the bank split: this core fetches a
                # batched layer's weights once (sim.conv.core_limits), so they must fit the
                # weight banks (no extra draw: other programs keep their random streams)
                wcap = pi["banks"][1] * cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
                K = max(1, min(K, wcap // (kh * kw * C * _BYTES[prec])))
        H = pi["H"] if not data_reuse else pi["fetch_rows"][1]
        stride, dilation = pi["stride"], pi["dilation"]
        pl, pr, pt, pb = pi["pad"]
        pad = (pl, pr, 0 if kind.startswith("data_partial") else pt, pb)
    else:
        W, H, C, K, kh, kw, stride, dilation, pad = _draw_geometry(cfg, rng, max_macs, prec)

    # batches (builds with batching only: other builds keep their random streams)
    B, batch_extra = 1, 0
    if second and data_reuse:
        B, batch_extra = prev["info"]["batches"], prev["info"]["batch_extra"]
    elif cfg.batching and not saturating and rng.random() < batch_share:
        depth = cfg.cbuf_entry_depth
        if second and weight_reuse:
            avail = prev["info"]["banks"][0] * depth
        else:
            wneed = min_banks(cfg, 1, 1, align_up(kh * kw * C * K * _BYTES[prec], 128))[1]
            avail = (cfg.cbuf_banks - int(compress) - wneed) * depth
        lines = H + 5 if first and "data_partial" in kind else H
        B = _draw_batches(cfg, rng, max_macs, (W, H, C, K, kh, kw, stride, dilation, pad),
                          prec, lines, avail)
        if B > 1 and rng.random() < 0.4:
            batch_extra = int(rng.integers(1, 4))

    # memory layout of the input tensor
    line_extra = 0 if rng.random() < 0.6 else int(rng.integers(1, 4))
    surf_extra = 0 if rng.random() < 0.6 else int(rng.integers(1, 4))
    dmode = "extreme" if saturating else str(rng.choice(["tame", "full", "extreme"],
                                                        p=[0.3, 0.6, 0.1]))
    wmode = "extreme" if saturating else str(rng.choice(["tame", "full", "extreme"],
                                                        p=[0.3, 0.6, 0.1]))
    fetch_rows, csc_height, feature_base = None, None, None
    emit_feature, data = True, None
    rls = 1
    reuse_bits = [0, 0, 0, 0]
    if second:
        pi = prev["info"]
        line_extra, surf_extra = pi["line_extra"], pi["surf_extra"]
        if kind.startswith("data_full"):
            reuse_bits[0] = 1
            emit_feature = False
            feature_base = pi["feature_base"]
            fetch_rows = pi["fetch_rows"]
            H = pi["H"]
            csc_height = pi["in_h"] - int(rng.integers(0, min(2, pi["in_h"] - 1) + 1)) \
                if rng.random() < 0.3 else pi["in_h"]
        elif kind.startswith("data_partial"):
            reuse_bits[0] = 1
            emit_feature = False
            feature_base = pi["feature_base"]
            H = pi["H"]
            r0, n1 = pi["fetch_rows"]
            new = H - (r0 + n1)
            fetch_rows = (r0 + n1, new)
            csc_height = pi["in_h"] - pi["rls_slices"] // B + new
        if weight_reuse:
            reuse_bits[1] = 1
    if first:
        if "data_full" in kind:
            reuse_bits[2] = 1
        if "weight" in kind:
            reuse_bits[3] = 1
    if data is None and emit_feature:
        if first and "data_partial" in kind:
            # a taller tensor: this layer fetches the top lines, the next one the rest
            extra = int(rng.integers(1, 6))
            data = _values(rng, (B,) * (B > 1) + (C, H + extra, W), prec, dmode)
            fetch_rows = (0, H)
        else:
            data = _values(rng, (B,) * (B > 1) + (C, H, W), prec, dmode)
    if saturating:
        data = np.full((C, H, W), -128)
    # the CDMA input convertor on int8 feature data (kept slices were converted by the
    # layer that fetched them: a reusing layer keeps its convertor)
    cvt, dsd = None, None
    if second and data_reuse:
        cvt, dsd = prev["info"].get("cvt"), prev["info"].get("cvt_sd")
    elif prec == 0 and not saturating and rng.random() < 0.25:
        cvt = _random_cvt(rng, data, dmode)
        dsd = float(np.sqrt(np.mean(_convert(data, cvt).astype(np.float64) ** 2)))
    elif prec == 1 and int16_cvt and not saturating and rng.random() < int16_cvt:
        cvt = _random_cvt(rng, data, dmode, 16)
        # in int8 units, as _shift_for counts int16 layers (its 256 is the weights')
        dsd = float(np.sqrt(np.mean(_convert(data, cvt, 16).astype(np.float64) ** 2))) / 256
    in_h = csc_height if csc_height is not None else \
        (fetch_rows[1] if fetch_rows is not None else H)
    span_h = (kh - 1) * dilation[1] + 1
    if in_h + pad[2] + pad[3] < span_h:
        pad = (pad[0], pad[1], pad[2], span_h - in_h - pad[2])
    if first and "data_partial" in kind:
        rls = int(rng.integers(1, H + 1)) * B        # whole lines of every batch
    elif not reuse_bits[2]:
        rls = int(rng.integers(1, in_h * B + 1))

    # weights
    emit_weights, weight_base, weights = True, None, None
    if weight_reuse:
        emit_weights = False
        weight_base = prev["info"]["weight_base"]
        compress = prev["info"]["compress"]
    else:
        weights = _values(rng, (K, C, kh, kw), prec, wmode)
        if saturating:
            weights = np.full((K, C, kh, kw), -128)
        if compress:
            zeros = rng.random(weights.shape) < float(rng.choice([0.0, 0.3, 0.7, 0.95]))
            weights = np.where(zeros, 0, weights)
            if not weights.any():
                weights.flat[int(rng.integers(0, weights.size))] = 1

    entries = entries_per_slice(W, C, prec, atom, cfg.cbuf_entry_bytes)
    wbytes = align_up(kh * kw * C * K * _BYTES[prec], 128)
    if second and (data_reuse or weight_reuse):
        banks = prev["info"]["banks"]
    else:
        dmin, wmin = min_banks(cfg, H * B, entries, wbytes)
        if first and "data_partial" in kind:
            # layer 2 holds (H - rls) kept + new lines: reserve for the worst case (rls = 1)
            dmin = max(dmin, ceil_div((data.shape[-2] - 1) * B * entries,
                                      cfg.cbuf_entry_depth))
        total = cfg.cbuf_banks - int(compress)      # the last bank holds a compressed mask
        if dmin + wmin > total:
            raise _Redraw()
        banks = _banks(cfg, rng, dmin, wmin, rng.random() < 0.25, total)
        if wt_stream and not compress and not reuse_bits[3] and rng.random() < wt_stream:
            bank_bytes = cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
            group = min(K, _group_k(cfg, prec)) * kh * kw * C * _BYTES[prec]
            gmin = max(1, ceil_div(group, bank_bytes))
            if gmin < wmin:
                banks = (banks[0], int(rng.integers(gmin, wmin)))

    # fetch grain: only with packed lines
    fh = fetch_rows[1] if fetch_rows is not None else H
    grain = 1
    if line_extra == 0 and rng.random() < 0.5:
        grain = int(rng.integers(1, fh + 1))

    Wo = (W + pad[0] + pad[1] - ((kw - 1) * dilation[0] + 1)) // stride[0] + 1
    Ho = (in_h + pad[2] + pad[3] - span_h) // stride[1] + 1
    if Wo < 1 or Ho < 1:
        raise _Redraw()
    clip = 0 if saturating else int(rng.integers(0, 17))
    shift = _shift_for(C, kh, kw, dmode, wmode, prec, dsd)
    tame_out = rng.random() < 0.75
    if tame_out and not saturating:
        clip = min(16, int(rng.integers(0, shift + 1)))
    sdp = sdp_program(cfg, rng, Wo, Ho, K, prec, slot, shift=max(0, shift - clip),
                      tame=rng.random() < 0.85)
    dbase = _BASES["dst"] + slot * _SLOT + _GUARD + atom * int(rng.integers(0, 64))
    dline = Wo * atom + (atom * int(rng.integers(1, 3)) if rng.random() < 0.4 else 0)
    dsurf = Ho * dline + (atom * int(rng.integers(1, 3)) if rng.random() < 0.4 else 0)
    pad_value = 0
    if rng.random() < 0.6:
        hi = 1 << (8 * _BYTES[prec] - 1)
        pad_value = int(rng.integers(-hi, hi)) & 0xFFFF
        if prec == _FP16:
            pad_value = int(fp16_codes(rng, 1)[0])
        if prec == 0 and rng.random() < 0.3:       # junk in the unused high byte
            pad_value = (pad_value & 0xFF) | (int(rng.integers(0, 256)) << 8)
    layer = conv_layer(
        cfg, W=W, H=H if data is None else data.shape[-2], C=C, K=K, kh=kh, kw=kw,
        stride=stride, dilation=dilation, pad=pad, pad_value=pad_value, clip=clip, prec=prec,
        data=data, weights=weights, line_extra=line_extra, surf_extra=surf_extra,
        grain=grain, banks=banks, data_ram=_ram(cfg, rng) if emit_feature else
        prev["info"]["data_ram"], weight_ram=_ram(cfg, rng) if emit_weights else
        prev["info"]["weight_ram"], dst_ram=_ram(cfg, rng), slot=slot,
        feature_base=feature_base, fetch_rows=fetch_rows, csc_height=csc_height,
        emit_feature=emit_feature, weight_base=weight_base, emit_weights=emit_weights,
        reuse=tuple(reuse_bits), rls_slices=rls, sdp=sdp, dst=(dbase, dline, dsurf), cya=cya,
        cvt=cvt, compress=compress,
        weight_bytes=prev["info"]["wbytes"] if weight_reuse else None,
        batches=B, batch_extra=batch_extra,
        nan_to_zero=prec == _FP16 and rng.random() < 0.5)
    layer["info"]["cvt_sd"] = dsd
    return layer


REUSE_KINDS = ("data_full", "data_partial", "weight", "data_full+weight",
               "data_partial+weight")


def random_pair(cfg, rng, max_macs=200_000, kind=None, compress=False, batch_share=0.5,
                int8_only=False, int16_cvt=0.0, fp16=0.0, wt_stream=0.0):
    """Two layers (groups 0 and 1); ``kind`` one of :data:`REUSE_KINDS` or ``"none"``."""
    kind = kind or str(rng.choice(("none",) + REUSE_KINDS))
    opts = dict(compress=compress, batch_share=batch_share, int8_only=int8_only,
                int16_cvt=int16_cvt, **({"fp16": fp16} if fp16 else {}),
                **({"wt_stream": wt_stream} if wt_stream else {}))
    if kind == "none":
        return [random_program(cfg, rng, max_macs, 0, **opts),
                random_program(cfg, rng, max_macs, 1, **opts)]
    first = random_program(cfg, rng, max_macs, 0, reuse="first:" + kind, **opts)
    return [first, random_program(cfg, rng, max_macs, 1, prev=first, reuse=kind, **opts)]


# ------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------
def _intr_mask(cfg):
    """GLB S_INTR_MASK with every done interrupt masked except SDP's (as the dc traces do)."""
    reg = register_map(cfg)["GLB"]["S_INTR_MASK"]
    word = 0
    for f in reg.fields:
        if not f.name.startswith("SDP_"):
            word |= f.mask
    return word


def write_trace(directory: str, name: str, layers: list, crcs=None) -> str:
    """Write ``layers`` (:func:`conv_layer` dicts, groups 0, 1, 0, ...) as the trace directory
    ``directory/name``; ``crcs`` are the expected CRCs (0 when unknown). Returns its path."""
    path, lines = start_trace(directory, name, layers, label_windows=True)
    lines.append("//Disable CDMA DATA_DONE, WEIGHT_DONE and CACC interrupts")
    lines.append(f"reg_write(NVDLA_GLB.S_INTR_MASK_0, {layers[0]['intr_mask']:#x});")
    lines.append("reg_write(NVDLA_GLB.S_INTR_STATUS_0, 0x0);")
    rdma_group = 0
    for i, layer in enumerate(layers):
        g = i % 2
        regs = layer["regs"]
        for block in ("SDP_RDMA", "SDP") + CONV_BLOCKS:
            if block in regs:
                lines += group_writes(block, rdma_group if block == "SDP_RDMA" else g,
                                      regs[block])
        if i == 0:
            lines.append("poll_reg_equal(NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0,0x1);")
        lines += enables(*(block for block in ENABLE_ORDER if block in regs))
        if "SDP_RDMA" in regs:
            rdma_group ^= 1
    for i, layer in enumerate(layers):
        lines += crc_check(f"SDP_{i % 2}", i, layer["window"], crcs)
    return finish_trace(path, name, lines)


def _golden_crcs(cfg, path, n):
    """Golden CRCs of the ``n`` layers of the trace at ``path``: ``(crcs, None)``, or
    ``(None, message)`` when the golden model rejects it."""
    return random_traces.golden_crcs(cfg, path, n, golden_core)


def write_random_traces(cfg, directory: str, count: int, seed: int = 0,
                        two_layer_share: float = 0.3, max_macs: int = 200_000,
                        prefix: str = "conv_random", compress_share: float = 0.0,
                        batch_share: float = 0.5, int8_only: bool = False,
                        int16_cvt: float = 0.0, fp16: float = 0.0,
                        wt_stream: float = 0.0) -> list:
    """``count`` random valid programs as trace directories with golden CRCs; returns paths.

    ``compress_share`` of the programs (builds with weight compression) use compressed weights;
    on builds with batching, ``batch_share`` of the layers (drawn anew, not data-reusing) run
    several batches (0: none, e.g. for an RTL without batching; the random stream is the same);
    ``int8_only``: no int16 layers on a build with int16; ``int16_cvt``: the share of int16
    layers fetching their input that enable the input convertor (int16 to int16); ``fp16``:
    the share of layers drawn anew that are fp16 (builds with fp16); ``wt_stream``: the share
    of layers drawn anew whose weights stream through fewer weight banks than they need.

    Deterministic by ``seed``. A program the golden model rejects is redrawn (the generator is
    constrained, not exact; :func:`reject_log` of the last call lists the rejections)."""
    extra = {"fp16": fp16} if fp16 else {}
    if wt_stream:
        extra["wt_stream"] = wt_stream

    def draw(rng):
        compress = cfg.weight_compression and compress_share and rng.random() < compress_share
        if rng.random() < two_layer_share:
            return random_pair(cfg, rng, max_macs, compress=bool(compress),
                               batch_share=batch_share, int8_only=int8_only,
                               int16_cvt=int16_cvt, **extra)
        return [random_program(cfg, rng, max_macs, 0, compress=bool(compress),
                               batch_share=batch_share, int8_only=int8_only,
                               int16_cvt=int16_cvt, **extra)]
    return reject_log.keep(write_random(cfg, directory, count, seed, prefix, draw, write_trace,
                                          golden_core))


#: the golden model's messages for the programs the last :func:`write_random_traces` redrew
reject_log = RejectLog()


# ------------------------------------------------------------------------------------------
# Invalid programs
# ------------------------------------------------------------------------------------------
def _base_layer(cfg, slot=0, **over):
    """A small fixed valid layer the mutations start from."""
    rng = np.random.default_rng(7 + slot)
    spec = dict(W=6, H=5, C=11, K=9, kh=3, kw=2, pad=(1, 0, 1, 1), pad_value=3)
    spec.update(over)
    data = rng.integers(-20, 21, (spec["C"], spec["H"], spec["W"]))
    weights = rng.integers(-5, 6, (spec["K"], spec["C"], spec["kh"], spec["kw"]))
    return conv_layer(cfg, data=data, weights=weights, slot=slot, **spec)


def _field(cfg, layer, block, reg, name):
    f = register_map(cfg)[block][reg][name]
    return (layer["regs"][block][reg] & f.mask) >> f.lsb


def _m_bank_overflow(cfg, layers):
    for b in ("CDMA", "CSC"):
        _mutate(cfg, layers[0], b, "D_BANK", DATA_BANK=cfg.cbuf_banks - 1, WEIGHT_BANK=0)
    return "CDMA.D_BANK"


def _m_kernel_too_large(cfg, layers):
    _mutate(cfg, layers[0], "CSC", "D_DILATION_EXT", X_DILATION_EXT=7)     # 2 taps 8 apart
    return "CSC.D_WEIGHT_SIZE_EXT_0"


def _m_output_too_large(cfg, layers):
    w = _field(cfg, layers[0], "CSC", "D_DATAOUT_SIZE_0", "DATAOUT_WIDTH")
    _mutate(cfg, layers[0], "CSC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=w + 1)
    return "CSC.D_DATAOUT_SIZE_0.DATAOUT_WIDTH"


def _m_entry_per_slice(cfg, layers):
    e = _field(cfg, layers[0], "CDMA", "D_ENTRY_PER_SLICE", "ENTRIES")
    for b in ("CDMA", "CSC"):
        _mutate(cfg, layers[0], b, "D_ENTRY_PER_SLICE", ENTRIES=e + 1)
    return "CDMA.D_ENTRY_PER_SLICE.ENTRIES"


def _m_in_precision(cfg, layers):
    for b in ("CDMA", "CSC"):
        _mutate(cfg, layers[0], b, "D_MISC_CFG", IN_PRECISION=1)
    return "CDMA.D_MISC_CFG.IN_PRECISION"


def _m_cdma_csc_stride(cfg, layers):
    _mutate(cfg, layers[0], "CDMA", "D_CONV_STRIDE", CONV_X_STRIDE=1)
    return "CDMA.D_CONV_STRIDE.CONV_X_STRIDE"


def _m_cdma_csc_pad(cfg, layers):
    _mutate(cfg, layers[0], "CSC", "D_ZERO_PADDING", PAD_LEFT=0)
    return "CDMA.D_ZERO_PADDING.PAD_LEFT"


def _m_weight_bytes(cfg, layers):
    for b in ("CDMA", "CSC"):
        layers[0]["regs"][b]["D_WEIGHT_BYTES"] = 512      # the layer needs 594
    return "CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES"


def _m_missing_precision(cfg, layers):
    missing = [v for v, n in ((1, "int16"), (2, "fp16")) if n not in cfg.data_types]
    if not missing:
        return None
    for b in CONV_BLOCKS:
        _mutate(cfg, layers[0], b, "D_MISC_CFG", PROC_PRECISION=missing[0])
    return "CDMA.D_MISC_CFG.PROC_PRECISION"


def _m_clip(cfg, layers):
    _mutate(cfg, layers[0], "CACC", "D_CLIP_CFG", CLIP_TRUNCATE=17)
    return "CACC.D_CLIP_CFG.CLIP_TRUNCATE"


def _m_grain_unpacked(cfg, layers):
    layers[0]["regs"]["CDMA"]["D_LINE_STRIDE"] += cfg.memory_atom
    _mutate(cfg, layers[0], "CDMA", "D_DAIN_MAP", LINE_PACKED=0, SURF_PACKED=0)
    _mutate(cfg, layers[0], "CDMA", "D_FETCH_GRAIN", GRAINS=1)
    return "CDMA.D_FETCH_GRAIN.GRAINS"


def _m_cv_without_sramif(cfg, layers):
    if cfg.sramif:
        return None
    _mutate(cfg, layers[0], "CDMA", "D_DAIN_RAM_TYPE", DATAIN_RAM_TYPE=0)
    return "CDMA.D_DAIN_RAM_TYPE.DATAIN_RAM_TYPE"


def _m_data_reuse_geometry(cfg, layers):
    first = layers[0]
    for b in ("CDMA", "CSC"):
        _mutate(cfg, first, b, "D_MISC_CFG", SKIP_DATA_RLS=1)
    second = _base_layer(cfg, slot=1, W=7, banks=first["info"]["banks"], reuse=(1, 0, 0, 0))
    layers.append(second)
    return "CDMA.D_MISC_CFG.DATA_REUSE"


def _m_weight_reuse_geometry(cfg, layers):
    first = layers[0]
    for b in ("CDMA", "CSC"):
        _mutate(cfg, first, b, "D_MISC_CFG", SKIP_WEIGHT_RLS=1)
    second = _base_layer(cfg, slot=1, K=5, banks=first["info"]["banks"], reuse=(0, 1, 0, 0))
    layers.append(second)
    return "CDMA.D_MISC_CFG.WEIGHT_REUSE"


def _m_post_extension(cfg, layers):
    _mutate(cfg, layers[0], "CSC", "D_POST_Y_EXTENSION", Y_EXTENSION=1)
    return "CSC.D_POST_Y_EXTENSION.Y_EXTENSION"


def _m_lines_overlap(cfg, layers):
    ls = layers[0]["regs"]["CDMA"]["D_LINE_STRIDE"]
    layers[0]["regs"]["CDMA"]["D_LINE_STRIDE"] = ls - cfg.memory_atom
    _mutate(cfg, layers[0], "CDMA", "D_DAIN_MAP", LINE_PACKED=0, SURF_PACKED=0)
    return "CDMA.D_LINE_STRIDE.LINE_STRIDE"


def _m_atomics(cfg, layers):
    a = _field(cfg, layers[0], "CSC", "D_ATOMICS", "ATOMICS")
    _mutate(cfg, layers[0], "CSC", "D_ATOMICS", ATOMICS=a + 1)
    return "CSC.D_ATOMICS.ATOMICS"


def _m_weight_bytes_unaligned(cfg, layers):
    for b in ("CDMA", "CSC"):
        layers[0]["regs"][b]["D_WEIGHT_BYTES"] += cfg.memory_atom
    return "CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES"


def _m_kept_weights_overflow(cfg, layers):
    wcap = cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
    for b in ("CDMA", "CSC"):
        _mutate(cfg, layers[0], b, "D_MISC_CFG", SKIP_WEIGHT_RLS=1)
        _mutate(cfg, layers[0], b, "D_BANK", WEIGHT_BANK=0)
        layers[0]["regs"][b]["D_WEIGHT_BYTES"] = wcap + 128     # one weight bank + 128
    return "CDMA.D_MISC_CFG.SKIP_WEIGHT_RLS"


def partial_reuse_pair(cfg, new_lines: int) -> list:
    """Two 1x1 layers in one data bank of 8 slices: the first fetches 6 lines and releases 1,
    the second reuses the 5 kept slices, fetches ``new_lines`` more lines of the tensor and
    convolves 8 lines. Valid for ``new_lines`` <= 3; with 4 the kept and fetched slices (9)
    overflow the data bank although the 8 lines the CSC uses fit."""
    atom, depth = cfg.memory_atom, cfg.cbuf_entry_depth
    C = atom                                    # one memory atom per position (int8)
    W = next(w for w in range(1, 4 * depth)
             if entries_per_slice(w, C, 0, atom, cfg.cbuf_entry_bytes) * 8 == depth)
    H = 6 + new_lines
    rng = np.random.default_rng(11)
    data = rng.integers(-20, 21, (C, H, W))
    w1, w2 = (rng.integers(-5, 6, (2, C, 1, 1)) for _ in range(2))
    first = conv_layer(cfg, W=W, H=H, C=C, K=2, data=data, weights=w1, fetch_rows=(0, 6),
                       banks=(1, 1), rls_slices=1)
    second = conv_layer(cfg, W=W, H=H, C=C, K=2, weights=w2, slot=1,
                        feature_base=first["info"]["feature_base"], emit_feature=False,
                        fetch_rows=(6, new_lines), csc_height=min(8, 5 + new_lines),
                        banks=(1, 1), reuse=(1, 0, 0, 0))
    return [first, second]


def _m_partial_reuse_overflow(cfg, layers):
    layers[:] = partial_reuse_pair(cfg, 4)
    return "CDMA.D_DATAIN_SIZE_0.DATAIN_HEIGHT"


def _m_weight_reuse_released(cfg, layers):
    second = _base_layer(cfg, slot=1, banks=layers[0]["info"]["banks"], reuse=(0, 1, 0, 0))
    layers.append(second)
    return "CDMA.D_MISC_CFG.WEIGHT_REUSE"


def _batched_base(cfg, layers):
    """The base layer with two batches (builds with batching; None elsewhere)."""
    if not cfg.batching:
        return None
    rng = np.random.default_rng(8)
    data = rng.integers(-20, 21, (2, 11, 5, 6))
    weights = rng.integers(-5, 6, (9, 11, 3, 2))
    layers[0] = conv_layer(cfg, W=6, H=5, C=11, K=9, kh=3, kw=2, pad=(1, 0, 1, 1),
                           pad_value=3, data=data, weights=weights, batches=2)
    return layers[0]


def _m_batches_over_max(cfg, layers):
    if not cfg.batching or cfg.max_batch >= 32:     # BATCHES (5 bits) counts up to 32
        return None
    for b in ("CDMA", "CSC", "CACC"):
        _mutate(cfg, layers[0], b, "D_BATCH_NUMBER", BATCHES=cfg.max_batch)
    return "CDMA.D_BATCH_NUMBER.BATCHES"


def _m_batches_disagree(cfg, layers):
    if _batched_base(cfg, layers) is None:
        return None
    _mutate(cfg, layers[0], "CACC", "D_BATCH_NUMBER", BATCHES=0)
    return "CACC.D_BATCH_NUMBER.BATCHES"


def _m_batch_stride_overlap(cfg, layers):
    layer = _batched_base(cfg, layers)
    if layer is None:
        return None
    atom = cfg.memory_atom
    # two surfaces per batch (11 channels, 8-byte atoms) or one (32-byte atoms)
    need = -(-11 // atom) * layer["regs"]["CDMA"]["D_SURF_STRIDE"]
    layer["regs"]["CDMA"]["D_BATCH_STRIDE"] = need - atom
    return "CDMA.D_BATCH_STRIDE.BATCH_STRIDE"


def _m_batch_sdp_mismatch(cfg, layers):
    if _batched_base(cfg, layers) is None:
        return None
    _mutate(cfg, layers[0], "SDP", "D_FEATURE_MODE_CFG", BATCH_NUMBER=0)
    return "SDP.D_FEATURE_MODE_CFG.BATCH_NUMBER"


def _m_batch_dst_overlap(cfg, layers):
    layer = _batched_base(cfg, layers)
    if layer is None:
        return None
    layer["regs"]["SDP"]["D_DST_BATCH_STRIDE"] = cfg.memory_atom
    return "SDP.D_DST_BATCH_STRIDE"


def _m_batch_cacc_pairs(cfg, layers):
    layer = _batched_base(cfg, layers)
    if layer is None:
        return None
    layer["regs"]["CACC"]["D_DATAOUT_ADDR"] += cfg.memory_atom
    return "CACC.D_DATAOUT_ADDR.DATAOUT_ADDR"


def _m_batch_release(cfg, layers):
    layer = _batched_base(cfg, layers)
    if layer is None:
        return None
    _mutate(cfg, layer, "CSC", "D_RELEASE", RLS_SLICES=2 * layer["info"]["in_h"])
    return "CSC.D_RELEASE.RLS_SLICES"


#: name -> mutation(cfg, layers) -> the field the golden model's message must name (None:
#: not applicable to this build). Two-layer mutations append the offending second layer.
INVALID_MUTATIONS = {
    "bank_overflow": _m_bank_overflow, "kernel_too_large": _m_kernel_too_large,
    "output_too_large": _m_output_too_large, "entry_per_slice": _m_entry_per_slice,
    "in_precision_without_cvt": _m_in_precision, "cdma_csc_stride": _m_cdma_csc_stride,
    "cdma_csc_pad": _m_cdma_csc_pad, "weight_bytes_too_small": _m_weight_bytes,
    "missing_precision": _m_missing_precision, "clip_truncate": _m_clip,
    "grain_unpacked": _m_grain_unpacked, "cv_without_sramif": _m_cv_without_sramif,
    "data_reuse_geometry": _m_data_reuse_geometry,
    "weight_reuse_geometry": _m_weight_reuse_geometry,
    "post_extension_feature": _m_post_extension, "lines_overlap": _m_lines_overlap,
    "atomics": _m_atomics, "weight_bytes_unaligned": _m_weight_bytes_unaligned,
    "partial_reuse_overflow": _m_partial_reuse_overflow,
    "weight_reuse_released": _m_weight_reuse_released,
    "kept_weights_overflow": _m_kept_weights_overflow,
    # builds with batching
    "batches_over_max": _m_batches_over_max, "batches_disagree": _m_batches_disagree,
    "batch_stride_overlap": _m_batch_stride_overlap,
    "batch_sdp_mismatch": _m_batch_sdp_mismatch, "batch_dst_overlap": _m_batch_dst_overlap,
    "batch_release": _m_batch_release, "batch_cacc_pairs": _m_batch_cacc_pairs,
}


def write_invalid_traces(cfg, directory: str) -> list:
    """One trace per applicable mutation of :data:`INVALID_MUTATIONS`; each one's golden run
    must fail with an error naming the field. Returns ``[(path, field)]``. The expected CRC of
    the offending layer is that of its untouched (all-zero) output window; a valid first layer
    of a two-layer case carries its golden CRC."""
    out = []
    for name, mutate in INVALID_MUTATIONS.items():
        layers = [_base_layer(cfg)]
        crc0 = None
        fld = mutate(cfg, layers)
        if fld is None:
            continue
        crcs = [zero_crc(layer["window"]) for layer in layers]
        if len(layers) == 2:
            tmp = write_trace(directory, f"conv_invalid_{name}_first", layers[:1])
            crc0, err = _golden_crcs(cfg, tmp, 1)
            shutil.rmtree(tmp)
            if crc0 is None:
                raise AssertionError(f"{name}: the first layer is invalid: {err}")
            crcs[0] = crc0[0]
        out.append((write_trace(directory, f"conv_invalid_{name}", layers, crcs), fld))
    return out
