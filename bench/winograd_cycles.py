"""Winograd layer cycles on the RTL against the performance model.

    python bench/winograd_cycles.py [--two-column] [--tsv]

Five Winograd layers of 3 x 3 stride-1 "same" convolutions (int8 and int16, channels of one to
four CBUF bank rows, one or more stripes) on nv_large's 64 x 32 datapath with one-lane SDP
(``BUILD``: the tests' ``nv_large_wino``, tests/conftest.py; ``--two-column``: its
two-column twin), played on the Verilator playback engine under the performance model's
"harness" memory (30 % AXI back-pressure, 1-16 cycles of latency, seed 1). Printed per
layer: the layer cycles (final ``D_OP_ENABLE`` write to the interrupt), the model's
estimate (``sim.perf``) and its bounds, and the MAC bound of the direct 3 x 3 layer the
Winograd layer computes (at the int8 rate, Atomic-C x Atomic-K a cycle). ``--tsv`` prints the measured cycles as the table
``tests/test_perf.py`` checks the model on (``bench/perf_winograd.tsv``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arch.config import NvdlaConfig  # noqa: E402

#: nv_large_wino, also the tests' (tests/conftest.py takes it from here)
BUILD = NvdlaConfig.preset("nv_large").replace(
    name="nv_large_wino", data_types=frozenset({"int8", "int16"}), cbuf_banks=16,
    cbuf_bank_depth=128, sdp_bs_throughput=1, sdp_bn_throughput=1, sdp_ew_throughput=1,
    pdp_throughput=1, cdp_throughput=1, dbbif_width=256, sramif=False, batching=False,
    max_batch=1, weight_compression=False, rubik=False, bdma=False,
    image_packed_formats=frozenset({"R8"}), image_semi_formats=frozenset())
#: (W, H, C, K, int16) of the layers
LAYERS = ((8, 8, 256, 16, 0), (28, 8, 128, 32, 0), (8, 8, 128, 8, 1), (16, 16, 96, 8, 0),
          (60, 4, 64, 8, 0))


def layer_traces(cfg, directory):
    """The LAYERS as trace directories with golden CRCs (deterministic)."""
    import numpy as np
    from bench.conv_utilization import _trace
    from sim.conv.random_programs import _shift_for
    from sim.conv.winograd_programs import wino_layer
    rng = np.random.default_rng(3)
    paths = []
    for W, H, C, K, prec in LAYERS:
        lo, hi = (-3000, 3000) if prec else (-128, 128)
        data = rng.integers(lo, hi, (C, H, W))
        wt4 = rng.integers(-16, 16, (K, C, 4, 4))
        layer = wino_layer(cfg, W=W, H=H, C=C, K=K, wt4=wt4, data=data, pad=(1, 3, 1, 3),
                           Wo=W, Ho=H, clip=_shift_for(C, 3, 3, "full", "full", 0), prec=prec)
        paths += _trace(cfg, directory, f"wg_{W}x{H}x{C}_{K}_{'i16' if prec else 'i8'}",
                        layer)
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--two-column", action="store_true")
    ap.add_argument("--tsv", action="store_true")
    args = ap.parse_args(argv)
    cfg = BUILD.replace(name="nv_large_wino_2col", cbuf_entry_width=128) \
        if args.two_column else BUILD
    from sim.perf.model import estimate_trace
    from tb.playback import run_playback_batch
    paths = layer_traces(cfg, tempfile.mkdtemp(prefix="wino-cycles-"))
    res = run_playback_batch(paths, cfg, max_cycles=3_000_000, seed=1, busy=0.3,
                             latency=(1, 16))
    print(f"config {cfg.name}: Atomic-C {cfg.atomic_c} x Atomic-K {cfg.atomic_k}, "
          f"SDP {cfg.sdp_bs_throughput} per cycle")
    for path, r in zip(paths, res):
        name = os.path.basename(os.path.normpath(path))
        if not r.passed:
            print(f"{name:<24} FAILED: {r.message[:120]}")
            continue
        est = estimate_trace(path, cfg)
        if args.tsv:
            print(f"{cfg.name}\t{name}\t{r.layer_cycles}")
            continue
        lay = est.layers[0]
        bounds = " ".join(f"{k} {v:.0f}" for k, v in lay.bounds.items())
        print(f"{name:<24} rtl {r.layer_cycles:>7}  model {est.cycles:>8.0f} "
              f"({est.cycles / r.layer_cycles:.2f})  MAC bound {lay.macs / 2048:>6.0f}  "
              f"[{bounds}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
