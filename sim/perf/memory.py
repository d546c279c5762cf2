"""The memory the model assumes behind the DBBIF: first-data latency and sustained efficiency.

Two settings:

- ``harness`` (default, the one the model is calibrated on): the conditions of
  ``nvdla trace --engine rtl`` (``tb/trace_rtl.py`` defaults): every AXI channel stalls at
  random with probability 0.3 (so a read or write stream moves 0.7 beats per cycle) and data
  comes 1-16 cycles after its address (mean 8.5).
- ``playback``: the playback harness without back-pressure and with 1-8 cycles of latency
  (mean 4.5), the conditions of ``bench/conv_utilization.py``.
- ``config``: the build's own ``cfg.dbbif_latency`` (NVDLA's expected primary memory latency,
  50 cycles on nv_small, 1200 on nv_large) and no stalls: what a real memory system at full
  bus rate would give. Not measured here: the latency only adds to each layer's start and
  end (the DMAs keep ``cfg.outstanding`` requests in flight, which covers it at these rates).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Memory", "memory_for", "MEMORIES"]


@dataclass(frozen=True)
class Memory:
    name: str
    latency: float          #: cycles from a read address to its first data (mean)
    efficiency: float       #: beats per cycle a read or write stream sustains (0..1]


MEMORIES = ("harness", "playback", "config")


def memory_for(name: str, cfg) -> Memory:
    """The memory setting ``name`` (:data:`MEMORIES`) for build ``cfg``."""
    if name == "harness":
        return Memory("harness", 8.5, 0.7)
    if name == "playback":
        return Memory("playback", 4.5, 1.0)
    if name == "config":
        return Memory("config", float(cfg.dbbif_latency), 1.0)
    raise ValueError(f"unknown memory setting {name!r}; choose one of {', '.join(MEMORIES)}")
