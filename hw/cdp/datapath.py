"""The CDP arithmetic datapath (spec: CDP -- input converter, square sum, lookup tables, multiply,
output converter). int8, and int16 on builds whose ``data_types`` has it (precision per layer
from ``D_DATA_FORMAT.INPUT_DATA_TYPE``; an int8-only build has the int8 widths only).

``T`` lanes (``cfg.cdp_throughput``) of one pixel's channels enter per transfer, channel-major:
all channels of pixel (w, h) (``S`` surfaces x atom channels, cripple channels flagged ``pad``)
before the next pixel. Each transfer carries the pixel's ``parity`` (toggles per pixel) and
``real`` (0 for the flush transfers that push the last pixel's final channels out). The
pipeline (all steps advance on ``en = ~o.valid | o.ready``, bubbles travel)::

    sub/mul -> round+sat -> square -> [window] sum -> LUT (8) -> mul -> ocvt (4) -> o

* Input converter: ``sat9(round((x - DATIN_OFFSET[7:0]) * DATIN_SCALE >> DATIN_SHIFTER))``
  (int16: ``sat17`` of ``x - DATIN_OFFSET[15:0]``, a 33-bit product); pad lanes become 0
  (NVDLA fills them with the offset, which converts to 0). Squares are 17 (int16: 33) bits
  unsigned, the square sum 21 (37) bits.
* Window: a history of the last ``D + 4`` converted values (``D = T * ceil(4 / T)``, shifted on
  every valid transfer) gives the ``2 * NORMALZ_LEN + 3`` neighbours of the transfer ``D``
  elements back; neighbours of another pixel (parity differs) or of a flush transfer count 0.
  The square sum (``SQSUM_BYPASS``: the centre value itself) feeds both tables.
* LUT: LE (65 entries, linear or exponent index) and LO (257, linear) with 38-bit signed
  start / end, under / overflow extrapolation ``table[0|last] + round((x - start|end [- 2^off
  for an LE exponent underflow]) * scale >> shift)`` (signed 5-bit shift: negative shifts
  left), interpolation ``y0 + round((y1 - y0) * f >> 16)`` with a 16-bit fraction; results
  saturated to int16; table choice by the under/overflow/hybrid priorities.
* Multiply: ``lut * centre`` (``MUL_BYPASS``: ``lut``), 25 (int16: 33) bits.
* Output converter: ``sat8(round((y - DATOUT_OFFSET[24:0]) * DATOUT_SCALE >> DATOUT_SHIFTER))``
  (int16: ``sat16`` of ``y - DATOUT_OFFSET[31:0]``, a 50-bit product);
  a lane counts as saturated when ``floor(... >> shift)`` is more than 1 away from the result.

fp16 (builds whose ``data_types`` has it; layers with ``INPUT_DATA_TYPE`` = FP16): a second
path through the same steps, chosen at the output (:func:`sim.cdp.cdp.compute_fp16`, the units
of :mod:`hw.nvfloat`): fp16 -> fp17 after the NaN flush (padding lanes +0); the fp32 square of
the fp17 value (fp32 multiplier); the window's squares summed with fp32 adders in NVDLA's order
``((q-1 + q+1) + q0) + (q-2 + q+2) + ...`` (eight adders a lane; ``SQSUM_BYPASS``: the centre
in fp32); per table ``d = sum - START`` (fp32, the low 32 bits of the START registers) and the
index stage of :func:`sim.cdp.cdp.lut_index_fp16`, whose flags and indices address the tables
as in the integer modes; then ``(in1 - in0)`` in fp32 -> fp17, times the 16-bit fraction
(hit) or the fp16 slope scale (miss), plus ``y0`` in fp17 (a NaN sum bypasses to its fp17
NaN); the fp17 multiplier (``MUL_BYPASS``: the LUT value, or a NaN input itself); fp17 ->
fp16. The converter fields and slope shifts play no part; ``sat`` counts 0. The fp units are
combinational inside the steps; fp16 builds add two steps after the window for the square
sum (the four pair sums in the window step, then two adders a step), so no step is more
than about two fp32 adders deep.

Rounding is half away from zero everywhere. The LUT RAM (LE at 0..64, LO at 65..321) has a
CSB port (``lut_we`` / ``lut_table`` / ``lut_addr`` / ``lut_wdata``, combinational
``lut_rdata``); helpers are shared with the SDP datapath (:mod:`hw.sdp.datapath`): the LUT RAM
layout and its access port (:func:`hw.sdp.datapath.lut_ram`), rounding, saturation, the
step pipeline. The SDP's LUT arithmetic itself is not reused: NVDLA's CDP keeps a 16-bit
interpolation fraction, interpolates as ``y0 + round(dy * f)`` and saturates to int16, the
SDP a 35-bit fraction, ``round(y0 * (1 - f) + y1 * f)`` and int32.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from arch.registers import register_map
from hw.regfile import fields_layout
from hw.cdp.check import FP16, INT16
from hw.arith import comb, round_shift_right, round_shift_right_split, saturate
from hw.nvfloat import (fp16_to_fp17, fp16_to_fp32, fp17_add, fp17_mul, fp17_to_fp16,
                        fp17_to_fp32, fp32_add, fp32_is_nan, fp32_mul, fp32_sub, fp32_to_fp17,
                        fraction_to_fp17)
from hw.sdp.datapath import LE_DEPTH, LO_DEPTH, _Pipe, _popcount, lut_ram

__all__ = ["CdpDatapath", "in_layout", "out_layout", "window_delay"]

FRAC = 16


def window_delay(lanes):
    """Elements between a transfer's entry into the window and its centres leaving."""
    return lanes * -(-4 // lanes)


def in_layout(lanes, bits=8):
    """One datapath transfer: ``bits`` = 16 on builds with int16 (int8 values sign-extended),
    else 8."""
    return data.StructLayout({"data": data.ArrayLayout(signed(bits), lanes),
                              "pad": data.ArrayLayout(1, lanes),
                              "parity": 1, "real": 1, "last": 1})


def out_layout(lanes):
    count = range(lanes + 1)
    return data.StructLayout({"data": data.ArrayLayout(signed(16), lanes), "last": 1,
                              "sat": count, "lut_uflow": count, "lut_oflow": count,
                              "lut_hybrid": count, "lut_le_hit": count, "lut_lo_hit": count})


def _highest_one(m, v, name):
    """Index of the highest set bit of unsigned ``v`` (up to 64 bits)."""
    cur = Cat(v, Const(0, 64 - len(v)))
    bits = []
    for step in (32, 16, 8, 4, 2, 1):
        hi = cur[step:2 * step]
        big = hi != 0
        bits.append(big)
        cur = Mux(big, hi, cur[:step])
    return comb(m, Cat(*reversed(bits)), name)


class CdpDatapath(wiring.Component):
    """Ports: ``regs`` (CDP D-group rw fields), ``s`` (CDP S-group rw fields), ``i`` / ``o``
    streams (:func:`in_layout` / :func:`out_layout`), ``clear`` (empties the window history
    between layers), LUT RAM access ``lut_we``/``lut_table``/``lut_addr``/``lut_wdata``/
    ``lut_rdata``. ``latency``: steps from input to output."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.lanes = T = cfg.cdp_throughput
        self.int16 = "int16" in cfg.data_types
        self.fp16 = "fp16" in cfg.data_types
        lane_bits = 16 if self.int16 or self.fp16 else 8
        block = register_map(cfg)["CDP"]
        self.latency = 16 + 2 * self.fp16       # fp16: two more steps for the square sum
        super().__init__({
            "regs": In(fields_layout(block.d_registers, ("rw",))),
            "s": In(fields_layout(block.s_registers, ("rw",), ("S_POINTER", "S_STATUS"))),
            "i": In(stream.Signature(in_layout(T, lane_bits))),
            "o": Out(stream.Signature(out_layout(T))),
            "clear": In(1),
            "lut_we": In(1), "lut_table": In(1), "lut_addr": In(10), "lut_wdata": In(16),
            "lut_rd_table": In(1), "lut_rd_addr": In(10), "lut_rdata": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        T, r, s = self.lanes, self.regs, self.s
        out_valid = Signal()
        en = Signal()
        m.d.comb += [en.eq(~out_valid | self.o.ready), self.i.ready.eq(en)]
        pipe = _Pipe(m, en)
        ports = lut_ram(m, self, T)

        p = self.i.payload
        st = {"valid": self.i.valid, "par": p.parity, "real": p.real, "last": p.last}
        for lane in range(T):
            st[f"x{lane}"] = p.data[lane]
            st[f"pad{lane}"] = p.pad[lane]

        # -- input converter ------------------------------------------------------------------
        # int8: 9-bit result from a 25-bit product; int16 (builds with it, per layer): 17 bits
        # from 33 (NVDLA's C model: sc_int<17> difference, sc_int<33> product).
        wide = self.int16
        xbits, pbits, qbits = (17, 33, 33) if wide else (9, 25, 17)
        i16 = comb(m, r.D_DATA_FORMAT.INPUT_DATA_TYPE == INT16, "int16") if wide else None
        off = r.D_DATIN_OFFSET.DATIN_OFFSET
        ioff = Mux(i16, off[:16].as_signed(), off[:8].as_signed()) if wide \
            else off[:8].as_signed()
        scale = r.D_DATIN_SCALE.DATIN_SCALE.as_signed()
        fp = self.fp16 and comb(m, r.D_DATA_FORMAT.INPUT_DATA_TYPE == FP16, "fp16")
        new = dict(st)
        for lane in range(T):
            x = st[f"x{lane}"]
            if self.fp16 and not wide:                 # 16-bit lanes for fp16 only
                x = x[:8].as_signed()
            new[f"x{lane}"] = (x - ioff) * scale                                 # pbits
            if self.fp16:
                # fp16: NaN flush (D_NAN_FLUSH_TO_ZERO), fp16 -> fp17; padding channels +0
                h = st[f"x{lane}"].as_unsigned()[:16]
                nan = (h[10:15] == 0x1F) & h[:10].any()
                h = Mux(nan & r.D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO, 0, h)
                new[f"f{lane}"] = Mux(st[f"pad{lane}"], 0, fp16_to_fp17(m, h))
        st = pipe.step(new)
        new = dict(st)
        for lane in range(T):
            v, _ = round_shift_right(m, st[f"x{lane}"], r.D_DATIN_SHIFTER.DATIN_SHIFTER, xbits,
                                      pbits, f"icvt{lane}", structure="floor")
            if wide:
                v = Mux(i16, v, saturate(v, 9))
            new[f"x{lane}"] = Mux(st[f"pad{lane}"], 0, v).as_signed()[:xbits].as_signed()
            new[f"pad{lane}"] = None
        st = pipe.step(new)
        new = dict(st)
        for lane in range(T):
            new[f"q{lane}"] = (st[f"x{lane}"] * st[f"x{lane}"]).as_unsigned()[:qbits]
            if self.fp16:                              # fp32 square of the fp17 value
                w = fp17_to_fp32(m, st[f"f{lane}"])
                new[f"q32{lane}"] = fp32_mul(m, w, w)
        st = pipe.step(new)

        # -- window and square sum ------------------------------------------------------------
        D = window_delay(T)
        H = D + 4
        hist = [{"v": Signal(signed(xbits), name=f"h_v{k}"),
                 "q": Signal(qbits, name=f"h_q{k}"),
                 "par": Signal(name=f"h_par{k}"), "real": Signal(name=f"h_real{k}"),
                 "last": Signal(name=f"h_last{k}")} for k in range(H)]
        cur = [{"v": st[f"x{lane}"], "q": st[f"q{lane}"], "par": st["par"], "real": st["real"],
                "last": st["last"]} for lane in range(T)]
        keys = ("v", "q", "par", "real", "last")
        if self.fp16:
            keys += ("f", "q32")
            for k, h in enumerate(hist):
                h["f"], h["q32"] = Signal(17, name=f"h_f{k}"), Signal(32, name=f"h_q32_{k}")
            for lane, c in enumerate(cur):
                c["f"], c["q32"] = st[f"f{lane}"], st[f"q32{lane}"]
        seq = hist + cur                                          # oldest first
        with m.If(self.clear):
            for h in hist:
                m.d.sync += h["real"].eq(0)
        with m.Elif(en & st["valid"]):
            for k in range(H):
                for key in keys:
                    m.d.sync += hist[k][key].eq(seq[k + T][key])
        half = r.D_LRN_CFG.NORMALZ_LEN + 1
        bypass_sq = r.D_FUNC_BYPASS.SQSUM_BYPASS
        base = H - D                                              # = 4
        centre_real = seq[base]["real"]
        new = dict(st)
        for lane in range(T):
            c = seq[base + lane]
            sbits = qbits + 4                                   # 9 squares
            total = Const(0, sbits)
            for k in range(-4, 5):
                t = seq[base + lane + k]
                inside = (t["par"] == c["par"]) & t["real"]
                if k:
                    inside = inside & (half >= abs(k))
                total = total + Mux(inside, t["q"], 0)
            new[f"sum{lane}"] = Mux(bypass_sq, c["v"], total[:sbits].as_signed())
            new[f"c{lane}"] = c["v"]
            new[f"x{lane}"] = new[f"q{lane}"] = None
            if self.fp16:
                for k, v in self._pairs_fp16(m, seq, base + lane).items():
                    new[f"sp{k}_{lane}"] = v
                new[f"sq0_{lane}"] = c["q32"]
                new[f"c17{lane}"] = c["f"]
                new[f"f{lane}"] = new[f"q32{lane}"] = None
        new["valid"] = st["valid"] & centre_real
        new["last"] = seq[base]["last"]
        new["par"] = new["real"] = None
        st = pipe.step(new)
        if self.fp16:
            # the fp32 sum in NVDLA's order over two more steps (two adders deep each):
            # ((pair1 + centre) + pair2), then (+ pair3) + pair4, up to the window's last pair
            new = dict(st)
            for lane in range(T):
                t = fp32_add(m, st[f"sp1_{lane}"], st[f"sq0_{lane}"])
                new[f"sp1_{lane}"] = Mux(half >= 2, fp32_add(m, t, st[f"sp2_{lane}"]), t)
                new[f"sp2_{lane}"] = new[f"sq0_{lane}"] = None
            st = pipe.step(new)
            new = dict(st)
            for lane in range(T):
                t = st[f"sp1_{lane}"]
                t = Mux(half >= 3, fp32_add(m, t, st[f"sp3_{lane}"]), t)
                t = Mux(half >= 4, fp32_add(m, t, st[f"sp4_{lane}"]), t)
                # SQSUM_BYPASS: the centre value in fp32
                new[f"s32{lane}"] = Mux(bypass_sq, fp17_to_fp32(m, st[f"c17{lane}"]), t)
                for k in (1, 3, 4):
                    new[f"sp{k}_{lane}"] = None
            st = pipe.step(new)

        # -- LUT ------------------------------------------------------------------------------
        st = self._lut(m, pipe, st, ports, fp)

        # -- multiply, output converter --------------------------------------------------------
        mul_bypass = r.D_FUNC_BYPASS.MUL_BYPASS
        oofs = r.D_DATOUT_OFFSET.DATOUT_OFFSET
        ooff = Mux(i16, oofs[:32].as_signed(), oofs[:25].as_signed()) if wide \
            else oofs[:25].as_signed()
        ybits, obits = (33, 50) if wide else (25, 42)
        oscale = r.D_DATOUT_SCALE.DATOUT_SCALE.as_signed()
        oshift = r.D_DATOUT_SHIFTER.DATOUT_SHIFTER
        new = dict(st)
        for lane in range(T):
            y = Mux(mul_bypass, st[f"lut{lane}"], st[f"lut{lane}"] * st[f"c{lane}"])
            new[f"y{lane}"] = (y.as_signed()[:ybits].as_signed() - ooff)          # +1 bit
            new[f"lut{lane}"] = new[f"c{lane}"] = None
            if self.fp16:
                # fp17 multiplier, the input first; MUL_BYPASS: the LUT value, a NaN input
                # passing itself
                c, lut = st[f"c17{lane}"], st[f"lut17{lane}"]
                cnan = (c[10:16] == 63) & c[:10].any()
                new[f"o17{lane}"] = Mux(mul_bypass, Mux(cnan, c, lut), fp17_mul(m, c, lut))
                new[f"c17{lane}"] = new[f"lut17{lane}"] = None
        st = pipe.step(new)
        new = dict(st)
        for lane in range(T):
            new[f"y{lane}"] = st[f"y{lane}"] * oscale                            # obits
            if self.fp16:
                new[f"h{lane}"] = fp17_to_fp16(m, st[f"o17{lane}"])
                new[f"o17{lane}"] = None
        st = pipe.step(new)
        # the rounding shift and the floor, then the saturation test a step later
        new = dict(st)
        for lane in range(T):
            y = st[f"y{lane}"]
            v, _ = round_shift_right(m, y, oshift, 16 if wide else 8, obits, f"ocvt{lane}",
                                     structure="floor")
            if wide:
                v = comb(m, Mux(i16, v, saturate(v, 8)), f"ocvt_sat{lane}")
            new[f"v{lane}"] = v
            new[f"fl{lane}"] = y >> oshift
            new[f"y{lane}"] = None
        st = pipe.step(new)
        new = dict(st)
        sats = []
        for lane in range(T):
            v, fl = st[f"v{lane}"], st[f"fl{lane}"]
            sats.append((fl > v + 1) | (fl < v - 1))
            new[f"out{lane}"] = v
            new[f"v{lane}"] = new[f"fl{lane}"] = None
            if self.fp16:
                new[f"out{lane}"] = Mux(fp, st[f"h{lane}"].as_signed(), v)
                new[f"h{lane}"] = None
        new["sat"] = _popcount(sats)
        if self.fp16:                                  # nothing saturates in fp16
            new["sat"] = Mux(fp, 0, new["sat"])
        st = pipe.step(new)
        assert pipe.steps == self.latency

        o = self.o.payload
        m.d.comb += [out_valid.eq(st["valid"]), self.o.valid.eq(out_valid),
                     o.last.eq(st["last"]), o.sat.eq(st["sat"])]
        for lane in range(T):
            m.d.comb += o.data[lane].eq(st[f"out{lane}"])
        for k in ("uflow", "oflow", "hybrid", "le_hit", "lo_hit"):
            m.d.comb += o[f"lut_{k}"].eq(st[f"lut_{k}"])
        return m

    # ------------------------------------------------------------------------------------
    @staticmethod
    def _pairs_fp16(m, seq, at):
        """``{k: q[-k] + q[+k]}`` (fp32, k = 1..4): the pair sums of the squares
        around the centre ``seq[at]``, the first steps of NVDLA's adder order (see
        :func:`sim.cdp.cdp.square_sum_fp16`); neighbours of another pixel or of a flush
        transfer are +0."""
        c = seq[at]

        def q(k):
            t = seq[at + k]
            return Mux((t["par"] == c["par"]) & t["real"], t["q32"], 0)

        return {k: fp32_add(m, q(-k), q(k)) for k in range(1, 5)}

    @staticmethod
    def _index_fp16(m, d, exponent, offset, select, entries):
        """One table's index stage in fp16 mode (:func:`sim.cdp.cdp.lut_index_fp16`) on the
        fp32 difference ``d = sum - START``: ``(index, fraction, under, over)``; the index
        clipped to ``entries - 1`` on overflow, 0 on underflow. ``exponent``: a Value (LE) or
        False (LO); ``offset`` / ``select``: the signed 8-bit fields."""
        limit = entries - 1
        e, mant = d[23:31], d[:23]
        nan = (e == 0xFF) & mant.any()
        under = nan | (d[:31] == 0) | d[31]
        # linear: d x 2^-select = sig x 2^q, q = e - 150 - select; the index is below 2^9
        # only for q <= -15, and index and fraction are 0 for q <= -40
        q = Signal(signed(11))
        m.d.comb += q.eq(e - 150 - select)
        sig2 = Cat(Const(0, 1), mant, Const(1, 1))               # sig x 2, 25 bits
        amount = Signal(6)
        m.d.comb += amount.eq(Mux(q < -45, 31, (-15 - q).as_unsigned()[:6]))
        fixed = Signal(25)                                       # sig x 2^(q+16)
        m.d.comb += fixed.eq(sig2 >> amount)
        inf = e == 0xFF                                          # (NaN: underflow anyway)
        l_big = ~inf & (q >= -14)
        l_idx = Mux(inf, 0, fixed[16:])                          # 9 bits
        l_frac = Mux(inf, 0, fixed[:16])
        l_over = l_big | (l_idx >= limit)
        if exponent is False:
            idx, frac, over = l_idx, l_frac, l_over
        else:
            log2 = Signal(signed(8))
            m.d.comb += log2.eq(e - 127)                         # 255 reads as -128
            e_idx = Signal(signed(10))
            m.d.comb += e_idx.eq(log2 - offset)
            under = under | (exponent & (e_idx < 0))
            e_over = e_idx >= limit
            idx = Mux(exponent, e_idx.as_unsigned()[:9], l_idx)
            frac = Mux(exponent, mant[7:23], l_frac)
            over = Mux(exponent, e_over, l_over)
        over = ~under & over
        idx = Mux(under, 0, Mux(over, limit, idx))
        return idx, Mux(under, 0, frac), under, over

    def _lut(self, m, pipe, st, ports, fp=False):
        """Seven steps: differences; the LE exponent index's leading one; indices / fractions /
        flags; table choice + RAM address;
        products; rounding shifts (fp16: the fp17 product); add + saturation (fp16: the fp17
        add). fp16 builds compute the fp16 mode beside (fp32
        differences; indices; reference and slope scale; fp32 -> fp17 difference and widened
        operands; fp17 interpolation), ``fp`` choosing the flags that address the tables."""
        T, s = self.lanes, self.s
        lcfg, info = s.S_LUT_CFG, s.S_LUT_INFO

        def s38(low, high):
            return Cat(low, high).as_signed()

        le_start = comb(m, s38(s.S_LUT_LE_START_LOW.LUT_LE_START_LOW,
                                s.S_LUT_LE_START_HIGH.LUT_LE_START_HIGH), "le_start")
        le_end = comb(m, s38(s.S_LUT_LE_END_LOW.LUT_LE_END_LOW,
                              s.S_LUT_LE_END_HIGH.LUT_LE_END_HIGH), "le_end")
        lo_start = comb(m, s38(s.S_LUT_LO_START_LOW.LUT_LO_START_LOW,
                                s.S_LUT_LO_START_HIGH.LUT_LO_START_HIGH), "lo_start")
        lo_end = comb(m, s38(s.S_LUT_LO_END_LOW.LUT_LO_END_LOW,
                              s.S_LUT_LO_END_HIGH.LUT_LO_END_HIGH), "lo_end")
        le_linear = lcfg.LUT_LE_FUNCTION
        le_off = info.LUT_LE_INDEX_OFFSET.as_signed()
        les, los = s.S_LUT_LE_SLOPE_SCALE, s.S_LUT_LO_SLOPE_SCALE
        lesh, losh = s.S_LUT_LE_SLOPE_SHIFT, s.S_LUT_LO_SLOPE_SHIFT
        bias = comb(m, Mux(~le_linear & (le_off >= 0) & (le_off < 48),
                            (Const(1, 48) << le_off.as_unsigned()[:6])[:48], 0), "lut_bias")

        def select_bits(sel):
            """NVDLA's index select: bit 5 set = negative (6-bit two's complement), else the
            8-bit value; returns (negative, left shift 0..32, right shift 0..63)."""
            neg = sel[5]
            left = (-(Cat(sel[:6], Const(0b11, 2)).as_signed()))[:6]
            right = Mux(sel > 63, 63, sel)[:6]
            return neg, left, right

        def linear(lane, t, sel, depth, name):
            neg, left, right = select_bits(sel)
            tp = t.as_unsigned()[:40]
            q = comb(m, Cat(Const(0, FRAC), tp) >> right, f"{name}_q{lane}")
            whole = q[FRAC:]
            lsh = comb(m, tp << Mux(left > 9, 9, left)[:4], f"{name}_l{lane}")
            idx = Mux(neg, lsh, whole)
            under = t <= 0
            over = ~under & (idx >= depth)
            frac = Mux(neg, 0, q[:FRAC])
            return idx[:9], frac, under, over

        if self.fp16:
            le_start32 = s.S_LUT_LE_START_LOW.LUT_LE_START_LOW
            lo_start32 = s.S_LUT_LO_START_LOW.LUT_LO_START_LOW
            le_end32 = s.S_LUT_LE_END_LOW.LUT_LE_END_LOW
            lo_end32 = s.S_LUT_LO_END_LOW.LUT_LO_END_LOW
            # LE underflow reference: 2^LE_INDEX_OFFSET + LE_START (exponent mode, offsets
            # -126..127; else LE_START + 0)
            power = Mux(~le_linear & (le_off > -127),
                        Cat(Const(0, 23), (le_off + 127).as_unsigned()[:8]), 0)
            le_uref32 = comb(m, fp32_add(m, power, le_start32), "lut_le_uref32")

        new = dict(st)
        for lane in range(T):
            x = st[f"sum{lane}"]
            new[f"le_t{lane}"] = x - le_start                                   # 40 bits
            new[f"lo_t{lane}"] = x - lo_start
            new[f"lx{lane}"] = x
            if self.fp16:
                new[f"le_d{lane}"] = fp32_sub(m, st[f"s32{lane}"], le_start32)
                new[f"lo_d{lane}"] = fp32_sub(m, st[f"s32{lane}"], lo_start32)
        st = pipe.step(new)

        # the LE exponent index's leading one a step before the shift it drives (in one step
        # they were the CDP's deepest path in the whole-core ECP5 netlist)
        new = dict(st)
        for lane in range(T):
            new[f"le_log{lane}"] = _highest_one(m, st[f"le_t{lane}"].as_unsigned()[:40],
                                                f"le_log{lane}")               # 6 bits
        st = pipe.step(new)

        new = dict(st)
        for lane in range(T):
            t = st[f"le_t{lane}"]
            pos = t > 0
            log = st[f"le_log{lane}"]
            e_under = ~pos | (log < le_off)
            e_idx = comb(m, (log - le_off)[:10], f"le_eidx{lane}")
            e_over = ~e_under & (e_idx >= LE_DEPTH - 1)
            e_frac = (Cat(Const(0, FRAC), t.as_unsigned()[:40]) >> log)[:FRAC]
            l_idx, l_frac, l_under, l_over = linear(lane, t, info.LUT_LE_INDEX_SELECT,
                                                    LE_DEPTH - 1, "le")
            new[f"le_i{lane}"] = Mux(le_linear, l_idx, e_idx[:9])[:7]
            new[f"le_f{lane}"] = Mux(le_linear, l_frac, e_frac)
            new[f"le_u{lane}"] = Mux(le_linear, l_under, e_under)
            new[f"le_o{lane}"] = Mux(le_linear, l_over, e_over)
            i, f, u, o = linear(lane, st[f"lo_t{lane}"], info.LUT_LO_INDEX_SELECT,
                                LO_DEPTH - 1, "lo")
            new[f"lo_i{lane}"], new[f"lo_f{lane}"], new[f"lo_u{lane}"], new[f"lo_o{lane}"] = \
                i, f, u, o
            new[f"le_t{lane}"] = new[f"lo_t{lane}"] = new[f"le_log{lane}"] = None
            if self.fp16:
                fi = self._index_fp16(m, st[f"le_d{lane}"], ~le_linear,
                                      info.LUT_LE_INDEX_OFFSET.as_signed(),
                                      info.LUT_LE_INDEX_SELECT.as_signed(), LE_DEPTH)
                gi = self._index_fp16(m, st[f"lo_d{lane}"], False, 0,
                                      info.LUT_LO_INDEX_SELECT.as_signed(), LO_DEPTH)
                for tbl, vals in (("le", fi), ("lo", gi)):
                    for k, v in zip(("i", "f", "u", "o"), vals):
                        key = f"{tbl}_{k}{lane}"
                        new[key] = Mux(fp, v, new[key])
                new[f"le_d{lane}"] = new[f"lo_d{lane}"] = None
        st = pipe.step(new)

        new = dict(st)
        for lane in range(T):
            le_u, le_o = st[f"le_u{lane}"], st[f"le_o{lane}"]
            lo_u, lo_o = st[f"lo_u{lane}"], st[f"lo_o{lane}"]
            le_hit, lo_hit = ~(le_u | le_o), ~(lo_u | lo_o)
            both_u, both_o = le_u & lo_u, le_o & lo_o
            one_hit = ~both_u & ~both_o & (le_hit ^ lo_hit)
            use_lo = comb(m, Mux(both_u, lcfg.LUT_UFLOW_PRIORITY,
                                  Mux(both_o, lcfg.LUT_OFLOW_PRIORITY,
                                      Mux(one_hit, lo_hit, lcfg.LUT_HYBRID_PRIORITY))),
                           f"cdp_use_lo{lane}")
            uflow = Mux(use_lo, lo_u, le_u)
            oflow = Mux(use_lo, lo_o, le_o)
            flow = comb(m, uflow | oflow, f"cdp_flow{lane}")
            a0 = comb(m, Mux(use_lo, Mux(oflow, LO_DEPTH - 1, Mux(uflow, 0, st[f"lo_i{lane}"]))
                              + LE_DEPTH,
                              Mux(oflow, LE_DEPTH - 1, Mux(uflow, 0, st[f"le_i{lane}"])))[:9],
                       f"cdp_a0_{lane}")
            rp0, rp1 = ports[lane]
            m.d.comb += [rp0.addr.eq(a0), rp0.en.eq(pipe.en),
                         rp1.addr.eq(Mux(flow, a0, a0 + 1)), rp1.en.eq(pipe.en)]
            start = Mux(use_lo, Mux(oflow, lo_end, lo_start), Mux(oflow, le_end, le_start))
            sc = Mux(use_lo, Mux(oflow, los.LUT_LO_SLOPE_OFLOW_SCALE, los.LUT_LO_SLOPE_UFLOW_SCALE),
                     Mux(oflow, les.LUT_LE_SLOPE_OFLOW_SCALE, les.LUT_LE_SLOPE_UFLOW_SCALE))
            sh = Mux(use_lo, Mux(oflow, losh.LUT_LO_SLOPE_OFLOW_SHIFT,
                                 losh.LUT_LO_SLOPE_UFLOW_SHIFT),
                     Mux(oflow, lesh.LUT_LE_SLOPE_OFLOW_SHIFT, lesh.LUT_LE_SLOPE_UFLOW_SHIFT))
            b = Mux(~use_lo & uflow, bias, 0)
            new[f"dx{lane}"] = st[f"lx{lane}"] - start - b                        # 50 bits
            new[f"sc{lane}"] = sc.as_signed()
            new[f"sh{lane}"] = sh.as_signed()
            new[f"fr{lane}"] = Mux(use_lo, st[f"lo_f{lane}"], st[f"le_f{lane}"])
            new[f"flow{lane}"] = flow
            both = both_u | both_o
            new[f"k_uflow{lane}"] = both_u
            new[f"k_oflow{lane}"] = ~both_u & both_o
            new[f"k_hybrid{lane}"] = ~both & ~one_hit
            new[f"k_le_hit{lane}"] = one_hit & le_hit
            new[f"k_lo_hit{lane}"] = one_hit & lo_hit
            for k in ("le_i", "le_f", "le_u", "le_o", "lo_i", "lo_f", "lo_u", "lo_o", "lx"):
                new[f"{k}{lane}"] = None
            if self.fp16:                              # the chosen table's miss reference
                new[f"ref{lane}"] = Mux(use_lo, Mux(oflow, lo_end32, lo_start32),
                                        Mux(oflow, le_end32, le_uref32))
        st = pipe.step(new)

        new = dict(st)
        for lane in range(T):
            rp0, rp1 = ports[lane]
            y0, y1 = rp0.data.as_signed(), rp1.data.as_signed()
            new[f"ip{lane}"] = (y1 - y0) * Cat(st[f"fr{lane}"], Const(0, 1)).as_signed()
            new[f"sp{lane}"] = st[f"dx{lane}"] * st[f"sc{lane}"]                  # 66 bits
            new[f"y0{lane}"] = y0
            if self.fp16:
                # hit: (y1 - y0) x fraction + y0; miss: (sum - reference) x slope scale + edge
                h0, h1 = rp0.data, rp1.data
                flow, s32 = st[f"flow{lane}"], st[f"s32{lane}"]
                in0 = Mux(flow, st[f"ref{lane}"], fp16_to_fp32(m, h0))
                in1 = Mux(flow, s32, fp16_to_fp32(m, h1))
                new[f"dy17{lane}"] = fp32_to_fp17(m, fp32_sub(m, in1, in0))
                new[f"sc17{lane}"] = Mux(flow, fp16_to_fp17(m, st[f"sc{lane}"].as_unsigned()),
                                         fraction_to_fp17(m, st[f"fr{lane}"], FRAC))
                new[f"y17{lane}"] = fp16_to_fp17(m, h0)
                # a NaN sum bypasses the interpolation: the fp17 NaN of its sign and payload
                new[f"snan{lane}"] = fp32_is_nan(s32)
                new[f"nan17{lane}"] = Cat(s32[:10], Const(63, 6), s32[31])
                new[f"ref{lane}"] = new[f"s32{lane}"] = None
            for k in ("fr", "dx", "sc"):
                new[f"{k}{lane}"] = None
        st = pipe.step(new)

        # the rounding shifts in two steps (the slope's 66-bit add of its rounding constant,
        # then the shift and range check with the element's own shift, carried along), then
        # the add and the saturation a step later (in one step they were the CDP's deepest
        # path in the whole-core ECP5 netlist, 20 ns unplaced; the slope's shift in one, 19)
        new = dict(st)
        finishes = []
        for lane in range(T):
            ip, _ = round_shift_right(m, st[f"ip{lane}"], FRAC, 20, 34, f"cdp_ip{lane}")
            sp, sh = st[f"sp{lane}"], st[f"sh{lane}"]
            early, finish = round_shift_right_split(m, sp, sh.as_unsigned()[:4], 32, 66,
                                                    f"cdp_sr{lane}")
            finishes.append(finish)
            new[f"sr_sum{lane}"], new[f"sr_sat{lane}"] = early["sum"], early["sat"]
            new[f"left{lane}"] = saturate(sp << (-sh).as_unsigned()[:5], 32)
            new[f"ipr{lane}"] = ip
            for k in ("ip", "sp"):
                new[f"{k}{lane}"] = None
            if self.fp16:
                new[f"fprod{lane}"] = fp17_mul(m, st[f"dy17{lane}"], st[f"sc17{lane}"])
                new[f"dy17{lane}"] = new[f"sc17{lane}"] = None
        st = pipe.step(new)

        new = dict(st)
        for lane in range(T):
            sh = st[f"sh{lane}"]
            right, _ = finishes[lane]({"sum": st[f"sr_sum{lane}"], "sat": st[f"sr_sat{lane}"]},
                                      sh.as_unsigned()[:4])
            slope = Mux(sh[-1], st[f"left{lane}"], right).as_signed()[:32].as_signed()
            new[f"dy{lane}"] = Mux(st[f"flow{lane}"], slope, st[f"ipr{lane}"])
            for k in ("sr_sum", "sr_sat", "left", "ipr", "sh", "flow"):
                new[f"{k}{lane}"] = None
        st = pipe.step(new)

        new = dict(st)
        for lane in range(T):
            new[f"lut{lane}"] = saturate(st[f"y0{lane}"] + st[f"dy{lane}"], 16)
            new[f"y0{lane}"] = new[f"dy{lane}"] = None
            if self.fp16:
                y = fp17_add(m, st[f"fprod{lane}"], st[f"y17{lane}"])
                new[f"lut17{lane}"] = Mux(st[f"snan{lane}"], st[f"nan17{lane}"], y)
                for k in ("fprod", "y17", "snan", "nan17"):
                    new[f"{k}{lane}"] = None
        for k in ("uflow", "oflow", "hybrid", "le_hit", "lo_hit"):
            new[f"lut_{k}"] = _popcount([st[f"k_{k}{lane}"] for lane in range(T)])
            for lane in range(T):
                new[f"k_{k}{lane}"] = None
        return pipe.step(new)
