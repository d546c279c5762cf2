"""The PDP unit: PDP_RDMA, pooling core, PDP_WDMA and completion (spec: PDP, PDP_RDMA).

One layer::

    op_en & (flying | rdma_op_en) -> CHECK (:class:`hw.pdp.check.PdpCheck`) -+-> invalid: done
                                                                              +-> RUN
    offline: CubeReader (one cube per width part) -> AtomSerializer -> PdpAtomSplitter -+
    flying:  SDP ``pdp`` stream -> LaneAdapter ----------------------------------------+
        -> PdpPool (one job per width part) -> PdpAtomPacker -> AtomPacker -> CubeWriter
    done (+ rdma_done when PDP_RDMA takes part) in the cycle after the writer reports the
    last part's bytes acknowledged.

Width parts (``SPLIT_NUM = n - 1 > 0``): part 0 reads ``PARTIAL_WIDTH_IN_FIRST`` positions
from the source base with the left padding; part ``i > 0`` starts ``first + (i - 1) x mid -
(kernel - stride)`` positions in and reads ``PARTIAL_WIDTH_IN_MID`` (the last part
``_LAST``) ``+ kernel - stride`` positions, the last part with the right padding; part ``i``
writes ``PARTIAL_WIDTH_OUT_*`` positions at ``first + (i - 1) x mid`` output positions from
the destination base (a part 1 with ``first < kernel - stride`` starts before the source base
and reads there, as NVDLA does: software splits so that only part 0 has left padding). The
read DMA uses PDP_RDMA's fields, the core and write DMA PDP's. Each
part is one cube per DMA and one job of the core, all surfaces and lines of it (the order
NVDLA's PDP reads and writes).

Precision: ``D_DATA_FORMAT.INPUT_DATA`` INT8, or INT16 on builds whose ``data_types``
include int16, FP16 on builds whose ``data_types`` include fp16 (per layer; PDP_RDMA's must
agree). An int16 / fp16 atom holds ``atom / 2`` channels, so a layer has ``ceil(2 C / atom)``
surfaces and each atom is ``G / 2`` transfers of the core; the core's widths and arithmetic
follow the precision (:mod:`hw.pdp.pool`). Such builds need ``pdp_throughput <= memory_atom /
2``. With ``D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO`` every NaN PDP_RDMA delivers enters the core as
+0 (flying input is never flushed, as in NVDLA).

Flying mode (``FLYING_MODE = ON_FLYING``): the input is the SDP's output stream (its values,
int8, int16 or fp16 codes, in SDP's cube order, which is the PDP's input order), taken
through a skid buffer (:class:`hw.skid.SkidBuffer`: a cycle of latency, full rate, the SDP's
``ready`` a register); PDP_RDMA does not read.
A flying layer issues no DMA until the SDP runs its layer (``sdp_go`` or the first transfer)
and then waits for the SDP's data as long as it takes. An SDP layer that ends without running
(its program rejected, or its producer aborted) pulses ``sdp_abort``, which is kept until a
flying PDP layer takes it: that layer ends like an invalid program (done, no DMA, nothing
written), whichever unit was enabled first. When the SDP runs its layer, ``sdp_cube`` (the
SDP group's cube and ``OUT_PRECISION``) must be the PDP's input: same precision, width and
height, as many channel surfaces (the golden model's :func:`sim.pdp.check_flying_cube`). A
flying layer whose SDP output does not match, or that failed its own check, takes and drops
the SDP's output until the SDP layer ends (an SDP layer sending to the PDP always finds a
taker), then ends without writing.

Status: on builds with fp16, ``D_NAN_INPUT_NUM`` / ``D_INF_INPUT_NUM`` count the NaN /
infinite codes PDP_RDMA delivers (before the flush) and ``D_NAN_OUTPUT_NUM`` the NaNs the
core outputs, on fp16 layers, all but the layer's last atom's last 8 bytes (NVDLA's quirk);
the input counts pass through NVDLA's two slots (:class:`sim.pdp.pdp.NanCounters`: an offline
layer stores its counts, every layer that runs reports a slot), 0 on layers that do not run
and on builds without fp16. ``PERF_WRITE_STALL`` / ``PERF_READ_STALL``
count the cycles a write / read request waited for the memory interface while the group's
``DMA_EN`` is set (saturating), 0 otherwise.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out, flipped

from arch.registers import register_map

from arch.pdp import line_buffer_positions

from ..skid import SkidBuffer
from ..mem.cube import AtomPacker, AtomSerializer, CubeReader, CubeWriter
from ..mem.dma import DmaGeometry, DmaReadPort, DmaWritePort, cube_layout
from ..mem.dma_fields import cube_address
from ..regfile import fields_layout
from ..sdp.wdma import out_layout
from .check import FP16, INT16, PdpCheck
from .pool import PdpPool
from .rdma import LaneAdapter, PdpAtomSplitter
from .wdma import PdpAtomPacker

__all__ = ["Pdp", "line_atoms", "SDP_CUBE"]

#: what the SDP group sending a flying layer outputs: its cube (register values, minus one)
#: and ``OUT_PRECISION``
SDP_CUBE = data.StructLayout({"width": 13, "height": 13, "channel": 13, "precision": 2})

_COUNTER_MAX = (1 << 32) - 1


def line_atoms(cfg):
    """Output positions of one width part the line buffer holds with one open output line
    (:func:`arch.pdp.line_buffer_positions`: 128); the program check applies the narrower
    limits of kernels keeping more lines open (:func:`arch.pdp.max_pass_width`)."""
    return line_buffer_positions(cfg)


class Pdp(wiring.Component):
    """The PDP + PDP_RDMA unit of one build (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._rmap = rmap = register_map(cfg)
        self.lanes = cfg.pdp_throughput
        self._sdp_lanes = cfg.sdp_bs_throughput
        pb, rb = rmap["PDP"], rmap["PDP_RDMA"]
        self._int16 = "int16" in cfg.data_types
        self._fp16 = "fp16" in cfg.data_types
        if (self._int16 or self._fp16) and 2 * self.lanes > geom.atom_bytes:
            raise ValueError(f"{cfg.name}: int16 / fp16 PDP needs pdp_throughput={self.lanes} "
                             f"<= memory_atom / 2 = {geom.atom_bytes // 2} (one 2-byte atom)")
        super().__init__({
            "regs": In(fields_layout(pb.d_registers, ("rw",))),
            "op_en": In(1), "done": Out(1),
            "status": Out(fields_layout(pb.d_registers, ("ro",))),
            "rdma_regs": In(fields_layout(rb.d_registers, ("rw",))),
            "rdma_op_en": In(1), "rdma_done": Out(1),
            "rdma_status": Out(fields_layout(rb.d_registers, ("ro",))),
            "rd_pdp": Out(DmaReadPort(geom)),
            "wr_pdp": Out(DmaWritePort(geom)),
            "sdp": In(stream.Signature(out_layout(self._sdp_lanes))),
            "sdp_go": In(1), "sdp_abort": In(1),
            "sdp_cube": In(SDP_CUBE),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, geom, T = self._cfg, self._geom, self.lanes
        pb, rb = self._rmap["PDP"], self._rmap["PDP_RDMA"]
        P, R = self.regs, self.rdma_regs
        aw, ash = geom.addr_width, geom.atom_shift
        G = geom.atom_bytes // T
        LB = line_atoms(cfg)

        mode = P.D_OPERATION_MODE_CFG
        flying = ~mode.FLYING_MODE
        rdma_active = Signal()
        m.d.comb += rdma_active.eq(~flying)          # a flying layer leaves PDP_RDMA alone
        start = Signal()
        m.d.comb += start.eq(self.op_en & (flying | self.rdma_op_en))

        m.submodules.check = check = PdpCheck(cfg, self._rmap, LB)
        m.d.comb += [check.regs.eq(P), check.rdma_regs.eq(R),
                     check.rdma_active.eq(rdma_active)]

        has16, hasfp = self._int16, self._fp16
        wide_build = has16 or hasfp
        is16 = Signal()                          # the layer pools int16
        if has16:
            m.d.comb += is16.eq(P.D_DATA_FORMAT.INPUT_DATA == INT16)
        isfp = Signal()                          # the layer pools fp16
        wide = is16                              # 2-byte elements
        if hasfp:
            wide = Signal()
            m.d.comb += [isfp.eq(P.D_DATA_FORMAT.INPUT_DATA == FP16), wide.eq(is16 | isfp)]

        def surfaces_m1(channel_m1):
            """Surfaces - 1 of a cube of ``channel_m1 + 1`` channels (an atom holds ``atom``
            int8 or ``atom / 2`` int16 / fp16 channels)."""
            if not wide_build:
                return channel_m1 >> ash
            return Mux(wide, channel_m1 >> (ash - 1), channel_m1 >> ash)

        m.submodules.pool = pool = PdpPool(T, G, LB, int16=has16, fp16=hasfp)
        m.submodules.in_reader = reader = CubeReader(geom)
        m.submodules.in_ser = ser = AtomSerializer(geom)
        m.submodules.splitter = splitter = PdpAtomSplitter(geom, T, int16=wide_build)
        # the SDP's flying output enters through a skid buffer: the pool's readiness does not
        # reach back through the SDP datapath's enable into its read DMAs in one cycle (that
        # chain was one of the whole-core ECP5 netlist's deepest paths)
        m.submodules.fly_skid = fly_skid = SkidBuffer(out_layout(self._sdp_lanes))
        wiring.connect(m, wiring.flipped(self.sdp), fly_skid.i)
        sdp_in = fly_skid.o
        m.submodules.adapter = adapter = LaneAdapter(self._sdp_lanes, T,
                                                     value_bits=16 if wide_build else 8)
        m.submodules.packer = packer = PdpAtomPacker(geom, T, int16=wide_build)
        if has16:
            m.d.comb += pool.cfg.int16.eq(is16)
        if hasfp:
            m.d.comb += pool.cfg.fp16.eq(isfp)
        if wide_build:
            m.d.comb += [splitter.int16.eq(wide), packer.int16.eq(wide)]
        m.submodules.apack = apack = AtomPacker(geom)
        m.submodules.writer = writer = CubeWriter(geom)
        wiring.connect(m, flipped(self.rd_pdp), reader.dma)
        wiring.connect(m, reader.data, ser.i)
        wiring.connect(m, ser.o, splitter.i)
        wiring.connect(m, pool.o, packer.i)
        wiring.connect(m, packer.o, apack.i)
        wiring.connect(m, apack.o, writer.data)
        wiring.connect(m, flipped(self.wr_pdp), writer.dma)

        # -- pooling parameters -------------------------------------------------------------
        kc, pc = P.D_POOLING_KERNEL_CFG, P.D_POOLING_PADDING_CFG
        pc_cfg = pool.cfg
        m.d.comb += [
            pc_cfg.method.eq(mode.POOLING_METHOD), pc_cfg.kw_m1.eq(kc.KERNEL_WIDTH),
            pc_cfg.kh_m1.eq(kc.KERNEL_HEIGHT), pc_cfg.sw_m1.eq(kc.KERNEL_STRIDE_WIDTH),
            pc_cfg.sh_m1.eq(kc.KERNEL_STRIDE_HEIGHT), pc_cfg.pad_top.eq(pc.PAD_TOP),
            pc_cfg.pad_bottom.eq(pc.PAD_BOTTOM),
            pc_cfg.h_m1.eq(P.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT),
            pc_cfg.hout_m1.eq(P.D_DATA_CUBE_OUT_HEIGHT.CUBE_OUT_HEIGHT),
            pc_cfg.s_m1.eq(surfaces_m1(P.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL)),
            pc_cfg.recip_w.eq(P.D_RECIP_KERNEL_WIDTH.RECIP_KERNEL_WIDTH),
            pc_cfg.recip_h.eq(P.D_RECIP_KERNEL_HEIGHT.RECIP_KERNEL_HEIGHT),
        ]
        for n in range(1, 8):
            m.d.comb += pc_cfg.pad_values[n - 1].eq(
                P[f"D_POOLING_PADDING_VALUE_{n}_CFG"][f"PAD_VALUE_{n}X"])

        # -- width parts ----------------------------------------------------------------------
        split = mode.SPLIT_NUM

        def part(i, view, kcfg, pw_in, pw_out, w_m1, wout_m1, split=split):
            """(input width - 1, output width - 1, first, last) of part ``i``."""
            first = i == 0
            last = i == split
            overlap = kcfg.KERNEL_WIDTH - kcfg.KERNEL_STRIDE_WIDTH
            win = Signal(14, name=f"win_{view}")
            wout = Signal(13, name=f"wout_{view}")
            with m.If(split == 0):
                m.d.comb += win.eq(w_m1)
                if wout_m1 is not None:
                    m.d.comb += wout.eq(wout_m1)
            with m.Elif(first):
                m.d.comb += win.eq(pw_in.PARTIAL_WIDTH_IN_FIRST)
                if pw_out is not None:
                    m.d.comb += wout.eq(pw_out.PARTIAL_WIDTH_OUT_FIRST)
            with m.Elif(last):
                m.d.comb += win.eq(pw_in.PARTIAL_WIDTH_IN_LAST + overlap)
                if pw_out is not None:
                    m.d.comb += wout.eq(pw_out.PARTIAL_WIDTH_OUT_LAST)
            with m.Else():
                m.d.comb += win.eq(pw_in.PARTIAL_WIDTH_IN_MID + overlap)
                if pw_out is not None:
                    m.d.comb += wout.eq(pw_out.PARTIAL_WIDTH_OUT_MID)
            return win, wout, first, last

        # core jobs
        job_i = Signal(8)
        job_pend = Signal()
        jw, jwo, jfirst, jlast = part(job_i, "job", kc, P.D_PARTIAL_WIDTH_IN,
                                      P.D_PARTIAL_WIDTH_OUT,
                                      P.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH,
                                      P.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH)
        m.d.comb += [pool.job.valid.eq(job_pend),
                     pool.job.payload.win_m1.eq(jw), pool.job.payload.wout_m1.eq(jwo),
                     pool.job.payload.pad_left.eq(Mux(jfirst, pc.PAD_LEFT, 0)),
                     pool.job.payload.pad_right.eq(Mux(jlast, pc.PAD_RIGHT, 0))]
        with m.If(pool.job.valid & pool.job.ready):
            m.d.sync += job_i.eq(job_i + 1)
            with m.If(jlast):
                m.d.sync += job_pend.eq(0)

        def cube_commands(name, port, view, block, prefix, cube):
            """One cube command per width part on ``port`` (the ``cmd`` stream of a CubeReader
            or CubeWriter) while ``pend``, from the fields of ``view`` (register block
            ``block``): the ``prefix`` (``SRC`` / ``DST``) base address, strides and RAM type,
            the ``cube`` (``IN`` / ``OUT``) cube's height, channels and part widths. Part ``i``
            starts ``off`` atoms from the base: after part 0, ``off`` is the first part's width
            (less the kernel overlap for input parts), after any other it grows by the middle
            part's width. Returns ``(i, pend, off)`` for ``go`` to start."""
            i, pend, off = Signal(8, name=f"{name}_i"), Signal(name=f"{name}_pend"), \
                Signal(aw, name=f"{name}_off")      # off: atoms from the base
            out = cube == "OUT"
            kcfg, pw = view.D_POOLING_KERNEL_CFG, view[f"D_PARTIAL_WIDTH_{cube}"]
            win, wout, first, last = part(
                i, name, kcfg, view.D_PARTIAL_WIDTH_IN, pw if out else None,
                view.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH,
                view.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH if out else None,
                view.D_OPERATION_MODE_CFG.SPLIT_NUM)
            first_off = pw[f"PARTIAL_WIDTH_{cube}_FIRST"] + 1
            if not out:
                first_off = first_off - (kcfg.KERNEL_WIDTH - kcfg.KERNEL_STRIDE_WIDTH)
            base, line_stride, surface_stride = cube_address(view, block, prefix, aw)
            cmd = Signal(cube_layout(geom), name=f"{name}_cmd")
            m.d.comb += [
                cmd.base.eq(base + (off << ash)),
                cmd.ram_type.eq(view[f"D_{prefix}_RAM_CFG"][f"{prefix}_RAM_TYPE"]),
                cmd.line_atoms.eq(wout if out else win),
                cmd.lines.eq(view[f"D_DATA_CUBE_{cube}_HEIGHT"][f"CUBE_{cube}_HEIGHT"]),
                cmd.surfaces.eq(surfaces_m1(
                    view[f"D_DATA_CUBE_{cube}_CHANNEL"][f"CUBE_{cube}_CHANNEL"])),
                cmd.batches.eq(0),
                cmd.line_stride.eq(line_stride), cmd.surface_stride.eq(surface_stride),
                port.valid.eq(pend), port.payload.eq(cmd),
            ]
            with m.If(port.valid & port.ready):
                m.d.sync += i.eq(i + 1)
                with m.If(first):
                    m.d.sync += off.eq(first_off)
                with m.Else():
                    m.d.sync += off.eq(off + pw[f"PARTIAL_WIDTH_{cube}_MID"] + 1)
                with m.If(last):
                    m.d.sync += pend.eq(0)
            return i, pend, off

        # read cubes (PDP_RDMA's fields), write cubes (PDP's)
        rd_i, rd_pend, rd_off = cube_commands("rd", reader.cmd, R, rb, "SRC", "IN")
        wr_i, wr_pend, wr_off = cube_commands("wr", writer.cmd, P, pb, "DST", "OUT")

        # -- control ----------------------------------------------------------------------------
        running = Signal()
        finish = Signal()
        clear = Signal()
        parts_done = Signal(9)
        m.d.comb += [self.done.eq(finish), self.rdma_done.eq(finish & rdma_active),
                     self.busy.eq(running), pool.clear.eq(clear), packer.clear.eq(clear)]
        with m.If(writer.done):
            m.d.sync += parts_done.eq(parts_done + 1)
        abort_pend = Signal()                    # an sdp_abort not yet taken
        abort_take = Signal()
        with m.If(abort_take):
            m.d.sync += abort_pend.eq(0)
        with m.Elif(self.sdp_abort):
            m.d.sync += abort_pend.eq(1)
        # SDP's output must be this flying layer's input cube
        sc = self.sdp_cube
        in_surf_m1 = surfaces_m1(P.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL)
        if wide_build:                           # two-byte elements: int16 or fp16
            sc_wide = ((sc.precision == INT16) if has16 else Const(0)) | \
                ((sc.precision == FP16) if hasfp else Const(0))
            sdp_surf_m1 = Mux(sc_wide, sc.channel >> (ash - 1), sc.channel >> ash)
        else:
            sdp_surf_m1 = sc.channel >> ash
        fly_mismatch = Signal()
        m.d.comb += fly_mismatch.eq(
            (sc.precision != P.D_DATA_FORMAT.INPUT_DATA) |
            (sc.width != P.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH) |
            (sc.height != P.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT) |
            (sdp_surf_m1 != in_surf_m1))
        fly_bad = Signal()                       # the flying layer failed its own check
        # the SDP's start and its cube's agreement, registered: the SDP's register fields
        # and control through the comparison into this unit's job and DMA enables were one
        # of the whole core's deepest paths (a flying layer starts a cycle later)
        fly_seen = Signal()
        fly_mismatch_r = Signal()
        m.d.sync += [fly_seen.eq(self.sdp_go | sdp_in.valid), fly_mismatch_r.eq(fly_mismatch)]
        draining = Signal()                      # taking and dropping a mismatched SDP output
        go = Signal()                            # start the layer's jobs and DMA commands
        with m.If(go):
            m.d.sync += [job_i.eq(0), rd_i.eq(0), wr_i.eq(0), rd_off.eq(0),
                         wr_off.eq(0), parts_done.eq(0), job_pend.eq(1),
                         wr_pend.eq(1), rd_pend.eq(~flying)]
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                with m.If(start):
                    m.d.comb += [check.start.eq(1), clear.eq(1)]
                    m.next = "CHECK"
            with m.State("CHECK"):
                with m.If(check.done):
                    m.d.sync += fly_bad.eq(~check.ok)
                    with m.If(flying):
                        m.next = "FLY_WAIT"
                    with m.Elif(check.ok):
                        m.d.comb += go.eq(1)
                        m.next = "RUN"
                    with m.Else():
                        m.next = "FINISH"
            with m.State("FLY_WAIT"):
                # no DMA until the SDP runs its layer; an SDP layer that ends without
                # running (rejected) ends this one too, one whose output is not this
                # layer's input is drained
                with m.If(abort_pend | self.sdp_abort):
                    m.d.comb += abort_take.eq(1)
                    m.next = "FINISH"
                with m.Elif(fly_seen & (fly_bad | fly_mismatch_r)):
                    m.next = "DRAIN"
                with m.Elif(fly_seen):
                    m.d.comb += go.eq(1)
                    m.next = "RUN"
            with m.State("DRAIN"):
                m.d.comb += draining.eq(1)
                with m.If(~self.sdp_go & ~self.sdp.valid & ~sdp_in.valid):
                    m.next = "FINISH"
            with m.State("RUN"):
                m.d.comb += running.eq(1)
                # the pool must also have taken all of its input: rows (columns) past the
                # last window are read and consumed after the last output is written
                with m.If(~wr_pend & (parts_done == split + 1) & ~job_pend & pool.idle):
                    m.next = "FINISH"
            with m.State("FINISH"):
                m.d.comb += finish.eq(1)
                m.next = "IDLE"

        # -- input select ---------------------------------------------------------------------
        fly_on = Signal()
        m.d.comb += [fly_on.eq(running & flying),
                     adapter.i.payload.eq(sdp_in.payload),
                     adapter.i.valid.eq(sdp_in.valid & fly_on),
                     sdp_in.ready.eq((adapter.i.ready & fly_on) | draining)]
        with m.If(flying):
            m.d.comb += [pool.i.valid.eq(adapter.o.valid), pool.i.payload.eq(adapter.o.payload),
                         adapter.o.ready.eq(pool.i.ready)]
        with m.Else():
            m.d.comb += [pool.i.valid.eq(splitter.o.valid),
                         pool.i.payload.eq(splitter.o.payload),
                         splitter.o.ready.eq(pool.i.ready)]
            if hasfp:                   # NAN_TO_ZERO: PDP_RDMA's NaNs become +0
                flush = isfp & P.D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO
                for l in range(T):
                    v = splitter.o.payload.data[l]
                    with m.If(flush & _nan16(v)):
                        m.d.comb += pool.i.payload.data[l].eq(0)
        if hasfp:
            self._nan_counters(m, geom, G, clear, go, finish, flying, isfp,
                               splitter.o.valid & splitter.o.ready & ~flying,
                               splitter.o.payload.data,
                               pool.o.valid & pool.o.ready, pool.o.payload.data)

        # -- counters ---------------------------------------------------------------------------
        wstall, rstall = Signal(32), Signal(32)
        with m.If(clear):
            m.d.sync += [wstall.eq(0), rstall.eq(0)]
        with m.Else():
            with m.If(running & writer.stall & P.D_PERF_ENABLE.DMA_EN &
                      (wstall != _COUNTER_MAX)):
                m.d.sync += wstall.eq(wstall + 1)
            with m.If(running & reader.stall & R.D_PERF_ENABLE.DMA_EN &
                      (rstall != _COUNTER_MAX)):
                m.d.sync += rstall.eq(rstall + 1)
        m.d.comb += [self.status.D_PERF_WRITE_STALL.PERF_WRITE_STALL.eq(wstall),
                     self.rdma_status.D_PERF_READ_STALL.PERF_READ_STALL.eq(rstall)]
        return m

    def _nan_counters(self, m, geom, G, start, go, finish, flying, isfp, in_fire, in_data,
                      out_fire, out_data):
        """fp16 builds: the NaN / Inf counters (see the module docstring); ``start`` pulses
        as a layer starts (its check), ``go`` as it starts running, ``finish`` as it ends."""
        T = self.lanes
        A = geom.atom_bytes // 2                 # fp16 channels per atom
        G2 = G // 2                              # transfers per fp16 atom

        def count(name, fire, lanes, pred):
            """``pred`` over the lanes of every fp16 transfer of the layer, less those of
            the last atom's last 8 bytes (channels A - 4 ..)."""
            g = Signal(range(max(G2, 2)), name=f"{name}_g")
            total = Signal(32, name=f"{name}_total")
            tail = Signal(32, name=f"{name}_tail")
            hits = [Signal(name=f"{name}_hit{l}") for l in range(T)]
            m.d.comb += [hits[l].eq(pred(lanes[l])) for l in range(T)]
            in_tail = [g * T + l >= A - 4 for l in range(T)]
            n_all = sum(hits)
            n_tail = sum(h & t for h, t in zip(hits, in_tail))
            with m.If(start):
                m.d.sync += [g.eq(0), total.eq(0), tail.eq(0)]
            with m.Elif(fire & isfp):
                m.d.sync += [total.eq(total + n_all),
                             tail.eq(Mux(g == 0, 0, tail) + n_tail),
                             g.eq(Mux(g == G2 - 1, 0, g + 1))]
            out = Signal(32, name=name)
            m.d.comb += out.eq(total - tail)
            return out

        nan_in = count("nan_in", in_fire, in_data, _nan16)
        inf_in = count("inf_in", in_fire, in_data, _inf16)
        nan_out = count("nan_out", out_fire, out_data, _nan16)
        # NVDLA's two input-count slots: an offline layer stores into ``store``; every layer
        # that runs reports ``report``; each pointer flips when used
        ran = Signal()
        with m.If(start):
            m.d.sync += ran.eq(0)
        with m.If(go):
            m.d.sync += ran.eq(1)
        slots = [[Signal(32, name=f"nan_slot{i}"), Signal(32, name=f"inf_slot{i}")]
                 for i in range(2)]
        store, report = Signal(), Signal()
        rep_nan, rep_inf = Signal(32), Signal(32)
        stored = Signal()
        m.d.comb += stored.eq(~flying & (store == report))
        m.d.comb += [rep_nan.eq(Mux(stored, nan_in, Mux(report, slots[1][0], slots[0][0]))),
                     rep_inf.eq(Mux(stored, inf_in, Mux(report, slots[1][1], slots[0][1])))]
        with m.If(finish & ran):
            m.d.sync += report.eq(~report)
            with m.If(~flying):
                m.d.sync += store.eq(~store)
                for i in range(2):
                    with m.If(store == i):
                        m.d.sync += [slots[i][0].eq(nan_in), slots[i][1].eq(inf_in)]
            m.d.comb += [self.status.D_NAN_INPUT_NUM.NAN_INPUT_NUM.eq(rep_nan),
                         self.status.D_INF_INPUT_NUM.INF_INPUT_NUM.eq(rep_inf),
                         self.status.D_NAN_OUTPUT_NUM.NAN_OUTPUT_NUM.eq(nan_out)]


def _nan16(v):
    """The fp16 code ``v`` (low 16 bits) is a NaN."""
    return (v[10:15] == 0x1F) & v[:10].any()


def _inf16(v):
    """The fp16 code ``v`` (low 16 bits) is an infinity."""
    return (v[10:15] == 0x1F) & ~v[:10].any()
