"""The CSC's Winograd tile reader: the 4 x 4 input tile of a 2 x 2 output tile, one channel
group, read from the CBUF and transformed by the PRA (:class:`hw.conv.pra.Pra`).

The tile reader of :class:`hw.conv.wino_dat.WinoDat` (the CSC's Winograd data engine), on
bank-row and two-column CBUF entries, for the extended cube the Cdma writes (:mod:`hw.conv.cdma`, "Winograd"; golden
:func:`sim.conv.winograd.fetch_winograd`): bit for bit
:func:`sim.conv.winograd_math.pra_int` of :func:`sim.conv.winograd_math.input_tiles` on integer
layers.

Layout read (the Cdma's): extended slice ``Y`` starts at data ring position ``dat_base + Y x
eps`` (``eps`` = ``ENTRY_PER_SLICE + 1``; positions, ``eps`` and ``n_dat`` count register
entries); a channel group ``j`` is one bank row (``BW`` bytes: ``AC`` int8 or ``AC / 2``
int16 channels, ``PR = BW / memory atom`` atoms). Bank-row entries: group ``j`` of extended
position ``X`` is entry ``j x W_ext + X`` of its slice for the ``whole`` complete entries.
Two-column entries (``cbuf_entry_width`` = 2 x the bank width, nv_full): entry ``(j // 2) x
W_ext + X``, its row ``j % 2``. The ``r = S_ext % PE`` memory atoms of a line that do not
fill an entry (``PE`` atoms per entry) are packed densely: atoms ``X x r .. X x r + r - 1``
of the slice's run from entry ``whole x W_ext``; a position's cripple group ``j`` (``PR``
atoms of them, fewer in the last) starts at atom ``X x r + (j - groups of whole entries) x
PR`` of the run: one row (its atoms moved to lane 0, the lanes above them read 0), or, when
it straddles two rows (two-column entries, ``r = 3``, odd ``X``), two reads. Bank-row
entries take ``r`` dividing ``PE`` (every ``r`` when ``PE`` is 1 or 2, e.g. nv_large).

Ports
    ``cmd``      in, stream of ``ty``, ``tx`` (the output tile: input tile at extended lines
                 ``2ty .. 2ty + 3``, positions ``2tx .. 2tx + 3``) and ``j`` (channel group)
    ``dat_base`` / ``eps`` / ``w_ext`` / ``n_dat`` / ``whole`` / ``rem`` / ``precision`` /
                 ``truncate``  in, the layer's: the data ring position of slice 0, entries per
                 slice, extended width, data ring entries, complete channel groups per
                 position and the cripple atoms ``r``, NVDLA's precision code (0 int8, 1
                 int16, 2 fp16 where :func:`hw.conv.common.conv_winograd_fp16` holds: the
                 PRA's fp17 path on the bank row's ``BW / 2`` codes) and ``PRA_TRUNCATE``;
                 stable while tiles are read
    ``rd``       out, a CBUF read port (:func:`hw.conv.common.cbuf_read_signature`)
    ``o``        out, the PRA's output a channel quad at a time (:func:`hw.conv.pra.pra_layout`
                 of 4 lanes, no config), ``BW / 4`` transfers per tile: on int8 layers
                 transfer ``g``'s lane ``l`` holds channel ``4g + l`` of the group, element
                 ``y x 4 + x`` of the transformed tile (one small cube: the row
                 :class:`hw.conv.wino_dat.WinoDat` writes); on 16-bit layers (the bank row's
                 ``BW / 2`` channels) transfer ``2g + h`` holds quad ``g``'s half ``h``:
                 elements ``8h .. 8h + 7`` in place (fp16: the PRA computes only those; int16:
                 all 16)

A tile takes 16 read cycles (one row a cycle, lines then positions; a straddling group two
for each odd position) plus one to hand it over: the complete tile is copied into a second
tile register, from which a 4-lane PRA (4 stages, ready-gated) transforms one channel quad
(16-bit elements: half a quad) a cycle while the next tile is read. The consumer writes a row
a cycle, so the transfers take as long as the reads (16 cycles a tile): a PRA of 4 lanes
keeps the reader's rate where one of all ``BW`` lanes would stand idle 16 cycles in 17 (on
nv_full 64 lanes of 32 integer adders and 32 lanes of 32 fp17 adders before, 4 lanes of 32
integer and 16 fp17 adders now).
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import cbuf_read_signature, conv_winograd_fp16
from .pra import Pra, pra_elem_bits, pra_layout

__all__ = ["WinoTiles", "tile_cmd_layout"]


def tile_cmd_layout() -> data.StructLayout:
    return data.StructLayout({"ty": 12, "tx": 12, "j": 14})


class WinoTiles(wiring.Component):
    """``WinoTiles(cfg)``: see the module docstring."""

    def __init__(self, cfg):
        assert cfg.cbuf_entry_bytes in (cfg.cbuf_bank_width, 2 * cfg.cbuf_bank_width)
        self._cfg = cfg
        self._twocol = cfg.cbuf_entry_bytes != cfg.cbuf_bank_width
        pos = range(cfg.cbuf_banks * cfg.cbuf_bank_depth + 1)
        super().__init__({
            "cmd": In(stream.Signature(tile_cmd_layout())),
            "dat_base": In(pos), "eps": In(16), "w_ext": In(14), "n_dat": In(pos),
            "whole": In(14), "rem": In(3), "precision": In(2), "truncate": In(2),
            "rd": Out(cbuf_read_signature(cfg)),
            "o": Out(stream.Signature(pra_layout(cfg, 4, False))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        BW, ATOM = cfg.cbuf_bank_width, cfg.memory_atom
        PR = BW // ATOM                                  # memory atoms per bank row
        lpr = (PR - 1).bit_length()
        twocol = self._twocol
        ew = pra_elem_bits(cfg)
        # one channel quad a cycle (fp17 path on builds that run fp16 Winograd)
        m.submodules.pra = pra = Pra(cfg, 4, fp16=conv_winograd_fp16(cfg))
        wiring.connect(m, pra.o, wiring.flipped(self.o))

        c = Signal.like(self.cmd.payload)                # the tile being read
        k = Signal(5)                                    # read index y x 4 + x
        sub = Signal()                                   # two-column: a straddle's 2nd read
        reading = Signal()
        have = Signal()                                  # the tile waits for its copy
        m.d.comb += self.cmd.ready.eq(~reading & ~have)
        # a tile's reads wait while the one before waits for its copy (its elements would
        # overwrite the waiting tile's)
        rd_go = Signal()
        m.d.comb += rd_go.eq(reading & ~have)
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [c.eq(self.cmd.payload), k.eq(0), sub.eq(0), reading.eq(1)]

        # address of read k: slice 2ty + y, position 2tx + x, in bank rows
        y, x = k[2:4], k[:2]
        Y = Signal(14)
        X = Signal(14)
        m.d.comb += [Y.eq(Cat(Const(0, 1), c.ty) + y), X.eq(Cat(Const(0, 1), c.tx) + x)]
        wrows = Signal(16)                               # row groups of whole entries
        m.d.comb += wrows.eq(self.whole << 1 if twocol else self.whole)
        crip = Signal()
        m.d.comb += crip.eq(c.j >= wrows)
        c0 = Signal(18)                                  # the group's first cripple atom
        cnt = Signal(3)                                  # ... and its atoms in this group
        if twocol:
            left = Signal(4)                             # (groups of PR atoms, a row each)
            m.d.comb += [left.eq(self.rem - ((c.j - wrows) << lpr)),
                         c0.eq(X * self.rem + ((c.j - wrows) << lpr)),
                         cnt.eq(Mux(left > PR, PR, left))]
        else:
            m.d.comb += [c0.eq(X * self.rem), cnt.eq(self.rem)]
        straddle = Signal()
        if twocol:
            m.d.comb += straddle.eq(crip & (cnt == PR) & (c0[:lpr] != 0) if PR > 1 else 0)
        line = Signal(32)                                # slice Y's first row
        m.d.comb += line.eq(Y * self.eps)
        off = Signal(33)
        if twocol:
            m.d.comb += off.eq(Mux(crip,
                                   ((line + self.whole * self.w_ext) << 1) + (c0 >> lpr) + sub,
                                   ((line + (c.j >> 1) * self.w_ext + X) << 1) + c.j[0]))
            base, n_rows = self.dat_base << 1, self.n_dat << 1
        else:
            m.d.comb += off.eq(line + Mux(crip, self.whole * self.w_ext + (c0 >> lpr),
                                          c.j * self.w_ext + X))
            base, n_rows = self.dat_base, self.n_dat
        flat = Signal(34)
        m.d.comb += flat.eq(base + off)
        m.d.comb += [self.rd.en.eq(rd_go),
                     self.rd.addr.eq(Mux(flat >= n_rows, flat - n_rows, flat))]

        # the row one cycle later: its lanes, the cripple atoms moved to lane 0 (a
        # straddling group: atom 0 from lane 1 of the first row, atom 1 from lane 0 of the next)
        got = Signal()                                   # rd.data is read k - 1's
        gk = Signal(4)
        gcrip, gsub, gstr = Signal(), Signal(), Signal()
        glane = Signal(max(lpr, 1))
        gmask = Signal(BW)                               # bytes of the channel group
        m.d.sync += [got.eq(rd_go), gk.eq(k[:4]), gcrip.eq(crip), gsub.eq(sub),
                     gstr.eq(straddle)]
        if PR > 1:
            m.d.sync += glane.eq(c0[:lpr])
        m.d.sync += gmask.eq(Mux(crip, (Const(1, BW + 1) << (cnt * ATOM)) - 1, (1 << BW) - 1))
        with m.If(rd_go):
            with m.If(straddle & ~sub):
                m.d.sync += sub.eq(1)
            with m.Else():
                m.d.sync += [sub.eq(0), k.eq(k + 1)]
                with m.If(k == 15):
                    m.d.sync += reading.eq(0)
        raw = Signal(BW * 8)
        m.d.comb += raw.eq(Mux(gcrip, self.rd.data >> (glane * ATOM * 8), self.rd.data))
        ent = Signal(BW * 8)
        masked = Cat(*[Mux(gmask[b], raw[8 * b:8 * b + 8], 0) for b in range(BW)])
        if twocol:
            first = Signal(ATOM * 8)                     # a straddle's first atom
            with m.If(got & gstr & ~gsub):
                m.d.sync += first.eq(raw[:ATOM * 8])
            m.d.comb += ent.eq(Mux(gstr, Cat(first, self.rd.data[:ATOM * 8]), masked))
        else:
            m.d.comb += ent.eq(masked)
        done = got & ~(gstr & ~gsub)                     # the element is complete

        tile = [Signal(BW * 8, name=f"tile{e}") for e in range(16)]
        with m.If(done):
            for e in range(16):
                with m.If(gk == e):
                    m.d.sync += tile[e].eq(ent)
            with m.If(gk == 15):
                m.d.sync += have.eq(1)

        # the tile's copy, handed to the PRA a channel quad at a time
        shadow = [Signal(BW * 8, name=f"shadow{e}") for e in range(16)]
        emit = Signal()                                  # transfers of the copy remain
        n = Signal(range(BW // 4))                       # transfer: int8 quad n; 16-bit:
        wide = self.precision != 0                       # quad n >> 1, its half n[0]
        g = Signal(range(BW // 4))
        m.d.comb += g.eq(Mux(wide, n >> 1, n))
        pi = pra.i
        last_q = pi.valid & pi.ready & (n == BW // 4 - 1)
        with m.If(pi.valid & pi.ready):
            m.d.sync += n.eq(n + 1)
        with m.If(last_q):
            m.d.sync += [n.eq(0), emit.eq(0)]
        with m.If(have & (~emit | last_q)):
            m.d.sync += [sh.eq(t) for sh, t in zip(shadow, tile)]
            m.d.sync += [have.eq(0), emit.eq(1)]
        m.d.comb += [pi.valid.eq(emit), pi.payload.precision.eq(self.precision),
                     pi.payload.truncate.eq(self.truncate), pi.payload.half.eq(wide & n[0])]
        for lane in range(4):
            for e in range(16):
                b8 = Array(shadow[e][8 * (4 * q + lane):8 * (4 * q + lane) + 8]
                           for q in range(BW // 4))[g]
                if ew == 16:
                    b16 = Array(shadow[e][16 * (4 * q + lane):16 * (4 * q + lane) + 16]
                                for q in range(BW // 8))[g[:(BW // 8 - 1).bit_length()]]
                    m.d.comb += pi.payload.data[lane][e].eq(Mux(wide, b16, b8.as_signed()))
                else:
                    m.d.comb += pi.payload.data[lane][e].eq(b8)
        return m
