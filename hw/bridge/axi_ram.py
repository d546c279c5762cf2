"""AxiRam: on-chip block RAM as the AXI4 slave behind the core's DBBIF, with a host word port.

The AXI side has the core's DBBIF port names with the flows flipped
(``nvdla_core2dbb_ar_arvalid`` is an input here), so the board top connects them by name. It
serves INCR bursts of full bus words (``len`` + 1 beats, byte strobes on writes) one burst at
a time: a read burst streams one beat per cycle after one cycle of RAM latency and honours
``rready``; writes take one beat per cycle; requests alternate between reads and writes when
both wait. The memory holds ``size`` bytes; AXI addresses wrap modulo ``size`` (the memory
repeats through the address space, so a trace's buffers at any base land in it as long as
they fit).

The host port (:func:`hw.bridge.serial_host.mem_members`, slave side) reads or writes one
32-bit word at a byte address below ``size`` (``mem_error`` above) between AXI bursts.

One ``lib.memory.Memory`` with one read and one byte-write port: a simple dual-port RAM, what
every FPGA block RAM offers.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import flipped

from ..mem.axi import axi_members
from .serial_host import mem_members

__all__ = ["AxiRam"]


class AxiRam(wiring.Component):
    def __init__(self, size: int, data_width: int = 64, addr_width: int = 32,
                 prefix: str = "nvdla_core2dbb"):
        if data_width % 32 or data_width & (data_width - 1):
            raise ValueError(f"data_width={data_width}: must be a power of two >= 32")
        if size & (size - 1) or size < data_width // 8:
            raise ValueError(f"size={size}: must be a power of two of at least one word")
        self._size, self._dw, self._aw, self._p = size, data_width, addr_width, prefix
        sig = wiring.Signature(axi_members(prefix, addr_width, data_width)).flip()
        members = dict(sig.members.items())
        members.update(wiring.Signature(mem_members()).flip().members.items())
        super().__init__(members)

    def _port(self, name):
        return getattr(self, f"{self._p}_{name[0] if name[0] != 'a' else name[:2]}_{name}")

    def elaborate(self, platform):
        m = Module()
        p = self._port
        dw, size = self._dw, self._size
        bytes_per_word = dw // 8
        lsb = bytes_per_word.bit_length() - 1
        depth = size // bytes_per_word
        abits = max(depth.bit_length() - 1, 1)
        m.submodules.mem = mem = Memory(shape=dw, depth=depth, init=[])
        rd = mem.read_port()
        wr = mem.write_port(granularity=8)

        cur = Signal(abits)
        left = Signal(4)
        tid = Signal(8)
        prefer_write = Signal()
        lanes = dw // 32
        lane = Signal(range(lanes)) if lanes > 1 else None
        host_word = self.mem_addr[lsb:lsb + abits]
        host_bad = self.mem_addr[lsb + abits:] != 0 if lsb + abits < 32 else 0

        m.d.comb += [rd.addr.eq(cur), rd.en.eq(0),
                     wr.addr.eq(cur), wr.data.eq(p("wdata")),
                     p("rdata").eq(rd.data), p("rid").eq(tid), p("bid").eq(tid),
                     p("rlast").eq(left == 0)]
        if lanes > 1:
            m.d.comb += self.mem_rdata.eq(rd.data.word_select(lane, 32))
        else:
            m.d.comb += self.mem_rdata.eq(rd.data)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.mem_valid):
                    with m.If(host_bad):
                        m.d.comb += [self.mem_done.eq(1), self.mem_error.eq(1)]
                    with m.Elif(self.mem_write):
                        m.d.comb += [wr.addr.eq(host_word),
                                     wr.data.eq(self.mem_wdata.replicate(lanes))]
                        if lanes > 1:
                            ln = self.mem_addr[2:lsb]
                            for b in range(bytes_per_word):
                                m.d.comb += wr.en[b].eq(ln == b // 4)
                        else:
                            m.d.comb += wr.en.eq(0xF)
                        m.d.comb += self.mem_done.eq(1)
                    with m.Else():
                        m.d.comb += [rd.addr.eq(host_word), rd.en.eq(1)]
                        if lanes > 1:
                            m.d.sync += lane.eq(self.mem_addr[2:lsb])
                        m.next = "HOST_READ"
                with m.Elif(p("awvalid") & (prefer_write | ~p("arvalid"))):
                    m.d.comb += p("awready").eq(1)
                    m.d.sync += [cur.eq(p("awaddr")[lsb:]), left.eq(p("awlen")),
                                 tid.eq(p("awid")), prefer_write.eq(0)]
                    m.next = "WRITE"
                with m.Elif(p("arvalid")):
                    m.d.comb += p("arready").eq(1)
                    m.d.sync += [cur.eq(p("araddr")[lsb:]), left.eq(p("arlen")),
                                 tid.eq(p("arid")), prefer_write.eq(1)]
                    m.next = "READ_ADDR"
            with m.State("HOST_READ"):
                m.d.comb += self.mem_done.eq(1)
                m.next = "IDLE"
            with m.State("WRITE"):
                m.d.comb += p("wready").eq(1)
                with m.If(p("wvalid")):
                    m.d.comb += wr.en.eq(p("wstrb"))
                    m.d.sync += [cur.eq(cur + 1), left.eq(left - 1)]
                    with m.If(left == 0):
                        m.next = "B"
            with m.State("B"):
                m.d.comb += p("bvalid").eq(1)
                with m.If(p("bready")):
                    m.next = "IDLE"
            with m.State("READ_ADDR"):
                m.d.comb += rd.en.eq(1)
                m.next = "READ"
            with m.State("READ"):
                m.d.comb += p("rvalid").eq(1)
                with m.If(p("rready")):
                    with m.If(left == 0):
                        m.next = "IDLE"
                    with m.Else():
                        m.d.comb += [rd.addr.eq(cur + 1), rd.en.eq(1)]
                        m.d.sync += [cur.eq(cur + 1), left.eq(left - 1)]
        return m
