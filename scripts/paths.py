"""Deepest register-to-register paths of a synthesized ECP5 netlist, before place and route.

``nvdla synth --target ecp5 --paths N`` (or ``nvdla synth --netlist FILE.json --paths N`` on
a netlist written by Yosys's ``write_json``, such as ``nvdla board --build``'s) ranks the
timing endpoints of a flattened ECP5 netlist by an estimated arrival time and prints the
worst paths by the HDL signals they pass, so the paths that hold the clock down are found in
minutes from Yosys's output rather than hours of placement.

The estimate is a static longest-path search over the mapped cells with a fixed delay per
cell arc (:data:`DELAYS`, in ns, each LUT input including a local route). It is a ranking,
not an Fmax: placement adds global routing (on the whole nv_small ULX3S board of commit
1d4b85c the worst estimate was 41.8 ns, nextpnr's post-placement estimate 62.9 ns, 15.9 MHz).

Path starts: flip-flop outputs, block RAM outputs, registered DSP outputs, top-level inputs.
Path ends: flip-flop data / enable / set-reset inputs, block RAM and LUT RAM write and address
inputs, registered DSP inputs. LUT RAM reads and unregistered multipliers are combinational.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

__all__ = ["DELAYS", "critical_paths", "format_paths"]

#: estimated delay of a cell arc, ns (ECP5 -6/-8, a LUT input counted with its local route)
DELAYS = {
    "lut": 1.0,            # LUT4 A..D -> Z (and a CCU2C's LUT inputs)
    "mux": 0.3,            # PFUMX / L6MUX21 data inputs -> Z (their select is a LUT input)
    "carry": 0.1,          # CCU2C CIN -> COUT (two bits)
    "carry_sum": 0.4,      # CCU2C CIN -> S0 / S1
    "lutram_read": 1.2,    # TRELLIS_DPR16X4 RAD -> DO
    "mult": 4.5,           # MULT18X18D A/B -> P, unregistered
    "ff_clk_q": 0.5,
    "bram_clk_q": 3.5,     # DP16KD without its output register
    "dsp_clk_q": 1.0,      # MULT18X18D with its output / pipeline register
}

_AUTO = re.compile(r"_(?:LUT4|CCU2C|TRELLIS_FF|TRELLIS_DPR16X4|PFUMX|L6MUX21|MULT18X18D|"
                   r"DP16KD)_")


def _top(modules: dict) -> dict:
    tops = [m for m, v in modules.items() if v.get("attributes", {}).get("top")]
    if len(tops) != 1:
        raise ValueError(f"netlist: expected one top module, found {tops or 'none'}")
    return modules[tops[0]]


def _names(module: dict) -> dict:
    """bit -> the most readable net name (HDL names before Yosys's derived ones)."""
    best = {}
    for name, net in module["netnames"].items():
        score = (name.count("$") + 10 * bool(_AUTO.search(name)), len(name))
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and (b not in best or score < best[b][0]):
                best[b] = (score, f"{name}[{i}]" if len(net["bits"]) > 1 else name)
    return {b: n for b, (_, n) in best.items()}


def _graph(module: dict):
    """(arcs: out bit -> [(in bit, delay)], starts: bit -> launch time, ends: [(bit, what)])."""
    arcs, starts, ends = defaultdict(list), {}, []
    D = DELAYS

    def bits(cell, port):
        return [b for b in cell["connections"].get(port, []) if isinstance(b, int)]

    def arc(cell, outs, ins, delay):
        for o in outs:
            for p in ins:
                for b in bits(cell, p):
                    arcs[o].append((b, delay))

    for cname, cell in module["cells"].items():
        t, con = cell["type"], cell["connections"]
        dirs = cell.get("port_directions", {})
        ins = [p for p in con if dirs.get(p) == "input"]
        outs = [p for p in con if dirs.get(p) == "output"]
        if t == "LUT4":
            arc(cell, bits(cell, "Z"), "ABCD", D["lut"])
        elif t in ("PFUMX", "L6MUX21"):
            data, sel = (("ALUT", "BLUT"), "C0") if t == "PFUMX" else (("D0", "D1"), "SD")
            arc(cell, bits(cell, "Z"), data, D["mux"])
            arc(cell, bits(cell, "Z"), [sel], D["lut"])
        elif t == "CCU2C":
            luts = [f"{x}{i}" for i in (0, 1) for x in "ABCD"]
            for o in ("S0", "S1", "COUT"):
                arc(cell, bits(cell, o), luts, D["lut"])
                arc(cell, bits(cell, o), ["CIN"], D["carry" if o == "COUT" else "carry_sum"])
        elif t == "TRELLIS_DPR16X4":
            rad = [p for p in ins if p.startswith("RAD")]
            for p in outs:
                arc(cell, bits(cell, p), rad, D["lutram_read"])
            ends += [(b, f"{t}.{p}") for p in ins if not p.startswith("RAD")
                     for b in bits(cell, p)]
        elif t == "MULT18X18D":
            prm = cell.get("parameters", {})
            reg_out = any(prm.get(k, "NONE") != "NONE"
                          for k in ("REG_OUTPUT_CLK", "REG_PIPELINE_CLK"))
            reg_in = prm.get("REG_INPUTA_CLK", "NONE") != "NONE"
            operands = [p for p in ins if re.fullmatch(r"[AB]\d+", p)]
            if reg_in:
                ends += [(b, f"{t}.{p}") for p in operands for b in bits(cell, p)]
            for p in outs:
                for b in bits(cell, p):
                    if reg_out:
                        starts[b] = D["dsp_clk_q"]
                    elif reg_in:
                        starts[b] = D["dsp_clk_q"] + D["mult"]
                    else:
                        arc(cell, [b], operands, D["mult"])
        elif t in ("TRELLIS_FF", "DP16KD", "TRELLIS_IO"):
            launch = {"TRELLIS_FF": D["ff_clk_q"], "DP16KD": D["bram_clk_q"]}.get(t, 0.0)
            for p in outs:
                for b in bits(cell, p):
                    starts[b] = launch
            ends += [(b, f"{t}.{p}") for p in ins if not p.startswith("CLK")
                     for b in bits(cell, p)]
        elif not t.startswith("$scopeinfo") and t not in ("SGSR", "GSR", "VHI", "VLO"):
            if not t.startswith("$") and any(bits(cell, p) for p in outs):
                raise ValueError(f"netlist: cell {cname} of type {t} is not an ECP5 primitive "
                                 "this analysis knows (is the netlist flattened and mapped "
                                 "with synth_ecp5?)")
    for port in module.get("ports", {}).values():
        if port["direction"] == "input":
            for b in port["bits"]:
                if isinstance(b, int):
                    starts[b] = 0.0
    return arcs, starts, ends


def critical_paths(netlist, count: int = 10, unit_depth: int = 3) -> dict:
    """Analyze ``netlist`` (a path to Yosys JSON, or its parsed dict) and return
    ``{"endpoints", "worst_ns", "histogram", "units", "paths"}``: ``units`` maps each unit
    (the first ``unit_depth`` dotted parts of the endpoint's name) to its worst arrival;
    ``paths`` lists the ``count`` worst endpoints with distinct start signals, each with its
    arrival, logic levels and the HDL signals it passes (with their arrival times)."""
    if not isinstance(netlist, dict):
        netlist = json.loads(Path(netlist).read_text())
    module = _top(netlist["modules"])
    names = _names(module)
    arcs, starts, ends = _graph(module)
    arrival, pred = {}, {}

    def arrive(bit):
        stack, expanded = [bit], set()
        while stack:
            x = stack[-1]
            if x in arrival:
                stack.pop()
            elif x in starts:
                arrival[x] = starts[x]
                stack.pop()
            elif x not in expanded:
                expanded.add(x)
                stack.extend(i for i, _ in arcs.get(x, ()) if i not in arrival)
            else:                           # second visit: its inputs are known
                best, via = 0.0, None
                for i, d in arcs.get(x, ()):
                    if i not in arrival:
                        raise ValueError(f"netlist: a combinational loop through "
                                         f"{names.get(x, x)}")
                    if arrival[i] + d > best:
                        best, via = arrival[i] + d, i
                arrival[x], pred[x] = best, via
                stack.pop()
        return arrival[bit]

    ranked = sorted(((arrive(b), b, what) for b, what in ends), reverse=True)
    name = lambda b: names.get(b, f"${b}")          # noqa: E731
    units = {}
    for a, b, _ in ranked:
        units.setdefault(".".join(_base(name(b)).split(".")[:unit_depth]), round(a, 1))
    hist = defaultdict(int)
    for a, _, _ in ranked:
        hist[int(a // 5) * 5] += 1
    paths, seen = [], set()
    for a, b, what in ranked:
        chain = []
        x = b
        while x is not None:
            chain.append(x)
            x = pred.get(x)
        chain.reverse()
        first = _base(name(chain[0]))
        if first in seen:
            continue
        seen.add(first)
        signals = []
        for x in chain:
            s = _base(name(x))
            if not signals or signals[-1][1] != s:
                signals.append((round(arrival[x], 1), s))
        paths.append({"ns": round(a, 1), "levels": len(chain) - 1, "end": what,
                      "endpoint": name(b), "signals": signals})
        if len(paths) >= count:
            break
    return {"endpoints": len(ranked), "worst_ns": round(ranked[0][0], 1) if ranked else 0.0,
            "histogram": dict(sorted(hist.items())), "units": units, "paths": paths}


def _base(net: str) -> str:
    """The HDL signal a net belongs to: Yosys's derived suffixes and the bit index removed."""
    return re.sub(r"\[\d+\]$", "", _AUTO.split(net)[0])


def format_paths(result: dict, units: int = 12) -> str:
    lines = [f"{result['endpoints']} timing endpoints; worst estimated arrival "
             f"{result['worst_ns']} ns (unplaced estimate, see scripts/paths.py)",
             "endpoints per 5 ns: " + ", ".join(f"{k}-{k + 5}: {v}"
                                                for k, v in result["histogram"].items()),
             "worst per unit:"]
    for u, a in sorted(result["units"].items(), key=lambda kv: -kv[1])[:units]:
        lines.append(f"  {a:6.1f} ns  {u}")
    for p in result["paths"]:
        lines.append(f"\n{p['ns']:.1f} ns, {p['levels']} levels, into {p['end']} "
                     f"({p['endpoint']})")
        lines += [f"  {t:6.1f}  {s}" for t, s in p["signals"]]
    return "\n".join(lines)
