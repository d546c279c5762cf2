"""hw.pdp.pool.PdpPool against a naive numpy pooling reference written here.

Random layers (max / min / average, kernels 1..8, strides 1..16, padding on all sides with
random pad values and reciprocals, several surfaces, jobs back to back as the splits of a
layer run) on random int8 cubes, under random input gaps and output back-pressure; the
pooled values must come out in cube order, bit for bit, with the right line / job ends. The
core of a build with int16 runs int8 and int16 layers mixed (int16: half the transfers per
atom, NVDLA's B = 16 widths).
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.pdp.pool import METHOD_AVE, METHOD_MAX, METHOD_MIN, PdpPool


# =========================================================================================
# Reference (NVDLA's C-model arithmetic, one window at a time)
# =========================================================================================
def _sext(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _wrap(v, bits):
    return _sext(int(v), bits)


def _round_recip(v, r, bits):
    """NVDLA cal2d: rounded half away from zero; a non-negative result keeps only its low
    ``bits - 1`` bits plus the rounding carry, a negative one its low ``bits``."""
    p = v * r
    q, frac = p >> 16, p & 0xFFFF
    if p < 0:
        return _wrap(q + (frac > 0x8000), bits)
    return _wrap((q & ((1 << (bits - 1)) - 1)) + (frac >= 0x8000), bits)


def reference(x, L, job, bits=8):
    """x: int array [S, H, W, C]; returns [S, Hout, Wout, C] (values of ``bits`` bits)."""
    S, H, W, C = x.shape
    kw, kh, sw, sh = L["kw"], L["kh"], L["sw"], L["sh"]
    pl, pr = job["pl"], job["pr"]
    pt = L["pt"]
    # NVDLA's widths: a window row's sum + PAD_VALUE (its low B + 3 bits) in 11 bits (int8)
    # or 22 (int16), the window sum + kernel width x PAD_VALUE (19 bits) in B + 6 bits
    pad11 = [0] + [_sext(L["pads"][n], bits + 3) for n in range(7)]
    pad19 = [0] + [_sext(L["pads"][n], 19) for n in range(7)]
    out = np.zeros((S, L["hout"], job["wout"], C), dtype=np.int64)
    for s in range(S):
        for oh in range(L["hout"]):
            rows = [r for r in range(oh * sh - pt, oh * sh - pt + kh) if 0 <= r < H]
            for ow in range(job["wout"]):
                cols = [c for c in range(ow * sw - pl, ow * sw - pl + kw) if 0 <= c < W]
                win = x[s][np.ix_(rows, cols)]
                if L["method"] == METHOD_MAX:
                    out[s, oh, ow] = win.max(axis=(0, 1))
                elif L["method"] == METHOD_MIN:
                    out[s, oh, ow] = win.min(axis=(0, 1))
                else:
                    for ch in range(C):
                        tot = sum(_wrap(int(win[i, :, ch].sum()) + pad11[kw - len(cols)],
                                        22 if bits == 16 else bits + 3)
                                  for i in range(len(rows)))
                        tot += pad19[kh - len(rows)] * kw
                        tot = _wrap(tot, bits + 6)
                        r1 = _round_recip(tot, L["rkw"], bits + 3)
                        out[s, oh, ow, ch] = _round_recip(r1, L["rkh"], bits)
    return out


def random_layer(rng, max_w=12, max_h=10):
    kw, kh = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    sw, sh = int(rng.integers(1, 17 if rng.random() < 0.2 else 4)), \
        int(rng.integers(1, 17 if rng.random() < 0.2 else 4))
    pt, pb = int(rng.integers(0, kh)), int(rng.integers(0, kh))
    H = int(rng.integers(max(1, kh - pt - pb), max_h + 1))
    L = dict(method=int(rng.choice([METHOD_AVE, METHOD_MAX, METHOD_MIN])),
             kw=kw, kh=kh, sw=sw, sh=sh, pt=pt, pb=pb, H=H,
             hout=(pt + H + pb - kh) // sh + 1,
             pads=[int(rng.integers(0, 1 << 19)) for _ in range(7)],
             rkw=int(rng.choice([0x10000, 0x8000, 0x5555, 0x4000, int(rng.integers(0, 1 << 17))])),
             rkh=int(rng.choice([0x10000, 0x8000, 0x5555, 0x2000, int(rng.integers(0, 1 << 17))])),
             S=int(rng.integers(1, 3)))
    jobs = []
    for _ in range(int(rng.integers(1, 3))):
        pl, pr = int(rng.integers(0, kw)), int(rng.integers(0, kw))
        W = int(rng.integers(max(1, kw - pl - pr), max_w + 1))
        jobs.append(dict(W=W, pl=pl, pr=pr, wout=(pl + W + pr - kw) // sw + 1))
    return L, jobs


def run_pool(lanes, groups, layers, seed, line_atoms=32, int16=False):
    """Simulate PdpPool over ``layers`` [(L, jobs, [x per job])]; return the outputs
    (``int16``: the core of a build with int16, ``L["int16"]`` per layer)."""
    dut = PdpPool(lanes, groups, line_atoms, int16=int16)
    rng = np.random.default_rng(seed + 1)
    got = []

    async def tb(ctx):
        for L, jobs, xs in layers:
            cfg = {
                "method": L["method"], "kw_m1": L["kw"] - 1, "kh_m1": L["kh"] - 1,
                "sw_m1": L["sw"] - 1, "sh_m1": L["sh"] - 1, "pad_top": L["pt"],
                "pad_bottom": L["pb"], "h_m1": L["H"] - 1, "hout_m1": L["hout"] - 1,
                "s_m1": L["S"] - 1, "pad_values": L["pads"], "recip_w": L["rkw"],
                "recip_h": L["rkh"]}
            if int16:
                cfg["int16"] = int(L.get("int16", False))
            ctx.set(dut.cfg, cfg)
            for job, x in zip(jobs, xs):
                ctx.set(dut.job.payload, {"win_m1": job["W"] - 1, "wout_m1": job["wout"] - 1,
                                          "pad_left": job["pl"], "pad_right": job["pr"]})
                ctx.set(dut.job.valid, 1)
                await ctx.tick().until(dut.job.ready)
                ctx.set(dut.job.valid, 0)
                flat = x.reshape(-1, lanes)
                for vec in flat:
                    while rng.random() < 0.3:
                        await ctx.tick()
                    ctx.set(dut.i.payload, {"data": [int(v) for v in vec]})
                    ctx.set(dut.i.valid, 1)
                    await ctx.tick().until(dut.i.ready)
                    ctx.set(dut.i.valid, 0)
                # wait for the job to drain before the next layer's config changes
                await ctx.tick().until(dut.idle)
                await ctx.tick().repeat(8)

    async def sink(ctx):
        while True:
            ctx.set(dut.o.ready, int(rng.random() < 0.7))
            _, _, valid, ready, payload = await ctx.tick().sample(
                dut.o.valid, dut.o.ready, dut.o.payload)
            if valid and ready:
                got.append((list(payload.data), payload.last_line, payload.last))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.add_testbench(sink, background=True)
    sim.run()
    return got


def expected(lanes, groups, layers):
    out = []
    for L, jobs, xs in layers:
        is16 = L.get("int16", False)
        n = groups // 2 if is16 else groups
        for job, x in zip(jobs, xs):
            y = reference(x, L, job, 16 if is16 else 8)
            S, Ho, Wo, C = y.shape
            for s in range(S):
                for oh in range(Ho):
                    for ow in range(Wo):
                        for g in range(n):
                            vals = [int(v) for v in y[s, oh, ow, g * lanes:(g + 1) * lanes]]
                            ll = int(ow == Wo - 1 and g == n - 1)
                            out.append((vals, ll, int(ll and oh == Ho - 1 and s == S - 1)))
    return out


@pytest.mark.parametrize("lanes,groups,seed", [(1, 8, 1), (1, 8, 2), (2, 2, 3), (4, 1, 4)])
def test_pool_random(lanes, groups, seed):
    rng = np.random.default_rng(seed)
    layers = []
    for _ in range(6):
        L, jobs = random_layer(rng)
        xs = [rng.integers(-128, 128, size=(L["S"], L["H"], j["W"], lanes * groups))
              for j in jobs]
        layers.append((L, jobs, xs))
    got = run_pool(lanes, groups, layers, seed)
    exp = expected(lanes, groups, layers)
    assert len(got) == len(exp)
    for i, (g, e) in enumerate(zip(got, exp)):
        assert g == e, f"transfer {i}: got {g}, expected {e}"


@pytest.mark.parametrize("lanes,groups,seed", [(1, 8, 11), (1, 8, 12), (2, 2, 13)])
def test_pool_random_int16(lanes, groups, seed):
    """The core of a build with int16: int16 and int8 layers mixed, each with its widths."""
    rng = np.random.default_rng(seed)
    layers = []
    for i in range(6):
        L, jobs = random_layer(rng)
        L["int16"] = i % 3 != 2
        n, bits = (groups // 2, 16) if L["int16"] else (groups, 8)
        lo, hi = -(1 << (bits - 1)), 1 << (bits - 1)
        xs = [rng.choice([lo, hi - 1], size=(L["S"], L["H"], j["W"], lanes * n))
              if rng.random() < 0.3 else
              rng.integers(lo, hi, size=(L["S"], L["H"], j["W"], lanes * n)) for j in jobs]
        layers.append((L, jobs, xs))
    got = run_pool(lanes, groups, layers, seed, int16=True)
    exp = expected(lanes, groups, layers)
    assert len(got) == len(exp)
    for i, (g, e) in enumerate(zip(got, exp)):
        assert g == e, f"transfer {i}: got {g}, expected {e}"


@pytest.mark.parametrize("method", [METHOD_AVE, METHOD_MAX])
def test_pool_flush_overlaps_short_lines(method):
    """Lines whose windows end in the right padding (kernel 8, stride 1, 7 padded columns
    each side on 2-position lines: 7 windows flushed after each used line) with unused lines
    between (vertical stride 3): the next lines run while a flush is still reading the ring,
    and the line after them reuses the flushed line's half of the ring."""
    rng = np.random.default_rng(31)
    L = dict(method=method, kw=8, kh=1, sw=1, sh=3, pt=0, pb=0, H=7, hout=3,
             pads=[int(rng.integers(0, 1 << 19)) for _ in range(7)],
             rkw=0x2000, rkh=0x10000, S=2)
    jobs = [dict(W=2, pl=7, pr=7, wout=9), dict(W=1, pl=7, pr=7, wout=8)]
    xs = [rng.integers(-128, 128, size=(L["S"], L["H"], j["W"], 8)) for j in jobs]
    layers = [(L, jobs, xs)]
    got = run_pool(1, 8, layers, 5)
    exp = expected(1, 8, layers)
    assert len(got) == len(exp)
    for i, (g, e) in enumerate(zip(got, exp)):
        assert g == e, f"transfer {i}: got {g}, expected {e}"
