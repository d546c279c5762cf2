"""PDP and CDP elements per cycle on large int8 layers, against the configured throughput.

    python bench/pdp_cdp_throughput.py [--builds nv_small nv_small_t8] [--only pdp|cdp]
                                       [--latency N] [--quick] [--json FILE]

Builds: ``nv_small`` (PDP and CDP throughput T = 1, 64-bit DBBIF) and ``nv_small_t8``
(nv_small with PDP and CDP throughput 8 and a 512-bit DBBIF, the build the random RTL suites
use). For each build a few large int8 layers (channel counts a multiple of the 8-byte atom,
so no channel is padding) are written as trace directories with golden CRCs
(``sim.pdp.random_programs`` / ``sim.cdp.random_programs``; the golden model runs each
once), then run on the RTL playback engine (Verilator) with memory that never stalls: no
AXI back-pressure, read data and write responses ``--latency`` cycles (default 1) after the
request / last beat. A layer's cycles are NVDLA's reference measure: from the final
``D_OP_ENABLE`` write to the layer's interrupt (CSB programming of the layer is not counted,
its start-up and drain are). A layer whose CRC differs from the golden model's is reported
as FAILED, not measured.

Elements, and the bounds a layer is compared against:

* PDP: ``in`` = W x H x C input elements (each read once), ``out`` = Wo x Ho x C output
  elements. The pooling core takes one input transfer of T elements per cycle and its
  vertical stage one row result per cycle, so its natural bound is max(in, out) / T cycles:
  the input read dominates unless windows outnumber positions (stride 1 with more padding
  than kernel - 1).
* CDP: ``in`` = ``out`` = W x H x C (LRN reads and writes every element once); the datapath
  takes T channels per cycle: bound W x H x C / T cycles.
* DBB bound: (bytes read + bytes written) / DBBIF bytes per cycle, as if reads and writes
  shared one bus (AXI's read and write data channels are separate, so this is the pessimistic
  form; it matters only when it exceeds the element bound).

Printed per layer: in and out elements, layer cycles, elements per cycle (in and out), T,
the element bound, the DBB bound, ``of bound`` = max(element bound, DBB bound) / cycles
(1.00 = at the bound) and the goal (>= 0.95).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from arch.config import NvdlaConfig  # noqa: E402

GOAL = 0.95
#: default memory latency (cycles) of the playback engine's AXI slaves; no back-pressure
LATENCY = 1


def build(name: str) -> NvdlaConfig:
    """``nv_small`` or ``nv_small_t8`` (PDP and CDP throughput 8, 512-bit DBBIF)."""
    base = NvdlaConfig.preset("nv_small")
    if name == "nv_small":
        return base
    if name == "nv_small_t8":
        return base.replace(name="nv_small_t8", pdp_throughput=8, cdp_throughput=8,
                            dbbif_width=512)
    raise SystemExit(f"unknown build {name!r} (nv_small, nv_small_t8)")


#: (name, W, H, C, kernel (w, h), stride (w, h), pad (l, r, t, b), method)
PDP_LAYERS = [
    ("pdp_1x1s1_max", 64, 32, 64, (1, 1), (1, 1), (0, 0, 0, 0), "max"),
    ("pdp_2x2s2_max", 128, 32, 64, (2, 2), (2, 2), (0, 0, 0, 0), "max"),
    ("pdp_3x3s1_ave_pad1", 32, 32, 64, (3, 3), (1, 1), (1, 1, 1, 1), "ave"),
    ("pdp_3x3s1_ave", 32, 32, 64, (3, 3), (1, 1), (0, 0, 0, 0), "ave"),
    ("pdp_3x3s2_max_pad1", 64, 32, 64, (3, 3), (2, 2), (1, 1, 1, 1), "max"),
]
#: (name, W, H, C, window)
CDP_LAYERS = [
    ("cdp_lrn3", 16, 16, 256, 3),
    ("cdp_lrn5", 16, 16, 256, 5),
    ("cdp_lrn9", 16, 16, 256, 9),
]
#: one small layer per unit (``--quick``: the smoke test)
QUICK_PDP = [("pdp_2x2s2_max_q", 16, 4, 16, (2, 2), (2, 2), (0, 0, 0, 0), "max")]
QUICK_CDP = [("cdp_lrn5_q", 4, 4, 32, 5)]


def _golden_crcs(run_golden, path, cfg):
    res = run_golden(path, cfg)
    crcs = [c.actual for c in res.checks if c.sync_id.startswith("sync_id")]
    if len(crcs) != 1:
        raise RuntimeError(f"{path}: the golden model did not finish: {res.message}")
    return crcs


def pdp_trace(cfg, directory, spec, rng):
    """Trace directory of one PDP layer and its element / byte counts."""
    from sim.pdp import random_programs as rp
    from sim.pdp.program import AVERAGE, MAX, MIN
    name, W, H, C, kernel, stride, pad, method = spec
    data = rng.integers(-128, 128, (C, H, W))
    kw, kh = kernel
    layer = rp.pdp_layer(cfg, W=W, H=H, C=C, kernel=kernel, stride=stride, pad=pad,
                         method={"max": MAX, "min": MIN, "ave": AVERAGE}[method], data=data)
    info = layer["info"]
    path = rp.write_trace(directory, name, [layer])
    rp.write_trace(directory, name, [layer], _golden_crcs(rp.run_trace_golden, path, cfg))
    atom = cfg.memory_atom
    surfaces = -(-C // atom)
    return path, dict(unit="PDP", layer=name, shape=f"{W}x{H}x{C}",
                      op=f"{kw}x{kh}/{stride[0]} {method}" + (" pad" if any(pad) else ""),
                      T=cfg.pdp_throughput, elements_in=W * H * C,
                      elements_out=info["Wo"] * info["Ho"] * C,
                      bytes_read=W * H * surfaces * atom,
                      bytes_written=info["Wo"] * info["Ho"] * surfaces * atom)


def cdp_trace(cfg, directory, spec, rng):
    """Trace directory of one CDP (LRN) layer and its element / byte counts."""
    from sim.cdp import random_programs as rp
    name, W, H, C, window = spec
    layer = rp.random_program(cfg, rng, W=W, H=H, C=C, prec=0, window=window, packed=True,
                              max_elems=W * H * C)
    path = rp.write_trace(directory, name, [layer])
    rp.write_trace(directory, name, [layer], _golden_crcs(rp.run_trace_golden, path, cfg))
    atom = cfg.memory_atom
    nbytes = W * H * -(-C // atom) * atom
    return path, dict(unit="CDP", layer=name, shape=f"{W}x{H}x{C}", op=f"LRN {window}",
                      T=cfg.cdp_throughput, elements_in=W * H * C, elements_out=W * H * C,
                      bytes_read=nbytes, bytes_written=nbytes)


def measure(cfg, units=("pdp", "cdp"), quick=False, seed=1, latency=LATENCY,
            log=print) -> list:
    """Build the layers of ``units`` for ``cfg``, run them on the RTL; one row per layer."""
    from tb.playback import run_playback_batch
    rng = np.random.default_rng(seed)
    traces = []
    with tempfile.TemporaryDirectory(prefix="pdp-cdp-bench-") as work:
        if "pdp" in units and cfg.pdp_throughput:
            traces += [pdp_trace(cfg, work, s, rng)
                       for s in (QUICK_PDP if quick else PDP_LAYERS)]
        if "cdp" in units and cfg.cdp_throughput:
            traces += [cdp_trace(cfg, work, s, rng)
                       for s in (QUICK_CDP if quick else CDP_LAYERS)]
        paths = [p for p, _ in traces]
        max_cycles = 4 * sum(max(r["elements_in"], r["elements_out"])
                             for _, r in traces) + 100_000
        t0 = time.time()
        results = run_playback_batch(paths, cfg, backpressure=False,
                                     latency=(latency, latency), max_cycles=max_cycles,
                                     seed=seed)
    log(f"{cfg.name}: {len(paths)} layers simulated in {time.time() - t0:.1f} s")
    bus = cfg.dbbif_width // 8
    rows = []
    for (_, row), res in zip(traces, results):
        row = dict(row, build=cfg.name, dbbif_bits=cfg.dbbif_width, latency=latency,
                   passed=res.passed)
        if not res.passed:
            row["message"] = res.message
            rows.append(row)
            continue
        cycles = res.layer_cycles
        elem_bound = max(row["elements_in"], row["elements_out"]) / row["T"]
        dbb_bound = (row["bytes_read"] + row["bytes_written"]) / bus
        bound = max(elem_bound, dbb_bound)
        row.update(cycles=cycles, in_per_cycle=row["elements_in"] / cycles,
                   out_per_cycle=row["elements_out"] / cycles,
                   element_bound=elem_bound, dbb_bound=dbb_bound,
                   limit="memory" if dbb_bound > elem_bound else "datapath",
                   of_bound=bound / cycles, goal_met=bound / cycles >= GOAL)
        rows.append(row)
    return rows


def table(rows) -> str:
    head = (f"{'build':<12} {'layer':<20} {'W x H x C':>11} {'op':<13} {'in elems':>9} "
            f"{'out elems':>9} {'cycles':>8} {'in/cyc':>7} {'out/cyc':>7} {'T':>2} "
            f"{'elem bnd':>8} {'DBB bnd':>8} {'of bound':>8} {'goal':>6}")
    out = [head]
    for r in rows:
        pre = (f"{r['build']:<12} {r['layer']:<20} {r['shape']:>11} {r['op']:<13} "
               f"{r['elements_in']:>9} {r['elements_out']:>9}")
        if not r["passed"]:
            out.append(f"{pre} FAILED: {r['message'][:100]}")
            continue
        mark = "ok" if r["goal_met"] else "MISS"
        out.append(f"{pre} {r['cycles']:>8} {r['in_per_cycle']:>7.2f} "
                   f"{r['out_per_cycle']:>7.2f} {r['T']:>2} {r['element_bound']:>8.0f} "
                   f"{r['dbb_bound']:>8.0f} {r['of_bound']:>8.3f} "
                   f"{'>=' + format(GOAL, '.2f'):>5} {mark}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", nargs="+", default=["nv_small", "nv_small_t8"],
                    help="nv_small and/or nv_small_t8")
    ap.add_argument("--only", choices=("pdp", "cdp"), help="one unit only")
    ap.add_argument("--latency", type=int, default=LATENCY,
                    help="memory latency in cycles (default %(default)s)")
    ap.add_argument("--quick", action="store_true",
                    help="one small layer per unit (start-up dominated: a smoke test)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON ('-': stdout)")
    args = ap.parse_args(argv)
    units = (args.only,) if args.only else ("pdp", "cdp")
    rows = []
    for name in args.builds:
        rows += measure(build(name), units, quick=args.quick, latency=args.latency,
                        log=lambda s: print(s, file=sys.stderr))
    print(table(rows))
    if args.json:
        text = json.dumps(rows, indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
