"""fp16 direct convolution on the RTL (nv_small_fp16: nv_small with int8 + fp16 on two-column
CBUF entries, as nv_full; in the slow suite also nv_small_fp16_rows on bank-row entries,
nv_small_fp16_2col with int16 too, and nv_full itself), against the golden model bit for bit.

* The check (:class:`hw.conv.check.ConvCheck` in Amaranth simulation): every mutation of the
  invalid-program list applied to an fp16 layer, fp16-specific mutations and random fp16 /
  int8 layers and pairs get the golden model's verdict; the rules the golden model applies
  only when it runs the pair (fp16 into an int SDP layer and the other way round, CDMA's
  NaN flushing, which it does not model) and this RTL's own restriction (data reuse of slices
  kept by a layer of the other precision) are rejected.
* The playback engine (Verilator, random AXI back-pressure and latency): random programs whose
  layers are fp16 or int8 (fp16 codes over wide exponent spreads, zeros of both signs,
  denormals, infinities and NaNs; fp16 pad values; reuse pairs; fp16 SDP layers with fp16
  operands and NaN-to-zero) match the golden CRCs; every invalid fp16 program finishes
  without writing.

The MAC cell and the accumulator alone: tests/test_cmac_fp16_rtl.py, tests/test_cacc_fp16_rtl.py.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.conv import random_programs as rp

from .conftest import NV_SMALL_FP16, NV_SMALL_FP16_2COL, NV_SMALL_FP16_ROWS, assert_all_pass, \
    playback
from .test_conv_checks import (_mutated_programs, _playback_writes_nothing, _set,
                               golden_verdicts, rtl_verdicts, verdict_mismatches)

CFG = NV_SMALL_FP16
NV_FULL = NvdlaConfig.preset("nv_full")
FP16 = 2


def fp16_layers(paths):
    """How many layers of the trace directories ``paths`` are fp16 convolutions (CDMA
    ``PROC_PRECISION`` FP16 at the layer's enable)."""
    n = 0
    for path in paths:
        name = os.path.basename(path)
        with open(os.path.join(path, f"{name}.cfg")) as f:
            text = f.read()
        prec = None
        for reg, value in re.findall(r"reg_write\(NVDLA_CDMA\.(D_MISC_CFG|D_OP_ENABLE)_0, "
                                     r"(0x[0-9a-fA-F]+)\);", text):
            if reg == "D_MISC_CFG":
                prec = (int(value, 16) >> 12) & 3
            else:
                n += prec == FP16
    return n


def _fp16_mutations():
    """name -> mutation(cfg, layers) of the fp16 base layer that the golden model's decode
    rejects for precision reasons."""
    def fields(block, reg, **f):
        return lambda cfg, layers: _set(cfg, layers[0], block, reg, **f)

    def both(reg, **f):
        def g(cfg, layers):
            for b in ("CDMA", "CSC"):
                _set(cfg, layers[0], b, reg, **f)
        return g
    return {
        "fp16_in_int8": both("D_MISC_CFG", IN_PRECISION=0),
        "fp16_in_int16": both("D_MISC_CFG", IN_PRECISION=1),
        "fp16_cacc_int8": fields("CACC", "D_MISC_CFG", PROC_PRECISION=0),
        "fp16_cmac_int16": fields("CMAC_A", "D_MISC_CFG", PROC_PRECISION=1),
        "fp16_cvt": fields("CDMA", "D_CVT_CFG", CVT_EN=1),
        "fp16_image": both("D_DATAIN_FORMAT", DATAIN_FORMAT=1),
    }


def _fp16_programs(monkeypatch):
    """{name: layers}: every mutation of the invalid-program lists applied to the fp16 base
    layer, and :func:`_fp16_mutations`."""
    base = rp._base_layer
    monkeypatch.setattr(rp, "_base_layer",
                        lambda cfg, slot=0, **over: base(cfg, slot, **{"prec": FP16, **over}))
    out = {f"f16_{k}": v for k, v in _mutated_programs(CFG).items()}
    for name, mutate in _fp16_mutations().items():
        layers = [rp._base_layer(CFG)]
        mutate(CFG, layers)
        out[name] = layers
    return out


def _run_time_rules():
    """{name: (layers, field)}: programs the golden model rejects for the SDP layer they fly
    into (its precision: :func:`sim.conv.unit.check_sdp_precision`, the field named), and the
    RTL's own restriction (fp16 data reuse of int8 slices; field None: the golden model runs
    it)."""
    out = {}
    for name, prec, sdp_prec in (("fp16_into_int8_sdp", FP16, 0), ("int8_into_fp16_sdp", 0, FP16)):
        layers = [rp._base_layer(CFG, prec=prec)]
        _set(CFG, layers[0], "SDP", "D_DATA_FORMAT", PROC_PRECISION=sdp_prec,
             OUT_PRECISION=sdp_prec)
        out[name] = (layers, "SDP.D_DATA_FORMAT.PROC_PRECISION")
    # int8 C = 16 and fp16 C = 8: the same entries per slice (the other reuse rules pass)
    first = rp._base_layer(CFG, C=16, reuse=(0, 0, 1, 0))
    second = rp._base_layer(CFG, slot=1, prec=FP16, C=8, banks=first["info"]["banks"],
                            reuse=(1, 0, 0, 0), emit_feature=False,
                            feature_base=first["info"]["feature_base"])
    out["fp16_reuses_int8_data"] = ([first, second], None)
    return out


def test_random_programs_draw_fp16_layers(tmp_path):
    paths = rp.write_random_traces(CFG, str(tmp_path), 20, seed=3, fp16=0.6, max_macs=60_000)
    assert fp16_layers(paths) >= 8
    # the default draws no fp16 layer
    paths = rp.write_random_traces(CFG, str(tmp_path / "int"), 10, seed=3, max_macs=60_000)
    assert fp16_layers(paths) == 0


def test_check_matches_golden_rules_fp16(monkeypatch):
    """nv_small_fp16: the mutations on an fp16 layer, the fp16 mutations and random fp16 /
    int8 layers and pairs: the check's verdict is the golden model's; the run-time rules and
    the RTL's restriction are rejected."""
    named = _fp16_programs(monkeypatch)
    monkeypatch.undo()
    randoms = []
    rng = np.random.default_rng(8)
    kinds = ("none",) + rp.REUSE_KINDS
    while len(randoms) < 40:
        try:
            if len(randoms) % 2:
                randoms.append(rp.random_pair(CFG, rng, 50_000, fp16=0.6,
                                              kind=kinds[len(randoms) // 2 % len(kinds)]))
            else:
                randoms.append([rp.random_program(CFG, rng, 50_000, 0, fp16=0.6)])
        except rp._Redraw:
            continue
    assert sum(layers[0]["info"]["prec"] == FP16 for layers in randoms) >= 10
    programs = list(named.values()) + randoms
    names = list(named) + [f"random{i}" for i in range(len(randoms))]
    run_time = _run_time_rules()
    programs += [layers for layers, _ in run_time.values()]
    got = rtl_verdicts(CFG, programs)
    n = len(names)
    bad = verdict_mismatches(CFG, names, programs[:n], got[:n])
    assert not bad, "\n".join(bad)
    assert all(not all(r) for nm, r in zip(names, got) if nm.startswith("fp16_"))
    # the SDP-precision programs: the golden verdict names the field (check_sdp_precision);
    # the RTL restriction: the golden model runs it
    for name, (layers, field) in run_time.items():
        ok, msg = golden_verdicts(CFG, layers)[-1]
        assert (ok, field is None or field in msg) == (field is None, True), (name, msg)
    assert dict(zip(run_time, got[n:])) == {
        "fp16_into_int8_sdp": [False], "int8_into_fp16_sdp": [False],
        "fp16_reuses_int8_data": [True, False]}


@pytest.mark.rtl
@pytest.mark.parametrize("cfg, seed, count", [
    (CFG, 500, 36),
    pytest.param(NV_SMALL_FP16_ROWS, 501, 200, marks=pytest.mark.slow),
    pytest.param(NV_SMALL_FP16_2COL, 600, 100, marks=pytest.mark.slow),
    pytest.param(NV_FULL, 610, 40, marks=pytest.mark.slow)],
    ids=["seed500", "nv_small_fp16_rows-seed501", "nv_small_fp16_2col-seed600",
         "nv_full-seed610"])
def test_random_fp16_conv_programs_rtl_matches_golden(tmp_path, cfg, seed, count):
    """Random programs, about two thirds of their layers fp16 (the rest int8; int16 too on
    nv_small_fp16_2col and nv_full), reuse pairs among them: the RTL's CRCs are the golden
    model's, under 30 % AXI busy and 1-24 cycles of latency. Two-column CBUF entries (nv_full,
    nv_small_fp16, nv_small_fp16_2col): an fp16 cell multiplies a whole entry of Atomic-C
    channels; bank-row entries (nv_small_fp16_rows): a Csc atom of Atomic-C / 2."""
    paths = rp.write_random_traces(cfg, str(tmp_path), count, seed=seed, fp16=0.65,
                                   max_macs=120_000)
    assert fp16_layers(paths) >= count // 2
    assert_all_pass(playback(paths, cfg, max_cycles=2_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count)


@pytest.mark.rtl
def test_invalid_fp16_programs_playback_write_nothing(tmp_path, monkeypatch):
    """Every rule class on an fp16 layer, the fp16 mutations, the run-time rules and the RTL's
    restriction: the golden core rejects each program (the RTL restriction aside, whose first
    layer is valid) and the RTL finishes it without writing."""
    named = _fp16_programs(monkeypatch)
    monkeypatch.undo()
    named.pop("f16_batch_dst_overlap", None)          # (an SDP rule)
    programs = {n: (layers, None) for n, layers in named.items()}
    programs.update({n: v for n, v in _run_time_rules().items() if v[1] is not None})
    _playback_writes_nothing(tmp_path, CFG, programs)


#: the status counters polled after a trace: CDMA's fp16 input NaN / infinity counts and the
#: SDP's output NaN and saturation counts of the layers they fly into
_STATUS = {"CDMA": ("D_NAN_INPUT_DATA_NUM", "D_NAN_INPUT_WEIGHT_NUM", "D_INF_INPUT_DATA_NUM",
                    "D_INF_INPUT_WEIGHT_NUM"),
           "SDP": ("D_STATUS_NAN_OUTPUT_NUM", "D_PERF_OUT_SATURATION")}


@pytest.mark.rtl
@pytest.mark.parametrize("cfg", [CFG, pytest.param(NV_SMALL_FP16_ROWS, marks=pytest.mark.slow)],
                         ids=lambda c: c.name)
def test_fp16_nan_inf_counters_rtl(tmp_path, cfg):
    """CDMA's NaN / infinity input counters of both groups (data and weights; NaN flushing at
    random) and the SDP's output counters after random fp16 / int8 traces read what the golden
    model's registers hold."""
    from .test_pdp_fp16_rtl import _add_status_polls
    paths = rp.write_random_traces(cfg, str(tmp_path), 30, seed=510, fp16=0.8,
                                   max_macs=60_000)
    assert fp16_layers(paths) >= 15
    values = [_add_status_polls(p, cfg, _STATUS) for p in paths]
    assert sum(any(v) for v in values) >= 8           # counts that are not all zero
    for p in paths:                                   # the golden model reads them back
        assert rp.run_trace_golden(p, cfg).passed
    assert_all_pass(playback(paths, cfg, max_cycles=1_000_000, seed=510, busy=0.3,
                             latency=(1, 24)), len(paths), show=20)


@pytest.mark.rtl
def test_fp16_counters_include_lines_no_output_reads(tmp_path):
    """A 1x1 kernel at stride 4 over 12 lines reads lines 0, 4 and 8: the CDMA fetches lines
    9 to 11 after CACC's last value. Their NaNs and infinities still count: the layer ends
    when the fetch is complete, so the register files capture the final counters (and with
    NaN flushing the output is unchanged)."""
    from .test_pdp_fp16_rtl import _add_status_polls
    rng = np.random.default_rng(5)
    C, H, W = 8, 12, 8
    data = rp._values(rng, (C, H, W), 2, "tame")
    data[(data & 0x7C00) == 0x7C00] = 0x3C00          # finite values only (1.0) ...
    for c, y, x, code in ((0, 10, 6, 0x7E00), (3, 11, 7, 0xFD55), (5, 9, 0, 0x7C00),
                          (6, 11, 0, 0xFC00), (1, 4, 2, 0x7E01)):
        data[c, y, x] = code - (0x10000 if code & 0x8000 else 0)     # ... and these
    weights = rp._values(rng, (4, C, 1, 1), 2, "tame")
    paths = []
    for ntz in (0, 1):
        layer = rp.conv_layer(CFG, W=W, H=H, C=C, K=4, stride=(4, 4), prec=2, data=data,
                              weights=weights, nan_to_zero=bool(ntz))
        name = f"fp16_tail_lines_{ntz}"
        tmp = rp.write_trace(str(tmp_path), name, [layer])
        crcs, err = rp._golden_crcs(CFG, tmp, 1)
        assert crcs is not None, err
        paths.append(rp.write_trace(str(tmp_path), name, [layer], crcs))
    for p in paths:
        nan_data, _, inf_data = _add_status_polls(p, CFG, _STATUS)[:3]
        assert (nan_data, inf_data) == (3, 2)
    assert_all_pass(playback(paths, CFG, max_cycles=200_000, seed=5, busy=0.3,
                             latency=(1, 24)), len(paths))


#: nv_small with int8, int16 and fp16 layers (both 2-byte paths in one build)
NV_SMALL_ALL = NV_SMALL_FP16_ROWS.replace(name="nv_small_int16_fp16",
                           data_types=frozenset({"int8", "int16", "fp16"}))


@pytest.mark.rtl
@pytest.mark.slow
def test_random_int16_fp16_conv_programs_rtl_matches_golden(tmp_path):
    """int8, int16 and fp16 layers mixed on one build (reuse pairs keep their first layer's
    precision): the RTL's CRCs are the golden model's."""
    count = 100
    paths = rp.write_random_traces(NV_SMALL_ALL, str(tmp_path), count, seed=502, fp16=0.4,
                                   max_macs=120_000)
    assert fp16_layers(paths) >= count // 4
    assert_all_pass(playback(paths, NV_SMALL_ALL, max_cycles=2_000_000, seed=502, busy=0.3,
                             latency=(1, 24)), count)
