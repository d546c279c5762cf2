"""FPGA resources of the presets on ECP5 and Xilinx (UltraScale+ and 7-series) beside NVDLA's
published nv_small figures.

    python bench/fpga_resources.py                    # the table from measured results
    python bench/fpga_resources.py --run nv_small:ecp5 nv_small:xilinx   # measure first
    YOSYS=/usr/bin/yosys python bench/fpga_resources.py --jobs 2 --run nv_full:ecp5
    python bench/fpga_resources.py --json

Each measurement is ``nvdla synth --config CFG --target T`` (YoWASP Yosys, hierarchy kept;
nv_small takes tens of minutes single-threaded, nv_large/nv_full hours) and is kept in
``build/synth/CFG-T/result.json``; the table reads those files and says "not measured" for
the others. ``--jobs N`` measures module by module, N Yosys processes at a time
(``nvdla synth --jobs``: the same cells up to Yosys's LUT variation, restartable, and nv_full
on ECP5 in 36 minutes with two jobs, where one whole run did not finish in a sitting). ECP5
LUTs are LUT4 (+ CCU2C carry cells, 2 LUT4 each, counted in ``lut``); UltraScale+ LUTs are
LUT6, block RAM in RAMB36 equivalents (RAMB18 = 0.5).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ("nv_small", "nv_small_256", "nv_large", "nv_full")
TARGETS = ("ecp5", "xilinx", "xc7")

# NVDLA's published nv_small figures (UltraScale+ FPGA, 100 MHz met).
PUBLISHED = {"nv_small": {"target": "UltraScale+ (NVDLA, published)", "lut": 76000,
                          "ff": 81000, "bram": 100, "dsp": 32, "fmax": "100 MHz met"}}


def result_path(cfg, target):
    return ROOT / "build" / "synth" / f"{cfg}-{target}" / "result.json"


def load(cfg, target):
    p = result_path(cfg, target)
    return json.loads(p.read_text()) if p.exists() else None


def measure(cfg, target, jobs=0):
    subprocess.run([sys.executable, "-m", "scripts.cli", "synth", "--config", cfg, "--target",
                    target] + (["--jobs", str(jobs)] if jobs else []), cwd=ROOT, check=True)


def table():
    rows = []
    for cfg in PRESETS:
        if cfg in PUBLISHED:
            p = PUBLISHED[cfg]
            rows.append((cfg, p["target"], p["lut"], p["ff"], p["bram"], "-", p["dsp"],
                         p["fmax"]))
        for t in TARGETS:
            r = load(cfg, t)
            if r is None:
                rows.append((cfg, t, "not measured", "", "", "", "", ""))
                continue
            tot = r["total"]
            label = {"ecp5": "ECP5 (LUT4, DP16KD, MULT18X18D)",
                     "xilinx": "UltraScale+ (LUT6, RAMB36, DSP48E2)",
                     "xc7": "7-series (LUT6, RAMB36E1, DSP48E1)"}[t]
            rows.append((cfg, label, tot.get("lut", 0), tot.get("ff", 0), tot.get("bram", 0),
                         tot.get("lutram", 0), tot.get("dsp", 0), f"Yosys {r['seconds']} s"))
    head = ("preset", "target", "LUT", "FF", "BRAM", "LUTRAM", "DSP", "note")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="*", default=[], metavar="CFG:TARGET",
                    help="synthesize these first (slow)")
    ap.add_argument("--jobs", type=int, default=0, metavar="N",
                    help="with --run: synthesize module by module, N Yosys processes at a time")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for item in args.run:
        cfg, _, target = item.partition(":")
        measure(cfg, target or "ecp5", args.jobs)
    if args.json:
        print(json.dumps({f"{c}:{t}": load(c, t) and load(c, t)["total"]
                          for c in PRESETS for t in TARGETS}, indent=1))
    else:
        print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
