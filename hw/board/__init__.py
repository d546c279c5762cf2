"""FPGA board tops: :class:`BoardCore` (core + UART host bridge + block-RAM DBBIF memory),
:class:`BoardTop` (it on an amaranth-boards platform, on ECP5 optionally clocked through
:class:`Ecp5Pll`) and :class:`ZynqCore` (core + AXI4-Lite
CSB bridge with Vivado-inferable ``s_axi_*`` / ``m_axi_*`` ports)."""

from .top import BoardCore, BoardTop
from .zynq import ZynqCore, zynq_bd_tcl
from .stub import CsbScratch
from .pll import Ecp5Pll, pll_dividers

__all__ = ["BoardCore", "BoardTop", "ZynqCore", "zynq_bd_tcl", "CsbScratch", "Ecp5Pll",
           "pll_dividers"]
