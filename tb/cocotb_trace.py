"""cocotb side of the RTL trace engine (driven by :mod:`tb.trace_rtl`).

One simulator run executes a *batch* of parsed NVDLA traces (spec: the trace language of
``sim/trace.py``) on the generated ``NvdlaCore``, one after the other, resetting the core and
clearing the memories in between. The batch arrives as a pickle named by
``NVDLA_TRACE_BATCH`` (``{"traces": [Trace, ...], "options": {...}}``); one JSON line per
finished trace is appended to ``NVDLA_TRACE_RESULTS``.

Command semantics mirror the golden engine (:func:`sim.trace_run.run_golden`):

- ``mem_init`` / ``mem_load``: backdoor writes into the sparse AXI memories (DBBIF =
  ``pri_mem``, SRAMIF = ``sec_mem``);
- runs of consecutive ``reg_write``: one CSB burst, one request per cycle, in order (posted
  writes, or non-posted with ``nposted``);
- ``poll_reg_equal``: CSB reads every ``poll_interval`` cycles until equal;
- ``intr_notify``: waits for ``nvdla2core_interrupt`` (and, in case the source is masked, reads
  GLB ``S_INTR_STATUS`` every ``status_interval`` cycles) until the source's bit is set, then
  writes that bit to ``S_INTR_STATUS`` (write-1-to-clear);
- ``check_crc``: ``zlib.crc32`` of the range read through the backdoor;
- ``mem_init`` with a pattern: the pattern's bytes (:meth:`sim.trace.MemInit.data`);
  ``reg_read``: one CSB read; ``reg_read_check``: one read, a different word fails the trace
  (which goes on); a single-shot ``intr_notify(id)``: as above for any unmasked source,
  clearing every pending unmasked one; ``check_file``: the range against the image's bytes,
  byte for byte;
- NVDLA traceplayer tests (:mod:`sim.txn`): ``read_reg`` reads every ``poll_interval`` cycles
  until equal under its mask, at most its tries (a read still wrong fails the trace, which
  goes on); ``wait`` waits for ``nvdla2core_interrupt`` (clearing nothing); ``dump_mem``
  compares the range with the expected bytes, byte for byte.

Layer cycles (what NVDLA's reference reports): a layer runs from the CSB cycle in which the
last ``D_OP_ENABLE`` write (any block, bit 0 set) before an ``intr_notify`` was accepted to
the cycle ``nvdla2core_interrupt`` rose for that notify (:class:`~tb.harness.CoreBench`
records the pin's rising edges in the background). The edge counted for a status bit is the
one between the last ``S_INTR_STATUS`` read that saw the bit clear and the first that saw it
set; when there is none (the pin was already high for another source) or the source is
masked in ``S_INTR_MASK``, the cycle of that first read counts instead. Consecutive
notifies with no ``D_OP_ENABLE`` between them wait on one layer (e.g. SDP and PDP done of
an SDP->PDP layer): it ends at the latest of their interrupts. ``layer_cycles`` is the sum
over the trace's layers, ``layers`` the list; ``cycles`` spans the whole trace.

Each wait gives up after ``max_cycles`` cycles and ends the trace with ``timeout waiting for
... after N cycles``; a CRC mismatch fails the trace but the trace goes on.
"""

from __future__ import annotations

import json
import os
import pickle
import time
import traceback
import zlib

import cocotb
from cocotb.triggers import First, RisingEdge, Timer

import numpy as np

from sim.trace import (CheckCrc, CheckFile, CheckNothing, IntrNotify, MemInit, MemLoad,
                       OrderingPoint, PollRegEqual, RegRead, RegReadCheck, RegWrite)
from sim.trace_run import DumpCheck
from sim.txn import DumpMem, ReadReg, WaitIntr

from .harness import CoreBench

PERIOD_NS = 10


class _Stop(Exception):
    pass


class _TraceExec:
    """Executes one trace's commands on a running :class:`CoreBench`."""

    def __init__(self, tb, opts):
        self.tb, self.opts = tb, opts
        self.max_cycles = int(opts.get("max_cycles", 2_000_000))
        self.poll_interval = max(1, int(opts.get("poll_interval", 16)))
        self.status_interval = max(1, int(opts.get("status_interval", 1024)))
        self.wkind = "wn" if opts.get("nposted") else "w"
        self.glb_status = tb.rmap.address("GLB.S_INTR_STATUS") >> 2
        self.glb_mask = tb.rmap.address("GLB.S_INTR_MASK") >> 2
        self.intr_mask = tb.rmap.lookup("GLB.S_INTR_MASK")[1].reset
        self.checks, self.failures = [], []
        # layer timing
        self.enable_cycle = None        # last D_OP_ENABLE write since the previous notify
        self.layers = []                # [start, end] cycles
        self.bit_set = {}               # status bit -> cycle its interrupt came (until cleared)
        self.last_status_read = tb.csb.cycle

    @property
    def layer_cycles(self) -> list:
        return [end - start for start, end in self.layers]

    def _note_writes(self, cmds):
        """After a burst of ``cmds`` (RegWrite): remember D_OP_ENABLE cycles and the mask."""
        for c, cyc in zip(cmds, self.tb.csb.op_cycles):
            if c.register == "D_OP_ENABLE" and c.value & 1:
                self.enable_cycle = cyc
            elif c.addr == self.glb_mask:
                self.intr_mask = c.value
            elif c.addr == self.glb_status:         # the trace clears status bits itself
                for b in [b for b in self.bit_set if b & c.value]:
                    del self.bit_set[b]

    async def read_status(self) -> int:
        """Read GLB.S_INTR_STATUS, noting when each newly set bit's interrupt came."""
        csb = self.tb.csb
        status = await csb.read(self.glb_status)
        seen, since = csb.op_cycles[0], self.last_status_read
        self.last_status_read = seen
        new = status & ~sum(self.bit_set)
        if new:
            # the status is sampled as the read is accepted: a bit set by clock edge s reads
            # set from s + 1 on, and the pin (a register on the status) rises at s + 1
            edge = next((e for e in self.tb.interrupt_edges if since < e <= seen), None)
            for bit in range(32):
                b = 1 << bit
                if new & b:
                    self.bit_set[b] = seen if edge is None or self.intr_mask & b else edge
        return status

    async def wait_cycles(self, n):
        """Sleep ``n`` cycles from a clock edge; returns half a cycle before an edge."""
        await Timer(n * PERIOD_NS - PERIOD_NS // 2, unit="ns")

    def mem(self, cmd):
        m = self.tb.dbb if cmd.mem == "dbb" else self.tb.sram
        if m is None:
            raise _Stop(f"{cmd.where}: this build has no {cmd.mem.upper()}IF memory")
        return m.mem

    async def run(self, commands):
        cmds = list(commands)
        i = 0
        try:
            while i < len(cmds):
                cmd = cmds[i]
                if isinstance(cmd, RegWrite):
                    j = i
                    while j < len(cmds) and isinstance(cmds[j], RegWrite):
                        j += 1
                    await self.tb.csb.burst([(self.wkind, c.addr, c.value) for c in cmds[i:j]])
                    self._note_writes(cmds[i:j])
                    i = j
                    continue
                if isinstance(cmd, MemLoad):
                    cmd.image.write_to(self.mem(cmd), cmd.addr)
                elif isinstance(cmd, MemInit):
                    cmd.apply(self.mem(cmd))
                elif isinstance(cmd, RegRead):       # as the playback harness's read_reg
                    await (self.read_status() if cmd.addr == self.glb_status
                           else self.tb.csb.read(cmd.addr))
                elif isinstance(cmd, RegReadCheck):
                    value = await (self.read_status() if cmd.addr == self.glb_status
                                   else self.tb.csb.read(cmd.addr))
                    if value != cmd.value:
                        self.failures.append(cmd.mismatch(value))
                elif isinstance(cmd, PollRegEqual):
                    await self.poll(cmd)
                elif isinstance(cmd, IntrNotify):
                    await self.intr(cmd)
                elif isinstance(cmd, CheckCrc):
                    data = self.mem(cmd).read(cmd.addr, cmd.size)
                    actual = zlib.crc32(data.tobytes()) & 0xFFFFFFFF
                    chk = dict(where=cmd.where, sync_id=cmd.sync_id, mem=cmd.mem, addr=cmd.addr,
                               size=cmd.size, expected=cmd.crc, actual=actual)
                    self.checks.append(chk)
                    if actual != cmd.crc:
                        self.failures.append(
                            f"{cmd.where}: check_crc({cmd.sync_id}) {cmd.mem} {cmd.addr:#x}+"
                            f"{cmd.size:#x}: expected {cmd.crc:#010x}, actual {actual:#010x}")
                elif isinstance(cmd, ReadReg):
                    await self.read_masked(cmd)
                elif isinstance(cmd, WaitIntr):
                    await self.wait_pin(cmd)
                elif isinstance(cmd, (DumpMem, CheckFile)):
                    self.dump(cmd)
                elif isinstance(cmd, (CheckNothing, OrderingPoint)):
                    pass                         # sync_notify / sync_wait: ordering only
                else:                                            # pragma: no cover
                    raise _Stop(f"{cmd.where}: the rtl engine cannot run {type(cmd).__name__}")
                i += 1
        except _Stop as e:
            self.failures.append(str(e))

    async def poll(self, cmd):
        csb = self.tb.csb
        start = csb.cycle
        while True:
            value = await csb.read(cmd.addr)
            if value == cmd.value:
                return
            waited = csb.cycle - start
            if waited >= self.max_cycles:
                raise _Stop(f"{cmd.where}: timeout waiting for poll_reg_equal({cmd.name}, "
                            f"{cmd.value:#x}) after {waited} cycles: reads {value:#x}")
            await self.wait_cycles(min(self.poll_interval, self.max_cycles - waited))

    async def read_masked(self, cmd):
        for n in range(cmd.tries):
            value = await (self.read_status() if cmd.addr == self.glb_status
                           else self.tb.csb.read(cmd.addr))
            if not (value ^ cmd.value) & cmd.mask:
                return
            if n + 1 < cmd.tries:
                await self.wait_cycles(self.poll_interval)
        self.failures.append(f"{cmd.where}: read_reg {cmd.name} mask {cmd.mask:#010x}: expected "
                             f"{cmd.value & cmd.mask:#010x}, read {value & cmd.mask:#010x}")

    async def wait_pin(self, cmd):
        pin, csb = self.tb.dut.nvdla2core_interrupt, self.tb.csb
        start = csb.cycle
        while not int(pin.value):
            waited = csb.cycle - start
            if waited >= self.max_cycles:
                raise _Stop(f"{cmd.where}: wait: no interrupt after {waited} cycles")
            await First(RisingEdge(pin),
                        Timer(min(self.status_interval, self.max_cycles - waited) * PERIOD_NS
                              - PERIOD_NS // 2, unit="ns"))
        self._layer_end(csb.cycle)

    def dump(self, cmd):
        data = self.mem(cmd).read(cmd.addr, cmd.size)
        diff = np.flatnonzero(data != cmd.expected)
        chk = dict(kind="dump", where=cmd.where, mem=cmd.mem, addr=cmd.addr, size=cmd.size,
                   expected=zlib.crc32(cmd.expected.tobytes()), actual=zlib.crc32(data.tobytes()),
                   mismatches=int(diff.size), **DumpCheck.labels(cmd))
        if diff.size:
            i = int(diff[0])
            chk.update(first=cmd.addr + i, first_expected=int(cmd.expected[i]),
                       first_actual=int(data[i]))
            self.failures.append(DumpCheck(**{k: v for k, v in chk.items()
                                              if k != "kind"}).describe())
        self.checks.append(chk)

    async def intr(self, cmd):
        tb, csb = self.tb, self.tb.csb
        pin = tb.dut.nvdla2core_interrupt
        start = csb.cycle
        status = 0
        while True:
            status = await self.read_status()
            # a single shot: any unmasked source (the pin); it clears every pending one
            mask = cmd.mask & ~self.intr_mask if cmd.single else cmd.mask
            if status & mask:
                clear = status & mask if cmd.single else mask
                came = [self.bit_set.pop(b) for b in list(self.bit_set) if b & clear]
                self._layer_end(min(came, default=self.last_status_read))
                await csb.burst([(self.wkind, self.glb_status, clear)])
                return
            waited = csb.cycle - start
            if waited >= self.max_cycles:
                traffic = ", ".join(f"{m.prefix[11:].upper()}IF {m.reads} read / {m.writes} "
                                    f"write bursts" for m in _memories(tb))
                raise _Stop(f"{cmd.where}: timeout waiting for {cmd.what} after "
                            f"{waited} cycles (GLB.S_INTR_STATUS={status:#x}, interrupt pin "
                            f"{int(pin.value)}; {traffic})")
            left = self.max_cycles - waited
            if int(pin.value):          # another source holds the pin: poll the status
                await self.wait_cycles(min(self.poll_interval, left))
            else:
                await First(RisingEdge(pin),
                            Timer(min(self.status_interval, left) * PERIOD_NS - PERIOD_NS // 2,
                                  unit="ns"))

    def _layer_end(self, cycle):
        if self.enable_cycle is not None:
            self.layers.append([self.enable_cycle, max(cycle, self.enable_cycle)])
            self.enable_cycle = None
        elif self.layers:               # no D_OP_ENABLE since the previous notify: same layer
            self.layers[-1][1] = max(self.layers[-1][1], cycle)


def _memories(tb):
    return [m for m in (tb.dbb, tb.sram) if m is not None]


@cocotb.test()
async def run_traces(dut):
    """Run every trace of the batch; results go to NVDLA_TRACE_RESULTS as JSON lines."""
    with open(os.environ["NVDLA_TRACE_BATCH"], "rb") as f:
        batch = pickle.load(f)
    opts = batch["options"]
    out_path = os.environ["NVDLA_TRACE_RESULTS"]
    mem_options = dict(backpressure=bool(opts.get("backpressure", True)),
                       busy=float(opts.get("busy", 0.3)),
                       latency=tuple(opts.get("latency", (1, 16))))
    tb = await CoreBench.start(dut, memory="sparse", seed=opts.get("seed", 1),
                               mem_options=mem_options, clock_impl=opts.get("clock_impl", "gpi"))
    with open(out_path, "a") as out:
        for n, trace in enumerate(batch["traces"]):
            t0 = time.perf_counter()
            if n:
                await tb.reset()
                for m in _memories(tb):
                    m.clear()
                    m.errors.clear()
            ex = _TraceExec(tb, opts)
            c0 = tb.csb.cycle
            try:
                await ex.run(trace.commands)
            except Exception as e:      # a bench problem: this trace fails, the batch goes on
                tbk = traceback.extract_tb(e.__traceback__)[-1]
                ex.failures.append(f"internal error: {type(e).__name__}: {e} "
                                   f"(at {os.path.basename(tbk.filename)}:{tbk.lineno})")
            cycles = tb.csb.cycle - c0
            for m in _memories(tb):
                ex.failures.extend(m.errors)
            res = dict(name=trace.name, passed=not ex.failures,
                       message="; ".join(ex.failures), checks=ex.checks, cycles=cycles,
                       layer_cycles=sum(ex.layer_cycles), layers=ex.layer_cycles,
                       wall=time.perf_counter() - t0)
            out.write(json.dumps(res) + "\n")
            out.flush()
            dut._log.info(f"{trace.name}: {'PASS' if res['passed'] else 'FAIL'} "
                          f"cycles={cycles} layer={res['layer_cycles']} {res['wall']:.2f}s "
                          f"{res['message']}")
