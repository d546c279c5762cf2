"""The PDP's fp16 pooling on the generated core (playback engine, Verilator, random AXI
back-pressure: 30 % busy, latency 1-24 cycles), RTL against the golden model bit for bit.

Build: nv_small_fp16 (nv_small with ``data_types`` int8 + fp16: one PDP lane, 8-byte atoms
of 4 fp16 channels). Programs: constrained-random PDP programs of
``sim.pdp.random_programs.write_random_traces`` (offline, split width, two-layer traces,
SDP->PDP flying layers, int8 and fp16), int8 and fp16 layers mixed (fp16 data with NaNs,
infinities, signed zeros, denormals and extremes; max / min / average; fp17 pad values and
reciprocals, random 17-bit codes too; NAN_TO_ZERO either way), and every invalid program of the golden
model's list on an fp16 layer (the layer ends, nothing written). The NaN / Inf status counters
are polled after random traces by ``test_fp16_nan_inf_counters_rtl``, with the SDP's that
feed flying layers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arch.config import NvdlaConfig
from sim.pdp import random_programs
from sim.pdp.random_programs import write_invalid_traces, write_random_traces

from .conftest import NV_SMALL_FP16, assert_all_pass, playback



def _fp16_programs(paths):
    """How many of the trace directories ``paths`` have a PDP layer pooling fp16."""
    word = "NVDLA_PDP.D_DATA_FORMAT_0, 0x2)"
    return sum(any(word in f.read_text() for f in Path(p).glob("*.cfg")) for p in paths)


def _flying_fp16_layers(paths):
    """How many PDP layers of the trace directories ``paths`` pool fp16 from the SDP
    (``FLYING_MODE`` ON_FLYING, bit 4 clear, and ``INPUT_DATA`` FP16)."""
    n = 0
    for p in paths:
        mode = fmt = None
        for line in next(Path(p).glob("*.cfg")).read_text().splitlines():
            if line.startswith("reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0"):
                mode = int(line.split(",")[1].strip(" );"), 0)
            elif line.startswith("reg_write(NVDLA_PDP.D_DATA_FORMAT_0"):
                fmt = int(line.split(",")[1].strip(" );"), 0)
            elif line.startswith("reg_write(NVDLA_PDP.D_OP_ENABLE_0"):
                n += mode is not None and not mode & 0x10 and fmt == 2
    return n


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [(400, 60), pytest.param(401, 300,
                                                                  marks=pytest.mark.slow)],
                         ids=["seed400", "seed401"])
def test_random_fp16_pdp_programs_rtl_matches_golden(tmp_path, seed, count):
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), count, seed=seed,
                                flying_fp16=True)
    assert _fp16_programs(paths) >= count // 4
    assert _flying_fp16_layers(paths) >= count // 15      # fp16 SDP -> PDP layers
    assert_all_pass(playback(paths, NV_SMALL_FP16, max_cycles=1_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count, show=20)


@pytest.mark.rtl
def test_golden_invalid_fp16_pdp_programs_rtl(tmp_path):
    """Every invalid program of the golden model's list on an fp16 layer finishes on the RTL
    with no DMA (the destination stays zero)."""
    invalid = write_invalid_traces(NV_SMALL_FP16, str(tmp_path), prec=2)
    assert len(invalid) >= 18
    for path, fld in invalid:               # the golden model names the field
        res = random_programs.run_trace_golden(path, NV_SMALL_FP16)
        assert not res.passed and fld in res.message, (path, fld, res.message)
    paths = [p for p, _ in invalid]
    assert_all_pass(playback(paths, NV_SMALL_FP16, max_cycles=100_000, busy=0.3,
                             latency=(1, 24)), len(paths), show=20)


#: the status counters polled after a trace: PDP's fp16 NaN / Inf counters, and those of the
#: SDP layers that feed a flying PDP layer (SDP's output NaNs and saturations, SDP_RDMA's
#: input NaNs / infinities)
_STATUS = {"PDP": ("D_NAN_INPUT_NUM", "D_INF_INPUT_NUM", "D_NAN_OUTPUT_NUM"),
           "SDP": ("D_STATUS_NAN_OUTPUT_NUM", "D_PERF_OUT_SATURATION"),
           "SDP_RDMA": ("D_STATUS_NAN_INPUT_NUM", "D_STATUS_INF_INPUT_NUM")}


def _add_status_polls(path, cfg, status=None):
    """Append to the trace ``path`` reads of both groups' status counters of ``status``
    ({block: registers}, default :data:`_STATUS`), expecting what the golden model's registers
    hold after the trace; returns the first block's values."""
    from sim.core import GoldenCore
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    core = GoldenCore(cfg)
    res = run_golden(parse_trace(str(path), cfg), cfg, core=core)
    assert res.passed, res.message
    lines, values = [], []
    status = _STATUS if status is None else status
    first = next(iter(status))
    for block, regs in status.items():
        for g in (0, 1):
            core.csb_write(core.rmap.address(f"{block}.S_POINTER") >> 2, g)
            lines.append(f"reg_write(NVDLA_{block}.S_POINTER_0, {g:#x});")
            for reg in regs:
                v = core.csb_read(core.rmap.address(f"{block}.{reg}") >> 2)
                if block == first:
                    values.append(v)
                lines.append(f"poll_reg_equal(NVDLA_{block}.{reg}_0, {v:#x});")
    cfg_file = next(Path(path).glob("*.cfg"))
    cfg_file.write_text(cfg_file.read_text() + "\n".join(lines) + "\n")
    return values


@pytest.mark.rtl
def test_fp16_nan_inf_counters_rtl(tmp_path):
    """D_NAN_INPUT_NUM / D_INF_INPUT_NUM / D_NAN_OUTPUT_NUM of both PDP groups after random
    one- and two-layer traces (fp16 and int8 layers, offline and SDP->PDP, so NVDLA's two
    input-count slots are exercised) read what the golden model's registers hold."""
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), 60, seed=410,
                                two_layer_share=0.7, flying_share=0.3, flying_fp16=True)
    assert _flying_fp16_layers(paths) >= 4
    values = [_add_status_polls(p, NV_SMALL_FP16) for p in paths]
    assert sum(any(v) for v in values) >= 10          # counts that are not all zero
    for p in paths:                                   # the golden model reads them back
        assert random_programs.run_trace_golden(p, NV_SMALL_FP16).passed
    assert_all_pass(playback(paths, NV_SMALL_FP16, max_cycles=1_000_000, seed=410, busy=0.3,
                             latency=(1, 24)), len(paths), show=20)
