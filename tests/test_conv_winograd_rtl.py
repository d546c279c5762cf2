"""Winograd convolution on the generated core: constrained-random Winograd programs
(:mod:`sim.conv.winograd_programs`: strides 1..3, padding on every side with pad values, PRA and
CACC truncation, the input convertor, random SDP stages after the flying output, random bank
splits; pairs sharing the CBUF: data and weight reuse between Winograd layers, a direct and a
Winograd layer in either order) as trace directories with golden CRCs over the output surface
plus guard bands, played on the playback engine under random AXI back-pressure (30 % busy) and
latency (1-24 cycles), RTL against the golden model bit for bit.

The builds are ``NV_LARGE_WINO`` (tests/conftest.py: nv_large's 64 x 32 datapath, int8 and
int16, small otherwise) and ``NV_LARGE_WINO_2COL`` (the same on nv_full's two-column CBUF
entries); the Winograd datapath is :mod:`hw.conv.wino_dat`. Its build takes several
minutes, so these run in the slow suite (``-m slow``); the default suite checks the CSC's
Winograd sequence and sums in :mod:`tests.test_csc_winograd` and the check's verdicts in
:mod:`tests.test_conv_checks`.
"""

from __future__ import annotations

import pytest

from sim.conv import winograd_programs as wp

from .conftest import NV_LARGE_WINO, NV_LARGE_WINO_2COL, NV_LARGE_WINO_FP16, assert_all_pass, \
    playback


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("cfg,prec,seed,count,share", [
    (NV_LARGE_WINO, 0, 700, 24, 0.4), (NV_LARGE_WINO, 1, 701, 16, 0.4),
    (NV_LARGE_WINO_2COL, 0, 710, 24, 0.4), (NV_LARGE_WINO_2COL, 1, 711, 16, 0.4),
    (NV_LARGE_WINO_FP16, 2, 720, 24, 0.4), (NV_LARGE_WINO_FP16, None, 721, 16, 0.5)],
    ids=["int8-seed700", "int16-seed701", "2col-int8-seed710", "2col-int16-seed711",
         "fp16-seed720", "fp16-mixed-seed721"])
def test_random_winograd_programs_rtl_matches_golden(tmp_path, cfg, prec, seed, count, share):
    paths = wp.write_random_wino_traces(cfg, str(tmp_path), count, seed=seed, prec=prec,
                                        pair_share=share, max_macs=400_000)
    assert_all_pass(playback(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count)
