"""fp16 direct convolution up to CACC's output (sim.conv.unit.run_conv_fp16_cacc).

The MAC cell and the accumulator are checked against NVDLA's Verilog in
tests/test_cmac_fp16.py and tests/test_cacc_fp16.py; here the layer level: CDMA's fetch of fp16
features and weights (the int16 layout), the sequencer's operands (padding with the fp16
``D_ZERO_PADDING_VALUE``, stride, dilation, channel groups of a CBUF entry's 16-bit elements:
64 on nv_full, as NVDLA's cell), and the order in
which CACC folds the partial sums (channel groups, then kernel rows, then kernel columns),
against a per-output loop over the same cell and accumulator; and the result against float64.
On the golden core, whole fp16 layers fly into SDP's fp16 datapath; SDP must process what
CACC delivers (fp32 for fp16, int32 otherwise).
"""

from __future__ import annotations

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.conv.cacc import fp48_add, fp48_to_fp32
from sim.conv.cdma import CbufState
from sim.conv.cmac import fp16_mac_cell
from sim.conv.program import ConvProgramError, decode
from sim.conv import random_programs as rp
from sim.conv.unit import BLOCKS, run_conv_fp16_cacc
from sim.memory import SparseMemory
from sim.nvfloat import fp16_from_float, fp16_to_float
from sim.regs import GroupView

from .conftest import NV_SMALL_FP16_ROWS

NV_FULL = NvdlaConfig.preset("nv_full")


class _Core:
    """The parts of a golden core the conv pipeline reads: register views and memories."""

    def __init__(self, cfg, layer):
        self.cfg = cfg
        rmap = register_map(cfg)
        self._views = {b: GroupView(rmap[b], layer["regs"].get(b, {})) for b in BLOCKS}
        self.dbb, self.sram = SparseMemory(), SparseMemory()
        for addr, data, ram in layer["images"]:
            (self.dbb if ram else self.sram).write(addr, data)

    def view(self, block, group=None):
        return self._views[block]


def _signed16(codes):
    c = np.asarray(codes, dtype=np.int64) & 0xFFFF
    return np.where(c >= 0x8000, c - 0x10000, c)


def _wide(rng, shape):
    """fp16 values over 2^-14 .. 2^15 (sums whose order changes the rounding)."""
    v = rng.uniform(1, 2, shape) * 2.0 ** rng.integers(-14, 15, shape)
    return np.where(rng.random(shape) < 0.5, -v, v)


def _layer(cfg, rng, spec, special=0.0, wide=False):
    C, K, kh, kw = spec["C"], spec["K"], spec.get("kh", 1), spec.get("kw", 1)
    if wide:
        data = fp16_from_float(_wide(rng, (C, spec["H"], spec["W"])))
        wts = fp16_from_float(_wide(rng, (K, C, kh, kw)))
    else:
        data = fp16_from_float(rng.uniform(-2, 2, (C, spec["H"], spec["W"])))
        wts = fp16_from_float(rng.uniform(-1, 1, (K, C, kh, kw)))
    if special:
        pool = np.array([0, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x7C00, 0xFC00, 0x0400])
        for a in (data, wts):
            m = rng.random(a.shape) < special
            a[m] = rng.choice(pool, int(m.sum()))
    layer = rp.conv_layer(cfg, prec=2, data=_signed16(data), weights=_signed16(wts), **spec)
    return layer, data, wts


def _reference(spec, data, wts, atom_c, pad_value, group_atoms=1):
    """Per output: the cell on each (channel group, kernel row, kernel column, atom of the
    group) atom, folded in that order (``group_atoms`` atoms of ``atom_c`` channels a group)."""
    C, H, W = data.shape
    K, _, kh, kw = wts.shape
    pl, pr, pt, pb = spec.get("pad", (0, 0, 0, 0))
    sx, sy = spec.get("stride", (1, 1))
    dx, dy = spec.get("dilation", (1, 1))
    Wo = (W + pl + pr - (kw - 1) * dx - 1) // sx + 1
    Ho = (H + pt + pb - (kh - 1) * dy - 1) // sy + 1
    G = -(-C // atom_c)
    out = np.zeros((K, Ho, Wo), np.int64)
    for oy in range(Ho):
        for ox in range(Wo):
            ops = []
            for q in range(-(-G // group_atoms)):
                for r in range(kh):
                    for s in range(kw):
                        for g in range(q * group_atoms, min(G, (q + 1) * group_atoms)):
                            ch = range(g * atom_c, min(C, (g + 1) * atom_c))
                            iy, ix = oy * sy + r * dy - pt, ox * sx + s * dx - pl
                            inside = 0 <= iy < H and 0 <= ix < W
                            d = [data[c, iy, ix] if inside else pad_value for c in ch]
                            ops.append((d, [wts[:, c, r, s] for c in ch]))
            for k in range(K):
                acc = None
                for d, w in ops:
                    ps, _ = fp16_mac_cell(np.array([x[k] for x in w]), np.array(d))
                    acc = fp48_add(ps, 0 if acc is None else acc, acc is not None)
                out[k, oy, ox] = fp48_to_fp32(acc)
    return out


def _f32(codes):
    f = (np.asarray(codes, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):                # (signalling NaN codes)
        return f.astype(float)


CASES = [
    ("1x1", NV_FULL, dict(W=3, H=2, C=40, K=5)),
    ("3x3_pad", NV_SMALL_FP16_ROWS, dict(W=5, H=4, C=9, K=3, kh=3, kw=3, pad=(1, 1, 1, 1),
                                     pad_value=0x3C00)),
    ("stride_dilation", NV_SMALL_FP16_ROWS, dict(W=8, H=7, C=6, K=5, kh=2, kw=3, stride=(2, 1),
                                             dilation=(1, 2), pad=(2, 0, 1, 1),
                                             pad_value=0xBA00)),
    ("groups", NV_FULL, dict(W=4, H=3, C=150, K=20, kh=2, kw=2)),
    ("wide", NV_SMALL_FP16_ROWS, dict(W=4, H=4, C=11, K=4, kh=2, kw=2, pad=(1, 0, 0, 1),
                                 pad_value=0x4A00)),
]


@pytest.mark.parametrize("name,cfg,spec", CASES, ids=[c[0] for c in CASES])
def test_cacc_output_matches_reference(name, cfg, spec):
    rng = np.random.default_rng(len(name))
    layer, data, wts = _layer(cfg, rng, spec, special=0.05 if name == "groups" else 0.0,
                              wide=name == "wide")
    got = run_conv_fp16_cacc(_Core(cfg, layer), CbufState())
    assert got.shape[0] == 1
    atom_c = cfg.cbuf_entry_bytes // 2
    want = _reference(spec, data, wts, atom_c, spec.get("pad_value", 0),
                      max(1, cfg.atomic_c // atom_c))
    assert np.array_equal(got[0], want)


@pytest.mark.parametrize("name,cfg,spec", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_cacc_output_close_to_float(name, cfg, spec):
    rng = np.random.default_rng(7)
    layer, data, wts = _layer(cfg, rng, spec)
    got = _f32(run_conv_fp16_cacc(_Core(cfg, layer), CbufState()))[0]
    pv = float(fp16_to_float(spec.get("pad_value", 0)))
    pl, pr, pt, pb = spec.get("pad", (0, 0, 0, 0))
    x = np.pad(fp16_to_float(data), ((0, 0), (pt, pb), (pl, pr)), constant_values=pv)
    w = fp16_to_float(wts)
    sx, sy = spec.get("stride", (1, 1))
    dx, dy = spec.get("dilation", (1, 1))
    K, C, kh, kw = w.shape
    Ho, Wo = got.shape[1:]
    want = np.zeros_like(got)
    for r in range(kh):
        for s in range(kw):
            win = x[:, r * dy:r * dy + (Ho - 1) * sy + 1:sy, s * dx:s * dx + (Wo - 1) * sx + 1:sx]
            want += np.einsum("chw,kc->khw", win, w[:, :, r, s])
    assert np.allclose(got, want, rtol=0, atol=2.0 ** -12 * C * kh * kw)


def test_compressed_weights():
    """Compressed fp16 weights (half of them zero) give the same output as the reference."""
    cfg = NV_FULL
    rng = np.random.default_rng(3)
    spec = dict(W=3, H=3, C=70, K=5, kh=2, kw=2)
    data = fp16_from_float(rng.uniform(-2, 2, (70, 3, 3)))
    wts = fp16_from_float(rng.uniform(-1, 1, (5, 70, 2, 2)))
    wts[rng.random(wts.shape) < 0.5] = 0
    wts[rng.random(wts.shape) < 0.05] = 0x8000
    layer = rp.conv_layer(cfg, prec=2, data=_signed16(data), weights=_signed16(wts),
                          compress=True, **spec)
    got = run_conv_fp16_cacc(_Core(cfg, layer), CbufState())
    assert np.array_equal(got[0], _reference(spec, data, wts, 64, 0))


def test_nan_to_zero_flushes_fetched_nan_features():
    """CDMA's D_NAN_FLUSH_TO_ZERO: the fetched NaN features become +0 before the sequencer
    sees them (the layer's output equals the same layer whose NaNs are +0 in memory); weights
    are not flushed (a NaN weight still makes its atoms NaN)."""
    from sim.random_traces import set_fields
    rng = np.random.default_rng(0)
    spec = dict(W=3, H=3, C=6, K=3, kh=2, kw=2, pad=(1, 0, 0, 1), pad_value=0x3C00)
    layer, data, wts = _layer(NV_SMALL_FP16_ROWS, rng, spec)
    nan = rng.random(data.shape) < 0.2
    data = np.where(nan, 0x7E01, data)
    flushed = np.where(nan, 0, data)
    lay_nan = rp.conv_layer(NV_SMALL_FP16_ROWS, prec=2, data=_signed16(data),
                            weights=_signed16(wts), **spec)
    set_fields(NV_SMALL_FP16_ROWS, lay_nan, "CDMA", "D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=1)
    lay_ref = rp.conv_layer(NV_SMALL_FP16_ROWS, prec=2, data=_signed16(flushed),
                            weights=_signed16(wts), **spec)
    got = run_conv_fp16_cacc(_Core(NV_SMALL_FP16_ROWS, lay_nan), CbufState())
    ref = run_conv_fp16_cacc(_Core(NV_SMALL_FP16_ROWS, lay_ref), CbufState())
    assert nan.any() and np.array_equal(got, ref)
    # without the flush the NaNs propagate
    set_fields(NV_SMALL_FP16_ROWS, lay_nan, "CDMA", "D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=0)
    raw = run_conv_fp16_cacc(_Core(NV_SMALL_FP16_ROWS, lay_nan), CbufState())
    assert (_f32(raw) != _f32(raw)).any()
    # a NaN weight is not flushed
    w_nan = wts.copy()
    w_nan[0, 0, 0, 0] = 0x7E00
    lay_w = rp.conv_layer(NV_SMALL_FP16_ROWS, prec=2, data=_signed16(flushed),
                          weights=_signed16(w_nan), **spec)
    set_fields(NV_SMALL_FP16_ROWS, lay_w, "CDMA", "D_NAN_FLUSH_TO_ZERO", NAN_TO_ZERO=1)
    out = run_conv_fp16_cacc(_Core(NV_SMALL_FP16_ROWS, lay_w), CbufState())
    assert np.isnan(_f32(out[0, 0])).all()


def test_nan_inf_input_counts():
    """CDMA's fp16 counters: every fetched feature element (the memory atoms' channel tails
    included) and every fetched weight byte pair (WEIGHT_BYTES), NaNs and infinities apart;
    nothing counted for what a layer reuses."""
    from sim.conv.cdma import load_cbuf
    cfg = NV_SMALL_FP16_ROWS
    rng = np.random.default_rng(3)
    spec = dict(W=2, H=3, C=5, K=3)                 # 5 channels: 2 atoms of 4, one tail slot
    layer, data, wts = _layer(cfg, rng, spec)
    data[0, 0, 0], data[1, 2, 1], data[4, 1, 0] = 0x7E00, 0xFC00, 0x7C00
    wts[2, 4, 0, 0], wts[0, 1, 0, 0] = 0xFFFF, 0x7C00
    layer = rp.conv_layer(cfg, prec=2, data=_signed16(data), weights=_signed16(wts), **spec)
    core = _Core(cfg, layer)
    # the feature image's tail slot (channel 7 of the second atom) of one position: a NaN
    base = layer["info"]["feature_base"]
    core.dbb.write(base + cfg.memory_atom * spec["W"] * spec["H"] + 6,
                   np.array([0x01, 0x7E], np.uint8))
    p = decode(cfg, *(core.view(b) for b in BLOCKS))
    state = CbufState()
    load_cbuf(core, cfg, p, state)
    assert state.stats == {"data": (2, 2), "weight": (1, 1)}, state.stats
def _run_core(cfg, tmp_path, layer, name):
    """Run one conv layer as a trace on the golden core; returns (core, result)."""
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    from .test_conv_model import _core
    path = rp.write_trace(str(tmp_path), name, [layer])
    crcs, err = rp._golden_crcs(cfg, path, 1)        # the model's own CRCs, or its message
    if crcs is not None:
        path = rp.write_trace(str(tmp_path), name, [layer], crcs)
    core = _core(cfg)
    res = run_golden(parse_trace(path, cfg), cfg, core=core)
    if err is not None:
        res.passed, res.message = False, err
    return core, res


def _output(cfg, core, layer):
    """SDP's fp16 output [K, Ho, Wo] from the layer's destination."""
    info = layer["info"]
    base, line, surf = info["dst"]
    per = cfg.memory_atom // 2
    mem = core.sram if layer["window"][2] == 0 else core.dbb
    out = np.zeros((-(-info["K"] // per) * per, info["Ho"], info["Wo"]), np.int64)
    for s in range(out.shape[0] // per):
        for y in range(info["Ho"]):
            raw = mem.read(base + s * surf + y * line, info["Wo"] * cfg.memory_atom)
            out[s * per:(s + 1) * per, y] = raw.view(np.uint16).reshape(-1, per).T
    return out[:info["K"]]


@pytest.mark.parametrize("name,cfg,spec", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_full_core_fp16_conv_into_sdp(tmp_path, name, cfg, spec):
    """A whole fp16 layer on the golden core: CACC's fp32 values fly into SDP (pass-through,
    fp16 out) and land in memory as fp16 (NVDLA's fp32 -> fp16, saturating at 65504)."""
    from sim.nvfloat import fp32_to_fp16
    rng = np.random.default_rng(11)
    layer, data, wts = _layer(cfg, rng, spec, special=0.02)
    cacc = run_conv_fp16_cacc(_Core(cfg, layer), CbufState())[0]
    core, res = _run_core(cfg, tmp_path, layer, f"fp16_{name}")
    assert res.passed, res.message
    expect = np.asarray(fp32_to_fp16(cacc), np.int64) & 0xFFFF
    assert np.array_equal(_output(cfg, core, layer), expect)


@pytest.mark.parametrize("conv_prec,sdp_prec", [(2, 0), (2, 1), (0, 2)])
def test_sdp_must_process_what_cacc_delivers(tmp_path, conv_prec, sdp_prec):
    """fp16 convolution into an integer SDP layer, or integer into fp16: named, no output."""
    from sim.random_traces import set_fields
    rng = np.random.default_rng(5)
    if conv_prec == 2:
        layer, _, _ = _layer(NV_FULL, rng, dict(W=2, H=2, C=4, K=2))
    else:
        layer = rp.conv_layer(NV_FULL, W=2, H=2, C=4, K=2,
                              data=rng.integers(-8, 8, (4, 2, 2)),
                              weights=rng.integers(-8, 8, (2, 4, 1, 1)))
    set_fields(NV_FULL, layer, "SDP", "D_DATA_FORMAT", PROC_PRECISION=sdp_prec)
    _, res = _run_core(NV_FULL, tmp_path, layer, "mismatch")
    assert not res.passed and "SDP.D_DATA_FORMAT.PROC_PRECISION" in res.message, res.message


def test_fp16_conv_limits_of_this_cores_rtl():
    """This core's RTL convolves fp16 on bank-row CBUF entries (nv_small_fp16_rows) and on
    nv_full's two-column ones: no core limit rejects a plain fp16 layer on either."""
    from sim.conv.core_limits import check_core_limits
    rng = np.random.default_rng(0)
    for cfg in (NV_SMALL_FP16_ROWS, NV_FULL):
        layer, _, _ = _layer(cfg, rng, dict(W=2, H=2, C=4, K=2))
        core = _Core(cfg, layer)
        p = decode(cfg, *(core.view(b) for b in BLOCKS))
        assert p.precision == 2
        check_core_limits(cfg, p)


@pytest.mark.parametrize("second, expect", [(8, 2.0 ** -28), (4, 2.0 ** -27)],
                         ids=["two_groups", "one_group_two_entries"])
def test_fold_order_known_answer(second, expect):
    """Channels 0 and ``second``, two kernel columns: 2^30 (channel 0, column 0), 2^-28
    (channel 0, column 1), -2^30 (channel ``second``, column 0), 2^-28 (channel ``second``,
    column 1). nv_small + fp16: a channel group is Atomic-C = 8 channels, sent as its two
    4-channel entries per kernel position. Channel 8 is the next group: groups outermost (NVDLA's
    order) loses the first 2^-28 beside 2^30 and keeps the second: 2^-28. Channel 4 is the same
    group's second entry, folded right after the first for each column: 2^30 - 2^30, then the
    two 2^-28: 2^-27."""
    cfg = NV_SMALL_FP16_ROWS
    C = 16
    data = np.zeros((C, 1, 2), np.int64)
    wts = np.zeros((1, C, 1, 2), np.int64)
    big, tiny = fp16_from_float(2.0 ** 15), fp16_from_float(2.0 ** -14)
    data[0, 0, 0], data[second, 0, 0] = big, big | 0x8000
    data[0, 0, 1], data[second, 0, 1] = tiny, tiny
    wts[0, 0, 0, 0], wts[0, second, 0, 0] = big, big
    wts[0, 0, 0, 1], wts[0, second, 0, 1] = tiny, tiny
    layer = rp.conv_layer(cfg, W=2, H=1, C=C, K=1, kw=2, prec=2, data=_signed16(data),
                          weights=_signed16(wts))
    got = _f32(run_conv_fp16_cacc(_Core(cfg, layer), CbufState()))
    assert got.shape == (1, 1, 1, 1) and got[0, 0, 0, 0] == expect
