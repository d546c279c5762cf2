"""Image input (DATAIN_FORMAT=PIXEL) on the convolution RTL, against the golden model.

* The layer-start check (:class:`hw.conv.check.ConvCheck`, Amaranth simulation) gives the
  golden decode's verdict on random image layers of every format of the build, on every
  invalid image program of :func:`sim.conv.image_programs.write_invalid_image_traces` and on
  random single-field perturbations of image layers (valid or not, as the golden decides).
* The core on the playback engine (:mod:`tb.playback`, Verilator) runs constrained-random
  image layers (:func:`sim.conv.image_programs.write_random_image_traces`: every format the
  build enables, sign override, convertor with and without the mean, X offset, line-stride
  slack, left/right/top/bottom padding with both pad values, strides, kernel sizes, kernel
  groups, post-extension) bit for bit against the golden CRCs under random AXI
  back-pressure and latency; the invalid image programs finish there without writing (their
  output window plus guard bands stays zero).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.conv import image_programs as ip
from sim.conv import random_programs as rp
from sim.formats.pixel import pixel_format
from sim.sdp.random_programs import Regs

from .conftest import NV_SMALL_256_2COL, NV_SMALL_FP16, NV_SMALL_INT16, assert_all_pass, playback
from .test_conv_image_fp16 import CFG as IMG_FP16_CFG
from .test_conv_checks import golden_verdicts, rtl_verdicts

NV_SMALL = NvdlaConfig.preset("nv_small")
#: int16 and fp16 image processing: nv_small with int16 and fp16 on two-column entries (as
#: nv_full) and every 16-bit and fp16 pixel format besides nv_small's own (the golden tests'
#: build), and the same on bank-row entries. On the playback engine the default suite runs
#: int16 images on the shared int16 build and fp16 ones on the shared fp16 build (both have
#: the wide pixel formats: no Verilator build of their own); these two in the slow suite.
IMG_WIDE = IMG_FP16_CFG.replace(name="nv_small_img_wide")
IMG_WIDE_ROWS = IMG_WIDE.replace(name="nv_small_img_wide_rows", cbuf_entry_width=0)


def image_precs(cfg) -> tuple:
    """The processing precisions of ``cfg``'s image layers (0 int8, 1 int16, 2 fp16)."""
    return (0,) + ((1,) if "int16" in cfg.data_types else ()) + \
        ((2,) if "fp16" in cfg.data_types else ())


_rtl = playback
_check = functools.partial(assert_all_pass, what="image programs")


# -- the check: the golden verdict -------------------------------------------------------------
_FUZZ = [  # (block(s), register, field, values)
    (("CDMA",), "D_DATAIN_FORMAT", "PIXEL_FORMAT", range(0, 40)),
    (("CDMA",), "D_DATAIN_FORMAT", "PIXEL_SIGN_OVERRIDE", range(2)),
    (("CDMA",), "D_DATAIN_FORMAT", "PIXEL_MAPPING", range(2)),
    (("CDMA", "CSC"), "D_DATAIN_FORMAT", "DATAIN_FORMAT", range(2)),
    (("CDMA",), "D_PIXEL_OFFSET", "PIXEL_X_OFFSET", range(32)),
    (("CDMA",), "D_PIXEL_OFFSET", "PIXEL_Y_OFFSET", range(2)),
    (("CDMA",), "D_CVT_CFG", "CVT_EN", range(2)),
    (("CDMA", "CSC"), "D_MISC_CFG", "IN_PRECISION", range(3)),
    (("CDMA",), "D_MISC_CFG", "IN_PRECISION", range(3)),
    (("CDMA", "CSC"), "D_ZERO_PADDING", "PAD_LEFT", range(12)),
    (("CDMA",), "D_ZERO_PADDING", "PAD_RIGHT", range(12)),
    (("CDMA", "CSC"), "D_ENTRY_PER_SLICE", "ENTRIES", range(40)),
    (("CSC",), "D_WEIGHT_SIZE_EXT_1", "WEIGHT_CHANNEL_EXT", range(40)),
    (("CSC",), "D_WEIGHT_SIZE_EXT_0", "WEIGHT_WIDTH_EXT", range(3)),
    (("CSC",), "D_POST_Y_EXTENSION", "Y_EXTENSION", range(4)),
    (("CDMA",), "D_CONV_STRIDE", "CONV_X_STRIDE", range(8)),
    (("CSC", "CDMA"), "D_CONV_STRIDE_EXT", "CONV_X_STRIDE_EXT", range(8)),
    (("CSC", "CACC"), "D_DATAOUT_SIZE_0", "DATAOUT_WIDTH", range(40)),
    (("CDMA", "CSC"), "D_DATAIN_SIZE_1", "DATAIN_CHANNEL", range(5)),
    (("CSC",), "D_DATAIN_SIZE_EXT_0", "DATAIN_HEIGHT_EXT", range(30)),
    (("CSC",), "D_DILATION_EXT", "X_DILATION_EXT", range(4)),
    (("CDMA", "CSC"), "D_MISC_CFG", "DATA_REUSE", range(2)),
]
_WORDS = [  # whole-word perturbations: (register, values)
    ("D_LINE_STRIDE", lambda rng, w: int(rng.choice([w - 8, w + 8, w + 3, 8, 0x7FFFFFF8]))),
    ("D_LINE_UV_STRIDE", lambda rng, w: int(rng.choice([w - 8, w + 8, w + 4, 8, 0x7FFFFFF8]))),
    ("D_DAIN_ADDR_LOW_1", lambda rng, w: int(rng.choice([w + 4, w + 8, 0xFFFFFF00]))),
    ("D_DAIN_ADDR_LOW_0", lambda rng, w: int(rng.choice([w + 4, 0xFFFFFF00]))),
]
_ALIAS = {("CDMA", "D_CONV_STRIDE_EXT"): ("D_CONV_STRIDE", "CONV_X_STRIDE"),
          ("CDMA", "D_DATAIN_SIZE_1"): ("D_DATAIN_SIZE_1", "DATAIN_CHANNEL"),
          ("CSC", "D_DATAIN_SIZE_1"): ("D_DATAIN_SIZE_EXT_1", "DATAIN_CHANNEL_EXT")}


def _perturb(cfg, layer, rng):
    rmap = register_map(cfg)
    if rng.random() < 0.2:
        reg, fn = _WORDS[int(rng.integers(len(_WORDS)))]
        layer["regs"]["CDMA"][reg] = fn(rng, layer["regs"]["CDMA"].get(reg, 0)) & 0xFFFFFFFF
        return
    blocks, reg, fld, values = _FUZZ[int(rng.integers(len(_FUZZ)))]
    v = int(rng.choice(list(values)))
    for b in blocks:
        r_, f_ = _ALIAS.get((b, reg), (reg, fld))
        r = Regs(rmap[b])
        r.words = layer["regs"][b]
        r.set(r_, **{f_: v})


def _image_layers(cfg, n, seed):
    """``n`` random image layers of ``cfg``, its formats and processing precisions in turn."""
    rng = np.random.default_rng(seed)
    precs = image_precs(cfg)
    out = []
    for i in range(n):
        prec = precs[i % len(precs)]
        fmts = ip.image_formats_for(cfg, prec)
        out.append(ip.random_image_layer(cfg, rng, 20_000, fmt=fmts[i // len(precs) % len(fmts)],
                                         prec=prec))
    return out


VERDICT_CASES = [(NV_SMALL, 34, 160), (NvdlaConfig.preset("nv_small_256"), 17, 60),
                 (NvdlaConfig.preset("nv_large"), 17, 60), (NV_SMALL_256_2COL, 17, 60),
                 (NvdlaConfig.preset("nv_full"), 17, 60), (IMG_WIDE, 24, 90)]


@pytest.mark.parametrize("cfg, n_valid, n_perturbed", VERDICT_CASES,
                         ids=[c.name for c, _, _ in VERDICT_CASES])
def test_check_gives_the_golden_verdict_on_image_programs(cfg, n_valid, n_perturbed):
    programs = [[layer] for layer in _image_layers(cfg, n_valid, seed=5)]
    for name, mutate in ip.INVALID_IMAGE_MUTATIONS.items():
        layer = ip._small_image(cfg)
        if mutate(cfg, layer) is not None:
            programs.append([layer])
    rng = np.random.default_rng(11)
    for layer in _image_layers(cfg, n_perturbed, seed=6):
        for _ in range(int(rng.integers(1, 3))):
            _perturb(cfg, layer, rng)
        programs.append([layer])
    # an image layer then a feature layer asking for data reuse (there is nothing to reuse)
    # or weight reuse (other geometry), and image layers with weight reuse of an image's
    img = ip._small_image(cfg)
    feat = rp._base_layer(cfg, slot=1)
    for fld in ("DATA_REUSE", "WEIGHT_REUSE"):
        f2 = {"regs": {b: dict(w) for b, w in feat["regs"].items()}}
        for b in ("CDMA", "CSC"):
            r = Regs(register_map(cfg)[b])
            r.words = f2["regs"][b]
            r.set("D_MISC_CFG", **{fld: 1})
        i1 = {"regs": {b: dict(w) for b, w in img["regs"].items()}}
        for b in ("CDMA", "CSC"):
            r = Regs(register_map(cfg)[b])
            r.words = i1["regs"][b]
            r.set("D_MISC_CFG", SKIP_DATA_RLS=1, SKIP_WEIGHT_RLS=1)
        programs.append([i1, f2])
    i2 = {"regs": {b: dict(w) for b, w in img["regs"].items()}}
    for b in ("CDMA", "CSC"):
        r = Regs(register_map(cfg)[b])
        r.words = i2["regs"][b]
        r.set("D_MISC_CFG", WEIGHT_REUSE=1)
    programs.append([i1, i2])
    programs += _image_reuse_programs(cfg, 8, seed=13)

    want = [[ok for ok, _ in golden_verdicts(cfg, layers)] for layers in programs]
    got = rtl_verdicts(cfg, programs)
    bad = [(i, w, g, golden_verdicts(cfg, programs[i])) for i, (w, g) in
           enumerate(zip(want, got)) if w != g]
    assert not bad, f"{len(bad)} verdicts differ: {bad[:5]}"
    n_ok = sum(all(w) for w in want)
    assert n_valid <= n_ok <= len(programs) - 30   # both kinds are well represented


def _image_reuse_programs(cfg, n, seed):
    """``n`` random image reuse pairs (full and partial in turn) and, for each, a copy whose
    second layer breaks a reuse rule: another left padding, pixel format or precision (the
    kept lines hold converted pixels), or more lines than the kept plus the fetched ones."""
    rng = np.random.default_rng(seed)
    precs = image_precs(cfg)
    out = []
    for i in range(n):
        prec = precs[i % len(precs)]
        pair = ip.random_image_pair(cfg, rng, ip.IMAGE_REUSE_KINDS[i % 2], 20_000, prec=prec)
        out.append(pair)
        bad = [pair[0], {"regs": {b: dict(w) for b, w in pair[1]["regs"].items()}}]
        what = i % 4
        L = bad[1]
        if what == 0:
            ip._mset(cfg, L, "CDMA", "D_ZERO_PADDING", PAD_LEFT=(pair[1]["info"]["pad"][0] + 1) % 4)
            ip._mset(cfg, L, "CSC", "D_ZERO_PADDING", PAD_LEFT=(pair[1]["info"]["pad"][0] + 1) % 4)
        elif what == 1:
            h = pair[1]["info"]["H"]
            ip._mset(cfg, L, "CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=h)
        elif what == 2:
            others = [f for f in ip.image_formats_for(cfg, prec)
                      if f != pair[0]["info"]["fmt"][2:]]
            ip._mset(cfg, L, "CDMA", "D_DATAIN_FORMAT",
                     PIXEL_FORMAT=pixel_format(others[i % len(others)]).code)
        else:
            for b in ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC"):
                ip._mset(cfg, L, b, "D_MISC_CFG",
                         PROC_PRECISION=precs[(precs.index(prec) + 1) % len(precs)])
        out.append(bad)
    return out


# -- the core on the playback engine ------------------------------------------------------------
# nv_small: 8 x 40; nv_small_256 (Atomic-C 32, four atoms per CBUF entry; the build
# tests/test_conv_rtl.py uses): 20; nv_small_int16 (its shared input convertor also converts
# int16 feature input: the image path's int8 lanes on it; the build tests/test_conv_rtl.py
# uses): 40; slow: nv_small_256_2col (two-column entries: the line's bytes run through the
# slice's bank rows; the default suite runs image layers on two-column entries on
# nv_small_fp16, below) 20, nv_full 30
def _shard(cfg, seed, count, *marks):
    return pytest.param(cfg, seed, count, id=f"{cfg.name}-seed{seed}", marks=marks)


SHARDS = [_shard(NV_SMALL, seed, 40) for seed in range(8)] + \
    [_shard(NvdlaConfig.preset("nv_small_256"), 100, 20), _shard(NV_SMALL_INT16, 7, 40),
     _shard(NV_SMALL_256_2COL, 110, 20, pytest.mark.slow),
     _shard(NvdlaConfig.preset("nv_full"), 111, 30, pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", SHARDS)
def test_random_image_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = ip.write_random_image_traces(cfg, str(tmp_path), count, seed=seed,
                                         max_macs=300_000)
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


# image data reuse: pairs of image layers, the second reusing all the first one's lines or its
# kept lines followed by a new band (nv_small; two-column entries; int16 / fp16 processing)
PAIR_SHARDS = [_shard(NV_SMALL, 130, 24), _shard(NV_SMALL_256_2COL, 131, 12, pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", PAIR_SHARDS)
def test_image_reuse_pairs_rtl_matches_golden(tmp_path, cfg, seed, count):
    paths = ip.write_random_image_pair_traces(cfg, str(tmp_path), count, seed=seed,
                                              precs=image_precs(cfg))
    assert sum("_full_" in p for p in paths) == sum("_partial_" in p for p in paths)
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


#: the tag of each processing precision in a random image trace's name
_PREC_TAG = {1: "_i16", 2: "_fp16"}


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", [
    _shard(NV_SMALL_INT16, 133, 4), _shard(NV_SMALL_FP16, 134, 4),
    _shard(IMG_WIDE, 132, 6, pytest.mark.slow)])
def test_wide_image_reuse_pairs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """int8 and the build's int16 / fp16 image reuse pairs in turn (2-byte elements in the kept
    lines)."""
    paths = ip.write_random_image_pair_traces(cfg, str(tmp_path), count, seed=seed,
                                              precs=image_precs(cfg))
    for prec in image_precs(cfg)[1:]:
        assert any(_PREC_TAG[prec] in p for p in paths), prec
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           len(paths))


# int16 and fp16 image processing (the build's precisions in turn): the shared int16 build
# (bank-row entries) and fp16 build (two-column entries), 24 each; slow: 60 on IMG_WIDE (both on
# two-column entries), 120 on bank-row entries, 30 on nv_full
WIDE_SHARDS = [_shard(NV_SMALL_INT16, 124, 24), _shard(NV_SMALL_FP16, 120, 24),
               _shard(IMG_WIDE, 123, 60, pytest.mark.slow),
               _shard(IMG_WIDE_ROWS, 121, 120, pytest.mark.slow),
               _shard(NvdlaConfig.preset("nv_full"), 122, 30, pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", WIDE_SHARDS)
def test_wide_image_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """int8 and the build's int16 / fp16 processing of random image layers in turn: integer
    pixels through the convertor into int16 and fp16 (17-bit saturation, nearest fp16), fp16
    pixels as they are (NaN flushing at random), 16-bit pad values, int16 halves of a group
    and of a post-extended row group."""
    paths = ip.write_random_image_traces(cfg, str(tmp_path), count, seed=seed,
                                         max_macs=100_000, precs=image_precs(cfg))
    names = " ".join(paths)
    for prec in image_precs(cfg)[1:]:
        assert _PREC_TAG[prec] in names, prec
    if any(f.endswith("_F") for f in cfg.image_packed_formats):
        assert "_F_fp16" in names
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


@pytest.mark.rtl
def test_post_extension_rtl_matches_golden(tmp_path):
    """2- and 4-line post-extension on every format whose kernel line can fit (R8 takes
    both, the 3- and 4-channel formats 2 lines on Atomic-C 8)."""
    from sim.conv.random_programs import _golden_crcs, write_trace
    cfg = NV_SMALL
    rng = np.random.default_rng(42)
    paths = []
    for fmt in ip.image_formats_of(cfg):
        C = ip.pixel_format(fmt).channels
        for post in (2, 4):
            if C > cfg.atomic_c // post:
                continue
            for i in range(2):
                layer = ip.random_image_layer(cfg, rng, 200_000, fmt=fmt, post=post)
                path = write_trace(str(tmp_path), f"img_post{post}_{fmt}_{i}", [layer])
                crcs, err = _golden_crcs(cfg, path, 1)
                assert crcs is not None, err
                write_trace(str(tmp_path), f"img_post{post}_{fmt}_{i}", [layer], crcs)
                paths.append(path)
    regs = [open(f"{p}/{p.split('/')[-1]}.cfg").read() for p in paths]
    assert sum("D_POST_Y_EXTENSION_0, 0x2" in r for r in regs) >= 2
    assert sum("D_POST_Y_EXTENSION_0, 0x1" in r for r in regs) >= 20
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=9, busy=0.3, latency=(1, 24)),
           len(paths))


@pytest.mark.rtl
def test_feature_layer_after_an_image_layer(tmp_path):
    """An image layer that keeps its data and weights, then a feature layer asking for data
    and weight reuse: nothing of an image's is reused (fresh fetch, as the golden model)."""
    from sim.conv.random_programs import _golden_crcs, write_trace
    cfg = NV_SMALL
    rng = np.random.default_rng(8)
    paths = []
    for i in range(6):
        img = ip.random_image_layer(cfg, rng, 50_000)
        feat = rp.random_program(cfg, rng, 50_000, slot=1)
        for layer, flds in ((img, dict(SKIP_DATA_RLS=1, SKIP_WEIGHT_RLS=1)),
                            (feat, dict(DATA_REUSE=1, WEIGHT_REUSE=int(i % 2)))):
            for b in ("CDMA", "CSC"):
                r = Regs(register_map(cfg)[b])
                r.words = layer["regs"][b]
                r.set("D_MISC_CFG", **flds)
        path = write_trace(str(tmp_path), f"img_then_feature_{i}", [img, feat])
        crcs, err = _golden_crcs(cfg, path, 2)
        if crcs is None:
            continue
        write_trace(str(tmp_path), f"img_then_feature_{i}", [img, feat], crcs)
        paths.append(path)
    assert len(paths) >= 3
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=4, busy=0.3, latency=(1, 24)),
           len(paths))


@pytest.mark.rtl
def test_invalid_image_programs_write_nothing(tmp_path):
    cfg = NV_SMALL
    items = ip.write_invalid_image_traces(cfg, str(tmp_path))
    for path, fld in items:
        res = rp.run_trace_golden(path, cfg)
        assert not res.passed and fld in res.message, (path, fld, res.message)
    # a valid image layer after them in the same simulator start still runs
    valid = ip.write_random_image_traces(cfg, str(tmp_path), 2, seed=77, max_macs=20_000)
    paths = [p for p, _ in items] + valid
    _check(_rtl(paths, cfg, max_cycles=200_000, seed=5, busy=0.3, latency=(1, 24)),
           len(paths))


# -- the CDMA's image path alone (Amaranth simulation) -------------------------------------------
def run_cdma_image(cfg, layer, seed=1, max_cycles=60_000, backpressure=0.3, latency=(0, 8),
                   counters=None):
    """The Cdma of ``layer`` into a Cbuf through the memory interfaces (random AXI
    back-pressure); returns (CBUF slices as the RTL wrote them [H, E*BW] bytes, the golden
    CBUF lines [H, Wp*C x element bytes], cycles to dat_done). ``counters`` (a dict, builds
    with fp16): gets the RTL's and the golden model's fp16 data NaN / infinity counts,
    ``"rtl"`` and ``"golden"``."""
    import random
    import types

    from amaranth.sim import Simulator

    from sim.conv.image import fetch_image
    from sim.conv.program import decode
    from sim.memory import SparseMemory
    from sim.regs import GroupView
    from tb.axi_model import AxiMemoryModel
    from tb.sdp_unit import view_value

    from .test_cdma import Bench
    rmap = register_map(cfg)
    mem = SparseMemory()
    for addr, data, _ in layer["images"]:
        mem.write(addr, np.asarray(data, np.uint8))
    p = decode(cfg, *(GroupView(rmap[b], layer["regs"][b]) for b in rp.CONV_BLOCKS))
    stats = {"data": (0, 0)}
    want = fetch_image(cfg, p, types.SimpleNamespace(gather=mem.gather), stats)[0]  # [H, Wp, C]
    H, Wp, C = want.shape
    bench = Bench(cfg)
    cdma, cbuf = bench.cdma, bench.cbuf
    BW, DEPTH = cfg.cbuf_bank_width, cfg.cbuf_bank_depth
    axi = AxiMemoryModel(bench.dmaif, "dbb", cfg.dbbif_width, rng=random.Random(seed),
                         latency=latency, backpressure=backpressure,
                         max_burst=cfg.max_burst_length, memory=mem)
    E = p.entries * (cfg.cbuf_entry_bytes // BW)          # bank rows per slice
    got = np.zeros((H, E * BW), np.uint8)
    cycles = [0]

    async def tb(ctx):
        ctx.set(cdma.regs, view_value(cdma.regs.shape(), rmap["CDMA"], layer["regs"]["CDMA"]))
        ctx.set(cdma.csc, {"rls_slices": H - 1, "height_ext": H - 1})
        ctx.set(cdma.wt_released, 1 << 30)
        ctx.set(cdma.start, 1)
        await ctx.tick()
        ctx.set(cdma.start, 0)
        while not ctx.get(cdma.dat_done):
            await ctx.tick()
            cycles[0] += 1
            assert cycles[0] < max_cycles, ("timeout", ctx.get(cdma.dat_slices))
        for y in range(H):
            for e in range(E):
                flat = y * E + e
                v = cbuf.peek(ctx, flat)
                got[y, e * BW:(e + 1) * BW] = np.frombuffer(v.to_bytes(BW, "little"), np.uint8)
        if counters is not None:
            st = cdma.status
            counters["rtl"] = (ctx.get(st["D_NAN_INPUT_DATA_NUM"]["NAN_DATA_NUM"]),
                               ctx.get(st["D_INF_INPUT_DATA_NUM"]["INF_DATA_NUM"]))
            counters["golden"] = stats["data"]

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    axi.add_to(sim)
    sim.add_testbench(tb)
    sim.run()
    if p.precision == 0:
        want_b = (want.reshape(H, Wp * C) & 0xFF).astype(np.uint8)
    else:                                  # int16 / fp16: little-endian byte pairs
        want_b = (want.reshape(H, Wp * C) & 0xFFFF).astype("<u2").view(np.uint8)
    return got[:, :want_b.shape[1]], want_b, cycles[0]


@pytest.mark.parametrize("fmt", ip.image_formats_of(NV_SMALL))
def test_cdma_image_lines_match_golden(fmt):
    cfg = NV_SMALL
    rng = np.random.default_rng(sum(map(ord, fmt)))
    layer = ip.random_image_layer(cfg, rng, 4_000, fmt=fmt)
    got, want, _ = run_cdma_image(cfg, layer)
    assert np.array_equal(got, want), (got[:2], want[:2])


WIDE_CDMA = [("A16B16G16R16_F", 2), ("R16_F", 2), ("A16Y16U16V16_F", 2), ("R16", 2),
             ("A8B8G8R8", 2), ("Y16___U16V16_N444", 2), ("A2B10G10R10", 1), ("R16_I", 1),
             ("Y8___U8V8_N444", 1), ("X16B16G16R16", 1)]


@pytest.mark.parametrize("fmt, prec", WIDE_CDMA, ids=[f"{f}-{p}" for f, p in WIDE_CDMA])
def test_cdma_wide_image_lines_match_golden(fmt, prec):
    """int16 / fp16 processing: 2 bytes per element in the CBUF line (the 16-bit pad value,
    the convertor's int16 or fp16 result, fp16 pixels as they are, NaN flushing); on fp16
    pixels CDMA's NaN / infinity data counters count from the line's first ROI pixel to the
    end of its last atom, as the golden model (and NVDLA's CDMA)."""
    from sim.sdp.random_programs import fp16_codes
    cfg = IMG_WIDE
    rng = np.random.default_rng(sum(map(ord, fmt)) + prec)
    layer = ip.random_image_layer(cfg, rng, 4_000, fmt=fmt, prec=prec)
    f = ip.pixel_format(fmt)
    if f.is_float:
        # NaNs and infinities in the ROI and in every line's tail atom bytes
        base, ls = layer["info"]["feature_base"], layer["regs"]["CDMA"]["D_LINE_STRIDE"]
        for addr, data, ram in layer["images"]:
            if addr == base:
                codes = fp16_codes(rng, data.size // 2)
                special = np.array([0x7C00, 0xFC00, 0x7E00, 0xFD55, 0x7C01])
                codes = np.where(rng.random(codes.size) < 0.2, rng.choice(special, codes.size),
                                 codes)
                data[:] = codes.astype("<u2").view(np.uint8)
    counters = {}
    got, want, _ = run_cdma_image(cfg, layer, counters=counters)
    assert np.array_equal(got, want), (got[:2], want[:2])
    assert counters["rtl"] == counters["golden"], counters
    if f.is_float and f.precision == "fp16":
        assert min(counters["golden"]) > 0


# -- the convolution pipeline alone (Amaranth simulation) ----------------------------------------
class _PipeBench:
    """ConvPipeline with the memory interfaces and an AXI memory model."""

    def __init__(self, cfg):
        from amaranth.hdl import Elaboratable, Module
        from amaranth.lib import wiring

        from hw.conv.conv import ConvPipeline
        from hw.mem.dmaif import DmaInterfaces
        pipe = ConvPipeline(cfg, register_map(cfg))
        dmaif = DmaInterfaces(cfg, ["cdma_dat", "cdma_wt"], ["idle"])

        class B(Elaboratable):
            def elaborate(self, platform):
                m = Module()
                m.submodules.pipe, m.submodules.dmaif = pipe, dmaif
                wiring.connect(m, pipe.rd_cdma_dat, dmaif.rd_cdma_dat)
                wiring.connect(m, pipe.rd_cdma_wt, dmaif.rd_cdma_wt)
                return m
        self.top, self.pipe, self.dmaif = B(), pipe, dmaif


def run_pipeline_image(cfg, layer, seed=1, max_cycles=200_000, probe=None):
    """(the pipeline's flying output values in delivery order, the golden ones, cycles)."""
    import random
    import types

    from amaranth.sim import Simulator

    from sim.conv.cacc import deliver
    from sim.conv.cdma import CbufState, load_cbuf
    from sim.conv.cmac import convolve
    from sim.conv.program import decode
    from sim.memory import SparseMemory
    from sim.regs import GroupView
    from tb.axi_model import AxiMemoryModel
    from tb.sdp_unit import flying_cube, view_value
    rmap = register_map(cfg)
    mem = SparseMemory()
    for addr, data, _ in layer["images"]:
        mem.write(addr, np.asarray(data, np.uint8))
    p = decode(cfg, *(GroupView(rmap[b], layer["regs"][b]) for b in rp.CONV_BLOCKS))
    core = types.SimpleNamespace(dbb=mem, sram=mem)
    cube, weights = load_cbuf(core, cfg, p, CbufState())
    out, _ = deliver(convolve(p, cube, weights), p.clip_truncate)      # [1, K, Ho, Wo]
    AK, T = cfg.atomic_k, cfg.sdp_bs_throughput
    K = p.kernels
    want = []
    for g in range(-(-K // AK)):
        for y in range(p.out_height):
            for x in range(p.out_width):
                for c in range(g * AK, g * AK + AK):      # AK lanes per position (surface)
                    want.append(int(out[0, c, y, x]) if c < K else None)
    b = _PipeBench(cfg)
    pipe = b.pipe
    axi = AxiMemoryModel(b.dmaif, "dbb", cfg.dbbif_width, rng=random.Random(seed),
                         latency=(0, 8), backpressure=0.3, max_burst=cfg.max_burst_length,
                         memory=mem)
    got = []
    cycles = [0]

    async def tb(ctx):
        for blk in rp.CONV_BLOCKS:
            port = getattr(pipe, f"{blk.lower()}_regs")
            ctx.set(port, view_value(port.shape(), rmap[blk], layer["regs"][blk]))
        ctx.set(pipe.sdp, flying_cube(rmap["SDP"], layer["regs"]["SDP"], cfg))
        ctx.set(pipe.sdp_wait, 1)
        for blk in rp.CONV_BLOCKS:
            ctx.set(getattr(pipe, f"{blk.lower()}_op_en"), 1)
        ctx.set(pipe.out.ready, 1)
        while True:
            await ctx.tick()
            cycles[0] += 1
            if probe is not None:
                probe(ctx, pipe)
            assert cycles[0] < max_cycles, ("timeout", len(got), len(want))
            if ctx.get(pipe.out.valid):
                v = ctx.get(pipe.out.payload)
                got.extend(int(x) for x in v.data)
                if v.last:
                    break
            assert not ctx.get(pipe.flying_abort), "the check rejected the program"

    sim = Simulator(b.top)
    sim.add_clock(1e-8)
    axi.add_to(sim)
    sim.add_testbench(tb)
    sim.run()
    got = [None if w is None else g for g, w in zip(got, want)] + got[len(want):]
    return got, want, cycles[0]


@pytest.fixture
def poisoned_cbuf(monkeypatch):
    """The CBUF returns the inverse for a read of an entry written in the same cycle (what a
    block RAM without read-during-write logic may do, :mod:`hw.conv.cbuf`), on the builds
    where the CBUF drops that logic: image layers never read a half-written entry."""
    import hw.conv.conv
    from hw.conv.cbuf import Cbuf
    monkeypatch.setattr(hw.conv.conv, "Cbuf", lambda cfg: Cbuf(
        cfg, poison_collisions=cfg.memory_atom == cfg.cbuf_bank_width))


@pytest.mark.usefixtures("poisoned_cbuf")
@pytest.mark.parametrize("fmt", ["A8B8G8R8", "R8", "Y8___V8U8_N444", "B10G10R10A2"])
def test_pipeline_image_matches_golden(fmt):
    cfg = NV_SMALL
    rng = np.random.default_rng(sum(map(ord, fmt)) + 1)
    layer = ip.random_image_layer(cfg, rng, 3_000, fmt=fmt)
    got, want, _ = run_pipeline_image(cfg, layer)
    assert got == want, (layer["info"], got[:16], want[:16])
