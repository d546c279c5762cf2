"""SDP_WDMA data side: datapath output transfers back into memory atoms (spec: SDP, write
DMA; data-format spec: Feature Data Format).

:class:`SdpAtomPacker` is the inverse of the feeder's input split: ``atom / bytes / T``
transfers of T output channels (int8: 1 byte, int16: 2 bytes little endian per channel) make
one atom of the output cube, channel ``j*T + l`` from lane ``l`` of transfer ``j``. Atoms leave
in cube order with ``last_line`` after every ``W`` atoms (or only at the end for a 1x1 cube,
which is written as one line of surfaces) and ``last`` on the cube's final atom, ready for
:class:`hw.mem.cube.AtomPacker` / :class:`hw.mem.cube.CubeWriter`. One transfer per cycle: the
finished atom waits in an output register while the next one is assembled.

8 -> 16 (``out8to16``, built with ``convert``; data-format spec, Precision Conversion): an int8
layer's output written as int16; each int8 position's ``atom`` output channels (16-bit values)
become two int16 atoms, the first half for int16 surface 2s, the second for 2s+1, leaving in
that order, every atom a line of its own unless the cube is 1x1 (see :meth:`Sdp._twin_commands
<hw.sdp.sdp.Sdp._twin_commands>`).
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..mem.cube import atom_layout

__all__ = ["out_layout", "SdpAtomPacker"]


def out_layout(lanes):
    """Output values of one datapath transfer (also the ``pdp`` stream payload)."""
    return data.StructLayout({"data": data.ArrayLayout(signed(16), lanes), "last": 1})


class SdpAtomPacker(wiring.Component):
    """T-lane output values -> memory atoms (see the module docstring).

    Ports: ``i`` (:func:`out_layout`), ``o`` (:func:`hw.sdp.rdma.atom_layout`), ``int16``
    (output precision int16, else int8), ``width_m1`` (W - 1), ``packed`` (1x1 cube: one
    line), ``clear`` (reset between layers); with ``convert``: ``out8to16`` (8 -> 16).
    """

    def __init__(self, geom, lanes, int16=False, convert=False):
        self._geom, self._lanes, self._int16, self._convert = geom, lanes, int16, convert
        members = {
            "i": In(stream.Signature(out_layout(lanes))),
            "o": Out(stream.Signature(atom_layout(geom))),
            "int16": In(1), "width_m1": In(13), "packed": In(1), "clear": In(1),
        }
        if convert:
            members["out8to16"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        geom, T = self._geom, self._lanes
        atom = geom.atom_bytes
        chunks8 = atom // T
        chunks16 = atom // 2 // T if self._int16 else chunks8
        j = Signal(range(max(chunks8, 2)))
        j_last = Signal()
        m.d.comb += j_last.eq(j == Mux(self.int16, chunks16 - 1, chunks8 - 1))
        w = Signal(13)

        cv = self._convert
        bits = geom.atom_bits * (2 if cv else 1)
        acc = Signal(bits)                       # the atom (8 -> 16: two) being assembled
        full = Signal(bits)                      # acc with this transfer's channels merged
        m.d.comb += full.eq(acc)
        for lane in range(T):
            c = j * T + lane
            v = self.i.payload.data[lane]
            if cv:
                with m.If(self.out8to16):
                    m.d.comb += full.word_select(c, 16).eq(v)
                with m.Elif(self.int16):
                    m.d.comb += full.word_select(c, 16).eq(v)
                with m.Else():
                    m.d.comb += full.word_select(c, 8).eq(v[:8])
            elif self._int16:
                with m.If(self.int16):
                    m.d.comb += full.word_select(c, 16).eq(v)
                with m.Else():
                    m.d.comb += full.word_select(c, 8).eq(v[:8])
            else:
                m.d.comb += full.word_select(c, 8).eq(v[:8])

        ob = Signal(atom_layout(geom))
        ob_valid = Signal()
        m.d.comb += [self.o.valid.eq(ob_valid), self.o.payload.eq(ob)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += ob_valid.eq(0)

        if cv:
            return self._twin(m, j_last, full, acc, j, w, ob, ob_valid)
        m.d.comb += self.i.ready.eq(~j_last | ~ob_valid | self.o.ready)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [acc.eq(full), j.eq(Mux(j_last, 0, j + 1))]
            with m.If(j_last):
                line_end = self.i.payload.last | (~self.packed & (w == self.width_m1))
                m.d.sync += [
                    ob.data.eq(full), ob.last.eq(self.i.payload.last),
                    ob.last_line.eq(line_end), ob_valid.eq(1),
                    w.eq(Mux(w == self.width_m1, 0, w + 1)),
                ]
        with m.If(self.clear):
            m.d.sync += [j.eq(0), w.eq(0), ob_valid.eq(0)]
        return m

    def _twin(self, m, j_last, full, acc, j, w, ob, ob_valid):
        """The output registers of a build with 8 -> 16 (``out8to16``): an int8 position's
        ``atom`` channels become two int16 atoms, its first half (the atom of int16 surface
        2s) then its second half (surface 2s+1), each atom a line of its own (the unit writes
        them atom by atom) unless ``packed`` (a 1x1 cube: one line of surfaces, so the pair
        is in memory order). Other layers as without it."""
        ab = self._geom.atom_bits
        hi = Signal(ab)                          # the second atom of a pair, waiting
        hi_valid, hi_last = Signal(), Signal()
        twin = self.out8to16
        with m.If(self.o.valid & self.o.ready):
            with m.If(hi_valid):
                m.d.sync += [ob.data.eq(hi), ob.last.eq(hi_last),
                             ob.last_line.eq(~self.packed | hi_last), hi_valid.eq(0),
                             ob_valid.eq(1)]
        m.d.comb += self.i.ready.eq(~j_last | ~ob_valid | (self.o.ready & ~hi_valid))
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [acc.eq(full), j.eq(Mux(j_last, 0, j + 1))]
            with m.If(j_last):
                last = self.i.payload.last
                line_end = last | (~self.packed & (w == self.width_m1))
                m.d.sync += [
                    ob.data.eq(full[:ab]), ob.last.eq(last & ~twin),
                    ob.last_line.eq(Mux(twin, ~self.packed, line_end)), ob_valid.eq(1),
                    w.eq(Mux(w == self.width_m1, 0, w + 1)),
                    hi.eq(full[ab:]), hi_valid.eq(twin), hi_last.eq(last),
                ]
        with m.If(self.clear):
            m.d.sync += [j.eq(0), w.eq(0), ob_valid.eq(0), hi_valid.eq(0)]
        return m
