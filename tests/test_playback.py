"""The playback engine (tb/playback: compiled C++ harness around the Verilated core).

Equivalence with the cocotb engine (same traces, back-pressure off: same pass/fail, CRCs,
cycles and layer cycles), the synthetic self-test batch of tests/test_trace_rtl.py under
random back-pressure, back-pressure and latency really delaying the core, the timeout of an
interrupt that never comes, and the rejection of a corrupted batch file.
"""

from __future__ import annotations

import struct

import pytest

from arch.config import NvdlaConfig
from sim.trace import parse_trace
from sim.trace_run import ENGINES, EngineUnavailable
from tb import trace_rtl

from .conftest import NV_SMALL_EXT, TRACES
from .test_trace import FILLS, rewrite_pass_through
from .test_trace_rtl import _check_synthetic, _make, _synthetic

CFG = NvdlaConfig.preset("nv_small")
NV_SMALL = TRACES / "nv_small"
# short public traces with a layer each (SDP and convolution)
EQUIV_TRACES = ["sdp_8x8x32_bypass_int8_0", "sdp_3x3x33_bs_bn_int8_0",
                "dc_1x1x8_1x1x8x1_int8_0", "dc_14x7x49_3x4x49x32_int8_0"]
EQUIV_TRACES_ICARUS = ["sdp_8x8x32_bypass_int8_0", "dc_1x1x8_1x1x8x1_int8_0"]

pytestmark = pytest.mark.rtl


def _playback(traces, cfg=CFG, **options):
    from tb.playback import run_playback_batch
    try:
        return run_playback_batch([str(t) for t in traces], cfg, **options)
    except EngineUnavailable as e:
        pytest.skip(str(e))


def _exe(cfg=CFG):
    from tb.playback import build_harness
    try:
        return build_harness(cfg)
    except EngineUnavailable as e:
        pytest.skip(str(e))


def _public(names):
    if not NV_SMALL.is_dir():
        pytest.skip(f"public traces not found at {NV_SMALL}")
    return [NV_SMALL / n for n in names]


def test_build_options():
    from tb.playback.driver import DEFAULT_OPTIONS, build_flags, describe_options
    args, make = build_flags(("O3", "cO2", "slowO0"))
    assert args[-1] == "-O3"                                # Verilator's own -O3
    assert make == {"OPT_FAST": "-O2", "OPT_GLOBAL": "-O3", "OPT_SLOW": "-O0"}
    assert "--output-split-cfuncs" in build_flags(DEFAULT_OPTIONS)[0]
    assert describe_options(("split",), 2).startswith("[split] verilator ")
    with pytest.raises(ValueError, match="unknown build option 'O9'"):
        build_flags(("O9",))


def test_build_record_and_runtime_cache():
    """The cached build says how it was built, phase by phase, and left Verilator's runtime
    objects in the shared cache for the next configuration."""
    from tb.playback.driver import DEFAULT_OPTIONS, RUNTIME_OBJECTS, build_record
    from tb.runner import BUILD
    rec = build_record(_exe())
    assert rec["options"] == list(DEFAULT_OPTIONS)
    assert list(rec["phases"]) == ["verilog", "verilate", "compile"]
    assert all(p["wall"] >= 0 and p["cpu"] >= 0 for p in rec["phases"].values())
    assert rec["phases"]["compile"]["cpu"] > 0 and rec["runtime"] in ("built", "cached")
    cached = {f.name for f in (BUILD / "verilator-runtime").glob("*/*.o")}
    assert {f"{n}.o" for n in RUNTIME_OBJECTS} <= cached


def test_engines_are_registered():
    assert ENGINES["rtl"] is trace_rtl.run_rtl_fast
    assert ENGINES["rtl-cocotb"] is trace_rtl.run_rtl


@pytest.mark.parametrize("sim", ["icarus", pytest.param("verilator", marks=pytest.mark.slow)])
def test_same_results_as_the_cocotb_engine(tmp_path, sim):
    """Back-pressure off: both engines agree on everything they measure. On Icarus the
    synthetic batch and two short layers, SDP and convolution (an Icarus run of the whole core is slow); on Verilator (slow suite: its
    cocotb build of the core takes minutes) public SDP and convolution layers too."""
    synthetic, _ = _synthetic(tmp_path)
    public = EQUIV_TRACES if sim == "verilator" else EQUIV_TRACES_ICARUS
    # and NVDLA's SDP pass-through rewritten with every command of the language
    paths = [str(p) for p in synthetic + _public(public) + [rewrite_pass_through(tmp_path)]]
    fast = _playback(paths, backpressure=False, max_cycles=300_000)
    try:
        slow = trace_rtl.run_rtl_batch(paths, CFG, sim=sim, backpressure=False,
                                       max_cycles=300_000)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert len(fast) == len(slow) == len(paths)
    for a, b in zip(fast, slow):
        assert a.name == b.name
        assert (a.passed, a.cycles, a.layer_cycles, a.layers) == \
            (b.passed, b.cycles, b.layer_cycles, b.layers), (a, b)
        assert [(c.where, c.actual) for c in a.checks] == [(c.where, c.actual) for c in b.checks]
    for r in fast[len(synthetic):]:
        assert r.passed and r.layer_cycles > 0, (r.name, r.message)


def test_synthetic_batch_under_backpressure(tmp_path):
    traces, crc_bad = _synthetic(tmp_path)
    seen = []
    results = _playback(traces, max_cycles=5000, on_result=seen.append)
    _check_synthetic(results, crc_bad)
    assert sorted(r.name for r in seen) == sorted(r.name for r in results)


def _every_command(tmp_path):
    """NVDLA's SDP pass-through rewritten with every command (tests/test_trace.py), that
    trace with a wrong reg_read_check and a wrong check_file, and a single shot among a
    masked and two unmasked sources."""
    good = rewrite_pass_through(tmp_path / "good")
    if good is None:
        pytest.skip(f"public traces not found at {NV_SMALL}")
    bad_dir = tmp_path / "bad" / good.name
    bad_dir.mkdir(parents=True)
    for f in good.iterdir():
        text = f.read_text()
        if f.suffix == ".cfg":
            text = text.replace("reg_read_check(NVDLA_SDP.S_POINTER_0, 0x0);",
                                "reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1);")
            text = text.replace(f"{FILLS[1][1]:#x}, {FILLS[1][2]:#x}, \"fill_ones.dat\"",
                                f"{FILLS[1][1]:#x}, {FILLS[1][2]:#x}, \"fill_all_zero.dat\"")
        (bad_dir / f.name).write_text(text)
    single = _make(tmp_path, "single_shot", """reg_write(NVDLA_GLB.S_INTR_MASK_0, 0x10);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x13);
intr_notify(s);
reg_read_check(NVDLA_GLB.S_INTR_STATUS_0, 0x10);
reg_read(NVDLA_GLB.S_INTR_STATUS_0, status);
check_nothing(s);
""")
    return good, bad_dir, single


def test_every_command_under_backpressure(tmp_path):
    """The rest of NVDLA's trace language on the RTL with random AXI back-pressure: the
    rewritten pass-through passes with every check, its broken copy fails on exactly the
    broken reg_read_check and check_file (and goes on), the single shot clears the two
    unmasked sources and leaves the masked one."""
    good, bad, single = _every_command(tmp_path)
    rg, rb, rs = _playback([good, bad, single], max_cycles=300_000)
    assert rg.passed, rg.message
    assert len(rg.checks) == 2 + len(FILLS) and all(c.passed for c in rg.checks)
    assert rg.layers and rg.layer_cycles > 0
    assert not rb.passed
    msgs = rb.message.split("; ")
    assert len(msgs) == 2, msgs
    assert "check_file(SDP_0_SDP_0_interrupt) dbb 0x80100040+0x28: 40 bytes differ, first at " \
        "0x80100040 (expected 0x00, actual 0xff)" in msgs[0]
    assert msgs[1].endswith("reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1): read 0x0")
    assert [c.passed for c in rb.checks].count(False) == 1
    assert rs.passed, rs.message


def test_latency_and_backpressure_delay_completion():
    """A fixed read/write latency of L cycles delays the layer by about L per dependent
    round trip; random stalls slow it further; every run still passes."""
    path = _public(["sdp_8x8x32_bypass_int8_0"])
    fixed = {lat: _playback(path, busy=0.0, latency=(lat, lat))[0] for lat in (1, 40)}
    stalled = _playback(path, busy=0.5, latency=(1, 40), seed=3)[0]
    other = _playback(path, busy=0.5, latency=(1, 40), seed=4)[0]
    for r in (*fixed.values(), stalled, other):
        assert r.passed, r.message
    assert fixed[40].layer_cycles >= fixed[1].layer_cycles + 39
    assert stalled.layer_cycles > fixed[1].layer_cycles
    assert stalled.cycles != other.cycles            # the seed drives the stalls


def test_interrupt_that_never_comes_times_out(tmp_path):
    never = _make(tmp_path, "no_intr", """
reg_write(NVDLA_SDP.S_POINTER_0, 0x0);
intr_notify(CDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000000, 0x10, 0x0);
""")
    after = _make(tmp_path, "after", "poll_reg_equal(NVDLA_SDP.S_POINTER_0, 0x0);\n")
    r, r2 = _playback([never, after], max_cycles=3000)
    assert not r.passed and not r.checks, r.message
    assert "no_intr.cfg:3: timeout waiting for intr_notify(CDP_0) after 30" in r.message
    assert "(GLB.S_INTR_STATUS=0x0, interrupt pin 0; DBBIF 0 read / 0 write bursts)" \
        in r.message, r.message
    # + the register files' rewrite of their read-back copies after reset (<= 128 cycles)
    assert 3000 <= r.cycles < 3100 + 128
    assert r2.passed, r2.message                     # the batch goes on after a timeout


def _batch(tmp_path):
    from tb.playback import encode_batch
    data = bytes(range(64))
    dat = "{offset:0x0, size:64, payload:" + " ".join(f"0x{b:02x}" for b in data) + "}\n"
    d = _make(tmp_path, "load", 'mem_load(pri_mem, 0x80000000, "a.dat");\n'
                                "reg_write(NVDLA_SDP.S_POINTER_0, 0x1);\n",
              {"a.dat": dat})
    return bytearray(encode_batch([parse_trace(str(d), CFG)], CFG))


def test_corrupted_batch_files_are_rejected(tmp_path):
    from tb.playback.driver import CMD, HEADER, TRACE, run_file
    exe = _exe()
    good = _batch(tmp_path)
    first_cmd = 8 + 4 + HEADER.size + 4 + TRACE.size
    n_cmds = struct.unpack_from("<I", good, first_cmd - TRACE.size + 4)[0]
    image = first_cmd + n_cmds * CMD.size

    def run(blob, name):
        path = tmp_path / f"{name}.bin"
        path.write_bytes(bytes(blob))
        return run_file(exe, path)

    ok = run(good, "good")
    assert ok.returncode == 0 and ok.stdout.count("\n") == 1, ok.stderr
    cases = {
        "cmd": (first_cmd + 4, "command list checksum mismatch: the command list is corrupted"),
        "img": (image + 20, "memory image checksum mismatch: the memory image is corrupted"),
        "hdr": (20, "header checksum mismatch"),
        "magic": (0, "bad magic"),
    }
    for name, (offset, why) in cases.items():
        bad = bytearray(good)
        bad[offset] ^= 0x5A
        r = run(bad, name)
        assert r.returncode == 2 and why in r.stderr and not r.stdout, (name, r.stderr)
    r = run(good[:-3], "short")
    assert r.returncode == 2 and "memory image runs past the end" in r.stderr, r.stderr
    r = run(good + b"x", "long")
    assert r.returncode == 2 and "trailing bytes" in r.stderr, r.stderr


def test_rejection_reaches_the_driver(tmp_path, monkeypatch):
    """The driver raises PlaybackError with the harness's reason."""
    from tb import playback
    from tb.playback import driver
    real = driver.encode_batch
    monkeypatch.setattr(driver, "encode_batch",
                        lambda *a, **k: real(*a, **k)[:-1] + b"\xff")      # last command
    d = _make(tmp_path, "w", "reg_write(NVDLA_SDP.S_POINTER_0, 0x1);\n")
    with pytest.raises(playback.PlaybackError, match="command list is corrupted"):
        driver.run_playback_batch([str(d)], CFG)


def test_same_results_with_non_posted_writes():
    """Non-posted CSB writes: the playback engine and the cocotb engine (on Icarus) agree."""
    paths = [str(p) for p in _public(EQUIV_TRACES_ICARUS)]
    fast = _playback(paths, backpressure=False, nposted=True)
    try:
        slow = trace_rtl.run_rtl_batch(paths, CFG, sim="icarus", backpressure=False,
                                       nposted=True)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert [(r.passed, r.cycles, r.layers) for r in fast] == \
        [(r.passed, r.cycles, r.layers) for r in slow]


def test_sramif_build_runs_cv_traffic(tmp_path):
    """A build with the SRAMIF: random SDP and PDP programs whose inputs and outputs sit in
    CV memory (``sec_mem``) as often as in MC memory run on the harness's second AXI slave,
    under back-pressure and latency, bit-exactly against the golden CRCs."""
    from sim.pdp.random_programs import write_random_traces as pdp_traces
    from sim.sdp.random_programs import write_random_traces as sdp_traces
    cfg = NV_SMALL_EXT
    paths = (sdp_traces(cfg, str(tmp_path / "sdp"), 20, seed=41)
             + pdp_traces(cfg, str(tmp_path / "pdp"), 20, seed=42, int8_only=True))
    results = _playback(paths, cfg, seed=7, busy=0.3, latency=(1, 24), max_cycles=400_000)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, "\n".join(bad[:10])
    cv = [c for r in results for c in r.checks if c.mem == "sram"]
    assert len(cv) >= 5 and all(c.passed for c in cv)
