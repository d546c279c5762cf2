"""The Rubik unit on the generated core (playback engine, Verilator, random AXI back-pressure:
30 % busy, latency 1-24 cycles), RTL against the golden model (:mod:`sim.rubik`) bit for bit,
on the shared extended build ``NV_SMALL_EXT`` (nv_small + SRAMIF + SDP EW/LUT + BDMA + Rubik:
int8, 8-byte atoms, MC and CV memories):

* constrained-random programs of ``sim.rubik.random_programs.write_random_traces`` (contract,
  split and merge; MC / CV on either side; padded strides; two-layer ping-pong traces): a
  default shard of 40 and a slow shard of 160;
* every invalid program of the golden model's list (``write_invalid_traces``): the golden
  model names the field, the RTL finishes the layer with its interrupt and writes nothing
  (the output window, guard bands included, keeps its zero CRC);
* the program check alone (:class:`hw.rubik.RubikCheck`, Amaranth simulator, no Verilator)
  against :func:`sim.rubik.program.decode` on random valid layers with 0-3 random field
  mutations biased to the rules' boundaries (NV_SMALL_EXT and nv_full: int16 / fp16, 32-byte
  atoms, 64-bit addresses): it rejects exactly the programs the golden model rejects.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from amaranth.sim import Simulator

from arch.config import NvdlaConfig
from arch.registers import register_map
from hw.regfile import fields_layout
from hw.rubik import CHECK_LATENCY, RubikCheck
from sim.regs import GroupView
from sim.rubik import RubikProgramError, decode
from sim.rubik.random_programs import (random_layer, run_trace_golden, write_invalid_traces,
                                       write_random_traces)

from .conftest import NV_SMALL_EXT, assert_all_pass, playback

CFG = NV_SMALL_EXT
_OPTS = dict(busy=0.3, latency=(1, 24))


def _coverage(paths):
    """``(modes, input RAM types, output RAM types)`` the traces' RBK layers use."""
    modes, rin, rout = set(), set(), set()
    for p in paths:
        for f in Path(p).glob("*.cfg"):
            text = f.read_text()
            modes |= {int(v, 16) & 3 for v in
                      re.findall(r"NVDLA_RBK\.D_MISC_CFG_0, (0x[0-9a-fA-F]+)", text)}
            rin |= {int(v, 16) & 1 for v in
                    re.findall(r"NVDLA_RBK\.D_DAIN_RAM_TYPE_0, (0x[0-9a-fA-F]+)", text)}
            rout |= {int(v, 16) & 1 for v in
                     re.findall(r"NVDLA_RBK\.D_DAOUT_RAM_TYPE_0, (0x[0-9a-fA-F]+)", text)}
    return modes, rin, rout


def _random(tmp_path, seed, count):
    paths = write_random_traces(CFG, str(tmp_path), count, seed=seed)
    modes, rin, rout = _coverage(paths)
    assert modes == {0, 1, 2} and rin == {0, 1} and rout == {0, 1}, (modes, rin, rout)
    res = playback(paths, CFG, max_cycles=2_000_000, seed=seed, **_OPTS)
    assert_all_pass(res, len(paths))


@pytest.mark.rtl
def test_random_rubik_programs_rtl_matches_golden(tmp_path):
    """40 random programs, all three modes, MC and CV input and output."""
    _random(tmp_path, seed=11, count=40)


@pytest.mark.rtl
@pytest.mark.slow
def test_random_rubik_programs_rtl_matches_golden_slow(tmp_path):
    """160 more random programs."""
    _random(tmp_path, seed=1011, count=160)


@pytest.mark.rtl
def test_invalid_rubik_programs_finish_without_writing(tmp_path):
    invalid = write_invalid_traces(CFG, str(tmp_path))
    assert len(invalid) >= 13
    for path, fld in invalid:               # the golden model names the field
        res = run_trace_golden(path, CFG)
        assert not res.passed and fld in res.message, (path, fld, res.message)
    paths = [p for p, _ in invalid]
    assert_all_pass(playback(paths, CFG, max_cycles=200_000, seed=3, **_OPTS), len(paths))


# -----------------------------------------------------------------------------------------
# The program check against the golden decode
# -----------------------------------------------------------------------------------------
_SKIP = {"OP_EN", "PERF_EN"}


def _mutate(block, words, rng):
    """Set one random rw field of ``words`` to a value near its old one, near its ends, or
    random."""
    if rng.random() < 0.1:              # the output next to (or over) the input
        if "D_DAIN_ADDR_LOW" in words:
            words["D_DAOUT_ADDR_HIGH"] = words.get("D_DAIN_ADDR_HIGH", 0)
            words["D_DAOUT_ADDR_LOW"] = (words["D_DAIN_ADDR_LOW"]
                                         + 32 * int(rng.integers(-300, 300))) % (1 << 32)
            return
    fields = [(r, f) for r in block.d_registers for f in r.fields
              if f.access == "rw" and f.name not in _SKIP]
    reg, f = fields[rng.integers(len(fields))]
    width = f.msb - f.lsb + 1
    word = words.get(reg.name, reg.reset)
    old = (word >> f.lsb) & ((1 << width) - 1)
    pick = rng.random()
    if pick < 0.45:
        new = old + int(rng.integers(-3, 4))
    elif pick < 0.6:
        new = (1 << width) - 1 - int(rng.integers(0, 4))
    elif pick < 0.7:
        new = int(rng.integers(0, 4))
    elif pick < 0.85 and "ADDR" in f.name:
        new = old + int(rng.integers(-64, 65)) * 8          # move a base by -64..64 KiB-ish
    else:
        new = int(rng.integers(0, 1 << min(width, 62)))
    new %= 1 << width
    words[reg.name] = (word & ~(((1 << width) - 1) << f.lsb)) | (new << f.lsb)


def _pack(layout, block, words):
    """The ``fields_layout`` value of the register words."""
    value = 0
    for reg in block.d_registers:
        if reg.name not in layout.members:
            continue
        inner = layout.members[reg.name]
        base = layout[reg.name].offset
        for f in reg.fields:
            if f.name in inner.members:
                width = f.msb - f.lsb + 1
                v = (words.get(reg.name, reg.reset) >> f.lsb) & ((1 << width) - 1)
                value |= v << (base + inner[f.name].offset)
    return value


@pytest.mark.parametrize("cfg", [NV_SMALL_EXT, NvdlaConfig.preset("nv_full")],
                         ids=["nv_small_ext", "nv_full"])
def test_check_rejects_exactly_the_golden_rejects(cfg):
    rng = np.random.default_rng(7)
    block = register_map(cfg)["RBK"]
    layout = fields_layout(block.d_registers, ("rw",))
    programs = []
    for _ in range(1000):
        words = dict(random_layer(cfg, rng, max_bytes=4000)["regs"]["RBK"])
        for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
            _mutate(block, words, rng)
        try:
            decode(cfg, GroupView(block, words))
            ok = True
        except RubikProgramError:
            ok = False
        programs.append((words, ok))
    assert 200 < sum(ok for _, ok in programs) < 800           # both kinds well represented
    dut = RubikCheck(cfg)
    got = []

    async def bench(ctx):
        for words, _ in programs:
            ctx.set(dut.regs.as_value(), _pack(layout, block, words))
            await ctx.tick().repeat(CHECK_LATENCY)
            got.append(not ctx.get(dut.reject))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    bad = [(i, ok) for i, ((_, ok), g) in enumerate(zip(programs, got)) if ok != g]
    assert not bad, f"{len(bad)} of {len(programs)} differ (index, golden ok): {bad[:10]}"
