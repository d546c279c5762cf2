"""PdpCheck (:mod:`hw.pdp.check`, Amaranth simulator, no Verilator) against the golden
decode (:func:`sim.pdp.program.decode`): random valid offline layers of
``sim.pdp.random_programs.random_layer`` with 0-3 random field mutations of PDP and PDP_RDMA,
biased to the rules' boundaries (values next to the old one, near the field's ends, small,
random); the check rejects exactly the programs the golden model rejects, with ``done``
:data:`~hw.pdp.check.CHECK_CYCLES` cycles after ``start``.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from arch.config import NvdlaConfig
from arch.registers import register_map
from hw.pdp.check import CHECK_CYCLES, PdpCheck
from hw.pdp.pdp import line_atoms
from hw.regfile import fields_layout
from sim.pdp import PdpProgramError, decode
from sim.pdp.random_programs import random_layer
from sim.regs import GroupView

from .conftest import NV_SMALL_INT16, pack_fields

#: fields a mutation leaves alone: enables, and FLYING_MODE (the flying half's rules belong
#: to the SDP -> PDP pairing, tests/test_pdp_rtl.py)
_SKIP = {"OP_EN", "PERF_EN", "DMA_EN", "FLYING_MODE", "NAN_TO_ZERO"}


def _mutate(block, words, rng):
    fields = [(r, f) for r in block.d_registers for f in r.fields
              if f.access == "rw" and f.name not in _SKIP]
    reg, f = fields[rng.integers(len(fields))]
    width = f.msb - f.lsb + 1
    word = words.get(reg.name, reg.reset)
    old = (word >> f.lsb) & ((1 << width) - 1)
    pick = rng.random()
    if pick < 0.5:
        new = old + int(rng.integers(-3, 4))
    elif pick < 0.6:
        new = (1 << width) - 1 - int(rng.integers(0, 4))
    elif pick < 0.75:
        new = int(rng.integers(0, 4))
    elif pick < 0.85 and ("STRIDE" in f.name or "ADDR" in f.name):
        new = old + int(rng.integers(-4, 5)) * 8
    else:
        new = int(rng.integers(0, 1 << min(width, 62)))
    new %= 1 << width
    words[reg.name] = (word & ~(((1 << width) - 1) << f.lsb)) | (new << f.lsb)


def _programs(cfg, rng, count):
    rmap = register_map(cfg)
    pb, rb = rmap["PDP"], rmap["PDP_RDMA"]
    out = []
    for _ in range(count):
        regs = random_layer(cfg, rng, max_elems=int(rng.choice([300, 3000, 30000])))["regs"]
        p, r = dict(regs["PDP"]), dict(regs["PDP_RDMA"])
        for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
            _mutate(*((pb, p) if rng.random() < 0.65 else (rb, r)), rng)
        try:
            decode(cfg, GroupView(pb, p), GroupView(rb, r), flying=False)
            ok = True
        except PdpProgramError as e:
            ok = False
            if "FLYING_MODE" in str(e):
                continue
        out.append((p, r, ok))
    return out


@pytest.mark.parametrize("cfg, count", [(NvdlaConfig.preset("nv_small"), 1500),
                                        (NV_SMALL_INT16, 600)], ids=["nv_small", "int16"])
def test_check_rejects_exactly_the_golden_rejects(cfg, count):
    rng = np.random.default_rng(11)
    programs = _programs(cfg, rng, count)
    n_ok = sum(ok for *_, ok in programs)
    assert 0.25 * len(programs) < n_ok < 0.75 * len(programs), n_ok   # both kinds
    rmap = register_map(cfg)
    pb, rb = rmap["PDP"], rmap["PDP_RDMA"]
    pl, rl = fields_layout(pb.d_registers, ("rw",)), fields_layout(rb.d_registers, ("rw",))
    dut = PdpCheck(cfg, rmap, line_atoms(cfg))
    got = []

    async def bench(ctx):
        ctx.set(dut.rdma_active, 1)
        for p, r, _ in programs:
            ctx.set(dut.regs.as_value(), pack_fields(pl, pb, p))
            ctx.set(dut.rdma_regs.as_value(), pack_fields(rl, rb, r))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            n = 1
            while not ctx.get(dut.done):
                await ctx.tick()
                n += 1
                assert n <= CHECK_CYCLES, "no done"
            assert n == CHECK_CYCLES
            got.append(bool(ctx.get(dut.ok)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    bad = []
    for i, ((p, r, ok), g) in enumerate(zip(programs, got)):
        if ok != g:
            try:
                decode(cfg, GroupView(pb, p), GroupView(rb, r), flying=False)
                why = "golden accepts"
            except PdpProgramError as e:
                why = str(e)
            bad.append((i, ok, why))
    assert not bad, f"{len(bad)} of {len(programs)} differ (index, golden ok, golden): {bad[:8]}"
