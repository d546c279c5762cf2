"""Cycles of the streaming units' layers: SDP (offline, maybe into PDP), PDP (offline), CDP.

Each of these units streams its cube once through a datapath of ``T`` elements per cycle
(``hw/sdp``: ``sdp_bs_throughput`` lanes; ``hw/pdp``: ``pdp_throughput``, one input transfer
per cycle and one output row result per cycle, so ``max(in, out) / T``; ``hw/cdp``:
``cdp_throughput`` channels per cycle), reading and writing whole memory atoms through the
DBBIF (read and write channels are separate AXI channels). The channel padding of the last
surface flows through the datapath like data (SDP, CDP and PDP all process whole atoms:
``sdp_1x8192x1_pass_through`` takes 8 x 8192 cycles at T = 1). A layer takes the largest of
its datapath, read and write bounds plus a fixed start-up/drain overhead (fitted per unit on
``bench/perf_calibration.tsv``) and twice the memory latency (first read, last write
response).
"""

from __future__ import annotations

from sim.formats.common import ceil_div

__all__ = ["estimate_sdp", "estimate_pdp", "estimate_cdp", "OVERHEADS"]

#: fixed cycles per layer beyond the rate bounds (harness memory; fitted)
OVERHEADS = {"sdp": 45, "pdp": 25, "cdp": 55}


def _padded(width, height, channel, cfg, ebytes=1):
    """Elements of a cube in whole memory atoms (the padding channels included)."""
    per_atom = cfg.memory_atom // ebytes
    return width * height * ceil_div(channel, per_atom) * per_atom


def _finish(bounds, overhead, memory):
    fixed = overhead + 2 * memory.latency
    bounds["fixed"] = fixed
    return max(v for k, v in bounds.items() if k != "fixed") + fixed


def _sdp_operand_bytes(prog, cfg):
    """Bytes the B/N/E operand DMAs read: per element (W x H x C, 1 or 2 bytes, twice for
    ALU and MUL) or per kernel (one per channel)."""
    total = 0
    for dma in prog.dmas.values():
        if not dma.enabled:
            continue
        n = 2 if dma.use == 2 else 1
        if dma.per_element:
            total += _padded(prog.width, prog.height, prog.channel, cfg) * dma.size * n
        else:
            total += ceil_div(prog.channel * dma.size * n, cfg.memory_atom) * cfg.memory_atom
    return total * max(prog.batches, 1)


def estimate_sdp(cfg, prog, memory, pdp=None) -> dict:
    """An offline SDP layer (``prog``: the SDP decoder's program), into PDP when ``pdp``."""
    eb = 2 if prog.proc_prec else 1
    elems = _padded(prog.width, prog.height, prog.channel, cfg, eb)
    T = cfg.sdp_bs_throughput or 1
    bus = cfg.dbbif_bytes * memory.efficiency
    in_bytes = elems * eb
    bounds = {"datapath": elems / T,
              "read": (in_bytes + _sdp_operand_bytes(prog, cfg)) / bus,
              "write": 0.0 if (prog.to_pdp or prog.eql) else in_bytes / bus}
    if pdp is not None:
        p = _pdp_bounds(cfg, pdp, memory)
        bounds["pdp"] = p["datapath"]
        bounds["write"] = p["write"]
    return {"cycles": _finish(bounds, OVERHEADS["sdp"], memory), "bounds": bounds,
            "bytes": in_bytes + _sdp_operand_bytes(prog, cfg)}


def _pdp_bounds(cfg, prog, memory):
    """Split-width layers (``SPLIT_NUM``) read each pass's columns, the overlaps again."""
    eb = 2 if prog.precision else 1
    n_in = sum(_padded(s.in_width, prog.height, prog.channel, cfg, eb) for s in prog.splits)
    n_out = _padded(prog.out_width, prog.out_height, prog.channel, cfg, eb)
    T = cfg.pdp_throughput or 1
    bus = cfg.dbbif_bytes * memory.efficiency
    return {"datapath": max(n_in, n_out) / T,
            "read": 0.0 if prog.flying else n_in * eb / bus,
            "write": n_out * eb / bus}


def estimate_pdp(cfg, prog, memory) -> dict:
    """An offline PDP layer (``prog``: :class:`sim.pdp.PdpProgram`)."""
    bounds = _pdp_bounds(cfg, prog, memory)
    eb = 2 if prog.precision else 1
    nbytes = eb * (_padded(prog.width, prog.height, prog.channel, cfg, eb)
                   + _padded(prog.out_width, prog.out_height, prog.channel, cfg, eb))
    return {"cycles": _finish(bounds, OVERHEADS["pdp"], memory), "bounds": bounds,
            "bytes": nbytes}


def estimate_cdp(cfg, prog, memory) -> dict:
    """A CDP layer (``prog``: :class:`sim.cdp.CdpProgram`): reads and writes every atom once."""
    eb = 2 if prog.precision else 1
    elems = _padded(prog.width, prog.height, prog.channel, cfg, eb)
    T = cfg.cdp_throughput or 1
    bus = cfg.dbbif_bytes * memory.efficiency
    bounds = {"datapath": elems / T, "read": elems * eb / bus, "write": elems * eb / bus}
    return {"cycles": _finish(bounds, OVERHEADS["cdp"], memory), "bounds": bounds,
            "bytes": 2 * elems * eb}
