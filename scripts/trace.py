"""``nvdla trace``: run NVDLA trace directories on the golden model or the RTL.

    nvdla trace --engine golden ../shared/nvdla/traces/nv_small
    nvdla trace --config my_build.toml -j 2 DIR...

Each argument is a trace directory (holding ``<name>.cfg`` and its ``.dat`` images), a ``.cfg``
file, or a directory of trace directories. One line per trace: name, PASS/FAIL, the failing
checks' expected/actual CRC or the failure, simulated cycles (the golden model has no timing:
it reports layer steps), on the RTL the layer cycles (``layer=N``: from each layer's last
``D_OP_ENABLE`` write to its interrupt, summed over the trace's layers, as NVDLA's reference
measures them), wall time. The last line is ``N passed, M failed``; the exit status is 0 only
when every trace passed.

``--reference FILE`` compares the layer cycles with a reference table (a TSV of trace name,
whether the original RTL passes it (True/False), its layer cycles; a header line is allowed):
each RTL line gains ``ref=M ratio=N/M`` for the traces the table lists, and a summary gives
both totals and their ratio over the traces present in both (with a layer measured).
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import time
from typing import NamedTuple

__all__ = ["add_arguments", "run", "read_reference", "Reference"]


class Reference(NamedTuple):
    """One row of a reference table."""
    passed: bool                    #: the original RTL passes the trace
    layer_cycles: int


def read_reference(path) -> dict:
    """``{trace name: Reference(passed, layer_cycles)}`` from a reference TSV: tab-separated
    name, passed-on-original (True/False), layer cycles; blank lines and ``#`` comments are
    skipped, and so is a first row whose third column is not a number (a header). Raises
    ValueError naming the file and line of a malformed row."""
    table, first = {}, True
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            cols = [c.strip() for c in text.split("\t")]
            where = f"{path}:{n}"
            if len(cols) < 3:
                raise ValueError(f"{where}: expected 3 tab-separated columns (name, passed, "
                                 f"layer cycles), got {len(cols)}")
            name, passed, cycles = cols[:3]
            header, first = first, False
            try:
                cycles = int(cycles)
            except ValueError:
                if header:
                    continue
                raise ValueError(f"{where}: layer cycles {cycles!r} is not a number") from None
            if passed.lower() not in ("true", "false"):
                raise ValueError(f"{where}: passed column {passed!r} is not True or False")
            if cycles < 0:
                raise ValueError(f"{where}: negative layer cycles {cycles}")
            table[name] = Reference(passed.lower() == "true", cycles)
    return table


def add_arguments(parser):
    parser.add_argument("dirs", nargs="+", metavar="DIR",
                        help="trace directory, .cfg file, or directory of trace directories")
    parser.add_argument("--config", default="nv_small",
                        help="build: a preset name or a TOML file (default nv_small)")
    parser.add_argument("--engine", choices=("golden", "rtl", "rtl-cocotb"), default="golden",
                        help="golden numpy model or the generated RTL: rtl = the compiled "
                             "playback harness on Verilator (the cocotb engine with --sim "
                             "icarus), rtl-cocotb = the cocotb engine (default golden)")
    parser.add_argument("--sim", choices=("icarus", "verilator"), default="verilator",
                        help="HDL simulator of the rtl engine (default verilator)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="run N traces in parallel processes (rtl: N batches, each one "
                             "simulator run)")
    parser.add_argument("--max-cycles", type=int, default=2_000_000, metavar="N",
                        help="rtl: give up a wait (intr_notify, poll_reg_equal) after N cycles "
                             "(default 2000000)")
    parser.add_argument("--reference", metavar="FILE",
                        help="rtl: compare layer cycles with a reference TSV (name, passed on "
                             "the original, layer cycles), e.g. "
                             "../shared/nvdla/traces/nv_small_reference_cycles.tsv")


def _run_one(path, config, engine, sim):
    from arch.config import load_config
    from sim.trace_run import run_trace
    cfg = load_config(config)
    return run_trace(path, cfg, engine=engine, sim=sim)


def _run_pool(paths, args):
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        futs = [pool.submit(_run_one, p, args.config, args.engine, args.sim) for p in paths]
        for f in futs:
            yield f.result()


def _rtl_batch(batch, config, engine, sim, max_cycles, queue):
    """One worker of ``--engine rtl -j N``: a batch of traces in one simulator run."""
    from arch.config import load_config
    from tb.trace_rtl import run_batch
    try:
        run_batch(batch, load_config(config), engine=engine, sim=sim, max_cycles=max_cycles,
                  on_result=queue.put)
    except Exception as e:                       # EngineUnavailable, or a bug: re-raised
        queue.put(e)


def _run_rtl(paths, args):
    """The rtl engine: the traces split into ``-j`` batches, each one simulator run in its
    own process (one build per configuration and simulator, shared); results are yielded
    as traces finish."""
    import multiprocessing
    import threading
    from tb.trace_rtl import split_batches
    batches = split_batches(list(paths), args.jobs)
    ctx = multiprocessing.get_context("spawn")
    with multiprocessing.Manager() as manager:
        queue = manager.Queue()
        if len(batches) == 1:
            workers = [threading.Thread(target=_rtl_batch,
                                        args=(batches[0], args.config, args.engine, args.sim,
                                              args.max_cycles, queue))]
        else:
            workers = [ctx.Process(target=_rtl_batch,
                                   args=(b, args.config, args.engine, args.sim, args.max_cycles,
                                         queue))
                       for b in batches]
        for w in workers:
            w.start()
        for _ in range(len(paths)):
            item = queue.get()
            if isinstance(item, Exception):
                for w in workers:
                    w.join()
                raise item
            yield item
        for w in workers:
            w.join()


def _ratio(ours, ref):
    return f"{ours / ref:.2f}" if ref else "-"


def _line(r, width, reference=None):
    status = "PASS" if r.passed else "FAIL"
    if r.cycle_unit == "cycles":
        timing = f"cycles={r.cycles} layer={r.layer_cycles}"
        ref = (reference or {}).get(r.name)
        if ref is not None:
            timing += f" ref={ref.layer_cycles} ratio={_ratio(r.layer_cycles, ref.layer_cycles)}"
            if not ref.passed:
                timing += " (fails on the original)"
    else:
        timing = f"cycles=0 layer-steps={r.cycles}"
    text = f"{r.name:<{width}}  {status}  {timing}  {r.wall:.2f}s"
    if not r.passed:
        bad = r.failed_checks
        if bad:
            crcs = ", ".join(f"expected {c.expected:#010x} actual {c.actual:#010x}" for c in bad)
            text += f"  crc {crcs}"
        other = [m for m in r.message.split("; ") if m and "check_crc(" not in m]
        if other:
            text += "  " + "; ".join(other)
    return text


def _summary(compared, no_layer, n_traces):
    """The layer-cycle comparison with the reference, after the per-trace lines."""
    ours = sum(o for o, _ in compared)
    ref = sum(r for _, r in compared)
    print(f"layer cycles vs reference: {len(compared)} of {n_traces} traces in both")
    print(f"  {'ours':<10} {ours:>10}")
    print(f"  {'reference':<10} {ref:>10}")
    print(f"  {'ratio':<10} {_ratio(ours, ref):>10}")
    if no_layer:
        print(f"  left out (no layer measured): {', '.join(no_layer)}")


def run(args) -> int:
    from arch.config import load_config
    from sim.trace import TraceError, expand_trace_dirs
    from sim.trace_run import ENGINES, EngineUnavailable, run_trace
    import tb.trace_rtl  # noqa: F401  (registers the rtl engine)

    load_config(args.config)                     # fail early on a bad --config
    try:
        paths = expand_trace_dirs(args.dirs)
    except TraceError as e:
        print(f"nvdla trace: {e}", file=sys.stderr)
        return 2
    if not paths:
        print("nvdla trace: no traces given", file=sys.stderr)
        return 2
    if args.engine not in ENGINES:
        print(f"nvdla trace: engine {args.engine!r} is not available", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("nvdla trace: -j must be at least 1", file=sys.stderr)
        return 2

    reference = None
    if args.reference:
        try:
            reference = read_reference(args.reference)
        except (OSError, ValueError) as e:
            print(f"nvdla trace: --reference: {e}", file=sys.stderr)
            return 2

    names = [os.path.basename(os.path.normpath(p)) for p in paths]
    width = max(len(n) for n in names)
    if args.engine == "golden":
        print(f"engine golden, config {args.config}: the golden model has no cycle timing; "
              "layer-steps counts the layers it ran")
        if reference is not None:
            print("--reference: ignored, the golden model has no layer cycles")
            reference = None
    else:
        how = "playback harness" if args.engine == "rtl" and args.sim == "verilator" else "cocotb"
        print(f"engine {args.engine} ({how}, {args.sim}), config {args.config}")
    sys.stdout.flush()

    t0 = time.perf_counter()
    passed = failed = 0
    compared = []                                # (ours, reference) of traces in both
    no_layer = []                                # in the reference, no layer measured
    try:
        if args.engine in ("rtl", "rtl-cocotb"):
            results = _run_rtl(paths, args)
        elif args.jobs == 1:
            cfg = load_config(args.config)
            results = (run_trace(p, cfg, engine=args.engine, sim=args.sim) for p in paths)
        else:
            results = _run_pool(paths, args)
        for r in results:
            print(_line(r, width, reference), flush=True)
            if reference is not None and r.name in reference:
                if r.layer_cycles > 0:
                    compared.append((r.layer_cycles, reference[r.name].layer_cycles))
                else:
                    no_layer.append(r.name)
            passed += r.passed
            failed += not r.passed
    except EngineUnavailable as e:
        print(f"nvdla trace: {e}", file=sys.stderr)
        print(f"{passed} passed, {len(paths) - passed} failed")
        return 2
    if reference is not None:
        _summary(compared, no_layer, len(names))
    print(f"total wall time {time.perf_counter() - t0:.1f}s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def main(argv=None) -> int:
    """``python -m scripts.trace ...`` (the same as ``nvdla trace ...``)."""
    import argparse
    parser = argparse.ArgumentParser(prog="nvdla trace", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    from arch.config import ConfigError
    try:
        return run(args)
    except ConfigError as e:
        print(f"nvdla trace: invalid configuration: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
