"""The CDP on the generated core, on the playback engine (:mod:`tb.playback`, Verilator):

- NVDLA's 19 public cdp_* traces (nv_small, one batch under random AXI back-pressure), each
  checked by its CRCs, plus a program the unit's checks reject (int16 input on an int8 build),
  which must complete without touching memory, and one trace rerun with polls of its counters
  afterwards;
- constrained-random CDP programs (:mod:`sim.cdp.random_programs`: every window, both bypasses,
  LE linear/exponent, priorities, random LUTs loaded over the CSB, values that hit
  interpolation, underflow and overflow) written as traces with golden CRCs and guard bands:
  300 on nv_small and 50 on a build with CDP throughput 8 and a 512-bit DBBIF, RTL against the
  golden model bit for bit under random back-pressure and latency;
- the invalid programs of ``write_invalid_traces`` on nv_small: the RTL ends each layer and
  writes nothing outside the programmed output (the guard bands' CRCs).
"""

from __future__ import annotations

import os
import shutil
import zlib

import pytest

from arch.config import NvdlaConfig
from sim.cdp.random_programs import write_random_traces, write_invalid_traces

from .conftest import TRACES, assert_all_pass, playback
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
#: CDP (and PDP) throughput 8 with a 512-bit DBBIF, nv_small-sized otherwise: the same build as
#: tests/test_pdp_rtl.py's, so the two suites share one playback build.
NV_SMALL_T8 = NV_SMALL.replace(name="nv_small_t8", pdp_throughput=8, cdp_throughput=8,
                               dbbif_width=512)


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


SHARDS = [(NV_SMALL, seed, 100) for seed in range(3)] + [(NV_SMALL_T8, 100, 50)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS,
                         ids=[f"{c.name}-seed{s}" for c, s, _ in SHARDS])
def test_random_cdp_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed)
    _check(_rtl(paths, cfg, max_cycles=400_000, seed=seed, busy=0.3, latency=(1, 24)), count)


@pytest.mark.rtl
def test_invalid_cdp_programs_rtl_finish_and_write_nothing_outside(tmp_path):
    made = write_invalid_traces(NV_SMALL, str(tmp_path))
    assert made
    _check(_rtl([p for p, _ in made], NV_SMALL, max_cycles=200_000), len(made))
