"""PDP_WDMA data side: the pooling core's ``T``-lane output transfers back into memory atoms
(spec: PDP, write DMA; data-format spec: Feature Data Format).

:class:`PdpAtomPacker` collects ``G = atom / T`` transfers into one atom (channel ``g*T + l``
from lane ``l`` of transfer ``g``, int8; on builds with int16 or fp16, while ``int16`` is
set, ``G / 2`` transfers of 2-byte channels, int16 or fp16 codes, little-endian), carrying
the core's ``last_line`` / ``last`` of the atom's final transfer, for
:class:`hw.mem.cube.AtomPacker` / :class:`hw.mem.cube.CubeWriter`.
One transfer per cycle: the finished atom waits in an output register while the next one is
assembled.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..mem.cube import atom_layout
from .pool import pool_out_layout

__all__ = ["PdpAtomPacker"]


class PdpAtomPacker(wiring.Component):
    def __init__(self, geom, lanes, int16=False):
        self._geom, self._T = geom, lanes
        self._G = geom.atom_bytes // lanes
        self._int16 = int16
        ports = {
            "i": In(stream.Signature(pool_out_layout(lanes))),
            "o": Out(stream.Signature(atom_layout(geom))),
            "clear": In(1),
        }
        if int16:
            ports["int16"] = In(1)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        geom, T, G = self._geom, self._T, self._G
        g = Signal(range(max(G, 2)))
        g_last = Signal()
        acc = Signal(geom.atom_bits)
        full = Signal(geom.atom_bits)
        m.d.comb += full.eq(acc)
        if self._int16:
            m.d.comb += g_last.eq(g == Mux(self.int16, G // 2 - 1, G - 1))
            with m.If(self.int16):
                for l in range(T):
                    m.d.comb += full.word_select(g * T + l, 16).eq(self.i.payload.data[l])
            with m.Else():
                for l in range(T):
                    m.d.comb += full.word_select(g * T + l, 8).eq(self.i.payload.data[l][:8])
        else:
            m.d.comb += g_last.eq(g == G - 1)
            for l in range(T):
                m.d.comb += full.word_select(g * T + l, 8).eq(self.i.payload.data[l][:8])
        ob = Signal(atom_layout(geom))
        ob_valid = Signal()
        m.d.comb += [self.o.valid.eq(ob_valid), self.o.payload.eq(ob)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += ob_valid.eq(0)
        m.d.comb += self.i.ready.eq(~g_last | ~ob_valid | self.o.ready)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [acc.eq(full), g.eq(Mux(g_last, 0, g + 1))]
            with m.If(g_last):
                m.d.sync += [ob.data.eq(full), ob.last_line.eq(self.i.payload.last_line),
                             ob.last.eq(self.i.payload.last), ob_valid.eq(1)]
        with m.If(self.clear):
            m.d.sync += [g.eq(0), ob_valid.eq(0)]
        return m
