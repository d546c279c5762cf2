"""The convolution pipeline as one unit of the core: CDMA -> CBUF -> CSC -> CMAC -> CACC.

Layer control (spec "Ping-pong Synchronization" and "Convolution Pipeline"): a direct
convolution layer starts when the consumer groups of CDMA, CSC, CMAC_A, CMAC_B and CACC are
all enabled and SDP waits with a flying layer for it (``sdp_wait``; ``sdp`` is that layer's
cube: the registers are then stable, and the check can compare SDP's cube with the one CACC
delivers). As in the golden model (:mod:`sim.conv.unit`), a layer thus starts once SDP's is
enabled; a next layer starts when SDP has finished the previous one. ``start`` goes to CDMA
and CSC and ``clear`` to CMAC and CACC in the same cycle; the result streams out of ``out``
into SDP's flying input while it is computed. The layer ends when CACC has delivered its last
value (on fp16 builds also once the CDMA has fetched every line, those no output reads
included, so that its NaN / Inf counters are complete when captured): the five register
files get ``done`` together (CDMA_DAT / CDMA_WT and CACC raise their interrupts then; SDP
raises its own when it has written the last output), CDMA updates its reuse state.

Invalid programs (project rule: rejected, no hang, nothing written outside the programmed
surfaces): when the five groups are enabled, :class:`~hw.conv.check.ConvCheck` runs first
(:data:`~hw.conv.check.CHECK_CYCLES` cycles, the rules of :func:`sim.conv.program.decode` and
of the CBUF reuse that this int8 RTL can run). A valid program then starts the units; an
invalid one starts none of them and issues no DMA: the five register files get ``done`` in
the next cycle and ``flying_abort`` pulses, which ends SDP's flying layer (the one waiting
for this layer) without DMA (:class:`hw.sdp.Sdp`). The other way round, when SDP rejects a
flying layer by its own rules (``sdp_reject``), the next layer here ends the same way
without being checked or run (and without ``flying_abort``). ``flying_go``
is high while a valid layer runs: SDP's flying layer issues its DMA commands only then.

The two CMAC register files (CMAC_A, CMAC_B: each half of NVDLA's MAC array) drive one
:class:`~hw.conv.cmac.Cmac` of Atomic-K cells: the split is an implementation detail of the
original floorplan, the arithmetic is the same.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..mem.dma import DmaGeometry, DmaReadPort
from ..regfile import fields_layout
from .cacc import Cacc
from .cbuf import Cbuf
from .cdma import Cdma
from .check import ConvCheck
from .cmac import Cmac
from .common import conv_fp16, conv_int16, conv_out_layout, sdp_cube_layout
from .csc import Csc

__all__ = ["ConvPipeline", "BLOCKS"]

BLOCKS = ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")


class ConvPipeline(wiring.Component):
    """CDMA, CBUF, CSC, CMAC and CACC with their layer control.

    Members: per block ``<b>_regs`` (the consumer group's rw fields), ``<b>_op_en``,
    ``<b>_done``; ``cdma_status`` / ``cacc_status`` (hardware-written D fields);
    ``rd_cdma_dat`` / ``rd_cdma_wt`` (DMA read clients); ``out`` (SDP flying input);
    ``flying_abort`` (pulse: the layer's program was rejected), ``flying_go`` (a valid layer
    runs), both to SDP.
    """

    def __init__(self, cfg, rmap):
        self._cfg, self._rmap = cfg, rmap
        geom = DmaGeometry(cfg)
        self._cdma, self._csc = Cdma(cfg), Csc(cfg)
        regs = {"CDMA": self._cdma.signature.members["regs"].shape,
                "CSC": self._csc.signature.members["regs"].shape}
        members = {}
        for b in BLOCKS:
            n = b.lower()
            members[f"{n}_regs"] = In(regs.get(b) or
                                      fields_layout(rmap[b].d_registers, ("rw",)))
            members[f"{n}_op_en"] = In(1)
            members[f"{n}_done"] = Out(1)
        members["cdma_status"] = Out(self._cdma.signature.members["status"].shape)
        members["cacc_status"] = Out(fields_layout(rmap["CACC"].d_registers, ("ro",)))
        members["rd_cdma_dat"] = Out(DmaReadPort(geom))
        members["rd_cdma_wt"] = Out(DmaReadPort(geom))
        members["out"] = Out(stream.Signature(conv_out_layout(cfg)))
        members["sdp"] = In(sdp_cube_layout(cfg))
        members["sdp_wait"] = In(1)
        members["sdp_reject"] = In(1)
        members["flying_abort"] = Out(1)
        members["flying_go"] = Out(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        m.submodules.cdma = cdma = self._cdma
        m.submodules.cbuf = cbuf = Cbuf(cfg)
        m.submodules.csc = csc = self._csc
        m.submodules.cmac = cmac = Cmac(cfg)
        m.submodules.cacc = cacc = Cacc(cfg)

        # -- layer control: check, then run (or reject) --------------------------------------
        m.submodules.check = check = ConvCheck(cfg, self._rmap)
        for b in BLOCKS:
            n = b.lower()
            m.d.comb += getattr(check, f"{n}_regs").eq(getattr(self, f"{n}_regs"))
        m.d.comb += check.sdp.eq(self.sdp)
        all_en = Signal()
        start = Signal()
        finish = Signal()
        cdma_end = Signal()             # CACC delivered the last value: CDMA completes its fetch
        drain = conv_fp16(cfg)
        m.d.comb += all_en.eq(self.cdma_op_en & self.csc_op_en & self.cmac_a_op_en &
                              self.cmac_b_op_en & self.cacc_op_en)
        dropped = Signal()
        reject_pend = Signal(2)         # SDP layers rejected, each ends one layer of ours
        reject_take = Signal()
        with m.If(self.sdp_reject & ~reject_take):
            m.d.sync += reject_pend.eq(reject_pend + 1)
        with m.Elif(reject_take & ~self.sdp_reject):
            m.d.sync += reject_pend.eq(reject_pend - 1)
        with m.FSM(name="layer"):
            with m.State("IDLE"):
                with m.If(all_en & (reject_pend != 0)):
                    m.d.comb += reject_take.eq(1)
                    m.next = "DROP"
                with m.Elif(all_en & self.sdp_wait):
                    m.d.comb += check.start.eq(1)
                    m.next = "CHECK"
            with m.State("CHECK"):
                with m.If(check.done):
                    with m.If(check.ok):
                        m.d.comb += start.eq(1)
                        m.next = "RUN"
                    with m.Else():
                        m.next = "REJECT"
            with m.State("RUN"):
                m.d.comb += self.flying_go.eq(1)
                with m.If(cacc.done):
                    if drain:
                        m.d.comb += cdma_end.eq(1)
                        with m.If(cdma.drained):
                            m.d.comb += [finish.eq(1), check.end.eq(1)]
                            m.next = "IDLE"
                        with m.Else():
                            m.next = "DRAIN"
                    else:
                        m.d.comb += [finish.eq(1), check.end.eq(1)]
                        m.next = "IDLE"
            if drain:
                # fp16 builds: CACC is done but the CDMA still fetches lines no output reads;
                # the register files capture CDMA's NaN / Inf counters when it has them all
                with m.State("DRAIN"):
                    with m.If(cdma.drained):
                        m.d.comb += [finish.eq(1), check.end.eq(1)]
                        m.next = "IDLE"
            with m.State("REJECT"):
                m.d.comb += self.flying_abort.eq(1)
                m.next = "IDLE"
            with m.State("DROP"):               # its SDP layer was rejected: end, no DMA
                m.d.comb += dropped.eq(1)
                m.next = "IDLE"
        rejected = Signal()
        m.d.comb += rejected.eq(self.flying_abort | dropped)
        for b in BLOCKS:
            m.d.comb += getattr(self, f"{b.lower()}_done").eq(finish | rejected)

        # -- units -------------------------------------------------------------------------
        m.d.comb += [
            cdma.regs.eq(self.cdma_regs), cdma.start.eq(start),
            cdma.end.eq(cdma_end if drain else finish),
            cdma.csc.rls_slices.eq(self.csc_regs.D_RELEASE.RLS_SLICES),
            cdma.csc.height_ext.eq(self.csc_regs.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT),
            csc.regs.eq(self.csc_regs), csc.start.eq(start),
            cmac.clear.eq(start),
            cacc.clear.eq(start), cacc.truncate.eq(self.cacc_regs.D_CLIP_CFG.CLIP_TRUNCATE),
            cacc.kernels_m1.eq(self.csc_regs.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL),
            cbuf.data_banks.eq(self.cdma_regs.D_BANK.DATA_BANK + 1),
            cbuf.wr.eq(cdma.cbuf_wr),
            csc.dat_base.eq(cdma.dat_base), csc.dat_slices.eq(cdma.dat_slices),
            csc.wt_base.eq(cdma.wt_base), csc.wt_bytes.eq(cdma.wt_bytes),
            cdma.wt_released.eq(csc.wt_released),
            self.cdma_status.eq(cdma.status),
            self.cacc_status.D_OUT_SATURATION.SAT_COUNT.eq(cacc.sat_count),
        ]
        if cfg.batching:
            m.d.comb += csc.wt_copy.eq(cdma.wt_copy)
            if cfg.weight_compression:
                m.d.comb += cdma.wt_expanded.eq(check.wt_expanded)
        prec = self.cacc_regs.D_MISC_CFG.PROC_PRECISION    # (the check: all blocks agree)
        if conv_int16(cfg):
            m.d.comb += [cmac.int16.eq(prec == 1), cacc.int16.eq(prec == 1)]
        if conv_fp16(cfg):
            m.d.comb += [cmac.fp16.eq(prec == 2), cacc.fp16.eq(prec == 2)]
        wiring.connect(m, csc=csc.dat_rd, cbuf=cbuf.dat_rd)
        wiring.connect(m, csc=csc.wt_rd, cbuf=cbuf.wt_rd)
        wiring.connect(m, csc=csc.dat, cmac=cmac.dat)
        wiring.connect(m, csc=csc.wt, cmac=cmac.wt)
        wiring.connect(m, cmac=cmac.psum, cacc=cacc.psum)
        wiring.connect(m, wiring.flipped(self.out), cacc.out)
        wiring.connect(m, wiring.flipped(self.rd_cdma_dat), cdma.rd_dat)
        wiring.connect(m, wiring.flipped(self.rd_cdma_wt), cdma.rd_wt)
        return m
