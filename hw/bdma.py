"""BDMA: the bridge DMA engine (spec: Bridge DMA; register table block BDMA).

Copies memory between the DBBIF (MC) and the SRAMIF (CV) in either direction, or within one
of them. An operation is ``SURF_REPEAT+1`` surfaces of ``LINE_REPEAT+1`` lines of
``LINE.SIZE+1`` 32-byte units with separate source / destination line and surface strides,
i.e. exactly one cube (:func:`hw.mem.dma.cube_layout`): a :class:`hw.mem.cube.CubeReader` reads the
source cube and feeds its atoms straight into a :class:`hw.mem.cube.CubeWriter` writing the
destination cube, so nothing outside the destination lines is written.

Programming (the behaviour of the NVDLA v1 BDMA; the golden model is :mod:`sim.bdma`):

- The block sees the CSB writes through the snoop ports (``csb_we``, ``csb_addr`` word offset
  in the block, ``csb_wdata``), in the cycle the register file stores them; one cycle later
  the stored fields ``s`` hold the new values.
- ``CFG_OP.EN = 1`` pushes the CFG registers into a command FIFO of :data:`FIFO_DEPTH`
  operations (``STATUS.FREE_SLOT`` = free entries; a push into a full FIFO is dropped).
- ``CFG_LAUNCH0.GRP0_LAUNCH = 1`` (``CFG_LAUNCH1.GRP1_LAUNCH``) turns the operations pushed
  since the previous launch into a group 0 (1) batch and sets ``STATUS.GRP0_BUSY``
  (``GRP1_BUSY``). Batches run in launch order, their operations in FIFO order, back to back.
  When the writer has every request of a batch's last operation acknowledged (cubes complete
  in order) the busy bit clears and ``intr`` bit g pulses one cycle later (GLB
  ``BDMA_DONE_g``). A launch with no operation completes at once.
- ``STATUS.IDLE``: nothing queued, launched or moving.
- Stall counters (counting only while ``CFG_STATUS.STALL_COUNT_EN``): per group, cycles the
  read request waits (``valid & ~ready``), charged to the group of the batch being
  dispatched; one write counter, cycles a write request or data word waits. A group's
  counter, and the write counter, restart at the completion of that group (any group, for
  the write counter). ``STATUS_GRPg_*_STALL`` reads 0 from the group's launch and the
  counter's value at its completion.
- Repeat counts are 13 bits wide in the cube command (as on the reference's write side):
  ``LINE_REPEAT.NUMBER`` / ``SURF_REPEAT.NUMBER`` above 8191 are rejected by the golden model
  and truncated here.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from arch.registers import register_map

from .mem.cube import CubeReader, CubeWriter
from .mem.dma import DmaGeometry, DmaReadPort, DmaWritePort
from .regfile import fields_layout

__all__ = ["Bdma", "FIFO_DEPTH", "op_layout"]

FIFO_DEPTH = 20              #: command FIFO entries
REPEAT_BITS = 13             #: repeat counts carried to the cube command
_LAUNCH_DEPTH = 8            #: launches waiting for dispatch
_TAG_DEPTH = 8               #: writer cubes waiting for their completion


def op_layout(geom: DmaGeometry) -> data.StructLayout:
    """One queued operation (byte addresses and strides)."""
    aw = geom.addr_width
    return data.StructLayout({
        "src_addr": aw, "dst_addr": aw, "line_size": 13, "src_ram": 1, "dst_ram": 1,
        "line_repeat": REPEAT_BITS, "surf_repeat": REPEAT_BITS,
        "src_line_stride": 32, "dst_line_stride": 32,
        "src_surf_stride": 32, "dst_surf_stride": 32,
    })


_LAUNCH = data.StructLayout({"group": 1, "count": 5})
_TAG = data.StructLayout({"group": 1, "last": 1, "empty": 1})


class Bdma(wiring.Component):
    """The BDMA unit of a build with ``cfg.bdma``.

    Ports: ``s`` (in) the BDMA register file's stored (rw) fields; ``status`` (out) its ro
    fields; ``csb_we`` / ``csb_addr`` / ``csb_wdata`` (in) the register-write snoop; ``intr``
    (out) one-cycle done pulses of group 0 / 1 (GLB BDMA_DONE_0/1); ``rd_bdma`` / ``wr_bdma``
    the DMA client ports (client name "bdma" of :class:`hw.mem.dmaif.DmaInterfaces`).
    """

    def __init__(self, cfg):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._block = block = register_map(cfg)["BDMA"]
        super().__init__({
            "s": In(fields_layout(block.s_registers, ("rw",))),
            "status": Out(fields_layout(block.s_registers, ("ro",))),
            "csb_we": In(1), "csb_addr": In(10), "csb_wdata": In(32),
            "intr": Out(2),
            "rd_bdma": Out(DmaReadPort(geom)),
            "wr_bdma": Out(DmaWritePort(geom)),
        })

    def elaborate(self, platform):
        m = Module()
        geom, block, s = self._geom, self._block, self.s
        aw = geom.addr_width

        # -- CSB snoop: the register file stores the write at this edge; act a cycle later --
        def word(reg):
            return block[reg].offset >> 2

        def snoop(reg):
            return self.csb_we & (self.csb_addr == word(reg)) & self.csb_wdata[0]

        op_trig = Signal()
        launch_trig = Signal(2)
        m.d.sync += [op_trig.eq(snoop("CFG_OP")),
                     launch_trig.eq(Cat(snoop("CFG_LAUNCH0"), snoop("CFG_LAUNCH1")))]

        # -- command FIFO -------------------------------------------------------------------
        lay = op_layout(geom)
        m.submodules.ops = ops = SyncFIFOBuffered(width=lay.size, depth=FIFO_DEPTH)
        new = Signal(lay)

        def addr(reg):
            return Cat(Const(0, 5), s[f"{reg}_LOW"].V32, s[f"{reg}_HIGH"].V8)[:aw]

        m.d.comb += [
            new.src_addr.eq(addr("CFG_SRC_ADDR")), new.dst_addr.eq(addr("CFG_DST_ADDR")),
            new.line_size.eq(s.CFG_LINE.SIZE),
            new.src_ram.eq(s.CFG_CMD.SRC_RAM_TYPE), new.dst_ram.eq(s.CFG_CMD.DST_RAM_TYPE),
            new.line_repeat.eq(s.CFG_LINE_REPEAT.NUMBER[:REPEAT_BITS]),
            new.surf_repeat.eq(s.CFG_SURF_REPEAT.NUMBER[:REPEAT_BITS]),
            new.src_line_stride.eq(Cat(Const(0, 5), s.CFG_SRC_LINE.STRIDE)),
            new.dst_line_stride.eq(Cat(Const(0, 5), s.CFG_DST_LINE.STRIDE)),
            new.src_surf_stride.eq(Cat(Const(0, 5), s.CFG_SRC_SURF.STRIDE)),
            new.dst_surf_stride.eq(Cat(Const(0, 5), s.CFG_DST_SURF.STRIDE)),
            ops.w_data.eq(new), ops.w_en.eq(op_trig),
        ]
        pushed = op_trig & ops.w_rdy

        # -- launches: operations gathered since the last launch become a batch --------------
        gathered = Signal(5)
        m.submodules.launches = launches = SyncFIFOBuffered(width=_LAUNCH.size,
                                                            depth=_LAUNCH_DEPTH)
        launch = launch_trig.any()
        m.d.comb += [
            launches.w_en.eq(launch),
            launches.w_data.eq(Cat(launch_trig[1], gathered)),
        ]
        with m.If(launch):
            m.d.sync += gathered.eq(pushed)
        with m.Elif(pushed):
            m.d.sync += gathered.eq(gathered + 1)

        # -- dispatch: each operation of the head batch becomes a reader and a writer cube ----
        m.submodules.reader = reader = CubeReader(geom)
        m.submodules.writer = writer = CubeWriter(geom)
        wiring.connect(m, wiring.flipped(self.rd_bdma), reader.dma)
        wiring.connect(m, wiring.flipped(self.wr_bdma), writer.dma)
        wiring.connect(m, reader.data, writer.data)

        m.submodules.tags = tags = SyncFIFOBuffered(width=_TAG.size, depth=_TAG_DEPTH)
        head = Signal(lay)
        m.d.comb += head.eq(ops.r_data)
        batch = Signal(_LAUNCH)
        m.d.comb += batch.eq(launches.r_data)
        active = Signal()                    # a batch is being dispatched
        group = Signal()                     # its group (charged for read stalls)
        left = Signal(5)                     # its operations not yet dispatched
        rd_sent = Signal()
        wr_sent = Signal()
        unit_shift = 5 - geom.atom_shift     # 32-byte units -> atoms

        def cube(cmd, base, ram, line_stride, surf_stride):
            return [
                cmd.base.eq(base), cmd.ram_type.eq(ram),
                cmd.line_atoms.eq(((head.line_size + 1) << unit_shift) - 1),
                cmd.lines.eq(head.line_repeat), cmd.surfaces.eq(head.surf_repeat),
                cmd.batches.eq(0), cmd.line_stride.eq(line_stride),
                cmd.surface_stride.eq(surf_stride), cmd.batch_stride.eq(0),
            ]

        m.d.comb += cube(reader.cmd.p, head.src_addr, head.src_ram, head.src_line_stride,
                         head.src_surf_stride)
        m.d.comb += cube(writer.cmd.p, head.dst_addr, head.dst_ram, head.dst_line_stride,
                         head.dst_surf_stride)
        issuing = active & (left != 0) & ops.r_rdy
        m.d.comb += [
            reader.cmd.valid.eq(issuing & ~rd_sent),
            writer.cmd.valid.eq(issuing & ~wr_sent & tags.w_rdy),
        ]
        rd_done = rd_sent | reader.cmd.ready
        wr_done = wr_sent | (writer.cmd.ready & tags.w_rdy)
        tag_new = Signal(_TAG)
        m.d.comb += [tag_new.group.eq(group), tag_new.last.eq(left == 1), tag_new.empty.eq(0)]
        empty_batch = ~active & launches.r_rdy & (batch.count == 0)
        with m.If(empty_batch):
            m.d.comb += [tag_new.group.eq(batch.group), tag_new.last.eq(1),
                         tag_new.empty.eq(1)]
        m.d.comb += [
            tags.w_data.eq(tag_new),
            tags.w_en.eq((writer.cmd.valid & writer.cmd.ready) | (empty_batch & tags.w_rdy)),
        ]
        with m.If(issuing):
            with m.If(rd_done & wr_done):
                m.d.comb += ops.r_en.eq(1)
                m.d.sync += [rd_sent.eq(0), wr_sent.eq(0), left.eq(left - 1)]
                with m.If(left == 1):
                    m.d.sync += active.eq(0)
            with m.Else():
                m.d.sync += [rd_sent.eq(rd_done), wr_sent.eq(wr_done)]
        with m.If(~active & launches.r_rdy & ((batch.count != 0) | tags.w_rdy)):
            m.d.comb += launches.r_en.eq(1)
            m.d.sync += [group.eq(batch.group), left.eq(batch.count),
                         active.eq(batch.count != 0)]

        # -- completion: writer cubes complete in order; the batch's last one ends the group --
        credits = Signal(range(_TAG_DEPTH + 2))
        avail = credits + writer.done
        tag = Signal(_TAG)
        m.d.comb += tag.eq(tags.r_data)
        retire = tags.r_rdy & (tag.empty | (avail != 0))
        m.d.comb += tags.r_en.eq(retire)
        m.d.sync += credits.eq(avail - (retire & ~tag.empty))
        grp_done = Signal(2)
        m.d.comb += grp_done.eq(Mux(retire & tag.last, Mux(tag.group, 0b10, 0b01), 0))
        m.d.sync += self.intr.eq(grp_done)

        # -- status ---------------------------------------------------------------------------
        st = self.status.STATUS
        busy = Signal(2)
        for g in range(2):
            with m.If(launch_trig[g]):
                m.d.sync += busy[g].eq(1)
            with m.Elif(grp_done[g]):
                m.d.sync += busy[g].eq(0)
        m.d.comb += [
            st.FREE_SLOT.eq(FIFO_DEPTH - ops.level),
            st.GRP0_BUSY.eq(busy[0]), st.GRP1_BUSY.eq(busy[1]),
            st.IDLE.eq(~op_trig & ~launch & (ops.level == 0) & (launches.level == 0)
                       & ~active & (tags.level == 0) & ~reader.busy & ~writer.busy),
        ]

        # -- stall counters ---------------------------------------------------------------------
        count_en = s.CFG_STATUS.STALL_COUNT_EN
        rq, wq, wd = self.rd_bdma.req, self.wr_bdma.req, self.wr_bdma.dat
        rd_stall = rq.valid & ~rq.ready
        wr_stall = (wq.valid & ~wq.ready) | (wd.valid & ~wd.ready)
        rd_cnt = [Signal(32, name=f"rd_stall_{g}") for g in range(2)]
        wr_cnt = Signal(32)
        with m.If(count_en):
            for g in range(2):
                with m.If(grp_done[g]):
                    m.d.sync += rd_cnt[g].eq(0)
                with m.Elif(rd_stall & (group == g)):
                    m.d.sync += rd_cnt[g].eq(rd_cnt[g] + 1)
            with m.If(grp_done.any()):
                m.d.sync += wr_cnt.eq(0)
            with m.Elif(wr_stall):
                m.d.sync += wr_cnt.eq(wr_cnt + 1)
        for g in range(2):
            rd_status = self.status[f"STATUS_GRP{g}_READ_STALL"].COUNT
            wr_status = self.status[f"STATUS_GRP{g}_WRITE_STALL"].COUNT
            rd_keep, wr_keep = Signal(32, name=f"rd_status_{g}"), Signal(32, name=f"wr_status_{g}")
            m.d.comb += [rd_status.eq(rd_keep), wr_status.eq(wr_keep)]
            with m.If(launch_trig[g]):
                m.d.sync += [rd_keep.eq(0), wr_keep.eq(0)]
            with m.Elif(grp_done[g]):
                m.d.sync += [rd_keep.eq(rd_cnt[g]), wr_keep.eq(wr_cnt)]
        return m
