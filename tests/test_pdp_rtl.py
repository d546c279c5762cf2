"""The PDP unit on the generated core (playback engine, Verilator, random AXI back-pressure:
30 % busy, latency 1-24 cycles), RTL against the golden model bit for bit:

* NVDLA's 12 pdp_* traces and the SDP->PDP flying trace (sdp_pdp_32x16x32_pass_through_int8_0)
  of nv_small, plus a few hand-written invalid programs;
* every invalid program of the golden model's list (``sim.pdp.random_programs
  .write_invalid_traces``: int8 layers on nv_small, int16 layers on nv_small_int16) and
  flying PDP layers whose SDP rejects its program: the layer completes, nothing is written;
* constrained-random programs of ``sim.pdp.random_programs.write_random_traces`` (offline,
  split width, two-layer traces, SDP->PDP flying layers): int8 on nv_small (300, 3 shards of
  100) and nv_small_t8 (50: 8 PDP lanes, 512-bit DBBIF); int8 and int16 mixed on
  nv_small_int16 (nv_small with ``data_types`` int8 + int16: 300, 3 shards of 100, each with
  at least 50 programs pooling int16, SDP->PDP int16 among them); slow: 100 on nv_full (int8,
  int16 and fp16, 8 PDP lanes, 32-byte atoms; with its NaN / Inf counters) plus its int16 and
  fp16 invalid programs. fp16 on nv_small: tests/test_pdp_fp16_rtl.py.
"""

from __future__ import annotations

import functools
import os
import zlib
from pathlib import Path

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.pdp import random_programs
from sim.pdp.random_programs import write_invalid_traces, write_random_traces

from .conftest import NV_SMALL_INT16, NV_SMALL_T8, TRACES, assert_all_pass, playback
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
DIR = TRACES / "nv_small"
PDP_TRACES = ["pdp_16x6x16_4x2_split_max_int8_0", "pdp_1x1x1_3x3_ave_int8_0",
              "pdp_1x3x8_8x8_ave_int8_0", "pdp_24x16x1_8x8_ave_int8_0",
              "pdp_28x28x8_2x2_max_int8_0", "pdp_7x9x10_3x3_int8", "pdp_8x8x32_1x1_int8_0",
              "pdp_8x8x32_1x1_int8_1", "pdp_8x8x64_2x2_ave_int8_0", "pdp_8x8x64_2x2_int8",
              "pdp_8x8x64_2x2_min_int8_0", "pdp_8x9x19_3x3_ave_int8_0",
              "sdp_pdp_32x16x32_pass_through_int8_0"]


_rtl = playback
_check = functools.partial(assert_all_pass, show=20)


def test_list_covers_the_public_pdp_traces():
    if not DIR.is_dir():
        pytest.skip(f"public traces not found at {DIR}")
    public = sorted(n for n in os.listdir(DIR) if n.startswith(("pdp_", "sdp_pdp_")))
    assert sorted(PDP_TRACES) == public


#: invalid offline programs (field writes on top of a valid 8x8x8 2x2 max layer)
INVALID = {
    "int16": "reg_write(NVDLA_PDP.D_DATA_FORMAT_0, 0x1);",
    "window_past_input": "reg_write(NVDLA_PDP.D_POOLING_KERNEL_CFG_0, 0x707);",
    "pad_ge_kernel": "reg_write(NVDLA_PDP.D_POOLING_PADDING_CFG_0, 0x2);",
    "method3": "reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0, 0x13);",
    "split_sum": "reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0, 0x111);\n"
                 "reg_write(NVDLA_PDP_RDMA.D_OPERATION_MODE_CFG_0, 0x1);",
}


def _invalid(tmp_path, name, extra):
    """A 2x2 max layer over an 8x8x8 cube, made invalid by ``extra``; the layer must end
    (interrupt) with the destination untouched."""
    zero = zlib.crc32(bytes(0x200)) & 0xFFFFFFFF
    text = f"""mem_init(pri_mem, 0x80000000, 0x1000, ALL_ZERO);
mem_load(pri_mem, 0x80000000, "in.dat");
reg_write(NVDLA_PDP_RDMA.D_DATA_CUBE_IN_WIDTH_0, 0x7);
reg_write(NVDLA_PDP_RDMA.D_DATA_CUBE_IN_HEIGHT_0, 0x7);
reg_write(NVDLA_PDP_RDMA.D_DATA_CUBE_IN_CHANNEL_0, 0x7);
reg_write(NVDLA_PDP_RDMA.D_FLYING_MODE_0, 0x1);
reg_write(NVDLA_PDP_RDMA.D_SRC_BASE_ADDR_LOW_0, 0x80000000);
reg_write(NVDLA_PDP_RDMA.D_SRC_LINE_STRIDE_0, 0x40);
reg_write(NVDLA_PDP_RDMA.D_SRC_SURFACE_STRIDE_0, 0x200);
reg_write(NVDLA_PDP_RDMA.D_SRC_RAM_CFG_0, 0x1);
reg_write(NVDLA_PDP.D_DATA_CUBE_IN_WIDTH_0, 0x7);
reg_write(NVDLA_PDP.D_DATA_CUBE_IN_HEIGHT_0, 0x7);
reg_write(NVDLA_PDP.D_DATA_CUBE_IN_CHANNEL_0, 0x7);
reg_write(NVDLA_PDP.D_DATA_CUBE_OUT_WIDTH_0, 0x3);
reg_write(NVDLA_PDP.D_DATA_CUBE_OUT_HEIGHT_0, 0x3);
reg_write(NVDLA_PDP.D_DATA_CUBE_OUT_CHANNEL_0, 0x7);
reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0, 0x11);
reg_write(NVDLA_PDP.D_POOLING_KERNEL_CFG_0, 0x110101);
reg_write(NVDLA_PDP.D_DST_BASE_ADDR_LOW_0, 0x80000800);
reg_write(NVDLA_PDP.D_DST_LINE_STRIDE_0, 0x20);
reg_write(NVDLA_PDP.D_DST_SURFACE_STRIDE_0, 0x80);
reg_write(NVDLA_PDP.D_DST_RAM_CFG_0, 0x1);
{extra}
reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_PDP_RDMA.D_OP_ENABLE_0, 0x1);
intr_notify(PDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000800, 0x200, {zero:#x});
"""
    ones = " ".join(["0x01"] * 0x200)
    return make_trace(tmp_path, text, f"pdp_invalid_{name}",
                      {"in.dat": f"{{offset:0x0, size:512, payload:{ones}}}\n"})


@pytest.mark.rtl
def test_public_pdp_traces_rtl(tmp_path):
    """The 13 public traces pass; the invalid programs finish without writing; random layers
    (8 of the 32 with split width) match the naive reference."""
    if not DIR.is_dir():
        pytest.skip(f"public traces not found at {DIR}")
    extra = [str(_invalid(tmp_path, n, e)) for n, e in INVALID.items()]
    paths = [str(DIR / n) for n in PDP_TRACES] + extra
    _check(_rtl(paths, NV_SMALL, max_cycles=300_000, busy=0.3, latency=(1, 24)), len(paths))


def _flying_sdp_rejected(tmp_path, count=3, seed=5):
    """``count`` SDP->PDP layers (PDP enabled first) whose SDP program is rejected (Winograd
    on a build without it): each PDP layer must still complete, writing nothing."""
    rng = np.random.default_rng(seed)
    layers = []
    while len(layers) < count:
        try:
            layer = random_programs.flying_layer(NV_SMALL, rng, slot=len(layers),
                                                 int8_only=True)
        except random_programs._Redraw:
            continue
        random_programs._set(NV_SMALL, layer, "SDP", "D_FEATURE_MODE_CFG", WINOGRAD=1)
        layers.append(layer)
    crcs = [zlib.crc32(bytes(layer["window"][1])) for layer in layers]
    return random_programs.write_trace(str(tmp_path), "pdp_flying_sdp_rejected", layers, crcs)


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, prec", [(NV_SMALL, 0), (NV_SMALL_INT16, 1)],
                         ids=["nv_small-int8", "nv_small_int16-int16"])
def test_golden_invalid_pdp_programs_rtl(tmp_path, cfg, prec):
    """Every invalid program of the golden model's list (sim.pdp.random_programs
    .write_invalid_traces, int8 layers on nv_small, int16 layers on nv_small_int16) finishes
    on the RTL with no DMA: the destination stays zero; so do flying PDP layers whose SDP
    rejects its program (the SDP's abort ends them), and SDP -> PDP layers whose SDP output is
    not the PDP's input cube or whose PDP program is invalid (the PDP drains the SDP's output,
    so neither unit waits forever)."""
    invalid = write_invalid_traces(cfg, str(tmp_path), prec=prec)
    assert len(invalid) >= 18
    flying = random_programs.write_flying_invalid_traces(cfg, str(tmp_path), seed=prec)
    assert len(flying) == len(random_programs.FLYING_INVALID_MUTATIONS)
    invalid += flying
    for path, fld in invalid:               # the golden model names the field
        res = random_programs.run_trace_golden(path, cfg)
        assert not res.passed and fld in res.message, (path, fld, res.message)
    paths = [p for p, _ in invalid]
    if cfg is NV_SMALL:
        paths.append(_flying_sdp_rejected(tmp_path))
    _check(_rtl(paths, cfg, max_cycles=100_000, busy=0.3, latency=(1, 24)), len(paths))


#: random programs of the golden model's generator (offline, split width, two-layer traces,
#: SDP->PDP flying layers): 300 on nv_small, 50 on the 8-lane build with a 512-bit DBBIF
#: (int8), 300 on nv_small_int16 (int8 and int16 layers mixed)
SHARDS = [(NV_SMALL, seed, 100) for seed in range(3)] + [(NV_SMALL_T8, 100, 50)] + \
    [(NV_SMALL_INT16, seed, 100) for seed in (200, 201, 202)]


def _int16_programs(paths):
    """How many of the trace directories ``paths`` have a PDP layer pooling int16."""
    word = "NVDLA_PDP.D_DATA_FORMAT_0, 0x1)"
    return sum(any(word in f.read_text() for f in Path(p).glob("*.cfg")) for p in paths)


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS,
                         ids=[f"{c.name}-seed{s}" for c, s, _ in SHARDS])
def test_random_pdp_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed)
    if "int16" in cfg.data_types:
        assert _int16_programs(paths) >= 50
    _check(_rtl(paths, cfg, max_cycles=1_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


@pytest.mark.rtl
@pytest.mark.slow
def test_nv_full_pdp_int8_int16_rtl(tmp_path):
    """nv_full (8 PDP lanes, 32-byte atoms: 16 int16 / fp16 channels, SDP->PDP at 16 lanes,
    512-bit DBBIF): 100 random programs with int8, int16 and fp16 layers mixed (fp16 SDP->PDP
    too) match the golden model, memory and both groups' NaN / Inf counters (and those of the
    SDP layers feeding them), and the int16 and fp16 invalid programs finish without
    writing. The build takes about 10 minutes."""
    from .test_pdp_fp16_rtl import _add_status_polls, _flying_fp16_layers, _fp16_programs
    cfg = NvdlaConfig.preset("nv_full")
    paths = write_random_traces(cfg, str(tmp_path / "random"), 100, seed=300,
                                flying_fp16=True)
    assert _int16_programs(paths) >= 30 and _fp16_programs(paths) >= 30
    assert _flying_fp16_layers(paths) >= 5
    for p in paths:
        _add_status_polls(p, cfg)
    invalid = [p for prec in (1, 2)
               for p, _ in write_invalid_traces(cfg, str(tmp_path / f"invalid{prec}"), prec=prec)]
    _check(_rtl(paths + invalid, cfg, max_cycles=1_000_000, seed=300, busy=0.3,
                latency=(1, 24)), len(paths) + len(invalid))
