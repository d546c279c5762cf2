"""``nvdla congestion``: control sets of a synthesized ECP5 netlist and router2's congestion
heatmaps, by unit (scripts/congestion.py), on small hand-made inputs whose answers are known."""

import json

from scripts.congestion import (cells_by_unit, control_sets, hot_windows, latest_iteration,
                                net_congestion, unit_of)


def _ff(ce, lsr):
    conn = {"CLK": [2], "DI": [3], "Q": [4]}
    if ce is not None:
        conn["CE"] = [ce]
    if lsr is not None:
        conn["LSR"] = [lsr]
    return {"type": "TRELLIS_FF", "connections": conn}


def _netlist():
    """Flip-flops: 5 on enable net 10 and reset 20, 2 on enable 11 only, 1 on a constant
    enable ("1") with reset 20, 1 with neither; one LUT. Net 10 has a Yosys-made name and a
    user name; the user name is the one reported."""
    cells = {f"ff{i}": _ff(10, 20) for i in range(5)}
    cells.update({"ffa": _ff(11, None), "ffb": _ff(11, None), "ffc": _ff("1", 20),
                  "ffd": _ff(None, None),
                  "lut": {"type": "LUT4", "connections": {"A": [10], "Z": [11]}}})
    netnames = {
        "top.core.cmac.adv_LUT4_B_Z": {"hide_name": 0, "bits": [10]},
        "top.core.cmac.adv": {"hide_name": 0, "bits": [10]},
        "$auto$x": {"hide_name": 1, "bits": [11]},
        "top.core.sdp.take": {"hide_name": 0, "bits": [11]},
        "top.rst": {"hide_name": 0, "bits": [20]},
    }
    return {"modules": {"small": {"cells": {}}, "top": {"cells": cells, "netnames": netnames}}}


def test_unit_of():
    assert unit_of("board.core.conv.cmac.out_valid_LUT4_B_Z[3]") == "board.core.conv.cmac"
    assert unit_of("board.core.sdp$337.feeder.x", 3) == "board.core.sdp"
    assert unit_of("board.core_rst") == "board"          # a net's own name is not a unit
    assert unit_of("$PACKER_GND_NET") == "$PACKER_GND_NET"


def test_control_sets_count_and_name_the_nets():
    cs = control_sets(_netlist())
    assert cs["flip_flops"] == 9
    # (10, 20), (11, none), ("1", 20), (none, none)
    assert cs["control_sets"] == 4 and cs["single_flip_flop_sets"] == 2
    assert cs["enabled"] == 7 and cs["with_reset"] == 6
    assert cs["ce"] == [{"net": "top.core.cmac.adv", "flip_flops": 5},
                        {"net": "top.core.sdp.take", "flip_flops": 2}]
    assert cs["lsr"] == [{"net": "top.rst", "flip_flops": 6}]


def test_net_congestion_by_unit():
    csv = ("board.core.conv.cmac.a[0],30\nboard.core.conv.cmac.b,12\n"
           "board.core.sdp$3.x,7\n$PACKER_GND_NET,2\n")
    nc = net_congestion(csv, top=2)
    assert nc["overuse"] == 51 and nc["nets"] == 4
    assert nc["worst_nets"] == [{"net": "board.core.conv.cmac.a[0]", "overuse": 30},
                                {"net": "board.core.conv.cmac.b", "overuse": 12}]
    # top 2 units: cmac (42), then sdp (its $3 dropped; 7) before the packer's net (2)
    assert nc["units"] == [{"unit": "board.core.conv.cmac", "overuse": 42},
                           {"unit": "board.core.sdp", "overuse": 7}]


def test_hot_windows_find_the_planted_spots():
    # 20 x 12 grid (one line per x), a hot 3 x 3 spot at x 14-16, y 2-4 and a warm one at
    # x 2-3, y 8-9
    grid = [[0] * 12 for _ in range(20)]
    for x in range(14, 17):
        for y in range(2, 5):
            grid[x][y] = 10
    for x in range(2, 4):
        for y in range(8, 10):
            grid[x][y] = 5
    csv = "\n".join(",".join(map(str, row)) + "," for row in grid) + "\n"
    wins = hot_windows(csv, window=3, top=4)
    assert wins[0] == {"x": (14, 16), "y": (2, 4), "overuse": 90, "share": 90 / 110}
    assert wins[1]["overuse"] == 20 and 1 <= wins[1]["x"][0] <= 2 and 7 <= wins[1]["y"][0] <= 8
    # windows never overlap, and the rest of the grid is cold: only the two
    assert len(wins) == 2
    assert hot_windows("0,0,\n0,0,\n", window=4) == []


def test_cells_by_unit_inside_a_box():
    placed = {"modules": {"top": {"cells": {
        "board.core.conv.cmac.m0": {"attributes": {"NEXTPNR_BEL": "X10/Y5/SLICEA"}},
        "board.core.conv.cmac.m1": {"attributes": {"NEXTPNR_BEL": "X40/Y5/SLICEA"}},
        "board.core.regs.rf_sdp.q": {"attributes": {"NEXTPNR_BEL": "X11/Y6/SLICEB"}},
        "board.core.regs.rf_sdp.r": {"attributes": {"NEXTPNR_BEL": "X12/Y7/SLICEC"}},
        "unplaced": {"attributes": {}},
    }}}}
    got = cells_by_unit(placed, ((8, 15), (0, 10)))
    assert got == [{"unit": "board.core.regs.rf_sdp", "cells": 2, "of": 2},
                   {"unit": "board.core.conv.cmac", "cells": 1, "of": 2}]


def test_nvdla_congestion_command(tmp_path, capsys):
    from scripts.cli import main
    out = tmp_path / "b"
    (out / "congestion").mkdir(parents=True)
    (out / "nvdla_board.json").write_text(json.dumps(_netlist()))
    for it, value in ((3, 9), (12, 4)):
        (out / "congestion" / f"hm_congestion_by_net_{it}.csv").write_text(
            f"board.core.conv.cmac.a,{value}\n")
        (out / "congestion" / f"hm_congestion_by_coordinate_{it}.csv").write_text(
            "0,0,\n0,%d,\n" % value)
    (out / "nvdla_board.placed.json").write_text(json.dumps({"modules": {"top": {"cells": {
        "board.core.conv.cmac.m0": {"attributes": {"NEXTPNR_BEL": "X1/Y1/SLICEA"}}}}}}))
    assert latest_iteration(out / "congestion") == 12
    assert main(["congestion", str(out), "--window", "1", "--json", str(tmp_path / "r.json")]) == 0
    text = capsys.readouterr().out
    assert "9 flip-flops, 4 (CE, LSR) sets" in text
    assert "router2 iteration 12: overuse 4 on 1 nets" in text
    assert "x 1-1, y 1-1: 4 overused wires (100 % of all)" in text
    assert "board.core.conv.cmac 1/1" in text
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["routing"]["iteration"] == 12 and rep["control_sets"]["control_sets"] == 4
    assert main(["congestion", str(out), "--iteration", "3"]) == 0
    assert "router2 iteration 3: overuse 9" in capsys.readouterr().out
    assert main(["congestion", str(out), "--iteration", "7"]) == 1
    # a tree without a build: says what is missing
    assert main(["congestion", str(tmp_path / "none")]) == 0
    text = capsys.readouterr().out
    assert "no netlist" in text and "no router2 heatmap" in text
