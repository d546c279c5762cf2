"""hw/arith.py: the rounding right shift in logic against the golden model's
(:func:`sim.sdp.round_shift_right`: value and saturation flag), exhaustively over small
widths, both structures, every shift of the register (past the shifter's width and ``in_bits`` included), and
output widths narrower, equal and wider than the input."""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.arith import round_shift_right, round_shift_right_split
from sim.sdp.sdp import round_shift_right as golden


def _rsr(m, x, sh, out_bits, in_bits, structure):
    """The helper under test; "split": the two halves of round_shift_right_split joined
    without the register between them; "split_shift": the same with the shift given to the
    second half again (as a pipeline gives its registered copy)."""
    if structure in ("split", "split_shift"):
        early, finish = round_shift_right_split(m, x, sh, out_bits, in_bits, "r")
        if structure == "split_shift":
            return finish(early, sh)
        return finish(early)
    return round_shift_right(m, x, sh, out_bits, in_bits, "r", structure=structure)


@pytest.mark.parametrize("width,shift_bits,out_bits,in_bits,const_shift", [
    (7, 4, 4, 64, None),       # shifts past the width
    (9, 4, 5, 6, None),        # a shift of in_bits or more gives 0
    (6, 3, 8, 64, None),       # output wider than the input: never saturates
    (8, 3, 3, 64, None),
    (8, 0, 4, 64, 3),          # a constant shift
    (8, 0, 5, 64, 0),
])
@pytest.mark.parametrize("structure", ["sum", "floor", "split", "split_shift"])
def test_round_shift_right_matches_golden(width, shift_bits, out_bits, in_bits, const_shift,
                                          structure):
    m = Module()
    x = Signal(signed(width))
    if const_shift is None:
        sh = Signal(shift_bits)
        v, s = _rsr(m, x, sh, out_bits, in_bits, structure)
        shifts = range(1 << shift_bits)
    else:
        v, s = _rsr(m, x, const_shift, out_bits, in_bits, structure)
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


#: (x, shift, value, flag) at the 17-bit limits of the SDP output converter (49-bit input):
#: NVDLA's ``IntShiftRightSat`` flags a saturation only when the truncated value ``x >> s``
#: is more than 1 from the saturated result (``NV_NVDLA_SDP_CORE_c``: the flag is
#: ``i != o && i != o + 1 && i != o - 1`` with ``i`` the shifted value and ``o`` the output)
SAT17_EDGES = [
    (65535, 0, 65535, False), (65536, 0, 65535, False), (65537, 0, 65535, True),
    (-65536, 0, -65536, False), (-65537, 0, -65536, False), (-65538, 0, -65536, True),
    (131071, 1, 65535, False),            # 65535.5 rounds up onto 65536
    (131073, 1, 65535, False), (131074, 1, 65535, True),
    (-131073, 1, -65536, False),          # -65536.5 rounds away onto -65537
    (-131074, 1, -65536, False), (-131075, 1, -65536, True),
    ((65536 << 5) + 31, 5, 65535, False), ((65537 << 5), 5, 65535, True),
    (-(65537 << 5), 5, -65536, False), (-(65537 << 5) - 1, 5, -65536, True),
    ((1 << 48) - 1, 32, 65535, False), ((1 << 48) - 1, 31, 65535, True),
    (-(1 << 48), 32, -65536, False), (-(1 << 48), 31, -65536, True),
    (-(1 << 48), 48, -1, False), (-(1 << 48), 49, 0, False), ((1 << 48) - 1, 63, 0, False),
]


@pytest.mark.parametrize("structure", ["sum", "floor", "split", "split_shift"])
def test_saturation_flag_is_nvdlas(structure):
    """The flag at the 17-bit limits, golden model and both structures, against
    :data:`SAT17_EDGES` (a floor of 65536 / -65537 or a rounding up onto 65536 saturates the
    value without a flag)."""
    xs = np.array([c[0] for c in SAT17_EDGES])
    ss = np.array([c[1] for c in SAT17_EDGES])
    want = [(c[2], c[3]) for c in SAT17_EDGES]
    ev, es = golden(xs, ss, 17, 49)
    assert [(int(v), bool(f)) for v, f in zip(ev, es)] == want
    m = Module()
    x = Signal(signed(49))
    sh = Signal(6)
    v, s = _rsr(m, x, sh, 17, 49, structure)
    got = []

    async def tb(ctx):
        for xv, shv, *_ in SAT17_EDGES:
            ctx.set(x, xv)
            ctx.set(sh, shv)
            got.append((ctx.get(v), bool(ctx.get(s))))

    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    assert got == want
