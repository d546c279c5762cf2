"""The CDP on the generated core, on the playback engine (:mod:`tb.playback`, Verilator):

- NVDLA's 19 public cdp_* traces (nv_small, one batch under random AXI back-pressure), each
  checked by its CRCs, plus a program the unit's checks reject (int16 input on an int8 build),
  which must complete without touching memory, and one trace rerun with polls of its counters
  afterwards;
- constrained-random CDP programs (:mod:`sim.cdp.random_programs`: every window, both bypasses,
  LE linear/exponent, priorities, random LUTs loaded over the CSB, values that hit
  interpolation, underflow and overflow) written as traces with golden CRCs and guard bands:
  300 on nv_small, 50 on a build with CDP throughput 8 and a 512-bit DBBIF, 240 on nv_small
  with int16 and 60 on that build with CDP throughput 4 (int8 and int16 layers mixed, also
  within the ping-pong pairs: the precision is chosen per layer), RTL against the golden model
  bit for bit under random back-pressure and latency;
- fp16 (``fp16=True``: fp16 data with NaNs, infinities and denormals, fp16-mode LUTs): 40
  programs on nv_small_fp16 (nv_small + fp16, tests/test_pdp_fp16_rtl.py's build), 400 more
  and 120 on a CDP-throughput-4 build with int8, int16 and fp16 in the slow suite; 30 traces
  whose NaN / Inf / saturation / LUT counters of both groups are read back against the golden
  model's registers;
- the invalid programs of ``write_invalid_traces`` on nv_small, its int8 and int16 ones on
  nv_small with int16 and its int8 and fp16 ones on nv_small_fp16: the RTL ends each layer and
  writes nothing outside the programmed output (the guard bands' CRCs).
"""

from __future__ import annotations

import os
import re
import shutil
import zlib

import pytest

from arch.config import NvdlaConfig
from sim.cdp.program import FP16, INT16
from sim.cdp.random_programs import write_random_traces, write_invalid_traces

from .conftest import (NV_SMALL_FP16, NV_SMALL_INT16, NV_SMALL_T8, TRACES, assert_all_pass,
                       playback)
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
#: the shared int16 build (tests/conftest.py) has CDP throughput 4: an int16 atom is one
#: transfer of 4 lanes
NV_SMALL_T4_INT16 = NV_SMALL_INT16
#: int16 at CDP throughput 1 (an int16 atom is 4 transfers of one lane; the slow suite's)
NV_SMALL_INT16_T1 = NV_SMALL_INT16.replace(name="nv_small_int16_t1", cdp_throughput=1)


_rtl = playback
_check = assert_all_pass
CDP_DIR = TRACES / "nv_small"


def _names():
    if not CDP_DIR.is_dir():
        return []
    return sorted(n for n in os.listdir(CDP_DIR) if n.startswith("cdp_"))


_REJECTED = """
mem_init(pri_mem, 0x80000000, 0x100, ALL_ZERO);
reg_write(NVDLA_CDP.D_DATA_FORMAT_0, 0x1);
reg_write(NVDLA_CDP.D_DST_BASE_ADDR_LOW_0, 0x80000040);
reg_write(NVDLA_CDP_RDMA.D_SRC_BASE_ADDR_LOW_0, 0x80000000);
reg_write(NVDLA_CDP_RDMA.D_DATA_FORMAT_0, 0x1);
reg_write(NVDLA_CDP_RDMA.D_SRC_DMA_CFG_0, 0x1);
reg_write(NVDLA_CDP.D_DST_DMA_CFG_0, 0x1);
reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_CDP_RDMA.D_OP_ENABLE_0, 0x1);
intr_notify(CDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000000, 0x100, {crc:#x});
"""


# cdp_8x8x64_lrn3_int8_10 (PERF_ENABLE.LUT_EN on) and its counters, as the naive reference
# of tests/test_cdp.py counts them on that trace's data
_COUNTED = "cdp_8x8x64_lrn3_int8_10"
_COUNTS = {"D_PERF_LUT_UFLOW": 804, "D_PERF_LUT_OFLOW": 4, "D_PERF_LUT_HYBRID": 2314,
           "D_PERF_LUT_LE_HIT": 938, "D_PERF_LUT_LO_HIT": 36, "D_OUT_SATURATION": 2339}


def _counters_trace(tmp_path):
    src = CDP_DIR / _COUNTED
    d = tmp_path / "cdp_counters"
    d.mkdir()
    for f in os.listdir(src):
        if f.endswith(".dat"):
            shutil.copy(src / f, d / f)
    text = (src / f"{_COUNTED}.cfg").read_text()
    text += "".join(f"poll_reg_equal(NVDLA_CDP.{reg}_0, {v:#x});\n"
                    for reg, v in _COUNTS.items())
    (d / "cdp_counters.cfg").write_text(text)
    return d


@pytest.mark.rtl
def test_public_cdp_traces_rtl(tmp_path):
    names = _names()
    if not names:
        pytest.skip(f"public traces not found at {CDP_DIR}")
    assert len(names) == 19
    rejected = make_trace(tmp_path, _REJECTED.format(crc=zlib.crc32(bytes(0x100))),
                          "cdp_rejected_int16")
    extra = [str(rejected), str(_counters_trace(tmp_path))]
    _check(_rtl([str(CDP_DIR / n) for n in names] + extra, NV_SMALL, max_cycles=200_000),
           len(names) + len(extra))


#: int8, int16 and fp16 with CDP throughput 4 (an fp16 atom is one transfer of 4 lanes; the
#: int16 converter widths beside the fp16 path): slow suite only
NV_SMALL_T4_ALL = NV_SMALL_T4_INT16.replace(name="nv_small_t4_int16_fp16",
                                            data_types=frozenset({"int8", "int16", "fp16"}))


def _fp16_layers(path):
    """How many layers of a random trace are fp16 (its CDP_RDMA D_DATA_FORMAT writes)."""
    name = os.path.basename(path)
    text = open(os.path.join(path, f"{name}.cfg")).read()
    return sum(int(v, 16) & 3 == FP16 for v in
               re.findall(r"NVDLA_CDP_RDMA\.D_DATA_FORMAT_0, (0x[0-9a-f]+)", text))


#: fp16 on 8 CDP lanes (an fp16 atom of 32 bytes is 16 channels: two transfers), as nv_full
#: has them, on nv_small_256 with Atomic-K 32, 32-byte atoms and a 256-bit DBBIF: slow suite
NV_SMALL_256_C8_FP16 = NvdlaConfig.preset("nv_small_256").replace(
    name="nv_small_256_c8_fp16", data_types=frozenset({"int8", "fp16"}), atomic_k=32,
    memory_atom=32, dbbif_width=256, cdp_throughput=8)

FP16_SHARDS = [(NV_SMALL_FP16, 400, 40)] + [
    pytest.param(NV_SMALL_FP16, seed, 200, marks=pytest.mark.slow) for seed in (401, 402)] + [
    pytest.param(NV_SMALL_T4_ALL, 403, 120, marks=pytest.mark.slow),
    pytest.param(NV_SMALL_256_C8_FP16, 404, 80, marks=pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", FP16_SHARDS,
                         ids=["nv_small_fp16-seed400", "nv_small_fp16-seed401",
                              "nv_small_fp16-seed402", "nv_small_t4_int16_fp16-seed403",
                              "nv_small_256_c8_fp16-seed404"])
def test_random_fp16_cdp_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """Random CDP programs with fp16 layers (NaNs, infinities, denormals in the data; fp16-mode
    LUTs placed on the layer's fp32 square sums) mixed with the build's integer layers, RTL
    against the golden model bit for bit under random back-pressure and latency."""
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed, fp16=True)
    assert sum(_fp16_layers(p) for p in paths) >= count // 3          # of 1.25 x count
    _check(_rtl(paths, cfg, max_cycles=400_000, seed=seed, busy=0.3, latency=(1, 24)), count)


_STATUS = ("D_NAN_INPUT_NUM", "D_INF_INPUT_NUM", "D_NAN_OUTPUT_NUM", "D_OUT_SATURATION",
           "D_PERF_LUT_UFLOW", "D_PERF_LUT_OFLOW", "D_PERF_LUT_HYBRID", "D_PERF_LUT_LE_HIT",
           "D_PERF_LUT_LO_HIT")


def _add_status_polls(path, cfg):
    """Append to the trace ``path`` reads of both CDP groups' counters expecting what the
    golden model's registers hold after the trace (the LUT counters are written whatever
    the layers' random ``D_PERF_ENABLE.LUT_EN``); returns the values."""
    from pathlib import Path
    from sim.core import GoldenCore
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    f = next(Path(path).glob("*.cfg"))
    core = GoldenCore(cfg)
    res = run_golden(parse_trace(str(path), cfg), cfg, core=core)
    assert res.passed, res.message
    lines, values = [], []
    for g in (0, 1):
        core.csb_write(core.rmap.address("CDP.S_POINTER") >> 2, g)
        lines.append(f"reg_write(NVDLA_CDP.S_POINTER_0, {g:#x});")
        for reg in _STATUS:
            v = core.csb_read(core.rmap.address(f"CDP.{reg}") >> 2)
            values.append(v)
            lines.append(f"poll_reg_equal(NVDLA_CDP.{reg}_0, {v:#x});")
    f.write_text(f.read_text() + "\n".join(lines) + "\n")
    return values


@pytest.mark.rtl
def test_fp16_cdp_counters_rtl(tmp_path):
    """D_NAN_INPUT_NUM / D_INF_INPUT_NUM / D_NAN_OUTPUT_NUM, D_OUT_SATURATION and the five LUT
    counters of both CDP groups after random one- and two-layer traces (fp16 and int8
    layers) read what the golden model's registers hold."""
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), 30, seed=410, fp16=True,
                                two_layer_share=0.5)
    values = [_add_status_polls(p, NV_SMALL_FP16) for p in paths]
    n = len(_STATUS)
    assert sum(any(v[:3]) or any(v[n:n + 3]) for v in values) >= 5   # NaN / Inf counts
    _check(_rtl(paths, NV_SMALL_FP16, max_cycles=400_000, seed=410, busy=0.3,
                latency=(1, 24)), len(paths))


SHARDS = [(NV_SMALL, seed, 100) for seed in range(2)] + [(NV_SMALL_T8, 100, 25)] + \
    [(NV_SMALL_INT16, 200, 120)] + \
    [pytest.param(NV_SMALL_INT16_T1, 300, 60, marks=pytest.mark.slow),
     pytest.param(NV_SMALL, 2, 100, marks=pytest.mark.slow),
     pytest.param(NV_SMALL_INT16, 201, 120, marks=pytest.mark.slow)]


def _shard_id(cfg, seed):
    return f"{cfg.name}{'-int16' if 'int16' in cfg.data_types else ''}-seed{seed}"


def _int16_layers(path):
    """How many layers of a random trace are int16 (its CDP_RDMA D_DATA_FORMAT writes)."""
    name = os.path.basename(path)
    text = open(os.path.join(path, f"{name}.cfg")).read()
    return sum(int(v, 16) & 3 == INT16 for v in
               re.findall(r"NVDLA_CDP_RDMA\.D_DATA_FORMAT_0, (0x[0-9a-f]+)", text))


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS,
                         ids=[_shard_id(*getattr(p, "values", p)[:2]) for p in SHARDS])
def test_random_cdp_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed)
    if "int16" in cfg.data_types:
        assert sum(_int16_layers(p) for p in paths) >= count * 5 // 12     # of 1.25 x count
    _check(_rtl(paths, cfg, max_cycles=400_000, seed=seed, busy=0.3, latency=(1, 24)), count)


INVALID = [(NV_SMALL, 0), (NV_SMALL_INT16, 0), (NV_SMALL_INT16, INT16),
           (NV_SMALL_FP16, 0), (NV_SMALL_FP16, FP16)]
_PREC = {0: "int8", INT16: "int16", FP16: "fp16"}


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, prec", INVALID,
                         ids=[f"{_shard_id(c, 0)[:-6]}-{_PREC[p]}" for c, p in INVALID])
def test_invalid_cdp_programs_rtl_finish_and_write_nothing_outside(tmp_path, cfg, prec):
    made = write_invalid_traces(cfg, str(tmp_path), prec=prec)
    assert len(made) >= 8
    _check(_rtl([p for p, _ in made], cfg, max_cycles=200_000), len(made))
