"""The convolution pipeline on the generated core: NVDLA's dc_* traces and constrained-random
convolution programs, RTL against the golden model bit for bit.

Everything here runs on the playback engine (:mod:`tb.playback`: the Verilated core with its
memories and CSB master in C++; one build per configuration, shared by the batches through
the build lock). Each random program is a trace directory written by
:mod:`sim.conv.random_programs` with golden CRCs over the output surface plus guard bands, run
under random AXI back-pressure (30 % busy) and latency (1-24 cycles).

Default run: the 9 public dc_* traces (3 batches of about equal cycles), 300 random programs
of up to 200k MACs on nv_small (5 shards of 60) and 100 on nv_small_256 (Atomic-C 32, four
atoms per CBUF entry; 2 shards of 50), 60 on nv_small_int16 (int16 and int8 layers mixed,
reuse pairs included, half the layers batched: that build has batching; 200 more in the slow
suite; batch-focused suites in ``tests/test_conv_batch_rtl.py``) and 30 more there whose int16
layers all enable the input convertor (int16 to int16; 100 more in the slow suite), 16 cripple layers + 40 random
int8 programs on nv_small_256_2col (two-column CBUF entries: register entries of two bank rows,
as nv_full's, and batching; 8 + 60 on nv_full itself in the slow suite) and 16 int16 cripple
layers + 40 random programs (int16 and int8) there (160 more, and 8 + 40 on nv_full, slow). Slow (``-m slow``) also: 100 on nv_large
(Atomic-C 64 x Atomic-K 32, 32-byte atoms, two atoms per 64-byte CBUF entry, 512-bit DBBIF,
SRAMIF, 64-bit addresses; 2 shards of 50, reuse pairs included, half the layers batched): its first build
takes about 20 minutes (Verilog ~4, Verilator ~2.5, C++ ~13 on a loaded 2-core machine), a
shard about 4 minutes.
"""

from __future__ import annotations

import os

import pytest

from arch.config import NvdlaConfig
from sim.conv.random_programs import write_random_traces

from .conftest import NV_SMALL_256_2COL, NV_SMALL_INT16, TRACES, assert_all_pass, playback

NV_SMALL = NvdlaConfig.preset("nv_small")
NV_SMALL_256 = NvdlaConfig.preset("nv_small_256")
NV_LARGE = NvdlaConfig.preset("nv_large")
NV_FULL = NvdlaConfig.preset("nv_full")
DC = TRACES / "nv_small"
# Public dc_* traces in batches of roughly equal layer cycles (reference: 315k, 296k, 217k,
# 77k, 48k, 36k, 19k, 18k, 0.2k).
DC_BATCHES = [
    ["dc_32x26x76_6x3x76x16_int8_0", "dc_1x1x8_1x1x8x1_int8_0"],
    ["dc_8192x1x1_2x3x1x41_int8_0", "dc_6x8x192_3x3x192x32_int8_0",
     "dc_4x1x8192_1x1x8192x1_int8_0"],
    ["dc_24x44x14_5x3x14x41_int8_0", "dc_8x16x128_3x3x128x32_int8",
     "dc_13x15x64_5x3x64x16_int8_0", "dc_14x7x49_3x4x49x32_int8_0"],
]


_rtl = playback
_check = assert_all_pass


def test_dc_batches_cover_the_public_traces():
    if not DC.is_dir():
        pytest.skip(f"public traces not found at {DC}")
    public = sorted(n for n in os.listdir(DC) if n.startswith("dc_"))
    assert sorted(sum(DC_BATCHES, [])) == public


@pytest.mark.rtl
@pytest.mark.parametrize("batch", range(len(DC_BATCHES)), ids=lambda b: f"batch{b}")
def test_public_dc_traces_rtl(batch):
    if not DC.is_dir():
        pytest.skip(f"public traces not found at {DC}")
    names = DC_BATCHES[batch]
    _check(_rtl([str(DC / n) for n in names], NV_SMALL, max_cycles=1_000_000), len(names))


SHARDS = [(NV_SMALL, seed, 60) for seed in range(5)] + \
    [(NV_SMALL_256, 100 + seed, 50) for seed in range(2)]
#: nv_large: a build of about 20 minutes, so only in the slow suite
LARGE_SHARDS = [(NV_LARGE, 200 + seed, 50) for seed in range(2)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", [
    *SHARDS, *(pytest.param(*s, marks=pytest.mark.slow) for s in LARGE_SHARDS)],
    ids=[f"{c.name}-seed{s}" for c, s, _ in SHARDS + LARGE_SHARDS])
def test_random_conv_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    # nv_large batches half its layers (the generator's default); nv_small and nv_small_256
    # have no batching (their draws do not depend on batch_share)
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000)
    _check(_rtl(paths, cfg, max_cycles=1_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


#: two-column CBUF entries (register entries of two bank rows): int8 layers (fp16 stays
#: rejected there; int16 below; image input: tests/test_conv_image_rtl.py); nv_full itself (a build of about 10 minutes) in the
#: slow suite
TWO_COLUMN_SHARDS = [pytest.param(NV_SMALL_256_2COL, 400, 40, id="nv_small_256_2col-seed400"),
                     pytest.param(NV_FULL, 500, 60, id="nv_full-seed500",
                                  marks=pytest.mark.slow)]


def cripple_traces(cfg, directory, prec=0):
    """One layer per count of a line's leftover memory atoms in its last CBUF entry (as the
    registers count entries): channels of 1 .. 2 x atoms-per-entry atoms (and a part atom),
    odd widths, padding, strides; golden CRCs. ``prec`` 1: int16 layers (channels of 2
    bytes, as many bytes per line)."""
    import numpy as np

    from sim.conv import random_programs as rp
    rng = np.random.default_rng(41 + prec)
    atom = cfg.memory_atom
    per_entry = cfg.cbuf_entry_bytes // atom
    eb = 2 if prec else 1                               # bytes per element
    lim = 32768 if prec else 128
    kk = cfg.atomic_k // eb                             # kernels per group
    paths = []
    for i, n in enumerate(range(1, 2 * per_entry + 1)):
        C = max(1, (n * atom - (i % 3) * (atom // 4)) // eb)
        W, H, K = 3 + i % 5, 3 + i % 3, 1 + (5 * i) % (kk + 3)
        kh, kw = 1 + i % 3, 1 + (i + 1) % 3
        data = rng.integers(-lim, lim, (C, H, W))
        weights = rng.integers(-lim, lim, (K, C, kh, kw))
        clip = int(np.clip(np.log2(np.sqrt(C * kh * kw) * lim * lim) - 6 * eb, 0, 16))
        name = f"conv_cripple{'16' if prec else ''}_{n}"
        layer = rp.conv_layer(cfg, W=W, H=H, C=C, K=K, kh=kh, kw=kw, data=data,
                              weights=weights, clip=clip, pad=(i % 2, 1, 1, i % 2),
                              stride=(1 + i % 2, 1), pad_value=(37 * i) & (0xFFFF if prec
                                                                            else 0xFF),
                              prec=prec)
        path = rp.write_trace(directory, name, [layer])
        crcs, err = rp._golden_crcs(cfg, path, 1)
        assert crcs is not None, err
        paths.append(rp.write_trace(directory, name, [layer], crcs))
    return paths


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", TWO_COLUMN_SHARDS)
def test_random_two_column_conv_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """int8 convolution on builds whose CBUF entries are two bank rows (the CDMA's shared
    "cripple" entries of 1 / 2 leftover atoms, the CSC's row pairs), RTL against the golden
    model under back-pressure and latency: every count of leftover atoms, then random layers
    and reuse pairs, half the layers batched (both builds batch, as nv_full does)."""
    paths = cripple_traces(cfg, str(tmp_path))
    paths += write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000,
                                 batch_share=0.5, int8_only=True)
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           len(paths))


#: two-column CBUF entries with int16 layers: the default shard reuses the int8 shard's build
TWO_COLUMN_INT16_SHARDS = [
    pytest.param(NV_SMALL_256_2COL, 410, 40, id="nv_small_256_2col-seed410"),
    pytest.param(NV_SMALL_256_2COL, 411, 160, id="nv_small_256_2col-seed411",
                 marks=pytest.mark.slow),
    pytest.param(NV_FULL, 510, 40, id="nv_full-seed510", marks=pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", TWO_COLUMN_INT16_SHARDS)
def test_random_two_column_int16_conv_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """int16 convolution on builds whose CBUF entries are two bank rows (an int16 channel
    group is a register entry, its halves the entry's rows), RTL against the golden model
    under back-pressure and latency: an int16 layer per count of leftover atoms, then random
    programs (int16 or int8 per layer or reuse pair, some int16 layers with the input
    convertor, half the layers batched)."""
    paths = cripple_traces(cfg, str(tmp_path), prec=1)
    paths += write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000,
                                 batch_share=0.5, int16_cvt=0.3)
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           len(paths))


INT16_SHARDS = [pytest.param(NV_SMALL_INT16, 300, 60, id="nv_small_int16-seed300"),
                pytest.param(NV_SMALL_INT16, 301, 200, id="nv_small_int16-seed301",
                             marks=pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", INT16_SHARDS)
def test_random_int16_conv_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """int16 convolution on the int16 build (random_programs draws int16 or int8 per layer
    or reuse pair), RTL against the golden model under back-pressure and latency."""
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000)
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


def int16_cvt_programs(paths):
    """The programs among trace ``paths`` with an int16 layer (CDMA ``PROC_PRECISION``
    INT16) that enables the input convertor (``D_CVT_CFG.CVT_EN``), read from the traces'
    register writes."""
    import re
    hits = 0
    for path in paths:
        name = os.path.basename(path)
        with open(os.path.join(path, f"{name}.cfg")) as f:
            text = f.read()
        prec, found = None, False
        for reg, value in re.findall(r"reg_write\(NVDLA_CDMA\.(D_MISC_CFG|D_CVT_CFG)_0, "
                                     r"(0x[0-9a-fA-F]+)\);", text):
            value = int(value, 16)
            if reg == "D_MISC_CFG":
                prec = (value >> 12) & 3
            elif prec == 1 and value & 1:
                found = True
        hits += found
    return hits


INT16_CVT_SHARDS = [pytest.param(NV_SMALL_INT16, 302, 30, 15, id="nv_small_int16-seed302"),
                    pytest.param(NV_SMALL_INT16, 303, 100, 50, id="nv_small_int16-seed303",
                                 marks=pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count, converted", INT16_CVT_SHARDS)
def test_random_int16_convertor_programs_rtl_matches_golden(tmp_path, cfg, seed, count,
                                                             converted):
    """The CDMA input convertor on int16 layers (int16 to int16: ``(d - offset) x scale``
    rounded by ``CVT_TRUNCATE``, saturated to int16): random programs whose int16 layers all
    enable it (int8 layers as usual, reuse pairs keep the fetching layer's convertor), RTL
    against the golden model under back-pressure and latency; at least ``converted``
    programs have such a layer."""
    paths = write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000,
                                int16_cvt=1.0)
    assert int16_cvt_programs(paths) >= converted
    _check(_rtl(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3, latency=(1, 24)),
           count)


# -- the CDMA input convertor on feature input -------------------------------------------------
# (CVT_OFFSET, CVT_SCALE, CVT_TRUNCATE) and geometry: cripple channel tails (C off the memory
# atom), padding with a pad value (inserted by the CSC, not converted), strides, a packed 1 x 1
# cube, negative scales, truncation with ties, saturation both ways, a wide offset.
CVT_LAYERS = [
    dict(W=6, H=5, dC=3, K=5, kh=3, kw=3, pad=(1, 1, 1, 1), pad_value=0x35, cvt=(-3, -37, 4)),
    dict(W=9, H=4, dC=-1, K=3, kh=2, kw=3, stride=(2, 1), cvt=(20, 300, 8)),
    dict(W=4, H=3, dC=8, K=9, cvt=(1, 5, 1)),
    dict(W=1, H=1, dC=22, K=4, cvt=(-40, -1000, 10)),
    dict(W=5, H=6, dC=1, K=2, kh=2, kw=2, pad=(0, 1, 2, 0), pad_value=0xF0, cvt=(-200, 3, 0)),
]


def cvt_traces(cfg, directory, prec=0):
    """Feature layers with ``CVT_EN`` (golden CRCs; int8, or int16 to int16 with ``prec=1``)
    and the expected CRCs the same layers would give without the convertor (to show the
    convertor changes the result)."""
    import numpy as np

    from sim.conv import random_programs as rp
    rng = np.random.default_rng(33 if prec else 31)
    bits = 16 if prec else 8
    A = cfg.memory_atom // (bits // 8)           # elements per memory atom
    paths, plain = [], []
    for i, spec in enumerate(CVT16_LAYERS if prec else CVT_LAYERS):
        s = dict(spec)
        C = 2 * A + s.pop("dC")
        cvt = s.pop("cvt")
        kh, kw = s.get("kh", 1), s.get("kw", 1)
        data = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (C, s["H"], s["W"]))
        weights = rng.integers(-8, 9, (s["K"], C, kh, kw))
        q = rp._convert(data, cvt, bits)
        rms = float(np.sqrt(np.mean(q.astype(np.float64) ** 2))) + 1
        clip = int(np.clip(np.log2(np.sqrt(C * kh * kw) * rms * 5) - (bits - 2), 0, 16))
        crcs = []
        tag = "conv16" if prec else "conv"
        for name, c in ((f"{tag}_cvt_{i}", cvt), (f"{tag}_nocvt_{i}", None)):
            layer = rp.conv_layer(cfg, C=C, data=data, weights=weights, clip=clip, cvt=c,
                                  **({"prec": 1} if prec else {}), **s)
            path = rp.write_trace(directory, name, [layer])
            got, err = rp._golden_crcs(cfg, path, 1)
            assert got is not None, err
            crcs.append(got)
            if c is not None:
                rp.write_trace(directory, name, [layer], got)
                paths.append(path)
        plain.append(crcs)
    return paths, plain


@pytest.mark.rtl
@pytest.mark.parametrize("cfg", [NV_SMALL, NV_SMALL_256], ids=lambda c: c.name)
def test_feature_input_convertor_rtl(tmp_path, cfg):
    """CVT_EN on feature input: the RTL converts every byte the CDMA writes (the golden CRCs
    differ from the same layers without the convertor, so an unconverted fetch fails)."""
    paths, crcs = cvt_traces(cfg, str(tmp_path))
    assert all(with_cvt != without for with_cvt, without in crcs)
    _check(_rtl(paths, cfg, max_cycles=1_000_000, seed=4, busy=0.3, latency=(1, 24)),
           len(paths))


# int16 to int16 (nv_small_int16): channel tails off the 4-element memory atom, pad values (not
# converted), strides, a packed 1 x 1 cube, negative scales, ties, shifts up to 63, saturation
# both ways, offsets at the int16 edges; data over the whole int16 range
CVT16_LAYERS = [
    dict(W=6, H=5, dC=3, K=5, kh=3, kw=3, pad=(1, 1, 1, 1), pad_value=0x8035,
         cvt=(-3, -37, 4)),
    dict(W=9, H=4, dC=-1, K=3, kh=2, kw=3, stride=(2, 1), cvt=(20000, 300, 8)),
    dict(W=4, H=3, dC=2, K=9, cvt=(1, 5, 1)),
    dict(W=1, H=1, dC=6, K=4, cvt=(-32768, -32768, 20)),
    dict(W=5, H=6, dC=1, K=2, kh=2, kw=2, pad=(0, 1, 2, 0), pad_value=0x7FF0,
         cvt=(32767, 3, 0)),
    dict(W=3, H=3, dC=0, K=6, kh=1, kw=2, cvt=(-500, 32767, 15)),
    dict(W=7, H=2, dC=5, K=3, pad=(2, 0, 0, 1), pad_value=0x1234, cvt=(0, -1, 63)),
]


@pytest.mark.rtl
def test_int16_feature_input_convertor_rtl(tmp_path):
    """CVT_EN on int16 feature input (nv_small_int16): the RTL converts every int16 element
    the CDMA writes to int16 (the golden CRCs differ from the same layers without the
    convertor, so an unconverted or int8-converted fetch fails)."""
    cfg = NV_SMALL_INT16
    paths, crcs = cvt_traces(cfg, str(tmp_path), prec=1)
    assert all(with_cvt != without for with_cvt, without in crcs)
    _check(_rtl(paths, cfg, max_cycles=1_000_000, seed=5, busy=0.3, latency=(1, 24)),
           len(paths))


# -- CDMA's D_DATAIN_SIZE_EXT on feature input ---------------------------------------------------
@pytest.mark.rtl
def test_cdma_ext_size_is_ignored_on_feature_input(tmp_path):
    """CDMA's D_DATAIN_SIZE_EXT is a Winograd register: NVDLA's nv_full traceplayer tests
    leave it 0 on direct convolution. Random layers and reuse pairs with it zeroed give the
    golden CRCs of the same layers with it set, and pass on the RTL (reuse keys included)."""
    import numpy as np
    from sim.conv import random_programs as rp
    from sim.random_traces import set_fields
    from sim.random_traces import Redraw
    rng = np.random.default_rng(17)
    paths = []
    for i, kind in enumerate(("none", "none", "none", "data_full", "data_partial")):
        for _ in range(50):                      # redraw what the golden model rejects
            try:
                layers = [rp.random_program(NV_SMALL, rng, 20_000, 0)] if kind == "none" \
                    else rp.random_pair(NV_SMALL, rng, 20_000, kind)
            except Redraw:
                continue
            want, _ = rp._golden_crcs(NV_SMALL, rp.write_trace(str(tmp_path), f"set{i}", layers),
                                      len(layers))
            if want is not None:
                break
        assert want is not None
        for layer in layers:
            set_fields(NV_SMALL, layer, "CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=0,
                       DATAIN_HEIGHT_EXT=0)
        path = rp.write_trace(str(tmp_path), f"zero{i}", layers)
        assert rp._golden_crcs(NV_SMALL, path, len(layers)) == (want, None)
        paths.append(rp.write_trace(str(tmp_path), f"zero{i}", layers, want))
    _check(_rtl(paths, NV_SMALL, max_cycles=1_000_000, seed=5), len(paths))
