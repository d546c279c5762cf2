"""Cold build time of the playback harness, phase by phase, and the speed of what it built.

    python bench/build_time.py                          # the default build of nv_small
    python bench/build_time.py --options O3 O3,split    # option sets (tb.playback.driver.FLAGS)
    python bench/build_time.py --sweep                  # the rows of SWEEP, one by one
    python bench/build_time.py --no-runtime-cache ...   # compile the Verilator runtime too

Phases, each with wall and CPU seconds (CPU: user + system of the child processes, which the
machine's load does not inflate the way it does wall time): ``verilog`` (Amaranth elaboration,
RTLIL and Yosys's Verilog, in a fresh interpreter as the builds do; once per run, the same
text for every row), ``verilate`` (Verilator's Verilog to C++), ``compile`` (make -j N of the
Verilated model, the harness and, unless cached, Verilator's runtime objects). Each row builds
in a fresh directory (deleted afterwards), with ``tb.playback.driver.compile_model``, the code
the cached builds run. Then speed: sdp_1x8192x1 + dc_32x26x76 on the new harness, back-pressure
off, ``--runs`` times; cycles per second of harness wall time (median) and per CPU second of
the harness process (best), and whether both traces pass. ``uptime``'s load is printed per row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arch.config import load_config  # noqa: E402
from sim.trace import parse_trace  # noqa: E402
from tb.playback.driver import (DEFAULT_OPTIONS, FLAGS, build_jobs,  # noqa: E402
                                compile_model, describe_options, encode_batch)
from tb.runner import BUILD, _fresh_core_verilog  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("NVDLA_TRACES", ROOT.parent / "shared/nvdla/traces")) / "nv_small"
SPEED_TRACES = ["sdp_1x8192x1_pass_through_int8_0", "dc_32x26x76_6x3x76x16_int8_0"]

#: (label, option sets): each row changes one thing against the row named in its label.
SWEEP = [
    ("before: -O3, x fast (C++ -O3, slow -O1)", ("O3", "xassign", "xinitial")),
    ("+ split functions (--output-split-cfuncs)", ("O3", "xassign", "xinitial", "split")),
    ("+ split, slow-path files -O0", ("O3", "xassign", "xinitial", "split", "slowO0")),
    ("+ split, slow -O0, C++ -O2", ("O3", "xassign", "xinitial", "split", "slowO0", "cO2")),
    ("+ split, slow -O0, C++ -O1", ("O3", "xassign", "xinitial", "split", "slowO0", "cO1")),
    ("C++ -O1 without split", ("O3", "xassign", "xinitial", "cO1")),
]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def speed(exe: Path, batch: Path, runs: int):
    """(median cycles per harness-wall second, best cycles per CPU second, all passed)."""
    per_wall, per_cpu, ok = [], [], True
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([str(exe), str(batch)], capture_output=True, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
        lines = [json.loads(x) for x in p.stdout.splitlines()]
        cycles = sum(d["cycles"] for d in lines)
        ok &= p.returncode == 0 and len(lines) == len(SPEED_TRACES) and all(
            not d.get("stop") and not d.get("errors") for d in lines)
        per_wall.append(cycles / max(1e-9, sum(d["wall"] for d in lines)))
        per_cpu.append(cycles / max(1e-9, cpu))
    return statistics.median(per_wall), max(per_cpu), ok


def speed_traces(cfg):
    return [parse_trace(str(TRACES / n), cfg) for n in SPEED_TRACES]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="nv_small")
    ap.add_argument("--options", nargs="*", metavar="A,B",
                    help=f"option sets, comma-separated names of {', '.join(FLAGS)} "
                         f"(default: {','.join(DEFAULT_OPTIONS)}; '' = none)")
    ap.add_argument("--sweep", action="store_true", help="the rows of SWEEP")
    ap.add_argument("-j", "--jobs", type=int, default=None,
                    help=f"parallel compiles (default {build_jobs()})")
    ap.add_argument("--runs", type=int, default=3, help="speed runs per build")
    ap.add_argument("--no-runtime-cache", action="store_true",
                    help="compile Verilator's runtime objects in every row (a first build)")
    ap.add_argument("--keep", action="store_true", help="keep the build directories")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.sweep:
        rows = SWEEP
    else:
        sets = args.options if args.options is not None else [",".join(DEFAULT_OPTIONS)]
        rows = [(s or "base", tuple(filter(None, s.split(",")))) for s in sets]
    jobs = args.jobs or build_jobs()

    BUILD.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=BUILD, prefix=".bench-build-"))
    print(f"config {cfg.name}, make -j{jobs}, {os.cpu_count()} CPUs, load {load()}", flush=True)
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    text, _ = _fresh_core_verilog(cfg, "nvdla_core")
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    gen = {"wall": time.perf_counter() - t0,
           "cpu": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime}
    verilog = work / "nvdla_core.v"
    verilog.write_text(text)
    print(f"verilog: {gen['wall']:.1f} s wall, {gen['cpu']:.1f} s CPU "
          f"({len(text) / 1e6:.1f} MB of Verilog; once for all rows)", flush=True)
    batch = work / "speed.bin"
    batch.write_bytes(encode_batch(speed_traces(cfg), cfg, backpressure=False,
                                   max_cycles=5_000_000))
    runtime = None if args.no_runtime_cache else BUILD / "verilator-runtime"
    head = (f"{'build':<44} {'verilate':>13} {'compile':>13} {'total':>13} {'runtime':>8} "
            f"{'cycles/s':>9} {'c/CPU-s':>9}  load")
    print(head)
    print(f"{'':<44} {'wall / CPU s':>13} {'wall / CPU s':>13} {'wall / CPU s':>13}")
    try:
        for label, opts in rows:
            bdir = work / ("-".join(opts) or "base")
            bdir.mkdir()
            before = load()
            try:
                rec = compile_model(cfg, bdir, verilog, opts, jobs, runtime)
            except Exception as e:  # noqa: BLE001 (a failing row is reported, the rest go on)
                print(f"{label:<44} failed: {e}", flush=True)
                continue
            ph = rec["phases"]
            tot = {k: gen[k] + ph["verilate"][k] + ph["compile"][k] for k in ("wall", "cpu")}
            cps, cpcpu, ok = speed(bdir / "obj" / "nvdla_playback", batch, args.runs)
            print(f"{label:<44} " + " ".join(f"{d['wall']:>6.0f} /{d['cpu']:>5.0f}"
                                             for d in (ph["verilate"], ph["compile"], tot))
                  + f" {rec['runtime']:>8} {cps:>9.0f} {cpcpu:>9.0f}  {before} -> {load()}"
                  + ("" if ok else "  FAILED"), flush=True)
            print(f"    {describe_options(opts, jobs)}", flush=True)
            if not args.keep:
                shutil.rmtree(bdir, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("total = verilog + verilate + compile; cycles/s: median harness wall over "
          f"{', '.join(SPEED_TRACES)}; c/CPU-s: best, per CPU second of the harness process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
