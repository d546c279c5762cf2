"""CDP_RDMA: the input cube in the LRN order (spec: CDP_RDMA; data-format spec: Feature Data
Format).

The LRN window runs across channels, so the datapath wants one pixel's channels together.
:class:`PixelLines` walks a feature cube line by line and gives, per line ``h``, one cube
command for :class:`hw.mem.cube.CubeReader` / :class:`hw.mem.cube.CubeWriter` whose "surfaces"
are the line's W pixels (stride one atom) and whose "lines" are the pixel's S surfaces (stride
the surface stride), one atom each: the atoms arrive pixel by pixel, surface by surface
inside a pixel. Commands are pipelined by the readers/writers, so the memory side never
waits for the next line.

:class:`CdpFeeder` turns those atoms into datapath transfers (:func:`hw.cdp.datapath.in_layout`):
``atom / T`` transfers per atom (int16 layers: ``atom / 2 / T``, an atom holding half the
channels, two little-endian bytes each: data-format spec, Feature Data Format), channel
``j*T + l`` of the atom in lane ``l`` of transfer ``j``; lanes past ``DATA_CUBE_CHANNEL`` are flagged ``pad``; ``parity`` toggles after each
pixel's last surface; after the cube's last atom, ``window_delay(T) / T`` flush transfers
(``real`` = 0) push the final channels out of the window.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..mem.cube import atom_layout
from ..mem.dma import DmaGeometry, cube_layout
from .datapath import in_layout, window_delay

__all__ = ["PixelLines", "CdpFeeder"]


class PixelLines(wiring.Component):
    """One cube command per line of a W x H x S cube (see the module docstring).

    ``start`` (pulse): begin with ``base``; ``cmd`` gives ``height_m1 + 1`` commands."""

    def __init__(self, geom: DmaGeometry):
        self._geom = geom
        aw = geom.addr_width
        super().__init__({
            "start": In(1), "base": In(aw), "ram_type": In(1), "line_stride": In(aw),
            "surface_stride": In(aw), "width_m1": In(13), "height_m1": In(13),
            "surfaces_m1": In(13),
            "cmd": Out(stream.Signature(cube_layout(self._geom))),
        })

    def elaborate(self, platform):
        m = Module()
        g = self._geom
        addr = Signal(g.addr_width)
        h = Signal(13)
        c = self.cmd.payload
        m.d.comb += [c.base.eq(addr), c.ram_type.eq(self.ram_type), c.line_atoms.eq(0),
                     c.lines.eq(self.surfaces_m1), c.line_stride.eq(self.surface_stride),
                     c.surfaces.eq(self.width_m1), c.surface_stride.eq(g.atom_bytes),
                     c.batches.eq(0), c.batch_stride.eq(0)]
        with m.If(self.start):
            m.d.sync += [addr.eq(self.base), h.eq(0), self.cmd.valid.eq(1)]
        with m.Elif(self.cmd.valid & self.cmd.ready):
            m.d.sync += [addr.eq(addr + self.line_stride), h.eq(h + 1)]
            with m.If(h == self.height_m1):
                m.d.sync += self.cmd.valid.eq(0)
        return m


class CdpFeeder(wiring.Component):
    """Atoms (:func:`hw.mem.cube.atom_layout`) -> datapath transfers (see the module docstring).

    ``channel_m1``, ``surfaces_m1``: the cube's C - 1 and S - 1; ``clear``: reset between layers;
    ``int16`` (with ``int16=True`` only: 16-bit lanes, int8 values sign-extended): the layer
    reads 2-byte elements.
    """

    def __init__(self, geom: DmaGeometry, lanes: int, int16: bool = False):
        self._geom, self._lanes, self._int16 = geom, lanes, int16
        super().__init__({
            "i": In(stream.Signature(atom_layout(geom))),
            "o": Out(stream.Signature(in_layout(lanes, 16 if int16 else 8))),
            "channel_m1": In(13), "surfaces_m1": In(13), "clear": In(1),
            **({"int16": In(1)} if int16 else {}),
        })

    def elaborate(self, platform):
        m = Module()
        T, atom = self._lanes, self._geom.atom_bytes
        chunks = atom // T
        flush_n = window_delay(T) // T
        j = Signal(range(max(chunks, 2)))
        surf = Signal(13)
        chan = Signal(14 + atom.bit_length())          # channel of lane 0
        parity = Signal()
        flush = Signal(range(flush_n + 1))
        j_last = Signal()
        if self._int16:
            m.d.comb += j_last.eq(j == Mux(self.int16, atom // 2 // T - 1, chunks - 1))
        else:
            m.d.comb += j_last.eq(j == chunks - 1)
        i, o = self.i, self.o
        with m.If(flush != 0):
            m.d.comb += [o.valid.eq(1), o.payload.real.eq(0), o.payload.parity.eq(~parity)]
            for lane in range(T):
                m.d.comb += o.payload.pad[lane].eq(1)
            with m.If(o.ready):
                m.d.sync += flush.eq(flush - 1)
        with m.Else():
            m.d.comb += [o.valid.eq(i.valid), o.payload.real.eq(1),
                         o.payload.parity.eq(parity),
                         o.payload.last.eq(i.payload.last & j_last),
                         i.ready.eq(o.ready & j_last)]
            for lane in range(T):
                byte = i.payload.data.word_select(j * T + lane, 8)
                if self._int16:
                    byte = byte.as_signed()
                    half = i.payload.data.word_select(j * T + lane, 16).as_signed()
                    byte = Mux(self.int16, half, byte)
                m.d.comb += [
                    o.payload.data[lane].eq(byte),
                    o.payload.pad[lane].eq(chan + lane > self.channel_m1),
                ]
            with m.If(o.valid & o.ready):
                m.d.sync += [j.eq(Mux(j_last, 0, j + 1)), chan.eq(chan + T)]
                with m.If(j_last):
                    with m.If(surf == self.surfaces_m1):
                        m.d.sync += [surf.eq(0), chan.eq(0), parity.eq(~parity)]
                    with m.Else():
                        m.d.sync += surf.eq(surf + 1)
                    with m.If(i.payload.last):
                        m.d.sync += flush.eq(flush_n)
        with m.If(self.clear):
            m.d.sync += [j.eq(0), surf.eq(0), chan.eq(0), flush.eq(0)]
        return m
