"""CsbScratch: a stand-in for :class:`hw.core.NvdlaCore` with the same ports, for bring-up of a
board's host link without the core (``nvdla board --bridge-only``) and for fast tests.

Its CSB answers word addresses 0..63 from 64 scratch registers (writable, read back; higher
addresses alias); the interrupt is bit 0 of register 1; the DBBIF/SRAMIF masters stay idle.
"""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring

from ..csb import CsbSlave, pins as csb_pins

__all__ = ["CsbScratch"]


class CsbScratch(wiring.Component):
    def __init__(self, cfg, nregs: int = 64):
        from ..core import NvdlaCore
        self._nregs = nregs
        core = NvdlaCore(cfg)                # only for its signature
        core._MustUse__silence = True
        super().__init__(core.signature)

    def elaborate(self, platform):
        m = Module()
        n = self._nregs
        bits = (n - 1).bit_length()
        m.submodules.csb = csb = CsbSlave()
        regs = Array(Signal(32, name=f"r{i}") for i in range(n))
        m.d.comb += csb_pins(csb, self)
        m.d.comb += self.nvdla2core_interrupt.eq(regs[1][0])
        rdata = Signal(32)                   # answered the cycle after the request
        m.d.sync += rdata.eq(Mux(csb.access & ~csb.we, regs[csb.req_addr[:bits]], 0))
        m.d.comb += csb.rdata.eq(rdata)
        with m.If(csb.access & csb.we):
            m.d.sync += regs[csb.req_addr[:bits]].eq(csb.wdata)
        return m
