"""Compressed weights (``D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED``) on the convolution RTL of a
build with ``weight_compression``: the CDMA reads the WMB and the packed non-zero weights through
its weight client and expands them into the CBUF (:mod:`hw.conv.wdecomp`).

The int8 programs are drawn and judged on nv_small_wc (nv_small plus compression) and played on
the shared int16 build of tests/conftest.py (nv_small plus int16, batching, compression: the
same results for int8 layers, one Verilator build fewer); the int16 programs draw on that build.

* ``ConvCheck`` in Amaranth simulation gives the golden verdict on valid compressed layers and
  pairs and on every register-level compressed rule (the mutations of
  ``tests/test_conv_compression.py`` INVALID and further ones).
* The playback engine: random programs, half of them compressed (single layers and reuse
  pairs), bit for bit against the golden model under random AXI back-pressure and latency
  (default shard of 50; slow: 150 more, and 60 on nv_small_256 + compression, four atoms per
  CBUF entry); invalid compressed programs finish without any
  write; WGS / WMB surfaces that disagree with the weights (the golden model's run-time
  errors) finish and write nothing outside the output window; image layers (pre-extended
  weights) with compressed weights match the golden model.
"""

from __future__ import annotations

import copy
import os
import re
import zlib

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.conv import random_programs as rp
from sim.random_traces import MEM, set_fields

from .conftest import NV_SMALL_INT16, assert_all_pass, playback
from .test_conv_checks import _no_write_trace, golden_verdicts, rtl_verdicts, verdict_mismatches
from .test_conv_compression import INVALID as GOLDEN_INVALID

NV_SMALL_WC = NvdlaConfig.preset("nv_small").replace(name="nv_small_wc", weight_compression=True)
CFG = NV_SMALL_WC
#: the build the int8 programs drawn on CFG play on (a superset of CFG)
PLAY = NV_SMALL_INT16
#: the golden model's run-time errors (memory contents, not registers): the check passes them
RUNTIME = ("wgs_mismatch", "wmb_mismatch", "wmb_tail_bit")


def _base(cfg=CFG, **over):
    rng = np.random.default_rng(3)
    spec = dict(W=5, H=4, C=20, K=12, kh=2, kw=2, prec=0)
    spec.update(over)
    data = rng.integers(-128, 128, (spec["C"], spec["H"], spec["W"]))
    w = rng.integers(-128, 128, (spec["K"], spec["C"], spec["kh"], spec["kw"]))
    w[rng.random(w.shape) < 0.6] = 0
    return rp.conv_layer(cfg, data=data, weights=w, clip=6, compress=True, **spec)


def _both(reg, **f):
    def m(cfg, layers):
        for b in ("CDMA", "CSC"):
            set_fields(cfg, layers[-1], b, reg, **f)
    return m


def _word(block, reg, delta):
    def m(cfg, layers):
        layers[-1]["regs"][block][reg] += delta
    return m


def _skip_weight_rls(cfg, layers):
    _both("D_MISC_CFG", SKIP_WEIGHT_RLS=1)(cfg, layers)


def _kept_too_large(cfg, layers):
    """Compressed weights that fit one weight bank, uncompressed they do not: kept
    (SKIP_WEIGHT_RLS) they are rejected (this core keeps them expanded)."""
    layers[:] = [_big(cfg)]
    _both("D_BANK", WEIGHT_BANK=1)(cfg, layers)                # 8192 bytes: groups fit
    _skip_weight_rls(cfg, layers)


def _big(cfg):
    rng = np.random.default_rng(4)
    spec = dict(W=3, H=3, C=64, K=16, kh=3, kw=3, prec=0)      # 9216 bytes, groups 4608
    data = rng.integers(-128, 128, (spec["C"], spec["H"], spec["W"]))
    w = rng.integers(-128, 128, (spec["K"], spec["C"], spec["kh"], spec["kw"]))
    w[rng.random(w.shape) < 0.9] = 0
    return rp.conv_layer(cfg, data=data, weights=w, clip=6, compress=True, banks=(1, 3), **spec)


def _wide(C):
    """16 kernels of 8 x 8 x C on an 8 x 8 input: a mask larger than one bank (4 KiB)."""
    def make(cfg):
        rng = np.random.default_rng(8)
        spec = dict(W=8, H=8, C=C, K=16, kh=8, kw=8, prec=0)
        data = rng.integers(-128, 128, (C, 8, 8))
        w = rng.integers(-128, 128, (16, C, 8, 8))
        w[rng.random(w.shape) < 0.97] = 0
        return [rp.conv_layer(cfg, data=data, weights=w, clip=6, compress=True,
                              banks=(1, 9), **spec)]
    return make


def _group_too_large(cfg, layers):
    """One uncompressed kernel group (4608 bytes) over one weight bank (4096)."""
    layers[:] = [_big(cfg)]
    _both("D_BANK", WEIGHT_BANK=0)(cfg, layers)


def _reuse_pair(first_c, second_c):
    def make(cfg):
        rng = np.random.default_rng(9)
        g = dict(W=4, H=3, C=16, K=8, kh=1, kw=1, prec=0)
        w = rng.integers(-9, 9, (8, 16, 1, 1))
        w[rng.random(w.shape) < 0.5] = 0
        first = rp.conv_layer(cfg, data=rng.integers(-9, 9, (16, 3, 4)), weights=w, clip=4,
                              compress=first_c, reuse=(0, 0, 0, 1), banks=(1, 4), **g)
        second = rp.conv_layer(cfg, data=rng.integers(-9, 9, (16, 3, 4)), weights=None,
                               emit_weights=False, clip=4, compress=second_c,
                               reuse=(0, 1, 0, 0), slot=1, banks=(1, 4),
                               weight_base=first["info"]["weight_base"],
                               weight_bytes=first["info"]["wbytes"], **g)
        return [first, second]
    return make


#: register-level rules: name -> (mutation of [_base()] or None, layers maker or None)
MUTATIONS = {
    **{n: (m, None) for n, (m, _) in GOLDEN_INVALID.items() if n not in RUNTIME},
    "wmb_bytes_more": (_both("D_WMB_BYTES", WMB_BYTES=256 >> 5), None),
    "wmb_unaligned": (_word("CDMA", "D_WMB_ADDR_LOW", 4), None),
    "wgs_unaligned_4": (_word("CDMA", "D_WGS_ADDR_LOW", 4), None),
    "wgs_past_space": (_word("CDMA", "D_WGS_ADDR_LOW", (1 << 32) - 0x8500_0000 - 4), None),
    "wmb_past_space": (_word("CDMA", "D_WMB_ADDR_LOW", (1 << 32) - 0x8400_0000 - 64), None),
    "kept_too_large": (_kept_too_large, None),
    "group_too_large": (_group_too_large, None),
    # NVDLA: a mask over its bank streams a group at a time: 32768 bits > 8 x (4096 - 128)
    "wmb_group_too_large": (None, _wide(64)),
    "reuse_c_then_u": (None, _reuse_pair(True, False)),
    "reuse_u_then_c": (None, _reuse_pair(False, True)),
}
#: valid controls beside them
CONTROLS = {
    "base": (None, None),
    "kept": (_skip_weight_rls, None),
    "reuse_c_then_c": (None, _reuse_pair(True, True)),
    "big_fits": (lambda cfg, layers: layers.__setitem__(0, _big(cfg)), None),
    "wmb_group_fits": (None, _wide(62)),                         # 31744 bits: just fits
}


def _programs(table):
    out = {}
    for name, (mutate, make) in table.items():
        layers = make(CFG) if make else [_base()]
        if mutate:
            mutate(CFG, layers)
        out[name] = layers
    return out


def _random_compressed(seed, count):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        try:
            out.append(rp.random_pair(CFG, rng, 40_000, compress=True) if len(out) % 2 else
                       [rp.random_program(CFG, rng, 40_000, 0, compress=True)])
        except rp._Redraw:
            continue
    return out


def test_check_matches_golden_on_compressed_programs():
    bad_programs = _programs(MUTATIONS)
    good = _programs(CONTROLS)
    randoms = _random_compressed(6, 24)
    names = list(bad_programs) + list(good) + [f"random{i}" for i in range(len(randoms))]
    programs = list(bad_programs.values()) + list(good.values()) + randoms
    got = rtl_verdicts(CFG, programs)
    bad = verdict_mismatches(CFG, names, programs, got)
    for name, layers in zip(names, programs):
        gold = golden_verdicts(CFG, layers)
        if name in bad_programs and all(ok for ok, _ in gold):
            bad.append(f"{name}: the golden model accepts it")
        if name in good and not all(ok for ok, _ in gold):
            bad.append(f"{name}: the golden model rejects the control: {gold}")
    assert not bad, "\n".join(bad)


# -- the playback engine ---------------------------------------------------------------------
SHARDS = [pytest.param(0, 50, id="seed0")] + \
    [pytest.param(1, 150, id="seed1-slow", marks=pytest.mark.slow)]


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", SHARDS)
def test_random_compressed_programs_rtl_matches_golden(tmp_path, seed, count):
    paths = rp.write_random_traces(CFG, str(tmp_path), count, seed=300 + seed,
                                   max_macs=200_000, compress_share=0.5)
    _check(paths, count, seed)


def _check(paths, count, seed, cfg=PLAY):
    assert_all_pass(playback(paths, cfg, max_cycles=1_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count)


NV_SMALL_256_WC = NvdlaConfig.preset("nv_small_256").replace(name="nv_small_256_wc",
                                                             weight_compression=True)


@pytest.mark.rtl
@pytest.mark.slow
def test_random_compressed_programs_rtl_nv_small_256(tmp_path):
    """Four memory atoms per CBUF entry (Atomic-C 32): the expanded atoms fill an entry's lanes
    in turn."""
    paths = rp.write_random_traces(NV_SMALL_256_WC, str(tmp_path), 60, seed=400,
                                   max_macs=200_000, compress_share=0.5)
    _check(paths, 60, 4, NV_SMALL_256_WC)


_BAND = 0x1000


def _runtime_trace(directory, name, layers):
    """A trace of ``layers`` whose compressed surfaces disagree (the golden model rejects it at
    run time): its checks are the zeroed bands before and after the output window and every
    loaded image unchanged (the window itself is not checked)."""
    path = rp.write_trace(directory, name, layers, [0] * len(layers))
    waddr, wsize, wram = layers[-1]["window"]
    mem = MEM[wram]
    sync = f"sync_id_{len(layers) - 1}"
    cfg_path = os.path.join(path, f"{name}.cfg")
    with open(cfg_path) as f:
        text = f.read()
    # drop the window CRC check the writer put there (a placeholder 0)
    lines = [ln for ln in text.splitlines() if not ln.startswith("check_crc")]
    band_lo, band_hi = (waddr - _BAND, _BAND), (waddr + wsize, 0x10000)
    extra = [f"check_crc({sync}, {mem}, {a:#x}, {n:#x}, {zlib.crc32(bytes(n)):#010x});"
             for a, n in (band_lo, band_hi)]
    for layer in layers:
        for addr, data, ram in layer["images"]:
            extra.append(f"check_crc({sync}, {MEM[ram]}, {addr:#x}, {data.size:#x}, "
                         f"{zlib.crc32(data.tobytes()):#010x});")
    with open(cfg_path, "w") as f:
        f.write(f"mem_init({mem}, {waddr - _BAND:#x}, {wsize + _BAND + 0x10000:#x}, ALL_ZERO);\n"
                + "\n".join(lines) + "\n" + "\n".join(extra) + "\n")
    return path


def _runtime_mutations():
    def image(layer, key):
        return next(img for a, img, _ in layer["images"] if a == rp._BASES[key])

    def flip(key, i, bit):
        def m(layer):
            image(layer, key)[i] ^= bit
        return m

    def wmb_all(layer):                       # every element marked: the data runs out
        image(layer, "wmb")[:] = 0xFF

    def wmb_none(layer):                      # nothing marked: the data is dropped
        image(layer, "wmb")[:] = 0

    return {"wgs": flip("wgs", 0, 1), "wmb_bit": flip("wmb", 0, 1),
            "wmb_tail": flip("wmb", -1, 0x80), "wmb_all": wmb_all, "wmb_none": wmb_none}


@pytest.mark.rtl
def test_invalid_compressed_programs_playback(tmp_path):
    """Register-level rules: the layer finishes without any write (output window, a band around
    it and every image unchanged). Surfaces that disagree (the golden model's run-time errors:
    a WGS word, a WMB bit, a mask bit past the weights, every or no element marked): the layer
    finishes and writes nothing outside its output window (inside it: the convolution with the
    weights the mask and the compressed bytes give, missing bytes read as 0)."""
    d = str(tmp_path)
    paths = []
    for name, layers in _programs(MUTATIONS).items():
        if golden_verdicts(CFG, layers)[-1][0]:
            continue
        if len(layers) > 1 and not all(ok for ok, _ in golden_verdicts(CFG, layers[:-1])):
            continue
        # the build it plays on rejects it too (its int16 and batching change no rule here)
        assert golden_verdicts(PLAY, layers) == golden_verdicts(CFG, layers), name
        path = _no_write_trace(CFG, d, f"wc_nowrite_{name}", layers)
        assert not rp.run_trace_golden(path, CFG).passed, name
        paths.append(path)
    n_rules = len(paths)
    for name, mutate in _runtime_mutations().items():
        layers = [_base()]
        mutate(layers[0])
        path = _runtime_trace(d, f"wc_runtime_{name}", layers)
        res = rp.run_trace_golden(path, CFG)
        assert not res.passed and "CDMA.D_W" in res.message, (name, res.message)
        paths.append(path)
    # controls: the valid programs beside the rules (golden CRCs), and a run-time trace whose
    # upper band starts at the output window (the layer's own writes must show there)
    for name, layers in _programs(CONTROLS).items():
        crcs, err = rp._golden_crcs(CFG, rp.write_trace(d, f"wc_ok_{name}", layers),
                                    len(layers))
        assert err is None, (name, err)
        paths.append(rp.write_trace(d, f"wc_ok_{name}", layers, crcs))
    layers = [_base()]
    layers[0]["window"] = (layers[0]["window"][0], 0, layers[0]["window"][2])
    paths.append(_runtime_trace(d, "wc_runtime_control", layers))
    results = playback(paths, PLAY, max_cycles=400_000, busy=0.3, latency=(1, 24), seed=3)
    assert len(results) == len(paths) and n_rules >= 10
    ctl = results.pop()
    assert not ctl.passed and "check_crc" in ctl.message, ctl.message
    assert_all_pass(results, len(paths) - 1)


# -- image input with compressed weights ----------------------------------------------------------
def _compress_image_layer(cfg, layer, rng):
    """Sparsify and compress the (pre-extended) weight surface of an image layer in place."""
    from arch.registers import register_map
    from sim.formats.common import ceil_div
    from sim.formats.sparse import compress_weights
    from sim.sdp.random_programs import Regs
    info = layer["info"]
    i = next(k for k, (a, _, _) in enumerate(layer["images"]) if a == info["weight_base"])
    wbase, wdata, wram = layer["images"][i]
    cdma = Regs(register_map(cfg)["CDMA"])
    cdma.words = layer["regs"]["CDMA"]
    bpk = (layer["regs"]["CDMA"]["D_WEIGHT_SIZE_0"] & 0x3FFFF) + 1
    K = info["K"]
    wdata = wdata.copy()
    wdata[rng.random(wdata.size) < float(rng.choice([0.3, 0.7, 0.95]))] = 0
    wdata[:bpk * K][0] |= 1
    groups = [min(cfg.atomic_k, K - g) * bpk for g in range(0, K, cfg.atomic_k)]
    cw = compress_weights(wdata[:bpk * K], groups, "int8")
    slot_off = wbase - rp._BASES["weight"]
    wmb_base, wgs_base = rp._BASES["wmb"] + slot_off, rp._BASES["wgs"] + slot_off
    layer["images"][i:i + 1] = [(wbase, cw.weights, wram), (wmb_base, cw.wmb, wram),
                                (wgs_base, cw.wgs, wram)]
    d, w = info["banks"]
    for b in ("CDMA", "CSC"):
        set_fields(cfg, layer, b, "D_WEIGHT_FORMAT", WEIGHT_FORMAT=1)
        set_fields(cfg, layer, b, "D_BANK", DATA_BANK=d - 1,
                   WEIGHT_BANK=min(w, cfg.cbuf_banks - 1 - d) - 1)
        r = Regs(register_map(cfg)[b])
        r.words = layer["regs"][b]
        r.addr("D_WEIGHT_BYTES", cw.weights.size)
        r.addr("D_WMB_BYTES", ceil_div(bpk * K, 1024) * 128)
    cdma.addr("D_WMB_ADDR_LOW", wmb_base)
    cdma.addr("D_WGS_ADDR_LOW", wgs_base)


@pytest.mark.rtl
def test_image_layers_with_compressed_weights(tmp_path):
    """Image input (pre-extended weights, every format of the build) with the weights made
    sparse and compressed: bit for bit with the golden model."""
    from sim.conv.image_programs import image_formats_of, random_image_layer
    rng = np.random.default_rng(12)
    d = str(tmp_path)
    paths = []
    fmts = image_formats_of(CFG)
    while len(paths) < 8:
        layer = random_image_layer(CFG, rng, 60_000, fmt=fmts[len(paths) % len(fmts)])
        if layer["info"]["banks"][0] > 28:
            continue
        _compress_image_layer(CFG, layer, rng)
        name = f"wc_img_{len(paths)}"
        crcs, err = rp._golden_crcs(CFG, rp.write_trace(d, name, [layer]), 1)
        if crcs is None:
            continue
        paths.append(rp.write_trace(d, name, [layer], crcs))
    _check(paths, len(paths), 12)


# -- int16 and fp16 --------------------------------------------------------------------------
#: compression with 2-byte elements (a mask bit per element: per byte pair): int16 beside int8,
#: and batching (up to 8 batches: compressed batched layers, weights larger than the banks):
#: the shared int16 build, which has compression
NV_SMALL_WC_INT16 = NV_SMALL_INT16
assert NV_SMALL_WC_INT16.weight_compression and NV_SMALL_WC_INT16.max_batch == 8
#: and fp16 (the slow suite's playback build)
NV_SMALL_WC_FP16 = NV_SMALL_WC.replace(name="nv_small_wc_int16_fp16",
                                       data_types=frozenset({"int8", "int16", "fp16"}),
                                       batching=True, max_batch=8)


def _wgs_end_int16(cfg, layers):
    """WGS 8 bytes below the top of the address space: the 2 int8 kernel groups of 12 kernels
    (Atomic-K 8) fit, the 3 int16 ones (Atomic-K / 2 = 4 kernels each) do not."""
    layers[-1]["regs"]["CDMA"]["D_WGS_ADDR_LOW"] = (1 << 32) - 8


def _wide_random(cfg, seed, count, fp16=0.0):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        try:
            layer = rp.random_program(cfg, rng, 40_000, 0, compress=True, fp16=fp16)
        except rp._Redraw:
            continue
        if layer["info"]["prec"] != 0:
            out.append([layer])
    return out


@pytest.mark.parametrize("cfg", [NV_SMALL_WC_INT16, NV_SMALL_WC_FP16], ids=lambda c: c.name)
def test_check_matches_golden_on_wide_compressed_programs(cfg):
    """The register-level compressed rules on int16 (and fp16) layers: WMB_BYTES counts a bit
    per 2-byte element, WGS a word per kernel group of Atomic-K / 2; the check's verdict is the
    golden model's on each mutation and on random compressed 2-byte layers."""
    names, programs = [], []
    table = {n: m for n, (m, make) in {**MUTATIONS, **CONTROLS}.items() if make is None}
    table["wgs_end_int16"] = _wgs_end_int16
    for prec in (1, 2) if "fp16" in cfg.data_types else (1,):
        base = [_base(cfg, prec=prec)] if prec == 1 else _wide_random(cfg, 17, 1, fp16=1.0)[0]
        for name, mutate in table.items():
            layers = copy.deepcopy(base)              # (each mutation edits its own copy)
            if mutate:
                mutate(cfg, layers)
            names.append(f"{name}-p{prec}")
            programs.append(layers)
    randoms = _wide_random(cfg, 7, 16, fp16=0.5 if "fp16" in cfg.data_types else 0.0)
    names += [f"random{i}" for i in range(len(randoms))]
    programs += randoms
    got = rtl_verdicts(cfg, programs)
    bad = verdict_mismatches(cfg, names, programs, got)
    gold = {n: golden_verdicts(cfg, layers) for n, layers in zip(names, programs)}
    # the mutations do reach the 2-byte rules: WMB_BYTES at the int8 count, WGS past the top
    for n in ("wmb_bytes_more-p1", "wgs_end_int16-p1"):
        assert not gold[n][-1][0], (n, gold[n])
    assert gold["base-p1"][-1][0], gold["base-p1"]
    assert not bad, "\n".join(bad)


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count, fp16", [
    pytest.param(NV_SMALL_WC_INT16, 500, 40, 0.0, id="nv_small_int16-seed500"),
    pytest.param(NV_SMALL_WC_FP16, 501, 60, 0.5, id="nv_small_wc_int16_fp16-seed501",
                 marks=pytest.mark.slow)])
def test_random_wide_compressed_programs_rtl_matches_golden(tmp_path, cfg, seed, count, fp16):
    """Random programs, most of their layers compressed, int8 and int16 (and fp16) layers
    and reuse pairs, half of the layers batched, bit for bit against the golden model under
    back-pressure; then batched compressed layers whose expanded weights exceed the weight
    banks (:func:`tests.test_conv_batch_rtl.streaming_batch_traces`: the decompressor runs
    once per batch) and :func:`_int8_then_wide_trace`."""
    from .test_conv_batch_rtl import streaming_batch_traces
    paths = rp.write_random_traces(cfg, str(tmp_path), count, seed=seed, max_macs=200_000,
                                   compress_share=0.8, fp16=fp16)
    kinds = _compressed_layer_kinds(paths)
    assert kinds[1] >= count // 5 and (not fp16 or kinds[2] >= count // 6), kinds
    extra = streaming_batch_traces(cfg, str(tmp_path), compress=True, fp16=bool(fp16))
    extra.append(_int8_then_wide_trace(cfg, str(tmp_path)))
    paths += extra
    count += len(extra)
    if fp16:     # CDMA's NaN / Inf weight counters count the packed weights, not the mask
        from .test_conv_fp16_rtl import _STATUS
        from .test_pdp_fp16_rtl import _add_status_polls
        values = [_add_status_polls(p, cfg, _STATUS) for p in paths]
        assert sum(any(v) for v in values) >= 8
        for p in paths:
            assert rp.run_trace_golden(p, cfg).passed
    _check(paths, count, seed, cfg)


def _int8_then_wide_trace(cfg, directory):
    """An int8 compressed layer whose mask takes 125 atoms, then an int16 one (a mask of one
    atom): the decompressor once issued a mask command at the first layer's end address in
    the second layer's start cycle (its sizes already the int16 layer's, its counters still
    the int8 one's), and the int16 layer expanded with that stale mask (all zeros)."""
    rng = np.random.default_rng(5)
    w = rng.integers(-100, 100, (19, 21, 5, 4))
    w[rng.random(w.shape) < 0.5] = 0
    first = rp.conv_layer(cfg, W=5, H=3, C=21, K=19, kh=5, kw=4,
                          data=rng.integers(-100, 100, (21, 3, 5)), weights=w, banks=(2, 3),
                          compress=True, stride=(2, 1), pad=(2, 1, 0, 2), clip=6)
    w = rng.integers(-100, 100, (5, 8, 1, 1))
    w[rng.random(w.shape) < 0.5] = 0
    second = rp.conv_layer(cfg, W=3, H=3, C=8, K=5, data=rng.integers(-100, 100, (8, 3, 3)),
                           weights=w, compress=True, prec=1, slot=1)
    layers = [first, second]
    path = rp.write_trace(directory, "conv_int8_then_int16_compressed", layers)
    crcs, err = rp._golden_crcs(cfg, path, 2)
    assert crcs is not None, err
    return rp.write_trace(directory, "conv_int8_then_int16_compressed", layers, crcs)


def _compressed_layer_kinds(paths):
    """{precision: compressed layers} over the traces (CDMA's MISC_CFG and WEIGHT_FORMAT
    writes, one of each per layer)."""
    kinds = {0: 0, 1: 0, 2: 0}
    for p in paths:
        text = open(os.path.join(p, os.path.basename(p) + ".cfg")).read()
        misc = re.findall(r"NVDLA_CDMA\.D_MISC_CFG_0, (0x[0-9a-f]+)", text)
        fmt = re.findall(r"NVDLA_CDMA\.D_WEIGHT_FORMAT_0, (0x[0-9a-f]+)", text)
        assert len(misc) == len(fmt), p
        for mv, fv in zip(misc, fmt):
            if int(fv, 16) & 1:
                kinds[(int(mv, 16) >> 12) & 3] += 1
    return kinds
