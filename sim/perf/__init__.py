"""An analytic performance model of this core: per-layer cycles from decoded register programs.

:mod:`.decode` turns a trace into its hardware layers (the golden model's decoders, no data
path); :mod:`.conv` estimates a direct-convolution layer (stripe timeline of CDMA, CSC/CMAC,
CACC -> SDP), :mod:`.units` the SDP / PDP / CDP layers; :mod:`.memory` is the memory behind
the DBBIF; :mod:`.model` puts them together per trace; :mod:`.area` estimates a build's area
from this project's measured ECP5 synthesis; :mod:`.sweep` applies build-parameter sweeps.
Calibrated and validated on ``bench/perf_calibration.tsv`` (measured RTL layer cycles).
"""

from .model import LayerEstimate, TraceEstimate, estimate_layer, estimate_trace

__all__ = ["LayerEstimate", "TraceEstimate", "estimate_layer", "estimate_trace"]
