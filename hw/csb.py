"""CSB slave (spec: Configuration space bus).

Request channel valid/ready with a 16-bit word address, 32-bit write data, write and
non-posted flags. The slave is ready from one cycle after reset on, once the register files
are no longer ``hold``-ing it (they rewrite their read-back copies after reset), and then every
cycle: one request per cycle, no bubbles. Each accepted request is presented to the register
files in the same cycle (``slot`` = 4 KiB block, ``offset`` = word in the block); they answer
a read in the next cycle (``rdata``, :class:`hw.regfile.RegBus`), and the slave registers
it, so it returns on the valid-only read channel two cycles after the request (the files' read
multiplexer and the master's response register in one cycle were a deep path of the ECP5
board); a non-posted write pulses ``wr_complete`` two cycles after it as well. With a fixed
latency of two cycles both responses stay in request order. Holes return 0 (the
register files answer 0 where nothing is mapped).
"""


from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CsbSlave", "pins"]


class CsbSlave(wiring.Component):
    # CSB side (spec signal names without the csb2nvdla_/nvdla2csb_ prefixes)
    req_valid: In(1)
    req_ready: Out(1)
    req_addr: In(16)
    req_wdat: In(32)
    req_write: In(1)
    req_nposted: In(1)
    resp_valid: Out(1)
    resp_data: Out(32)
    wr_complete: Out(1)
    # register-file side
    access: Out(1)          #: a request is accepted this cycle
    slot: Out(6)            #: 4 KiB block index (word address [15:10])
    offset: Out(10)         #: word offset in the block
    we: Out(1)
    wdata: Out(32)
    rdata: In(32)           #: the read data, the cycle after the request (OR of the blocks')
    hold: In(1)             #: not ready: the register files are busy (after reset)

    def elaborate(self, platform):
        m = Module()
        ready = Signal()
        m.d.sync += ready.eq(1)
        m.d.comb += [
            self.req_ready.eq(ready & ~self.hold),
            self.access.eq(self.req_valid & self.req_ready),
            self.slot.eq(self.req_addr[10:16]),
            self.offset.eq(self.req_addr[0:10]),
            self.we.eq(self.req_write),
            self.wdata.eq(self.req_wdat),
        ]
        rd1, wc1 = Signal(), Signal()          # a read / a non-posted write, a cycle ago
        m.d.sync += [
            rd1.eq(self.access & ~self.req_write),
            wc1.eq(self.access & self.req_write & self.req_nposted),
            self.resp_valid.eq(rd1), self.resp_data.eq(self.rdata),
            self.wr_complete.eq(wc1),
        ]
        return m


def pins(csb, top) -> list:
    """The statements that tie ``csb`` (a :class:`CsbSlave`) to the core's CSB pins on
    ``top`` (``csb2nvdla_*`` in, ``nvdla2csb_*`` out)."""
    return [
        csb.req_valid.eq(top.csb2nvdla_valid), top.csb2nvdla_ready.eq(csb.req_ready),
        csb.req_addr.eq(top.csb2nvdla_addr), csb.req_wdat.eq(top.csb2nvdla_wdat),
        csb.req_write.eq(top.csb2nvdla_write), csb.req_nposted.eq(top.csb2nvdla_nposted),
        top.nvdla2csb_valid.eq(csb.resp_valid), top.nvdla2csb_data.eq(csb.resp_data),
        top.nvdla2csb_wr_complete.eq(csb.wr_complete),
    ]
