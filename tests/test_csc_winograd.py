"""hw.conv.csc.Csc running Winograd layers (hw.conv.wino_dat) against a CBUF and a CMAC / CACC
model in the testbench, on nv_large's datapath (tests/conftest.py ``NV_LARGE_WINO``).

The CBUF holds the Cdma's extended slices (laid out by test_cdma's independent
``slice_layout``, garbage elsewhere) and the Winograd weight surface (phase-2 layout,
:func:`sim.formats.winograd.winograd_weight_offsets`) in a ring of the weight region, all
present from the start or arriving slice by slice. The CMAC model multiplies each atom's
lanes (negated where ``neg`` says) by the active weights, CACC sums per ``pos`` from
``first`` to ``last``; the outputs, kernel group by kernel group and stripe by stripe in
raster order, must equal the golden :func:`sim.conv.winograd.winograd_sums` (int8 and int16,
every ``PRA_TRUNCATE``, kernels not a multiple of the group, channels with a cripple entry,
random back-pressure). fp16 layers (``NV_LARGE_WINO_FP16``: two-column entries, an entry one
small cube): the CMAC model takes an entry's two atoms as one cell operation, checks that
their ``zero`` / ``neg`` flags are one output's POA row, gives that output of NVDLA's
Winograd cell (:func:`sim.conv.cmac.fp16_wino_cell`) and folds the codes as CACC does
(:func:`sim.conv.cacc.fp48_add`); the fp32 results must equal the golden model's
(:func:`sim.conv.winograd.winograd_fp16_psums` folded by
:func:`sim.conv.cacc.accumulate_fp16`).
"""

from __future__ import annotations

import random
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.conv.common import dat_layout
from hw.conv.csc import Csc
from sim.conv.cacc import accumulate_fp16, fp48_add, fp48_to_fp32
from sim.conv.cmac import fp16_wino_cell
from sim.conv.winograd import winograd_fp16_psums, winograd_sums
from sim.formats.winograd import winograd_weight_offsets

from .conftest import NV_LARGE_WINO, NV_LARGE_WINO_2COL, NV_LARGE_WINO_FP16
from .test_conv_fp16_wino_cell import _coefficients, codes as fp16_codes
from .test_cdma import slice_layout
from .test_csc import cbuf_answer, cbuf_reads, cmac_ready


def layer_bench(cfg, dut, L, seed, p_ready=0.7, p_slice=1.0, max_cycles=400_000):
    """(testbench coroutine, result dict) of one layer on ``dut`` (a Csc); L: W, H (extended
    input), C (extended channels), K, ow, oh, prec (0 / 1), trunc. The result gets ``cycles``
    (from start to done) and ``atoms``."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    AC, AK, BW, ATOM = cfg.atomic_c, cfg.atomic_k, cfg.cbuf_bank_width, cfg.memory_atom
    DEPTH, NB = cfg.cbuf_bank_depth, cfg.cbuf_banks
    W, H, C, K, prec = L["W"], L["H"], L["C"], L["K"], L["prec"]
    eb = 2 if prec else 1
    lo, hi = (-32768, 32768) if prec else (-128, 128)
    cube = nrng.integers(lo, hi, (H, W, C)).astype(np.int64)
    cube[:4, :4] = rng.choice([lo, hi - 1])                  # a saturating tile
    wts = nrng.integers(lo, hi, (K, C, 4, 4)).astype(np.int64)
    if prec == 2:                   # fp16 codes of every kind (as int16 values); NaNs kept
        # at a few positions only (a NaN makes every output of its tiles NaN)
        cube = np.concatenate([fp16_codes(nrng, H * W) for _ in range(-(-C // 64))],
                              1).reshape(H, W, -1)[:, :, :C]
        nan = ((cube >> 10) & 0x1F == 0x1F) & (cube & 0x3FF != 0)
        cube = np.where(nan & (nrng.random((H, W, 1)) > 0.03), 0x7BFF, cube)
        wts = fp16_codes(nrng, K * C // 4).reshape(K, C, 4, 4)
        cube = np.where(cube >= 0x8000, cube - 0x10000, cube)
        wts = np.where(wts >= 0x8000, wts - 0x10000, wts)
    lines = cube.astype("<i2").view(np.uint8).reshape(H, W, -1) if prec else \
        (cube & 0xFF).astype(np.uint8)
    S = C * eb // ATOM
    RPE = cfg.cbuf_entry_bytes // BW                  # bank rows per register entry
    E = -(-(W * S) // (cfg.cbuf_entry_bytes // ATOM))
    data_banks = -(-(H * E * RPE) // DEPTH) + rng.randint(0, 1)
    group_k = AK // 2 if prec else AK
    total = K * C * 16 * eb
    weight_banks = max(1, -(-(min(K, group_k) * C * 16 * eb + 2 * BW) // (DEPTH * BW)))
    weight_banks = min(weight_banks + rng.randint(0, 1), NB - data_banks)
    n_rows, n_wt = data_banks * DEPTH, weight_banks * DEPTH    # (bank rows)
    n_dat = n_rows // RPE                                       # (register entries)
    assert total <= n_wt * BW, "the test keeps every weight in the ring"
    dat_base = rng.choice([0, rng.randrange(n_dat)])
    wt_base = rng.choice([0, rng.randrange(n_wt)])

    surf = np.zeros(K * C * 16, np.int64)
    surf[winograd_weight_offsets(K, C, group_k).reshape(-1)] = wts.reshape(-1)
    surf = surf.astype("<i2").view(np.uint8) if prec else (surf & 0xFF).astype(np.uint8)
    cbuf = nrng.integers(0, 256, (NB * DEPTH, BW)).astype(np.uint8)
    for i in range(total):
        cbuf[n_rows + (wt_base + i // BW) % n_wt, i % BW] = surf[i]

    def write_slice(y):
        for e, lanes in slice_layout(cfg, lines[y], E, wino=True).items():
            for lane, v in lanes.items():
                cbuf[RPE * ((dat_base + y * E + e) % n_dat) + lane // BW, lane % BW] = v

    dl = dat_layout(cfg)
    off = {f: dl[f].offset for f in ("swap", "first", "last", "pos", "end", "half", "neg")}
    if prec == 2:
        off["zero"] = dl["zero"].offset
    f16_h0 = {}                     # fp16: half 0 of a position's entry (data, coefficients)
    posw = dl["pos"].width
    res = {}

    def ints(v, n, width):
        return np.frombuffer(int(v).to_bytes(n * width, "little"),
                             np.int16 if width == 2 else np.int8).astype(np.int64)

    async def tb(ctx):
        r = dut.regs
        for sig, v in [
            (r.D_MISC_CFG.CONV_MODE, 1), (r.D_MISC_CFG.PROC_PRECISION, prec),
            (r.D_MISC_CFG.IN_PRECISION, prec),
            (r.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT, W - 1),
            (r.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT, H - 1),
            (r.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT, C - 1),
            (r.D_ENTRY_PER_SLICE.ENTRIES, E - 1),
            (r.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT, 3),
            (r.D_WEIGHT_SIZE_EXT_0.WEIGHT_HEIGHT_EXT, 3),
            (r.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT, C - 1),
            (r.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL, K - 1),
            (r.D_WEIGHT_BYTES.WEIGHT_BYTES, total),
            (r.D_DATAOUT_SIZE_0.DATAOUT_WIDTH, L["ow"] - 1),
            (r.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT, L["oh"] - 1),
            (r.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL, K - 1),
            (r.D_PRA_CFG.PRA_TRUNCATE, L["trunc"]),
            (r.D_BANK.DATA_BANK, data_banks - 1), (r.D_BANK.WEIGHT_BANK, weight_banks - 1),
        ]:
            ctx.set(sig, v)
        ctx.set(dut.dat_base, dat_base)
        ctx.set(dut.wt_base, wt_base)
        slices = 0
        if p_slice >= 1:
            for y in range(H):
                write_slice(y)
            slices = H
        ctx.set(dut.dat_slices, slices)
        ctx.set(dut.wt_bytes, total)
        await ctx.tick()
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        shadow = active = None
        rows = []                                  # the weight load's rows so far
        acc, outs, n_atoms, done_seen = {}, [], 0, 0
        for cyc in range(max_cycles):
            if slices < H and rng.random() < p_slice:
                write_slice(slices)
                slices += 1
                ctx.set(dut.dat_slices, slices)
            wt_rdy, dat_rdy = cmac_ready(ctx, dut, rng, p_ready, shadow is not None)
            if wt_rdy and ctx.get(dut.wt.valid):
                rows.append(ints(ctx.get(dut.wt.payload.data.as_value()), AC, 1))
            if len(rows) == AK:
                shadow, rows = np.array(rows), []
            if dat_rdy and ctx.get(dut.dat.valid):
                v = ctx.get(dut.dat.payload.as_value())
                t = {f: (v >> off[f]) & ((1 << posw) - 1 if f == "pos" else
                                         (1 << AC) - 1 if f in ("neg", "zero") else 1)
                     for f in off}
                negs = np.array([(t["neg"] >> c) & 1 for c in range(AC)], bool)
                if t["swap"]:
                    active, shadow = shadow, None
                if prec == 2:
                    d = ints(v & ((1 << (8 * AC)) - 1), AC // 2, 2) & 0xFFFF
                    coef = np.array([0 if (t["zero"] >> c) & 1 else
                                     -1 if (t["neg"] >> c) & 1 else 1 for c in range(AC // 2)])
                    if not t["half"]:
                        f16_h0[t["pos"]] = (d, coef, t["first"])
                        n_atoms += 1
                if prec == 2 and t["half"]:
                    d0, c0, first = f16_h0.pop(t["pos"])
                    dd, cc = np.concatenate([d0, d]), np.concatenate([c0, coef])
                    role = [r for r in range(4) if (cc == _coefficients(r >> 1, r & 1)).all()]
                    assert len(role) == 1, ("not a POA row", cc)
                    w16 = active.astype(np.uint8).view(np.uint16).astype(np.int64)
                    w16 = w16.reshape(AK // 2, AC)                  # kernel kk's 64 codes
                    psum = fp16_wino_cell(w16, np.broadcast_to(dd, w16.shape))[0][:, role[0]]
                    n_atoms += 1
                    pos = t["pos"]
                    acc[pos] = fp48_add(psum, acc.get(pos, 0), not first)
                    if t["last"]:
                        outs.append(fp48_to_fp32(acc[pos]))
                elif prec == 1:
                    d = ints(v & ((1 << (8 * AC)) - 1), AC // 2, 2)
                    d = np.where(negs[:AC // 2], -d, d)
                    w16 = active.astype(np.uint8).view(np.int16).astype(np.int64)
                    w16 = w16.reshape(AK // 2, AC)                  # kernel kk: 2 rows
                    h = t["half"]
                    psum = w16[:, h * AC // 2:(h + 1) * AC // 2] @ d
                elif prec == 0:
                    d = ints(v & ((1 << (8 * AC)) - 1), AC, 1)
                    d = np.where(negs, -d, d)
                    psum = active @ d
                if prec != 2:
                    n_atoms += 1
                    pos = t["pos"]
                    acc[pos] = psum if t["first"] and not t["half"] else acc[pos] + psum
                    if t["last"]:
                        outs.append(acc[pos])
            reads = cbuf_reads(ctx, dut, n_rows, n_wt)
            if ctx.get(dut.done):
                done_seen += 1
                res["cycles"] = cyc
                break
            await ctx.tick()
            cbuf_answer(ctx, dut, cbuf, reads)
        else:
            raise AssertionError(f"timeout: {n_atoms} atoms, {len(outs)} outputs")
        assert done_seen == 1
        for _ in range(4):
            await ctx.tick()
            assert not ctx.get(dut.done) and not ctx.get(dut.dat.valid)
        assert ctx.get(dut.wt_released) == total
        kgs = -(-K // group_k)
        N = L["ow"] * L["oh"]
        assert len(outs) == kgs * N, (len(outs), kgs * N)
        got = np.stack(outs).reshape(kgs, N, -1)
        p = SimpleNamespace(precision=prec, out_height=L["oh"], out_width=L["ow"],
                            winograd=SimpleNamespace(pra_truncate=min(L["trunc"], 2)))
        if prec == 2:                  # fp32 codes CACC delivers
            exp = accumulate_fp16(winograd_fp16_psums(p, cube[None], wts)[0])[0]
        else:
            exp = winograd_sums(p, cube[None], wts)[0]             # [K, OH, OW]
        for g in range(kgs):
            kg = min(group_k, K - g * group_k)
            np.testing.assert_array_equal(got[g, :, :kg].T,
                                          exp[g * group_k:g * group_k + kg].reshape(kg, N),
                                          err_msg=f"kernel group {g}")
            if prec != 2:               # (fp16: the model's cells of absent kernels see data)
                assert not got[g, :, kg:].any()
        res["atoms"] = n_atoms
        await ctx.tick()

    return tb, res


def run_layers(cfg, cases):
    """Every case (``layer_bench`` keyword arguments) one after the other on one Csc (one
    elaboration); returns their results."""
    dut = Csc(cfg)
    benches = [layer_bench(cfg, dut, **c) for c in cases]

    async def tb(ctx):
        for b, _ in benches:
            await b(ctx)

    sys.set_int_max_str_digits(max(sys.get_int_max_str_digits(), 40000))
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    return [r for _, r in benches]


CASES = [
    # int8: two cubes' groups (one cripple entry of 32 channels), a short kernel group
    dict(L=dict(W=12, H=8, C=96, K=35, ow=8, oh=4, prec=0, trunc=1), seed=1),
    # int16: 16 channels (one cripple atom), PRA_TRUNCATE 3 (acts as 2), slices arriving
    dict(L=dict(W=8, H=12, C=16, K=20, ow=4, oh=8, prec=1, trunc=3), seed=2, p_slice=0.05),
    # int8, a stripe ending inside a tile row (96 outputs: stripes of 64 and 32, the second
    # from row 5, column 4), slices arriving
    dict(L=dict(W=16, H=12, C=32, K=8, ow=12, oh=8, prec=0, trunc=0), seed=3, p_slice=0.1),
]


def test_csc_winograd():
    """The three layers of CASES one after the other on one Csc (nv_large_wino), each
    against winograd_sums (see the module docstring)."""
    res = run_layers(NV_LARGE_WINO, CASES)
    assert [r["atoms"] for r in res] == [32 * 24 * 2, 32 * 4 * 2 * 2, 96 * 8]



def test_csc_winograd_fp16():
    """fp16 on two-column entries (NV_LARGE_WINO_FP16): two channel groups (the second's
    tiles filled while the first's atoms run), the cells' outputs folded as CACC does (see
    the module docstring), under back-pressure."""
    cases = [dict(L=dict(W=8, H=8, C=64, K=16, ow=4, oh=4, prec=2, trunc=0), seed=7)]
    res = run_layers(NV_LARGE_WINO_FP16, cases)
    assert [r["atoms"] for r in res] == [16 * 16 * 2]


@pytest.mark.slow
def test_csc_winograd_two_column():
    """Two-column entries: int8 with 3 leftover atoms (a group straddling two bank rows at
    odd positions), int16 with one whole entry and 3 leftover atoms, int8 with 2 (slow: about
    4 minutes; the default suite reads such layers in tests/test_conv_wino_tiles.py)."""
    cases = [
        dict(L=dict(W=12, H=8, C=96, K=33, ow=8, oh=4, prec=0, trunc=2), seed=4),
        dict(L=dict(W=8, H=8, C=112, K=17, ow=4, oh=4, prec=1, trunc=1), seed=5,
             p_slice=0.1),
        dict(L=dict(W=8, H=12, C=64, K=8, ow=4, oh=8, prec=0, trunc=0), seed=6),
    ]
    res = run_layers(NV_LARGE_WINO_2COL, cases)
    assert [r["atoms"] for r in res] == [32 * 24 * 2, 16 * 28 * 2 * 2, 32 * 16]
