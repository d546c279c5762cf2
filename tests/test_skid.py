"""hw.skid.SkidBuffer: every transfer once and in order under random valid / ready on both
sides, a transfer a cycle when nothing stalls, and ``i.ready`` a register (it never follows
``o.ready`` in the same cycle)."""

import random

from amaranth.sim import Simulator

from hw.skid import SkidBuffer


def _run(p_in, p_out, n=400, seed=1):
    dut = SkidBuffer(16)
    rng = random.Random(seed)
    got, sent, cycles = [], [], [0]

    async def bench(ctx):
        nxt = 0
        while len(got) < n:
            ctx.set(dut.i.valid, nxt < n and rng.random() < p_in)
            ctx.set(dut.i.payload, nxt)
            ctx.set(dut.o.ready, rng.random() < p_out)
            # i.ready is settled before o.ready is looked at: compare it with both values
            r0 = ctx.get(dut.i.ready)
            ctx.set(dut.o.ready, 1 - ctx.get(dut.o.ready))
            assert ctx.get(dut.i.ready) == r0, "i.ready follows o.ready combinationally"
            ctx.set(dut.o.ready, 1 - ctx.get(dut.o.ready))
            if ctx.get(dut.i.valid) and ctx.get(dut.i.ready):
                sent.append(nxt)
                nxt += 1
            if ctx.get(dut.o.valid) and ctx.get(dut.o.ready):
                got.append(ctx.get(dut.o.payload))
            await ctx.tick()
            cycles[0] += 1
            assert cycles[0] < 20 * n, "stuck"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return got, sent, cycles[0]


def test_in_order_nothing_lost_under_random_handshakes():
    for seed, (p_in, p_out) in enumerate([(0.5, 0.5), (0.9, 0.3), (0.3, 0.9), (1.0, 0.6)]):
        got, sent, _ = _run(p_in, p_out, seed=seed)
        assert got == list(range(len(got))) and sent[:len(got)] == got


def test_full_throughput():
    got, _, cycles = _run(1.0, 1.0, n=200)
    assert got == list(range(200)) and cycles <= 201
