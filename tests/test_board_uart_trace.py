"""The board top (core + UART bridge + block RAM) driven only through its UART pins plays a
public NVDLA SDP trace and matches its CRC (cocotb, slow: the whole nv_small core)."""


import pytest

from tests.conftest import TRACES

TRACE = "sdp_1x1x1_pass_through_int8"


@pytest.mark.slow
@pytest.mark.rtl
def test_board_plays_sdp_trace_over_uart():
    from arch.config import load_config
    from hw.board import BoardCore
    from tb.runner import run_cocotb
    trace = TRACES / "nv_small" / TRACE
    if not trace.is_dir():
        pytest.skip(f"{trace} is absent")
    cfg = load_config("nv_small")
    run_cocotb(cfg, "tb.cocotb_board_uart", top=BoardCore(cfg, 65536, 4),
               top_name="nvdla_board_core",
               extra_env={"NVDLA_TRACE": str(trace), "UART_DIVISOR": "4",
                          "BOARD_MEM_BYTES": "65536"})
