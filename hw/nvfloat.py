"""NVDLA's floating-point units in hardware: fp16 <-> fp17 conversions, fp17 add and multiply;
fp16 <-> fp32 conversions, fp32 add, multiply and max / min (the SDP's fp16 datapath); fp17
<-> fp32 conversions and the 16-bit fraction -> fp17 conversion (the CDP's fp16 datapath).

Combinational :class:`wiring.Component` s computing bit for bit what :mod:`sim.nvfloat`
defines (the rules are stated there: no denormals, no infinities, saturation to the largest
finite value, NaN inputs passed through -- the first operand's when both are NaN --, rounding
to nearest even, the adder truncating what the smaller operand shifts out of its 23-bit
window). Codes are raw bits: fp16 16 bits, fp17 17 bits (sign, 6-bit exponent with bias 31,
10-bit mantissa).

    m.submodules.add = add = Fp17Add()
    m.d.comb += [add.a.eq(x), add.b.eq(y)]            # add.o: the fp17 sum

:func:`fp17_add`, :func:`fp17_mul`, :func:`fp16_to_fp17` and :func:`fp17_to_fp16` add one
unit to a module and return its output.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Fp17Add", "Fp17Mul", "Fp16ToFp17", "Fp17ToFp16", "fp17_add", "fp17_mul",
           "fp16_to_fp17", "fp17_to_fp16", "FP17_MAX_MAG", "Fp32Add", "Fp32Mul", "Fp32MaxMin",
           "Fp16ToFp32", "Fp32ToFp16", "fp32_add", "fp32_mul", "fp32_max_min", "fp16_to_fp32",
           "fp32_to_fp16", "fp32_is_nan", "FP32_MAX_MAG", "Fp17ToFp32", "Fp32ToFp17",
           "FractionToFp17", "fp17_to_fp32", "fp32_to_fp17", "fraction_to_fp17", "fp32_sub",
           "Int17ToFp16", "int17_to_fp16", "Fp16ToInt16", "fp16_to_int16"]

_M = 10
_MMASK = (1 << _M) - 1
FP17_MAX_MAG = (62 << _M) | _MMASK          #: largest finite fp17 magnitude


def _split17(x):
    return x[16], x[_M:16], x[:_M]


def _is_nan17(x):
    return (x[_M:16] == 63) & x[:_M].any()


def _msb_index(m, v, name):
    """Index of the highest set bit of ``v`` (0 when ``v`` is 0)."""
    idx = Signal(range(max(len(v), 2)), name=name)
    for i in range(len(v)):
        with m.If(v[i]):
            m.d.comb += idx.eq(i)
    return idx


def _rne(m, v, drop, name):
    """``v >> drop`` rounded to nearest, ties to even (``drop`` >= 1, an int or a Signal)."""
    q = Signal(len(v), name=f"{name}_q")
    guard = Signal(name=f"{name}_guard")
    sticky = Signal(name=f"{name}_sticky")
    r = Signal(len(v) + 1, name=name)
    if isinstance(drop, int):
        m.d.comb += [q.eq(v >> drop), guard.eq(v[drop - 1]), sticky.eq(v[:drop - 1].any()
                                                                       if drop > 1 else 0)]
    else:
        dm1 = Signal(len(drop), name=f"{name}_dm1")
        mask = Signal(len(v), name=f"{name}_mask")
        m.d.comb += [dm1.eq(drop - 1), mask.eq((Const(1, len(v) + 1) << dm1) - 1),
                     q.eq(v >> drop), guard.eq((v >> dm1)[0]), sticky.eq((v & mask).any())]
    m.d.comb += r.eq(q + (guard & (sticky | q[0])))
    return r


def _significand(m, x, name):
    """(sign, exponent, mantissa, is zero, 11-bit significand with the hidden 1; 0 for a
    zero) of the fp17 code ``x``."""
    s, e, mant = _split17(x)
    zero = (e == 0) & (mant == 0)
    sig = Signal(11, name=name)
    m.d.comb += sig.eq(Mux(zero, 0, Cat(mant, 1)))
    return s, e, mant, zero, sig


class Fp17Add(wiring.Component):
    """``o = a + b`` on fp17 codes (``HLS_fp17_add``; :func:`sim.nvfloat.fp17_add`)."""

    a: In(17)
    b: In(17)
    o: Out(17)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        sa, ea, ma, _, pa = _significand(m, a, "pa")
        sb, eb, mb, _, pb = _significand(m, b, "pb")
        a_big = Signal()
        m.d.comb += a_big.eq((ea > eb) | ((ea == eb) & (ma >= mb)))
        oe, os, d = Signal(6), Signal(), Signal(6)
        m.d.comb += [oe.eq(Mux(a_big, ea, eb)), os.eq(Mux(a_big, sa, sb)),
                     d.eq(Mux(a_big, ea - eb, eb - ea))]
        big, small = Signal(23), Signal(23)
        m.d.comb += [big.eq(Cat(Const(0, 12), Mux(a_big, pa, pb))),
                     small.eq(Cat(Const(0, 12), Mux(a_big, pb, pa)) >> d)]
        v = Signal(24)
        m.d.comb += v.eq(Mux(sa == sb, big + small, big - small))
        carry = v[23]
        v1 = Signal(23)
        oe1 = Signal(6)
        m.d.comb += [v1.eq(Mux(carry, v[1:24], v[:23])),
                     oe1.eq(Mux(carry & (oe < 62), oe + 1, oe))]
        msb = _msb_index(m, v[:23], "add_msb")
        lz = Signal(range(24))
        m.d.comb += lz.eq(Mux(v[:23] == 0, 23, 22 - msb))
        zero = Signal()
        norm = Signal()
        m.d.comb += [zero.eq(~carry & ((v[:23] == 0) | (oe <= lz))), norm.eq(~carry & ~zero)]
        v2 = Signal(23)
        oe2 = Signal(6)
        m.d.comb += [v2.eq(Mux(norm, v1 << lz, v1)), oe2.eq(Mux(norm, oe1 - lz, oe1))]
        r = _rne(m, v2, 12, "add_rne")                    # 11 bits, or 2^11 on overflow
        ovf = r[11]
        sat = Signal()
        m.d.comb += sat.eq((carry & (oe >= 62)) | (ovf & (oe2 >= 62)))
        oe3, om = Signal(6), Signal(10)
        m.d.comb += [oe3.eq(Mux(ovf & (oe2 < 62), oe2 + 1, oe2)), om.eq(r[:10])]
        res = Signal(17)
        with m.If(sat):
            m.d.comb += res.eq(Cat(Const(FP17_MAX_MAG, 16), os))
        with m.Elif(zero):
            m.d.comb += res.eq(Cat(Const(0, 16), os))
        with m.Else():
            m.d.comb += res.eq(Cat(om, oe3, os))
        m.d.comb += self.o.eq(Mux(_is_nan17(a), a, Mux(_is_nan17(b), b, res)))
        return m


class Fp17Mul(wiring.Component):
    """``o = a x b`` on fp17 codes (``HLS_fp17_mul``; :func:`sim.nvfloat.fp17_mul`)."""

    a: In(17)
    b: In(17)
    o: Out(17)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        sa, ea, ma, za, pa = _significand(m, a, "pa")
        sb, eb, mb, zb, pb = _significand(m, b, "pb")
        p = Signal(22)
        es = Signal(7)
        m.d.comb += [p.eq(pa * pb), es.eq(ea + eb)]
        os = sa ^ sb
        zero0, sat0, ok = Signal(), Signal(), Signal()
        m.d.comb += [zero0.eq(za | zb | (es < 31)), sat0.eq(~zero0 & (es >= 94)),
                     ok.eq(~zero0 & ~sat0)]
        pe = Signal(6)
        m.d.comb += pe.eq(Mux(ok, es - 31, 0))
        top = p[21]
        pe2 = Signal(6)
        m.d.comb += pe2.eq(Mux(ok & top & (pe < 62), pe + 1, pe))
        frac = Signal(21)
        m.d.comb += frac.eq(Mux(top, p[:21], Cat(Const(0, 1), p[:20])))
        r = _rne(m, Cat(frac, Const(1, 1)), 11, "mul_rne")    # 11 bits with the leading 1
        ovf = r[11]
        oe = Signal(7)
        om = Signal(10)
        m.d.comb += [oe.eq(Mux(ovf, pe2 + 1, pe2)), om.eq(Mux(ovf, 0, r[:10]))]
        sat = Signal()
        m.d.comb += sat.eq(sat0 | (ok & top & (pe >= 62)) | (ok & (oe == 63)))
        zero = Signal()
        m.d.comb += zero.eq(zero0 | (~sat & (oe == 0)))
        res = Signal(17)
        with m.If(zero):
            m.d.comb += res.eq(Cat(Const(0, 16), os))
        with m.Elif(sat):
            m.d.comb += res.eq(Cat(Const(FP17_MAX_MAG, 16), os))
        with m.Else():
            m.d.comb += res.eq(Cat(om, oe[:6], os))
        m.d.comb += self.o.eq(Mux(_is_nan17(a), a, Mux(_is_nan17(b), b, res)))
        return m


class Fp16ToFp17(wiring.Component):
    """fp16 code -> fp17 code (``HLS_fp16_to_fp17``; :func:`sim.nvfloat.fp16_to_fp17`)."""

    a: In(16)
    o: Out(17)

    def elaborate(self, platform):
        m = Module()
        s, e, mm = self.a[15], self.a[_M:15], self.a[:_M]
        msb = _msb_index(m, mm, "h2f_msb")
        lz = Signal(4)
        m.d.comb += lz.eq(9 - msb)                        # leading zeros of the mantissa
        oe, om = Signal(6), Signal(10)
        with m.If((e == 0) & (mm == 0)):
            m.d.comb += [oe.eq(0), om.eq(0)]
        with m.Elif(e == 0):                              # denormal: normalized
            m.d.comb += [oe.eq(16 - lz), om.eq(mm << (lz + 1))]
        with m.Elif((e == 0x1F) & (mm == 0)):             # infinity: the largest value
            m.d.comb += [oe.eq(62), om.eq(_MMASK)]
        with m.Elif(e == 0x1F):                           # NaN: sign and payload kept
            m.d.comb += [oe.eq(63), om.eq(mm)]
        with m.Else():
            m.d.comb += [oe.eq(e + 16), om.eq(mm)]
        m.d.comb += self.o.eq(Cat(om, oe, s))
        return m


class Fp17ToFp16(wiring.Component):
    """fp17 code -> fp16 code (``HLS_fp17_to_fp16``; :func:`sim.nvfloat.fp17_to_fp16`)."""

    a: In(17)
    o: Out(16)

    def elaborate(self, platform):
        m = Module()
        s, e, mm = _split17(self.a)
        shift = Signal(4)
        m.d.comb += shift.eq(17 - e)
        r = _rne(m, Cat(mm, Const(1, 1)), shift, "f2h_rne")  # <= 2^10: the smallest normal
        oe, om = Signal(5), Signal(10)
        with m.If((e == 63) & (mm != 0)):
            m.d.comb += [oe.eq(0x1F), om.eq(mm)]
        with m.Elif(e < 6):
            m.d.comb += [oe.eq(0), om.eq(0)]
        with m.Elif(e <= 16):
            m.d.comb += [oe.eq(r[_M:]), om.eq(r[:_M])]
        with m.Elif(e >= 47):
            m.d.comb += [oe.eq(30), om.eq(_MMASK)]
        with m.Else():
            m.d.comb += [oe.eq(e - 16), om.eq(mm)]
        m.d.comb += self.o.eq(Cat(om, oe, s))
        return m


class Int17ToFp16(wiring.Component):
    """A signed 17-bit integer -> fp16 code, as the CDMA's input convertor makes fp16 from
    integer pixels (NVDLA's ``FpIntToFloat<17, 5, 10>``, ``cmod/hls/cdma_libs/cdma_cvt.cpp``;
    golden :func:`sim.conv.image.int_to_fp16`): round to nearest, ties to even; unlike the
    units above, a magnitude that rounds past 65504 gives infinity; 0 gives +0."""

    a: In(signed(17))
    o: Out(16)

    def elaborate(self, platform):
        m = Module()
        a = self.a
        mag = Signal(17)
        m.d.comb += mag.eq(Mux(a[16], -a, a))              # 65536 for -65536
        msb = _msb_index(m, mag, "i2h_msb")
        norm, lz = Signal(17), Signal(5)
        m.d.comb += [lz.eq(16 - msb), norm.eq(mag << lz)]   # the leading 1 at bit 16
        r = _rne(m, norm, 6, "i2h_rne")                     # 11-bit significand, rounded
        expo = Signal(6)
        m.d.comb += expo.eq(msb + 15 + r[11])               # carried into the next binade
        with m.If(mag == 0):
            m.d.comb += self.o.eq(0)
        with m.Elif(expo >= 31):
            m.d.comb += self.o.eq(Cat(Const(0, 10), Const(31, 5), a[16]))
        with m.Else():
            m.d.comb += self.o.eq(Cat(Mux(r[11], 0, r[:10]), expo[:5], a[16]))
        return m


def int17_to_fp16(m, a):
    return _unit(m, Int17ToFp16, a=a)


class Fp16ToInt16(wiring.Component):
    """An fp16 code -> a signed 16-bit integer, as the SDP's output converter makes int16 from
    the fp16 result of an fp16 layer (NVDLA's ``FpFloatToInt<16, 5, 10>``; data-format spec,
    Precision Conversion, Table 30, fp16 -> int16): the significand (hidden bit always set,
    so zeros and denormals give 0) scaled by ``2^(e - 25)`` and rounded to nearest, ties away
    from zero; magnitudes past 32767 (infinities included) saturate to 32767 / -32768; a NaN
    gives -32768."""

    a: In(16)
    o: Out(signed(16))

    def elaborate(self, platform):
        m = Module()
        s, e, mant = self.a[15], self.a[10:15], self.a[:10]
        sig = Cat(mant, Const(1, 1))                           # 11 bits
        nan = (e == 31) & mant.any()
        # e <= 24: sig / 2^(25 - e), rounded half up; nothing survives a shift past 12
        rs = Signal(4)
        m.d.comb += rs.eq(Mux(e < 13, 12, 24 - e))             # (25 - e) - 1, at most 12
        half = Signal(12)
        m.d.comb += half.eq(sig >> rs)                         # floor(sig / 2^(24 - e))
        small = Signal(11)
        m.d.comb += small.eq((half + 1) >> 1)
        # 25 <= e <= 29: sig x 2^(e - 25) exactly (at most 32752); e >= 30 saturates
        big = Signal(15)
        m.d.comb += big.eq(sig << (e - 25)[:3])
        mag = Signal(15)
        m.d.comb += mag.eq(Mux(e >= 25, big, small))
        with m.If(nan):
            m.d.comb += self.o.eq(-32768)
        with m.Elif(e >= 30):
            m.d.comb += self.o.eq(Mux(s, -32768, 32767))
        with m.Else():
            m.d.comb += self.o.eq(Mux(s, -mag, mag))
        return m


def fp16_to_int16(m, a):
    """An :class:`Fp16ToInt16` in ``m``; returns the signed 16-bit integer of ``a``."""
    return _unit(m, Fp16ToInt16, a=a)


def _unit(m, cls, **ports):
    u = cls()
    m.submodules += u
    for k, v in ports.items():
        m.d.comb += getattr(u, k).eq(v)
    return u.o


def fp17_add(m, a, b):
    """An :class:`Fp17Add` in ``m``; returns ``a + b``."""
    return _unit(m, Fp17Add, a=a, b=b)


def fp17_mul(m, a, b):
    """An :class:`Fp17Mul` in ``m``; returns ``a x b``."""
    return _unit(m, Fp17Mul, a=a, b=b)


def fp16_to_fp17(m, a):
    """An :class:`Fp16ToFp17` in ``m``; returns the fp17 code of ``a``."""
    return _unit(m, Fp16ToFp17, a=a)


def fp17_to_fp16(m, a):
    """An :class:`Fp17ToFp16` in ``m``; returns the fp16 code of ``a``."""
    return _unit(m, Fp17ToFp16, a=a)


# -----------------------------------------------------------------------------------------
# fp32 units (the SDP's fp16 datapath; :mod:`sim.nvfloat` ``fp32_*``)
# -----------------------------------------------------------------------------------------
_E32, _M32 = 8, 23
_MMASK32 = (1 << _M32) - 1
FP32_MAX_MAG = (254 << _M32) | _MMASK32     #: largest finite fp32 magnitude


def _is_nan32(x):
    return (x[_M32:31] == 255) & x[:_M32].any()


def _significand32(m, x, name):
    s, e, mant = x[31], x[_M32:31], x[:_M32]
    zero = (e == 0) & (mant == 0)
    sig = Signal(_M32 + 1, name=name)
    m.d.comb += sig.eq(Mux(zero, 0, Cat(mant, 1)))
    return s, e, mant, zero, sig


class Fp32Add(wiring.Component):
    """``o = a + b`` on fp32 codes (``HLS_fp32_add``; :func:`sim.nvfloat.fp32_add`): the
    adder of :class:`Fp17Add` at the fp32 widths (a 49-bit window, exponents 0..255)."""

    a: In(32)
    b: In(32)
    o: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        M, more = _M32, _M32 + 2
        width = 2 * M + 3                                   # 49
        top = 254
        sa, ea, ma, _, pa = _significand32(m, a, "pa")
        sb, eb, mb, _, pb = _significand32(m, b, "pb")
        a_big = Signal()
        m.d.comb += a_big.eq(a[:31] >= b[:31])              # exponent, then mantissa
        oe, os, d = Signal(8), Signal(), Signal(8)
        m.d.comb += [oe.eq(Mux(a_big, ea, eb)), os.eq(Mux(a_big, sa, sb)),
                     d.eq(Mux(a_big, ea - eb, eb - ea))]
        big, small = Signal(width), Signal(width)
        m.d.comb += [big.eq(Cat(Const(0, more), Mux(a_big, pa, pb))),
                     small.eq(Cat(Const(0, more), Mux(a_big, pb, pa)) >> d)]
        v = Signal(width + 1)
        m.d.comb += v.eq(Mux(sa == sb, big + small, big - small))
        carry = v[width]
        v1 = Signal(width)
        oe1 = Signal(8)
        m.d.comb += [v1.eq(Mux(carry, v[1:], v[:width])),
                     oe1.eq(Mux(carry & (oe < top), oe + 1, oe))]
        msb = _msb_index(m, v[:width], "add32_msb")
        lz = Signal(range(width + 1))
        m.d.comb += lz.eq(Mux(v[:width] == 0, width, width - 1 - msb))
        zero, norm = Signal(), Signal()
        m.d.comb += [zero.eq(~carry & ((v[:width] == 0) | (oe <= lz))),
                     norm.eq(~carry & ~zero)]
        v2 = Signal(width)
        oe2 = Signal(8)
        m.d.comb += [v2.eq(Mux(norm, v1 << lz, v1)), oe2.eq(Mux(norm, oe1 - lz, oe1))]
        r = _rne(m, v2, more, "add32_rne")                  # 24 bits, or 2^24 on overflow
        ovf = r[M + 1]
        sat = Signal()
        m.d.comb += sat.eq((carry & (oe >= top)) | (ovf & (oe2 >= top)))
        oe3, om = Signal(8), Signal(M)
        m.d.comb += [oe3.eq(Mux(ovf & (oe2 < top), oe2 + 1, oe2)), om.eq(r[:M])]
        res = Signal(32)
        with m.If(sat):
            m.d.comb += res.eq(Cat(Const(FP32_MAX_MAG, 31), os))
        with m.Elif(zero):
            m.d.comb += res.eq(Cat(Const(0, 31), os))
        with m.Else():
            m.d.comb += res.eq(Cat(om, oe3, os))
        m.d.comb += self.o.eq(Mux(_is_nan32(a), a, Mux(_is_nan32(b), b, res)))
        return m


class Fp32Mul(wiring.Component):
    """``o = a x b`` on fp32 codes (``HLS_fp32_mul``; :func:`sim.nvfloat.fp32_mul`): the
    multiplier of :class:`Fp17Mul` at the fp32 widths (24 x 24-bit significands, bias 127)."""

    a: In(32)
    b: In(32)
    o: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        M = _M32
        bias, emax, top_e = 127, 255, 254
        sa, ea, ma, za, pa = _significand32(m, a, "pa")
        sb, eb, mb, zb, pb = _significand32(m, b, "pb")
        p = Signal(2 * M + 2)
        es = Signal(9)
        m.d.comb += [p.eq(pa * pb), es.eq(ea + eb)]
        os = sa ^ sb
        zero0, sat0, ok = Signal(), Signal(), Signal()
        m.d.comb += [zero0.eq(za | zb | (es < bias)), sat0.eq(~zero0 & (es >= emax + bias)),
                     ok.eq(~zero0 & ~sat0)]
        pe = Signal(8)
        m.d.comb += pe.eq(Mux(ok, es - bias, 0))
        top = p[2 * M + 1]
        pe2 = Signal(8)
        m.d.comb += pe2.eq(Mux(ok & top & (pe < top_e), pe + 1, pe))
        fb = 2 * M + 1
        frac = Signal(fb)
        m.d.comb += frac.eq(Mux(top, p[:fb], Cat(Const(0, 1), p[:fb - 1])))
        r = _rne(m, Cat(frac, Const(1, 1)), M + 1, "mul32_rne")  # 24 bits with the leading 1
        ovf = r[M + 1]
        oe = Signal(9)
        om = Signal(M)
        m.d.comb += [oe.eq(Mux(ovf, pe2 + 1, pe2)), om.eq(Mux(ovf, 0, r[:M]))]
        sat = Signal()
        m.d.comb += sat.eq(sat0 | (ok & top & (pe >= top_e)) | (ok & (oe == emax)))
        zero = Signal()
        m.d.comb += zero.eq(zero0 | (~sat & (oe == 0)))
        res = Signal(32)
        with m.If(zero):
            m.d.comb += res.eq(Cat(Const(0, 31), os))
        with m.Elif(sat):
            m.d.comb += res.eq(Cat(Const(FP32_MAX_MAG, 31), os))
        with m.Else():
            m.d.comb += res.eq(Cat(om, oe[:8], os))
        m.d.comb += self.o.eq(Mux(_is_nan32(a), a, Mux(_is_nan32(b), b, res)))
        return m


class Fp32MaxMin(wiring.Component):
    """``max`` / ``min`` of fp32 codes (NVDLA's ``FpMax`` / ``FpMin``;
    :func:`sim.nvfloat.fp32_max` / ``fp32_min``): ``o`` is the minimum when ``minimum`` is
    high. Order: sign, then magnitude; equal magnitudes of sign 1 count ``a`` as the greater;
    the maximum is ``b`` and the minimum ``a`` when ``a`` is not the greater; a NaN operand
    wins (``a``'s first)."""

    a: In(32)
    b: In(32)
    minimum: In(1)
    o: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        abs_gt = Signal()
        gt = Signal()
        m.d.comb += [abs_gt.eq(a[:31] > b[:31]),
                     gt.eq(Mux(~a[31], Mux(~b[31], abs_gt, 1), Mux(~b[31], 0, ~abs_gt)))]
        res = Mux(gt ^ self.minimum, a, b)
        m.d.comb += self.o.eq(Mux(_is_nan32(a), a, Mux(_is_nan32(b), b, res)))
        return m


class Fp16ToFp32(wiring.Component):
    """fp16 code -> fp32 code (``HLS_fp16_to_fp32``; :func:`sim.nvfloat.fp16_to_fp32`)."""

    a: In(16)
    o: Out(32)

    def elaborate(self, platform):
        m = Module()
        s, e, mm = self.a[15], self.a[_M:15], self.a[:_M]
        msb = _msb_index(m, mm, "h2s_msb")
        lz = Signal(4)
        m.d.comb += lz.eq(9 - msb)                        # leading zeros of the mantissa
        oe, om = Signal(8), Signal(_M32)
        with m.If((e == 0) & (mm == 0)):
            m.d.comb += [oe.eq(0), om.eq(0)]
        with m.Elif(e == 0):                              # denormal: normalized
            m.d.comb += [oe.eq(112 - lz), om.eq(Cat(Const(0, 13), (mm << (lz + 1))[:_M]))]
        with m.Elif((e == 0x1F) & (mm == 0)):             # infinity: the largest value
            m.d.comb += [oe.eq(254), om.eq(_MMASK32)]
        with m.Elif(e == 0x1F):                           # NaN: payload kept, unshifted
            m.d.comb += [oe.eq(255), om.eq(mm)]
        with m.Else():
            m.d.comb += [oe.eq(e + 112), om.eq(Cat(Const(0, 13), mm))]
        m.d.comb += self.o.eq(Cat(om, oe, s))
        return m


class Fp32ToFp16(wiring.Component):
    """fp32 code -> fp16 code (``HLS_fp32_to_fp16``; :func:`sim.nvfloat.fp32_to_fp16`)."""

    a: In(32)
    o: Out(16)

    def elaborate(self, platform):
        m = Module()
        s, e, mm = self.a[31], self.a[_M32:31], self.a[:_M32]
        p1 = Cat(mm, Const(1, 1))                         # 24 bits
        r = _rne(m, p1, 13, "s2h_rne")                    # 11 bits, 2^11 on overflow
        ovf = r[11]
        shift = Signal(5)
        m.d.comb += shift.eq(126 - e)                     # 13 + (113 - e): 14..24
        rd = _rne(m, p1, shift, "s2h_rned")               # <= 2^10: the smallest normal
        oe, om = Signal(5), Signal(_M)
        with m.If((e == 255) & (mm != 0)):
            m.d.comb += [oe.eq(0x1F), om.eq(mm[:_M])]
        with m.Elif((e >= 143) | ((e == 142) & ovf)):
            m.d.comb += [oe.eq(30), om.eq(_MMASK)]
        with m.Elif(e < 102):
            m.d.comb += [oe.eq(0), om.eq(0)]
        with m.Elif(e <= 112):
            m.d.comb += [oe.eq(rd[_M:]), om.eq(rd[:_M])]
        with m.Else():
            m.d.comb += [oe.eq(e - 112 + ovf), om.eq(r[:_M])]
        m.d.comb += self.o.eq(Cat(om, oe, s))
        return m


def fp32_add(m, a, b):
    """An :class:`Fp32Add` in ``m``; returns ``a + b``."""
    return _unit(m, Fp32Add, a=a, b=b)


def fp32_mul(m, a, b):
    """An :class:`Fp32Mul` in ``m``; returns ``a x b``."""
    return _unit(m, Fp32Mul, a=a, b=b)


def fp32_max_min(m, a, b, minimum):
    """An :class:`Fp32MaxMin` in ``m``; returns ``min(a, b)`` if ``minimum`` else ``max``."""
    return _unit(m, Fp32MaxMin, a=a, b=b, minimum=minimum)


def fp16_to_fp32(m, a):
    """An :class:`Fp16ToFp32` in ``m``; returns the fp32 code of ``a``."""
    return _unit(m, Fp16ToFp32, a=a)


def fp32_to_fp16(m, a):
    """An :class:`Fp32ToFp16` in ``m``; returns the fp16 code of ``a``."""
    return _unit(m, Fp32ToFp16, a=a)


def fp32_is_nan(x):
    """Whether the fp32 code ``x`` is a NaN (a Value)."""
    return _is_nan32(x)


def fp32_sub(m, a, b):
    """An :class:`Fp32Add` in ``m``; returns ``a - b`` (``b``'s sign bit flipped, NVDLA's
    ``FpSub``; :func:`sim.nvfloat.fp32_sub`)."""
    return fp32_add(m, a, Cat(b[:31], ~b[31]))


# -----------------------------------------------------------------------------------------
# fp17 <-> fp32 and fraction conversions (the CDP's fp16 datapath)
# -----------------------------------------------------------------------------------------
class Fp17ToFp32(wiring.Component):
    """fp17 code -> fp32 code (``Fp17ToFp32``; :func:`sim.nvfloat.fp17_to_fp32`): exact; the
    fp17 infinity code gives the largest finite fp32 value, a NaN keeps its 10-bit payload
    unshifted."""

    a: In(17)
    o: Out(32)

    def elaborate(self, platform):
        m = Module()
        s, e, mm = _split17(self.a)
        oe, om = Signal(8), Signal(_M32)
        with m.If((e == 0) & (mm == 0)):
            m.d.comb += [oe.eq(0), om.eq(0)]
        with m.Elif((e == 63) & (mm == 0)):
            m.d.comb += [oe.eq(254), om.eq(_MMASK32)]
        with m.Elif(e == 63):
            m.d.comb += [oe.eq(255), om.eq(mm)]
        with m.Else():
            m.d.comb += [oe.eq(e + 96), om.eq(Cat(Const(0, 13), mm))]
        m.d.comb += self.o.eq(Cat(om, oe, s))
        return m


class Fp32ToFp17(wiring.Component):
    """fp32 code -> fp17 code (``Fp32ToFp17``; :func:`sim.nvfloat.fp32_to_fp17`): mantissa
    rounded to nearest even; exponents from 159 (or rounding past fp17 exponent 62) give the
    largest finite value; below the smallest normal a signed zero unless rounding reaches
    it; NaNs keep sign and the low 10 mantissa bits."""

    a: In(32)
    o: Out(17)

    def elaborate(self, platform):
        m = Module()
        s, e, mm = self.a[31], self.a[_M32:31], self.a[:_M32]
        p1 = Cat(mm, Const(1, 1))                          # 24 bits
        r = _rne(m, p1, 13, "s2f_rne")                     # 11 bits, 2^11 on overflow
        ne = Signal(9)
        m.d.comb += ne.eq(e - 96 + r[11])
        shift = Signal(5)
        m.d.comb += shift.eq(110 - e)                      # 13 + 97 - e: 14..24 (denormals)
        rd = _rne(m, p1, shift, "s2f_rned")                # <= 2^10: the smallest normal
        den = (e >= 86) & (e <= 96)
        oe, om = Signal(6), Signal(_M)
        with m.If((e == 255) & (mm != 0)):
            m.d.comb += [oe.eq(63), om.eq(mm[:_M])]
        with m.Elif((e >= 159) | (~den & (e > 96) & (ne >= 63))):
            m.d.comb += [oe.eq(62), om.eq(_MMASK)]
        with m.Elif(e < 86):
            m.d.comb += [oe.eq(0), om.eq(0)]
        with m.Elif(den):
            m.d.comb += [oe.eq(rd[_M]), om.eq(0)]
        with m.Else():
            m.d.comb += [oe.eq(ne), om.eq(r[:_M])]
        m.d.comb += self.o.eq(Cat(om, oe, s))
        return m


class FractionToFp17(wiring.Component):
    """``a / 2^bits`` for a ``bits``-bit unsigned fraction -> fp17 code (``FpFractionToFloat``;
    :func:`sim.nvfloat.fraction_to_fp17`), rounded to 11 significant bits, nearest even; 0
    gives +0. ``bits`` up to 35: below 2^-30 (``bits`` > 30 only) the result is +0 unless
    rounding reaches 2^-30."""

    def __init__(self, bits=16):
        assert 11 <= bits <= 35
        self.bits = bits
        super().__init__({"a": In(bits), "o": Out(17)})

    def elaborate(self, platform):
        m = Module()
        n, f = self.bits, self.a
        msb = _msb_index(m, f, "frac_msb")
        zc = Signal(range(n + 1))
        m.d.comb += zc.eq(n - 1 - msb)                     # leading zeros
        sh = Signal(n + 1)
        m.d.comb += sh.eq(f << (zc + 1))                   # the leading one at bit n
        r = _rne(m, sh, n - 10, "frac_rne")                # 11 bits, 2^11 on overflow
        ovf = r[11]
        oe, om = Signal(6), Signal(_M)
        m.d.comb += [oe.eq(Mux(ovf, 31 - zc, 30 - zc)), om.eq(Mux(ovf, 0, r[:_M]))]
        zero = f == 0
        if n > 30:                                         # below fp17's smallest normal
            zero = zero | (~ovf & (zc >= 30))
        m.d.comb += self.o.eq(Mux(zero, 0, Cat(om, oe)))
        return m


def fp17_to_fp32(m, a):
    """An :class:`Fp17ToFp32` in ``m``; returns the fp32 code of ``a``."""
    return _unit(m, Fp17ToFp32, a=a)


def fp32_to_fp17(m, a):
    """An :class:`Fp32ToFp17` in ``m``; returns the fp17 code of ``a``."""
    return _unit(m, Fp32ToFp17, a=a)


def fraction_to_fp17(m, a, bits=16):
    """A :class:`FractionToFp17` of ``bits`` bits in ``m``; returns the fp17 code of
    ``a / 2^bits``."""
    u = FractionToFp17(bits)
    m.submodules += u
    m.d.comb += u.a.eq(a)
    return u.o
