"""cocotb tests of the register plane of the whole core, run by tests/test_registers.py.

Every register of every block of the build: reset values, read/write masks, read-only and
write-only fields, holes; ping-pong groups (producer selection, dropped writes while enabled,
status); GLB interrupts set/mask/clear reaching the pin; CSB ordering and one request per
cycle. Expected values come from the register table (arch/registers.py), independently of
the RTL's generator code paths.
"""

from __future__ import annotations

import random

import cocotb

from arch.registers import PINGPONG_BLOCKS, reset_readback
from hw.core import rtl_units
from sim.units import MODEL_BLOCKS

from .harness import CoreBench

# Registers with behaviour beyond plain storage, tested by their own tests.
# (BDMA's CFG_OP / CFG_LAUNCH* queue and launch copies; the SDP's LUT access registers move
# the LUT pointer and read the LUT RAM.)
_SPECIAL = {"S_POINTER", "S_STATUS", "D_OP_ENABLE", "S_INTR_SET", "S_INTR_STATUS",
            "CFG_OP", "CFG_LAUNCH0", "CFG_LAUNCH1", "S_LUT_ACCESS_CFG", "S_LUT_ACCESS_DATA"}


def _all_registers(tb):
    for block in tb.rmap:
        for reg in block.registers:
            yield block, reg, (block.base + reg.offset) >> 2


def _expect_after_write(block, reg, value):
    """Read-back after writing ``value`` to a plain register."""
    rw = reg.mask("rw")
    return (value & rw) | (reset_readback(block, reg) & ~rw)


def _holes(tb, rng, n=200):
    """Word addresses with no register: gaps inside blocks and unused/absent slots."""
    mapped = {w for _, _, w in _all_registers(tb)}
    holes = set()
    while len(holes) < n:
        w = rng.randrange(0, 1 << 16)
        if w not in mapped:
            holes.add(w)
    for block in tb.rmap:                                   # just past each block's last reg
        w = (block.base + block.registers[-1].offset + 4) >> 2
        if w not in mapped:
            holes.add(w)
    return sorted(holes)


@cocotb.test()
async def reset_values(dut):
    """Every register reads its table reset value; holes and absent units read 0."""
    tb = await CoreBench.start(dut, memory=False)
    regs = list(_all_registers(tb))
    got, _ = await tb.csb.burst([("r", w, None) for _, _, w in regs])
    bad = [f"{b.name}.{r.name}: {v:#x} != {reset_readback(b, r):#x}"
           for (b, r, _), v in zip(regs, got) if v != reset_readback(b, r)]
    assert not bad, f"{len(bad)} reset mismatches: {bad[:10]}"
    holes = _holes(tb, random.Random(1))
    got, _ = await tb.csb.burst([("r", w, None) for w in holes])
    assert all(v == 0 for v in got), [hex(w) for w, v in zip(holes, got) if v]
    dut._log.info(f"{len(regs)} registers at reset, {len(holes)} holes")


async def _pattern_pass(tb, regs, pattern):
    writes = [("w", w, pattern(w)) for _, _, w in regs]
    await tb.csb.burst(writes)
    got, _ = await tb.csb.burst([("r", w, None) for _, _, w in regs])
    return [f"{b.name}.{r.name}: wrote {pattern(w):#x} read {v:#x} "
            f"expected {_expect_after_write(b, r, pattern(w)):#x}"
            for (b, r, w), v in zip(regs, got) if v != _expect_after_write(b, r, pattern(w))]


@cocotb.test()
async def read_write_masks(dut):
    """All-ones, all-zeros and random words: rw bits stick, ro/const/w bits do not; D
    registers reach the group PRODUCER selects and the other group keeps its contents."""
    tb = await CoreBench.start(dut, memory=False)
    rng = random.Random(2)
    regs = [x for x in _all_registers(tb) if x[1].name not in _SPECIAL]
    rand = {w: rng.getrandbits(32) for _, _, w in regs}
    bad = []
    for pattern in (lambda w: 0xFFFFFFFF, lambda w: 0, lambda w: rand[w]):
        bad += await _pattern_pass(tb, regs, pattern)
    assert not bad, f"{len(bad)} mismatches: {bad[:10]}"
    # Group 1 of every ping-pong block is still at reset; program it, then group 0 must
    # still hold the random words.
    blocks = [b for b in tb.rmap if b.pingpong]
    await tb.csb.burst([("w", (b.base + b["S_POINTER"].offset) >> 2, 1) for b in blocks])
    d_regs = [x for x in regs if x[1].group == "D"]
    got, _ = await tb.csb.burst([("r", w, None) for _, _, w in d_regs])
    bad = [f"group1 {b.name}.{r.name}: {v:#x}" for (b, r, _), v in zip(d_regs, got)
           if v != reset_readback(b, r)]
    assert not bad, bad[:10]
    inv = {w: ~rand[w] & 0xFFFFFFFF for _, _, w in d_regs}
    bad = await _pattern_pass(tb, d_regs, lambda w: inv[w])
    assert not bad, bad[:10]
    await tb.csb.burst([("w", (b.base + b["S_POINTER"].offset) >> 2, 0) for b in blocks])
    got, _ = await tb.csb.burst([("r", w, None) for _, _, w in d_regs])
    bad = [f"group0 {b.name}.{r.name}: {v:#x}" for (b, r, w), v in zip(d_regs, got)
           if v != _expect_after_write(b, r, rand[w])]
    assert not bad, bad[:10]
    # Writes to holes change nothing.
    holes = _holes(tb, rng, 100)
    await tb.csb.burst([("w", w, 0xFFFFFFFF) for w in holes])
    got, _ = await tb.csb.burst([("r", w, None) for w in holes])
    assert all(v == 0 for v in got)
    got, _ = await tb.csb.burst([("r", w, None) for _, _, w in regs])
    assert all(v == _expect_after_write(b, r, rand[w]) for (b, r, w), v in zip(regs, got))
    dut._log.info(f"{len(regs)} registers x 3 patterns, {len(d_regs)} D registers x 2 groups")


@cocotb.test()
async def pingpong_groups(dut):
    """Producer/consumer pointers, enable, dropped writes and S_STATUS on every ping-pong
    block. With no datapath attached nothing completes: layers stay RUNNING/PENDING and no
    interrupt fires. Runs with cocotbext-axi memories on the DBBIF (and SRAMIF) under random
    back-pressure: the idle core must not touch them."""
    tb = await CoreBench.start(dut, memory=True, seed=4)
    tb.set_backpressure(random.Random(4))
    mem_before = (tb.dbb.read(0, 4096), tb.sram.read(0, 4096) if tb.sram else None)
    # Blocks with an RTL datapath run their layers (their ping-pong protocol is checked by
    # tests/test_regfile.py and by every layer of the unit and trace tests).
    datapath = {b for u in rtl_units(tb.cfg) for b in MODEL_BLOCKS[u]}
    names = [n for n in PINGPONG_BLOCKS if n in tb.rmap and n not in datapath]
    # When every block has a datapath, CDP still serves: enabled alone (no CDP_RDMA group) its
    # layer never starts, so the register-file protocol is observable without a layer.
    names = names or [n for n in ("CDP",) if n in tb.rmap]
    assert names, "build has no ping-pong blocks"
    for name in names:
        blk = tb.rmap[name]
        ptr = f"{name}.S_POINTER"
        status = f"{name}.S_STATUS"
        enable = f"{name}.D_OP_ENABLE"
        probe = next(r for r in blk.d_registers if r.name != "D_OP_ENABLE" and r.mask("rw"))
        probe_name = f"{name}.{probe.name}"
        rw = probe.mask("rw")
        assert await tb.read_reg(ptr) == 0
        assert await tb.read_reg(status) == 0
        # group 0: program, enable, then writes are dropped
        await tb.write_reg(probe_name, 0x5A5A5A5A & rw)
        await tb.write_reg(enable, 1)
        assert await tb.read_reg(enable) == 1
        assert await tb.read_reg(status) == 1, "group 0 enabled and consumed: RUNNING"
        await tb.write_reg(probe_name, 0xA5A5A5A5 & rw)
        assert await tb.read_reg(probe_name) == 0x5A5A5A5A & rw, "write to enabled group kept"
        await tb.write_reg(enable, 0)
        assert await tb.read_reg(enable) == 1, "software cleared OP_EN"
        # group 1: independent contents, PENDING once enabled
        await tb.write_reg(ptr, 1)
        assert await tb.read_reg(ptr) == 1, "PRODUCER=1, CONSUMER=0"
        assert await tb.read_reg(probe_name) == reset_readback(blk, probe)
        assert await tb.read_reg(enable) == 0
        await tb.write_reg(probe_name, 0x0F0F0F0F & rw)
        await tb.write_reg(enable, 1)
        assert await tb.read_reg(status) == (2 << 16) | 1, "group 0 RUNNING, group 1 PENDING"
        assert await tb.read_reg(probe_name) == 0x0F0F0F0F & rw
        await tb.write_reg(ptr, 0)
        assert await tb.read_reg(probe_name) == 0x5A5A5A5A & rw
    await tb.ticks(200)
    for name in names:
        assert await tb.read_reg(f"{name}.S_STATUS") == (2 << 16) | 1, f"{name} completed?"
    assert tb.interrupt == 0 and not tb.interrupt_edges
    glb_status = await tb.read_reg("GLB.S_INTR_STATUS")
    assert glb_status == 0, f"done status without a datapath: {glb_status:#x}"
    assert (tb.dbb.read(0, 4096), tb.sram.read(0, 4096) if tb.sram else None) == mem_before


@cocotb.test()
async def interrupts(dut):
    """INTR_SET sets status, the pin follows status & ~mask one cycle later, write-1 clears."""
    tb = await CoreBench.start(dut, memory=False)
    st = tb.rmap["GLB"]["S_INTR_STATUS"]
    bits = [f.lsb for f in st.fields]
    for bit in bits:
        await tb.write_reg("GLB.S_INTR_SET", 1 << bit)
        assert await tb.read_reg("GLB.S_INTR_STATUS") == 1 << bit
        assert tb.interrupt == 1, f"bit {bit}: pin low while status set and unmasked"
        await tb.write_reg("GLB.S_INTR_MASK", 1 << bit)
        await tb.ticks(2)
        assert tb.interrupt == 0, f"bit {bit}: pin high while masked"
        await tb.write_reg("GLB.S_INTR_MASK", 0)
        await tb.ticks(2)
        assert tb.interrupt == 1
        await tb.write_reg("GLB.S_INTR_STATUS", ~(1 << bit) & 0xFFFFFFFF)
        assert await tb.read_reg("GLB.S_INTR_STATUS") == 1 << bit, "cleared the wrong bit"
        await tb.write_reg("GLB.S_INTR_STATUS", 1 << bit)
        assert await tb.read_reg("GLB.S_INTR_STATUS") == 0
        await tb.ticks(2)
        assert tb.interrupt == 0, f"bit {bit}: pin high after clear"
    # Bits outside the status fields do nothing; all bits at once; pin timing.
    allbits = sum(1 << b for b in bits)
    await tb.write_reg("GLB.S_INTR_SET", 0xFFFFFFFF)
    assert await tb.read_reg("GLB.S_INTR_STATUS") == allbits
    await tb.write_reg("GLB.S_INTR_MASK", 0xFFFFFFFF)
    assert await tb.read_reg("GLB.S_INTR_MASK") == allbits
    await tb.ticks(2)
    assert tb.interrupt == 0
    await tb.write_reg("GLB.S_INTR_STATUS", 0xFFFFFFFF)
    await tb.write_reg("GLB.S_INTR_MASK", 0)
    assert await tb.read_reg("GLB.S_INTR_STATUS") == 0
    # Timing: the accepting edge sets status; the pin register follows one edge later.
    await tb.csb.burst([("w", tb.word("GLB.S_INTR_SET"), 1 << bits[0])])
    await tb.ticks(1)
    assert tb.interrupt == 0, "pin rose in the cycle the status was written"
    await tb.ticks(1)
    assert tb.interrupt == 1, "pin did not rise one cycle after the status"
    await tb.write_reg("GLB.S_INTR_STATUS", 1 << bits[0])


@cocotb.test()
async def csb_order_and_throughput(dut):
    """Back-to-back mixed requests: one accepted per cycle, reads in order with the values
    the preceding writes left, one completion per non-posted write."""
    tb = await CoreBench.start(dut, memory=False)
    rng = random.Random(3)
    regs = [x for x in _all_registers(tb) if x[1].name not in _SPECIAL and x[1].mask("rw")]
    shadow = {w: reset_readback(b, r) for b, r, w in regs}
    ops, expect = [], []
    for _ in range(2000):
        b, r, w = rng.choice(regs)
        kind = rng.choice(["r", "w", "wn"])
        if kind == "r":
            ops.append(("r", w, None))
            expect.append(shadow[w])
        else:
            v = rng.getrandbits(32)
            ops.append((kind, w, v))
            shadow[w] = _expect_after_write(b, r, v)
    got, cycles = await tb.csb.burst(ops)
    assert got == expect, "read data out of order or wrong"
    assert cycles == len(ops), f"{len(ops)} requests took {cycles} cycles"
    dut._log.info(f"CSB: {len(ops)} requests in {cycles} cycles "
                  f"({len(ops) / cycles:.3f} per cycle)")
