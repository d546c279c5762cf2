"""The Winograd mode of an fp16 MAC cell: NVDLA's fp16 cell arithmetic on a 4 x 4 tile of 4
channels, the per-position sums and the POA, bit for bit.

Not yet wired into the core; a building block of the Winograd datapath computing what
:func:`sim.conv.cmac.fp16_wino_cell` defines (checked there against NVDLA's
``NV_NVDLA_CMAC_CORE_mac`` with ``cfg_is_wg``). It reuses the direct cell's pieces
(:mod:`hw.conv.fp16_cell`: operands, Booth products, alignment, NaN priority) unchanged: the 64
(weight, data) pairs -- element ``(y x 4 + x) x 4 + c`` -- are aligned once to the largest
coarse exponent sum of the pairs that take part, as the direct cell aligns an atom; then::

    M[y][x] = sum_c part[(y*4 + x)*4 + c]                 (modulo 2^38)
    res     = A^T M A,  A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]   (2 x 2, row-major, modulo 2^38)

and each of the four 44-bit codes carries the tile's one exponent field (``4 x emax``) over its
38-bit sum; a NaN anywhere (weights first, lowest element first) gives the NaN code on all four.

Pipeline (ready-gated as :class:`hw.conv.wino_mac.WinoMac`), :attr:`Fp16WinoCell.latency` = 5
cycles from an ``i`` transfer to ``o.valid``::

    i --> [products' carry-save words, shifts, exponent maximum, NaN]
      --> [aligned parts, one adder level] --> [second level: the 16 sums M]
      --> [A^T M: 2 levels] --> [(A^T M) A: 2 levels, the codes] = o
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import ready_gated_pipeline
from .fp16_cell import FP16_PSUM_BITS, SUM_BITS, _aligned, _exponents, _first_nan, _product

__all__ = ["Fp16WinoCell", "fp16_wino_in_layout", "fp16_wino_out_layout"]

_AT = ((1, 1, 1, 0), (0, 1, -1, -1))
_MASK = (1 << SUM_BITS) - 1


def fp16_wino_in_layout() -> data.StructLayout:
    """An operation: 64 weight and 64 data fp16 codes."""
    return data.StructLayout({"wt": data.ArrayLayout(unsigned(16), 64),
                              "data": data.ArrayLayout(unsigned(16), 64)})


def fp16_wino_out_layout() -> data.StructLayout:
    """The four 44-bit partial-sum codes (row-major 2 x 2)."""
    return data.StructLayout({"res": data.ArrayLayout(unsigned(FP16_PSUM_BITS), 4)})


class Fp16WinoCell(wiring.Component):
    """An fp16 MAC cell in Winograd mode (see the module docstring).

    Ports: ``i`` in (:func:`fp16_wino_in_layout`), ``o`` out (:func:`fp16_wino_out_layout`)."""

    latency = 5

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(fp16_wino_in_layout())),
            "o": Out(stream.Signature(fp16_wino_out_layout())),
        })

    def elaborate(self, platform):
        m = Module()
        adv = ready_gated_pipeline(m, self.i, self.o, self.latency)

        def reg(value, name):
            r = Signal(len(value), name=name)
            with m.If(adv):
                m.d.sync += r.eq(value)
            return r

        def wire(value, name):
            w = Signal(len(value), name=name)
            m.d.comb += w.eq(value)
            return w

        w, d = self.i.payload.wt, self.i.payload.data
        # ---- stage 1: operands, products, alignment, NaN ---------------------------------
        wops, dops, live, esum, emax = _exponents(wire, w, d, 64)
        any_nan, nan_code = _first_nan(wire, wops + dops, list(w) + list(d), "nan")
        pairs = []
        for c in range(64):
            sft = wire((emax - esum[c])[0:4], f"sft_{c}")
            take = live[c] & (sft < 8)
            neg = wire(w[c][15] ^ d[c][15], f"neg_{c}")
            ra, rb = _product(wire, wops[c][0], dops[c][0], neg, f"p{c}")
            pairs.append((reg(ra, f"ra_{c}"), reg(rb, f"rb_{c}"), reg(sft[0:3], f"s_{c}"),
                          reg(take, f"take_{c}")))
        carried = [reg(emax, "emax_1"), reg(any_nan, "nan_1"), reg(nan_code, "nan_code_1")]

        def carry(st):
            return [reg(v, f"{nm}_{st}") for v, nm in zip(carried, ("emax", "nan", "nan_code"))]

        # ---- stage 2: aligned parts, first level of the channel sums ------------------------
        parts = [wire(Mux(take, _aligned(ra, rb, s), 0), f"part_{c}")
                 for c, (ra, rb, s, take) in enumerate(pairs)]
        half = [reg((parts[2 * k] + parts[2 * k + 1])[0:SUM_BITS], f"half_{k}")
                for k in range(32)]
        carried = carry(2)
        # ---- stage 3: the 16 position sums ----------------------------------------------
        msum = [reg((half[2 * j] + half[2 * j + 1])[0:SUM_BITS], f"m_{j}") for j in range(16)]
        carried = carry(3)

        def signed_sum(terms, name):
            acc = None
            for s, v in terms:
                acc = v if acc is None else (acc + v if s > 0 else acc - v)
            return (acc)[0:SUM_BITS]

        # ---- stage 4: A^T M ----------------------------------------------------------------
        row = [[reg(signed_sum([(s, msum[y * 4 + x]) for y, s in enumerate(_AT[i]) if s],
                               ""), f"r_{i}{x}") for x in range(4)] for i in range(2)]
        carried = carry(4)
        # ---- stage 5: (A^T M) A and the codes ------------------------------------------------
        emax_r, nan_r, nan_code_r = carried
        for i in range(2):
            for j in range(2):
                total = signed_sum([(s, row[i][x]) for x, s in enumerate(_AT[j]) if s], "")
                code = Mux(nan_r, Cat(Const(0, 27), nan_code_r, Const(0x3F, 6)),
                           Cat(total, Const(0, 2), emax_r))
                with m.If(adv):
                    m.d.sync += self.o.payload.res[i * 2 + j].eq(code)
        return m
