"""The CDP unit: CDP_RDMA, LRN datapath, write DMA, checks, counters and completion (spec: CDP,
CDP_RDMA).

One layer::

    op_en & rdma_op_en -> CHECK (:mod:`hw.cdp.check`) -+-> invalid: done at once, no DMA
                                                        +-> RUN: PixelLines -> CubeReader ->
    AtomSerializer -> CdpFeeder -> CdpDatapath -> CdpWdma (CubeWriter),
    done + rdma_done in the cycle after the writer reports every line acknowledged.

The cube is W x H x C (CDP_RDMA ``D_DATA_CUBE_*``; the output has the same size), read and
written pixel by pixel (:mod:`hw.cdp.rdma`). int8, and int16 / fp16 when the build's
``data_types`` has them (per layer, from ``D_DATA_FORMAT``: 2-byte elements, an atom holds
half the channels; fp16 runs NVDLA's floating-point datapath, :mod:`hw.cdp.datapath`).

Counters (``status`` / ``rdma_status``, captured by the register files on ``done``):
``OUT_SATURATION`` and the five LUT counters always (``D_PERF_ENABLE.LUT_EN`` gates nothing,
as in NVDLA's C model); the write / read stall counters (cycles a request waited for the
memory interface) when the block's ``DMA_EN``; a disabled counter keeps the value its
register group already holds (the unit mirrors both groups, flipping on every ``done`` like
the register file's CONSUMER, as the SDP does). On builds with fp16, ``NAN_INPUT_NUM`` / ``INF_INPUT_NUM`` count the NaN / infinite
codes among the elements read (whole atoms: the last surface's padding channels too) and
``NAN_OUTPUT_NUM`` the NaN codes among the elements written, on fp16 layers (0 otherwise);
builds without fp16 keep them 0. Counters saturate at 2^32 - 1.

LUT access: ``lut_cfg_*`` / ``lut_data_*`` are the CSB side of S_LUT_ACCESS_CFG / _DATA
(:func:`hw.sdp.sdp.lut_access`: pointer with auto-increment, shared with the SDP).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, flipped

from arch.registers import register_map

from ..mem.cube import AtomSerializer, CubeReader
from ..mem.dma import DmaGeometry, DmaReadPort, DmaWritePort
from ..mem.dma_fields import cube_address
from ..regfile import fields_layout
from ..sdp.datapath import _popcount
from ..sdp.sdp import lut_access
from .check import FP16, INT16, program_errors
from .datapath import CdpDatapath
from .rdma import CdpFeeder, PixelLines
from .wdma import CdpWdma

__all__ = ["Cdp"]

_COUNTER_MAX = (1 << 32) - 1


class Cdp(wiring.Component):
    """The CDP + CDP_RDMA unit of one build (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._rmap = rmap = register_map(cfg)
        self.lanes = cfg.cdp_throughput
        rb, cb = rmap["CDP_RDMA"], rmap["CDP"]
        super().__init__({
            "rdma_regs": In(fields_layout(rb.d_registers, ("rw",))),
            "rdma_op_en": In(1), "rdma_done": Out(1),
            "rdma_status": Out(fields_layout(rb.d_registers, ("ro",))),
            "regs": In(fields_layout(cb.d_registers, ("rw",))),
            "s": In(fields_layout(cb.s_registers, ("rw",), ("S_POINTER", "S_STATUS"))),
            "op_en": In(1), "done": Out(1),
            "status": Out(fields_layout(cb.d_registers, ("ro",))),
            "rd_cdp": Out(DmaReadPort(geom)),
            "wr_cdp": Out(DmaWritePort(geom)),
            "lut_cfg_we": In(1), "lut_cfg_wdata": In(32), "lut_cfg_rdata": Out(32),
            "lut_data_we": In(1), "lut_data_wdata": In(32),
            "lut_data_re": In(1), "lut_data_rdata": Out(32),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, geom, T = self._cfg, self._geom, self.lanes
        rb, cb = self._rmap["CDP_RDMA"], self._rmap["CDP"]
        R, C = self.rdma_regs, self.regs
        aw, ash = geom.addr_width, geom.atom_shift

        src = (*cube_address(R, rb, "SRC", aw), R.D_SRC_DMA_CFG.SRC_RAM_TYPE)
        dst = (*cube_address(C, cb, "DST", aw), C.D_DST_DMA_CFG.DST_RAM_TYPE)
        wm1 = R.D_DATA_CUBE_WIDTH.WIDTH
        hm1 = R.D_DATA_CUBE_HEIGHT.HEIGHT
        cm1 = R.D_DATA_CUBE_CHANNEL.CHANNEL
        fp16 = "fp16" in cfg.data_types
        wide = "int16" in cfg.data_types or fp16          # 2-byte elements on some layers
        if wide:
            i16 = Signal()                                # this layer's elements are 2 bytes
            prec = C.D_DATA_FORMAT.INPUT_DATA_TYPE
            m.d.comb += i16.eq((prec == INT16) | (prec == FP16) if fp16 else prec == INT16)
        sm1 = Signal(13)
        m.d.comb += sm1.eq(Mux(i16, cm1 >> (ash - 1), cm1 >> ash) if wide else cm1 >> ash)
        invalid = Signal()
        m.d.comb += invalid.eq(program_errors(cfg, geom, C, R, self.s, src, dst,
                                              (wm1, hm1, sm1)))

        # -- data movers and datapath ----------------------------------------------------------
        m.submodules.src_lines = src_lines = PixelLines(geom)
        m.submodules.reader = reader = CubeReader(geom)
        m.submodules.ser = ser = AtomSerializer(geom)
        m.submodules.feeder = feeder = CdpFeeder(geom, T, int16=wide)
        m.submodules.datapath = dp = CdpDatapath(cfg)
        m.submodules.wdma = wdma = CdpWdma(geom, T, int16=wide)
        wiring.connect(m, src_lines.cmd, reader.cmd)
        wiring.connect(m, flipped(self.rd_cdp), reader.dma)
        wiring.connect(m, reader.data, ser.i)
        wiring.connect(m, ser.o, feeder.i)
        wiring.connect(m, feeder.o, dp.i)
        wiring.connect(m, flipped(self.wr_cdp), wdma.dma)
        start = Signal()
        clear = Signal()
        for movers, (base, ls, ss, ram) in ((src_lines, src), (wdma, dst)):
            m.d.comb += [movers.start.eq(start), movers.base.eq(base), movers.ram_type.eq(ram),
                         movers.line_stride.eq(ls), movers.surface_stride.eq(ss),
                         movers.width_m1.eq(wm1), movers.height_m1.eq(hm1),
                         movers.surfaces_m1.eq(sm1)]
        if wide:
            m.d.comb += [feeder.int16.eq(i16), wdma.int16.eq(i16)]
        m.d.comb += [feeder.channel_m1.eq(cm1), feeder.surfaces_m1.eq(sm1),
                     feeder.clear.eq(clear), dp.clear.eq(clear), wdma.clear.eq(clear),
                     dp.regs.eq(C), dp.s.eq(self.s)]
        o = dp.o
        for lane in range(T):
            m.d.comb += wdma.i.payload.data[lane].eq(o.payload.data[lane])
        m.d.comb += wdma.i.payload.last.eq(o.payload.last)

        # -- control -------------------------------------------------------------------------
        running = Signal()
        finish = Signal()
        m.d.comb += [self.done.eq(finish), self.rdma_done.eq(finish)]
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                with m.If(self.op_en & self.rdma_op_en):
                    m.d.comb += clear.eq(1)
                    m.next = "CHECK"
            with m.State("CHECK"):
                with m.If(invalid):
                    m.next = "FINISH"
                with m.Else():
                    m.d.comb += start.eq(1)
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += running.eq(1)
                with m.If(wdma.done):
                    m.next = "FINISH"
            with m.State("FINISH"):
                m.d.comb += finish.eq(1)
                m.next = "IDLE"
        m.d.comb += [self.busy.eq(running),
                     wdma.i.valid.eq(o.valid & running), o.ready.eq(wdma.i.ready & running)]
        o_fire = Signal()
        m.d.comb += o_fire.eq(o.valid & o.ready)

        # -- counters ----------------------------------------------------------------------------
        def nan16(v):
            return (v[10:15] == 0x1F) & v[:10].any()
        def counter(name, inc, when):
            c = Signal(32, name=name)
            nxt = Signal(33, name=f"{name}_next")
            m.d.comb += nxt.eq(c + inc)
            with m.If(clear):
                m.d.sync += c.eq(0)
            with m.Elif(when):
                m.d.sync += c.eq(Mux(nxt[32], _COUNTER_MAX, nxt[:32]))
            return c

        pe = C.D_PERF_ENABLE
        live = {("D_OUT_SATURATION", "OUT_SATURATION"): (counter("out_sat", o.payload.sat,
                                                                 o_fire), None)}
        for reg, port in (("D_PERF_LUT_UFLOW", "lut_uflow"), ("D_PERF_LUT_OFLOW", "lut_oflow"),
                          ("D_PERF_LUT_HYBRID", "lut_hybrid"), ("D_PERF_LUT_LE_HIT", "lut_le_hit"),
                          ("D_PERF_LUT_LO_HIT", "lut_lo_hit")):
            # written whatever LUT_EN says, as NVDLA's C model (its LUT_EN test is commented
            # out) and the golden model do; NVDLA's Verilog does not use reg2dp_lut_en either
            live[(reg, f"PERF_{reg[7:]}")] = (counter(port, o.payload[port], o_fire), None)
        if fp16:
            fp = Signal()
            m.d.comb += fp.eq(C.D_DATA_FORMAT.INPUT_DATA_TYPE == FP16)
            fi = feeder.o
            i_fire = Signal()
            m.d.comb += i_fire.eq(fp & fi.valid & fi.ready & fi.payload.real)
            lanes_in = [fi.payload.data[k].as_unsigned() for k in range(T)]
            lanes_out = [o.payload.data[k].as_unsigned() for k in range(T)]
            for reg, fld, name, inc, when in (
                    ("D_NAN_INPUT_NUM", "NAN_INPUT_NUM", "nan_in",
                     _popcount([nan16(v) for v in lanes_in]), i_fire),
                    ("D_INF_INPUT_NUM", "INF_INPUT_NUM", "inf_in",
                     _popcount([(v[10:15] == 0x1F) & ~v[:10].any() for v in lanes_in]), i_fire),
                    ("D_NAN_OUTPUT_NUM", "NAN_OUTPUT_NUM", "nan_out",
                     _popcount([nan16(v) for v in lanes_out]), fp & o_fire)):
                live[(reg, fld)] = (counter(name, inc, when), None)
        live[("D_PERF_WRITE_STALL", "PERF_WRITE_STALL")] = (
            counter("wr_stall", 1, running & wdma.stall), pe.DMA_EN)
        live_r = {("D_PERF_READ_STALL", "PERF_READ_STALL"): (
            counter("rd_stall", 1, running & reader.stall), R.D_PERF_ENABLE.DMA_EN)}
        # A disabled counter reports the value its register group already holds (as the SDP
        # does): both groups' values are mirrored, the group flips on every done.
        for port, values, name in ((self.status, live, "cdp"), (self.rdma_status, live_r, "rdma")):
            layout = port.shape()
            grp = Signal(name=f"{name}_group")
            banks = [Signal(layout, name=f"{name}_bank{g}") for g in range(2)]
            for (reg, fld), (value, enable) in values.items():
                held = Mux(grp, banks[1][reg][fld], banks[0][reg][fld])
                m.d.comb += port[reg][fld].eq(value if enable is None else
                                              Mux(enable, value, held))
            with m.If(finish):
                m.d.sync += grp.eq(~grp)
                for g in range(2):
                    with m.If(grp == g):
                        m.d.sync += banks[g].eq(port)
        lut_access(m, self, dp)
        return m
