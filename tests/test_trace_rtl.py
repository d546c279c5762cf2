"""The RTL trace engines on the generated core.

Self-tests of the cocotb engine (tb/trace_rtl.py + tb/cocotb_trace.py, default simulator)
that need no datapath (synthetic traces: backdoor memory, CSB writes and polls, an interrupt
raised through GLB, CRC checks, batch isolation, timeouts), and NVDLA's public nv_small
traces on the playback engine (tb/playback, Verilator): those whose units all have RTL
(``RTL_UNITS``) run in batches that must pass; the others are listed as skipped with the
missing units. tests/test_playback.py checks that both engines agree.
"""

from __future__ import annotations

import os
import zlib

import pytest

from arch.config import NvdlaConfig
from sim.trace import parse_trace
from sim.trace_run import ENGINES, EngineUnavailable
from tb import trace_rtl
from tb.trace_rtl import RTL_UNITS, expected_to_pass, needed_units, run_rtl_batch, split_batches

from .conftest import NV_SMALL_EXT, TRACES
from .test_trace import make_trace

CFG = NvdlaConfig.preset("nv_small")
NV_SMALL = TRACES / "nv_small"
# Their CRCs assume an SDP with the EW stage and LUT, which plain nv_small lacks.
EW_LUT_TRACES = ("sdp_3x3x32_ew_lo_lin_int8", "sdp_3x3x33_ew_int8_reg_0",
                 "sdp_3x3x33_ew_le_exp_int8")
N_BATCHES = 2                       # public traces: pytest -n 2 runs the batches side by side
PUBLIC_MAX_CYCLES = 300_000


def _make(tmp_path, name, text, dats=None):
    return make_trace(tmp_path, text, name, dats)


def _dat(data: bytes, offset=0) -> str:
    payload = " ".join(f"0x{b:02x}" for b in data)
    return f"{{offset:{offset:#x}, size:{len(data)}, payload:{payload}}}\n"


def _run(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except EngineUnavailable as e:
        pytest.skip(str(e))


def _playback(*args, **kwargs):
    from tb.playback import run_playback_batch
    return _run(run_playback_batch, *args, **kwargs)


# -- host side, no simulator ---------------------------------------------------------------------
def test_engine_is_registered():
    assert ENGINES["rtl-cocotb"] is trace_rtl.run_rtl


def test_split_batches():
    assert split_batches(list(range(5)), 2) == [[0, 2, 4], [1, 3]]
    assert split_batches([1], 4) == [[1]]
    assert sorted(sum(split_batches(list(range(17)), 3), [])) == list(range(17))


def test_expectation_is_data_driven(tmp_path):
    d = _make(tmp_path, "u", "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);\n"
                            "reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);\n"
                            "reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x0);\n")
    tr = parse_trace(str(d), CFG)
    assert needed_units(tr) == {"SDP", "PDP"}
    assert expected_to_pass(tr, {"SDP", "PDP"}) == (True, "")
    ok, why = expected_to_pass(tr, {"SDP"})
    assert not ok and why == "the RTL has no PDP datapath yet"


# -- synthetic traces on the RTL -----------------------------------------------------------------
def _synthetic(tmp_path):
    """(traces, expectations): a batch exercising every command without a datapath."""
    data = bytes((i * 37 + 11) & 0xFF for i in range(0x300))
    crc_img = zlib.crc32(bytes(0x40) + data[:0x1c0]) & 0xFFFFFFFF
    crc_gap = zlib.crc32(data[0x200:0x300]) & 0xFFFFFFFF
    # an image in two records with a hole, loaded at +0x40 over a zeroed range
    dat = _dat(data[:0x1c0]) + _dat(data[0x200:0x300], 0x1c0)
    good = _make(tmp_path, "good", f"""
mem_init(pri_mem, 0x80000000, 0x1000, ALL_ZERO);
mem_load(pri_mem, 0x80000040, "img.dat");
reg_write(NVDLA_SDP.S_POINTER_0, 0x1);
sync_notify(NVDLA_SDP, sync_sdp);
reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x123);
sync_wait(NVDLA_CACC, sync_sdp);
reg_write(NVDLA_SDP.D_DST_BASE_ADDR_LOW_0, 0x90000040);
poll_reg_equal(NVDLA_SDP.S_POINTER_0, 0x1);
poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x123);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);
intr_notify(SDP_0, sync_id_0);
poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x0);
check_crc(sync_id_0, pri_mem, 0x80000000, 0x200, {crc_img:#x});
check_crc(sync_id_0, 1, 0x80000200, 0x100, {crc_gap:#x});
check_nothing(sync_id_0);
""", {"img.dat": dat})
    # After a batch reset: registers back at reset values, memory empty.
    fresh = _make(tmp_path, "fresh", f"""
poll_reg_equal(NVDLA_SDP.S_POINTER_0, 0x0);
poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x0);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);
intr_notify(SDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000000, 0x200, {zlib.crc32(bytes(0x200)):#x});
""")
    # A masked source: the pin stays low, the status bit still counts.
    masked = _make(tmp_path, "masked", """
reg_write(NVDLA_GLB.S_INTR_MASK_0, 0x1);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);
intr_notify(SDP_0, sync_id_0);
check_nothing(sync_id_0);
""")
    bad_crc = _make(tmp_path, "bad_crc", """
mem_load(pri_mem, 0x80001000, "img.dat");
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);
intr_notify(SDP_0, s);
check_crc(s, pri_mem, 0x80001000, 0x10, 0x12345678);
check_crc(s, pri_mem, 0x80001000, 0x10, 0x12345678);
""", {"img.dat": _dat(data[:0x10])})
    # Two layers without a datapath: an enable, then GLB's S_INTR_SET stands in for the done
    # interrupt; the second source is masked (its status bit counts, the pin stays low).
    layers = _make(tmp_path, "layers", """
reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);
intr_notify(SDP_0, a);
reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_GLB.S_INTR_MASK_0, 0x2);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x2);
intr_notify(SDP_1, b);
check_nothing(b);
""")
    malformed = _make(tmp_path, "malformed", "reg_write(NVDLA_SDP.S_POINTER_0, 0x1);\n"
                                             "bogus_command(0x1);\n")
    return [good, fresh, masked, layers, malformed, bad_crc], zlib.crc32(data[:0x10]) & 0xFFFFFFFF


def _check_synthetic(results, crc_bad):
    by = {r.name: r for r in results}
    for name in ("good", "fresh", "masked", "layers"):
        assert by[name].passed, f"{name}: {by[name].message}"
        assert by[name].engine == "rtl" and by[name].cycle_unit == "cycles"
    for name in ("good", "fresh", "masked"):            # no D_OP_ENABLE: no layer
        assert by[name].layer_cycles == 0 and by[name].layers == [], name
    # Layer 1: the enable is accepted at cycle k, S_INTR_SET at k + 1 sets the status bit at
    # that edge and the pin rises one cycle later. Layer 2: masked, so the cycle of the
    # status read that first saw the bit: the enable at k, the mask at k + 1, the set at
    # k + 2, the read right after the burst at k + 3.
    lay = by["layers"]
    assert lay.layers == [2, 3], lay.layers
    assert lay.layer_cycles == sum(lay.layers) < lay.cycles
    good = by["good"]
    assert [c.passed for c in good.checks] == [True, True]
    assert 10 < good.cycles < 2000
    bad = by["bad_crc"]
    assert not bad.passed and len(bad.failed_checks) == 2     # the trace went on after one
    assert {c.actual for c in bad.checks} == {crc_bad}
    assert "expected 0x12345678, actual" in bad.message
    # a malformed trace fails alone, without stopping the batch
    assert not by["malformed"].passed
    assert "unknown command" in by["malformed"].message


@pytest.mark.rtl
def test_synthetic_batch(tmp_path):
    traces, crc_bad = _synthetic(tmp_path)
    seen = []
    results = _run(run_rtl_batch, traces, CFG, max_cycles=5000, on_result=seen.append)
    _check_synthetic(results, crc_bad)
    assert sorted(r.name for r in seen) == sorted(r.name for r in results)


@pytest.mark.rtl
def test_timeouts(tmp_path):
    """A missing interrupt and a poll that never matches end their traces with timeouts
    (a CDP layer enabled without its CDP_RDMA group never starts, so it never completes)."""
    intr = _make(tmp_path, "no_intr", """
reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x1);
intr_notify(CDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000000, 0x10, 0x0);
""")
    poll = _make(tmp_path, "no_match", "poll_reg_equal(NVDLA_SDP.S_POINTER_0, 0x1);\n")
    r, r2 = _run(run_rtl_batch, [intr, poll], CFG, max_cycles=3000)
    assert not r.passed and not r.checks, r.message
    assert "timeout waiting for intr_notify(CDP_0) after 300" in r.message, r.message
    assert "DBBIF 0 read / 0 write bursts" in r.message, r.message
    if "CDP" not in RTL_UNITS:
        assert "the RTL has no CDP datapath yet" in r.message
    assert 3000 <= r.cycles < 3100 + 128     # + the register files' reset rewrite
    assert not r2.passed
    assert "timeout waiting for poll_reg_equal(NVDLA_SDP.S_POINTER_0, 0x1) after 30" in \
        r2.message and "reads 0x0" in r2.message, r2.message


@pytest.mark.rtl
@pytest.mark.slow
def test_synthetic_batch_verilator(tmp_path):
    """The same batch on Verilator without AXI back-pressure (a Verilator build takes
    minutes the first time)."""
    traces, crc_bad = _synthetic(tmp_path)
    results = _run(run_rtl_batch, traces, CFG, sim="verilator", max_cycles=5000,
                   backpressure=False)
    _check_synthetic(results, crc_bad)


# -- NVDLA's public traces -----------------------------------------------------------------------
REFERENCE_TSV = TRACES / "nv_small_reference_cycles.tsv"
LAYER_TRACE = "sdp_8x8x32_bypass_int8_0"


@pytest.mark.rtl
def test_public_trace_layer_cycles_near_reference():
    """An SDP trace's layer cycles (last D_OP_ENABLE write to the interrupt) are part of the
    whole trace's cycles and within 30 % of what the original nv_small RTL takes."""
    from scripts.trace import read_reference
    if not (NV_SMALL / LAYER_TRACE).is_dir() or not REFERENCE_TSV.is_file():
        pytest.skip(f"public traces or reference cycles not found under {TRACES}")
    ref = read_reference(REFERENCE_TSV)[LAYER_TRACE]
    r = _playback([str(NV_SMALL / LAYER_TRACE)], CFG, max_cycles=PUBLIC_MAX_CYCLES)[0]
    assert r.passed, r.message
    assert 0 < r.layer_cycles < r.cycles and r.layers == [r.layer_cycles]
    assert abs(r.layer_cycles - ref.layer_cycles) <= 0.3 * ref.layer_cycles, \
        (r.layer_cycles, ref.layer_cycles)

def _public():
    """(expected to run: [name], needing missing units: [(name, reason)])."""
    if not NV_SMALL.is_dir():
        return [], []
    run, skip = [], []
    for name in sorted(os.listdir(NV_SMALL)):
        if not (NV_SMALL / name).is_dir():
            continue
        ok, why = expected_to_pass(parse_trace(str(NV_SMALL / name), CFG, load_images=False))
        (run.append(name) if ok else skip.append((name, why)))
    return run, skip


_RUN, _SKIP = _public()
# Convolution traces run long (up to ~300k layer cycles): they run in batches of about equal
# cycles in tests/test_conv_rtl.py; the PDP traces (pdp_*, sdp_pdp_*) run in one batch in
# tests/test_pdp_rtl.py, the cdp_* traces in one in tests/test_cdp_rtl.py; the rest runs here
# on the playback engine.
_CONV = [n for n in _RUN if n.startswith("dc_")]
_OWN = [n for n in _RUN if n.startswith(("pdp_", "sdp_pdp_", "cdp_"))]
_RUN = [n for n in _RUN if n not in _CONV and n not in _OWN]
_BATCHES = split_batches(_RUN, N_BATCHES) if _RUN else []


@pytest.mark.rtl
@pytest.mark.parametrize("batch", range(len(_BATCHES)) or [None],
                         ids=lambda b: "none" if b is None else f"batch{b}")
def test_public_traces_rtl(batch):
    if not NV_SMALL.is_dir():
        pytest.skip(f"public traces not found at {NV_SMALL}")
    if batch is None:
        pytest.skip(f"no public trace has all its units in the RTL yet (RTL_UNITS = "
                    f"{sorted(RTL_UNITS)})")
    names = _BATCHES[batch]
    results = _playback([str(NV_SMALL / n) for n in names], CFG, max_cycles=PUBLIC_MAX_CYCLES)
    bad = []
    for r in results:
        if r.name in EW_LUT_TRACES:           # must not pass on plain nv_small
            if r.passed or not r.failed_checks:
                bad.append(f"{r.name}: expected a CRC mismatch on plain nv_small, got "
                           f"{'PASS' if r.passed else r.message}")
        elif not r.passed:
            bad.append(f"{r.name}: {r.message}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name, reason", _SKIP or [(None, None)],
                         ids=[n for n, _ in _SKIP] or ["none"])
def test_public_trace_needs_missing_units(name, reason):
    if name is None:
        pytest.skip("every public trace has its units in the RTL (or no public traces)")
    pytest.skip(f"{name}: {reason}")


@pytest.mark.rtl
def test_public_ew_lut_traces_rtl_on_an_ew_lut_build():
    """The three EW/LUT traces pass on an nv_small build with the EW stage and the LUT."""
    if not NV_SMALL.is_dir():
        pytest.skip(f"public traces not found at {NV_SMALL}")
    cfg = NV_SMALL_EXT
    results = _playback([str(NV_SMALL / n) for n in EW_LUT_TRACES], cfg,
                        max_cycles=PUBLIC_MAX_CYCLES)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert len(results) == len(EW_LUT_TRACES) and not bad, "\n".join(bad)
