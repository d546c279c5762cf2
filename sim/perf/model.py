"""The performance model's front: a trace's layers -> per-layer estimates with their bounds.

    est = estimate_trace(path, cfg)                   # TraceEstimate
    est.layers[i].cycles, .bounds, .dominant, .kind   # LayerEstimate
    est.cycles, est.macs, est.skipped

Layers come from :func:`sim.perf.decode.trace_layers` (the golden model's decoders, no data
path). With ``retarget_from`` (a build the trace was written for), a layer that does not
decode on ``cfg`` (NVDLA traces encode the CBUF geometry of their build: entries per slice,
bank fields) is taken from the decode on that build and evaluated on ``cfg``'s sizing, as a
compiler would re-program it (convolution layers only: the streaming units' programs carry
no sizing, so they decode on any build that has the unit). Cycles count as NVDLA's reference
measures them: from the layer's final ``D_OP_ENABLE`` write to its interrupt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .conv import ConvShape, data_reuse, estimate_conv
from .decode import DecodeError, trace_layers
from .memory import memory_for
from .units import estimate_cdp, estimate_pdp, estimate_sdp

__all__ = ["LayerEstimate", "TraceEstimate", "estimate_layer", "estimate_trace"]


@dataclass
class LayerEstimate:
    index: int
    kind: str
    cycles: float = 0.0
    bounds: dict = field(default_factory=dict)   #: {bound name: cycles}
    macs: int = 0                                #: useful multiply-accumulates (conv)
    mac_ops: int = 0                             #: atomic operations (conv)
    bytes: int = 0                               #: DBBIF bytes read + written
    error: str | None = None                     #: why the layer has no estimate
    retargeted: bool = False                     #: geometry decoded on another build

    @property
    def dominant(self) -> str:
        """The largest rate bound, or ``fixed`` when the start-up/drain cycles exceed all."""
        if not self.bounds:
            return "-"
        return max(self.bounds, key=self.bounds.get)


@dataclass
class TraceEstimate:
    name: str
    layers: list
    error: str | None = None                     #: the trace does not parse for the build

    @property
    def valid(self) -> bool:
        return self.error is None and bool(self.layers) and \
            all(lay.error is None for lay in self.layers)

    @property
    def cycles(self) -> float:
        return sum(lay.cycles for lay in self.layers)

    @property
    def macs(self) -> int:
        return sum(lay.macs for lay in self.layers)


def estimate_layer(layer, cfg, memory, shape=None, reuse=None) -> LayerEstimate:
    """Estimate one decoded :class:`sim.perf.decode.Layer` on ``cfg`` (``shape``: a
    :class:`ConvShape` to use instead of the layer's own program; ``reuse``: a convolution
    layer's kept and fetched input lines, :func:`sim.perf.conv.data_reuse`)."""
    est = LayerEstimate(layer.index, layer.kind, error=layer.error)
    if layer.kind == "conv" and (shape is not None or layer.error is None):
        if shape is None:
            shape = ConvShape.from_program(layer.conv, cfg, reuse)
        r = estimate_conv(cfg, shape, memory)
        est.error = None
        est.macs, est.mac_ops = r["macs"], r["mac_ops"]
    elif layer.error is not None:
        return est
    elif layer.kind in ("sdp", "sdp_pdp"):
        r = estimate_sdp(cfg, layer.sdp, memory, layer.pdp)
    elif layer.kind == "pdp":
        r = estimate_pdp(cfg, layer.pdp, memory)
    elif layer.kind == "cdp":
        r = estimate_cdp(cfg, layer.cdp, memory)
    else:
        est.error = f"no performance model for {layer.kind} layers"
        return est
    est.cycles, est.bounds, est.bytes = r["cycles"], r["bounds"], r["bytes"]
    return est


def _name(path):
    import os
    return os.path.basename(os.path.normpath(path))


def estimate_trace(path, cfg, memory="harness", retarget_from=None) -> TraceEstimate:
    """Estimate every layer of the trace at ``path`` on build ``cfg`` (see the module
    docstring for ``retarget_from``); ``memory``: a :mod:`sim.perf.memory` setting name."""
    mem = memory_for(memory, cfg)
    try:
        layers = trace_layers(path, cfg)
    except DecodeError as e:
        layers, err = None, str(e)
    else:
        err = None
    base = None
    if retarget_from is not None and retarget_from != cfg and (
            layers is None or any(lay.error for lay in layers)):
        try:
            base = trace_layers(path, retarget_from)
        except DecodeError:
            base = None
    if layers is None and base is None:
        return TraceEstimate(_name(path), [], error=err)
    out = []
    prev = None                      # the last convolution program that ran (CBUF reuse)
    for i, lay in enumerate(layers if layers is not None else base):
        src = base[i] if base is not None and i < len(base) else None
        if src is not None and src.kind == "conv" and src.error is None and lay.kind == "conv" \
                and (lay.error or layers is None):
            reuse = data_reuse(prev, src.conv)
            e = estimate_layer(src, cfg, mem, ConvShape.from_program(
                src.conv, retarget_from, reuse).retarget(cfg))
            e.retargeted = True
            prev = src.conv
        elif lay.kind == "conv" and lay.error is None:
            e = estimate_layer(lay, cfg, mem, reuse=data_reuse(prev, lay.conv))
            prev = lay.conv
        else:
            e = estimate_layer(lay, cfg, mem)
        out.append(e)
    return TraceEstimate(_name(path), out)
