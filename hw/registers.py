"""The core's register side: CSB slave, GLB, one register file per block and the CSB decode
(spec: Configuration space bus, Register Interface).

:class:`Registers` owns everything between the CSB pins and the units' register views. Its
ports are the CSB pins (the spec's names), the interrupt pin, the GLB ``done`` events, and
every datapath-side member of every block's register file, forwarded as
``<block>_<member>`` (``sdp_d``, ``sdp_op_en``, ``cdma_d_status``, ...). ``rf[NAME]`` gives
them back per block as a namespace (``regs.rf["SDP"].d``), plus ``block``. Blocks whose
unit owns some registers have extra ports: the SDP's and CDP's LUT access registers
(``<block>_lut_*``: S_LUT_ACCESS_CFG / _DATA read back from the unit) and the BDMA's
command registers (``bdma_csb_*``: every CSB write to the block).

CSB decode: one 4 KiB slot per block; a request goes to the block of its slot, holes and
absent blocks read 0 and ignore writes. Every block answers a read in the next cycle
(:class:`hw.regfile.RegBus`), which is when the CSB slave returns it.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .csb import CsbSlave, pins as csb_pins
from .glb import Glb
from .regfile import RegisterFile

__all__ = ["Registers", "CSB_MEMBERS", "LUT_MEMBERS"]

#: the CSB pins of the core (spec names)
CSB_MEMBERS = {
    "csb2nvdla_valid": In(1), "csb2nvdla_ready": Out(1), "csb2nvdla_addr": In(16),
    "csb2nvdla_wdat": In(32), "csb2nvdla_write": In(1), "csb2nvdla_nposted": In(1),
    "nvdla2csb_valid": Out(1), "nvdla2csb_data": Out(32), "nvdla2csb_wr_complete": Out(1),
}
#: a unit's LUT access ports, seen from the register side (the unit's own ports flipped)
LUT_MEMBERS = {
    "lut_cfg_we": Out(1), "lut_cfg_wdata": Out(32), "lut_cfg_rdata": In(32),
    "lut_data_we": Out(1), "lut_data_wdata": Out(32), "lut_data_re": Out(1),
    "lut_data_rdata": In(32),
}
_BDMA_MEMBERS = {"csb_we": Out(1), "csb_addr": Out(10), "csb_wdata": Out(32)}


class Registers(wiring.Component):
    """CSB slave + GLB + register files of a build (``rmap``: its
    :func:`arch.registers.register_map`); ``lut_blocks``: the blocks whose LUT access
    registers a unit answers (``{"SDP", "CDP"}`` as the build has them)."""

    def __init__(self, rmap, lut_blocks=(), bdma=False):
        self._rmap = rmap
        self._lut_blocks = tuple(lut_blocks)
        self._bdma = bdma and "BDMA" in [b.name for b in rmap]
        self._files = {b.name: RegisterFile(b) for b in rmap if b.name != "GLB"}
        members = dict(CSB_MEMBERS)
        members.update({"nvdla2core_interrupt": Out(1), "done": In(32)})
        for name, rf in self._files.items():
            for member_name, member in rf.signature.members.items():
                if member_name != "bus":
                    members[f"{name.lower()}_{member_name}"] = member
        for name in self._lut_blocks:
            members.update({f"{name.lower()}_{k}": v for k, v in LUT_MEMBERS.items()})
        if self._bdma:
            members.update({f"bdma_{k}": v for k, v in _BDMA_MEMBERS.items()})
        super().__init__(members)
        self.rf = {}
        for name, rf in self._files.items():
            ports = {k: getattr(self, f"{name.lower()}_{k}")
                     for k in rf.signature.members if k != "bus"}
            self.rf[name] = SimpleNamespace(block=rf.block, **ports)

    def elaborate(self, platform):
        m = Module()
        rmap = self._rmap
        m.submodules.csb = csb = CsbSlave()
        m.d.comb += csb_pins(csb, self)
        m.submodules.glb = glb = Glb(rmap["GLB"])
        m.d.comb += [self.nvdla2core_interrupt.eq(glb.interrupt), glb.done.eq(self.done)]
        buses = {"GLB": glb.bus}
        for name, rf in self._files.items():
            m.submodules[f"rf_{name.lower()}"] = rf
            buses[name] = rf.bus
            for k, member in rf.signature.members.items():
                if k == "bus":
                    continue
                outer = getattr(self, f"{name.lower()}_{k}")
                inner = getattr(rf, k)
                m.d.comb += (outer.eq(inner) if member.flow == Out else inner.eq(outer))

        rdata, busy = 0, 0
        for name, bus in buses.items():
            busy = busy | bus.busy
            slot = rmap[name].base >> 12
            m.d.comb += [
                bus.sel.eq(csb.access & (csb.slot == slot)),
                bus.addr.eq(csb.offset), bus.we.eq(csb.we), bus.wdata.eq(csb.wdata),
            ]
            if name == "BDMA" and self._bdma:
                m.d.comb += [self.bdma_csb_we.eq(bus.sel & bus.we),
                             self.bdma_csb_addr.eq(bus.addr),
                             self.bdma_csb_wdata.eq(bus.wdata)]
            if name not in self._lut_blocks:
                rdata = rdata | bus.rdata
                continue
            rdata = rdata | self._lut_access(m, name, bus)
        m.d.comb += [csb.rdata.eq(rdata), csb.hold.eq(busy)]
        return m

    def _lut_access(self, m, name, bus):
        """The block's read data with its S_LUT_ACCESS_CFG / _DATA words answered by the unit
        (sampled in the cycle of the request, like every register), and the unit's write /
        read strobes."""
        blk, p = self._rmap[name], name.lower()
        unit_q, unit_hit_q = Signal(32, name=f"{p}_lut_rdata"), Signal(name=f"{p}_lut_hit")
        unit_value, unit_hit = 0, 0
        for reg, kind in (("S_LUT_ACCESS_CFG", "cfg"), ("S_LUT_ACCESS_DATA", "data")):
            word = blk[reg].offset >> 2
            hit = bus.sel & (bus.addr == word)
            unit_value = Mux(bus.addr == word, getattr(self, f"{p}_lut_{kind}_rdata"),
                             unit_value)
            unit_hit = unit_hit | (hit & ~bus.we)
            m.d.comb += [getattr(self, f"{p}_lut_{kind}_we").eq(hit & bus.we),
                         getattr(self, f"{p}_lut_{kind}_wdata").eq(bus.wdata)]
            if kind == "data":
                m.d.comb += getattr(self, f"{p}_lut_data_re").eq(hit & ~bus.we)
        m.d.sync += [unit_hit_q.eq(unit_hit), unit_q.eq(unit_value)]
        return Mux(unit_hit_q, unit_q, bus.rdata)
