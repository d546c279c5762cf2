"""One fp16 MAC cell of the convolution array: NVDLA's fp16 cell arithmetic, bit for bit.

It follows the golden model :func:`sim.conv.cmac.fp16_mac_cell` (checked there against NVDLA's
``NV_NVDLA_CMAC_CORE_mac``, ``tests/test_cmac_fp16.py``), structure for structure, because the
result depends on it: the two carry-save words of a product are shifted separately, so the
bits they drop are not a truncation of the product. For ``n`` (weight, data) pairs of fp16
codes::

    operand     magnitude = significand << (exponent & 3)   (15 bits; a denormal's mantissa
                doubled, an infinity 2^16), coarse exponent = exponent >> 2 (3 bits)
    pair        takes part when both codes have ``code & 0x7FFF != 0`` (CSC's element masks)
    product     radix-4 Booth rows of the weight magnitude (sign of the product folded into
                the recoding), carry-save trees to two 32-bit words ``ra``, ``rb``
    alignment   emax = the largest coarse exponent sum of the taking-part pairs (0 if none);
                a pair ``s = emax - esum`` steps below adds ``(ra >> 4s) + (rb >> 4s) +
                K[s]`` (``K``: the Booth rows' sign-extension constant after the shift), a
                pair 8 or more steps below adds nothing
    result      44-bit code: bits 43..38 = ``4 x emax``, bits 37..0 the sum modulo 2^38; an
                atom with a NaN (any pair, weights first, lowest channel first) gives ``0x3F``
                in bits 43..38, the first NaN's sign and mantissa in bits 37..27, 0 below

:class:`Fp16Cell` is pipelined over ``stages`` registers (at least 2), every register enabled
by ``en``: the first holds the products' carry-save words, shifts and exponent maximum, the
second the aligned products with one adder level, the next ones two adder levels each; stages
beyond what the adder tree needs only delay. ``out`` is the last register.

``two_pass`` (nv_full's two-column entries: NVDLA's cell there has ``2n`` pairs, this core's
CSC sends an entry as two atoms of ``n``): an operation's ``role`` is 0 (alone, as above), 1
(the first ``n`` pairs of a ``2n``-pair cell) or 2 (the last ``n``; on the ``en`` cycle right
after its role 1). Both align to the larger of their two exponent maxima (role 1 sees role 2's
at stage 1's inputs in its stage 2, role 2 takes it from the cycle before), so their parts are
the ``2n``-pair cell's; role 2's code carries the sum of both (modulo 2^38) and the ``2n``-pair
NaN order (role 1's weights, role 2's, role 1's data, role 2's); role 1's ``out`` is not a
result. Shifts are formed in stage 2 there (the exponent sums are registered).

``wino`` (with ``two_pass``; builds where :func:`~hw.conv.common.conv_winograd_fp16` holds):
ports ``neg`` and ``zero`` give each pair a coefficient of -1 or 0 (else +1) by which its
aligned part enters the sum (modulo 2^38). An fp16 Winograd atom pair is one small cube
(element ``(y x 4 + x) x 4 + c``) and the coefficients are output ``(i, j)``'s POA row
``A^T[i][y] x A^T[j][x]`` (:mod:`hw.conv.wino_dat`): every pair still takes part in the
alignment and the NaN search, so the code is exactly output ``(i, j)`` of NVDLA's cell in
Winograd mode (:func:`sim.conv.cmac.fp16_wino_cell`: it sums the aligned parts per position,
then applies the POA, all modulo 2^38, which is the same linear form).

Cost (``nvdla synth --target ecp5 --unit cmac`` on nv_small + fp16, four cells of four pairs
beside the int8 array): about 6,000 LUT4 and 400 FF per cell, no DSP (the Booth rows, the
carry-save trees and the two 32-bit shifters per pair are logic); the whole Cmac 25,997 LUT4 /
4,170 FF / 64 MULT18X18D against nv_small's 1.8k / 2.6k / 64.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Fp16Cell", "FP16_PSUM_BITS", "SUM_BITS"]

FP16_PSUM_BITS = 44     #: a cell's partial-sum code: 6-bit exponent field, 38-bit sum
SUM_BITS = 38           #: the two's-complement sum kept (modulo 2^38)
_WORD = 32              #: the carry-save words of one product


def _shift_const(s: int) -> int:
    """The per-product compensation of the Booth rows' sign-extension constant once the two
    words are shifted right by ``4 x s``, modulo 2^38."""
    k = sum(((0xF0 >> s) >> j & 1) * ((5 if j % 2 == 0 else 80) << (8 * (j // 2)))
            for j in range(8)) - (0xAAAA0000 >> (4 * s))
    return k % (1 << SUM_BITS)


#: the compensations of shifts 0..7, side by side (word ``s`` of 38 bits)
_SHIFT_TABLE = Const(sum(_shift_const(s) << (SUM_BITS * s) for s in range(8)), SUM_BITS * 8)


def _bits(v, width):
    """``v`` as exactly ``width`` bits (zero-extended or truncated)."""
    return Cat(v, Const(0, width - len(v))) if len(v) < width else v[0:width]


def _operand(wire, code, name):
    """(15-bit magnitude, 3-bit coarse exponent, taking part, NaN) of a 16-bit fp16 code."""
    e, m = code[10:15], code[0:10]
    sig = Mux(e != 0, Cat(m, Const(1, 1)), Cat(Const(0, 1), m))        # 11 bits
    mag = wire(_bits(sig << e[0:2], 15), f"{name}_mag")
    nz = wire(code[0:15] != 0, f"{name}_nz")
    nan = wire((e == 31) & (m != 0), f"{name}_nan")
    return mag, e[2:5], nz, nan


def _booth_row(wire, code, neg, src, name):
    """One radix-4 Booth row (17 bits, the top bit the inverted sign) of the 15-bit
    multiplicand ``src`` for the 3-bit window ``code`` (complemented when ``neg``), and the
    row's +1 (negated rows)."""
    c = wire(code ^ neg.replicate(3), f"{name}_code")
    inv = wire((c == 4) | (c == 5) | (c == 6), f"{name}_inv")
    nsrc = ~src                                                        # 15 bits
    row = Mux((c == 1) | (c == 2), Cat(src, Const(0b10, 2)),
          Mux(c == 3, Cat(Const(0, 1), src, Const(1, 1)),
          Mux((c == 5) | (c == 6), Cat(nsrc, Const(0b01, 2)),
          Mux(c == 4, Cat(Const(1, 1), nsrc, Const(0, 1)),
              Const(1 << 16, 17)))))
    return wire(row, name), inv


def _csa_tree(wire, rows, width, name):
    """Carry-save reduction to two ``width``-bit words, three rows at a time from the first,
    the leftovers carried over (the golden model's grouping: it decides the two words)."""
    a = [r[0:width] if len(r) > width else r for r in rows]
    level = 0
    while len(a) > 2:
        g = len(a) // 3
        t = []
        for i in range(g):
            x, y, z = a[3 * i:3 * i + 3]
            t += [wire((x ^ y ^ z)[0:width], f"{name}_{level}_s{i}"),
                  wire((((x & y) | (y & z) | (x & z)) << 1)[0:width], f"{name}_{level}_c{i}")]
        a = t + a[3 * g:]
        level += 1
    return a[0], a[1]


def _product(wire, a, b, neg, name):
    """The two 32-bit carry-save words of the Booth product ``a x b`` (15-bit magnitudes,
    negated when ``neg``): four windows of ``a``'s low byte and four of its high bits, each
    half reduced to two 24-bit words, the halves' words (the high ones 8 bits up) to two."""
    lo = Cat(Const(0, 1), a[0:8])                                      # 9 bits
    hi = Cat(a[7:15], Const(0, 1))                                     # 9 bits
    codes = [lo[2 * i:2 * i + 3] for i in range(4)] + [hi[2 * i:2 * i + 3] for i in range(4)]
    rows = [_booth_row(wire, c, neg, b, f"{name}_row{i}") for i, c in enumerate(codes)]

    def half(r):
        (d0, i0), (d1, i1), (d2, i2), (d3, i3) = r
        return [d0, (d1 << 2) | i0, (d2 << 4) | (i1 << 2), (d3 << 6) | (i2 << 4), i3 << 6]

    l0 = _csa_tree(wire, half(rows[:4]), 24, f"{name}_lo")
    l1 = _csa_tree(wire, half(rows[4:]), 24, f"{name}_hi")
    return _csa_tree(wire, [l0[0], l0[1], l1[0] << 8, l1[1] << 8], _WORD, name)


def _reg_wire(m, en):
    """``reg(value, name)``: a register of ``value`` enabled by ``en``; ``wire(value, name)``:
    a named combinational signal."""
    def reg(value, name):
        r = Signal(len(value), name=name)
        with m.If(en):
            m.d.sync += r.eq(value)
        return r

    def wire(value, name):
        w = Signal(len(value), name=name)
        m.d.comb += w.eq(value)
        return w
    return reg, wire


def _first_nan(wire, ops, codes, name):
    """(any NaN, the first NaN's sign and mantissa) of the operands ``ops`` in order (a
    priority tree: the left operand of every node wins)."""
    cand = [(op[3], Cat(code[0:10], code[15])) for op, code in zip(ops, codes)]
    level = 0
    while len(cand) > 1:
        cand = [(wire(cand[i][0] | cand[i + 1][0], f"{name}f_{level}_{i}"),
                 wire(Mux(cand[i][0], cand[i][1], cand[i + 1][1]), f"{name}c_{level}_{i}"))
                if i + 1 < len(cand) else cand[i] for i in range(0, len(cand), 2)]
        level += 1
    return cand[0]


def _exponents(wire, w, d, n):
    """The operands of ``n`` pairs, which take part, their coarse exponent sums and the
    largest."""
    wops = [_operand(wire, w[c], f"w{c}") for c in range(n)]
    dops = [_operand(wire, d[c], f"d{c}") for c in range(n)]
    live = [wire(wops[c][2] & dops[c][2], f"live_{c}") for c in range(n)]
    esum = [wire(Mux(live[c], wops[c][1] + dops[c][1], 0)[0:4], f"esum_{c}")
            for c in range(n)]
    return wops, dops, live, esum, wire(_max(wire, esum, "emax"), "emax")


def _aligned(ra, rb, s):
    """A product's carry-save words shifted right by ``4 x s`` with the compensation."""
    sh = Cat(Const(0, 2), s)                                           # 4 x s
    return ((ra >> sh) + (rb >> sh) + _SHIFT_TABLE.word_select(s, SUM_BITS))[0:SUM_BITS]


def _add_level(vals):
    return [(vals[i] + vals[i + 1])[0:SUM_BITS] if i + 1 < len(vals) else vals[i]
            for i in range(0, len(vals), 2)]


def _tree(reg, parts, stages, carried, names):
    """The adder levels from stage 2 to ``stages`` (one level in stage 2, two in each later
    one; what is left in the last), registers between stages; the ``carried`` values travel
    along, registered as ``names[i].format(stage)``. Returns (the sum, the carried values) at
    the last stage, before its register."""
    vals = parts
    for st in range(2, stages + 1):
        for _ in range(1 if st == 2 else 2):
            if len(vals) > 1:
                vals = _add_level(vals)
        if st == stages:
            while len(vals) > 1:                     # (not on any size the array uses)
                vals = _add_level(vals)
            return vals[0], carried
        vals = [reg(v, f"sum{st}_{i}") for i, v in enumerate(vals)]
        carried = [reg(v, nm.format(st)) for v, nm in zip(carried, names)]


def _max(wire, vals, name):
    level = 0
    while len(vals) > 1:
        vals = [wire(Mux(vals[i] > vals[i + 1], vals[i], vals[i + 1]), f"{name}_{level}_{i}")
                if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
        level += 1
    return vals[0]


class Fp16Cell(wiring.Component):
    """An fp16 MAC cell of ``n`` pairs, ``stages`` registers deep (module docstring).

    Ports: ``w`` / ``d`` in (``n`` fp16 codes each, pair ``c`` = ``w[c]``, ``d[c]``),
    ``en`` in (every register advances), ``out`` (44-bit partial-sum code, registered).
    """

    def __init__(self, n: int, stages: int, two_pass: bool = False, wino: bool = False):
        assert n >= 1 and stages >= 2, (n, stages)
        assert two_pass or not wino, "the Winograd coefficients need the two-pass cell"
        self._n, self._stages, self._two, self._wino = n, stages, two_pass, wino
        super().__init__({"w": In(data.ArrayLayout(unsigned(16), n)),
                          "d": In(data.ArrayLayout(unsigned(16), n)),
                          "en": In(1),
                          **({"role": In(2)} if two_pass else {}),
                          **({"neg": In(n), "zero": In(n)} if wino else {}),
                          "out": Out(FP16_PSUM_BITS)})

    def elaborate(self, platform):
        if self._two:
            return self._elaborate_two_pass()
        m = Module()
        n = self._n
        reg, wire = _reg_wire(m, self.en)

        # ---- stage 1: operands, products, alignment, NaN -----------------------------------
        wops, dops, live, esum, emax = _exponents(wire, self.w, self.d, n)
        # the first NaN: weights before data, lowest channel first (sign, mantissa)
        any_nan, nan_code = _first_nan(wire, wops + dops, list(self.w) + list(self.d), "nan")

        pairs = []
        for c in range(n):
            sft = wire((emax - esum[c])[0:4], f"sft_{c}")
            take = live[c] & (sft < 8)
            neg = wire(self.w[c][15] ^ self.d[c][15], f"neg_{c}")
            ra, rb = _product(wire, wops[c][0], dops[c][0], neg, f"p{c}")
            pairs.append((reg(ra, f"ra_{c}"), reg(rb, f"rb_{c}"), reg(sft[0:3], f"s_{c}"),
                          reg(take, f"take_{c}")))
        emax_r, nan_r, nan_code_r = (reg(emax, "emax_1"), reg(any_nan, "nan_1"),
                                     reg(nan_code, "nan_code_1"))

        # ---- stage 2: the aligned products, then the adder levels ----------------------------
        parts = [wire(Mux(take, _aligned(ra, rb, s), 0), f"part_{c}")
                 for c, (ra, rb, s, take) in enumerate(pairs)]
        total, (emax_r, nan_r, nan_code_r) = _tree(
            reg, parts, self._stages, [emax_r, nan_r, nan_code_r],
            ["emax_{}", "nan_{}", "nan_code_{}"])
        code = Mux(nan_r, Cat(Const(0, 27), nan_code_r, Const(0x3F, 6)),
                   Cat(total, Const(0, 2), emax_r))
        m.d.comb += self.out.eq(reg(code, "code"))
        return m

    def _elaborate_two_pass(self):
        """Two operations per cell result (``role`` 1 then 2 on consecutive ``en`` cycles):
        the alignment is the pair's, the sums add, NaNs resolve weights first over both."""
        m = Module()
        n = self._n
        reg, wire = _reg_wire(m, self.en)

        # ---- stage 1: operands, products, the operation's own exponent maximum -------------
        wops, dops, live, esum, emax = _exponents(wire, self.w, self.d, n)
        wn, wc = _first_nan(wire, wops, list(self.w), "wnan")
        dn, dc = _first_nan(wire, dops, list(self.d), "dnan")
        pairs = []
        for c in range(n):
            neg = wire(self.w[c][15] ^ self.d[c][15], f"neg_{c}")
            ra, rb = _product(wire, wops[c][0], dops[c][0], neg, f"p{c}")
            pairs.append((reg(ra, f"ra_{c}"), reg(rb, f"rb_{c}"), reg(esum[c], f"es_{c}"),
                          reg(live[c], f"live_r_{c}")))
        if self._wino:                  # the POA coefficient of each pair (0, +1, -1)
            c_zero, c_neg = reg(self.zero, "czero_1"), reg(self.neg, "cneg_1")
        emax_r, role = reg(emax, "emax_1"), reg(self.role, "role_1")
        nan_r = [reg(x, f"{nm}_1") for x, nm in ((wn, "wn"), (wc, "wc"), (dn, "dn"),
                                                  (dc, "dc"))]

        # ---- stage 2: the pair's exponent maximum (half 0 sees half 1 at stage 1's inputs,
        # half 1 takes it from the cycle before), the aligned products ----------------------
        e_prev = Signal(4, name="e_prev")
        e_ent = wire(Mux(role == 1, Mux(emax > emax_r, emax, emax_r),
                         Mux(role == 2, e_prev, emax_r)), "e_ent")
        with m.If(self.en):
            m.d.sync += e_prev.eq(e_ent)
        parts = []
        for c, (ra, rb, es, lv) in enumerate(pairs):
            sft = wire((e_ent - es)[0:4], f"sft_{c}")
            part = _aligned(ra, rb, sft[0:3])
            take = lv & (sft < 8)
            if self._wino:
                # Winograd: the part times its POA coefficient (modulo 2^38, as the sums)
                part = Mux(c_neg[c], -part, part)[0:SUM_BITS]
                take = take & ~c_zero[c]
            parts.append(wire(Mux(take, part, 0), f"part_{c}"))
        cur, (e_r, role, *nan_r) = _tree(
            reg, parts, self._stages, [e_ent, role, *nan_r],
            ["emax_{}", "role_{}", "nan0_{}", "nan1_{}", "nan2_{}", "nan3_{}"])
        # half 1: its half 0's sum and NaNs (the cycle before) join it
        p_sum = Signal(SUM_BITS, name="p_sum")
        p_nan = [Signal(len(x), name=f"p_{i}") for i, x in enumerate(nan_r)]
        with m.If(self.en & (role == 1)):
            m.d.sync += [p_sum.eq(cur), *(a.eq(b) for a, b in zip(p_nan, nan_r))]
        pair = role == 2
        total = Mux(pair, p_sum + cur, cur)[0:SUM_BITS]
        wn_, wc_, dn_, dc_ = nan_r
        pwn, pwc, pdn, pdc = p_nan
        order = [(pair & pwn, pwc), (wn_, wc_), (pair & pdn, pdc), (dn_, dc_)]
        any_nan = Cat(*(f for f, _ in order)).any()
        code_nan = Mux(order[0][0], order[0][1], Mux(order[1][0], order[1][1],
                                                  Mux(order[2][0], order[2][1], order[3][1])))
        code = Mux(any_nan, Cat(Const(0, 27), code_nan, Const(0x3F, 6)),
                   Cat(total, Const(0, 2), e_r))
        m.d.comb += self.out.eq(reg(code, "code"))
        return m
