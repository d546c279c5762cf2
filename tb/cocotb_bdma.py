"""cocotb tests of the BDMA of the whole core through its real AXI ports, run by
tests/test_bdma.py (``test_bdma_core_axi_memories``) on nv_small_ext and the nv_large preset.

cocotbext-axi ``AxiRam`` memories sit on the DBBIF (MC) and the SRAMIF (CV) with random
ready/valid pauses on every channel. Both memories are filled with random bytes over a window
of slots (plus guard bands); random BDMA operations (every direction: MC->CV, CV->MC, MC->MC,
CV->CV; line size, line repeat, surface repeat, line and surface strides, 32-byte aligned
addresses that are not always aligned to the 64-byte bus word, lines crossing 4 KiB pages,
lines longer than one 16-beat burst) are programmed over the CSB, queued in both groups and
launched; the test waits for the GLB interrupt(s) with a cycle timeout, checks that exactly
the expected BDMA_DONE_STATUS bits are set, clears them, and compares both memory windows in
full with the golden model (:mod:`sim.bdma`) run on copies of the initial images. STATUS
(FREE_SLOT while queued, IDLE=1 / FREE_SLOT=20 / no group busy at the end) is checked too,
and no page outside the windows may have been written.
"""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from sim.bdma import FIFO_DEPTH, BdmaOp, execute, program_writes
from sim.memory import SparseMemory

from .harness import CoreBench

MC, CV = 1, 0
REGION = 0x2000                 # bytes per slot; an operation side stays inside its slot
GUARD = 0x400                   # random bytes before the first and after the last slot
BASES = {MC: 0x8001_0A20, CV: 0x0003_0560}   # 32-byte aligned, not 64 / 4 KiB aligned
DIRECTIONS = [(MC, CV), (CV, MC), (MC, MC), (CV, CV)]
NAME = {MC: "MC", CV: "CV"}


def slot_addr(ram, slot):
    return BASES[ram] + slot * REGION


def random_op(rng, src_ram, dst_ram, src_slot, dst_slot, big=False):
    """An operation reading inside ``src_slot`` of its source memory and writing inside
    ``dst_slot`` of its destination memory."""
    if big:                     # lines of 30..60 units: several 16-beat bursts each
        line_size, lines, surfs = rng.randrange(30, 61), rng.randrange(1, 3), 1
    else:
        line_size, lines, surfs = rng.randrange(6), rng.randrange(1, 5), rng.randrange(1, 4)
    lb = (line_size + 1) * 32

    def strides():
        ls = lb + 32 * rng.choice([0, 0, 1, 3])
        ss = lines * ls + 32 * rng.choice([0, 1, 5])
        return ls, ss

    sls, sss = strides()
    dls, dss = strides()
    op = BdmaOp(src_addr=slot_addr(src_ram, src_slot) + 32 * rng.randrange(8),
                dst_addr=slot_addr(dst_ram, dst_slot) + 32 * rng.randrange(8),
                line_size=line_size, line_repeat=lines - 1, surf_repeat=surfs - 1,
                src_line_stride=sls, dst_line_stride=dls, src_surf_stride=sss,
                dst_surf_stride=dss, src_ram=src_ram, dst_ram=dst_ram)
    assert op.end("src") <= slot_addr(src_ram, src_slot) + REGION
    assert op.end("dst") <= slot_addr(dst_ram, dst_slot) + REGION
    return op


class Images:
    """Random initial images of both memory windows, loaded into the AXI RAMs and into
    golden-model copies; ``check`` compares every byte of both windows."""

    def __init__(self, tb, slots, seed):
        self.tb, self.slots = tb, slots
        self.rams = {MC: tb.dbb, CV: tb.sram}
        self.gold = {MC: SparseMemory(), CV: SparseMemory()}
        rng = np.random.default_rng(seed)
        for ram in (MC, CV):
            lo, size = self.window(ram)
            data = rng.integers(0, 256, size, dtype=np.uint8)
            self.rams[ram].write(lo, data.tobytes())
            self.gold[ram].write(lo, data)

    def window(self, ram):
        lo = BASES[ram] - GUARD
        return lo, self.slots * REGION + 2 * GUARD

    def execute(self, cfg, op):
        execute(cfg, op, self.gold[MC], self.gold[CV])

    def check(self, what):
        for ram in (MC, CV):
            lo, size = self.window(ram)
            got = np.frombuffer(self.rams[ram].read(lo, size), np.uint8)
            exp = self.gold[ram].read(lo, size)
            bad = np.flatnonzero(got != exp)
            assert bad.size == 0, (
                f"{what}: {NAME[ram]} memory: {bad.size} bytes differ from the golden model, "
                f"first at {lo + bad[0]:#x} (got {got[bad[0]]:#04x}, expected "
                f"{exp[bad[0]]:#04x}); last at {lo + bad[-1]:#x}")
            # Nothing written outside the window (cocotbext-axi keeps 4 KiB segments).
            segs = getattr(getattr(self.rams[ram], "mem", None), "segs", None)
            if segs is not None:
                first, last = lo & ~0xFFF, (lo + size - 1) & ~0xFFF
                stray = sorted(a for a in segs if not first <= a <= last)
                assert not stray, f"{what}: {NAME[ram]} pages written outside the window: " \
                                  f"{[hex(a) for a in stray[:8]]}"


async def bdma_status(tb):
    _, reg = tb.rmap.lookup("BDMA.STATUS")
    return reg.unpack(await tb.read_reg("BDMA.STATUS"))


def done_bit(tb, g):
    return 1 << tb.rmap["GLB"]["S_INTR_STATUS"][f"BDMA_DONE_STATUS{g}"].lsb


async def queue(tb, op):
    await tb.csb.burst([("w", a, d) for a, d in program_writes(tb.rmap, op)])


async def launch(tb, g):
    await tb.write_reg(f"BDMA.CFG_LAUNCH{g}", 1)


async def wait_done(tb, mask, timeout, what):
    """Wait for the interrupt pin, then until GLB S_INTR_STATUS has every bit of ``mask``
    (polled every 16 cycles); returns the status word. Fails after ``timeout`` cycles."""
    start = tb.csb.cycle
    while not tb.interrupt:
        if tb.csb.cycle - start > timeout:
            st = await bdma_status(tb)
            raise AssertionError(f"{what}: no interrupt after {timeout} cycles (BDMA STATUS "
                                 f"{st})")
        await ClockCycles(tb.dut.clk, 4)
    while True:
        status = await tb.read_reg("GLB.S_INTR_STATUS")
        if status & mask == mask:
            return status, tb.csb.cycle - start
        if tb.csb.cycle - start > timeout:
            st = await bdma_status(tb)
            raise AssertionError(f"{what}: GLB S_INTR_STATUS {status:#x} lacks {mask:#x} after "
                                 f"{timeout} cycles (BDMA STATUS {st})")
        await ClockCycles(tb.dut.clk, 16)


async def clear_done(tb, mask, what):
    await tb.write_reg("GLB.S_INTR_STATUS", mask)
    assert await tb.read_reg("GLB.S_INTR_STATUS") == 0, f"{what}: status not cleared"
    await tb.ticks(2)
    assert tb.interrupt == 0, f"{what}: interrupt pin high after clearing"


def assert_final_status(st, what):
    assert st == {"FREE_SLOT": FIFO_DEPTH, "IDLE": 1, "GRP0_BUSY": 0, "GRP1_BUSY": 0}, \
        f"{what}: BDMA STATUS {st}"


@cocotb.test()
async def concurrent_groups(dut):
    """Two batches of four operations (every direction twice, one long-line operation per
    batch): group 0 is queued and launched, group 1 is queued while group 0 runs and launched;
    both interrupts, then both memories against the golden model. Back-pressure 30 %."""
    tb = await CoreBench.start(dut, memory=True, seed=11)
    tb.set_backpressure(random.Random(12), busy=0.3)
    rng = random.Random(13)
    dirs = DIRECTIONS * 2
    rng.shuffle(dirs)
    ops = [random_op(rng, s, d, 2 * k, 2 * k + 1, big=k in (1, 6))
           for k, (s, d) in enumerate(dirs)]
    img = Images(tb, 2 * len(ops), seed=14)
    batches = {0: ops[:4], 1: ops[4:]}
    assert_final_status(await bdma_status(tb), "after reset")

    for op in batches[0]:
        await queue(tb, op)
    await tb.ticks(3)
    st = await bdma_status(tb)
    assert st == {"FREE_SLOT": FIFO_DEPTH - 4, "IDLE": 0, "GRP0_BUSY": 0, "GRP1_BUSY": 0}, \
        f"queued, not launched: {st}"
    await tb.ticks(50)                           # nothing moves before a launch
    img.check("before launch")
    await launch(tb, 0)
    await tb.ticks(3)                            # STATUS follows a CSB write 2 cycles later
    st = await bdma_status(tb)
    assert st["GRP0_BUSY"] or await tb.read_reg("GLB.S_INTR_STATUS") & done_bit(tb, 0), st
    for op in batches[1]:
        await queue(tb, op)
    await launch(tb, 1)
    for op in ops:
        img.execute(tb.cfg, op)

    mask = done_bit(tb, 0) | done_bit(tb, 1)
    status, cycles = await wait_done(tb, mask, 60000, "concurrent groups")
    assert status == mask, f"GLB S_INTR_STATUS {status:#x}, expected only {mask:#x}"
    await clear_done(tb, mask, "concurrent groups")
    assert_final_status(await bdma_status(tb), "concurrent groups done")
    img.check("concurrent groups")
    nbytes = sum(op.nbytes for op in ops)
    dut._log.info(f"{len(ops)} operations, {nbytes} bytes, both groups done in {cycles} "
                  f"cycles; interrupt edges at {tb.interrupt_edges}")


@cocotb.test()
async def sequential_chained_rounds(dut):
    """Rounds launching one group each (0, 1, 1, 0, 1), each waiting for its interrupt and
    clearing it: only that group's done bit may be set. Every round's first operation reads
    what the previous round wrote (the interrupt promises the writes are complete).
    Back-pressure 50 %."""
    tb = await CoreBench.start(dut, memory=True, seed=21)
    tb.set_backpressure(random.Random(22), busy=0.5)
    rng = random.Random(23)
    groups = [0, 1, 1, 0, 1]
    rounds, slot, prev = [], 0, None
    for r, g in enumerate(groups):
        batch = []
        for i in range(rng.randrange(1, 4)):
            s, d = DIRECTIONS[(r + i) % 4] if i else (
                (prev.dst_ram if prev else MC), rng.choice([MC, CV]))
            if i == 0 and prev is not None:     # read the previous round's destination slot
                src_slot = (prev.dst_addr - BASES[prev.dst_ram]) // REGION
            else:
                src_slot, slot = slot, slot + 1
            batch.append(random_op(rng, s, d, src_slot, slot, big=(r == 2 and i == 0)))
            slot += 1
        prev = batch[0]
        rounds.append((g, batch))
    img = Images(tb, slot, seed=24)

    total = 0
    for r, (g, batch) in enumerate(rounds):
        what = f"round {r} (group {g}, {len(batch)} operations)"
        for op in batch:
            await queue(tb, op)
            img.execute(tb.cfg, op)
        await launch(tb, g)
        status, cycles = await wait_done(tb, done_bit(tb, g), 40000, what)
        assert status == done_bit(tb, g), \
            f"{what}: GLB S_INTR_STATUS {status:#x}, expected only {done_bit(tb, g):#x}"
        assert_final_status(await bdma_status(tb), what)
        await clear_done(tb, status, what)
        img.check(what)
        total += cycles
        dut._log.info(f"{what}: {sum(op.nbytes for op in batch)} bytes in {cycles} cycles")
    assert len(tb.interrupt_edges) == len(rounds), tb.interrupt_edges
    dut._log.info(f"{len(rounds)} rounds in {total} cycles")
