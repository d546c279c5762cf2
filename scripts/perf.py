"""``nvdla perf``: estimated layer cycles of NVDLA traces on a build, from the analytic model.

    nvdla perf --config nv_small ../shared/nvdla/traces/nv_small/dc_*
    nvdla perf --config nv_small --measured bench/perf_calibration.tsv ../shared/nvdla/traces/nv_small
    nvdla perf --config nv_small --json DIR...

No RTL and no data path: each trace's register program is decoded with the golden model's
decoders (:mod:`sim.perf.decode`) and every hardware layer estimated by :mod:`sim.perf`
(cycles as NVDLA's reference measures them: final ``D_OP_ENABLE`` write to the interrupt).
One line per layer: trace, layer, kind, estimated cycles, the dominating bound and the bound
values. ``--measured TSV`` (``bench/perf_calibration.tsv``'s columns: trace, config, memory,
layer cycles; or a reference TSV: trace, passed, layer cycles) adds the measured cycles and
model/measured per trace, and a summary: mean absolute error per layer kind and overall.
``--memory harness`` (default: the conditions the model is calibrated on, those of
``nvdla trace --engine rtl``) or ``config`` (the build's ``dbbif_latency``, no stalls).
"""

from __future__ import annotations

import json
import sys

__all__ = ["add_arguments", "run", "read_measured"]


def add_arguments(parser):
    parser.add_argument("dirs", nargs="+", metavar="TRACE_DIR",
                        help="trace directory, .cfg file, or directory of trace directories")
    parser.add_argument("--config", default="nv_small",
                        help="build: a preset name or a TOML file (default nv_small)")
    parser.add_argument("--measured", metavar="TSV",
                        help="measured layer cycles to compare with (e.g. "
                             "bench/perf_calibration.tsv)")
    parser.add_argument("--memory", choices=("harness", "playback", "config"), default="harness",
                        help="memory behind the DBBIF (default harness: the calibration's)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def read_measured(path, config=None) -> dict:
    """``{trace: layer cycles}`` from ``bench/perf_calibration.tsv`` (trace, config, memory,
    cycles[, geometry]; rows of other configs than ``config`` left out) or from a reference TSV (trace,
    passed, cycles; rows that did not pass left out). ``#`` lines and a header are skipped."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            cols = text.split("\t")
            if len(cols) >= 4 and cols[3].isdigit():         # calibration: trace config memory
                if config is None or cols[1] == config:
                    out[cols[0]] = int(cols[3])
            elif len(cols) == 3 and cols[2].isdigit():       # reference: trace passed cycles
                if cols[1].lower() == "true":
                    out[cols[0]] = int(cols[2])
            elif cols[0] != "trace":
                raise ValueError(f"{path}:{n}: expected tab-separated trace, config, memory, "
                                 "layer cycles (or trace, passed, layer cycles)")
    return out


def _fmt_bounds(bounds):
    return " ".join(f"{k}={v:.0f}" for k, v in bounds.items())


def run(args) -> int:
    from arch.config import load_config
    from sim.perf import estimate_trace
    from sim.trace import TraceError, expand_trace_dirs

    cfg = load_config(args.config)
    try:
        paths = expand_trace_dirs(args.dirs)
    except TraceError as e:
        print(f"nvdla perf: {e}", file=sys.stderr)
        return 2
    if not paths:
        print("nvdla perf: no traces given", file=sys.stderr)
        return 2
    measured = {}
    if args.measured:
        try:
            measured = read_measured(args.measured, cfg.name)
        except (OSError, ValueError) as e:
            print(f"nvdla perf: --measured: {e}", file=sys.stderr)
            return 2

    rows, errors = [], {}
    for path in paths:
        est = estimate_trace(path, cfg, args.memory)
        meas = measured.get(est.name)
        row = {"trace": est.name, "valid": est.valid, "error": est.error,
               "cycles": round(est.cycles), "measured": meas,
               "ratio": round(est.cycles / meas, 4) if meas and est.valid else None,
               "layers": [{"layer": lay.index, "kind": lay.kind, "cycles": round(lay.cycles),
                           "dominant": lay.dominant,
                           "bounds": {k: round(v, 1) for k, v in lay.bounds.items()},
                           "macs": lay.macs, "mac_ops": lay.mac_ops, "bytes": lay.bytes,
                           "error": lay.error} for lay in est.layers]}
        rows.append(row)
        if row["ratio"] is not None:
            kind = est.layers[0].kind if est.layers else "?"
            errors.setdefault(kind, []).append(abs(row["ratio"] - 1))
    summary = {k: {"traces": len(v), "mean_abs_error": sum(v) / len(v), "max_abs_error": max(v)}
               for k, v in sorted(errors.items())}
    allv = [x for v in errors.values() for x in v]
    if allv:
        summary["all"] = {"traces": len(allv), "mean_abs_error": sum(allv) / len(allv),
                          "max_abs_error": max(allv)}
    if args.json:
        json.dump({"config": cfg.name, "memory": args.memory, "traces": rows,
                   "summary": summary}, sys.stdout, indent=1)
        print()
        return 0

    width = max(len(r["trace"]) for r in rows)
    print(f"nvdla perf: config {cfg.name}, memory {args.memory}: estimated layer cycles "
          "(final D_OP_ENABLE write to interrupt), analytic model (sim/perf), no RTL")
    head = f"{'trace':<{width}} {'layer':>5} {'kind':<8} {'estimate':>10} {'bound':<8}"
    if measured:
        head += f" {'measured':>10} {'ratio':>6}"
    print(head + "  bounds (cycles)")
    for r in rows:
        if r["error"] or not r["layers"]:
            print(f"{r['trace']:<{width}} {'-':>5} {'-':<8} skipped: {r['error'] or 'no layer'}")
            continue
        for i, lay in enumerate(r["layers"]):
            if lay["error"]:
                print(f"{r['trace']:<{width}} {lay['layer']:>5} {lay['kind']:<8} skipped: "
                      f"{lay['error']}")
                continue
            line = f"{r['trace']:<{width}} {lay['layer']:>5} {lay['kind']:<8} " \
                   f"{lay['cycles']:>10} {lay['dominant']:<8}"
            if measured:
                last = i == len(r["layers"]) - 1
                m = r["measured"] if last and r["measured"] is not None else None
                line += f" {m if m is not None else '-':>10} " \
                        f"{(format(r['ratio'], '.3f') if m is not None and r['ratio'] else '-'):>6}"
            print(line + "  " + _fmt_bounds(lay["bounds"]))
    if summary:
        print("model / measured (absolute error of the trace's layer cycles):")
        for k, s in summary.items():
            print(f"  {k:<8} {s['traces']:>3} traces  mean {100 * s['mean_abs_error']:5.1f} %"
                  f"  max {100 * s['max_abs_error']:5.1f} %")
    return 0
