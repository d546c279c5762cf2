"""Wide multiplexers: a binary ``Mux`` tree, or on ECP5 the device's own mux cells.

``wide_mux(m, inputs, sel, platform)`` returns the word of ``inputs`` that ``sel`` selects
(``inputs[sel]``; ``sel`` past the last input gives any of them). With no platform, or one
that is not ECP5, it is a binary tree of ``Mux`` (one level per bit of ``sel``, lowest bit
first), which the synthesis tools map as they like.

On an ECP5 platform (``platform.family == "ecp5"``: the board builds) each output bit is
built from the cells a slice pair offers for this: ``LUT4`` as 2:1 multiplexers, ``PFUMX``
joining two of them into a 4:1 and ``L6MUX21`` joining two of those into an 8:1, 4 LUT4 per
8 inputs. Yosys's LUT mapper (ABC) cannot form these: it sees a 4:1 multiplexer as one
6-input function and spends 4 LUT4 on it. For the CBUF's 32:1 read multiplexer of 64-bit
words, ``synth_ecp5`` made 2,368 LUT4 + 640 PFUMX + 320 L6MUX21 of the tree; these cells are
1,152 LUT4 + 576 PFUMX + 256 L6MUX21 (YoWASP Yosys 0.70). ``tests/test_fpga_mux.py`` checks
the cells against Yosys's own simulation models of them in Icarus.
"""

from amaranth.hdl import Const, Instance, Mux, Signal

__all__ = ["wide_mux", "is_ecp5"]

# LUT4 output = INIT[{D, C, B, A}]; as a 2:1 multiplexer Z = C ? B : A (D unused)
_LUT4_MUX2 = sum(1 << i for i in range(16) if ((i >> 1) & 1 if (i >> 2) & 1 else i & 1))


def is_ecp5(platform) -> bool:
    return getattr(platform, "family", None) == "ecp5"


def _tree(inputs, sel):
    level = list(inputs)
    for bit in range(len(sel)):
        level = [Mux(sel[bit], level[i + 1], level[i]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


class _Cells:
    """ECP5 mux cells for one output bit (names unique per ``prefix``)."""

    def __init__(self, m, prefix):
        self.m, self.prefix, self.n = m, prefix, 0

    def _cell(self, kind, **ports):
        z = Signal(name=f"{self.prefix}_{kind.lower()}{self.n}")
        self.m.submodules[f"{self.prefix}_{kind.lower()}{self.n}"] = Instance(
            kind, **ports, o_Z=z)
        self.n += 1
        return z

    def mux2(self, a, b, s):                     # s ? b : a
        return self._cell("LUT4", p_INIT=Const(_LUT4_MUX2, 16), i_A=a, i_B=b, i_C=s,
                          i_D=Const(0))

    def mux4(self, ins, s):                      # PFUMX: C0 ? ALUT : BLUT
        lo, hi = self.mux2(ins[0], ins[1], s[0]), self.mux2(ins[2], ins[3], s[0])
        return self._cell("PFUMX", i_ALUT=hi, i_BLUT=lo, i_C0=s[1])

    def mux8(self, ins, s):                      # L6MUX21: SD ? D1 : D0
        return self._cell("L6MUX21", i_D0=self.mux4(ins[:4], s), i_D1=self.mux4(ins[4:], s),
                          i_SD=s[2])

    def select(self, ins, sel):
        """``ins[sel]`` for 1-bit ``ins``: 8:1 cells on the low three bits, then again."""
        ins, sel = list(ins), list(sel)
        while sel:
            step = min(3, len(sel))
            size = 1 << step
            ins = ins + [ins[-1]] * (-len(ins) % size)        # pad: selects a real input
            cell = {1: lambda x, s: self.mux2(x[0], x[1], s[0]), 2: self.mux4,
                    3: self.mux8}[step]
            ins = [cell(ins[i:i + size], sel[:step]) for i in range(0, len(ins), size)]
            sel = sel[step:]
        return ins[0]


def wide_mux(m, inputs, sel, platform=None, name="wmux"):
    """``inputs[sel]`` for a list of equal-width values (see the module docstring)."""
    inputs = list(inputs)
    if len(inputs) == 1 or not is_ecp5(platform):
        return _tree(inputs, sel)
    width = len(inputs[0])
    out = Signal(width, name=name)
    for bit in range(width):
        cells = _Cells(m, f"{name}_b{bit}")
        m.d.comb += out[bit].eq(cells.select([x[bit] for x in inputs], sel))
    return out
