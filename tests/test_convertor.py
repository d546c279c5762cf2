"""The CDMA input convertor (hw/conv/convertor.py) against the golden arithmetic
(``saturate(round_shift_right((d - o) * scale, trunc), 8)`` of :mod:`sim.conv.cdma`, 16 for
int16 elements), lane by lane in Amaranth simulation: edge values, every truncate 0..63,
bypass, int16 lane pairs (``int16=True``, int8 and int16 cases mixed on one convertor), and
the atom stream wrapper at one atom per cycle under output stalls (int8 and int16 atoms)."""

import random

import numpy as np
from amaranth.sim import Simulator

from arch.config import load_config
from hw.conv.convertor import AtomConvertor, Convertor
from hw.mem.dma import DmaGeometry
from sim.formats.common import round_shift_right, saturate


def golden(d, o, scale, trunc, bits=8):
    return int(saturate(round_shift_right((np.int64(d) - o) * scale, trunc), bits))



def atom_producer(dut, atoms, cvt, wide=None, last_line=lambda i: 0):
    """A simulator testbench feeding ``atoms`` (bytes) to an AtomConvertor ``dut`` with the
    convertor on at ``cvt`` = (offset, scale, truncate) (and ``wide`` when given)."""
    off, scale, trunc = cvt

    async def producer(ctx):
        ctx.set(dut.offset, off)
        ctx.set(dut.scale, scale)
        ctx.set(dut.trunc, trunc)
        ctx.set(dut.cvt_en, 1)
        if wide is not None:
            ctx.set(dut.wide, wide)
        for i, a in enumerate(atoms):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"data": int.from_bytes(a, "little"),
                                    "last_line": last_line(i), "last": i == len(atoms) - 1})
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    return producer

def test_convertor_lanes_match_golden():
    lanes = 4
    dut = Convertor(lanes)
    rng = random.Random(1)
    edge_d, edge_s = [-(1 << 17), (1 << 17) - 1, -128, 127, 0, 1, -1], [-32768, 32767, 1, -1, 0]
    cases = []
    for trunc in range(64):
        for _ in range(6):
            cases.append(([rng.choice(edge_d + [rng.randint(-(1 << 17), (1 << 17) - 1)])
                           for _ in range(lanes)],
                          [rng.choice([-32768, 32767, 0, rng.randint(-32768, 32767)])
                           for _ in range(lanes)],
                          rng.choice(edge_s + [rng.randint(-32768, 32767)]), trunc,
                          rng.random() < 0.9))
    # the saturation edges (127 / 128 / -128 / -129) and the narrow shifter's 9-bit edge
    # (511 / 512), exactly and half a step below, for several shifts
    for t in (0, 1, 3, 9, 16):
        for k in (127, 128, 129, 255, 256, 511, 512, 513):
            for v in (k << t, (k << t) - (1 << t >> 1)):
                if v < (1 << 17):
                    cases.append(([v, -v, v - 1, 1 - v], [0] * 4, 1, t, True))
    # ties: (d - o) * scale = +-(2k + 1) * 2^(t-1)
    cases += [([3, -3, 5, -5], [0] * 4, 1, 1, True), ([6, -6, 10, -10], [0] * 4, 1, 2, True)]

    async def tb(ctx):
        for i, (d, o, scale, trunc, en) in enumerate(cases):
            ctx.set(dut.d, d)
            ctx.set(dut.o, o)
            ctx.set(dut.scale, scale)
            ctx.set(dut.trunc, trunc)
            ctx.set(dut.cvt_en, en)
            await ctx.tick().repeat(Convertor.LATENCY)
            got = [ctx.get(dut.q[k]) for k in range(lanes)]
            exp = [golden(d[k], o[k], scale, trunc) & 0xFF if en else d[k] & 0xFF
                   for k in range(lanes)]
            assert got == exp, (i, d, o, scale, trunc, en, got, exp)
        assert [ctx.get(dut.q[k]) for k in range(lanes)] == [2, 254, 3, 253]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()


def test_atom_convertor_stream():
    """Atoms in order, flags kept, one per cycle while the output is taken, nothing lost or
    duplicated under random output stalls."""
    g = DmaGeometry(load_config("nv_small"))
    dut = AtomConvertor(g)
    A = g.atom_bits // 8
    rng = random.Random(2)
    atoms = [bytes(rng.randrange(256) for _ in range(A)) for _ in range(200)]
    off, scale, trunc = -7, -300, 6

    def conv(b):
        return bytes(golden(v - 256 if v & 0x80 else v, off, scale, trunc) & 0xFF for v in b)

    got = []
    when = []

    producer = atom_producer(dut, atoms, (off, scale, trunc), last_line=lambda i: i % 3 == 0)

    async def consumer(ctx):
        cycle = 0
        while len(got) < len(atoms):
            stall = len(got) >= 100 and rng.random() < 0.3      # the second half stalls
            ctx.set(dut.o.ready, not stall)
            _, _, valid, p = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid and not stall:
                got.append((p.data, p.last_line, p.last))
                when.append(cycle)
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(producer)
    sim.add_testbench(consumer)
    sim.run()
    exp = [(int.from_bytes(conv(a), "little"), int(i % 3 == 0), int(i == len(atoms) - 1))
           for i, a in enumerate(atoms)]
    assert [(int(d), int(ll), int(la)) for d, ll, la in got] == exp
    assert when[0] == Convertor.LATENCY                  # the pipeline's latency
    assert when[99] - when[0] == 99                      # one atom per cycle while taken


def test_convertor_int16_pairs_match_golden():
    """``int16=True``: with ``wide`` each lane pair converts one int16 element (its bytes in
    the pair's low bytes) to int16; without it the lanes are the int8 convertor's (18-bit
    elements, as the image path feeds them); every truncate 0..63, the int16 saturation edges,
    ties, bypass in both modes."""
    lanes = 4
    dut = Convertor(lanes, int16=True)
    rng = random.Random(3)
    edge_e = [-32768, 32767, -1, 0, 1, 127, -128, 255, 256]
    edge_s = [-32768, 32767, 1, -1, 0]
    cases = []                        # (wide, elements or d, offsets, scale, trunc, cvt_en)
    for trunc in range(64):
        for _ in range(4):
            e = [rng.choice(edge_e + [rng.randint(-32768, 32767)]) for _ in range(lanes // 2)]
            o = [rng.choice([-32768, 32767, 0, rng.randint(-32768, 32767)]) for _ in range(lanes)]
            cases.append((True, e, o, rng.choice(edge_s + [rng.randint(-32768, 32767)]),
                          trunc, rng.random() < 0.9))
        d = [rng.randint(-(1 << 17), (1 << 17) - 1) for _ in range(lanes)]
        o = [rng.randint(-32768, 32767) for _ in range(lanes)]
        cases.append((False, d, o, rng.randint(-32768, 32767), trunc, rng.random() < 0.9))
    # the int16 saturation edges (32767 / 32768 / -32768 / -32769) exactly and half a step
    # below, and ties
    for t in (0, 1, 5, 15, 20):
        for k in (32767, 32768, 32769):
            for v in (k << t, (k << t) - (1 << t >> 1)):
                for sc in (1, -1):
                    if v // 32768 < 32768:
                        # (e - o) x scale = v: e - o fits 17 bits, scale 16
                        e0 = 32767
                        q, r = divmod(v, 65535) if v > 65535 else (1, 0)
                        if r == 0 and q <= 32767:
                            cases.append((True, [e0, -e0], [e0 - 65535, 65535 - e0 - 65536],
                                          sc * q, t, True))
    cases += [(True, [3, -3], [0, 0], 1, 1, True), (True, [6, -10], [0, 0], 1, 2, True),
              (True, [-32768, 32767], [32767, -32768], 32767, 0, True),
              (True, [-32768, 32767], [32767, -32768], -32768, 0, True),
              (True, [-32768, 32767], [32767, -32768], -32768, 63, True)]

    def pack(wide, e):
        if not wide:
            return e
        out = []
        for v in e:
            u = v & 0xFFFF
            out += [u & 0xFF, u >> 8]
        return out

    async def tb(ctx):
        for i, (wide, e, o, scale, trunc, en) in enumerate(cases):
            o = (o * lanes)[:lanes] if wide else o
            ctx.set(dut.wide, wide)
            ctx.set(dut.d, pack(wide, e))
            ctx.set(dut.o, o)
            ctx.set(dut.scale, scale)
            ctx.set(dut.trunc, trunc)
            ctx.set(dut.cvt_en, en)
            await ctx.tick().repeat(Convertor.LATENCY)
            got = [ctx.get(dut.q[k]) for k in range(lanes)]
            if wide:
                raw = pack(True, e)
                exp = pack(True, [golden(e[j], o[2 * j], scale, trunc, 16)
                                  for j in range(lanes // 2)]) if en else raw
            else:
                exp = [golden(e[k], o[k], scale, trunc) & 0xFF if en else e[k] & 0xFF
                       for k in range(lanes)]
            assert got == exp, (i, wide, e, o, scale, trunc, en, got, exp)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    assert sum(c[0] for c in cases) > 270


def test_atom_convertor_int16_stream():
    """The atom stream with int16 elements (nv_small_int16: 4 per 8-byte atom) and int8 ones
    on the same convertor, one atom per cycle, under output stalls."""
    from tests.conftest import NV_SMALL_INT16
    g = DmaGeometry(NV_SMALL_INT16)
    A = g.atom_bits // 8
    rng = random.Random(4)
    for wide, (off, scale, trunc) in ((True, (-1234, -3000, 9)), (False, (5, 700, 7)),
                                      (True, (20000, 3, 2))):
        dut = AtomConvertor(g, int16=True)
        atoms = [bytes(rng.randrange(256) for _ in range(A)) for _ in range(120)]

        def conv(b):
            if not wide:
                return bytes(golden(v - 256 if v & 0x80 else v, off, scale, trunc) & 0xFF
                             for v in b)
            e = np.frombuffer(b, "<i2").astype(np.int64)
            return b"".join(int(golden(v, off, scale, trunc, 16) & 0xFFFF).to_bytes(2, "little")
                            for v in e)

        got = []

        producer = atom_producer(dut, atoms, (off, scale, trunc), wide=wide)

        async def consumer(ctx):
            while len(got) < len(atoms):
                stall = rng.random() < 0.3
                ctx.set(dut.o.ready, not stall)
                _, _, valid, p = await ctx.tick().sample(dut.o.valid, dut.o.payload)
                if valid and not stall:
                    got.append(int(p.data))

        sim = Simulator(dut)
        sim.add_clock(1e-8)
        sim.add_process(producer)
        sim.add_testbench(consumer)
        sim.run()
        exp = [int.from_bytes(conv(a), "little") for a in atoms]
        assert got == exp, wide
        assert len(set(exp)) > 60
