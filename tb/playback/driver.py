"""Python side of the playback engine: encode traces, build the harness, run it, read results.

    from tb.playback import run_playback_batch
    results = run_playback_batch(paths, cfg, backpressure=False)

The traces are parsed by :func:`sim.trace.parse_trace` (the one parser) and encoded into a
batch file (:func:`encode_batch`; format in ``format.md``), which the compiled harness
(``harness.cpp`` + the Verilated core, one build per configuration and Verilator options,
cached by content under ``build/``) plays in one process, one trace after the other with a
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
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from sim.trace import (CheckCrc, CheckNothing, IntrNotify, MemInit, MemLoad, OrderingPoint,
                       PollRegEqual, RegWrite, Trace, TraceError, parse_trace)
from sim.trace_run import CheckResult, EngineUnavailable, TraceResult

__all__ = ["FLAGS", "PlaybackError", "encode_batch", "build_harness", "run_playback_batch",
           "run_playback", "verilator_flags"]

HERE = Path(__file__).resolve().parent
MAGIC = b"NVDLAPB1"
HEADER = struct.Struct("<QIIIIIIQIIIIIIIIIIQ")      # 88 bytes
TRACE = struct.Struct("<IIQII")                      # magic, commands, image bytes, 2 CRCs
CMD = struct.Struct("<BBHIQQ")                       # 24 bytes
OP_NOP, OP_WRITE, OP_POLL, OP_INTR, OP_MEM_INIT, OP_MEM_LOAD, OP_CHECK_CRC = range(7)
MEMS = {"dbb": 0, "sram": 1}

#: Verilator options of the harness build, by name (see README "Playback engine"): the
#: baseline is the cocotb build's; each later one was measured on top of the previous.
FLAGS = {
    "public": ["--public-flat-rw"],
    "O3": ["-O3", "-MAKEFLAGS", "OPT_FAST=-O3 OPT_GLOBAL=-O3 OPT_SLOW=-O1"],
    "xassign": ["--x-assign", "fast"],
    "xinitial": ["--x-initial", "fast"],
    "threads2": ["--threads", "2"],
}
#: The options the default build uses (the ones that paid).
DEFAULT_OPTIONS = ("O3", "xassign", "xinitial")


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
            cmds.append(CMD.pack(OP_INTR, 0, 0, 0, c.mask, 0))
        elif isinstance(c, MemInit):
            if c.fill:
                raise TraceError(f"{c.where}: the playback engine fills with 0 only")
            cmds.append(CMD.pack(OP_MEM_INIT, MEMS[c.mem], 0, 0, c.addr, c.size))
        elif isinstance(c, MemLoad):
            runs = _runs(c.image)
            pos = len(image)
            for off, raw in runs:
                image += struct.pack("<QI", off, len(raw)) + raw
            cmds.append(CMD.pack(OP_MEM_LOAD, MEMS[c.mem], 0, len(runs), c.addr, pos))
        elif isinstance(c, CheckCrc):
            cmds.append(CMD.pack(OP_CHECK_CRC, MEMS[c.mem], 0, c.crc, c.addr, c.size))
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
def verilator_flags(opts=DEFAULT_OPTIONS) -> list:
    base = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "0", "--x-initial", "0",
            "-O2"]
    for name in opts:
        if name not in FLAGS:
            raise ValueError(f"unknown Verilator option set {name!r} ({', '.join(FLAGS)})")
        base += FLAGS[name]
    return base


def _harness_digest() -> str:
    return hashlib.sha1((HERE / "harness.cpp").read_bytes()).hexdigest()[:8]


def _config_header(cfg) -> str:
    return (f"#define PB_HAS_SRAM {int(bool(cfg.sramif))}\n"
            f"#define PB_DBB_BYTES {cfg.dbbif_width // 8}\n"
            f"#define PB_SRAM_BYTES {cfg.sramif_width // 8}\n")


def build_harness(cfg, opts=DEFAULT_OPTIONS, log=None) -> Path:
    """The harness executable for ``cfg`` built with the Verilator option sets ``opts``
    (cached: the model per Verilog text and options, the harness per its source)."""
    from arch.toolchain import verilator_env
    from tb.runner import BUILD, _Locked, _cfg_key, _fresh_core_verilog, _source_digest
    try:
        env = dict(os.environ, **verilator_env())
    except RuntimeError as e:
        raise EngineUnavailable(str(e)) from None
    flags = verilator_flags(opts)
    tag = "-".join(opts) or "base"
    fkey = hashlib.sha1(json.dumps(flags).encode()).hexdigest()[:6]
    digest = _source_digest()
    bdir = BUILD / _cfg_key(cfg, digest) / "playback" / f"{tag}-{fkey}"
    exe = bdir / "obj" / "nvdla_playback"
    hd = _harness_digest()
    with _Locked(bdir) as stamp:
        if stamp.exists() and (bdir / ".harness").exists() \
                and (bdir / ".harness").read_text() == hd and exe.exists():
            return exe
        t0 = time.perf_counter()
        shutil.copy(HERE / "harness.cpp", bdir / "harness.cpp")
        (bdir / "playback_config.h").write_text(_config_header(cfg))
        out = open(bdir / "build.log", "a")
        if not stamp.exists():
            text, made_from = _fresh_core_verilog(cfg, "nvdla_core")
            (bdir / "nvdla_core.v").write_text(text)
            cmd = ["verilator", "--cc", "--exe", "--build", "-j", "1", "--top-module",
                   "nvdla_core", "-Mdir", "obj", "-o", "nvdla_playback", *flags,
                   "-CFLAGS", f"-I{bdir}", "nvdla_core.v", "harness.cpp"]
            out.write(" ".join(cmd) + "\n")
            out.flush()
            r = subprocess.run(["nice", "-n", "10", *cmd], cwd=bdir, env=env, stdout=out,
                               stderr=subprocess.STDOUT)
            if r.returncode:
                raise PlaybackError(f"building the playback harness failed (log {bdir}/build.log)")
            stamp.write_text(f"ok {made_from} {time.perf_counter() - t0:.1f}s\n")
        else:                                    # only the harness changed: recompile it
            r = subprocess.run(["nice", "-n", "10", "make", "-C", "obj", "-f",
                                "Vnvdla_core.mk", "nvdla_playback"],
                               cwd=bdir, env=env, stdout=out, stderr=subprocess.STDOUT)
            if r.returncode:
                raise PlaybackError(f"building the playback harness failed (log {bdir}/build.log)")
        (bdir / ".harness").write_text(hd)
        out.close()
    return exe


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
            failures.append(f"{c.where}: timeout waiting for intr_notify({c.source}) after "
                            f"{stop['waited']} cycles (GLB.S_INTR_STATUS={stop['status']:#x}, "
                            f"interrupt pin {stop['pin']}; {traffic})")
        elif kind == "nomem":
            c = cmds[stop["cmd"]]
            failures.append(f"{c.where}: this build has no {c.mem.upper()}IF memory")
        else:
            failures.append(f"internal error: {stop.get('message', kind)}")
    failures.extend(d.get("errors", ()))
    return checks, failures


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
                        else DEFAULT_OPTIONS)
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
                            sum(d["layers"]), list(d["layers"]))
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
