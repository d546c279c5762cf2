"""NvdlaCore: the top level of the core (spec: External Interfaces).

Ports carry the spec's names: the CSB (``csb2nvdla_*``, ``nvdla2csb_*``), the interrupt
``nvdla2core_interrupt``, the DBBIF AXI4 master ``nvdla_core2dbb_{aw,w,b,ar,r}_*`` and, when the
build has a second memory bus, the SRAMIF ``nvdla_core2sram_*``. Clock ``clk``, synchronous
active-high reset ``rst``.

Inside: the CSB slave, GLB, the CFGROM (small layout) and one register file per block of the
build, all generated from the register table. Sub-units without a datapath yet have real
register files but never report completion (see README's feature table).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from arch.registers import STATIC_STATUS, register_map

from .axi import axi_members
from .csb import CsbSlave
from .glb import Glb, done_bit
from .regfile import RegisterFile

__all__ = ["NvdlaCore", "DONE_SOURCES"]

# Ping-pong block -> GLB done source(s) raised when one of its layers completes.
DONE_SOURCES = {"SDP": ("SDP",), "PDP": ("PDP",), "CDP": ("CDP",), "CACC": ("CACC",),
                "CDMA": ("CDMA_DAT", "CDMA_WT"), "RBK": ("RUBIK",)}



class NvdlaCore(wiring.Component):
    def __init__(self, cfg):
        self._cfg = cfg
        self._rmap = register_map(cfg)
        members = {
            "csb2nvdla_valid": In(1), "csb2nvdla_ready": Out(1), "csb2nvdla_addr": In(16),
            "csb2nvdla_wdat": In(32), "csb2nvdla_write": In(1), "csb2nvdla_nposted": In(1),
            "nvdla2csb_valid": Out(1), "nvdla2csb_data": Out(32),
            "nvdla2csb_wr_complete": Out(1), "nvdla2core_interrupt": Out(1),
        }
        members.update(axi_members("nvdla_core2dbb", cfg.address_width, cfg.dbbif_width))
        if cfg.sramif:
            members.update(axi_members("nvdla_core2sram", cfg.address_width, cfg.sramif_width))
        super().__init__(members)

    @property
    def config(self):
        return self._cfg

    def elaborate(self, platform):
        m = Module()
        cfg, rmap = self._cfg, self._rmap
        m.submodules.csb = csb = CsbSlave()
        m.d.comb += [
            csb.req_valid.eq(self.csb2nvdla_valid), self.csb2nvdla_ready.eq(csb.req_ready),
            csb.req_addr.eq(self.csb2nvdla_addr), csb.req_wdat.eq(self.csb2nvdla_wdat),
            csb.req_write.eq(self.csb2nvdla_write), csb.req_nposted.eq(self.csb2nvdla_nposted),
            self.nvdla2csb_valid.eq(csb.resp_valid), self.nvdla2csb_data.eq(csb.resp_data),
            self.nvdla2csb_wr_complete.eq(csb.wr_complete),
        ]

        glb_block = rmap["GLB"]
        m.submodules.glb = glb = Glb(glb_block)
        m.d.comb += self.nvdla2core_interrupt.eq(glb.interrupt)
        buses = {"GLB": glb.bus}
        self.regfiles = {}
        done = Signal(32)
        for block in rmap:
            if block.name == "GLB":
                continue
            rf = RegisterFile(block)
            m.submodules[f"rf_{block.name.lower()}"] = rf
            self.regfiles[block.name] = rf
            buses[block.name] = rf.bus
            if "status" in rf.signature.members:
                for (bname, reg, fld), value in STATIC_STATUS.items():
                    if bname == block.name:
                        m.d.comb += rf.status[reg][fld].eq(value)
            if block.pingpong:
                m.d.comb += rf.done.eq(0)          # no datapath yet: layers stay pending
                for source in DONE_SOURCES.get(block.name, ()):
                    for g in range(2):
                        m.d.comb += done[done_bit(glb_block, source, g)].eq(rf.intr[g])
        m.d.comb += glb.done.eq(done)

        # CSB decode: one 4 KiB slot per block; holes read 0.
        rdata = 0
        for name, bus in buses.items():
            slot = rmap[name].base >> 12
            m.d.comb += [
                bus.sel.eq(csb.access & (csb.slot == slot)),
                bus.addr.eq(csb.offset), bus.we.eq(csb.we), bus.wdata.eq(csb.wdata),
            ]
            rdata = rdata | bus.rdata
        m.d.comb += csb.rdata.eq(rdata)

        # Memory interfaces: idle until the DMA engines are in place.
        for prefix in ("nvdla_core2dbb", "nvdla_core2sram") if cfg.sramif else ("nvdla_core2dbb",):
            m.d.comb += [getattr(self, f"{prefix}_b_bready").eq(1),
                         getattr(self, f"{prefix}_r_rready").eq(1)]
        return m
