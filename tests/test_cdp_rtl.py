"""The CDP on the generated core, on the playback engine (:mod:`tb.playback`, Verilator):

- NVDLA's 19 public cdp_* traces (nv_small, one batch under random AXI back-pressure), each
  checked by its CRCs, plus a program the unit's checks reject (int16 input on an int8 build),
  which must complete without touching memory, and one trace rerun with polls of its counters
  afterwards;
- constrained-random CDP programs (:mod:`sim.cdp.random_programs`: every window, both bypasses,
  LE linear/exponent, priorities, random LUTs loaded over the CSB, values that hit
  interpolation, underflow and overflow) written as traces with golden CRCs and guard bands:
  300 on nv_small, 50 on a build with CDP throughput 8 and a 512-bit DBBIF, 240 on nv_small
  with int16 and 60 on that build with CDP throughput 4 (int8 and int16 layers mixed, also
  within the ping-pong pairs: the precision is chosen per layer), RTL against the golden model
  bit for bit under random back-pressure and latency;
- the invalid programs of ``write_invalid_traces`` on nv_small, and its int8 and int16 ones on
  nv_small with int16: the RTL ends each layer and writes nothing outside the programmed output
  (the guard bands' CRCs).
"""

from __future__ import annotations

import os
import re
import shutil
import zlib

import pytest

from arch.config import NvdlaConfig
from sim.cdp.program import INT16
from sim.cdp.random_programs import write_random_traces, write_invalid_traces

from .conftest import NV_SMALL_INT16, TRACES, assert_all_pass, playback
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
#: CDP (and PDP) throughput 8 with a 512-bit DBBIF, nv_small-sized otherwise: the same build as
#: tests/test_pdp_rtl.py's, so the two suites share one playback build.
NV_SMALL_T8 = NV_SMALL.replace(name="nv_small_t8", pdp_throughput=8, cdp_throughput=8,
                               dbbif_width=512)
#: nv_small with int16 (the build tests/test_pdp_rtl.py's int16 suite uses too)
#: and with CDP throughput 4: an int16 atom is one transfer of 4 lanes
NV_SMALL_T4_INT16 = NV_SMALL_INT16.replace(name="nv_small_t4_int16", cdp_throughput=4)


_rtl = playback
_check = assert_all_pass
CDP_DIR = TRACES / "nv_small"


def _names():
    if not CDP_DIR.is_dir():
        return []
    return sorted(n for n in os.listdir(CDP_DIR) if n.startswith("cdp_"))


_REJECTED = """
mem_init(pri_mem, 0x80000000, 0x100, ALL_ZERO);
reg_write(NVDLA_CDP.D_DATA_FORMAT_0, 0x1);
reg_write(NVDLA_CDP.D_DST_BASE_ADDR_LOW_0, 0x80000040);
reg_write(NVDLA_CDP_RDMA.D_SRC_BASE_ADDR_LOW_0, 0x80000000);
reg_write(NVDLA_CDP_RDMA.D_DATA_FORMAT_0, 0x1);
reg_write(NVDLA_CDP_RDMA.D_SRC_DMA_CFG_0, 0x1);
reg_write(NVDLA_CDP.D_DST_DMA_CFG_0, 0x1);
reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_CDP_RDMA.D_OP_ENABLE_0, 0x1);
intr_notify(CDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000000, 0x100, {crc:#x});
"""


# cdp_8x8x64_lrn3_int8_10 (PERF_ENABLE.LUT_EN on) and its counters, as the naive reference
# of tests/test_cdp.py counts them on that trace's data
_COUNTED = "cdp_8x8x64_lrn3_int8_10"
_COUNTS = {"D_PERF_LUT_UFLOW": 804, "D_PERF_LUT_OFLOW": 4, "D_PERF_LUT_HYBRID": 2314,
           "D_PERF_LUT_LE_HIT": 938, "D_PERF_LUT_LO_HIT": 36, "D_OUT_SATURATION": 2339}


def _counters_trace(tmp_path):
    src = CDP_DIR / _COUNTED
    d = tmp_path / "cdp_counters"
    d.mkdir()
    for f in os.listdir(src):
        if f.endswith(".dat"):
            shutil.copy(src / f, d / f)
    text = (src / f"{_COUNTED}.cfg").read_text()
    text += "".join(f"poll_reg_equal(NVDLA_CDP.{reg}_0, {v:#x});\n"
                    for reg, v in _COUNTS.items())
    (d / "cdp_counters.cfg").write_text(text)
    return d


@pytest.mark.rtl
def test_public_cdp_traces_rtl(tmp_path):
    names = _names()
    if not names:
        pytest.skip(f"public traces not found at {CDP_DIR}")
    assert len(names) == 19
    rejected = make_trace(tmp_path, _REJECTED.format(crc=zlib.crc32(bytes(0x100))),
                          "cdp_rejected_int16")
    extra = [str(rejected), str(_counters_trace(tmp_path))]
    _check(_rtl([str(CDP_DIR / n) for n in names] + extra, NV_SMALL, max_cycles=200_000),
           len(names) + len(extra))


#: nv_small with fp16 beside int8 (tests/test_pdp_fp16_rtl.py's build)
NV_SMALL_FP16 = NV_SMALL.replace(name="nv_small_fp16", data_types=frozenset({"int8", "fp16"}))


@pytest.mark.rtl
def test_fp16_cdp_rejected_by_rtl(tmp_path):
    """An fp16 CDP layer on a build with fp16: the golden model runs it (it writes its
    output, so the trace's all-zero CRC fails there), this core's CDP RTL rejects it
    (:func:`sim.cdp.check_core_limits` names the rule): the layer ends and memory stays
    zero."""
    from arch.registers import register_map
    from sim.cdp import CdpProgramError, check_core_limits, decode
    from sim.random_traces import run_trace_golden
    from sim.regs import GroupView
    text = _REJECTED.replace("D_DATA_FORMAT_0, 0x1)", "D_DATA_FORMAT_0, 0x2)")
    assert text.count("D_DATA_FORMAT_0, 0x2)") == 2
    zero = make_trace(tmp_path, text.format(crc=zlib.crc32(bytes(0x100))), "cdp_rejected_fp16")
    res = run_trace_golden(str(zero), NV_SMALL_FP16)
    assert not res.passed and "crc" in res.message.lower(), res.message
    rmap = register_map(NV_SMALL_FP16)
    prog = decode(NV_SMALL_FP16,                          # the trace's layer: MC, 1 x 1 x 1
                  GroupView(rmap["CDP_RDMA"], {"D_DATA_FORMAT": 2, "D_SRC_DMA_CFG": 1}),
                  GroupView(rmap["CDP"], {"D_DATA_FORMAT": 2, "D_DST_DMA_CFG": 1}))
    with pytest.raises(CdpProgramError, match="INPUT_DATA=FP16: no fp16 LRN"):
        check_core_limits(NV_SMALL_FP16, prog)
    _check(_rtl([str(zero)], NV_SMALL_FP16, max_cycles=100_000), 1)


SHARDS = [(NV_SMALL, seed, 100) for seed in range(3)] + [(NV_SMALL_T8, 100, 50)] + \
    [(NV_SMALL_INT16, seed, 120) for seed in (200, 201)] + [(NV_SMALL_T4_INT16, 300, 60)]


def _shard_id(cfg, seed):
    return f"{cfg.name}{'-int16' if 'int16' in cfg.data_types else ''}-seed{seed}"


def _int16_layers(path):
    """How many layers of a random trace are int16 (its CDP_RDMA D_DATA_FORMAT writes)."""
    name = os.path.basename(path)
    text = open(os.path.join(path, f"{name}.cfg")).read()
    return sum(int(v, 16) & 3 == INT16 for v in
               re.findall(r"NVDLA_CDP_RDMA\.D_DATA_FORMAT_0, (0x[0-9a-f]+)", text))


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS,
                         ids=[_shard_id(c, s) for c, s, _ in SHARDS])
def test_random_cdp_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed)
    if "int16" in cfg.data_types:
        assert sum(_int16_layers(p) for p in paths) >= count * 5 // 12     # of 1.25 x count
    _check(_rtl(paths, cfg, max_cycles=400_000, seed=seed, busy=0.3, latency=(1, 24)), count)


INVALID = [(NV_SMALL, 0), (NV_SMALL_INT16, 0), (NV_SMALL_INT16, INT16)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, prec", INVALID,
                         ids=[f"{_shard_id(c, 0)[:-6]}-{'int16' if p else 'int8'}"
                              for c, p in INVALID])
def test_invalid_cdp_programs_rtl_finish_and_write_nothing_outside(tmp_path, cfg, prec):
    made = write_invalid_traces(cfg, str(tmp_path), prec=prec)
    assert len(made) >= 8
    _check(_rtl([p for p, _ in made], cfg, max_cycles=200_000), len(made))
