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
