"""Module-by-module synthesis of a hierarchical design (``nvdla synth --jobs N``).

With the hierarchy kept, Yosys synthesizes every module of the design on its own: no pass of
``synth_ecp5 -noflatten`` or ``synth_xilinx`` looks across a module boundary. So a module
synthesized alone, its submodules replaced by black boxes of the same ports, maps to the same
flip-flops, block RAM, LUT RAM and DSPs as inside the whole design, and the whole design's
cells are the sum over its module tree. Its LUTs are the same up to Yosys's own variation:
how a module's logic maps depends on Yosys's internal numbering, which the passes before it
advance (nv_small on ECP5: 72,995 LUT4 in one run, 73,006 module by module; one register
file gave 630, 725, 988 and 1,543 LUT4 in four contexts, so per-unit LUTs differ by up to
11 % between the two, in both directions). This runs that sum:

* every module of the generated Verilog is one Yosys job (its text plus black-box stubs of
  the modules it instantiates), ``N`` jobs at a time, the largest first;
* modules that are the same but for Yosys's auto-numbered names (``$1234``: replicated
  lanes and cells, which Amaranth writes out once per instance) are synthesized once;
* each finished job keeps its ``stat -json`` in ``work/modules/<key>/``, with the digest of
  the module's key, the Yosys version and the command: a rerun after a stop (or an edit to
  one unit) runs only the modules that are missing or changed.

The stats are merged into one ``stat -json``-shaped dict, which :func:`scripts.synth.result_of`
turns into the usual table. Against one whole-design run this trades a Yosys process per
module for parallelism, a small memory peak per process and restartability; nv_full's
whole-design ECP5 synthesis needs longer than a sitting in one process.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

__all__ = ["split_modules", "module_children", "port_stub", "module_keys",
           "synthesize_split"]

_MODULE = re.compile(r"^module (\S+) ?\(.*?^endmodule\s*$", re.M | re.S)
# an instance in Yosys's Verilog: two spaces, module name, instance name, "(" at line end
_INSTANCE = re.compile(r"^  (\S+) +(\S+) +\(\s*$", re.M)
_PORT_DECL = re.compile(r"^\s*(input|output|inout)\b.*;\s*$", re.M)
# an identifier (escaped or plain) with a Yosys auto-number in it: ``\$12``, ``\port$4752$0``
_IDENT = re.compile(r"\\\S+|[A-Za-z_][\w$]*")
_AUTO = re.compile(r"\$\d")


def split_modules(text: str) -> dict[str, str]:
    """{module name: its text, ``module`` .. ``endmodule``} of a Verilog file as Yosys (and so
    Amaranth) writes it, in file order; attribute lines before a module are not kept."""
    return {mo[1]: mo[0] for mo in _MODULE.finditer(text)}


def module_children(mods: dict[str, str]) -> dict[str, list[str]]:
    """{module: the modules of ``mods`` it instantiates, one entry per instance}."""
    return {n: [t for t, _ in _INSTANCE.findall(body) if t in mods] for n, body in mods.items()}


def port_stub(name: str, body: str) -> str:
    """A black box with the ports of module ``body`` (named ``name``); its ``clk`` input is a
    clock sink, as the module's flip-flops make it for Yosys's ``clkbufmap``."""
    head = body[:body.index(";") + 1]                      # "module NAME(ports...);"
    decls = "\n".join(("  (* clkbuf_sink *)\n" if re.match(r"\s*input clk;", mo[0]) else "")
                      + mo[0] for mo in _PORT_DECL.finditer(body))
    return f"(* blackbox *)\n{head}\n{decls}\nendmodule\n"


def module_keys(mods: dict[str, str], kids: dict[str, list[str]]) -> dict[str, str]:
    """{module: key}, equal for modules that are the same text but for their own name, their
    submodules' names (compared by key, recursively) and the names with Yosys's auto-numbers
    (``$N``) in them, renamed in order of appearance."""
    keys: dict[str, str] = {}

    def key(n):
        if n not in keys:
            body = mods[n]
            head_end = body.index("(")
            body = "module X" + body[head_end:]
            for c in sorted(set(kids[n]), key=len, reverse=True):
                body = re.sub(r"(?m)^  " + re.escape(c) + r" ", "  " + key(c) + " ", body)
            seen: dict[str, str] = {}
            body = _IDENT.sub(lambda mo: seen.setdefault(mo[0], f"\\auto{len(seen)}")
                              if _AUTO.search(mo[0]) else mo[0], body)
            body = re.sub(r"(?m)^\s*\(\* src = .*\*\)\s*$\n?", "", body)
            keys[n] = hashlib.sha256(body.encode()).hexdigest()[:16]
        return keys[n]

    for n in mods:
        key(n)
    return keys


# what a module's job adds to the target's command when the module is not the design's top:
# no I/O buffers on its ports (Xilinx inserts them on the top's ports only)
_SUBMODULE_FLAGS = {"xilinx": " -noiopad -noclkbuf", "xc7": " -noiopad -noclkbuf"}


def _job_script(top: str, cmd: str, target: str) -> str:
    from scripts.synth import COUNT_INFERRED, stat_command
    return "\n".join(["read_verilog -sv module.v", f"hierarchy -top {top}", *COUNT_INFERRED,
                      "design -reset", "read_verilog -sv module.v", cmd,
                      stat_command(target, top)]) + "\n"


def synthesize_split(top: str, target: str, work: Path, jobs: int, yosys: list[str],
                     command: str) -> tuple[dict, dict, str, float]:
    """Synthesize ``work/design.v`` (top module ``top``) module by module, ``jobs`` Yosys
    processes at a time. ``command``: the target's synthesis command with ``{top}``.
    Returns (stat, memories stat, log, seconds of Yosys summed over the jobs, earlier
    sittings included), the first two shaped as one whole-design ``stat -json``."""
    from scripts.synth import _strip_to_json as strip_json, failure_reason
    mods = split_modules((work / "design.v").read_text())
    if top not in mods:
        raise RuntimeError(f"module {top} is not in {work / 'design.v'}")
    kids = module_children(mods)
    # only what the top instantiates, directly or below
    used, todo = set(), [top]
    while todo:
        n = todo.pop()
        if n not in used:
            used.add(n)
            todo.extend(kids[n])
    keys = module_keys({n: mods[n] for n in used}, kids)
    version = subprocess.run(yosys + ["-V"], capture_output=True, text=True).stdout.strip()
    reps: dict[str, str] = {}                    # key -> the module synthesized for it
    for n in sorted(used, key=lambda n: -len(mods[n])):
        reps.setdefault(keys[n], n)
    root = work / "modules"
    root.mkdir(parents=True, exist_ok=True)

    def job(n):
        d = root / keys[n]
        cmd = command.format(top=n) + ("" if n == top else _SUBMODULE_FLAGS.get(target, ""))
        text = mods[n] + "\n" + "".join(port_stub(c, mods[c]) for c in dict.fromkeys(kids[n]))
        # the key stands for the text up to auto-numbered names, which an edit elsewhere in
        # the design renumbers
        digest = hashlib.sha256("\n".join([version, cmd, keys[n]]).encode()).hexdigest()
        book = d / "done.json"
        if book.exists() and json.loads(book.read_text()).get("digest") == digest:
            return n, json.loads(book.read_text())["seconds"], False
        d.mkdir(exist_ok=True)
        (d / "module.v").write_text(text)
        (d / "synth.ys").write_text(_job_script(n, cmd, target))
        t0 = time.perf_counter()
        proc = subprocess.run(yosys + ["-q", "-l", "yosys.log", "-s", "synth.ys"],
                              capture_output=True, text=True, cwd=d)
        seconds = round(time.perf_counter() - t0, 1)
        if proc.returncode != 0:
            logf = d / "yosys.log"
            raise RuntimeError(f"yosys failed ({proc.returncode}) on module {n} in {d}: " +
                               failure_reason(logf.read_text() if logf.exists() else "",
                                              proc.stderr))
        book.write_text(json.dumps({"module": n, "digest": digest, "seconds": seconds}))
        return n, seconds, True

    order = list(reps.values())                  # the largest first, as filled above
    print(f"nvdla synth: {len(used)} modules, {len(order)} distinct, {jobs} at a time",
          file=sys.stderr)
    seconds, wall0, ran_any = 0.0, time.perf_counter(), 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(job, n) for n in order]
        for i, fut in enumerate(as_completed(futures)):
            n, s, ran = fut.result()
            seconds += s
            ran_any += ran
            if ran:
                print(f"nvdla synth: [{i + 1}/{len(order)}] {n.lstrip(chr(92))} {s} s",
                      file=sys.stderr)

    print(f"nvdla synth: {ran_any} modules synthesized in {time.perf_counter() - wall0:.0f} s "
          f"(wall, {jobs} at a time), {len(order) - ran_any} kept from an earlier run",
          file=sys.stderr)
    stat = {"modules": {}}
    mem_stat = {"modules": {}}
    logs = []
    for n in sorted(used):
        rep = reps[keys[n]]
        d = root / keys[n]
        own = json.loads(strip_json((d / "stat.json").read_text()))["modules"]
        entry = own.get(rep) or own.get("\\" + rep) or {}
        stat["modules"][n] = entry
        pre = json.loads(strip_json((d / "memories.json").read_text()))["modules"]
        mem_stat["modules"][n] = pre.get(rep) or pre.get("\\" + rep) or {}
        log = (d / "yosys.log").read_text()
        logs.append(log if n == rep else log.replace(rep.lstrip("\\"), n.lstrip("\\")))
    return stat, mem_stat, "".join(logs), seconds
