"""The SDP's fp16 datapath in the golden model (sim.sdp.sdp, builds with fp16 in data_types).

Known answers for every stage on whole layers (input fp16 -> fp32, BS / BN / EW ALU and MUL
with register, per-kernel and per-element operands, PReLU, ReLU, the fp16 output converter,
NaN-to-zero, the NaN / Inf counters, equal mode, flying fp32 input, output to PDP), the
program rules for fp16 layers, the random program generator's fp16 draws (and that draws on
other builds did not change), and that the RTL SDP finishes the fp16 layers it does not run
(flying) without memory traffic (the ones it runs: LUT and output to PDP too,
:mod:`tests.test_sdp_fp16_rtl`). The stage functions themselves are checked bit for bit against
NVDLA's Verilog in :mod:`tests.test_sdp_fp16_nvdla_rtl` (slow, needs ``NVDLA_HW_GIT``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from arch.config import PRESETS
from sim.memory import SparseMemory
from sim.nvfloat import fp16_from_float, fp16_to_float, fp32_from_float, fp32_to_fp16
from sim.sdp import SdpProgramError, run_sdp
from sim.sdp.random_programs import random_program, write_random_traces
from tests.conftest import NV_SMALL_EXT
from tests.test_sdp_model import _write_cube, program

FULL = PRESETS["nv_full"]
ATOM = FULL.memory_atom
F16 = {"D_DATA_FORMAT": {"PROC_PRECISION": 2, "OUT_PRECISION": 2}}
R16 = {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 2, "PROC_PRECISION": 2}}
NAN, INF = 0x7E00, 0x7C00


def h(x):
    return int(fp16_from_float(x))


def _a(reg, fld, byte_value, block="SDP_RDMA"):
    """A byte address / stride as its register field value on nv_full."""
    from arch.registers import register_map
    return byte_value >> register_map(FULL)[block][reg][fld].lsb


def _merge(*dicts):
    out = {}
    for d in dicts:
        for reg, f in d.items():
            out[reg] = {**out.get(reg, {}), **f}
    return out


def _layer(cube, sdp=None, rdma=None, mem=None, **kw):
    """An offline fp16 layer on nv_full over ``cube`` [C, H, W] fp16 codes."""
    C, H, W = cube.shape
    mem = mem if mem is not None else SparseMemory()
    _write_cube(mem, 0x8000_1000, cube, ATOM, W * ATOM, H * W * ATOM, nbytes=2)
    rdma_v, sdp_v = program(FULL, W, H, C, sdp=_merge(F16, sdp or {}),
                            rdma=_merge(R16, rdma or {}))
    return run_sdp(FULL, rdma_v, sdp_v, mem, **kw), mem


def _values(rng, shape, scale=8):
    """fp16 codes of exact small values (multiples of 1/4): sums and products stay exact."""
    return fp16_from_float(rng.integers(-4 * scale, 4 * scale + 1, shape) / 4)


# -----------------------------------------------------------------------------------------
# stages on whole layers
# -----------------------------------------------------------------------------------------
def test_passthrough_is_exact_and_keeps_nan_payloads():
    rng = np.random.default_rng(1)
    cube = rng.integers(0, 1 << 16, (20, 2, 3))
    cube = np.where((cube & 0x7C00) == 0x7C00, cube & 0xBFFF, cube)    # no inf / NaN here
    cube[0, 0, 0], cube[1, 0, 0], cube[2, 0, 0] = NAN | 0x15, 0x8001, 0x0000
    res, mem = _layer(cube)
    assert np.array_equal(res.output, cube)                 # denormals, -0, NaN payload kept
    assert res.padded_output.shape == (32, 2, 3) and not res.padded_output[20:].any()
    assert list(mem.read(0x9000_0000, 2)) == [cube[0, 0, 0] & 0xFF, cube[0, 0, 0] >> 8]


def test_bs_alu_mul_relu_with_register_operands():
    rng = np.random.default_rng(2)
    cube = _values(rng, (16, 2, 2))
    for algo, fn in ((0, np.maximum), (1, np.minimum), (2, np.add)):
        res, _ = _layer(cube, sdp={
            "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": algo,
                            "BS_MUL_BYPASS": 0, "BS_RELU_BYPASS": 0},
            "D_DP_BS_ALU_CFG": {"BS_ALU_SHIFT_VALUE": 7},          # no part in fp16
            "D_DP_BS_MUL_CFG": {"BS_MUL_SHIFT_VALUE": 9},
            "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": h(1.5)},
            "D_DP_BS_MUL_SRC_VALUE": {"BS_MUL_OPERAND": h(-2.0)}})
        want = np.maximum(fn(fp16_to_float(cube), 1.5) * -2.0, 0.0)
        assert np.array_equal(res.output, fp16_from_float(want)), algo


def test_prelu_bn_per_kernel_and_ew_per_element_operands():
    rng = np.random.default_rng(3)
    C, H, W = 16, 2, 3
    cube = _values(rng, (C, H, W))
    mem = SparseMemory()
    # BN MUL per kernel (2 bytes per channel): channel c scales negatives by (c - 8) / 4
    bn_mul = fp16_from_float((np.arange(C) - 8) / 4)
    mem.write(0x8200_0000, bn_mul.astype("<u2").view(np.uint8))
    # EW ALU and MUL per element, interleaved (ALU first), fp16
    ew_alu, ew_mul = _values(rng, (C, H, W)), _values(rng, (C, H, W), 2)
    words = np.stack([ew_alu, ew_mul], -1).transpose(1, 2, 0, 3)        # [H, W, C, 2]
    mem.write(0x8300_0000, words.reshape(-1).astype("<u2").view(np.uint8))
    res, _ = _layer(cube, mem=mem, sdp={
        "D_DP_BN_CFG": {"BN_BYPASS": 0, "BN_MUL_BYPASS": 0, "BN_MUL_PRELU": 1},
        "D_DP_BN_MUL_CFG": {"BN_MUL_SRC": 1},
        "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 2,
                        "EW_MUL_BYPASS": 0},
        "D_DP_EW_ALU_CFG": {"EW_ALU_SRC": 1, "EW_ALU_CVT_BYPASS": 0},   # converter unused
        "D_DP_EW_MUL_CFG": {"EW_MUL_SRC": 1, "EW_MUL_CVT_BYPASS": 0},
        "D_DP_EW_ALU_CVT_SCALE_VALUE": {"EW_ALU_CVT_SCALE": 3},
        "D_DP_EW_TRUNCATE_VALUE": {"EW_TRUNCATE": 5}}, rdma={
        "D_NRDMA_CFG": {"NRDMA_DISABLE": 0, "NRDMA_DATA_USE": 0, "NRDMA_DATA_SIZE": 1,
                        "NRDMA_DATA_MODE": 0, "NRDMA_RAM_TYPE": 1},
        "D_BN_BASE_ADDR_LOW": {"BN_BASE_ADDR_LOW": _a("D_BN_BASE_ADDR_LOW",
                                                      "BN_BASE_ADDR_LOW", 0x8200_0000)},
        "D_ERDMA_CFG": {"ERDMA_DISABLE": 0, "ERDMA_DATA_USE": 2, "ERDMA_DATA_SIZE": 1,
                        "ERDMA_DATA_MODE": 1, "ERDMA_RAM_TYPE": 1},
        "D_EW_BASE_ADDR_LOW": {"EW_BASE_ADDR_LOW": _a("D_EW_BASE_ADDR_LOW",
                                                      "EW_BASE_ADDR_LOW", 0x8300_0000)},
        "D_EW_LINE_STRIDE": {"EW_LINE_STRIDE": _a("D_EW_LINE_STRIDE", "EW_LINE_STRIDE",
                                                  W * C * 4)},
        "D_EW_SURFACE_STRIDE": {"EW_SURFACE_STRIDE": _a(
            "D_EW_SURFACE_STRIDE", "EW_SURFACE_STRIDE", H * W * C * 4)}})
    x = fp16_to_float(cube)
    x = np.where(x >= 0, x, x * ((np.arange(C) - 8) / 4)[:, None, None])     # PReLU
    want = x * fp16_to_float(ew_mul) + fp16_to_float(ew_alu)
    assert np.array_equal(res.output, fp16_from_float(want))


def test_ew_register_operands_are_fp32():
    cube = fp16_from_float(np.array([1.0, -3.0, 0.5, 1000.0] * 4).reshape(16, 1, 1))
    third = int(fp32_from_float(1 / 3))
    res, _ = _layer(cube, sdp={
        "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 0,
                        "EW_MUL_BYPASS": 0},
        "D_DP_EW_MUL_SRC_VALUE": {"EW_MUL_OPERAND": third},
        "D_DP_EW_ALU_SRC_VALUE": {"EW_ALU_OPERAND": int(fp32_from_float(-0.25))}})
    want = np.maximum(fp16_to_float(cube) * np.float32(1 / 3), -0.25)
    assert np.array_equal(res.output, fp16_from_float(np.float32(want)))


def test_output_saturates_to_65504_and_counts_it():
    cube = fp16_from_float(np.array([60000.0, -60000.0, 1.0, 40000.0] * 4).reshape(16, 1, 1))
    res, _ = _layer(cube, sdp={
        "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_MUL_BYPASS": 0},
        "D_DP_BS_MUL_SRC_VALUE": {"BS_MUL_OPERAND": h(2.0)},
        "D_CVT_SCALE": {"CVT_SCALE": 5}, "D_CVT_SHIFT": {"CVT_SHIFT": 3},   # no part in fp16
        "D_PERF_ENABLE": {"PERF_SAT_EN": 1}})
    assert [int(v) for v in res.output[:4, 0, 0]] == [0x7BFF, 0xFBFF, h(2.0), 0x7BFF]
    assert res.out_saturation == 12                       # |65504|, no infinity


def test_nan_inf_counters_and_nan_to_zero():
    cube = np.full((20, 1, 2), h(1.0))
    cube[0, 0, 0], cube[1, 0, 0], cube[2, 0, 1] = NAN, INF | 0x8000, 0x7D01     # NaN, -inf, NaN
    cube[21 - 20, 0, 1] = INF
    ops = {"D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": 2},
           "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": h(0.5)},
           "D_PERF_ENABLE": {"PERF_NAN_INF_COUNT_EN": 1, "PERF_SAT_EN": 1}}
    rperf = {"D_PERF_ENABLE": {"PERF_NAN_INF_COUNT_EN": 1}}
    res, _ = _layer(cube, sdp=ops, rdma=rperf)
    assert int(res.output[0, 0, 0]) == NAN and int(res.output[2, 0, 1]) == 0x7D01
    assert int(res.output[1, 0, 0]) == 0xFBFF and int(res.output[1, 0, 1]) == 0x7BFF
    assert (res.rdma_nan_input_num, res.rdma_inf_input_num) == (2, 2)
    assert (res.nan_output_num, res.nan_input_num, res.inf_input_num) == (2, 0, 0)
    regs = res.status_registers()
    assert regs["SDP_RDMA"] == {"D_STATUS_NAN_INPUT_NUM": 2, "D_STATUS_INF_INPUT_NUM": 2}
    assert regs["SDP"]["D_STATUS_NAN_OUTPUT_NUM"] == 2
    # NaN-to-zero: input NaNs become +0 (then + 0.5), the counters still see them
    res, _ = _layer(cube, sdp=_merge(ops, {"D_FEATURE_MODE_CFG": {"NAN_TO_ZERO": 1}}),
                    rdma=rperf)
    assert int(res.output[0, 0, 0]) == h(0.5) and int(res.output[2, 0, 1]) == h(0.5)
    assert res.rdma_nan_input_num == 2 and res.nan_output_num == 0
    # ... and NaN operands (register and DMA) become +0 too
    res, _ = _layer(cube, sdp=_merge(ops, {"D_FEATURE_MODE_CFG": {"NAN_TO_ZERO": 1},
                                           "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": NAN}}))
    assert int(res.output[3, 0, 0]) == h(1.0)
    # counting disabled: SDP_RDMA leaves its registers, the WDMA still counts NaN outputs
    res, _ = _layer(cube, sdp=ops)
    assert res.rdma_nan_input_num is None and res.nan_output_num == 2


def test_equal_mode_compares_fp32_codes():
    cube = fp16_from_float(np.array([1.0, 2.0, -0.0, 0.0] * 4).reshape(16, 1, 1))
    eq = {"D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 3}}
    for operand, unequal in ((1.0, True), (0.0, True)):
        res, mem = _layer(cube, sdp=_merge(eq, {"D_DP_EW_ALU_SRC_VALUE": {
            "EW_ALU_OPERAND": int(fp32_from_float(operand))}}))
        assert not res.wrote_memory and res.status_unequal == int(unequal)
        # -0 differs from +0 bit for bit
        assert int(res.output[2, 0, 0]) == 1 and int(res.output[3, 0, 0]) == (operand != 0)
    same = fp16_from_float(np.full((16, 1, 1), 2.0))
    res, _ = _layer(same, sdp=_merge(eq, {"D_DP_EW_ALU_SRC_VALUE": {
        "EW_ALU_OPERAND": int(fp32_from_float(2.0))}}))
    assert res.status_unequal == 0 and not res.output.any()


def test_flying_fp32_input_to_pdp_with_nan_flush():
    rng = np.random.default_rng(4)
    C, H, W = 20, 2, 2
    cube = fp32_from_float(rng.standard_normal((C, H, W)) * 100)
    cube[0, 0, 0], cube[1, 0, 0], cube[2, 0, 0] = 0x7FC00000, 0x7F800000, 0x00000001
    cube[3, 0, 0] = np.int64(0xC0000000)                                  # -2.0
    sdp = _merge(F16, {"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1, "OUTPUT_DST": 1},
                       "D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_RELU_BYPASS": 0}})
    rdma_v, sdp_v = program(FULL, W, H, C, sdp=sdp, rdma={"D_OP_ENABLE": {"OP_EN": 0}})
    res = run_sdp(FULL, rdma_v, sdp_v, SparseMemory(), flying_input=cube)
    assert res.to_pdp and not res.wrote_memory
    assert res.padded_output.shape == (32, H, W)
    assert int(res.output[0, 0, 0]) == 0x7C00          # fp32 NaN 0x7FC00000 -> low bits: 0x7C00
    assert int(res.output[1, 0, 0]) == 0x7BFF          # fp32 inf -> 65504
    assert int(res.output[2, 0, 0]) == 0 and int(res.output[3, 0, 0]) == 0
    want = fp32_to_fp16(np.where((cube >> 31) & 1, 0, cube))
    assert np.array_equal(res.output[4:], want[4:])
    sdp_v2 = program(FULL, W, H, C, sdp=_merge(sdp, {"D_FEATURE_MODE_CFG": {"NAN_TO_ZERO": 1}}),
                     rdma={"D_OP_ENABLE": {"OP_EN": 0}})[1]
    res = run_sdp(FULL, rdma_v, sdp_v2, SparseMemory(), flying_input=cube)
    assert int(res.output[0, 0, 0]) == 0
    assert res.rdma_nan_input_num is None and res.nan_output_num == 0


def test_lut_in_fp16_layers():
    """LE exponent table le[i] = i from 1.0 (offset 0), LO linear table lo[i] = 2i from 0.0
    (select 0); LO wins when both hit. Hits interpolate exactly here, misses extrapolate."""
    from sim.sdp.lut import SdpLut
    lut = SdpLut()
    lut.load(le=[h(i) for i in range(65)], lo=[h(2 * i) for i in range(257)])
    xs = [0.25, 1.5, 7.75, 255.5, 300.0, -3.0, 1e6, 0.0] + [2.0] * 8
    cube = fp16_from_float(np.array(xs)).reshape(16, 1, 1)
    res, _ = _layer(cube, lut=lut, sdp={
        "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_LUT_BYPASS": 0},
        "S_LUT_CFG": {"LUT_LE_FUNCTION": 0, "LUT_HYBRID_PRIORITY": 1, "LUT_UFLOW_PRIORITY": 0,
                      "LUT_OFLOW_PRIORITY": 1},
        "S_LUT_INFO": {"LUT_LE_INDEX_OFFSET": 0, "LUT_LO_INDEX_SELECT": 0},
        "S_LUT_LE_START": {"LUT_LE_START": 0}, "S_LUT_LO_START": {"LUT_LO_START": 0},
        "S_LUT_LO_END": {"LUT_LO_END": int(fp32_from_float(256.0))},
        "S_LUT_LE_SLOPE_SCALE": {"LUT_LE_SLOPE_UFLOW_SCALE": h(0.5)},
        "S_LUT_LO_SLOPE_SCALE": {"LUT_LO_SLOPE_OFLOW_SCALE": h(0.25)},
        "D_PERF_ENABLE": {"PERF_LUT_EN": 1}})
    got = list(fp16_to_float(res.output[:8, 0, 0]))
    # 0.25: LE underflows (exponent -2 < 0), LO hits -> 0.5; 1.5, 7.75: both hit -> LO: 2x;
    # 255.5: LO hit (index 255) -> 511; 300: LO overflows, LE hits (index 8, fraction
    # 300 / 256 - 1) -> 8 + 0.171875; -3: both underflow -> LE: le[0] + (x - (0 + 2^0)) x 0.5
    # = -2; 1e6 (fp16: inf -> fp32 max): LO overflows, LE hits at index 64 -> overflow too:
    # OFLOW_PRIORITY LO -> lo[256] + (x - 256) x 0.25 -> beyond fp16: 65504; 0: both underflow
    # -> LE: 0 + (0 - 1) x 0.5
    assert got == [0.5, 3.0, 15.5, 511.0, 8.171875, -2.0, 65504.0, -0.5]
    assert int(res.output[8, 0, 0]) == h(4.0)
    assert (res.lut_uflow, res.lut_oflow, res.lut_hybrid) == (2, 1, 13)
    assert (res.lut_le_hit, res.lut_lo_hit) == (12, 12)


def test_batched_flying_fp16_layer_is_its_batches():
    rng = np.random.default_rng(5)
    B, C, H, W = 3, 20, 2, 2
    cube = fp32_from_float(rng.standard_normal((B, C, H, W)) * 50)
    ops = _merge(F16, {"D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": 2,
                                       "BS_MUL_BYPASS": 0, "BS_MUL_PRELU": 1},
                       "D_DP_BS_ALU_SRC_VALUE": {"BS_ALU_OPERAND": h(-3.5)},
                       "D_DP_BS_MUL_SRC_VALUE": {"BS_MUL_OPERAND": h(0.125)}})
    dst_surf = H * W * ATOM

    def run(batches, flying):
        sdp = _merge(ops, {"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1,
                                                  "BATCH_NUMBER": batches - 1},
                           "D_DST_BATCH_STRIDE": {"DST_BATCH_STRIDE": _a(
                               "D_DST_BATCH_STRIDE", "DST_BATCH_STRIDE", 2 * dst_surf, "SDP")}})
        rdma_v, sdp_v = program(FULL, W, H, C, sdp=sdp, rdma={"D_OP_ENABLE": {"OP_EN": 0}})
        mem = SparseMemory()
        return run_sdp(FULL, rdma_v, sdp_v, mem, flying_input=flying), mem

    res, mem = run(B, cube)
    assert res.output.shape == (B, C, H, W)
    for b in range(B):
        one, one_mem = run(1, cube[b])
        assert np.array_equal(res.output[b], one.output)
        assert np.array_equal(mem.read(0x9000_0000 + b * 2 * dst_surf, 2 * dst_surf),
                              one_mem.read(0x9000_0000, 2 * dst_surf))
    assert res.output.any()


# -----------------------------------------------------------------------------------------
# program rules
# -----------------------------------------------------------------------------------------
def _run(cfg, sdp=None, rdma=None, C=16):
    rdma_v, sdp_v = program(cfg, 1, 1, C, sdp=sdp, rdma=rdma)
    return run_sdp(cfg, rdma_v, sdp_v, SparseMemory())


def test_fp16_program_rules():
    with pytest.raises(SdpProgramError, match=r"PROC_PRECISION=FP16: this build only supports"):
        _run(PRESETS["nv_small"], sdp=F16, rdma=R16)
    with pytest.raises(SdpProgramError, match=r"OUT_PRECISION=INT8: an fp16 pipeline cannot "):
        _run(FULL, sdp={"D_DATA_FORMAT": {"PROC_PRECISION": 2, "OUT_PRECISION": 0}}, rdma=R16)
    with pytest.raises(SdpProgramError, match=r"IN_PRECISION=INT8: offline input must have"):
        _run(FULL, sdp=F16, rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": 0,
                                                         "PROC_PRECISION": 2}})
    with pytest.raises(SdpProgramError, match=r"BRDMA_DATA_SIZE=ONE_BYTE: not allowed with "
                       r"PROC_PRECISION=FP16"):
        _run(FULL, sdp=_merge(F16, {"D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_MUL_BYPASS": 0},
                                    "D_DP_BS_MUL_CFG": {"BS_MUL_SRC": 1}}),
             rdma=_merge(R16, {"D_BRDMA_CFG": {"BRDMA_DISABLE": 0, "BRDMA_DATA_USE": 0,
                                               "BRDMA_DATA_SIZE": 0, "BRDMA_RAM_TYPE": 1}}))
    with pytest.raises(SdpProgramError, match=r"BS_ALU_ALGO=3: reserved for the X stages"):
        _run(FULL, sdp=_merge(F16, {"D_DP_BS_CFG": {"BS_BYPASS": 0, "BS_ALU_BYPASS": 0,
                                                    "BS_ALU_ALGO": 3}}), rdma=R16)


def test_fp16_int16_conversions_run():
    """fp16 <-> int16 output conversions are modelled (details: tests/test_sdp_convert.py)."""
    assert _run(FULL, sdp={"D_DATA_FORMAT": {"PROC_PRECISION": 2, "OUT_PRECISION": 1}},
                rdma=R16).wrote_memory
    assert _run(FULL, sdp={"D_DATA_FORMAT": {"PROC_PRECISION": 1, "OUT_PRECISION": 2}},
                rdma={"D_FEATURE_MODE_CFG": {"IN_PRECISION": 1,
                                             "PROC_PRECISION": 1}}).wrote_memory


# -----------------------------------------------------------------------------------------
# random programs
# -----------------------------------------------------------------------------------------
def _draw_digest(cfg, **kw):
    h_ = hashlib.sha256()
    rng = np.random.default_rng(123)
    for i in range(60):
        p = random_program(cfg, rng, 1200, slot=i % 2, **kw)
        for blk in ("sdp", "rdma"):
            h_.update(repr(sorted(p[blk].items())).encode())
        for addr, data, ram in p["images"]:
            h_.update(repr((addr, ram)).encode())
            h_.update(np.asarray(data, dtype=np.uint8).tobytes())
        h_.update(repr((p["window"], p["shape"])).encode())
    return h_.hexdigest()[:16]


def test_draws_without_fp16_are_unchanged():
    """The generator's draws before fp16 existed (digests taken then): builds without fp16,
    and nv_full with ``fp16=False``."""
    assert _draw_digest(PRESETS["nv_small"]) == "02f502ea7c2f93d2"
    assert _draw_digest(NV_SMALL_EXT) == "9f56052cef8d1adf"
    assert _draw_digest(FULL, fp16=False) == "085b21988aff335b"


def _trace_digest(cfg, tmp_path, name, **kw):
    from sim.sdp.random_programs import write_random_traces
    h_ = hashlib.sha256()
    for p in write_random_traces(cfg, str(tmp_path / name), 6, seed=9, max_elems=200, **kw):
        for f in sorted(Path(p).iterdir()):
            h_.update(f.name.encode() + f.read_bytes())
    return h_.hexdigest()


def test_trace_draws_with_lut_flag_elsewhere_unchanged(tmp_path):
    """``write_random_traces(..., lut=True)`` changes nothing on builds without the fp16
    LUT (fp16 without the SDP LUT; the LUT without fp16), nor with ``fp16=False``."""
    fp16_only = PRESETS["nv_small"].replace(name="nv_small_fp16",
                                            data_types=frozenset({"int8", "fp16"}))
    for k, (cfg, kw) in enumerate(((fp16_only, {}), (NV_SMALL_EXT, {}),
                                   (NV_SMALL_EXT.replace(data_types=frozenset({"int8", "fp16"})),
                                    {"fp16": False}))):
        assert _trace_digest(cfg, tmp_path, f"a{k}", **kw) == \
            _trace_digest(cfg, tmp_path, f"b{k}", lut=True, **kw)


def test_random_fp16_programs_run_on_the_golden_core(tmp_path):
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    paths = write_random_traces(FULL, str(tmp_path), 24, seed=3, max_elems=600)
    fp16 = [p for p in paths if any("NVDLA_SDP.D_DATA_FORMAT_0, 0xa)" in f.read_text()
                                    for f in Path(p).glob("*.cfg"))]
    assert len(fp16) >= 5
    for p in paths:
        res = run_golden(parse_trace(p, FULL), FULL)
        assert res.passed, res.message


def test_fp16_sdp_into_fp16_pdp_on_the_golden_core(tmp_path):
    from sim.pdp import random_programs as pdp_rp
    rng = np.random.default_rng(12)
    layers = []
    while len(layers) < 3:
        try:
            layer = pdp_rp.flying_layer(FULL, rng, slot=len(layers), max_elems=600)
        except pdp_rp._Redraw:
            continue
        if layer["info"]["prec"] == 2:
            layers.append(layer)
    path = pdp_rp.write_trace(str(tmp_path), "sdp_pdp_fp16", layers)
    res = pdp_rp.run_trace_golden(path, FULL)
    assert len(res.checks) == 3, res.message


def test_random_fp16_layers_cover_the_datapath():
    from arch.registers import register_map
    from sim.regs import GroupView
    rmap = register_map(FULL)
    rng = np.random.default_rng(9)
    seen, n = set(), 0
    while n < 60:
        p = random_program(FULL, rng, 400)
        if p["shape"][3] != 2:
            continue
        n += 1
        mem = SparseMemory()
        for addr, data, _ in p["images"]:
            mem.write(addr, data)
        s = GroupView(rmap["SDP"], p["sdp"])
        res = run_sdp(FULL, GroupView(rmap["SDP_RDMA"], p["rdma"]), s, mem, sram=mem)
        seen.add(("ntz", s.D_FEATURE_MODE_CFG.NAN_TO_ZERO))
        seen.add(("sat", bool(((res.padded_output & 0x7FFF) == 0x7BFF).any())))
        seen.add(("nan_out", bool(res.nan_output_num)))
        for st in ("BS", "BN", "EW"):
            if not s[f"D_DP_{st}_CFG"][f"{st}_BYPASS"]:
                seen.add(st)
                for unit in ("ALU", "MUL"):
                    if s[f"D_DP_{st}_{unit}_CFG"][f"{st}_{unit}_SRC"]:
                        seen.add((st, unit, "dma"))
    want = {("ntz", 0), ("ntz", 1), ("sat", True), ("nan_out", True), "BS", "BN", "EW",
            ("BS", "ALU", "dma"), ("BN", "MUL", "dma"), ("EW", "ALU", "dma")}
    assert want <= seen, want - seen


# -----------------------------------------------------------------------------------------
# flying fp16 layers on the RTL SDP: the accumulator's fp32 codes (an fp16 convolution)
# -----------------------------------------------------------------------------------------
def _fp32_cube(rng, shape):
    """fp32 codes [C, H, W] as an fp16 convolution delivers them: wide magnitudes, zeros of
    both signs, NaNs and a few values past the fp16 range."""
    W, H, C, _ = shape
    v = rng.uniform(1, 2, (C, H, W)) * 2.0 ** rng.integers(-30, 20, (C, H, W))
    v = np.where(rng.random((C, H, W)) < 0.5, -v, v).astype(np.float32).view(np.uint32)
    codes = v.astype(np.int64)
    special = rng.random((C, H, W))
    codes = np.where(special < 0.05, 0, codes)
    codes = np.where((special >= 0.05) & (special < 0.08), 0x80000000, codes)
    codes = np.where((special >= 0.08) & (special < 0.11),
                     0x7FC00000 | rng.integers(0, 1 << 22, (C, H, W)), codes)
    return codes.astype(np.uint32).view(np.int32).astype(np.int64)


def test_rtl_runs_flying_fp16_layers():
    """nv_full's RTL SDP takes flying fp32 input in fp16 layers (NaN flushing, BS / BN / EW /
    LUT, output to memory or PDP), between int flying layers, bit-exact with the golden
    model."""
    from tests.test_sdp_flying import _valid, flying_layer, make_layers, run_flying_layers
    rng = np.random.default_rng(7)
    layers = make_layers(FULL, 62, 2, 64, offline=0)
    for k in range(3):
        while True:
            layer = flying_layer(FULL, rng, 64, fp16=True)
            layer["cube"] = _fp32_cube(rng, layer["shape"])
            if layer["shape"][3] == 2 and _valid(FULL, layer):
                break
        layers.insert(2 * k, layer)
    run_flying_layers(FULL, layers, seed=7)
