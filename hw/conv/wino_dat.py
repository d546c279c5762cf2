"""The CSC's Winograd data engine: a Winograd layer's data atoms for the direct MAC array.

Builds where :func:`~hw.conv.common.conv_winograd` holds (Atomic-C 64, 32-byte memory atoms,
bank-row or two-column CBUF entries); int8 and int16 layers, and fp16 layers where
:func:`~hw.conv.common.conv_winograd_fp16` holds (golden model :mod:`sim.conv.winograd`).
fp16 atoms keep every element and flag the POA coefficient instead (``zero`` / ``neg``):
NVDLA's fp16 cell aligns all of a small cube's products, so an element the output does not
use still takes part in the alignment and the NaN search (:mod:`hw.conv.fp16_cell`).

How a Winograd layer runs on the direct pipeline
------------------------------------------------
Output ``(i, j)`` (``i, j`` in 0..1) of the 2 x 2 tile ``t`` for kernel ``k`` is::

    y[k, t, i, j] = sum_(y, x) AT[i][y] AT[j][x] sum_c V[t, c, y, x] U[k, c, y, x]

with ``V`` the PRA's transformed input tile (:class:`~hw.conv.pra.Pra`), ``U`` the stored
weights and ``AT = [[1, 1, 1, 0], [0, 1, -1, -1]]`` (NVDLA's POA after the products; the
integer sums are exact, so the POA can act on the data instead). The Winograd weight
surface groups a kernel's weights in small cubes of 4 channels x 16 positions (element
``(y x 4 + x) x 4 + c``), kernel-major per cube and kernel group -- exactly the weight surface
of a 1 x 1 direct layer with ``16 x C_ext`` channels when an Atomic-C channel group is one
small cube (64 int8 elements; an int16 group of 2 x 64 bytes is one too). So the CSC runs a
Winograd layer as that 1 x 1 layer: its weight engine reads the surface unchanged, cube ``q``
as channel group ``q``, and this engine gives, for output position ``(oy, ox)`` and cube
``q``, the atom whose lane ``(y x 4 + x) x 4 + c`` is ``AT[oy % 2][y] AT[ox % 2][x] V[tile,
4q + c, y, x]``: 0, the value, or its negation (``neg``: the MAC array negates the operand, so
``-(-128)`` is exact). Every output takes ``C_ext / 4`` atoms (int16: two halves each), the
outputs in SDP's raster order as in direct mode, and CACC accumulates them unchanged.

Sequence (the contract of :mod:`hw.conv.common`)::

    for kernel group; for stripe; for cube q; for output position p of the stripe [; half h]:
        one atom (swap on the block's first, first / last on the first / last cube's, end)

Per stripe and CBUF channel group (``AC`` int8 or ``AC / 2`` int16 channels: 16 or 8
cubes: an *item*), a *fill* walks the stripe's positions: the first position of each 4 x 4
input tile in the stripe (raster order) asks :class:`~hw.conv.wino_tiles.WinoTiles` for the
tile (waiting for its 4 extended lines: ``dat_slices``), and the PRA's output is written,
one small cube a row (int16: a half cube), into the next slot of one half of the *tile
buffer* (two halves of ``max_stripe / 2 + 2`` slots x 16 rows of the bank width,
:class:`amaranth.lib.memory.Memory`); the other positions of a tile refer to the slot of the
earlier one (``slot_of``). The *issue* side reads the item's half, one row per atom (one atom
a cycle, credit-based into a short FIFO). The two sides run apart: while the issue side
reads one half, the fill side fills the other with the next item (the same walk for the
next channel group, stripe or kernel group), so only the layer's first fill is not hidden.

A tile costs 17 CBUF read cycles, shared by its (up to 4) outputs in the stripe; the atoms
are ``16 x C_ext / AC`` per output (int8; int16 the same count of halves), i.e. NVDLA's
Winograd count x 4, and 16 / 9 of a direct 3 x 3 layer's on the stride-1 input. An item's
fill (about 17 cycles per tile, a quarter to a half of its positions) is shorter than its
atoms (16 or 8 cubes per position), so after the first the fills hide behind the atoms.

Ports
    ``regs``        in, the CSC D-group rw fields (stable while the layer runs)
    ``go``          in, pulse: the layer starts (registers settled)
    ``dat_base``    in, ring position of extended line 0 (from Cdma)
    ``dat_slices``  in, extended lines Cdma has written so far
    ``rd``          out, the data CBUF read port
    ``o``           out, atoms (:func:`~hw.conv.common.dat_layout`, with ``neg``)
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from arch.registers import register_map
from ..regfile import fields_layout
from .common import cbuf_read_signature, conv_wide, conv_winograd, conv_winograd_fp16, \
    dat_layout, max_stripe, stripe_len
from .wino_tiles import WinoTiles

__all__ = ["WinoDat", "lane_coefficients"]

#: A^T of F(2x2, 3x3): row i's sign for tile row (or column) y
_AT = ((1, 1, 1, 0), (0, 1, -1, -1))
#: atoms in flight at most (read issued, not yet taken from the FIFO)
_DEPTH = 4


def lane_coefficients(lanes: int, int16: bool, half: int, oi: int, oj: int) -> list[int]:
    """The POA coefficient (-1, 0, 1) of each atom lane (int16: element) for an output at
    tile row ``oi``, column ``oj`` (``half``: the int16 atom's half of the small cube)."""
    out = []
    for lane in range(lanes):
        e = (lane >> 2) + (8 * half if int16 else 0)    # position y x 4 + x
        out.append(_AT[oi][e >> 2] * _AT[oj][e & 3])
    return out


class WinoDat(wiring.Component):
    """``WinoDat(cfg)``: see the module docstring."""

    def __init__(self, cfg):
        assert conv_winograd(cfg), "Winograd on the RTL needs conv_winograd(cfg)"
        self._cfg = cfg
        NE = cfg.cbuf_banks * cfg.cbuf_bank_depth
        block = register_map(cfg)["CSC"]
        super().__init__({
            "regs": In(fields_layout(block.d_registers, ("rw",))),
            "go": In(1),
            "dat_base": In(range(NE)),
            "dat_slices": In(range(NE + 1)),
            "rd": Out(cbuf_read_signature(cfg)),
            "o": Out(stream.Signature(dat_layout(cfg))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        AC, AK, BW, ATOM = cfg.atomic_c, cfg.atomic_k, cfg.cbuf_bank_width, cfg.memory_atom
        ms = max_stripe(cfg)
        i16b = conv_wide(cfg)
        f16b = conv_winograd_fp16(cfg)
        R = self.regs

        # ---- layer parameters (registers stable; registered where a product is involved) --
        i16 = Signal()                                  # 2-byte elements (int16 or fp16)
        f16 = Signal()                                  # fp16 (builds that run it)
        if i16b:
            m.d.comb += i16.eq(R.D_MISC_CFG.PROC_PRECISION != 0)
        if f16b:
            m.d.comb += f16.eq(R.D_MISC_CFG.PROC_PRECISION == 2)
        cx = R.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT + 1
        cbytes = Signal(16)
        m.d.comb += cbytes.eq(cx << i16)
        OW_m1 = R.D_DATAOUT_SIZE_0.DATAOUT_WIDTH
        OW = OW_m1 + 1
        K = R.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL + 1
        KG = Mux(i16, AK // 2, AK)
        nq_m1 = (cx >> 2) - 1                            # small cubes - 1
        per_m1 = Mux(i16, AC // 8 - 1, AC // 4 - 1)      # cubes per CBUF channel group - 1
        n_out = Signal(28)
        n_dat = Signal(range(cfg.cbuf_banks * cfg.cbuf_bank_depth + 1))     # (entries)
        m.d.sync += [n_out.eq(OW * (R.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT + 1)),
                     n_dat.eq((R.D_BANK.DATA_BANK + 1) * cfg.cbuf_entry_depth)]

        # ---- tile reader + PRA -----------------------------------------------------------
        m.submodules.tiles = tiles = WinoTiles(cfg)
        wiring.connect(m, tiles.rd, wiring.flipped(self.rd))
        lbw = (cfg.cbuf_entry_bytes - 1).bit_length()  # whole entries / leftover atoms
        m.d.comb += [tiles.dat_base.eq(self.dat_base),
                     tiles.eps.eq(R.D_ENTRY_PER_SLICE.ENTRIES + 1),
                     tiles.w_ext.eq(R.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1),
                     tiles.n_dat.eq(n_dat),
                     tiles.whole.eq(cbytes >> lbw),
                     tiles.rem.eq(cbytes[:lbw] >> (ATOM - 1).bit_length()),
                     tiles.precision.eq(Mux(f16, 2, i16)),
                     tiles.truncate.eq(R.D_PRA_CFG.PRA_TRUNCATE)]

        # ---- tile buffer: two halves of ms / 2 + 2 slots x 16 rows ---------------------------
        # (a stripe's positions in raster order touch at most ms / 2 + 2 tiles: per row a run
        # of L positions meets at most L / 2 + 1 tiles, and two rows of one tile row share
        # theirs, so only the stripe's first and last rows add one). Half ``wb`` is filled
        # while half ``rb`` is read; ``full`` marks a filled half not yet read to its end.
        rows = 16
        NS = ms // 2 + 2
        slot_bits = (NS - 1).bit_length()
        m.submodules.buf = buf = Memory(shape=BW * 8, depth=2 * NS * rows, init=[])

        def buf_addr(half, slot, row):
            return Mux(half, NS * rows, 0) + Cat(row, slot)

        wp = buf.write_port()
        rp = buf.read_port()
        slot_of = [Array(Signal(slot_bits, name=f"slot_of{b}_{i}") for i in range(ms))
                   for b in range(2)]
        role_of = [Array(Signal(2, name=f"role_of{b}_{i}") for i in range(ms))
                   for b in range(2)]
        wb, rb = Signal(), Signal()
        full = Signal(2)

        # writer: the PRA's tile a row a cycle into slot ``written``, rows 0..15 a tile: a
        # channel quad (one small cube) a row; 16-bit elements: quad g's half h is row 2g + h
        hold = Signal.like(tiles.o.payload)
        hv = Signal()                                   # ``hold`` is a row to write
        wr_row = Signal(4)
        written = Signal(range(ms + 1))
        m.d.comb += tiles.o.ready.eq(1)
        m.d.sync += hv.eq(tiles.o.valid)
        with m.If(tiles.o.valid):
            m.d.sync += hold.eq(tiles.o.payload)
        # int8 row: byte l = lane (l & 3), element l >> 2
        row8 = Cat(*[hold.data[l & 3][l >> 2][:8] for l in range(AC)])
        row = row8
        if i16b:
            # int16 row (half h = wr_row[0]): element l = lane (l & 3), position 8h + (l >> 2)
            row16_h = [Cat(*[hold.data[l & 3][8 * h + (l >> 2)][:16] for l in range(AC // 2)])
                       for h in range(2)]
            row = Mux(i16, Mux(wr_row[0], row16_h[1], row16_h[0]), row8)
        m.d.comb += [wp.addr.eq(buf_addr(wb, written[:slot_bits], wr_row)), wp.data.eq(row),
                     wp.en.eq(hv)]
        with m.If(hv):
            m.d.sync += wr_row.eq(wr_row + 1)
            with m.If(wr_row == rows - 1):
                m.d.sync += written.eq(written + 1)

        # ---- the fill side: items in the issue side's order, one half ahead ----------------
        f_kleft = Signal(14)
        f_rem = Signal(28)
        so_y, so_x = Signal(14), Signal(14)             # stripe start
        oy, ox = Signal(14), Signal(14)
        f_q = Signal(12)                                # the item's first small cube
        fp = Signal(range(ms + 1))
        alloc = Signal(range(ms + 1))
        f_slen = Signal(range(ms + 1))
        m.d.comb += f_slen.eq(stripe_len(f_rem, ms))

        def step(y, x):
            with m.If(x == OW_m1):
                m.d.sync += [x.eq(0), y.eq(y + 1)]
            with m.Else():
                m.d.sync += x.eq(x + 1)

        # fill walk: does position fp start its tile in this stripe?
        oy_odd, ox_odd = oy[0], ox[0]
        ref = Signal(range(ms))
        new = Signal()
        with m.If(ox_odd):
            m.d.comb += [new.eq(fp == 0), ref.eq(fp - 1)]
        with m.Elif(oy_odd):
            with m.If(fp >= OW):
                m.d.comb += ref.eq(fp - OW)
            with m.Elif(fp + 1 >= OW):
                m.d.comb += ref.eq(fp + 1 - OW)
            with m.Else():
                m.d.comb += new.eq(1)
        with m.Else():
            m.d.comb += new.eq(1)
        ty = oy >> 1
        slices_ok = Signal()
        m.d.comb += slices_ok.eq(Cat(Const(0, 1), ty + 2) <= self.dat_slices)
        je = Signal(12)
        qb = (AC // 4 - 1).bit_length()                  # log2 cubes per int8 channel group
        m.d.comb += je.eq(Mux(i16, f_q >> (qb - 1), f_q >> qb))
        m.d.comb += [tiles.cmd.payload.ty.eq(ty), tiles.cmd.payload.tx.eq(ox >> 1),
                     tiles.cmd.payload.j.eq(je)]
        slot_w = Array(slot_of)[wb]
        role_w = Array(role_of)[wb]
        full_w = full.bit_select(wb, 1)
        f_last_item = f_q + per_m1 >= nq_m1              # the stripe's last channel group

        with m.FSM(name="fill"):
            with m.State("IDLE"):
                with m.If(self.go):
                    m.d.sync += [f_kleft.eq(K), so_y.eq(0), so_x.eq(0), f_q.eq(0)]
                    m.next = "START"
            with m.State("START"):
                # (n_out is registered: valid from here)
                m.d.sync += f_rem.eq(n_out)
                m.next = "FILL0"
            with m.State("FILL0"):
                # wait for the half to be free
                m.d.sync += [oy.eq(so_y), ox.eq(so_x), fp.eq(0), alloc.eq(0), written.eq(0),
                             wr_row.eq(0)]
                with m.If(~full_w):
                    m.next = "FILL"
            with m.State("FILL"):
                walking = fp != f_slen
                ask = walking & new
                m.d.comb += tiles.cmd.valid.eq(ask & slices_ok)
                adv = walking & (~new | (slices_ok & tiles.cmd.ready))
                with m.If(adv):
                    m.d.sync += [slot_w[fp].eq(Mux(new, alloc, slot_w[ref])),
                                 role_w[fp].eq(Cat(ox[0], oy[0])), fp.eq(fp + 1)]
                    with m.If(new):
                        m.d.sync += alloc.eq(alloc + 1)
                    step(oy, ox)
                with m.If(~walking & (written == alloc) & ~hv):
                    # the half is full: hand it over, go on with the next item
                    m.d.sync += [full_w.eq(1), wb.eq(~wb)]
                    with m.If(~f_last_item):
                        m.d.sync += f_q.eq(f_q + per_m1 + 1)
                        m.next = "FILL0"
                    with m.Else():
                        m.d.sync += f_q.eq(0)
                        with m.If(f_rem != f_slen):
                            m.d.sync += [f_rem.eq(f_rem - f_slen), so_y.eq(oy), so_x.eq(ox)]
                            m.next = "FILL0"
                        with m.Elif(f_kleft > KG):
                            m.d.sync += [f_kleft.eq(f_kleft - KG), so_y.eq(0), so_x.eq(0)]
                            m.next = "START"
                        with m.Else():
                            m.next = "IDLE"

        # ---- the issue side ----------------------------------------------------------------
        kleft = Signal(14)
        rem = Signal(28)
        q = Signal(12)                                  # small cube
        ql = Signal(4)                                  # cube within the CBUF channel group
        p = Signal(range(ms + 1))
        h = Signal()
        slen = Signal(range(ms + 1))
        m.d.comb += slen.eq(stripe_len(rem, ms))

        # issue: credits, the read, the tags
        outstanding = Signal(range(_DEPTH + 1))
        m.submodules.fifo = fifo = SyncFIFO(width=len(self.o.payload.as_value()), depth=_DEPTH)
        take = self.o.valid & self.o.ready
        issue = Signal()
        last_p = p == slen - 1
        h_last = ~i16 | h
        last_q = q == nq_m1
        last_stripe = rem == slen
        last_group = kleft <= KG
        tag = Signal(dat_layout(cfg))
        m.d.comb += [tag.swap.eq((p == 0) & ~h), tag.first.eq((q == 0) & ~h),
                     tag.last.eq(last_q & h_last), tag.pos.eq(p),
                     tag.end.eq(last_q & last_p & h_last & last_stripe & last_group)]
        if i16b:
            m.d.comb += tag.half.eq(h)
        slot_r = Array(slot_of)[rb]
        role_r = Array(role_of)[rb]
        m.d.comb += [rp.addr.eq(buf_addr(rb, slot_r[p], Mux(i16, Cat(h, ql[:3]), ql))),
                     rp.en.eq(issue)]
        r_v = Signal()
        r_tag = Signal.like(tag)
        r_role = Signal(2)
        m.d.sync += r_v.eq(issue)
        with m.If(issue):
            m.d.sync += [r_tag.eq(tag), r_role.eq(role_r[p])]

        # the atom: lanes by the output's POA coefficients
        atom = Signal(dat_layout(cfg))
        m.d.comb += atom.eq(r_tag)
        data_b = rp.data
        for c in range(AC):
            co8 = [lane_coefficients(AC, False, 0, r >> 1, r & 1)[c] for r in range(4)]
            z8 = Const(sum(1 << r for r in range(4) if co8[r] == 0), 4).bit_select(r_role, 1)
            n8 = Const(sum(1 << r for r in range(4) if co8[r] < 0), 4).bit_select(r_role, 1)
            zero, neg = z8, n8
            if i16b:
                e = c >> 1                                  # the int16 element of byte c
                co16 = [lane_coefficients(AC // 2, True, hh, r >> 1, r & 1)[e]
                        for hh in range(2) for r in range(4)]
                sel = Cat(r_role, r_tag.half)
                z16 = Const(sum(1 << i for i in range(8) if co16[i] == 0), 8).bit_select(sel, 1)
                zero = Mux(i16, z16, z8)
                if c < AC // 2:
                    co16n = [lane_coefficients(AC // 2, True, hh, r >> 1, r & 1)[c]
                             for hh in range(2) for r in range(4)]
                    n16 = Const(sum(1 << i for i in range(8) if co16n[i] < 0),
                                8).bit_select(sel, 1)
                    neg = Mux(i16, n16, n8)
                else:
                    neg = Mux(i16, 0, n8)
            if f16b:
                # fp16: the data stay (they take part in the cell's alignment and NaN search);
                # the cell drops the aligned parts of the elements ``zero`` flags
                if c < AC // 2:
                    co16z = [lane_coefficients(AC // 2, True, hh, r >> 1, r & 1)[c]
                             for hh in range(2) for r in range(4)]
                    z16e = Const(sum(1 << i for i in range(8) if co16z[i] == 0),
                                 8).bit_select(Cat(r_role, r_tag.half), 1)
                    m.d.comb += atom.zero[c].eq(f16 & z16e)
                zero = ~f16 & zero
            m.d.comb += [atom.data[c].eq(Mux(zero, 0, data_b[8 * c:8 * c + 8])),
                         atom.neg[c].eq(neg)]
        m.d.comb += [fifo.w_en.eq(r_v), fifo.w_data.eq(atom),
                     self.o.valid.eq(fifo.r_rdy), self.o.payload.eq(fifo.r_data),
                     fifo.r_en.eq(self.o.ready)]
        with m.If(issue & ~take):
            m.d.sync += outstanding.eq(outstanding + 1)
        with m.Elif(~issue & take):
            m.d.sync += outstanding.eq(outstanding - 1)

        with m.FSM(name="issue"):
            with m.State("IDLE"):
                with m.If(self.go):
                    m.d.sync += [kleft.eq(K), q.eq(0), ql.eq(0), p.eq(0), h.eq(0),
                                 rb.eq(0), wb.eq(0), full.eq(0)]
                    m.next = "START"
            with m.State("START"):
                m.d.sync += rem.eq(n_out)
                m.next = "ISSUE"
            with m.State("ISSUE"):
                m.d.comb += issue.eq(full.bit_select(rb, 1) & (outstanding < _DEPTH))
                with m.If(issue):
                    with m.If(~h_last):
                        m.d.sync += h.eq(1)
                    with m.Else():
                        m.d.sync += h.eq(0)
                        with m.If(~last_p):
                            m.d.sync += p.eq(p + 1)
                        with m.Else():
                            m.d.sync += [p.eq(0), q.eq(q + 1), ql.eq(ql + 1)]
                            with m.If(last_q | (ql == per_m1)):
                                # the item's last atom: its half is free again
                                m.d.sync += [full.bit_select(rb, 1).eq(0), rb.eq(~rb),
                                             ql.eq(0)]
                            with m.If(last_q):
                                m.d.sync += q.eq(0)
                                with m.If(~last_stripe):
                                    m.d.sync += rem.eq(rem - slen)
                                with m.Elif(~last_group):
                                    m.d.sync += kleft.eq(kleft - KG)
                                    m.next = "START"
                                with m.Else():
                                    m.next = "IDLE"
        return m
