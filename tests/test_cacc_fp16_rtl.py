"""fp16 layers in the convolution accumulator RTL, bit for bit with the golden model.

- :mod:`hw.conv.fp48` alone (combinational, 16 instances side by side in Amaranth's simulator)
  against :func:`sim.conv.cacc.fp48_add` / :func:`sim.conv.cacc.fp48_to_fp32`: the operands of
  tests/test_cacc_fp16.py (CMAC partial sums of random fp16 atoms, NaN atoms, raw codes, folded
  assembly values, zeros, exact cancellations) and edge operands (assembly significands next to
  a rounding carry, partial sums 0 to 50 exponent steps below, fp32 rounding carries, -2, NaN
  and zero codes).
- :class:`hw.conv.cacc.Cacc` on nv_small + fp16 (tests/conftest.NV_SMALL_FP16: AK 8, T 1):
  fp16 layers of random stripes (one-position stripes too, psums of random fp16 atoms through
  :func:`sim.conv.cmac.fp16_mac_cell`) under random gaps and back-pressure, compared with
  :func:`sim.conv.cacc.accumulate_fp16` per position; int8 and fp16 layers mixed on one Cacc;
  the full rate with back-to-back one-position stripes.
"""

from __future__ import annotations

import numpy as np
from amaranth.hdl import Cat, Module, Signal
from amaranth.back import verilog
from amaranth.sim import Simulator

from hw.conv.cacc import Cacc
from hw.conv.common import conv_fp16, conv_int16, max_stripe, psum_layout
from hw.conv.fp48 import fp48_add, fp48_to_fp32
from sim.conv.cacc import _lsd, accumulate_fp16, deliver, fp48_add as g_add, \
    fp48_to_fp32 as g_to32
from sim.conv.cmac import fp16_mac_cell
from tests import test_cacc as tc
from tests.conftest import NV_SMALL_FP16
from tests.test_cacc_fp16 import _vectors

CFG = NV_SMALL_FP16
_M40 = (1 << 40) - 1


# -- fp48 arithmetic alone ----------------------------------------------------------------
def _edge_add(n, seed):
    """(psum, assembly) pairs: assembly significands at a rounding carry (01.11..1, 10.011..1
    and neighbours) or random, their exponent 3 below to 51 above the partial sum's."""
    rng = np.random.default_rng(seed)
    f = rng.integers(0, 63, n)
    bits = rng.integers(1, 37, n)
    mag = rng.integers(0, 1 << 62, n) >> (62 - bits)
    mant = np.where(rng.random(n) < 0.5, -mag, mag) & ((1 << 36) - 1)
    hi = np.where(rng.random(n) < 0.8, (mant >> 35) * 3, rng.integers(0, 4, n))
    ps = (f << 38) | (hi << 36) | mant
    lead = _lsd((mant ^ (1 << 35)) - (1 << 35), 36)
    e = np.clip(f + 47 - lead + rng.integers(-3, 52, n), 1, 254)
    m = rng.choice(np.array([(1 << 39) - 1, (1 << 39) - 2, 1 << 39, (1 << 39) | ((1 << 38) - 1),
                             (1 << 39) | ((1 << 38) - 2), 3 << 38, 1 << 38,
                             (1 << 38) | ((1 << 38) - 1)]), n)
    m = np.where(rng.random(n) < 0.3, rng.integers(1 << 38, 3 << 38, n), m)
    return ps, (e << 40) | m


def _edge_to32(n, seed):
    """Assembly codes for the fp32 delivery: rounding carries (magnitude bits 38..15 all ones
    and bit 14), exact halves, -2, zero significands, NaNs, random."""
    rng = np.random.default_rng(seed)
    e = rng.integers(0, 256, n)
    e[rng.random(n) < 0.1] = 0xFF
    mag = rng.choice(np.array([(1 << 39) - 1, (1 << 39) - (1 << 14), ((1 << 39) - 1) ^ (1 << 14),
                               (1 << 14), (1 << 15) | (1 << 14), 0, 1 << 38]), n)
    mag = np.where(rng.random(n) < 0.3, rng.integers(0, 1 << 39, n), mag)
    neg = rng.random(n) < 0.5
    m = np.where(neg, (-mag) & _M40, mag)
    m = np.where(rng.random(n) < 0.05, 1 << 39, m)
    return (e << 40) | m


class _Rig:
    """``n`` fp48_add + fp48_to_fp32 instances on one input word (one settle per n vectors)."""

    W = 44 + 48 + 1 + 48

    def __init__(self, n):
        self.n = n
        self.m = m = Module()
        self.inp = Signal(self.W * n)
        outs = []
        for i in range(n):
            b = self.inp[i * self.W:(i + 1) * self.W]
            outs += [fp48_add(m, b[:44], b[44:92], b[92], name=f"add{i}"),
                     fp48_to_fp32(m, b[93:141], name=f"to32_{i}")]
        self.out = Signal(80 * n)
        m.d.comb += self.out.eq(Cat(*outs))

    def run(self, ps, acc, av, cv):
        """(fp48_add results, fp48_to_fp32 results) of the operand arrays."""
        n, k = self.n, len(ps)
        got_add, got_32 = np.zeros(k, np.int64), np.zeros(k, np.int64)

        async def tb(ctx):
            for j in range(0, k, n):
                word = 0
                for i in range(min(n, k - j)):
                    word |= (int(ps[j + i]) | int(acc[j + i]) << 44 | int(av[j + i]) << 92
                             | int(cv[j + i]) << 93) << (self.W * i)
                ctx.set(self.inp, word)
                r = ctx.get(self.out)
                for i in range(min(n, k - j)):
                    got_add[j + i] = (r >> (80 * i)) & ((1 << 48) - 1)
                    got_32[j + i] = (r >> (80 * i + 48)) & 0xFFFF_FFFF

        sim = Simulator(self.m)
        sim.add_testbench(tb)
        sim.run()
        return got_add, got_32


def _check(name, ps, acc, av, got, want):
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{name}: {bad.size} of {len(got)} differ, first " + ", ".join(
        f"#{i}: {int(ps[i]):011x} + {int(acc[i]):012x} ({int(av[i])}) -> rtl {int(got[i]):x} "
        f"model {int(want[i]):x}" for i in bad[:4]))


def test_fp48_units():
    """2,400 accumulation steps and 2,400 deliveries against the golden functions (the
    steps two thirds from fp16 atoms, a third edge cases)."""
    ps1, acc1, av1, _ = _vectors(1600, 11)
    ps2, acc2 = _edge_add(800, 12)
    ps = np.concatenate([ps1, ps2])
    acc = np.concatenate([acc1, acc2])
    av = np.concatenate([av1, np.ones(800, bool)])
    # deliveries: the steps' own results (every other) and edge codes
    cv = np.where(np.arange(2400) % 2 == 0, g_add(ps, acc, av), _edge_to32(2400, 13))
    got_add, got_32 = _Rig(16).run(ps, acc, av, cv)
    _check("fp48_add", ps, acc, av, got_add, g_add(ps, acc, av))
    _check("fp48_to_fp32", cv, cv, av, got_32, g_to32(cv))


# -- Cacc ---------------------------------------------------------------------------------
def test_fp16_builds():
    from arch.config import NvdlaConfig
    assert conv_fp16(CFG) and not conv_int16(CFG)
    assert "fp16" in verilog.convert(Cacc(CFG), name="cacc")
    from tests.conftest import NV_SMALL_INT16
    for cfg in (NvdlaConfig.preset("nv_small"), NV_SMALL_INT16):
        assert not conv_fp16(cfg)
        v = verilog.convert(Cacc(cfg), name="cacc")
        assert "fp16" not in v and "fp48" not in v


def _atoms(rng, shape):
    """fp16 codes: wide or narrow exponent spread per psum, zeros, NaNs now and then."""
    lo, hi = (0, 31) if rng.random() < 0.5 else (12, 19)
    c = ((rng.integers(0, 2, shape) << 15) | (rng.integers(lo, hi, shape) << 10)
         | rng.integers(0, 1024, shape))
    c[rng.random(shape) < 0.05] = 0
    c[rng.random(shape) < 0.002] = 0x7E00 | rng.integers(0, 0x200)
    return c


def _signed(v, bits):
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


def _fp16_layer(cfg, rng, stripes):
    """stripes: [(positions, blocks)]. psum codes of random atoms (AC/2 channels) for the AK/2
    kernels; sums of the other kernels are junk the Cacc drops. Expected: per position and
    kernel the golden fold, fp32 codes in T-lane transfers (AK/2/T per position)."""
    lay = psum_layout(cfg)
    ak, ac, t = cfg.atomic_k, cfg.atomic_c, cfg.sdp_bs_throughput
    nk = ak // 2
    psums, expect = [], []
    for si, (n, blocks) in enumerate(stripes):
        codes = np.zeros((blocks, n, ak), np.int64)
        for b in range(blocks):
            codes[b, :, :nk] = fp16_mac_cell(_atoms(rng, (1, nk, ac // 2)),
                                             _atoms(rng, (n, 1, ac // 2)))[0]
        # cancellation now and then: a block that is minus the previous one
        if blocks > 1 and rng.random() < 0.3:
            prev = codes[0, :, :nk]
            finite = (prev >> 38) != 0x3F
            neg = (prev & ~((1 << 38) - 1)) | (-prev & ((1 << 38) - 1))
            codes[1, :, :nk] = np.where(finite, neg, prev)
        codes[:, :, nk:] = rng.integers(0, 1 << 44, (blocks, n, ak - nk))
        for b in range(blocks):
            for p in range(n):
                end = si == len(stripes) - 1 and b == blocks - 1 and p == n - 1
                psums.append(lay.const({"sums": [_signed(x, 44) for x in codes[b, p]],
                                        "first": b == 0, "last": b == blocks - 1, "pos": p,
                                        "end": end}))
        out = accumulate_fp16(codes[:, :, :nk])                  # [n, nk] fp32 codes
        for p in range(n):
            for i in range(nk // t):
                end = si == len(stripes) - 1 and p == n - 1 and i == nk // t - 1
                expect.append(([_signed(x, 32) for x in out[p, i * t:(i + 1) * t]], int(end)))
    return {"truncate": int(rng.integers(0, 17)), "psums": psums, "fp16": 1}, expect, 0


def _int8_layer(cfg, rng, stripes):
    layer, expect, sat = tc.make_layer(cfg, rng, [(n, b, 0) for n, b in stripes],
                                       int(rng.integers(0, 17)))
    return {**layer, "fp16": 0}, expect, sat


class _LayersFp(tc.Layers):
    def drive(self, ctx, now):
        if self.state == "start" and self.layers:
            ctx.set(self.dut.fp16, self.layers[0]["fp16"])
            if "int16" in self.layers[0]:
                ctx.set(self.dut.int16, self.layers[0]["int16"])
        super().drive(ctx, now)


def _run(cfg, layers, seed, p_gap=0.3, p_ready=0.7):
    _, src, sink = tc.run_cacc(cfg, layers, seed, p_gap, p_ready, control=_LayersFp)
    return src, sink


def _stripes(rng, k, max_blocks=5):
    ms = max_stripe(CFG)
    s = [(int(rng.integers(1, ms + 1)), int(rng.integers(1, max_blocks + 1))) for _ in range(k)]
    s.insert(1, (1, 4))                                    # back-to-back psums of one position
    s.insert(2, (2, 4))                                    # ... and of two (stage 2 write-back)
    return s


def test_cacc_fp16_layers():
    """Two fp16 layers of random stripes (one- and two-position stripes included) under
    random gaps and back-pressure; sat_count stays 0 whatever truncate says."""
    rng = np.random.default_rng(0)
    layers = [_fp16_layer(CFG, rng, _stripes(rng, 5)) for _ in range(2)]
    _run(CFG, layers, 0)


def test_cacc_int8_then_fp16():
    """int8, fp16, int8 (saturating), fp16 layers on one Cacc: each layer's results and
    sat_count as the golden model's."""
    rng = np.random.default_rng(7)
    sat_layer = tc.make_layer(CFG, rng, [(1, 3, +1), (2, 2, 0)], 0)
    assert sat_layer[2] > 0
    layers = [_int8_layer(CFG, rng, _stripes(rng, 2)), _fp16_layer(CFG, rng, _stripes(rng, 2)),
              ({**sat_layer[0], "fp16": 0}, sat_layer[1], sat_layer[2]),
              _fp16_layer(CFG, rng, _stripes(rng, 1))]
    _run(CFG, layers, 7)


def test_cacc_int16_and_fp16_build():
    """A build with int8, int16 and fp16 (nv_small + both): fp16, int16, int8, fp16 layers."""
    from arch.config import NvdlaConfig
    from tests.test_conv_int16 import _cacc_layer
    cfg = NvdlaConfig.preset("nv_small").replace(
        name="nv_small_int16_fp16", data_types=frozenset({"int8", "int16", "fp16"}))
    assert conv_fp16(cfg) and conv_int16(cfg)
    rng = np.random.default_rng(8)

    def wide(i16):
        la, ex, sat = _cacc_layer(cfg, rng, [(n, b, 0) for n, b in _stripes(rng, 2)],
                                  int(rng.integers(0, 17)), i16)
        return {**la, "fp16": 0}, ex, sat

    def fp():
        la, ex, sat = _fp16_layer(cfg, rng, _stripes(rng, 2))
        return {**la, "int16": 0}, ex, sat

    _run(cfg, [fp(), wide(1), wide(0), fp()], 8)


def test_cacc_fp16_full_rate_one_position():
    """psum always valid, out always ready: stripes of one position (each psum waits a cycle
    for the previous one's sum, written back by stage 2), a full stripe (no stall) and a
    completed position on ``out`` 7 cycles after its psum is taken (as int8: the two
    accumulation stages, the FIFO, the two delivery stages and the output skid buffer)."""
    rng = np.random.default_rng(3)
    n = max_stripe(CFG)
    per = CFG.atomic_k // 2 // CFG.sdp_bs_throughput
    layer = _fp16_layer(CFG, rng, [(1, 6), (1, 5), (n, per + 1), (1, 7)])
    src, sink = _run(CFG, [layer], 3, p_gap=0, p_ready=1.0)
    gaps = np.diff(src.taken).tolist()
    # one-position stripes: every other cycle, except a stripe's first psum
    assert gaps[:5] == [2] * 5 and gaps[5:10] == [1] + [2] * 4
    assert gaps[10:10 + n * (per + 1)] == [1] * (n * (per + 1)), "full stripe stalled"
    assert gaps[-6:] == [2] * 6
    assert sink.when[0] - src.taken[5] == 7
