"""hw/arith.py: the rounding right shift in logic against the golden model's
(:func:`sim.sdp.round_shift_right`: value and saturation flag), exhaustively over small
widths, both structures, every shift of the register (past the shifter's width and ``in_bits`` included), and
output widths narrower, equal and wider than the input."""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.arith import round_shift_right
from sim.sdp.sdp import round_shift_right as golden


@pytest.mark.parametrize("width,shift_bits,out_bits,in_bits,const_shift", [
    (7, 4, 4, 64, None),       # shifts past the width
    (9, 4, 5, 6, None),        # a shift of in_bits or more gives 0
    (6, 3, 8, 64, None),       # output wider than the input: never saturates
    (8, 3, 3, 64, None),
    (8, 0, 4, 64, 3),          # a constant shift
    (8, 0, 5, 64, 0),
])
@pytest.mark.parametrize("structure", ["sum", "floor"])
def test_round_shift_right_matches_golden(width, shift_bits, out_bits, in_bits, const_shift,
                                          structure):
    m = Module()
    x = Signal(signed(width))
    if const_shift is None:
        sh = Signal(shift_bits)
        v, s = round_shift_right(m, x, sh, out_bits, in_bits, "r", structure=structure)
        shifts = range(1 << shift_bits)
    else:
        v, s = round_shift_right(m, x, const_shift, out_bits, in_bits, "r",
                                 structure=structure)
        shifts = [const_shift]
    xs = range(-(1 << (width - 1)), 1 << (width - 1))
    cases = list(itertools.product(xs, shifts))
    ev, es = golden(np.array([c[0] for c in cases]), np.array([c[1] for c in cases]),
                    out_bits, in_bits)
    bad = []

    async def tb(ctx):
        for (xv, shv), e_v, e_s in zip(cases, ev, es):
            ctx.set(x, xv)
            if const_shift is None:
                ctx.set(sh, shv)
            got = (ctx.get(v), ctx.get(s))
            if got != (int(e_v), int(e_s)):
                bad.append((xv, shv, got, (int(e_v), int(e_s))))

    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    assert not bad, bad[:10]
