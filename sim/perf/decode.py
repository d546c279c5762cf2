"""The hardware layers of a trace, decoded from its register program without running data.

    layers = trace_layers("../shared/nvdla/traces/nv_small/dc_6x8x192_3x3x192x32_int8_0", cfg)
    for layer in layers: layer.kind, layer.conv, layer.sdp, layer.pdp, layer.cdp, layer.error

The trace's ``.cfg`` is parsed without its ``.dat`` images (``parse_trace(...,
load_images=False)``) and its register writes are played into a :class:`sim.core.GoldenCore`
whose unit models launch layers exactly as the golden model does (same enables, same ping-pong
groups, same SDP -> PDP fusion), but whose ``run`` only decodes the consumer groups with the
golden model's own decoders (:func:`sim.conv.program.decode`, SDP's program decoder,
:func:`sim.pdp.decode`, :func:`sim.cdp.decode`) and records them; no data path runs, so a
trace decodes in milliseconds. A program the build cannot run (its decoder's error, e.g. a
``D_BANK`` field wider than the build's banks) becomes a layer with ``error`` set: the
performance model counts such a trace as not legal on that build.

Decoded traces are cached per (trace path, file time, config).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from arch.config import rtl_winograd
from sim.core import GoldenCore, Launch
from sim.trace import IntrNotify, RegWrite, TraceError, parse_trace

__all__ = ["Layer", "trace_layers", "DecodeError"]


class DecodeError(ValueError):
    """The trace cannot be parsed for this build (e.g. it names a register the build lacks)."""


@dataclass(frozen=True)
class Layer:
    """One hardware layer: what it runs and its decoded programs (None where not taking part).

    ``kind``: ``conv`` (direct convolution flying into SDP, maybe on into PDP), ``sdp``
    (offline SDP), ``sdp_pdp`` (offline SDP whose output flies into PDP), ``pdp`` (offline),
    ``cdp``, or the unit name of a layer the model has no estimate for (``rubik``, ``bdma``).
    """
    index: int
    kind: str
    conv: object = None            #: sim.conv.program.ConvProgram
    sdp: object = None             #: the SDP decoder's program (sim.sdp.sdp._Program)
    pdp: object = None             #: sim.pdp.PdpProgram
    cdp: object = None             #: sim.cdp.CdpProgram
    error: str | None = None       #: the decoder's message when the build cannot run it


_FLYING = object()                 # SDP's decoder only checks that a flying cube is given


def _decode_sdp(core, flying):
    from sim.sdp.sdp import _decode
    return _decode(core.cfg, core.view("SDP_RDMA"), core.view("SDP"),
                   _FLYING if flying else None)


def _decode_pdp(core, flying):
    from sim.pdp import decode
    if flying:
        return decode(core.cfg, core.view("PDP"), None, flying=True)
    return decode(core.cfg, core.view("PDP"), core.view("PDP_RDMA"))


def _decode_layer(core, unit_name, blocks, index):
    """Decode the consumer groups of a launch of ``unit_name`` over ``blocks``."""
    to_pdp = "PDP" in blocks
    try:
        if unit_name == "CONV":
            from sim.conv.program import decode
            conv = decode(core.cfg, *(core.view(b) for b in
                                      ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")))
            if conv.winograd is not None and not rtl_winograd(core.cfg):
                raise NotImplementedError("this core runs no Winograd layer on this build "
                                          "(CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD)")
            sdp = _decode_sdp(core, True)
            pdp = _decode_pdp(core, True) if to_pdp else None
            return Layer(index, "conv", conv=conv, sdp=sdp, pdp=pdp)
        if unit_name == "SDP":
            sdp = _decode_sdp(core, False)
            pdp = _decode_pdp(core, True) if to_pdp else None
            return Layer(index, "sdp_pdp" if to_pdp else "sdp", sdp=sdp, pdp=pdp)
        if unit_name == "PDP":
            return Layer(index, "pdp", pdp=_decode_pdp(core, False))
        if unit_name == "CDP":
            from sim.cdp import decode
            return Layer(index, "cdp", cdp=decode(core.cfg, core.view("CDP_RDMA"),
                                                  core.view("CDP")))
        return Layer(index, unit_name.lower())
    except (ValueError, NotImplementedError, KeyError) as e:
        kind = {"CONV": "conv", "SDP": "sdp_pdp" if to_pdp else "sdp"}.get(unit_name,
                                                                           unit_name.lower())
        return Layer(index, kind, error=f"{type(e).__name__}: {e}")


class _Recorder:
    """Wraps a golden unit model: its launches decode and record instead of computing."""

    def __init__(self, unit, core, out):
        self._unit, self._core, self._out = unit, core, out
        self.name, self.blocks = unit.name, unit.blocks

    def __getattr__(self, name):          # run_flying and the like: the unit's own
        return getattr(self._unit, name)

    def install(self, core):
        self._unit.install(core)

    def plan(self, core):
        p = self._unit.plan(core)
        if not isinstance(p, Launch):
            return p

        def run():
            self._out.append(_decode_layer(core, self.name, p.blocks, len(self._out)))
            return {}
        return Launch(p.blocks, run, p.what, p.groups)


@functools.lru_cache(maxsize=4096)
def _cached(path, mtime, cfg):
    try:
        trace = parse_trace(path, cfg, load_images=False)
    except TraceError as e:
        raise DecodeError(str(e)) from None
    from sim.units import default_units
    layers = []
    core = GoldenCore(cfg, units={})
    core.units = {n: _Recorder(u, core, layers) for n, u in default_units(cfg).items()}
    for u in core.units.values():
        u.install(core)
    glb_status = core.rmap.address("GLB.S_INTR_STATUS") >> 2 if "GLB" in core.rmap else None
    for cmd in trace.commands:
        if isinstance(cmd, RegWrite):
            core.csb_write(cmd.addr, cmd.value)
            core.run()
        elif isinstance(cmd, IntrNotify) and glb_status is not None:
            core.csb_write(glb_status, cmd.mask)      # acknowledge, as the player does
    return tuple(layers)


def trace_layers(path: str, cfg) -> tuple:
    """The hardware layers of trace ``path`` (a trace directory or its ``.cfg``) on build
    ``cfg``, in launch order (cached). Raises :class:`DecodeError` when the trace does not
    parse for the build."""
    path = os.path.abspath(path)
    return _cached(path, os.path.getmtime(path), cfg)
