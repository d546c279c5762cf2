"""The generated ping-pong register file in Amaranth's simulator: the datapath side of the
protocol (op_en, done, consumer flip, capture of hardware counters, interrupts), which the
whole-core benches cannot reach until units have datapaths."""

from __future__ import annotations

from amaranth.sim import Simulator

from arch.config import PRESETS
from arch.registers import register_map
from hw.regfile import RegisterFile

SDP = register_map(PRESETS["nv_small"])["SDP"]
W = {r.name: r.offset >> 2 for r in SDP.registers}


def _run(bench):
    rf = RegisterFile(SDP)
    sim = Simulator(rf)
    sim.add_clock(1e-8)

    async def testbench(ctx):
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


async def _read(ctx, rf, reg):
    ctx.set(rf.bus.sel, 1)
    ctx.set(rf.bus.addr, W[reg])
    value = ctx.get(rf.bus.rdata)
    ctx.set(rf.bus.sel, 0)
    return value


def test_layer_sequence():
    async def bench(ctx, rf):
        # group 0: width 7, enable
        await _write(ctx, rf, "D_DATA_CUBE_WIDTH", 7)
        assert ctx.get(rf.op_en) == 0
        await _write(ctx, rf, "D_OP_ENABLE", 1)
        await ctx.tick()
        assert ctx.get(rf.op_en) == 1 and ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 7
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
        await ctx.tick()
        assert ctx.get(rf.op_en) == 1 and ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 8
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
        await ctx.tick()
        assert ctx.get(rf.op_en) == 1 and ctx.get(rf.d.D_DATA_CUBE_WIDTH.WIDTH) == 9
    _run(bench)


def test_back_to_back_enabled_groups_restart():
    """With both groups enabled, done flips to the other group with one idle cycle."""
    async def bench(ctx, rf):
        for g in (0, 1):
            await _write(ctx, rf, "S_POINTER", g)
            await _write(ctx, rf, "D_OP_ENABLE", 1)
        await ctx.tick()
        seen = []
        for _ in range(2):
            seen.append(ctx.get(rf.op_en))
            ctx.set(rf.done, 1)
            await ctx.tick()
            ctx.set(rf.done, 0)
            seen.append(ctx.get(rf.op_en))          # the idle cycle between layers
            await ctx.tick()
        seen.append(ctx.get(rf.op_en))
        assert seen == [1, 0, 1, 0, 0]
        assert ctx.get(rf.consumer) == 0
    _run(bench)
