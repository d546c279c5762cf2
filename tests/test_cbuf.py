"""Cbuf (hw/conv/cbuf.py): random masked writes and random reads on both ports against a numpy
model of the banks; Verilog conversion for nv_small and nv_large."""

import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from arch.config import load_config
from hw.conv.cbuf import Cbuf


def _run(cfg, seed, cycles):
    nb, depth, bw = cfg.cbuf_banks, cfg.cbuf_bank_depth, cfg.cbuf_bank_width
    rng = random.Random(seed)
    dut = Cbuf(cfg)
    model = np.zeros((nb * depth, bw), np.uint8)
    # concentrate on a few rows so reads hit written entries often
    hot = [rng.randrange(nb * depth) for _ in range(64)]
    checked = {"dat": 0, "wt": 0}

    def addr():
        return rng.choice(hot) if rng.random() < 0.8 else rng.randrange(nb * depth)

    # cycles from a read to its data: the data port's register after the multiplexer adds one
    lat = {"dat": 1 + cfg.cbuf_data_read_regs, "wt": 1}
    # ... and with 2 the read reaches the banks a cycle after it is presented: it sees that
    # cycle's landing write too
    late = {"dat": cfg.cbuf_data_read_regs >= 2, "wt": False}

    async def tb(ctx):
        pend = {"dat": None, "wt": None}
        landing = [(False, 0, b"", 0)] * cfg.cbuf_write_regs   # registered, not yet landed
        flight = {k: [None] * (v - 1) for k, v in lat.items()}   # reads not yet out
        data_banks = rng.randrange(1, nb)
        ctx.set(dut.data_banks, data_banks)
        for t in range(cycles):
            if t % 97 == 96:                      # a new bank split now and then
                data_banks = rng.randrange(1, nb)
                ctx.set(dut.data_banks, data_banks)
                pend = {"dat": None, "wt": None}
                flight = {k: [None] * (v - 1) for k, v in lat.items()}
            # reads issued this cycle see the memory before this cycle's write
            reads = {}
            for name, port in (("dat", dut.dat_rd), ("wt", dut.wt_rd)):
                en = rng.random() < 0.7
                a = addr()
                bank = a // depth
                if en and (bank < data_banks) != (name == "dat"):
                    # the other region: retarget into this port's region
                    lo, hi = (0, data_banks) if name == "dat" else (data_banks, nb)
                    a = rng.randrange(lo, hi) * depth + a % depth
                ctx.set(port.en, en)
                ctx.set(port.addr, a)
                if en:
                    reads[name] = a if late[name] else model[a].copy()
            wen = rng.random() < 0.6
            wa = addr()
            wd = rng.randbytes(bw)
            mask = rng.getrandbits(bw)
            ctx.set(dut.wr.en, wen)
            ctx.set(dut.wr.addr, wa)
            ctx.set(dut.wr.data, int.from_bytes(wd, "little"))
            ctx.set(dut.wr.mask, mask)
            await ctx.tick()
            landing.append((wen, wa, wd, mask))
            wen, wa, wd, mask = landing.pop(0)
            if wen:
                for i in range(bw):
                    if (mask >> i) & 1:
                        model[wa, i] = wd[i]
            for name in reads:
                if late[name]:
                    reads[name] = model[reads[name]].copy()
            for name, port in (("dat", dut.dat_rd), ("wt", dut.wt_rd)):
                flight[name].append(reads.get(name))
                out = flight[name].pop(0)
                if out is not None:
                    pend[name] = out
                if pend[name] is not None:
                    got = ctx.get(port.data).to_bytes(bw, "little")
                    assert got == pend[name].tobytes(), (t, name)
                    checked[name] += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    assert checked["dat"] > cycles // 3 and checked["wt"] > cycles // 3


@pytest.mark.parametrize("name,cycles", [("nv_small", 3000), ("nv_small_256", 1500),
                                         ("nv_large", 1000)])
def test_cbuf_random(name, cycles):
    _run(load_config(name), 1, cycles)


def test_cbuf_data_read_regs_random():
    """``cbuf_data_read_regs=1``: the data port's data two cycles after its read (held until
    the next read's), the weight port's still one."""
    _run(load_config("nv_small").replace(cbuf_data_read_regs=1, cbuf_ram_width=16), 4, 1500)


def test_cbuf_write_regs_random():
    """``cbuf_write_regs=1``: a write lands a cycle after it is presented (a read in that
    cycle still sees the old entry), with the data port's register too."""
    _run(load_config("nv_small").replace(cbuf_write_regs=1, cbuf_data_read_regs=1,
                                         cbuf_ram_width=16), 6, 1500)


def test_cbuf_data_read_regs_2_random():
    """``cbuf_data_read_regs=2``: the data port's read registered before the banks too, its
    data three cycles after the read; with the registered write."""
    _run(load_config("nv_small").replace(cbuf_write_regs=1, cbuf_data_read_regs=2,
                                         cbuf_ram_width=16), 8, 1500)


@pytest.mark.parametrize("name,lane", [("nv_small", 16), ("nv_small", 8), ("nv_large", 64)])
def test_cbuf_lanes_random(name, lane):
    """Banks built from ``cbuf_ram_width``-bit lanes behave as whole-bank memories, and
    ``peek`` joins the lanes of an entry."""
    cfg = load_config(name).replace(cbuf_ram_width=lane)
    _run(cfg, 2, 800)
    dut = Cbuf(cfg)
    bank_bits = cfg.cbuf_bank_width * 8
    assert [len(b) for b in dut.lanes] == [bank_bits // lane] * cfg.cbuf_banks
    flat = 3 * cfg.cbuf_bank_depth + 9
    value = int.from_bytes(random.Random(3).randbytes(cfg.cbuf_bank_width), "little")

    async def tb(ctx):
        ctx.set(dut.wr, {"en": 1, "addr": flat, "data": value,
                         "mask": (1 << cfg.cbuf_bank_width) - 1})
        await ctx.tick()
        assert dut.peek(ctx, flat) == value
        assert dut.peek(ctx, flat + 1) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()


@pytest.mark.parametrize("name", ["nv_small", "nv_large"])
def test_cbuf_verilog(name):
    text = verilog.convert(Cbuf(load_config(name)), name="cbuf")
    assert "module cbuf" in text


@pytest.mark.parametrize("poison", [False, True])
def test_cbuf_collision(poison):
    """A read of the entry written in the same cycle: the old contents in simulation; with
    ``poison_collisions`` their inverse (the block RAM's result is undefined), on that port
    only, held until the port's next read."""
    cfg = load_config("nv_small")
    depth = cfg.cbuf_bank_depth
    dut = Cbuf(cfg, poison_collisions=poison)
    old, new = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    full = (1 << 64) - 1
    e, f = 3 * depth + 5, 20 * depth + 7           # a data bank entry, a weight bank entry

    async def tb(ctx):
        ctx.set(dut.data_banks, 10)
        ctx.set(dut.wr, {"en": 1, "addr": e, "data": old, "mask": 0xFF})
        await ctx.tick()
        ctx.set(dut.wr, {"en": 1, "addr": f, "data": old, "mask": 0xFF})
        await ctx.tick()
        # collide on the data port; the weight port reads another entry
        ctx.set(dut.wr, {"en": 1, "addr": e, "data": new, "mask": 0xFF})
        ctx.set(dut.dat_rd.en, 1)
        ctx.set(dut.dat_rd.addr, e)
        ctx.set(dut.wt_rd.en, 1)
        ctx.set(dut.wt_rd.addr, f)
        await ctx.tick()
        ctx.set(dut.wr.en, 0)
        ctx.set(dut.dat_rd.en, 0)
        ctx.set(dut.wt_rd.en, 0)
        for _ in range(2):                          # held while the port does not read
            assert ctx.get(dut.dat_rd.data) == (old ^ full if poison else old)
            assert ctx.get(dut.wt_rd.data) == old
            await ctx.tick()
        ctx.set(dut.dat_rd.en, 1)                   # the next read: the new contents
        await ctx.tick()
        assert ctx.get(dut.dat_rd.data) == new

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
