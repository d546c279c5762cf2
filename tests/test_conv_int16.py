"""int16 convolution units on an int16 build (tests/conftest.NV_SMALL_INT16): Cmac's int16
products and Cacc's int16 delivery against numpy, int8 and int16 layers mixed on the same
hardware (the layout is :mod:`hw.conv.common`'s "int16 layers")."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hw.conv.cacc import Cacc
from hw.conv.cmac import Cmac
from hw.conv.common import conv_int16, dat_layout, max_stripe, psum_bits, psum_layout
from sim.conv.cacc import deliver
from tests import test_cacc as tc
from tests import test_cmac as tm
from tests.conftest import NV_SMALL_INT16

CFG = NV_SMALL_INT16


def test_int16_builds():
    from arch.config import NvdlaConfig
    assert conv_int16(CFG)
    assert not conv_int16(NvdlaConfig.preset("nv_small"))
    assert conv_int16(NvdlaConfig.preset("nv_full"))            # two-column entries too
    assert psum_bits(CFG) == 34 and psum_bits(NvdlaConfig.preset("nv_small")) == 20


# -- Cmac ------------------------------------------------------------------------------------
def _int16(rng, shape):
    full = rng.integers(-32768, 32768, size=shape)
    ext = rng.choice(np.array([-32768, 32767, 0, -1, 1, -128, 255]), size=shape)
    return np.where(rng.random(shape) < 0.3, ext, full).astype(np.int64)


def _bytes8(v):
    """int16 values -> their little-endian bytes as signed int8 [..., 2]."""
    u = np.asarray(v, np.int64) & 0xFFFF
    b = np.stack([u & 0xFF, u >> 8], axis=-1)
    return np.where(b >= 128, b - 256, b)


def _cmac_items(cfg, blocks):
    """blocks: [(int16, weights, data, first, last, end)] -> (wt, dat, expected) items.
    int16: weights [AK/2, AC] int16, data [N, halves, AC/2]; int8 as test_cmac."""
    ak, ac = cfg.atomic_k, cfg.atomic_c
    dl = dat_layout(cfg)
    wts, dats, expect = [], [], []
    for i16, w, d, first, last, end in blocks:
        if not i16:
            wts.extend(tm.wt_rows(cfg, w))
            for i, row in enumerate(d):
                e = end and i == len(d) - 1
                dats.append((0, dl.const({"data": row.tolist(), "swap": i == 0, "first": first,
                                          "last": last, "pos": i, "end": e})))
                expect.append((w @ row, first, last, i, e))
            continue
        rows = np.zeros((ak, ac), np.int64)
        for kk in range(ak // 2):
            for h in range(2):
                rows[2 * kk + h] = _bytes8(w[kk, h * ac // 2:(h + 1) * ac // 2]).reshape(-1)
        wts.extend(tm.wt_rows(cfg, rows))
        n, halves = d.shape[0], d.shape[1]
        for i in range(n):
            for h in range(halves):
                lastp = h == halves - 1
                e = end and i == n - 1 and lastp
                dats.append((1, dl.const({"data": _bytes8(d[i, h]).reshape(-1).tolist(),
                                          "swap": i == 0 and h == 0, "first": first and h == 0,
                                          "last": last and lastp, "pos": i, "end": e,
                                          "half": h})))
                sums = np.zeros(ak, np.int64)
                sums[:ak // 2] = w[:, h * ac // 2:(h + 1) * ac // 2] @ d[i, h]
                expect.append((sums, first and h == 0, last and lastp, i, e))
    return wts, dats, expect


def _run_cmac_layers(cfg, layers, seed, p_gap=0.3, p_ready=0.7):
    """layers: [blocks] each of one precision; Cmac ``clear`` + ``int16`` between them."""
    rng = random.Random(seed)
    dut = Cmac(cfg)
    got = []

    async def tb(ctx):
        for blocks in layers:
            i16 = blocks[0][0]
            wts, dats, expect = _cmac_items(cfg, blocks)
            ctx.set(dut.int16, i16)
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            wt = tm.Source(dut.wt, wts, rng, p_gap)
            dat = tm.Source(dut.dat, [x for _, x in dats], rng, p_gap)
            out = tm.Sink(dut.psum, rng, p_ready)
            await tm.pump(ctx, (wt, dat, out), lambda: len(out.got) == len(expect),
                          40 * len(expect) + 200)
            ctx.set(dut.dat.valid, 0)
            ctx.set(dut.wt.valid, 0)
            got.append((out.got, expect))

    from amaranth.sim import Simulator
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    lim = 1 << (psum_bits(cfg) - 1)
    for li, (outs, expect) in enumerate(got):
        for i, (p, (sums, first, last, pos, end)) in enumerate(zip(outs, expect)):
            assert all(-lim <= int(s) < lim for s in sums)
            g = [int(p.sums[k]) for k in range(cfg.atomic_k)]
            assert g == sums.tolist(), f"layer {li} atom {i}: {g} != {sums.tolist()}"
            assert (p.first, p.last, p.pos, p.end) == (first, last, pos, end), (li, i)


def _blocks(cfg, rng, i16, n_blocks):
    ak, ac, ms = cfg.atomic_k, cfg.atomic_c, max_stripe(cfg)
    out = []
    for b in range(n_blocks):
        n = int(rng.integers(1, ms + 1))
        first, last, end = bool(rng.random() < 0.5), bool(rng.random() < 0.5), b == n_blocks - 1
        if i16:
            halves = int(rng.integers(1, 3))
            out.append((1, _int16(rng, (ak // 2, ac)), _int16(rng, (n, halves, ac // 2)),
                        first, last, end))
        else:
            out.append((0, tm._int8(rng, (ak, ac)), tm._int8(rng, (n, ac)), first, last, end))
    return out


@pytest.mark.parametrize("seed", range(2))
def test_cmac_int16_and_int8_layers(seed):
    rng = np.random.default_rng(seed)
    layers = [_blocks(CFG, rng, i16, 12) for i16 in (1, 0, 1, 1, 0)]
    _run_cmac_layers(CFG, layers, seed)


def test_cmac_int16_extremes():
    """-32768 x -32768 on every product (the largest int16 sum) and -32768 x 32767."""
    ak, ac = CFG.atomic_k, CFG.atomic_c
    w = np.full((ak // 2, ac), -32768, np.int64)
    w[1] = 32767
    d = np.full((3, 2, ac // 2), -32768, np.int64)
    d[1] = 32767
    _run_cmac_layers(CFG, [[(1, w, d, True, True, False), (1, -w - 1, d, False, True, True)]], 1)


# -- Cacc ------------------------------------------------------------------------------------
class _Layers16(tc.Layers):
    def drive(self, ctx, now):
        if self.state == "start" and self.layers:
            ctx.set(self.dut.int16, self.layers[0]["int16"])
        super().drive(ctx, now)


def _cacc_layer(cfg, rng, stripes, truncate, i16):
    """As test_cacc.make_layer; int16: the sums of kernels >= AK/2 are junk the Cacc drops,
    each position delivers AK/2 channels."""
    lay = psum_layout(cfg)
    ak, t = cfg.atomic_k, cfg.sdp_bs_throughput
    nk = ak // 2 if i16 else ak
    psums, expect, sat_total = [], [], 0
    for si, (n, blocks, bias) in enumerate(stripes):
        vals = tc._psums(cfg, rng, (blocks, n, ak), bias)
        for b in range(blocks):
            for p in range(n):
                end = si == len(stripes) - 1 and b == blocks - 1 and p == n - 1
                psums.append(lay.const({"sums": vals[b, p].tolist(), "first": b == 0,
                                        "last": b == blocks - 1, "pos": p, "end": end}))
        out, sat = deliver(vals.sum(axis=0)[:, :nk], truncate)
        sat_total += sat
        for p in range(n):
            for i in range(nk // t):
                end = si == len(stripes) - 1 and p == n - 1 and i == nk // t - 1
                expect.append((out[p, i * t:(i + 1) * t].tolist(), int(end)))
    return ({"truncate": truncate, "psums": psums, "int16": i16}, expect,
            min(sat_total, (1 << 32) - 1))


def test_cacc_int16_and_int8_layers():
    """int16 layers deliver AK/2 channels per position, int8 layers AK, on one Cacc; 48-bit
    assembly of 34-bit psums, truncation and int32 saturation as the golden model's."""
    cfg = CFG
    rng = np.random.default_rng(3)
    layers = []
    for li, i16 in enumerate((1, 0, 1, 0, 1)):
        stripes = tc.random_stripes(cfg, rng, 5)
        if li == 2:
            stripes.append((1, 3, +1))                      # saturates
        layers.append(_cacc_layer(cfg, rng, stripes, int(rng.integers(0, 17)), i16))
    r = random.Random(3)
    dut = Cacc(cfg)
    src = tc.Source(dut.psum, r, 0.3)
    sink = tc.Sink(dut.out, r, 0.7)
    ctl = _Layers16(dut, src, [la for la, _, _ in layers])
    total = sum(len(la["psums"]) for la, _, _ in layers)
    tc.simulate(dut, [ctl, src, sink], lambda: ctl.state == "finished",
                max_cycles=4 * total + 4 * sum(len(e) for _, e, _ in layers) + 500)
    expect = [e for _, ex, _ in layers for e in ex]
    assert sink.got == expect
    assert ctl.sats == [sat for _, _, sat in layers] and any(ctl.sats)


# -- the pipeline with shared "cripple" entries ----------------------------------------------
def test_pipeline_int16_shared_entries(monkeypatch):
    """Atomic-C 32 with int16 (nv_small_256 + int16: four memory atoms per CBUF entry, so int16
    channel tails share entries between 2 or 4 positions): random int16 and int8 layers and
    reuse pairs through the whole pipeline in Amaranth simulation against the golden model
    (tests/test_conv_pipeline.run_layers; the int16 build of the RTL suites has one atom per
    entry)."""
    import hw.conv.conv
    from arch.config import NvdlaConfig
    from sim.conv.random_programs import _Redraw, random_pair, random_program
    from tests import test_conv_pipeline as tp
    monkeypatch.setattr(hw.conv.conv, "Cbuf", tp._cbuf)
    cfg = NvdlaConfig.preset("nv_small_256").replace(name="nv_small_256_int16",
                                                     data_types=frozenset({"int8", "int16"}))
    # int16 layers of 8, 3, 4 and 7 channels: tails of 2 memory atoms (an entry shared by
    # 2 positions) and of 1 atom (shared by 4)
    rng = np.random.default_rng(4)
    layers = []
    while len(layers) < 6:
        try:
            layers += random_pair(cfg, rng, 6_000) if rng.random() < 0.4 else \
                [random_program(cfg, rng, 6_000)]
        except _Redraw:
            continue
    assert [la["info"]["C"] for la in layers if la["info"]["prec"]] == [8, 3, 4, 7]
    tp.run_layers(cfg, layers, seed=4)


@pytest.mark.parametrize("conv_prec,sdp_prec", [(0, 1), (1, 0)])
def test_golden_rejects_integer_precision_mismatch_into_sdp(tmp_path, conv_prec, sdp_prec):
    """An int8 convolution flying into an int16 SDP layer (or the reverse) is a golden-model
    rule naming SDP's PROC_PRECISION: CACC delivers atoms of the layer's precision and SDP
    groups them by its own (NVDLA's SdpDataOperationDC), so NVDLA would scramble the
    channels. The layer with matching precisions runs."""
    from arch.registers import register_map
    from sim.conv import random_programs as rp
    from sim.sdp.random_programs import Regs
    cfg = NV_SMALL_INT16
    rng = np.random.default_rng(5)
    data = rng.integers(-100, 100, (10, 3, 4))
    weights = rng.integers(-100, 100, (4, 10, 1, 1))
    layer = rp.conv_layer(cfg, W=4, H=3, C=10, K=4, prec=conv_prec, data=data, weights=weights)
    ok = rp.write_trace(str(tmp_path), "matching", [layer])
    crcs, why = rp._golden_crcs(cfg, ok, 1)
    assert why is None and len(crcs) == 1
    sdp = Regs(register_map(cfg)["SDP"])
    sdp.words = layer["regs"]["SDP"]
    sdp.set("D_DATA_FORMAT", PROC_PRECISION=sdp_prec, OUT_PRECISION=sdp_prec)
    bad = rp.write_trace(str(tmp_path), "mismatch", [layer])
    crcs, why = rp._golden_crcs(cfg, bad, 1)
    name = ("INT8", "INT16")[sdp_prec]
    assert crcs is None and f"SDP.D_DATA_FORMAT.PROC_PRECISION={name}" in why
    assert f"must be {('INT8', 'INT16')[conv_prec]}" in why
