"""NvdlaCore: the top level of the core (spec: External Interfaces).

Ports carry the spec's names: the CSB (``csb2nvdla_*``, ``nvdla2csb_*``), the interrupt
``nvdla2core_interrupt``, the DBBIF AXI4 master ``nvdla_core2dbb_{aw,w,b,ar,r}_*`` and, when the
build has a second memory bus, the SRAMIF ``nvdla_core2sram_*``. Clock ``clk``, synchronous
active-high reset ``rst``.

Inside: the register side (:class:`hw.registers.Registers`: CSB slave, GLB, the CFGROM
(small layout) and one register file per block of the build, all generated from the register
table); the memory side (:class:`hw.mem.dmaif.DmaInterfaces`:
MCIF on the DBBIF, CVIF on the SRAMIF) with its weights and outstanding limits from the MCIF /
CVIF registers; and the units that have a datapath: the SDP with its read DMAs
(:class:`hw.sdp.Sdp`), the PDP with PDP_RDMA (:class:`hw.pdp.Pdp`, flying input from the SDP)
and, when the build has them, the BDMA (:class:`hw.bdma.Bdma`) and the Rubik
(:class:`hw.rubik.Rubik`).
Sub-units without a datapath yet have real register files but never report completion (see
README's feature table).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from arch.registers import STATIC_STATUS, register_map

from .mem.axi import axi_members
from .bdma import Bdma
from .mem.dmaif import DmaInterfaces, weight_field
from .glb import done_bit
from .registers import CSB_MEMBERS, LUT_MEMBERS, Registers
from .sdp import Sdp
from .pdp import Pdp
from .cdp import Cdp
from .rubik import Rubik
from .conv.conv import BLOCKS as CONV_BLOCKS, ConvPipeline

__all__ = ["NvdlaCore", "DONE_SOURCES", "rtl_units", "dma_clients"]

# Ping-pong block -> GLB done source(s) raised when one of its layers completes.
DONE_SOURCES = {"SDP": ("SDP",), "PDP": ("PDP",), "CDP": ("CDP",), "CACC": ("CACC",),
                "CDMA": ("CDMA_DAT", "CDMA_WT"), "RBK": ("RUBIK",)}


# Status fields driven by a unit instead of a constant.
_UNIT_STATUS = {"MCIF", "CVIF", "BDMA"}


def rtl_units(cfg) -> set:
    """The unit datapaths this build's RTL has (keys of :data:`sim.units.MODEL_BLOCKS`)."""
    return ({"SDP", "CONV"} | ({"PDP"} if cfg.pdp else set()) | ({"CDP"} if cfg.cdp else set())
            | ({"RUBIK"} if cfg.rubik else set()))


def dma_clients(cfg):
    """(read clients, write clients) of the memory interfaces in this build."""
    reads = ["sdp"] + [n for n, on in (("sdp_b", cfg.sdp_bs), ("sdp_n", cfg.sdp_bn),
                                       ("sdp_e", cfg.sdp_ew)) if on] + ["cdma_dat", "cdma_wt"]
    writes = ["sdp"]
    if cfg.pdp:
        reads.append("pdp")
        writes.append("pdp")
    if cfg.cdp:
        reads.append("cdp")
        writes.append("cdp")
    if cfg.bdma:
        reads.append("bdma")
        writes.append("bdma")
    if cfg.rubik:
        reads.append("rbk")
        writes.append("rbk")
    return reads, writes


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
        lut_blocks = (["SDP"] if cfg.sdp_lut else []) + (["CDP"] if cfg.cdp else [])
        m.submodules.regs = regs = Registers(rmap, lut_blocks, bdma=cfg.bdma)
        for name, member in CSB_MEMBERS.items():
            inner, outer = getattr(regs, name), getattr(self, name)
            m.d.comb += outer.eq(inner) if member.flow == Out else inner.eq(outer)
        m.d.comb += self.nvdla2core_interrupt.eq(regs.nvdla2core_interrupt)

        glb_block = rmap["GLB"]
        self.regfiles = rfs = regs.rf
        done = Signal(32)
        for block in rmap:
            if block.name == "GLB":
                continue
            rf = rfs[block.name]
            if hasattr(rf, "status") and block.name not in _UNIT_STATUS:
                for (bname, reg, fld), value in STATIC_STATUS.items():
                    if bname == block.name:
                        m.d.comb += rf.status[reg][fld].eq(value)
            if block.pingpong:
                for source in DONE_SOURCES.get(block.name, ()):
                    for g in range(2):
                        m.d.comb += done[done_bit(glb_block, source, g)].eq(rf.intr[g])

        # -- memory interfaces ------------------------------------------------------------
        reads, writes = dma_clients(cfg)
        m.submodules.dmaif = dmaif = DmaInterfaces(cfg, reads, writes)
        ifaces = (("mcif", "MCIF", "nvdla_core2dbb", "dbb"),) + (
            (("cvif", "CVIF", "nvdla_core2sram", "sram"),) if cfg.sramif else ())
        for iface, bname, port, prefix in ifaces:
            s = rfs[bname].s
            for i, c in enumerate(reads):
                reg = next(r for r in ("CFG_RD_WEIGHT_0", "CFG_RD_WEIGHT_1", "CFG_RD_WEIGHT_2")
                           if weight_field(c) in s[r].shape().members)
                m.d.comb += getattr(dmaif, f"{iface}_rd_weight")[i].eq(s[reg][weight_field(c)])
            for i, c in enumerate(writes):
                reg = next(r for r in ("CFG_WR_WEIGHT_0", "CFG_WR_WEIGHT_1")
                           if weight_field(c, True) in s[r].shape().members)
                m.d.comb += getattr(dmaif, f"{iface}_wr_weight")[i].eq(
                    s[reg][weight_field(c, True)])
            m.d.comb += [
                getattr(dmaif, f"{iface}_rd_os_cnt").eq(s.CFG_OUTSTANDING_CNT.RD_OS_CNT),
                getattr(dmaif, f"{iface}_wr_os_cnt").eq(s.CFG_OUTSTANDING_CNT.WR_OS_CNT),
                rfs[bname].status.STATUS.IDLE.eq(getattr(dmaif, f"{iface}_idle")),
            ]
            for name, member in axi_members(prefix, cfg.address_width,
                                            cfg.dbbif_width if prefix == "dbb"
                                            else cfg.sramif_width).items():
                inner = getattr(dmaif, name)
                outer = getattr(self, port + name[len(prefix):])
                if member.flow == Out:
                    m.d.comb += outer.eq(inner)
                else:
                    m.d.comb += inner.eq(outer)

        # -- SDP + SDP_RDMA ---------------------------------------------------------------
        m.submodules.sdp = sdp = Sdp(cfg)
        rf_sdp, rf_rdma = rfs["SDP"], rfs["SDP_RDMA"]
        m.d.comb += [
            sdp.regs.eq(rf_sdp.d), sdp.s.eq(rf_sdp.s), sdp.op_en.eq(rf_sdp.op_en),
            rf_sdp.done.eq(sdp.done), rf_sdp.d_status.eq(sdp.status),
            sdp.rdma_regs.eq(rf_rdma.d), sdp.rdma_op_en.eq(rf_rdma.op_en),
            rf_rdma.done.eq(sdp.rdma_done), rf_rdma.d_status.eq(sdp.rdma_status),
        ]
        for c in reads:
            if c.startswith("sdp"):
                wiring.connect(m, getattr(sdp, f"rd_{c}"), getattr(dmaif, f"rd_{c}"))
        wiring.connect(m, sdp.wr_sdp, dmaif.wr_sdp)
        driven = {"SDP", "SDP_RDMA"}

        # -- PDP + PDP_RDMA (offline input, or flying from the SDP) ---------------------------
        if cfg.pdp:
            m.submodules.pdp = pdp = Pdp(cfg)
            rf_pdp, rf_prd = rfs["PDP"], rfs["PDP_RDMA"]
            m.d.comb += [
                pdp.regs.eq(rf_pdp.d), pdp.op_en.eq(rf_pdp.op_en), rf_pdp.done.eq(pdp.done),
                rf_pdp.d_status.eq(pdp.status), pdp.rdma_regs.eq(rf_prd.d),
                pdp.rdma_op_en.eq(rf_prd.op_en), rf_prd.done.eq(pdp.rdma_done),
                rf_prd.d_status.eq(pdp.rdma_status)]
            wiring.connect(m, sdp.pdp, pdp.sdp)
            sd = rfs["SDP"].d
            m.d.comb += [pdp.sdp_go.eq(sdp.pdp_go), pdp.sdp_abort.eq(sdp.pdp_abort),
                         pdp.sdp_cube.width.eq(sd.D_DATA_CUBE_WIDTH.WIDTH),
                         pdp.sdp_cube.height.eq(sd.D_DATA_CUBE_HEIGHT.HEIGHT),
                         pdp.sdp_cube.channel.eq(sd.D_DATA_CUBE_CHANNEL.CHANNEL),
                         pdp.sdp_cube.precision.eq(sd.D_DATA_FORMAT.OUT_PRECISION)]
            wiring.connect(m, pdp.rd_pdp, dmaif.rd_pdp)
            wiring.connect(m, pdp.wr_pdp, dmaif.wr_pdp)
            driven |= {"PDP", "PDP_RDMA"}
        else:
            m.d.comb += sdp.pdp.ready.eq(1)  # no PDP in this build: SDP->PDP output dropped

        # -- convolution pipeline (CDMA, CBUF, CSC, CMAC, CACC) -> SDP flying input --------
        m.submodules.conv = conv = ConvPipeline(cfg, rmap)
        for b in CONV_BLOCKS:
            n = b.lower()
            m.d.comb += [getattr(conv, f"{n}_regs").eq(rfs[b].d),
                         getattr(conv, f"{n}_op_en").eq(rfs[b].op_en),
                         rfs[b].done.eq(getattr(conv, f"{n}_done"))]
        sd = rfs["SDP"].d
        m.d.comb += [conv.sdp_wait.eq(sdp.flying_wait),
                     conv.sdp_reject.eq(sdp.flying_reject),
                     conv.sdp.int16.eq(sd.D_DATA_FORMAT.PROC_PRECISION == 1),
                     *([conv.sdp.fp16.eq(sd.D_DATA_FORMAT.PROC_PRECISION == 2)]
                       if "fp16" in cfg.data_types else []),
                     conv.sdp.width.eq(sd.D_DATA_CUBE_WIDTH.WIDTH),
                     conv.sdp.height.eq(sd.D_DATA_CUBE_HEIGHT.HEIGHT),
                     conv.sdp.channel.eq(sd.D_DATA_CUBE_CHANNEL.CHANNEL)]
        if "winograd" in conv.sdp.shape().members:
            m.d.comb += conv.sdp.winograd.eq(sd.D_FEATURE_MODE_CFG.WINOGRAD)
        if cfg.batching:
            from .mem.dma_fields import byte_value
            lo = cfg.memory_atom.bit_length()
            m.d.comb += [conv.sdp.batches.eq(sd.D_FEATURE_MODE_CFG.BATCH_NUMBER)] + [
                getattr(conv.sdp, f).eq(byte_value(sd, rmap["SDP"], reg, fld)[:lo])
                for f, reg, fld in (("base_lo", "D_DST_BASE_ADDR_LOW", "DST_BASE_ADDR_LOW"),
                                    ("line_lo", "D_DST_LINE_STRIDE", "DST_LINE_STRIDE"),
                                    ("surf_lo", "D_DST_SURFACE_STRIDE", "DST_SURFACE_STRIDE"))]
        m.d.comb += [rfs["CDMA"].d_status.eq(conv.cdma_status),
                     rfs["CACC"].d_status.eq(conv.cacc_status)]
        wiring.connect(m, conv.out, sdp.flying)
        m.d.comb += [sdp.flying_go.eq(conv.flying_go), sdp.flying_abort.eq(conv.flying_abort)]
        wiring.connect(m, conv.rd_cdma_dat, dmaif.rd_cdma_dat)
        wiring.connect(m, conv.rd_cdma_wt, dmaif.rd_cdma_wt)
        driven |= set(CONV_BLOCKS)

        # -- BDMA -------------------------------------------------------------------------
        if cfg.bdma:
            m.submodules.bdma = bdma = Bdma(cfg)
            rf = rfs["BDMA"]
            m.d.comb += [
                bdma.s.eq(rf.s), rf.status.eq(bdma.status),
                bdma.csb_we.eq(regs.bdma_csb_we), bdma.csb_addr.eq(regs.bdma_csb_addr),
                bdma.csb_wdata.eq(regs.bdma_csb_wdata),
            ]
            for g in range(2):
                m.d.comb += done[done_bit(glb_block, "BDMA", g)].eq(bdma.intr[g])
            wiring.connect(m, bdma.rd_bdma, dmaif.rd_bdma)
            wiring.connect(m, bdma.wr_bdma, dmaif.wr_bdma)

        # -- CDP + CDP_RDMA ----------------------------------------------------------------
        if cfg.cdp:
            m.submodules.cdp = cdp = Cdp(cfg)
            rf_cdp, rf_crd = rfs["CDP"], rfs["CDP_RDMA"]
            m.d.comb += [
                cdp.regs.eq(rf_cdp.d), cdp.s.eq(rf_cdp.s), cdp.op_en.eq(rf_cdp.op_en),
                rf_cdp.done.eq(cdp.done), rf_cdp.d_status.eq(cdp.status),
                cdp.rdma_regs.eq(rf_crd.d), cdp.rdma_op_en.eq(rf_crd.op_en),
                rf_crd.done.eq(cdp.rdma_done), rf_crd.d_status.eq(cdp.rdma_status),
            ]
            wiring.connect(m, cdp.rd_cdp, dmaif.rd_cdp)
            wiring.connect(m, cdp.wr_cdp, dmaif.wr_cdp)
            driven |= {"CDP", "CDP_RDMA"}

        # -- Rubik ------------------------------------------------------------------------------
        if cfg.rubik:
            m.submodules.rubik = rubik = Rubik(cfg)
            rf_rbk = rfs["RBK"]
            m.d.comb += [rubik.regs.eq(rf_rbk.d), rubik.op_en.eq(rf_rbk.op_en),
                         rf_rbk.done.eq(rubik.done), rf_rbk.d_status.eq(rubik.status)]
            wiring.connect(m, rubik.rd_rbk, dmaif.rd_rbk)
            wiring.connect(m, rubik.wr_rbk, dmaif.wr_rbk)
            driven |= {"RBK"}

        for name, rf in rfs.items():
            if rf.block.pingpong and name not in driven:
                m.d.comb += rf.done.eq(0)          # no datapath yet: layers stay pending
        m.d.comb += regs.done.eq(done)

        # LUT access registers of the SDP and CDP: answered by the unit
        units = {"SDP": sdp} | ({"CDP": cdp} if cfg.cdp else {})
        for name in lut_blocks:
            unit, p = units[name], name.lower()
            for k, member in LUT_MEMBERS.items():
                inner, outer = getattr(unit, k), getattr(regs, f"{p}_{k}")
                m.d.comb += inner.eq(outer) if member.flow == Out else outer.eq(inner)
        return m
