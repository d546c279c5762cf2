"""The CDMA's image path (``DATAIN_FORMAT=PIXEL``; golden model :mod:`sim.conv.image`).

For every image line ``y`` (one CBUF slice of ``ENTRY_PER_SLICE + 1`` entries from entry
``y * (ENTRIES + 1)``; with two-column entries, ``cbuf_entry_width`` = 2 x the bank width, the
slice is twice as many bank rows and the line's bytes run through them in order, as
:mod:`hw.conv.common` places entry ``e`` in rows ``2e`` and ``2e + 1``) the CDMA writes the
padded line ``PAD_LEFT + W + PAD_RIGHT`` pixels of ``C`` elements back to back: pixel
``i`` of the padded line at byte ``i * C`` of the slice, the left / right padding pixels
``D_ZERO_PADDING_VALUE``'s low byte on every channel. int16 and fp16 processing (builds with
the 2-byte element path, :func:`hw.conv.common.conv_wide`; ``PROC_PRECISION`` != INT8):
elements of 2 bytes, little endian, pixel ``i`` at byte ``2 * i * C``, the padding pixels
the whole 16-bit ``PAD_VALUE``; the convertor gives int16 or the fp16 code of its 17-bit
intermediate (:mod:`hw.conv.convertor`), fp16 pixels (the ``_F`` formats, fp16 processing
only) pass unconverted (the Cdma flushes their NaNs with ``D_NAN_FLUSH_TO_ZERO`` and counts
their NaNs and infinities from each line's first ROI pixel on: ``lead``).

A line is one *pass* per plane: plane 0 (and, for semi-planar formats, plane 1 right after it)
is fetched as one DMA request of whole atoms from the atom holding its first ROI pixel.
Each pass writes the whole padded line, but only the byte lanes of its own components (Y, or
U and V; packed formats: all), so two passes complete a semi-planar line.

Per cycle a pass takes ``G`` pixel slots of the current atom (``G``: a power of two, at most
the atom's pixels and ``BW // C``, so a full group fills up to one CBUF entry), extracts and
extends every component (8-bit and 16-bit containers, 10- and 2-bit fields left-aligned; sign
extension with ``PIXEL_SIGN_OVERRIDE`` or without the convertor), converts it
(``saturate(round((d - o) * CVT_SCALE / 2^CVT_TRUNCATE))``, ``o`` the channel's
``D_MEAN_GLOBAL`` with ``MEAN_FORMAT``, else ``CVT_OFFSET``; ties away from zero) and appends
the group's bytes to the line: a packer turns them into masked CBUF entry writes. So packed
formats run at one atom per cycle (the DBBIF rate of a 64-bit bus with 8-byte atoms); a
semi-planar line takes one pass per plane.

Ports: ``regs`` (the CDMA's latched fields), ``start`` (pulse: fetch the image), ``cmd``
(cube commands to the data reader), ``atoms`` (the data reader's atoms, one per transfer),
``wr`` (entry writes: ``addr`` relative to the data region start, ``data``, ``mask``,
``slice_end`` on a line's final write, ``last`` on the image's), ``busy``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from arch.registers import register_map

from ..mem import dma_fields
from ..mem.cube import atom_layout
from ..mem.dma import DmaGeometry, cube_layout
from ..regfile import fields_layout
from .common import conv_fp16, conv_wide
from .convertor import Convertor, convertor_port
from .image import image_formats

__all__ = ["ImageFetch", "image_write_layout"]

_FIFO = 8                       #: entry writes buffered after the packer


def image_write_layout(cfg) -> data.StructLayout:
    return data.StructLayout({"addr": range(cfg.cbuf_banks * cfg.cbuf_bank_depth),
                              "data": cfg.cbuf_bank_width * 8, "mask": cfg.cbuf_bank_width,
                              "slice_end": 1, "last": 1})


def _pow2_floor(n):
    return 1 << (max(n, 1).bit_length() - 1)


class ImageFetch(wiring.Component):
    """``ImageFetch(cfg)``: the image path of the CDMA (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._block = blk = register_map(cfg)["CDMA"]
        super().__init__({
            "regs": In(fields_layout(blk.d_registers, ("rw",))),
            "start": In(1),
            "cmd": Out(stream.Signature(cube_layout(geom))),
            "atoms": In(stream.Signature(atom_layout(geom))),
            "wr": Out(stream.Signature(image_write_layout(cfg))),
            "busy": Out(1),
            # the CDMA's convertor, shared with the feature path (hw.conv.convertor)
            "cvt": Out(convertor_port(cfg.cbuf_bank_width)),
            # builds with fp16: leading bytes of the atom being taken before the line's
            # first ROI pixel (the Cdma's fp16 NaN / infinity counters skip them, as NVDLA's)
            **({"lead": Out(range(cfg.memory_atom))} if conv_fp16(cfg) else {}),
        })

    # per format and pass: (G, pixels per atom, bytes per pixel, lanes); ``es`` the bytes of
    # an element in the CBUF (2: int16 / fp16 processing, element j in lanes 2j and 2j + 1)
    def _passes(self, f, es=1):
        cfg = self._cfg
        ATOM, BW = cfg.memory_atom, cfg.cbuf_bank_width
        out = []
        for plane in range(len(f.bpp)):
            bpp = f.bpp[plane]
            ppa = ATOM // bpp
            G = _pow2_floor(min(ppa, BW // (f.channels * es)))
            lanes = []
            for g in range(G):
                for k, comp in enumerate(f.fmt.components):
                    if comp.plane == plane:
                        lanes.append(((g * f.channels + k) * es, g, k, comp))
            out.append((G, ppa, bpp, lanes))
        return out

    def elaborate(self, platform):
        m = Module()
        cfg, g, blk = self._cfg, self._geom, self._block
        R = self.regs
        aw, ash = g.addr_width, g.atom_shift
        ATOM, BW = cfg.memory_atom, cfg.cbuf_bank_width
        lbw = (BW - 1).bit_length()
        # the formats the check lets through, and on builds with fp16 the fp16 pixels
        fmts = [f for f in image_formats(cfg)
                if f.accepted or (f.fmt.is_float and conv_fp16(cfg))]
        # int16 / fp16 processing (builds with the 2-byte element path): 2 bytes per element
        wide_b = conv_wide(cfg)
        wide = Signal()
        if wide_b:
            m.d.comb += wide.eq(R.D_MISC_CFG.PROC_PRECISION != 0)

        def esz(v):                         # elements -> CBUF bytes
            return v << wide if wide_b else v

        def byte_value(reg, fld):
            return dma_fields.byte_value(R, blk, reg, fld)

        def address(low_reg, low_fld, high_reg, high_fld):
            return dma_fields.split_address(R, blk, low_reg, low_fld, high_reg, high_fld, aw)

        # -- the layer ---------------------------------------------------------------------
        width = Signal(14)
        height = Signal(14)
        m.d.comb += [width.eq(R.D_DATAIN_SIZE_0.DATAIN_WIDTH + 1),
                     height.eq(R.D_DATAIN_SIZE_0.DATAIN_HEIGHT + 1)]
        base0 = address("D_DAIN_ADDR_LOW_0", "DATAIN_ADDR_LOW_0",
                        "D_DAIN_ADDR_HIGH_0", "DATAIN_ADDR_HIGH_0")
        base1 = address("D_DAIN_ADDR_LOW_1", "DATAIN_ADDR_LOW_1",
                        "D_DAIN_ADDR_HIGH_1", "DATAIN_ADDR_HIGH_1")
        ls = byte_value("D_LINE_STRIDE", "LINE_STRIDE")
        uvs = byte_value("D_LINE_UV_STRIDE", "UV_LINE_STRIDE")
        xo = R.D_PIXEL_OFFSET.PIXEL_X_OFFSET
        eps = Signal(16)
        m.d.comb += eps.eq(R.D_ENTRY_PER_SLICE.ENTRIES + 1)
        pl, pr = R.D_ZERO_PADDING.PAD_LEFT, R.D_ZERO_PADDING.PAD_RIGHT
        pad = R.D_ZERO_PADDING_VALUE.PAD_VALUE[:8]
        pad16 = R.D_ZERO_PADDING_VALUE.PAD_VALUE[:16]
        code = R.D_DATAIN_FORMAT.PIXEL_FORMAT

        # the format: channels, planes, per pass G / pixels per atom / bytes per pixel
        n_ch = Signal(3)
        semi = Signal()
        glog = [Signal(4, name=f"glog{p}") for p in range(2)]
        plog = [Signal(8, name=f"plog{p}") for p in range(2)]   # log2 pixels per atom
        blog = [Signal(3, name=f"blog{p}") for p in range(2)]   # log2 bytes per pixel
        uvmask = Signal(8)
        with m.Switch(code):
            for f in fmts:
                with m.Case(f.code):
                    m.d.comb += [n_ch.eq(f.channels), semi.eq(len(f.bpp) == 2),
                                 uvmask.eq(f.uv_mod - 1)]
                    for p, (G, ppa, bpp, _) in enumerate(self._passes(f)):
                        gl = G.bit_length() - 1
                        if wide_b:
                            gw = self._passes(f, 2)[p][0]
                            gl = Mux(wide, gw.bit_length() - 1, gl)
                        m.d.comb += [glog[p].eq(gl),
                                     plog[p].eq(ppa.bit_length() - 1),
                                     blog[p].eq(bpp.bit_length() - 1)]
        # the first ROI pixel of each plane: atom-aligned request start and slot in the atom
        u = Signal(8)                                        # plane-1 X offset in bytes
        m.d.comb += u.eq((xo << blog[1]) & uvmask)
        off = [Signal(20, name="off0"), Signal(20, name="off1")]   # bytes from the start
        m.d.comb += [off[0].eq(xo << blog[0]), off[1].eq(u)]
        skip1 = Signal(8)                                    # whole atoms before it
        m.d.comb += skip1.eq(u >> ash)
        natoms = [Signal(20, name=f"natoms{p}") for p in range(2)]
        for p in range(2):
            low = off[p][:ash] if ash else Const(0, 1)
            m.d.comb += natoms[p].eq((low + (width << blog[p]) + ATOM - 1) >> ash)

        # -- requests: one per line and plane --------------------------------------------------
        c_left = Signal(14)
        c_pass = Signal()
        a0 = Signal(aw)                                      # plane-0 line address
        a1 = Signal(aw)
        cmd = self.cmd.payload
        m.d.comb += [
            self.cmd.valid.eq(c_left != 0),
            cmd.base.eq(Mux(c_pass, a1 + (skip1 << ash), a0)),
            cmd.ram_type.eq(R.D_DAIN_RAM_TYPE.DATAIN_RAM_TYPE),
            cmd.line_atoms.eq(Mux(c_pass, natoms[1], natoms[0]) - 1),
            cmd.lines.eq(0), cmd.surfaces.eq(0), cmd.batches.eq(0),
            cmd.line_stride.eq(0), cmd.surface_stride.eq(0), cmd.batch_stride.eq(0),
        ]
        with m.If(self.cmd.valid & self.cmd.ready):
            with m.If(semi & ~c_pass):
                m.d.sync += c_pass.eq(1)
            with m.Else():
                m.d.sync += [c_pass.eq(0), c_left.eq(c_left - 1), a0.eq(a0 + ls),
                             a1.eq(a1 + uvs)]

        # -- E0: the sequence of chunks (pad, pixels) and line flushes --------------------------
        # a chunk: G pixel slots of the output line; its bytes [lo, lo + n) go to the line
        tok_l = data.StructLayout({
            "v": 1, "kind": 2, "grp": ATOM * 8, "lo": range(BW + 1),
            "n": range(BW + 1), "slice_end": 1, "last": 1, "pass_": 1})
        KIND_PIX, KIND_PAD, KIND_FLUSH = 0, 1, 2
        d_lines = Signal(14)                                 # lines left
        d_pass = Signal()
        phase = Signal(2)              # 0 left pad, 1 pixels, 2 right pad, 3 flush
        rem = Signal(15)                                     # pixels left in the phase
        slot = Signal(8)                                     # pixel slot in the atom
        active = Signal()
        credit = Signal(range(2 * _FIFO + 4))                # entry writes not yet taken
        G = Signal(8)
        cur_glog = Mux(d_pass, glog[1], glog[0])
        cur_plog = Mux(d_pass, plog[1], plog[0])
        m.d.comb += G.eq(Const(1, 8) << cur_glog)
        pix_per_atom = Signal(9)
        m.d.comb += pix_per_atom.eq(Const(1, 9) << cur_plog)
        n_ch8 = Signal(range(BW + 1))
        m.d.comb += n_ch8.eq(n_ch)

        # the group's first byte in the atom: its first slot times the bytes per pixel
        gbyte = Signal(range(ATOM))
        m.d.comb += gbyte.eq((slot & ~(G - 1)) << Mux(d_pass, blog[1], blog[0]))
        lo_slot = Signal(8)
        m.d.comb += lo_slot.eq(Mux(phase == 1, slot & (G - 1), 0))
        avail = Signal(8)
        m.d.comb += avail.eq(G - lo_slot)
        cnt = Signal(8)
        m.d.comb += cnt.eq(Mux(rem < avail, rem, avail))
        tok = Signal(tok_l)
        can = active & (credit <= _FIFO - 2)
        at = self.atoms
        last_pass = ~semi | d_pass
        # the first ROI pixel's slot in the first atom of each plane's line
        slot0 = [Signal(8, name="slot0_0"), Signal(8, name="slot0_1")]
        m.d.comb += [slot0[0].eq(off[0][:ash] >> blog[0]), slot0[1].eq(off[1][:ash] >> blog[1])]

        first = Signal()                                     # the line's first atom is next
        if conv_fp16(cfg):
            m.d.comb += self.lead.eq(Mux(first & ~d_pass, off[0][:ash] if ash else 0, 0))
            with m.If(at.valid & at.ready):
                m.d.sync += first.eq(0)

        def enter_pixels(p):
            m.d.sync += [phase.eq(1), rem.eq(width), slot.eq(Mux(p, slot0[1], slot0[0]))]
            if conv_fp16(cfg):
                m.d.sync += first.eq(1)

        def enter_pass(p):
            # a pass starts with the left padding, or with its pixels when there is none
            with m.If(pl == 0):
                enter_pixels(p)
            with m.Else():
                m.d.sync += [phase.eq(0), rem.eq(pl)]

        # phases move on with a phase's last chunk (no bubble cycles between them)
        with m.If(can):
            with m.Switch(phase):
                with m.Case(0, 2):
                    with m.If(rem == 0):                     # (not reached)
                        m.d.sync += phase.eq(phase + 1)
                    with m.Else():
                        m.d.comb += [tok.v.eq(1), tok.kind.eq(KIND_PAD),
                                     tok.lo.eq(0), tok.n.eq(esz(times(cnt, n_ch8)))]
                        m.d.sync += rem.eq(rem - cnt)
                        with m.If(rem == cnt):
                            with m.If(phase == 0):
                                enter_pixels(d_pass)
                            with m.Else():
                                m.d.sync += phase.eq(3)
                with m.Case(1):
                    with m.If(at.valid):
                        m.d.comb += [tok.v.eq(1), tok.kind.eq(KIND_PIX),
                                     tok.grp.eq(at.payload.data >> Cat(Const(0, 3), gbyte)),
                                     tok.lo.eq(esz(times(lo_slot, n_ch8))),
                                     tok.n.eq(esz(times(cnt, n_ch8)))]
                        m.d.sync += [rem.eq(rem - cnt), slot.eq(slot + cnt)]
                        with m.If((slot + cnt == pix_per_atom) | (rem == cnt)):
                            m.d.comb += at.ready.eq(1)
                            m.d.sync += slot.eq(0)
                        with m.If(rem == cnt):
                            m.d.sync += [phase.eq(Mux(pr == 0, 3, 2)), rem.eq(pr)]
                with m.Case(3):
                    m.d.comb += [tok.v.eq(1), tok.kind.eq(KIND_FLUSH),
                                 tok.slice_end.eq(last_pass),
                                 tok.last.eq(last_pass & (d_lines == 1))]
                    with m.If(semi & ~d_pass):
                        m.d.sync += d_pass.eq(1)
                        enter_pass(1)
                    with m.Else():
                        m.d.sync += [d_pass.eq(0), d_lines.eq(d_lines - 1)]
                        enter_pass(0)
                        with m.If(d_lines == 1):
                            m.d.sync += active.eq(0)
        m.d.comb += tok.pass_.eq(d_pass)

        with m.If(self.start):
            m.d.sync += [c_left.eq(height), c_pass.eq(0), a0.eq(base0), a1.eq(base1),
                         d_lines.eq(height), d_pass.eq(0), active.eq(1)]
            enter_pass(0)

        # -- E1: components (extension to 17 bits, the offset of their channel) ------------
        sext = R.D_DATAIN_FORMAT.PIXEL_SIGN_OVERRIDE | ~R.D_CVT_CFG.CVT_EN
        mean_en = R.D_MEAN_FORMAT.MEAN_FORMAT
        means = [R.D_MEAN_GLOBAL_0.MEAN_RY, R.D_MEAN_GLOBAL_0.MEAN_GU,
                 R.D_MEAN_GLOBAL_1.MEAN_BV, R.D_MEAN_GLOBAL_1.MEAN_AX]
        cvt_off = R.D_CVT_OFFSET.CVT_OFFSET
        lane_d = [Signal(signed(18), name=f"lane_d{i}") for i in range(BW)]
        lane_o = [Signal(signed(16), name=f"lane_o{i}") for i in range(BW)]
        lane_m = Signal(BW)
        e1_d = [Signal(signed(18), name=f"e1_d{i}") for i in range(BW)]
        e1_o = [Signal(signed(16), name=f"e1_o{i}") for i in range(BW)]
        e1_m = Signal(BW)
        e1 = Signal(tok_l)
        # per lane, the distinct component fields (bit offset in the group, width) and
        # channels over every (format, pass): one small case list per lane, not one per format
        # (2-byte elements: lane 2j takes the element, lane 2j + 1 its high byte, for the
        # convertor's bypass)
        fields = [{} for _ in range(BW)]
        chans = [{} for _ in range(BW)]
        key = Cat(d_pass, code, wide) if wide_b else Cat(d_pass, code)
        wides = (1, 2) if wide_b else (1,)
        for f in fmts:
            for es in wides:
                for p, (_, _, bpp, lanes) in enumerate(self._passes(f, es)):
                    for lane, gi, k, comp in lanes:
                        case = p | (f.code << 1) | ((es - 1) << (1 + len(code)))
                        fld = (gi * bpp * 8 + comp.lsb, comp.width)
                        fields[lane].setdefault(fld + (0,), []).append(case)
                        chans[lane].setdefault(k, []).append(case)
                        if es == 2:
                            fields[lane + 1].setdefault(fld + (8,), []).append(case)
        for lane in range(BW):
            with m.Switch(key):
                for (lsb, width, hi), cases in fields[lane].items():
                    with m.Case(*cases):
                        bits = 8 if width == 8 else 16
                        v = tok.grp[lsb:][:width]
                        v = Cat(Const(0, bits - width), v) if bits > width else v
                        ext = Mux(sext & v[-1], v.as_signed(), v)
                        m.d.comb += [lane_d[lane].eq(ext >> hi if hi else ext),
                                     lane_m[lane].eq(1)]
            with m.Switch(key):
                for k, cases in chans[lane].items():
                    with m.Case(*cases):
                        m.d.comb += lane_o[lane].eq(Mux(mean_en, means[k], cvt_off))
        m.d.sync += [e1.eq(tok), e1_m.eq(lane_m)]
        for i in range(BW):
            m.d.sync += [e1_d[i].eq(lane_d[i]), e1_o[i].eq(lane_o[i])]

        # -- E2: (d - o) x scale; E2B: the rounding add; E3: shift, saturate (the CDMA's
        # Convertor, every cycle; its LATENCY is the stages E2 .. E3) -------------------------
        cvt = self.cvt
        m.d.comb += cvt.en.eq(1)
        for i in range(BW):
            m.d.comb += [cvt.d[i].eq(e1_d[i]), cvt.o[i].eq(e1_o[i])]
        assert Convertor.LATENCY == 3
        e2 = Signal(tok_l)
        e2_m = Signal(BW)
        e2b = Signal(tok_l)
        e2b_m = Signal(BW)
        e3 = Signal(tok_l)
        e3_m = Signal(BW)
        m.d.sync += [e2.eq(e1), e2_m.eq(e1_m), e2b.eq(e2), e2b_m.eq(e2_m), e3.eq(e2b),
                     e3_m.eq(e2b_m)]
        e3_b = Signal(BW * 8)
        pads = Cat(*[pad] * BW)
        if wide_b:                          # 2-byte elements: the 16-bit pad value
            pads = Mux(wide, Cat(*[pad16] * (BW // 2)), pads)
        m.d.comb += e3_b.eq(Mux(e3.kind == KIND_PAD, pads, cvt.q.as_value()))
        # -- E4: the packer -------------------------------------------------------------------
        acc = Signal(BW * 8)
        accm = Signal(BW)
        fill = Signal(range(BW + 1))
        eidx = Signal(16)                                    # entry in the slice
        sbase = Signal(range(cfg.cbuf_banks * cfg.cbuf_bank_depth + 1))
        m.submodules.fifo = fifo = SyncFIFO(width=len(self.wr.payload.as_value()), depth=_FIFO)
        w = Signal(image_write_layout(cfg))
        m.d.comb += [fifo.w_data.eq(w), self.wr.valid.eq(fifo.r_rdy),
                     self.wr.payload.eq(fifo.r_data), fifo.r_en.eq(self.wr.ready)]
        mask_all = Mux(e3.kind == KIND_PAD, Const((1 << BW) - 1, BW), e3_m)
        nmask = Signal(BW)                                   # the chunk's n bytes from lo
        m.d.comb += nmask.eq(((Const(1, BW + 1) << e3.n) - 1)[:BW] << e3.lo)
        keep = Signal(BW)                                    # the bytes this chunk writes
        m.d.comb += keep.eq(mask_all & nmask)
        # one rotation by fill - lo (mod BW) takes the chunk's bytes [lo, lo + n) to
        # [fill, fill + n) mod BW: those at or above fill complete the current entry, those
        # below it (the chunk wrapped) start the next one
        rot = Signal(range(BW))
        m.d.comb += rot.eq(fill - e3.lo)
        rot_d = Signal(BW * 8)
        rot_m = Signal(BW)
        m.d.comb += [rot_d.eq(_rotate_left(e3_b, rot, 8)), rot_m.eq(_rotate_left(keep, rot, 1))]
        upper = Signal(BW)                                   # byte j >= fill
        m.d.comb += upper.eq(Const((1 << BW) - 1, BW) << fill)
        cur_m, nxt_m = Signal(BW), Signal(BW)
        m.d.comb += [cur_m.eq(accm | (rot_m & upper)), nxt_m.eq(rot_m & ~upper)]
        cur_d = Cat(*[Mux(rot_m[j] & upper[j], rot_d[j * 8:(j + 1) * 8], acc[j * 8:(j + 1) * 8])
                      for j in range(BW)])
        nxt_d = Cat(*[Mux(nxt_m[j], rot_d[j * 8:(j + 1) * 8], 0) for j in range(BW)])
        # the accumulator keeps zeros in the bytes not written yet (accm says which are)
        nfill = Signal(range(2 * BW + 1))
        m.d.comb += nfill.eq(fill + e3.n)
        m.d.comb += [w.addr.eq(sbase + eidx), w.slice_end.eq(0), w.last.eq(0)]
        with m.If(e3.v & (e3.kind == KIND_FLUSH)):
            m.d.comb += [fifo.w_en.eq(1), w.data.eq(acc), w.mask.eq(accm),
                         w.slice_end.eq(e3.slice_end), w.last.eq(e3.last)]
            m.d.sync += [fill.eq(0), acc.eq(0), accm.eq(0), eidx.eq(0)]
            with m.If(e3.slice_end):
                # (two-column entries: a register entry is two bank rows, wr.addr counts rows)
                twocol = cfg.cbuf_entry_bytes != BW
                m.d.sync += sbase.eq(sbase + (eps << 1 if twocol else eps))
        with m.Elif(e3.v):
            with m.If(nfill >= BW):
                m.d.comb += [fifo.w_en.eq(1), w.data.eq(cur_d), w.mask.eq(cur_m)]
                m.d.sync += [acc.eq(nxt_d), accm.eq(nxt_m), fill.eq(nfill - BW),
                             eidx.eq(eidx + 1)]
            with m.Else():
                m.d.sync += [acc.eq(cur_d), accm.eq(cur_m), fill.eq(nfill)]
        with m.If(self.start):
            m.d.sync += [fill.eq(0), acc.eq(0), accm.eq(0), eidx.eq(0), sbase.eq(0)]

        # credits: tokens in E1..E3 plus entries in the FIFO (each token makes at most one)
        inflight = Signal(range(5))
        m.d.comb += inflight.eq(e1.v + e2.v + e2b.v + e3.v)
        m.d.comb += credit.eq(fifo.level + inflight)
        m.d.comb += self.busy.eq(active | (c_left != 0) | e1.v | e2.v | e2b.v | e3.v |
                                 fifo.r_rdy)
        return m


def _rotate_left(v, amount, unit):
    """``v`` rotated left (towards its high bits) by ``amount`` units of ``unit`` bits: a
    log-depth rotator, cheaper than a double-width shift."""
    for b in range(len(amount)):
        k = (unit << b) % len(v)
        v = Mux(amount[b], v.rotate_left(k), v) if k else v
    return v


def times(x, n):
    """``x * n`` for the small channel count ``n`` (1..4)."""
    return Mux(n == 4, x << 2, Mux(n == 3, x + (x << 1), Mux(n == 2, x << 1, x)))
