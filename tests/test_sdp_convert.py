"""SDP precision conversion in the golden model (:mod:`sim.sdp.convert`, :func:`run_sdp`).

Modes (SDP_RDMA IN / PROC_PRECISION, SDP PROC / OUT_PRECISION): the read DMA's 16to8
(int16 in, int8 processing and output), the write DMA's 8to16 (int8 processing, int16
output), both at once, and the output converter's int16 -> fp16 and fp16 -> int16. Each is
checked against straightforward scalar references written here from NVDLA's C model
semantics, byte for byte in memory (guard bytes around the output stay untouched), with the
counters; invalid programs must name their field. The slow test at the end drives NVDLA's
own output converter Verilog (``NV_NVDLA_SDP_CORE_c``) in Icarus in every precision pair
(outputs and saturation flags, bit for bit; NVDLA flags a saturation when the truncated
value is more than 1 away from the saturated 17-bit result, so floors of 65536 / -65537 and
roundings up onto 65536 saturate without a flag):

    NVDLA_HW_GIT=<nvdla/hw git dir> python -m pytest -m slow tests/test_sdp_convert.py
"""

from __future__ import annotations

import math
import shutil
from fractions import Fraction

import numpy as np
import pytest

from arch.config import PRESETS
from sim.memory import SparseMemory
from sim.nvfloat import fp16_to_float, fp32_from_float, fp32_to_fp16
from sim.random_traces import run_trace_golden
from sim.sdp import SdpProgramError, run_sdp
from sim.sdp.convert import (conversion_mode, fp16_saturated, fp16_to_int16, fp32_to_int16,
                             int17_to_fp16)
from sim.sdp.random_programs import random_program, write_random_traces
from sim.sdp.sdp import output_convert

from .conftest import NV_SMALL_INT16
from .test_sdp_model import program

FULL = PRESETS["nv_full"]
SMALL = PRESETS["nv_small"]
SRC, DST = 0x8000_1000, 0x9000_0000
GUARD = 256


# =========================================================================================
# scalar references (Python integers / fractions, one value at a time)
# =========================================================================================
def ref_int_to_fp16(t: int) -> int:
    """fp16 code of an integer: nearest, ties to even; past 65504 saturated to 65504."""
    sign = 0x8000 if t < 0 else 0
    v = abs(t)
    if v == 0:
        return 0
    e = v.bit_length() - 1
    # significand with 10 fraction bits, rounded to nearest even
    q = Fraction(v) / Fraction(2) ** (e - 10)
    m = int(q)
    rest = q - m
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m & 1):
        m += 1
    if m == 2048:
        m, e = 1024, e + 1
    if e + 15 >= 31:
        return sign | 0x7BFF
    return sign | ((e + 15) << 10) | (m - 1024)


def ref_fp16_to_int16(h: int) -> int:
    """int16 of an fp16 code as NVDLA's converter makes it: the hidden bit always set,
    magnitude rounded half up, saturated by sign; NaN -> -32768."""
    s, e, m = h >> 15, (h >> 10) & 0x1F, h & 0x3FF
    if e == 31 and m:
        return -32768
    mag = Fraction(1024 + m) * Fraction(2) ** (e - 25)
    r = int(mag + Fraction(1, 2))                     # floor(mag + 1/2): half up
    if r > 32767:
        return -32768 if s else 32767
    return -r if s else r


def ref_cvt17(x: int, offset: int, scale: int, shift: int):
    """The integer converter into 17 bits: ((x - offset) * scale) / 2^shift rounded half
    away from zero, saturated; returns (value, flagged): NVDLA flags the saturation when the
    truncated quotient is more than 1 from the result."""
    p = (x - offset) * scale
    q = Fraction(p, 2 ** shift)
    r = int(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1)
    r = min(max(r, -65536), 65535)
    return r, abs(math.floor(q) - r) > 1


def _sat(v, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return min(max(v, lo), hi)


# =========================================================================================
# the number conversions
# =========================================================================================
def test_int17_to_fp16_every_value():
    t = np.arange(-65536, 65536)
    got = int17_to_fp16(t)
    want = np.array([ref_int_to_fp16(int(v)) for v in t])
    assert np.array_equal(got, want)
    # edges: exact up to 2048, ties to even above, 65519 rounds to 65504, 65520 would round
    # to 65536: saturated to 65504 (no infinity)
    assert [int(int17_to_fp16(v)) for v in (2049, 2051, 65504, 65519, 65520, 65535, -65536)] \
        == [0x6800, 0x6802, 0x7BFF, 0x7BFF, 0x7BFF, 0x7BFF, 0xFBFF]


def test_fp16_to_int16_every_code():
    h = np.arange(65536)
    got = fp16_to_int16(h)
    want = np.array([ref_fp16_to_int16(int(v)) for v in h])
    assert np.array_equal(got, want)
    codes = {0x3800: 1, 0xB800: -1, 0x3E00: 2, 0x4100: 3, 0x37FF: 0, 0x7800: 32767,
             0xF800: -32768, 0x77FF: 32752, 0x7C00: 32767, 0xFC00: -32768, 0x7E00: -32768,
             0xFE01: -32768, 0x0001: 0, 0x8000: 0}   # 0.5, -0.5, 2.5, 2.5, ..., inf, NaN
    assert {k: int(fp16_to_int16(k)) for k in codes} == codes


def test_fp32_to_int16_rounds_twice_and_saturates():
    vals = [0.5, 1.5, 2.5, -2.5, 2.4999, 32767.0, 32767.5, 40000.0, 1e30, -1e30, 2049.0,
            4097.0, 4099.0]
    got = [int(v) for v in fp32_to_int16(fp32_from_float(np.array(vals)))]
    # 2.4999 is fp16 2.5 first (then 3); 2049 is an fp16 tie (to 2048); 4097 rounds to
    # 4096, 4099 to 4100 (fp16 step 4)
    assert got == [1, 2, 3, -3, 3, 32767, 32767, 32767, 32767, -32768, 2048, 4096, 4100]
    # NaNs: a payload in the low 10 mantissa bits stays a NaN (-32768); one only in the
    # upper bits becomes an fp16 infinity (saturates by sign)
    assert [int(v) for v in fp32_to_int16(np.array([0x7F800001, 0x7FC00000, 0xFFC00000]))] \
        == [-32768, 32767, -32768]
    assert fp16_saturated(np.array([0x7BFF, 0xFBFF, 0x7C00, 0x7BFE])).tolist() == \
        [True, True, False, False]


def test_conversion_mode_names():
    assert conversion_mode(1, 0, 0) == "16to8" and conversion_mode(0, 0, 1) == "8to16"
    assert conversion_mode(1, 0, 1) == "16to8to16" and conversion_mode(0, 0, 0) is None
    assert conversion_mode(1, 1, 2) == "int16_to_fp16"
    assert conversion_mode(2, 2, 1) == "fp16_to_int16"


# =========================================================================================
# layers: memory layout, values, counters
# =========================================================================================
def _layer(cfg, W, H, C, inp, proc, out, sdp=None, rdma=None, **kw):
    s = {"D_DATA_FORMAT": {"PROC_PRECISION": proc, "OUT_PRECISION": out},
         "D_PERF_ENABLE": {"PERF_SAT_EN": 1, "PERF_NAN_INF_COUNT_EN": 1}}
    r = {"D_FEATURE_MODE_CFG": {"IN_PRECISION": inp, "PROC_PRECISION": proc},
         "D_PERF_ENABLE": {"PERF_NAN_INF_COUNT_EN": 1}}
    for base, extra in ((s, sdp), (r, rdma)):
        for reg, fields in (extra or {}).items():
            base[reg] = {**base.get(reg, {}), **fields}
    return program(cfg, W, H, C, src=SRC, dst=DST, sdp=s, rdma=r, **kw)


def _fill(mem, rng, nbytes=1 << 14):
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    mem.write(SRC, data)
    return data


def _elem(data, addr, nbytes):
    """The little-endian signed element at ``addr`` of the source image."""
    off = addr - SRC
    v = int.from_bytes(bytes(data[off:off + nbytes]), "little")
    return v - (1 << (8 * nbytes)) if v >> (8 * nbytes - 1) else v


def _guarded_dst(mem):
    mem.write(DST - GUARD, np.full(GUARD, 0xA5, dtype=np.uint8))


def _check_written(mem, expected: dict, extent):
    """``expected`` {address: byte}: exactly these bytes inside [extent), the guard band
    before the output untouched, nothing after it."""
    lo, hi = extent
    assert lo == DST and hi == max(expected) + 1
    got = mem.read(DST - GUARD, hi - DST + 2 * GUARD)
    assert np.all(got[:GUARD] == 0xA5)
    assert np.all(got[GUARD + hi - DST:] == 0)
    for a, b in expected.items():
        assert int(got[GUARD + a - DST]) == b, hex(a)
    assert len(expected) == hi - lo        # every byte of the extent is output


@pytest.mark.parametrize("cfg, W, H, C", [(FULL, 3, 2, 10), (FULL, 2, 1, 40),
                                          (FULL, 1, 1, 20), (NV_SMALL_INT16, 3, 2, 3),
                                          (NV_SMALL_INT16, 2, 3, 13), (NV_SMALL_INT16, 1, 1, 5)],
                         ids=["full_odd", "full_even", "full_1x1", "small_odd", "small_13",
                              "small_1x1"])
def test_read_dma_16to8(cfg, W, H, C):
    """int16 input read in pairs of int16 surfaces (the second of an odd last pair too),
    processed in int8 atoms with the int16 values, saturated to int8 into an int8 surface."""
    atom = cfg.memory_atom
    g16, g8 = atom // 2, atom
    line, surf = W * atom + atom, (H * W + H + 1) * atom       # padded strides
    rng = np.random.default_rng(C)
    mem = SparseMemory()
    data = _fill(mem, rng)
    _guarded_dst(mem)
    off, scale, shift = -300, 3, 2
    rdma, sdp = _layer(cfg, W, H, C, 1, 0, 0, src_line=line, src_surf=surf,
                       sdp={"D_CVT_OFFSET": {"CVT_OFFSET": off & 0xFFFFFFFF},
                            "D_CVT_SCALE": {"CVT_SCALE": scale},
                            "D_CVT_SHIFT": {"CVT_SHIFT": shift}})
    res = run_sdp(cfg, rdma, sdp, mem)
    one = W == 1 and H == 1
    c_pad = -(-C // g8) * g8
    expected, sats = {}, 0
    for c in range(c_pad):
        for h in range(H):
            for w in range(W):
                s16 = c // g16                                     # int16 surface read
                a = SRC + (s16 * g16 * 2 if one else s16 * surf + h * line + w * atom) \
                    + (c % g16) * 2
                t, sat = ref_cvt17(_elem(data, a, 2), off, scale, shift)
                sats += sat
                v = _sat(t, 8)
                assert int(res.padded_output[c, h, w]) == v
                d = DST + (c // g8) * (g8 if one else H * W * atom) + \
                    ((0 if one else (h * W + w) * atom) + c % g8)
                expected[d] = v & 0xFF
    _check_written(mem, expected, res.dst_extent)
    assert res.out_saturation == sats and res.nan_output_num is None
    assert res.rdma_nan_input_num is None


@pytest.mark.parametrize("cfg, W, H, C, inp", [(FULL, 3, 2, 10, 0), (FULL, 1, 1, 40, 0),
                                               (NV_SMALL_INT16, 2, 2, 3, 0),
                                               (NV_SMALL_INT16, 1, 1, 9, 0),
                                               (FULL, 2, 2, 20, 1), (NV_SMALL_INT16, 3, 1, 5, 1)],
                         ids=["full", "full_1x1", "small", "small_1x1", "full_both",
                              "small_both"])
def test_write_dma_8to16(cfg, W, H, C, inp):
    """int8 processing, int16 output: each int8 atom is written as two int16 atoms in
    surfaces 2k and 2k + 1 (both of the last pair, padding included); with ``inp`` = INT16
    the read DMA's 16to8 mode runs too."""
    atom = cfg.memory_atom
    g16, g8 = atom // 2, atom
    dline, dsurf = W * atom + 2 * atom, (H * (W + 2) + 1) * atom
    rng = np.random.default_rng(C + 7)
    mem = SparseMemory()
    data = _fill(mem, rng)
    _guarded_dst(mem)
    rdma, sdp = _layer(cfg, W, H, C, inp, 0, 1, dst_line=dline, dst_surf=dsurf,
                       sdp={"D_CVT_SCALE": {"CVT_SCALE": 300}, "D_CVT_SHIFT": {"CVT_SHIFT": 1},
                            "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0,
                                            "BS_ALU_ALGO": 2},
                            "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": 5}})
    res = run_sdp(cfg, rdma, sdp, mem)
    one = W == 1 and H == 1
    c_pad = -(-C // g8) * g8
    nb = 1 + inp
    gin = atom // nb
    expected, sats = {}, 0
    for c in range(c_pad):
        for h in range(H):
            for w in range(W):
                s_in = c // gin
                a = SRC + (s_in * atom if one else s_in * H * W * atom + (h * W + w) * atom) \
                    + (c % gin) * nb
                t, sat = ref_cvt17(_elem(data, a, nb) + 5, 0, 300, 1)
                sats += sat
                v = _sat(t, 16)
                assert int(res.padded_output[c, h, w]) == v
                s_out = c // g16
                d = DST + (s_out * atom if one else s_out * dsurf + h * dline + w * atom) + \
                    (c % g16) * 2
                expected[d], expected[d + 1] = v & 0xFF, (v >> 8) & 0xFF
    if one:
        _check_written(mem, expected, res.dst_extent)
    else:       # strided: check the written atoms, and the gaps between them untouched
        got = mem.read(DST - GUARD, res.dst_extent[1] - DST + 2 * GUARD)
        assert np.all(got[:GUARD] == 0xA5) and np.all(got[-GUARD:] == 0)
        mask = np.zeros(got.size, dtype=bool)
        for a, b in expected.items():
            assert int(got[GUARD + a - DST]) == b, hex(a)
            mask[GUARD + a - DST] = True
        assert np.all(got[GUARD:-GUARD][~mask[GUARD:-GUARD]] == 0)
        assert res.dst_extent[1] == max(expected) + 1
    assert res.out_saturation == sats


def test_int16_to_fp16_values_and_counters():
    cfg = FULL
    W, H, C = 2, 1, 16
    vals = [0, 1, -1, 2049, 2051, 65504, 65519, 65520, 100000, -100000, 3, 4097, -4099,
            12345, -65504, 7]
    x = np.array(vals * 2, dtype=np.int64).reshape(2, 16).T.reshape(16, 1, 2)
    mem = SparseMemory()
    mem.write(SRC, x.transpose(1, 2, 0).reshape(-1).astype("<i2").view(np.uint8))
    # (int16 memory holds 16-bit values: large ones come from the BS multiplier)
    rdma, sdp = _layer(cfg, W, H, C, 1, 1, 2)
    res = run_sdp(cfg, rdma, sdp, mem)
    src16 = [_sat(v, 16) if -32768 <= v <= 32767 else (v + 32768) % 65536 - 32768
             for v in vals]
    want = [ref_int_to_fp16(v) for v in src16]
    assert [int(v) for v in res.output[:, 0, 0]] == want
    assert res.out_saturation == 0 and res.nan_output_num == 0
    assert (res.nan_input_num, res.inf_input_num) == (0, 0)
    assert res.rdma_nan_input_num is None
    got = mem.read(DST, 64).view("<u2")
    assert list(got[:16]) == want
    # with the 17-bit converter in play: offsets / scales / ties, saturation at 65504
    rdma, sdp = _layer(cfg, W, H, C, 1, 1, 2,
                       sdp={"D_CVT_OFFSET": {"CVT_OFFSET": (-7) & 0xFFFFFFFF},
                            "D_CVT_SCALE": {"CVT_SCALE": 5}, "D_CVT_SHIFT": {"CVT_SHIFT": 1}})
    res = run_sdp(cfg, rdma, sdp, mem)
    want = [ref_int_to_fp16(ref_cvt17(v, -7, 5, 1)[0]) for v in src16]
    assert [int(v) for v in res.output[:, 0, 0]] == want
    assert res.out_saturation == sum((w & 0x7FFF) == 0x7BFF for w in want) * 2
    assert 0x7C00 not in want and 0xFBFF in want


def test_fp16_to_int16_values_and_counters():
    cfg = FULL
    codes = [0x3800, 0xB800, 0x3E00, 0x4100, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01,
             0x0001, 0x8000, 0x77FF, 0x7800, 0x4B00, 0x3555]
    mem = SparseMemory()
    mem.write(SRC, np.array(codes, dtype="<u2").view(np.uint8))
    rdma, sdp = _layer(cfg, 1, 1, 16, 2, 2, 1,
                       sdp={"D_CVT_OFFSET": {"CVT_OFFSET": 1000}, "D_CVT_SCALE":
                            {"CVT_SCALE": 7}, "D_CVT_SHIFT": {"CVT_SHIFT": 3}})
    res = run_sdp(cfg, rdma, sdp, mem)
    # infinities are widened to the largest fp32 value, then 65504 as fp16
    want = [ref_fp16_to_int16(c if (c & 0x7FFF) != 0x7C00 else c - 1) for c in codes]
    assert [int(v) for v in res.output[:, 0, 0]] == want      # CVT_* take no part
    assert want[:4] == [1, -1, 2, 3] and want[8:10] == [-32768, -32768]
    assert res.out_saturation == 0 and res.nan_output_num == 0
    assert (res.rdma_nan_input_num, res.rdma_inf_input_num) == (2, 2)
    assert list(mem.read(DST, 32).view("<i2")) == want
    # NAN_TO_ZERO turns input NaNs into +0
    rdma, sdp = _layer(cfg, 1, 1, 16, 2, 2, 1, sdp={"D_FEATURE_MODE_CFG": {"NAN_TO_ZERO": 1}})
    assert [int(v) for v in run_sdp(cfg, rdma, sdp, mem).output[8:10, 0, 0]] == [0, 0]


@pytest.mark.parametrize("proc, out", [(1, 2), (2, 1)], ids=["int16_to_fp16", "fp16_to_int16"])
def test_flying_int16_fp16(proc, out):
    cfg = FULL
    rng = np.random.default_rng(proc)
    W, H, C = 2, 2, 20
    if proc == 1:
        x = rng.integers(-(1 << 31), 1 << 31, (C, H, W))
        x[0, 0, 0], x[1, 0, 0] = 65520, -65504
        want = int17_to_fp16(np.clip(x, -65536, 65535))
    else:
        x = fp32_from_float(rng.standard_normal((C, H, W)) * 3e4)
        want = np.array([ref_fp16_to_int16(int(h)) for h in fp32_to_fp16(x).ravel()]
                        ).reshape(x.shape)
    rdma, sdp = _layer(cfg, W, H, C, proc, proc, out,
                       sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1}})
    res = run_sdp(cfg, rdma, sdp, SparseMemory(), flying_input=x)
    assert np.array_equal(res.output, want)
    assert res.out_saturation == (int(fp16_saturated(want).sum()) if out == 2 else 0)


# =========================================================================================
# invalid programs
# =========================================================================================
def _reject(cfg, match, inp, proc, out, rproc=None, sdp=None, rdma=None, flying=None):
    rdma_x = {"D_FEATURE_MODE_CFG": {"PROC_PRECISION": proc if rproc is None else rproc}}
    sdp_x = {}
    if flying is not None:
        sdp_x["D_FEATURE_MODE_CFG"] = {"FLYING_MODE": 1}
        rdma_x["D_FEATURE_MODE_CFG"]["FLYING_MODE"] = 1
    for base, extra in ((sdp_x, sdp), (rdma_x, rdma)):
        for reg, fields in (extra or {}).items():
            base[reg] = {**base.get(reg, {}), **fields}
    rdma_v, sdp_v = _layer(cfg, 2, 2, 8, inp, proc, out, sdp=sdp_x, rdma=rdma_x)
    with pytest.raises(SdpProgramError, match=match):
        run_sdp(cfg, rdma_v, sdp_v, SparseMemory(), flying_input=flying)


def test_invalid_conversions_name_their_field():
    cube16 = np.zeros((8, 2, 2), dtype=np.int64)
    _reject(FULL, r"SDP\.D_DATA_FORMAT\.OUT_PRECISION=FP16: an int8 pipeline cannot", 0, 0, 2)
    _reject(FULL, r"SDP\.D_DATA_FORMAT\.OUT_PRECISION=INT8: an fp16 pipeline cannot", 2, 2, 0)
    _reject(FULL, r"SDP\.D_DATA_FORMAT\.OUT_PRECISION=INT8: the output converter does not "
            r"narrow int16", 1, 1, 0)
    for inp, proc in ((0, 1), (2, 0), (1, 2), (2, 1), (0, 2)):
        _reject(FULL, r"SDP_RDMA\.D_FEATURE_MODE_CFG\.IN_PRECISION=\w+: offline input must "
                r"have the processing precision .*16to8", inp, proc, proc)
    _reject(FULL, r"SDP_RDMA\.D_FEATURE_MODE_CFG\.PROC_PRECISION=INT16: must equal "
            r"SDP\.D_DATA_FORMAT\.PROC_PRECISION=INT8", 1, 0, 0, rproc=1)
    _reject(FULL, r"OUT_PRECISION=INT16: a flying layer converts only between precisions of "
            r"the same bit depth", 0, 0, 1, flying=cube16)
    _reject(FULL, r"OUT_PRECISION=INT16: Winograd output converts no precision", 2, 2, 1,
            sdp={"D_FEATURE_MODE_CFG": {"WINOGRAD": 1}, "D_DATA_CUBE_WIDTH": {"WIDTH": 3},
                 "D_DATA_CUBE_HEIGHT": {"HEIGHT": 3}}, flying=cube16)
    # builds without both precisions keep the data-type rule
    _reject(SMALL, r"IN_PRECISION=INT16: this build only supports \['int8'\]", 1, 0, 0)
    _reject(SMALL, r"OUT_PRECISION=INT16: this build only supports", 0, 0, 1)
    _reject(NV_SMALL_INT16, r"OUT_PRECISION=FP16: this build only supports", 1, 1, 2)


# =========================================================================================
# random programs with conversions
# =========================================================================================
def test_random_programs_draw_conversions_only_when_asked():
    rng = np.random.default_rng(5)
    modes = set()
    for _ in range(80):
        p = random_program(FULL, rng, 600, convert=True)
        modes.add(p["convert"])
    assert {"16to8", "8to16", "16to8to16", "int16_to_fp16", "fp16_to_int16", None} <= modes
    rng = np.random.default_rng(5)
    assert all(random_program(NV_SMALL_INT16, rng, 600)["convert"] is None for _ in range(30))


@pytest.mark.parametrize("cfg, n", [(NV_SMALL_INT16, 10), (FULL, 8)],
                         ids=["nv_small_int16", "nv_full"])
def test_random_conversion_traces_pass_with_their_golden_crcs(cfg, n, tmp_path):
    paths = write_random_traces(cfg, str(tmp_path), n, seed=21, convert=True)
    assert len(paths) == n
    for path in paths:
        res = run_trace_golden(path, cfg)
        assert res.passed and res.checks, (path, res.message)


# =========================================================================================
# NVDLA's output converter Verilog (slow)
# =========================================================================================
@pytest.mark.slow
def test_output_converter_against_nvdla_verilog():
    from sim.nvfloat import fp16_to_fp32

    from .test_sdp_fp16_nvdla_rtl import GIT, HlsBench, _check, fp32_data, pack, unpack
    if not GIT or not shutil.which("iverilog"):
        pytest.skip("needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")
    bench = HlsBench("NV_NVDLA_SDP_CORE_c", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_c.v",
                     {"chn_in": 512}, ("chn_out", 272),
                     {"cfg_offset_rsc_z": 32, "cfg_scale_rsc_z": 16, "cfg_truncate_rsc_z": 6,
                      "cfg_proc_precision_rsc_z": 2, "cfg_out_precision_rsc_z": 2,
                      "cfg_mode_eql_rsc_z": 1})
    rng = np.random.default_rng(31)
    mismatches = flagged = quiet_edges = 0
    try:
        for proc, out in ((0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (2, 1), (2, 2)):
            runs = []
            if proc == 2:
                # (fp16 -> int16) every fp16 code widened and values around x.5; random
                # fp32 codes (with specials)
                if out == 1:
                    halves = fp32_from_float(np.concatenate([
                        np.arange(-2100, 2100, 0.5), np.arange(32760, 32780, 0.25)]))
                    runs.append((np.concatenate([fp16_to_fp32(np.arange(65536)), halves]),
                                 0, 1, 0))
                runs.append((fp32_data(rng, (16 * 256,)), 0, 1, 0))
            else:
                # straight through: the 17-bit limits, the int8 / int16 limits (every value
                # near them; for fp16 output the upper binades and the exact range)
                edges = [np.arange(-65600, -65400), np.arange(65400, 65600),
                         np.arange(-33000, -32500), np.arange(32500, 33000),
                         np.arange(-300, 300)]
                if out == 2:
                    edges += [np.arange(-65400, -60000, 3), np.arange(60000, 65400, 3),
                              np.arange(-4200, 4200)]
                runs.append((np.concatenate(edges), 0, 1, 0))
                # the flag's boundary under rounding: floors 65535 / 65536 / 65537 and
                # -65536 / -65537 / -65538 with every remainder of a shift by 1 and by 3
                for sh in (1, 3):
                    runs.append((np.concatenate([np.arange(65534 << sh, 65539 << sh),
                                                 np.arange(-65539 << sh, -65534 << sh)]),
                                 0, 1, sh))
                for _ in range(4):
                    x = rng.integers(-(1 << 31), 1 << 31, 16 * 128)
                    x[::3] = rng.integers(-3000, 3000, x[::3].size)
                    tame = rng.random() < 0.5
                    runs.append((x, int(rng.integers(-50, 50)) if tame else
                                 int(rng.integers(-(1 << 31), 1 << 31)),
                                 int(rng.integers(-40, 40)) if tame else
                                 int(rng.integers(-(1 << 15), 1 << 15)),
                                 int(rng.integers(0, 20)) if tame else int(rng.integers(64))))
            for data, off, scale, shift in runs:
                data = np.asarray(data, dtype=np.int64)
                data = np.concatenate([data, np.zeros(-len(data) % 16, dtype=np.int64)])
                lanes = data.reshape(-1, 16)
                cfg = {"cfg_offset_rsc_z": off & 0xFFFFFFFF, "cfg_scale_rsc_z": scale & 0xFFFF,
                       "cfg_truncate_rsc_z": shift, "cfg_proc_precision_rsc_z": proc,
                       "cfg_out_precision_rsc_z": out, "cfg_mode_eql_rsc_z": 0}
                beats = bench.run({"chn_in": pack(lanes, 32)}, cfg, len(lanes))
                got = unpack([b & ((1 << 256) - 1) for b in beats], 16, 16)
                got_sat = unpack([b >> 256 for b in beats], 16, 1)
                if proc == 2:
                    want = fp32_to_fp16(lanes) if out == 2 else fp32_to_int16(lanes)
                    want_sat = np.zeros(lanes.shape, dtype=np.int64)
                else:
                    x = np.where(lanes >= 1 << 31, lanes - (1 << 32), lanes)
                    t, sat = output_convert(x, off, scale, shift, 17)
                    want = int17_to_fp16(t) if out == 2 else \
                        np.clip(t, *((-128, 127) if out == 0 else (-32768, 32767)))
                    want_sat = sat.astype(np.int64)
                    # (the rule: the truncated value more than 1 from the 17-bit result)
                    floor = ((x - off) * scale) >> min(shift, 63)
                    flagged += int(want_sat.sum())
                    quiet_edges += int(np.sum(np.isin(floor, (65536, -65537))))
                want = want & 0xFFFF
                mismatches += int((got != want).sum() + (got_sat != want_sat).sum())
                _check(got, want, f"proc={proc} out={out} off={off} scale={scale} "
                       f"shift={shift}")
                _check(got_sat, want_sat, f"saturation flags proc={proc} out={out}")
        # EQL mode: the data passes through, the 17-bit flags are still raised (and counted:
        # run_sdp counts them on integer layers); values past 0 / 1 too, flags only
        for proc, out in ((0, 0), (1, 1)):
            for off, scale, shift in ((-(1 << 20), 1, 0), (65538, 1, 0), (65537, 3, 1),
                                      (-65536, 1, 0), (7, -300, 2)):
                x = np.concatenate([np.arange(-40, 40), np.arange(-65600, -65500),
                                    np.arange(65500, 65600), [0, 1] * 10])
                x = np.concatenate([x, np.zeros(-len(x) % 16, dtype=np.int64)])
                lanes = x.reshape(-1, 16)
                cfg = {"cfg_offset_rsc_z": off & 0xFFFFFFFF, "cfg_scale_rsc_z": scale & 0xFFFF,
                       "cfg_truncate_rsc_z": shift, "cfg_proc_precision_rsc_z": proc,
                       "cfg_out_precision_rsc_z": out, "cfg_mode_eql_rsc_z": 1}
                beats = bench.run({"chn_in": pack(lanes & 0xFFFFFFFF, 32)}, cfg, len(lanes))
                got_sat = unpack([b >> 256 for b in beats], 16, 1)
                want_sat = output_convert(lanes, off, scale, shift, 17)[1].astype(np.int64)
                flagged += int(want_sat.sum())
                mismatches += int((got_sat != want_sat).sum())
                _check(got_sat, want_sat, f"EQL saturation flags proc={proc} off={off}")
    finally:
        bench.close()
    print(f"NV_NVDLA_SDP_CORE_c: {mismatches} mismatches; {flagged} saturation flags, "
          f"{quiet_edges} values at the flag's boundary (saturated, not flagged)")
    assert mismatches == 0 and flagged and quiet_edges
