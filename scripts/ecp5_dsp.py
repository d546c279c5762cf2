"""Registers after ECP5 multipliers moved into the multipliers (``MULT18X18D`` output register).

    python -m scripts.ecp5_dsp IN.json OUT.json

Yosys's ECP5 flow (``synth_ecp5``) maps a product to a ``MULT18X18D`` with every register
left out of it, and nextpnr-ecp5 does not pack flip-flops into multipliers. A registered
product therefore leaves the DSP tile through fabric routing into slice flip-flops and
starts again from there: on nv_small the CMAC's 64 products (about a thousand flip-flops)
and their nets were the largest share of the convolution's routing overuse.

The multiplier has its own output register (Lattice TN1267, "ECP5 sysDSP Usage Guide":
``REG_OUTPUT_CLK`` / ``_CE`` / ``_RST`` select one of the block's four clocks, enables and
resets). This pass, run on the synthesized JSON netlist between Yosys and nextpnr, moves a
multiplier's output flip-flops into it when that changes nothing the design does:

- every output bit of the multiplier that is used drives exactly one thing, the data input of
  a ``TRELLIS_FF`` (a bit that also feeds logic would see the product a cycle late);
- those flip-flops share one clock, clock enable and reset (net and polarity), are clocked
  on the rising edge, reset to 0 (not a preload) and have no inverted enable or reset;
- an enable and a reset are not both used (the slice gives reset priority over the enable;
  the DSP's order is not relied on).

The flip-flops' outputs become the multiplier's outputs and the flip-flops are removed;
nextpnr then times the multiplier as ``MULT18X18D_REGS_OUTPUT`` (setup from A / B to the
clock, clock-to-out from it). Multipliers that do not qualify are left as they are.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

__all__ = ["absorb_output_registers", "main"]

_FF = "TRELLIS_FF"
_MULT = "MULT18X18D"


def _param(cell: dict, name: str, default: str = "") -> str:
    """A cell parameter as a string (Yosys writes string parameters with a trailing space
    when they would otherwise read as a bit vector: ``"1 "``)."""
    return str(cell.get("parameters", {}).get(name, default)).strip()


def _sinks(module: dict) -> dict:
    """bit -> [(cell name, port)] for every cell input and module output the bit reaches."""
    sinks = defaultdict(list)
    for name, cell in module["cells"].items():
        dirs = cell.get("port_directions", {})
        for port, bits in cell["connections"].items():
            if dirs.get(port, "input") != "output":   # unknown direction counts as a sink
                for b in bits:
                    if isinstance(b, int):
                        sinks[b].append((name, port))
    for pname, port in module.get("ports", {}).items():
        if port["direction"] != "input":
            for b in port["bits"]:
                if isinstance(b, int):
                    sinks[b].append(("$port", pname))
    return sinks


def _ff_key(ff: dict):
    """What the flip-flops of one output register must share (clock, enable, reset, reset
    mode), or None if a flip-flop cannot go into the multiplier."""
    con = ff["connections"]
    muxes = tuple(_param(ff, p, d) for p, d in (("CLKMUX", "CLK"), ("LSRMUX", "LSR"),
                                                 ("LSRMODE", "LSR"), ("REGSET", "RESET")))
    cemux = _param(ff, "CEMUX", "1")
    if muxes != ("CLK", "LSR", "LSR", "RESET") or cemux not in ("1", "CE"):
        return None                     # inverted clock / reset, preload or set value
    ce = con.get("CE", ["1"])[0] if cemux == "CE" else "1"
    lsr = con.get("LSR", ["0"])[0]
    if not (ce == "1" or isinstance(ce, int)) or not (lsr == "0" or isinstance(lsr, int)):
        return None                     # an enable tied off or a reset tied on (or x)
    if isinstance(ce, int) and isinstance(lsr, int):
        return None                     # enable and reset together: not relied on
    asynch = isinstance(lsr, int) and _param(ff, "SRMODE", "LSR_OVER_CE") == "ASYNC"
    return (con["CLK"][0], ce, lsr, "ASYNC" if asynch else "SYNC")


def absorb_output_registers(netlist: dict) -> dict:
    """Move qualifying output flip-flops into their ``MULT18X18D`` (in place, every module).

    Returns counts: ``multipliers`` seen, ``absorbed`` multipliers, ``flip_flops`` removed,
    and ``skipped`` by reason (``unregistered``: an output bit drives logic or more than one
    sink; ``mixed``: the flip-flops differ in clock, enable or reset; ``ff_mode``: a
    flip-flop with an inverted clock, enable or reset or a set value; ``registered``: the
    multiplier's output register is already in use)."""
    stats = {"multipliers": 0, "absorbed": 0, "flip_flops": 0, "skipped": defaultdict(int)}
    for module in netlist.get("modules", {}).values():
        cells = module.get("cells", {})
        mults = [n for n, c in cells.items() if c["type"] == _MULT]
        if not mults:
            continue
        sinks = _sinks(module)
        for name in mults:
            stats["multipliers"] += 1
            mult = cells[name]
            if _param(mult, "REG_OUTPUT_CLK", "NONE") != "NONE":
                stats["skipped"]["registered"] += 1
                continue
            outs = [(p, bits[0]) for p, bits in mult["connections"].items()
                    if p.startswith("P") and p[1:].isdigit() and isinstance(bits[0], int)
                    and sinks.get(bits[0])]
            ffs, keys, reason = [], set(), None
            for port, bit in outs:
                s = sinks[bit]
                if len(s) != 1 or s[0][1] != "DI" or cells.get(s[0][0], {}).get("type") != _FF:
                    reason = "unregistered"
                    break
                key = _ff_key(cells[s[0][0]])
                if key is None:
                    reason = "ff_mode"
                    break
                keys.add(key)
                ffs.append((port, s[0][0]))
            if reason is None and not ffs:
                reason = "unregistered"
            if reason is None and len(keys) != 1:
                reason = "mixed"
            if reason:
                stats["skipped"][reason] += 1
                continue
            clk, ce, lsr, mode = keys.pop()
            params = mult.setdefault("parameters", {})
            params.update({"REG_OUTPUT_CLK": "CLK0", "REG_OUTPUT_CE": "CE0",
                           "REG_OUTPUT_RST": "RST0", "RESETMODE": mode})
            mult["connections"].update({"CLK0": [clk], "CE0": [ce], "RST0": [lsr]})
            dirs = mult.setdefault("port_directions", {})
            dirs.update({"CLK0": "input", "CE0": "input", "RST0": "input"})
            for port, ff in ffs:
                mult["connections"][port] = list(cells[ff]["connections"]["Q"])
                del cells[ff]
            stats["absorbed"] += 1
            stats["flip_flops"] += len(ffs)
    stats["skipped"] = dict(stats["skipped"])
    return stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.ecp5_dsp", description=__doc__.split(
        "\n")[0])
    p.add_argument("netlist", help="Yosys JSON netlist (synth_ecp5)")
    p.add_argument("out", help="the netlist with the registers moved")
    args = p.parse_args(argv)
    netlist = json.loads(Path(args.netlist).read_text())
    stats = absorb_output_registers(netlist)
    Path(args.out).write_text(json.dumps(netlist))
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(stats["skipped"].items())) or "none"
    print(f"ecp5_dsp: {stats['absorbed']} of {stats['multipliers']} multipliers took their "
          f"output registers ({stats['flip_flops']} flip-flops); skipped: {skipped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
