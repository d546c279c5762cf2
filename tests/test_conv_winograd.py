"""Winograd convolution on the golden model (sim.conv.winograd, CONV_MODE=WINOGRAD).

Fast tests: exactly transformed weights give 4 x the direct convolution (the existing direct
golden model) at strides 1..3; the PRA's rounding and saturation against a per-tile loop; the
weight layout against NVDLA's CSC read order written out with loops; convertor, compressed
weights, CSC padding ignored, ATOMICS, invalid programs (each naming its field); SDP's
Winograd rules; random Winograd traces (single layers and two-layer programs) through the
golden core, and each kind of random pair's second layer against the same layer run alone
from memory.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.conv import random_programs as rp
from sim.conv import winograd_programs as wp
from sim.conv.cdma import CbufState
from sim.conv.core_limits import check_core_limits
from sim.conv.program import ConvProgramError, decode
from sim.conv.unit import BLOCKS, run_conv
from sim.conv.winograd_math import WINO_BT, extend_channels, pra_int
from sim.formats.winograd import winograd_extend_stride, winograd_transform
from sim.memory import SparseMemory
from sim.random_traces import GUARD, Redraw, set_fields
from sim.regs import GroupView

from .test_conv_model import naive_conv

NV_FULL = NvdlaConfig.preset("nv_full")
NV_LARGE = NvdlaConfig.preset("nv_large")


class _Core:
    """Register views and memories of one layer (what the conv pipeline reads)."""

    def __init__(self, cfg, layer):
        self.cfg = cfg
        rmap = register_map(cfg)
        self._views = {b: GroupView(rmap[b], layer["regs"].get(b, {}))
                       for b in BLOCKS + ("SDP",)}
        self.dbb, self.sram = SparseMemory(), SparseMemory()
        self.add(layer)

    def add(self, layer):
        for addr, data, ram in layer["images"]:
            (self.dbb if ram else self.sram).write(addr, data)

    def view(self, block, group=None):
        return self._views[block]


def _run(cfg, layer, state=None):
    """(CACC's output [K, Ho, Wo], hardware-written fields) of one layer."""
    out, written = run_conv(_Core(cfg, layer), state or CbufState())
    return out[0], written


def _exact(rng, prec, K, C, R, S, s):
    """Raw weights whose (2G) W (2G)^T fits the precision, and that transform (4 G W G^T)."""
    w = rng.integers(-10, 11, (K, C, R, S)) if prec == 0 else \
        rng.integers(-200, 201, (K, C, R, S))
    wt4 = winograd_transform(winograd_extend_stride(w, s, s), ("int8", "int16")[prec], 2)
    return w, wt4


def _data(rng, prec, shape):
    # int8: |B^T d B| <= 4 |d| must stay inside int8 for an exact PRA
    return rng.integers(-31, 32, shape) if prec == 0 else rng.integers(-1500, 1501, shape)


# ------------------------------------------------------------------------------------------
# against the direct convolution
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prec", [0, 1])
@pytest.mark.parametrize("s", [1, 2, 3])
def test_exact_weights_give_four_times_direct(prec, s):
    """Winograd of 4 G W G^T (exact integers) is 4 x the direct convolution of W: the direct
    golden model (sim.conv.cmac.convolve via a direct layer) on the same data, padding, pad
    value and stride, with the kernel's R x S of up to 3s."""
    rng = np.random.default_rng(10 * prec + s)
    C = (32, 16)[prec] * (1 + (s == 1))
    K = 7
    R, S = (3, 3) if s == 1 else (3 * s - 1, 3 * s)
    pad = (1, 3 * s - 1, 2, 4 * s - 2) if s > 1 else (1, 2, 1, 3)
    W, H = 8 * s - pad[0] - pad[1], 12 * s - pad[2] - pad[3]
    data = _data(rng, prec, (C, H, W))
    w, wt4 = _exact(rng, prec, K, C, R, S, s)
    pv = (-3, -1234)[prec]
    layer = wp.wino_layer(NV_FULL, W=W, H=H, C=C, K=K, wt4=wt4, data=data, stride=(s, s),
                          pad=pad, pad_value=pv & 0xFFFF, prec=prec)
    got, _ = _run(NV_FULL, layer)
    Ho, Wo = layer["info"]["Ho"], layer["info"]["Wo"]
    direct = rp.conv_layer(NV_FULL, W=W, H=H, C=C, K=K, kh=R, kw=S, stride=(s, s), pad=pad,
                           pad_value=pv & 0xFFFF, prec=prec, data=data, weights=w)
    want, _ = _run(NV_FULL, direct)
    assert got.shape == (K, Ho, Wo)
    np.testing.assert_array_equal(got, 4 * want[:, :Ho, :Wo])
    np.testing.assert_array_equal(want, naive_conv(data, w, (s, s), (1, 1), pad, pv))
    assert np.count_nonzero(got) > got.size // 2


def test_pra_truncation_and_clip():
    """PRA_TRUNCATE and CLIP_TRUNCATE change the output as their per-tile reference says."""
    rng = np.random.default_rng(4)
    C, K = 32, 3
    data = rng.integers(-128, 128, (C, 8, 8))
    wt4 = rng.integers(-128, 128, (K, C, 4, 4))
    for pra, clip in ((0, 0), (1, 3), (2, 9), (3, 16)):
        layer = wp.wino_layer(NV_FULL, W=8, H=8, C=C, K=K, wt4=wt4, data=data, pad_value=0,
                              pra_truncate=pra, clip=clip)
        got, written = _run(NV_FULL, layer)
        want, sat = _reference(data[None], wt4, min(pra, 2), 8, 4, 4, clip)
        np.testing.assert_array_equal(got, want)
        assert written["CACC"]["D_OUT_SATURATION"]["SAT_COUNT"] == sat


def _pra_tile(tile, shift, bits):
    """B^T d B of one 4 x 4 tile with loops, shifted rounding half away from zero, saturated."""
    out = np.zeros((4, 4), np.int64)
    for i in range(4):
        for j in range(4):
            acc = 0
            for a in range(4):
                for b in range(4):
                    acc += int(WINO_BT[i, a]) * int(tile[a, b]) * int(WINO_BT[j, b])
            if shift:
                mag = (abs(acc) + (1 << (shift - 1))) >> shift
                acc = mag if acc >= 0 else -mag
            out[i, j] = max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, acc))
    return out


def _reference(cube, wt4, shift, bits, Ho, Wo, clip):
    """Per-tile loops: ([K, Ho, Wo] delivered, saturation count) of an extended cube
    [C, H, W] (a leading 1) and stored weights [K, C, 4, 4]."""
    cube = cube[0]
    K, C = wt4.shape[:2]
    out = np.zeros((K, Ho, Wo), np.int64)
    AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])
    for ty in range(Ho // 2):
        for tx in range(Wo // 2):
            v = [_pra_tile(cube[c, 2 * ty:2 * ty + 4, 2 * tx:2 * tx + 4], shift, bits)
                 for c in range(C)]
            for k in range(K):
                m = sum(v[c] * wt4[k, c] for c in range(C))
                out[k, 2 * ty:2 * ty + 2, 2 * tx:2 * tx + 2] = AT @ m @ AT.T
    if clip:
        half = 1 << (clip - 1)
        out = np.where(out >= 0, (out + half) >> clip, -((-out + half) >> clip))
    sat = int(np.count_nonzero((out > 2**31 - 1) | (out < -2**31)))
    return np.clip(out, -2**31, 2**31 - 1), sat


@pytest.mark.parametrize("bits", [8, 16])
def test_pra_rounding_and_saturation(bits):
    rng = np.random.default_rng(bits)
    lim = 1 << (bits - 1)
    tiles = rng.integers(-lim, lim, (300, 4, 4))
    tiles[:100] = rng.choice([-lim, lim - 1, 0, 1, -1], (100, 4, 4))
    for shift in range(3):
        got = pra_int(tiles, shift, bits)
        want = np.stack([_pra_tile(t, shift, bits) for t in tiles])
        np.testing.assert_array_equal(got, want)
        if shift == 0:                          # both saturation bounds are reached
            assert (got == lim - 1).any() and (got == -lim).any()


def test_channel_extension():
    """Channel (a x sx + b) x C + c of extended (Y, X) is padded (Y sy + a, X sx + b, c)."""
    rng = np.random.default_rng(1)
    sx, sy, C = 3, 2, 5
    p = rng.integers(-9, 9, (8, 12, C))
    e = extend_channels(p, sx, sy)
    assert e.shape == (4, 4, sx * sy * C)
    for Y in range(4):
        for X in range(4):
            for a in range(sy):
                for b in range(sx):
                    for c in range(C):
                        assert e[Y, X, (a * sx + b) * C + c] == p[Y * sy + a, X * sx + b, c]


def test_weight_layout_is_the_csc_read_order():
    """NVDLA's CSC (SendWeightToMacSequencerWinoConvCommon) reads, per kernel group (Atomic-K
    int8 kernels, half for 16-bit), per 4-channel block, per kernel of the group, one
    4 x 4 x 4 small cube from consecutive weight elements: 16 positions row-major, 4 channels
    fastest. Written out with loops against the golden model's unpacking."""
    from sim.conv.winograd import winograd_weights
    for cfg, prec in ((NV_FULL, 0), (NV_FULL, 1), (NV_LARGE, 0)):
        K, C = 37, 16 * (3 - prec)
        gk = cfg.atomic_k if prec == 0 else cfg.atomic_k // 2
        flat = np.arange(K * C * 16)
        want = np.zeros((K, C, 4, 4), np.int64)
        i = 0
        for g0 in range(0, K, gk):
            for cb in range(0, C, 4):
                for k in range(g0, min(K, g0 + gk)):
                    for r in range(4):
                        for s in range(4):
                            for c in range(cb, cb + 4):
                                want[k, c, r, s] = flat[i]
                                i += 1
        p = type("P", (), {"precision": prec, "kernels": K, "in_channels": C})()
        np.testing.assert_array_equal(winograd_weights(cfg, p, flat), want)


def test_convertor_converts_data_and_padding():
    """The CDMA's input convertor takes the pad elements too (they enter its data stream)."""
    rng = np.random.default_rng(6)
    C, K = 32, 2
    data = rng.integers(-20, 21, (C, 6, 6))
    wt4 = rng.integers(-8, 9, (K, C, 4, 4))
    cvt = (5, 3, 1)
    layer = wp.wino_layer(NV_FULL, W=6, H=6, C=C, K=K, wt4=wt4, data=data, pad=(1, 1, 1, 1),
                          pad_value=7, cvt=cvt)
    got, _ = _run(NV_FULL, layer)
    padded = np.pad(data, ((0, 0), (1, 1), (1, 1)), constant_values=7)
    conv = (padded - 5) * 3
    conv = np.clip(np.where(conv >= 0, (conv + 1) >> 1, -((-conv + 1) >> 1)), -128, 127)
    want, _ = _reference(conv[None], wt4, 0, 8, 4, 4, 0)
    np.testing.assert_array_equal(got, want)


def test_csc_padding_plays_no_part():
    rng = np.random.default_rng(8)
    C, K = 16, 3
    data = rng.integers(-900, 900, (C, 10, 6))
    wt4 = rng.integers(-900, 900, (K, C, 4, 4))
    layer = wp.wino_layer(NV_FULL, W=6, H=10, C=C, K=K, wt4=wt4, data=data, prec=1,
                          pad=(1, 1, 1, 1), pad_value=0xFFF0)
    base, _ = _run(NV_FULL, layer)
    set_fields(NV_FULL, layer, "CSC", "D_ZERO_PADDING", PAD_LEFT=3, PAD_TOP=2)
    set_fields(NV_FULL, layer, "CSC", "D_ZERO_PADDING_VALUE", PAD_VALUE=0x1234)
    got, _ = _run(NV_FULL, layer)
    np.testing.assert_array_equal(got, base)
    want, _ = _reference(np.pad(data, ((0, 0), (1, 1), (1, 1)), constant_values=-16)[None],
                         wt4, 0, 16, 8, 4, 0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("atomics,ok", [(15, True), (12, True), (11, False), (16, False)])
def test_atomics_range(atomics, ok):
    """NVDLA's sequencer walks ATOMICS / 4 + 1 tiles: 12..15 for a 4 x 4 output."""
    rng = np.random.default_rng(0)
    layer = wp.wino_layer(NV_FULL, W=8, H=8, C=32, K=2, wt4=rng.integers(-3, 4, (2, 32, 4, 4)),
                          data=rng.integers(-3, 4, (32, 8, 8)), atomics=atomics)
    if ok:
        _run(NV_FULL, layer)
    else:
        with pytest.raises(ConvProgramError, match="CSC.D_ATOMICS.ATOMICS"):
            _run(NV_FULL, layer)


def test_compressed_weights():
    rng = np.random.default_rng(12)
    C, K = 32, 40
    data = rng.integers(-30, 31, (C, 8, 8))
    wt4 = np.where(rng.random((K, C, 4, 4)) < 0.6, 0, rng.integers(-60, 61, (K, C, 4, 4)))
    plain = wp.wino_layer(NV_FULL, W=8, H=8, C=C, K=K, wt4=wt4, data=data)
    comp = wp.wino_layer(NV_FULL, W=8, H=8, C=C, K=K, wt4=wt4, data=data, compress=True)
    assert comp["info"]["wbytes"] < plain["info"]["wbytes"]
    np.testing.assert_array_equal(_run(NV_FULL, comp)[0], _run(NV_FULL, plain)[0])


def test_rtl_limit_and_build_without_winograd():
    """nv_full's RTL runs int8 / int16 and fp16 Winograd layers (no core limit); on bank-row
    entries (nv_large + fp16) an fp16 entry is not a small cube, and fp16 Winograd is a limit
    of this core; nv_small has no Winograd."""
    rng = np.random.default_rng(0)
    layer = wp.wino_layer(NV_FULL, W=8, H=8, C=32, K=2, wt4=rng.integers(-3, 4, (2, 32, 4, 4)),
                          data=rng.integers(-3, 4, (32, 8, 8)))
    rmap = register_map(NV_FULL)
    p = decode(NV_FULL, *(GroupView(rmap[b], layer["regs"][b]) for b in BLOCKS))
    check_core_limits(NV_FULL, p)
    f16 = wp.wino_layer(NV_FULL, W=8, H=8, C=16, K=2, prec=2,
                        wt4=np.zeros((2, 16, 4, 4), np.uint16),
                        data=np.zeros((16, 8, 8), np.uint16))
    p = decode(NV_FULL, *(GroupView(rmap[b], f16["regs"][b]) for b in BLOCKS))
    check_core_limits(NV_FULL, p)
    rows = NvdlaConfig.preset("nv_large").replace(
        name="nv_large_fp16", data_types=frozenset({"int8", "int16", "fp16"}))
    f16 = wp.wino_layer(rows, W=8, H=8, C=16, K=2, prec=2,
                        wt4=np.zeros((2, 16, 4, 4), np.uint16),
                        data=np.zeros((16, 8, 8), np.uint16))
    rmap_rows = register_map(rows)
    p = decode(rows, *(GroupView(rmap_rows[b], f16["regs"][b]) for b in BLOCKS))
    with pytest.raises(ConvProgramError, match="CONV_MODE=WINOGRAD.*int8 and int16 only"):
        check_core_limits(rows, p)
    small = NvdlaConfig.preset("nv_small")
    rmap = register_map(small)
    regs = {b: dict(layer["regs"][b]) for b in BLOCKS}
    with pytest.raises(ConvProgramError, match="no Winograd"):
        decode(small, *(GroupView(rmap[b], regs[b]) for b in BLOCKS))


# ------------------------------------------------------------------------------------------
# invalid programs
# ------------------------------------------------------------------------------------------
def _base(cfg=NV_FULL, **over):
    rng = np.random.default_rng(3)
    spec = dict(W=14, H=7, C=32, K=5, stride=(2, 1), pad=(1, 1, 0, 1), pad_value=3)
    spec.update(over)
    we, he, ce, _ = wp.wino_geometry(spec["W"], spec["H"], spec["C"], spec["stride"],
                                     spec["pad"], spec.get("prec", 0), cfg.cbuf_entry_bytes)
    return wp.wino_layer(cfg, wt4=rng.integers(-5, 6, (spec["K"], ce, 4, 4)),
                         data=rng.integers(-5, 6, (spec["C"], spec["H"], spec["W"])), **spec)


def _f(block, reg, **fields):
    def m(layer):
        set_fields(NV_FULL, layer, block, reg, **fields)
    return m


def _both(reg, **fields):
    def m(layer):
        for b in ("CDMA", "CSC"):
            set_fields(NV_FULL, layer, b, reg, **fields)
    return m


INVALID = [
    ("channels_not_whole_atoms", dict(C=20), None, "CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL"),
    ("padded_width", None, _f("CDMA", "D_ZERO_PADDING", PAD_RIGHT=2),
     "CDMA.D_ZERO_PADDING.PAD_RIGHT"),
    ("padded_height", None, _f("CDMA", "D_ZERO_PADDING", PAD_BOTTOM=0),
     "CDMA.D_ZERO_PADDING.PAD_BOTTOM"),
    ("cdma_ext_width", None, _f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=5),
     "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT"),
    ("cdma_ext_height", None, _f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=3),
     "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT"),
    ("csc_ext_width", None, _f("CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=5),
     "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT"),
    ("csc_ext_channels", None, _f("CSC", "D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=31),
     "CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT"),
    ("csc_stride", None, _f("CSC", "D_CONV_STRIDE_EXT", CONV_X_STRIDE_EXT=1),
     "CSC.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT"),
    ("csc_dilation", None, _f("CSC", "D_DILATION_EXT", Y_DILATION_EXT=1),
     "CSC.D_DILATION_EXT.Y_DILATION_EXT"),
    ("kernel_3x3", None, _f("CSC", "D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=2,
                            WEIGHT_HEIGHT_EXT=2), "CSC.D_WEIGHT_SIZE_EXT_0"),
    ("byte_per_kernel", None, _f("CDMA", "D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=575),
     "CDMA.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL"),
    ("output_not_4n", None, lambda L: [set_fields(NV_FULL, L, b, "D_DATAOUT_SIZE_0",
                                                  DATAOUT_WIDTH=2) for b in ("CSC", "CACC")],
     "CSC.D_DATAOUT_SIZE_0.DATAOUT_WIDTH"),
    ("output_too_large", None, _f("CSC", "D_DATAOUT_SIZE_0", DATAOUT_HEIGHT=7),
     "CSC.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT"),
    ("entries", None, _both("D_ENTRY_PER_SLICE", ENTRIES=5), "D_ENTRY_PER_SLICE.ENTRIES"),
    ("entries_over_1023", dict(W=1030, H=6, C=128, K=1, stride=(1, 1), pad=(1, 1, 1, 1)),
     None, "CSC.D_ENTRY_PER_SLICE.ENTRIES"),
    ("data_banks", dict(W=62, C=128), _both("D_BANK", DATA_BANK=0, WEIGHT_BANK=0),
     "CDMA.D_BANK.DATA_BANK"),
    ("release_not_4n", None, _f("CSC", "D_RELEASE", RLS_SLICES=2), "CSC.D_RELEASE.RLS_SLICES"),
    ("batches", None, lambda L: [set_fields(NV_FULL, L, "CDMA", "D_BATCH_STRIDE",
                                            BATCH_STRIDE=0x10000)] + [
        set_fields(NV_FULL, L, b, "D_BATCH_NUMBER", BATCHES=1) for b in ("CDMA", "CSC", "CACC")],
     "CDMA.D_BATCH_NUMBER.BATCHES"),
    ("precision_conversion", None, _both("D_MISC_CFG", IN_PRECISION=1),
     "CDMA.D_MISC_CFG.IN_PRECISION"),
    ("clip", None, _f("CACC", "D_CLIP_CFG", CLIP_TRUNCATE=17), "CACC.D_CLIP_CFG.CLIP_TRUNCATE"),
    ("image_input", None, _both("D_DATAIN_FORMAT", DATAIN_FORMAT=1),
     "CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD"),
    ("cmac_mode", None, _f("CMAC_B", "D_MISC_CFG", CONV_MODE=0), "CMAC_B.D_MISC_CFG.CONV_MODE"),
    ("sdp_direct", None, _f("SDP", "D_FEATURE_MODE_CFG", WINOGRAD=0),
     "SDP.D_FEATURE_MODE_CFG.WINOGRAD"),
]


@pytest.mark.parametrize("name,spec,mutate,field", INVALID, ids=[i[0] for i in INVALID])
def test_invalid_programs_name_the_field(name, spec, mutate, field):
    layer = _base(**(spec or {}))
    if mutate:
        mutate(layer)
    with pytest.raises(ConvProgramError) as e:
        _run(NV_FULL, layer)
    assert field in str(e.value), str(e.value)


def test_sdp_winograd_bit_on_a_direct_layer():
    rng = np.random.default_rng(0)
    layer = rp.conv_layer(NV_FULL, W=4, H=4, C=8, K=2, data=rng.integers(-3, 4, (8, 4, 4)),
                          weights=rng.integers(-3, 4, (2, 8, 1, 1)))
    set_fields(NV_FULL, layer, "SDP", "D_FEATURE_MODE_CFG", WINOGRAD=1)
    with pytest.raises(ConvProgramError, match="SDP.D_FEATURE_MODE_CFG.WINOGRAD=ON"):
        _run(NV_FULL, layer)


# ------------------------------------------------------------------------------------------
# random Winograd traces on the golden core
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg,prec", [(NV_FULL, 0), (NV_FULL, 1), (NV_FULL, 2), (NV_LARGE, 0)],
                         ids=["nv_full_int8", "nv_full_int16", "nv_full_fp16", "nv_large_int8"])
def test_random_traces_run_on_golden(tmp_path, cfg, prec):
    """Random Winograd traces pass their golden CRCs: 4 single layers and 4 two-layer
    programs (kinds drawn: CBUF reuse, independent layers, changes of mode); the generator
    needed no redraw."""
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    paths = []
    for share in (0.0, 1.0):
        paths += wp.write_random_wino_traces(cfg, str(tmp_path), 4, seed=5, prec=prec,
                                             prefix=f"wino_{share}", pair_share=share,
                                             max_macs=60_000 if prec == 2 else 100_000)
        assert not wp.wino_reject_log()
    assert len(paths) == 8
    layers = []
    for path in paths:
        res = run_golden(parse_trace(path, cfg), cfg, core=rp.golden_core(cfg))
        assert res.passed, res.message
        assert all(c.actual == c.expected for c in res.checks)
        layers.append(len(res.checks))
    assert layers == [1] * 4 + [2] * 4


# ------------------------------------------------------------------------------------------
# random pairs: the second layer against the same layer run alone from memory
# ------------------------------------------------------------------------------------------
def _alone(cfg, first, second):
    """The second layer of a pair as a layer that fetches everything from memory: its own
    registers without DATA_REUSE / WEIGHT_REUSE, and, after a Winograd layer that kept its
    CBUF, the input the CBUF held (the first layer's fetched rows, or the rows of its kept
    lines followed by the second's fetch) and the kept weights, written to memory."""
    s1 = first["info"].get("spec")
    spec = second["info"].get("spec")
    if s1 is None or spec is None:            # a change of mode: the second fetches anyway
        alone = dict(second, regs={b: dict(w) for b, w in second["regs"].items()})
        for b in ("CDMA", "CSC"):
            set_fields(cfg, alone, b, "D_MISC_CFG", DATA_REUSE=0, WEIGHT_REUSE=0)
        return alone
    spec = dict(spec)
    dr, wr = spec["reuse"][:2]
    spec.update(reuse=(0, 0, 0, 0), emit_feature=True, emit_weights=True, feature_base=None,
                weight_base=None, fetch_rows=None)
    if wr:
        assert spec["compress"] == s1["compress"]
        spec["wt4"] = s1["wt4"]
    if dr:
        for k in ("W", "C", "stride", "pad_value", "cvt", "nan_to_zero", "prec"):
            assert spec[k] == s1[k], k
        tensor, (r0, n1) = s1["data"], s1["fetch_rows"]
        pl, pr, pt, pb = s1["pad"]
        if s1["reuse"][2]:                    # kept whole: the CSC convolves its top lines
            spec.update(data=tensor[:, r0:r0 + n1], H=n1, pad=s1["pad"])
        else:                                 # kept from extended line RLS_SLICES on
            r2, n2 = second["info"]["fetch_rows"]
            assert pb == 0 and r2 == r0 + n1
            cut = s1["rls_slices"] * s1["stride"][1] - pt   # first kept tensor row
            assert cut >= 0                  # (pads of 0..2 rows, 4 extended lines released)
            rows = tensor[:, r0 + cut:r2 + n2]
            spec.update(data=rows, H=rows.shape[1], csc_height=None,
                        pad=(pl, pr, 0, spec["pad"][3]))
            he = wp.wino_geometry(spec["W"], spec["H"], spec["C"], spec["stride"], spec["pad"],
                                  spec["prec"], cfg.cbuf_entry_bytes)[1]
            assert he == second["info"]["in_h"]
    return wp.wino_layer(cfg, **spec)


def _golden_trace(cfg, tmp_path, layers, name):
    """Write ``layers`` as a trace with golden CRCs and run it on a golden core; returns the
    core (its memories and its convolution unit's CBUF log)."""
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    path = rp.write_trace(str(tmp_path), name, layers)
    crcs, err = rp._golden_crcs(cfg, path, len(layers))
    assert err is None, err
    path = rp.write_trace(str(tmp_path), name, layers, crcs)
    core = rp.golden_core(cfg)
    res = run_golden(parse_trace(path, cfg), cfg, core=core)
    assert res.passed and len(res.checks) == len(layers), res.message
    return core


def _window(core, layer):
    addr, size, ram = layer["window"]
    return (core.dbb if ram else core.sram).read(addr, size)


#: kind -> (DATA_REUSE, WEIGHT_REUSE) the second layer asks for, the CBUF log of its fetch
PAIR_CASES = {
    "none": ((0, 0), ["data: fetched", "weights: fetched"]),
    "data_full": ((1, 0), ["data: full reuse", "weights: fetched"]),
    "data_partial": ((1, 0), ["data: partial reuse", "weights: fetched"]),
    "weight": ((0, 1), ["data: fetched", "weights: reused"]),
    "data_full+weight": ((1, 1), ["data: full reuse", "weights: reused"]),
    "data_partial+weight": ((1, 1), ["data: partial reuse", "weights: reused"]),
    # a change of mode: the first keeps both, the second asks for both and fetches
    "direct>wino": ((1, 1), ["data: fetched", "weights: fetched"]),
    "wino>direct": ((1, 1), ["data: fetched", "weights: fetched"]),
}


@pytest.mark.parametrize("kind", list(PAIR_CASES))
def test_random_pair_second_layer_equals_it_alone(tmp_path, kind):
    """A random pair of each kind (precision int8 / int16 / fp16 by turn) on the golden core:
    the second layer's output window (SDP's output and guard bands) is the one the layer
    writes run alone from memory with its own input and weights (:func:`_alone`), so the
    reuse path is checked against fetches; the CBUF log says the second layer reused
    (or, after a change of mode, fetched) what the kind says."""
    assert set(PAIR_CASES) == set(wp.WINO_PAIR_KINDS)
    ask, log = PAIR_CASES[kind]
    i = list(PAIR_CASES).index(kind)
    prec = i % 3
    rng = np.random.default_rng(100 + i)
    while True:
        try:
            first, second = wp.random_wino_pair(NV_FULL, rng, kind, prec, 60_000, kept=(
                "data_full+weight" if ">" in kind else None))
            break
        except Redraw:
            pass
    assert tuple(second["info"]["reuse"][:2]) == ask
    modes = [int("spec" in layer["info"]) for layer in (first, second)]
    assert modes == {"direct>wino": [0, 1], "wino>direct": [1, 0]}.get(kind, [1, 1])
    pair = _golden_trace(NV_FULL, tmp_path, [first, second], "pair")
    got = _window(pair, second)
    cbuf = pair.units["CONV"].state.log
    assert [e.split(" of ")[0] for e in cbuf[-2:]] == log, cbuf
    if "partial" in kind:
        kept = first["info"]["in_h"] - first["info"]["rls_slices"]
        assert cbuf[-2] == f"data: partial reuse of {kept} slices"
        assert second["info"]["fetch_rows"][0] == first["info"]["fetch_rows"][1] > 0
    alone = _alone(NV_FULL, first, second)
    want = _window(_golden_trace(NV_FULL, tmp_path, [alone], "alone"), alone)
    np.testing.assert_array_equal(got, want)
    out = _sdp_output(NV_FULL, pair.dbb if second["window"][2] else pair.sram, second)
    assert out.shape == (second["info"]["K"], second["info"]["Ho"], second["info"]["Wo"])
    assert out.any()
    # CACC's values (before SDP's random stages): the pair on one CBUF, the layer alone
    state = CbufState()
    core = _Core(NV_FULL, first)
    run_conv(core, state)
    core = _Core(NV_FULL, second)
    core.add(first)                   # a partial reuse fetches from the first's tensor
    got_cacc = run_conv(core, state)[0]
    want_cacc, _ = run_conv(_Core(NV_FULL, alone), CbufState())
    np.testing.assert_array_equal(got_cacc, want_cacc)
    assert np.count_nonzero(got_cacc) > got_cacc.size // 2
    assert not got[:GUARD].any() and not got[-GUARD:].any()


# ------------------------------------------------------------------------------------------
# NVDLA's Verilog (slow): the PRA cell
# ------------------------------------------------------------------------------------------
GIT = os.environ.get("NVDLA_HW_GIT")
_needs_rtl = pytest.mark.skipif(not GIT or not shutil.which("iverilog"),
                                reason="needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")

_PRA_TB = """`timescale 1ns/1ps
module tb;
reg clk = 0, rstn = 0;
reg [255:0] mem [0:`N-1];
reg [1:0] prec, trunc;
integer i = 0, fd;
wire [255:0] dout; wire in_lz, out_lz;
wire vz = rstn && (i < `N);
NV_NVDLA_CSC_pra_cell u (.nvdla_core_clk(clk), .nvdla_core_rstn(rstn),
  .chn_data_in_rsc_z(mem[i < `N ? i : 0]), .chn_data_in_rsc_vz(vz), .chn_data_in_rsc_lz(in_lz),
  .cfg_precision(prec), .cfg_truncate_rsc_z(trunc), .chn_data_out_rsc_z(dout),
  .chn_data_out_rsc_vz(1'b1), .chn_data_out_rsc_lz(out_lz));
always #5 clk = ~clk;
always @(posedge clk) begin
  if (out_lz) $fdisplay(fd, "%h", dout);
  if (vz && in_lz) i <= i + 1;
end
initial begin
  $readmemh("in.hex", mem);
  prec = `PREC; trunc = `TRUNC;
  fd = $fopen("out.txt", "w");
  #22 rstn = 1;
  wait (i == `N);
  repeat (20) @(posedge clk);
  $fclose(fd);
  $finish;
end
endmodule
"""


def _git_show(path, dest):
    text = subprocess.run(["git", "-C", GIT, "show", f"nvdlav1:{path}"], check=True,
                          capture_output=True, text=True).stdout
    dest.write_text(text)


def run_pra_rtl(tmp_path, tiles, prec, trunc):
    """NVDLA's PRA cell on tiles [n, 4, 4] of 16-bit codes (int8 sign-extended, as the CSC's
    data loader feeds it); returns its 16 outputs per tile as 16-bit codes [n, 4, 4]."""
    src = tmp_path / "NV_NVDLA_CSC_pra_cell.v"
    if not src.exists():
        _git_show("vmod/nvdla/csc/NV_NVDLA_CSC_pra_cell.v", src)
    n = len(tiles)
    codes = np.asarray(tiles, np.int64).reshape(n, 16) & 0xFFFF
    lines = []
    for row in codes:
        v = 0
        for j, x in enumerate(row):
            v |= int(x) << (16 * j)
        lines.append("%064x" % v)
    (tmp_path / "in.hex").write_text("\n".join(lines) + "\n")
    (tmp_path / "tb.v").write_text(_PRA_TB)
    subprocess.run(["iverilog", "-g2005", f"-DN={n}", f"-DPREC={prec}", f"-DTRUNC={trunc}",
                    "-o", "pra.vvp", "-s", "tb", "tb.v", src.name], cwd=tmp_path, check=True,
                   capture_output=True)
    subprocess.run(["vvp", "-n", "pra.vvp"], cwd=tmp_path, check=True, capture_output=True)
    rows = (tmp_path / "out.txt").read_text().split()
    assert len(rows) == n, (len(rows), n)
    out = np.array([[(int(r, 16) >> (16 * j)) & 0xFFFF for j in range(16)] for r in rows])
    return out.reshape(n, 4, 4)


def _int_tiles(rng, n, bits):
    lim = 1 << (bits - 1)
    t = rng.integers(-lim, lim, (n, 4, 4))
    edge = rng.choice([-lim, -lim + 1, lim - 1, 0, 1, -1, 2, -2, 3], (n, 4, 4))
    sel = rng.random((n, 1, 1)) < 0.3
    small = rng.integers(-9, 10, (n, 4, 4))             # rounding ties at every shift
    return np.where(sel, edge, np.where(rng.random((n, 1, 1)) < 0.3, small, t))


@pytest.mark.slow
@_needs_rtl
@pytest.mark.parametrize("prec,bits", [(0, 8), (1, 16)], ids=["int8", "int16"])
def test_pra_against_nvdla_rtl(tmp_path, prec, bits):
    """Thousands of random tiles through NVDLA's PRA cell at each PRA_TRUNCATE (3 as the CSC
    hands it over: clamped to 2): 0 mismatches with pra_int."""
    rng = np.random.default_rng(bits)
    tiles = _int_tiles(rng, 3000, bits)
    for field in range(4):
        shift = min(field, 2)               # NV_NVDLA_CSC_dl clamps 3 to 2
        hw = run_pra_rtl(tmp_path, tiles, prec, shift)
        hw = hw & ((1 << bits) - 1)
        hw = np.where(hw >= 1 << (bits - 1), hw - (1 << bits), hw)
        want = pra_int(tiles, shift, bits)
        bad = np.flatnonzero((hw != want).any(axis=(1, 2)))
        assert bad.size == 0, f"PRA_TRUNCATE={field}: {bad.size} tiles differ, first {bad[:5]}"


# ------------------------------------------------------------------------------------------
# SDP's Winograd mode, through traces on the golden core
# ------------------------------------------------------------------------------------------
def _trace_result(cfg, tmp_path, layers, name):
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    path = rp.write_trace(str(tmp_path), name, layers)
    crcs, err = rp._golden_crcs(cfg, path, len(layers))
    if crcs is not None:
        path = rp.write_trace(str(tmp_path), name, layers, crcs)
    res = run_golden(parse_trace(path, cfg), cfg, core=rp.golden_core(cfg))
    return res, err


def _sdp_output(cfg, core_mem, layer):
    from sim.formats.feature import unpack_feature
    info = layer["info"]
    base, line, surf = info["dst"]
    mem = core_mem.read(base, layer["window"][1])
    return unpack_feature(mem, 0, info["K"], info["Ho"], info["Wo"], cfg.memory_atom,
                          ("int8", "int16", "int16")[info["prec"]], line, surf)


def test_sdp_writes_the_ordinary_cube(tmp_path):
    """A Winograd layer through SDP (pass-through, output shift) lands in memory as the
    ordinary cube of CACC's values."""
    from sim.trace import parse_trace
    from sim.trace_run import run_golden
    rng = np.random.default_rng(21)
    C, K = 32, 9
    data = rng.integers(-30, 31, (C, 10, 14))
    wt4 = rng.integers(-20, 21, (K, C, 4, 4))
    sdp = rp.sdp_program(NV_FULL, None, 12, 12, K, 0, 0, shift=9)
    layer = wp.wino_layer(NV_FULL, W=14, H=10, C=C, K=K, wt4=wt4, data=data, pad=(1, 1, 3, 3),
                          pad_value=2, sdp=sdp)
    cacc, _ = _run(NV_FULL, layer)
    path = rp.write_trace(str(tmp_path), "sdp_ordinary", [layer])
    crcs, err = rp._golden_crcs(NV_FULL, path, 1)
    assert err is None, err
    path = rp.write_trace(str(tmp_path), "sdp_ordinary", [layer], crcs)
    core = rp.golden_core(NV_FULL)
    res = run_golden(parse_trace(path, NV_FULL), NV_FULL, core=core)
    assert res.passed, res.message
    got = _sdp_output(NV_FULL, core.dbb, layer)
    half = 1 << 8
    want = np.clip(np.where(cacc >= 0, (cacc + half) >> 9, -((-cacc + half) >> 9)), -128, 127)
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(np.abs(want) < 127) > want.size // 2


def _sdp_mut(reg, **fields):
    def m(layer):
        set_fields(NV_FULL, layer, "SDP", reg, **fields)
    return m


SDP_INVALID = [
    ("batches", _sdp_mut("D_FEATURE_MODE_CFG", BATCH_NUMBER=1),
     "SDP.D_FEATURE_MODE_CFG.BATCH_NUMBER"),
    ("out_precision", _sdp_mut("D_DATA_FORMAT", OUT_PRECISION=1),
     "SDP.D_DATA_FORMAT.OUT_PRECISION"),
    ("eql", _sdp_mut("D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3,
                     EW_MUL_BYPASS=1, EW_LUT_BYPASS=1), "SDP.D_DP_EW_CFG.EW_ALU_ALGO=EQL"),
    ("not_flying", _sdp_mut("D_FEATURE_MODE_CFG", FLYING_MODE=0), "FLYING_MODE"),
]


@pytest.mark.parametrize("name,mutate,field", SDP_INVALID, ids=[s[0] for s in SDP_INVALID])
def test_sdp_winograd_rules(tmp_path, name, mutate, field):
    rng = np.random.default_rng(2)
    layer = wp.wino_layer(NV_FULL, W=8, H=8, C=32, K=3, wt4=rng.integers(-3, 4, (3, 32, 4, 4)),
                          data=rng.integers(-3, 4, (32, 8, 8)))
    mutate(layer)
    res, err = _trace_result(NV_FULL, tmp_path, [layer], f"sdp_{name}")
    assert err is not None and field in err, err


@pytest.mark.parametrize("fields,match", [
    (dict(), "SDP.D_DATA_CUBE_WIDTH.WIDTH=5"),
    (dict(OUTPUT_DST=1), "SDP.D_FEATURE_MODE_CFG.WINOGRAD=ON: Winograd output goes to memory")])
def test_sdp_winograd_cube_and_destination(fields, match):
    """SDP's own rules on its flying cube: width and height multiples of 4, output to memory
    (checked by SDP's decode, before any PDP takes part)."""
    from sim.sdp.sdp import SdpProgramError, run_sdp
    rmap = register_map(NV_FULL)
    w = 6 if not fields else 4
    sdp_words, _, _ = rp.sdp_program(NV_FULL, None, w, 4, 2, 0, 0)
    s = rp.Regs(rmap["SDP"])
    s.words.update(sdp_words)
    s.set("D_FEATURE_MODE_CFG", WINOGRAD=1, **fields)
    with pytest.raises(SdpProgramError, match=match):
        run_sdp(NV_FULL, GroupView(rmap["SDP_RDMA"], {}), GroupView(rmap["SDP"], s.words),
                SparseMemory(), flying_input=np.zeros((2, 4, w), np.int64))


# ------------------------------------------------------------------------------------------
# NVDLA's Verilog (slow): the MAC cell in Winograd mode
# ------------------------------------------------------------------------------------------
@pytest.mark.slow
@_needs_rtl
def test_fp16_wino_cell_against_nvdla_mac(tmp_path):
    """NV_NVDLA_CMAC_CORE_mac with cfg_is_wg on thousands of fp16 tiles (codes of every kind:
    zeros, denormals, infinities, NaNs, extremes), fed as NVDLA's CMAC active stage feeds it
    (tests/test_cmac_fp16._cell_inputs): its four 44-bit results and NaN flag against
    fp16_wino_cell, 0 mismatches."""
    from sim.conv.cmac import fp16_wino_cell
    from tests import test_cmac_fp16 as tc
    n = 3000
    wt, dat, _ = tc._vectors(n, 7)
    for src in tc._SOURCES:
        _git_show(src, tmp_path / os.path.basename(src))
    tb = tc._TB.replace(".cfg_is_wg(1'b0)", ".cfg_is_wg(1'b1)").replace(
        '$fdisplay(fd, "%h %b", out[43:0], out_nan)', '$fdisplay(fd, "%h %b", out, out_nan)')
    assert tb != tc._TB
    (tmp_path / "tb.v").write_text(tb)
    wm = (wt & 0x7FFF) != 0                           # the CSC's weight mask
    for k, v in tc._cell_inputs(wt, dat, wm).items():
        (tmp_path / f"{k}.hex").write_text(v)
    names = [os.path.basename(s) for s in tc._SOURCES]
    subprocess.run(["iverilog", "-g2005", "-DDESIGNWARE_NOEXIST", f"-DN={n}", "-o", "tb.vvp",
                    "-s", "tb", "tb.v", *names], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, check=True, capture_output=True)
    rows = [line.split() for line in (tmp_path / "out.txt").read_text().splitlines()]
    assert len(rows) == n
    raw = [int(r[0], 16) for r in rows]
    hw = np.array([[(v >> (44 * j)) & ((1 << 44) - 1) for j in range(4)] for v in raw])
    hw_nan = np.array([r[1] == "1" for r in rows])
    psum, nan = fp16_wino_cell(wt, dat)
    bad = np.flatnonzero((hw != psum).any(-1) | (hw_nan != nan))
    assert bad.size == 0, f"{bad.size} tiles differ, first {bad[:5]}: {hw[bad[:2]]} vs " \
        f"{psum[bad[:2]]}"
    assert 0.1 < nan.mean() < 0.4


# ------------------------------------------------------------------------------------------
# fp16
# ------------------------------------------------------------------------------------------
def _s16(codes):
    c = np.asarray(codes, np.int64) & 0xFFFF
    return np.where(c >= 0x8000, c - 0x10000, c)


@pytest.mark.parametrize("s", [1, 2, 3])
def test_fp16_exact_weights_give_the_direct_convolution(s):
    """fp16 integers small enough that the PRA, the cell's alignment and CACC's fp48 sums are
    exact, weights whose G W G^T is exact in fp16: the Winograd layer's fp32 output is the
    direct fp16 golden model's, bit for bit (whatever PRA_TRUNCATE says)."""
    from sim.nvfloat import fp16_from_float, fp16_to_float
    rng = np.random.default_rng(30 + s)
    C, K = 16 * (1 + (s == 1)), 6
    R, S = (3, 3) if s == 1 else (3 * s, 3 * s - 1)
    pad = (1, 3 * s - 1, 2, 4 * s - 2) if s > 1 else (1, 2, 1, 3)
    W, H = 8 * s - pad[0] - pad[1], 12 * s - pad[2] - pad[3]
    data = fp16_from_float(rng.integers(-8, 9, (C, H, W)))
    w = fp16_from_float(rng.integers(-4, 5, (K, C, R, S)))
    wt4 = winograd_transform(winograd_extend_stride(fp16_to_float(w), s, s), "fp16")
    layer = wp.wino_layer(NV_FULL, W=W, H=H, C=C, K=K, wt4=_s16(wt4.view(np.uint16)),
                          data=_s16(data), stride=(s, s), pad=pad, pad_value=0xC000, prec=2,
                          pra_truncate=s)                 # the fp16 PRA does not truncate
    got, _ = _run(NV_FULL, layer)
    direct = rp.conv_layer(NV_FULL, W=W, H=H, C=C, K=K, kh=R, kw=S, stride=(s, s), pad=pad,
                           pad_value=0xC000, prec=2, data=_s16(data), weights=_s16(w))
    want, _ = _run(NV_FULL, direct)
    Ho, Wo = layer["info"]["Ho"], layer["info"]["Wo"]
    np.testing.assert_array_equal(got, want[:, :Ho, :Wo])
    assert np.count_nonzero(got) > got.size // 2


def test_fp16_pra_operand_order_and_rounding():
    """pra_fp16 against a per-tile loop of fp17 additions in the cell's operand order."""
    from sim.conv.winograd_math import pra_fp16
    from sim.nvfloat import fp16_to_fp17, fp17_add, fp17_to_fp16
    rng = np.random.default_rng(2)
    tiles = rng.integers(0, 1 << 16, (64, 4, 4))
    tiles[:16] = (tiles[:16] & 0x83FF) | (rng.integers(13, 17, (16, 4, 4)) << 10)

    def sub(a, b):
        return fp17_add(a, b ^ (1 << 16))

    want = np.zeros_like(tiles)
    for n, t in enumerate(tiles):
        d = [[int(fp16_to_fp17(t[y, x])) for x in range(4)] for y in range(4)]
        m = [[0] * 4 for _ in range(4)]
        for x in range(4):
            m[0][x] = sub(d[0][x], d[2][x])
            m[1][x] = fp17_add(d[1][x], d[2][x])
            m[2][x] = sub(d[2][x], d[1][x])
            m[3][x] = sub(d[1][x], d[3][x])
        for y in range(4):
            r = [sub(m[y][0], m[y][2]), fp17_add(m[y][1], m[y][2]), sub(m[y][2], m[y][1]),
                 sub(m[y][1], m[y][3])]
            for x in range(4):
                want[n, y, x] = fp17_to_fp16(r[x])
    np.testing.assert_array_equal(pra_fp16(tiles), want)


def test_fp16_nan_inf_counts_include_padding_and_flush():
    """CDMA counts NaN / infinity over everything it writes (the pad elements too) and, with
    D_NAN_FLUSH_TO_ZERO, flushes the written NaNs (a NaN pad value too)."""
    from sim.nvfloat import fp16_from_float
    rng = np.random.default_rng(9)
    C, K, W, H = 16, 2, 6, 6
    data = fp16_from_float(rng.uniform(-1, 1, (C, H, W)))
    data[0, 0, :3] = 0x7E00                   # 3 NaNs
    data[1, 2, 2] = 0xFC00                    # 1 infinity
    wt4 = fp16_from_float(rng.uniform(-1, 1, (K, C, 4, 4)))
    wt4[1, 3, 2, 2] = 0x7C00
    pads = (8 * 8 - W * H) * C
    for pad_value, flush, nan_n, inf_n in ((0x7C00, False, 3, 1 + pads),
                                           (0xFE01, False, 3 + pads, 1),
                                           (0xFE01, True, 3 + pads, 1)):
        layer = wp.wino_layer(NV_FULL, W=W, H=H, C=C, K=K, wt4=_s16(wt4), data=_s16(data),
                              pad=(1, 1, 1, 1), pad_value=pad_value, prec=2,
                              nan_to_zero=flush)
        got, written = _run(NV_FULL, layer)
        cdma = written["CDMA"]
        assert cdma["D_NAN_INPUT_DATA_NUM"]["NAN_DATA_NUM"] == nan_n
        assert cdma["D_INF_INPUT_DATA_NUM"]["INF_DATA_NUM"] == inf_n
        assert cdma["D_INF_INPUT_WEIGHT_NUM"]["INF_WEIGHT_NUM"] == 1
        exp = ((got >> 23) & 0xFF) == 0xFF
        nan = exp & ((got & 0x7FFFFF) != 0)
        assert nan.any() != flush


_FP16_SPECIAL = np.array([0, 0x8000, 1, 0x8001, 0x3FF, 0x83FF, 0x400, 0x7C00, 0xFC00, 0x7BFF,
                          0xFBFF, 0x7C01, 0xFE00, 0x7FFF, 0x3C00, 0x0200, 0x7800, 0xF800])


@pytest.mark.slow
@_needs_rtl
def test_fp16_pra_against_nvdla_rtl(tmp_path):
    """Thousands of fp16 tiles (random codes over every exponent, tiles full of special codes,
    narrow spreads where the additions round) through NVDLA's PRA cell: 0 mismatches with
    pra_fp16."""
    from sim.conv.winograd_math import pra_fp16
    rng = np.random.default_rng(16)
    n = 4000
    t = rng.integers(0, 1 << 16, (n, 4, 4))
    sel = rng.random((n, 4, 4)) < np.linspace(0, 0.7, n)[:, None, None]
    t[sel] = rng.choice(_FP16_SPECIAL, int(sel.sum()))
    narrow = rng.random(n) < 0.3
    e = rng.integers(12, 18, (n, 4, 4))
    t[narrow] = (t[narrow] & 0x83FF) | (e[narrow] << 10)
    hw = run_pra_rtl(tmp_path, t, 2, 0)
    want = pra_fp16(t)
    bad = np.flatnonzero((hw != want).any(axis=(1, 2)))
    assert bad.size == 0, f"{bad.size} tiles differ, first {bad[:3]}: {hw[bad[:1]]} vs " \
        f"{want[bad[:1]]} (in {t[bad[:1]]})"


# ------------------------------------------------------------------------------------------
# CBUF reuse between layers (NVDLA's CDMA rules), each against the second layer run alone
# ------------------------------------------------------------------------------------------
def _pair(first, second, alone):
    """Run ``first`` then ``second`` on one CBUF; returns (second's output, the output of
    ``alone`` on a fresh CBUF, the CBUF log of the pair)."""
    state = CbufState()
    _run(NV_FULL, first, state)
    got, _ = _run(NV_FULL, second, state)
    want, _ = _run(NV_FULL, alone)
    return got, want, state.log


def _wino(rng_seed, **spec):
    rng = np.random.default_rng(rng_seed)
    C, K = spec.pop("C", 32), spec.pop("K", 5)
    W, H = spec.pop("W", 8), spec.pop("H", 8)
    data = spec.pop("data", None)
    if data is None:
        data = rng.integers(-30, 31, (C, H, W))
    wt4 = spec.pop("wt4", None)
    if wt4 is None:
        wt4 = rng.integers(-40, 41, (K, C, 4, 4))
    return wp.wino_layer(NV_FULL, W=W, H=H, C=C, K=K, wt4=wt4, data=data, **spec), data, wt4


def test_full_data_reuse_fetches_nothing():
    """SKIP_DATA_RLS then DATA_REUSE: the second layer (other weights, nothing in memory at
    its input address) convolves the kept input."""
    l1, data, _ = _wino(1, reuse=(0, 0, 1, 0), pad=(1, 1, 1, 1), W=6, H=6, pad_value=5)
    l2, _, _ = _wino(2, data=data, reuse=(1, 0, 0, 0), pad=(1, 1, 1, 1), W=6, H=6,
                     pad_value=5, emit_feature=False, slot=1)
    alone, _, _ = _wino(2, data=data, pad=(1, 1, 1, 1), W=6, H=6, pad_value=5, slot=1)
    got, want, log = _pair(l1, l2, alone)
    np.testing.assert_array_equal(got, want)
    assert log[-2:] == ["data: full reuse", "weights: fetched"]


def test_partial_data_reuse_takes_kept_lines_and_the_fetch():
    """Layer 1 convolves padded rows 0..7 and releases 4 extended lines; layer 2 fetches data
    rows 7..14 and convolves the 4 kept lines with its 8: the layer of data rows 3..14."""
    rng = np.random.default_rng(5)
    C, W = 32, 8
    data = rng.integers(-30, 31, (C, 15, W))
    l1, _, wt4 = _wino(6, data=data[:, :7], H=7, pad=(0, 0, 1, 0), rls_slices=4)
    l2, _, _ = _wino(6, data=data[:, 7:15], H=8, wt4=wt4, reuse=(1, 0, 0, 0), csc_height=12,
                     slot=1)
    alone, _, _ = _wino(6, data=data[:, 3:15], H=12, wt4=wt4, slot=1)
    got, want, log = _pair(l1, l2, alone)
    assert got.shape == (5, 8, 4)
    np.testing.assert_array_equal(got, want)
    assert log[-2] == "data: partial reuse of 4 slices"


def test_weight_reuse_keeps_the_weights():
    l1, _, wt4 = _wino(7, reuse=(0, 0, 0, 1))
    l2, _, _ = _wino(8, wt4=wt4, reuse=(0, 1, 0, 0), emit_weights=False, slot=1)
    alone, _, _ = _wino(8, wt4=wt4, slot=1)
    got, want, log = _pair(l1, l2, alone)
    np.testing.assert_array_equal(got, want)
    assert log[-1] == "weights: reused"


def test_change_of_mode_or_bank_split_fetches():
    """A direct layer keeping its data and weights, then a Winograd layer asking to reuse
    them: another mode, so it fetches both (and a Winograd layer after a Winograd layer of
    another bank split fetches its data)."""
    rng = np.random.default_rng(9)
    direct = rp.conv_layer(NV_FULL, W=8, H=8, C=32, K=5, data=rng.integers(-3, 4, (32, 8, 8)),
                           weights=rng.integers(-3, 4, (5, 32, 1, 1)), reuse=(0, 0, 1, 1))
    l2, _, _ = _wino(10, reuse=(1, 1, 0, 0), slot=1)
    alone, _, _ = _wino(10, slot=1)
    got, want, log = _pair(direct, l2, alone)
    np.testing.assert_array_equal(got, want)
    assert log[-2:] == ["data: fetched", "weights: fetched"]
    l1, data, _ = _wino(11, reuse=(0, 0, 1, 0), banks=(2, 12))
    l2, _, _ = _wino(12, data=data, reuse=(1, 0, 0, 0), banks=(3, 12), slot=1)
    alone, _, _ = _wino(12, data=data, banks=(3, 12), slot=1)
    got, want, log = _pair(l1, l2, alone)
    np.testing.assert_array_equal(got, want)
    assert log[-2] == "data: fetched"


def test_reuse_errors_name_the_field():
    l1, data, _ = _wino(13, reuse=(0, 0, 1, 0))
    l2, _, _ = _wino(14, W=12, data=np.zeros((32, 8, 12), np.int64), reuse=(1, 1, 0, 0),
                     slot=1)
    state = CbufState()
    _run(NV_FULL, l1, state)
    with pytest.raises(ConvProgramError, match="CDMA.D_MISC_CFG.DATA_REUSE=ENABLE"):
        _run(NV_FULL, l2, state)
    l3, _, _ = _wino(15, reuse=(0, 1, 0, 0), slot=1)          # layer 1 released its weights
    state = CbufState()
    _run(NV_FULL, l1, state)
    with pytest.raises(ConvProgramError, match="CDMA.D_MISC_CFG.WEIGHT_REUSE=ENABLE"):
        _run(NV_FULL, l3, state)


@pytest.mark.slow
@_needs_rtl
@pytest.mark.parametrize("prec", [0, 1], ids=["int8", "int16"])
def test_int_wino_cell_against_nvdla_mac(tmp_path, prec):
    """NV_NVDLA_CMAC_CORE_mac with cfg_is_wg in int8 (two kernels per cell: 16-bit lane i holds
    {kernel 1, kernel 0} weights and the data twice, non-zero flags per byte of the lane, as
    NVDLA's CMAC active stage packs them) and int16: its four results (two 22-bit ones per
    44-bit field for int8, 38 bits for int16) against wino_cell_int, 0 mismatches."""
    from sim.conv.winograd_math import wino_cell_int
    from tests import test_cmac_fp16 as tc
    n = 1500
    rng = np.random.default_rng(40 + prec)
    lim = 128 if prec == 0 else 32768
    d, w0, w1 = (rng.integers(-lim, lim, (n, 64)) for _ in range(3))
    for a in (d, w0, w1):
        edge = rng.random((n, 64)) < np.linspace(0, 0.8, n)[:, None]
        a[edge] = rng.choice([-lim, lim - 1, 0, -1, 1], int(edge.sum()))
    flags = {"fp16": "1'b0", "int16": "1'b1" if prec else "1'b0",
             "int8": "1'b0" if prec else "1'b1"}
    tb = tc._TB.replace(".cfg_is_wg(1'b0)", ".cfg_is_wg(1'b1)").replace(
        '$fdisplay(fd, "%h %b", out[43:0], out_nan)', '$fdisplay(fd, "%h %b", out, out_nan)')
    for k, v in flags.items():
        tb = tb.replace(f".cfg_is_{k}(1'b{int(k == 'fp16')})", f".cfg_is_{k}({v})")
    (tmp_path / "tb.v").write_text(tb)
    if prec:
        dl, wl = d & 0xFFFF, w0 & 0xFFFF
        dnz, wnz = np.repeat(d != 0, 2, -1), np.repeat(w0 != 0, 2, -1)
        dm, wm = d != 0, w0 != 0
    else:
        dl = (d & 0xFF) | ((d & 0xFF) << 8)
        wl = (w0 & 0xFF) | ((w1 & 0xFF) << 8)
        dnz = np.repeat(d != 0, 2, -1)
        wnz = np.stack([w0 != 0, w1 != 0], -1).reshape(n, 128)
        dm, wm = d != 0, (w0 != 0) | (w1 != 0)
    z = np.zeros((n, 64), np.int64)
    files = {"dd": tc._pack(dl, 16), "wd": tc._pack(wl, 16), "dn": tc._pack(z, 1),
             "wn": tc._pack(z, 1), "dz": tc._pack(dnz, 1), "wz": tc._pack(wnz, 1),
             "de": tc._pack(z, 3), "we": tc._pack(z, 3), "dm": tc._pack(dm, 1),
             "wm": tc._pack(wm, 1)}
    for k, v in files.items():
        (tmp_path / f"{k}.hex").write_text(v)
    for src in tc._SOURCES:
        _git_show(src, tmp_path / os.path.basename(src))
    names = [os.path.basename(s) for s in tc._SOURCES]
    subprocess.run(["iverilog", "-g2005", "-DDESIGNWARE_NOEXIST", f"-DN={n}", "-o", "tb.vvp",
                    "-s", "tb", "tb.v", *names], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, check=True, capture_output=True)
    raw = [int(r.split()[0], 16) for r in (tmp_path / "out.txt").read_text().splitlines()]
    assert len(raw) == n
    f = np.array([[(v >> (44 * j)) & ((1 << 44) - 1) for j in range(4)] for v in raw])

    def sx(v, bits):
        v = v & ((1 << bits) - 1)
        return np.where(v >> (bits - 1), v - (1 << bits), v)

    if prec:
        bad = (sx(f, 38) != wino_cell_int(w0, d)).any(-1)
    else:
        bad = (sx(f, 22) != wino_cell_int(w0, d)).any(-1) | \
            (sx(f >> 22, 22) != wino_cell_int(w1, d)).any(-1)
    assert not bad.any(), f"{int(bad.sum())} tiles differ, first {np.flatnonzero(bad)[:5]}"
