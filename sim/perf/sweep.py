"""Build-parameter sweeps: ``--set atomic_c=8,16,32`` lists -> the cartesian product of builds,
each derived from a base with :meth:`arch.config.NvdlaConfig.replace` (its rules checked),
with the parameters the rules tie to a swept one adjusted:

- ``cbuf_bank_width`` must equal ``atomic_c`` (one atomic cube per entry): set with it, and
  ``cbuf_bank_depth`` scaled to keep the base's bank size (so the CBUF keeps its capacity, as
  nv_small -> nv_small_256 does), unless they are swept themselves;
- ``memory_atom`` must equal ``atomic_k``: set with it unless swept.

Each build's estimate is the sum over the traces legal on it (:func:`sim.perf.estimate_trace`
with ``retarget_from=base``: convolution layers whose program encodes the base's CBUF
geometry are evaluated with their geometry on the new sizing; any other layer that does not
decode there makes the trace skipped).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields

from arch.config import ConfigError, NvdlaConfig

from .area import estimate_area
from .model import estimate_trace

__all__ = ["parse_sets", "sweep_configs", "evaluate", "SweepPoint"]

_TIED = {"atomic_c": ("cbuf_bank_width", "cbuf_bank_depth"), "atomic_k": ("memory_atom",)}


def _convert(param, text, kind):
    t = text.strip()
    try:
        if kind == "bool":
            if t.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return t.lower() in ("true", "1", "yes")
        if kind == "int":
            return int(t, 0)
        return t
    except ValueError:
        raise ConfigError(f"--set {param}={text!r}: not a valid {kind}") from None


def parse_sets(items) -> dict:
    """``["atomic_c=8,16", ...]`` -> ``{"atomic_c": [8, 16], ...}``; an unknown parameter or
    a value of the wrong type raises ConfigError naming the parameter."""
    kinds = {f.name: f.type for f in fields(NvdlaConfig)}
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected PARAM=V1,V2,...")
        param, values = item.split("=", 1)
        param = param.strip()
        if param not in kinds or param == "name":
            raise ConfigError(f"--set: unknown build parameter {param!r}; known: "
                              f"{', '.join(sorted(k for k in kinds if k != 'name'))}")
        if kinds[param] not in ("int", "bool", "str"):
            raise ConfigError(f"--set {param}: only integer, boolean and string parameters "
                              "can be swept")
        vals = [_convert(param, v, kinds[param]) for v in values.split(",") if v.strip()]
        if not vals:
            raise ConfigError(f"--set {param}: no values")
        out[param] = vals
    return out


@dataclass
class SweepPoint:
    settings: dict                    #: the swept parameters' values
    cfg: NvdlaConfig | None = None
    error: str | None = None          #: the ConfigError of an invalid combination
    adjusted: dict = field(default_factory=dict)   #: tied parameters set by the rules
    cycles: float = 0.0
    macs: int = 0
    traces: int = 0                   #: traces estimated
    retargeted: int = 0               #: of them, with conv layers re-programmed from the base
    skipped: list = field(default_factory=list)    #: (trace, reason)
    area: dict = field(default_factory=dict)


def sweep_configs(base: NvdlaConfig, sets: dict) -> list:
    """One :class:`SweepPoint` per combination (invalid ones carry the ConfigError)."""
    names = list(sets)
    bank_bytes = base.cbuf_bank_width * base.cbuf_bank_depth
    points = []
    for combo in itertools.product(*(sets[n] for n in names)):
        settings = dict(zip(names, combo))
        changes, adjusted = dict(settings), {}
        if "atomic_c" in settings:
            ac = settings["atomic_c"]
            if "cbuf_bank_width" not in sets:
                adjusted["cbuf_bank_width"] = ac
            if "cbuf_bank_depth" not in sets and isinstance(ac, int) and ac > 0:
                adjusted["cbuf_bank_depth"] = max(bank_bytes // ac, 1)
        if "atomic_k" in settings and "memory_atom" not in sets:
            adjusted["memory_atom"] = settings["atomic_k"]
        changes.update(adjusted)
        label = ",".join(f"{k}={v}" for k, v in settings.items())
        pt = SweepPoint(settings, adjusted={k: v for k, v in adjusted.items()
                                            if getattr(base, k) != v})
        try:
            pt.cfg = base.replace(name=f"{base.name}[{label}]", **changes)
        except ConfigError as e:
            pt.error = str(e)
        points.append(pt)
    return points


def evaluate(point: SweepPoint, traces, base: NvdlaConfig, memory="harness") -> SweepPoint:
    """Fill in the point's totals over ``traces`` (paths)."""
    if point.cfg is None:
        return point
    for path in traces:
        est = estimate_trace(path, point.cfg, memory, retarget_from=base)
        if not est.valid:
            why = est.error or next((lay.error for lay in est.layers if lay.error),
                                    "no layer")
            point.skipped.append((est.name, why))
            continue
        point.traces += 1
        point.retargeted += any(lay.retargeted for lay in est.layers)
        point.cycles += est.cycles
        point.macs += est.macs
    point.area = estimate_area(point.cfg)
    return point
