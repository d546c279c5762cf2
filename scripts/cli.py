"""The ``nvdla`` command: one entry point, one module per subcommand.

Each subcommand lives in ``scripts/<name>.py`` and provides ``add_arguments(parser)`` and
``run(args) -> int`` (the exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main"]

COMMANDS = {
    "generate": "write the Verilog of a build, its file list and a report",
    "smoke": "generate a build and run a register-level smoke test on its Verilog",
    "trace": "run NVDLA trace directories on the golden model or the RTL",
    "perf": "estimated layer cycles of traces on a build (analytic model, no RTL)",
    "sweep": "sweep build parameters: estimated cycles, MACs, CBUF and area per build",
    "regs": "write the register documentation of a build",
    "synth": "Yosys synthesis of a build's core: LUTs, FFs, block RAM, DSPs per unit and total",
    "board": "write (and with --build, run) an FPGA board build of the core",
    "congestion": "control sets and router2 congestion of an ECP5 board build, by unit",
    "host": "run NVDLA traces on a board through its serial bridge (pyserial)",
    "uart": "the same as host",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nvdla", description="Open NVDLA core tools")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=f"scripts.{name}")
        importlib.import_module(f"scripts.{name}").add_arguments(p)
    args = parser.parse_args(argv)
    from arch.config import ConfigError
    try:
        return importlib.import_module(args._module).run(args) or 0
    except ConfigError as e:
        print(f"nvdla {args.command}: invalid configuration: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
