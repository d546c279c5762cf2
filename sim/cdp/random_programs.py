"""Constrained-random CDP layers, written as NVDLA trace directories with golden CRCs.

Each program is one CDP layer -- or two, ping-ponged through register groups 0 and 1 --
programmed the way NVDLA's own ``cdp_*`` traces do it: the LUT tables loaded over CSB
(``S_LUT_ACCESS_CFG`` then one ``S_LUT_ACCESS_DATA`` write per entry, LE then LO), the LUT
configuration (single-group registers, shared by both layers of a pair), the CDP and CDP_RDMA D
groups, then CDP and CDP_RDMA enabled; ``intr_notify(CDP_g)`` and a CRC check of the output
surface with a zero-initialised guard band before and after it (and the gaps of unpacked
strides), so a write outside the output changes the CRC.

Drawn: the build's precisions (int8; int16 where ``cfg.data_types`` has it; fp16 too with
``fp16=True`` on builds with fp16, which the RTL runs too: fp16 data with NaNs, infinities,
denormals and signed zeros, fp16-mode LUTs with fp32 bounds placed on the layer's fp32 square
sums, fp16 tables and slope scales), windows 3/5/7/9,
square-sum and multiplier bypasses, LE in linear and exponent mode, LO index selects that shift
right or left, all priority combinations, random tables (smooth curves or full-range noise),
LUT ranges placed on the layer's actual square sums so that elements interpolate, underflow and
overflow, random slopes (scale and signed shift), input/output converters (offsets, scales,
shifts) with some saturation, packed and unpacked source and destination, channel counts off the
surface grid, MC or CV (builds with an SRAMIF). Legal on every preset (nv_small: 8-byte atoms,
throughput 1; nv_large / nv_full: 32-byte atoms, throughput 8, 512-bit DBBIF).

    paths = write_random_traces(cfg, out_dir, count=50, seed=1)        # golden CRCs included
    cases = write_invalid_traces(cfg, out_dir)                         # [(path, field)]
"""

from __future__ import annotations

import numpy as np

from arch.registers import register_map

from ..random_traces import (GUARD as _GUARD, SLOT as _SLOT, Regs, crc_check, enables,
                             finish_trace, golden_core, group_writes, run_trace_golden,
                             start_trace, write_invalid, write_random)
from ..nvfloat import fp16_from_float, fp32_from_float, fp32_is_nan, fp32_to_float
from .cdp import (input_convert, input_convert_fp16, lut_lookup, square_sum,
                  square_sum_fp16)
from .program import BYTES, FP16, INT8, INT16, CdpLutParams

__all__ = ["random_program", "random_pair", "write_trace", "write_random_traces",
           "write_invalid_traces", "INVALID_MUTATIONS", "golden_core", "run_trace_golden",
           "lut_writes"]

_BASES = {"src": 0x8000_0000, "dst": 0x9000_0000}


def _wide(regs, name, value):
    """A 38-bit signed LUT bound into S_LUT_<name>_LOW / _HIGH."""
    value &= (1 << 38) - 1
    regs.set(f"S_LUT_{name}_LOW", **{f"LUT_{name}_LOW": value & 0xFFFFFFFF})
    regs.set(f"S_LUT_{name}_HIGH", **{f"LUT_{name}_HIGH": value >> 32})


def _table(rng, n):
    kind = rng.integers(4)
    if kind == 0:                                        # full-range noise
        return rng.integers(-32768, 32768, n)
    if kind == 1:                                        # decreasing (an LRN-like curve)
        top = int(rng.integers(1000, 32768))
        return np.round(top / (1 + np.arange(n) / rng.uniform(2, 40)) ** rng.uniform(0.3, 1))\
            .astype(np.int64)
    if kind == 2:                                        # a ramp of either sign
        a, b = rng.integers(-32768, 32768, 2)
        return np.round(np.linspace(a, b, n)).astype(np.int64)
    return rng.integers(-300, 300, n)                    # small values


def _log2(v):
    return max(int(v), 1).bit_length() - 1


def _lut(rng, sums):
    """Random LUT parameters placed on the square sums ``sums`` and the two tables."""
    q = lambda p: int(np.percentile(sums, p))           # noqa: E731
    lo_v, hi_v = q(rng.uniform(0, 35)), q(rng.uniform(65, 100))
    span = max(hi_v - lo_v, 1)

    def linear(depth):
        sel = max(_log2(span // depth) + int(rng.integers(-1, 2)), -3)
        if rng.random() < 0.15:
            sel = int(rng.integers(-5, 0))               # left shift: no fraction
        sel = min(sel, 31)
        start = lo_v - int(rng.integers(0, 3))
        extent = depth << sel if sel >= 0 else max(depth >> -sel, 1)
        end = start + extent if rng.random() < 0.85 else start + int(rng.integers(-5, extent + 5))
        return sel, start, end

    le_linear = bool(rng.random() < 0.5)
    le_sel, le_start, le_end = linear(64)
    le_offset = 0
    if not le_linear:
        le_start = lo_v - int(rng.integers(1, 4)) if rng.random() < 0.8 else q(50)
        top = _log2(max(hi_v - le_start, 1))
        if rng.random() < 0.5:
            le_offset = top - 63 + int(rng.integers(-2, 3))        # overflows at the top
        else:
            le_offset = int(rng.integers(0, top + 2))              # underflows at the bottom
        le_offset = int(np.clip(le_offset, -128, 39))
        le_end = le_start + (1 << max(min(le_offset + 64, 37), 0))
        le_sel = int(rng.integers(-32, 32))                         # unused in exponent mode
    lo_sel, lo_start, lo_end = linear(256)

    def scale():
        return int(rng.integers(-32768, 32768)) if rng.random() < 0.3 \
            else int(rng.integers(-64, 65))

    p = _lut_params(rng, scale, lambda: int(rng.integers(-4, 16)), le_linear=le_linear,
                    le_index_offset=le_offset, le_index_select=le_sel, lo_index_select=lo_sel,
                    le_start=le_start, le_end=le_end, lo_start=lo_start, lo_end=lo_end)
    return p, _table(rng, 65), _table(rng, 257)


def _lut_params(rng, scale, shift, **tables) -> CdpLutParams:
    """The LUT parameters of ``tables`` (function, index offset / selects, starts and ends)
    with random priorities, then the four slope scales from ``scale()`` and the four shifts
    from ``shift()``, drawn in that order."""
    prio = [bool(rng.integers(2)) for _ in range(3)]
    scales = [scale() for _ in range(4)]
    shifts = [shift() for _ in range(4)]
    return CdpLutParams(
        uflow_priority_lo=prio[0], oflow_priority_lo=prio[1], hybrid_priority_lo=prio[2],
        le_uflow_scale=scales[0], le_oflow_scale=scales[1], lo_uflow_scale=scales[2],
        lo_oflow_scale=scales[3], le_uflow_shift=shifts[0], le_oflow_shift=shifts[1],
        lo_uflow_shift=shifts[2], lo_oflow_shift=shifts[3], **tables)


def _fp16_data(rng, shape):
    """Random fp16 codes: values of a few binades around a random magnitude, both signs, with
    some zeros (signed), denormals, NaNs (both signs, several payloads) and infinities."""
    centre = float(rng.uniform(-8, 6))
    v = np.exp2(centre + rng.uniform(-3, 3, shape)) * rng.choice([-1.0, 1.0], shape)
    h = fp16_from_float(v)
    special = np.array([0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7E00, 0xFC01,
                        0x7D55, 0x7BFF, 0xFBFF])
    odd = rng.random(shape) < (0.05 if rng.random() < 0.5 else 0.0)
    return np.where(odd, rng.choice(special, shape), h)


def _fp16_table(rng, n):
    """Random fp16 table entries: a smooth curve (LRN-like, a ramp) or noise codes."""
    kind = rng.integers(4)
    if kind == 0:                                        # any finite code, random signs
        e = rng.integers(0, 31, n)
        return (rng.integers(0, 2, n) << 15) | (e << 10) | rng.integers(0, 1024, n)
    if kind == 1:                                        # decreasing, 1 / (1 + k x)^b
        top = float(rng.uniform(0.1, 100))
        v = top / (1 + np.arange(n) / rng.uniform(2, 40)) ** rng.uniform(0.3, 1)
    elif kind == 2:
        a, b = rng.uniform(-1000, 1000, 2)
        v = np.linspace(a, b, n)
    else:
        v = rng.uniform(-2, 2, n)
    h = fp16_from_float(v)
    if rng.random() < 0.2:                               # a few NaN / Inf entries
        k = rng.integers(0, n, 2)
        h[k] = rng.choice([0x7C00, 0xFC00, 0x7E01, 0xFE00], 2)
    return h


def _lut_fp16(rng, sums):
    """Random fp16-mode LUT parameters (fp32 START / END, fp16 slope scales) placed on the
    fp32 square sums ``sums``, and the two tables (fp16 codes)."""
    f = fp32_to_float(sums[~fp32_is_nan(sums)]).astype(np.float64)
    f = f[np.isfinite(f)]
    if f.size == 0:
        f = np.array([0.0, 1.0])
    q = lambda p: float(np.percentile(f, p))             # noqa: E731
    lo_v, hi_v = q(rng.uniform(0, 35)), q(rng.uniform(65, 100))
    span = max(hi_v - lo_v, 2.0 ** -60)

    def code(v):
        return int(fp32_from_float(np.float32(v)))

    def linear(depth):
        sel = int(np.ceil(np.log2(span / depth))) + int(rng.integers(-1, 2))
        sel = int(np.clip(sel, -128, 127))
        start = lo_v * float(rng.uniform(0.9, 1.0)) if lo_v > 0 else lo_v - span / 16
        end = start + depth * 2.0 ** sel
        if rng.random() < 0.15:
            end = start + float(rng.uniform(0, 1.2)) * depth * 2.0 ** sel
        return sel, code(start), code(end)

    le_linear = bool(rng.random() < 0.5)
    le_sel, le_start, le_end = linear(64)
    le_offset = 0
    if not le_linear:
        start = lo_v * float(rng.uniform(0.5, 1.0)) if rng.random() < 0.8 else q(50)
        top = int(np.floor(np.log2(max(hi_v - start, 2.0 ** -126))))
        if rng.random() < 0.5:
            le_offset = top - 63 + int(rng.integers(-2, 3))        # overflows at the top
        else:
            le_offset = top - int(rng.integers(0, 12))              # underflows at the bottom
        if rng.random() < 0.05:
            le_offset = int(rng.choice([-128, -127, 127]))
        le_offset = int(np.clip(le_offset, -128, 127))
        le_start = code(start)
        le_end = code(start + 2.0 ** min(le_offset + 64, 127))
        le_sel = int(rng.integers(-128, 128))                     # unused in exponent mode
    lo_sel, lo_start, lo_end = linear(256)

    def scale():                                        # slope scales are fp16 codes
        if rng.random() < 0.1:
            return int(rng.integers(0, 1 << 16))
        return int(fp16_from_float(float(rng.uniform(-2, 2)) * 2.0 ** int(rng.integers(-12, 4))))

    p = _lut_params(rng, scale, lambda: int(rng.integers(-16, 16)), le_linear=le_linear,
                    le_index_offset=le_offset, le_index_select=le_sel, lo_index_select=lo_sel,
                    le_start=le_start, le_end=le_end, lo_start=lo_start, lo_end=lo_end)
    return p, _fp16_table(rng, 65), _fp16_table(rng, 257)


def _lut_regs(rmap, p: CdpLutParams):
    r = Regs(rmap["CDP"])
    r.set("S_LUT_CFG", LUT_LE_FUNCTION=int(p.le_linear),
          LUT_UFLOW_PRIORITY=int(p.uflow_priority_lo), LUT_OFLOW_PRIORITY=int(p.oflow_priority_lo),
          LUT_HYBRID_PRIORITY=int(p.hybrid_priority_lo))
    r.set("S_LUT_INFO", LUT_LE_INDEX_OFFSET=p.le_index_offset & 0xFF,
          LUT_LE_INDEX_SELECT=p.le_index_select & 0xFF,
          LUT_LO_INDEX_SELECT=p.lo_index_select & 0xFF)
    for name, v in (("LE_START", p.le_start), ("LE_END", p.le_end), ("LO_START", p.lo_start),
                    ("LO_END", p.lo_end)):
        _wide(r, name, v)
    r.set("S_LUT_LE_SLOPE_SCALE", LUT_LE_SLOPE_UFLOW_SCALE=p.le_uflow_scale & 0xFFFF,
          LUT_LE_SLOPE_OFLOW_SCALE=p.le_oflow_scale & 0xFFFF)
    r.set("S_LUT_LE_SLOPE_SHIFT", LUT_LE_SLOPE_UFLOW_SHIFT=p.le_uflow_shift & 0x1F,
          LUT_LE_SLOPE_OFLOW_SHIFT=p.le_oflow_shift & 0x1F)
    r.set("S_LUT_LO_SLOPE_SCALE", LUT_LO_SLOPE_UFLOW_SCALE=p.lo_uflow_scale & 0xFFFF,
          LUT_LO_SLOPE_OFLOW_SCALE=p.lo_oflow_scale & 0xFFFF)
    r.set("S_LUT_LO_SLOPE_SHIFT", LUT_LO_SLOPE_UFLOW_SHIFT=p.lo_uflow_shift & 0x1F,
          LUT_LO_SLOPE_OFLOW_SHIFT=p.lo_oflow_shift & 0x1F)
    return r.words


def lut_writes(le, lo) -> list:
    """``[(register, word)]`` that load the LE and LO tables over CSB (auto-increment)."""
    out = [("S_LUT_ACCESS_CFG", 0x20000)]                   # WRITE, LE, address 0
    out += [("S_LUT_ACCESS_DATA", int(v) & 0xFFFF) for v in le]
    out.append(("S_LUT_ACCESS_CFG", 0x30000))               # WRITE, LO, address 0
    out += [("S_LUT_ACCESS_DATA", int(v) & 0xFFFF) for v in lo]
    return out


class _Tables:
    def __init__(self, le, lo):
        self.le, self.lo = np.asarray(le, np.int64), np.asarray(lo, np.int64)


def random_program(cfg, rng, max_elems: int = 1500, slot: int = 0, lut=None,
                   fp16: bool = False, **fixed) -> dict:
    """One random valid CDP layer for ``cfg``.

    Returns ``{"cdp": {reg: word}, "rdma": {reg: word}, "lut": (params, le, lo), "lut_regs":
    {reg: word} (the single-group S_LUT_* registers), "images": [(addr, bytes, ram)],
    "window": (addr, size, ram)}``. ``lut`` reuses the LUT of another
    layer (the LUT registers are shared by both groups); ``fixed`` pins ``W``, ``H``, ``C``,
    ``prec``, ``window``, ``sqsum_bypass``, ``mul_bypass``, ``packed``. Layers of different
    ``slot`` use disjoint memory. ``fp16`` adds fp16 to the drawn precisions on builds with
    fp16 (``prec=FP16`` pins it); an fp16 layer's ``lut`` is fp16-mode parameters and tables
    (a pair shares its precision's LUT, see :func:`random_pair`)."""
    rmap = register_map(cfg)
    precs = [INT8] + ([INT16] if "int16" in cfg.data_types else []) \
        + ([FP16] if fp16 and "fp16" in cfg.data_types else [])
    prec = fixed.get("prec", int(rng.choice(precs)))
    geom = _draw_geometry(cfg, rng, prec, max_elems, fixed)
    if prec == FP16:
        return _random_fp16(cfg, rng, rmap, prec, geom, slot, lut)
    nb = BYTES[prec]
    cpa, C, S, W, H, window, sq_bypass, mul_bypass, packed = geom

    # -- data ------------------------------------------------------------------------------
    lo_, hi_ = -(1 << (8 * nb - 1)), 1 << (8 * nb - 1)
    if rng.random() < 0.5:
        amp = int(rng.integers(1, hi_ + 1))
        data = rng.integers(-amp, amp, (C, H, W))
    else:
        data = rng.integers(lo_, hi_, (C, H, W))
    off_bits = 8 * nb
    datin_offset = int(rng.integers(-8, 9)) if rng.random() < 0.7 \
        else int(rng.integers(lo_, hi_))
    datin_scale = int(rng.integers(1, 5)) if rng.random() < 0.6 \
        else int(rng.integers(-300, 301))
    mag = (hi_ + abs(datin_offset)) * max(abs(datin_scale), 1)
    datin_shift = int(np.clip(_log2(mag) - (8 * nb - 1) + int(rng.integers(-1, 3)), 0, 31))
    if rng.random() < 0.2:
        datin_shift = int(rng.integers(0, 32))

    raw = np.zeros((S * cpa, H, W), np.int64)
    raw[:C] = data
    x = input_convert(raw, prec, datin_offset & ((1 << off_bits) - 1), datin_scale,
                      datin_shift)
    x[C:] = 0
    sums = square_sum(x, window, sq_bypass)
    if lut is None:
        lut = _lut(rng, sums)
    params, le, lo = lut
    y = lut_lookup(_Tables(le, lo), sums, params).value
    if not mul_bypass:
        y = y * x
    out_bits = 8 * nb
    off_w = 25 if prec == INT8 else 32
    datout_offset = int(np.median(y)) if rng.random() < 0.5 else int(rng.integers(-100, 101))
    datout_offset = int(np.clip(datout_offset, -(1 << (off_w - 1)), (1 << (off_w - 1)) - 1))
    datout_scale = int(rng.integers(1, 4)) if rng.random() < 0.5 \
        else int(rng.integers(-20000, 20001))
    spread = int(np.percentile(np.abs(y - datout_offset), 90)) * max(abs(datout_scale), 1)
    datout_shift = int(np.clip(_log2(spread) - (out_bits - 1) + int(rng.integers(-1, 3)),
                               0, 63))

    conv = dict(datin_offset=datin_offset, datin_scale=datin_scale, datin_shift=datin_shift,
                datout_offset=datout_offset, datout_scale=datout_scale,
                datout_shift=datout_shift)
    return _emit(cfg, rng, rmap, prec, raw, C, window, sq_bypass, mul_bypass, packed, conv,
                 lut, params, slot)


def _draw_geometry(cfg, rng, prec, max_elems, fixed):
    """The cube and mode draws every precision shares (``fixed`` pins any of them):
    ``(channels per atom, C, surfaces, W, H, window, sqsum_bypass, mul_bypass, packed)``."""
    cpa = cfg.memory_atom // BYTES[prec]
    C = fixed.get("C") or int(rng.integers(1, 4 * cpa + 1))
    S = -(-C // cpa)
    budget = max(max_elems // (S * cpa), 1)
    W = fixed.get("W") or int(rng.integers(1, min(16, budget) + 1))
    H = fixed.get("H") or int(rng.integers(1, max(min(16, budget // W), 1) + 1))
    window = fixed.get("window", int(rng.choice([3, 5, 7, 9])))
    sq_bypass = fixed.get("sqsum_bypass", bool(rng.random() < 0.2))
    mul_bypass = fixed.get("mul_bypass", bool(rng.random() < 0.3))
    packed = fixed.get("packed")
    return cpa, C, S, W, H, window, sq_bypass, mul_bypass, packed


def _random_fp16(cfg, rng, rmap, prec, geom, slot, lut):
    """The fp16 layer of :func:`random_program`: fp16 data (specials included, garbage in the
    last surface's padding channels), an fp16-mode LUT placed on its fp32 square sums.
    DATIN_OFFSET is 0 (NVDLA's C model fills padding channels with its code; this model and
    the Verilog with +0); the other converter fields are random (unused in fp16)."""
    cpa, C, S, W, H, window, sq_bypass, mul_bypass, packed = geom
    raw = _fp16_data(rng, (S * cpa, H, W))
    x = input_convert_fp16(raw, False)
    x[C:] = 0
    sums = square_sum_fp16(x, window, sq_bypass)
    if lut is None:
        lut = _lut_fp16(rng, sums)
    conv = dict(datin_offset=0, datin_scale=int(rng.integers(-300, 301)),
                datin_shift=int(rng.integers(0, 32)), datout_offset=int(rng.integers(-100, 101)),
                datout_scale=int(rng.integers(-300, 301)), datout_shift=int(rng.integers(0, 64)))
    return _emit(cfg, rng, rmap, prec, raw, C, window, sq_bypass, mul_bypass, packed, conv,
                 lut, lut[0], slot)


def _emit(cfg, rng, rmap, prec, raw, C, window, sq_bypass, mul_bypass, packed, conv, lut,
          params, slot):
    """The layer dict of :func:`random_program`: memory image, strides and registers."""
    atom = cfg.memory_atom
    nb = BYTES[prec]
    cpa = atom // nb
    S, H, W = raw.shape[0] // cpa, raw.shape[1], raw.shape[2]
    datin_offset, datin_scale, datin_shift = (conv["datin_offset"], conv["datin_scale"],
                                              conv["datin_shift"])
    datout_offset, datout_scale, datout_shift = (conv["datout_offset"], conv["datout_scale"],
                                                 conv["datout_shift"])
    # -- memory ----------------------------------------------------------------------------
    src_base = _BASES["src"] + slot * _SLOT
    dst_base = _BASES["dst"] + slot * _SLOT + _GUARD

    def strides():
        tight = packed if packed is not None else rng.random() < 0.6
        line = W * atom + (0 if tight else int(rng.integers(0, 3)) * atom)
        surf = H * line + (0 if tight else int(rng.integers(0, 3)) * atom)
        return line, surf

    def ram():
        return int(rng.integers(2)) if cfg.sramif else 1

    s_line, s_surf = strides()
    d_line, d_surf = strides()
    s_ram, d_ram = ram(), ram()
    src_size = (S - 1) * s_surf + (H - 1) * s_line + W * atom
    mem = np.zeros(src_size, np.uint8)
    vals = (raw & ((1 << (8 * nb)) - 1)).reshape(S, cpa, H, W).transpose(0, 2, 3, 1)
    elem_bytes = np.stack([(vals >> (8 * k)) & 0xFF for k in range(nb)], -1)
    s_ = np.arange(S)[:, None, None, None]
    h_ = np.arange(H)[None, :, None, None]
    w_ = np.arange(W)[None, None, :, None]
    b_ = np.arange(atom)[None, None, None, :]
    mem[(s_ * s_surf + h_ * s_line + w_ * atom + b_).reshape(-1)] = \
        elem_bytes.reshape(-1).astype(np.uint8)
    dst_size = (S - 1) * d_surf + (H - 1) * d_line + W * atom

    rdma, cdp = Regs(rmap["CDP_RDMA"]), Regs(rmap["CDP"])
    rdma.set("D_DATA_CUBE_WIDTH", WIDTH=W - 1)
    rdma.set("D_DATA_CUBE_HEIGHT", HEIGHT=H - 1)
    rdma.set("D_DATA_CUBE_CHANNEL", CHANNEL=C - 1)
    rdma.addr("D_SRC_BASE_ADDR_LOW", src_base)
    rdma.set("D_SRC_BASE_ADDR_HIGH", SRC_BASE_ADDR_HIGH=0)
    rdma.addr("D_SRC_LINE_STRIDE", s_line)
    rdma.addr("D_SRC_SURFACE_STRIDE", s_surf)
    rdma.set("D_SRC_DMA_CFG", SRC_RAM_TYPE=s_ram)
    rdma.set("D_DATA_FORMAT", INPUT_DATA=prec)
    rdma.set("D_PERF_ENABLE", DMA_EN=int(rng.integers(2)))
    cdp.set("D_FUNC_BYPASS", SQSUM_BYPASS=int(sq_bypass), MUL_BYPASS=int(mul_bypass))
    cdp.addr("D_DST_BASE_ADDR_LOW", dst_base)
    cdp.set("D_DST_BASE_ADDR_HIGH", DST_BASE_ADDR_HIGH=0)
    cdp.addr("D_DST_LINE_STRIDE", d_line)
    cdp.addr("D_DST_SURFACE_STRIDE", d_surf)
    cdp.set("D_DST_DMA_CFG", DST_RAM_TYPE=d_ram)
    cdp.set("D_DATA_FORMAT", INPUT_DATA_TYPE=prec)
    cdp.set("D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=int(rng.integers(2)))
    cdp.set("D_LRN_CFG", NORMALZ_LEN=(window - 3) // 2)
    cdp.set("D_DATIN_OFFSET", DATIN_OFFSET=datin_offset & 0xFFFF)
    cdp.set("D_DATIN_SCALE", DATIN_SCALE=datin_scale & 0xFFFF)
    cdp.set("D_DATIN_SHIFTER", DATIN_SHIFTER=datin_shift)
    cdp.set("D_DATOUT_OFFSET", DATOUT_OFFSET=datout_offset & 0xFFFFFFFF)
    cdp.set("D_DATOUT_SCALE", DATOUT_SCALE=datout_scale & 0xFFFF)
    cdp.set("D_DATOUT_SHIFTER", DATOUT_SHIFTER=datout_shift)
    cdp.set("D_PERF_ENABLE", DMA_EN=int(rng.integers(2)), LUT_EN=int(rng.integers(2)))
    return {"cdp": cdp.words, "rdma": rdma.words, "lut": lut, "prec": prec,
            "lut_regs": _lut_regs(rmap, params),
            "images": [(src_base, mem, s_ram)],
            "window": (dst_base - _GUARD, dst_size + 2 * _GUARD, d_ram)}


def random_pair(cfg, rng, max_elems: int = 1500, fp16: bool = False) -> list:
    """Two layers (groups 0 and 1) sharing one LUT (its registers are single-group): with an
    fp16 first layer both are fp16 (the LUT is in fp16 mode), else neither is."""
    first = random_program(cfg, rng, max_elems, slot=0, fp16=fp16)
    fixed = {"prec": FP16} if _is_fp16(first) else {}
    return [first, random_program(cfg, rng, max_elems, slot=1, lut=first["lut"], **fixed)]


def _is_fp16(layer) -> bool:
    return layer.get("prec") == FP16


def write_trace(directory: str, name: str, layers: list, crcs=None) -> str:
    """Write ``layers`` (:func:`random_program` dicts, groups 0, 1, 0, ...) as the trace
    directory ``directory/name``; ``crcs`` are the expected CRCs (0 when unknown). The LUT of
    the first layer is loaded once, before any layer is programmed."""
    path, lines = start_trace(directory, name, layers)
    _, le, lo = layers[0]["lut"]
    for reg, word in lut_writes(le, lo):
        lines.append(f"reg_write(NVDLA_CDP.{reg}_0, {word:#x});")
    for reg, word in layers[0]["lut_regs"].items():
        lines.append(f"reg_write(NVDLA_CDP.{reg}_0, {word:#x});")
    for i, layer in enumerate(layers):
        lines += group_writes("CDP", i % 2, layer["cdp"])
        lines += group_writes("CDP_RDMA", i % 2, layer["rdma"])
        lines += enables("CDP", "CDP_RDMA")
    for i, layer in enumerate(layers):
        lines += crc_check(f"CDP_{i % 2}", i, layer["window"], crcs)
    return finish_trace(path, name, lines)


def write_random_traces(cfg, directory: str, count: int, seed: int = 0,
                        two_layer_share: float = 0.25, max_elems: int = 1500,
                        prefix: str = "cdp_random", fp16: bool = False) -> list:
    """``count`` random valid CDP programs as trace directories with golden CRCs; returns
    their paths. Deterministic by ``seed``; a program the golden model rejects is redrawn.
    ``fp16`` draws fp16 layers too on builds with fp16."""
    def draw(rng):
        if rng.random() < two_layer_share:
            return random_pair(cfg, rng, max_elems, fp16=fp16)
        return [random_program(cfg, rng, max_elems, fp16=fp16)]
    return write_random(cfg, directory, count, seed, prefix, draw, write_trace)[0]


# ------------------------------------------------------------------------------------------
# Invalid programs
# ------------------------------------------------------------------------------------------
def _setf(cfg, layer, key, block, reg, **fields):
    r = Regs(register_map(cfg)[block])
    r.words = layer[key]
    r.set(reg, **fields)


def _m_precision_mismatch(cfg, layer):
    r = register_map(cfg)["CDP"]["D_DATA_FORMAT"]
    prec = r.unpack(layer["cdp"].get("D_DATA_FORMAT", r.reset))["INPUT_DATA_TYPE"]
    _setf(cfg, layer, "cdp", "CDP", "D_DATA_FORMAT",
          INPUT_DATA_TYPE=INT8 if prec == INT16 else INT16)
    return "CDP.D_DATA_FORMAT.INPUT_DATA_TYPE"


def _m_missing_precision(cfg, layer):
    if "int16" in cfg.data_types:
        return None
    _setf(cfg, layer, "rdma", "CDP_RDMA", "D_DATA_FORMAT", INPUT_DATA=1)
    _setf(cfg, layer, "cdp", "CDP", "D_DATA_FORMAT", INPUT_DATA_TYPE=1)
    return "CDP_RDMA.D_DATA_FORMAT.INPUT_DATA"


def _m_reserved_precision(cfg, layer):
    _setf(cfg, layer, "rdma", "CDP_RDMA", "D_DATA_FORMAT", INPUT_DATA=3)
    return "CDP_RDMA.D_DATA_FORMAT.INPUT_DATA"


def _m_misaligned_dst(cfg, layer):
    if cfg.register_layout == "full":
        return None                    # the full layout has no low address bits
    layer["cdp"]["D_DST_BASE_ADDR_LOW"] += 4
    return "CDP.D_DST_BASE_ADDR_LOW"


def _m_misaligned_src_stride(cfg, layer):
    if cfg.register_layout == "full":
        return None
    layer["rdma"]["D_SRC_LINE_STRIDE"] += 3
    return "CDP_RDMA.D_SRC_LINE_STRIDE"


def _m_dst_lines_overlap(cfg, layer):
    layer["cdp"]["D_DST_LINE_STRIDE"] = cfg.memory_atom      # W = 2 atoms per line
    return "CDP.D_DST_LINE_STRIDE"


def _m_dst_surfaces_overlap(cfg, layer):
    layer["cdp"]["D_DST_SURFACE_STRIDE"] = cfg.memory_atom
    return "CDP.D_DST_SURFACE_STRIDE"


def _m_lo_index_select(cfg, layer):
    if _is_fp16(layer):                  # fp16 mode reads the field at its full 8 bits
        return None
    _setf(cfg, layer, "lut_regs", "CDP", "S_LUT_INFO", LUT_LO_INDEX_SELECT=40)
    return "CDP.S_LUT_INFO.LUT_LO_INDEX_SELECT"


def _m_le_index_offset(cfg, layer):
    if _is_fp16(layer):
        return None
    _setf(cfg, layer, "lut_regs", "CDP", "S_LUT_CFG", LUT_LE_FUNCTION=0)
    _setf(cfg, layer, "lut_regs", "CDP", "S_LUT_INFO", LUT_LE_INDEX_OFFSET=60)
    return "CDP.S_LUT_INFO.LUT_LE_INDEX_OFFSET"


def _m_cv_without_sramif(cfg, layer):
    if cfg.sramif:
        return None
    _setf(cfg, layer, "cdp", "CDP", "D_DST_DMA_CFG", DST_RAM_TYPE=0)
    return "CDP.D_DST_DMA_CFG.DST_RAM_TYPE"


INVALID_MUTATIONS = {
    "precision_mismatch": _m_precision_mismatch, "missing_precision": _m_missing_precision,
    "reserved_precision": _m_reserved_precision, "misaligned_dst": _m_misaligned_dst,
    "misaligned_src_stride": _m_misaligned_src_stride,
    "dst_lines_overlap": _m_dst_lines_overlap, "dst_surfaces_overlap": _m_dst_surfaces_overlap,
    "lo_index_select_range": _m_lo_index_select, "le_index_offset_range": _m_le_index_offset,
    "cv_without_sramif": _m_cv_without_sramif,
}


def _base_layer(cfg, rng=None, prec=INT8):
    """A small valid packed layer of precision ``prec`` (2 x 2, one atom plus one channel) the
    mutations start from; ``rng`` default: seed 1."""
    cpa = cfg.memory_atom // BYTES[prec]
    rng = np.random.default_rng(1) if rng is None else rng
    layer = random_program(cfg, rng, W=2, H=2, C=cpa + 1, prec=prec, packed=True)
    layer["lut_regs"] = dict(layer["lut_regs"])
    return layer


def write_invalid_traces(cfg, directory: str, prec: int = INT8) -> list:
    """One trace per applicable mutation of :data:`INVALID_MUTATIONS` of a ``prec`` layer
    (INT16: named ``cdp_int16_invalid_*``, FP16: ``cdp_fp16_invalid_*``, on builds with that
    precision; the LUT index-range mutations do not apply to fp16); each one's golden run must
    fail with an error naming the field. Returns ``[(path, field)]``; the expected CRC is that
    of the untouched (all-zero) destination window."""
    prefix = {INT8: "cdp", INT16: "cdp_int16", FP16: "cdp_fp16"}[prec]
    return write_invalid(cfg, directory, prefix, INVALID_MUTATIONS,
                         lambda c: _base_layer(c, prec=prec), write_trace)
