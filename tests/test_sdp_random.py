"""Constrained-random SDP programs: RTL against the golden model, bit for bit.

:mod:`sim.sdp.random_programs` draws offline SDP layers (random cube, strides, stages, operands
from registers or the B/N/E read DMAs, one or two ping-ponged layers per program) and writes
them as trace directories whose CRCs come from the golden model; each check covers the destination
surfaces plus guard bands, so a stray write fails it. The playback engine (:mod:`tb.playback`,
Verilator) then runs them in batches on the generated core under random AXI back-pressure and
latency.

Default run: 300 programs on nv_small (5 shards of 60, spread by ``pytest -n``) plus 40 on an
nv_small build with the EW stage and the LUT block. Invalid programs are rejected by the
golden model naming the field, and on the RTL they finish without writing.
"""

from __future__ import annotations

import pytest

from arch.config import NvdlaConfig
from sim.sdp.random_programs import write_invalid_traces, write_random_traces
from sim.trace import parse_trace
from sim.trace_run import EngineUnavailable, run_golden
from tests.conftest import NV_SMALL_EXT

NV_SMALL = NvdlaConfig.preset("nv_small")
NV_SMALL_EW = NV_SMALL_EXT
SHARDS = [(NV_SMALL, seed, 60) for seed in range(5)] + [(NV_SMALL_EW, 100, 40)]


def _rtl(paths, cfg, **options):
    try:
        from tb.playback import run_playback_batch
        return run_playback_batch(paths, cfg, max_cycles=200_000, **options)
    except EngineUnavailable as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("cfg", [NV_SMALL, NV_SMALL_EW], ids=lambda c: c.name)
def test_invalid_programs_are_rejected_by_the_golden_model(tmp_path, cfg):
    cases = write_invalid_traces(cfg, str(tmp_path))
    assert len(cases) >= 4
    for path, fld in cases:
        res = run_golden(parse_trace(path, cfg), cfg)
        assert not res.passed and fld in res.message, (fld, res.message)


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS,
                         ids=[f"{c.name}-seed{s}" for c, s, _ in SHARDS])
def test_random_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed)
    results = _rtl(paths, cfg, seed=seed, busy=0.3, latency=(1, 24))
    assert len(results) == count
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)}/{count} programs differ from the golden model:\n" + \
        "\n".join(bad[:10])


@pytest.mark.rtl
def test_invalid_programs_finish_on_rtl_without_writing(tmp_path):
    cfg = NV_SMALL
    cases = write_invalid_traces(cfg, str(tmp_path), seed=7)
    results = _rtl([p for p, _ in cases], cfg)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, "\n".join(bad)
