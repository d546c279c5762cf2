"""The PDP unit on the generated core: NVDLA's 12 pdp_* traces and the SDP->PDP flying trace
(sdp_pdp_32x16x32_pass_through_int8_0) of nv_small, plus invalid programs the check block
must reject (the layer completes, nothing is written), in one Verilator run under random AXI
back-pressure; every CRC must match.
"""

from __future__ import annotations

import os
import zlib

import pytest

from arch.config import NvdlaConfig
from sim.trace_run import EngineUnavailable
from tb.trace_rtl import run_rtl_batch

from .conftest import TRACES
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
DIR = TRACES / "nv_small"
PDP_TRACES = ["pdp_16x6x16_4x2_split_max_int8_0", "pdp_1x1x1_3x3_ave_int8_0",
              "pdp_1x3x8_8x8_ave_int8_0", "pdp_24x16x1_8x8_ave_int8_0",
              "pdp_28x28x8_2x2_max_int8_0", "pdp_7x9x10_3x3_int8", "pdp_8x8x32_1x1_int8_0",
              "pdp_8x8x32_1x1_int8_1", "pdp_8x8x64_2x2_ave_int8_0", "pdp_8x8x64_2x2_int8",
              "pdp_8x8x64_2x2_min_int8_0", "pdp_8x9x19_3x3_ave_int8_0",
              "sdp_pdp_32x16x32_pass_through_int8_0"]


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
    """The 13 public traces pass; the invalid programs finish without writing."""
    if not DIR.is_dir():
        pytest.skip(f"public traces not found at {DIR}")
    invalid = [str(_invalid(tmp_path, n, e)) for n, e in INVALID.items()]
    try:
        results = run_rtl_batch([str(DIR / n) for n in PDP_TRACES] + invalid, NV_SMALL,
                                sim="verilator", max_cycles=300_000)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert len(results) == len(PDP_TRACES) + len(INVALID)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)}/{len(results)} PDP traces fail:\n" + "\n".join(bad)
