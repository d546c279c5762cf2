"""Sustained DBBIF bandwidth of the memory interface (hw/mem/dmaif.py + hw/mem/mcif.py).

One read client (or one write client) moves long lines (4 KiB requests, several thousand
words) through :class:`hw.mem.dmaif.DmaInterfaces` to the AXI memory model of tb/axi_model.py,
which never back-pressures and answers every burst after a fixed latency (read data, and the
write response after the last W beat). Reported per case: data beats on the bus, the cycles
from the first to the last data beat, their ratio (the fraction of the bus width used while
streaming), and the cycles from the first request to the last beat (including the latency).

    python bench/dma_bandwidth.py            # from the repository root
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from amaranth.sim import Simulator  # noqa: E402

from arch.config import NvdlaConfig  # noqa: E402
from hw.mem.dma import RAM_MC, DmaGeometry  # noqa: E402
from hw.mem.dmaif import DmaInterfaces  # noqa: E402
from hw.mem.mcif import burst_plan, response_fifo_depth  # noqa: E402
from tb.axi_model import AxiMemoryModel  # noqa: E402

BASE = 0x8000_0000
LINE_BYTES = 4096


def run_case(cfg, latency, write, words):
    """Simulate one transfer; returns (beats, stream cycles, total cycles)."""
    geom = DmaGeometry(cfg)
    dut = DmaInterfaces(cfg, ["cdma_dat"], ["sdp"])
    model = AxiMemoryModel(dut, "dbb", cfg.dbbif_width, rng=random.Random(1),
                           latency=(latency, latency), b_latency=(latency, latency),
                           backpressure=0.0, max_burst=cfg.max_burst_length)
    if not write:
        model.write(BASE, random.Random(2).randbytes(words * geom.word_bytes))
    line_words = LINE_BYTES // geom.word_bytes
    n_lines = words // line_words
    atoms = LINE_BYTES // geom.atom_bytes - 1
    beats = words * (geom.word_bytes // (cfg.dbbif_width // 8))
    sim = Simulator(dut)
    sim.add_clock(1e-9)
    model.add_to(sim)
    port = dut.wr_sdp if write else dut.rd_cdma_dat
    result = {}

    async def issue(ctx):
        ctx.set(port.req.valid, 1)
        for k in range(n_lines):
            ctx.set(port.req.payload, {"addr": BASE + k * LINE_BYTES, "atoms": atoms,
                                       "ram_type": RAM_MC})
            while not (await ctx.tick().sample(port.req.ready))[2]:
                pass
        ctx.set(port.req.valid, 0)

    async def client(ctx):
        if write:
            ctx.set(port.dat.payload, {"data": (1 << geom.word_bits) - 1,
                                       "mask": (1 << geom.atoms_per_word) - 1})
            ctx.set(port.dat.valid, 1)
        else:
            ctx.set(port.resp.ready, 1)
        done = 0
        for cycle in range(20 * beats + 10 * latency + 1000):
            await ctx.tick()
            if write:
                done += ctx.get(port.done)
                if done == n_lines:
                    break
            elif model.r_beats == beats:
                break
        else:
            raise RuntimeError("transfer did not finish")
        result["total"] = cycle + 1

    sim.add_process(issue)
    sim.add_testbench(client)
    sim.run()
    got = model.w_beats if write else model.r_beats
    first, last = (model.first_w, model.last_w) if write else (model.first_r, model.last_r)
    assert got == beats, (got, beats)
    return beats, last - first + 1, result["total"]


def main():
    small = NvdlaConfig.preset("nv_small")
    full = NvdlaConfig.preset("nv_full")
    cases = [(small.replace(name="bench_64"), 4096), (full.replace(name="bench_512"), 2048)]
    print("DBBIF sustained bandwidth (one client, 4 KiB requests, memory never stalls)")
    for cfg, words in cases:
        geom = DmaGeometry(cfg)
        bpw, max_beats, _ = burst_plan(cfg, geom, cfg.dbbif_width)
        print(f"  {cfg.name}: from {'nv_small' if cfg.dbbif_width == 64 else 'nv_full'}, "
              f"DBBIF {cfg.dbbif_width} b, word {geom.word_bytes} B, atom {geom.atom_bytes} B, "
              f"max burst {cfg.max_burst_length} beats ({max_beats} used), outstanding "
              f"{cfg.outstanding} (OS_CNT 255), read buffer "
              f"{response_fifo_depth(cfg, geom, cfg.dbbif_width, cfg.dbbif_latency)} words, "
              f"{words} words per transfer")
    print()
    header = f"{'width':>6} {'latency':>8} {'dir':>6} {'beats':>6} {'cycles':>7} " \
             f"{'fraction':>9} {'total':>7} {'end-to-end':>10} {'sim s':>6}"
    print(header)
    print("-" * len(header))
    worst = 1.0
    for cfg, words in cases:
        for latency in (0, 50, 200):
            for write in (False, True):
                t = time.time()
                beats, cycles, total = run_case(cfg, latency, write, words)
                frac = beats / cycles
                if latency <= 50:
                    worst = min(worst, frac)
                print(f"{cfg.dbbif_width:>6} {latency:>8} {'write' if write else 'read':>6} "
                      f"{beats:>6} {cycles:>7} {frac:>9.1%} {total:>7} {beats / total:>10.1%} "
                      f"{time.time() - t:>6.1f}", flush=True)
    print()
    print(f"lowest streaming fraction at latency 0 and 50: {worst:.1%} (goal >= 95 %)")
    print("latency 200 (information only): a single read client can have at most its "
          "response buffer\n(sized for the build's expected DBBIF latency) in flight; "
          "several clients share the bus.")
    return 0 if worst >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
