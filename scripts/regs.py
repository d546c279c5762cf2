"""``nvdla regs``: register documentation of a build (Markdown), from the register table."""

from __future__ import annotations

from pathlib import Path

from arch.config import load_config
from arch.registers import register_map

__all__ = ["add_arguments", "run", "markdown"]

_ACCESS = {"rw": "RW", "w": "W (pulse, reads 0)", "ro": "RO (hardware)", "const": "RO const",
           "w1c": "RW1C"}


def add_arguments(p):
    p.add_argument("--config", default="nv_small", help="preset name or TOML file")
    p.add_argument("--out", default=None, help="file to write (default: stdout)")


def markdown(cfg) -> str:
    rmap = register_map(cfg)
    out = [f"# Registers of {cfg.name} ({rmap.layout} layout)", ""]
    out += ["| block | base | registers |", "|---|---|---|"]
    out += [f"| {b.name} | `{b.base:#07x}` | {len(b.registers)} |" for b in rmap]
    for b in rmap:
        out += ["", f"## {b.name} (`{b.base:#07x}`)", "",
                "| address | register | group | field | bits | access | reset | values |",
                "|---|---|---|---|---|---|---|---|"]
        for r in b.registers:
            for i, f in enumerate(r.fields):
                bits = f"{f.msb}" if f.msb == f.lsb else f"{f.msb}:{f.lsb}"
                enum = ", ".join(f"{n}={v}" for n, v in f.enum)
                head = (f"`{b.base + r.offset:#07x}` | {r.name} | {r.group}" if i == 0
                        else " | | ")
                out.append(f"| {head} | {f.name} | {bits} | {_ACCESS[f.access]} | "
                           f"`{f.reset:#x}` | {enum} |")
    return "\n".join(out) + "\n"


def run(args):
    text = markdown(load_config(args.config))
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0
