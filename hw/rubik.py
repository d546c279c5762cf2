"""Rubik (RBK): the data reshape engine (spec: Data Reshape Engine; golden model
:mod:`sim.rubik`, whose docstring defines the three modes bit-exactly).

A layer starts when the RBK consumer group is enabled (``op_en``). A few cycles of checks
(the rules of :mod:`sim.rubik.program`, evaluated on the register fields) decide whether the
program can run; a rejected program finishes at once (``done``, GLB ``RUBIK_DONE_STATUS<g>``)
without any DMA request. An accepted one runs a sequencer over (surface ``s``, input line
``h``) that issues cube commands to a :class:`hw.mem.cube.CubeReader` and a
:class:`hw.mem.cube.CubeWriter` (DMA client "rbk"; MC or CV per side as the RAM types say):

- CONTRACT: per surface one read cube (input lines ``h`` x deconvolution steps ``g`` at
  ``CONTRACT_STRIDE_0`` x ``W`` atoms); per (s, h) one write cube of single-atom lines
  (batches ``dy`` at the output line stride, surfaces ``dx`` one atom apart, lines ``w`` at
  ``sx`` atoms): the atoms pass straight through to their strided output positions.
- SPLIT: one read cube of the whole feature cube; per (s, h) one write cube of single-atom
  lines (surfaces: chunks ``j`` of ``A / b`` columns, lines: the surface's planes). A
  transpose buffer of ``A / b`` atoms takes the chunk's atoms (fewer at a line end: the
  missing columns are the zero padding of the plane line) and gives one atom per plane.
- MERGE: the inverse: per (s, h) one read cube of single-atom lines (chunks x planes), the
  transpose buffer gives the chunk's ``A / b`` feature atoms (missing planes: zero channel
  padding), one write cube of the whole output feature cube.

The layer ends when every command is issued and the reader and writer are idle (every write
acknowledged). ``D_PERF_READ_STALL`` / ``D_PERF_WRITE_STALL`` count the cycles a read / write
request waited for the memory interface while ``D_PERF_ENABLE.PERF_EN`` (saturating; the
golden model, whose memories never stall, writes 0).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from arch.registers import register_map
from arch.rubik import (CONTRACT, CONTRACT_WRITE_MAX_SX, MAX_CONTRACT_WRITE, MERGE, SPLIT,
                        build_precisions)

from .mem.cube import AtomPacker, AtomSerializer, CubeReader, CubeWriter, atom_layout
from .mem.dma import DmaGeometry, DmaReadPort, DmaWritePort
from .mem.dma_fields import byte_value
from .regfile import fields_layout

__all__ = ["Rubik", "RubikCheck", "CHECK_LATENCY"]

_COUNTER_MAX = (1 << 32) - 1
CHECK_LATENCY = 3                #: register stages of the program check


def _program(m, cfg, geom, blk, R):
    """The program's fields and the values derived from them (comb logic in ``m``), as a
    namespace (counts minus one where the registers hold them so)."""
    aw, ash, A = geom.addr_width, geom.atom_shift, geom.atom_bytes
    precs = build_precisions(cfg)
    has16 = bool(precs & {1, 2})

    def bv(reg, fld):
        return byte_value(R, blk, reg, fld)

    # -- the program's fields ---------------------------------------------------------------
    mode = R.D_MISC_CFG.RUBIK_MODE
    prec = R.D_MISC_CFG.IN_PRECISION
    contract, split, merge = mode == CONTRACT, mode == SPLIT, mode == MERGE
    in_ram = R.D_DAIN_RAM_TYPE.DATAIN_RAM_TYPE
    out_ram = R.D_DAOUT_RAM_TYPE.DATAOUT_RAM_TYPE
    Wm1 = R.D_DATAIN_SIZE_0.DATAIN_WIDTH
    Hm1 = R.D_DATAIN_SIZE_0.DATAIN_HEIGHT
    cin_m1 = R.D_DATAIN_SIZE_1.DATAIN_CHANNEL
    cout_m1 = R.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL
    sxm1 = R.D_DECONV_STRIDE.DECONV_X_STRIDE
    sym1 = R.D_DECONV_STRIDE.DECONV_Y_STRIDE
    src = Cat(bv("D_DAIN_ADDR_LOW", "DAIN_ADDR_LOW"), R.D_DAIN_ADDR_HIGH.DAIN_ADDR_HIGH)
    dst = Cat(bv("D_DAOUT_ADDR_LOW", "DAOUT_ADDR_LOW"), R.D_DAOUT_ADDR_HIGH.DAOUT_ADDR_HIGH)
    iline = bv("D_DAIN_LINE_STRIDE", "DAIN_LINE_STRIDE")
    isurf = bv("D_DAIN_SURF_STRIDE", "DAIN_SURF_STRIDE")
    iplanar = bv("D_DAIN_PLANAR_STRIDE", "DAIN_PLANAR_STRIDE")
    cs0 = bv("D_CONTRACT_STRIDE_0", "CONTRACT_STRIDE_0")
    cs1 = bv("D_CONTRACT_STRIDE_1", "CONTRACT_STRIDE_1")
    oline = bv("D_DAOUT_LINE_STRIDE", "DAOUT_LINE_STRIDE")
    osurf = bv("D_DAOUT_SURF_STRIDE", "DAOUT_SURF_STRIDE")
    oplanar = bv("D_DAOUT_PLANAR_STRIDE", "DAOUT_PLANAR_STRIDE")

    wide = Signal()                       # 2-byte elements (int16 / fp16)
    if has16:
        m.d.comb += wide.eq(prec != 0)
    per_m1 = Signal(range(A))             # channels per atom - 1
    m.d.comb += per_m1.eq(Mux(wide, A // 2 - 1, A - 1))

    def per_shift(v):
        """``v >> log2(A / b)``"""
        return Mux(wide, v >> (ash - 1), v >> ash) if has16 else v >> ash

    def per_mul(v):
        """``v * (A / b)``"""
        return Mux(wide, v << (ash - 1), v << ash) if has16 else v << ash

    W, H = Signal(14), Signal(14)
    sx, sy = Signal(6), Signal(6)
    Cm1, Sm1, nch_m1 = Signal(13), Signal(13), Signal(13)
    m.d.comb += [W.eq(Wm1 + 1), H.eq(Hm1 + 1), sx.eq(sxm1 + 1), sy.eq(sym1 + 1),
                 Cm1.eq(Mux(contract, cout_m1, cin_m1)),
                 Sm1.eq(per_shift(Cm1)),            # surfaces - 1
                 nch_m1.eq(per_shift(Wm1))]          # chunks of A / b columns - 1
    plb = Signal(20)                                 # plane line bytes (whole atoms)
    m.d.comb += plb.eq((nch_m1 + 1) << ash)

    g_m1, lines_m1, line_bytes = Signal(11), Signal(19), Signal(24)
    m.d.comb += [
        g_m1.eq(sx * sy - 1),                            # deconvolution steps - 1
        lines_m1.eq(Mux(contract, H * sy - 1, Hm1)),      # output lines - 1
        line_bytes.eq(Mux(contract, (W * sx) << ash, Mux(split, plb, W << ash))),
    ]
    return SimpleNamespace(**{k: v for k, v in locals().items() if k not in ("m", "bv")})


class RubikCheck(wiring.Component):
    """The program check: ``reject`` is high when the RBK group ``regs`` breaks a rule of
    :mod:`sim.rubik.program` (the golden model's :func:`sim.rubik.program.decode` raises),
    valid :data:`CHECK_LATENCY` cycles after ``regs`` settle (register stages: products,
    extents, rules)."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._geom = DmaGeometry(cfg)
        self._block = block = register_map(cfg)["RBK"]
        super().__init__({"regs": In(fields_layout(block.d_registers, ("rw",))),
                          "reject": Out(1)})

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        P = _program(m, cfg, self._geom, self._block, self.regs)

        def stage(expr, name):
            sig = Signal(expr.shape(), name=name)
            m.d.sync += sig.eq(expr)
            return sig

        WA = P.W << P.ash
        # stage 1: products
        p_isurf = stage(P.Sm1 * P.isurf, "ck_isurf")
        p_iline = stage(P.Hm1 * P.iline, "ck_iline")
        p_cs0 = stage(P.g_m1 * P.cs0, "ck_cs0")
        p_iplanar = stage(P.Cm1 * P.iplanar, "ck_iplanar")
        p_oline = stage(P.lines_m1 * P.oline, "ck_oline")
        p_oplanar = stage(P.Cm1 * P.oplanar, "ck_oplanar")
        p_osurf = stage(P.Sm1 * P.osurf, "ck_osurf")
        sy_oline = stage(P.sy * P.oline, "ck_sy_oline")
        w_sx = stage(P.W * P.sx, "ck_w_sx")
        lb1 = stage(P.line_bytes, "ck_line_bytes")
        # stage 2: extents (bytes past the base address) and end addresses
        src_ext = Mux(P.contract, p_isurf + p_iline + p_cs0 + WA,
                      Mux(P.split, p_isurf + p_iline + WA, p_iplanar + p_iline + P.plb))
        one = p_oline + lb1                               # one output surface / plane
        dst_ext = Mux(P.split, p_oplanar + one, p_osurf + one)
        src_hi = stage(P.src + src_ext, "ck_src_hi")
        dst_hi = stage(P.dst + dst_ext, "ck_dst_hi")
        one2 = stage(one, "ck_one")
        sy_oline2 = stage(sy_oline, "ck_sy_oline2")
        w_sx2 = stage(w_sx, "ck_w_sx2")
        lb2 = stage(lb1, "ck_line_bytes2")
        # stage 3: the rules
        limit = 1 << P.aw
        bad_prec = Const(1)
        for p in P.precs:
            bad_prec = bad_prec & (P.prec != p)
        in_ram, out_ram = P.in_ram, P.out_ram
        bad_ram = Const(0) if cfg.sramif else ((in_ram == 0) | (out_ram == 0))
        rules = [
            P.mode == 3,
            bad_prec,
            bad_ram,
            (P.split | P.merge) & (P.cout_m1 != P.cin_m1),
            P.contract & (P.cs1 != sy_oline2),
            P.contract & (P.sx <= CONTRACT_WRITE_MAX_SX) & (w_sx2 > MAX_CONTRACT_WRITE),
            (P.lines_m1 != 0) & (P.oline < lb2),
            Mux(P.split, (P.Cm1 != 0) & (P.oplanar < one2), (P.Sm1 != 0) & (P.osurf < one2)),
            (src_hi > limit) | (dst_hi > limit),
            (in_ram == out_ram) & (P.src < dst_hi) & (P.dst < src_hi),
        ]
        m.d.sync += self.reject.eq(Cat(*rules).any())
        return m


class Rubik(wiring.Component):
    """The Rubik unit of a build with ``cfg.rubik``.

    Ports: ``regs`` (in) the RBK consumer group's fields, ``op_en`` (in) it holds an enabled
    layer, ``done`` (out) one-cycle pulse when the layer ends, ``status`` (out) its ro fields
    (the stall counters), ``rd_rbk`` / ``wr_rbk`` the DMA client ports, ``busy`` (out) a layer
    is being checked or run.
    """

    def __init__(self, cfg):
        if not cfg.rubik:
            raise ValueError(f"{cfg.name}: the build has no Rubik (rubik=False)")
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._block = block = register_map(cfg)["RBK"]
        super().__init__({
            "regs": In(fields_layout(block.d_registers, ("rw",))),
            "op_en": In(1), "done": Out(1),
            "status": Out(fields_layout(block.d_registers, ("ro",))),
            "rd_rbk": Out(DmaReadPort(geom)),
            "wr_rbk": Out(DmaWritePort(geom)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, geom, R = self._cfg, self._geom, self.regs
        aw, ash, A = geom.addr_width, geom.atom_shift, geom.atom_bytes
        P = _program(m, cfg, geom, self._block, R)
        has16, wide, per_m1, per_mul = P.has16, P.wide, P.per_m1, P.per_mul
        contract, split, merge = P.contract, P.split, P.merge
        in_ram, out_ram, Wm1, Hm1, sxm1, sym1 = P.in_ram, P.out_ram, P.Wm1, P.Hm1, P.sxm1, \
            P.sym1
        src, dst, iline, isurf, iplanar, cs0, cs1 = P.src, P.dst, P.iline, P.isurf, \
            P.iplanar, P.cs0, P.cs1
        oline, osurf, oplanar, sx = P.oline, P.osurf, P.oplanar, P.sx
        Cm1, Sm1, nch_m1, g_m1 = P.Cm1, P.Sm1, P.nch_m1, P.g_m1

        m.submodules.check = check = RubikCheck(cfg)
        m.d.comb += check.regs.eq(R)
        reject = check.reject

        # -- reader -> serializer -> (transpose) -> packer -> writer ---------------------------
        m.submodules.reader = reader = CubeReader(geom)
        m.submodules.writer = writer = CubeWriter(geom)
        m.submodules.ser = ser = AtomSerializer(geom)
        m.submodules.pack = pack = AtomPacker(geom)
        wiring.connect(m, wiring.flipped(self.rd_rbk), reader.dma)
        wiring.connect(m, wiring.flipped(self.wr_rbk), writer.dma)
        wiring.connect(m, reader.data, ser.i)
        wiring.connect(m, pack.o, writer.data)

        # -- control ------------------------------------------------------------------------
        go = Signal()                          # an accepted layer starts
        clear = Signal()
        running = Signal()
        issuing = Signal()
        finish = Signal()
        issued = Signal()                      # every command issued
        ck = Signal(range(CHECK_LATENCY + 1))
        per_max = A                              # transpose buffer atoms (int8 elements)
        cnt = Signal(range(per_max))             # atoms taken into the buffer
        emit = Signal()                          # the buffer is giving its atoms
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.op_en):
                    m.d.comb += clear.eq(1)
                    m.d.sync += ck.eq(0)
                    m.next = "CHECK"
            with m.State("CHECK"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += ck.eq(ck + 1)
                with m.If(ck == CHECK_LATENCY):
                    with m.If(reject):
                        m.next = "FINISH"
                    with m.Else():
                        m.d.comb += go.eq(1)
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [running.eq(1), self.busy.eq(1)]
                with m.If(issued & ~reader.busy & ~writer.busy & ~ser.o.valid & ~pack.o.valid
                          & ~emit & (cnt == 0)):
                    m.next = "FINISH"
            with m.State("FINISH"):
                m.d.comb += [finish.eq(1), self.busy.eq(1)]
                m.next = "IDLE"
        m.d.comb += [self.done.eq(finish), issuing.eq(running & ~issued)]

        # -- sequencer over (s, h) ------------------------------------------------------------
        s, h = Signal(13), Signal(13)
        in_sb, in_lo, out_sb, out_lo = (Signal(aw, name=n) for n in
                                        ("in_sbase", "in_loff", "out_sbase", "out_loff"))
        rd_sent, wr_sent = Signal(), Signal()
        last_s, last_h = s == Sm1, h == Hm1
        nk_m1 = Signal(range(A))               # planes of surface s - 1
        m.d.comb += nk_m1.eq(Mux(last_s, Cm1 & per_m1, per_m1))
        rd_need = Mux(contract, h == 0, Mux(split, (s == 0) & (h == 0), 1))
        wr_need = Mux(merge, (s == 0) & (h == 0), 1)
        src_a, dst_a = src[:aw], dst[:aw]
        rc, wc = reader.cmd.payload, writer.cmd.payload
        m.d.comb += [rc.ram_type.eq(in_ram), wc.ram_type.eq(out_ram)]
        with m.If(contract):
            m.d.comb += [
                rc.base.eq(src_a + in_sb), rc.line_atoms.eq(Wm1),
                rc.lines.eq(g_m1), rc.line_stride.eq(cs0),
                rc.surfaces.eq(Hm1), rc.surface_stride.eq(iline),
                wc.base.eq(dst_a + out_sb + out_lo), wc.line_atoms.eq(0),
                wc.lines.eq(Wm1), wc.line_stride.eq(sx << ash),
                wc.surfaces.eq(sxm1), wc.surface_stride.eq(A),
                wc.batches.eq(sym1), wc.batch_stride.eq(oline),
            ]
        with m.Elif(split):
            m.d.comb += [
                rc.base.eq(src_a), rc.line_atoms.eq(Wm1),
                rc.lines.eq(Hm1), rc.line_stride.eq(iline),
                rc.surfaces.eq(Sm1), rc.surface_stride.eq(isurf),
                wc.base.eq(dst_a + out_sb + out_lo), wc.line_atoms.eq(0),
                wc.lines.eq(nk_m1), wc.line_stride.eq(oplanar),
                wc.surfaces.eq(nch_m1), wc.surface_stride.eq(A),
            ]
        with m.Else():
            m.d.comb += [
                rc.base.eq(src_a + in_sb + in_lo), rc.line_atoms.eq(0),
                rc.lines.eq(nk_m1), rc.line_stride.eq(iplanar),
                rc.surfaces.eq(nch_m1), rc.surface_stride.eq(A),
                wc.base.eq(dst_a), wc.line_atoms.eq(Wm1),
                wc.lines.eq(Hm1), wc.line_stride.eq(oline),
                wc.surfaces.eq(Sm1), wc.surface_stride.eq(osurf),
            ]
        m.d.comb += [reader.cmd.valid.eq(issuing & rd_need & ~rd_sent),
                     writer.cmd.valid.eq(issuing & wr_need & ~wr_sent)]
        rd_ok = ~rd_need | rd_sent | reader.cmd.ready
        wr_ok = ~wr_need | wr_sent | writer.cmd.ready
        in_sstep = Mux(merge, per_mul(iplanar), isurf)
        out_sstep = Mux(split, per_mul(oplanar), osurf)
        out_lstep = Mux(contract, cs1, oline)
        with m.If(go):
            m.d.sync += [s.eq(0), h.eq(0), in_sb.eq(0), in_lo.eq(0), out_sb.eq(0),
                         out_lo.eq(0), rd_sent.eq(0), wr_sent.eq(0), issued.eq(0)]
        with m.Elif(issuing):
            with m.If(rd_ok & wr_ok):
                m.d.sync += [rd_sent.eq(0), wr_sent.eq(0)]
                with m.If(last_h):
                    m.d.sync += [h.eq(0), in_lo.eq(0), out_lo.eq(0), s.eq(s + 1),
                                 in_sb.eq(in_sb + in_sstep), out_sb.eq(out_sb + out_sstep)]
                    with m.If(last_s):
                        m.d.sync += issued.eq(1)
                with m.Else():
                    m.d.sync += [h.eq(h + 1), in_lo.eq(in_lo + iline),
                                 out_lo.eq(out_lo + out_lstep)]
            with m.Else():
                m.d.sync += [rd_sent.eq(rd_sent | (reader.cmd.valid & reader.cmd.ready)),
                             wr_sent.eq(wr_sent | (writer.cmd.valid & writer.cmd.ready))]

        # -- transpose buffer (split / merge) ---------------------------------------------------
        eb = 8                                   # element bits (int8); 16 with ``wide``
        buf = [Signal(geom.atom_bits, name=f"xp_{i}") for i in range(per_max)]
        t_s, t_h = Signal(13), Signal(13)
        rem_m1 = Signal(13)                      # columns left in the line from chunk j - 1
        o = Signal(range(per_max))
        last_ts = t_s == Sm1
        tnk_m1 = Mux(last_ts, Cm1 & per_m1, per_m1)
        last_j = rem_m1 <= per_m1
        nw_m1 = Mux(last_j, rem_m1, per_m1)
        n_in_m1 = Signal(range(per_max))
        n_out_m1 = Signal(range(per_max))
        m.d.comb += [n_in_m1.eq(Mux(split, nw_m1, tnk_m1)),
                     n_out_m1.eq(Mux(split, tnk_m1, nw_m1))]
        out8 = Cat(*[Mux(i <= n_in_m1, buf[i].word_select(o, eb), 0) for i in range(per_max)])
        xp_data = Signal(geom.atom_bits)
        if has16:
            out16 = Cat(*[Mux(i <= n_in_m1, buf[i].word_select(o, 2 * eb), 0)
                          for i in range(per_max // 2)])
            m.d.comb += xp_data.eq(Mux(wide, out16, out8))
        else:
            m.d.comb += xp_data.eq(out8)

        xp_in_ready = Signal()
        xp_valid = Signal()
        m.d.comb += [xp_in_ready.eq(running & ~contract & ~emit), xp_valid.eq(emit)]
        with m.If(go):
            m.d.sync += [t_s.eq(0), t_h.eq(0), rem_m1.eq(Wm1), cnt.eq(0), o.eq(0), emit.eq(0)]
        with m.Else():
            with m.If(xp_in_ready & ser.o.valid):
                for i in range(per_max):
                    with m.If(cnt == i):
                        m.d.sync += buf[i].eq(ser.o.payload.data)
                with m.If(cnt == n_in_m1):
                    m.d.sync += [cnt.eq(0), emit.eq(1), o.eq(0)]
                with m.Else():
                    m.d.sync += cnt.eq(cnt + 1)
            with m.If(emit & pack.i.ready):
                with m.If(o == n_out_m1):
                    m.d.sync += emit.eq(0)
                    with m.If(last_j):
                        m.d.sync += rem_m1.eq(Wm1)
                        with m.If(t_h == Hm1):
                            m.d.sync += [t_h.eq(0), t_s.eq(t_s + 1)]
                        with m.Else():
                            m.d.sync += t_h.eq(t_h + 1)
                    with m.Else():
                        m.d.sync += rem_m1.eq(rem_m1 - per_m1 - 1)
                with m.Else():
                    m.d.sync += o.eq(o + 1)

        # -- packer input: contract atoms pass straight through ------------------------------
        with m.If(contract):
            m.d.comb += [pack.i.valid.eq(running & ser.o.valid),
                         pack.i.payload.data.eq(ser.o.payload.data),
                         pack.i.payload.last_line.eq(1),
                         pack.i.payload.last.eq(ser.o.payload.last),
                         ser.o.ready.eq(running & pack.i.ready)]
        with m.Else():
            m.d.comb += [pack.i.valid.eq(xp_valid),
                         pack.i.payload.data.eq(xp_data),
                         pack.i.payload.last_line.eq(split | (last_j & (o == n_out_m1))),
                         pack.i.payload.last.eq(0),
                         ser.o.ready.eq(xp_in_ready)]

        # -- stall counters -------------------------------------------------------------------
        rstall, wstall = Signal(32), Signal(32)
        perf = R.D_PERF_ENABLE.PERF_EN
        with m.If(clear):
            m.d.sync += [rstall.eq(0), wstall.eq(0)]
        with m.Else():
            with m.If(running & perf & reader.stall & (rstall != _COUNTER_MAX)):
                m.d.sync += rstall.eq(rstall + 1)
            with m.If(running & perf & writer.stall & (wstall != _COUNTER_MAX)):
                m.d.sync += wstall.eq(wstall + 1)
        m.d.comb += [self.status.D_PERF_READ_STALL.RD_STALL_CNT.eq(rstall),
                     self.status.D_PERF_WRITE_STALL.WR_STALL_CNT.eq(wstall)]
        return m
