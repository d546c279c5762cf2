"""hw.cdp: the CDP feeder + LRN datapath in Amaranth simulation against a naive reference.

The reference below is written from NVDLA's description of the int8 CDP (one element at a
time, Python integers): input converter, square sum over the 3/5/7/9 window (zeros outside
the pixel's channels and for cripple channels), LE (linear / exponent) and LO lookup with
under/overflow extrapolation, hybrid / priority choice and 16-bit interpolation, multiply,
output converter with its saturation count. Programs: the LUT setups of NVDLA's public
cdp_* traces (LE exponent hits, LE and LO linear hits, under/overflow, hybrid, both bypasses)
and random ones, on random cubes, with random input gaps and output back-pressure. int16
layers on builds with int16 (2-byte elements, half the channels per atom) are checked against
the golden model's datapath (:func:`sim.cdp.cdp.compute`), mixed with int8 layers on the same
build.
"""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

import numpy as np

from arch.config import PRESETS, NvdlaConfig
from hw.cdp.datapath import CdpDatapath
from hw.cdp.rdma import CdpFeeder
from hw.mem.dma import DmaGeometry
from sim.cdp.cdp import CdpLut, compute
from sim.cdp.program import INT8, INT16, CdpLutParams, CdpProgram
from sim.lut import CAT_HYBRID, CAT_LE_HIT, CAT_LO_HIT, CAT_OFLOW, CAT_UFLOW


# =========================================================================================
# Naive reference
# =========================================================================================
def sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def sat(v, bits):
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))


def round_shift(v, s):
    """v / 2^s rounded half away from zero (s < 0: exact left shift)."""
    if s <= 0:
        return v << -s
    r = (abs(v) + (1 << (s - 1))) >> s
    return r if v >= 0 else -r


def index_select(v):
    return (v | ~0x3f) if v & 0x20 else v


def _linear(x, start, end, sel, table, depth, us, ush, os_, osh):
    """(result, underflow, overflow, hit) of a linear table."""
    t = x - start
    idx = t << -sel if sel < 0 else t >> sel
    if idx < 0 or t <= 0:
        return sat(table[0] + round_shift((x - start) * us, sx(ush, 5)), 16), 1, 0, 0
    if idx >= depth:
        return sat(table[depth] + round_shift((x - end) * os_, sx(osh, 5)), 16), 0, 1, 0
    f = 0 if sel < 0 else (t % (1 << sel))
    if sel >= 0:
        f = f >> (sel - 16) if sel > 16 else f << (16 - sel)
    return sat(table[idx] + round_shift((table[idx + 1] - table[idx]) * f, 16), 16), 0, 0, 1


def reference_element(window, centre, p, le, lo, counts):
    """One output of the CDP (int8) from the converted values of its window."""
    x = centre if p["sqsum_bypass"] else sum(v * v for v in window)
    off = sx(p["le_index_offset"], 8)
    if p["le_linear"]:
        le_r, le_u, le_o, le_h = _linear(x, p["le_start"], p["le_end"],
                                         index_select(p["le_index_select"]), le, 64,
                                         p["le_uscale"], p["le_ushift"], p["le_oscale"],
                                         p["le_oshift"])
    else:
        t = x - p["le_start"]
        log = t.bit_length() - 1 if t > 0 else 0
        idx = log - off
        le_u = le_o = le_h = 0
        if idx < 0 or t <= 0:
            bias = 0 if off < 0 else 1 << off
            le_r = sat(le[0] + round_shift((x - p["le_start"] - bias) * p["le_uscale"],
                                           sx(p["le_ushift"], 5)), 16)
            le_u = 1
        elif idx >= 64:
            le_r = sat(le[64] + round_shift((x - p["le_end"]) * p["le_oscale"],
                                            sx(p["le_oshift"], 5)), 16)
            le_o = 1
        else:
            f = t - (1 << log)
            f = f >> (log - 16) if log > 16 else f << (16 - log)
            le_r = sat(le[idx] + round_shift((le[idx + 1] - le[idx]) * f, 16), 16)
            le_h = 1
    lo_r, lo_u, lo_o, lo_h = _linear(x, p["lo_start"], p["lo_end"],
                                     index_select(p["lo_index_select"]), lo, 256,
                                     p["lo_uscale"], p["lo_ushift"], p["lo_oscale"],
                                     p["lo_oshift"])
    if le_u and lo_u:
        r = lo_r if p["uflow_pri"] else le_r
        counts["uflow"] += 1
    elif le_o and lo_o:
        r = lo_r if p["oflow_pri"] else le_r
        counts["oflow"] += 1
    elif le_h != lo_h:
        r = le_r if le_h else lo_r
        counts["le_hit" if le_h else "lo_hit"] += 1
    else:
        r = lo_r if p["hybrid_pri"] else le_r
        counts["hybrid"] += 1
    y = r if p["mul_bypass"] else r * centre
    z = (sx(y, 25) - sx(p["datout_offset"], 25)) * sx(p["datout_scale"], 16)
    out = sat(round_shift(z, p["datout_shifter"]), 8)
    if (z >> p["datout_shifter"]) not in (out - 1, out, out + 1):
        counts["sat"] += 1
    return out


def reference(pixels, channels, p, le, lo):
    """``pixels``: list of per-pixel channel lists (int8, the full surfaces, cripple channels
    past ``channels`` ignored). Returns the outputs (same shape) and the counts."""
    half = p["normalz_len"] + 1
    counts = dict(uflow=0, oflow=0, hybrid=0, le_hit=0, lo_hit=0, sat=0)
    out = []
    for px in pixels:
        v = [0 if c >= channels else
             sat(round_shift((x - sx(p["datin_offset"], 8)) * sx(p["datin_scale"], 16),
                             p["datin_shifter"]), 9)
             for c, x in enumerate(px)]
        out.append([reference_element([v[k] for k in range(c - half, c + half + 1)
                                       if 0 <= k < len(v)], v[c], p, le, lo, counts)
                    for c in range(len(v))])
    return out, counts


# =========================================================================================
# Programs
# =========================================================================================
_BASE = dict(sqsum_bypass=0, mul_bypass=0, normalz_len=0, le_linear=0, uflow_pri=0,
             oflow_pri=0, hybrid_pri=0, le_index_offset=0, le_index_select=0,
             lo_index_select=0, le_start=0, le_end=0, lo_start=0, lo_end=0, le_uscale=1,
             le_oscale=1, lo_uscale=1, lo_oscale=1, le_ushift=0, le_oshift=0, lo_ushift=0,
             lo_oshift=0, datin_offset=0, datin_scale=1, datin_shifter=0, datout_offset=0,
             datout_scale=1, datout_shifter=0, int16=0)

#: LUT / converter setups of NVDLA's public cdp traces (values as in their register writes)
TRACE_LIKE = [
    # LE exponent hits (index offset 0), output shift 9
    dict(le_end=0x12, lo_start=0x40000, lo_end=0x40100, datout_shifter=9),
    # LE exponent with negative start, LO linear, all priorities LO
    dict(le_linear=1, uflow_pri=1, oflow_pri=1, hybrid_pri=1, le_index_offset=0x00,
         le_index_select=0xfe, lo_index_select=0x08, le_start=-14, le_end=2, lo_end=0x10000,
         normalz_len=1, datout_shifter=9),
    # both bypasses, LO index select -1, LRN 9, offset input
    dict(sqsum_bypass=1, mul_bypass=1, normalz_len=3, uflow_pri=1, oflow_pri=1,
         le_index_offset=0xc7, lo_index_select=0xff, le_start=0x20, le_end=0xa0,
         lo_start=0x40, lo_end=0xc0, datin_offset=0xff80),
    # slopes with shifts (negative: left), converter scale / offset
    dict(hybrid_pri=1, le_index_offset=0xc9, le_index_select=0x03, lo_index_select=0x01,
         le_start=0x40, le_end=0x240, lo_start=0xa8, lo_end=0x2a8, le_uscale=-3,
         le_oscale=5, le_ushift=3, lo_uscale=2, lo_oscale=-5, lo_ushift=0x1d,
         datout_offset=-33, datout_scale=9, datout_shifter=2),
    # input converter scale and shift, big output shift and offset
    dict(sqsum_bypass=1, mul_bypass=1, normalz_len=3, le_linear=0, uflow_pri=1,
         le_index_offset=0xc8, le_end=0x100, lo_end=0x100, datin_offset=2, datin_scale=2,
         datin_shifter=1, datout_offset=0x1ff03ca09 & 0xffffffff, datout_scale=0x2cba,
         datout_shifter=0x24),
    # LE linear hits with a 16+ index select (fraction shifted right)
    dict(le_linear=1, le_index_select=18, lo_index_select=20, le_start=0, le_end=64 << 18,
         lo_start=-5, lo_end=(256 << 20) - 5, datin_scale=3, datout_shifter=12),
]


def random_program(rng):
    p = dict(_BASE)
    p.update(
        sqsum_bypass=int(rng.random() < 0.2), mul_bypass=int(rng.random() < 0.3),
        normalz_len=rng.randrange(4), le_linear=rng.randrange(2), uflow_pri=rng.randrange(2),
        oflow_pri=rng.randrange(2), hybrid_pri=rng.randrange(2),
        le_index_offset=rng.choice([0, 1, 3, 7, 0xfe, 0xc7, rng.randrange(256)]),
        le_index_select=rng.choice([0, 2, 5, 0x3f, 0x3e, 17, rng.randrange(256)]),
        lo_index_select=rng.choice([0, 1, 4, 0x3f, 18, rng.randrange(256)]),
        le_start=rng.choice([0, -14, 64, rng.randrange(-3000, 3000)]),
        lo_start=rng.choice([0, 16, -100, rng.randrange(-3000, 3000)]),
        le_uscale=rng.randrange(-(1 << 15), 1 << 15), le_oscale=rng.randrange(-(1 << 15), 1 << 15),
        lo_uscale=rng.randrange(-(1 << 15), 1 << 15), lo_oscale=rng.randrange(-(1 << 15), 1 << 15),
        le_ushift=rng.randrange(32), le_oshift=rng.randrange(32), lo_ushift=rng.randrange(32),
        lo_oshift=rng.randrange(32),
        datin_offset=rng.randrange(1 << 16), datin_scale=rng.choice([1, 2, rng.randrange(1 << 16)]),
        datin_shifter=rng.choice([0, 1, rng.randrange(32)]),
        datout_offset=rng.randrange(1 << 32), datout_scale=rng.randrange(1 << 16),
        datout_shifter=rng.choice([0, 9, 16, rng.randrange(64)]))
    p["le_end"] = p["le_start"] + rng.choice([64, 1 << 10, rng.randrange(1 << 20)])
    p["lo_end"] = p["lo_start"] + rng.choice([256, 1 << 12, rng.randrange(1 << 20)])
    return p


def _program(p):
    full = dict(_BASE)
    full.update(p)
    return full


def _tables(rng, smooth=False):
    """Random LE / LO entries, or (``smooth``) slowly varying ones whose interpolations and
    products stay mostly inside the int8 output range."""
    if smooth:
        a, b = rng.randrange(-40, 41), rng.randrange(-3, 4)
        le = [sat(a + b * i + rng.randrange(-2, 3), 16) for i in range(65)]
        lo = [sat(a - b * i // 4 + rng.randrange(-2, 3), 16) for i in range(257)]
        return le, lo
    le = [rng.randrange(-(1 << 15), 1 << 15) for _ in range(65)]
    lo = [rng.randrange(-(1 << 15), 1 << 15) for _ in range(257)]
    return le, lo


# =========================================================================================
# Simulation
# =========================================================================================
def _apply(ctx, dp, p):
    r, s = dp.regs, dp.s
    sets = [
        (r.D_FUNC_BYPASS.SQSUM_BYPASS, p["sqsum_bypass"]), (r.D_FUNC_BYPASS.MUL_BYPASS, p["mul_bypass"]),
        (r.D_LRN_CFG.NORMALZ_LEN, p["normalz_len"]),
        (r.D_DATIN_OFFSET.DATIN_OFFSET, p["datin_offset"] & 0xffff),
        (r.D_DATIN_SCALE.DATIN_SCALE, p["datin_scale"] & 0xffff),
        (r.D_DATIN_SHIFTER.DATIN_SHIFTER, p["datin_shifter"]),
        (r.D_DATOUT_OFFSET.DATOUT_OFFSET, p["datout_offset"] & 0xffffffff),
        (r.D_DATOUT_SCALE.DATOUT_SCALE, p["datout_scale"] & 0xffff),
        (r.D_DATOUT_SHIFTER.DATOUT_SHIFTER, p["datout_shifter"]),
        (s.S_LUT_CFG.LUT_LE_FUNCTION, p["le_linear"]),
        (s.S_LUT_CFG.LUT_UFLOW_PRIORITY, p["uflow_pri"]),
        (s.S_LUT_CFG.LUT_OFLOW_PRIORITY, p["oflow_pri"]),
        (s.S_LUT_CFG.LUT_HYBRID_PRIORITY, p["hybrid_pri"]),
        (s.S_LUT_INFO.LUT_LE_INDEX_OFFSET, p["le_index_offset"]),
        (s.S_LUT_INFO.LUT_LE_INDEX_SELECT, p["le_index_select"]),
        (s.S_LUT_INFO.LUT_LO_INDEX_SELECT, p["lo_index_select"]),
        (s.S_LUT_LE_SLOPE_SCALE.LUT_LE_SLOPE_UFLOW_SCALE, p["le_uscale"] & 0xffff),
        (s.S_LUT_LE_SLOPE_SCALE.LUT_LE_SLOPE_OFLOW_SCALE, p["le_oscale"] & 0xffff),
        (s.S_LUT_LO_SLOPE_SCALE.LUT_LO_SLOPE_UFLOW_SCALE, p["lo_uscale"] & 0xffff),
        (s.S_LUT_LO_SLOPE_SCALE.LUT_LO_SLOPE_OFLOW_SCALE, p["lo_oscale"] & 0xffff),
        (s.S_LUT_LE_SLOPE_SHIFT.LUT_LE_SLOPE_UFLOW_SHIFT, p["le_ushift"]),
        (s.S_LUT_LE_SLOPE_SHIFT.LUT_LE_SLOPE_OFLOW_SHIFT, p["le_oshift"]),
        (s.S_LUT_LO_SLOPE_SHIFT.LUT_LO_SLOPE_UFLOW_SHIFT, p["lo_ushift"]),
        (s.S_LUT_LO_SLOPE_SHIFT.LUT_LO_SLOPE_OFLOW_SHIFT, p["lo_oshift"]),
    ]
    for name in ("le_start", "le_end", "lo_start", "lo_end"):
        v = p[name] & ((1 << 38) - 1)
        reg = "S_LUT_" + name.upper()
        sets.append((s[f"{reg}_LOW"][f"LUT_{name.upper()}_LOW"], v & 0xffffffff))
        sets.append((s[f"{reg}_HIGH"][f"LUT_{name.upper()}_HIGH"], v >> 32))
    if "int16" in dp.cfg.data_types:
        sets.append((r.D_DATA_FORMAT.INPUT_DATA_TYPE, INT16 if p["int16"] else INT8))
    for sig, v in sets:
        ctx.set(sig, v)


def run_cases(cfg, cases, gaps=0.3, stalls=0.3, seed=1):
    """Each case: (program, le, lo, channels, pixels); all run back to back in one simulator
    (the feeder / window are cleared between cases). Returns per case (outputs, counts,
    cycles from the first input offered to the last output)."""
    geom = DmaGeometry(cfg)
    T, atom = cfg.cdp_throughput, geom.atom_bytes
    wide = "int16" in cfg.data_types
    m = Module()
    m.submodules.feeder = feeder = CdpFeeder(geom, T, int16=wide)
    m.submodules.dp = dp = CdpDatapath(cfg)
    m.d.comb += [dp.i.valid.eq(feeder.o.valid), feeder.o.ready.eq(dp.i.ready),
                 dp.i.payload.eq(feeder.o.payload)]
    sim = Simulator(m)
    sim.add_clock(1e-8)
    results = []
    rng = random.Random(seed)

    async def bench(ctx):
        for p, le, lo, channels, pixels in cases:
            nb = 2 if p["int16"] else 1
            cpa = atom // nb
            surfaces = len(pixels[0]) // cpa
            _apply(ctx, dp, p)
            if wide:
                ctx.set(feeder.int16, p["int16"])
            ctx.set(feeder.channel_m1, channels - 1)
            ctx.set(feeder.surfaces_m1, surfaces - 1)
            for t, table in ((0, le), (1, lo)):
                for a, v in enumerate(table):
                    ctx.set(dp.lut_table, t)
                    ctx.set(dp.lut_addr, a)
                    ctx.set(dp.lut_wdata, v & 0xffff)
                    ctx.set(dp.lut_we, 1)
                    await ctx.tick()
            ctx.set(dp.lut_we, 0)
            ctx.set(dp.lut_table, 0)
            ctx.set(dp.lut_addr, 0)
            ctx.set(feeder.clear, 1)
            ctx.set(dp.clear, 1)
            await ctx.tick()
            ctx.set(feeder.clear, 0)
            ctx.set(dp.clear, 0)
            atoms = []
            for k, px in enumerate(pixels):
                for sfc in range(surfaces):
                    word = 0
                    for b in range(cpa):
                        word |= (px[sfc * cpa + b] & ((1 << (8 * nb)) - 1)) << (8 * nb * b)
                    atoms.append((word, int(k == len(pixels) - 1 and sfc == surfaces - 1)))
            total = len(pixels) * surfaces * cpa
            got = []
            counts = dict(uflow=0, oflow=0, hybrid=0, le_hit=0, lo_hit=0, sat=0)
            ai = 0
            cycles = 0
            while len(got) < total:
                if ai < len(atoms) and rng.random() >= gaps:
                    ctx.set(feeder.i.valid, 1)
                    ctx.set(feeder.i.payload.data, atoms[ai][0])
                    ctx.set(feeder.i.payload.last, atoms[ai][1])
                else:
                    ctx.set(feeder.i.valid, 0)
                offered = ai < len(atoms) and ctx.get(feeder.i.valid)
                ready = int(rng.random() >= stalls)
                ctx.set(dp.o.ready, ready)
                _, _, i_ready, o_valid, o_last, o_data, sat_, uf, of, hy, leh, loh = \
                    await ctx.tick().sample(
                        feeder.i.ready, dp.o.valid, dp.o.payload.last, dp.o.payload.data,
                        dp.o.payload.sat, dp.o.payload.lut_uflow, dp.o.payload.lut_oflow,
                        dp.o.payload.lut_hybrid, dp.o.payload.lut_le_hit,
                        dp.o.payload.lut_lo_hit)
                cycles += 1
                assert cycles < 40 * total + 200, "datapath stalled"
                if offered and i_ready:
                    ai += 1
                if o_valid and ready:
                    got += [int(v) for v in o_data]
                    for key, v in (("sat", sat_), ("uflow", uf), ("oflow", of), ("hybrid", hy),
                                   ("le_hit", leh), ("lo_hit", loh)):
                        counts[key] += v
                    assert bool(o_last) == (len(got) == total)
            ctx.set(feeder.i.valid, 0)
            ctx.set(dp.o.ready, 0)
            n = len(pixels[0])
            results.append(([got[k * n:(k + 1) * n] for k in range(len(pixels))], counts,
                            cycles))

    sim.add_testbench(bench)
    sim.run()
    return results


def _cube(rng, n_pixels, surfaces, atom):
    pixels = []
    for _ in range(n_pixels):
        kind = rng.random()
        if kind < 0.2:
            px = [rng.choice([-128, 127, 0, -1, 1]) for _ in range(surfaces * atom)]
        elif kind < 0.6:
            px = [rng.randrange(-20, 21) for _ in range(surfaces * atom)]
        else:
            px = [rng.randrange(-128, 128) for _ in range(surfaces * atom)]
        pixels.append(px)
    return pixels


def golden(pixels, channels, p, le, lo):
    """The golden model's datapath (:func:`sim.cdp.cdp.compute`) on the same pixels: outputs
    per pixel and the counts, as :func:`reference` gives them."""
    lut = CdpLutParams(
        le_linear=bool(p["le_linear"]), uflow_priority_lo=bool(p["uflow_pri"]),
        oflow_priority_lo=bool(p["oflow_pri"]), hybrid_priority_lo=bool(p["hybrid_pri"]),
        le_index_offset=sx(p["le_index_offset"], 8), le_index_select=sx(p["le_index_select"], 8),
        lo_index_select=sx(p["lo_index_select"], 8), le_start=p["le_start"], le_end=p["le_end"],
        lo_start=p["lo_start"], lo_end=p["lo_end"],
        le_uflow_scale=sx(p["le_uscale"], 16), le_oflow_scale=sx(p["le_oscale"], 16),
        lo_uflow_scale=sx(p["lo_uscale"], 16), lo_oflow_scale=sx(p["lo_oscale"], 16),
        le_uflow_shift=sx(p["le_ushift"], 5), le_oflow_shift=sx(p["le_oshift"], 5),
        lo_uflow_shift=sx(p["lo_ushift"], 5), lo_oflow_shift=sx(p["lo_oshift"], 5))
    prog = CdpProgram(
        precision=INT16 if p["int16"] else INT8, width=len(pixels), height=1, channel=channels,
        src=None, dst=None, window=2 * p["normalz_len"] + 3,
        sqsum_bypass=bool(p["sqsum_bypass"]), mul_bypass=bool(p["mul_bypass"]),
        datin_offset=p["datin_offset"] & 0xffff, datin_scale=sx(p["datin_scale"], 16),
        datin_shift=p["datin_shifter"], datout_offset=p["datout_offset"] & 0xffffffff,
        datout_scale=sx(p["datout_scale"], 16), datout_shift=p["datout_shifter"], lut=lut)
    tables = CdpLut()
    tables.le[:] = le
    tables.lo[:] = lo
    raw = np.array(pixels, dtype=np.int64).T[:, None, :]              # [channels, 1, W]
    out, sat_, lut_out = compute(prog, raw, tables)
    counts = dict(uflow=lut_out.count(CAT_UFLOW), oflow=lut_out.count(CAT_OFLOW),
                  hybrid=lut_out.count(CAT_HYBRID), le_hit=lut_out.count(CAT_LE_HIT),
                  lo_hit=lut_out.count(CAT_LO_HIT), sat=int(sat_.sum()))
    return [[int(v) for v in px] for px in out[:, 0, :].T], counts


def _check(cfg, cases, **kw):
    results = run_cases(cfg, cases, **kw)
    assert len(results) == len(cases)
    for (p, le, lo, channels, pixels), (got, counts, _) in zip(cases, results):
        want, want_counts = (golden if p["int16"] else reference)(pixels, channels, p, le, lo)
        assert got == want, (p, channels)
        assert counts == want_counts, (p, counts, want_counts)


CONFIGS = [PRESETS["nv_small"], NvdlaConfig(name="cdp_t4", cdp_throughput=4), PRESETS["nv_full"]]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_trace_like_programs(cfg):
    """The trace-like programs, each with rough and smooth tables, against the reference
    (nv_full's 8 lanes: every other case, half of each kind: its simulation is the slowest)."""
    rng = random.Random(7)
    atom = cfg.memory_atom
    cases = []
    for k, p in enumerate(TRACE_LIKE * 2):
        le, lo = _tables(rng, smooth=k >= len(TRACE_LIKE))
        surfaces = rng.choice([1, 2, 3])
        channels = rng.randrange(1, surfaces * atom + 1)
        cases.append((_program(p), le, lo, channels, _cube(rng, 5, surfaces, atom)))
    _check(cfg, cases[::2] if cfg.cdp_throughput == 8 else cases)


def random_program16(rng):
    """A random int16 program: index selects in -32..31, exponent offsets up to 39, table
    ranges scaled towards int16 square sums (up to 2^36)."""
    p = random_program(rng)
    k = rng.choice([0, 8, 16, 24, 30])
    p.update(int16=1, le_index_select=rng.randrange(-32, 32) & 0xff,
             lo_index_select=rng.choice([rng.randrange(-32, 32), 16 + k // 2, k]) & 0xff,
             le_index_offset=rng.choice([0, 3, 12, 20, 39, -2, -20]) & 0xff,
             datout_shifter=rng.choice([0, 9, 16, 24, rng.randrange(64)]))
    for name, span in (("le", 64), ("lo", 256)):
        p[f"{name}_start"] = sx(p[f"{name}_start"] << k, 38)
        p[f"{name}_end"] = sx(p[f"{name}_start"] + (span << max(sx(p[f"{name}_index_select"], 8),
                                                                0)), 38)
    return p


def _cube16(rng, n_pixels, surfaces, cpa):
    pixels = []
    for _ in range(n_pixels):
        kind = rng.random()
        if kind < 0.2:
            px = [rng.choice([-32768, 32767, 0, -1, 1]) for _ in range(surfaces * cpa)]
        elif kind < 0.5:
            px = [rng.randrange(-300, 301) for _ in range(surfaces * cpa)]
        else:
            px = [rng.randrange(-32768, 32768) for _ in range(surfaces * cpa)]
        pixels.append(px)
    return pixels


INT16_CONFIGS = [PRESETS["nv_small"].replace(data_types=frozenset({"int8", "int16"})),
                 NvdlaConfig(name="cdp_t4", cdp_throughput=4,
                             data_types=frozenset({"int8", "int16"})),
                 PRESETS["nv_full"]]


@pytest.mark.parametrize("cfg", INT16_CONFIGS, ids=["nv_small_int16", "cdp_t4_int16", "nv_full"])
def test_int16_programs_match_golden(cfg):
    """int16 layers (2-byte elements) interleaved with int8 ones on builds with int16 (nv_full:
    every other case)."""
    rng = random.Random(13)
    atom = cfg.memory_atom
    cases = []
    for k in range(12):
        le, lo = _tables(rng, smooth=k % 3 == 0)
        if k % 4 == 3:                                   # an int8 layer in between
            surfaces = rng.choice([1, 2])
            channels = rng.randrange(1, surfaces * atom + 1)
            cases.append((random_program(rng), le, lo, channels,
                          _cube(rng, 3, surfaces, atom)))
            continue
        cpa = atom // 2
        surfaces = rng.choice([1, 2, 3])
        channels = rng.randrange(1, surfaces * cpa + 1)
        cases.append((random_program16(rng), le, lo, channels,
                      _cube16(rng, 3, surfaces, cpa)))
    _check(cfg, cases[::2] if cfg.cdp_throughput == 8 else cases, seed=5)


def test_random_programs():
    rng = random.Random(11)
    cfg = PRESETS["nv_small"]
    atom = cfg.memory_atom
    cases = []
    for _ in range(25):
        le, lo = _tables(rng)
        surfaces = rng.choice([1, 2, 4])
        channels = rng.randrange(1, surfaces * atom + 1)
        cases.append((random_program(rng), le, lo, channels, _cube(rng, 3, surfaces, atom)))
    _check(cfg, cases, seed=3)


def test_full_rate():
    """Without gaps or back-pressure the datapath takes and gives one transfer per cycle."""
    cfg = PRESETS["nv_small"]
    rng = random.Random(5)
    le, lo = _tables(rng)
    p = _program(TRACE_LIKE[0])
    case = (p, le, lo, 16, _cube(rng, 8, 2, 8))
    _check(cfg, [case], gaps=0, stalls=0)
    (_, _, cycles), = run_cases(cfg, [case], gaps=0, stalls=0)
    # 128 channels in 128 cycles, plus the window delay (4) and the pipeline's steps
    assert CdpDatapath(cfg).latency == 16
    assert cycles <= 8 * 16 + 4 + 16 + 1, cycles


def test_reference_paths():
    """The reference's LUT paths with hand-checked values."""
    p = _program(dict(le_linear=1, le_index_select=2, le_end=256, lo_start=1 << 20,
                      lo_end=(1 << 20) + 256, datout_shifter=0, mul_bypass=1))
    le = list(range(0, 65 * 100, 100))
    lo = [0] * 257
    c = dict(uflow=0, oflow=0, hybrid=0, le_hit=0, lo_hit=0, sat=0)
    # x = 3 squared = 9: index 9 >> 2 = 2, fraction 1/4: 200 + 25 = 225 -> saturates to 127
    assert reference_element([3], 3, p, le, lo, c) == 127 and c["le_hit"] == 1 and c["sat"] == 1
    p["datout_shifter"] = 2             # 225 / 4 = 56.25 -> 56
    assert reference_element([3], 3, p, le, lo, c) == 56
    p["le_oscale"], p["le_oshift"] = 3, 1          # overflow: 6400 + (300 - 256) * 3 / 2
    assert reference_element([10, 10, 10], 10, p, le, lo, c) == sat(round_shift(6466, 2), 8)
    assert c["hybrid"] == 1 and c["oflow"] == 0    # LE over- and LO underflow: hybrid
