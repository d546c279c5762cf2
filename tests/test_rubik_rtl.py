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
* the unit alone (Amaranth simulator, port-level DMA model of tests/test_cube.py) on nv_full
  (int16; int8 and fp16 in the slow suite; 32-byte atoms, two per word) and nv_small with
  int16: two random layers of each mode leave the memory exactly as the golden model does;
* the program check alone (:class:`hw.rubik.RubikCheck`, Amaranth simulator, no Verilator)
  against :func:`sim.rubik.program.decode` on random valid layers with 0-3 random field
  mutations biased to the rules' boundaries (NV_SMALL_EXT and nv_full: int16 / fp16, 32-byte
  atoms, 64-bit addresses): it rejects exactly the programs the golden model rejects.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from amaranth.sim import Simulator

from arch.config import NvdlaConfig
from arch.registers import register_map
from hw.mem.dma import DmaGeometry
from hw.regfile import fields_layout
from hw.rubik import CHECK_LATENCY, Rubik, RubikCheck
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.rubik import RubikProgramError, decode, run_program
from sim.random_traces import Regs
from sim.rubik.program import CONTRACT, ELEMENT_BYTES
from sim.rubik.random_programs import (random_layer, rubik_layer, run_trace_golden,
                                       write_invalid_traces, write_random_traces)

from .conftest import NV_SMALL_EXT, assert_all_pass, pack_fields, playback
from .test_cube import MEM, ReadModel, WriteModel, run

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
@pytest.mark.parametrize("seed", [1011, 1012])
def test_random_rubik_programs_rtl_matches_golden_slow(tmp_path, seed):
    """150 more random programs per seed."""
    _random(tmp_path, seed=seed, count=150)


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
            ctx.set(dut.regs.as_value(), pack_fields(layout, block, words))
            await ctx.tick().repeat(CHECK_LATENCY)
            got.append(not ctx.get(dut.reject))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    bad = [(i, ok) for i, ((_, ok), g) in enumerate(zip(programs, got)) if ok != g]
    assert not bad, f"{len(bad)} of {len(programs)} differ (index, golden ok): {bad[:10]}"


# -----------------------------------------------------------------------------------------
# The unit alone (Amaranth simulator): 2-byte elements and 32-byte atoms, which no Verilator
# build of the default suite has
# -----------------------------------------------------------------------------------------
class _Layer:
    """Drives ``regs`` / ``op_en`` of the unit until its ``done``."""

    def __init__(self, dut, value):
        self.dut, self.value, self.done = dut, value, False

    def drive(self, ctx, now):
        ctx.set(self.dut.regs.as_value(), self.value)
        ctx.set(self.dut.op_en, not self.done)

    def observe(self, ctx, now):
        if ctx.get(self.dut.done):
            assert not self.done, "a second done"
            self.done = True


def _unit_layer(cfg, rng, prec, mode):
    """A random valid layer of precision ``prec`` and mode ``mode`` with its input and output
    moved into the model memory's 64 KiB (MC on both sides; the port model ignores the RAM
    type)."""
    block = register_map(cfg)["RBK"]
    A, b = cfg.memory_atom, ELEMENT_BYTES[prec]
    while True:
        if mode == CONTRACT:
            spec = dict(W=int(rng.integers(1, 5)), H=int(rng.integers(1, 3)),
                        C=int(rng.integers(1, 2 * A // b + 1)), sx=int(rng.integers(1, 4)),
                        sy=int(rng.integers(1, 3)))
        else:
            spec = dict(W=int(rng.integers(1, 2 * A // b + 4)), H=int(rng.integers(1, 3)),
                        C=int(rng.integers(1, 2 * A // b + 3)))
        extra = tuple(int(v) if rng.random() < 0.4 else 0 for v in rng.integers(0, 3, 5))
        layer = rubik_layer(cfg, mode=mode, prec=prec, src_ram=1, dst_ram=1, extra=extra,
                            seed=int(rng.integers(1 << 30)), **spec)
        words = dict(layer["regs"]["RBK"])
        r = Regs(block)
        r.words = words
        r.set("D_DAIN_ADDR_HIGH", DAIN_ADDR_HIGH=0)
        r.set("D_DAOUT_ADDR_HIGH", DAOUT_ADDR_HIGH=0)
        r.addr("D_DAIN_ADDR_LOW", 0x0400)
        r.addr("D_DAOUT_ADDR_LOW", 0x8000)
        p = decode(cfg, GroupView(block, words))
        if p.src_extent()[1] <= 0x7C00 and p.dst_extent()[1] <= 0xFC00:
            return words, p


_NV_FULL = NvdlaConfig.preset("nv_full")
_NV_SMALL_INT16_RBK = NvdlaConfig.preset("nv_small").replace(
    name="nv_small_int16_rbk", rubik=True, data_types=frozenset({"int8", "int16"}))


@pytest.mark.parametrize("cfg, prec", [
    (_NV_FULL, 1), (_NV_SMALL_INT16_RBK, 1),
    pytest.param(_NV_FULL, 0, marks=pytest.mark.slow),
    pytest.param(_NV_FULL, 2, marks=pytest.mark.slow)],
    ids=["nv_full-int16", "nv_small_int16-int16", "nv_full-int8", "nv_full-fp16"])
def test_unit_layers_match_golden(cfg, prec):
    """Random layers of each mode on the unit alone under a port-level DMA model (random
    back-pressure, latency, completion delays): memory equals the golden model's after the
    layer (nothing written outside the output)."""
    rng = np.random.default_rng(100 + prec)
    block = register_map(cfg)["RBK"]
    layout = fields_layout(block.d_registers, ("rw",))
    g = DmaGeometry(cfg)
    for i in range(6):                          # contract, split, merge, contract, ...
        words, p = _unit_layer(cfg, rng, prec, i % 3)
        prng = random.Random(i)
        mem = np.frombuffer(prng.randbytes(MEM), dtype=np.uint8).copy()
        gold = SparseMemory()
        gold.write(0, mem.copy())
        run_program(p, gold, gold)
        dut = Rubik(cfg)
        layer = _Layer(dut, pack_fields(layout, block, words))
        rd = ReadModel(g, dut.rd_rbk, mem, prng)
        wr = WriteModel(g, dut.wr_rbk, mem, prng)
        run(dut, [layer, rd, wr], lambda: layer.done, 40_000)
        assert not wr.expect and not wr.due, "writes outstanding after done"
        want = gold.read(0, MEM)
        diff = np.flatnonzero(mem != want)
        assert diff.size == 0, (f"layer {i} ({p.mode=}, W={p.width} H={p.height} "
                                f"C={p.channels}): {diff.size} bytes differ from {diff[0]:#x}")
