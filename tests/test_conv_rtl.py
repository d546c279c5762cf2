"""The convolution pipeline on the generated core: NVDLA's dc_* traces and constrained-random
convolution programs, RTL against the golden model bit for bit.

Everything here runs on the playback engine (:mod:`tb.playback`: the Verilated core with its
memories and CSB master in C++; one build per configuration, shared by the batches through
the build lock). Each random program is a trace directory written by
:mod:`sim.conv.random_programs` with golden CRCs over the output surface plus guard bands, run
under random AXI back-pressure (30 % busy) and latency (1-24 cycles).

Default run: the 9 public dc_* traces (3 batches of about equal cycles), 300 random programs
of up to 200k MACs on nv_small (5 shards of 60) and 100 on nv_small_256 (Atomic-C 32, four
atoms per CBUF entry; 2 shards of 50).
"""

from __future__ import annotations

import os

import pytest

from arch.config import NvdlaConfig
from sim.conv.random_programs import write_random_traces
from sim.trace_run import EngineUnavailable

from .conftest import TRACES

NV_SMALL = NvdlaConfig.preset("nv_small")
NV_SMALL_256 = NvdlaConfig.preset("nv_small_256")
DC = TRACES / "nv_small"
# Public dc_* traces in batches of roughly equal layer cycles (reference: 315k, 296k, 217k,
# 77k, 48k, 36k, 19k, 18k, 0.2k).
DC_BATCHES = [
    ["dc_32x26x76_6x3x76x16_int8_0", "dc_1x1x8_1x1x8x1_int8_0"],
    ["dc_8192x1x1_2x3x1x41_int8_0", "dc_6x8x192_3x3x192x32_int8_0",
     "dc_4x1x8192_1x1x8192x1_int8_0"],
    ["dc_24x44x14_5x3x14x41_int8_0", "dc_8x16x128_3x3x128x32_int8",
     "dc_13x15x64_5x3x64x16_int8_0", "dc_14x7x49_3x4x49x32_int8_0"],
]


def _rtl(paths, cfg, **options):
    try:
        from tb.playback import run_playback_batch
        return run_playback_batch(paths, cfg, **options)
    except EngineUnavailable as e:
        pytest.skip(str(e))


def _check(results, count):
    assert len(results) == count
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)}/{count} programs differ from the golden model:\n" + \
        "\n".join(bad[:10])


def test_dc_batches_cover_the_public_traces():
    if not DC.is_dir():
        pytest.skip(f"public traces not found at {DC}")
    public = sorted(n for n in os.listdir(DC) if n.startswith("dc_"))
    assert sorted(sum(DC_BATCHES, [])) == public


@pytest.mark.rtl
@pytest.mark.parametrize("batch", range(len(DC_BATCHES)), ids=lambda b: f"batch{b}")
def test_public_dc_traces_rtl(batch):
    if not DC.is_dir():
        pytest.skip(f"public traces not found at {DC}")
    names = DC_BATCHES[batch]
    _check(_rtl([str(DC / n) for n in names], NV_SMALL, max_cycles=1_000_000), len(names))


SHARDS = [(NV_SMALL, seed, 60) for seed in range(5)] + \
    [(NV_SMALL_256, 100 + seed, 50) for seed in range(2)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS,
                         ids=[f"{c.name}-seed{s}" for c, s, _ in SHARDS])
def test_random_conv_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000)
    _check(_rtl(paths, cfg, max_cycles=1_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)
