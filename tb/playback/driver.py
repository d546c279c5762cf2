"""Python side of the playback engine: encode traces, build the harness, run it, read results.

    from tb.playback import run_playback_batch
    results = run_playback_batch(paths, cfg, backpressure=False)

The traces are parsed by :func:`sim.trace.parse_trace` (the one parser) and encoded into a
batch file (:func:`encode_batch`; format in ``format.md``), which the compiled harness
(``harness.cpp`` + the Verilated core, one build per configuration and build options,
cached by content under ``build/``; :func:`build_harness`: phases, options, caches) plays in one process, one trace after the other with a
core reset and fresh memories in between; results come back as JSON lines on its stdout.

Options (those of the cocotb engine, same defaults and meaning): ``max_cycles``
(2,000,000), ``poll_interval`` (16), ``status_interval`` (1024), ``backpressure`` (True),
``busy`` (0.3), ``latency`` ((1, 16)), ``seed`` (1), ``nposted`` (False). With back-pressure
off both engines give the same cycles; with it on, the stall and latency draws come from the
harness's own generator (xorshift64*, seeded by ``seed``), not Python's.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from sim.trace import (CheckCrc, CheckFile, CheckNothing, IntrNotify, MemInit, MemLoad,
                       OrderingPoint, PollRegEqual, RegRead, RegReadCheck, RegWrite, Trace,
                       TraceError, parse_trace)
from sim.trace_run import CheckResult, DumpCheck, EngineUnavailable, TraceResult
from sim.txn import DumpMem, ReadReg, WaitIntr

__all__ = ["FLAGS", "PlaybackError", "encode_batch", "build_harness", "compile_model",
           "run_playback_batch", "run_playback", "verilator_flags", "describe_options"]

HERE = Path(__file__).resolve().parent
MAGIC = b"NVDLAPB1"
HEADER = struct.Struct("<QIIIIIIQIIIIIIIIIIQ")      # 88 bytes
TRACE = struct.Struct("<IIQII")                      # magic, commands, image bytes, 2 CRCs
CMD = struct.Struct("<BBHIQQ")                       # 24 bytes
(OP_NOP, OP_WRITE, OP_POLL, OP_INTR, OP_MEM_INIT, OP_MEM_LOAD, OP_CHECK_CRC, OP_READ, OP_WAIT,
 OP_DUMP) = range(10)
MEMS = {"dbb": 0, "sram": 1}

#: Build options by name: (Verilator arguments, make variables of the C++ compile of the
#: Verilated model). A later option's make variables override an earlier one's. Measured one
#: by one in README "Trace playback engine" (``python bench/build_time.py --sweep`` for build
#: time per phase, ``python bench/sim_speed.py --sweep`` for speed).
FLAGS = {
    "public": (["--public-flat-rw"], {}),
    "O3": (["-O3"], {"OPT_FAST": "-O3", "OPT_GLOBAL": "-O3", "OPT_SLOW": "-O1"}),
    "xassign": (["--x-assign", "fast"], {}),
    "xinitial": (["--x-initial", "fast"], {}),
    "threads2": (["--threads", "2"], {}),
    "cO2": ([], {"OPT_FAST": "-O2"}),
    "cO1": ([], {"OPT_FAST": "-O1"}),
    "slowO0": ([], {"OPT_SLOW": "-O0"}),
    "split": (["--output-split-cfuncs", "1000"], {}),
}
#: Options before any of FLAGS: Verilator's own and verilated.mk's defaults.
BASE_FLAGS = (["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "0", "--x-initial", "0",
               "-O2"], {"OPT_FAST": "-Os", "OPT_GLOBAL": "-Os", "OPT_SLOW": ""})
#: The options the default build uses.
DEFAULT_OPTIONS = ("O3", "xassign", "xinitial", "split", "slowO0")
#: Runtime-library objects of verilated.mk (VM_GLOBAL_FAST), cached across builds.
RUNTIME_OBJECTS = ("verilated", "verilated_threads")


class PlaybackError(RuntimeError):
    """The harness could not be built or rejected its input."""


# --------------------------------------------------------------------------------------------
# encoding
# --------------------------------------------------------------------------------------------
def _runs(image) -> list:
    """Contiguous (offset, bytes) runs of a DatImage."""
    offs, data = image.offsets, image.data
    if not data.size:
        return []
    breaks = np.flatnonzero(np.diff(offs) != 1) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [offs.size])).tolist()
    return [(int(offs[s]), data[s:e].tobytes()) for s, e in zip(starts, ends)]


def encode_trace(trace: Trace) -> bytes:
    """One trace record: header, 24-byte commands (one per trace command, in order), image."""
    cmds, image = [], bytearray()
    for c in trace.commands:
        if isinstance(c, RegWrite):
            flag = int(c.register == "D_OP_ENABLE" and bool(c.value & 1))
            cmds.append(CMD.pack(OP_WRITE, 0, flag, c.addr, c.value & 0xFFFFFFFF, 0))
        elif isinstance(c, PollRegEqual):
            cmds.append(CMD.pack(OP_POLL, 0, 0, c.addr, c.value & 0xFFFFFFFF, 0))
        elif isinstance(c, IntrNotify):
            cmds.append(CMD.pack(OP_INTR, 0, int(c.single), 0, c.mask, 0))
        elif isinstance(c, MemInit):
            if c.fill is not None:
                cmds.append(CMD.pack(OP_MEM_INIT, MEMS[c.mem], c.fill, 0, c.addr, c.size))
            else:                        # a pattern of varying bytes: a load of one run
                raw = c.data().tobytes()
                pos = len(image)
                image += struct.pack("<QI", 0, len(raw)) + raw
                cmds.append(CMD.pack(OP_MEM_LOAD, MEMS[c.mem], 0, 1, c.addr, pos))
        elif isinstance(c, RegRead):                 # one read, any value
            cmds.append(CMD.pack(OP_READ, 0, 0, c.addr, 0, (1 << 32) | 0))
        elif isinstance(c, RegReadCheck):            # one read, the whole word
            cmds.append(CMD.pack(OP_READ, 0, 0, c.addr, 0xFFFFFFFF, (1 << 32) | c.value))
        elif isinstance(c, MemLoad):
            runs = _runs(c.image)
            pos = len(image)
            for off, raw in runs:
                image += struct.pack("<QI", off, len(raw)) + raw
            cmds.append(CMD.pack(OP_MEM_LOAD, MEMS[c.mem], 0, len(runs), c.addr, pos))
        elif isinstance(c, CheckCrc):
            cmds.append(CMD.pack(OP_CHECK_CRC, MEMS[c.mem], 0, c.crc, c.addr, c.size))
        elif isinstance(c, ReadReg):
            cmds.append(CMD.pack(OP_READ, 0, 0, c.addr, c.mask, (c.tries << 32) | c.value))
        elif isinstance(c, WaitIntr):
            cmds.append(CMD.pack(OP_WAIT, 0, 0, 0, 0, 0))
        elif isinstance(c, (DumpMem, CheckFile)):
            cmds.append(CMD.pack(OP_DUMP, MEMS[c.mem], 0, len(image), c.addr, c.size))
            image += c.expected.tobytes()
        elif isinstance(c, (CheckNothing, OrderingPoint)):
            cmds.append(CMD.pack(OP_NOP, 0, 0, 0, 0, 0))
        else:                                                       # pragma: no cover
            raise TraceError(f"{c.where}: the playback engine cannot run {type(c).__name__}")
    blob = b"".join(cmds)
    return (TRACE.pack(0x45435254, len(cmds), len(image), zlib.crc32(blob),
                       zlib.crc32(bytes(image))) + blob + bytes(image))


def _options(cfg, options, ntraces):
    from arch.registers import register_map
    rmap = register_map(cfg)
    lat = tuple(options.get("latency") or (1, 16))
    return HEADER.pack(
        int(options.get("max_cycles") or 2_000_000),
        max(1, int(options.get("poll_interval") or 16)),
        max(1, int(options.get("status_interval") or 1024)),
        int(bool(options.get("backpressure", True))) | (2 * bool(options.get("nposted"))),
        int(round(float(options.get("busy", 0.3)) * 1e6)),
        int(lat[0]), int(lat[1]),
        int(options.get("seed", 1) or 0) & (2 ** 64 - 1),
        max(1, min(cfg.outstanding, 64)), cfg.max_burst_length,
        rmap.address("GLB.S_INTR_STATUS") >> 2, rmap.address("GLB.S_INTR_MASK") >> 2,
        rmap.lookup("GLB.S_INTR_MASK")[1].reset,
        int(bool(cfg.sramif)), cfg.dbbif_width // 8, cfg.sramif_width // 8, ntraces, 0, 0)


def encode_batch(traces, cfg, **options) -> bytes:
    """The batch file of ``traces`` (parsed Trace objects) for the build of ``cfg``."""
    header = _options(cfg, options, len(traces))
    return (MAGIC + struct.pack("<I", len(header)) + header
            + struct.pack("<I", zlib.crc32(header))
            + b"".join(encode_trace(t) for t in traces))


# --------------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------------
def build_flags(opts=DEFAULT_OPTIONS) -> tuple:
    """(Verilator arguments, make variables) of the option sets ``opts`` (names of FLAGS)."""
    args, make = list(BASE_FLAGS[0]), dict(BASE_FLAGS[1])
    for name in opts:
        if name not in FLAGS:
            raise ValueError(f"unknown build option {name!r} ({', '.join(FLAGS)})")
        args += FLAGS[name][0]
        make.update(FLAGS[name][1])
    return args, make


def verilator_flags(opts=DEFAULT_OPTIONS) -> list:
    return build_flags(opts)[0]


def describe_options(opts=DEFAULT_OPTIONS, jobs=None) -> str:
    """One line naming the build's options (printed by the benches and ``nvdla trace``)."""
    args, make = build_flags(opts)
    mk = " ".join(f"{k}={v or repr('')}" for k, v in sorted(make.items()))
    return (f"[{','.join(opts) or 'base'}] verilator {' '.join(args[3:])}; make {mk}"
            + (f" -j{jobs}" if jobs else ""))


def build_jobs() -> int:
    """Parallel C++ compiles of a build: ``NVDLA_BUILD_JOBS`` or the machine's CPU count."""
    try:
        return max(1, int(os.environ.get("NVDLA_BUILD_JOBS") or 0) or os.cpu_count() or 1)
    except ValueError:
        return os.cpu_count() or 1


def _harness_digest() -> str:
    return hashlib.sha1((HERE / "harness.cpp").read_bytes()).hexdigest()[:8]


def _config_header(cfg) -> str:
    return (f"#define PB_HAS_SRAM {int(bool(cfg.sramif))}\n"
            f"#define PB_DBB_BYTES {cfg.dbbif_width // 8}\n"
            f"#define PB_SRAM_BYTES {cfg.sramif_width // 8}\n")


class _Phase:
    """Wall and CPU seconds (of this process's waited-for children) of one build phase."""

    def __init__(self, phases, name):
        self.phases, self.name = phases, name

    def __enter__(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.t0, self.c0 = time.perf_counter(), r.ru_utime + r.ru_stime
        return self

    def __exit__(self, *exc):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.phases[self.name] = {"wall": round(time.perf_counter() - self.t0, 2),
                                  "cpu": round(r.ru_utime + r.ru_stime - self.c0, 2)}


def _run(cmd, cwd, env, log, what):
    log.write(" ".join(map(str, cmd)) + "\n")
    log.flush()
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    if r.returncode:
        raise PlaybackError(f"{what} failed (log {log.name})")


def _runtime_key(obj: Path, make: dict) -> str:
    """Key of the Verilator runtime objects a model's makefiles would compile: the Verilator
    installation, the compiler, OPT_GLOBAL and the VM_* switches that reach CPPFLAGS."""
    from arch.toolchain import verilator_env
    env = verilator_env()
    h = hashlib.sha1()
    h.update(env["VERILATOR_ROOT"].encode())
    h.update((Path(env["VERILATOR_ROOT"]) / "include" / "verilated.mk").read_bytes())
    h.update(subprocess.run(["c++", "--version"], capture_output=True).stdout)
    h.update(json.dumps([make.get("OPT_GLOBAL"), make.get("CXXFLAGS")]).encode())
    for mk in sorted(obj.glob("*.mk")):
        for line in mk.read_text().splitlines():
            if line.startswith(("VM_SC ", "VM_PROFC", "VM_C11", "VM_TIMING", "VM_COVERAGE",
                                "VM_TRACE")):
                h.update(line.encode())
    return h.hexdigest()[:10]


def _runtime_restore(obj: Path, rdir: Path) -> bool:
    """Put cached runtime objects into ``obj``, newer than its makefiles (make keeps them)."""
    files = [rdir / f"{n}{ext}" for n in RUNTIME_OBJECTS for ext in (".o", ".d")]
    if not all(f.exists() for f in files):
        return False
    for f in files:
        shutil.copyfile(f, obj / f.name)
        os.utime(obj / f.name)
    return True


def _runtime_save(obj: Path, rdir: Path):
    files = [obj / f"{n}{ext}" for n in RUNTIME_OBJECTS for ext in (".o", ".d")]
    if rdir.exists() or not all(f.exists() for f in files):
        return
    rdir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=rdir.parent, prefix=".rt-"))
    tmp.chmod(0o755)
    for f in files:
        shutil.copyfile(f, tmp / f.name)
    try:
        tmp.rename(rdir)
    except OSError:                              # another build saved it first
        shutil.rmtree(tmp, ignore_errors=True)


def compile_model(cfg, bdir: Path, verilog: Path, opts=DEFAULT_OPTIONS, jobs=None,
                  runtime_cache: Path | None = None, env=None, log=None) -> dict:
    """Verilate ``verilog`` (the core of ``cfg``) with ``harness.cpp`` in ``bdir`` and compile
    it with make -j ``jobs``; returns the build record: options, per-phase wall and CPU
    seconds ("verilate", "compile") and whether Verilator's runtime objects came from
    ``runtime_cache`` (a directory; None: compiled in this build)."""
    from arch.toolchain import verilator_env
    env = env or dict(os.environ, **verilator_env())
    if log is None:
        with open(bdir / "build.log", "a") as out:
            return compile_model(cfg, bdir, verilog, opts, jobs, runtime_cache, env, out)
    jobs = jobs or build_jobs()
    args, make = build_flags(opts)
    shutil.copy(HERE / "harness.cpp", bdir / "harness.cpp")
    (bdir / "playback_config.h").write_text(_config_header(cfg))
    if verilog.resolve() != (bdir / "nvdla_core.v").resolve():
        shutil.copyfile(verilog, bdir / "nvdla_core.v")
    shutil.rmtree(bdir / "obj", ignore_errors=True)
    rec = {"options": list(opts), "verilator": args, "make": make, "jobs": jobs, "phases": {}}
    with _Phase(rec["phases"], "verilate"):
        _run(["verilator", "--cc", "--exe", "--top-module", "nvdla_core", "-Mdir", "obj", "-o",
              "nvdla_playback", *args, "nvdla_core.v", "harness.cpp"], bdir, env, log,
             "verilating the core")
    rdir = runtime_cache / _runtime_key(bdir / "obj", make) if runtime_cache else None
    rec["runtime"] = "cached" if rdir and _runtime_restore(bdir / "obj", rdir) else "built"
    with _Phase(rec["phases"], "compile"):
        _run(["make", "-C", "obj", "-f", "Vnvdla_core.mk", f"-j{jobs}",
              *(f"{k}={v}" for k, v in make.items()), "nvdla_playback"], bdir, env, log,
             "compiling the playback harness")
    if rdir and rec["runtime"] == "built":
        _runtime_save(bdir / "obj", rdir)
    return rec


def build_harness(cfg, opts=DEFAULT_OPTIONS, log=None, jobs=None) -> Path:
    """The harness executable for ``cfg`` built with the option sets ``opts`` (cached: the
    Verilog per configuration and RTL sources, the model per Verilog and options, the harness
    per its source, the Verilator runtime objects per Verilator, compiler and flags).
    ``log``: a callable given a line when a build starts and ends (its options, phases)."""
    from arch.toolchain import verilator_env
    from tb.runner import BUILD, _Locked, _cfg_key, _source_digest, core_verilog
    try:
        env = dict(os.environ, **verilator_env())
    except RuntimeError as e:
        raise EngineUnavailable(str(e)) from None
    args, make = build_flags(opts)
    tag = "-".join(opts) or "base"
    fkey = hashlib.sha1(json.dumps([args, sorted(make.items())]).encode()).hexdigest()[:6]
    hd = _harness_digest()

    def where(digest):
        bdir = BUILD / _cfg_key(cfg, digest) / "playback" / f"{tag}-{fkey}"
        return bdir, bdir / "obj" / "nvdla_playback"

    def ready(bdir, exe, stamp):
        return stamp.exists() and exe.exists() and (bdir / ".harness").exists() \
            and (bdir / ".harness").read_text() == hd

    jobs = jobs or build_jobs()
    bdir, exe = where(_source_digest())
    with _Locked(bdir) as stamp:
        if ready(bdir, exe, stamp):
            return exe
        if stamp.exists():                       # only the harness changed: recompile it
            shutil.copy(HERE / "harness.cpp", bdir / "harness.cpp")
            with open(bdir / "build.log", "a") as out:
                _run(["make", "-C", "obj", "-f", "Vnvdla_core.mk", f"-j{jobs}",
                      *(f"{k}={v}" for k, v in make.items()), "nvdla_playback"], bdir, env,
                     out, "building the playback harness")
            (bdir / ".harness").write_text(hd)
            return exe
    if log:
        log(f"building the playback harness of {cfg.name}: {describe_options(opts, jobs)}")
    t0 = time.perf_counter()
    verilog, made_from, gen = core_verilog(cfg)
    bdir, exe = where(made_from)
    with _Locked(bdir) as stamp:
        if ready(bdir, exe, stamp):
            return exe
        with open(bdir / "build.log", "a") as out:
            rec = compile_model(cfg, bdir, verilog, opts, jobs, BUILD / "verilator-runtime",
                                env, out)
        rec["phases"] = {"verilog": gen, **rec["phases"]}
        rec["made_from"] = made_from
        rec["seconds"] = round(time.perf_counter() - t0, 1)
        (bdir / "build.json").write_text(json.dumps(rec, indent=1) + "\n")
        stamp.write_text(f"ok {made_from} {rec['seconds']:.1f}s\n")
        (bdir / ".harness").write_text(hd)
    if log:
        log(f"built in {time.perf_counter() - t0:.0f} s: {build_summary(exe)}")
    return exe


def build_record(exe: Path) -> dict | None:
    """The build record of ``exe`` (options, per-phase wall and CPU seconds), or None."""
    try:
        return json.loads((exe.parent.parent / "build.json").read_text())
    except (OSError, ValueError):
        return None


def build_summary(exe: Path) -> str:
    rec = build_record(exe)
    if not rec:
        return "no build record"
    ph = ", ".join(f"{k} {v['wall']:.0f} s ({v['cpu']:.0f} s CPU)"
                   for k, v in rec["phases"].items())
    return f"{ph}; runtime objects {rec.get('runtime', '?')}"


def build_seconds(exe: Path) -> float | None:
    """Wall seconds the model build of ``exe`` took (from its stamp), or None."""
    try:
        return float((exe.parent.parent / ".built").read_text().split()[-1].rstrip("s"))
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------
def _message(trace: Trace, d: dict) -> tuple:
    """(checks, failure messages) of one result line."""
    cmds = trace.commands
    checks, failures = [], []
    crc_cmds = [c for c in cmds if isinstance(c, CheckCrc)]
    for cmd, actual in zip(crc_cmds, d["crcs"]):
        chk = CheckResult(cmd.where, cmd.sync_id, cmd.mem, cmd.addr, cmd.size, cmd.crc, actual)
        checks.append(chk)
        if not chk.passed:
            failures.append(chk.describe())
    for cmd, (n, first, want, got, crc) in zip([c for c in cmds
                                                if isinstance(c, (DumpMem, CheckFile))],
                                               d.get("dumps", ())):
        chk = DumpCheck(cmd.where, cmd.mem, cmd.addr, cmd.size,
                        zlib.crc32(cmd.expected.tobytes()), crc, n, **DumpCheck.labels(cmd))
        if n:
            chk.first, chk.first_expected, chk.first_actual = cmd.addr + first, want, got
            failures.append(chk.describe())
        checks.append(chk)
    for i, value in d.get("reads", ()):
        c = cmds[i]
        if isinstance(c, RegReadCheck):
            failures.append(c.mismatch(value))
            continue
        failures.append(f"{c.where}: read_reg {c.name} mask {c.mask:#010x}: expected "
                        f"{c.value & c.mask:#010x}, read {value & c.mask:#010x}")
    stop = d.get("stop")
    if stop:
        kind = stop["kind"]
        if kind == "poll":
            c = cmds[stop["cmd"]]
            failures.append(f"{c.where}: timeout waiting for poll_reg_equal({c.name}, "
                            f"{c.value:#x}) after {stop['waited']} cycles: reads "
                            f"{stop['value']:#x}")
        elif kind == "intr":
            c = cmds[stop["cmd"]]
            traffic = ", ".join(f"{n} {r} read / {w} write bursts" for n, r, w in stop["traffic"])
            failures.append(f"{c.where}: timeout waiting for {c.what} after "
                            f"{stop['waited']} cycles (GLB.S_INTR_STATUS={stop['status']:#x}, "
                            f"interrupt pin {stop['pin']}; {traffic})")
        elif kind == "wait":
            c = cmds[stop["cmd"]]
            failures.append(f"{c.where}: wait: no interrupt after {stop['waited']} cycles")
        elif kind == "nomem":
            c = cmds[stop["cmd"]]
            failures.append(f"{c.where}: this build has no {c.mem.upper()}IF memory")
        else:
            failures.append(f"internal error: {stop.get('message', kind)}")
    failures.extend(d.get("errors", ()))
    return checks, failures


def _stderr(line):
    print(f"nvdla playback: {line}", file=sys.stderr, flush=True)


def run_playback_batch(traces, cfg, *, on_result=None, build_options=None, **options) -> list:
    """Run ``traces`` (Trace objects, trace directories or ``.cfg`` paths) in one harness
    process on the RTL of ``cfg``; returns one TraceResult per trace, in order."""
    from tb.trace_rtl import _hint
    results = [None] * len(traces)
    parsed = []
    for i, t in enumerate(traces):
        if isinstance(t, Trace):
            parsed.append((i, t))
            continue
        t0 = time.perf_counter()
        try:
            parsed.append((i, parse_trace(str(t), cfg)))
        except TraceError as e:
            name = os.path.basename(os.path.normpath(str(t)))
            results[i] = TraceResult(name, "rtl", False, str(e), wall=time.perf_counter() - t0)
            if on_result:
                on_result(results[i])
    if not parsed:
        return results
    exe = build_harness(cfg, tuple(build_options) if build_options is not None
                        else DEFAULT_OPTIONS, log=_stderr)
    blob = encode_batch([t for _, t in parsed], cfg, **options)
    with tempfile.TemporaryDirectory(prefix="nvdla-playback-") as work:
        path = Path(work) / "batch.bin"
        path.write_bytes(blob)
        proc = subprocess.Popen([str(exe), str(path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        done = 0
        for line in proc.stdout:
            d = json.loads(line)
            i, trace = parsed[d["index"]]
            checks, failures = _message(trace, d)
            r = TraceResult(trace.name, "rtl", not failures, "; ".join(failures), checks,
                            int(d["cycles"]), "cycles", float(d["wall"]),
                            sum(d["layers"]), list(d["layers"]),
                            tuple(d.get("bursts", (0, 0))))
            results[i] = _hint(r, trace)
            done += 1
            if on_result:
                on_result(results[i])
        err = proc.stderr.read()
        rc = proc.wait()
    if rc == 2 and done == 0:
        raise PlaybackError(err.strip() or "the playback harness rejected its batch file")
    for i, trace in parsed[done:]:
        results[i] = TraceResult(trace.name, "rtl", False,
                                 f"internal error: the playback harness ended (status {rc}) "
                                 f"before this trace finished: {err.strip()[-500:]}")
        if on_result:
            on_result(results[i])
    return results


def run_playback(trace, cfg, **options) -> TraceResult:
    """One trace (see :func:`run_playback_batch`)."""
    return run_playback_batch([trace], cfg, **options)[0]


def run_file(exe, path) -> subprocess.CompletedProcess:
    """Run the harness on a batch file as it is (for tests of the rejection of bad input)."""
    return subprocess.run([str(exe), str(path)], capture_output=True, text=True)
