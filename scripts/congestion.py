"""``nvdla congestion DIR``: where an ECP5 board build crowds, by HDL unit.

Reads what a ``nvdla board --build`` tree holds and prints three reports:

control sets (``DIR/<name>.json``, the synthesized netlist)
    ECP5 slices share one clock, one ``CE`` and one ``LSR`` net between their two flip-flops,
    so flip-flops with different enables or resets cannot pack together, and an enable
    or reset net that reaches thousands of flip-flops across the chip is both a routing
    load and, when a LUT drives it, a timing path (a pipeline's stall fanning out to
    every stage register). Lists the nets driving the most ``CE`` and ``LSR`` pins by
    their HDL name, and the number of distinct (``CE``, ``LSR``) sets.

routing congestion (``DIR/congestion/hm_*_<iteration>.csv``, written by router2 when the
build ran with ``nvdla board --build --heatmap``)
    The nets with the most overuse and the windows of the device with the most overused
    wires at the last (or the chosen) router2 iteration, each window with the units whose
    cells are placed in it (``DIR/<name>.placed.json``). A build that does not converge
    shows here which units crowd into the same region.

A unit is the first ``--depth`` components of a cell or net name (``board.core.conv.cmac``)
with Yosys's ``$N`` instance suffixes dropped.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

from .paths import _names as net_names, _top as top_module

__all__ = ["add_arguments", "run", "unit_of", "control_sets", "net_congestion",
           "hot_windows", "cells_by_unit", "latest_iteration"]


def add_arguments(p):
    p.add_argument("dir", help="an `nvdla board --build` tree")
    p.add_argument("--name", default="nvdla_board", help="design name (default nvdla_board)")
    p.add_argument("--top", type=int, default=12, help="rows per report (default 12)")
    p.add_argument("--depth", type=int, default=4,
                   help="name components that make a unit (default 4: board.core.conv.cmac)")
    p.add_argument("--iteration", type=int, help="router2 iteration (default: the last)")
    p.add_argument("--window", type=int, default=16,
                   help="side of a congestion window in tiles (default 16)")
    p.add_argument("--json", metavar="FILE", help="also write the reports as JSON")


_INSTANCE = re.compile(r"\$\d+$")


def unit_of(name: str, depth: int = 4) -> str:
    """The unit of a cell or net: its first ``depth`` hierarchy components (never the
    last, the cell's or net's own name), ``$N`` suffixes dropped."""
    parts = name.split(".")
    parts = parts[:min(depth, max(len(parts) - 1, 1))]
    return ".".join(_INSTANCE.sub("", p) for p in parts)


def _top_module(netlist: dict) -> dict:
    """The module marked top (as :mod:`scripts.paths` finds it), else (hand-made netlists)
    the one with the most cells."""
    mods = netlist["modules"]
    try:
        return top_module(mods)
    except ValueError:
        return max(mods.values(), key=lambda m: len(m.get("cells", {})))


def control_sets(netlist: dict, top: int = 12) -> dict:
    """Flip-flops by ``CE`` and ``LSR`` net (see the module docstring)."""
    mod = _top_module(netlist)
    names = net_names(mod)
    ce, lsr, sets = collections.Counter(), collections.Counter(), collections.Counter()
    n = 0
    for cell in mod.get("cells", {}).values():
        if cell["type"] != "TRELLIS_FF":
            continue
        n += 1
        conn = cell["connections"]
        e = (conn.get("CE") or ["1"])[0]
        r = (conn.get("LSR") or ["0"])[0]
        ce[e] += 1
        lsr[r] += 1
        sets[(e, r)] += 1

    def named(counter):
        return [{"net": names.get(b, str(b)), "flip_flops": k}
                for b, k in counter.most_common() if isinstance(b, int)][:top]
    return {"flip_flops": n, "control_sets": len(sets),
            "single_flip_flop_sets": sum(1 for k in sets.values() if k == 1),
            "enabled": sum(k for b, k in ce.items() if isinstance(b, int)),
            "with_reset": sum(k for b, k in lsr.items() if isinstance(b, int)),
            "ce": named(ce), "lsr": named(lsr)}


def latest_iteration(cdir: Path, prefix: str = "hm") -> int | None:
    """The last router2 iteration with a congestion-by-net heatmap in ``cdir``."""
    its = [int(m[1]) for f in cdir.glob(f"{prefix}_congestion_by_net_*.csv")
           if (m := re.search(r"_(\d+)\.csv$", f.name))]
    return max(its) if its else None


def net_congestion(csv_text: str, depth: int = 4, top: int = 12) -> dict:
    """router2's congestion by net: the worst nets and the overuse summed per unit."""
    rows = []
    for line in csv_text.splitlines():
        name, _, value = line.rpartition(",")
        if name and value.strip().lstrip("-").isdigit():
            rows.append((name, int(value)))
    rows.sort(key=lambda r: -r[1])
    units = collections.Counter()
    for name, v in rows:
        units[unit_of(name, depth)] += v
    return {"overuse": sum(v for _, v in rows), "nets": len(rows),
            "worst_nets": [{"net": n, "overuse": v} for n, v in rows[:top]],
            "units": [{"unit": u, "overuse": v} for u, v in units.most_common(top)]}


def hot_windows(csv_text: str, window: int = 16, top: int = 4) -> list:
    """The ``top`` non-overlapping ``window`` x ``window`` tile windows with the most
    overused wires (router2's congestion by coordinate: one line per x, one value per y)."""
    import numpy as np
    grid = np.array([[int(v) for v in line.strip().rstrip(",").split(",") if v != ""]
                     for line in csv_text.splitlines() if line.strip()], dtype=np.int64)
    if grid.size == 0:
        return []
    w = max(1, min(window, *grid.shape))
    # window sums through a summed-area table
    s = np.zeros((grid.shape[0] + 1, grid.shape[1] + 1), dtype=np.int64)
    s[1:, 1:] = grid.cumsum(0).cumsum(1)
    sums = s[w:, w:] - s[:-w, w:] - s[w:, :-w] + s[:-w, :-w]
    total = int(grid.sum())
    out = []
    for _ in range(top):
        x, y = np.unravel_index(int(sums.argmax()), sums.shape)
        value = int(sums[x, y])
        if value <= 0:
            break
        out.append({"x": (int(x), int(x) + w - 1), "y": (int(y), int(y) + w - 1),
                    "overuse": value, "share": value / total})
        # windows overlapping this one are out
        sums[max(0, x - w + 1):x + w, max(0, y - w + 1):y + w] = -1
    return out


_BEL = re.compile(r"X(\d+)/Y(\d+)/")


def cells_by_unit(placed: dict, box, depth: int = 4, top: int = 8) -> list:
    """Units of the cells nextpnr placed inside ``box`` = ((x0, x1), (y0, y1))."""
    (x0, x1), (y0, y1) = box
    inside, total = collections.Counter(), collections.Counter()
    for name, cell in _top_module(placed).get("cells", {}).items():
        mo = _BEL.match(cell.get("attributes", {}).get("NEXTPNR_BEL", ""))
        if not mo:
            continue
        u = unit_of(name, depth)
        total[u] += 1
        if x0 <= int(mo[1]) <= x1 and y0 <= int(mo[2]) <= y1:
            inside[u] += 1
    return [{"unit": u, "cells": k, "of": total[u]} for u, k in inside.most_common(top)]


def run(args) -> int:
    out = Path(args.dir)
    report = {}
    netlist = out / f"{args.name}.json"
    if netlist.exists():
        cs = control_sets(json.loads(netlist.read_text()), args.top)
        report["control_sets"] = cs
        print(f"control sets ({netlist}): {cs['flip_flops']} flip-flops, "
              f"{cs['control_sets']} (CE, LSR) sets ({cs['single_flip_flop_sets']} of one "
              f"flip-flop); {cs['enabled']} with an enable, {cs['with_reset']} with a reset")
        for pin in ("ce", "lsr"):
            print(f"  largest {pin.upper()} nets:")
            for r in cs[pin]:
                print(f"    {r['flip_flops']:7d}  {r['net']}")
    else:
        print(f"no netlist {netlist} (run `nvdla board --build` first)")
    cdir = out / "congestion"
    it = args.iteration if args.iteration is not None else latest_iteration(cdir)
    if it is None:
        print(f"no router2 heatmap in {cdir}/ (build with `nvdla board --build --heatmap`)")
    else:
        by_net = cdir / f"hm_congestion_by_net_{it}.csv"
        by_xy = cdir / f"hm_congestion_by_coordinate_{it}.csv"
        if not by_net.exists() or not by_xy.exists():
            print(f"no router2 heatmap for iteration {it} in {cdir}/")
            return 1
        nc = net_congestion(by_net.read_text(), args.depth, args.top)
        print(f"routing congestion, router2 iteration {it}: overuse {nc['overuse']} "
              f"on {nc['nets']} nets")
        print("  by unit:")
        for r in nc["units"]:
            print(f"    {r['overuse']:7d}  {r['unit']}")
        print("  worst nets:")
        for r in nc["worst_nets"]:
            print(f"    {r['overuse']:7d}  {r['net']}")
        wins = hot_windows(by_xy.read_text(), args.window)
        placed_path = out / f"{args.name}.placed.json"
        placed = json.loads(placed_path.read_text()) if placed_path.exists() else None
        print(f"  hottest {args.window} x {args.window}-tile windows:")
        for w in wins:
            print(f"    x {w['x'][0]}-{w['x'][1]}, y {w['y'][0]}-{w['y'][1]}: "
                  f"{w['overuse']} overused wires ({100 * w['share']:.0f} % of all)")
            if placed is not None:
                w["units"] = cells_by_unit(placed, (w["x"], w["y"]), args.depth)
                print("      " + ", ".join(f"{u['unit']} {u['cells']}/{u['of']}"
                                           for u in w["units"]))
        report["routing"] = {"iteration": it, **nc, "windows": wins}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0
