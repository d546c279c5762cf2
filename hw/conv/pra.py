"""PRA: the CSC's pre-addition of Winograd F(2x2, 3x3) layers, for ``lanes`` channels a cycle.

Used by :class:`hw.conv.wino_tiles.WinoTiles` (the CSC's Winograd tile reader), bit for bit what the golden model :mod:`sim.conv.winograd_math` computes
(checked there against NVDLA's ``NV_NVDLA_CSC_pra_cell``).

Per lane (one channel's 4 x 4 input tile ``d``, element ``y x 4 + x``) it gives the tile's input
transform ``B^T d B`` with ``B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]``:

* integer layers (:func:`~sim.conv.winograd_math.pra_int`): exact (18 bits for int16 data),
  then shifted right by ``truncate`` rounding half away from zero (NVDLA's CSC hands the cell
  ``PRA_TRUNCATE`` 3 as 2: the field here is the register's, 3 acts as 2) and saturated to the
  layer's precision (int8 or int16). int8 elements are the low 8 bits of their lane (an int8
  value sign-extended, as NVDLA's CSC feeds its 16-bit cell, works); int8 results come
  sign-extended to the element width.
* fp16 layers (builds with fp16; :func:`~sim.conv.winograd_math.pra_fp16`): the same additions
  in NVDLA's fp17 (:mod:`hw.nvfloat`), rows first, then columns, each pass in the cell's operand
  order ``(r0 - r2, r1 + r2, r2 - r1, r1 - r3)`` (a subtraction adds the second operand with
  its sign flipped), converted from and back to fp16 codes; ``truncate`` plays no part.
  Half a tile a transfer: ``half`` = ``h`` gives output rows ``2h`` and ``2h + 1`` (elements
  ``8h .. 8h + 7``: the first pass's rows ``2h``, ``2h + 1`` and the second pass on them,
  16 fp17 adders a lane instead of 32), and output element ``e`` holds transformed element
  ``8h + (e & 7)``, so the half's own elements are in place. (The Winograd tile buffer takes
  a 16-bit small cube as two rows of 8 positions, a row a cycle: half a tile a cycle is its
  rate.) Integer layers ignore ``half``.

``precision`` follows NVDLA's encoding: 0 int8, 1 int16, 2 fp16 (int16 and fp16 only on builds
with them; other values act as int8). Elements are 16 bits on builds with int16 or fp16, 8
otherwise (:func:`pra_elem_bits`).

Pipeline (ready-gated: every register advances when the output register is empty or
``o.ready`` is high; one tile set a cycle in steady state), :attr:`Pra.latency` = 4 cycles
from an ``i`` transfer to ``o.valid``::

    i --> [operands: int elements / fp16 -> fp17] --> [row pass: one adder]
      --> [column pass: one adder] --> [int: round, shift, saturate / fp17 -> fp16] = o
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.nvfloat import fp16_to_fp17, fp17_add, fp17_to_fp16

from .common import conv_fp16, conv_int16, ready_gated_pipeline

__all__ = ["Pra", "pra_elem_bits", "pra_layout"]

#: NVDLA's precision codes
PREC_INT8, PREC_INT16, PREC_FP16 = 0, 1, 2

_SIGN17 = 1 << 16


def pra_elem_bits(cfg) -> int:
    """Element width of the PRA's lanes: 16 on builds with int16 or fp16, 8 otherwise."""
    return 16 if conv_int16(cfg) or conv_fp16(cfg) else 8


def pra_layout(cfg, lanes: int, config: bool) -> data.StructLayout:
    """A stream payload of ``lanes`` tiles of 16 raw elements (``data[lane][y x 4 + x]``);
    with ``config``, the layer's ``precision`` and ``truncate`` fields and the fp16 ``half``
    too."""
    el = data.ArrayLayout(pra_elem_bits(cfg), 16)
    fields = {"data": data.ArrayLayout(el, lanes)}
    if config:
        fields.update(precision=2, truncate=2, half=1)
    return data.StructLayout(fields)


def _bt_pass(v, sub, add):
    """One pass of B^T over 4 operands, in the PRA cell's operand order."""
    r0, r1, r2, r3 = v
    return [sub(r0, r2), add(r1, r2), sub(r2, r1), sub(r1, r3)]


class Pra(wiring.Component):
    """Winograd input transform of ``lanes`` channel tiles a cycle (see the module docstring).

    Ports: ``i`` in (:func:`pra_layout` with the config fields), ``o`` out (:func:`pra_layout`
    without them: the 16 transformed elements of each lane, in the input's order).
    ``fp16=False``: no fp16 path on a build with fp16 (the core's Winograd tile reader on
    builds that run only integer Winograd layers)."""

    latency = 4

    def __init__(self, cfg, lanes: int = 1, fp16: bool | None = None):
        self._cfg, self._lanes = cfg, lanes
        self._w = pra_elem_bits(cfg)
        # fp16=False leaves the fp16 path out (precision 2 then acts as int8)
        self._i16 = conv_int16(cfg)
        self._f16 = conv_fp16(cfg) if fp16 is None else fp16 and conv_fp16(cfg)
        super().__init__({
            "i": In(stream.Signature(pra_layout(cfg, lanes, True))),
            "o": Out(stream.Signature(pra_layout(cfg, lanes, False))),
        })

    def elaborate(self, platform):
        m = Module()
        w, n = self._w, self._lanes
        ib = 16 if self._i16 else 8                      # widest integer element

        adv = ready_gated_pipeline(m, self.i, self.o, self.latency)

        # the layer's config travels with its tiles
        prec = [Signal(2, name=f"prec{s}") for s in range(1, 4)]
        shift = [Signal(2, name=f"shift{s}") for s in range(1, 4)]
        half1 = Signal()                                 # the fp16 half, stage 1
        with m.If(adv):
            t = self.i.payload.truncate
            m.d.sync += [prec[0].eq(self.i.payload.precision),
                         shift[0].eq(Mux(t == 3, 2, t)), half1.eq(self.i.payload.half)]
            for s in range(1, 3):
                m.d.sync += [prec[s].eq(prec[s - 1]), shift[s].eq(shift[s - 1])]

        def sync(sig, value):
            with m.If(adv):
                m.d.sync += sig.eq(value)

        for lane in range(n):
            din = self.i.payload.data[lane]
            dout = self.o.payload.data[lane]
            # ---- integer path ------------------------------------------------------------
            s1 = [Signal(signed(ib), name=f"l{lane}_i1_{e}") for e in range(16)]
            for e in range(16):
                lo8 = din[e][:8].as_signed()
                sync(s1[e], Mux(self.i.payload.precision == PREC_INT16, din[e][:ib].as_signed(),
                                lo8) if self._i16 else lo8)
            s2 = [Signal(signed(ib + 1), name=f"l{lane}_i2_{e}") for e in range(16)]
            for x in range(4):
                col = _bt_pass([s1[y * 4 + x] for y in range(4)], lambda a, b: a - b,
                               lambda a, b: a + b)
                for y in range(4):
                    sync(s2[y * 4 + x], col[y])
            s3 = [Signal(signed(ib + 2), name=f"l{lane}_i3_{e}") for e in range(16)]
            for y in range(4):
                row = _bt_pass(s2[y * 4:y * 4 + 4], lambda a, b: a - b, lambda a, b: a + b)
                for x in range(4):
                    sync(s3[y * 4 + x], row[x])
            ires = []
            for e in range(16):
                v = s3[e]
                neg = v[-1]
                r = Signal(signed(ib + 2), name=f"l{lane}_rnd_{e}")
                m.d.comb += r.eq(Mux(shift[2] == 0, v,
                                     Mux(shift[2] == 1, (v + 1 - neg) >> 1, (v + 2 - neg) >> 2)))
                lim8 = Mux(r > 127, 127, Mux(r < -128, -128, r))
                if self._i16:
                    lim16 = Mux(r > 32767, 32767, Mux(r < -32768, -32768, r))
                    ires.append(Mux(prec[2] == PREC_INT16, lim16, lim8))
                else:
                    ires.append(lim8)
            # ---- fp16 path ---------------------------------------------------------------
            if self._f16:
                f1 = [Signal(17, name=f"l{lane}_f1_{e}") for e in range(16)]
                for e in range(16):
                    sync(f1[e], fp16_to_fp17(m, din[e][:16]))
                fadd = lambda a, b: fp17_add(m, a, b)                   # noqa: E731
                fsub = lambda a, b: fp17_add(m, a, b ^ _SIGN17)         # noqa: E731
                # rows 2h, 2h + 1 of the first pass (rows of the tile combine, per column x):
                # h = 0: r0 - r2, r1 + r2; h = 1: r2 - r1, r1 - r3 (operands in the cell's order)
                f2 = [Signal(17, name=f"l{lane}_f2_{e}") for e in range(8)]
                for x in range(4):
                    r0, r1, r2, r3 = (f1[y * 4 + x] for y in range(4))
                    sync(f2[x], fp17_add(m, Mux(half1, r2, r0), Mux(half1, r1, r2) ^ _SIGN17))
                    sync(f2[4 + x], fp17_add(m, r1, Mux(half1, r3 ^ _SIGN17, r2)))
                # the second pass on those two rows: elements 8h + k, k = 0..7
                f3 = [Signal(17, name=f"l{lane}_f3_{e}") for e in range(8)]
                for yy in range(2):
                    row = _bt_pass(f2[yy * 4:yy * 4 + 4], fsub, fadd)
                    for x in range(4):
                        sync(f3[yy * 4 + x], row[x])
                f16 = [fp17_to_fp16(m, v) for v in f3]
                for e in range(16):
                    sync(dout[e], Mux(prec[2] == PREC_FP16, f16[e & 7], ires[e]))
            else:
                for e in range(16):
                    sync(dout[e], ires[e])
        return m
