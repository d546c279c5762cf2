"""Batched direct convolution (``D_BATCH_NUMBER.BATCHES`` > 0) on the RTL, against the golden
model (:mod:`sim.conv`, SDP batch mode in :mod:`sim.sdp.sdp`).

All on nv_small_int16 (``tests.conftest.NV_SMALL_INT16``: nv_small + int16 + batching up to 8
batches; the build the int16 conv, PDP and CDP suites share, so no extra Verilator build):

* the layer-start check (:class:`hw.conv.check.ConvCheck`, Amaranth simulation): every batch
  mutation of :data:`sim.conv.random_programs.INVALID_MUTATIONS`, further batch mutations and
  random batched layers and reuse pairs give the golden verdict (a batched layer whose
  weights exceed the weight banks runs: the CDMA fetches them once per batch);
* random programs with batches (``batch_share`` 0.8: 2..8 batches on most layers, reuse pairs
  included, some with weights streaming through fewer weight banks than they need), RTL
  against the golden model bit for bit under random AXI back-pressure (30 %) and latency
  (1-24 cycles): 16 in the default run, 120 more in the slow suite; the default run adds
  :func:`streaming_batch_traces`, batched layers whose weights exceed the weight banks;
* invalid batch programs (conv and SDP batch rules) on the playback engine: the golden model
  rejects them, the RTL finishes the layer and writes nothing.

Slow: 30 random programs (most batched, up to 32 batches) and 6 streaming layers on nv_large;
on nv_full, 12 streaming layers (6 compressed: int8, int16, fp16) and 20 random programs with
batches, streaming weights, compression and fp16.
"""

from __future__ import annotations

import pytest

from sim.conv import random_programs as rp
from sim.conv.random_programs import write_random_traces

from .conftest import NV_SMALL_INT16, assert_all_pass, playback
from .test_conv_checks import (_playback_writes_nothing, _random_programs, _set, _word,
                               golden_verdicts, rtl_verdicts)

CFG = NV_SMALL_INT16


def _batch_mutations(cfg):
    """name -> (mutation(cfg, layers) of the two-batch base layer, what rejects it: "conv"
    (the check) or "sdp" (SDP's own rule))."""
    def base(cfg, layers):
        return rp._batched_base(cfg, layers)

    def m(block, reg, **fields):
        def f(cfg, layers):
            base(cfg, layers)
            _set(cfg, layers[0], block, reg, **fields)
        return f

    def word(block, reg, fn):
        def f(cfg, layers):
            base(cfg, layers)
            regs = layers[0]["regs"][block]
            regs[reg] = fn(regs[reg])
        return f

    def reuse_other_batches(cfg, layers):
        import numpy as np
        rng = np.random.default_rng(4)
        data = rng.integers(-9, 10, (2, 8, 4, 5))
        weights = rng.integers(-9, 10, (3, 8, 1, 1))
        first = rp.conv_layer(cfg, W=5, H=4, C=8, K=3, data=data, weights=weights, batches=2,
                              banks=(2, 1), reuse=(0, 0, 1, 0))
        second = rp.conv_layer(cfg, W=5, H=4, C=8, K=3, data=data[0], weights=weights,
                               slot=1, banks=(2, 1), reuse=(1, 0, 0, 0), emit_feature=False,
                               feature_base=first["info"]["feature_base"])
        layers[:] = [first, second]

    def nine(cfg, layers):                  # over max_batch (8), every block agreeing
        base(cfg, layers)
        for b in ("CDMA", "CSC", "CACC"):
            _set(cfg, layers[0], b, "D_BATCH_NUMBER", BATCHES=8)
        _set(cfg, layers[0], "SDP", "D_FEATURE_MODE_CFG", BATCH_NUMBER=8)

    def rdma_out_precision(cfg, layers):
        # two batches whose SDP reads BS / BN operands from memory (SDP_RDMA takes part):
        # NVDLA's operand read DMAs lay out batched operands by SDP_RDMA's OUT_PRECISION
        import numpy as np
        rng = np.random.default_rng(6)
        for seed in range(40):
            sdp = rp.sdp_program(cfg, np.random.default_rng(seed), 4, 3, 10, 0, 0, shift=2)
            if sdp[1] is not None:
                break
        assert sdp[1] is not None
        layers[:] = [rp.conv_layer(cfg, W=4, H=3, C=9, K=10, data=rng.integers(-20, 21, (
            2, 9, 3, 4)), weights=rng.integers(-5, 6, (10, 9, 1, 1)), sdp=sdp, batches=2)]
        _set(cfg, layers[0], "SDP_RDMA", "D_FEATURE_MODE_CFG", OUT_PRECISION=1)

    atom = cfg.memory_atom
    return {
        "unaligned_batch_stride": (word("CDMA", "D_BATCH_STRIDE", lambda v: v + 4), "conv"),
        "csc_batches": (m("CSC", "D_BATCH_NUMBER", BATCHES=2), "conv"),
        "batches_9": (nine, "conv"),
        "rls_all_lines": (m("CSC", "D_RELEASE", RLS_SLICES=2 * 5), "conv"),
        "cacc_line_stride": (word("CACC", "D_LINE_STRIDE", lambda v: v + atom), "conv"),
        "cacc_surf_stride": (word("CACC", "D_SURF_STRIDE", lambda v: v + atom), "conv"),
        "reuse_other_batches": (reuse_other_batches, "conv"),
        "sdp_to_pdp": (m("SDP", "D_FEATURE_MODE_CFG", OUTPUT_DST=1), "sdp"),
        "sdp_unaligned_batch_stride": (word("SDP", "D_DST_BATCH_STRIDE", lambda v: v + 4),
                                       "sdp"),
        "sdp_rdma_out_precision": (rdma_out_precision, "sdp"),
    }


def _streaming_programs(cfg, compress=False, fp16=False):
    """Batched layers whose weights exceed their weight banks (lists of :func:`conv_layer`
    dicts): int8 and int16, 2..8 batches, one to three weight banks, kernel and channel counts
    off the atomic sizes, strides and padding, ``WEIGHT_BYTES`` beyond the surface (a copy's
    tail the CSC never reads), six random geometries over one to three weight banks, and a
    pair whose second layer reuses the first one's batched data with its own streaming
    weights. Sized for nv_small_int16 (4 KiB banks). ``compress``: compressed weights (about
    half of them zero; the CBUF holds them expanded, so the expanded surface exceeds the
    weight banks; ``WEIGHT_BYTES`` is the packed size), on builds with weight compression;
    ``fp16``: the random ones cycle through int8, int16 and fp16."""
    import numpy as np
    rng = np.random.default_rng(78 if compress else 77)

    def tensors(B, C, K, kh, kw, W, H, prec):
        if prec == 2:
            return (rp._values(rng, (B, C, H, W), 2, "tame"),
                    rp._values(rng, (K, C, kh, kw), 2, "full"))
        hi = 3000 if prec else 100
        w = rng.integers(-hi, hi, (K, C, kh, kw))
        if compress:
            w[rng.random(w.shape) < 0.5] = 0
        return rng.integers(-hi, hi, (B, C, H, W)), w

    def layer(B, C, K, kh, kw, W, H, banks, prec=0, extra=0, data=None, **kw_):
        d, w = tensors(B, C, K, kh, kw, W, H, prec)
        L = rp.conv_layer(cfg, W=W, H=H, C=C, K=K, kh=kh, kw=kw,
                          data=d if data is None else data, weights=w, batches=B,
                          banks=banks, prec=prec, clip={0: 6, 1: 14, 2: 0}[prec],
                          compress=compress, **kw_)
        L["info"]["expanded"] = K * C * kh * kw * (2 if prec else 1)
        if extra and not compress:            # WEIGHT_BYTES (the register word in bytes)
            wb = L["info"]["wbytes"] + 128 * extra
            for block in ("CDMA", "CSC"):
                _word(cfg, L, block, "D_WEIGHT_BYTES", wb)
        return L

    programs = [
        [layer(3, 56, 40, 3, 3, 2, 2, (1, 1), pad=(1, 1, 1, 1))],
        [layer(5, 21, 19, 5, 4, 5, 3, (2, 1), stride=(2, 1), pad=(2, 1, 0, 2))],
        [layer(4, 33, 11, 3, 3, 4, 4, (2, 1), prec=1, pad=(1, 0, 1, 1))],
        [layer(2, 64, 17, 3, 3, 3, 3, (1, 2), extra=70)],
        [layer(8, 16, 48, 3, 3, 1, 1, (1, 1), pad=(1, 1, 1, 1), extra=3)],
        [layer(2, 9, 90, 1, 3, 7, 5, (3, 1), prec=1, extra=41)],
    ]
    # random ones: one to three weight banks, one kernel group fitting one bank
    bank = cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
    for i in range(6):
        prec = (i % 3 if fp16 else i % 2) if "int16" in cfg.data_types else 0
        nb = 2 if prec else 1
        gk = cfg.atomic_k // nb
        B = int(rng.integers(2, min(8, cfg.max_batch) + 1))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        cmax = max(1, bank // (gk * kh * kw * nb))
        C = int(rng.integers(max(1, cmax // 4), cmax + 1))
        wbanks = int(rng.integers(1, 4))
        K = -(-(wbanks * bank + int(rng.integers(1, bank))) // (C * kh * kw * nb))
        W, H = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        pad = (int(rng.integers(0, kw)), int(rng.integers(0, kw)), int(rng.integers(0, kh)),
               int(rng.integers(0, kh)))
        if H + pad[2] + pad[3] < kh:
            pad = pad[:3] + (kh - H - pad[2],)
        if W + pad[0] + pad[1] < kw:
            pad = (kw - W - pad[1],) + pad[1:]
        programs.append([layer(B, C, K, kh, kw, W, H, (2, wbanks), prec=prec,
                               extra=int(rng.integers(0, 3)), pad=pad,
                               pad_value=0x3C00 if prec == 2 else int(rng.integers(0, 256)))])
    data, _ = tensors(3, 24, 1, 1, 1, 4, 3, 0)
    first = layer(3, 24, 30, 3, 3, 4, 3, (2, 1), data=data, pad=(1, 1, 1, 0),
                  reuse=(0, 0, 1, 0))
    second = layer(3, 24, 26, 3, 3, 4, 3, (2, 1), data=data, slot=1, pad=(0, 1, 1, 1),
                   reuse=(1, 0, 0, 0), emit_feature=False,
                   feature_base=first["info"]["feature_base"])
    programs.append([first, second])

    def streams(L):
        cap = L["info"]["banks"][1] * cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
        return L["info"]["batches"] > 1 and L["info"]["expanded"] > cap
    # (the fixed shapes are nv_small_int16's: on builds with larger banks only the random
    # ones, sized by the build, exceed them)
    assert all(streams(L) for layers in programs[6:12] for L in layers)
    if bank != 4096:
        return programs[6:12]
    assert all(streams(L) for layers in programs for L in layers)
    return programs


def streaming_batch_traces(cfg, directory, **options):
    """:func:`_streaming_programs` (``options``: its ``compress`` / ``fp16``) as trace
    directories with golden CRCs."""
    paths = []
    for i, layers in enumerate(_streaming_programs(cfg, **options)):
        name = f"conv_batch_stream{'_c' if options.get('compress') else ''}_{i}"
        path = rp.write_trace(directory, name, layers)
        crcs, err = rp._golden_crcs(cfg, path, len(layers))
        assert crcs is not None, err
        paths.append(rp.write_trace(directory, name, layers, crcs))
    return paths


def _golden_named(cfg):
    """{name: layers} of the batch mutations of INVALID_MUTATIONS (named by the golden model)."""
    out = {}
    for name, mutate in rp.INVALID_MUTATIONS.items():
        if not name.startswith("batch"):
            continue
        layers = [rp._base_layer(cfg)]
        if mutate(cfg, layers) is not None:
            out[name] = layers
    return out


def test_batch_check_matches_golden():
    """ConvCheck's verdict on batch mutations and random batched layers is the golden one
    (SDP's own batch rules are the SDP's: the check passes them, golden's conv side too)."""
    cfg = CFG
    assert cfg.batching
    programs = dict(_golden_named(cfg))
    kinds = {}
    for name, (mutate, who) in _batch_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        programs[name], kinds[name] = layers, who
    layers = [rp._base_layer(cfg)]
    rp._batched_base(cfg, layers)
    programs["valid_two_batches"] = layers
    for i, layers in enumerate(_streaming_programs(cfg)):
        programs[f"valid_streaming{i}"] = layers
    randoms = _random_programs(cfg, 41, 40)
    assert sum(layer["info"]["batches"] > 1 for p in randoms for layer in p) >= 10
    names = list(programs) + [f"random{i}" for i in range(len(randoms))]
    got = rtl_verdicts(cfg, list(programs.values()) + randoms)
    bad = []
    for name, layers, rtl in zip(names, list(programs.values()) + randoms, got):
        gold = [ok for ok, _ in golden_verdicts(cfg, layers)]
        if gold != rtl:
            bad.append(f"{name}: golden {golden_verdicts(cfg, layers)}, rtl {rtl}")
    assert not bad, "\n".join(bad)
    verdict = dict(zip(names, got))
    assert verdict["valid_two_batches"] == [True]
    streaming = [n for n in verdict if n.startswith("valid_streaming")]
    assert len(streaming) == 13 and all(all(verdict[n]) for n in streaming), verdict
    for name, who in kinds.items():
        assert all(verdict[name][:-1]) and verdict[name][-1] == (who == "sdp"), (name, verdict)
    for name in _golden_named(cfg):
        assert verdict[name][-1] == (name == "batch_dst_overlap"), (name, verdict[name])


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [
    pytest.param(400, 16, id="seed400"),
    pytest.param(401, 120, id="seed401", marks=pytest.mark.slow)])
def test_random_batch_conv_programs_rtl_matches_golden(tmp_path, seed, count):
    """Random layers and reuse pairs, most of them batched (2..8 batches), int8 and int16,
    some streaming their weights (and in the default run :func:`streaming_batch_traces`):
    the RTL writes exactly the golden model's output under back-pressure and latency."""
    paths = write_random_traces(CFG, str(tmp_path), count, seed=seed, max_macs=200_000,
                                batch_share=0.8, wt_stream=0.3)
    if seed == 400:
        paths += streaming_batch_traces(CFG, str(tmp_path))
    assert_all_pass(playback(paths, CFG, max_cycles=2_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), len(paths))


@pytest.mark.rtl
def test_invalid_batch_programs_playback_write_nothing(tmp_path):
    """Every batch rule class (conv and SDP side) on the playback engine: the layer finishes
    and nothing is written (the golden model rejects them all)."""
    cfg = CFG
    programs = {n: (layers, None) for n, layers in _golden_named(cfg).items()}
    for name, (mutate, who) in _batch_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        programs[name] = (layers, None)
    _playback_writes_nothing(tmp_path, cfg, programs)


@pytest.mark.rtl
@pytest.mark.slow
def test_random_batch_conv_programs_rtl_nv_large(tmp_path):
    """nv_large (batching up to 32, Atomic-C 64 x Atomic-K 32, 32-byte atoms, two per CBUF
    entry, 64-bit addresses; its build takes about 20 minutes): random programs, most of them
    batched, and six batched layers whose weights exceed their weight banks, bit for bit
    under back-pressure and latency."""
    from arch.config import NvdlaConfig
    cfg = NvdlaConfig.preset("nv_large")
    paths = write_random_traces(cfg, str(tmp_path), 30, seed=402, max_macs=200_000,
                                batch_share=0.8)
    paths += streaming_batch_traces(cfg, str(tmp_path))
    assert_all_pass(playback(paths, cfg, max_cycles=2_000_000, seed=402, busy=0.3,
                             latency=(1, 24)), len(paths))


@pytest.mark.rtl
@pytest.mark.slow
def test_streaming_batches_rtl_nv_full(tmp_path):
    """nv_full (int8 / int16 / fp16, compression, batching up to 32, 32 KiB weight banks):
    batched layers whose weights exceed their weight banks, uncompressed and compressed
    (int8, int16 and fp16: the decompressor once per batch, fp16 weights counted once), and
    random programs with batches, streaming weights, compression and fp16 layers, bit for
    bit under back-pressure and latency (its build takes about 11 minutes)."""
    from arch.config import NvdlaConfig
    cfg = NvdlaConfig.preset("nv_full")
    d = str(tmp_path)
    paths = streaming_batch_traces(cfg, d) + streaming_batch_traces(cfg, d, compress=True,
                                                                    fp16=True)
    paths += write_random_traces(cfg, d, 20, seed=620, max_macs=200_000, batch_share=0.8,
                                 wt_stream=0.5, compress_share=0.5, fp16=0.4)
    assert_all_pass(playback(paths, cfg, max_cycles=3_000_000, seed=620, busy=0.3,
                             latency=(1, 24)), len(paths))
