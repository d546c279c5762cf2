"""CMAC: the convolution multiply-accumulate array (int8; int16 and fp16 on builds with them;
spec "Convolution MAC").

Atomic-K MAC cells of Atomic-C int8 multipliers each. Every data atom from Csc (Atomic-C
channels of one output position) is multiplied with the Atomic-K kernels' Atomic-C weights of
the current block and each cell sums its Atomic-C products exactly::

    sums[k] = sum_c data[c] * active[k][c]          (psum_bits wide, no rounding)

NVDLA splits the cells between CMAC_A and CMAC_B; the values do not depend on the split, so
this is one array (golden model :mod:`sim.conv.cmac`).

Weights (the contract of :mod:`hw.conv.common`): a ``wt`` transfer is one kernel row; the
shadow set is a shift register the rows enter (row 0 first), full after ``AK`` rows, and
rows are accepted while it is not full (``ready`` is that level). A ``dat`` atom with
``swap=1`` moves shadow -> active as it enters (it waits until the shadow is full); the
shadow is then empty again, so the next block's load streams in while this block's atoms are
computed. ``clear`` (layer start) drops a shadow set, loaded or partly loaded; no ``wt``
transfer is accepted while it is high. (A row bus rather than a whole set: the set's
``AK x AC`` bytes are not carried from the Csc at once, so the Csc keeps no copy of them.)

Pipeline (no stall: every stage register moves every cycle, with no enable, and a FIFO
after the last stage holds the partial sums ``psum`` does not take yet. An atom is taken
only while the FIFO has room for it and for every atom in flight: a credit count from an
atom's transfer to its psum's exit, so a stalled ``psum`` holds back ``dat`` instead of the
stages; one atom per cycle in steady state)::

    dat --> [atom register] --> [products: data x active, DSP-shaped  a*b registered]
        --> [adder tree, 2 levels per stage] ... --> [FIFO] --> psum

(As NVDLA's CMAC, which has no back-pressure; there the CSC reserves the CACC's room. On
an FPGA the stall was an enable on every stage register, 1,560 flip-flops on nv_small,
driven by logic from the CACC's ready.)

int16 (builds where :func:`~hw.conv.common.conv_int16` holds; ``int16`` in, the layer's
precision): a ``dat`` atom holds ``AC / 2`` int16 channels (bytes ``2c, 2c + 1``) of half
``half`` of the channel group, the weights ``AK / 2`` kernels x ``AC`` int16 channels (row
``2*kk + h`` of the load: kernel ``kk``'s half ``h``), and::

    sums[kk] = sum_c d16[c] * w16[kk][half*AC/2 + c]      (kk < AK/2; sums past AK/2 are 0)

The ``AK/2 x AC/2`` multipliers of kernels ``< AK/2`` and channels ``< AC/2`` are 16 x 16
bits (their int8 products too, on sign-extended operands), the others stay 8 x 8 and give 0 in
int16 layers; int8-only builds generate the int8 array alone.

fp16 (builds where :func:`~hw.conv.common.conv_fp16` holds; ``fp16`` in, the layer is fp16,
sampled with each atom as it enters so it may change between layers): the atom and the weight
load have the int16 layout (fp16 code ``c`` of the atom at bytes ``2c, 2c + 1``, low byte
first; kernel ``kk``'s half ``h`` in weight row ``2*kk + h``), and ``AK / 2`` fp16 cells of
``AC / 2`` pairs (:class:`~hw.conv.fp16_cell.Fp16Cell`, NVDLA's cell as
:func:`sim.conv.cmac.fp16_mac_cell` models it) give::

    sums[kk] = fp16_mac_cell(w16[kk][half*AC/2 : half*AC/2 + AC/2], d16[0 : AC/2])

(kk < AK/2; sums past AK/2 are 0) on bank-row CBUF entries (a cell of ``AC / 2`` pairs, one
operation per atom). On two-column entries (nv_full) an fp16 cell multiplies a whole entry,
``AC`` pairs, as NVDLA's 64-pair cell does and the golden model's fp16 atom is::

    sums[kk] = fp16_mac_cell(w16[kk][0 : AC], d16_half0 ++ d16_half1)

in two operations of the same ``AC / 2``-pair cell (:class:`~hw.conv.fp16_cell.Fp16Cell`
with ``two_pass``): half 0 waits in ``hold0`` (with its swap) until half 1 is taken, then
enters stage A (role 1) while half 1 waits a cycle in ``hold1`` and follows (role 2); both
align to the entry's largest exponent sum and their sums add, so the result is the whole
entry's, one psum per position with half 0's ``first`` and half 1's other tags (role 1 gives
none). In the cycle after a pair's half 1 only another waiting half 0 is taken. A short
group's lone half 0 (``hend``) is one operation by itself. Both give the 44-bit partial-sum
code in the low 44 bits of the field, zero-extended when ``psum_bits`` is wider (as a signed
field, a code with bit 43 set reads negative: the consumer takes bits ``[0:44]``). The cells
sit beside the integer array with as many registers as it has from the products to the
output, so fp16 and integer layers have the same latency; int8- and int16-only builds
generate no fp16 logic.

Winograd atoms (builds where :func:`~hw.conv.common.conv_winograd` holds,
:mod:`hw.conv.wino_dat`): bit ``c`` of the atom's ``neg`` negates lane ``c`` (an int16
atom's element ``c``) before its multipliers -- the data operand is 9 bits (int16: 17), so
``-(-128)`` is exact, and the products stay within the int8 (int16) range the sums are
sized for. Direct atoms carry ``neg`` 0. fp16 Winograd atoms (builds where
:func:`~hw.conv.common.conv_winograd_fp16` holds: two-column entries, so an entry's two atoms
are one small cube and one two-pass cell operation) keep their data whole and carry ``zero``
besides ``neg``; both go to the fp16 cells, which weigh each aligned part by its POA
coefficient (:class:`~hw.conv.fp16_cell.Fp16Cell` ``wino``), held with half 0 like its data.

Latency from a ``dat`` transfer to ``psum.valid``: ``3 + ceil(log2(AC) / 2)`` cycles (5 on
nv_small, 6 on nv_large), fp16 atoms included (on two-column entries one more from half
1's transfer); :attr:`Cmac.latency`.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Shape, Signal, signed
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import conv_fp16, conv_int16, conv_wide, conv_winograd, conv_winograd_fp16, \
    dat_layout, fp16_two_pass, psum_bits, psum_layout, wt_layout, wt_set_layout
from .fp16_cell import Fp16Cell

__all__ = ["Cmac"]

#: adder-tree levels per pipeline register
_LEVELS_PER_STAGE = 2


class Cmac(wiring.Component):
    """Atomic-K x Atomic-C int8 MAC array with shadow/active weights (see module docstring).

    Ports: ``dat`` / ``wt`` in (:func:`~hw.conv.common.dat_layout`,
    :func:`~hw.conv.common.wt_layout`), ``psum`` out (:func:`~hw.conv.common.psum_layout`),
    ``clear`` in (layer start), ``int16`` / ``fp16`` in (builds with them: the layer's
    precision). Status out: ``shadow_full`` (a loaded weight set waits for its swap), ``busy``
    (an atom is in the pipeline).
    """

    def __init__(self, cfg):
        self._cfg = cfg
        self._ac, self._ak = cfg.atomic_c, cfg.atomic_k
        self._pb = psum_bits(cfg)
        self._levels = (self._ac - 1).bit_length()
        # the stage registers, then the output FIFO (written by the last stage, read a
        # cycle later)
        self.latency = 3 + -(-self._levels // _LEVELS_PER_STAGE)
        self._i16 = conv_int16(cfg)
        self._f16 = conv_fp16(cfg)
        # two-column entries: a cell takes both rows of an entry (two Csc atoms)
        self._hold = fp16_two_pass(cfg)
        # one credit for every atom from its transfer to its psum's exit: with a psum taken
        # every cycle, latency + 1 atoms are out (one more on two-column fp16 builds, whose
        # half 0 waits for half 1), and then the input is never held back (rates tested)
        need = self.latency + 1 + self._hold
        self._fifo_depth = 1 << (need - 1).bit_length()
        extra = {"int16": In(1)} if self._i16 else {}
        if self._f16:
            extra["fp16"] = In(1)
        super().__init__({**extra,
            "dat": In(stream.Signature(dat_layout(cfg))),
            "wt": In(stream.Signature(wt_layout(cfg))),
            "psum": Out(stream.Signature(psum_layout(cfg))),
            "clear": In(1),
            "shadow_full": Out(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        ac, ak = self._ac, self._ak
        wl = wt_set_layout(self._cfg)

        # ---- weights ------------------------------------------------------------------
        shadow = Signal(wl)
        active = Signal(wl)
        shadow_full = Signal()
        rows = Signal(range(ak))                # rows of the shadow set loaded
        m.d.comb += self.shadow_full.eq(shadow_full)

        # ---- pipeline control: no stall. Every stage register moves every cycle; the
        # output FIFO holds what ``psum`` does not take, and an atom is taken only while the
        # atoms in flight and in the FIFO leave it room (one credit per atom, from its
        # transfer until its psum leaves the FIFO or, a pair's half 0, the last stage) -----
        out_valid = Signal()
        q = fifo.SyncFIFO(width=Shape.cast(psum_layout(self._cfg)).width,
                           depth=self._fifo_depth)
        m.submodules.out_fifo = q
        used = Signal(range(self._fifo_depth + 1))
        room = Signal()
        m.d.comb += room.eq(used < self._fifo_depth)

        swap_ok = ~self.dat.payload.swap | shadow_full
        take = Signal()
        swap = Signal()
        if self._hold:
            # fp16 on two-column entries: half 0 waits in hold0 (its swap with it) until half
            # 1 comes; half 1 then waits a cycle in hold1 while half 0 is in stage A, so only
            # another waiting half 0 can be taken in that cycle
            p = self.dat.payload
            hs = SimpleNamespace(held=Signal(name="held"), pend=Signal(name="pend"),
                                 h0_swap=Signal(name="h0_swap"), h0_v=Signal(name="h0_v"))
            m.d.comb += [hs.held.eq(self.fp16 & ~p.half & ~p.hend),
                         self.dat.ready.eq(room & swap_ok & (~hs.pend | hs.held))]
            m.d.comb += take.eq(self.dat.valid & self.dat.ready)
            m.d.comb += swap.eq(Mux(self.fp16 & p.half, take & hs.h0_swap,
                                    take & ~hs.held & p.swap))
        else:
            m.d.comb += self.dat.ready.eq(room & swap_ok)
            m.d.comb += take.eq(self.dat.valid & self.dat.ready)
            m.d.comb += swap.eq(take & self.dat.payload.swap)

        m.d.comb += self.wt.ready.eq(~shadow_full & ~self.clear)
        with m.If(self.wt.valid & self.wt.ready):
            row_bits = ac * 8
            m.d.sync += [shadow.data.eq(Cat(shadow.data.as_value()[row_bits:],
                                            self.wt.payload.data)),
                         rows.eq(Mux(rows == ak - 1, 0, rows + 1))]
            if "kmask" in wl.members:
                m.d.sync += shadow.kmask.eq(Cat(shadow.kmask[1:], self.wt.payload.kmask))
            with m.If(rows == ak - 1):
                m.d.sync += shadow_full.eq(1)
        with m.If(swap):
            m.d.sync += [active.eq(shadow), shadow_full.eq(0)]
        with m.If(self.clear):
            m.d.sync += [shadow_full.eq(0), rows.eq(0)]

        # ---- stage A: the atom ----------------------------------------------------------
        tags = ("first", "last", "pos", "end")
        a_valid = Signal()
        a_data = Signal.like(self.dat.payload.data)
        a_tags = {t: Signal.like(self.dat.payload[t], name=f"a_{t}") for t in tags}
        a_half = Signal()
        if conv_wide(self._cfg) and not self._hold:
            m.d.sync += a_half.eq(self.dat.payload.half)
        if self._f16:                   # the layer's precision travels with its atoms
            a_tags["fp16"] = Signal(name="a_fp16")
            if not self._hold:
                m.d.sync += a_tags["fp16"].eq(self.fp16)
            else:
                a_tags["role"] = Signal(2, name="a_role")
        # Winograd atoms: lanes (int16 / fp16: elements) negated; fp16: elements dropped
        wino = conv_winograd(self._cfg)
        wf16 = conv_winograd_fp16(self._cfg)
        a_coef = {}
        if wino:
            a_coef["neg"] = a_neg = Signal(ac, name="a_neg")
        if wf16:
            a_coef["zero"] = a_zero = Signal(ac // 2, name="a_zero")
        if self._hold:
            self._stage_a_two_pass(m, hs, take, a_valid, a_data, a_tags, a_half, a_coef)
        else:
            m.d.sync += a_valid.eq(take)
            m.d.sync += a_data.eq(self.dat.payload.data)
            m.d.sync += [a_tags[t].eq(self.dat.payload[t]) for t in tags]
            m.d.sync += [a.eq(self.dat.payload[f]) for f, a in a_coef.items()]

        # ---- stage B: products (registered multipliers; active changes only on a swap,
        # which enters stage A in the same edge as the previous atom leaves it) ----------
        valid, tg = a_valid, a_tags
        b_valid = Signal()
        b_tags = {t: Signal.like(a_tags[t], name=f"b_{t}") for t in a_tags}
        def wide(k, c):                 # a 16 x 16 multiplier (int16 builds)
            return self._i16 and k < ak // 2 and c < ac // 2

        prods = [[Signal(signed(32 if wide(k, c) else 16), name=f"p_{k}_{c}")
                  for c in range(ac)] for k in range(ak)]
        # the data operands: int8 lanes (Winograd builds: 9 bits, negated by ``neg``; the
        # products stay in the int8 range, -(-128) x -128 included) and int16 elements
        d8 = list(a_data)
        d16s = []
        for c in range(ac):
            if wino:
                dn = Signal(signed(9), name=f"dn_{c}")
                m.d.comb += dn.eq(Mux(a_neg[c], -a_data[c], a_data[c]))
                d8[c] = dn
            if self._i16 and c < ac // 2:
                d16 = Cat(a_data[2 * c], a_data[2 * c + 1]).as_signed()
                if wino:
                    xn = Signal(signed(17), name=f"xn_{c}")
                    m.d.comb += xn.eq(Mux(a_neg[c], -Mux(self.int16, d16, a_data[c]),
                                          Mux(self.int16, d16, a_data[c])))
                    d16s.append(xn)
                else:
                    x = Signal(signed(16), name=f"x_{c}")
                    m.d.comb += x.eq(Mux(self.int16, d16, a_data[c]))
                    d16s.append(x)
        m.d.sync += b_valid.eq(a_valid)
        m.d.sync += [b_tags[t].eq(a_tags[t]) for t in a_tags]
        for k in range(ak):
            for c in range(ac):
                if wide(k, c):
                    w16 = Mux(a_half,
                              Cat(active.data[2 * k + 1][2 * c],
                                  active.data[2 * k + 1][2 * c + 1]),
                              Cat(active.data[2 * k][2 * c],
                                  active.data[2 * k][2 * c + 1])).as_signed()
                    y = Signal(signed(16), name=f"y_{k}_{c}")
                    m.d.comb += y.eq(Mux(self.int16, w16, active.data[k][c]))
                    m.d.sync += prods[k][c].eq(d16s[c] * y)
                elif self._i16:
                    m.d.sync += prods[k][c].eq(
                        Mux(self.int16, 0, d8[c] * active.data[k][c]))
                else:
                    m.d.sync += prods[k][c].eq(d8[c] * active.data[k][c])
        valid, tg, vals = b_valid, b_tags, prods

        # ---- fp16 cells (fp16 builds): AK/2 cells of AC/2 pairs, as many registers as the
        # integer path from stage B to the FIFO ---------------------------------------------
        cells = []
        if self._f16:
            for kk in range(ak // 2):
                cell = Fp16Cell(ac // 2, self.latency - 2, two_pass=self._hold, wino=wf16)
                m.submodules[f"fp16_cell_{kk}"] = cell
                m.d.comb += cell.en.eq(1)
                if self._hold:
                    m.d.comb += cell.role.eq(a_tags["role"])
                if wf16:
                    m.d.comb += [cell.neg.eq(a_neg[:ac // 2]), cell.zero.eq(a_zero)]
                # a kernel past the layer's (its rows not loaded) gives +0: no data reaches
                # its cell, so a NaN in the atom does not either (the golden model's padded
                # channels are 0)
                present = active.kmask[2 * kk]
                for c in range(ac // 2):
                    m.d.comb += [
                        cell.d[c].eq(Mux(present, Cat(a_data[2 * c], a_data[2 * c + 1]), 0)),
                        cell.w[c].eq(Mux(a_half,
                                         Cat(active.data[2 * kk + 1][2 * c],
                                             active.data[2 * kk + 1][2 * c + 1]),
                                         Cat(active.data[2 * kk][2 * c],
                                             active.data[2 * kk][2 * c + 1])))]
                cells.append(cell.out)

        # ---- adder tree ----------------------------------------------------------------
        level, stage = 0, 0
        while level < self._levels:
            n = min(_LEVELS_PER_STAGE, self._levels - level)
            nxt_vals = []
            for k in range(ak):
                row = list(vals[k])
                for _ in range(n):
                    row = [row[i] + row[i + 1] for i in range(0, len(row), 2)]
                regs = []
                for i, v in enumerate(row):
                    base = 32 if self._i16 and k < ak // 2 else 16
                    r = Signal(signed(base + level + n), name=f"t{stage}_{k}_{i}")
                    m.d.sync += r.eq(v)
                    regs.append(r)
                nxt_vals.append(regs)
            s_valid = Signal(name=f"t{stage}_valid")
            s_tags = {t: Signal.like(tg[t], name=f"t{stage}_{t}") for t in tg}
            m.d.sync += s_valid.eq(valid)
            m.d.sync += [s_tags[t].eq(tg[t]) for t in tg]
            valid, tg, vals = s_valid, s_tags, nxt_vals
            level += n
            stage += 1

        # ---- output: the last stage register into the FIFO ----------------------------------
        drop = Signal()                 # an atom that leaves without a psum
        if self._hold:                  # a pair's half 0 gives no partial sum
            m.d.comb += [out_valid.eq(valid & ~(tg["fp16"] & (tg["role"] == 1))),
                         drop.eq(valid & ~out_valid)]
        else:
            m.d.comb += out_valid.eq(valid)
        res = Signal(psum_layout(self._cfg))
        if not self._f16:
            for k in range(ak):
                m.d.comb += res.sums[k].eq(vals[k][0])
        else:
            for k in range(ak):
                fp = cells[k] if k < ak // 2 else 0
                m.d.comb += res.sums[k].eq(Mux(tg["fp16"], fp, vals[k][0]))
        m.d.comb += [res[t].eq(tg[t]) for t in tags]
        m.d.comb += [q.w_en.eq(out_valid), q.w_data.eq(res),
                     self.psum.valid.eq(q.r_rdy), self.psum.payload.eq(q.r_data),
                     q.r_en.eq(self.psum.ready)]
        m.d.sync += used.eq(used + take - (q.r_rdy & q.r_en) - drop)
        m.d.comb += self.busy.eq(used != 0)

        return m

    def _stage_a_two_pass(self, m, hs, take, a_valid, a_data, a_tags, a_half, a_coef):
        """Stage A on two-column builds with fp16 (see the module docstring): a pair of halves
        enters as two consecutive operations, role 1 (half 0, from hold0) and role 2 (half 1,
        from hold1); every other atom enters as it is taken, role 0. ``hs``: the hold state
        the input side shares (``held``, ``pend``, ``h0_swap``, ``h0_v``); ``a_coef``: the
        stage-A registers of the atom's Winograd fields (name -> signal), held along."""
        p = self.dat.payload
        c_h0 = {f: Signal.like(a, name=f"h0_{f}") for f, a in a_coef.items()}
        c_h1 = {f: Signal.like(a, name=f"h1_{f}") for f, a in a_coef.items()}
        held, pend, h0_v = hs.held, hs.pend, hs.h0_v
        hold0, hold1 = Signal.like(p.data), Signal.like(p.data)
        h0_first = Signal()
        tags = ("first", "last", "pos", "end")
        h1_tags = {t: Signal.like(p[t], name=f"h1_{t}") for t in tags}
        pair = Signal()
        m.d.comb += pair.eq(take & self.fp16 & p.half)
        with m.If(pend):
            m.d.sync += [a_valid.eq(1), a_data.eq(hold1), a_half.eq(1),
                         a_tags["fp16"].eq(1), a_tags["role"].eq(2), pend.eq(0),
                         *(a_tags[t].eq(h1_tags[t]) for t in tags),
                         *(a.eq(c_h1[f]) for f, a in a_coef.items())]
        with m.Elif(pair):
            m.d.sync += [a_valid.eq(1), a_data.eq(hold0), a_half.eq(0),
                         a_tags["fp16"].eq(1), a_tags["role"].eq(1), pend.eq(1),
                         a_tags["first"].eq(h0_first), a_tags["last"].eq(0),
                         a_tags["pos"].eq(p.pos), a_tags["end"].eq(0),
                         hold1.eq(p.data), h1_tags["first"].eq(h0_first),
                         *(h1_tags[t].eq(p[t]) for t in ("last", "pos", "end")),
                         *(a.eq(c_h0[f]) for f, a in a_coef.items()),
                         *(c_h1[f].eq(p[f]) for f in a_coef)]
        with m.Else():
            m.d.sync += [a_valid.eq(take & ~held), a_data.eq(p.data), a_half.eq(p.half),
                         a_tags["fp16"].eq(self.fp16), a_tags["role"].eq(0),
                         *(a_tags[t].eq(p[t]) for t in tags),
                         *(a.eq(p[f]) for f, a in a_coef.items())]
        with m.If(take & held):
            m.d.sync += [hold0.eq(p.data), h0_first.eq(p.first), hs.h0_swap.eq(p.swap),
                         h0_v.eq(1), *(c_h0[f].eq(p[f]) for f in a_coef)]
        with m.Elif(pair):
            m.d.sync += h0_v.eq(0)
