"""The generated ping-pong register file in Amaranth's simulator: the datapath side of the
protocol (op_en, done, consumer flip, capture of hardware counters, interrupts), which the
whole-core benches cannot reach until units have datapaths."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from arch.config import PRESETS
from arch.registers import STATIC_STATUS, register_map
from hw.regfile import RegisterFile
from sim.core import GoldenCore

SDP = register_map(PRESETS["nv_small"])["SDP"]
W = {r.name: r.offset >> 2 for r in SDP.registers}


def _run(bench):
    rf = RegisterFile(SDP)
    sim = Simulator(rf)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        await ctx.tick().until(~rf.bus.busy)     # the read-back copy is rewritten after reset
        await bench(ctx, rf)
    sim.add_testbench(testbench)
    sim.run()


async def _write(ctx, rf, reg, value):
    ctx.set(rf.bus.sel, 1)
    ctx.set(rf.bus.we, 1)
    ctx.set(rf.bus.addr, W[reg])
    ctx.set(rf.bus.wdata, value)
    await ctx.tick()
    ctx.set(rf.bus.sel, 0)
    ctx.set(rf.bus.we, 0)


async def _until_op_en(ctx, rf):
    """Wait for op_en: the enabled group is first copied into the ``d`` view."""
    for _ in range(200):
        if ctx.get(rf.op_en):
            return
        await ctx.tick()
    raise AssertionError("op_en never rose")


async def _read(ctx, rf, reg):
    """A read: the answer comes the cycle after the request."""
    ctx.set(rf.bus.sel, 1)
    ctx.set(rf.bus.addr, W[reg])
    await ctx.tick()
    ctx.set(rf.bus.sel, 0)
    return ctx.get(rf.bus.rdata)


def test_layer_sequence():
    async def bench(ctx, rf):
        # group 0: width 7, enable
        await _write(ctx, rf, "D_DATA_CUBE_WIDTH", 7)
        assert ctx.get(rf.op_en) == 0
        await _write(ctx, rf, "D_OP_ENABLE", 1)
        await _until_op_en(ctx, rf)
        assert ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 7
        assert await _read(ctx, rf, "S_STATUS") == 0x00001
        # group 1: width 8, enable -> pending
        await _write(ctx, rf, "S_POINTER", 1)
        await _write(ctx, rf, "D_DATA_CUBE_WIDTH", 8)
        await _write(ctx, rf, "D_OP_ENABLE", 1)
        assert await _read(ctx, rf, "S_STATUS") == 0x20001
        # layer 0 completes, reporting a saturation count
        ctx.set(rf.d_status.D_PERF_OUT_SATURATION.OUT_SATURATION, 1234)
        ctx.set(rf.done, 1)
        assert ctx.get(rf.intr) == 0b01   # op_en is registered: it drops the next cycle
        await ctx.tick()
        ctx.set(rf.done, 0)
        assert ctx.get(rf.consumer) == 1 and ctx.get(rf.op_en) == 0, "op_en must drop"
        assert await _read(ctx, rf, "S_STATUS") == 0x10000, "group 0 IDLE, group 1 RUNNING"
        await _until_op_en(ctx, rf)
        assert ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 8
        # the counter landed in group 0, group 1 still 0
        assert await _read(ctx, rf, "D_PERF_OUT_SATURATION") == 0
        await _write(ctx, rf, "S_POINTER", 0)
        assert await _read(ctx, rf, "D_PERF_OUT_SATURATION") == 1234
        assert await _read(ctx, rf, "D_OP_ENABLE") == 0
        await _write(ctx, rf, "D_DATA_CUBE_WIDTH", 9)     # idle group is writable again
        assert await _read(ctx, rf, "D_DATA_CUBE_WIDTH") == 9
        assert await _read(ctx, rf, "S_POINTER") == 0x10000   # PRODUCER 0, CONSUMER 1
        # layer 1 completes: group 1 interrupt, everything idle
        ctx.set(rf.d_status.D_PERF_OUT_SATURATION.OUT_SATURATION, 77)
        ctx.set(rf.done, 1)
        assert ctx.get(rf.intr) == 0b10
        await ctx.tick()
        ctx.set(rf.done, 0)
        await ctx.tick()
        assert ctx.get(rf.consumer) == 0 and ctx.get(rf.op_en) == 0
        assert await _read(ctx, rf, "S_STATUS") == 0
        await _write(ctx, rf, "S_POINTER", 1)
        assert await _read(ctx, rf, "D_PERF_OUT_SATURATION") == 77
        # the next enable on group 0 starts at once
        await _write(ctx, rf, "S_POINTER", 0)
        await _write(ctx, rf, "D_OP_ENABLE", 1)
        await _until_op_en(ctx, rf)
        assert ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 9
    _run(bench)


def test_back_to_back_enabled_groups_restart():
    """With both groups enabled, done flips to the other group: op_en drops for at least one
    cycle (the copy of the next group into the d view) and rises again by itself."""
    async def bench(ctx, rf):
        for g in (0, 1):
            await _write(ctx, rf, "S_POINTER", g)
            await _write(ctx, rf, "D_DATA_CUBE_WIDTH", 10 + g)
            await _write(ctx, rf, "D_OP_ENABLE", 1)
        for g in (0, 1):
            await _until_op_en(ctx, rf)
            assert ctx.get(rf.consumer) == g and ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 10 + g
            ctx.set(rf.done, 1)
            await ctx.tick()
            ctx.set(rf.done, 0)
            assert ctx.get(rf.op_en) == 0               # at least one idle cycle between layers
        for _ in range(100):
            await ctx.tick()
            assert ctx.get(rf.op_en) == 0
        assert ctx.get(rf.consumer) == 0
    _run(bench)


@pytest.mark.parametrize("name", ["CDMA", "SDP", "CDP", "CACC", "CMAC_A", "MCIF", "GEC"])
def test_random_csb_traffic_matches_golden(name):
    """Random CSB reads and writes (biased to D_OP_ENABLE and S_POINTER), hardware status
    and layer completions on one block: every read-back, the ``d`` view of a running layer
    and the interrupts agree with the golden core's register model (sim/core.py) -- incl.
    dropped writes to enabled groups, holes, and a reset in the middle."""
    cfg = PRESETS["nv_small"]
    block = register_map(cfg)[name]
    rng = random.Random(name)
    rf = RegisterFile(block)
    top = Module()
    top.domains.sync = cd = ClockDomain()
    top.submodules.rf = rf
    sim = Simulator(top)
    sim.add_clock(1e-8)
    words = [r.offset >> 2 for r in block.registers]
    special = [r.offset >> 2 for r in block.registers if r.name in ("D_OP_ENABLE", "S_POINTER")]
    static = {(reg, fld): v for (b, reg, fld), v in STATIC_STATUS.items() if b == name}
    counts = {"reads": 0, "layers": 0}

    def golden():
        core = GoldenCore(cfg, units={})
        return core, core._blocks[name]

    async def bench(ctx):
        await ctx.tick().until(~rf.bus.busy)
        core, _ = golden()
        for (reg, fld), v in static.items():
            ctx.set(rf.status[reg][fld], v)
        for i in range(1500):
            if i == 750:                            # reset: shadow and groups back to reset
                ctx.set(rf.bus.sel, 0)
                ctx.set(cd.rst, 1)
                await ctx.tick()
                ctx.set(cd.rst, 0)
                await ctx.tick().until(~rf.bus.busy)
                core, _ = golden()
            x = rng.random()
            word = (rng.choice(special) if special and x < 0.15 else
                    rng.choice(words) if x < 0.95 else rng.randrange(1024))
            sel, we = rng.random() < 0.8, rng.random() < 0.5
            wdata = rng.getrandbits(32)
            ctx.set(rf.bus.sel, sel)
            ctx.set(rf.bus.we, we)
            ctx.set(rf.bus.addr, word)
            ctx.set(rf.bus.wdata, wdata)
            done = block.pingpong and ctx.get(rf.op_en) and rng.random() < 0.3
            written = {}
            if block.pingpong:
                ctx.set(rf.done, done)
                if "d_status" in rf.signature.members:
                    for reg, layout in rf.d_status.shape():
                        for fld, shape in layout.shape:
                            v = rng.getrandbits(shape.width)
                            ctx.set(rf.d_status[reg][fld], v)
                            written.setdefault(reg, {})[fld] = v
                if ctx.get(rf.op_en):
                    view = core.view(name)
                    for reg, layout in rf.d.shape():
                        for fld, _ in layout.shape if reg != "D_OP_ENABLE" else ():
                            assert ctx.get(rf.d[reg][fld]) == getattr(getattr(view, reg), fld), \
                                (i, reg, fld)
                intr = ctx.get(rf.intr)
                assert intr == ((1 << core.consumer(name)) if done else 0)
            base = block.base >> 2
            if sel and we:
                core.csb_write(base + word, wdata)
            expect = core.csb_read(base + word) if sel and not we else 0
            if done:
                core.complete([name], {name: written} if written else None)
                counts["layers"] += 1
            await ctx.tick()
            assert ctx.get(rf.bus.rdata) == expect, (i, hex(word), hex(expect))
            counts["reads"] += sel and not we
        ctx.set(rf.bus.sel, 0)
    sim.add_testbench(bench)
    sim.run()
    assert counts["reads"] > 400
    assert counts["layers"] > 5 or not block.pingpong
