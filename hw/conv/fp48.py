"""CACC's fp16-layer arithmetic: the 48-bit assembly float (one accumulation step) and its
delivery as fp32, combinational logic on Amaranth values.

Bit for bit what the golden model computes (:func:`sim.conv.cacc.fp48_add` and
:func:`sim.conv.cacc.fp48_to_fp32`; their comment block states the format: 8-bit exponent,
bias 63, all ones for NaN, over a 40-bit two's-complement significand with two integer bits).
The step here is written from that model, one piece per paragraph of it:

1. the partial sum (44-bit code of :func:`sim.conv.cmac.fp16_mac_cell`: 6-bit exponent field
   over a 38-bit sum) is read from its low 36 bits, normalized by its redundant sign bits and
   widened by four zero bits; its exponent becomes ``field + 47 - shift`` (7 bits);
2. NaN (partial-sum field 0x3F, assembly exponent 0xFF) wins: both exponents become 0xFF, the
   NaN operand keeps its sign and mantissa bits (the assembly's first), the other operand 0;
   a zero operand has exponent 0;
3. the operand with the smaller exponent is shifted right arithmetically (one 80-bit shifter:
   the operand over 40 zero bits): the top 40 bits are kept (the operand's sign fill when it is
   40 or more places below: the partial sum's fill from its bit 37), the next two and an OR of
   the rest are the guard, round and sticky bits;
4. the 41-bit sum over those three bits (44 bits) is normalized by its redundant sign bits
   (exponent ``emax + 1 - shift``); the 40 bits below the sign are the significand, the next a
   guard bit, the rest a sticky bit; half an ulp is added unless the value is negative and
   exactly halfway; a carry out of the significand renormalizes (the two cases give the
   constants 01.0 and 10.0 with the exponent one up / down); a zero result has exponent 0.

:func:`fp48_add` is :func:`fp48_psum` (step 1, the partial sum alone: it can sit a pipeline
stage before the assembly value is read), :func:`fp48_align` (steps 2 and 3) and
:func:`fp48_round` (step 4), so a pipeline can register between them
(:class:`hw.conv.cacc.Cacc` does: its stages 0, 1 and 2). Leading-sign counts are a tree of leading-zero counts of ``v[i] ^ v[i+1]`` (:func:`_lsd`).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.lib import data

__all__ = ["fp48_add", "fp48_psum", "fp48_align", "fp48_round", "fp48_to_fp32", "PSUM_LAYOUT",
           "SUM_LAYOUT"]


def _clz_tree(v):
    """(all zero, leading zeros) of ``v`` (a power-of-two width >= 2), a balanced tree."""
    n = len(v)
    if n == 2:
        return ~(v[0] | v[1]), ~v[1]
    lo_z, lo_c = _clz_tree(v[:n // 2])
    hi_z, hi_c = _clz_tree(v[n // 2:])
    return hi_z & lo_z, Mux(hi_z, Cat(lo_c, Const(1, 1)), Cat(hi_c, Const(0, 1)))


def _lsd(m, v, name):
    """Redundant sign bits of the two's-complement value ``v`` (``len(v) - 1`` for 0 and -1):
    the leading zeros of ``v[i] ^ v[i+1]``, padded with ones below to a power of two."""
    n = len(v)
    y = v[:n - 1] ^ v[1:]
    width = 2
    while width < n:                     # > n - 1 bits: the padding stops a zero y at n - 1
        width *= 2
    _, cnt = _clz_tree(Cat(Const((1 << (width - n + 1)) - 1, width - n + 1), y))
    out = Signal(range(n), name=name)
    m.d.comb += out.eq(cnt)
    return out


#: :func:`fp48_psum` 's result: the partial sum normalized, ready for :func:`fp48_step`
PSUM_LAYOUT = data.StructLayout({
    "mant": 36,      # normalized significand, or the NaN's sign and mantissa at bits 25..35
    "expo": 7,       # its exponent (0 for a zero partial sum)
    "nan": 1,        # exponent field 0x3F
    "fill": 1,       # bit 37: the sign fill when shifted 40 or more places
})


def fp48_psum(m, psum, name="fp48"):
    """Logic in ``m`` preparing the 44-bit partial-sum code ``psum`` (its low 44 bits) for
    :func:`fp48_step` (returned :data:`PSUM_LAYOUT` view): steps 1 and the partial sum's side
    of 2. Independent of the assembly value, so it can sit a pipeline stage earlier."""
    def sig(shape, suffix):
        return Signal(shape, name=f"{name}_{suffix}")

    di = sig(44, "di")
    m.d.comb += di.eq(psum[:44])
    di_expn, di_mant = di[38:44], di[:36]
    lead = _lsd(m, di_mant, f"{name}_lead")
    di_expm, di_manm = sig(7, "di_expm"), sig(36, "di_manm")
    m.d.comb += [di_expm.eq(di_expn + 47 - lead), di_manm.eq(di_mant << lead)]
    out = Signal(PSUM_LAYOUT, name=f"{name}_psum")
    nan = di_expn.all()
    m.d.comb += [out.mant.eq(Mux(nan, Cat(Const(0, 25), di[27:38]), di_manm)),
                 out.expo.eq(Mux(di[:38].any(), di_expm, 0)),
                 out.nan.eq(nan), out.fill.eq(di[37])]
    return out


def fp48_add(m, psum, acc, acc_valid, name="fp48"):
    """Logic in ``m`` for one accumulation step: ``psum`` (its low 44 bits: the CMAC partial-
    sum code) + ``acc`` (48-bit assembly code, read as 0 where ``acc_valid`` is low) -> the
    48-bit assembly code (returned Signal). Follows :func:`sim.conv.cacc.fp48_add`:
    :func:`fp48_psum`, :func:`fp48_align`, :func:`fp48_round`."""
    return fp48_round(m, fp48_align(m, fp48_psum(m, psum, name), acc, acc_valid, name), name)


#: :func:`fp48_align` 's result: the unnormalized sum, ready for :func:`fp48_round`
SUM_LAYOUT = data.StructLayout({
    "total": 44,     # the 41-bit sum over guard, round and sticky bits
    "emax": 8,       # the larger operand's exponent
    "nan": 1,        # a NaN operand: the sum is the NaN's bits
})


def fp48_align(m, dp, acc, acc_valid, name="fp48"):
    """Steps 2 and 3 of :func:`fp48_add` from the prepared partial sum ``dp``
    (:func:`fp48_psum`) and the assembly code ``acc`` (read as 0 where ``acc_valid`` is low):
    the aligned sum (returned :data:`SUM_LAYOUT` view)."""
    def sig(shape, suffix):
        return Signal(shape, name=f"{name}_{suffix}")

    oi = sig(48, "oi")
    m.d.comb += oi.eq(Mux(acc_valid, acc[:48], 0))
    oi_expn = oi[40:48]
    oi_zero = ~oi[:40].any()
    di_nan, oi_nan = dp.nan, oi_expn.all()
    nan = sig(1, "nan")
    m.d.comb += nan.eq(di_nan | oi_nan)

    # 2. NaN and zero operands
    dx, ox = sig(40, "dx"), sig(40, "ox")
    di_expo, oi_expo = sig(8, "di_expo"), sig(8, "oi_expo")
    m.d.comb += [
        dx.eq(Cat(Const(0, 4), Mux(oi_nan, 0, dp.mant))),
        ox.eq(Mux(oi_nan, Cat(Const(0, 29), oi[29:40]), Mux(di_nan, 0, oi[:40]))),
        di_expo.eq(Mux(nan, 0xFF, dp.expo)),
        oi_expo.eq(Mux(nan, 0xFF, Mux(oi_zero, 0, oi_expn))),
    ]

    # 3. alignment of the smaller operand: kept 40 bits + guard, round, sticky
    d_gt = sig(1, "d_gt")
    emax, diff = sig(8, "emax"), sig(8, "diff")
    big, small, fill = sig(40, "big"), sig(40, "small"), sig(1, "fill")
    m.d.comb += [
        d_gt.eq(di_expo > oi_expo),
        emax.eq(Mux(d_gt, di_expo, oi_expo)),
        diff.eq(Mux(d_gt, di_expo - oi_expo, oi_expo - di_expo)),
        big.eq(Mux(d_gt, dx, ox)),
        small.eq(Mux(d_gt, ox, dx)),
        fill.eq(Mux(d_gt, oi[39], dp.fill)),
    ]
    amt = sig(range(81), "amt")
    sh = sig(80, "sh")
    m.d.comb += [amt.eq(Mux(diff >= 80, 80, diff)),
                 sh.eq(Cat(Const(0, 40), small).as_signed() >> amt)]
    kept = sig(40, "kept")
    m.d.comb += kept.eq(Mux(diff >= 40, fill.replicate(40), sh[40:]))
    msum = sig(41, "msum")
    m.d.comb += msum.eq(big.as_signed() + kept.as_signed())
    out = Signal(SUM_LAYOUT, name=f"{name}_sum")
    m.d.comb += [out.total.eq(Cat(sh[:38].any(), sh[38], sh[39], msum)), out.emax.eq(emax),
                 out.nan.eq(nan)]
    return out


def fp48_round(m, sm, name="fp48"):
    """Step 4 of :func:`fp48_add` on the aligned sum ``sm`` (:func:`fp48_align`): the 48-bit
    assembly code (returned Signal)."""
    def sig(shape, suffix):
        return Signal(shape, name=f"{name}_{suffix}")

    total, emax, nan = sm.total, sm.emax, sm.nan
    msum = total[3:]
    ln = _lsd(m, total, f"{name}_ln")
    scmp = sig(44, "scmp")
    m.d.comb += scmp.eq(total << ln)
    eff, sign, guard, stick = sig(40, "eff"), sig(1, "sign"), sig(1, "guard"), sig(1, "stick")
    m.d.comb += [
        eff.eq(Mux(nan, msum[:40], scmp[4:44])),
        sign.eq(Mux(nan, msum[39], scmp[43])),
        guard.eq(~nan & scmp[3]),
        stick.eq(~nan & scmp[:3].any()),
    ]
    half = sig(1, "half")
    m.d.comb += half.eq(guard & (~sign | stick))
    carry_pos, carry_neg = sig(1, "carry_pos"), sig(1, "carry_neg")
    m.d.comb += [carry_pos.eq(half & ~sign & eff[:39].all()),
                 carry_neg.eq(half & sign & ~eff[38] & eff[:38].all())]
    mant = sig(40, "mant")
    m.d.comb += mant.eq(Mux(carry_pos, 1 << 38, Mux(carry_neg, 1 << 39, eff + half)))
    expo = sig(8, "expo")
    m.d.comb += expo.eq(Mux(nan, 0xFF, Mux(mant == 0, 0,
                                           emax + 1 - ln + carry_pos - carry_neg)))
    out = sig(48, "out")
    m.d.comb += out.eq(Cat(mant, expo))
    return out


def fp48_to_fp32(m, acc, name="fp48to32"):
    """Logic in ``m`` converting the 48-bit assembly code ``acc`` to the fp32 code CACC
    delivers (returned 32-bit Signal): the magnitude rounded to 24 bits half up (a carry out
    renormalizes), exponent + 64, -2 (10.000) one exponent up; zero gives 0, NaN exponent
    0xFF with the 10 mantissa bits below the sign. Follows :func:`sim.conv.cacc.fp48_to_fp32`.
    """
    def sig(shape, suffix):
        return Signal(shape, name=f"{name}_{suffix}")

    a = sig(48, "in")
    m.d.comb += a.eq(acc[:48])
    expo, sign, um = a[40:48], a[39], a[:39]
    nan, zero, neg2 = sig(1, "nan"), sig(1, "zero"), sig(1, "neg2")
    m.d.comb += [nan.eq(expo.all()), zero.eq(~a[:40].any()), neg2.eq(sign & ~um.any())]
    mabs = sig(39, "mabs")
    m.d.comb += mabs.eq(Mux(sign, -um, um))
    eff, half = mabs[15:39], mabs[14]
    carry = sig(1, "carry")
    m.d.comb += carry.eq(eff.all() & half)
    m23, e = sig(23, "m23"), sig(8, "e")
    m.d.comb += [
        m23.eq(Mux(nan, um[29:39], Mux(carry, 0, eff + half))),
        e.eq(Mux(zero, 0, Mux(nan, 0xFF, expo + 64 + (carry | neg2)))),
    ]
    out = sig(32, "out")
    m.d.comb += out.eq(Cat(m23, e, sign))
    return out
