"""Golden SDP model: hand-computed cases for every stage, rounding/saturation edge, LUT index
mode and program error (sim/sdp/sdp.py, sim/sdp/lut.py)."""

import numpy as np
import pytest

from arch.config import PRESETS
from arch.registers import register_map
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.sdp import (
    LutParams, SdpProgramError, XStage, YStage, lut_index_exponent, lut_index_linear,
    lut_lookup, output_convert, round_shift_right, run_sdp, saturate, shift_left_saturate,
    shift_signed_saturate, sign_extend, x_stage, y_operand_convert, y_stage)
from sim.sdp.lut import LE_DEPTH, LO_DEPTH, SdpLut

SMALL = PRESETS["nv_small"]
SMALL_EW = SMALL.replace(sdp_ew=True, sdp_ew_throughput=1, sdp_lut=True)
FULL = PRESETS["nv_full"]
I32_MAX, I32_MIN = 2**31 - 1, -2**31


# =========================================================================================
# Integer helpers
# =========================================================================================
@pytest.mark.parametrize("x, s, want", [
    (5, 1, 3), (-5, 1, -3),            # ties go away from zero
    (6, 2, 2), (-6, 2, -2),            # 1.5 -> 2, -1.5 -> -2
    (7, 2, 2), (-7, 2, -2),            # 1.75 -> 2
    (9, 2, 2), (-9, 2, -2),            # 2.25 -> 2
    (-1, 1, -1), (1, 1, 1),            # +-0.5
    (12345, 0, 12345),
])
def test_round_shift_right_rounds_half_away_from_zero(x, s, want):
    v, sat = round_shift_right(x, s, 32)
    assert int(v) == want and not sat


def test_round_shift_right_saturation_flag_and_width():
    # 17-bit output: 0x1FFFF / 2 = 65535.5 rounds to 65536 -> saturates to 65535, but the
    # flag (NVDLA's: the floor more than 1 from the result) stays low; so at floors of
    # 65536 and -65537; beyond them it is raised.
    assert [int(a) for a in round_shift_right(0x1FFFF, 1, 17)] == [65535, False]
    assert [int(a) for a in round_shift_right(0x20001, 1, 17)] == [65535, False]
    assert [int(a) for a in round_shift_right(0x20004, 1, 17)] == [65535, True]
    assert [int(a) for a in round_shift_right(-131072, 1, 17)] == [-65536, False]
    assert [int(a) for a in round_shift_right(-131074, 1, 17)] == [-65536, False]
    assert [int(a) for a in round_shift_right(-131075, 1, 17)] == [-65536, True]
    # Floor below the range (-32769) but rounding up into it: value min, not flagged.
    assert [int(a) for a in round_shift_right(-131073, 2, 16)] == [-32768, False]
    assert [int(a) for a in round_shift_right(-131077, 2, 16)] == [-32768, True]
    # A shift of the full operand width or more gives 0, not saturated.
    assert [int(a) for a in round_shift_right(-(2**40), 49, 32, in_bits=49)] == [0, False]
    assert int(round_shift_right(2**47, 48, 32, in_bits=49)[0]) == 1
    # Products up to 2^62 with a 63-bit shift do not overflow.
    assert int(round_shift_right(2**62, 63, 32)[0]) == 1
    assert int(round_shift_right(-(2**62), 63, 32)[0]) == -1   # -0.5 -> -1


def test_shift_left_saturate():
    assert int(shift_left_saturate(3, 4, 32)) == 48
    assert int(shift_left_saturate(0x7FFF, 16, 32)) == 0x7FFF0000
    assert int(shift_left_saturate(0x7FFF, 17, 32)) == I32_MAX
    assert int(shift_left_saturate(-1, 31, 32)) == I32_MIN
    assert int(shift_left_saturate(-2, 31, 32)) == I32_MIN
    assert int(shift_left_saturate(1, 63, 32)) == I32_MAX
    assert int(shift_left_saturate(0, 63, 32)) == 0


def test_shift_signed_saturate():
    assert [int(a) for a in shift_signed_saturate(100, -3, 32)] == [800, False]
    assert [int(a) for a in shift_signed_saturate(2**30, -1, 32)] == [I32_MAX, True]
    assert [int(a) for a in shift_signed_saturate(-(2**30), -1, 32)] == [I32_MIN, False]
    assert [int(a) for a in shift_signed_saturate(-(2**30) - 1, -1, 32)] == [I32_MIN, True]
    assert [int(a) for a in shift_signed_saturate(5, 1, 32)] == [3, False]
    assert [int(a) for a in shift_signed_saturate(-(2**49), -16, 32)] == [I32_MIN, True]


def test_sign_extend_and_saturate():
    assert sign_extend(0xFF, 8) == -1 and sign_extend(0x7F, 8) == 127
    assert sign_extend(0xC600, 16) == -14848
    assert list(saturate([300, -300, 5], 8)) == [127, -128, 5]


# =========================================================================================
# X stage (BS / BN)
# =========================================================================================
def test_x_alu_ops_with_operand_shift():
    d = np.array([-5, 7, 10])
    assert list(x_stage(d, 2, 0, XStage(alu_bypass=False, alu_algo=0))) == [2, 7, 10]   # MAX
    assert list(x_stage(d, 2, 0, XStage(alu_bypass=False, alu_algo=1))) == [-5, 2, 2]   # MIN
    # SUM with the operand shifted left by 2: 3 << 2 = 12.
    assert list(x_stage(d, 3, 0, XStage(alu_bypass=False, alu_algo=2, alu_shift=2))) == \
        [7, 19, 22]


def test_x_alu_sum_keeps_33_bits_until_the_truncation():
    # (2^31 - 1) + saturate32(0x7FFF << 31) = 2^32 - 2; MUL bypassed, shift 1 -> 2^31 - 1.
    st = XStage(alu_bypass=False, alu_algo=2, alu_shift=31, mul_shift=1)
    assert int(x_stage(I32_MAX, 0x7FFF, 0, st)) == I32_MAX
    # Without the shift it saturates at the 32-bit truncation.
    st = XStage(alu_bypass=False, alu_algo=2, alu_shift=31)
    assert int(x_stage(I32_MAX, 0x7FFF, 0, st)) == I32_MAX
    assert int(x_stage(I32_MIN, -0x8000, 0, XStage(alu_bypass=False, alu_algo=2,
                                                   alu_shift=31))) == I32_MIN


def test_x_mul_rounds_and_bypassed_mul_still_shifts():
    st = XStage(mul_bypass=False, mul_shift=1)
    assert list(x_stage(np.array([10, 5, -5]), 0, np.array([-3, 3, 3]), st)) == [-15, 8, -8]
    # The MUL_SHIFT truncation applies even with the multiplier bypassed.
    assert list(x_stage(np.array([7, -7]), 0, 0, XStage(mul_bypass=True, mul_shift=1))) == \
        [4, -4]
    # 16-bit operand extremes: -32768 * -32768 = 2^30.
    assert int(x_stage(-32768, 0, -32768, XStage(mul_bypass=False))) == 2**30
    assert int(x_stage(I32_MAX, 0, 2, XStage(mul_bypass=False))) == I32_MAX      # saturates


def test_x_prelu_passes_positive_values_unshifted():
    st = XStage(mul_bypass=False, mul_prelu=True, mul_shift=1)
    assert list(x_stage(np.array([-4, 6, 0]), 0, 3, st)) == [-6, 6, 0]
    # A positive 33-bit ALU sum goes through PReLU truncated to 32 bits (wraps).
    st = XStage(alu_bypass=False, alu_algo=2, mul_bypass=False, mul_prelu=True)
    assert int(x_stage(I32_MAX, 1, 5, st)) == I32_MIN
    # ... whereas the multiplier path saturates it.
    st = XStage(alu_bypass=False, alu_algo=2, mul_bypass=False)
    assert int(x_stage(I32_MAX, 1, 1, st)) == I32_MAX


def test_x_relu():
    assert list(x_stage(np.array([-3, 4, 0]), 0, 0, XStage(relu_bypass=False))) == [0, 4, 0]


# =========================================================================================
# Y stage (EW)
# =========================================================================================
def test_y_mul_then_alu():
    st = YStage(mul_bypass=False, truncate=1, alu_bypass=False, alu_algo=2)
    # (3 * 5) / 2 = 7.5 -> 8, then + 100.
    assert int(y_stage(3, 100, 5, st)) == 108
    st = YStage(mul_bypass=False, truncate=0)
    assert int(y_stage(65536, 0, 65536, st)) == I32_MAX              # 2^32 saturates
    assert int(y_stage(-(2**31), 0, -(2**31), YStage(mul_bypass=False, truncate=62))) == 1
    assert int(y_stage(5, 0, 7, YStage(mul_bypass=False, truncate=64))) == 0    # >= 64 bits


def test_y_alu_ops_saturate_and_eql():
    d = np.array([3, 4, -2])
    assert list(y_stage(d, 3, 0, YStage(alu_bypass=False, alu_algo=3))) == [0, 1, 1]   # EQL
    assert list(y_stage(d, 3, 0, YStage(alu_bypass=False, alu_algo=0))) == [3, 4, 3]
    assert list(y_stage(d, 3, 0, YStage(alu_bypass=False, alu_algo=1))) == [3, 3, -2]
    assert int(y_stage(I32_MAX, 1, 0, YStage(alu_bypass=False, alu_algo=2))) == I32_MAX
    assert int(y_stage(I32_MIN, -1, 0, YStage(alu_bypass=False, alu_algo=2))) == I32_MIN


def test_y_prelu():
    st = YStage(mul_bypass=False, mul_prelu=True, truncate=2)
    assert list(y_stage(np.array([-8, 8]), 0, 3, st)) == [-6, 8]


def test_y_operand_converter():
    # (10 - 4) * 3 >> 1 = 9
    assert int(y_operand_convert(10, 4, 3, 1, bypass=False)) == 9
    assert int(y_operand_convert(-1, 0, 1, 1, bypass=False)) == -1      # -0.5 -> -1
    assert int(y_operand_convert(-7, 123, 99, 5, bypass=True)) == -7
    # 33-bit subtraction, 49-bit product, saturated to 32 bits.
    assert int(y_operand_convert(-32768, I32_MAX, 32767, 0, bypass=False)) == I32_MIN


# =========================================================================================
# C (output converter)
# =========================================================================================
def test_output_converter_int8_and_17bit_saturation():
    v, sat = output_convert(np.array([300, 70000, -70000, -5]), 0, 1, 0, 8)
    assert list(v) == [127, 127, -128, -5]
    assert list(sat) == [False, True, True, False]      # only the 17-bit stage counts
    v, sat = output_convert(-5, -10, 3, 1, 8)           # (5 * 3) / 2 = 7.5 -> 8
    assert int(v) == 8 and not sat
    v, _ = output_convert(np.array([40000, -40000]), 0, 1, 0, 16)
    assert list(v) == [32767, -32768]
    v, sat = output_convert(1000, 0, 1, 63, 8)          # shift >= 49 bits -> 0
    assert int(v) == 0 and not sat


# =========================================================================================
# LUT RAM access
# =========================================================================================
def test_lut_ram_write_read_autoincrement():
    lut = SdpLut()
    lut.csb_write("S_LUT_ACCESS_CFG_0", (1 << 17) | 63)            # WRITE, LE, addr 63
    for v in (0x1234, 0xFFFF, 0x7777):                             # 63, 64, 65 (past end)
        lut.csb_write("S_LUT_ACCESS_DATA", v)
    assert lut.le[63] == 0x1234 and lut.le[64] == -1
    assert lut.addr == 66
    lut.write_access_cfg((1 << 17) | (1 << 16) | 256)              # WRITE, LO, addr 256
    lut.write_access_data(0x8000)
    assert lut.lo[256] == -32768
    lut.write_access_cfg(63)                                       # READ, LE, addr 63
    assert lut.read_access_cfg() == 63
    assert [lut.csb_read("S_LUT_ACCESS_DATA") for _ in range(3)] == [0x1234, 0xFFFF, 0]
    # A data write in READ mode only moves the pointer.
    lut.write_access_cfg(0)
    lut.write_access_data(0x5555)
    assert lut.le[0] == 0 and lut.addr == 1
    assert lut.csb_write("S_LUT_CFG", 1) is False
    assert (LE_DEPTH, LO_DEPTH) == (65, 257)


# =========================================================================================
# LUT lookup
# =========================================================================================
def test_lut_index_linear():
    # select 2: x - start = 5 -> index 1, fraction 1/4 (of 2^35).
    idx, frac, u, o = lut_index_linear(np.array([5, 0, -3]), 0, 2, LO_DEPTH)
    assert list(idx) == [1, 0, 0] and int(frac[0]) == 1 << 33
    assert list(u) == [False, True, True] and not o.any()
    # Overflow at depth - 1 and beyond.
    idx, _, _, o = lut_index_linear(np.array([256, 255, 10**6]), 0, 0, LO_DEPTH)
    assert list(idx) == [256, 255, 256] and list(o) == [True, False, True]
    # Negative select shifts left; it saturates once bit 8 is reached.
    idx, frac, _, o = lut_index_linear(np.array([3, 63, 64]), 0, -2, LO_DEPTH)
    assert list(idx) == [12, 252, 256] and list(o) == [False, False, True] and not frac.any()
    # Select above 35: the fraction is the difference scaled by 2^(35 - select), truncated.
    idx, frac, _, _ = lut_index_linear(np.array([0x40000003]), 0, 36, LO_DEPTH)
    assert int(idx[0]) == 0 and int(frac[0]) == 0x20000001


def test_lut_index_exponent():
    # x - start = 12 = 0b1100: log2 3, fraction 0b100 / 8 = 1/2.
    idx, frac, u, o = lut_index_exponent(np.array([12, 13, 1, 0]), 0, 0, LE_DEPTH)
    assert list(idx[:3]) == [3, 3, 0] and int(frac[0]) == 1 << 34 and int(frac[1]) == 5 << 32
    assert list(u) == [False, False, False, True] and not o.any()
    # Offset 2: log2 below 2 underflows; a negative offset moves the table down.
    idx, _, u, _ = lut_index_exponent(np.array([12, 3]), 0, 2, LE_DEPTH)
    assert list(idx) == [1, 0] and list(u) == [False, True]
    idx, _, u, o = lut_index_exponent(np.array([1]), 0, -64, LE_DEPTH)
    assert int(idx[0]) == 64 and o[0] and not u[0]
    # Differences of 2^31 and more: the hardware's leading-sign log2 gives 31 - leading ones.
    idx, _, u, o = lut_index_exponent(np.array([2**31 - 1, 2**31 - 1]),
                                      np.array([-1, -(2**30) - 1]), 0, LE_DEPTH)
    assert list(idx) == [30, 29] and not u.any() and not o.any()


def _lut_with(le=None, lo=None):
    lut = SdpLut()
    lut.load(le=le, lo=lo)
    return lut


def test_lut_lookup_interpolates_in_the_hit_table():
    lut = _lut_with(lo=[0, 100, 200, 0, 1, -1])
    # LE (exponent) underflows everywhere (start huge); LO hits: x=5 -> 100 + 1/4 * 100.
    p = LutParams(le_start=10**9, lo_start=0, lo_index_select=2)
    r = lut_lookup(lut, np.array([5, 6, 7]), p)
    assert list(r.value) == [125, 150, 175]
    assert (r.uflow, r.oflow, r.hybrid, r.le_hit, r.lo_hit) == (0, 0, 3, 0, 3)
    # Rounding of the interpolation: halfway between 0 and 1 -> 1, between 0 and -1 -> -1.
    p = LutParams(le_start=10**9, lo_start=0, lo_index_select=1)
    lut2 = _lut_with(lo=[0, 1, 0, -1])
    assert list(lut_lookup(lut2, np.array([1, 5]), p).value) == [1, -1]


def test_lut_lookup_exponent_table():
    le = list(range(0, 650, 10))                  # le[i] = 10 i
    lut = _lut_with(le=le)
    p = LutParams(le_linear=False, le_start=0, le_index_offset=0, lo_start=10**9)
    # x = 12: index 3, fraction 1/2 -> 35;  x = 8: index 3 exactly -> 30.
    r = lut_lookup(lut, np.array([12, 8]), p)
    assert list(r.value) == [35, 30] and r.le_hit == 2 and r.lo_hit == 0


def test_lut_lookup_underflow_priority_and_slopes():
    lut = _lut_with(le=[50], lo=[-70])
    base = dict(le_start=10, lo_start=20, le_index_offset=0,
                le_uflow_scale=2, le_uflow_shift=1, lo_uflow_scale=1, lo_uflow_shift=-2)
    # Both underflow, priority LE, exponent mode: bias 2^0 = 1 -> 50 + (4 - 11) * 2 / 2 = 43.
    r = lut_lookup(lut, np.array([4]), LutParams(**base))
    assert int(r.value[0]) == 43 and (r.uflow, r.hybrid, r.le_hit, r.lo_hit) == (1, 0, 0, 0)
    # Linear LE has no bias: 50 + (4 - 10) = 44.
    assert int(lut_lookup(lut, np.array([4]), LutParams(**base, le_linear=True)).value[0]) == 44
    # Priority LO: -70 + (4 - 20) << 2 = -134.
    r = lut_lookup(lut, np.array([4]), LutParams(**base, uflow_priority_lo=True))
    assert int(r.value[0]) == -134


def test_lut_lookup_overflow_and_hybrid():
    lo = [0] * 257
    lo[256] = 1000
    le = [0] * 65
    le[64] = -5
    lut = _lut_with(le=le, lo=lo)
    p = LutParams(le_linear=True, le_start=0, le_index_select=0, le_end=64,
                  lo_start=0, lo_index_select=0, lo_end=256,
                  le_oflow_scale=1, le_oflow_shift=0, lo_oflow_scale=3, lo_oflow_shift=-1)
    # x = 300 overflows both; priority LE: -5 + 236 = 231; priority LO: 1000 + 44*3*2 = 1264.
    assert int(lut_lookup(lut, np.array([300]), p).value[0]) == 231
    r = lut_lookup(lut, np.array([300]),
                   LutParams(**{**p.__dict__, "oflow_priority_lo": True}))
    assert int(r.value[0]) == 1264 and (r.oflow, r.uflow, r.hybrid) == (1, 0, 0)
    # x = 100: LE overflows, LO hits -> LO wins regardless of priorities.
    r = lut_lookup(lut, np.array([100]), p)
    assert int(r.value[0]) == 0 and (r.le_hit, r.lo_hit, r.hybrid, r.oflow) == (0, 1, 1, 0)
    # x = 10: both hit -> hybrid priority picks; the counters count both hits.
    le[10], lo[10] = 11, 22
    lut = _lut_with(le=le, lo=lo)
    r = lut_lookup(lut, np.array([10]), p)
    assert int(r.value[0]) == 11 and (r.le_hit, r.lo_hit, r.hybrid) == (1, 1, 1)
    r = lut_lookup(lut, np.array([10]), LutParams(**{**p.__dict__, "hybrid_priority_lo": True}))
    assert int(r.value[0]) == 22
    # Both miss in different directions (LE under, LO over): hybrid priority, flags of the
    # chosen table.
    p2 = LutParams(**{**p.__dict__, "le_start": 500, "le_uflow_scale": 0})
    r = lut_lookup(lut, np.array([300]), p2)
    assert (r.uflow, r.oflow, r.hybrid) == (1, 0, 0) and int(r.value[0]) == 0
    r = lut_lookup(lut, np.array([300]), LutParams(**{**p2.__dict__, "hybrid_priority_lo": True}))
    assert (r.uflow, r.oflow) == (0, 1) and int(r.value[0]) == 1264


# =========================================================================================
# run_sdp end to end
# =========================================================================================
def _addr_field(block, reg, fld, byte_value):
    return byte_value >> block[reg][fld].lsb


def program(cfg, W, H, C, src=0x8000_1000, dst=0x9000_0000, sdp=None, rdma=None,
            src_line=None, src_surf=None, dst_line=None, dst_surf=None):
    """GroupViews for an offline int8 layer with every stage bypassed, overridden by
    ``sdp`` / ``rdma`` {register: {field: value}}."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    atom = cfg.memory_atom
    src_line = src_line or W * atom
    src_surf = src_surf or H * src_line
    dst_line = dst_line or W * atom
    dst_surf = dst_surf or H * dst_line
    cube = {"D_DATA_CUBE_WIDTH": {"WIDTH": W - 1}, "D_DATA_CUBE_HEIGHT": {"HEIGHT": H - 1},
            "D_DATA_CUBE_CHANNEL": {"CHANNEL": C - 1}}
    s = {**cube,
         "D_DST_BASE_ADDR_LOW": {"DST_BASE_ADDR_LOW": _addr_field(sb, "D_DST_BASE_ADDR_LOW",
                                                                  "DST_BASE_ADDR_LOW", dst)},
         "D_DST_LINE_STRIDE": {"DST_LINE_STRIDE": _addr_field(sb, "D_DST_LINE_STRIDE",
                                                              "DST_LINE_STRIDE", dst_line)},
         "D_DST_SURFACE_STRIDE": {"DST_SURFACE_STRIDE": _addr_field(
             sb, "D_DST_SURFACE_STRIDE", "DST_SURFACE_STRIDE", dst_surf)},
         "D_DST_DMA_CFG": {"DST_RAM_TYPE": 1},
         "D_DP_BS_CFG": {"BS_BYPASS": 1, "BS_ALU_BYPASS": 1, "BS_MUL_BYPASS": 1,
                         "BS_MUL_PRELU": 0, "BS_RELU_BYPASS": 1},
         "D_DP_BN_CFG": {"BN_BYPASS": 1, "BN_ALU_BYPASS": 1, "BN_MUL_BYPASS": 1,
                         "BN_MUL_PRELU": 0, "BN_RELU_BYPASS": 1},
         "D_DP_EW_CFG": {"EW_BYPASS": 1, "EW_ALU_BYPASS": 1, "EW_MUL_BYPASS": 1,
                         "EW_MUL_PRELU": 0, "EW_LUT_BYPASS": 1},
         "D_DP_EW_ALU_CFG": {"EW_ALU_CVT_BYPASS": 1}, "D_DP_EW_MUL_CFG": {"EW_MUL_CVT_BYPASS": 1},
         "D_DATA_FORMAT": {"PROC_PRECISION": 0, "OUT_PRECISION": 0},
         "D_CVT_SCALE": {"CVT_SCALE": 1}}
    r = {**cube,
         "D_SRC_BASE_ADDR_LOW": {"SRC_BASE_ADDR_LOW": _addr_field(rb, "D_SRC_BASE_ADDR_LOW",
                                                                  "SRC_BASE_ADDR_LOW", src)},
         "D_SRC_LINE_STRIDE": {"SRC_LINE_STRIDE": _addr_field(rb, "D_SRC_LINE_STRIDE",
                                                              "SRC_LINE_STRIDE", src_line)},
         "D_SRC_SURFACE_STRIDE": {"SRC_SURFACE_STRIDE": _addr_field(
             rb, "D_SRC_SURFACE_STRIDE", "SRC_SURFACE_STRIDE", src_surf)},
         "D_SRC_DMA_CFG": {"SRC_RAM_TYPE": 1},
         "D_BRDMA_CFG": {"BRDMA_DISABLE": 1}, "D_NRDMA_CFG": {"NRDMA_DISABLE": 1},
         "D_ERDMA_CFG": {"ERDMA_DISABLE": 1},
         "D_FEATURE_MODE_CFG": {"IN_PRECISION": 0, "PROC_PRECISION": 0}}
    for base, extra in ((s, sdp), (r, rdma)):
        for reg, fields in (extra or {}).items():
            base[reg] = {**base.get(reg, {}), **fields}
    # SDP_RDMA's OUT_PRECISION follows SDP's unless given
    r["D_FEATURE_MODE_CFG"].setdefault("OUT_PRECISION", s["D_DATA_FORMAT"]["OUT_PRECISION"])
    return GroupView.from_fields(rb, **r), GroupView.from_fields(sb, **s)


def _write_cube(mem, base, cube, atom, line, surf, nbytes=1):
    """Write a [C, H, W] cube in the surface layout (channels padded with zeros)."""
    C, H, W = cube.shape
    group = atom // nbytes
    for c in range(C):
        for h in range(H):
            for w in range(W):
                a = base + (c // group) * surf + h * line + w * atom + (c % group) * nbytes
                mem.write(a, np.array([(int(cube[c, h, w]) >> (8 * i)) & 0xFF
                                       for i in range(nbytes)], dtype=np.uint8))


def test_passthrough_with_padding_strides_and_no_stray_writes():
    W, H, C = 3, 2, 10                                  # 2 surfaces of 8, channels 10..15 pad
    cube = (np.arange(C * H * W).reshape(C, H, W) * 7 % 256 - 128)
    mem = SparseMemory()
    src_line, src_surf = 0x40, 0x100
    _write_cube(mem, 0x8000_1000, cube, 8, src_line, src_surf)
    mem.write(0x8000_1000 + 0x100 + 2, np.array([0x85], dtype=np.uint8))    # a padding byte
    dst_line, dst_surf = 0x20, 0x80
    rdma, sdp = program(SMALL, W, H, C, src_line=src_line, src_surf=src_surf,
                        dst_line=dst_line, dst_surf=dst_surf)
    res = run_sdp(SMALL, rdma, sdp, mem)
    assert np.array_equal(res.output, cube)
    assert int(res.padded_output[10, 0, 0]) == -123           # padding is processed too
    assert res.dst_extent == (0x9000_0000, 0x9000_0000 + dst_surf + dst_line + 3 * 8)
    # Exactly the 2 x 2 lines of 24 bytes were written.
    dst = mem.read(0x9000_0000, 0x100)
    written = np.zeros(0x100, dtype=bool)
    for s in range(2):
        for h in range(2):
            written[s * dst_surf + h * dst_line: s * dst_surf + h * dst_line + 24] = True
    assert not dst[~written].any()
    assert int(dst[0x80 + 2]) == 0x85 and int(dst[0]) == int(cube[0, 0, 0]) & 0xFF


def test_one_by_one_cube_is_packed():
    mem = SparseMemory()
    mem.write(0x8000_1000, np.arange(1, 17, dtype=np.uint8))          # 16 channels, 2 atoms
    rdma, sdp = program(SMALL, 1, 1, 16, src_surf=0x100, dst_surf=0x100, sdp={
        "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": 2},
        "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": 0xFFFF}})             # -1
    res = run_sdp(SMALL, rdma, sdp, mem)
    assert list(mem.read(0x9000_0000, 16)) == list(range(0, 16))        # surfaces back to back
    assert not mem.read(0x9000_0100, 8).any()


def test_bs_bn_operands_from_memory():
    W, H, C = 2, 1, 8
    cube = np.array([[[10, -20]], [[30, 40]], [[-50, 60]], [[70, 80]],
                     [[1, 2]], [[3, 4]], [[5, 6]], [[7, 8]]])
    mem = SparseMemory()
    _write_cube(mem, 0x8000_1000, cube, 8, 16, 16)
    # BS MUL per kernel, one byte: channel c multiplies by c - 4.
    mem.write(0x8000_2000, np.array([c - 4 for c in range(8)], dtype=np.int8).view(np.uint8))
    # BN per element, both, two bytes: ALU = 100 * (w + 1), MUL = 2  (alu, mul interleaved).
    words = []
    for w in range(W):
        for c in range(C):
            words += [100 * (w + 1), 2]
    mem.write(0x8000_3000, np.array(words, dtype="<i2").view(np.uint8))
    rdma, sdp = program(SMALL, W, H, C, sdp={
        "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_MUL_BYPASS": 0},
        "D_DP_BS_MUL_CFG": {"BS_MUL_SRC": 1, "BS_MUL_SHIFT_VALUE": 0},
        "D_DP_BN_CFG": {"BN_BYPASS": 0, "BN_ALU_BYPASS": 0, "BN_ALU_ALGO": 2, "BN_MUL_BYPASS": 0},
        "D_DP_BN_ALU_CFG": {"BN_ALU_SRC": 1}, "D_DP_BN_MUL_CFG": {"BN_MUL_SRC": 1,
                                                                  "BN_MUL_SHIFT_VALUE": 2},
        "D_PERF_ENABLE": {"PERF_SAT_EN": 1}}, rdma={
        "D_BRDMA_CFG": {"BRDMA_DISABLE": 0, "BRDMA_DATA_USE": 0, "BRDMA_DATA_SIZE": 0,
                        "BRDMA_DATA_MODE": 0, "BRDMA_RAM_TYPE": 1},
        "D_BS_BASE_ADDR_LOW": {"BS_BASE_ADDR_LOW": 0x8000_2000},
        "D_NRDMA_CFG": {"NRDMA_DISABLE": 0, "NRDMA_DATA_USE": 2, "NRDMA_DATA_SIZE": 1,
                        "NRDMA_DATA_MODE": 1, "NRDMA_RAM_TYPE": 1},
        "D_BN_BASE_ADDR_LOW": {"BN_BASE_ADDR_LOW": 0x8000_3000},
        "D_BN_LINE_STRIDE": {"BN_LINE_STRIDE": 0x40}, "D_BN_SURFACE_STRIDE": {
            "BN_SURFACE_STRIDE": 0x40}})
    res = run_sdp(SMALL, rdma, sdp, mem)
    mul = (np.arange(8) - 4)[:, None, None]
    want = saturate(((cube * mul + np.array([100, 200])[None, None, :]) * 2 + 2) >> 2, 8)
    assert np.array_equal(res.output, want)
    # Channel 0, w 1: (-20 * -4 + 200) * 2 / 4 = 140 -> 127 (int8), no 17-bit saturation.
    # Channel 7, w 0: (7 * 3 + 100) * 2 / 4 = 60.5 -> 61.
    assert int(res.output[0, 0, 1]) == 127 and res.out_saturation == 0
    assert int(res.output[7, 0, 0]) == 61
    assert res.lut_uflow is None


def test_ew_and_lut_end_to_end_with_counters():
    W, H, C = 4, 1, 8
    cube = np.arange(C * W).reshape(C, H, W) - 16
    mem = SparseMemory()
    _write_cube(mem, 0x8000_1000, cube, 8, 32, 32)
    lut = SdpLut()
    lut.csb_write("S_LUT_ACCESS_CFG", (1 << 17) | (1 << 16))          # WRITE, LO, 0
    for i in range(257):
        lut.csb_write("S_LUT_ACCESS_DATA", (3 * i) & 0xFFFF)
    rdma, sdp = program(SMALL_EW, W, H, C, sdp={
        "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 2,
                        "EW_LUT_BYPASS": 0},
        "D_DP_EW_ALU_SRC_VALUE": {"EW_ALU_OPERAND": 10},
        "S_LUT_CFG": {"LUT_LE_FUNCTION": 1, "LUT_UFLOW_PRIORITY": 1},
        "S_LUT_LE_START": {"LUT_LE_START": 1000},
        "S_LUT_INFO": {"LUT_LO_INDEX_SELECT": 1},
        "S_LUT_LO_START": {"LUT_LO_START": 0},
        "S_LUT_LO_SLOPE_SCALE": {"LUT_LO_SLOPE_UFLOW_SCALE": 1},
        "D_PERF_ENABLE": {"PERF_LUT_EN": 1, "PERF_SAT_EN": 1}})
    res = run_sdp(SMALL_EW, rdma, sdp, mem, lut=lut)
    x = cube + 10                      # -6 .. 25
    # Hit (x > 0): LO index x // 2, fraction (x % 2) / 2 -> 3 * x / 2 rounded away from 0.
    # Underflow (x <= 0): lo[0] + (x - 0) * 1.
    want = np.where(x > 0, (3 * x + 1) // 2, x)
    assert np.array_equal(res.output, want)
    assert res.lut_uflow == 7 and res.lut_lo_hit == 25 and res.lut_le_hit == 0
    assert res.lut_hybrid == 25 and res.lut_oflow == 0 and res.out_saturation == 0
    regs = res.status_registers()
    assert regs["SDP"]["D_PERF_LUT_UFLOW"] == 7 and regs["SDP"]["D_STATUS"] == 1
    assert "D_PERF_LUT_UFLOW" in regs["SDP"] and regs["SDP_RDMA"] == {}


def test_ew_operand_from_memory_goes_through_the_converter():
    W, H, C = 1, 2, 8
    cube = np.full((C, H, W), 5)
    mem = SparseMemory()
    _write_cube(mem, 0x8000_1000, cube, 8, 8, 16)
    # ERDMA per element, ALU, one byte: value 4 everywhere; converter (4 - 1) * 3 >> 1 = 4.5 -> 5.
    mem.write(0x8000_4000, np.full(16, 4, dtype=np.uint8))
    rdma, sdp = program(SMALL_EW, W, H, C, sdp={
        "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 2},
        "D_DP_EW_ALU_CFG": {"EW_ALU_SRC": 1, "EW_ALU_CVT_BYPASS": 0},
        "D_DP_EW_ALU_CVT_OFFSET_VALUE": {"EW_ALU_CVT_OFFSET": 1},
        "D_DP_EW_ALU_CVT_SCALE_VALUE": {"EW_ALU_CVT_SCALE": 3},
        "D_DP_EW_ALU_CVT_TRUNCATE_VALUE": {"EW_ALU_CVT_TRUNCATE": 1}}, rdma={
        "D_ERDMA_CFG": {"ERDMA_DISABLE": 0, "ERDMA_DATA_USE": 1, "ERDMA_DATA_MODE": 1,
                        "ERDMA_RAM_TYPE": 1},
        "D_EW_BASE_ADDR_LOW": {"EW_BASE_ADDR_LOW": 0x8000_4000},
        "D_EW_LINE_STRIDE": {"EW_LINE_STRIDE": 8}, "D_EW_SURFACE_STRIDE": {
            "EW_SURFACE_STRIDE": 16}})
    res = run_sdp(SMALL_EW, rdma, sdp, mem)
    assert (res.output == 10).all()


def test_eql_mode_sets_status_and_writes_nothing():
    mem = SparseMemory()
    mem.write(0x8000_1000, np.array([7] * 8, dtype=np.uint8))
    kw = dict(sdp={"D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 3},
                   "D_DP_EW_ALU_SRC_VALUE": {"EW_ALU_OPERAND": 7}})
    res = run_sdp(SMALL_EW, *program(SMALL_EW, 1, 1, 8, **kw), mem)
    assert res.status_unequal == 0 and not res.wrote_memory
    assert mem.touched() == [0x8000_0000]
    mem.write(0x8000_1003, np.array([8], dtype=np.uint8))
    res = run_sdp(SMALL_EW, *program(SMALL_EW, 1, 1, 8, **kw), mem)
    assert res.status_unequal == 1 and list(res.output[:, 0, 0]) == [0, 0, 0, 1, 0, 0, 0, 0]


def test_eql_mode_counts_the_converters_saturation():
    """NVDLA's output converter (``NV_NVDLA_SDP_CORE_c``) flags saturations on the comparison
    result it passes through in EQL mode, and SDP counts them: (x - CVT_OFFSET) x CVT_SCALE
    >> CVT_SHIFT past 65536 / -65537 for the 0 / 1 results."""
    mem = SparseMemory()
    mem.write(0x8000_1000, np.array([7, 7, 7, 8, 7, 7, 7, 7], dtype=np.uint8))
    # (results 0 seven times, 1 once)
    for offset, scale, shift, want in ((-(1 << 20), 1, 0, 8), (65536, 1, 0, 0),
                                       (65537, 1, 0, 0), (65538, 1, 0, 7), (0, 1, 0, 0),
                                       (-65536, 1, 0, 1), (-65537, 3, 1, 8), (0, -1, 0, 0)):
        kw = dict(sdp={"D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 3},
                       "D_DP_EW_ALU_SRC_VALUE": {"EW_ALU_OPERAND": 7},
                       "D_CVT_OFFSET": {"CVT_OFFSET": offset & 0xFFFFFFFF},
                       "D_CVT_SCALE": {"CVT_SCALE": scale & 0xFFFF},
                       "D_CVT_SHIFT": {"CVT_SHIFT": shift},
                       "D_PERF_ENABLE": {"PERF_SAT_EN": 1}})
        res = run_sdp(SMALL_EW, *program(SMALL_EW, 1, 1, 8, **kw), mem)
        assert not res.wrote_memory and res.status_unequal == 1
        assert res.out_saturation == want, (offset, res.out_saturation)


def test_flying_input_to_pdp_returns_the_cube():
    cfg = SMALL
    rmap = register_map(cfg)
    flying = np.array([[[1000, -1000]], [[70000, 3]]])          # C=2, H=1, W=2
    rdma, sdp = program(cfg, 2, 1, 2, sdp={
        "D_FEATURE_MODE_CFG": {"FLYING_MODE": 1, "OUTPUT_DST": 1},
        "D_CVT_SHIFT": {"CVT_SHIFT": 3}, "D_PERF_ENABLE": {"PERF_SAT_EN": 1}})
    rdma = GroupView(rmap["SDP_RDMA"], {})                       # SDP_RDMA left at reset
    mem = SparseMemory()
    res = run_sdp(cfg, rdma, sdp, mem, flying_input=flying)
    assert res.to_pdp and not res.wrote_memory and mem.touched() == []
    assert res.output.tolist() == [[[125, -125]], [[127, 0]]]
    assert res.padded_output.shape == (8, 1, 2) and res.out_saturation == 0


def test_saturation_counter():
    mem = SparseMemory()
    mem.write(0x8000_1000, np.array([100, 156, 0, 1, 2, 3, 4, 5], dtype=np.uint8))  # 100, -100
    rdma, sdp = program(SMALL, 1, 1, 8, sdp={"D_CVT_SCALE": {"CVT_SCALE": 1000},
                                             "D_PERF_ENABLE": {"PERF_SAT_EN": 1}})
    res = run_sdp(SMALL, rdma, sdp, mem)
    # 100 * 1000 and -100 * 1000 leave the 17-bit range; 5 * 1000 stays in it (but not int8).
    assert res.out_saturation == 2
    assert list(res.output[:, 0, 0]) == [127, -128, 0, 127, 127, 127, 127, 127]


#: (CVT_OFFSET, input values, flagged inputs) around the 17-bit limits with CVT_SHIFT = 1
#: (p = x - offset, floor = p >> 1): NVDLA's Verilog flags a saturation only when the floor
#: lies beyond 65536 or -65537 (more than 1 from the saturated result).
SAT_EDGES = [
    # p = x + 131000: 70 -> floor 65535; 71 -> 65535 rounding up onto 65536; 72, 73 -> 65536
    (-131000, [70, 71, 72, 73, 74, 127, -128, 0], {74, 127}),
    # p = x - 131000: -72 -> -65536; -73, -74 -> -65537; -75 -> -65538
    (131000, [-72, -73, -74, -75, -128, 0, 127, -1], {-75, -128}),
]


def boundary_layers(cfg, out_precs=(0,)):
    """Layers (rdma, sdp, input bytes at 0x8000_1000, flagged count) of :data:`SAT_EDGES`:
    one 1 x 1 x 8 pass-through layer per entry, precision and output precision the build
    has (int16 layers read int16 elements)."""
    precs = [0] + ([1] if "int16" in cfg.data_types else [])
    layers = []
    for prec in precs:
        for out in out_precs:
            if out < prec or out not in precs:
                continue
            for offset, values, flagged in SAT_EDGES:
                rdma, sdp = program(cfg, 1, 1, 8, sdp={
                    "D_DATA_FORMAT": {"PROC_PRECISION": prec, "OUT_PRECISION": out},
                    "D_CVT_OFFSET": {"CVT_OFFSET": offset & 0xFFFFFFFF},
                    "D_CVT_SHIFT": {"CVT_SHIFT": 1}, "D_PERF_ENABLE": {"PERF_SAT_EN": 1}},
                    rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": prec, "PROC_PRECISION": prec}},
                    src_surf=cfg.memory_atom, dst_surf=cfg.memory_atom)
                # surfaces one atom apart: the 8 elements lie back to back
                image = np.array(values, dtype="<i2" if prec else "i1").view(np.uint8)
                layers.append((rdma, sdp, image, len(flagged)))
    return layers


@pytest.mark.parametrize("cfg", [SMALL, FULL], ids=["nv_small", "nv_full"])
def test_saturation_counter_at_the_17_bit_boundary(cfg):
    """D_PERF_OUT_SATURATION on int8 and int16 outputs counts NVDLA's flag: floors of 65536 /
    -65537 and a rounding up onto 65536 saturate (to 127 / -128, 32767 / -32768) uncounted."""
    layers = boundary_layers(cfg, out_precs=(0, 1))
    assert len(layers) == (6 if "int16" in cfg.data_types else 2)
    for rdma, sdp, image, flagged in layers:
        mem = SparseMemory()
        mem.write(0x8000_1000, image)
        res = run_sdp(cfg, rdma, sdp, mem)
        assert res.out_saturation == flagged
        hi = 127 if sdp.D_DATA_FORMAT.OUT_PRECISION == 0 else 32767
        assert np.all(np.isin(res.output, (hi, -hi - 1)))       # every value saturates


def test_int16_on_a_32_byte_atom_build():
    cfg = FULL
    W, H, C = 1, 1, 20                                 # int16: 16 channels per 32-byte atom
    vals = np.arange(C) * 1000 - 9000
    mem = SparseMemory()
    mem.write(0x8000_1000, np.array(list(vals) + [0] * 12, dtype="<i2").view(np.uint8))
    rdma, sdp = program(cfg, W, H, C, sdp={
        "D_DATA_FORMAT": {"PROC_PRECISION": 1, "OUT_PRECISION": 1},
        "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": 2},
        "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": 30000}},
        rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": 1, "PROC_PRECISION": 1}})
    res = run_sdp(cfg, rdma, sdp, mem)
    want = np.minimum(vals + 30000, 32767)
    assert list(res.output[:, 0, 0]) == list(want)
    got = mem.read(0x9000_0000, 64).view("<i2")
    assert list(got[:C]) == list(want) and list(got[C:]) == [30000] * 12


# =========================================================================================
# Program errors
# =========================================================================================
def _expect_error(cfg, match, sdp=None, rdma=None, W=2, H=2, C=8, **kw):
    rdma_v, sdp_v = program(cfg, W, H, C, sdp=sdp, rdma=rdma, **kw)
    with pytest.raises(SdpProgramError, match=match):
        run_sdp(cfg, rdma_v, sdp_v, SparseMemory())


def test_error_stage_missing_from_build():
    _expect_error(SMALL, r"D_DP_EW_CFG\.EW_BYPASS=NO: this build has no SDP EW",
                  sdp={"D_DP_EW_CFG": {"EW_BYPASS": 0}})
    cfg = SMALL.replace(sdp_ew=True, sdp_ew_throughput=1)
    _expect_error(cfg, r"EW_LUT_BYPASS=NO: this build has no SDP LUT",
                  sdp={"D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_LUT_BYPASS": 0}})
    _expect_error(SMALL.replace(sdp_bn=False, sdp_bn_throughput=0), r"BN_BYPASS=NO",
                  sdp={"D_DP_BN_CFG": {"BN_BYPASS": 0}})


def test_error_precisions():
    _expect_error(SMALL, r"IN_PRECISION=INT16: this build only supports \['int8'\]",
                  rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": 1}})
    _expect_error(SMALL, r"OUT_PRECISION=INT16: this build only supports",
                  sdp={"D_DATA_FORMAT": {"OUT_PRECISION": 1}})
    _expect_error(FULL, r"SDP_RDMA\.D_FEATURE_MODE_CFG\.PROC_PRECISION=INT16: must equal",
                  rdma={"D_FEATURE_MODE_CFG": {"PROC_PRECISION": 1}})
    _expect_error(FULL, r"OUT_PRECISION=FP16: an int8 pipeline cannot produce fp16",
                  sdp={"D_DATA_FORMAT": {"OUT_PRECISION": 2}})
    _expect_error(FULL, r"PROC_PRECISION=3: reserved",
                  sdp={"D_DATA_FORMAT": {"PROC_PRECISION": 3}})
    rdma_v, sdp_v = program(FULL, 1, 1, 8, sdp={"D_DATA_FORMAT": {"PROC_PRECISION": 2,
                                                                 "OUT_PRECISION": 1}},
                            rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": 2,
                                                         "PROC_PRECISION": 2}})
    # fp16 -> int16 is a valid conversion (tests/test_sdp_convert.py)
    assert run_sdp(FULL, rdma_v, sdp_v, SparseMemory()).wrote_memory


def test_error_rdma_out_precision():
    """SDP_RDMA's OUT_PRECISION: a defined value; NVDLA's operand read DMAs read it in batch
    mode only (tests/test_conv_batch.py: there it must be SDP's), so elsewhere a different
    value changes nothing; a flying layer without SDP_RDMA ignores it."""
    rdma_v, sdp_v = program(FULL, 1, 1, 8, rdma={"D_FEATURE_MODE_CFG": {"OUT_PRECISION": 1}})
    want = run_sdp(FULL, *program(FULL, 1, 1, 8), SparseMemory())
    got = run_sdp(FULL, rdma_v, sdp_v, SparseMemory())
    assert got.wrote_memory and np.array_equal(got.output, want.output)
    rdma_v, sdp_v = program(SMALL, 1, 1, 8, rdma={"D_FEATURE_MODE_CFG": {"OUT_PRECISION": 2}})
    assert run_sdp(SMALL, rdma_v, sdp_v, SparseMemory()).wrote_memory
    _expect_error(FULL, r"SDP_RDMA\.D_FEATURE_MODE_CFG\.OUT_PRECISION=3: reserved",
                  rdma={"D_FEATURE_MODE_CFG": {"OUT_PRECISION": 3}})
    rdma_v, sdp_v = program(FULL, 1, 1, 8, sdp={"D_DATA_FORMAT": {"OUT_PRECISION": 1}},
                            rdma={"D_FEATURE_MODE_CFG": {"OUT_PRECISION": 1}})
    assert run_sdp(FULL, rdma_v, sdp_v, SparseMemory()).wrote_memory          # 8to16
    # flying, SDP_RDMA not enabled: its OUT_PRECISION takes no part
    rmap = register_map(SMALL)
    for rout in (1, 2):
        rdma_v = GroupView.from_fields(rmap["SDP_RDMA"],
                                       D_FEATURE_MODE_CFG={"OUT_PRECISION": rout})
        _, sdp_v = program(SMALL, 1, 1, 8, sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1}})
        res = run_sdp(SMALL, rdma_v, sdp_v, SparseMemory(),
                      flying_input=np.zeros((8, 1, 1), dtype=np.int64))
        assert res.wrote_memory


def test_error_misaligned_addresses_and_strides():
    _expect_error(SMALL, r"SDP\.D_DST_BASE_ADDR_LOW=0x90000004: must be a multiple of the "
                  r"8-byte memory atom", dst=0x9000_0004)
    _expect_error(SMALL, r"SDP_RDMA\.D_SRC_LINE_STRIDE=0x14", src_line=0x14)
    _expect_error(SMALL, r"D_DST_LINE_STRIDE=0x8: lines of 2 atoms .* would overlap",
                  dst_line=8)
    _expect_error(SMALL, r"D_DST_SURFACE_STRIDE", C=16, dst_line=16, dst_surf=16)


def test_error_operand_dma_consistency():
    # DMA enabled, but no stage reads memory.
    _expect_error(SMALL, r"D_BRDMA_CFG\.BRDMA_DISABLE=NO: no BS ALU/MUL operand",
                  rdma={"D_BRDMA_CFG": {"BRDMA_DISABLE": 0, "BRDMA_RAM_TYPE": 1}})
    # Stage reads memory, DMA disabled.
    _expect_error(SMALL, r"D_NRDMA_CFG\.NRDMA_DISABLE=YES: SDP\.D_DP_BN takes its ALU operand",
                  sdp={"D_DP_BN_CFG": {"BN_BYPASS": 0, "BN_ALU_BYPASS": 0},
                       "D_DP_BN_ALU_CFG": {"BN_ALU_SRC": 1}})
    # Stage reads ALU and MUL, DMA provides only ALU.
    _expect_error(SMALL, r"BRDMA_DATA_USE=ALU: must be BOTH",
                  sdp={"D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_MUL_BYPASS": 0},
                       "D_DP_BS_ALU_CFG": {"BS_ALU_SRC": 1}, "D_DP_BS_MUL_CFG": {"BS_MUL_SRC": 1}},
                  rdma={"D_BRDMA_CFG": {"BRDMA_DISABLE": 0, "BRDMA_DATA_USE": 1,
                                        "BRDMA_RAM_TYPE": 1}})
    # int16 pipeline with one-byte operands.
    _expect_error(FULL, r"BRDMA_DATA_SIZE=ONE_BYTE: not allowed with PROC_PRECISION=INT16",
                  sdp={"D_DATA_FORMAT": {"PROC_PRECISION": 1, "OUT_PRECISION": 1},
                       "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0},
                       "D_DP_BS_ALU_CFG": {"BS_ALU_SRC": 1}},
                  rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": 1, "PROC_PRECISION": 1},
                        "D_BRDMA_CFG": {"BRDMA_DISABLE": 0, "BRDMA_DATA_USE": 1,
                                        "BRDMA_RAM_TYPE": 1}})


def test_error_cube_ram_type_pdp_and_reserved_algo():
    rdma_v, sdp_v = program(SMALL, 2, 2, 8)
    rmap = register_map(SMALL)
    words = dict(rdma_v._words, D_DATA_CUBE_WIDTH=2)
    with pytest.raises(SdpProgramError, match=r"SDP_RDMA\.D_DATA_CUBE_WIDTH\.WIDTH=2: must "
                                              r"equal SDP\.D_DATA_CUBE_WIDTH\.WIDTH=1"):
        run_sdp(SMALL, GroupView(rmap["SDP_RDMA"], words), sdp_v, SparseMemory())
    _expect_error(SMALL, r"D_SRC_DMA_CFG\.SRC_RAM_TYPE=CV: this build has no SRAMIF",
                  rdma={"D_SRC_DMA_CFG": {"SRC_RAM_TYPE": 0}})
    _expect_error(SMALL.replace(pdp_throughput=0), r"OUTPUT_DST=PDP: this build has no PDP",
                  sdp={"D_FEATURE_MODE_CFG": {"OUTPUT_DST": 1}})
    _expect_error(SMALL, r"BS_ALU_ALGO=3: reserved",
                  sdp={"D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": 3}})
    _expect_error(SMALL, r"FLYING_MODE=ON: needs the accumulator",
                  sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1}})
    _expect_error(SMALL, r"BATCH_NUMBER=3: this build has no batching",
                  sdp={"D_FEATURE_MODE_CFG": {"BATCH_NUMBER": 3}})


def test_flying_mode_ignores_an_idle_sdp_rdma():
    # nv_full's SDP_RDMA resets with every operand DMA enabled; idle, it must not matter.
    rmap = register_map(FULL)
    rdma_idle = GroupView(rmap["SDP_RDMA"], {})
    _, sdp = program(FULL, 1, 1, 4, sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1}})
    res = run_sdp(FULL, rdma_idle, sdp, SparseMemory(), flying_input=np.array(
        [[[1]], [[-2]], [[300]], [[0]]]))
    assert list(res.output[:, 0, 0]) == [1, -2, 127, 0] and res.padded_output.shape[0] == 32
    _, sdp = program(FULL, 1, 1, 4, sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1},
                                         "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0},
                                         "D_DP_BS_ALU_CFG": {"BS_ALU_SRC": 1}})
    with pytest.raises(SdpProgramError, match=r"SDP_RDMA\.D_OP_ENABLE\.OP_EN=DISABLE"):
        run_sdp(FULL, rdma_idle, sdp, SparseMemory(), flying_input=np.zeros((4, 1, 1)))


def test_error_surface_past_the_address_space():
    _expect_error(SMALL, r"SDP\.D_DST_BASE_ADDR_LOW=0xfffffff8: the surface ends past the "
                  r"32-bit address space", dst=0xFFFF_FFF8)
