"""The RTL SDP's fp16 datapath (offline, BS / BN, output to memory) against the golden model,
bit for bit, on nv_small_fp16 (nv_small with ``data_types`` int8 + fp16: one lane, 8-byte
atoms of 4 fp16 channels).

* unit level (:func:`tb.sdp_unit.run_layers`, Amaranth's simulator, AXI memory models with
  random back-pressure and latency): random fp16 programs of
  :func:`sim.sdp.random_programs.random_program` (fp16 data with NaNs, infinities, signed
  zeros, denormals and extremes; register, per-kernel and per-element operands; NaN-to-zero
  either way) mixed with int8 layers, with the memory written and every status counter
  (OUT_SATURATION, SDP's NaN / Inf counters, SDP_RDMA's NaN / Inf input counters) compared
  after each layer; fp16 layers the RTL does not run (output to PDP) end without DMA;
* on the generated core (playback engine, Verilator, random AXI back-pressure 30 %, latency
  1-24 cycles): random trace programs of :func:`sim.sdp.random_programs.write_random_traces`
  with fp16 layers (memory compared; the counters are the unit tests' business).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.sdp import SdpProgramError
from sim.sdp.random_programs import random_program, write_random_traces

from .conftest import NV_SMALL_EXT, assert_all_pass, playback

#: nv_small with fp16 beside int8 (the build of tests/test_pdp_fp16_rtl.py)
NV_SMALL_FP16 = NvdlaConfig.preset("nv_small").replace(
    name="nv_small_fp16", data_types=frozenset({"int8", "fp16"}))
#: nv_small with SRAMIF, SDP EW + LUT, BDMA and Rubik (tests/conftest.py) and fp16
NV_SMALL_EXT_FP16 = NV_SMALL_EXT.replace(name="nv_small_ext_fp16",
                                         data_types=frozenset({"int8", "fp16"}))
FP16 = 2
REJECT = "fp16 SDP layer the RTL does not run"


def _set(block, regs, reg, **fields):
    word = regs.get(reg, block[reg].reset)
    for k, v in fields.items():
        f = block[reg].field(k) if hasattr(block[reg], "field") else \
            next(x for x in block[reg].fields if x.name == k)
        word = (word & ~(((1 << f.width) - 1) << f.lsb)) | ((v & ((1 << f.width) - 1)) << f.lsb)
    regs[reg] = word & 0xFFFFFFFF


def _is_fp16(cfg, p):
    f = next(x for x in register_map(cfg)["SDP"]["D_DATA_FORMAT"].fields
             if x.name == "PROC_PRECISION")
    return (p["sdp"].get("D_DATA_FORMAT", 0) >> f.lsb) & 3 == FP16


def fp16_layers(cfg, seed, count, max_elems, pdp_share=0.15, fp16_share=0.7, ew_off=0.0,
                eql=0.15):
    """``count`` layers valid for the golden model: fp16 ones (``fp16_share``) and int8 ones,
    random perf enables; some layers sent to PDP (their stream compared); fp16 layers with the
    LUT are marked ``rtl_rejects``; ``ew_off``: the share of fp16 layers whose EW stage is turned off (those
    that still pass the golden model's rules); ``eql``: the share of layers put in EW's equal
    mode (builds with EW)."""
    from tb.sdp_unit import golden
    from tests.test_sdp import _image
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    rng = np.random.default_rng(seed)
    layers = []
    while len(layers) < count:
        want_fp = rng.random() < fp16_share
        p = random_program(cfg, rng, max_elems)
        if _is_fp16(cfg, p) != want_fp:
            continue
        sdp, rdma = dict(p["sdp"]), dict(p["rdma"])
        _set(sb, sdp, "D_PERF_ENABLE", PERF_SAT_EN=int(rng.integers(2)),
             PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
        _set(rb, rdma, "D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)),
             PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
        if want_fp and cfg.sdp_ew and rng.random() < ew_off:
            _set(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=1)
        if cfg.sdp_ew and rng.random() < eql:
            _set(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3)
        to_pdp = cfg.pdp and rng.random() < pdp_share
        if to_pdp:
            _set(sb, sdp, "D_FEATURE_MODE_CFG", OUTPUT_DST=1)
        prog = {"sdp": sdp, "rdma": rdma, "s": {}, "images": p["images"], "lut": None,
                "shape": p["shape"]}
        try:
            golden(cfg, prog, _image(prog))
        except (SdpProgramError, NotImplementedError):
            continue
        ew = sdp.get("D_DP_EW_CFG", sb["D_DP_EW_CFG"].reset)
        lut_on = not (ew & 1) and not (ew >> 6) & 1            # EW_BYPASS, EW_LUT_BYPASS
        if want_fp and lut_on:
            prog["rtl_rejects"] = REJECT
        layers.append(prog)
    return layers


@pytest.mark.parametrize("seed, count", [(20, 10), pytest.param(21, 60,
                                                                marks=pytest.mark.slow)],
                         ids=["seed20", "seed21"])
def test_unit_random_fp16_layers(seed, count):
    from tb.sdp_unit import run_layers
    layers = fp16_layers(NV_SMALL_FP16, seed, count, 160)
    assert sum(_is_fp16(NV_SMALL_FP16, p) and not p.get("rtl_rejects") for p in layers) \
        >= count // 3
    run_layers(NV_SMALL_FP16, layers, seed=seed, latency=(1, 24), backpressure=0.3)


@pytest.mark.parametrize("seed, count", [(26, 12), pytest.param(24, 40,
                                                                marks=pytest.mark.slow)],
                         ids=["seed26", "seed24"])
def test_unit_random_fp16_layers_with_ew(seed, count):
    """nv_small + EW / LUT / SRAMIF + fp16: fp16 EW (MUL then ALU incl. EQL) with fp16 memory
    and fp32 register operands, CV and MC memories."""
    from tb.sdp_unit import run_layers
    layers = fp16_layers(NV_SMALL_EXT_FP16, seed, count, 160)
    assert sum(_is_fp16(NV_SMALL_EXT_FP16, p) and not p.get("rtl_rejects") for p in layers) \
        >= count // 3
    run_layers(NV_SMALL_EXT_FP16, layers, seed=seed, latency=(1, 24), backpressure=0.3)


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [(500, 40), pytest.param(501, 300,
                                                                 marks=pytest.mark.slow)],
                         ids=["seed500", "seed501"])
def test_random_fp16_sdp_programs_rtl_matches_golden(tmp_path, seed, count):
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), count, seed=seed)
    fp16 = sum(any("NVDLA_SDP.D_DATA_FORMAT_0, 0xa)" in f.read_text()
                   for f in Path(p).glob("*.cfg")) for p in paths)
    assert fp16 >= count // 3, fp16                  # programs with an fp16 layer
    assert_all_pass(playback(paths, NV_SMALL_FP16, max_cycles=1_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count, show=20)


@pytest.mark.slow
def test_unit_random_fp16_layers_nv_full():
    """nv_full: 16 lanes, 2 atoms per 512-bit word, int16 beside fp16, CV and MC memories."""
    from tb.sdp_unit import run_layers
    full = NvdlaConfig.preset("nv_full")
    layers = fp16_layers(full, 22, 24, 600, ew_off=0.3)
    assert sum(_is_fp16(full, p) and not p.get("rtl_rejects") for p in layers) >= 3
    run_layers(full, layers, seed=22, latency=(1, 24), backpressure=0.3)


def _brdma_on(cfg, p):
    rb = register_map(cfg)["SDP_RDMA"]
    return not (p["rdma"].get("D_BRDMA_CFG", rb["D_BRDMA_CFG"].reset) & 1)   # BRDMA_DISABLE


#: fp16 program mutations the golden model rejects: (name, block, register, fields, applies)
INVALID_FP16 = [
    ("out_int8", "sdp", "D_DATA_FORMAT", {"OUT_PRECISION": 0}, None),
    ("out_int16", "sdp", "D_DATA_FORMAT", {"OUT_PRECISION": 1}, None),
    ("rdma_proc_int8", "rdma", "D_FEATURE_MODE_CFG", {"PROC_PRECISION": 0}, None),
    ("in_int8", "rdma", "D_FEATURE_MODE_CFG", {"IN_PRECISION": 0}, None),
    ("brdma_one_byte", "rdma", "D_BRDMA_CFG", {"BRDMA_DATA_SIZE": 0}, _brdma_on),
]


def test_unit_invalid_fp16_layers_finish_without_memory_traffic():
    """fp16 layers broken in a precision rule (output precision, the RDMA's processing or
    input precision, a one-byte operand DMA): the golden model rejects them and the RTL ends
    them without DMA, between fp16 layers that run."""
    from tb.sdp_unit import golden, run_layers
    from tests.test_sdp import _image
    cfg = NV_SMALL_FP16
    rmap = register_map(cfg)
    rng = np.random.default_rng(30)
    layers = fp16_layers(cfg, 31, 3, 64, pdp_share=0, fp16_share=1)
    for name, blk, reg, fields, applies in INVALID_FP16:
        while True:
            p = random_program(cfg, rng, 64)
            if _is_fp16(cfg, p) and (applies is None or applies(cfg, p)):
                break
        prog = {"sdp": dict(p["sdp"]), "rdma": dict(p["rdma"]), "s": {}, "images": p["images"],
                "lut": None, "shape": p["shape"], "invalid": True, "name": name}
        _set(rmap["SDP" if blk == "sdp" else "SDP_RDMA"], prog[blk], reg, **fields)
        with pytest.raises((SdpProgramError, NotImplementedError)):
            golden(cfg, prog, _image(prog))
        layers.insert(int(rng.integers(len(layers) + 1)), prog)
    run_layers(cfg, layers, seed=30, latency=(1, 24), backpressure=0.3)
