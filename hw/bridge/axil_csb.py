"""AXI4-Lite slave -> CSB master (the role of NVDLA's ``NV_NVDLA_apb2csb``, on AXI4-Lite).

Ports: ``s_axi_*`` (AXI4-Lite slave, names Vivado infers as an interface), the CSB master
(``csb2nvdla_*`` / ``nvdla2csb_*``, see :mod:`.csb_master`) and the interrupt, passed from
``nvdla2core_interrupt`` to ``irq``.

One transaction at a time. A write waits for both AW and W (allowed by AXI), issues a
non-posted CSB write and answers B once the core reports ``wr_complete``; a read issues a CSB
read and answers R with the returned data. Either side may stall: the bridge holds
``csb2nvdla_valid`` until ``csb2nvdla_ready`` and holds B/R until ``bready``/``rready``. When
both a read and a write are waiting they alternate.

Decode (byte addresses; bits [1:0] ignored; only the low ``addr_width`` bits are seen, so the
interconnect gives the bridge a ``2**addr_width`` window):

* DECERR: the 4 KiB slot holds no block of this build (or the address is past CSB's 256 KiB);
* SLVERR: the slot is a block of the build but the word is past its last register, or a write
  has ``wstrb`` other than all ones (CSB has no byte enables);

erroneous requests never reach the CSB; reads answer 0.
"""

from __future__ import annotations

import enum

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .csb_master import csb_master_members

__all__ = ["AxiLiteCsbBridge", "axil_members", "Resp", "csb_decode"]


class Resp(enum.IntEnum):
    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


def axil_members(prefix: str, addr_width: int, data_width: int = 32) -> dict:
    """Flat AXI4-Lite slave members ``{prefix}_awaddr`` ... (flows of the slave side)."""
    return {f"{prefix}_{k}": v for k, v in {
        "awaddr": In(addr_width), "awprot": In(3), "awvalid": In(1), "awready": Out(1),
        "wdata": In(data_width), "wstrb": In(data_width // 8), "wvalid": In(1),
        "wready": Out(1),
        "bresp": Out(2), "bvalid": Out(1), "bready": In(1),
        "araddr": In(addr_width), "arprot": In(3), "arvalid": In(1), "arready": Out(1),
        "rdata": Out(data_width), "rresp": Out(2), "rvalid": Out(1), "rready": In(1),
    }.items()}


def csb_decode(rmap) -> dict:
    """{4 KiB slot: number of words up to the block's last register} of a register map."""
    return {b.base >> 12: (max(r.offset for r in b.registers) >> 2) + 1 for b in rmap}


class AxiLiteCsbBridge(wiring.Component):
    """``AxiLiteCsbBridge(decode, addr_width=18)``; ``decode`` from :func:`csb_decode`."""

    def __init__(self, decode: dict, addr_width: int = 18, prefix: str = "s_axi"):
        if not 12 <= addr_width <= 32:
            raise ValueError(f"addr_width={addr_width}: must be 12..32")
        self._decode = dict(decode)
        self._aw = addr_width
        self._p = prefix
        members = axil_members(prefix, addr_width)
        members.update(csb_master_members())
        members.update({"nvdla2core_interrupt": In(1), "irq": Out(1)})
        super().__init__(members)

    def _port(self, name):
        return getattr(self, f"{self._p}_{name}")

    def _resp_of(self, m, addr):
        """Combinational AXI response code of a byte address."""
        resp = Signal(2, name="dec_resp")
        slot = addr[12:self._aw] if self._aw > 12 else Const(0)
        word = addr[2:12]
        m.d.comb += resp.eq(Resp.DECERR)
        with m.Switch(slot):
            for s, words in sorted(self._decode.items()):
                with m.Case(s):
                    m.d.comb += resp.eq(Resp.OKAY if words >= 1024 else
                                        Mux(word >= words, Resp.SLVERR, Resp.OKAY))
        return resp

    def elaborate(self, platform):
        m = Module()
        p = self._port
        m.d.comb += self.irq.eq(self.nvdla2core_interrupt)

        addr = Signal(self._aw)
        wdata = Signal(32)
        resp = Signal(2)
        rdata = Signal(32)
        prefer_read = Signal()          # alternate when both are waiting

        aw_resp = self._resp_of(m, p("awaddr"))
        ar_resp = self._resp_of(m, p("araddr"))
        m.d.comb += [
            self.csb2nvdla_addr.eq(addr[2:18]),
            self.csb2nvdla_wdat.eq(wdata),
            self.csb2nvdla_nposted.eq(1),
            p("bresp").eq(resp), p("rresp").eq(resp), p("rdata").eq(rdata),
        ]
        write_waiting = p("awvalid") & p("wvalid")
        with m.FSM():
            with m.State("IDLE"):
                with m.If(p("arvalid") & (prefer_read | ~write_waiting)):
                    m.d.comb += p("arready").eq(1)
                    m.d.sync += [addr.eq(p("araddr")), resp.eq(ar_resp), rdata.eq(0),
                                 prefer_read.eq(0)]
                    with m.If(ar_resp == Resp.OKAY):
                        m.next = "CSB_READ"
                    with m.Else():
                        m.next = "R"
                with m.Elif(write_waiting):
                    m.d.comb += [p("awready").eq(1), p("wready").eq(1)]
                    bad_strobe = p("wstrb") != 0xF
                    m.d.sync += [addr.eq(p("awaddr")), wdata.eq(p("wdata")), prefer_read.eq(1),
                                 resp.eq(aw_resp)]
                    with m.If(aw_resp != Resp.OKAY):
                        m.next = "B"
                    with m.Elif(bad_strobe):
                        m.d.sync += resp.eq(Resp.SLVERR)
                        m.next = "B"
                    with m.Else():
                        m.next = "CSB_WRITE"
            with m.State("CSB_WRITE"):
                m.d.comb += [self.csb2nvdla_valid.eq(1), self.csb2nvdla_write.eq(1)]
                with m.If(self.csb2nvdla_ready):
                    m.next = "WAIT_WRITE"
            with m.State("WAIT_WRITE"):
                with m.If(self.nvdla2csb_wr_complete):
                    m.next = "B"
            with m.State("B"):
                m.d.comb += p("bvalid").eq(1)
                with m.If(p("bready")):
                    m.next = "IDLE"
            with m.State("CSB_READ"):
                m.d.comb += self.csb2nvdla_valid.eq(1)
                with m.If(self.csb2nvdla_ready):
                    m.next = "WAIT_READ"
            with m.State("WAIT_READ"):
                with m.If(self.nvdla2csb_valid):
                    m.d.sync += rdata.eq(self.nvdla2csb_data)
                    m.next = "R"
            with m.State("R"):
                m.d.comb += p("rvalid").eq(1)
                with m.If(p("rready")):
                    m.next = "IDLE"
        return m
