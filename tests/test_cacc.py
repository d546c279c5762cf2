"""hw.conv.cacc.Cacc against numpy (:func:`sim.conv.cacc.deliver`): layers of random stripes
of partial sums (random truncate, extreme psums, long stripes that saturate int32) under
random gaps on ``psum`` and random back-pressure on ``out``; the delivered lanes, ``last``,
``done`` and ``sat_count`` are compared with the reference."""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.back import verilog

from arch.config import load_config
from hw.conv.cacc import Cacc
from hw.conv.common import max_stripe, psum_bits, psum_layout
from sim.conv.cacc import deliver

from .test_cmac import simulate          # (one agent loop for the unit benches)


# ------------------------------------------------------------------------------------------
# port-level agents; each cycle every agent drives its inputs, then every agent observes

class Source:
    """Drives a stream with ``items`` (layout constants), random gaps."""

    def __init__(self, stream, rng, p_gap):
        self.s, self.items, self.rng, self.p = stream, [], rng, p_gap
        self.cur = None
        self.taken = []

    def drive(self, ctx, now):
        if self.cur is None and self.items and self.rng.random() >= self.p:
            self.cur = self.items.pop(0)
            ctx.set(self.s.payload, self.cur)
        ctx.set(self.s.valid, self.cur is not None)

    def observe(self, ctx, now):
        if self.cur is not None and ctx.get(self.s.ready):
            self.taken.append(now)
            self.cur = None


class Sink:
    """Accepts a stream with random back-pressure, records payloads."""

    def __init__(self, stream, rng, p_ready):
        self.s, self.rng, self.p = stream, rng, p_ready
        self.got, self.when, self.rdy = [], [], 0

    def drive(self, ctx, now):
        self.rdy = self.rng.random() < self.p
        ctx.set(self.s.ready, self.rdy)

    def observe(self, ctx, now):
        if self.rdy and ctx.get(self.s.valid):
            p = ctx.get(self.s.payload)
            self.got.append(([int(x) for x in p.data], int(p.last)))
            self.when.append(now)


class Layers:
    """Runs layers one after another: ``clear`` + ``truncate`` for a cycle, then the layer's
    psums into the source; at ``done`` records ``sat_count`` and starts the next layer."""

    def __init__(self, dut, src, layers):
        self.dut, self.src, self.layers = dut, src, list(layers)
        self.state, self.cur = "start", None
        self.dones, self.sats = [], []

    def drive(self, ctx, now):
        if self.state == "start" and self.layers:
            self.cur = self.layers.pop(0)
            ctx.set(self.dut.clear, 1)
            ctx.set(self.dut.truncate, self.cur["truncate"])
            ctx.set(self.dut.kernels_m1, self.cur.get("kernels_m1", 0))
            self.state = "load"
        elif self.state == "load":
            ctx.set(self.dut.clear, 0)
            self.src.items = list(self.cur["psums"])
            self.state = "run"

    def observe(self, ctx, now):
        if ctx.get(self.dut.done):
            assert self.state == "run", f"done at {now} outside a layer"
            self.dones.append(now)
            self.sats.append(ctx.get(self.dut.sat_count))
            self.state = "start" if self.layers else "finished"




# ------------------------------------------------------------------------------------------
# stimulus and reference

def _psums(cfg, rng, shape, bias=0):
    """psum_bits-wide values: extremes, full range, small; ``bias`` +1/-1 keeps the sign."""
    pb = psum_bits(cfg)
    lo, hi = -(1 << (pb - 1)), (1 << (pb - 1)) - 1
    full = rng.integers(lo, hi + 1, size=shape)
    ext = rng.choice(np.array([lo, hi, 0, -1, 1]), size=shape)
    small = rng.integers(-300, 301, size=shape)
    k = rng.random(shape)
    v = np.where(k < 0.3, ext, np.where(k < 0.5, small, full)).astype(np.int64)
    if bias > 0:
        v = np.where(rng.random(shape) < 0.9, hi, v)
    elif bias < 0:
        v = np.where(rng.random(shape) < 0.9, lo, v)
    return v


def make_layer(cfg, rng, stripes, truncate):
    """stripes: [(positions, blocks, bias)]. Returns the layer dict (psums as layout
    constants) and the expected transfers, ``sat_count`` and the end transfer's index."""
    lay = psum_layout(cfg)
    ak, t = cfg.atomic_k, cfg.sdp_bs_throughput
    psums, expect, sat_total = [], [], 0
    for si, (n, blocks, bias) in enumerate(stripes):
        vals = _psums(cfg, rng, (blocks, n, ak), bias)
        for b in range(blocks):
            for p in range(n):
                end = si == len(stripes) - 1 and b == blocks - 1 and p == n - 1
                psums.append(lay.const({"sums": vals[b, p].tolist(), "first": b == 0,
                                        "last": b == blocks - 1, "pos": p, "end": end}))
        out, sat = deliver(vals.sum(axis=0), truncate)
        sat_total += sat
        for p in range(n):
            for i in range(ak // t):
                end = si == len(stripes) - 1 and p == n - 1 and i == ak // t - 1
                expect.append((out[p, i * t:(i + 1) * t].tolist(), int(end)))
    return {"truncate": truncate, "psums": psums}, expect, min(sat_total, (1 << 32) - 1)


def run_cacc(cfg, layers, seed, p_gap=0.3, p_ready=0.7, control=None):
    """layers: [(layer, expect, sat)] from :func:`make_layer`; checks everything.
    ``control``: the layer controller class (default :class:`Layers`)."""
    rng = random.Random(seed)
    dut = Cacc(cfg)
    src = Source(dut.psum, rng, p_gap)
    sink = Sink(dut.out, rng, p_ready)
    ctl = (control or Layers)(dut, src, [layer for layer, _, _ in layers])
    total = sum(len(psums) for psums in (la["psums"] for la, _, _ in layers))
    simulate(dut, [ctl, src, sink], lambda: ctl.state == "finished",
             max_cycles=4 * total + 4 * sum(len(e) for _, e, _ in layers) + 500)
    expect = [e for _, ex, _ in layers for e in ex]
    assert len(sink.got) == len(expect)
    for i, (got, exp) in enumerate(zip(sink.got, expect)):
        assert got == exp, f"transfer {i}: {got} != {exp}"
    ends = [i for i, (_, last) in enumerate(expect) if last]
    assert ctl.dones == [sink.when[i] + 1 for i in ends], "done one cycle after last"
    assert ctl.sats == [sat for _, _, sat in layers]
    return dut, src, sink


def random_stripes(cfg, rng, n_stripes, max_blocks=4):
    ms = max_stripe(cfg)
    return [(int(rng.integers(1, ms + 1)), int(rng.integers(1, max_blocks + 1)), 0)
            for _ in range(n_stripes)]


# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_cacc_random_layers_nv_small(seed):
    """Three layers per run, random truncate 0..16, one-position stripes included."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(seed)
    layers = []
    for li in range(3):
        stripes = random_stripes(cfg, rng, 6)
        if li == 0:
            stripes.insert(2, (1, 5, 0))            # back-to-back psums of one position
        layers.append(make_layer(cfg, rng, stripes, int(rng.integers(0, 17))))
    run_cacc(cfg, layers, seed)


def test_cacc_saturation_nv_small():
    """Stripes of 1.25 x 2**31 / max-psum blocks of extreme psums exceed int32 both ways:
    values clip and every clipped element counts at truncate 0; at truncate 1 the same
    magnitudes round-shift back into range."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(5)
    blocks = (1 << 31) // (1 << (psum_bits(cfg) - 1)) * 5 // 4
    layers = [make_layer(cfg, rng, [(1, blocks, +1), (2, 8, 0), (1, blocks, -1)], tr)
              for tr in (0, 1)]
    assert layers[0][2] > 0
    run_cacc(cfg, layers, 5, p_gap=0.1, p_ready=0.8)


def test_cacc_full_rate_nv_small():
    """psum always valid, out always ready, stripes of max_stripe positions whose blocks
    outnumber the AK/T transfers per position: CACC never stalls the psum stream, one full
    stripe drains while the next accumulates."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(9)
    n, per = max_stripe(cfg), cfg.atomic_k // cfg.sdp_bs_throughput
    layer = make_layer(cfg, rng, [(n, per + 1, 0)] * 4, 3)
    _, src, sink = run_cacc(cfg, [layer], 9, p_gap=0, p_ready=1.0)
    assert src.taken[-1] - src.taken[0] == len(src.taken) - 1, "psum stalled"


class _LateSink(Sink):
    """Ready from cycle ``start`` on, never before."""

    def __init__(self, stream, rng, start):
        super().__init__(stream, rng, 1.0)
        self.start = start

    def drive(self, ctx, now):
        self.rdy = now >= self.start
        ctx.set(self.s.ready, self.rdy)


def test_cacc_accumulates_while_out_stalled():
    """The credit count: with ``out`` not ready, CACC takes a whole stripe of ``max_stripe``
    positions (its completed positions take every FIFO slot) and every psum of the next
    stripe up to its first ``last`` one, exactly that many, then none (a slot is reserved
    when a ``last`` psum is taken, so none reaches stage 2 without one); released, every
    transfer, ``done`` and ``sat_count`` are right."""
    cfg = load_config("nv_small")
    rng = np.random.default_rng(11)
    n = max_stripe(cfg)
    layer = make_layer(cfg, rng, [(n, 3, 0), (n, 3, 0)], 2)
    start = 6 * n + 50
    dut = Cacc(cfg)
    src = Source(dut.psum, random.Random(1), 0)
    sink = _LateSink(dut.out, random.Random(2), start)
    ctl = Layers(dut, src, [layer[0]])
    simulate(dut, [ctl, src, sink], lambda: ctl.state == "finished", max_cycles=start + 40 * n)
    before = [t for t in src.taken if t < start]
    assert len(before) == 3 * n + 2 * n, (len(before), n)
    assert len(sink.got) == len(layer[1])
    for i, (got, exp) in enumerate(zip(sink.got, layer[1])):
        assert got == exp, f"transfer {i}: {got} != {exp}"
    assert ctl.sats == [layer[2]]


def test_cacc_nv_large():
    """nv_large (AK 32, T 16: two transfers per position, 64-position stripes)."""
    cfg = load_config("nv_large")
    rng = np.random.default_rng(4)
    layers = [make_layer(cfg, rng, random_stripes(cfg, rng, 3, max_blocks=2), tr)
              for tr in (0, 7)]
    run_cacc(cfg, layers, 4)


@pytest.mark.parametrize("name", ["nv_small", "nv_large"])
def test_cacc_verilog(name):
    v = verilog.convert(Cacc(load_config(name)), name="cacc")
    assert "module cacc" in v
