"""The SDP unit (hw/sdp/sdp.py) against the golden model: random programs, bit-exact memory.

Each test runs a sequence of layers in one simulation of the SDP unit bench
(:func:`tb.sdp_unit.run_layers`: the unit with the MCIF/CVIF and AXI memory models under
random back-pressure and latency, every layer's memory, counters and PDP stream checked
against ``sim.sdp.run_sdp``): random valid programs
(``sim.sdp.random_programs.random_program``, extended here with the LUT, EQL mode, output to
PDP and, on an int16 build, int16 layers) and invalid mutations, which must finish without a
single AXI request.
"""

import numpy as np
import pytest

from arch.config import PRESETS, NvdlaConfig
from arch.registers import register_map
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.sdp import SdpProgramError
from sim.sdp.lut import LE_DEPTH, LO_DEPTH
from sim.sdp.random_programs import random_program
from tb.sdp_unit import golden, run_layers

SMALL = PRESETS["nv_small"]
SMALL_EW = SMALL.replace(name="nv_small_ew", sdp_ew=True, sdp_ew_throughput=1, sdp_lut=True,
                         data_types=frozenset({"int8", "int16"}))


def _set_field(block, words, reg, **fields):
    r = block[reg]
    word = words.get(reg, r.reset)
    for name, v in fields.items():
        f = r[name]
        word = (word & ~f.mask) | ((int(v) << f.lsb) & f.mask)
    words[reg] = word


# -----------------------------------------------------------------------------------------
# Programs
# -----------------------------------------------------------------------------------------
def valid_program(cfg, rng, max_elems):
    """A random program of ``random_program`` with, where the build allows, the LUT, EQL and
    PDP output mixed in; ``lut`` writes (table, [(addr, value)]) for the LUT."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    p = random_program(cfg, rng, max_elems, fp16=False)     # fp16: test_sdp_fp16_rtl
    sdp, rdma, s = dict(p["sdp"]), dict(p["rdma"]), {}
    _set_field(rb, rdma, "D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)))
    lut = None
    if cfg.sdp_lut and rng.random() < 0.4:
        _set_field(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=0, EW_LUT_BYPASS=0)
        le_linear = int(rng.integers(2))
        _set_field(sb, s, "S_LUT_CFG", LUT_LE_FUNCTION=le_linear,
                   LUT_UFLOW_PRIORITY=int(rng.integers(2)), LUT_OFLOW_PRIORITY=int(rng.integers(2)),
                   LUT_HYBRID_PRIORITY=int(rng.integers(2)))
        _set_field(sb, s, "S_LUT_INFO", LUT_LE_INDEX_OFFSET=int(rng.integers(-3, 5)) & 0xFF,
                   LUT_LE_INDEX_SELECT=int(rng.integers(-1, 4)) & 0xFF,
                   LUT_LO_INDEX_SELECT=int(rng.integers(-1, 3)) & 0xFF)
        for reg, fld, v in (("S_LUT_LE_START", "LUT_LE_START", rng.integers(-100, 20)),
                            ("S_LUT_LE_END", "LUT_LE_END", rng.integers(20, 200)),
                            ("S_LUT_LO_START", "LUT_LO_START", rng.integers(-300, 0)),
                            ("S_LUT_LO_END", "LUT_LO_END", rng.integers(0, 300))):
            _set_field(sb, s, reg, **{fld: int(v) & 0xFFFFFFFF})
        for reg, pre in (("S_LUT_LE_SLOPE_SCALE", "LUT_LE_SLOPE_"),
                         ("S_LUT_LO_SLOPE_SCALE", "LUT_LO_SLOPE_")):
            _set_field(sb, s, reg, **{f"{pre}UFLOW_SCALE": int(rng.integers(-300, 300)) & 0xFFFF,
                                      f"{pre}OFLOW_SCALE": int(rng.integers(-300, 300)) & 0xFFFF})
        for reg, pre in (("S_LUT_LE_SLOPE_SHIFT", "LUT_LE_SLOPE_"),
                         ("S_LUT_LO_SLOPE_SHIFT", "LUT_LO_SLOPE_")):
            _set_field(sb, s, reg, **{f"{pre}UFLOW_SHIFT": int(rng.integers(-4, 8)) & 0x1F,
                                      f"{pre}OFLOW_SHIFT": int(rng.integers(-4, 8)) & 0x1F})
        lut = {0: [int(v) for v in rng.integers(-3000, 3000, LE_DEPTH)],
               1: [int(v) for v in rng.integers(-3000, 3000, LO_DEPTH)]}
    if cfg.sdp_ew and rng.random() < 0.15:
        _set_field(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3)
    if cfg.pdp and rng.random() < 0.15:
        _set_field(sb, sdp, "D_FEATURE_MODE_CFG", OUTPUT_DST=1)
    return {"sdp": sdp, "rdma": rdma, "s": s, "images": p["images"], "lut": lut,
            "shape": p["shape"]}


def _m_field(block_key, reg, **fields):
    def mutate(cfg, p, rng):
        block = register_map(cfg)["SDP" if block_key == "sdp" else "SDP_RDMA"]
        _set_field(block, p[block_key], reg, **fields)
    return mutate


def _m_add(block_key, reg, delta):
    def mutate(cfg, p, rng):
        block = register_map(cfg)["SDP" if block_key == "sdp" else "SDP_RDMA"]
        p[block_key][reg] = (p[block_key].get(reg, block[reg].reset) + delta) & 0xFFFFFFFF
    return mutate


def _m_top_of_memory(cfg, p, rng):
    block = register_map(cfg)["SDP"]
    p["sdp"]["D_DST_BASE_ADDR_LOW"] = 0xFFFF_FFE0 & block["D_DST_BASE_ADDR_LOW"].mask()
    for blk in ("sdp", "rdma"):                  # at least 64 channels: 2+ surfaces
        b = register_map(cfg)["SDP" if blk == "sdp" else "SDP_RDMA"]
        _set_field(b, p[blk], "D_DATA_CUBE_CHANNEL", CHANNEL=63)
    _set_field(block, p["sdp"], "D_FEATURE_MODE_CFG", OUTPUT_DST=0)
    _set_field(block, p["sdp"], "D_DP_EW_CFG", EW_BYPASS=1)


def _m_dst_overlap(cfg, p, rng):
    block = register_map(cfg)["SDP"]
    p["sdp"]["D_DST_LINE_STRIDE"] = 0
    _set_field(block, p["sdp"], "D_DATA_CUBE_HEIGHT", HEIGHT=3)
    _set_field(register_map(cfg)["SDP_RDMA"], p["rdma"], "D_DATA_CUBE_HEIGHT", HEIGHT=3)


def _m_operand_without_dma(cfg, p, rng):
    sb, rb = register_map(cfg)["SDP"], register_map(cfg)["SDP_RDMA"]
    _set_field(sb, p["sdp"], "D_DP_BS_CFG", BS_BYPASS=0, BS_ALU_BYPASS=0)
    _set_field(sb, p["sdp"], "D_DP_BS_ALU_CFG", BS_ALU_SRC=1)
    _set_field(rb, p["rdma"], "D_BRDMA_CFG", BRDMA_DISABLE=1)


def _m_dma_without_operand(cfg, p, rng):
    sb, rb = register_map(cfg)["SDP"], register_map(cfg)["SDP_RDMA"]
    _set_field(sb, p["sdp"], "D_DP_BN_CFG", BN_BYPASS=1)
    _set_field(rb, p["rdma"], "D_NRDMA_CFG", NRDMA_DISABLE=0)


INVALID = {
    "in_fp16": _m_field("rdma", "D_FEATURE_MODE_CFG", IN_PRECISION=2),
    "out_reserved": _m_field("sdp", "D_DATA_FORMAT", OUT_PRECISION=3),
    "proc_mismatch": _m_field("rdma", "D_FEATURE_MODE_CFG", PROC_PRECISION=1),
    "rdma_out_reserved": _m_field("rdma", "D_FEATURE_MODE_CFG", OUT_PRECISION=3),
    "x_alu_eql": _m_field("sdp", "D_DP_BS_CFG", BS_BYPASS=0, BS_ALU_BYPASS=0, BS_ALU_ALGO=3),
    "misaligned_dst": _m_add("sdp", "D_DST_BASE_ADDR_LOW", 4),
    "misaligned_src_stride": _m_add("rdma", "D_SRC_LINE_STRIDE", 3),
    "cube_mismatch": _m_add("rdma", "D_DATA_CUBE_CHANNEL", 1),
    "winograd": _m_field("sdp", "D_FEATURE_MODE_CFG", WINOGRAD=1),
    "batch": _m_field("sdp", "D_FEATURE_MODE_CFG", BATCH_NUMBER=1),
    "cv_ram": _m_field("rdma", "D_SRC_DMA_CFG", SRC_RAM_TYPE=0),
    "top_of_memory": _m_top_of_memory,
    "dst_overlap": _m_dst_overlap,
    "operand_without_dma": _m_operand_without_dma,
    "dma_without_operand": _m_dma_without_operand,
    "ew_missing": _m_field("sdp", "D_DP_EW_CFG", EW_BYPASS=0),
}


def make_layers(cfg, seed, count, max_elems, invalid=(), want=None):
    """``count`` valid programs (accepted by the golden model and by ``want`` if given) with
    the ``invalid`` mutations inserted at random places."""
    rng = np.random.default_rng(seed)
    layers = []
    for _ in range(count):
        while True:
            prog = valid_program(cfg, rng, max_elems)
            if want is not None and not want(cfg, prog):
                continue
            try:
                golden(cfg, prog, _image(prog))
                break
            except (SdpProgramError, NotImplementedError):
                continue
        layers.append(prog)
    for name in invalid:
        while True:                   # (e.g. a destination rule does not apply to PDP output)
            prog = valid_program(cfg, rng, 64)
            prog = {**prog, "sdp": dict(prog["sdp"]), "rdma": dict(prog["rdma"]), "lut": None,
                    "invalid": True, "name": name}
            INVALID[name](cfg, prog, rng)
            try:
                golden(cfg, prog, _image(prog))
            except (SdpProgramError, NotImplementedError):
                break
        layers.insert(int(rng.integers(0, len(layers) + 1)), prog)
    return layers


def _image(prog):
    mem = SparseMemory()
    for addr, data, *_ in prog["images"]:
        mem.write(addr, data)
    return mem


# -----------------------------------------------------------------------------------------
# Tests
# -----------------------------------------------------------------------------------------
def test_nv_small_random_programs():
    layers = make_layers(SMALL, 1, 8, 200)
    run_layers(SMALL, layers, seed=1)


def test_saturation_counter_at_the_17_bit_boundary():
    """D_PERF_OUT_SATURATION at the converter's 17-bit limits (int8 and int16 layers, int8 and
    int16 outputs): the golden model's count is NVDLA's (floors of 65536 / -65537 and a
    rounding up onto 65536 are not flagged), and the RTL's counter equals it."""
    from .test_sdp_model import boundary_layers
    layers = []
    for rdma, sdp, image, flagged in boundary_layers(SMALL_EW, out_precs=(0, 1)):
        prog = {"sdp": dict(sdp.words), "rdma": dict(rdma.words), "s": {}, "lut": None,
                "images": [(0x8000_1000, image, 1)]}
        assert golden(SMALL_EW, prog, _image(prog)).out_saturation == flagged == 2
        layers.append(prog)
    assert len(layers) == 6
    run_layers(SMALL_EW, layers, seed=9)


def test_eql_layers_count_the_converters_saturation():
    """EQL layers (nothing written) whose converter saturates the 0 / 1 comparison results:
    D_PERF_OUT_SATURATION counts them as NVDLA's converter flags them (golden counts fixed
    here, the RTL's counter against them)."""
    from .test_sdp_model import program
    layers = []
    image = np.array([7, 7, 7, 8, 7, 7, 7, 7], dtype=np.uint8)
    for offset, want in ((-(1 << 20), 8), (65538, 7), (65537, 0), (-65536, 1)):
        rdma, sdp = program(SMALL_EW, 1, 1, 8, sdp={
            "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 3},
            "D_DP_EW_ALU_SRC_VALUE": {"EW_ALU_OPERAND": 7},
            "D_CVT_OFFSET": {"CVT_OFFSET": offset & 0xFFFFFFFF},
            "D_PERF_ENABLE": {"PERF_SAT_EN": 1}})
        prog = {"sdp": dict(sdp.words), "rdma": dict(rdma.words), "s": {}, "lut": None,
                "images": [(0x8000_1000, image, 1)]}
        assert golden(SMALL_EW, prog, _image(prog)).out_saturation == want
        layers.append(prog)
    run_layers(SMALL_EW, layers, seed=10)


def test_nv_small_invalid_programs_finish_without_memory_traffic():
    names = [n for n in INVALID if n not in ("ew_missing",)] + ["ew_missing"]
    layers = make_layers(SMALL, 2, 2, 64, invalid=names)
    run_layers(SMALL, layers, seed=2)


@pytest.mark.parametrize("seed, count", [
    (11, 6), pytest.param(12, 24, marks=pytest.mark.slow)])
def test_nv_full_random_programs(seed, count):
    """nv_full: 16 lanes, 2 atoms per 512-bit word, int16, LUT, CV (SRAMIF) and MC memories
    (6 programs in the default suite: its elaboration is half of their time; 24 more in the
    slow one)."""
    cfg = NvdlaConfig.preset("nv_full")
    layers = make_layers(cfg, seed, count, 600)
    assert {p["images"][0][2] for p in layers} == {0, 1}, "both RAM types drawn"
    run_layers(cfg, layers, seed=seed)


def test_ew_lut_int16_build_random_programs():
    layers = make_layers(SMALL_EW, 3, 8, 160)
    run_layers(SMALL_EW, layers, seed=3)


def _int16_per_element(cfg, prog):
    rb = register_map(cfg)["SDP_RDMA"]
    per_el = [GroupView(rb, prog["rdma"])[f"D_{d}_CFG"][f"{d}_DATA_MODE"]
              and not GroupView(rb, prog["rdma"])[f"D_{d}_CFG"][f"{d}_DISABLE"]
              for d in ("BRDMA", "NRDMA", "ERDMA")]
    return prog["shape"][3] == 1 and any(per_el)


def test_int16_per_element_operands():
    layers = make_layers(SMALL_EW, 5, 3, 100, want=_int16_per_element)
    run_layers(SMALL_EW, layers, seed=5)


def test_slow_memory_and_pdp_backpressure():
    layers = make_layers(SMALL, 4, 3, 120)
    run_layers(SMALL, layers, seed=4, latency=(5, 40), backpressure=0.6, pdp_ready=0.3)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [SMALL, SMALL_EW], ids=lambda c: c.name)
def test_random_sweep(cfg):
    layers = make_layers(cfg, 10, 40, 600, invalid=list(n for n in INVALID
                                                          if cfg.sdp_ew or n != "ew_missing"))
    run_layers(cfg, layers, seed=10)
