"""The RTL SDP's precision conversions (data-format spec, Precision Conversion, Table 30 and
Equation 3) against the golden model (:mod:`sim.sdp`, "Precision conversion"), bit for bit.

* :class:`hw.nvfloat.Fp16ToInt16` on every fp16 code against
  :func:`sim.sdp.convert.fp16_to_int16`;
* unit level (:func:`tb.sdp_unit.run_layers`, Amaranth's simulator, AXI memory models with
  random back-pressure and latency; every byte of memory compared after each layer, so
  nothing may be written outside the output surfaces, every status counter compared, the
  PDP stream compared): random layers of :func:`sim.sdp.random_programs.random_program`
  with ``convert=True`` -- the read DMA's 16to8, the write DMA's 8to16, both at once, and
  (builds with fp16) int16 -> fp16 and fp16 -> int16 in the output converter -- mixed with
  layers that convert nothing, on nv_small_int16 (int8 + int16) and nv_small_fp16_2col
  (int8 + int16 + fp16);
* invalid conversions (int8 <-> fp16, the output converter narrowing int16 to int8, read-DMA
  conversions other than 16to8, a flying 8 -> 16): the golden model rejects them and the RTL
  ends them without DMA;
* on the generated core (playback engine, Verilator): random trace programs with conversion
  layers on nv_small_int16 (the default suite's int16 build) and, slow, on
  nv_small_fp16_2col.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.sdp import SdpProgramError
from sim.sdp.random_programs import random_program, write_random_traces

from .conftest import NV_SMALL_FP16_2COL, NV_SMALL_INT16, assert_all_pass, playback
from .test_sdp_fp16_rtl import _set


def test_fp16_to_int16_unit_every_code():
    """:class:`hw.nvfloat.Fp16ToInt16` on all 65,536 fp16 codes (NaNs, infinities, zeros,
    denormals, ties) against :func:`sim.sdp.convert.fp16_to_int16`."""
    from amaranth.sim import Simulator
    from hw.nvfloat import Fp16ToInt16
    from sim.sdp.convert import fp16_to_int16
    codes = np.arange(1 << 16)
    want = fp16_to_int16(codes)
    dut = Fp16ToInt16()
    got = []

    async def run(ctx):
        for h in codes:
            ctx.set(dut.a, int(h))
            got.append(ctx.get(dut.o))

    sim = Simulator(dut)
    sim.add_testbench(run)
    sim.run()
    bad = np.nonzero(np.asarray(got) != want)[0]
    assert not len(bad), [(hex(int(codes[i])), got[i], int(want[i])) for i in bad[:8]]


def conversion_layers(cfg, seed, count, max_elems, convert_share=0.75, pdp_share=0.1):
    """``count`` layers the golden model accepts, ``convert_share`` of them converting
    precision (:func:`random_program` ``convert=True``), random perf enables; some sent to
    PDP (their stream compared)."""
    from tb.sdp_unit import golden
    from tests.test_sdp import _image
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    rng = np.random.default_rng(seed)
    layers = []
    while len(layers) < count:
        want_conv = rng.random() < convert_share
        p = random_program(cfg, rng, max_elems, convert=True)
        if (p["convert"] is not None) != want_conv:
            continue
        sdp, rdma = dict(p["sdp"]), dict(p["rdma"])
        _set(sb, sdp, "D_PERF_ENABLE", PERF_SAT_EN=int(rng.integers(2)),
             PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
        _set(rb, rdma, "D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)),
             PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
        if cfg.pdp and rng.random() < pdp_share:
            _set(sb, sdp, "D_FEATURE_MODE_CFG", OUTPUT_DST=1)
        prog = {"sdp": sdp, "rdma": rdma, "s": {}, "images": p["images"], "lut": None,
                "shape": p["shape"], "convert": p["convert"]}
        try:
            golden(cfg, prog, _image(prog))
        except SdpProgramError:
            continue
        layers.append(prog)
    return layers


def _kinds(layers):
    return {p["convert"] for p in layers}


@pytest.mark.parametrize("seed, count", [(60, 14), pytest.param(61, 60,
                                                                marks=pytest.mark.slow)],
                         ids=["seed60", "seed61"])
def test_unit_random_int8_int16_conversions(seed, count):
    """nv_small_int16 (8-byte atoms: 8 int8 / 4 int16 channels, one lane): 16to8, 8to16 and
    both, 1x1 cubes (one run of atoms) and strided ones, odd int16 surface counts (the read
    DMA's extra surface), under AXI back-pressure."""
    from tb.sdp_unit import run_layers
    layers = conversion_layers(NV_SMALL_INT16, seed, count, 160)
    assert {"16to8", "8to16", "16to8to16"} <= _kinds(layers)
    run_layers(NV_SMALL_INT16, layers, seed=seed, latency=(1, 24), backpressure=0.3)


@pytest.mark.parametrize("seed, count", [(66, 14), pytest.param(67, 60,
                                                                marks=pytest.mark.slow)],
                         ids=["seed66", "seed67"])
def test_unit_random_conversions_with_fp16(seed, count):
    """nv_small_fp16_2col (int8 + int16 + fp16): every conversion kind, int16 -> fp16 (the
    saturation counter counts +-65504 outputs, magnitudes from 65520 up saturating to them) and fp16 -> int16
    (NaN -> -32768, saturation, no counts), under AXI back-pressure."""
    from tb.sdp_unit import run_layers
    layers = conversion_layers(NV_SMALL_FP16_2COL, seed, count, 160)
    assert {"int16_to_fp16", "fp16_to_int16"} <= _kinds(layers)
    run_layers(NV_SMALL_FP16_2COL, layers, seed=seed, latency=(1, 24), backpressure=0.3)


def test_unit_int16_to_fp16_saturates_at_65504():
    """int16 -> fp16 layers whose converter results pass the fp16 range (scale 0x7fff, no
    shift: 17-bit values up to +-65535): NVDLA's Verilog gives +-65504, never an infinity,
    and counts them as saturated."""
    from tb.sdp_unit import golden, run_layers
    from tests.test_sdp import _image
    cfg = NV_SMALL_FP16_2COL
    sb = register_map(cfg)["SDP"]
    layers = [L for L in conversion_layers(cfg, 68, 12, 160, convert_share=1.0)
              if L["convert"] == "int16_to_fp16"][:3]
    assert layers
    big = 0
    for L in layers:
        _set(sb, L["sdp"], "D_CVT_OFFSET", CVT_OFFSET=0)
        _set(sb, L["sdp"], "D_CVT_SCALE", CVT_SCALE=0x7FFF)
        _set(sb, L["sdp"], "D_CVT_SHIFT", CVT_SHIFT=0)
        _set(sb, L["sdp"], "D_PERF_ENABLE", PERF_SAT_EN=1)
        out = np.asarray(golden(cfg, L, _image(L)).output).astype(np.int64) & 0xFFFF
        assert not np.any((out & 0x7FFF) == 0x7C00)                  # no infinity
        big += int(np.sum((out & 0x7FFF) == 0x7BFF))
    assert big > 0
    run_layers(cfg, layers, seed=68, latency=(1, 24), backpressure=0.3)


def test_unit_flying_int16_fp16_conversions():
    """Flying layers (the accumulator's int32 values, or an fp16 convolution's fp32 codes with
    NaNs, infinities and signed zeros) converting int16 -> fp16 and fp16 -> int16 on
    nv_small_fp16_2col, with operands from memory or registers, output to memory, PDP or EQL,
    between flying layers that convert nothing (:func:`tests.test_sdp_flying.run_flying_layers`:
    memory, counters and PDP stream against the golden model)."""
    from tests.test_sdp_flying import _input_cube, _valid, flying_layer, run_flying_layers
    from tests.test_sdp_fp16 import _fp32_cube
    cfg = NV_SMALL_FP16_2COL
    sb = register_map(cfg)["SDP"]
    rng = np.random.default_rng(66)
    layers, kinds = [], []
    while len(layers) < 8:
        layer = flying_layer(cfg, rng, 96, fp16=True)
        proc = layer["shape"][3]
        if proc == 0:
            continue
        convert = len(layers) % 4 != 3
        if convert:
            _set(sb, layer["sdp"], "D_DATA_FORMAT", OUT_PRECISION=3 - proc)
        if proc == 2:
            layer["cube"] = _fp32_cube(rng, layer["shape"])
        else:
            layer["cube"] = _input_cube(rng, layer["shape"])
        if _valid(cfg, layer):
            layers.append(layer)
            kinds.append((proc, convert))
    assert {(1, True), (2, True)} <= set(kinds)
    run_flying_layers(cfg, layers, seed=66)


@pytest.mark.slow
def test_unit_random_conversions_nv_full():
    """nv_full: 16 lanes (an int8 position is two transfers, an int16 one one), 32-byte
    atoms two to a 512-bit word (the one-atom lines of the twin-surface modes start on
    either lane), every conversion kind, CV and MC memories."""
    from tb.sdp_unit import run_layers
    full = NvdlaConfig.preset("nv_full")
    layers = conversion_layers(full, 71, 16, 600)
    assert {"16to8", "8to16", "int16_to_fp16", "fp16_to_int16"} <= _kinds(layers)
    run_layers(full, layers, seed=71, latency=(1, 24), backpressure=0.3)


#: conversion mutations the golden model rejects: (name, {block: {register: fields}})
INVALID_CONVERSIONS = [
    ("int8_to_fp16", {"sdp": {"D_DATA_FORMAT": {"PROC_PRECISION": 0, "OUT_PRECISION": 2}},
                      "rdma": {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 0,
                                                      "PROC_PRECISION": 0}}}),
    ("fp16_to_int8", {"sdp": {"D_DATA_FORMAT": {"PROC_PRECISION": 2, "OUT_PRECISION": 0}},
                      "rdma": {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 2,
                                                      "PROC_PRECISION": 2}}}),
    ("cvt_int16_to_int8", {"sdp": {"D_DATA_FORMAT": {"PROC_PRECISION": 1, "OUT_PRECISION": 0}},
                           "rdma": {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 1,
                                                           "PROC_PRECISION": 1}}}),
    ("rdma_8to16", {"sdp": {"D_DATA_FORMAT": {"PROC_PRECISION": 1, "OUT_PRECISION": 1}},
                    "rdma": {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 0, "PROC_PRECISION": 1}}}),
    ("rdma_fp16_to_int8", {"sdp": {"D_DATA_FORMAT": {"PROC_PRECISION": 0, "OUT_PRECISION": 0}},
                           "rdma": {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 2,
                                                           "PROC_PRECISION": 0}}}),
    ("flying_8to16", {"sdp": {"D_DATA_FORMAT": {"PROC_PRECISION": 0, "OUT_PRECISION": 1},
                              "D_FEATURE_MODE_CFG": {"FLYING_MODE": 1}},
                      "rdma": {"D_FEATURE_MODE_CFG": {"IN_PRECISION": 0, "PROC_PRECISION": 0,
                                                      "FLYING_MODE": 1}}}),
]


def test_unit_invalid_conversions_finish_without_memory_traffic():
    """Each invalid conversion between layers that convert (nv_small_fp16_2col): the golden
    model rejects it, the RTL finishes it within a few cycles with no AXI request and the
    counters of an empty run."""
    from tb.sdp_unit import golden, run_layers
    from tests.test_sdp import _image
    cfg = NV_SMALL_FP16_2COL
    rmap = register_map(cfg)
    rng = np.random.default_rng(64)
    layers = conversion_layers(cfg, 65, 4, 64, convert_share=1.0, pdp_share=0)
    for name, changes in INVALID_CONVERSIONS:
        p = random_program(cfg, rng, 64)
        prog = {"sdp": dict(p["sdp"]), "rdma": dict(p["rdma"]), "s": {}, "images": p["images"],
                "lut": None, "shape": p["shape"], "invalid": True, "name": name}
        for blk, regs in changes.items():
            block = rmap["SDP" if blk == "sdp" else "SDP_RDMA"]
            for reg, fields in regs.items():
                _set(block, prog[blk], reg, **fields)
        with pytest.raises(SdpProgramError):
            golden(cfg, prog, _image(prog))
        layers.insert(int(rng.integers(len(layers) + 1)), prog)
    run_layers(cfg, layers, seed=64, latency=(1, 24), backpressure=0.3)


def _converting_programs(cfg, paths):
    """How many trace programs have a layer that converts precision (SDP PROC != OUT, or
    SDP_RDMA IN != PROC)."""
    import re
    rmap = register_map(cfg)

    def field(block, reg, name, value):
        f = next(x for x in rmap[block][reg].fields if x.name == name)
        return (value >> f.lsb) & ((1 << f.width) - 1)

    count = 0
    for p in paths:
        text = "".join(f.read_text() for f in Path(p).glob("*.cfg"))
        fmts = [int(v, 16) for v in re.findall(r"NVDLA_SDP\.D_DATA_FORMAT_0, (0x[0-9a-f]+)", text)]
        modes = [int(v, 16) for v in
                 re.findall(r"NVDLA_SDP_RDMA\.D_FEATURE_MODE_CFG_0, (0x[0-9a-f]+)", text)]
        sdp = any(field("SDP", "D_DATA_FORMAT", "PROC_PRECISION", v)
                  != field("SDP", "D_DATA_FORMAT", "OUT_PRECISION", v) for v in fmts)
        rdma = any(field("SDP_RDMA", "D_FEATURE_MODE_CFG", "IN_PRECISION", v)
                   != field("SDP_RDMA", "D_FEATURE_MODE_CFG", "PROC_PRECISION", v)
                   for v in modes)
        count += sdp or rdma
    return count


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [(520, 24), pytest.param(521, 200,
                                                                 marks=pytest.mark.slow)],
                         ids=["seed520", "seed521"])
def test_random_conversion_programs_rtl_int16(tmp_path, seed, count):
    """Random trace programs with conversion layers (16to8, 8to16, both) on the generated
    nv_small_int16 core under AXI back-pressure (memory CRCs against the golden model)."""
    paths = write_random_traces(NV_SMALL_INT16, str(tmp_path), count, seed=seed,
                                max_elems=400, convert=True)
    assert _converting_programs(NV_SMALL_INT16, paths) >= count // 3
    assert_all_pass(playback(paths, NV_SMALL_INT16, max_cycles=1_000_000, seed=seed,
                             busy=0.3, latency=(1, 24)), count, show=20)


@pytest.mark.rtl
@pytest.mark.slow                       # a Verilator build of its own: slow suite
@pytest.mark.parametrize("seed, count", [(530, 60)], ids=["seed530"])
def test_random_conversion_programs_rtl_fp16(tmp_path, seed, count):
    """The same on nv_small_fp16_2col: int16 <-> fp16 beside the int8 <-> int16 ones."""
    paths = write_random_traces(NV_SMALL_FP16_2COL, str(tmp_path), count, seed=seed,
                                max_elems=400, convert=True)
    assert _converting_programs(NV_SMALL_FP16_2COL, paths) >= count // 3
    assert_all_pass(playback(paths, NV_SMALL_FP16_2COL, max_cycles=1_000_000, seed=seed,
                             busy=0.3, latency=(1, 24)), count, show=20)
