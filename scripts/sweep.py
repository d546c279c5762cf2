"""``nvdla sweep``: build-parameter sweeps against estimated cycles, MACs, CBUF and area.

    nvdla sweep --config nv_small --set atomic_c=8,16,32 --set atomic_k=8,32 \\
        ../shared/nvdla/traces/nv_small/dc_*
    nvdla sweep --config nv_small --set cbuf_bank_depth=256,512,1024 --set dbbif_width=64,128 DIR
    nvdla sweep ... --json

The cartesian product of the ``--set`` lists, each applied to ``--config`` (the base) with
:meth:`arch.config.NvdlaConfig.replace`; parameters the config rules tie to a swept one are
adjusted and said so (``cbuf_bank_width`` = ``atomic_c`` with the bank size kept,
``memory_atom`` = ``atomic_k``; :mod:`sim.perf.sweep`). An invalid combination is reported
with its ConfigError and skipped. Per build: the estimated layer cycles summed over the traces
legal on it (:mod:`sim.perf`, the memory of ``--memory``), how many traces were estimated,
re-programmed from the base (convolution layers whose registers encode the base's CBUF
geometry) or skipped (a layer that does not decode there), the MACs those traces do, the CBUF
bytes and an ECP5 area ESTIMATE (:mod:`sim.perf.area`, fitted on this project's measured
syntheses). Runs in seconds: no RTL, no Yosys.
"""

from __future__ import annotations

import json
import sys
import time

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("dirs", nargs="+", metavar="TRACE_DIR",
                        help="trace directory, .cfg file, or directory of trace directories")
    parser.add_argument("--config", default="nv_small",
                        help="base build: a preset name or a TOML file (default nv_small)")
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=V1,V2,...",
                        dest="sets", help="a build parameter and its values (repeatable)")
    parser.add_argument("--memory", choices=("harness", "playback", "config"), default="harness",
                        help="memory behind the DBBIF (default harness: the calibration's)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _row(p):
    return {"settings": p.settings, "adjusted": p.adjusted, "error": p.error,
            "cycles": round(p.cycles), "traces": p.traces, "retargeted": p.retargeted,
            "skipped": len(p.skipped),
            "skipped_traces": [{"trace": t, "reason": r} for t, r in p.skipped],
            "macs": p.macs, "mac_units": p.cfg.macs if p.cfg else None,
            "cbuf_bytes": p.cfg.cbuf_bytes if p.cfg else None, "area": p.area}


def run(args) -> int:
    from arch.config import ConfigError, load_config
    from sim.perf.area import AREA_NOTE
    from sim.perf.sweep import evaluate, parse_sets, sweep_configs
    from sim.trace import TraceError, expand_trace_dirs

    t0 = time.perf_counter()
    base = load_config(args.config)
    try:
        sets = parse_sets(args.sets)
    except ConfigError as e:
        print(f"nvdla sweep: {e}", file=sys.stderr)
        return 2
    try:
        paths = expand_trace_dirs(args.dirs)
    except TraceError as e:
        print(f"nvdla sweep: {e}", file=sys.stderr)
        return 2
    if not paths:
        print("nvdla sweep: no traces given", file=sys.stderr)
        return 2
    points = [evaluate(p, paths, base, args.memory) for p in sweep_configs(base, sets)]
    if args.json:
        json.dump({"base": base.name, "memory": args.memory, "traces": len(paths),
                   "area_note": AREA_NOTE, "points": [_row(p) for p in points]},
                  sys.stdout, indent=1)
        print()
        return 0

    print(f"nvdla sweep: base {base.name}, {len(paths)} trace(s), memory {args.memory}; "
          "estimated layer cycles from the analytic model (sim/perf), no RTL")
    names = list(sets)
    cols = [max(len(n), 6) for n in names]
    head = " ".join(f"{n:>{w}}" for n, w in zip(names, cols))
    print(f"{head} {'cycles':>11} {'traces':>6} {'reprog':>6} {'skip':>4} {'MACs':>12} "
          f"{'MAC units':>9} {'CBUF KiB':>8} {'LUT4':>8} {'FF':>7} {'DP16KD':>6} "
          f"{'MULT18':>6}")
    notes = []
    for p in points:
        vals = " ".join(f"{str(p.settings[n]):>{w}}" for n, w in zip(names, cols))
        if p.error:
            print(f"{vals} invalid: {p.error}")
            continue
        a = p.area
        print(f"{vals} {p.cycles:>11.0f} {p.traces:>6} {p.retargeted:>6} {len(p.skipped):>4} "
              f"{p.macs:>12} {p.cfg.macs:>9} {p.cfg.cbuf_bytes // 1024:>8} {a['lut4']:>8} "
              f"{a['ff']:>7} {a['dp16kd']:>6} {a['mult18']:>6}")
        if p.adjusted:
            notes.append(f"  {', '.join(f'{k}={v}' for k, v in p.settings.items())}: set "
                         + ", ".join(f"{k}={v}" for k, v in p.adjusted.items())
                         + " (config rules: cbuf_bank_width = atomic_c, bank size kept; "
                           "memory_atom = atomic_k)")
    if notes:
        print("adjusted parameters:")
        print("\n".join(notes))
    print("reprog: traces whose conv layers were re-programmed from the base build's decode "
          "(their registers encode the base's CBUF geometry); skip: traces with a layer the "
          "build cannot run")
    print(AREA_NOTE)
    print(f"{len(points)} build(s), {sum(p.error is None for p in points)} valid, "
          f"{time.perf_counter() - t0:.2f} s")
    return 0
