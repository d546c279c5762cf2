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


# ------------------------------------------------------------------------------------------
# random batched programs and invalid batch programs
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg,count,seed", [(NV_SMALL_BATCH, 40, 21), (NV_LARGE, 15, 22)],
                         ids=["nv_small_batch", "nv_large"])
def test_random_batched_programs_pass_on_golden(tmp_path, cfg, count, seed):
    paths = rp.write_random_traces(cfg, str(tmp_path), count, seed=seed, two_layer_share=0.5)
    assert len(paths) == count and not rp.reject_log()
    batched = 0
    for path in paths:
        res = run_golden(parse_trace(path, cfg), cfg, core=_core(cfg))
        assert res.passed, res.message
        with open(f"{path}/{path.rsplit('/', 1)[1]}.cfg") as f:
            batched += "D_BATCH_NUMBER_0, 0x0)" not in f.read()
    assert batched >= count // 4


BATCH_INVALID = ("batches_over_max", "batches_disagree", "batch_stride_overlap",
                 "batch_sdp_mismatch", "batch_dst_overlap", "batch_release",
                 "batch_cacc_pairs")


@pytest.mark.parametrize("cfg", [NV_SMALL_BATCH, NV_LARGE, NV_FULL], ids=lambda c: c.name)
def test_invalid_batch_programs_name_the_field(tmp_path, cfg):
    cases = {p.rsplit("/", 1)[1]: (p, f) for p, f in rp.write_invalid_traces(cfg, str(tmp_path))}
    for name in BATCH_INVALID:
        if name == "batches_over_max" and cfg.max_batch == 32:
            continue                    # the 5-bit field cannot count more than 32
        path, fld = cases[f"conv_invalid_{name}"]
        res = run_golden(parse_trace(path, cfg), cfg, core=_core(cfg))
        assert not res.passed and fld in res.message, (name, fld, res.message)


def test_batch_mutations_do_not_apply_without_batching(tmp_path):
    names = {p.rsplit("/", 1)[1] for p, _ in rp.write_invalid_traces(NV_SMALL, str(tmp_path))}
    assert not names & {f"conv_invalid_{n}" for n in BATCH_INVALID}


def test_batched_base_layer_is_valid(tmp_path):
    layers = [None]
    rp._batched_base(NV_SMALL_BATCH, layers)
    _, res = _run(NV_SMALL_BATCH, tmp_path, layers, "base")
    assert res.passed, res.message


# ------------------------------------------------------------------------------------------
# SDP's batch mode on its own
# ------------------------------------------------------------------------------------------
def test_sdp_batch_rules():
    from .test_sdp_model import _expect_error
    cfg = NV_LARGE
    fly = {"FLYING_MODE": 1, "BATCH_NUMBER": 2}
    _expect_error(cfg, r"SDP\.D_FEATURE_MODE_CFG\.BATCH_NUMBER=2: batches only arrive from "
                  r"the accumulator", sdp={"D_FEATURE_MODE_CFG": {"BATCH_NUMBER": 2}})
    _expect_error(cfg, r"BATCH_NUMBER=2: batched output is written to memory",
                  sdp={"D_FEATURE_MODE_CFG": {**fly, "OUTPUT_DST": 1}})
    _expect_error(NV_SMALL_BATCH, r"BATCH_NUMBER=9: this build takes at most 8 batches",
                  sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1, "BATCH_NUMBER": 9}})
    _expect_error(cfg, r"SDP\.D_DP_EW_CFG\.EW_ALU_ALGO=EQL: equal mode writes no output",
                  sdp={"D_FEATURE_MODE_CFG": fly,
                       "D_DP_EW_CFG": {"EW_BYPASS": 0, "EW_ALU_BYPASS": 0, "EW_ALU_ALGO": 3,
                                       "EW_MUL_BYPASS": 1, "EW_LUT_BYPASS": 1}})
    _expect_error(cfg, r"SDP_RDMA\.D_FEATURE_MODE_CFG\.BATCH_NUMBER=0: must equal "
                  r"SDP\.D_FEATURE_MODE_CFG\.BATCH_NUMBER=2",
                  sdp={"D_FEATURE_MODE_CFG": fly}, rdma={"D_FEATURE_MODE_CFG": {
                      "FLYING_MODE": 1}, "D_OP_ENABLE": {"OP_EN": 1}})
    # NVDLA's operand read DMAs lay out their data by their own OUT_PRECISION in batch mode
    _expect_error(cfg, r"SDP_RDMA\.D_FEATURE_MODE_CFG\.OUT_PRECISION=INT16: must equal "
                  r"SDP\.D_DATA_FORMAT\.OUT_PRECISION=INT8 in batch mode",
                  sdp={"D_FEATURE_MODE_CFG": fly}, rdma={"D_FEATURE_MODE_CFG": {
                      "FLYING_MODE": 1, "BATCH_NUMBER": 2, "OUT_PRECISION": 1},
                      "D_OP_ENABLE": {"OP_EN": 1}})


def test_sdp_batched_cube_must_match_the_convolution():
    from sim.sdp.sdp import SdpProgramError, run_sdp
    from sim.memory import SparseMemory
    from .test_sdp_model import program
    cfg = NV_LARGE
    rdma, sdp = program(cfg, 2, 1, 4, sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1,
                                                                   "BATCH_NUMBER": 1},
                                           "D_DST_BATCH_STRIDE": {"DST_BATCH_STRIDE": 0x40}})
    with pytest.raises(SdpProgramError, match=r"SDP\.D_FEATURE_MODE_CFG\.BATCH_NUMBER=1: the "
                                              r"convolution delivers 3 batch"):
        run_sdp(cfg, rdma, sdp, SparseMemory(), flying_input=np.zeros((3, 4, 1, 2), np.int64))
    # batch mode writes a 1x1 cube with its strides (never as one packed run)
    rdma, sdp = program(cfg, 1, 1, 40, dst=0x1000, dst_line=0x40, dst_surf=0x100,
                        sdp={"D_FEATURE_MODE_CFG": {"FLYING_MODE": 1, "BATCH_NUMBER": 1},
                             "D_DST_BATCH_STRIDE": {"DST_BATCH_STRIDE": 0x400}})
    mem = SparseMemory()
    x = np.arange(2 * 40, dtype=np.int64).reshape(2, 40, 1, 1)
    res = run_sdp(cfg, rdma, sdp, mem, flying_input=x)
    assert res.output.shape == (2, 40, 1, 1)
    for b in range(2):
        for s in range(2):
            got = mem.read(0x1000 + b * 0x400 + s * 0x100, 32)
            want = np.zeros(32, np.uint8)
            vals = x[b, 32 * s:32 * s + 32, 0, 0]
            want[:vals.size] = vals
            assert np.array_equal(got, want), (b, s)
    assert res.dst_extent == (0x1000, 0x1000 + 0x400 + 0x100 + 32)


def _reuse_pair(cfg, data, w1, w2, kind, B):
    """Two layers: the second reuses the first's CBUF data (``kind`` "full": all slices kept,
    the CSC uses one line less; "partial": 2 lines of every batch released, 2 new lines
    fetched)."""
    H, W, C = data.shape[-2], data.shape[-1], data.shape[-3]
    K = w1.shape[0]
    common = dict(W=W, H=H, C=C, K=K, kh=2, kw=1, batches=B)
    if kind == "full":
        first = rp.conv_layer(cfg, data=data, weights=w1, reuse=(0, 0, 1, 0), **common)
        second = rp.conv_layer(cfg, weights=w2, slot=1, emit_feature=False,
                               feature_base=first["info"]["feature_base"], csc_height=H - 1,
                               banks=first["info"]["banks"], reuse=(1, 0, 0, 0), **common)
    else:
        first = rp.conv_layer(cfg, data=data, weights=w1, fetch_rows=(0, H - 2),
                              rls_slices=2 * B, **common)
        second = rp.conv_layer(cfg, weights=w2, slot=1, emit_feature=False,
                               feature_base=first["info"]["feature_base"],
                               fetch_rows=(H - 2, 2), csc_height=H - 2,
                               banks=first["info"]["banks"], reuse=(1, 0, 0, 0), **common)
    return [first, second]


@pytest.mark.parametrize("kind", ["full", "partial"])
def test_batched_data_reuse_equals_batches_one_at_a_time(tmp_path, kind):
    cfg, B = NV_SMALL_BATCH, 3
    rng = np.random.default_rng(17)
    data = rng.integers(-20, 21, (B, 9, 6, 4))
    w1, w2 = (rng.integers(-5, 6, (5, 9, 2, 1)) for _ in range(2))
    pair = _reuse_pair(cfg, data, w1, w2, kind, B)
    core, res = _run(cfg, tmp_path, pair, "batched")
    assert res.passed and len(res.checks) == 2, res.message
    singles = []
    for b in range(B):
        single = _reuse_pair(cfg, data[b], w1, w2, kind, 1)
        core1, res1 = _run(cfg, tmp_path, single, f"single{b}")
        assert res1.passed, res1.message
        singles.append((core1, single))
    for i in range(2):
        _check_batches(cfg, core, pair[i], [(c, s[i]) for c, s in singles])


@pytest.mark.parametrize("cfg", [NV_SMALL_BATCH, NV_FULL], ids=lambda c: c.name)
def test_cacc_output_address_agrees_with_sdp_modulo_two_atoms(tmp_path, cfg):
    """CACC pairs a batched output's positions by its own output address: a CACC address two
    atoms off SDP's pairs them the same way (valid), one atom off does not (invalid)."""
    for shift, ok in ((2, True), (1, False)):
        layers = [None]
        layer = rp._batched_base(cfg, layers)
        layer["regs"]["CACC"]["D_DATAOUT_ADDR"] += shift * cfg.memory_atom
        _, res = _run(cfg, tmp_path, layers, f"shift{shift}")
        assert res.passed == ok, res.message
        if not ok:
            assert "CACC.D_DATAOUT_ADDR.DATAOUT_ADDR" in res.message
