"""Build configuration: presets carry the reference values; every rule rejects its bad value
with a message naming the parameter and the rule."""

from __future__ import annotations

import pytest

from arch.config import PRESETS, ConfigError, NvdlaConfig, load_config

from .conftest import ROOT

SMALL = PRESETS["nv_small"]


def test_presets_match_reference_builds():
    s, s256, lg, full = (PRESETS[n] for n in ("nv_small", "nv_small_256", "nv_large", "nv_full"))
    assert (s.atomic_c, s.atomic_k, s.memory_atom, s.cbuf_banks, s.cbuf_bank_width,
            s.cbuf_bank_depth, s.dbbif_width) == (8, 8, 8, 32, 8, 512, 64)
    assert s.cbuf_bytes == 128 * 1024 and s.macs == 64
    assert not (s.sramif or s.bdma or s.rubik or s.winograd or s.weight_compression
                or s.batching or s.sdp_lut or s.sdp_ew)
    assert (s.sdp_bs_throughput, s.sdp_bn_throughput, s.pdp_throughput, s.cdp_throughput) \
        == (1, 1, 1, 1)
    assert (s256.atomic_c, s256.atomic_k, s256.cbuf_bank_width, s256.cbuf_bank_depth) \
        == (32, 8, 32, 128) and s256.cbuf_bytes == 128 * 1024
    assert (lg.atomic_c, lg.atomic_k, lg.memory_atom, lg.cbuf_banks, lg.cbuf_bank_width,
            lg.dbbif_width, lg.dbbif_latency) == (64, 32, 32, 16, 64, 512, 1200)
    assert lg.cbuf_bytes == 512 * 1024
    assert (lg.sdp_bs_throughput, lg.pdp_throughput, lg.cdp_throughput) == (16, 8, 8)
    assert lg.sramif and lg.bdma and lg.rubik and lg.winograd and lg.sdp_lut and lg.sdp_ew
    assert full.data_types == {"int8", "int16", "fp16"}
    assert (full.atomic_c, full.atomic_k, full.cbuf_bytes) == (64, 32, 512 * 1024)
    # NVDLA v1's nv_full counts 128-byte entries, 256 per bank (its C model and its
    # traceplayer tests); the other presets count one bank row
    assert (full.cbuf_entry_bytes, full.cbuf_entry_depth) == (128, 256)
    assert (s.cbuf_entry_bytes, s.cbuf_entry_depth) == (8, 512)
    assert (full.pdp_throughput, full.cdp_throughput, full.register_layout) == (8, 8, "full")
    assert s.register_layout == "small"
    # nv_full's CDMA takes every pixel format of the data-format spec (codes 0x00..0x23);
    # the int8 builds the 8- and 10-bit ones their CFGROM lists
    from arch.config import PACKED_IMAGE_FORMATS, SEMI_PLANAR_IMAGE_FORMATS
    assert len(full.image_packed_formats) + len(full.image_semi_formats) == 36
    assert full.image_packed_formats == set(PACKED_IMAGE_FORMATS)
    assert full.image_semi_formats == set(SEMI_PLANAR_IMAGE_FORMATS)
    assert "R16_F" not in lg.image_packed_formats and lg.image_packed_formats == \
        s.image_packed_formats and len(s.image_packed_formats) + len(s.image_semi_formats) == 17


BAD = [
    ("atomic_c", dict(atomic_c=4), "atomic_c=4: must be a power of two from 8 to 128"),
    ("atomic_c", dict(atomic_c=256), "atomic_c=256"),
    ("atomic_c", dict(atomic_c=24, cbuf_bank_width=24), "atomic_c=24"),
    ("atomic_k", dict(atomic_k=2), "atomic_k=2: must be a power of two from 4 to 32"),
    ("atomic_k", dict(atomic_k=16), "atomic_k=16: must not exceed atomic_c (8)"),
    ("memory_atom", dict(memory_atom=16), "memory_atom=16: must be 8 or 32"),
    ("atomic_k", dict(atomic_c=16, atomic_k=16, cbuf_bank_width=16, cbuf_bank_depth=256),
     "atomic_k=16: must equal memory_atom (8)"),
    ("memory_atom", dict(memory_atom=32), "memory_atom=32: must not exceed atomic_c"),
    ("cbuf_banks", dict(cbuf_banks=3), "cbuf_banks=3: must be a power of two from 2 to 32"),
    ("cbuf_banks", dict(cbuf_banks=64), "cbuf_banks=64"),
    ("cbuf_bank_width", dict(cbuf_bank_width=16),
     "cbuf_bank_width=16: must equal atomic_c x int8 element size = 8"),
    ("cbuf_bank_depth", dict(cbuf_bank_depth=100), "cbuf_bank_depth=100: must be a power"),
    ("cbuf_entry_width", dict(cbuf_entry_width=24), "cbuf_entry_width=24: must be 0"),
    ("cbuf_entry_width", dict(cbuf_entry_width=16), "two-column entries hold Atomic-C 16-bit"),
    ("cbuf_ram_width", dict(cbuf_ram_width=12), "cbuf_ram_width=12: must be 0 (one memory per bank) or a multiple of 8"),
    ("cbuf_ram_width", dict(cbuf_ram_width=24), "divides the bank width of 64 bits"),
    ("cbuf_data_read_regs", dict(cbuf_data_read_regs=3), "cbuf_data_read_regs=3: must be 0, 1 or 2"),
    ("cbuf_write_regs", dict(cbuf_write_regs=2), "cbuf_write_regs=2: must be 0 or 1"),
    ("cbuf_data_read_regs", dict(cbuf_data_read_regs=1, winograd=True),
     "cbuf_data_read_regs=1: must be 0 with winograd"),
    ("cbuf_bank_depth", dict(cbuf_bank_depth=256), "= 2048 bytes must be 4 KiB to 32 KiB"),
    ("cbuf_bank_depth", dict(cbuf_bank_depth=8192), "must be 4 KiB to 32 KiB"),
    ("cbuf_bank_depth", dict(atomic_c=16, atomic_k=8, cbuf_bank_width=16, cbuf_bank_depth=1024),
     "D_ENTRY_PER_SLICE"),
    ("data_types", dict(data_types={"int4"}), "data_types"),
    ("data_types", dict(data_types={"fp16"}), "must include int8"),
    ("max_batch", dict(batching=True, max_batch=64), "max_batch=64: must be 2 to 32"),
    ("max_batch", dict(max_batch=4), "max_batch=4: must be 1 when batching is disabled"),
    ("sdp_bs_throughput", dict(sdp_bs_throughput=3), "sdp_bs_throughput=3"),
    ("sdp_bn_throughput", dict(sdp_bn=False), "sdp_bn_throughput=1: must be 0 when"),
    ("sdp_ew_throughput", dict(sdp_ew=True), "sdp_ew_throughput=0: must be a power of two"),
    ("sdp_lut", dict(sdp_lut=True), "sdp_lut=True: the LUT is part of the SDP element-wise"),
    ("pdp_throughput", dict(pdp_throughput=3), "pdp_throughput=3: must be 0"),
    ("cdp_throughput", dict(cdp_throughput=16), "cdp_throughput=16"),
    ("cdp_throughput", dict(cdp_throughput=8, data_types={"int8", "int16"}),
     "cdp_throughput=8: must be at most memory_atom / 2 = 4 with int16"),
    ("bdma", dict(bdma=True), "bdma=True: BDMA copies between the DBBIF and the SRAMIF"),
    ("image_packed_formats", dict(image_packed_formats={"RGB565"}), "unknown formats"),
    ("image_semi_formats", dict(image_semi_formats={"NV12"}), "unknown formats"),
    ("image_packed_formats", dict(image_packed_formats={"R8", "R16_F"}),
     "R16_F: fp16 pixels are processed in fp16 only"),
    ("dbbif_width", dict(dbbif_width=48), "dbbif_width=48: must be 32, 64"),
    ("sramif_width", dict(sramif_width=1024), "sramif_width=1024"),
    ("address_width", dict(address_width=40), "address_width=40: must be 32 or 64"),
    ("max_burst_length", dict(max_burst_length=17), "max_burst_length=17: must be 1 to 16"),
    ("outstanding", dict(outstanding=0), "outstanding=0: must be 1 to 256"),
    ("outstanding", dict(outstanding=257), "outstanding=257"),
    ("dbbif_latency", dict(dbbif_latency=0), "dbbif_latency=0"),
    ("sramif_latency", dict(sramif_latency=70000), "sramif_latency=70000"),
    ("register_layout", dict(register_layout="huge"), "register_layout='huge'"),
    ("register_layout", dict(register_layout="full"), "needs memory_atom = 32"),
    ("register_layout", dict(register_layout="full", atomic_c=32, cbuf_bank_width=32,
                             cbuf_bank_depth=128, memory_atom=32, atomic_k=32),
     "needs cbuf_banks <= 16"),
    ("winograd", dict(winograd=1), "winograd=1: must be true or false"),
    ("atomic_c", dict(atomic_c=8.0), "atomic_c=8.0: must be an integer"),
]


@pytest.mark.parametrize("param,changes,message", BAD, ids=[f"{b[0]}-{i}" for i, b in
                                                            enumerate(BAD)])
def test_rule_rejects(param, changes, message):
    with pytest.raises(ConfigError) as e:
        SMALL.replace(**changes)
    assert param in str(e.value) and message in str(e.value), str(e.value)


def test_every_rule_parameter_is_tested():
    tested = {b[0] for b in BAD}
    import inspect
    from arch import config
    src = inspect.getsource(config.NvdlaConfig._validate)
    import re
    named = set(re.findall(r'err\("(\w+)"', src))
    assert named <= tested, f"rules without a test: {named - tested}"


def test_toml_overrides(tmp_path):
    p = tmp_path / "wide.toml"
    p.write_text('base = "nv_small"\ndbbif_width = 128\noutstanding = 32\n')
    cfg = load_config(p)
    assert (cfg.name, cfg.dbbif_width, cfg.outstanding, cfg.atomic_c) == ("wide", 128, 32, 8)
    p.write_text('base = "nv_small"\natomic_kk = 4\n')
    with pytest.raises(ConfigError, match="unknown build parameter 'atomic_kk'"):
        load_config(p)
    p.write_text('base = "nv_small"\natomic_c = 12\n')
    with pytest.raises(ConfigError, match="atomic_c=12"):
        load_config(p)
    p.write_text('base = "nv_huge"\n')
    with pytest.raises(ConfigError, match="unknown preset 'nv_huge'"):
        load_config(p)
    p.write_text("base = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(p)
    with pytest.raises(ConfigError, match="neither a preset"):
        load_config(tmp_path / "missing.toml")


def test_shipped_configs_load():
    """Every TOML of ``configs/`` is a valid build; nv_small_conv is nv_small less PDP and CDP,
    with the CBUF's 16-bit lanes and data register (the routed ECP5-85F board build)."""
    files = sorted((ROOT / "configs").glob("*.toml"))
    assert files
    cfgs = {f.stem: load_config(f) for f in files}
    conv = cfgs["nv_small_conv"]
    assert (conv.pdp, conv.cdp) == (False, False)
    assert conv.replace(name="nv_small", pdp_throughput=1, cdp_throughput=1, cbuf_ram_width=0,
                        cbuf_data_read_regs=0) == SMALL
    half = cfgs["nv_small_conv_cbuf16"]                 # the same with half the CBUF
    assert half == conv.replace(name=half.name, cbuf_banks=16)


def test_frozen():
    with pytest.raises(Exception):
        SMALL.atomic_c = 16
    assert NvdlaConfig() == NvdlaConfig()
