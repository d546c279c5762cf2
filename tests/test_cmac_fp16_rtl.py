"""hw.conv.cmac.Cmac's fp16 cells (hw.conv.fp16_cell) against the golden cell
:func:`sim.conv.cmac.fp16_mac_cell`, bit for bit, on fp16 builds (tests/conftest.NV_SMALL_FP16_ROWS:
nv_small with int8 + fp16, AC = 8, AK = 8; and nv_small with int8 + int16 + fp16).

Random blocks (a weight load, then atoms of one or both halves, ``swap`` on the first) of fp16
codes with zeros, negative zeros, denormals, infinities, NaNs (in weights, data or both, in
about a third of the blocks), wide exponent spreads (products 8+ alignment steps below the
largest dropped) and narrow ones, under random gaps on ``dat`` / ``wt`` and random back-pressure
on ``psum``; every partial sum is compared with the golden cell's 44-bit code. Layers of
different precisions on one Cmac (``fp16`` / ``int16`` switched between layers) give each
layer's values. The atom and weight layout is hw.conv.common's int16 one."""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.conv.cmac import Cmac
from hw.conv.common import conv_fp16, conv_int16, dat_layout, fp16_cell_pairs, max_stripe, \
    psum_bits
from sim.conv.cmac import fp16_mac_cell
from tests import test_cmac as tm
from tests.conftest import NV_SMALL_FP16_ROWS, NV_SMALL_INT16
from tests.test_conv_int16 import _bytes8, _int16

CFG = NV_SMALL_FP16_ROWS
#: int8 + int16 + fp16 (the three precisions on one array)
CFG3 = NV_SMALL_INT16.replace(name="nv_small_int16_fp16",
                              data_types=frozenset({"int8", "int16", "fp16"}))
#: two-column CBUF entries (16-byte register entries of two 8-byte bank rows, as nv_full's):
#: an fp16 cell of Atomic-C pairs takes both halves of an entry
CFG2 = CFG3.replace(name="nv_small_int16_fp16_2col", cbuf_entry_width=16)
CODE_MASK = (1 << 44) - 1
SPECIAL = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0200, 0x0400, 0x8400,
                    0x7C00, 0xFC00, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x7C01, 0xFE00, 0x7FFF])


def _fp16(rng, shape, nan, narrow):
    """fp16 codes: random fields over all exponents (or exponents 12..19 when ``narrow``, so
    most products survive the alignment), 25% special codes; NaNs only when ``nan``."""
    a = ((rng.integers(0, 2, shape) << 15) | (rng.integers(0, 32, shape) << 10)
         | rng.integers(0, 1024, shape))
    if narrow:
        a = (a & 0x83FF) | (rng.integers(12, 20, shape) << 10)
    sel = rng.random(shape) < 0.25
    a[sel] = rng.choice(SPECIAL, int(sel.sum()))
    if not nan:
        isnan = (((a >> 10) & 31) == 31) & ((a & 0x3FF) != 0)
        a[isnan] = 0x7C00
    else:                                   # a few NaNs, not one in every atom
        isnan = (((a >> 10) & 31) == 31) & ((a & 0x3FF) != 0)
        a[isnan & (rng.random(shape) < 0.8)] = 0x3C00
    return a.astype(np.int64)


def _block(cfg, rng, prec, end):
    """(prec, weights, data, first, last, end): int8 weights [AK, AC], data [N, AC];
    int16 / fp16 weights [AK/2, AC], data [N, halves, AC/2]."""
    ak, ac = cfg.atomic_k, cfg.atomic_c
    n = int(rng.integers(1, max_stripe(cfg) + 1))
    first, last = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    if prec == "int8":
        return prec, tm._int8(rng, (ak, ac)), tm._int8(rng, (n, ac)), first, last, end
    halves = int(rng.integers(1, 3))
    if prec == "int16":
        w, d = _int16(rng, (ak // 2, ac)), _int16(rng, (n, halves, ac // 2))
    else:
        nan = rng.random() < 0.35
        w = _fp16(rng, (ak // 2, ac), nan and rng.random() < 0.6, rng.random() < 0.4)
        d = _fp16(rng, (n, halves, ac // 2), nan, rng.random() < 0.4)
        if halves == 1:                     # a short channel group: no weights past it
            w[:, ac // 2:] = 0
    return prec, w, d, first, last, end


def _items(cfg, blocks):
    """(wt items, dat items, expected (sums as unsigned codes, first, last, pos, end))."""
    ak, ac = cfg.atomic_k, cfg.atomic_c
    pb = psum_bits(cfg)
    dl = dat_layout(cfg)
    wts, dats, expect = [], [], []
    for prec, w, d, first, last, end in blocks:
        if prec == "int8":
            extra = {"kmask": (1 << ak) - 1} if conv_fp16(cfg) else {}
            wts.extend(tm.wt_rows(cfg, w, extra.get("kmask")))
            for i, row in enumerate(d):
                e = end and i == len(d) - 1
                dats.append(dl.const({"data": row.tolist(), "swap": i == 0, "first": first,
                                      "last": last, "pos": i, "end": e, "half": 0}))
                expect.append(((w @ row) & ((1 << pb) - 1), first, last, i, e))
            continue
        rows = np.zeros((ak, ac), np.int64)
        for kk in range(ak // 2):
            for h in range(2):
                rows[2 * kk + h] = _bytes8(w[kk, h * ac // 2:(h + 1) * ac // 2]).reshape(-1)
        # the kernels of the load (kmask, fp16 builds): all, or (a short last kernel group)
        # the first kg, whose cells alone see the atoms: the others give +0 even for a NaN
        kg = ak // 2 if (w.sum() + len(d)) % 3 else 1 + int(w.sum()) % (ak // 2)
        extra = {}
        if conv_fp16(cfg):
            extra["kmask"] = (1 << (2 * kg)) - 1 if prec == "fp16" else (1 << ak) - 1
        wts.extend(tm.wt_rows(cfg, rows, extra.get("kmask")))
        n, halves = d.shape[0], d.shape[1]
        # two-column entries: an fp16 cell takes the entry's two halves as one operation
        whole = prec == "fp16" and fp16_cell_pairs(cfg) == ac
        hend = {"hend": 0} if "hend" in dl.members else {}
        for i in range(n):
            for h in range(halves):
                lastp = h == halves - 1
                e = end and i == n - 1 and lastp
                if hend:
                    hend["hend"] = lastp
                dats.append(dl.const({"data": _bytes8(d[i, h]).reshape(-1).tolist(),
                                      "swap": i == 0 and h == 0, "first": first and h == 0,
                                      "last": last and lastp, "pos": i, "end": e, "half": h,
                                      **hend}))
                sums = np.zeros(ak, np.int64)
                if whole:
                    if not lastp:
                        continue            # half 0 waits for half 1
                    dd = np.zeros(ac, np.int64)
                    dd[:halves * ac // 2] = d[i].reshape(-1)
                    sums[:kg] = fp16_mac_cell(w, dd[None, :])[0][:kg]
                    expect.append((sums, first, last and lastp, i, e))
                    continue
                ws = w[:, h * ac // 2:(h + 1) * ac // 2]
                if prec == "int16":
                    sums[:ak // 2] = (ws @ d[i, h]) & ((1 << pb) - 1)
                else:
                    sums[:kg] = fp16_mac_cell(ws, d[i, h][None, :])[0][:kg]
                expect.append((sums, first and h == 0, last and lastp, i, e))
    return wts, dats, expect


def run_layers(cfg, layers, seed, p_gap=0.3, p_ready=0.7):
    """layers: [blocks] each of one precision; ``clear`` and the precision ports between
    layers. Returns the psum arrival cycles of each layer."""
    rng = random.Random(seed)
    dut = Cmac(cfg)
    pb = psum_bits(cfg)
    got = []

    async def tb(ctx):
        for blocks in layers:
            prec = blocks[0][0]
            wts, dats, expect = _items(cfg, blocks)
            if conv_int16(cfg):
                ctx.set(dut.int16, prec == "int16")
            ctx.set(dut.fp16, prec == "fp16")
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            wt = tm.Source(dut.wt, wts, rng, p_gap)
            dat = tm.Source(dut.dat, dats, rng, p_gap)
            out = tm.Sink(dut.psum, rng, p_ready)
            await tm.pump(ctx, (wt, dat, out), lambda: len(out.got) == len(expect),
                          40 * len(expect) + 200)
            ctx.set(dut.dat.valid, 0)
            ctx.set(dut.wt.valid, 0)
            got.append((prec, out, expect))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    for li, (prec, out, expect) in enumerate(got):
        assert len(out.got) == len(expect)
        for i, (p, (sums, first, last, pos, end)) in enumerate(zip(out.got, expect)):
            g = [int(p.sums[k]) & ((1 << pb) - 1) for k in range(cfg.atomic_k)]
            assert g == sums.tolist(), \
                f"layer {li} ({prec}) atom {i}: {[hex(x) for x in g]} != " \
                f"{[hex(int(x)) for x in sums]}"
            assert (p.first, p.last, p.pos, p.end) == (first, last, pos, end), (li, i)
    return dut, [out.when for _, out, _ in got]


def _ports_and_cells(cfg):
    """The Cmac's port names and the names of its fp16 cell submodules (elaborated)."""
    from amaranth.hdl import Fragment
    dut = Cmac(cfg)
    frag = Fragment.get(dut, None)
    return set(dut.signature.members), {n for _, n, _ in frag.subfragments
                                        if n and n.startswith("fp16_cell")}


def test_fp16_builds():
    """fp16 builds have the ``fp16`` port, AK/2 cells and 44-bit psums; others none of it."""
    from arch.config import NvdlaConfig
    assert conv_fp16(CFG) and not conv_int16(CFG) and psum_bits(CFG) == 44
    assert conv_fp16(CFG3) and conv_int16(CFG3) and psum_bits(CFG3) == 44
    ports, cells = _ports_and_cells(CFG)
    assert "fp16" in ports and "int16" not in ports and len(cells) == CFG.atomic_k // 2
    for cfg in (NvdlaConfig.preset("nv_small"), NV_SMALL_INT16):
        assert not conv_fp16(cfg)
        ports, cells = _ports_and_cells(cfg)
        assert "fp16" not in ports and not cells


def _coverage(cfg, blocks):
    """Pairs dropped by the alignment (taking part, 8+ steps below the atom's largest
    exponent sum), NaN atoms, atoms with a denormal / an infinity taking part."""
    dropped = nan_atoms = denormal = inf = 0
    h2 = cfg.atomic_c // 2
    for _, w, d, *_ in blocks:
        for i in range(d.shape[0]):
            for h in range(d.shape[1]):
                ws, ds = w[:, h * h2:(h + 1) * h2], d[i, h][None, :]
                live = ((ws & 0x7FFF) != 0) & ((ds & 0x7FFF) != 0)
                esum = np.where(live, (ws >> 12 & 7) + (ds >> 12 & 7), 0)
                dropped += int((live & (esum.max(-1, keepdims=True) - esum >= 8)).sum())
                nan_atoms += int(fp16_mac_cell(ws, ds)[1].sum())
                both = np.concatenate([np.where(live, ws, 0), np.where(live, ds, 0)], -1)
                denormal += int((((both >> 10 & 31) == 0) & ((both & 0x3FF) != 0)).sum())
                inf += int(((both & 0x7FFF) == 0x7C00).sum())
    return dropped, nan_atoms, denormal, inf


@pytest.mark.parametrize("seed", range(3))
def test_cmac_fp16_random(seed):
    rng = np.random.default_rng(100 + seed)
    blocks = [_block(CFG, rng, "fp16", b == 11) for b in range(12)]
    assert all(x > 0 for x in _coverage(CFG, blocks)), _coverage(CFG, blocks)
    run_layers(CFG, [blocks], seed)


def test_cmac_fp16_full_rate():
    """No gaps, psum always ready: one fp16 atom per cycle, the int8 latency."""
    rng = np.random.default_rng(7)
    blocks = [_block(CFG, rng, "fp16", b == 2) for b in range(3)]
    dut, (when,) = run_layers(CFG, [blocks], 7, p_gap=0, p_ready=1.0)
    # (the first atom's swap waits for the load's AK rows, one per cycle)
    assert dut.latency == 5 and when[0] == CFG.atomic_k + dut.latency, when[0]
    assert when[-1] - when[0] == len(when) - 1


def test_cmac_fp16_and_int8_layers():
    rng = np.random.default_rng(21)
    layers = [[_block(CFG, rng, prec, b == 2) for b in range(3)]
              for prec in ("int8", "fp16", "int8", "fp16")]
    run_layers(CFG, layers, 21)


def test_cmac_three_precisions():
    """int8, int16 and fp16 layers on one array (int16 multipliers beside the fp16 cells)."""
    rng = np.random.default_rng(33)
    layers = [[_block(CFG3, rng, prec, b == 1) for b in range(2)]
              for prec in ("fp16", "int16", "int8", "fp16")]
    run_layers(CFG3, layers, 33)


@pytest.mark.parametrize("seed", range(2))
def test_cmac_fp16_two_column_entries(seed):
    """Two-column entries: an fp16 cell multiplies a whole entry (both halves, Atomic-C pairs)
    in two operations of Atomic-C / 2 pairs aligned to the entry's largest exponent sum (a
    short group's lone half 0 by itself), one partial sum per position with the group's
    first / last tags: the golden cell over the entry; int16 and int8 layers beside it as on
    bank-row entries."""
    assert fp16_cell_pairs(CFG2) == CFG2.atomic_c and "hend" in dat_layout(CFG2).members
    rng = np.random.default_rng(300 + seed)
    layers = [[_block(CFG2, rng, prec, b == 5) for b in range(6)]
              for prec in ("fp16", "int16", "fp16", "int8", "fp16")]
    assert all(x > 0 for x in _coverage(CFG2, layers[0] + layers[2]))
    run_layers(CFG2, layers, seed)


def test_cmac_fp16_two_column_rate():
    """No gaps, psum always ready: an entry (two Csc atoms, two cell operations) per two
    cycles, its partial sum one cycle after half 1's would come at the int8 latency."""
    rng = np.random.default_rng(8)
    blocks = [_block(CFG2, rng, "fp16", b == 2) for b in range(3)]
    for i, b in enumerate(blocks):                    # both halves everywhere
        d = b[2]
        if d.shape[1] == 1:
            blocks[i] = (b[0], b[1], np.concatenate([d, d], 1), *b[3:])
    dut, (when,) = run_layers(CFG2, [blocks], 8, p_gap=0, p_ready=1.0)
    # (the first atom waits for the load's AK rows, one per cycle)
    assert when[0] == CFG2.atomic_k + dut.latency + 2, when[0]
    assert all(b - a == 2 for a, b in zip(when, when[1:])), when
