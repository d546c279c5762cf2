"""MAC utilization of the convolution pipeline: layer cycles against the MAC and DBBIF bounds.

    python bench/conv_utilization.py [--config nv_small] [--traces DIR] [--synthetic]
    python bench/conv_utilization.py --config nv_large --synthetic
    python bench/conv_utilization.py --config nv_large --winograd

For every direct-convolution layer it runs (NVDLA's public ``dc_*`` traces of ``--traces``,
by default those of the build's name under ``../shared/nvdla/traces`` when they exist: the
nv_small traces only fit nv_small's CBUF and MAC geometry; and with ``--synthetic`` a few
generated layer shapes, scaled to the build's Atomic-C and Atomic-K), the RTL engine (Verilator, memory
without back-pressure, 1-8 cycles of latency) measures the layer cycles as NVDLA's reference
does: from the final ``D_OP_ENABLE`` write to the interrupt. Printed per layer:

* MACs = Ho x Wo x K x C x R x S (the useful multiply-accumulates);
* MAC bound = MACs / (Atomic-C x Atomic-K): cycles of a perfectly busy MAC array;
* DBBIF bound = (input + weight + output bytes) / bus bytes per cycle;
* bound = the larger of the two; utilization = bound / layer cycles (1.00 = at the bound);
* with ``--reference TSV`` the original RTL's layer cycles and our ratio to them.

``--winograd`` (builds whose RTL runs Winograd, :func:`hw.conv.common.conv_winograd`) adds
Winograd layers of 3 x 3 stride-1 "same" convolutions (``wg_*``), each beside the direct
layer computing the same shape (``dt_*``); a Winograd layer's MACs are those of that direct
3 x 3 convolution (NVDLA's Winograd needs 4 / 9 of its MAC cycles).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arch.config import load_config  # noqa: E402
from sim.conv.program import decode  # noqa: E402
from sim.core import GoldenCore  # noqa: E402
from sim.trace import parse_trace  # noqa: E402
from sim.trace_run import run_golden  # noqa: E402

SHARED = os.path.join(os.environ.get("NVDLA_SHARED") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared"),
    "nvdla", "traces")                      # as tests/conftest.py: $NVDLA_SHARED wins


def layer_programs(path, cfg):
    """The ConvPrograms the golden model runs for a trace (in order)."""
    progs = []
    core = GoldenCore(cfg)
    unit = core.units["CONV"]
    plan = unit.plan

    def spy(c):
        p = plan(c)
        if p is not None and hasattr(p, "run"):
            run = p.run

            def wrapped():
                progs.append(decode(c.cfg, *(c.view(b) for b in
                                             ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC"))))
                return run()
            p.run = wrapped
        return p

    unit.plan = spy
    run_golden(parse_trace(path, cfg), cfg, core=core)
    return progs


def bounds(cfg, p):
    kk = 9 if p.winograd is not None else p.kh * p.kw     # Winograd: the direct 3 x 3's
    macs = p.out_width * p.out_height * p.kernels * p.in_channels * kk
    mac_bound = macs / (cfg.atomic_c * cfg.atomic_k)
    atom = cfg.memory_atom
    in_bytes = p.width * p.height * -(-p.channels // atom) * atom
    out_bytes = p.out_width * p.out_height * -(-p.kernels // atom) * atom
    bus = cfg.dbbif_width // 8
    byte_bound = (in_bytes + p.weight_bytes + out_bytes) / bus
    return macs, mac_bound, byte_bound


def synthetic(cfg, directory):
    """A few aligned and unaligned shapes as trace directories (golden CRCs)."""
    import numpy as np
    from sim.conv.random_programs import _shift_for, conv_layer
    rng = np.random.default_rng(1)
    ac, ak = cfg.atomic_c, cfg.atomic_k
    shapes = [dict(W=16, H=16, C=4 * ac, K=4 * ak, kh=3, kw=3, pad=(1, 1, 1, 1)),
              dict(W=28, H=28, C=2 * ac, K=2 * ak, kh=1, kw=1),
              dict(W=13, H=13, C=3 * ac, K=ak, kh=5, kw=5, pad=(2, 2, 2, 2)),
              dict(W=32, H=8, C=ac + 3, K=ak + 5, kh=3, kw=3, stride=(2, 2))]
    paths = []
    for i, s in enumerate(shapes):
        data = rng.integers(-128, 128, (s["C"], s["H"], s["W"]))
        weights = rng.integers(-128, 128, (s["K"], s["C"], s["kh"], s["kw"]))
        clip = _shift_for(s["C"], s["kh"], s["kw"], "full", "full", 0)
        layer = conv_layer(cfg, data=data, weights=weights, clip=clip, **s)
        name = f"syn_{s['W']}x{s['H']}x{s['C']}_{s['kh']}x{s['kw']}x{s['K']}"
        paths += _trace(cfg, directory, name, layer)
    return paths


def _trace(cfg, directory, name, layer):
    """[the trace directory of one layer with its golden CRCs], or [] (and why) when the
    golden model rejects it."""
    from sim.conv.random_programs import _golden_crcs, write_trace
    path = write_trace(directory, name, [layer])
    crcs, err = _golden_crcs(cfg, path, 1)
    if crcs is None:
        print(f"{name}: skipped, the golden model rejects it: {err}")
        return []
    return [write_trace(directory, name, [layer], crcs)]


def winograd(cfg, directory):
    """3 x 3 stride-1 layers (output = input, int8) as Winograd layers and as direct ones."""
    import numpy as np
    from sim.conv.random_programs import _shift_for, conv_layer
    from sim.conv.winograd_programs import wino_layer
    rng = np.random.default_rng(2)
    ac, ak = cfg.atomic_c, cfg.atomic_k
    paths = []
    for W, H, C, K in ((28, 28, ac, 2 * ak), (12, 12, 4 * ac, ak), (60, 8, ac // 2, ak)):
        data = rng.integers(-128, 128, (C, H, W))
        wt4 = rng.integers(-16, 16, (K, C, 4, 4))
        weights = rng.integers(-128, 128, (K, C, 3, 3))
        clip = _shift_for(C, 3, 3, "full", "full", 0)
        for name, layer in (
                (f"wg_{W}x{H}x{C}_3x3x{K}",
                 wino_layer(cfg, W=W, H=H, C=C, K=K, wt4=wt4, data=data, pad=(1, 3, 1, 3),
                            Wo=W, Ho=H, clip=clip)),
                (f"dt_{W}x{H}x{C}_3x3x{K}",
                 conv_layer(cfg, W=W, H=H, C=C, K=K, kh=3, kw=3, data=data, weights=weights,
                            pad=(1, 1, 1, 1), clip=clip))):
            paths += _trace(cfg, directory, name, layer)
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="nv_small")
    ap.add_argument("--traces", default=None,
                    help="directory of dc_* traces (default: the build's own, if any)")
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--winograd", action="store_true")
    ap.add_argument("--reference", default=os.path.join(SHARED,
                                                         "nv_small_reference_cycles.tsv"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.traces is None:
        args.traces = os.path.join(SHARED, cfg.name)
    paths = sorted(glob.glob(os.path.join(args.traces, "dc_*"))) if args.traces and \
        os.path.isdir(args.traces) else []
    tmp = tempfile.mkdtemp(prefix="conv-util-")
    if args.synthetic:
        paths += synthetic(cfg, tmp)
    if args.winograd:
        paths += winograd(cfg, tmp)
    if not paths:
        print("no convolution layers to run (give --traces or --synthetic)")
        return 2
    ref = {}
    if args.reference and os.path.exists(args.reference):
        from scripts.trace import read_reference
        ref = {k: v.layer_cycles for k, v in read_reference(args.reference).items()}

    from tb.trace_rtl import run_batch, split_batches
    import concurrent.futures
    batches = split_batches(paths, args.jobs)
    opts = dict(sim="verilator", backpressure=False, busy=0.0, latency=(1, 8))
    with concurrent.futures.ThreadPoolExecutor(len(batches)) as pool:
        results = [r for rs in pool.map(lambda b: run_batch(b, cfg, **opts), batches)
                   for r in rs]
    by_name = {r.name: r for r in results}
    print(f"config {cfg.name}: Atomic-C {cfg.atomic_c} x Atomic-K {cfg.atomic_k}, "
          f"DBBIF {cfg.dbbif_width} bits")
    head = f"{'layer':<36} {'MACs':>10} {'MAC bound':>10} {'DBB bound':>10} {'cycles':>9} " \
           f"{'util':>5} {'ref':>9} {'ratio':>6}"
    print(head)
    for path in paths:
        name = os.path.basename(os.path.normpath(path))
        r = by_name[name]
        progs = layer_programs(path, cfg)
        if not r.passed or not progs:
            print(f"{name:<36} FAILED: {r.message[:120]}")
            continue
        macs = mb = bb = 0
        for p in progs:
            a, b, c = bounds(cfg, p)
            macs, mb, bb = macs + a, mb + b, bb + c
        bound = max(mb, bb)
        cyc = r.layer_cycles
        rc = ref.get(name)
        print(f"{name:<36} {macs:>10} {mb:>10.0f} {bb:>10.0f} {cyc:>9} {bound / cyc:>5.2f} "
              f"{rc if rc else '':>9} {(f'{cyc / rc:.2f}' if rc else ''):>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
