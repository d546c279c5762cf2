"""Running NVDLA traces on an engine: the golden model now, the RTL when it is plugged in.

    result = run_trace("traces/nv_small/sdp_1x1x1_pass_through_int8", cfg)  # engine="golden"
    result.passed, result.message, result.checks, result.cycles, result.layer_cycles, result.wall

An engine is a function ``engine(trace: Trace, cfg, **options) -> TraceResult``; engines are
looked up by name in :data:`ENGINES` (:func:`register_engine` adds one). The golden engine
executes the commands in order on a :class:`sim.core.GoldenCore`:

- ``mem_init`` / ``mem_load`` write the memory directly (backdoor);
- ``reg_write`` is a CSB write, after which every layer that can start runs to completion
  (the hardware starts a layer as soon as its groups are enabled);
- ``poll_reg_equal`` reads, stepping the model between reads, until equal; it fails when
  the model can make no more progress or after ``max_steps``;
- ``intr_notify`` waits the same way for the source's GLB ``S_INTR_STATUS`` bit, then
  clears it by writing 1 to ``S_INTR_STATUS``;
- ``check_crc`` compares ``zlib.crc32`` of the memory range (after that sync point, i.e.
  after its ``intr_notify`` returned) with the expected value; ``check_nothing`` checks
  nothing;
- ``sync_notify`` / ``sync_wait`` are ordering points, met by running the file in order;
- ``mem_init`` with a pattern writes :meth:`sim.trace.MemInit.data`; ``reg_read`` reads once,
  ``reg_read_check`` reads once and fails the trace (which goes on) on a different word;
  a single-shot ``intr_notify(id)`` waits for the interrupt pin, then clears every pending
  unmasked source; ``check_file`` compares the region with its image byte for byte (a
  :class:`DumpCheck`).

NVDLA's traceplayer tests (:mod:`sim.txn`, ``Trace.deferred``) run with the model's
instantaneous layers spread out the way hardware time would spread them, so that what the
tests read back while a layer runs still reads as running:

- a ``write_reg`` does not start layers; hardware time passes only where the test waits:
  at ``wait`` and between the tries of a mismatching ``read_reg``. One unit of that time
  delivers the next held done interrupt, or else runs one layer (whose done interrupts are
  then held and come one per unit, in pipeline order: ``GoldenCore.stagger_interrupts``).
  So ``D_OP_ENABLE`` reads 1 right after the enabling write, and a test that waits once per
  interrupt sees them one at a time;
- ``wait`` passes time until the interrupt pin is high (it clears nothing);
- ``read_reg`` compares under its mask; a mismatch passes one unit of time and reads again,
  up to its tries; a read still wrong then fails the trace and the trace goes on;
- ``dump_mem`` compares the memory region with the expected file byte for byte
  (:class:`DumpCheck`: first differing address, count, CRCs of both).

The golden model has no cycle timing: its ``cycles`` are layer-level steps (``cycle_unit``
says which). A CRC mismatch fails the trace but execution continues so every check is
reported; a timeout or a unit model error ends the trace.
"""

from __future__ import annotations

import os
import time
import traceback
import zlib
from dataclasses import dataclass, field

import numpy as np

from .trace import (CheckCrc, CheckFile, CheckNothing, IntrNotify, MemInit, MemLoad,
                    OrderingPoint, PollRegEqual, RegRead, RegReadCheck, RegWrite, Trace,
                    TraceError, parse_trace)
from .txn import DumpMem, ReadReg, WaitIntr

__all__ = ["CheckResult", "DumpCheck", "TraceResult", "EngineUnavailable", "ENGINES", "register_engine",
           "run_trace", "run_golden", "run_rtl_unavailable"]


class EngineUnavailable(RuntimeError):
    """The requested engine cannot run here (not implemented yet, or its tools are missing)."""


@dataclass
class CheckResult:
    where: str
    sync_id: str
    mem: str
    addr: int
    size: int
    expected: int
    actual: int

    @property
    def passed(self) -> bool:
        return self.expected == self.actual

    def describe(self) -> str:
        return (f"{self.where}: check_crc({self.sync_id}) {self.mem} {self.addr:#x}+{self.size:#x}:"
                f" expected {self.expected:#010x}, actual {self.actual:#010x}")


@dataclass
class DumpCheck:
    """A traceplayer ``dump_mem`` or a ``check_file``: the region against the expected
    file, byte for byte."""
    where: str
    mem: str
    addr: int
    size: int
    expected: int                        #: CRC-32 of the expected bytes
    actual: int                          #: CRC-32 of the memory region
    mismatches: int = 0                  #: differing bytes
    first: int | None = None             #: address of the first differing byte
    first_expected: int = 0
    first_actual: int = 0
    sync_id: str = "dump_mem"
    command: str = "dump_mem"            #: "dump_mem" or "check_file"

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    @classmethod
    def compare(cls, where, mem, addr, expected, actual, **kw):
        diff = np.flatnonzero(expected != actual)
        chk = cls(where, mem, addr, int(expected.size), zlib.crc32(expected.tobytes()),
                  zlib.crc32(actual.tobytes()), int(diff.size), **kw)
        if diff.size:
            i = int(diff[0])
            chk.first, chk.first_expected, chk.first_actual = addr + i, int(expected[i]), \
                int(actual[i])
        return chk

    @staticmethod
    def labels(cmd) -> dict:
        """The sync_id / command fields of a check of ``cmd`` (a DumpMem or a CheckFile)."""
        if isinstance(cmd, CheckFile):
            return {"sync_id": cmd.sync_id, "command": "check_file"}
        return {}

    def describe(self) -> str:
        what = (f"check_file({self.sync_id})" if self.command == "check_file"
                else "dump_mem")
        return (f"{self.where}: {what} {self.mem} {self.addr:#x}+{self.size:#x}: "
                f"{self.mismatches} bytes differ, first at {self.first:#x} (expected "
                f"{self.first_expected:#04x}, actual {self.first_actual:#04x})")


@dataclass
class TraceResult:
    name: str
    engine: str
    passed: bool = False
    message: str = ""                    #: why it failed ("" when it passed)
    checks: list = field(default_factory=list)
    cycles: int = 0                      #: simulated cycles, or layer steps (cycle_unit)
    cycle_unit: str = "cycles"           #: "cycles" (RTL) or "layer-steps" (golden)
    wall: float = 0.0                    #: seconds
    #: RTL: cycles from each layer's last D_OP_ENABLE write to its interrupt, summed over the
    #: trace's layers (NVDLA's reference measure); 0 without a layer and on the golden model
    layer_cycles: int = 0
    layers: list = field(default_factory=list)   #: RTL: the layer cycles of each layer
    #: playback engine: (read, write) AXI bursts the core issued on DBBIF and SRAMIF together
    bursts: tuple = (0, 0)

    @property
    def failed_checks(self):
        return [c for c in self.checks if not c.passed]


ENGINES = {}


def register_engine(name: str, fn) -> None:
    """Plug in an engine: ``fn(trace: Trace, cfg, **options) -> TraceResult``."""
    ENGINES[name] = fn


def run_trace(trace, cfg, engine: str = "golden", **options) -> TraceResult:
    """Run a trace (a :class:`Trace`, a trace directory or a ``.cfg``) on an engine.

    Malformed traces give a failed result whose message is the :class:`TraceError`, and so
    does an unexpected exception inside the engine (``internal error: ...``); an unknown or
    unavailable engine raises :class:`EngineUnavailable`.
    """
    try:
        fn = ENGINES[engine]
    except KeyError:
        raise EngineUnavailable(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}") \
            from None
    t0 = time.perf_counter()
    if not isinstance(trace, Trace):
        path = str(trace)
        try:
            trace = parse_trace(path, cfg)
        except TraceError as e:
            name = os.path.basename(os.path.normpath(path))
            return TraceResult(name, engine, False, str(e), wall=time.perf_counter() - t0)
    try:
        result = fn(trace, cfg, **options)
    except EngineUnavailable:
        raise
    except Exception as e:           # an engine or model bug: this trace fails, the run goes on
        tb = traceback.extract_tb(e.__traceback__)[-1]
        where = f" (at {os.path.basename(tb.filename)}:{tb.lineno})" if tb else ""
        result = TraceResult(trace.name, engine, False,
                             f"internal error: {type(e).__name__}: {e}{where}")
    result.wall = time.perf_counter() - t0
    return result


# --------------------------------------------------------------------------------------------
# golden engine
# --------------------------------------------------------------------------------------------
class _Stop(Exception):
    pass


def run_golden(trace: Trace, cfg, max_steps: int = 64, core=None, **_options) -> TraceResult:
    """Execute ``trace`` on the golden model (``core``: a GoldenCore to use, e.g. with extra
    unit models; default a fresh one). Options of other engines (``sim``) are ignored."""
    from .core import GoldenCore, UnitError
    if core is None:
        core = GoldenCore(cfg)
    res = TraceResult(trace.name, "golden", cycle_unit="layer-steps")
    glb_status = glb_mask = None
    if core.rmap is not None and "GLB" in core.rmap:
        glb_status = core.rmap.address("GLB.S_INTR_STATUS") >> 2
        glb_mask = core.rmap.address("GLB.S_INTR_MASK") >> 2
    failures = []

    def stuck(what, cmd):
        why = "; ".join(core.pending()) or "no layer is enabled"
        return f"{cmd.where}: {what}: the golden model cannot make progress: {why}"

    core.stagger_interrupts = trace.deferred

    def advance() -> bool:
        """One unit of hardware time of a deferred trace: the next held interrupt, or else
        one layer (and its first interrupt). False when nothing can happen."""
        if core.deliver_interrupt():
            return True
        if core.step():
            core.deliver_interrupt()
            return True
        return False

    try:
        for cmd in trace.commands:
            if isinstance(cmd, RegWrite):
                core.csb_write(cmd.addr, cmd.value)
                if not trace.deferred:
                    core.run()
            elif isinstance(cmd, ReadReg):
                for i in range(cmd.tries):
                    got = core.csb_read(cmd.addr)
                    if not (got ^ cmd.value) & cmd.mask or i + 1 == cmd.tries or not advance():
                        break
                if (got ^ cmd.value) & cmd.mask:
                    failures.append(f"{cmd.where}: read_reg {cmd.name} mask {cmd.mask:#010x}: "
                                    f"expected {cmd.value & cmd.mask:#010x}, read "
                                    f"{got & cmd.mask:#010x}")
            elif isinstance(cmd, WaitIntr):
                for _ in range(max_steps + 1):
                    if core.interrupt:
                        break
                    if not advance():
                        raise _Stop(stuck("wait: no interrupt came", cmd))
                else:
                    raise _Stop(f"{cmd.where}: wait: no interrupt after {max_steps} steps")
            elif isinstance(cmd, (DumpMem, CheckFile)):
                chk = DumpCheck.compare(cmd.where, cmd.mem, cmd.addr, cmd.expected,
                                        core.mem(cmd.mem).read(cmd.addr, cmd.size),
                                        **DumpCheck.labels(cmd))
                res.checks.append(chk)
                if not chk.passed:
                    failures.append(chk.describe())
            elif isinstance(cmd, MemLoad):
                cmd.image.write_to(core.mem(cmd.mem), cmd.addr)
            elif isinstance(cmd, MemInit):
                cmd.apply(core.mem(cmd.mem))
            elif isinstance(cmd, RegRead):
                core.csb_read(cmd.addr)
            elif isinstance(cmd, RegReadCheck):
                got = core.csb_read(cmd.addr)
                if got != cmd.value:
                    failures.append(cmd.mismatch(got))
            elif isinstance(cmd, PollRegEqual):
                for _ in range(max_steps + 1):
                    if core.csb_read(cmd.addr) == cmd.value:
                        break
                    if not core.step():
                        raise _Stop(stuck(f"poll_reg_equal({cmd.name}, {cmd.value:#x}) reads "
                                          f"{core.csb_read(cmd.addr):#x}", cmd))
                else:
                    raise _Stop(f"{cmd.where}: poll_reg_equal({cmd.name}, {cmd.value:#x}): "
                                f"still {core.csb_read(cmd.addr):#x} after {max_steps} steps")
            elif isinstance(cmd, IntrNotify) and cmd.single:
                for _ in range(max_steps + 1):
                    if core.interrupt:            # the pin: a pending unmasked source
                        pending = core.intr_status & cmd.mask & ~core.csb_read(glb_mask)
                        core.csb_write(glb_status, pending)
                        break
                    if not core.step():
                        raise _Stop(stuck(f"{cmd.what}: no interrupt came", cmd))
                else:
                    raise _Stop(f"{cmd.where}: {cmd.what}: no interrupt after {max_steps} "
                                "steps")
            elif isinstance(cmd, IntrNotify):
                for _ in range(max_steps + 1):
                    if core.intr_status & cmd.mask:
                        core.csb_write(glb_status, cmd.mask)
                        break
                    if not core.step():
                        raise _Stop(stuck(f"intr_notify({cmd.source}) never came", cmd))
                else:
                    raise _Stop(f"{cmd.where}: intr_notify({cmd.source}): no interrupt after "
                                f"{max_steps} steps")
            elif isinstance(cmd, CheckCrc):
                data = core.mem(cmd.mem).read(cmd.addr, cmd.size)
                chk = CheckResult(cmd.where, cmd.sync_id, cmd.mem, cmd.addr, cmd.size, cmd.crc,
                                  zlib.crc32(data.tobytes()) & 0xFFFFFFFF)
                res.checks.append(chk)
                if not chk.passed:
                    failures.append(chk.describe())
            elif isinstance(cmd, (CheckNothing, OrderingPoint)):
                pass                                     # sync_notify / sync_wait: ordering
            else:                                        # pragma: no cover
                raise _Stop(f"{cmd.where}: the golden engine cannot run {type(cmd).__name__}")
    except _Stop as e:
        failures.append(str(e))
    except UnitError as e:
        failures.append(f"{cmd.where}: {e}")
    res.cycles = core.layers
    res.passed = not failures
    res.message = "; ".join(failures)
    return res


def run_rtl_unavailable(trace: Trace, cfg, **options) -> TraceResult:
    raise EngineUnavailable("the rtl engine is not available yet: the RTL trace harness has "
                            "not been plugged in (use --engine golden)")


register_engine("golden", run_golden)
register_engine("rtl", run_rtl_unavailable)
