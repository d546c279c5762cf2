"""Integer arithmetic in logic that several datapaths share: named combinational values,
clamping, and the rounding right shift of NVDLA's converters and multipliers (SDP BS / BN /
EW / LUT / output converter, CDP input / output converters and LUT, the CDMA input
convertor).

Every helper builds combinational logic in the module ``m`` it is given and returns Values;
the golden model's counterparts are :func:`sim.sdp.round_shift_right` (value and saturation
flag) and :func:`sim.formats.common.round_shift_right` (ties away from zero).
"""

from amaranth.hdl import Cat, Const, Mux, Signal, Value, signed

__all__ = ["comb", "clip", "saturate", "round_shift_right", "round_shift_right_split",
           "seq_remainder"]


def comb(m, value, name):
    """A named combinational signal holding ``value`` (keeps shared subexpressions shared)."""
    value = Value.cast(value)
    sig = Signal(value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig


def clip(value, lo, hi):
    return Mux(value > hi, hi, Mux(value < lo, lo, value))


def saturate(value, bits):
    """Clamp a signed value to the signed ``bits``-bit range; result is signed(bits)."""
    return clip(value, -(1 << (bits - 1)), (1 << (bits - 1)) - 1).as_signed()[:bits].as_signed()


def round_shift_right(m, x, shift, out_bits, in_bits, name, *, structure=None):
    """:func:`sim.sdp.round_shift_right` in logic: arithmetic right shift of signed ``x`` by
    the unsigned ``shift`` (a Value or an int), rounded half away from zero, saturated to
    ``out_bits``; a shift of ``in_bits`` or more gives 0. Returns ``(value, saturated)``:
    ``value`` is signed(``out_bits``), ``saturated`` the hardware's flag (NVDLA's
    ``IntShiftRightSat``: the truncated value ``x >> shift`` more than 1 away from ``value``,
    i.e. above ``hi + 1`` or below ``lo - 1``).

    Two structures give the same values; the cheaper one depends on how much narrower the
    output is than ``x`` (ECP5 synthesis of the SDP, CDP and CDMA datapaths), and
    ``structure`` (``"sum"`` or ``"floor"``) overrides the choice:

    * ``"sum"`` (outputs at most half as wide as ``x``): ``floor((x + 2^(s-1) - [x < 0]) /
      2^s)`` is the rounded value (``x`` itself for ``s = 0``), one adder whose constant
      depends on the shift alone (shared by the lanes of a datapath); only ``out_bits`` of
      the sum are shifted out, and the range is checked on the bits from ``s + out_bits - 1``
      up against a thermometer mask of the shift, not by full-width comparisons;
    * ``"floor"``: ``x >> s`` and its guard and sticky bits, an increment, and comparisons of
      the floor and the rounded value with the range.

    The flag of the ``"sum"`` structure compares ``x`` (one's-complemented when negative: the
    floor of ``~x`` is ``~floor``) with ``(hi + 2) << s``, a constant of the shift alone."""
    if structure is None:
        structure = "sum" if 2 * out_bits <= len(Value.cast(x)) else "floor"
    x = Value.cast(x).as_signed()
    s_c, beyond = _rsr_shift(m, shift, len(x), in_bits, name)
    if structure == "sum":
        total, sat = _rsr_sum_add(m, x, s_c, out_bits, name)
        value = _rsr_sum_shift(m, total, s_c, out_bits, name)
    else:
        value, sat = _rsr_floor(m, x, s_c, out_bits, name)
    return _rsr_out(m, value, sat, beyond, out_bits, name)


def round_shift_right_split(m, x, shift, out_bits, in_bits, name):
    """:func:`round_shift_right` (the ``"sum"`` structure) cut in two for a pipeline, the
    wide add in one step and the shift and range check in the next: returns ``(early,
    finish)``; ``early`` is a dict of Values (``"sum"``, ``"sat"``) to register, and
    ``finish(regs)`` builds the second half from the registered dict and returns ``(value,
    saturated)`` as :func:`round_shift_right` does. ``shift`` must hold over both steps (a
    layer's register field), or be given to ``finish(regs, shift)`` again as the second
    step's copy (a pipeline whose shift changes from element to element)."""
    x = Value.cast(x).as_signed()
    s_c, beyond = _rsr_shift(m, shift, len(x), in_bits, name)
    total, sat = _rsr_sum_add(m, x, s_c, out_bits, name)

    def finish(regs, shift=None):
        s2, beyond2 = (s_c, beyond) if shift is None else \
            _rsr_shift(m, shift, len(x), in_bits, f"{name}_2")
        value = _rsr_sum_shift(m, regs["sum"], s2, out_bits, name)
        return _rsr_out(m, value, regs["sat"], beyond2, out_bits, name)

    return {"sum": total, "sat": sat}, finish


def _rsr_shift(m, shift, width, in_bits, name):
    """(the shift capped at ``width + 1``, where everything rounds to 0; shift >= in_bits)"""
    cap = width + 1
    if isinstance(shift, int):
        return min(shift, cap), Const(int(shift >= in_bits), 1)
    shift = Value.cast(shift)
    smax = (1 << len(shift)) - 1
    s_c = comb(m, Mux(shift > cap, cap, shift), f"{name}_sc") if smax > cap else shift
    return s_c, (shift >= in_bits) if smax >= in_bits else Const(0, 1)


def _rsr_out(m, value, sat, beyond, out_bits, name):
    v = Signal(signed(out_bits), name=f"{name}_v")
    m.d.comb += v.eq(Mux(beyond, 0, value))
    return v, comb(m, ~beyond & sat, f"{name}_s")


def _rsr_sum_add(m, x, s_c, out_bits, name):
    """(``x + 2^(s-1) - [x < 0]``, the saturation flag): the first half of the "sum" form."""
    width = len(x)
    cap = width + 1
    wt = width + 2                        # |x| + 2^(s-1) < 2^(width + 1)
    if isinstance(s_c, int):
        k = Const((1 << s_c >> 1) - 1, signed(wt))
        cin = Const(1, 1) if s_c == 0 else ~x[-1]
    else:
        k = comb(m, (((Const(1, cap + 1) << s_c) >> 1) - 1).as_signed(), f"{name}_k")
        cin = ~(x[-1] & (s_c != 0))
    total = Signal(signed(wt), name=f"{name}_sum")
    m.d.comb += total.eq(x + k + cin)
    hi = (1 << (out_bits - 1)) - 1
    # floor > hi + 1 or floor < lo - 1  <=>  (x ^ sign) >> s >= hi + 2
    # (unnamed: where the flag is not used, nothing of it is left in the Verilog)
    mag = x.as_unsigned() ^ x[-1].replicate(width)
    limit = Const((hi + 2) << s_c) if isinstance(s_c, int) else Const(hi + 2, out_bits) << s_c
    return total, mag >= limit


def _rsr_sum_shift(m, total, s_c, out_bits, name):
    """The rounded value from the sum: shifted, its range checked on the bits from
    ``s + out_bits - 1`` up against a thermometer mask of the shift."""
    total = Value.cast(total).as_signed()
    wt = len(total)
    rounded = comb(m, total >> s_c, f"{name}_t")                      # the rounded value
    # in range <=> the bits from s + out_bits - 1 up all equal the sign
    t_mask = comb(m, (Const((1 << wt) - 1, wt) << (s_c + (out_bits - 1)))[:wt], f"{name}_tm")
    tsign = total[-1]
    ovf = comb(m, ((total.as_unsigned() ^ tsign.replicate(wt)) & t_mask).any(), f"{name}_o")
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    value = Mux(ovf, Mux(tsign, lo, hi), rounded[:out_bits].as_signed())
    if out_bits >= wt:                     # the slice above dropped the sign extension
        value = rounded
    return value


def _rsr_floor(m, x, s_c, out_bits, name):
    width = len(x)
    x2 = comb(m, Cat(Const(0, 1), x).as_signed(), f"{name}_x2")       # 2x, width + 1 bits
    t = comb(m, x2 >> s_c, f"{name}_t")                               # x >> (s - 1)
    guard = t[0]
    floor = t[1:].as_signed()                                         # x >> s
    ones = Const((1 << (width + 1)) - 1, width + 1)
    low_mask = ~(ones << s_c)[:width + 1]                             # bits below s - 1
    sticky = (x2.as_unsigned() & low_mask) != 0                       # x bits below s - 1
    up = guard & (~x[-1] | sticky)
    rounded = comb(m, floor + up, f"{name}_r")
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    return saturate(rounded, out_bits), (floor > hi + 1) | (floor < lo - 1)


def seq_remainder(m, start, x, n, name):
    """``x mod n`` by restoring division, one bit of ``x`` per cycle: ``x`` is taken at
    ``start``, ``n`` (> 0) must hold meanwhile; returns ``(r, done)``, ``done`` high from
    ``len(x)`` cycles after ``start`` until the next one. For values fixed per layer (ring
    offsets), where a divider would cost more logic than the cycles."""
    bits = len(x)
    r = Signal(len(n) + 1, name=f"{name}_r")
    sh = Signal(bits, name=f"{name}_sh")                    # x's bits not taken yet, MSB first
    i = Signal(range(bits + 1), name=f"{name}_i")
    done = Signal(name=f"{name}_done")
    t = Signal(len(n) + 1, name=f"{name}_t")
    m.d.comb += t.eq(Cat(sh[-1], r[:-1]))                   # 2r + the next bit
    with m.If(start):
        m.d.sync += [r.eq(0), sh.eq(x), i.eq(bits), done.eq(0)]
    with m.Elif(i != 0):
        m.d.sync += [r.eq(Mux(t >= n, t - n, t)), sh.eq(sh << 1), i.eq(i - 1)]
        with m.If(i == 1):
            m.d.sync += done.eq(1)
    return r[:len(n)], done
