"""CSC: the convolution sequence controller (int8 direct convolution, int16 / fp16 on builds
with them, batches on builds with batching; spec "Convolution Sequence Controller"; golden model
:mod:`sim.conv.csc`).

The CSC reads the input slices and the weights that Cdma has put into the CBUF and feeds the
MAC array, in exactly the sequence of the contract in :mod:`hw.conv.common`::

    for kernel group g; for stripe; for channel group j; for kernel position (r, s):
        one ``wt`` load (AK x AC int8), then one ``dat`` atom per output position of the stripe

Stripes are runs of consecutive output positions in raster order. A kernel group's outputs
(``OW x OH`` positions) are cut into stripes of :func:`~hw.conv.common.max_stripe` (``ms``)
positions; when fewer than ``1.5 ms`` remain, the rest is split in two halves (never a stripe
shorter than ``ms / 2`` unless the whole layer is), so that a weight load always hides
behind a stripe's atoms.

Data atoms (one per output position, kernel position and channel group): the input position
is ``iy = oy*sy + r*dy - pad_top``, ``ix = ox*sx + s*dx - pad_left``. Outside the input cube
the atom is ``PAD_VALUE``'s low byte (sign-extended) on every channel ``< C`` and 0 above;
inside it is the CBUF entry of slice ``iy``, position ``ix`` and channel group ``j`` (the
shared "cripple" entry's lanes of position ``ix`` for the last group), channels ``>= C``
forced to 0. Tags: ``swap`` on the block's first atom, ``first`` on the atoms of the stripe's
first block, ``last`` on those of its final block, ``pos`` = index in the stripe, ``end`` on
the layer's final atom.

Data pipeline (one atom per cycle, credit-based: an atom is issued only while fewer than
``FIFO_DEPTH`` atoms are issued and not yet taken, so the pipeline never stalls)::

    S0 counters (waits for dat_slices > iy when iy is inside the input)
    S1 iy*(ENTRIES+1) + dat_base (ring), in-slice offset j*W + ix (or whole*W + ix/share)
    S2 CBUF address (ring), dat_rd read
    S3 lane select (cripple), channel mask / pad value  -> output FIFO -> ``dat``

Weight engine: runs the same sequence independently (the CMAC orders the two streams: a
``swap`` atom waits for its weights). For a block it waits until ``wt_bytes`` covers the
block's ``Kg x Cj`` bytes, reads the group's weight entries in order (2 priming reads, then
one entry per kernel: a kernel's ``Cj`` bytes span at most two entries and are byte-shifted
out of a two-entry window) and sends the kernels on ``wt``, one row per cycle, AK + 2 cycles
per load; kernels past Kg and channels past Cj are 0. A load starts only while the CMAC's
``wt.ready`` is high (its shadow set is not full: the level stays high through the load),
so the next block's load runs as soon as the previous set has moved to the active set,
i.e. while the current block's atoms stream. ``wt_released`` rises to a kernel group's end byte when the group's
last load has been read.

Ports
    ``regs``        in, the CSC D-group rw fields (:func:`hw.regfile.fields_layout`)
    ``start``       in, pulse: the layer begins (registers stable from then to the end)
    ``dat_base``    in, ring position of slice 0 inside the data region (from Cdma)
    ``dat_slices``  in, slices Cdma has completely written so far
    ``wt_base``     in, ring position of weight byte 0's entry inside the weight region
    ``wt_bytes``    in, weight bytes Cdma has written so far (from byte 0 of the surface; of
                    the weight stream on builds with batching, :mod:`hw.conv.common`)
    ``wt_copy``     in (builds with batching), a batched layer's weight copies
    ``wt_released`` out, weight bytes the CSC is finished with (0 at start; a group's end
                    byte after the last load of its last stripe)
    ``dat_rd`` / ``wt_rd`` out, CBUF read ports (:func:`~hw.conv.common.cbuf_read_signature`)
    ``dat`` / ``wt`` out, streams to Cmac (:func:`~hw.conv.common.dat_layout`,
                    :func:`~hw.conv.common.wt_layout`)
    ``done``        out, one-cycle pulse the cycle after the ``end`` atom was taken
    ``busy``        out, a layer is in progress

Image input (``DATAIN_FORMAT=PIXEL``): the channel loop runs over the pre-extended kernel
line (``WEIGHT_CHANNEL_EXT + 1 = S x C`` bytes, kernel width 1), x over the padded line in
steps of ``stride x C`` bytes from byte 0, no dilation, and a data atom is ``AC`` bytes from
any byte of a slice: it is made of up to two entries (a window of the last two entries read
is kept, so consecutive atoms usually need one read). With ``D_POST_Y_EXTENSION`` each atom
holds ``p`` kernel lines (the rows of a row group; the last group keeps ``R % p``), one part
per line, and the weight loads follow the same row groups.

int16 and fp16 layers (builds where :func:`~hw.conv.common.conv_wide` holds,
``PROC_PRECISION`` INT16 or FP16; an fp16 layer is sequenced exactly as an int16 one): the
sequence of :mod:`hw.conv.common`'s "int16 layers": the channel loop counts
bytes (``2 x C``, groups of ``2 x AC`` bytes), kernel groups are ``AK / 2`` kernels, each
output position of a block is one atom per half of the channel group (``half`` 0 / 1, one
entry each), the pad value is all 16 bits of ``PAD_VALUE`` (low byte on even lanes, high byte
on odd ones), and a weight load's rows are the kernels' halves (row ``2*kk + h``: kernel
``kk``'s bytes ``h*AC .. h*AC + AC - 1`` of the block, fewer for a short group). An int16 or
fp16 image layer counts the kernel line, its x step and its parts in bytes (2 per element);
half ``h`` is bytes ``[h*AC, h*AC + AC)`` of the group's vector (the post-extended parts one
after the other, or the group's bytes of the line), so each part contributes the overlap of
its bytes with the half (a part may straddle the two halves; one with no bytes in the half
reads nothing), and half 1 is sent when the vector is longer than ``AC`` bytes.

Two-column CBUF entries (``cbuf_entry_width`` = 2 x the bank width, int8, int16 and fp16
feature and image input): slices, ``ENTRIES`` and the data ring count register entries of two
bank rows; channel group ``j`` of position ``x`` is row ``2*((j // 2)*W + x) + j % 2`` of the
slice (a shared cripple entry: a row, or half a row, per position; :mod:`hw.conv.common`); an
int16 channel group ``j`` (``2 x AC`` bytes) is entry ``j*W + x``, its half ``h`` the entry's
row ``h``; an fp16 atom of such a build also carries ``hend`` (the group's last atom: half
1, or the lone half 0 of a group of at most ``AC`` bytes), as Cmac's fp16 cells take the
whole entry. Image input there: the padded line's bytes run through the slice's bank rows in
order (row ``e`` of the slice is entry ``e // 2``'s row ``e % 2``), so the image sequence
reads bank rows as on bank-row builds.

Winograd (``D_MISC_CFG.CONV_MODE=WINOGRAD``, builds where
:func:`~hw.conv.common.conv_winograd` holds, int8 and int16): the weight engine runs the
layer as a 1 x 1 layer of ``16 x DATAIN_CHANNEL_EXT`` channels (a channel group is one small
cube of the Winograd weight surface, which is then read unchanged), and the data atoms come
from :class:`~hw.conv.wino_dat.WinoDat` (its reads on ``dat_rd``), in the same sequence with
the same tags; the direct data engine stays idle.

The data region is banks ``[0, D_BANK.DATA_BANK + 1)``, the weight region the next
``D_BANK.WEIGHT_BANK + 1`` banks (both taken from ``regs``).

Batches (builds with ``batching``; ``B = D_BATCH_NUMBER.BATCHES + 1``): the whole sequence
above runs once per batch, batch-major (``for batch b; for kernel group g; ...``), so the
accumulator delivers batch 0's cube, then batch 1's, each in SDP's input order (SDP's batch
mode writes batch ``b`` at its batch stride). Batch ``b``'s line ``iy`` is slice ``iy*B + b``
(:mod:`hw.conv.common`): its entries start at ``iy*(B*E) + b*E`` from ``dat_base``, and an
atom waits for ``dat_slices > iy*B + b``. The weight engine walks the weights again for
every batch: weights that fit the weight banks from byte 0, released only after the last
batch's last load; larger ones (``wt_copy.bytes`` != 0: the Cdma fetches a copy per batch,
:mod:`hw.conv.common` "Weight copies") from the batch's copy, released group by group and
whole at the batch's end, the copy's first ring row advanced by ``wt_copy.rows``. ``end`` is
on the last batch's final atom.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from arch.registers import register_map
from ..regfile import fields_layout
from .common import cbuf_read_signature, conv_fp16, conv_wide, conv_winograd, dat_layout, \
    fp16_two_pass, \
    wt_copy_layout, wt_count_bits, \
    max_stripe, stripe_len, wt_layout
from .image import times_small
from .wino_dat import WinoDat

__all__ = ["Csc", "FIFO_DEPTH", "stripe_length"]

#: output FIFO depth = atoms in flight at most (pipeline latency 4 + slack)
FIFO_DEPTH = 8


def stripe_length(remaining: int, ms: int) -> int:
    """The length of the next stripe when ``remaining`` output positions of the kernel group
    are left (the rule the hardware applies; for testbenches)."""
    if remaining <= ms:
        return remaining
    if remaining < ms + ms // 2:
        return remaining >> 1
    return ms


def _log2(n):
    assert n & (n - 1) == 0, n
    return n.bit_length() - 1


class Csc(wiring.Component):
    """``Csc(cfg)``: the convolution sequence controller (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._ac, self._ak = cfg.atomic_c, cfg.atomic_k
        self._bw, self._atom = cfg.cbuf_bank_width, cfg.memory_atom
        self._depth, self._banks = cfg.cbuf_bank_depth, cfg.cbuf_banks
        self._ms = max_stripe(cfg)
        self._wino = conv_winograd(cfg)
        entries = self._banks * self._depth
        block = register_map(cfg)["CSC"]
        super().__init__({
            "regs": In(fields_layout(block.d_registers, ("rw",))),
            "start": In(1),
            "dat_base": In(range(entries)),
            "dat_slices": In(range(entries + 1)),
            "wt_base": In(range(entries)),
            "wt_bytes": In(wt_count_bits(cfg)),
            "wt_released": Out(wt_count_bits(cfg)),
            # builds with batching: a batched layer's weight copies (hw.conv.common)
            **({"wt_copy": In(wt_copy_layout(cfg))} if cfg.batching else {}),
            "dat_rd": Out(cbuf_read_signature(cfg)),
            "wt_rd": Out(cbuf_read_signature(cfg)),
            "dat": Out(stream.Signature(dat_layout(cfg))),
            "wt": Out(stream.Signature(wt_layout(cfg))),
            "done": Out(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        AC, AK, BW, ATOM = self._ac, self._ak, self._bw, self._atom
        DEPTH, ms = self._depth, self._ms
        NE = self._banks * DEPTH
        P = BW // ATOM                      # memory atoms per CBUF bank row
        # two-column entries (cbuf_entry_width = 2 x BW): the data layout counts register
        # entries of PE atoms, entry e = bank rows 2e and 2e + 1; channel group j (AC channels,
        # one row) of position x is row 2*((j // 2)*W + x) + j % 2 of the slice
        twocol = self._cfg.cbuf_entry_bytes != BW
        PE = self._cfg.cbuf_entry_bytes // ATOM
        EDEPTH = self._cfg.cbuf_entry_depth
        R = self.regs

        # ---- layer parameters (combinational from the stable registers) ------------------
        W = R.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1
        H = R.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1
        C = R.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT + 1
        E1 = R.D_ENTRY_PER_SLICE.ENTRIES + 1
        S_m1 = R.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT
        R_m1 = R.D_WEIGHT_SIZE_EXT_0.WEIGHT_HEIGHT_EXT
        K = R.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL + 1
        OW_m1 = R.D_DATAOUT_SIZE_0.DATAOUT_WIDTH
        sx = R.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT + 1
        sy = R.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT + 1
        dx = R.D_DILATION_EXT.X_DILATION_EXT + 1
        dy = R.D_DILATION_EXT.Y_DILATION_EXT + 1
        pl = R.D_ZERO_PADDING.PAD_LEFT
        pt = R.D_ZERO_PADDING.PAD_TOP
        pad = R.D_ZERO_PADDING_VALUE.PAD_VALUE[:8]
        # int16 / fp16 layers (conv_wide builds): channels counted in bytes, groups of 2 x AC
        # bytes (the check lets only the build's precisions through)
        i16b = conv_wide(self._cfg)
        i16 = Signal()
        cl_bits = 19 if self._wino else 14
        if i16b:
            m.d.comb += i16.eq(R.D_MISC_CFG.PROC_PRECISION != 0)
            cl_bits = max(cl_bits, 15)
            C = Mux(i16, C << 1, C)
            G = Mux(i16, 2 * AC, AC)                # channel group bytes
            KG = Mux(i16, max(AK // 2, 1), AK)      # kernels per group
        else:
            G, KG = AC, AK

        # image input (the CBUF line is the padded pixel line, C bytes per pixel): the channel
        # loop runs over the pre-extended kernel line (WEIGHT_CHANNEL_EXT + 1 = S x C bytes), x
        # steps by stride x C bytes from byte 0 (the CDMA wrote the left padding), no dilation;
        # post-extension (p = 2 / 4 lines) puts p kernel lines in one atom
        # int16 / fp16 image layers (i16): every count in bytes, 2 per element
        img = R.D_DATAIN_FORMAT.DATAIN_FORMAT
        WC = R.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT + 1
        WCb = WC                                    # the kernel line in CBUF bytes
        if i16b:
            WCb = Signal(16)
            m.d.comb += WCb.eq(WC << i16)
        pe = Signal(2)
        m.d.comb += pe.eq(Mux(img, R.D_POST_Y_EXTENSION.Y_EXTENSION, 0))
        post = pe != 0
        Rk = R_m1 + 1
        C_seq = Mux(img, WCb, C)                    # channels (bytes) of the sequence's atoms
        if i16b:                                    # (C counts bytes there: the pixel's C)
            Cpix = R.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT + 1
            xstep = Mux(img, times_small(sx, Cpix) << i16, sx)
        else:
            xstep = Mux(img, times_small(sx, C), sx)
        pl = Mux(img, 0, pl)
        dy = Mux(img, Const(1, 3) << pe, dy)
        R_m1 = Mux(img, R_m1 >> pe, R_m1)           # kernel rows (row groups) - 1
        # Winograd (builds where conv_winograd holds): the weight engine reads the surface as
        # a 1 x 1 layer's of 16 x C_ext channels (one small cube a channel group); the data
        # atoms come from WinoDat (see "Winograd")
        wg = Signal()
        if self._wino:
            m.d.comb += wg.eq(R.D_MISC_CFG.CONV_MODE != 0)
            R_m1 = Mux(wg, 0, R_m1)
            S_m1 = Mux(wg, 0, S_m1)
            C_seq = Mux(wg, C << 4, C_seq)

        # registered derived values (valid two cycles after the registers are)
        n_out = Signal(28)                  # OW x OH
        n_dat = Signal(range(NE + 1))       # data region entries
        n_wt = Signal(range(NE + 1))        # weight region entries
        crip = Signal(2)                    # last channel group shared by 1 / 2 / 4 positions
        # batches (builds with batching): the whole sequence once per batch, batch-major;
        # slice of line iy, batch b = iy*B + b, at iy*(B*E) + b*E
        bat = self._cfg.batching
        if bat:
            NB_m1 = R.D_BATCH_NUMBER.BATCHES
            EB = Signal(range(32 * (1 << 16)))         # B x entries per slice
            m.d.sync += EB.eq((NB_m1 + 1) * E1)
        m.d.sync += [
            n_out.eq((OW_m1 + 1) * (R.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT + 1)),
            n_dat.eq((R.D_BANK.DATA_BANK + 1) * EDEPTH),
            n_wt.eq((R.D_BANK.WEIGHT_BANK + 1) * DEPTH),
        ]
        if twocol:
            n_dat_r = Signal(range(NE + 1))  # data region bank rows
            m.d.sync += n_dat_r.eq((R.D_BANK.DATA_BANK + 1) * DEPTH)
        if PE > 1:
            catoms = (C + (ATOM - 1)) >> _log2(ATOM)
            rem_atoms = catoms[:_log2(PE)]
            share2 = rem_atoms * 2 == PE
            share4 = (rem_atoms * 4 == PE) if PE % 4 == 0 else Const(0)
            m.d.sync += crip.eq(Mux(share2, 1, Mux(share4, 2, 0)))

        # ---- start: parameters settle for two cycles -------------------------------------
        st1, go = Signal(), Signal()
        m.d.sync += [st1.eq(self.start), go.eq(st1)]
        busy = Signal()
        m.d.comb += self.busy.eq(busy)
        with m.If(self.start):
            m.d.sync += busy.eq(1)
        with m.If(self.done):
            m.d.sync += busy.eq(0)

        # =================================================================================
        # data engine, S0: sequence counters
        cw = 20                             # signed input coordinates
        d_run = Signal()
        d_kleft = Signal(14)                # kernels from this group on
        d_rem = Signal(28)                  # output positions from this stripe on
        so_y, so_x = Signal(14), Signal(14)  # stripe start
        so_iyb, so_ixb = Signal(signed(cw)), Signal(signed(cw))
        oy, ox = Signal(14), Signal(14)
        iyb, ixb = Signal(signed(cw)), Signal(signed(cw))   # oy*sy - pt, ox*sx - pl
        pos = Signal(range(ms))
        d_cleft = Signal(cl_bits)           # channels (int16: bytes) from this group on
        d_h = Signal()                      # int16: the half of the channel group
        d_goff = Signal(range(NE + 1))      # j x W (two-column entries: j // 2 x W)
        if twocol:
            d_jh = Signal()                 # two-column entries: j % 2
        d_r, d_s = Signal(5), Signal(5)
        d_ry, d_sxo = Signal(10), Signal(10)    # r*dy, s*dx

        d_len = Signal(range(ms + 1))
        m.d.comb += d_len.eq(stripe_len(d_rem, ms))
        if bat:
            d_b = Signal(5)                     # batch
            d_bE = Signal(range(NE + 1))        # b x entries per slice
            batch_last = d_b == NB_m1
        blk_first = (d_goff == 0) & (d_r == 0) & (d_s == 0)
        if twocol:
            blk_first = blk_first & ~d_jh
        last_j = d_cleft <= G
        if i16b:
            # the position's final atom: half 1, or a group vector of at most AC bytes (a
            # post-extended image: its parts' bytes)
            vec_gt = Signal()
            h_last = ~(i16 & vec_gt) | d_h
        else:
            h_last = Const(1)
        blk_last = last_j & (d_r == R_m1) & (d_s == S_m1)
        pos_last = pos == d_len - 1
        stripe_last = d_rem == d_len
        group_last = d_kleft <= KG
        end_tag = blk_last & pos_last & stripe_last & group_last
        if bat:
            end_tag = end_tag & batch_last
        iy0 = Signal(signed(cw))
        ix0 = Signal(signed(cw))
        m.d.comb += [iy0.eq(iyb + d_ry), ix0.eq(ixb + d_sxo)]

        # image: an atom is one or more micro-operations (CBUF reads). Per part (the kernel
        # line ``part`` of a post-extended atom; one part otherwise) its bytes lie in entries
        # e0 and e0 + 1 of the line; the data side keeps a window of the last two entries
        # read, so a part needs 0, 1 or 2 reads (``sh_*``: what the window will hold)
        lbw = _log2(BW)
        part = Signal(2)
        sub = Signal()
        sh_v, sh_iy, sh_e = Signal(), Signal(signed(cw)), Signal(16)
        # the atom's kernel lines (post-extension: up to 2 / 4, fewer at the kernel's end) and
        # its last line's offset, d_ry + rows - 1: registers kept with d_ry (``rows_of``), so
        # the slice test below starts from registers
        rows = Signal(3)
        ry_last = Signal(signed(12))
        d_ry_n = Signal(10)                 # d_ry's next kernel row
        m.d.comb += d_ry_n.eq(d_ry + dy)

        def rows_of(d, name):
            rk_left = Signal(signed(12), name=f"rk_left_{name}")
            n = Signal(3, name=f"rows_{name}")
            m.d.comb += [rk_left.eq(Rk - d),
                         n.eq(Mux(post, Mux(rk_left < (Const(1, 3) << pe), rk_left,
                                            Const(1, 3) << pe), 1))]
            return n

        rows_0, rows_n = rows_of(0, "0"), rows_of(d_ry_n, "n")

        def ry_to(d, n):                    # d_ry <- d with its rows n
            return [d_ry.eq(d), rows.eq(n), ry_last.eq(d + n - 1)]
        iy_p = Signal(signed(cw))
        # The atom is bytes [hs, hs + AC) of the group's vector (the concatenated parts; hs =
        # AC x the int16 half, else 0); part k is vector bytes [k x L, k x L + L) (L: the
        # kernel line with post-extension, else the group's bytes), the line's bytes from
        # ixb + goff on: the micro-op takes its [a, b) overlap, ``cnt`` bytes from line byte
        # ``bx`` to atom lane ``lane`` (int8: the whole part at lane k x L)
        bx = Signal(cw)                     # line byte of the micro-op's first byte
        e0 = Signal(16)
        if i16b:
            L = Signal(range(2 * AC + 1))
            ps = Signal(range(8 * AC + 1))
            m.d.comb += [L.eq(Mux(post, WCb, Mux(last_j, d_cleft, G))),
                         ps.eq(times_small(L, part))]
            hs = Mux(d_h, AC, 0)
            a_ = Mux(ps > hs, ps, hs)
            b_ = Mux(ps + L < hs + AC, ps + L, hs + AC)
            cnt = Signal(range(AC + 1))
            lane = Signal(range(AC + 1))
            m.d.comb += [cnt.eq(Mux(b_ > a_, b_ - a_, 0)), lane.eq(a_ - hs),
                         vec_gt.eq(Mux(img & post, times_small(WCb, rows), d_cleft) > AC),
                         iy_p.eq(iy0 + part), bx.eq(ixb.as_unsigned() + d_goff + (a_ - ps)),
                         e0.eq(bx >> lbw)]
            pad_line = (iy_p < 0) | (iy_p >= H)
            skip = pad_line | (cnt == 0)    # no read (an int16 half past the part: no bytes)
        else:                               # int8: the whole part at lane k x WC
            m.d.comb += [iy_p.eq(iy0 + part), bx.eq(ixb.as_unsigned() + d_goff),
                         e0.eq(bx >> lbw)]
            cnt, lane = Mux(post, WC, Mux(last_j, d_cleft, AC)), times_small(WC, part)
            pad_line = (iy_p < 0) | (iy_p >= H)
            skip = pad_line
        hit0 = sh_v & (sh_iy == iy_p) & (sh_e == e0)
        hit1 = sh_v & (sh_iy == iy_p) & (sh_e + 1 == e0)
        two = Signal()                      # this micro-op is the first of two reads
        atom_done = Signal()
        m.d.comb += [two.eq(img & ~skip & ~hit0 & ~hit1 & ~sub),
                     atom_done.eq(~img | (~two & (part == rows - 1)))]

        outstanding = Signal(range(FIFO_DEPTH + 1))
        iy_last = Signal(signed(cw))
        m.d.comb += iy_last.eq(iyb + ry_last)
        if bat:
            # slice y x B + b of the atom's last line (none needed: every line is padding)
            y_need = Signal(14)
            m.d.comb += y_need.eq(Mux(iy_last >= H, H - 1, iy_last.as_unsigned()[:14]))
            slices_ok = ((iy0 >= H) | (iy_last < 0)
                         | (y_need * (NB_m1 + 1) + d_b < self.dat_slices))
        else:
            # = (iy0 >= H) | (min(iy_last, H - 1) < dat_slices), without the min in the path
            slices_ok = (iy0 >= H) | (iy_last < self.dat_slices) | (H <= self.dat_slices)
        issue = Signal()
        issue_atom = Signal()
        m.d.comb += [issue.eq(d_run & (outstanding < FIFO_DEPTH) & slices_ok),
                     issue_atom.eq(issue & atom_done)]
        with m.If(issue & img):
            with m.If(two):
                m.d.sync += sub.eq(1)
            with m.Else():
                m.d.sync += [sub.eq(0), part.eq(Mux(atom_done, 0, part + 1))]
                with m.If(~skip):
                    m.d.sync += [sh_v.eq(1), sh_iy.eq(iy_p), sh_e.eq(e0)]

        # stepping one output position in raster order
        def step(y, x, yb, xb, ny, nx, nyb, nxb):
            with m.If(x == OW_m1):
                m.d.sync += [nx.eq(0), nxb.eq(-pl), ny.eq(y + 1), nyb.eq(yb + sy)]
            with m.Else():
                m.d.sync += [nx.eq(x + 1), nxb.eq(xb + xstep), ny.eq(y), nyb.eq(yb)]

        def restart_group():
            for a, b in ((so_y, 0), (so_x, 0), (so_iyb, -pt), (so_ixb, -pl),
                         (oy, 0), (ox, 0), (iyb, -pt), (ixb, -pl)):
                m.d.sync += a.eq(b)
            m.d.sync += d_rem.eq(n_out)

        # S1 registers
        s1_v = Signal()
        s1_iy, s1_ix = Signal(signed(cw)), Signal(signed(cw))
        s1_goff = Signal.like(d_goff)
        s1_crip = Signal(2)
        if twocol:
            s1_jh = Signal()
        s1_cj = Signal(range(AC + 1))
        hend = fp16_two_pass(self._cfg)                     # fp16 cells of a whole entry
        tag_l = data.StructLayout({"swap": 1, "first": 1, "last": 1, "pos": range(ms), "end": 1,
                                   **({"half": 1} if i16b else {}),
                                   **({"hend": 1} if hend else {})})
        s1_tag = Signal(tag_l)
        uop_l = data.StructLayout({"rd": 1, "e": 16, "off": range(BW), "pshift": range(AC + 1),
                                   "pad": 1, "pdone": 1, "adone": 1})
        s1_u = Signal(uop_l)
        m.d.sync += s1_v.eq(issue)

        if i16b:
            # int16: half d_h of the group: its entry, its bytes, the position's tags
            rem_b = Signal(cl_bits)
            m.d.comb += rem_b.eq(d_cleft - Mux(d_h, AC, 0))
            # (two-column entries: half d_h is the entry's row d_h, s1_jh below)
            seq = [s1_goff.eq(d_goff if twocol else d_goff + Mux(d_h, W, 0)),
                   s1_crip.eq(Mux(last_j & h_last & ~img, crip, 0)),
                   s1_cj.eq(Mux(img, cnt, Mux(rem_b <= AC, rem_b, AC))),
                   s1_tag.swap.eq((pos == 0) & ~d_h), s1_tag.first.eq(blk_first & ~d_h),
                   s1_tag.last.eq(blk_last & h_last), s1_tag.half.eq(d_h), s1_tag.pos.eq(pos),
                   s1_tag.end.eq(end_tag & h_last)]
            if hend:
                seq.append(s1_tag.hend.eq(h_last))
        else:
            seq = [s1_goff.eq(d_goff),
                   s1_crip.eq(Mux(last_j & ~img, crip, 0)),
                   s1_cj.eq(Mux(post, WC, Mux(last_j, d_cleft, AC))),
                   s1_tag.swap.eq(pos == 0), s1_tag.first.eq(blk_first),
                   s1_tag.last.eq(blk_last), s1_tag.pos.eq(pos),
                   s1_tag.end.eq(end_tag)]
        if twocol:
            seq.append(s1_jh.eq(Mux(i16, d_h, d_jh) if i16b else d_jh))
        if bat:
            d_bE_s1 = Signal.like(d_bE)
            with m.If(issue):
                m.d.sync += d_bE_s1.eq(d_bE)
        with m.If(issue):
            m.d.sync += [
                s1_iy.eq(Mux(img, iy_p, iy0)), s1_ix.eq(ix0), *seq,
                s1_u.rd.eq(~skip & ~hit0), s1_u.e.eq(Mux(two, e0, e0 + 1)),
                s1_u.off.eq(bx[:lbw]), s1_u.pshift.eq(lane),
                s1_u.pad.eq(pad_line), s1_u.pdone.eq(~two), s1_u.adone.eq(atom_done),
            ]
        with m.If(go):
            m.d.sync += [d_run.eq(~wg), d_kleft.eq(K), pos.eq(0), d_cleft.eq(C_seq), d_goff.eq(0),
                         d_r.eq(0), d_s.eq(0), *ry_to(0, rows_0), d_sxo.eq(0), sh_v.eq(0),
                         part.eq(0), sub.eq(0)]
            if i16b:
                m.d.sync += d_h.eq(0)
            if bat:
                m.d.sync += [d_b.eq(0), d_bE.eq(0)]
            if twocol:
                m.d.sync += d_jh.eq(0)
            restart_group()
        if i16b:
            with m.Elif(issue_atom & ~h_last):
                m.d.sync += d_h.eq(1)               # int16: the group's second half next
        with m.Elif(issue_atom):
            if i16b:
                m.d.sync += d_h.eq(0)
            with m.If(~pos_last):
                m.d.sync += pos.eq(pos + 1)
                step(oy, ox, iyb, ixb, oy, ox, iyb, ixb)
            with m.Else():
                m.d.sync += pos.eq(0)
                # inner loops: s, r, j
                with m.If(d_s != S_m1):
                    m.d.sync += [d_s.eq(d_s + 1), d_sxo.eq(d_sxo + dx)]
                with m.Else():
                    m.d.sync += [d_s.eq(0), d_sxo.eq(0)]
                    with m.If(d_r != R_m1):
                        m.d.sync += [d_r.eq(d_r + 1), *ry_to(d_ry_n, rows_n)]
                    with m.Else():
                        m.d.sync += [d_r.eq(0), *ry_to(0, rows_0)]
                        with m.If(~last_j):
                            m.d.sync += d_cleft.eq(d_cleft - G)
                            if twocol:          # the row pair's second row, then the next
                                with m.If(img):
                                    m.d.sync += d_goff.eq(d_goff + G)
                                with m.Elif(i16 | d_jh):    # (int16: a group = an entry)
                                    m.d.sync += [d_goff.eq(d_goff + W), d_jh.eq(0)]
                                with m.Else():
                                    m.d.sync += d_jh.eq(1)
                            else:
                                m.d.sync += d_goff.eq(d_goff + Mux(img, G,
                                                                   Mux(i16, W << 1, W) if i16b
                                                                   else W))
                        with m.Else():
                            m.d.sync += [d_cleft.eq(C_seq), d_goff.eq(0)]
                            if twocol:
                                m.d.sync += d_jh.eq(0)
                with m.If(~blk_last):
                    # the next block of this stripe starts over at the stripe's start
                    m.d.sync += [oy.eq(so_y), ox.eq(so_x), iyb.eq(so_iyb), ixb.eq(so_ixb)]
                with m.Elif(~stripe_last):
                    m.d.sync += d_rem.eq(d_rem - d_len)
                    step(oy, ox, iyb, ixb, so_y, so_x, so_iyb, so_ixb)
                    step(oy, ox, iyb, ixb, oy, ox, iyb, ixb)
                with m.Elif(~group_last):
                    m.d.sync += d_kleft.eq(d_kleft - KG)
                    restart_group()
                if bat:
                    with m.Elif(~batch_last):
                        # the next batch: every kernel group again on its slices
                        m.d.sync += [d_b.eq(d_b + 1), d_bE.eq(d_bE + E1), d_kleft.eq(K)]
                        restart_group()
                with m.Else():
                    m.d.sync += d_run.eq(0)

        # S1: slice address and in-slice offset
        s2_v = Signal()
        s2_slice = Signal(range(2 * NE))
        s2_off = Signal(range(2 * NE))
        s2_in = Signal()
        s2_lsel = Signal(2)
        s2_crip = Signal(2)
        s2_cj = Signal.like(s1_cj)
        s2_tag = Signal(tag_l)
        s2_u = Signal(uop_l)
        iy_u = s1_iy.as_unsigned()[:14]
        ix_u = s1_ix.as_unsigned()[:14]
        slice_raw = Signal(range(2 * NE))
        if bat:
            m.d.comb += slice_raw.eq(iy_u * EB + d_bE_s1 + self.dat_base)
        else:
            m.d.comb += slice_raw.eq(iy_u * E1 + self.dat_base)
        xoff = Mux(s1_crip == 1, ix_u >> 1, Mux(s1_crip == 2, ix_u >> 2, ix_u))
        if twocol:
            # shared by 2: a row each (row x % 2 of the pair); by 4: half a row each (row
            # x // 2 % 2, lanes of x % 2: the S3 selection of a row shared by 2)
            s2_half = Signal()
            # (image: the line's bytes run through the slice's rows in order, row e of the
            # slice is entry e // 2's row e % 2)
            m.d.sync += s2_half.eq(Mux(img, s1_u.e[0],
                                       Mux(s1_crip == 1, ix_u[0], Mux(s1_crip == 2, ix_u[1],
                                                                      s1_jh))))
            lsel = [s2_lsel.eq(Mux(s1_crip == 2, ix_u[:1], 0)),
                    s2_crip.eq(Mux(s1_crip == 2, 1, 0))]
        else:
            lsel = [s2_lsel.eq(Mux(s1_crip == 1, ix_u[:1], Mux(s1_crip == 2, ix_u[:2], 0))),
                    s2_crip.eq(s1_crip)]
        m.d.sync += [
            s2_v.eq(s1_v),
            s2_slice.eq(Mux(slice_raw >= n_dat, slice_raw - n_dat, slice_raw)),
            s2_off.eq(Mux(img, s1_u.e >> 1 if twocol else s1_u.e, s1_goff + xoff)),
            s2_u.eq(s1_u),
            s2_in.eq((s1_iy >= 0) & (s1_iy < H) & (s1_ix >= 0) & (s1_ix < W)),
            *lsel, s2_cj.eq(s1_cj), s2_tag.eq(s1_tag),
        ]

        # S2: the CBUF read
        addr_raw = Signal(range(4 * NE))
        rd_en = Signal()
        rd_addr = Signal.like(self.dat_rd.addr)
        m.d.comb += [
            addr_raw.eq(s2_slice + s2_off),
            rd_en.eq(s2_v & Mux(img, s2_u.rd, s2_in)),
        ]
        if twocol:
            m.d.comb += rd_addr.eq(
                Cat(s2_half, Mux(addr_raw >= n_dat, addr_raw - n_dat, addr_raw)))
        else:
            m.d.comb += rd_addr.eq(Mux(addr_raw >= n_dat, addr_raw - n_dat, addr_raw))
        if self._wino:
            m.submodules.wino_dat = wd = WinoDat(self._cfg)
            m.d.comb += [wd.regs.eq(R), wd.go.eq(go & wg), wd.dat_base.eq(self.dat_base),
                         wd.dat_slices.eq(self.dat_slices), wd.rd.data.eq(self.dat_rd.data),
                         self.dat_rd.en.eq(Mux(wg, wd.rd.en, rd_en)),
                         self.dat_rd.addr.eq(Mux(wg, wd.rd.addr, rd_addr))]
        else:
            m.d.comb += [self.dat_rd.en.eq(rd_en), self.dat_rd.addr.eq(rd_addr)]
        s3_v, s3_in = Signal(), Signal()
        s3_lsel, s3_crip = Signal(2), Signal(2)
        s3_cj = Signal.like(s1_cj)
        s3_tag = Signal(tag_l)
        s3_u = Signal(uop_l)
        # (builds with ``cbuf_data_read_regs``: the CBUF's data come a cycle later, and the
        # read's S2 values with them)
        s2_vals = [s2_u, s2_v, s2_in, s2_lsel, s2_crip, s2_cj, s2_tag]
        for i in range(self._cfg.cbuf_data_read_regs):
            dly = [Signal.like(v, name=f"s2d{i}_{n}") for v, n in
                   zip(s2_vals, ("u", "v", "in", "lsel", "crip", "cj", "tag"))]
            m.d.sync += [d.eq(v) for d, v in zip(dly, s2_vals)]
            s2_vals = dly
        m.d.sync += [d.eq(v) for d, v in
                     zip([s3_u, s3_v, s3_in, s3_lsel, s3_crip, s3_cj, s3_tag], s2_vals)]

        # S3: lanes, mask, pad -> FIFO
        raw = self.dat_rd.data
        if P > 1:
            ext = Cat(raw, Const(0, BW * 8))      # no out-of-range part-selects
            sh2 = ext.bit_select(s3_lsel[:1] * (BW // 2 * 8), BW * 8) if P % 2 == 0 else raw
            sh4 = ext.bit_select(s3_lsel * (BW // 4 * 8), BW * 8) if P % 4 == 0 else raw
            lanes = Mux(s3_crip == 1, sh2, Mux(s3_crip == 2, sh4, raw))
        else:
            lanes = raw
        # image: the window of the last two entries read, the part's bytes from ``off`` on,
        # placed at lane ``pshift`` of the atom being assembled
        win_lo, win_hi = Signal(BW * 8), Signal(BW * 8)
        n_lo = Mux(s3_u.rd, win_hi, win_lo)
        n_hi = Mux(s3_u.rd, raw, win_hi)
        with m.If(s3_v & s3_u.rd):
            m.d.sync += [win_lo.eq(win_hi), win_hi.eq(raw)]
        part_b = Signal(AC * 8)
        m.d.comb += part_b.eq(Cat(n_lo, n_hi).bit_select(Cat(Const(0, 3), s3_u.off), AC * 8))
        part_m = Signal(AC * 8)
        for c in range(AC):
            pad_b = pad                     # (int16 / fp16: lane pairs of the 16-bit value)
            if i16b and c % 2:
                pad_b = Mux(i16, R.D_ZERO_PADDING_VALUE.PAD_VALUE[8:16], pad)
            m.d.comb += part_m[c * 8:(c + 1) * 8].eq(
                Mux(c < s3_cj, Mux(s3_u.pad, pad_b, part_b[c * 8:(c + 1) * 8]), 0))
        img_acc = Signal(AC * 8)
        img_atom = Signal(AC * 8)
        m.d.comb += img_atom.eq(img_acc | (part_m << Cat(Const(0, 3), s3_u.pshift)))
        with m.If(s3_v & s3_u.pdone):
            m.d.sync += img_acc.eq(Mux(s3_u.adone, 0, img_atom))

        atom = Signal(dat_layout(self._cfg))
        for c in range(AC):
            byte = lanes[c * 8:(c + 1) * 8]
            pad_c = pad
            if i16b and c % 2:              # int16: the pad value's high byte on odd lanes
                pad_c = Mux(i16, R.D_ZERO_PADDING_VALUE.PAD_VALUE[8:16], pad)
            m.d.comb += atom.data[c].eq(Mux(img, img_atom[c * 8:(c + 1) * 8],
                                            Mux(c < s3_cj, Mux(s3_in, byte, pad_c), 0)))
        m.d.comb += [atom.swap.eq(s3_tag.swap), atom.first.eq(s3_tag.first),
                     atom.last.eq(s3_tag.last), atom.pos.eq(s3_tag.pos),
                     atom.end.eq(s3_tag.end)]
        if i16b:
            m.d.comb += atom.half.eq(s3_tag.half)
        if hend:
            m.d.comb += atom.hend.eq(s3_tag.hend)

        m.submodules.fifo = fifo = SyncFIFO(width=len(atom.as_value()), depth=FIFO_DEPTH)
        take = self.dat.valid & self.dat.ready
        m.d.comb += [fifo.w_en.eq(s3_v & (~img | s3_u.adone)), fifo.w_data.eq(atom)]
        if self._wino:                  # Winograd layers: WinoDat's atoms
            with m.If(wg):
                m.d.comb += [self.dat.valid.eq(wd.o.valid), self.dat.payload.eq(wd.o.payload),
                             wd.o.ready.eq(self.dat.ready)]
            with m.Else():
                m.d.comb += [self.dat.valid.eq(fifo.r_rdy), self.dat.payload.eq(fifo.r_data),
                             fifo.r_en.eq(self.dat.ready)]
        else:
            m.d.comb += [self.dat.valid.eq(fifo.r_rdy), self.dat.payload.eq(fifo.r_data),
                         fifo.r_en.eq(self.dat.ready)]
        with m.If(issue_atom & ~take):
            m.d.sync += outstanding.eq(outstanding + 1)
        with m.Elif(~issue_atom & take):
            m.d.sync += outstanding.eq(outstanding - 1)
        m.d.sync += self.done.eq(take & self.dat.payload.end)

        # =================================================================================
        # weight engine
        lbw = _log2(BW)
        w_kleft = Signal(14)
        w_rem = Signal(28)
        w_cleft = Signal(cl_bits)
        w_r, w_s = Signal(5), Signal(5)
        WB = wt_count_bits(self._cfg)
        w_b, w_gb = Signal(WB), Signal(WB)          # byte offsets in the weight stream
        w_p, w_gp = Signal(range(NE)), Signal(range(NE))   # entry ring positions
        w_kk = Signal(range(AK))
        if bat:
            w_bat = Signal(5)                       # batch of the weight sequence
            cp = self.wt_copy
            w_cb = Signal(WB)                       # the batch's weight copy: first byte
            w_cp = Signal(range(NE))                # ... and its ring row
            w_cpend = Signal()                      # the next batch waits for w_cp
        w_lo = Signal(BW * 8)
        # the ``wt`` transfer register: one kernel row, set in LOAD (the CMAC's ``ready`` is
        # high through a load, see WAIT), so the CBUF read path ends at these flip-flops
        wt_v = Signal()
        wt_row = Signal.like(self.wt.payload)
        m.d.comb += [self.wt.valid.eq(wt_v), self.wt.payload.eq(wt_row)]
        m.d.sync += wt_v.eq(0)

        kg = Signal(range(AK + 1))
        cj = Signal(range(2 * AC + 1 if i16b else AC + 1))     # the block's bytes per kernel
        w_len = Signal(range(ms + 1))
        w_ry = Signal(10)                           # w_r x lines per row group
        w_rows = Signal(signed(12))
        m.d.comb += w_rows.eq(Rk - w_ry)
        rows_w = Mux(w_rows < (Const(1, 3) << pe), w_rows, Const(1, 3) << pe)[:3]
        m.d.comb += [kg.eq(Mux(w_kleft < KG, w_kleft, KG)),
                     cj.eq(Mux(post, times_small(WCb, rows_w),
                               Mux(w_cleft < G, w_cleft, G))),
                     w_len.eq(stripe_len(w_rem, ms))]
        # May the next block start? Its weights (bytes w_b .. w_b + kg x cj) must be written.
        # ``ahead``: w_b plus the largest block is written, a short test on registers that
        # decides at once while the weights run ahead of the sequencer (the usual case);
        # otherwise the exact ``need`` decides from the fourth WAIT cycle, once its sources
        # settled: kg and cj, their product and the sum are registered one after the other
        # (off the CBUF read-address path). The largest block: kg <= KG, cj <= G (a
        # post-extended image line fits an atom, a rule of the check), so Atomic-K x
        # Atomic-C bytes (x 2 on builds with 16-bit layers).
        blk_max = AK * AC * (2 if i16b else 1)
        assert blk_max <= ((1 << len(kg)) - 1) * ((1 << len(cj)) - 1)
        ahead = Signal()
        m.d.comb += ahead.eq(w_b + blk_max <= self.wt_bytes)
        need = Signal(WB + 1)
        kc = Signal(len(kg) + len(cj))
        need_ok, need_ok2, need_ok3 = Signal(), Signal(), Signal()
        kg_l, cj_l = Signal.like(kg), Signal.like(cj)       # (also LOAD's, see below)
        m.d.sync += [kg_l.eq(kg), cj_l.eq(cj), kc.eq(kg_l * cj_l), need.eq(w_b + kc),
                     need_ok.eq(0), need_ok2.eq(0), need_ok3.eq(0)]
        wbase = n_dat_r if twocol else n_dat           # weight region base (flat bank row)

        def wrap1(p):
            return Mux(p + 1 >= n_wt, 0, p + 1)

        # kernel step (LOAD). The block's kg / cj as registered copies (their sources change
        # only on a block's last LOAD cycle, and WAIT and PRIME come between), so that the
        # next read address depends on registers through short logic: the row advances when
        # the offset in the row plus the kernel's bytes reach the row's end (``rlen`` <= AC
        # <= BW), and both candidate rows and their addresses are registers: ``r1`` / ``r2``
        # the ring rows after ``w_p`` and ``a1`` / ``a2`` their CBUF addresses, formed from
        # ``w_p`` every cycle outside LOAD (WAIT comes between any change of ``w_p`` and
        # PRIME) and moved on by a row with ``w_p`` in LOAD.
        assert AC <= BW, (AC, BW)
        o = w_b[:lbw]
        hi = self.wt_rd.data
        win = Cat(w_lo, hi)
        shifted = win.bit_select(Cat(Const(0, 3), o), BW * 8)
        if i16b:
            # int16: row w_kk is kernel w_kk // 2's half w_kk % 2 (at most AC bytes of it)
            real = Mux(i16, (w_kk >> 1) < kg_l, w_kk < kg_l)
            rlen = Signal(range(AC + 1))
            m.d.comb += rlen.eq(Mux(i16 & w_kk[0], Mux(cj_l > AC, cj_l - AC, 0),
                                    Mux(cj_l > AC, AC, cj_l)))
        else:
            real, rlen = w_kk < kg_l, cj_l
        row = Signal(BW * 8)
        for c in range(AC):
            m.d.comb += row[c * 8:(c + 1) * 8].eq(
                Mux(real & (c < rlen), shifted[c * 8:(c + 1) * 8], 0))
        b_next = Signal(WB)
        m.d.comb += b_next.eq(w_b + Mux(real, rlen, 0))
        adv = Signal()                              # b_next is in the next row
        m.d.comb += adv.eq(real & (((o + rlen) >> lbw) != 0))
        p1, p2, r1, r2, r3 = (Signal.like(w_p, name=n) for n in ("p1", "p2", "r1", "r2", "r3"))
        m.d.comb += [p1.eq(wrap1(w_p)), p2.eq(wrap1(p1)), r3.eq(wrap1(r2))]
        a1, a2 = Signal.like(self.wt_rd.addr), Signal.like(self.wt_rd.addr)
        m.d.sync += [r1.eq(p1), r2.eq(p2), a1.eq(wbase + p1), a2.eq(wbase + p2)]
        p_next = Signal.like(w_p)
        m.d.comb += p_next.eq(Mux(adv, r1, w_p))

        with m.FSM():
            with m.State("IDLE"):
                with m.If(go):
                    m.d.sync += [w_kleft.eq(K), w_rem.eq(n_out), w_cleft.eq(C_seq), w_r.eq(0),
                                 w_ry.eq(0),
                                 w_s.eq(0), w_b.eq(0), w_gb.eq(0), w_p.eq(self.wt_base),
                                 w_gp.eq(self.wt_base), self.wt_released.eq(0)]
                    if bat:
                        m.d.sync += [w_bat.eq(0), w_cb.eq(0), w_cp.eq(self.wt_base),
                                     w_cpend.eq(0)]
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.sync += [need_ok.eq(1), need_ok2.eq(need_ok), need_ok3.eq(need_ok2)]
                # the CMAC's shadow set not full, and the previous load's last row taken
                wait_ok = (self.wt.ready & ~wt_v
                           & (ahead | (need_ok3 & (need <= self.wt_bytes))))
                if bat:
                    # a batch on the next weight copy: its first ring row, once known
                    wait_ok = wait_ok & ~w_cpend
                    with m.If(w_cpend & cp.ok):
                        nrow = Signal(range(2 * NE + 1))
                        m.d.comb += nrow.eq(w_cp + cp.rows)
                        nrow_w = Mux(nrow >= n_wt, nrow - n_wt, nrow)
                        m.d.sync += [w_cp.eq(nrow_w), w_p.eq(nrow_w), w_gp.eq(nrow_w),
                                     w_cpend.eq(0), need_ok.eq(0), need_ok2.eq(0),
                                     need_ok3.eq(0)]
                with m.If(wait_ok):
                    m.d.comb += [self.wt_rd.en.eq(1), self.wt_rd.addr.eq(wbase + w_p)]
                    m.next = "PRIME"
            with m.State("PRIME"):
                m.d.sync += [w_lo.eq(self.wt_rd.data), w_kk.eq(0)]
                m.d.comb += [self.wt_rd.en.eq(1), self.wt_rd.addr.eq(a1)]
                m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += [self.wt_rd.en.eq(1), self.wt_rd.addr.eq(Mux(adv, a2, a1))]
                with m.If(adv):
                    m.d.sync += [r1.eq(r2), r2.eq(r3), a1.eq(a2), a2.eq(wbase + r3)]
                m.d.sync += [wt_v.eq(1), wt_row.data.eq(row[:AC * 8])]
                if conv_fp16(self._cfg):
                    m.d.sync += wt_row.kmask.eq(real)
                m.d.sync += [w_kk.eq(w_kk + 1),
                             w_lo.eq(Mux(adv, hi, w_lo)), w_b.eq(b_next), w_p.eq(p_next)]
                with m.If(w_kk == AK - 1):
                    m.next = "WAIT"
                    w_blk_last = (w_cleft <= G) & (w_r == R_m1) & (w_s == S_m1)
                    with m.If(w_s != S_m1):
                        m.d.sync += w_s.eq(w_s + 1)
                    with m.Else():
                        m.d.sync += w_s.eq(0)
                        with m.If(w_r != R_m1):
                            m.d.sync += [w_r.eq(w_r + 1), w_ry.eq(w_ry + dy)]
                        with m.Else():
                            m.d.sync += [w_r.eq(0), w_ry.eq(0)]
                            m.d.sync += w_cleft.eq(Mux(w_cleft <= G, C_seq, w_cleft - G))
                    with m.If(w_blk_last):
                        with m.If(w_rem != w_len):
                            # next stripe of this group: its weights again from the start
                            m.d.sync += [w_rem.eq(w_rem - w_len), w_b.eq(w_gb),
                                         w_p.eq(w_gp)]
                        if not bat:
                            with m.Else():
                                m.d.sync += [self.wt_released.eq(b_next), w_gb.eq(b_next),
                                             w_gp.eq(p_next), w_rem.eq(n_out),
                                             w_kleft.eq(w_kleft - KG)]
                                with m.If(w_kleft <= KG):
                                    m.next = "IDLE"
                        else:
                            with m.Else():
                                m.d.sync += [w_gb.eq(b_next), w_gp.eq(p_next), w_rem.eq(n_out),
                                             w_kleft.eq(w_kleft - KG)]
                                # weights that fit the ring stay there for every batch, each
                                # walking them again from byte 0, released after the last
                                # batch; larger ones come as one copy per batch, released as
                                # the groups end and whole when the batch ends
                                w_lastb = w_bat == NB_m1
                                copies = cp.bytes != 0
                                with m.If(w_lastb | copies):
                                    m.d.sync += self.wt_released.eq(b_next)
                                with m.If(w_kleft <= KG):
                                    with m.If(w_lastb):
                                        m.next = "IDLE"
                                    with m.Else():
                                        m.d.sync += [w_bat.eq(w_bat + 1), w_kleft.eq(K)]
                                        with m.If(copies):
                                            ncb = w_cb + cp.bytes
                                            m.d.sync += [w_cb.eq(ncb), w_b.eq(ncb),
                                                         w_gb.eq(ncb),
                                                         self.wt_released.eq(ncb),
                                                         w_cpend.eq(1)]
                                        with m.Else():
                                            m.d.sync += [w_b.eq(0), w_gb.eq(0),
                                                         w_p.eq(self.wt_base),
                                                         w_gp.eq(self.wt_base)]
        return m
