"""Constrained-random PDP layers, written as NVDLA trace directories.

Each program is one pooling layer -- or two, ping-ponged through register groups 0 and 1 --
programmed as NVDLA's ``pdp_*`` traces do it: PDP and PDP_RDMA carry one geometry, PDP is
enabled before PDP_RDMA, and the layer's ``PDP_<group>`` interrupt precedes its CRC check.
Drawn within what the build allows: max / min / average, kernels 1..8 and strides 1..16 in
each direction (strides larger than the kernel too), padding on all four sides below the
kernel size, average-pooling pad values as NVDLA's compiler writes them (``PAD_VALUE_NX`` = N x
the pad value) and reciprocals ``2^16 // kernel`` (sometimes any 17-bit value, exercising the
rounding and the wrap-around of the B + 3 / B-bit steps), split-width mode whenever the output
is wider than the line buffer takes and sometimes when it is not (2 to 5 passes, overlapping
or skipping columns), unpacked input lines and surfaces, int8 and, on builds with them, int16
and fp16 (fp16: :func:`_fp16_data` values with NaNs, infinities, zeros, denormals and extremes
mixed in, ``NAN_TO_ZERO`` either way, reciprocals ``1 / kernel`` in fp17 or any 17-bit code,
pad values N x v in fp17; builds without fp16 draw exactly as before), MC or CV (builds
with an SRAMIF) for input and output. Some layers are SDP->PDP: an offline
SDP program of :mod:`sim.sdp.random_programs` sends its output to a flying PDP layer.

    paths = write_random_traces(cfg, out_dir, count=100, seed=1)     # golden CRCs included
    layer = pdp_layer(cfg, W=9, H=5, C=11, kernel=(3, 2), stride=(2, 1), data=cube)
    path = write_trace(out_dir, "name", [layer], crcs)

Every program :func:`random_layer` returns is accepted by :func:`sim.pdp.program.decode`
(``write_random_traces`` also runs it on the golden core and redraws anything rejected). A
check covers the output surfaces plus a zero-initialised guard band before and after them, so
a write outside the output changes the CRC. Layers are kept small for RTL simulation
(``max_elems`` bounds the input elements, channel padding included).
"""

from __future__ import annotations

import copy
import tempfile

import numpy as np

from arch.registers import register_map
from sim.formats.common import align_up
from sim.formats.feature import pack_feature

from sim.nvfloat import fp16_from_float, fp17_from_float

from ..random_traces import (BYTES as _INT_BYTES, GUARD as _GUARD, SLOT as _SLOT, Redraw as _Redraw,
                             Regs, crc_check, enables, finish_trace, golden_core, group_writes,
                             random_ram as _ram, run_trace_golden, set_fields as _set,
                             start_trace, write_invalid, write_random, RejectLog)
from ..sdp import random_programs as sdp_random
from .program import (AVERAGE, MAX, MIN, PdpProgramError, max_pass_width, out_size,
                      split_passes)

__all__ = ["pdp_layer", "random_layer", "random_split", "flying_layer", "write_trace",
           "write_random_traces", "write_invalid_traces", "INVALID_MUTATIONS",
           "write_flying_invalid_traces", "FLYING_INVALID_MUTATIONS", "golden_core",
           "run_trace_golden", "reject_log"]

_BASES = {"src": 0x8000_0000, "dst": 0x9000_0000}
_PNAME = {0: "int8", 1: "int16", 2: "fp16"}
_BYTES = {**_INT_BYTES, 2: 2}
FP16 = 2


# ------------------------------------------------------------------------------------------
# One layer from explicit parameters
# ------------------------------------------------------------------------------------------
def _addr64(cfg, regs, prefix, value):
    regs.addr(f"D_{prefix}_BASE_ADDR_LOW", value & 0xFFFFFFFF)
    if cfg.address_width > 32:
        regs.addr(f"D_{prefix}_BASE_ADDR_HIGH", value >> 32)
    else:
        regs.set(f"D_{prefix}_BASE_ADDR_HIGH", **{f"{prefix}_BASE_ADDR_HIGH": 0})


def pdp_layer(cfg, *, W, H, C, kernel=(1, 1), stride=(1, 1), pad=(0, 0, 0, 0), method=MAX,
              prec=0, data=None, pad_values=(0,) * 7, recip=None, split=None, src_ram=1,
              dst_ram=1, slot=0, line_extra=0, surf_extra=0, dst=None, flying=False,
              cya=0, nan_to_zero=0) -> dict:
    """One PDP layer for ``cfg`` as register words and memory images.

    ``data`` [C, H, W] is the input (int values of precision ``prec``, fp16 codes for
    ``prec=2``; offline only), ``kernel``/``stride`` are (width, height), ``pad`` (left,
    right, top, bottom), ``pad_values`` the seven PAD_VALUE_NX fields, ``recip`` (width,
    height) the reciprocal fields (default ``2^16 // kernel``, fp16: 1 / kernel in fp17),
    ``split`` None or ``(SPLIT_NUM, (first, mid, last) input widths, (first, mid, last)
    output widths)``; ``nan_to_zero`` the fp16 NaN flush; ``dst`` (base, line, surface) of the
    output (default packed after a guard band). ``flying`` leaves PDP_RDMA out (the input
    comes from SDP).

    Returns ``{"regs": {block: {reg: word}}, "images": [(addr, uint8 data, ram)],
    "window": (addr, size, ram), "info": {...}}`` (``ram``: 1 = MC / pri_mem, 0 = CV /
    sec_mem).
    """
    rmap = register_map(cfg)
    atom = cfg.memory_atom
    nbytes = _BYTES[prec]
    group = atom // nbytes
    surfaces = -(-C // group)
    kw, kh = kernel
    sw, sh = stride
    pl, pr, pt, pb = pad
    Wo = out_size(W, pl, pr, kw, sw)
    Ho = out_size(H, pt, pb, kh, sh)
    if recip is None:
        recip = (int(fp17_from_float(1 / kw)), int(fp17_from_float(1 / kh))) if prec == FP16 \
            else (0x10000 // kw, 0x10000 // kh)
    images = []

    # -- input -----------------------------------------------------------------------------
    line = W * atom + atom * line_extra
    surf = H * line + atom * surf_extra
    src = _BASES["src"] + slot * _SLOT + atom * (slot * 5 % 11)
    if not flying:
        if data is None:
            raise ValueError("pdp_layer: data is needed for an offline layer")
        arr = np.asarray(data)
        if prec == FP16:
            arr = (arr.astype(np.int64) & 0xFFFF).astype(np.uint16)      # codes
        mem, _ = pack_feature(arr, atom, _PNAME[prec], line, surf)
        images.append((src, mem, src_ram))

    # -- output ----------------------------------------------------------------------------
    if dst is None:
        dbase = _BASES["dst"] + slot * _SLOT + _GUARD
        dline, dsurf = Wo * atom, Wo * Ho * atom
    else:
        dbase, dline, dsurf = dst
    extent = (surfaces - 1) * dsurf + (Ho - 1) * dline + Wo * atom
    window = (dbase - _GUARD, align_up(extent, atom) + 2 * _GUARD, dst_ram)

    # -- registers -------------------------------------------------------------------------
    p = Regs(rmap["PDP"])
    split_num, part_in, part_out = split if split is not None else (0, (1, 1, 1), (1, 1, 1))
    p.set("D_DATA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=W - 1)
    p.set("D_DATA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=H - 1)
    p.set("D_DATA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=C - 1)
    p.set("D_DATA_CUBE_OUT_WIDTH", CUBE_OUT_WIDTH=Wo - 1)
    p.set("D_DATA_CUBE_OUT_HEIGHT", CUBE_OUT_HEIGHT=Ho - 1)
    p.set("D_DATA_CUBE_OUT_CHANNEL", CUBE_OUT_CHANNEL=C - 1)
    p.set("D_OPERATION_MODE_CFG", POOLING_METHOD=method, FLYING_MODE=int(not flying),
          SPLIT_NUM=split_num)
    p.set("D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=nan_to_zero)
    p.set("D_PARTIAL_WIDTH_IN", PARTIAL_WIDTH_IN_FIRST=part_in[0] - 1,
          PARTIAL_WIDTH_IN_MID=part_in[1] - 1, PARTIAL_WIDTH_IN_LAST=part_in[2] - 1)
    p.set("D_PARTIAL_WIDTH_OUT", PARTIAL_WIDTH_OUT_FIRST=part_out[0] - 1,
          PARTIAL_WIDTH_OUT_MID=part_out[1] - 1, PARTIAL_WIDTH_OUT_LAST=part_out[2] - 1)
    p.set("D_POOLING_KERNEL_CFG", KERNEL_WIDTH=kw - 1, KERNEL_HEIGHT=kh - 1,
          KERNEL_STRIDE_WIDTH=sw - 1, KERNEL_STRIDE_HEIGHT=sh - 1)
    p.set("D_RECIP_KERNEL_WIDTH", RECIP_KERNEL_WIDTH=recip[0])
    p.set("D_RECIP_KERNEL_HEIGHT", RECIP_KERNEL_HEIGHT=recip[1])
    p.set("D_POOLING_PADDING_CFG", PAD_LEFT=pl, PAD_TOP=pt, PAD_RIGHT=pr, PAD_BOTTOM=pb)
    for n in range(1, 8):
        p.set(f"D_POOLING_PADDING_VALUE_{n}_CFG",
              **{f"PAD_VALUE_{n}X": int(pad_values[n - 1]) & 0x7FFFF})
    # PDP's own source registers are not used by the datapath: NVDLA's compiler copies them
    _addr64(cfg, p, "SRC", 0 if flying else src)
    p.addr("D_SRC_LINE_STRIDE", line)
    p.addr("D_SRC_SURFACE_STRIDE", surf)
    _addr64(cfg, p, "DST", dbase)
    p.addr("D_DST_LINE_STRIDE", dline)
    p.addr("D_DST_SURFACE_STRIDE", dsurf)
    p.set("D_DST_RAM_CFG", DST_RAM_TYPE=dst_ram)
    p.set("D_DATA_FORMAT", INPUT_DATA=prec)
    p.set("D_PERF_ENABLE", DMA_EN=1)
    p.set("D_CYA", CYA=cya)
    regs = {"PDP": p.words}

    if not flying:
        r = Regs(rmap["PDP_RDMA"])
        r.set("D_DATA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=W - 1)
        r.set("D_DATA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=H - 1)
        r.set("D_DATA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=C - 1)
        r.set("D_FLYING_MODE", FLYING_MODE=1)
        _addr64(cfg, r, "SRC", src)
        r.addr("D_SRC_LINE_STRIDE", line)
        r.addr("D_SRC_SURFACE_STRIDE", surf)
        r.set("D_SRC_RAM_CFG", SRC_RAM_TYPE=src_ram)
        r.set("D_DATA_FORMAT", INPUT_DATA=prec)
        r.set("D_OPERATION_MODE_CFG", SPLIT_NUM=split_num)
        r.set("D_POOLING_KERNEL_CFG", KERNEL_WIDTH=kw - 1, KERNEL_STRIDE_WIDTH=sw - 1)
        r.set("D_POOLING_PADDING_CFG", PAD_WIDTH=pl)
        r.set("D_PARTIAL_WIDTH_IN", PARTIAL_WIDTH_IN_FIRST=part_in[0] - 1,
              PARTIAL_WIDTH_IN_MID=part_in[1] - 1, PARTIAL_WIDTH_IN_LAST=part_in[2] - 1)
        r.set("D_PERF_ENABLE", DMA_EN=1)
        regs["PDP_RDMA"] = r.words

    info = dict(W=W, H=H, C=C, kernel=kernel, stride=stride, pad=pad, method=method,
                prec=prec, Wo=Wo, Ho=Ho, split=split, src=(src, line, surf), src_ram=src_ram,
                dst=(dbase, dline, dsurf), dst_ram=dst_ram, flying=flying, recip=recip,
                pad_values=tuple(pad_values))
    return {"regs": regs, "images": images, "window": window, "info": info}


# ------------------------------------------------------------------------------------------
# Random layers
# ------------------------------------------------------------------------------------------
def random_split(rng, W, Wo, kw, sw, pl, pr, limit, force=False):
    """A legal split-width setting for a layer (or None): ``(SPLIT_NUM, in widths, out
    widths)`` with every pass at most ``limit`` outputs wide."""
    for _ in range(40):
        lo_n = max(2, -(-Wo // limit))
        hi_n = min(Wo, 6, 1 + 255)
        if lo_n > hi_n:
            return None
        n = int(rng.integers(lo_n, hi_n + 1))
        if n == 2:
            fo = int(rng.integers(1, Wo))
            mo, lo = 1, Wo - fo
        else:
            mo = int(rng.integers(1, max(1, (Wo - 2) // (n - 2)) + 1))
            rest = Wo - (n - 2) * mo
            if rest < 2:
                continue
            fo = int(rng.integers(1, rest))
            lo = rest - fo
        if max(fo, lo, mo if n > 2 else 0) > limit:
            continue
        fi = (fo - 1) * sw + kw - pl
        mi = mo * sw
        li = W - fi - (n - 2) * mi
        if fi < 1 or li < 1 or fi > 1024 or mi > 1024 or li > 1024:
            continue
        try:
            split_passes(W, Wo, kw, sw, pl, pr, n - 1, (fi, mi, li), (fo, mo, lo))
        except PdpProgramError:
            continue
        return (n - 1, (fi, mi if n > 2 else 1, li), (fo, mo if n > 2 else 1, lo))
    if force:
        raise _Redraw()
    return None


def _geometry(cfg, rng, max_elems, prec, flying, shape=None):
    """(W, H, C, kernel, stride, pad) of a random layer (``shape`` fixes W, H, C)."""
    atom = cfg.memory_atom
    group = atom // _BYTES[prec]
    for _ in range(200):
        kw, kh = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        big = rng.random() < 0.15
        sw = int(rng.integers(1, 17)) if big else int(rng.integers(1, min(kw, 4) + 1))
        sh = int(rng.integers(1, 17)) if rng.random() < 0.15 else \
            int(rng.integers(1, min(kh, 4) + 1))
        pads = []
        for k in (kw, kw, kh, kh):
            pads.append(int(rng.integers(0, min(k - 1, 7) + 1)) if rng.random() < 0.6 else 0)
        pl, pr, pt, pb = pads
        if shape is None:
            wide = rng.random() < 0.25 and not flying
            W = int(rng.integers(1, 80 if wide else 24))
            H = int(rng.integers(1, 14))
            C = int(rng.integers(1, 3 * group + 1))
            if -(-C // group) * group * W * H > max_elems:
                continue
        else:
            W, H, C = shape
        Wo, Ho = out_size(W, pl, pr, kw, sw), out_size(H, pt, pb, kh, sh)
        if Wo < 1 or Ho < 1:
            continue
        if (Wo - 1) * sw >= pl + W or (Ho - 1) * sh >= pt + H:
            continue
        if flying and Wo > max_pass_width(kh, sh, cfg):
            continue
        return W, H, C, (kw, kh), (sw, sh), (pl, pr, pt, pb)
    raise _Redraw()


def _fp16_data(rng, shape):
    """fp16 codes: normal values around a random scale, with NaNs (any payload, either sign),
    infinities, signed zeros, denormals and the extremes mixed in at random rates."""
    scale = 2.0 ** int(rng.integers(-12, 12))
    v = fp16_from_float(np.clip(rng.normal(0, scale, shape), -65504, 65504))
    if rng.random() < 0.5:
        special = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF, 0x0001, 0x83FF,
                            0x0400, 0x7E00, 0xFD55, 0x7C01])
        pick = rng.random(shape) < rng.choice([0.01, 0.05, 0.2])
        v = np.where(pick, rng.choice(special, shape), v)
    if rng.random() < 0.1:                       # equal magnitudes: ties and cancellations
        v = np.where(rng.random(shape) < 0.5, v, v ^ 0x8000)
    return v


def _pad_values_fp16(rng, method):
    if method != AVERAGE and rng.random() < 0.7:
        return (0,) * 7
    if rng.random() < 0.15:                      # any 19-bit fields (low 17 bits used)
        return tuple(int(x) for x in rng.integers(0, 1 << 19, 7))
    v = float(np.asarray(_fp16_data(rng, ()), np.uint16).view(np.float16))
    if rng.random() < 0.3 or not np.isfinite(v):
        v = 0.0
    return tuple(int(fp17_from_float(n * v)) for n in range(1, 8))


def _pad_values(rng, prec, method):
    """PAD_VALUE_1X..7X: N x a pad value (the compiler's convention), 0 for max/min mostly."""
    if prec == FP16:
        return _pad_values_fp16(rng, method)
    bits = 8 * _BYTES[prec]
    if method != AVERAGE and rng.random() < 0.7:
        return (0,) * 7
    v = int(rng.integers(-(1 << (bits - 1)), 1 << (bits - 1)))
    if rng.random() < 0.3:
        v = 0
    return tuple((n * v) & 0x7FFFF for n in range(1, 8))


def random_layer(cfg, rng, slot=0, max_elems=3000, flying=False, shape=None, prec=None,
                 int8_only=False, fp16=True, **over) -> dict:
    """One random valid PDP layer (:func:`pdp_layer` dict); ``flying`` for the PDP half of an
    SDP->PDP layer (``shape`` = (W, H, C) and ``prec`` of SDP's output); ``int8_only``: int8
    even on builds that list int16 or fp16; ``fp16=False``: no fp16 layers (for the RTL, which
    rejects them), so a build draws exactly as one without fp16."""
    atom = cfg.memory_atom
    if prec is None:
        precs = [0] + ([1] if "int16" in cfg.data_types and not int8_only else []) + \
            ([FP16] if "fp16" in cfg.data_types and fp16 and not int8_only and not flying
             else [])
        prec = int(rng.choice(precs))
    W, H, C, kernel, stride, pad = _geometry(cfg, rng, max_elems, prec, flying, shape)
    method = int(rng.choice([AVERAGE, MAX, MIN], p=[0.45, 0.35, 0.2]))
    kw, kh = kernel
    sw, sh = stride
    pl, pr, pt, pb = pad
    Wo, Ho = out_size(W, pl, pr, kw, sw), out_size(H, pt, pb, kh, sh)
    limit = max_pass_width(kh, sh, cfg)
    split = None
    if not flying and (Wo > limit or (Wo >= 2 and rng.random() < 0.3)):
        split = random_split(rng, W, Wo, kw, sw, pl, pr, limit, force=Wo > limit)
    bits = 8 * _BYTES[prec]
    recip = (0x10000 // kw, 0x10000 // kh)
    if prec == FP16:
        recip = (int(fp17_from_float(1 / kw)), int(fp17_from_float(1 / kh)))
    if rng.random() < (0.2 if method == AVERAGE else 0.5):
        recip = (int(rng.integers(0, 1 << 17)), int(rng.integers(0, 1 << 17)))
    data = None
    extra = {}
    if prec == FP16:
        data = None if flying else _fp16_data(rng, (C, H, W))
        extra["nan_to_zero"] = int(rng.random() < 0.5)
    elif not flying:
        lo, hi = -(1 << (bits - 1)), 1 << (bits - 1)
        if rng.random() < 0.2:           # extremes: sums near the adders' limits
            data = rng.choice([lo, hi - 1], size=(C, H, W))
        else:
            data = rng.integers(lo, hi, (C, H, W))
    line_extra = int(rng.integers(1, 3)) if rng.random() < 0.3 else 0
    surf_extra = int(rng.integers(1, 3)) if rng.random() < 0.3 else 0
    dbase = _BASES["dst"] + slot * _SLOT + _GUARD + atom * int(rng.integers(0, 32))
    dline = Wo * atom + (atom * int(rng.integers(1, 3)) if rng.random() < 0.3 else 0)
    dsurf = Ho * dline + (atom * int(rng.integers(1, 3)) if rng.random() < 0.3 else 0)
    spec = dict(W=W, H=H, C=C, kernel=kernel, stride=stride, pad=pad, method=method,
                prec=prec, data=data, pad_values=_pad_values(rng, prec, method), recip=recip,
                split=split, src_ram=_ram(cfg, rng), dst_ram=_ram(cfg, rng), slot=slot,
                line_extra=line_extra, surf_extra=surf_extra, dst=(dbase, dline, dsurf),
                flying=flying, cya=int(rng.integers(0, 1 << 32)), **extra)
    spec.update(over)
    return pdp_layer(cfg, **spec)


def flying_layer(cfg, rng, slot=0, max_elems=1200, int8_only=False, fp16=True) -> dict:
    """An SDP->PDP layer: a random offline SDP program (:mod:`sim.sdp.random_programs`)
    whose output goes to a random flying PDP layer (``int8_only``: redrawn unless SDP's
    output is int8; ``fp16=False``: no fp16 SDP program on builds with fp16, the same draws
    as a build without it)."""
    sdp = sdp_random.random_program(cfg, rng, max_elems, slot=slot, fp16=fp16)
    W, H, C, prec = sdp["shape"]
    if int8_only and prec != 0:
        raise _Redraw()
    layer = random_layer(cfg, rng, slot=slot, flying=True, shape=(W, H, C), prec=prec)
    rmap = register_map(cfg)
    s = Regs(rmap["SDP"])
    s.words = dict(sdp["sdp"])
    s.set("D_FEATURE_MODE_CFG", OUTPUT_DST=1)
    layer["regs"]["SDP"] = s.words
    layer["regs"]["SDP_RDMA"] = dict(sdp["rdma"])
    layer["images"] = list(sdp["images"]) + layer["images"]
    layer["info"]["sdp"] = True
    return layer


# ------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------
def write_trace(directory: str, name: str, layers: list, crcs=None) -> str:
    """Write ``layers`` (:func:`pdp_layer` dicts; PDP groups 0, 1, 0, ...; SDP/SDP_RDMA of
    SDP->PDP layers and PDP_RDMA of offline ones ping-pong their own groups; from the third
    layer on, layer i waits for layer i - 2's interrupt before reusing its group) as the trace
    directory ``directory/name``; ``crcs`` are the expected CRCs (0 when unknown). Returns
    its path."""
    path, lines = start_trace(directory, name, layers)
    sdp_group = rdma_group = 0           # SDP and PDP_RDMA ping-pong on their own
    notes = []                           # per layer: its interrupt waits and check
    for i, layer in enumerate(layers):
        if i >= 2:                       # group i % 2 is reused: wait for layer i - 2 first
            lines.extend(notes[i - 2])
        g = i % 2
        regs = layer["regs"]
        note = []
        notes.append(note)
        order = ("SDP", "SDP_RDMA", "PDP") if "SDP" in regs else ("PDP", "PDP_RDMA")
        for block in order:
            grp = sdp_group if block.startswith("SDP") else \
                rdma_group if block == "PDP_RDMA" else g
            lines += group_writes(block, grp, regs[block])
        # the consumer first: PDP, then its source (PDP_RDMA, or SDP_RDMA and SDP)
        lines += enables("PDP", *(("SDP_RDMA", "SDP") if "SDP" in regs else ("PDP_RDMA",)))
        if "PDP_RDMA" in regs:
            rdma_group ^= 1
        if "SDP" in regs:
            note.append(f"intr_notify(SDP_{sdp_group}, sync_sdp_{i});")
            note.append(f"check_nothing(sync_sdp_{i});")
            sdp_group ^= 1
        note += crc_check(f"PDP_{g}", i, layer["window"], crcs)
    for note in notes[max(len(layers) - 2, 0):]:
        lines.extend(note)
    return finish_trace(path, name, lines)


#: the golden model's messages for the programs the last :func:`write_random_traces` redrew
reject_log = RejectLog()


def write_random_traces(cfg, directory: str, count: int, seed: int = 0,
                        two_layer_share: float = 0.3, flying_share: float = 0.2,
                        max_elems: int = 3000, prefix: str = "pdp_random",
                        int8_only: bool = False, fp16: bool = True,
                        flying_fp16: bool = False) -> list:
    """``count`` random valid programs as trace directories with golden CRCs; returns paths.

    Deterministic by ``seed``. ``flying_share`` of the layers are SDP->PDP. A program the
    golden model rejects is redrawn (:func:`reject_log` lists the rejections). ``int8_only``
    draws int8 layers only, also on builds whose data types include int16; ``fp16=False``
    draws no fp16 layers on builds with fp16: the same programs as a build without fp16.
    SDP->PDP layers are fp16 only with ``flying_fp16`` (and ``fp16``): by default the flying
    layers draw as before fp16 SDP->PDP existed, so suites seeded earlier keep their
    programs."""
    def draw(rng):
        n = 2 if rng.random() < two_layer_share else 1
        return [flying_layer(cfg, rng, slot=i, int8_only=int8_only, fp16=fp16 and flying_fp16)
                if rng.random() < flying_share else
                random_layer(cfg, rng, slot=i, max_elems=max_elems, int8_only=int8_only,
                             fp16=fp16)
                for i in range(n)]
    return reject_log.keep(write_random(cfg, directory, count, seed, prefix, draw, write_trace))


# ------------------------------------------------------------------------------------------
# Invalid programs
# ------------------------------------------------------------------------------------------
def _base_layer(cfg, **over):
    """A small fixed valid offline layer the mutations start from (average, 3x2 kernel,
    stride 2x1, padding on all sides; ``prec=1`` for int16 data, ``prec=2`` fp16)."""
    rng = np.random.default_rng(11)
    fp16 = over.get("prec", 0) == FP16
    spec = dict(W=7, H=5, C=11, kernel=(3, 2), stride=(2, 1), pad=(1, 1, 1, 0),
                method=AVERAGE, pad_values=tuple(int(fp17_from_float(n * 0.5)) if fp16 else n * 3
                                                 for n in range(1, 8)))
    spec.update(over)
    shape = (spec["C"], spec["H"], spec["W"])
    if fp16:
        data = fp16_from_float(rng.normal(0, 4, shape))
    else:
        half = 1 << (8 * _BYTES[spec.get("prec", 0)] - 1)
        data = rng.integers(-half, half, shape)
    return pdp_layer(cfg, data=data, **spec)


def _m_kernel_too_large(cfg, layer):
    # an 8-wide kernel on 7 columns without padding
    _set(cfg, layer, "PDP", "D_POOLING_PADDING_CFG", PAD_LEFT=0, PAD_RIGHT=0)
    _set(cfg, layer, "PDP", "D_POOLING_KERNEL_CFG", KERNEL_WIDTH=7)
    _set(cfg, layer, "PDP_RDMA", "D_POOLING_KERNEL_CFG", KERNEL_WIDTH=7)
    return "PDP.D_POOLING_KERNEL_CFG.KERNEL_WIDTH"


def _m_reserved_kernel(cfg, layer):
    _set(cfg, layer, "PDP", "D_POOLING_KERNEL_CFG", KERNEL_HEIGHT=9)
    return "PDP.D_POOLING_KERNEL_CFG.KERNEL_HEIGHT"


def _m_out_width(cfg, layer):
    _set(cfg, layer, "PDP", "D_DATA_CUBE_OUT_WIDTH", CUBE_OUT_WIDTH=layer["info"]["Wo"])
    return "PDP.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH"


def _m_out_height(cfg, layer):
    _set(cfg, layer, "PDP", "D_DATA_CUBE_OUT_HEIGHT", CUBE_OUT_HEIGHT=layer["info"]["Ho"] - 2)
    return "PDP.D_DATA_CUBE_OUT_HEIGHT.CUBE_OUT_HEIGHT"


def _m_out_channel(cfg, layer):
    _set(cfg, layer, "PDP", "D_DATA_CUBE_OUT_CHANNEL", CUBE_OUT_CHANNEL=3)
    return "PDP.D_DATA_CUBE_OUT_CHANNEL.CUBE_OUT_CHANNEL"


def _m_pad_ge_kernel(cfg, layer):
    _set(cfg, layer, "PDP", "D_POOLING_PADDING_CFG", PAD_TOP=2)
    return "PDP.D_POOLING_PADDING_CFG.PAD_TOP"


def _m_reserved_method(cfg, layer):
    _set(cfg, layer, "PDP", "D_OPERATION_MODE_CFG", POOLING_METHOD=3)
    return "PDP.D_OPERATION_MODE_CFG.POOLING_METHOD"


def _m_missing_precision(cfg, layer):
    # a precision the build lacks (int16, else fp16), else the reserved code 3
    code = next((c for c, t in ((1, "int16"), (2, "fp16")) if t not in cfg.data_types), 3)
    for b in ("PDP", "PDP_RDMA"):
        _set(cfg, layer, b, "D_DATA_FORMAT", INPUT_DATA=code)
    return "PDP.D_DATA_FORMAT.INPUT_DATA"


def _m_rdma_cube(cfg, layer):
    _set(cfg, layer, "PDP_RDMA", "D_DATA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=5)
    return "PDP_RDMA.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH"


def _m_rdma_flying(cfg, layer):
    _set(cfg, layer, "PDP_RDMA", "D_FLYING_MODE", FLYING_MODE=0)
    return "PDP_RDMA.D_FLYING_MODE.FLYING_MODE"


def _m_split_sum(cfg, layer):
    # 7 = 3 + 4 with outputs 2 + 2 would be legal; 3 + 3 does not add up
    for b in ("PDP", "PDP_RDMA"):
        _set(cfg, layer, b, "D_OPERATION_MODE_CFG", SPLIT_NUM=1)
        _set(cfg, layer, b, "D_PARTIAL_WIDTH_IN", PARTIAL_WIDTH_IN_FIRST=2,
             PARTIAL_WIDTH_IN_LAST=2)
    _set(cfg, layer, "PDP", "D_PARTIAL_WIDTH_OUT", PARTIAL_WIDTH_OUT_FIRST=1,
         PARTIAL_WIDTH_OUT_LAST=1)
    return "PDP.D_PARTIAL_WIDTH_IN"


def _m_split_rdma(cfg, layer):
    # a legal 4 + 3 split on PDP (outputs 2 + 2); PDP_RDMA left unsplit
    for b in ("PDP", "PDP_RDMA"):
        _set(cfg, layer, b, "D_PARTIAL_WIDTH_IN", PARTIAL_WIDTH_IN_FIRST=3,
             PARTIAL_WIDTH_IN_LAST=2)
    _set(cfg, layer, "PDP", "D_OPERATION_MODE_CFG", SPLIT_NUM=1)
    _set(cfg, layer, "PDP", "D_PARTIAL_WIDTH_OUT", PARTIAL_WIDTH_OUT_FIRST=1,
         PARTIAL_WIDTH_OUT_LAST=1)
    return "PDP_RDMA.D_OPERATION_MODE_CFG.SPLIT_NUM"


def _m_split_boundary(cfg, layer):
    for b in ("PDP", "PDP_RDMA"):
        _set(cfg, layer, b, "D_OPERATION_MODE_CFG", SPLIT_NUM=1)
        _set(cfg, layer, b, "D_PARTIAL_WIDTH_IN", PARTIAL_WIDTH_IN_FIRST=2,
             PARTIAL_WIDTH_IN_LAST=3)       # 3 + 4: (3 + 1 - 3) % 2 != 0
    _set(cfg, layer, "PDP", "D_PARTIAL_WIDTH_OUT", PARTIAL_WIDTH_OUT_FIRST=0,
         PARTIAL_WIDTH_OUT_LAST=2)
    return "PDP.D_PARTIAL_WIDTH_IN.PARTIAL_WIDTH_IN_FIRST"


def _m_line_buffer(cfg, layer):
    wide = _base_layer(cfg, W=40, kernel=(1, 8), stride=(1, 1), pad=(0, 0, 0, 0), H=8, C=3,
                       prec=layer["info"]["prec"])
    layer.clear()
    layer.update(wide)
    return "PDP.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH"


def _m_cv_without_sramif(cfg, layer):
    if cfg.sramif:
        return None
    _set(cfg, layer, "PDP", "D_DST_RAM_CFG", DST_RAM_TYPE=0)
    return "PDP.D_DST_RAM_CFG.DST_RAM_TYPE"


def _m_misaligned_dst(cfg, layer):
    if cfg.register_layout == "full":
        return None                   # the full layout has no low address bits to misalign
    layer["regs"]["PDP"]["D_DST_BASE_ADDR_LOW"] += 4
    return "PDP.D_DST_BASE_ADDR_LOW"


def _m_dst_line_overlap(cfg, layer):
    layer["regs"]["PDP"]["D_DST_LINE_STRIDE"] -= cfg.memory_atom
    return "PDP.D_DST_LINE_STRIDE.DST_LINE_STRIDE"


def _m_dst_surface_overlap(cfg, layer):
    # the output surfaces (ceil(C x bytes / atom) of them) overlap by one atom
    info = layer["info"]
    if info["C"] * _BYTES[info["prec"]] <= cfg.memory_atom:
        return None                   # one surface: no surface stride to overlap
    layer["regs"]["PDP"]["D_DST_SURFACE_STRIDE"] -= cfg.memory_atom
    return "PDP.D_DST_SURFACE_STRIDE.DST_SURFACE_STRIDE"


def _m_rdma_precision(cfg, layer):
    # PDP_RDMA reads the other integer precision than PDP pools
    _set(cfg, layer, "PDP_RDMA", "D_DATA_FORMAT", INPUT_DATA=layer["info"]["prec"] ^ 1)
    return "PDP_RDMA.D_DATA_FORMAT.INPUT_DATA"


#: name -> mutation(cfg, layer) -> the field the golden model's message must name (None: not
#: applicable to this build)
INVALID_MUTATIONS = {
    "kernel_too_large": _m_kernel_too_large, "reserved_kernel": _m_reserved_kernel,
    "out_width": _m_out_width, "out_height": _m_out_height, "out_channel": _m_out_channel,
    "pad_ge_kernel": _m_pad_ge_kernel, "reserved_method": _m_reserved_method,
    "missing_precision": _m_missing_precision, "rdma_cube": _m_rdma_cube,
    "rdma_flying_mode": _m_rdma_flying, "split_sum": _m_split_sum,
    "split_rdma_mismatch": _m_split_rdma, "split_boundary": _m_split_boundary,
    "line_buffer": _m_line_buffer, "cv_without_sramif": _m_cv_without_sramif,
    "misaligned_dst": _m_misaligned_dst, "dst_line_overlap": _m_dst_line_overlap,
    "dst_surface_overlap": _m_dst_surface_overlap, "rdma_precision": _m_rdma_precision,
}


def write_invalid_traces(cfg, directory: str, prec: int = 0) -> list:
    """One trace per applicable mutation of :data:`INVALID_MUTATIONS` of an int8 (``prec=1``:
    int16, named ``pdp_int16_invalid_*``; ``prec=2``: fp16, ``pdp_fp16_invalid_*``) layer;
    each one's golden run must fail with an error naming the field. Returns
    ``[(path, field)]``; the expected CRC is that of the untouched (all-zero) output window."""
    name = {0: "int8", 1: "int16", 2: "fp16"}[prec]
    if name not in cfg.data_types:
        raise ValueError(f"{cfg.name}: no {name} (data_types {sorted(cfg.data_types)})")
    return write_invalid(cfg, directory, f"pdp_{name}" if prec else "pdp", INVALID_MUTATIONS,
                         lambda c: _base_layer(c, prec=prec), write_trace)


# ------------------------------------------------------------------------------------------
# Invalid SDP -> PDP layers: SDP's output is not the flying PDP layer's input, or the flying
# PDP layer breaks its own rules while its SDP layer is valid
# ------------------------------------------------------------------------------------------
def _f_width(cfg, layer):
    w = layer["info"]["W"]
    _set(cfg, layer, "PDP", "D_DATA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=w)          # W + 1 columns
    return "PDP.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH"


def _f_height(cfg, layer):
    h = layer["info"]["H"]
    if h < 2:
        return None
    _set(cfg, layer, "PDP", "D_DATA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=h - 2)     # H - 1 lines
    return "PDP.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT"


def _f_channel(cfg, layer):
    # one surface more on PDP's side (in and out, so PDP's own program stays valid)
    group = cfg.memory_atom // _BYTES[layer["info"]["prec"]]
    c = layer["info"]["C"] - 1 + group
    _set(cfg, layer, "PDP", "D_DATA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=c)
    _set(cfg, layer, "PDP", "D_DATA_CUBE_OUT_CHANNEL", CUBE_OUT_CHANNEL=c)
    return "PDP.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL"


def _f_precision(cfg, layer):
    _set(cfg, layer, "PDP", "D_DATA_FORMAT", INPUT_DATA=layer["info"]["prec"] ^ 1)
    return "PDP.D_DATA_FORMAT.INPUT_DATA"


def _f_pdp_invalid(cfg, layer):
    # SDP's output is PDP's input, but PDP's own program is invalid
    _set(cfg, layer, "PDP", "D_OPERATION_MODE_CFG", POOLING_METHOD=3)
    return "PDP.D_OPERATION_MODE_CFG.POOLING_METHOD"


#: name -> mutation(cfg, flying layer) -> the field the golden model must name (None: n/a)
FLYING_INVALID_MUTATIONS = {
    "flying_width": _f_width, "flying_height": _f_height, "flying_channel": _f_channel,
    "flying_precision": _f_precision, "flying_pdp_invalid": _f_pdp_invalid,
}


def write_flying_invalid_traces(cfg, directory: str, seed: int = 0) -> list:
    """One SDP -> PDP trace per mutation of :data:`FLYING_INVALID_MUTATIONS` (a valid random
    SDP program, its flying PDP layer broken); the golden run fails naming the field, the
    hardware drains SDP's output and ends the PDP layer writing nothing. Returns
    ``[(path, field)]``; the expected CRC is that of the untouched output window."""
    rng = np.random.default_rng(seed)

    def base(c):
        # a valid SDP -> PDP layer: the golden model runs it unchanged
        while True:
            try:
                layer = flying_layer(c, rng, int8_only="int16" not in c.data_types,
                                     fp16=False)
            except _Redraw:
                continue
            if layer["info"]["H"] < 2:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                # (written without CRCs: a run that gets to its CRC check ran the layer)
                res = run_trace_golden(write_trace(tmp, "base", [copy.deepcopy(layer)]), c)
                if res.passed or "check_crc" in res.message:
                    return layer
    return write_invalid(cfg, directory, "pdp", FLYING_INVALID_MUTATIONS, base, write_trace)
