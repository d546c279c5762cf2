"""Verilog of an elaboratable as this project emits it: Amaranth's Verilog back end (its
built-in Yosys) without source attributes, made to run at time 0 in event simulators.

    text = emit_verilog(NvdlaCore(cfg), "nvdla_core")

``nvdla generate`` and the cocotb bench builds (:mod:`tb.runner`) both write this text.
"""

from __future__ import annotations

import re

from amaranth.back import verilog

__all__ = ["emit_verilog", "time0_safe"]

_SINGLE_ALWAYS = re.compile(r"^(\s*)always @\*\n(\s+)(?!begin)([^\n]*;)\n", re.M)
_MODULE = re.compile(r"^module [^;]*;\n", re.M)
_KICK = "nvdla_time0_kick"


def time0_safe(text: str) -> str:
    """Make every ``always @*`` block of Yosys's Verilog run at time 0 in event simulators.

    Yosys gives multi-statement ``always @*`` blocks a dummy register in their sensitivity
    (initialised to 0, so Icarus sees an event at time 0), but not the one-statement blocks it
    writes for constant or single-slice drivers (``x[4:0] = 5'h00;``). Icarus never runs those
    (IEEE 1364 ``always @*`` waits for a change), leaving such bits X forever. This adds the
    same kind of time-0 trigger to them; synthesis and Verilator are unaffected.
    """
    if not _SINGLE_ALWAYS.search(text):
        return text
    text = _SINGLE_ALWAYS.sub(
        lambda mo: f"{mo[1]}always @* begin\n{mo[2]}if ({_KICK}) begin end\n"
                   f"{mo[2]}{mo[3]}\n{mo[1]}end\n", text)
    return _MODULE.sub(lambda mo: mo[0] + f"  reg {_KICK} = 0;\n", text)


def emit_verilog(top, name: str) -> str:
    """The Verilog text of ``top`` as module ``name`` (time-0 safe, no source attributes)."""
    return time0_safe(verilog.convert(top, name=name, emit_src=False))
