"""Batched direct convolution (``D_BATCH_NUMBER.BATCHES`` > 0) on the RTL, against the golden
model (:mod:`sim.conv`, SDP batch mode in :mod:`sim.sdp.sdp`).

All on nv_small_int16 (``tests.conftest.NV_SMALL_INT16``: nv_small + int16 + batching up to 8
batches; the build the int16 conv, PDP and CDP suites share, so no extra Verilator build):

* the layer-start check (:class:`hw.conv.check.ConvCheck`, Amaranth simulation): every batch
  mutation of :data:`sim.conv.random_programs.INVALID_MUTATIONS`, further batch mutations and
  random batched layers and reuse pairs give the golden verdict (the RTL's one restriction:
  a batched layer's weights must fit the weight banks);
* random programs with batches (``batch_share`` 0.8: 2..8 batches on most layers, reuse pairs
  included), RTL against the golden model bit for bit under random AXI back-pressure (30 %)
  and latency (1-24 cycles): 40 in the default run, 120 more in the slow suite;
* invalid batch programs (conv and SDP batch rules) on the playback engine: the golden model
  rejects them, the RTL finishes the layer and writes nothing.

Slow: 30 random programs (most batched, up to 32 batches) on nv_large.
"""

from __future__ import annotations

import pytest

from sim.conv import random_programs as rp
from sim.conv.random_programs import write_random_traces

from .conftest import NV_SMALL_INT16, assert_all_pass, playback
from .test_conv_checks import (_playback_writes_nothing, _random_programs, _set, golden_verdicts,
                               rtl_verdicts)

CFG = NV_SMALL_INT16


def _batch_mutations(cfg):
    """name -> (mutation(cfg, layers) of the two-batch base layer, what rejects it: "conv"
    (the check), "sdp" (SDP's own rule) or "rtl" (an RTL restriction, golden runs it))."""
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

    def weights_too_big(cfg, layers):
        # weights larger than the weight banks stream through them in the golden model; the
        # RTL walks a batched layer's weights once per batch from the banks
        import numpy as np
        rng = np.random.default_rng(3)
        data = rng.integers(-9, 10, (2, 64, 2, 2))
        weights = rng.integers(-9, 10, (40, 64, 3, 3))           # 23040 bytes
        layers[0] = rp.conv_layer(cfg, W=2, H=2, C=64, K=40, kh=3, kw=3, pad=(1, 1, 1, 1),
                                  data=data, weights=weights, batches=2, banks=(1, 4))

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

    atom = cfg.memory_atom
    return {
        "unaligned_batch_stride": (word("CDMA", "D_BATCH_STRIDE", lambda v: v + 4), "conv"),
        "csc_batches": (m("CSC", "D_BATCH_NUMBER", BATCHES=2), "conv"),
        "batches_9": (nine, "conv"),
        "rls_all_lines": (m("CSC", "D_RELEASE", RLS_SLICES=2 * 5), "conv"),
        "cacc_line_stride": (word("CACC", "D_LINE_STRIDE", lambda v: v + atom), "conv"),
        "cacc_surf_stride": (word("CACC", "D_SURF_STRIDE", lambda v: v + atom), "conv"),
        "reuse_other_batches": (reuse_other_batches, "conv"),
        "weights_over_banks": (weights_too_big, "rtl"),
        "sdp_to_pdp": (m("SDP", "D_FEATURE_MODE_CFG", OUTPUT_DST=1), "sdp"),
        "sdp_unaligned_batch_stride": (word("SDP", "D_DST_BATCH_STRIDE", lambda v: v + 4),
                                       "sdp"),
    }


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
    for name, who in kinds.items():
        assert all(verdict[name][:-1]) and verdict[name][-1] == (who == "sdp"), (name, verdict)
    for name in _golden_named(cfg):
        assert verdict[name][-1] == (name == "batch_dst_overlap"), (name, verdict[name])


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [
    pytest.param(400, 40, id="seed400"),
    pytest.param(401, 120, id="seed401", marks=pytest.mark.slow)])
def test_random_batch_conv_programs_rtl_matches_golden(tmp_path, seed, count):
    """Random layers and reuse pairs, most of them batched (2..8 batches), int8 and int16:
    the RTL writes exactly the golden model's output under back-pressure and latency."""
    paths = write_random_traces(CFG, str(tmp_path), count, seed=seed, max_macs=200_000,
                                batch_share=0.8)
    assert_all_pass(playback(paths, CFG, max_cycles=2_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count)


@pytest.mark.rtl
def test_invalid_batch_programs_playback_write_nothing(tmp_path):
    """Every batch rule class (conv and SDP side) and the RTL restriction on the playback
    engine: the layer finishes and nothing is written (golden rejects all but the RTL
    restriction, which it would run)."""
    cfg = CFG
    programs = {n: (layers, None) for n, layers in _golden_named(cfg).items()}
    for name, (mutate, who) in _batch_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        if who != "rtl":
            programs[name] = (layers, None)
    _playback_writes_nothing(tmp_path, cfg, programs)


@pytest.mark.rtl
@pytest.mark.slow
def test_random_batch_conv_programs_rtl_nv_large(tmp_path):
    """nv_large (batching up to 32, Atomic-C 64 x Atomic-K 32, 32-byte atoms, two per CBUF
    entry, 64-bit addresses; its build takes about 20 minutes): random programs, most of them
    batched, bit for bit under back-pressure and latency."""
    from arch.config import NvdlaConfig
    cfg = NvdlaConfig.preset("nv_large")
    paths = write_random_traces(cfg, str(tmp_path), 30, seed=402, max_macs=200_000,
                                batch_share=0.8)
    assert_all_pass(playback(paths, cfg, max_cycles=2_000_000, seed=402, busy=0.3,
                             latency=(1, 24)), 30)
