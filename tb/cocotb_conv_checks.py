"""cocotb: NVDLA traces on the core with every AXI burst logged and checked against the memory
ranges the trace's valid layers were programmed with (tests/test_conv_checks.py).

The batch (pickle at ``NVDLA_TRACE_BATCH``): ``traces`` (parsed Trace objects), ``allowed``
(per trace: ``writes`` and ``reads`` lists of ``(lo, hi)`` byte ranges; ``reads`` applies to
the clients ``read_ids``), ``read_ids`` (AXI IDs of the checked read clients), ``options``.
Each trace runs as in :mod:`tb.cocotb_trace` (core reset and fresh memories in between);
its JSON line (``NVDLA_TRACE_RESULTS``) adds ``writes`` / ``reads`` (bursts seen: all writes,
reads by the checked clients) and ``stray`` (bursts outside the allowed ranges; a burst's
first and last byte must lie in one range).
"""

from __future__ import annotations

import json
import os
import pickle
import time
import traceback

import cocotb

from .cocotb_trace import _TraceExec
from .harness import CoreBench, SparseAxiMemory


def _inside(ranges, lo, hi):
    return any(a <= lo and hi <= b for a, b in ranges)


@cocotb.test()
async def run_checked_traces(dut):
    with open(os.environ["NVDLA_TRACE_BATCH"], "rb") as f:
        batch = pickle.load(f)
    opts = batch["options"]
    read_ids = set(batch["read_ids"])
    tb = await CoreBench.start(dut, memory="sparse", seed=opts.get("seed", 1),
                               mem_options=dict(busy=float(opts.get("busy", 0.3)),
                                                latency=tuple(opts.get("latency", (1, 16)))))
    mems = [m for m in (tb.dbb, tb.sram) if m is not None]
    log = []

    def logger(mem):
        def burst_ok(kind, addr, beats):
            SparseAxiMemory._burst_ok(mem, kind, addr, beats)
            ident = int(mem._h["ar_arid" if kind == "read" else "aw_awid"].value)
            log.append((kind, ident, addr, addr + beats * mem.bytes))
        return burst_ok

    with open(os.environ["NVDLA_TRACE_RESULTS"], "a") as out:
        for n, (trace, allowed) in enumerate(zip(batch["traces"], batch["allowed"])):
            t0 = time.perf_counter()
            if n:
                await tb.reset()
                for m in mems:
                    m.clear()
                    m.errors.clear()
            for m in mems:
                m._burst_ok = logger(m)
            log.clear()
            ex = _TraceExec(tb, opts)
            try:
                await ex.run(trace.commands)
            except Exception as e:
                tbk = traceback.extract_tb(e.__traceback__)[-1]
                ex.failures.append(f"internal error: {type(e).__name__}: {e} "
                                   f"(at {os.path.basename(tbk.filename)}:{tbk.lineno})")
            for m in mems:
                ex.failures.extend(m.errors)
            writes = [e for e in log if e[0] == "write"]
            reads = [e for e in log if e[0] == "read" and e[1] in read_ids]
            stray = [f"{k} id {i} [{lo:#x}, {hi:#x})" for k, i, lo, hi in writes
                     if not _inside(allowed["writes"], lo, hi)]
            stray += [f"{k} id {i} [{lo:#x}, {hi:#x})" for k, i, lo, hi in reads
                      if not _inside(allowed["reads"], lo, hi)]
            res = dict(name=trace.name, passed=not ex.failures, message="; ".join(ex.failures),
                       checks=ex.checks, writes=len(writes), reads=len(reads), stray=stray,
                       wall=time.perf_counter() - t0)
            out.write(json.dumps(res) + "\n")
            out.flush()
            dut._log.info(f"{trace.name}: {'PASS' if res['passed'] else 'FAIL'} "
                          f"writes={len(writes)} reads={len(reads)} stray={len(stray)} "
                          f"{res['message']}")
