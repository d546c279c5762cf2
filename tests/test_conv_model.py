"""Golden model of the direct convolution (sim/conv): NVDLA's dc traces, hand-checked layers
against an independent naive reference, random programs from sim.conv.random_programs through
the trace runner, and invalid programs rejected naming the register field."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.conv import ConvUnit
from sim.conv import random_programs as rp
from sim.core import GoldenCore
from sim.formats.feature import unpack_feature
from sim.trace import parse_trace
from sim.trace_run import run_golden
from sim.units import default_units

from .conftest import TRACES

NV_SMALL = NvdlaConfig.preset("nv_small")
NV_SMALL_256 = NvdlaConfig.preset("nv_small_256")
NV_LARGE = NvdlaConfig.preset("nv_large")


def _core(cfg):
    units = default_units(cfg)
    if "CONV" not in units:             # before sim/units.py registers the convolution unit
        units["CONV"] = ConvUnit()
    return GoldenCore(cfg, units)


# ------------------------------------------------------------------------------------------
# (a) NVDLA's dc traces
# ------------------------------------------------------------------------------------------
DC_DIR = TRACES / "nv_small"
DC_TRACES = sorted(p.name for p in DC_DIR.glob("dc_*")) if DC_DIR.is_dir() else []


@pytest.mark.skipif(not DC_TRACES, reason=f"NVDLA dc traces not found in {DC_DIR}")
def test_nine_dc_traces_are_present():
    assert len(DC_TRACES) == 9


@pytest.mark.skipif(not DC_TRACES, reason=f"NVDLA dc traces not found in {DC_DIR}")
@pytest.mark.parametrize("name", DC_TRACES or ["none"])
def test_dc_trace_passes_on_golden(name):
    res = run_golden(parse_trace(str(DC_DIR / name), NV_SMALL), NV_SMALL, core=_core(NV_SMALL))
    assert res.passed, res.message
    assert res.checks and all(c.passed for c in res.checks)


# ------------------------------------------------------------------------------------------
# (b) hand-checked layers against a naive reference
# ------------------------------------------------------------------------------------------
def naive_conv(data, weights, stride, dilation, pad, pad_value):
    """Exact sums [K, Ho, Wo]: loops over outputs and taps, one dot product over channels."""
    C, H, W = data.shape
    K, _, R, S = weights.shape
    (sx, sy), (dx, dy), (pl, pr, pt, pb) = stride, dilation, pad
    Ho = (H + pt + pb - ((R - 1) * dy + 1)) // sy + 1
    Wo = (W + pl + pr - ((S - 1) * dx + 1)) // sx + 1
    out = np.zeros((K, Ho, Wo), dtype=np.int64)
    for k in range(K):
        for oy in range(Ho):
            for ox in range(Wo):
                acc = 0
                for r in range(R):
                    for s in range(S):
                        iy = oy * sy + r * dy - pt
                        ix = ox * sx + s * dx - pl
                        if 0 <= iy < H and 0 <= ix < W:
                            col = data[:, iy, ix].astype(np.int64)
                        else:
                            col = np.full(C, pad_value, dtype=np.int64)
                        acc += int(np.dot(col, weights[k, :, r, s].astype(np.int64)))
                out[k, oy, ox] = acc
    return out


def truncate_round(x, n):
    """Shift right by n rounding to nearest, ties away from zero; int32 saturation count."""
    x = np.asarray(x, dtype=object)
    if n:
        half = 1 << (n - 1)
        x = np.vectorize(lambda v: (abs(v) + half) >> n if v >= 0 else -((abs(v) + half) >> n),
                         otypes=[object])(x)
    lo, hi = -(1 << 31), (1 << 31) - 1
    sat = int(sum(1 for v in x.ravel() if v < lo or v > hi))
    return np.clip(x.astype(np.float64), lo, hi).astype(np.int64), sat


def run_layer(cfg, tmp_path, layers, name="hand"):
    """Run the layers' trace on a golden core; returns the core."""
    path = rp.write_trace(str(tmp_path), name, layers)
    core = _core(cfg)
    res = run_golden(parse_trace(path, cfg), cfg, core=core)
    assert len(res.checks) == len(layers), res.message
    return core


def read_output(cfg, core, layer):
    info = layer["info"]
    base, line, surf = info["dst"]
    K, Ho, Wo = info["K"], info["Ho"], info["Wo"]
    size = layer["window"][1]
    mem = core.dbb.read(base, size)
    return unpack_feature(mem, 0, K, Ho, Wo, cfg.memory_atom, "int8", line, surf)


HAND = [
    # name, cfg, spec (without data/weights), data range, weight range
    ("1x1", NV_SMALL, dict(W=3, H=2, C=5, K=3), 20, 5),
    ("pad_value", NV_SMALL, dict(W=4, H=3, C=9, K=2, kh=3, kw=3, pad=(1, 2, 2, 1),
                                 pad_value=0xFFFD), 3, 2),
    ("pad_value_high_byte_ignored", NV_SMALL, dict(W=3, H=3, C=4, K=1, kh=2, kw=2,
                                                   pad=(1, 1, 1, 1), pad_value=0x7E05), 3, 2),
    ("stride", NV_SMALL, dict(W=9, H=7, C=3, K=9, kh=3, kw=2, stride=(3, 2)), 3, 3),
    ("dilation", NV_SMALL, dict(W=8, H=9, C=10, K=4, kh=3, kw=2, dilation=(4, 3),
                                pad=(1, 0, 0, 2), pad_value=2), 3, 2),
    ("stride_dilation_pad", NV_SMALL_256, dict(W=7, H=6, C=33, K=11, kh=2, kw=3,
                                               stride=(2, 3), dilation=(2, 2),
                                               pad=(2, 1, 1, 3), pad_value=0xFFFE), 2, 1),
    ("truncate_ties", NV_SMALL, dict(W=5, H=4, C=7, K=5, kh=2, kw=2, clip=1), 4, 3),
    ("truncate_3", NV_SMALL, dict(W=5, H=4, C=7, K=5, kh=2, kw=2, clip=3, pad=(1, 1, 0, 0),
                                  pad_value=5), 10, 5),
    ("unpacked_lines_grain", NV_LARGE, dict(W=6, H=5, C=70, K=33, kh=2, kw=3, line_extra=2,
                                            surf_extra=1, clip=2), 4, 2),
    ("packed_grain", NV_SMALL, dict(W=5, H=6, C=12, K=3, kh=3, kw=1, grain=4), 3, 3),
]


@pytest.mark.parametrize("name, cfg, spec, drange, wrange", HAND, ids=[h[0] for h in HAND])
def test_hand_checked_layer(tmp_path, name, cfg, spec, drange, wrange):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    C, H, W, K = spec["C"], spec["H"], spec["W"], spec["K"]
    kh, kw = spec.get("kh", 1), spec.get("kw", 1)
    data = rng.integers(-drange, drange + 1, (C, H, W))
    weights = rng.integers(-wrange, wrange + 1, (K, C, kh, kw))
    layer = rp.conv_layer(cfg, data=data, weights=weights, **spec)
    core = run_layer(cfg, tmp_path, [layer])
    pv = spec.get("pad_value", 0) & 0xFF
    pv = pv - 256 if pv & 0x80 else pv
    sums = naive_conv(data, weights, spec.get("stride", (1, 1)), spec.get("dilation", (1, 1)),
                      spec.get("pad", (0, 0, 0, 0)), pv)
    want, sat = truncate_round(sums, spec.get("clip", 0))
    assert sat == 0
    got = read_output(cfg, core, layer)
    np.testing.assert_array_equal(got, np.clip(want, -128, 127))
    assert core.field("CACC", "D_OUT_SATURATION", "SAT_COUNT", group=0) == 0
    assert np.count_nonzero(np.abs(want) < 127) > want.size // 2     # the check sees values


def test_truncation_ties_round_away_from_zero(tmp_path):
    """Sums of +-1.5, +-2.5 after a 1-bit truncation: 2, -2, 3, -3."""
    cfg = NV_SMALL
    data = np.array([3, -3, 5, -5]).reshape(1, 1, 4)
    weights = np.ones((1, 1, 1, 1), dtype=np.int64)
    layer = rp.conv_layer(cfg, W=4, H=1, C=1, K=1, clip=1, data=data, weights=weights)
    core = run_layer(cfg, tmp_path, [layer])
    assert read_output(cfg, core, layer)[0, 0].tolist() == [2, -2, 3, -3]


def test_cacc_saturation_count(tmp_path):
    """nv_large's CBUF holds an int8 dot product long enough to overflow int32: 8x8 taps x
    2112 channels of (-128) x (-128) = 2^31 + 2^21 saturates; CACC counts every such output."""
    cfg = NV_LARGE
    C, H, W = 2112, 8, 9
    data = np.full((C, H, W), -128)
    data[:, :, 8] = 1                        # the second output window sees smaller data
    weights = np.full((2, C, 8, 8), -128)
    weights[1, : C // 2] = 127
    layer = rp.conv_layer(cfg, W=W, H=H, C=C, K=2, kh=8, kw=8, data=data, weights=weights)
    core = run_layer(cfg, tmp_path, [layer])
    sums = naive_conv(data, weights, (1, 1), (1, 1), (0, 0, 0, 0), 0)
    want, sat = truncate_round(sums, 0)
    assert sat == 1                          # kernel 0 at the first position only
    assert core.field("CACC", "D_OUT_SATURATION", "SAT_COUNT", group=0) == sat
    np.testing.assert_array_equal(read_output(cfg, core, layer), np.clip(want, -128, 127))


def test_partial_data_reuse_convolves_kept_and_new_lines(tmp_path):
    """Layer 1 convolves lines 0..4 and releases 2; layer 2 fetches lines 5..7 and convolves
    the kept lines 2..4 with them: the result is the convolution of lines 2..7."""
    cfg = NV_SMALL
    rng = np.random.default_rng(3)
    C, W, K = 10, 5, 4
    data = rng.integers(-4, 5, (C, 8, W))
    weights = rng.integers(-3, 4, (K, C, 3, 3))
    common = dict(W=W, C=C, K=K, kh=3, kw=3, banks=(4, 4))
    l1 = rp.conv_layer(cfg, H=8, data=data, weights=weights, fetch_rows=(0, 5), rls_slices=2,
                       **common)
    l2 = rp.conv_layer(cfg, H=8, emit_feature=False, feature_base=l1["info"]["feature_base"],
                       fetch_rows=(5, 3), csc_height=6, reuse=(1, 1, 0, 0), emit_weights=False,
                       weight_base=l1["info"]["weight_base"] + 0, slot=1, **common)
    for b in ("CDMA", "CSC"):                  # layer 1 keeps its weights for layer 2
        l1["regs"][b]["D_MISC_CFG"] |= 1 << 28
    core = run_layer(cfg, tmp_path, [l1, l2])
    assert core.units["CONV"].state.log[-2:] == ["data: partial reuse of 3 slices",
                                                 "weights: reused"]
    for layer, rows in ((l1, data[:, 0:5]), (l2, data[:, 2:8])):
        want, _ = truncate_round(naive_conv(rows, weights, (1, 1), (1, 1), (0, 0, 0, 0), 0), 0)
        np.testing.assert_array_equal(read_output(cfg, core, layer), np.clip(want, -128, 127))


# ------------------------------------------------------------------------------------------
# (c) random programs through the trace runner
# ------------------------------------------------------------------------------------------
RANDOM = [(NV_SMALL, 100, 11), (NV_SMALL_256, 30, 12), (NV_LARGE, 20, 13)]


@pytest.mark.parametrize("cfg, count, seed", RANDOM, ids=[c.name for c, _, _ in RANDOM])
def test_random_programs_pass_on_golden(tmp_path, cfg, count, seed):
    paths = rp.write_random_traces(cfg, str(tmp_path), count, seed=seed)
    assert len(paths) == count
    assert not rp.reject_log(), rp.reject_log()[:3]        # every drawn program is valid
    logs = []
    for p in paths:
        core = _core(cfg)
        res = run_golden(parse_trace(p, cfg), cfg, core=core)
        assert res.passed, f"{p}: {res.message}"
        assert res.checks and all(c.expected for c in res.checks)
        logs += core.units["CONV"].state.log
    if cfg is NV_SMALL:                       # the batch exercises the CBUF reuse paths
        assert any("full reuse" in m for m in logs)
        assert any("partial reuse" in m for m in logs)
        assert "weights: reused" in logs


def test_random_programs_are_deterministic(tmp_path):
    a = rp.write_random_traces(NV_SMALL, str(tmp_path / "a"), 6, seed=5)
    b = rp.write_random_traces(NV_SMALL, str(tmp_path / "b"), 6, seed=5)
    for pa, pb in zip(a, b):
        fa = sorted(os.listdir(pa))
        assert fa == sorted(os.listdir(pb))
        for f in fa:
            with open(os.path.join(pa, f)) as x, open(os.path.join(pb, f)) as y:
                assert x.read() == y.read()


def test_random_trace_language(tmp_path):
    """The generated traces use the dc traces' language: guard-banded check windows, the CBUF
    flush poll before the first enable, enables ending with CDMA, SDP interrupts."""
    (path,) = rp.write_random_traces(NV_SMALL, str(tmp_path), 1, seed=9,
                                     two_layer_share=0.0)
    name = os.path.basename(path)
    text = open(os.path.join(path, name + ".cfg")).read()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("//")]
    enables = [ln for ln in lines if "D_OP_ENABLE_0" in ln]
    blocks = [ln.split("NVDLA_")[1].split(".")[0] for ln in enables]
    assert blocks[-5:] == ["CACC", "CMAC_A", "CMAC_B", "CSC", "CDMA"]
    assert blocks[blocks.index("CACC") - 1] == "SDP"
    poll = lines.index("poll_reg_equal(NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0,0x1);")
    assert poll < lines.index(enables[0])
    assert any(ln.startswith("intr_notify(SDP_0") for ln in lines)
    # the guard bands are zero: outside the output nothing is written
    trace = parse_trace(path, NV_SMALL)
    core = _core(NV_SMALL)
    assert run_golden(trace, NV_SMALL, core=core).passed
    chk = [c for c in trace.commands if type(c).__name__ == "CheckCrc"][0]
    mem = core.mem(chk.mem)
    assert not mem.read(chk.addr, 64).any() and not mem.read(chk.addr + chk.size - 64, 64).any()


# ------------------------------------------------------------------------------------------
# (d) invalid programs
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [NV_SMALL, NV_SMALL_256, NV_LARGE], ids=lambda c: c.name)
def test_invalid_programs_name_the_field(tmp_path, cfg):
    cases = rp.write_invalid_traces(cfg, str(tmp_path))
    names = {os.path.basename(p) for p, _ in cases}
    for must in ("bank_overflow", "kernel_too_large", "output_too_large", "entry_per_slice",
                 "in_precision_without_cvt", "cdma_csc_stride", "weight_bytes_too_small",
                 "missing_precision", "data_reuse_geometry", "weight_reuse_geometry"):
        assert f"conv_invalid_{must}" in names
    for path, fld in cases:
        res = run_golden(parse_trace(path, cfg), cfg, core=_core(cfg))
        assert not res.passed and fld in res.message, (path, fld, res.message)


@pytest.mark.parametrize("prec, in_prec, cvt", [(1, 0, 1), (0, 1, 1), (1, 0, 0), (2, 1, 0)])
def test_feature_input_converts_no_precision(prec, in_prec, cvt):
    """Table 29: direct convolution takes feature data of its own precision; int8 feature data
    into an int16 pipeline (or int16 into int8, int16 into fp16) is an invalid case even with
    the input convertor enabled (it scales within the precision)."""
    from sim.conv.program import ConvProgramError, decode
    from sim.regs import GroupView
    from sim.random_traces import set_fields
    from arch.registers import register_map
    cfg = NvdlaConfig.preset("nv_full")
    layer = rp._base_layer(cfg, prec=prec)
    for b in ("CDMA", "CSC"):
        set_fields(cfg, layer, b, "D_MISC_CFG", IN_PRECISION=in_prec)
    set_fields(cfg, layer, "CDMA", "D_CVT_CFG", CVT_EN=cvt)
    rmap = register_map(cfg)
    views = {b: GroupView(rmap[b], layer["regs"][b])
             for b in ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")}
    with pytest.raises(ConvProgramError, match=r"IN_PRECISION=.*Table 29.*invalid case"):
        decode(cfg, *views.values())


def test_invalid_program_base_is_valid(tmp_path):
    """The unmutated starting point of the mutations passes (so each failure is its
    mutation's)."""
    cfg = NV_SMALL
    layer = rp._base_layer(cfg)
    path = rp.write_trace(str(tmp_path), "base", [layer])
    core = _core(cfg)
    res = run_golden(parse_trace(path, cfg), cfg, core=core)
    assert len(res.checks) == 1 and res.checks[0].actual != zlib.crc32(bytes(layer["window"][1]))
