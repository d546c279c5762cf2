"""The PDP unit on the generated core: NVDLA's 12 pdp_* traces and the SDP->PDP flying trace
(sdp_pdp_32x16x32_pass_through_int8_0) of nv_small, one Verilator run for all 13, under
random AXI back-pressure; every CRC must match.
"""

from __future__ import annotations

import os

import pytest

from arch.config import NvdlaConfig
from sim.trace_run import EngineUnavailable
from tb.trace_rtl import run_rtl_batch

from .conftest import TRACES

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


@pytest.mark.rtl
def test_public_pdp_traces_rtl():
    if not DIR.is_dir():
        pytest.skip(f"public traces not found at {DIR}")
    try:
        results = run_rtl_batch([str(DIR / n) for n in PDP_TRACES], NV_SMALL, sim="verilator",
                                max_cycles=300_000)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert len(results) == len(PDP_TRACES)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)}/{len(PDP_TRACES)} PDP traces fail:\n" + "\n".join(bad)
