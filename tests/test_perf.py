"""The analytic performance model (sim/perf) and its commands, ``nvdla perf`` / ``nvdla sweep``.

Calibration (``bench/perf_calibration.tsv``: this core's RTL layer cycles of the 57 public
nv_small traces that nv_small runs, ``nvdla trace --engine rtl``'s default AXI conditions),
model / measured, achieved at commit time:

- conv (9 dc traces): mean 0.9 %, worst 4.3 % (dc_1x1x8_1x1x8x1: 118 vs 113 cycles, all
  start-up); dc_6x8x192_3x3x192x32 2.9 % under (fetch-bound: the CBUF write port and DBBIF
  rate of 0.7 atoms per cycle under back-pressure is slightly optimistic); the rest <= 0.4 %.
- sdp (17): mean 1.1 %, worst 5.5 % (400-cycle layers, start-up dominated).
- cdp (19): all <= 0.7 % except cdp_1x1x1 (80 vs 62 cycles: start-up only, 29 %).
- pdp (12): <= 4.5 % except two: pdp_1x1x1 (50 vs 42, start-up) and the documented outlier
  pdp_24x16x1_8x8_ave (0.76: its output is wider than its input, 28 windows over 24
  positions with 5 + 6 padding columns, and 3 / 8 vertical stride/kernel; the pool's cost of
  padding windows and re-read lines is not modelled).

Tolerance: |model - measured| <= max(TOL[kind] x measured, 25 cycles) (25 cycles: the
start-up of the tiny layers, where a relative error means nothing).
"""

from __future__ import annotations

import time

import pytest

from arch.config import PRESETS
from scripts.perf import read_measured
from sim.perf import estimate_trace
from sim.perf.conv import ConvShape, estimate_conv, mac_ops, stripes
from sim.perf.memory import memory_for

from .conftest import ROOT, TRACES

NV_SMALL = TRACES / "nv_small"
CALIBRATION = ROOT / "bench" / "perf_calibration.tsv"
needs_traces = pytest.mark.skipif(not NV_SMALL.is_dir(),
                                  reason="../shared/nvdla/traces/nv_small is absent")

TOL = {"conv": 0.05, "sdp": 0.06, "sdp_pdp": 0.02, "cdp": 0.02, "pdp": 0.05}
FLOOR = 25
#: known outliers, with the reason (module docstring)
OUTLIERS = {"pdp_24x16x1_8x8_ave_int8_0": "padding windows past the input are not modelled"}


def _estimates():
    cfg = PRESETS["nv_small"]
    measured = read_measured(CALIBRATION, "nv_small")
    assert len(measured) == 57
    out = []
    for name, cycles in sorted(measured.items()):
        est = estimate_trace(str(NV_SMALL / name), cfg)
        assert est.valid, (name, est.error, [lay.error for lay in est.layers])
        out.append((name, est, cycles))
    return out


@needs_traces
def test_model_against_measured_rtl_cycles():
    errs = {}
    for name, est, cycles in _estimates():
        kind = est.layers[0].kind
        ratio = est.cycles / cycles
        if name in OUTLIERS:
            assert 0.6 < ratio < 1.0, (name, ratio)      # under-estimated, as documented
            continue
        assert abs(est.cycles - cycles) <= max(TOL[kind] * cycles, FLOOR), \
            (name, round(est.cycles), cycles, round(ratio, 3))
        errs.setdefault(kind, []).append(abs(ratio - 1))
    conv = errs["conv"]
    assert len(conv) == 9 and sum(conv) / len(conv) < 0.02


@needs_traces
def test_bounds_name_what_limits_each_conv_layer():
    cfg = PRESETS["nv_small"]
    dom = {n: estimate_trace(str(NV_SMALL / n), cfg).layers[0].dominant for n in (
        "dc_32x26x76_6x3x76x16_int8_0", "dc_8192x1x1_2x3x1x41_int8_0",
        "dc_6x8x192_3x3x192x32_int8_0")}
    # 76 channels x 18 kernel positions: MAC-bound; 1 channel, 41 kernels: SDP's 1 element per
    # cycle; 6 outputs x 55 KiB of weights: the fetch
    assert dom == {"dc_32x26x76_6x3x76x16_int8_0": "mac", "dc_8192x1x1_2x3x1x41_int8_0": "sdp",
                   "dc_6x8x192_3x3x192x32_int8_0": "fetch"}


def test_validation_on_nv_small_256_without_refit():
    """bench/perf_calibration.tsv's nv_small_256 rows (Atomic-C 32, no back-pressure):
    fitted on nv_small only, the model gives 0.0-0.3 % on three layers and 4.3 % over on
    syn_32x8x35_3x3x13 (3,147 vs 3,017: unaligned C and K, stride 2, a short layer)."""
    import json
    cfg = PRESETS["nv_small_256"]
    rows = [line.rstrip("\n").split("\t") for line in open(CALIBRATION)
            if not line.startswith("#") and "\tnv_small_256\t" in line]
    assert len(rows) == 4
    for name, _, mem, cycles, geometry in rows:
        est = estimate_conv(cfg, ConvShape(**json.loads(geometry)), memory_for(mem, cfg))
        assert abs(est["cycles"] / int(cycles) - 1) < 0.05, (name, est["cycles"], cycles)


def _shape(W=16, H=16, C=32, K=16, R=3, S=3, Wo=14, Ho=14):
    return ConvShape(width=W, height=H, channels=C, batches=1, kernels=K, kh=R, kw=S,
                     stride_y=1, dil_y=1, pad_top=0, out_width=Wo, out_height=Ho,
                     element_bytes=1, line_bytes=W * -(-C // 8) * 8, weight_bytes=K * C * R * S)


def test_mac_bound_hand_computed():
    cfg = PRESETS["nv_small"]                         # Atomic-C 8 x Atomic-K 8
    # Wo x Ho x R x S x ceil(C / 8) x ceil(K / 8) = 14 x 14 x 9 x 4 x 2
    assert mac_ops(cfg, _shape()) == 14112
    # dc_13x15x64_5x3x64x16: 12 x 14 outputs, 5 x 3 kernel, 64 channels, 16 kernels
    assert mac_ops(cfg, _shape(W=13, H=15, C=64, K=16, R=3, S=5, Wo=12, Ho=14)) == \
        12 * 14 * 15 * 8 * 2
    # unaligned: C = 9 -> 2 channel groups, K = 9 -> 2 kernel groups
    assert mac_ops(cfg, _shape(C=9, K=9, R=1, S=1, Wo=16, Ho=16)) == 16 * 16 * 2 * 2
    # with stripes of >= Atomic-K + 2 positions the MAC bound is the atomic operations
    est = estimate_conv(cfg, _shape(), memory_for("harness", cfg))
    assert est["bounds"]["mac"] == 14112 and est["mac_ops"] == 14112
    assert list(stripes(cfg, 196)) == [16] * 11 + [10, 10]    # 20 left: two halves


def test_doubling_atomic_k_does_not_raise_the_mac_bound():
    base = PRESETS["nv_small"].replace(atomic_c=32, cbuf_bank_width=32, cbuf_bank_depth=128)
    wide = base.replace(atomic_k=32, memory_atom=32)   # the config rules: Atomic-K = atom
    mem = memory_for("harness", base)
    for shape in (_shape(K=64), _shape(K=96, C=64), _shape(K=128, Wo=30, Ho=30, W=32, H=32)):
        assert shape.kernels >= 2 * wide.atomic_k
        a = estimate_conv(base, shape.retarget(base), mem)["bounds"]["mac"]
        b = estimate_conv(wide, shape.retarget(wide), mem)["bounds"]["mac"]
        assert b <= a and mac_ops(wide, shape) * 4 == mac_ops(base, shape)


def _cli(capsys, *argv):
    from scripts.cli import main
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@needs_traces
def test_perf_command_with_measured(capsys):
    rc, out, _ = _cli(capsys, "perf", "--config", "nv_small", "--measured", str(CALIBRATION),
                      str(NV_SMALL / "dc_8x16x128_3x3x128x32_int8"),
                      str(NV_SMALL / "sdp_8x8x32_bypass_int8_0"))
    assert rc == 0
    assert "estimate" in out and "bound" in out and "measured" in out and "ratio" in out
    line = next(x for x in out.splitlines() if x.startswith("dc_8x16x128"))
    assert " conv " in line and " mac " in line and " 70073 " in line
    assert "mean" in out and "conv" in out.split("model / measured")[1]


@needs_traces
def test_perf_json(capsys):
    import json
    rc, out, _ = _cli(capsys, "perf", "--json", str(NV_SMALL / "cdp_8x8x32_lrn3_int8_0"))
    doc = json.loads(out)
    lay = doc["traces"][0]["layers"][0]
    assert rc == 0 and lay["kind"] == "cdp" and lay["dominant"] == "datapath"
    assert 2000 < lay["cycles"] < 2300


@needs_traces
def test_sweep_command(capsys):
    t0 = time.perf_counter()
    rc, out, _ = _cli(capsys, "sweep", "--config", "nv_small", "--set", "atomic_c=8,16,32",
                      "--set", "atomic_k=8,32", str(NV_SMALL / "dc_8x16x128_3x3x128x32_int8"),
                      str(NV_SMALL / "dc_13x15x64_5x3x64x16_int8_0"),
                      str(NV_SMALL / "pdp_8x8x64_2x2_int8"))
    assert rc == 0 and time.perf_counter() - t0 < 10
    for col in ("cycles", "traces", "skip", "MACs", "CBUF KiB", "LUT4", "DP16KD", "MULT18"):
        assert col in out
    assert "invalid: nv_small[atomic_c=8,atomic_k=32]: atomic_k=32: must not exceed" in out
    assert "cbuf_bank_width=32, cbuf_bank_depth=128" in out       # adjusted, and said so
    assert "area: an ECP5 estimate" in out
    rows = {tuple(x.split()[:2]): x.split() for x in out.splitlines()
            if x.split()[:2] in (["8", "8"], ["32", "8"])}
    # four times the MAC units: fewer cycles on these MAC-bound layers, more area
    assert int(rows[("32", "8")][2]) < int(rows[("8", "8")][2])
    assert int(rows[("32", "8")][9]) > int(rows[("8", "8")][9])
    # atomic_k=32 needs 32-byte atoms: the nv_small pdp trace (8-byte atoms) is skipped there
    row = next(x.split() for x in out.splitlines() if x.split()[:2] == ["32", "32"])
    assert row[3] == "2" and row[5] == "1"


def test_sweep_invalid_set_names_the_parameter(capsys):
    rc, _, err = _cli(capsys, "sweep", "--set", "atomic_c=8,abc", str(ROOT / "bench"))
    assert rc == 2 and "atomic_c" in err and "'abc'" in err
    rc, _, err = _cli(capsys, "sweep", "--set", "atomic_q=8", str(ROOT / "bench"))
    assert rc == 2 and "unknown build parameter 'atomic_q'" in err


@needs_traces
def test_sweep_invalid_value_is_reported_not_a_crash(capsys):
    rc, out, _ = _cli(capsys, "sweep", "--set", "atomic_c=8,12", "--set",
                      "cbuf_bank_depth=512,100",
                      str(NV_SMALL / "dc_1x1x8_1x1x8x1_int8_0"))
    assert rc == 0
    assert "atomic_c=12: must be a power of two" in out
    assert "cbuf_bank_depth=100: must be a power of two" in out
    assert "1 valid" in out


def test_partial_data_reuse_counts_the_fetched_lines(tmp_path):
    """A DATA_REUSE layer after one that released part of its slices (``partial_reuse_pair``:
    5 kept lines, 3 fetched) fetches its 3 lines: they count in the fetch bound and the bytes
    (before, any DATA_REUSE layer fetched nothing); after one that kept everything
    (SKIP_DATA_RLS) it fetches none."""
    from dataclasses import replace

    from sim.conv.random_programs import partial_reuse_pair, write_trace
    from sim.perf.conv import data_reuse
    from sim.perf.decode import trace_layers
    cfg = PRESETS["nv_small"]
    atom = cfg.memory_atom
    path = write_trace(str(tmp_path), "partial_reuse", partial_reuse_pair(cfg, 3))
    first, second = (lay.conv for lay in trace_layers(path, cfg))
    assert second.data_reuse and not first.skip_data_rls
    assert data_reuse(first, second) == (5, 3)
    assert data_reuse(None, second) == (0, None)               # nothing kept: a plain fetch
    assert data_reuse(replace(first, skip_data_rls=True), second) == (6, 0)   # full reuse
    est = estimate_trace(path, cfg).layers[1]
    line = second.in_width * atom                              # C = one atom per position
    weights = -(-second.weight_bytes // atom) * atom
    out = second.out_width * second.out_height * atom
    assert est.bytes == 3 * line + weights + out
    # alone (no previous layer known) the same layer counts as a full reuse, as before
    alone = estimate_conv(cfg, ConvShape.from_program(second, cfg), memory_for("harness", cfg))
    assert alone["bytes"] == weights + out
    assert est.bounds["fetch"] > alone["bounds"]["fetch"]


def test_wino_tiles_counts_each_stripes_tiles():
    """The tiles a Winograd stripe reads (sim.perf.conv.wino_tiles) = the distinct 2 x 2
    output tiles of its positions, for every stripe cut hw.conv.csc makes."""
    from hw.conv.csc import stripe_length
    from sim.perf.conv import wino_tiles
    for ms in (16, 64):
        for ow in (4, 8, 12, 36, 100):
            for oh in (4, 8, 12):
                n, lens = ow * oh, []
                while sum(lens) < n:
                    lens.append(stripe_length(n - sum(lens), ms))
                ends = [sum(lens[:i + 1]) for i in range(len(lens))]
                want = [len({(p // ow // 2, p % ow // 2) for p in range(e - L, e)})
                        for e, L in zip(ends, lens)]
                assert list(wino_tiles(ow, lens)) == want, (ms, ow, oh)


def test_winograd_timing_against_measured_rtl_cycles(tmp_path):
    """The model's Winograd layers (the 1 x 1 layer of 16 x C_ext channels, each stripe and
    bank row the longer of its atoms and its tile fill, the layer's first fill not hidden;
    the padding of the extended input written without a read) against the RTL's layer cycles
    of bench/perf_winograd.tsv: within 11 % (measured: -10 % .. +2 %; the -10 % is
    wg_28x8x128_32_i8, whose stripes' atoms take as long as their delivery to SDP, where the
    RTL loses more than ``max(compute, delivery)`` says)."""
    from bench.winograd_cycles import BUILD, layer_traces
    from .conftest import NV_LARGE_WINO
    assert BUILD == NV_LARGE_WINO
    rows = [line.split("\t") for line in
            (ROOT / "bench" / "perf_winograd.tsv").read_text().splitlines()
            if line and not line.startswith(("#", "config"))]
    measured = {name: int(c) for cfg, name, c in rows if cfg == BUILD.name}
    paths = layer_traces(BUILD, str(tmp_path))
    assert len(paths) == len(measured) == 5
    for path in paths:
        name = path.rstrip("/").split("/")[-1]
        est = estimate_trace(path, BUILD)
        assert est.valid, (name, est.error)
        ratio = est.cycles / measured[name]
        assert 0.89 < ratio < 1.08, (name, round(est.cycles), measured[name])
