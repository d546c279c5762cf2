"""The CDMA input convertor (``D_CVT_CFG``, ``D_CVT_OFFSET``, ``D_CVT_SCALE``), shared by the
feature path (:class:`hw.conv.cdma.Cdma`; golden :func:`sim.conv.cdma.fetch_feature`) and the
image path (:class:`hw.conv.cdma_img.ImageFetch`; golden :func:`sim.conv.image.fetch_image`).

Per lane, int8 processing: ``saturate(round((d - o) * CVT_SCALE / 2^CVT_TRUNCATE), 8)`` with
``CVT_SCALE`` signed and the rounding ties away from zero; without ``CVT_EN`` the lane passes
``d``'s low byte unchanged.

int16 processing (``int16=True``, builds where :func:`hw.conv.common.conv_int16` holds; the
``wide`` port set): a lane pair ``2k, 2k + 1`` holds one int16 element, little endian in the
two lanes' low bytes; lane ``2k`` computes ``saturate(round((e - o) * CVT_SCALE /
2^CVT_TRUNCATE), 16)`` and the pair's bytes are the result's (lane ``2k + 1``'s product is
unused; with ``full`` lane ``2k``'s ``d`` is the whole element, up to 17 bits: the image
path's unsigned 16-bit pixels). The widths are NVDLA's (``cmod/hls/cdma_libs/cdma_cvt.h``):
a 17-bit element less the 16-bit offset in 18 bits, times the 16-bit scale in 34 bits, a 6-bit shift; its 17-bit
intermediate saturation is subsumed by the final one. Without ``CVT_EN`` the bytes pass
unchanged, as for int8.

fp16 processing of integers (``fp16=True``, builds with fp16; ``fp16`` port, with ``wide``):
lane ``2k``'s element becomes ``int_to_fp16(saturate(round((e - o) * CVT_SCALE /
2^CVT_TRUNCATE), 17))`` (:class:`hw.nvfloat.Int17ToFp16`; golden
:func:`sim.conv.image.int_to_fp16`), the pair's bytes its fp16 code.

:class:`Convertor` is the arithmetic: ``LATENCY`` = 3 register stages ((d - o) x scale, the
rounding shift's add, then the shift and saturation), advanced when ``en``. :class:`AtomConvertor` wraps it for a stream of
memory atoms (every byte a signed int8 element, or with ``wide`` every byte pair an int16
one): one atom per cycle, stalling as a whole when its output is not taken.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..arith import round_shift_right_split, saturate
from ..nvfloat import int17_to_fp16
from ..mem.cube import atom_layout

__all__ = ["Convertor", "AtomConvertor", "convertor_port"]


class Convertor(wiring.Component):
    """``Convertor(lanes, d_width=18, o_width=16, int16=False, fp16=False)``: ``lanes`` lanes
    of the input convertor.

    Ports: ``en`` (advance the pipeline; 1 unless driven), ``cvt_en``, ``scale`` (signed
    ``CVT_SCALE``), ``trunc`` (``CVT_TRUNCATE``), per lane ``d`` (the element, signed) and
    ``o`` (its offset, signed); ``q`` the lanes' bytes ``LATENCY`` advancing cycles later.
    ``int16=True`` or ``fp16=True`` adds ``wide`` (2-byte elements in lane pairs, the module
    docstring; lane ``2k``'s offset is the element's) and ``full`` (lane ``2k``'s ``d`` is the
    element); ``fp16=True`` adds ``fp16`` (the pair's result is the fp16 code). ``cvt_en`` /
    ``scale`` / ``trunc`` / ``wide`` / ``full`` / ``fp16`` are read in the stages that use
    them (hold them while data is in flight)."""

    LATENCY = 3

    def __init__(self, lanes, *, d_width=18, o_width=16, int16=False, fp16=False):
        assert not (int16 or fp16) or lanes % 2 == 0
        self._lanes = lanes
        self._dw, self._ow = d_width, o_width
        self._int16 = int16 or fp16
        self._fp16 = fp16
        members = {
            "en": In(1, init=1),
            "cvt_en": In(1),
            "scale": In(signed(16)),
            "trunc": In(6),
            "d": In(data.ArrayLayout(signed(d_width), lanes)),
            "o": In(data.ArrayLayout(signed(o_width), lanes)),
            "q": Out(data.ArrayLayout(8, lanes)),
        }
        if int16 or fp16:
            members["wide"] = In(1)
            members["full"] = In(1)
        if fp16:
            members["fp16"] = In(1)
        super().__init__(members)

    def _rounded(self, m, p, out_bits, name):
        """``p`` rounded by the truncate shift and saturated to ``out_bits``, over stages 2
        and 3 (:func:`hw.arith.round_shift_right_split`, its add registered when ``en``)."""
        early, finish = round_shift_right_split(m, p, self.trunc, out_bits, 64, name)
        regs = {}
        for key, v in early.items():
            r = Signal.like(v, name=f"{name}_{key}_r")
            with m.If(self.en):
                m.d.sync += r.eq(v)
            regs[key] = r
        return finish(regs)

    def elaborate(self, platform):
        m = Module()
        i16 = self._int16
        pw = max(self._dw, self._ow, 16 if i16 else 0) + 1 + 16     # (d - o) x scale
        sats = []
        for i in range(self._lanes):
            # stage 1: (d - o) x scale, and d's low byte for the bypass
            d = self.d[i]
            if i16 and i % 2 == 0:                       # the pair's 2-byte element
                pair = Cat(self.d[i][:8], self.d[i + 1][:8]).as_signed()
                d = Mux(self.wide, Mux(self.full, self.d[i], pair), d)
            p = Signal(signed(pw), name=f"prod{i}")
            low = Signal(8, name=f"low{i}")
            with m.If(self.en):
                m.d.sync += [p.eq((d - self.o[i]) * self.scale),
                             low.eq(self.d[i][:8])]
            # stage 2: the rounding shift's wide add (the truncate shift's rounding constant,
            # shared by the lanes: hw.arith); stage 3: the shift, saturation to int8 and the
            # bypass. An int16 pair's first lane saturates to int16 (int8 is that clamped to
            # int8), an fp16 pair's to the 17-bit intermediate, then the nearest fp16
            low2 = Signal(8, name=f"low2_{i}")
            with m.If(self.en):
                m.d.sync += low2.eq(low)
            if i16 and i % 2 == 0 and self._fp16:
                s17, _ = self._rounded(m, p, 17, f"rsr{i}")
                s16 = Signal(signed(16), name=f"s16_{i}")
                m.d.comb += s16.eq(saturate(s17, 16))
                pair = Signal(16, name=f"pair{i}")
                m.d.comb += pair.eq(Mux(self.fp16, int17_to_fp16(m, s17), s16.as_unsigned()))
                sats.append(pair)
                sat = Mux(self.wide, pair[:8], saturate(s16, 8).as_unsigned())
            elif i16 and i % 2 == 0:
                s16, _ = self._rounded(m, p, 16, f"rsr{i}")
                sats.append(s16)
                sat = Mux(self.wide, s16[:8], saturate(s16, 8).as_unsigned())
            elif i16:
                sat8, _ = self._rounded(m, p, 8, f"rsr{i}")
                sat = Mux(self.wide, sats[-1][8:], sat8.as_unsigned())
            else:
                sat, _ = self._rounded(m, p, 8, f"rsr{i}")
            with m.If(self.en):
                m.d.sync += self.q[i].eq(Mux(self.cvt_en, sat.as_unsigned(), low2))
        return m


def convertor_port(lanes, *, d_width=18, o_width=16):
    """A client's side of a :class:`Convertor` it shares: it drives ``en`` (advance), the
    lanes' ``d`` and ``o``, and reads ``q``; ``cvt_en`` / ``scale`` / ``trunc`` are the
    owner's. The CDMA's feature and image paths share one convertor (a layer uses one of
    them), which saves a whole convertor's multipliers and rounding logic."""
    return wiring.Signature({
        "en": Out(1),
        "d": Out(data.ArrayLayout(signed(d_width), lanes)),
        "o": Out(data.ArrayLayout(signed(o_width), lanes)),
        "q": In(data.ArrayLayout(8, lanes)),
    })


class AtomConvertor(wiring.Component):
    """``AtomConvertor(geom)``: the convertor on a stream of memory atoms (``i`` -> ``o``,
    :func:`hw.mem.cube.atom_layout`), each byte a signed int8 element; ``offset`` is the
    signed ``CVT_OFFSET``. One atom per cycle; the pipeline stalls as a whole while its last
    stage holds an atom that is not taken. ``busy``: an atom is in the pipeline.

    ``shared=True``: no convertor of its own; the ``cvt`` port (:func:`convertor_port`)
    drives one its owner shares, and sets ``cvt_en`` / ``scale`` / ``trunc`` (and ``wide``)
    there. ``int16=True`` (own convertor): a ``wide`` port, every byte pair an int16
    element (:class:`Convertor`)."""

    def __init__(self, geom, *, shared=False, int16=False):
        self._geom = geom
        self._shared = shared
        self._int16 = int16
        lanes = geom.atom_bits // 8
        members = {
            "i": In(stream.Signature(atom_layout(geom))),
            "o": Out(stream.Signature(atom_layout(geom))),
            "offset": In(signed(16)),
            "busy": Out(1),
        }
        if shared:
            members["cvt"] = Out(convertor_port(lanes, d_width=8))
        else:
            members.update({"cvt_en": In(1), "scale": In(signed(16)), "trunc": In(6)})
            if int16:
                members["wide"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        lanes = self._geom.atom_bits // 8
        if self._shared:
            cvt = self.cvt
        else:
            m.submodules.cvt = cvt = Convertor(lanes, d_width=8, int16=self._int16)
            m.d.comb += [cvt.cvt_en.eq(self.cvt_en), cvt.scale.eq(self.scale),
                         cvt.trunc.eq(self.trunc)]
            if self._int16:
                m.d.comb += cvt.wide.eq(self.wide)
        n = Convertor.LATENCY
        v = [Signal(name=f"v{k}") for k in range(n)]
        flags = [Signal(2, name=f"flags{k}") for k in range(n)]
        en = Signal()
        m.d.comb += [en.eq(~v[-1] | self.o.ready), self.i.ready.eq(en), cvt.en.eq(en)]
        for k in range(lanes):
            m.d.comb += [cvt.d[k].eq(self.i.payload.data[k * 8:(k + 1) * 8].as_signed()),
                         cvt.o[k].eq(self.offset)]
        with m.If(en):
            m.d.sync += [v[0].eq(self.i.valid),
                         flags[0].eq(Cat(self.i.payload.last_line, self.i.payload.last))]
            for k in range(1, n):
                m.d.sync += [v[k].eq(v[k - 1]), flags[k].eq(flags[k - 1])]
        m.d.comb += [self.o.valid.eq(v[-1]), self.o.payload.data.eq(cvt.q),
                     self.o.payload.last_line.eq(flags[-1][0]),
                     self.o.payload.last.eq(flags[-1][1]),
                     self.busy.eq(Cat(*v).any())]
        return m
