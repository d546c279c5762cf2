"""A skid buffer: a register slice of a valid/ready stream whose outputs, ``ready`` upstream
included, all come from flip-flops.

Put between two units whose handshakes would otherwise form one combinational path (the
MCIF's read arbitration deciding a client's ``ready`` in the cycle the client's own logic
decides ``valid``): the path ends at this buffer's registers on both sides. Full throughput
(a transfer a cycle in and out in steady state), one cycle of latency, two entries: the main
register that drives ``o``, and the skid register that catches the transfer accepted in the
cycle ``o`` stalled (``i.ready`` was still high then; it drops the cycle after).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SkidBuffer"]


class SkidBuffer(wiring.Component):
    """``SkidBuffer(shape)``: ``i`` in, ``o`` out, streams of ``shape``, in order, nothing lost
    or duplicated under any back-pressure."""

    def __init__(self, shape):
        self._shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        skid_valid = Signal()
        skid = Signal.like(self.i.payload, name="skid")
        m.d.comb += self.i.ready.eq(~skid_valid)
        with m.If(~self.o.valid | self.o.ready):            # the main register is free
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid), self.o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):            # main stalled: catch the transfer
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m
