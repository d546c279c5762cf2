"""Golden CDP model (sim/cdp): NVDLA's cdp traces, the vectorized datapath against a naive
per-element reference, LUT paths with hand-computed values, the LUT access port, random and
invalid programs."""

from fractions import Fraction
from math import floor

import numpy as np
import pytest

from arch.config import PRESETS
from arch.registers import register_map
from sim.cdp import CdpLut, CdpLutParams, CdpProgramError, decode, lut_lookup, run_cdp
from sim.cdp.cdp import square_sum
from sim.cdp.random_programs import (random_program, run_trace_golden, write_invalid_traces,
                                     write_random_traces)
from sim.core import GoldenCore
from sim.lut import CAT_HYBRID, CAT_LE_HIT, CAT_LO_HIT, CAT_OFLOW, CAT_UFLOW
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.trace import parse_trace
from sim.trace_run import run_golden

from .conftest import TRACES

SMALL, FULL, LARGE = PRESETS["nv_small"], PRESETS["nv_full"], PRESETS["nv_large"]
CDP_TRACES = sorted(p.name for p in (TRACES / "nv_small").glob("cdp_*")) \
    if (TRACES / "nv_small").is_dir() else []


# =========================================================================================
# NVDLA's traces
# =========================================================================================
@pytest.mark.skipif(not CDP_TRACES, reason="NVDLA traces (../shared) not present")
def test_nvdla_cdp_traces_pass_on_the_golden_model():
    assert len(CDP_TRACES) == 19
    failed = []
    for name in CDP_TRACES:
        res = run_golden(parse_trace(TRACES / "nv_small" / name, SMALL), SMALL)
        if not res.passed:
            failed.append(f"{name}: {res.message}")
    assert not failed, failed


# =========================================================================================
# Naive reference (Python integers, one element at a time)
# =========================================================================================
def _round(num, shift):
    """num / 2^shift rounded half away from zero (shift may be negative: exact)."""
    q = Fraction(num) / Fraction(2) ** shift
    r = floor(abs(q) + Fraction(1, 2))
    return r if q >= 0 else -r


def _sat(v, bits):
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))


def _sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _frac16(rem, bits):
    return rem >> (bits - 16) if bits > 16 else rem << (16 - bits)


def _ext(edge, v, shift):
    return _sat(edge + _sat(_round(v, shift), 56), 16)


def _naive_linear(s, table, start, end, sel, us, ush, os_, osh):
    d = s - start
    if d <= 0:
        return _ext(table[0], d * us, ush), "u"
    idx = d >> sel if sel >= 0 else d << -sel
    if idx >= len(table) - 1:
        return _ext(table[-1], (s - end) * os_, osh), "o"
    f = 0 if sel < 0 else _frac16(d % (1 << sel), sel)
    return _sat(table[idx] + _round((table[idx + 1] - table[idx]) * f, 16), 16), "h"


def _naive_lut(s, le, lo, p: CdpLutParams):
    if p.le_linear:
        a, ka = _naive_linear(s, le, p.le_start, p.le_end, p.le_index_select,
                              p.le_uflow_scale, p.le_uflow_shift, p.le_oflow_scale,
                              p.le_oflow_shift)
    else:
        d = s - p.le_start
        log = d.bit_length() - 1 if d > 0 else 0
        idx = log - p.le_index_offset
        if d <= 0 or idx < 0:
            bias = 1 << p.le_index_offset if p.le_index_offset >= 0 else 0
            a, ka = _ext(le[0], (d - bias) * p.le_uflow_scale, p.le_uflow_shift), "u"
        elif idx >= 64:
            a, ka = _ext(le[64], (s - p.le_end) * p.le_oflow_scale, p.le_oflow_shift), "o"
        else:
            f = _frac16(d - (1 << log), log)
            a, ka = _sat(le[idx] + _round((le[idx + 1] - le[idx]) * f, 16), 16), "h"
    b, kb = _naive_linear(s, lo, p.lo_start, p.lo_end, p.lo_index_select, p.lo_uflow_scale,
                          p.lo_uflow_shift, p.lo_oflow_scale, p.lo_oflow_shift)
    if ka == kb == "u":
        return (b if p.uflow_priority_lo else a), CAT_UFLOW
    if ka == kb == "o":
        return (b if p.oflow_priority_lo else a), CAT_OFLOW
    if (ka == "h") != (kb == "h"):
        return (a, CAT_LE_HIT) if ka == "h" else (b, CAT_LO_HIT)
    return (b if p.hybrid_priority_lo else a), CAT_HYBRID


def _naive_layer(prog, cube, le, lo, cpa):
    """[Cp, H, W] outputs, saturation count and category counts of the layer."""
    C, H, W = cube.shape
    Cp = -(-C // cpa) * cpa
    nb = 8 if prog.precision == 0 else 16
    n = prog.window // 2
    out = np.zeros((Cp, H, W), np.int64)
    sat, cats = 0, [0] * 5
    for h in range(H):
        for w in range(W):
            x = [_sat(_round((int(cube[c, h, w]) - _sx(prog.datin_offset, nb))
                             * prog.datin_scale, prog.datin_shift), nb + 1) if c < C else 0
                 for c in range(Cp)]
            for c in range(Cp):
                s = x[c] if prog.sqsum_bypass else sum(
                    x[k] ** 2 for k in range(c - n, c + n + 1) if 0 <= k < Cp)
                y, cat = _naive_lut(s, [int(v) for v in le], [int(v) for v in lo], prog.lut)
                cats[cat] += 1
                if not prog.mul_bypass:
                    y *= x[c]
                v = (y - _sx(prog.datout_offset, 25 if nb == 8 else 32)) * prog.datout_scale
                o = _sat(_round(v, prog.datout_shift), nb)
                sat += abs((v >> prog.datout_shift) - o) > 1
                out[c, h, w] = o
    return out, sat, cats


def _views(cfg, layer):
    rmap = register_map(cfg)
    cdp = GroupView(rmap["CDP"], {**layer["cdp"], **layer["lut_regs"]})
    return GroupView(rmap["CDP_RDMA"], layer["rdma"]), cdp


def _run_layer(cfg, layer):
    mem = SparseMemory()
    for addr, data, _ in layer["images"]:
        mem.write(addr, data)
    lut = CdpLut()
    lut.load(le=layer["lut"][1], lo=layer["lut"][2])
    rdma, cdp = _views(cfg, layer)
    res = run_cdp(cfg, rdma, cdp, lambda ram, where: mem, lut)
    return res, mem, decode(cfg, rdma, cdp)


@pytest.mark.parametrize("cfg, seed, n", [(SMALL, 1, 14), (FULL, 2, 8)],
                         ids=["nv_small", "nv_full"])
def test_random_layers_match_the_naive_reference(cfg, seed, n):
    rng = np.random.default_rng(seed)
    seen = set()
    for _ in range(n):
        layer = random_program(cfg, rng, max_elems=400)
        res, mem, prog = _run_layer(cfg, layer)
        nb = prog.bytes_per_element
        cpa = cfg.memory_atom // nb
        # the input as a naive reader sees it
        _, base, line, surf = prog.src
        cube = np.zeros((prog.channel, prog.height, prog.width), np.int64)
        for c in range(prog.channel):
            for h in range(prog.height):
                for w in range(prog.width):
                    a = base + (c // cpa) * surf + h * line + w * cfg.memory_atom + (c % cpa) * nb
                    cube[c, h, w] = _sx(int.from_bytes(bytes(mem.read(a, nb)), "little"), 8 * nb)
        want, sat, cats = _naive_layer(prog, cube, layer["lut"][1], layer["lut"][2], cpa)
        assert np.array_equal(res.padded_output, want)
        assert res.out_saturation == sat
        assert [res.lut_uflow, res.lut_oflow, res.lut_le_hit, res.lut_lo_hit,
                res.lut_hybrid] == cats
        seen.add((prog.precision, prog.window, prog.sqsum_bypass, prog.mul_bypass,
                  prog.lut.le_linear))
    assert len(seen) >= n // 2


def test_square_sum_windows_at_the_cube_edges():
    x = np.arange(1, 6, dtype=np.int64)[:, None, None]          # channels 1..5
    assert square_sum(x, 3)[:, 0, 0].tolist() == [5, 14, 29, 50, 41]
    assert square_sum(x, 5)[:, 0, 0].tolist() == [14, 30, 55, 54, 50]
    assert square_sum(x, 9)[:, 0, 0].tolist() == [55] * 5
    assert square_sum(-x, 7, bypass=True)[:, 0, 0].tolist() == [-1, -2, -3, -4, -5]


# =========================================================================================
# LUT paths with hand-computed values
# =========================================================================================
def _lut():
    lut = CdpLut()
    lut.load(le=[1000 - 10 * i for i in range(65)], lo=[100 * i for i in range(257)])
    return lut


def test_lo_linear_interpolation_underflow_and_overflow():
    p = CdpLutParams(le_linear=True, le_start=10**9, le_end=10**9 + 64,
                     lo_start=0, lo_end=1024, lo_index_select=2,
                     lo_uflow_scale=3, lo_uflow_shift=1, lo_oflow_scale=-5, lo_oflow_shift=-2)
    s = np.array([10, 11, 4, 0, -7, 1023, 1024, 1030])
    out = lut_lookup(_lut(), s, p)
    # 10: index 2, fraction 2/4 -> 200 + 100/2; 11: 3/4 -> 275; 4: entry 1 exactly
    assert out.value.tolist()[:3] == [250, 275, 100]
    # 0 and -7 underflow LO: entry 0 + round((s - 0) * 3 / 2) (-10.5 rounds to -11); LE
    # underflows too (start 1e9) and wins (UFLOW_PRIORITY=LE): its slope scale is 0 -> 1000
    assert out.lo.tolist()[3:5] == [0, -11]
    assert out.value.tolist()[3:5] == [1000, 1000]
    assert out.category.tolist()[3:5] == [CAT_UFLOW, CAT_UFLOW]
    # 1023: index 255, fraction 3/4 -> 25500 + 75; 1024: overflow -> 25600 + 0 * -5 * 4
    # 1030: 25600 + (6 * -5) << 2 = 25480
    assert out.lo.tolist()[5:] == [25575, 25600, 25480]
    # LE underflows for all (start 1e9) and LO hits / overflows: one hit -> LO; LO overflow
    # with LE underflow -> hybrid (LE priority -> LE entry 0)
    assert out.category.tolist()[5:] == [CAT_LO_HIT, CAT_HYBRID, CAT_HYBRID]
    assert out.value.tolist()[5:] == [25575, 1000, 1000]


def test_le_exponent_index_interpolation_and_priorities():
    p = CdpLutParams(le_linear=False, le_start=0, le_index_offset=1, le_end=1 << 40,
                     lo_start=0, lo_end=257, lo_index_select=0, hybrid_priority_lo=True,
                     le_uflow_scale=2, le_uflow_shift=0)
    lut = _lut()
    s = np.array([12, 3, 1, 16])
    out = lut_lookup(lut, s, p)
    # 12: log2 = 3, index 3 - 1 = 2, fraction (12 - 8) / 8 -> 980 + (970 - 980) / 2 = 975
    # 3: log2 = 1 -> index 0, fraction 1/2 -> 995; 16: index 3 exactly -> 970
    assert out.le.tolist() == [975, 995, 1000 + (1 - 0 - 2) * 2, 970]
    # 1: log2 0 < offset 1 -> LE underflow: entry 0 + (s - start - 2^offset) * 2 = 998
    # both hit -> hybrid priority LO (s = 12 -> LO 1200); 1: LE under, LO hit -> LO
    assert out.category.tolist() == [CAT_HYBRID, CAT_HYBRID, CAT_LO_HIT, CAT_HYBRID]
    assert out.value.tolist() == [1200, 300, 100, 1600]


def test_le_exponent_overflow_and_left_shifted_linear_index():
    p = CdpLutParams(le_linear=False, le_start=0, le_index_offset=-62, le_end=5,
                     le_oflow_scale=1, le_oflow_shift=0, lo_start=0, lo_index_select=-3,
                     lo_end=32, oflow_priority_lo=False)
    out = lut_lookup(_lut(), np.array([4, 40]), p)
    # 4: log2 2 + 62 = 64 -> LE overflow: entry 64 (360) + (4 - 5) = 359; LO: 4 << 3 = 32
    # hits entry 32 with no fraction -> one hit: LO 3200
    assert out.le.tolist() == [359, 360 + 35] and out.value.tolist()[0] == 3200
    # 40 << 3 = 320 >= 256: LO overflows too -> OFLOW_PRIORITY LE
    assert out.category.tolist() == [CAT_LO_HIT, CAT_OFLOW]
    assert out.value.tolist()[1] == 395


def test_interpolation_and_extrapolation_saturate_to_16_bits():
    lut = CdpLut()
    lut.load(le=[32767] * 65, lo=[-32768] * 257)
    p = CdpLutParams(le_linear=True, le_start=0, le_end=64, le_index_select=0,
                     le_oflow_scale=32767, le_oflow_shift=-16, lo_start=0, lo_end=256,
                     lo_uflow_scale=100, lo_uflow_shift=0)
    out = lut_lookup(lut, np.array([100, -5]), p)
    assert out.le.tolist()[0] == 32767 and out.lo.tolist()[1] == -32768


# =========================================================================================
# LUT access port through the core
# =========================================================================================
def test_cdp_lut_access_port_auto_increments_and_holds_at_the_end():
    core = GoldenCore(SMALL)
    blk = core.rmap["CDP"]
    cfg_w = blk.base // 4 + blk["S_LUT_ACCESS_CFG"].offset // 4
    data_w = blk.base // 4 + blk["S_LUT_ACCESS_DATA"].offset // 4
    core.csb_write(cfg_w, 0x30000 | 255)              # WRITE, LO, entry 255
    for v in (0x1234, 0xFFFF, 7):                     # the third write stays on entry 256
        core.csb_write(data_w, v)
    assert core.cdp_lut.lo[255:].tolist() == [0x1234, 7]
    core.csb_write(cfg_w, 0x20000)                    # WRITE, LE
    core.csb_write(data_w, 0x8000)
    assert core.cdp_lut.le[0] == -32768
    core.csb_write(cfg_w, 0x10000 | 255)              # READ, LO, entry 255
    assert [core.csb_read(data_w) for _ in range(3)] == [0x1234, 7, 7]
    core.csb_write(data_w, 99)                        # a write in READ direction: ignored
    assert core.cdp_lut.lo[256] == 7
    assert core.csb_read(cfg_w) == 0x10000 | 256


def test_status_registers_written_back():
    rng = np.random.default_rng(4)
    layer = random_program(SMALL, rng, max_elems=300)
    res, _, prog = _run_layer(SMALL, layer)
    total = (-(-prog.channel // 8) * 8) * prog.height * prog.width
    assert res.lut_uflow + res.lut_oflow + res.lut_hybrid + res.lut_le_hit + \
        res.lut_lo_hit == total
    regs = res.status_registers()["CDP"]
    assert regs["D_OUT_SATURATION"] == res.out_saturation and regs["D_NAN_INPUT_NUM"] == 0


# =========================================================================================
# Random and invalid programs as traces
# =========================================================================================
@pytest.mark.parametrize("cfg, n", [(SMALL, 12), (LARGE, 4), (FULL, 6)],
                         ids=["nv_small", "nv_large", "nv_full"])
def test_random_traces_pass_with_their_golden_crcs(cfg, n, tmp_path):
    paths = write_random_traces(cfg, str(tmp_path), n, seed=11)
    assert len(paths) == n
    for path in paths:
        res = run_trace_golden(path, cfg)
        assert res.passed and res.checks, (path, res.message)
    again = write_random_traces(cfg, str(tmp_path / "again"), n, seed=11)
    first = (tmp_path / "again" / "cdp_random_11_0000" / "cdp_random_11_0000.cfg").read_text()
    assert first == open(f"{paths[0]}/cdp_random_11_0000.cfg").read() and len(again) == n


SMALL16 = SMALL.replace(data_types=frozenset({"int8", "int16"}))


@pytest.mark.parametrize("cfg, prec", [(SMALL, 0), (FULL, 0), (SMALL16, 1), (FULL, 1)],
                         ids=["nv_small", "nv_full", "nv_small_int16-int16", "nv_full-int16"])
def test_invalid_programs_name_the_field(cfg, prec, tmp_path):
    cases = write_invalid_traces(cfg, str(tmp_path), prec=prec)
    assert len(cases) >= (9 if cfg is SMALL else 8 if cfg is SMALL16 else 6)
    for path, fld in cases:
        res = run_trace_golden(path, cfg)
        assert not res.passed and fld in (res.message or ""), (path, fld, res.message)


def test_decode_rules_name_field_and_rule():
    rng = np.random.default_rng(3)
    layer = random_program(SMALL, rng, prec=0)
    rmap = register_map(SMALL)

    def decode_with(block, reg, **fields):
        words = {**layer["cdp"], **layer["lut_regs"]} if block == "CDP" else dict(layer["rdma"])
        words[reg] = rmap[block][reg].pack(**{**rmap[block][reg].unpack(
            words.get(reg, rmap[block][reg].reset)), **fields})
        if block == "CDP":
            return decode(SMALL, GroupView(rmap["CDP_RDMA"], layer["rdma"]),
                          GroupView(rmap["CDP"], words))
        return decode(SMALL, GroupView(rmap["CDP_RDMA"], words),
                      GroupView(rmap["CDP"], {**layer["cdp"], **layer["lut_regs"]}))

    with pytest.raises(CdpProgramError, match=r"CDP_RDMA\.D_DATA_FORMAT\.INPUT_DATA=FP16: "
                                              r"this build has no fp16"):
        decode_with("CDP_RDMA", "D_DATA_FORMAT", INPUT_DATA=2)
    with pytest.raises(CdpProgramError, match=r"LUT_LE_INDEX_SELECT=-33: index select"):
        words = dict(layer["lut_regs"])
        info = rmap["CDP"]["S_LUT_INFO"]
        cfgr = rmap["CDP"]["S_LUT_CFG"]
        words["S_LUT_INFO"] = info.pack(**{**info.unpack(words["S_LUT_INFO"]),
                                           "LUT_LE_INDEX_SELECT": (-33) & 0xFF})
        words["S_LUT_CFG"] = cfgr.pack(**{**cfgr.unpack(words["S_LUT_CFG"]),
                                          "LUT_LE_FUNCTION": 1})
        decode(SMALL, GroupView(rmap["CDP_RDMA"], layer["rdma"]),
               GroupView(rmap["CDP"], {**layer["cdp"], **words}))


def test_random_programs_cover_every_mode_and_lut_path():
    """Over a few dozen draws: every window, both bypasses, both LE modes, every LUT
    category, negative (left-shifting) index selects, and output saturation."""
    rng = np.random.default_rng(21)
    modes, totals = set(), np.zeros(6, np.int64)
    left_shift = False
    for _ in range(40):
        res, _, prog = _run_layer(SMALL, random_program(SMALL, rng, max_elems=300))
        modes |= {("window", prog.window), ("sqsum_bypass", prog.sqsum_bypass),
                  ("mul_bypass", prog.mul_bypass), ("le_linear", prog.lut.le_linear)}
        left_shift |= prog.lut.lo_index_select < 0
        totals += [res.lut_uflow, res.lut_oflow, res.lut_le_hit, res.lut_lo_hit,
                   res.lut_hybrid, res.out_saturation]
    assert {("window", w) for w in (3, 5, 7, 9)} <= modes
    assert {(k, v) for k in ("sqsum_bypass", "mul_bypass", "le_linear")
            for v in (False, True)} <= modes
    assert left_shift and (totals > 0).all(), totals


def test_random_int16_programs_cover_every_lut_path():
    """int16 draws on a build with int16: both LE modes, left-shifting LO index selects, every
    LUT category and output saturation (the int16 RTL suite runs on such programs)."""
    rng = np.random.default_rng(5)
    totals, modes = np.zeros(6, np.int64), set()
    for _ in range(30):
        res, _, prog = _run_layer(SMALL16, random_program(SMALL16, rng, max_elems=300, prec=1))
        assert prog.precision == 1
        modes |= {("le_linear", prog.lut.le_linear), ("lo_left", prog.lut.lo_index_select < 0)}
        totals += [res.lut_uflow, res.lut_oflow, res.lut_le_hit, res.lut_lo_hit,
                   res.lut_hybrid, res.out_saturation]
    assert modes == {(k, v) for k in ("le_linear", "lo_left") for v in (False, True)}
    assert (totals > 0).all(), totals
