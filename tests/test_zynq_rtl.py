"""ZynqCore (the core with the AXI4-Lite CSB bridge and the DBBIF as m_axi) driven by
cocotbext-axi as the Zynq PS would: register access, error answers, and an NVDLA SDP trace with
its CRC (cocotb, slow: the whole nv_small core)."""

import pytest

from tests.conftest import TRACES

TRACE = "sdp_1x1x1_pass_through_int8"


@pytest.mark.slow
@pytest.mark.rtl
def test_zynq_core_over_axi():
    from arch.config import load_config
    from hw.board import ZynqCore
    from tb.runner import run_cocotb
    cfg = load_config("nv_small")
    trace = TRACES / "nv_small" / TRACE
    env = {"NVDLA_TRACE": str(trace)} if trace.is_dir() else {}
    run_cocotb(cfg, "tb.cocotb_zynq", top=ZynqCore(cfg), top_name="nvdla_zynq", extra_env=env)
