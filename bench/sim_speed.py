"""Simulation speed of the whole core: our playback engine beside the original NVDLA nv_small
RTL in NVDLA's own Verilator harness, on the same traces in one run.

    python bench/sim_speed.py                       # sdp_1x8192x1 + the dc_* traces, + suite
    python bench/sim_speed.py --no-suite TRACE...   # chosen trace directories
    python bench/sim_speed.py --sweep               # Verilator options one by one

Per trace, ours then theirs back to back (the machine's load changes): our cycles per second
(the trace's cycles over the harness's wall time for it, back-pressure off, model already
built), the original's (``run_reference.sh``: its total
cycles over its simulator process's wall time), and the ratio. The original comes from
``../shared/reference`` (``build_reference.sh`` into ``$NVDLA_REF_DIR``, default
/tmp/nvdla-ref, outside the repository; run it first). Then: our build time (from the build
stamp; 0 when it was cached before this run) and the wall time of the public nv_small traces
whose units the RTL has (``RTL_UNITS``) with ``-j`` processes, as ``nvdla trace --engine rtl``
runs them.

``--sweep`` builds the harness with the Verilator options of ``tb.playback.driver.FLAGS``
added one at a time (each build cached) and prints build time and cycles/s for each; build
time per phase and option: ``bench/build_time.py``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arch.config import load_config  # noqa: E402
from sim.trace import parse_trace  # noqa: E402
from tb.playback.driver import (DEFAULT_OPTIONS, build_harness,  # noqa: E402
                                build_seconds, build_summary, describe_options,
                                run_playback_batch)
from tb.trace_rtl import expected_to_pass, split_batches  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("NVDLA_TRACES", ROOT.parent / "shared/nvdla/traces")) / "nv_small"
REFERENCE = Path(os.environ.get("NVDLA_REFERENCE", ROOT.parent / "shared/reference"))
DEFAULT = ["sdp_1x8192x1_pass_through_int8_0"] + sorted(
    n for n in (os.listdir(TRACES) if TRACES.is_dir() else []) if n.startswith("dc_"))


def ours(paths, cfg, opts=DEFAULT_OPTIONS):
    """{name: (passed, cycles, wall)} on the playback harness, one process for all."""
    results = run_playback_batch([str(p) for p in paths], cfg, backpressure=False,
                                 build_options=opts, max_cycles=5_000_000)
    return {r.name: (r.passed, r.cycles, r.wall, r.message) for r in results}


def theirs(paths):
    """{name: (passed, total cycles, wall)} from run_reference.sh, or {} when not built."""
    script = REFERENCE / "run_reference.sh"
    if not script.exists():
        return {}
    r = subprocess.run(["bash", str(script), *map(str, paths)], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 6:
            out[cols[0]] = (cols[1] == "True", int(cols[3]), float(cols[4]))
    if not out:
        print(f"reference: no results ({r.stderr.strip().splitlines()[-1:]})")
    return out


def suite(cfg, jobs):
    """Wall seconds and pass count of the public nv_small traces the RTL has units for."""
    names = []
    for n in sorted(os.listdir(TRACES)):
        if (TRACES / n).is_dir() and expected_to_pass(parse_trace(str(TRACES / n), cfg,
                                                                  load_images=False))[0]:
            names.append(str(TRACES / n))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        results = [r for rs in pool.map(lambda b: run_playback_batch(b, cfg),
                                        split_batches(names, jobs)) for r in rs]
    return time.perf_counter() - t0, sum(r.passed for r in results), len(results)


#: (label, option sets): each row adds or removes one option against an earlier row; the
#: -O3 rows come first because they build fastest (no --public-flat-rw, smaller C++).
SWEEP = [
    ("baseline: the cocotb build's options", ("public",)),
    ("- public-flat-rw, + O3", ("O3",)),
    ("+ x-assign fast", ("O3", "xassign")),
    ("+ x-initial fast", ("O3", "xassign", "xinitial")),
    ("+ threads 2", ("O3", "xassign", "xinitial", "threads2")),
    ("+ split functions, slow -O0 (default)", ("O3", "xassign", "xinitial", "split", "slowO0")),
    ("baseline - public-flat-rw (no O3)", ()),
]


def sweep(paths, cfg):
    print(f"{'options':<40} {'build s':>8} " + " ".join(f"{p.name[:22]:>22}" for p in paths))
    for label, opts in SWEEP:
        t0 = time.perf_counter()
        exe = build_harness(cfg, opts)
        took = build_seconds(exe) or (time.perf_counter() - t0)
        res = ours(paths, cfg, opts)
        speeds = [f"{res[p.name][1] / res[p.name][2]:>16.0f} c/s{'' if res[p.name][0] else '!'}"
                  for p in paths]
        print(f"{label + ' [' + ','.join(opts) + ']':<40} {took:>8.0f} " + " ".join(speeds),
              flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", help="trace directories (default: sdp_1x8192x1 and dc_*)")
    ap.add_argument("--config", default="nv_small")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="processes for the suite run")
    ap.add_argument("--no-suite", action="store_true", help="skip the public-suite wall time")
    ap.add_argument("--sweep", action="store_true", help="measure the Verilator options")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    paths = [Path(t) for t in args.traces] or [TRACES / n for n in DEFAULT]
    if args.sweep:
        sweep(paths, cfg)
        return 0
    t0 = time.perf_counter()
    exe = build_harness(cfg)
    built = time.perf_counter() - t0
    mine, ref = {}, {}
    for p in paths:                 # interleaved, so that both see the same machine load
        mine.update(ours([p], cfg))
        ref.update(theirs([p]))
    print(f"{'trace':<36} {'ours c/s':>10} {'original c/s':>13} {'ratio':>6}   "
          f"{'our cycles':>10} {'orig cycles':>11}")
    tot = [0, 0.0, 0, 0.0]                   # our cycles, wall; theirs (traces both pass)
    for p in paths:
        ok, cyc, wall, msg = mine[p.name]
        mo = cyc / wall if wall else 0
        line = f"{p.name:<36} {mo:>10.0f}"
        if p.name in ref:
            rok, rcyc, rwall = ref[p.name]
            mt = rcyc / rwall if rwall else 0
            line += f" {mt:>13.0f} {mo / mt if mt else 0:>6.1f}   {cyc:>10} {rcyc:>11}"
            if ok and rok:
                tot[0] += cyc
                tot[1] += wall
                tot[2] += rcyc
                tot[3] += rwall
        else:
            line += f" {'-':>13} {'-':>6}   {cyc:>10} {'-':>11}"
        if not ok:
            line += f"  (ours FAIL: {msg[:80]})"
        elif p.name in ref and not ref[p.name][0]:
            line += "  (fails on the original)"
        print(line, flush=True)
    if tot[1] and tot[3]:
        mo, mt = tot[0] / tot[1], tot[2] / tot[3]
        print(f"{'all (total cycles / total wall)':<36} {mo:>10.0f} {mt:>13.0f} "
              f"{mo / mt:>6.1f}   {tot[0]:>10} {tot[2]:>11}")
    print(f"our build: {build_seconds(exe) or 0:.0f} s ({build_summary(exe)}; {built:.1f} s "
          f"in this run, 0 when cached)\n  options {describe_options()}")
    if not args.no_suite:
        wall, passed, n = suite(cfg, args.jobs)
        print(f"public nv_small traces on the RTL (RTL_UNITS): {n} traces, {passed} passed, "
              f"{wall:.1f} s wall with -j {args.jobs} (on plain nv_small the 3 EW/LUT SDP "
              f"traces fail their CRCs by design)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
