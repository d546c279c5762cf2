"""``nvdla smoke``: generate a build's Verilog and run a register-level smoke test on it in a
simulator (Icarus by default, ``--sim verilator``), printing what it did."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from arch.config import load_config

__all__ = ["add_arguments", "run"]


def add_arguments(p):
    p.add_argument("--config", default="nv_small", help="preset name or TOML file")
    p.add_argument("--sim", default=os.environ.get("SIM", "icarus"),
                   choices=["icarus", "verilator"])
    p.add_argument("--out", default="out", help="where the Verilog and report go")


def run(args):
    from scripts.generate import generate
    from tb.runner import run_cocotb
    cfg = load_config(args.config)
    rep = generate(cfg, Path(args.out))
    print(f"generated {rep['verilog']}: {rep['lines']} lines in {rep['generation_seconds']} s")
    os.environ["SIM"] = args.sim
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "smoke.txt"
        t0 = time.perf_counter()
        try:
            run_cocotb(cfg, "tb.cocotb_smoke", extra_env={"NVDLA_SMOKE_LOG": str(log)})
        except (AssertionError, SystemExit, RuntimeError) as e:
            print(f"smoke test FAILED on {args.sim}: {e}")
            return 1
        print(f"smoke test on {args.sim} ({time.perf_counter() - t0:.1f} s incl. build):")
        for line in log.read_text().splitlines():
            print(f"  {line}")
    print("PASS")
    return 0
