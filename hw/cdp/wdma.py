"""CDP write DMA: datapath output back into the output cube (spec: CDP, write DMA).

Output values come in the input's order (pixel by pixel, surface by surface, ``T`` channels a
transfer); :class:`hw.sdp.wdma.SdpAtomPacker` assembles atoms (every atom is its own line),
:class:`hw.mem.cube.AtomPacker` words, and a :class:`hw.mem.cube.CubeWriter` writes them with
one :class:`hw.cdp.rdma.PixelLines` command per output line. Whole atoms are written, the
cripple channels of the last surface included (NVDLA writes what its datapath computed for
them). ``done`` pulses once every line's writes are acknowledged.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, flipped

from ..mem.cube import AtomPacker, CubeWriter
from ..mem.dma import DmaGeometry, DmaWritePort
from ..sdp.wdma import SdpAtomPacker, out_layout
from .rdma import PixelLines

__all__ = ["CdpWdma"]


class CdpWdma(wiring.Component):
    """Ports: ``i`` (:func:`hw.sdp.wdma.out_layout`), ``dma`` (write client), the output cube
    (``start`` pulse, ``base``, ``ram_type``, strides, ``width_m1``/``height_m1``/
    ``surfaces_m1``), ``clear``, ``done`` (pulse), ``stall``, ``int16`` (used with
    ``int16=True``: the layer writes 2-byte elements, half the channels per atom)."""

    def __init__(self, geom: DmaGeometry, lanes: int, int16: bool = False):
        self._geom, self._lanes, self._int16 = geom, lanes, int16
        aw = geom.addr_width
        super().__init__({
            "i": In(stream.Signature(out_layout(lanes))),
            "dma": Out(DmaWritePort(geom)),
            "start": In(1), "base": In(aw), "ram_type": In(1), "line_stride": In(aw),
            "surface_stride": In(aw), "width_m1": In(13), "height_m1": In(13),
            "surfaces_m1": In(13), "clear": In(1), "done": Out(1), "stall": Out(1),
            **({"int16": In(1)} if int16 else {}),
        })

    def elaborate(self, platform):
        m = Module()
        g = self._geom
        m.submodules.lines = lines = PixelLines(g)
        m.submodules.pack = pack = SdpAtomPacker(g, self._lanes, int16=self._int16)
        m.submodules.apack = apack = AtomPacker(g)
        m.submodules.writer = writer = CubeWriter(g)
        for name in ("start", "base", "ram_type", "line_stride", "surface_stride", "width_m1",
                     "height_m1", "surfaces_m1"):
            m.d.comb += getattr(lines, name).eq(getattr(self, name))
        wiring.connect(m, lines.cmd, writer.cmd)
        wiring.connect(m, flipped(self.i), pack.i)
        wiring.connect(m, pack.o, apack.i)
        wiring.connect(m, apack.o, writer.data)
        wiring.connect(m, writer.dma, flipped(self.dma))
        m.d.comb += [pack.width_m1.eq(0), pack.packed.eq(0), pack.clear.eq(self.clear),
                     *([pack.int16.eq(self.int16)] if self._int16 else []),
                     self.stall.eq(writer.stall)]
        h = Signal(13)
        with m.If(self.start):
            m.d.sync += h.eq(0)
        with m.Elif(writer.done):
            m.d.sync += h.eq(h + 1)
        m.d.comb += self.done.eq(writer.done & (h == self.height_m1))
        return m
