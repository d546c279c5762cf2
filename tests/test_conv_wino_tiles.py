"""WinoTiles (hw/conv/wino_tiles.py): the CSC's Winograd tile read and PRA from a Cbuf holding
the Cdma's extended slices (laid out by test_cdma's independent ``slice_layout``), against the
golden model's ``pra_int(input_tiles(cube))``, under random gaps on ``cmd`` and back-pressure
on ``o`` (a tile's channel quads, in channel order; 16-bit layers half a quad a transfer)."""

import random
import sys

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from arch.config import load_config
from hw.conv.cbuf import Cbuf
from hw.conv.wino_tiles import WinoTiles
from sim.conv.winograd_math import input_tiles, pra_int

from .conftest import NV_LARGE_WINO_2COL
from .test_cdma import WINO_SMALL, slice_layout


class Bench(Elaboratable):
    def __init__(self, cfg):
        self.cbuf, self.tiles = Cbuf(cfg), WinoTiles(cfg)

    def elaborate(self, platform):
        m = Module()
        m.submodules.cbuf, m.submodules.tiles = self.cbuf, self.tiles
        wiring.connect(m, self.tiles.rd, self.cbuf.dat_rd)
        return m


def run(cfg, layers, seed):
    """layers: (cube [H_ext, W_ext, C_ext] int values, precision, truncate, dat_base, dbanks)."""
    rng = random.Random(seed)
    bench = Bench(cfg)
    cbuf, tl = bench.cbuf, bench.tiles
    A, BW, DEPTH = cfg.memory_atom, cfg.cbuf_bank_width, cfg.cbuf_bank_depth
    EB = cfg.cbuf_entry_bytes                      # register entries of 1 or 2 bank rows
    RPE = EB // BW
    PE = EB // A

    async def tb(ctx):
        for cube, prec, trunc, base, dbanks in layers:
            H, W, C = cube.shape
            eb = 2 if prec else 1
            lines = cube.astype("<i2").view(np.uint8).reshape(H, W, -1) if prec else \
                (cube & 0xFF).astype(np.uint8)
            S = C * eb // A
            E = -(-(W * S) // PE)
            dbanks = max(dbanks, -(-(H * E * RPE) // DEPTH))   # every slice held at once
            n_dat = dbanks * DEPTH // RPE                       # (register entries)
            ctx.set(cbuf.data_banks, dbanks)
            for yy in range(H):                     # the Cdma's slices
                for e, lanes in slice_layout(cfg, lines[yy], E, wino=True).items():
                    for r in range(RPE):            # the entry's bank rows
                        word, mask = 0, 0
                        for lane, v in lanes.items():
                            if lane // BW == r:
                                word |= v << (8 * (lane % BW))
                                mask |= 1 << (lane % BW)
                        ctx.set(cbuf.wr, {"en": 1,
                                          "addr": RPE * ((base + yy * E + e) % n_dat) + r,
                                          "data": word, "mask": mask})
                        await ctx.tick()
            ctx.set(cbuf.wr.en, 0)
            ctx.set(tl.dat_base, base)
            ctx.set(tl.eps, E)
            ctx.set(tl.w_ext, W)
            ctx.set(tl.n_dat, n_dat)
            ctx.set(tl.whole, S // PE)
            ctx.set(tl.rem, S % PE)
            ctx.set(tl.precision, prec)
            ctx.set(tl.truncate, trunc)
            exp = pra_int(input_tiles(cube, H - 4, W - 4), min(trunc, 2), 16 if prec else 8)
            ty_n, tx_n = exp.shape[:2]
            groups = -(-(S * A) // BW)
            cmds = [(ty, tx, j) for ty in range(ty_n) for tx in range(tx_n)
                    for j in range(groups)]
            rng.shuffle(cmds)
            cmds = cmds[:24]
            got = []
            nq = BW // 4                            # transfers per tile (16-bit: half quads)
            # commands with random gaps, outputs under random back-pressure
            pending = list(cmds)
            cyc = 0
            ctx.set(tl.cmd.valid, 0)
            while len(got) < len(cmds) * nq:
                cyc += 1
                assert cyc < 200 * len(cmds) + 100, "timeout"
                if pending and not ctx.get(tl.cmd.valid) and rng.random() < 0.7:
                    ty, tx, j = pending[0]
                    ctx.set(tl.cmd.payload, {"ty": ty, "tx": tx, "j": j})
                    ctx.set(tl.cmd.valid, 1)
                ready = rng.random() < 0.7
                ctx.set(tl.o.ready, ready)
                _, _, cv, cr, ov, od = await ctx.tick().sample(
                    tl.cmd.valid, tl.cmd.ready, tl.o.valid, tl.o.payload.data)
                if cv and cr:
                    pending.pop(0)
                    ctx.set(tl.cmd.valid, 0)
                if ov and ready:
                    got.append(od)
            lanes = BW // eb
            assert len(got) == len(cmds) * nq
            for i, (ty, tx, j) in enumerate(cmds):
                for c in range(lanes):
                    ch = j * lanes + c
                    for e in range(16):
                        # 16-bit: quad c // 4's half e // 8 carries element e
                        t = c // 4 if eb == 1 else 2 * (c // 4) + e // 8
                        v = got[i * nq + t][c % 4][e]
                        want = int(exp[ty, tx, ch, e // 4, e % 4]) if ch < C else 0
                        assert _signed(v, cfg) == want, (ty, tx, j, c, e, v, want)

    sys.set_int_max_str_digits(max(sys.get_int_max_str_digits(), 40000))
    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()


def _signed(v, cfg):
    bits = 16 if {"int16", "fp16"} & cfg.data_types else 8
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


def _cube(rng, H, W, C, prec):
    lo, hi = (-32768, 32767) if prec else (-128, 127)
    cube = np.array([[[rng.randint(lo, hi) for _ in range(C)] for _ in range(W)]
                     for _ in range(H)], np.int64)
    # some tiles at the extremes, to saturate
    cube[:4, :4] = hi if rng.random() < 0.5 else lo
    return cube



@pytest.mark.parametrize("cfg", [
    WINO_SMALL, pytest.param(NV_LARGE_WINO_2COL, marks=pytest.mark.slow),
    pytest.param(load_config("nv_large"), marks=pytest.mark.slow)],
    ids=lambda c: c.name)
def test_wino_tiles(cfg):
    """int8 (and int16 on builds with it) layers, every PRA_TRUNCATE (3 acts as 2), channel
    groups with cripple atoms (nv_large: an odd number of 32-byte atoms; two-column entries:
    1, 2 and 3 leftover atoms, 3 straddling two rows at odd positions), the data ring
    wrapping. (nv_large_wino_2col, about 4 minutes on a loaded machine, and nv_large: slow.)"""
    rng = random.Random(31)
    A, DEPTH = cfg.memory_atom, cfg.cbuf_bank_depth
    layers = []
    precs = [0, 1] if "int16" in cfg.data_types else [0]
    twocol = cfg.cbuf_entry_bytes != cfg.cbuf_bank_width
    for i, trunc in enumerate([0, 1, 2, 3] + ([1, 2] if twocol else [])):
        prec = precs[i % len(precs)]
        S = ([3, 7, 2, 1, 5, 6] if twocol else [1, 3, 2, 1])[i]
        C = S * A // (2 if prec else 1)
        H, W = 8, 8 + 4 * (i % 2)
        dbanks = 3
        rows = cfg.cbuf_entry_bytes // cfg.cbuf_bank_width
        base = [0, 5, 3 * DEPTH // rows - 3, DEPTH // rows, 7, 1][i]  # the third one wraps
        layers.append((_cube(rng, H, W, C, prec), prec, trunc, base, dbanks))
    run(cfg, layers, seed=3)
