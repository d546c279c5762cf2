"""The CDP's fp16 LUT index stage (:meth:`hw.cdp.datapath.CdpDatapath._index_fp16`) against
the golden model's :func:`sim.cdp.cdp.lut_index_fp16`, bit for bit in Amaranth's simulator:
index, flags and (on hits) fraction for random fp32 differences (every exponent, zeros,
infinities, NaNs, both signs) under every mode with random and extreme
``LUT_LE_INDEX_OFFSET`` / ``*_INDEX_SELECT`` values (the random
programs of tests/test_cdp_rtl.py place their fields near the data; this reaches the rest).
The whole fp16 datapath is checked on the playback engine (tests/test_cdp_rtl.py)."""

import numpy as np
from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.cdp.datapath import CdpDatapath
from sim.cdp.cdp import lut_index_fp16


class _Index(wiring.Component):
    """``d`` (fp32 difference), ``exponent``, ``offset`` / ``select`` (signed 8 bits) ->
    the index stage of a table of ``entries`` entries."""

    d: In(32)
    exponent: In(1)
    offset: In(signed(8))
    select: In(signed(8))
    index: Out(9)
    frac: Out(16)
    under: Out(1)
    over: Out(1)

    def __init__(self, entries, le):
        self.entries, self.le = entries, le
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        i, f, u, o = CdpDatapath._index_fp16(m, self.d, self.exponent if self.le else False,
                                             self.offset, self.select, self.entries)
        m.d.comb += [self.index.eq(i), self.frac.eq(f), self.under.eq(u), self.over.eq(o)]
        return m


def _run(unit, rows):
    out = np.empty((len(rows), 4), np.int64)
    sim = Simulator(unit)

    async def bench(ctx):
        for k, (d, e, off, sel) in enumerate(rows):
            ctx.set(unit.d, d)
            ctx.set(unit.exponent, e)
            ctx.set(unit.offset, off)
            ctx.set(unit.select, sel)
            out[k] = [ctx.get(unit.index), ctx.get(unit.frac), ctx.get(unit.under),
                      ctx.get(unit.over)]

    sim.add_testbench(bench)
    sim.run()
    return out


def _differences(rng, n):
    e = rng.integers(0, 256, n)
    e[: n // 2] = rng.integers(100, 180, n // 2)                   # where tables hit
    d = (rng.integers(0, 2, n) << 31) | (e << 23) | rng.integers(0, 1 << 23, n)
    d[::3] &= 0x7FFFFFFF                                           # mostly positive
    specials = [0, 1 << 31, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F7FFFFF,
                0x00000001, 0x3F800000]
    return np.concatenate([d, specials])


def test_lut_index_fp16_matches_golden():
    rng = np.random.default_rng(31)
    for entries, le in ((65, True), (257, False)):
        d = _differences(rng, 800)
        exp = rng.integers(0, 2, d.size) if le else np.zeros(d.size, np.int64)
        off = rng.integers(-128, 128, d.size)
        sel = rng.integers(-128, 128, d.size)
        near = rng.random(d.size) < 0.6         # selects / offsets that index these d's
        e = (d >> 23) & 0xFF
        sel = np.where(near, np.clip(e - 127 - rng.integers(0, 10, d.size), -128, 127), sel)
        off = np.where(near, np.clip(e - 127 - rng.integers(-3, 66, d.size), -128, 127), off)
        off[:8], sel[:8] = [-128, 127, -127, 0, -128, 127, -1, 1], [-128, 127, 0, -1, 127,
                                                                    -128, 31, -32]
        rows = list(zip(d.tolist(), exp.tolist(), off.tolist(), sel.tolist()))
        got = _run(_Index(entries, le), rows)
        hit_any = 0
        for k, (dk, ek, ok, sk) in enumerate(rows):
            if (dk >> 23) & 0xFF == 0 and dk & 0x7FFFFF:
                continue                     # a denormal d never leaves the fp32 adder
            # lut_index_fp16 takes s and START, d = s - START: s = d, START = +0 gives d
            i, f, u, o = lut_index_fp16(np.array([dk]), 0, bool(ek), ok, sk, entries)
            want = [int(i[0]), int(f[0]), int(u[0]), int(o[0])]
            g = list(got[k])
            if want[2] or want[3]:
                g[1] = want[1]               # the fraction matters on hits only
            assert g == want, (entries, hex(dk), ek, ok, sk, list(got[k]), want)
            hit_any += not (want[2] or want[3])
        assert hit_any > 100
