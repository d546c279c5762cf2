"""bench/pdp_cdp_throughput.py on one small PDP and one small CDP layer of nv_small (``--quick``),
so the bench keeps running: the layers pass their golden CRCs on the RTL and the figures it
reports are consistent with the layer sizes."""

from __future__ import annotations

import pytest

from bench import pdp_cdp_throughput as bench
from sim.trace_run import EngineUnavailable


@pytest.mark.rtl
def test_quick_bench_nv_small():
    try:
        rows = bench.measure(bench.build("nv_small"), quick=True, log=lambda s: None)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert [r["layer"] for r in rows] == ["pdp_2x2s2_max_q", "cdp_lrn5_q"]
    pdp, cdp = rows
    assert all(r["passed"] for r in rows), [r.get("message") for r in rows]
    # 16 x 4 x 16 pooled 2x2 / 2 -> 8 x 2 x 16; LRN keeps 4 x 4 x 32
    assert (pdp["elements_in"], pdp["elements_out"]) == (1024, 256)
    assert (cdp["elements_in"], cdp["elements_out"]) == (512, 512)
    assert (pdp["bytes_read"], pdp["bytes_written"]) == (1024, 256)
    assert pdp["T"] == cdp["T"] == 1
    assert pdp["element_bound"] == 1024 and cdp["element_bound"] == 512
    assert pdp["dbb_bound"] == (1024 + 256) / 8
    for r in rows:
        # never faster than the datapath allows; the start-up of a small layer costs
        # tens of cycles, not hundreds
        assert r["element_bound"] <= r["cycles"] < r["element_bound"] + 200
        assert r["of_bound"] == pytest.approx(r["element_bound"] / r["cycles"])
    text = bench.table(rows)
    assert "pdp_2x2s2_max_q" in text and "cdp_lrn5_q" in text and "FAILED" not in text
