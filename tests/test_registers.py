"""Register table facts against NVDLA's JSON, and the register plane of the generated Verilog
under cocotb for every preset (both register layouts)."""

from __future__ import annotations

import json

import pytest

from arch.config import PRESETS
from arch.registers import all_blocks, register_map

from .conftest import NV_FULL_LAYOUT, NV_LARGE_LAYOUT, SHARED

REG_JSON = SHARED / "nvdla" / "registers"


def _json(layout):
    path = REG_JSON / f"nv_{layout}.json"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return json.loads(path.read_text())["blocks"]


_ACCESS = {"rw": ("rw", "r"), "w": ("w", "r"), "ro": ("r", "w"), "const": ("r", "r"),
           "w1c": ("rw", "r")}


@pytest.mark.parametrize("layout", ["full", "small"])
def test_table_matches_nvdla_json(layout):
    """Every block, register, offset, field (bits, access, reset, enum) of both layouts."""
    ref = _json(layout)
    mine = all_blocks(layout)
    if layout == "small":
        mine["CFGROM"] = register_map(PRESETS["nv_small"])["CFGROM"]
    assert sorted(f"NVDLA_{n}" for n in mine) == sorted(ref)
    count = 0
    for name, block in mine.items():
        rb = ref[f"NVDLA_{name}"]
        assert block.base == rb["base"], name
        ref_regs = {r["name"]: r for r in rb["registers"]}
        assert [r.name for r in block.registers] == \
            [r["name"] for r in sorted(rb["registers"], key=lambda r: r["offset"])]
        for reg in block.registers:
            rr = ref_regs[reg.name]
            assert reg.offset == rr["offset"] and reg.group == rr["group"], reg.name
            assert len(reg.fields) == len(rr["fields"]), reg.name
            for f, rf in zip(reg.fields, rr["fields"]):
                where = f"{name}.{reg.name}.{f.name}"
                assert (f.name, f.msb, f.lsb, f.reset) == \
                    (rf["name"], rf["msb"], rf["lsb"], rf["reset"]), where
                assert dict(f.enum) == rf.get("enum", {}), where
                if name == "CFGROM":          # constants; NVDLA marks some hw-written
                    assert (f.access, rf["sw"]) == ("const", "r"), where
                elif "sw" in rf:
                    assert _ACCESS[f.access] == (rf["sw"], rf["hw"]), where
                count += 1
    assert count > 1000


def test_name_lookup():
    rmap = register_map(PRESETS["nv_small"])
    assert rmap.address("NVDLA_SDP.D_OP_ENABLE_0") == 0x9000 + rmap["SDP"]["D_OP_ENABLE"].offset
    assert rmap.address("GLB.S_INTR_STATUS") == 0x100C
    full = register_map(PRESETS["nv_full"])
    assert full.address("NVDLA_GLB.S_INTR_STATUS_0") == 0xC
    with pytest.raises(KeyError, match="no register"):
        rmap.lookup("NVDLA_SDP.D_NOPE_0")
    with pytest.raises(KeyError, match="no block 'BDMA'"):
        rmap.lookup("NVDLA_BDMA.CFG_LINE_0")        # nv_small has no BDMA


def test_field_widths_follow_layout():
    small = register_map(PRESETS["nv_small"])
    full = register_map(PRESETS["nv_full"])
    f_small = small["SDP"]["D_DST_BASE_ADDR_LOW"]["DST_BASE_ADDR_LOW"]
    f_full = full["SDP"]["D_DST_BASE_ADDR_LOW"]["DST_BASE_ADDR_LOW"]
    assert (f_small.lsb, f_full.lsb) == (0, 5)
    assert small["CDMA"]["D_BANK"]["DATA_BANK"].width == 5
    assert full["CDMA"]["D_BANK"]["DATA_BANK"].width == 4


def test_cfgrom_describes_the_build():
    big = register_map(PRESETS["nv_large"])["CFGROM"]
    assert big.registers[-1].name == "CFGROM_END_OF_LIST"
    val = {r.name: r.reset for r in big.registers}
    assert val["CFGROM_CDMA_BASE_ATOMIC_C"] == 64 and val["CFGROM_CDMA_BASE_ATOMIC_K"] == 32
    assert val["CFGROM_CDMA_BASE_CBUF_BANK_NUM"] == 16
    assert val["CFGROM_CDMA_MULTI_BATCH_MAX"] == 32
    assert val["CFGROM_CIF1_CAP_COMPAT"] == 1          # the SRAMIF descriptor
    assert val["CFGROM_SDP_CAP_COMPAT"] == 0x3F
    assert val["CFGROM_BDMA_DESC"] & 0xFFFF == 14 and val["CFGROM_RUBIK_DESC"] & 0xFFFF == 15
    no_pdp = register_map(PRESETS["nv_small"].replace(name="x", pdp_throughput=0))["CFGROM"]
    assert not any(r.name.startswith("CFGROM_PDP") for r in no_pdp.registers)


# -- RTL -------------------------------------------------------------------------------------

RTL_TESTS = ["reset_values", "read_write_masks", "pingpong_groups", "interrupts",
             "csb_order_and_throughput"]


#: the builds of the register-plane test: nv_small and nv_small_256; nv_large and nv_full in the
#: slow suite (their cores take minutes to elaborate) and their register maps on small
#: datapaths in the default one (tests/conftest.py NV_LARGE_LAYOUT, NV_FULL_LAYOUT)
_LAYOUT_OF = {NV_LARGE_LAYOUT.name: "nv_large", NV_FULL_LAYOUT.name: "nv_full"}
_PLANE_BUILDS = [pytest.param(PRESETS[p], marks=pytest.mark.slow) if p in _LAYOUT_OF.values()
                 else PRESETS[p] for p in PRESETS] + \
    [NV_LARGE_LAYOUT, pytest.param(NV_FULL_LAYOUT, marks=pytest.mark.slow)]


def _map_shape(cfg):
    """Every block, register, offset and field of ``cfg``'s map with the reset values of its
    writable fields: all but the CFGROM constants, which describe the datapath."""
    return [(b.name, b.base, [(r.name, r.offset, [(f.name, f.msb, f.lsb, f.access)
                                                  + (() if f.access == "const" else (f.reset,))
                                                  for f in r.fields]) for r in b.registers])
            for b in register_map(cfg)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg", _PLANE_BUILDS, ids=lambda c: c.name)
def test_register_plane_rtl(cfg):
    """On the simulator SIM selects (Icarus by default)."""
    from tb.runner import run_cocotb
    if cfg.name in _LAYOUT_OF:
        assert _map_shape(cfg) == _map_shape(PRESETS[_LAYOUT_OF[cfg.name]])
    assert run_cocotb(cfg, "tb.cocotb_regs") == len(RTL_TESTS)


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("preset", ["nv_small", "nv_full"])
def test_register_plane_verilator(preset):
    """Both register layouts on Verilator too (a Verilator build takes about a minute)."""
    from tb.runner import run_cocotb, simulator
    if simulator() == "verilator":
        pytest.skip("already covered by test_register_plane_rtl under SIM=verilator")
    assert run_cocotb(PRESETS[preset], "tb.cocotb_regs", sim="verilator") == len(RTL_TESTS)
