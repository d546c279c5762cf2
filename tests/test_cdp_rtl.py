"""The CDP on the generated core: NVDLA's 19 public cdp_* traces (nv_small, Verilator, one
batch under random AXI back-pressure), each checked by its CRCs, plus a program the unit's
checks reject (int16 input on an int8 build), which must complete without touching memory,
and one trace rerun with polls of its counters afterwards."""

from __future__ import annotations

import os
import shutil
import zlib

import pytest

from arch.config import NvdlaConfig
from sim.trace_run import EngineUnavailable
from tb.trace_rtl import run_rtl_batch

from .conftest import TRACES
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
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
    try:
        results = run_rtl_batch([str(CDP_DIR / n) for n in names] + extra, NV_SMALL,
                                sim="verilator", max_cycles=200_000)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert len(results) == len(names) + len(extra)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)} of {len(results)} failed:\n" + "\n".join(bad)
