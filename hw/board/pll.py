"""The ECP5 PLL (``EHXPLLL``) that clocks a board top below the board's oscillator.

Lattice TN1263 ("ECP5 and ECP5-5G sysCLOCK PLL/DLL Design and Usage Guide") gives the
relations used here, with the loop closed inside the PLL from the primary output's divider
(``FEEDBK_PATH = INT_OP``: no feedback net to route)::

    f_out = f_in * CLKFB_DIV / CLKI_DIV        f_vco = f_out * CLKOP_DIV

with the phase detector's input ``f_in / CLKI_DIV`` between 3.125 and 400 MHz and the VCO
between 400 and 800 MHz. nextpnr-ecp5 derives the output's timing constraint from the input's
``FREQUENCY`` and these dividers, so the board's own constraint file needs no change.
"""

from amaranth.hdl import Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["pll_dividers", "Ecp5Pll"]

_VCO = (400e6, 800e6)
_PFD = (3.125e6, 400e6)


def pll_dividers(f_in: float, f_out: float) -> dict:
    """``CLKI_DIV``, ``CLKFB_DIV``, ``CLKOP_DIV`` and the output frequency they give
    (``f_out_hz``) for the legal setting closest to ``f_out`` (ties: the highest VCO, then
    the smallest input divider). Raises ``ValueError`` naming the rule when no setting comes
    within 1 % of ``f_out`` or the frequencies are outside the PLL's range."""
    if not 8e6 <= f_in <= 400e6:
        raise ValueError(f"PLL input {f_in / 1e6:g} MHz: the ECP5 PLL takes 8 to 400 MHz")
    if not 3.125e6 <= f_out <= 400e6:
        raise ValueError(f"core clock {f_out / 1e6:g} MHz: the ECP5 PLL gives 3.125 to "
                         "400 MHz")
    best = None
    for clki in range(1, 129):
        pfd = f_in / clki
        if not _PFD[0] <= pfd <= _PFD[1]:
            continue
        for clkfb in range(1, 81):
            out = pfd * clkfb
            for clkop in range(1, 129):
                vco = out * clkop
                if vco > _VCO[1]:
                    break
                if vco < _VCO[0]:
                    continue
                key = (abs(out - f_out), -vco, clki)
                if best is None or key < best[0]:
                    best = (key, {"CLKI_DIV": clki, "CLKFB_DIV": clkfb, "CLKOP_DIV": clkop,
                                  "f_out_hz": out})
    if best is None or best[0][0] > 0.01 * f_out:
        raise ValueError(f"core clock {f_out / 1e6:g} MHz: no ECP5 PLL setting from "
                         f"{f_in / 1e6:g} MHz comes within 1 %")
    return best[1]


class Ecp5Pll(wiring.Component):
    """``Ecp5Pll(f_in, f_out)``: ``clk_out`` at :func:`pll_dividers`' frequency
    (``self.f_out_hz``) from ``clk_in``; ``locked`` high once the loop has locked."""

    clk_in: In(1)
    clk_out: Out(1)
    locked: Out(1)

    def __init__(self, f_in: float, f_out: float):
        self.f_in_hz = f_in
        self.dividers = pll_dividers(f_in, f_out)
        self.f_out_hz = self.dividers["f_out_hz"]
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        d = self.dividers
        clkop = Signal()
        m.submodules.pll = Instance(
            "EHXPLLL",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
            p_CLKOP_ENABLE="ENABLED", p_CLKI_DIV=d["CLKI_DIV"], p_CLKFB_DIV=d["CLKFB_DIV"],
            p_CLKOP_DIV=d["CLKOP_DIV"], p_CLKOP_CPHASE=d["CLKOP_DIV"] - 1, p_CLKOP_FPHASE=0,
            p_FEEDBK_PATH="INT_OP",
            a_FREQUENCY_PIN_CLKI=f"{self.f_in_hz / 1e6:.6g}",
            a_FREQUENCY_PIN_CLKOP=f"{self.f_out_hz / 1e6:.6g}",
            i_CLKI=self.clk_in, o_CLKOP=clkop, o_LOCK=self.locked,
            i_RST=0, i_STDBY=0, i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0,
            i_PHASELOADREG=0, i_PLLWAKESYNC=0, i_ENCLKOP=0)
        m.d.comb += self.clk_out.eq(clkop)
        return m
