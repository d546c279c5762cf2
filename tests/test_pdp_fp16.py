"""fp16 pooling in the PDP golden model (sim.pdp.pdp.pool_fp16, run_pdp on nv_full).

Known answers worked out by hand from the RTL's order of operations (see the sim.pdp.pdp
docstring), a scalar reference walking the windows element by element, invariants, the NaN
counters and random fp16 programs on the golden core."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.memory import SparseMemory as Memory
from sim.nvfloat import (fp16_from_float, fp16_is_nan, fp16_to_float, fp16_to_fp17, fp17_add,
                         fp17_from_float, fp17_mul, fp17_to_fp16)
from sim.pdp import AVERAGE, MAX, MIN, NanCounters, pool_fp16, random_programs as rp
from sim.pdp.pdp import read_cube, run_pdp
from sim.pdp.program import out_size
from sim.regs import GroupView

NV_FULL = NvdlaConfig.preset("nv_full")
ONE17 = 0x7C00                       # fp17 1.0
HALF17 = int(fp17_from_float(0.5))
EPS = 2.0 ** -11                     # half an ulp of 1.0 in fp16 / fp17


def h(*values):
    return fp16_from_float(np.array(values, dtype=np.float64))


def _line(values, method=AVERAGE, recip=(ONE17, ONE17), pad=(0, 0, 0, 0), pad_values=(0,) * 7,
          kernel=None, stride=(1, 1)):
    """Pool one channel, one line of fp16 codes with a window over the whole line."""
    x = np.asarray(values, np.int64).reshape(1, 1, -1)
    kw = kernel or x.shape[2] + pad[0] + pad[1]
    ow = out_size(x.shape[2], pad[0], pad[1], kw, stride[0])
    return pool_fp16(x, method, (kw, 1), stride, pad, (ow, 1), pad_values, recip)[0, 0]


def _column(values, method=AVERAGE, recip=(ONE17, ONE17)):
    x = np.asarray(values, np.int64).reshape(1, -1, 1)
    return pool_fp16(x, method, (1, x.shape[1]), (1, 1), (0, 0, 0, 0), (1, 1),
                     recip=recip)[0, 0, 0]


# -----------------------------------------------------------------------------------------
# Known answers
# -----------------------------------------------------------------------------------------
def test_max_min_signed_zeros_and_infinities():
    assert _line(h(-0.0, 0.0), MAX) == 0x0000 and _line(h(0.0, -0.0), MAX) == 0x0000
    assert _line(h(-0.0, 0.0), MIN) == 0x8000 and _line(h(0.0, -0.0), MIN) == 0x8000
    assert _line([0x3C00, 0x7C00, 0x4200], MAX) == 0x7C00        # +inf wins
    assert _line([0xFC00, 0x4500], MIN) == 0xFC00                # -inf wins
    assert _line(h(-3, -2.5, -7), MAX) == h(-2.5)[0]
    assert _line(h(65504, -65504, 1e-7), MIN) == h(-65504)[0]
    assert _column(h(1, -1, 0.5), MAX) == 0x3C00


def test_max_min_nan_wins_first_along_a_line_last_down_the_lines():
    na, nb, nc = 0x7E01, 0xFE02, 0x7C03
    assert _line([0x3C00, na, nb], MAX) == na                    # the first NaN of the line
    assert _line([nb, 0x3C00, na], MIN) == nb
    assert _column([na, nb], MAX) == nb                          # the lowest line's NaN
    assert _column([na, 0x3C00], MIN) == na
    x = np.array([[na, nb], [0x4000, nc]], np.int64).reshape(1, 2, 2)
    assert pool_fp16(x, MAX, (2, 2), (1, 1), (0, 0, 0, 0), (1, 1))[0, 0, 0] == nc


def test_max_min_ignore_padding():
    # a 3-wide window with one padded column on each side: only the real elements count
    assert list(_line(h(-5, -3), MAX, pad=(1, 1, 0, 0), kernel=3)) == list(h(-3, -3))
    assert list(_line(h(5, 3), MIN, pad=(1, 1, 0, 0), kernel=3)) == list(h(3, 3))


def test_average_exact_values():
    x = h(1, 2, 3, 4).reshape(1, 2, 2)
    out = pool_fp16(x, AVERAGE, (2, 2), (1, 1), (0, 0, 0, 0), (1, 1), recip=(HALF17, HALF17))
    assert out[0, 0, 0] == h(2.5)[0]
    # kernel 3x1 with reciprocal 1/3 in fp17: (1 + 2 + 3) x 0x7555 = 6 x 0.333251953125
    third = int(fp17_from_float(1 / 3))
    assert third == 0x7555
    assert _line(h(1, 2, 3), recip=(third, ONE17)) == h(6 * 1365 / 4096)[0]


def test_average_adds_left_to_right_in_fp17():
    """1 + 2^-11 is a tie in fp17 (to even: 1), so the order of the additions shows."""
    assert _line(h(1, EPS, EPS)) == 0x3C00                       # (1 + e) + e -> 1
    assert _line(h(EPS, EPS, 1)) == 0x3C01                       # (e + e) + 1 -> 1 + 2^-10
    assert _column(h(1, EPS, EPS)) == 0x3C00                     # top to bottom
    assert _column(h(EPS, EPS, 1)) == 0x3C01


def test_average_pad_values_added_once_per_window():
    # line: window [pad, 1, e] (kernel 3, PAD_LEFT 1): (1 + e) + PAD_VALUE_1X(e) -> 1
    pv = tuple(int(fp17_from_float(n * EPS)) for n in range(1, 8))
    assert _line(h(1, EPS), pad=(1, 0, 0, 0), pad_values=pv, kernel=3)[0] == 0x3C00
    # height: kernel 2x2, PAD_TOP 1: the line sum plus PAD_VALUE_1X x kernel_width (0.5 x 2)
    pv = tuple(int(fp17_from_float(n * 0.5)) for n in range(1, 8))
    x = h(1, 3).reshape(1, 1, 2)
    out = pool_fp16(x, AVERAGE, (2, 2), (1, 1), (0, 0, 1, 0), (1, 1), pv, (HALF17, HALF17))
    assert out[0, 0, 0] == h(1.25)[0]                            # (1 + 3 + 0.5 x 2) / 4
    # the 19-bit field's top two bits are ignored (fp16 reads the low 17 as fp17)
    pv2 = tuple(v | (3 << 17) for v in pv)
    out2 = pool_fp16(x, AVERAGE, (2, 2), (1, 1), (0, 0, 1, 0), (1, 1), pv2, (HALF17, HALF17))
    assert out2[0, 0, 0] == out[0, 0, 0]


def test_average_saturates_and_keeps_nan():
    assert _line(h(65504, 65504), recip=(HALF17, ONE17)) == 0x7BFF
    assert _line(h(65504, 65504)) == 0x7BFF                      # 131008: saturates, no inf
    assert _line([0x7C00, 0x3C00], recip=(HALF17, ONE17)) == 0x7BFF   # +inf averages to max
    assert _line([0x3C00, 0x7E01, 0xFE05]) == 0x7E01             # the first NaN, payload kept
    assert _line([0x3C00, 0xFC00]) == 0xFBFF
    # tiny averages round to fp16 denormals (nearest even) or to a signed zero
    assert _line(h(2.0 ** -24, 2.0 ** -24), recip=(HALF17, ONE17)) == 0x0001
    assert _line(h(-(2.0 ** -24)), recip=(HALF17, ONE17)) == 0x8000   # tie -> even: -0


# -----------------------------------------------------------------------------------------
# A scalar reference walking every window (the RTL's order, element by element)
# -----------------------------------------------------------------------------------------
def _pick(first, second, method):
    n1, n2 = bool(fp16_is_nan(first)), bool(fp16_is_nan(second))
    if n1 or n2:
        return first if n1 else second
    key = [(-(v & 0x7FFF) - 1) if v & 0x8000 else (v & 0x7FFF) for v in (first, second)]
    better = key[0] > key[1] if method == MAX else key[0] < key[1]
    return first if better else second


def scalar_pool(x, method, kw, kh, sw, sh, pl, pr, pt, pb, pv, rw, rh):
    C, H, W = x.shape
    ow, oh = out_size(W, pl, pr, kw, sw), out_size(H, pt, pb, kh, sh)
    out = np.zeros((C, oh, ow), np.int64)
    for c in range(C):
        for i in range(oh):
            for j in range(ow):
                rows = [r for r in range(i * sh - pt, i * sh - pt + kh) if 0 <= r < H]
                cols = [q for q in range(j * sw - pl, j * sw - pl + kw) if 0 <= q < W]
                acc = None
                for r in rows:
                    line = None
                    for q in cols:
                        v = int(x[c, r, q])
                        if method == AVERAGE:
                            v = int(fp16_to_fp17(v))
                            line = v if line is None else int(fp17_add(line, v))
                        else:
                            line = v if line is None else _pick(line, v, method)
                    if method == AVERAGE:
                        nh = kw - len(cols)
                        line = int(fp17_add(line, pv[nh - 1] & 0x1FFFF if nh else 0))
                        acc = line if acc is None else int(fp17_add(line, acc))
                    else:
                        acc = line if acc is None else _pick(line, acc, method)
                if method == AVERAGE:
                    nv = kh - len(rows)
                    p = int(fp17_mul(pv[nv - 1] & 0x1FFFF if nv else 0, fp17_from_float(kw)))
                    acc = int(fp17_to_fp16(fp17_mul(fp17_mul(fp17_add(acc, p), rw), rh)))
                out[c, i, j] = acc
    return out


@pytest.mark.parametrize("seed", range(6))
def test_pool_fp16_matches_scalar_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(8):
        kw, kh = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        sw, sh = int(rng.integers(1, min(kw, 3) + 2)), int(rng.integers(1, min(kh, 3) + 2))
        pl, pr = int(rng.integers(0, kw)), int(rng.integers(0, kw))
        pt, pb = int(rng.integers(0, kh)), int(rng.integers(0, kh))
        W, H, C = int(rng.integers(1, 10)), int(rng.integers(1, 8)), int(rng.integers(1, 3))
        ow, oh = out_size(W, pl, pr, kw, sw), out_size(H, pt, pb, kh, sh)
        if ow < 1 or oh < 1 or (ow - 1) * sw >= pl + W or (oh - 1) * sh >= pt + H:
            continue
        x = rp._fp16_data(rng, (C, H, W))
        pv = tuple(int(v) for v in rng.integers(0, 1 << 19, 7))
        rw, rh = (int(v) for v in rng.integers(0, 1 << 17, 2))
        for method in (AVERAGE, MAX, MIN):
            got = pool_fp16(x, method, (kw, kh), (sw, sh), (pl, pr, pt, pb), (ow, oh), pv,
                            (rw, rh))
            want = scalar_pool(x, method, kw, kh, sw, sh, pl, pr, pt, pb, pv, rw, rh)
            assert np.array_equal(got, want), (method, kw, kh, sw, sh, pl, pr, pt, pb)


# -----------------------------------------------------------------------------------------
# Invariants
# -----------------------------------------------------------------------------------------
def test_max_min_equal_float_extremes_on_finite_data():
    rng = np.random.default_rng(3)
    x = fp16_from_float(rng.normal(0, 100, (4, 9, 11)))
    x = np.where(x & 0x7FFF, x, 0x3C00)                           # no signed zeros
    for method, fn in ((MAX, np.max), (MIN, np.min)):
        out = pool_fp16(x, method, (3, 2), (2, 1), (0, 0, 0, 0), (5, 8))
        f = fp16_to_float(x)
        win = np.lib.stride_tricks.sliding_window_view(f, (2, 3), axis=(1, 2))[:, :, ::2]
        assert np.array_equal(fp16_to_float(out), fn(win, axis=(3, 4)))


def test_average_is_exact_while_the_sums_fit_11_bits():
    """Small integers: every fp17 sum is exact, the reciprocals are powers of two, so the
    average is the exact window sum over 4 (the model against plain integer sums)."""
    rng = np.random.default_rng(4)
    ints = rng.integers(-15, 16, (3, 10, 12))
    x = fp16_from_float(ints)
    out = pool_fp16(x, AVERAGE, (4, 3), (2, 2), (0, 0, 0, 0), (5, 4),
                    recip=(HALF17, HALF17))
    win = np.lib.stride_tricks.sliding_window_view(ints, (3, 4), axis=(1, 2))[:, ::2, ::2]
    assert np.array_equal(fp16_to_float(out), win.sum(axis=(3, 4)) / 4)


def test_average_identity_kernel():
    rng = np.random.default_rng(5)
    x = rp._fp16_data(rng, (2, 5, 6))
    out = pool_fp16(x, AVERAGE, (1, 1), (1, 1), (0, 0, 0, 0), (6, 5))
    finite = (x & 0x7C00) != 0x7C00
    assert np.array_equal(out[finite], x[finite])                  # -0 and denormals too
    assert np.array_equal(out[fp16_is_nan(x)], x[fp16_is_nan(x)])


# -----------------------------------------------------------------------------------------
# run_pdp on nv_full: memory, NaN flush, counters
# -----------------------------------------------------------------------------------------
def _run(layer, counters=None):
    rmap = register_map(NV_FULL)
    mem = Memory()
    for addr, data, _ in layer["images"]:
        mem.scatter(np.arange(addr, addr + len(data)), np.asarray(data, np.uint8))
    written = run_pdp(NV_FULL, GroupView(rmap["PDP"], layer["regs"]["PDP"]),
                      GroupView(rmap["PDP_RDMA"], layer["regs"]["PDP_RDMA"]), mem,
                      counters=counters)
    info = layer["info"]
    base, line, surf = info["dst"]
    out = read_cube(NV_FULL, mem, base, line, surf, info["C"], info["Ho"], info["Wo"], 2,
                    signed=False)
    f = written["PDP"]
    return out, (f["D_NAN_INPUT_NUM"]["NAN_INPUT_NUM"], f["D_INF_INPUT_NUM"]["INF_INPUT_NUM"],
                 f["D_NAN_OUTPUT_NUM"]["NAN_OUTPUT_NUM"])


def _layer(data, method=MAX, nan_to_zero=0, **kw):
    C, H, W = data.shape
    return rp.pdp_layer(NV_FULL, W=W, H=H, C=C, method=method, prec=2, data=data,
                        nan_to_zero=nan_to_zero, **kw)


def test_run_pdp_pools_fp16_from_memory_and_flushes_nans():
    x = np.full((16, 2, 2), 0xBC00, np.int64)                     # -1 everywhere
    x[0, 0, 0] = 0x7E01                                          # a NaN in channel 0
    out, _ = _run(_layer(x, kernel=(2, 2)))
    assert out[0, 0, 0] == 0x7E01 and np.all(out[1:, 0, 0] == 0xBC00)
    out, _ = _run(_layer(x, kernel=(2, 2), nan_to_zero=1))
    assert out[0, 0, 0] == 0x0000                                # the NaN became +0


def test_nan_counters_miss_the_last_beat():
    """16 channels (one 32-byte atom per position, four 8-byte beats): a NaN / inf in
    channels 12..15 of the last position is not counted, elsewhere it is."""
    x = np.full((16, 1, 3), 0x3C00, np.int64)
    x[0, 0, 0] = 0x7E00                                          # counted
    x[13, 0, 2] = 0x7E00                                         # last beat: missed
    x[5, 0, 2] = 0xFC00                                          # counted (inf)
    x[15, 0, 2] = 0x7C00                                         # missed (inf)
    out, counts = _run(_layer(x, kernel=(1, 1)))
    assert counts == (1, 1, 1)                                   # output NaN at 13: missed
    out, counts = _run(_layer(x, kernel=(1, 1), nan_to_zero=1))
    assert counts == (1, 1, 0)                                   # counted before the flush


def test_nan_counters_count_reread_split_columns_and_padding_lanes():
    x = np.full((3, 1, 10), 0x3C00, np.int64)                    # 3 channels: 13 pad lanes
    x[0, 0, 4] = 0x7E00
    layer = _layer(x, kernel=(3, 1), stride=(2, 1),
                   split=(1, (5, 1, 5), (2, 1, 2)))              # the second pass re-reads 4
    image = layer["images"][0][1]
    image[10:12] = (0x00, 0x7E)                                  # a NaN in padding lane 5
    out, counts = _run(layer)
    # inputs: column 4 twice + the padding lane; outputs: channel 0 at 1 and 2, lane 5 at 0
    assert counts == (3, 0, 3)
    assert out[0, 0, 1] == out[0, 0, 2] == 0x7E00


def test_nan_counter_slots_across_offline_and_flying_layers():
    c = NanCounters()
    assert c.layer((3, 1), flying=False) == (3, 1)
    assert c.layer((0, 0), flying=True) == (0, 0)                # a stale slot
    assert c.layer((5, 2), flying=False) == (3, 1)               # the previous offline layer's
    assert c.layer((7, 0), flying=False) == (5, 2)
    assert c.layer((0, 0), flying=True) == (7, 0)
    assert c.layer((1, 1), flying=False) == (1, 1)               # paired again


# -----------------------------------------------------------------------------------------
# Random fp16 programs on the golden core
# -----------------------------------------------------------------------------------------
def test_random_fp16_programs_run(tmp_path):
    paths = rp.write_random_traces(NV_FULL, str(tmp_path), 40, seed=21, flying_fp16=True)
    fp16 = [p for p in paths if any("NVDLA_PDP.D_DATA_FORMAT_0, 0x2)" in f.read_text()
                                    for f in Path(p).glob("*.cfg"))]
    assert len(fp16) >= 8
    for p in fp16:
        res = rp.run_trace_golden(p, NV_FULL)
        assert res.passed, res.message
    # redraws come from the SDP half of SDP->PDP layers only, never from a PDP rule
    assert not [m for m in rp.reject_log() if "PDP.D_" in m or "PDP_RDMA.D_" in m]


def test_builds_without_fp16_draw_no_fp16(tmp_path):
    paths = rp.write_random_traces(NV_FULL, str(tmp_path), 20, seed=21, fp16=False)
    for p in paths:
        for f in Path(p).glob("*.cfg"):
            assert "NVDLA_PDP.D_DATA_FORMAT_0, 0x2)" not in f.read_text()


def test_split_width_computes_the_unsplit_fp16_pooling():
    from sim.pdp import pool_program
    from tests.test_pdp_model import _program
    rng = np.random.default_rng(8)
    n = 0
    while n < 30:
        layer = rp.random_layer(NV_FULL, rng, prec=2)
        info = layer["info"]
        if info["split"] is None:
            continue
        p = _program(NV_FULL, layer)
        cube = rp._fp16_data(rng, (16 * -(-info["C"] // 16), info["H"], info["W"]))
        whole = pool_fp16(cube, p.method, info["kernel"], info["stride"], info["pad"],
                          (p.out_width, p.out_height), p.pad_values, (p.recip_w, p.recip_h))
        assert np.array_equal(pool_program(p, cube), whole)
        n += 1
