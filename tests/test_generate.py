"""``nvdla generate`` for every preset: Verilog with the spec's port names, a file list and a
report, and no Verilator lint errors."""

from __future__ import annotations

import pytest

from arch.config import PRESETS
from scripts.cli import main
from scripts.generate import lint

SPEC_PORTS = ["csb2nvdla_valid", "csb2nvdla_ready", "csb2nvdla_addr", "csb2nvdla_wdat",
              "csb2nvdla_write", "csb2nvdla_nposted", "nvdla2csb_valid", "nvdla2csb_data",
              "nvdla2csb_wr_complete", "nvdla2core_interrupt", "clk", "rst"]


#: presets whose Verilog the RTL suites generate anyway (nv_small_256's playback build; nv_large
#: and nv_full take minutes to elaborate: about 3.5 and 2.5 min on the CI machine): it is
#: checked and linted from tb.runner.core_verilog's cache (the same NvdlaCore emitted as
#: nvdla_core) instead of elaborating the core a second time; the command itself is run on
#: nv_small
_SHARED = {"nv_small_256", "nv_large", "nv_full"}


#: nv_full's lint alone takes about 1.5 min (its Verilog is 15 MB), nv_large's generation and
#: lint about 4.5 min on the 2-core CI machine: the slow suite runs them (the default suite
#: still generates and simulates nv_large's core, and nv_full's register layout as
#: nv_full_layout, in tests/test_registers.py)
_SLOW_LINT = {"nv_full", "nv_large"}


@pytest.mark.parametrize("preset", [pytest.param(p, marks=pytest.mark.slow) if p in _SLOW_LINT
                                    else p for p in PRESETS])
def test_generate_and_lint(preset, tmp_path):
    cfg = PRESETS[preset]
    if preset in _SHARED:
        from tb.runner import core_verilog
        vpath = core_verilog(cfg)[0]
    else:
        assert main(["generate", "--config", preset, "--out", str(tmp_path)]) == 0
        vpath = tmp_path / "nvdla_core.v"
        assert (tmp_path / "files.f").read_text().strip().endswith("nvdla_core.v")
        assert f"nvdla_core for {preset}" in (tmp_path / "report.txt").read_text()
    text = vpath.read_text()
    assert "module nvdla_core(" in text
    header = text[text.index("module nvdla_core("):]
    header = header[:header.index(");")]
    for port in SPEC_PORTS:
        assert port in header, port
    for ch, sig, width in (("ar", "araddr", cfg.address_width), ("w", "wdata", cfg.dbbif_width),
                           ("w", "wstrb", cfg.dbbif_width // 8), ("r", "rdata", cfg.dbbif_width)):
        assert f"nvdla_core2dbb_{ch}_{sig}" in header
        decl = f"[{width - 1}:0] nvdla_core2dbb_{ch}_{sig}"
        assert decl in text, decl
    assert ("nvdla_core2sram_ar_arvalid" in header) == cfg.sramif
    ok, errors, _ = lint(vpath)
    assert ok, errors[:10]


def test_generate_rejects_bad_config(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "nv_small"\ncbuf_bank_width = 16\n')
    assert main(["generate", "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "cbuf_bank_width=16" in capsys.readouterr().err
