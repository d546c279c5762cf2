"""The PDP's fp16 pooling on the generated core (playback engine, Verilator, random AXI
back-pressure: 30 % busy, latency 1-24 cycles), RTL against the golden model bit for bit.

Build: nv_small_fp16 (nv_small with ``data_types`` int8 + fp16: one PDP lane, 8-byte atoms
of 4 fp16 channels). Programs: constrained-random PDP programs of
``sim.pdp.random_programs.write_random_traces`` (offline, split width, two-layer traces,
SDP->PDP int8 flying layers), int8 and fp16 layers mixed (fp16 data with NaNs, infinities,
signed zeros, denormals and extremes; max / min / average; fp17 pad values and reciprocals,
random 17-bit codes too; NAN_TO_ZERO either way), and every invalid program of the golden
model's list on an fp16 layer (the layer ends, nothing written). The NaN / Inf status counters
are not checked here (the traces compare memory only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arch.config import NvdlaConfig
from sim.pdp import random_programs
from sim.pdp.random_programs import write_invalid_traces, write_random_traces

from .conftest import assert_all_pass, playback

#: nv_small with fp16 beside int8
NV_SMALL_FP16 = NvdlaConfig.preset("nv_small").replace(
    name="nv_small_fp16", data_types=frozenset({"int8", "fp16"}))


def _fp16_programs(paths):
    """How many of the trace directories ``paths`` have a PDP layer pooling fp16."""
    word = "NVDLA_PDP.D_DATA_FORMAT_0, 0x2)"
    return sum(any(word in f.read_text() for f in Path(p).glob("*.cfg")) for p in paths)


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [(400, 60), pytest.param(401, 300,
                                                                  marks=pytest.mark.slow)],
                         ids=["seed400", "seed401"])
def test_random_fp16_pdp_programs_rtl_matches_golden(tmp_path, seed, count):
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), count, seed=seed)
    assert _fp16_programs(paths) >= count // 4
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


_STATUS = ("D_NAN_INPUT_NUM", "D_INF_INPUT_NUM", "D_NAN_OUTPUT_NUM")


def _add_status_polls(path, cfg):
    """Append to the trace ``path`` reads of both PDP groups' NaN / Inf counters, expecting
    what the golden model's registers hold after the trace; returns the values."""
    from sim.core import GoldenCore
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    core = GoldenCore(cfg)
    res = run_golden(parse_trace(str(path), cfg), cfg, core=core)
    assert res.passed, res.message
    lines, values = [], []
    for g in (0, 1):
        core.csb_write(core.rmap.address("PDP.S_POINTER") >> 2, g)
        lines.append(f"reg_write(NVDLA_PDP.S_POINTER_0, {g:#x});")
        for reg in _STATUS:
            v = core.csb_read(core.rmap.address(f"PDP.{reg}") >> 2)
            values.append(v)
            lines.append(f"poll_reg_equal(NVDLA_PDP.{reg}_0, {v:#x});")
    cfg_file = next(Path(path).glob("*.cfg"))
    cfg_file.write_text(cfg_file.read_text() + "\n".join(lines) + "\n")
    return values


@pytest.mark.rtl
def test_fp16_nan_inf_counters_rtl(tmp_path):
    """D_NAN_INPUT_NUM / D_INF_INPUT_NUM / D_NAN_OUTPUT_NUM of both PDP groups after random
    one- and two-layer traces (fp16 and int8 layers, offline and SDP->PDP, so NVDLA's two
    input-count slots are exercised) read what the golden model's registers hold."""
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), 60, seed=410,
                                two_layer_share=0.7, flying_share=0.3)
    values = [_add_status_polls(p, NV_SMALL_FP16) for p in paths]
    assert sum(any(v) for v in values) >= 10          # counts that are not all zero
    for p in paths:                                   # the golden model reads them back
        assert random_programs.run_trace_golden(p, NV_SMALL_FP16).passed
    assert_all_pass(playback(paths, NV_SMALL_FP16, max_cycles=1_000_000, seed=410, busy=0.3,
                             latency=(1, 24)), len(paths), show=20)
