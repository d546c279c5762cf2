"""tb.runner's build cache: a cached build's Verilog comes from the sources its key names.

The bug this guards against: a long-lived process (a pytest session) that imported ``hw`` before
someone edited it generated the core's Verilog from its old modules and filed it under the
edited sources' digest; every later Icarus run of those sources reused that core (one without
the newly integrated convolution pipeline: conv traces timed out with no DMA traffic).
"""

from __future__ import annotations

import pytest

from arch.config import NvdlaConfig
from tb import runner

CFG = NvdlaConfig.preset("nv_small")


def _capture(monkeypatch, tmp_path):
    """Build into ``tmp_path`` without a simulator: the compiles go to the returned list."""
    monkeypatch.setattr(runner, "BUILD", tmp_path)
    made = []

    def compile_(sim, bdir, top_name, text, digest):
        made.append((bdir, text, digest))
        (bdir / ".built").write_text(f"ok {digest}\n")

    monkeypatch.setattr(runner, "_compile", compile_)
    return made


def test_build_is_filed_under_the_sources_it_came_from(monkeypatch, tmp_path):
    made = _capture(monkeypatch, tmp_path)
    # the sources change between taking the key and generating the Verilog
    monkeypatch.setattr(runner, "_source_digest", lambda: "aaaaaaaa")
    monkeypatch.setattr(runner, "_fresh_core_verilog",
                        lambda cfg, name: (f"module {name}; endmodule\n", "bbbbbbbb"))
    bdir = runner._build(CFG, "icarus", "nvdla_core")
    assert bdir == runner.build_dir(CFG, "icarus", "bbbbbbbb") / "nvdla_core"
    assert [(b, d) for b, _, d in made] == [(bdir, "bbbbbbbb")]
    assert not (runner.build_dir(CFG, "icarus", "aaaaaaaa") / "nvdla_core" / ".built").exists()
    # a later run of those sources reuses the build
    monkeypatch.setattr(runner, "_source_digest", lambda: "bbbbbbbb")
    assert runner._build(CFG, "icarus", "nvdla_core") == bdir
    assert len(made) == 1


@pytest.mark.rtl
def test_core_verilog_comes_from_the_files_not_this_process(monkeypatch, tmp_path):
    """Generating the core ignores the modules this process holds (here a stand-in
    NvdlaCore, as if imported before an edit): a new interpreter reads the files."""
    import hw.core

    def stale(cfg):
        raise AssertionError("the Verilog was generated from this process's hw.core")

    monkeypatch.setattr(hw.core, "NvdlaCore", stale)
    made = _capture(monkeypatch, tmp_path)
    bdir = runner._build(CFG, "icarus", "nvdla_core")
    [(b, text, digest)] = made
    assert b == bdir == runner.build_dir(CFG, "icarus", digest) / "nvdla_core"
    assert "module \\nvdla_core.conv " in text and "module \\nvdla_core.conv.cdma " in text
