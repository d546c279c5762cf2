"""Batched direct convolution on the golden model (sim/conv + SDP's batch mode): a layer with
``D_BATCH_NUMBER.BATCHES`` = B - 1 equals the same layer run one batch at a time (each batch's
output at DST_BASE + b x DST_BATCH_STRIDE), batched CBUF reuse, random batched programs, and
invalid batch programs rejected naming the register field."""

from __future__ import annotations

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.conv import random_programs as rp
from sim.random_traces import set_fields
from sim.trace import parse_trace
from sim.trace_run import run_golden

from .test_conv_model import _core

NV_SMALL = NvdlaConfig.preset("nv_small")
NV_LARGE = NvdlaConfig.preset("nv_large")
NV_FULL = NvdlaConfig.preset("nv_full")
NV_SMALL_BATCH = NV_SMALL.replace(name="nv_small_batch", batching=True, max_batch=8)


def _run(cfg, tmp_path, layers, name):
    """Run the layers on a golden core: (core, result); the trace's CRCs are the golden
    model's own, so the result fails only when the model rejects the program."""
    path = rp.write_trace(str(tmp_path), name, layers)
    crcs, err = rp._golden_crcs(cfg, path, len(layers))
    if crcs is not None:
        path = rp.write_trace(str(tmp_path), name, layers, crcs)
    core = _core(cfg)
    res = run_golden(parse_trace(path, cfg), cfg, core=core)
    if err is not None:
        res.passed, res.message = False, err
    return core, res


def _memory(core, layer):
    return core.sram if layer["window"][2] == 0 else core.dbb


def _batch_bytes(cfg, core, layer, b):
    """The bytes one batch's output occupies: [surfaces, Ho, Wo, atom] at its batch offset."""
    info = layer["info"]
    atom = cfg.memory_atom
    base, line, surf = info["dst"]
    base += b * info["dst_batch"]
    nbytes = 1 if info["prec"] == 0 else 2
    S = -(-info["K"] * nbytes // atom)
    mem = _memory(core, layer)
    out = np.zeros((S, info["Ho"], info["Wo"], atom), np.uint8)
    for s in range(S):
        for y in range(info["Ho"]):
            out[s, y] = mem.read(base + s * surf + y * line, info["Wo"] * atom).reshape(-1, atom)
    return out


def _expected_window(cfg, layer, batches):
    """The batched layer's output window (guard bands included) with ``batches``
    ([surfaces, Ho, Wo, atom] each) written at their places and zeros everywhere else."""
    info = layer["info"]
    atom = cfg.memory_atom
    wbase, size, _ = layer["window"]
    base, line, surf = info["dst"]
    out = np.zeros(size, np.uint8)
    for b, cube in enumerate(batches):
        for s in range(cube.shape[0]):
            for y in range(cube.shape[1]):
                a = base + b * info["dst_batch"] + s * surf + y * line - wbase
                out[a:a + cube.shape[2] * atom] = cube[s, y].reshape(-1)
    return out


def _check_batches(cfg, core, batched, singles):
    """Each batch's output equals its single-batch run, and nothing else in the window was
    written (the batches' gaps and the guard bands stay zero)."""
    want = [_batch_bytes(cfg, c, layer, 0) for c, layer in singles]
    for b, w in enumerate(want):
        assert np.array_equal(_batch_bytes(cfg, core, batched, b), w), f"batch {b} differs"
    wbase, size, _ = batched["window"]
    got = _memory(core, batched).read(wbase, size)
    assert np.array_equal(got, _expected_window(cfg, batched, want))
    assert len({w.tobytes() for w in want}) == len(want)      # the batches really differ


def _spec(rng, B):
    return dict(W=int(rng.integers(1, 7)), H=int(rng.integers(2, 6)), C=int(rng.integers(1, 40)),
                K=int(rng.integers(1, 20)), kh=2, kw=int(rng.integers(1, 3)),
                pad=(1, 0, 0, 1), pad_value=int(rng.integers(0, 256)), batches=B)


CASES = [
    # name, cfg, batches, extra conv_layer arguments
    ("nv_small_b2", NV_SMALL_BATCH, 2, {}),
    ("nv_small_b5_gaps", NV_SMALL_BATCH, 5, dict(batch_extra=3, line_extra=1, surf_extra=2)),
    ("nv_small_b8_grain", NV_SMALL_BATCH, 8, dict(grain=2)),
    ("nv_small_b3_clip_stride", NV_SMALL_BATCH, 3, dict(clip=3, stride=(2, 1))),
    ("nv_large_b4", NV_LARGE, 4, dict(batch_extra=1)),
    ("nv_large_b32", NV_LARGE, 32, {}),
    ("nv_full_b3_int16", NV_FULL, 3, dict(prec=1)),
]


@pytest.mark.parametrize("name,cfg,B,extra", CASES, ids=[c[0] for c in CASES])
def test_batched_layer_equals_batches_one_at_a_time(tmp_path, name, cfg, B, extra):
    rng = np.random.default_rng(sum(map(ord, name)))
    spec = _spec(rng, B)
    spec.update(extra)
    prec = spec.get("prec", 0)
    hi = 20 if prec == 0 else 3000
    data = rng.integers(-hi, hi + 1, (B, spec["C"], spec["H"], spec["W"]))
    weights = rng.integers(-5, 6, (spec["K"], spec["C"], spec["kh"], spec["kw"]))
    batched = rp.conv_layer(cfg, data=data, weights=weights, **spec)
    core, res = _run(cfg, tmp_path, [batched], "batched")
    assert res.passed and res.checks, res.message
    one = dict(spec, batches=1, batch_extra=0)
    singles = []
    for b in range(B):
        single = rp.conv_layer(cfg, data=data[b], weights=weights, **one)
        core1, res1 = _run(cfg, tmp_path, [single], f"single{b}")
        assert res1.passed, res1.message
        singles.append((core1, single))
    _check_batches(cfg, core, batched, singles)


def test_batched_layer_with_sdp_operands_from_memory(tmp_path):
    """BS/BN operands per element are shared by all batches."""
    cfg, B = NV_SMALL_BATCH, 3
    rng = np.random.default_rng(5)
    W, H, C, K = 4, 3, 9, 10
    data = rng.integers(-20, 21, (B, C, H, W))
    weights = rng.integers(-5, 6, (K, C, 1, 1))
    for seed in range(40):                 # a program whose SDP reads operands from memory
        sdp = rp.sdp_program(cfg, np.random.default_rng(seed), W, H, K, 0, 0, shift=2)
        if sdp[1] is not None:
            break
    assert sdp[1] is not None
    batched = rp.conv_layer(cfg, W=W, H=H, C=C, K=K, data=data, weights=weights, sdp=sdp,
                            batches=B)
    core, res = _run(cfg, tmp_path, [batched], "batched")
    assert res.passed and res.checks, res.message
    singles = []
    for b in range(B):
        single = rp.conv_layer(cfg, W=W, H=H, C=C, K=K, data=data[b], weights=weights, sdp=sdp)
        core1, res1 = _run(cfg, tmp_path, [single], f"single{b}")
        assert res1.passed, res1.message
        singles.append((core1, single))
    _check_batches(cfg, core, batched, singles)
