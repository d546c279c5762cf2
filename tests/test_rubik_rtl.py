"""The Rubik unit on the generated core (playback engine, Verilator, random AXI back-pressure:
30 % busy, latency 1-24 cycles), RTL against the golden model (:mod:`sim.rubik`) bit for bit,
on the shared extended build ``NV_SMALL_EXT`` (nv_small + SRAMIF + SDP EW/LUT + BDMA + Rubik:
int8, 8-byte atoms, MC and CV memories):

* constrained-random programs of ``sim.rubik.random_programs.write_random_traces`` (contract,
  split and merge; MC / CV on either side; padded strides; two-layer ping-pong traces): a
  default shard of 40 and a slow shard of 160;
* every invalid program of the golden model's list (``write_invalid_traces``): the golden
  model names the field, the RTL finishes the layer with its interrupt and writes nothing
  (the output window, guard bands included, keeps its zero CRC).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.rubik.random_programs import (run_trace_golden, write_invalid_traces,
                                       write_random_traces)

from .conftest import NV_SMALL_EXT, assert_all_pass, playback

CFG = NV_SMALL_EXT
_OPTS = dict(busy=0.3, latency=(1, 24))


def _coverage(paths):
    """``(modes, input RAM types, output RAM types)`` the traces' RBK layers use."""
    modes, rin, rout = set(), set(), set()
    for p in paths:
        for f in Path(p).glob("*.cfg"):
            text = f.read_text()
            modes |= {int(v, 16) & 3 for v in
                      re.findall(r"NVDLA_RBK\.D_MISC_CFG_0, (0x[0-9a-fA-F]+)", text)}
            rin |= {int(v, 16) & 1 for v in
                    re.findall(r"NVDLA_RBK\.D_DAIN_RAM_TYPE_0, (0x[0-9a-fA-F]+)", text)}
            rout |= {int(v, 16) & 1 for v in
                     re.findall(r"NVDLA_RBK\.D_DAOUT_RAM_TYPE_0, (0x[0-9a-fA-F]+)", text)}
    return modes, rin, rout


def _random(tmp_path, seed, count):
    paths = write_random_traces(CFG, str(tmp_path), count, seed=seed)
    modes, rin, rout = _coverage(paths)
    assert modes == {0, 1, 2} and rin == {0, 1} and rout == {0, 1}, (modes, rin, rout)
    res = playback(paths, CFG, max_cycles=2_000_000, seed=seed, **_OPTS)
    assert_all_pass(res, len(paths))


@pytest.mark.rtl
def test_random_rubik_programs_rtl_matches_golden(tmp_path):
    """40 random programs, all three modes, MC and CV input and output."""
    _random(tmp_path, seed=11, count=40)


@pytest.mark.rtl
@pytest.mark.slow
def test_random_rubik_programs_rtl_matches_golden_slow(tmp_path):
    """160 more random programs."""
    _random(tmp_path, seed=1011, count=160)


@pytest.mark.rtl
def test_invalid_rubik_programs_finish_without_writing(tmp_path):
    invalid = write_invalid_traces(CFG, str(tmp_path))
    assert len(invalid) >= 13
    for path, fld in invalid:               # the golden model names the field
        res = run_trace_golden(path, CFG)
        assert not res.passed and fld in res.message, (path, fld, res.message)
    paths = [p for p, _ in invalid]
    assert_all_pass(playback(paths, CFG, max_cycles=200_000, seed=3, **_OPTS), len(paths))
