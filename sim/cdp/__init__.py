"""Golden model of the CDP unit (spec: CDP, CDP_RDMA): cross-channel local response
normalization.

:mod:`sim.cdp.program` decodes and checks a CDP/CDP_RDMA register program (``decode``,
``CdpProgramError`` naming the field and the rule); :mod:`sim.cdp.cdp` runs one layer bit-exactly
(``run_cdp``: input converter, square sum over 3/5/7/9 channels, LE/LO LUT on the shared
:mod:`sim.lut` core, multiplier, output converter, counters; int8, int16 and fp16 layers, the
fp16 ones through NVDLA's floating-point units, ``compute_fp16`` / ``lut_lookup_fp16``) and
holds the stage functions; ``check_core_limits`` would name what this core's CDP RTL rejects
beyond NVDLA's rules (nothing any more: the RTL runs fp16 too);
:mod:`sim.cdp.random_programs` draws constrained-random CDP layers and writes them as NVDLA trace
directories (import it by its full name: it needs the trace runner). The unit is registered as
``"CDP"`` in :mod:`sim.units`.
"""

from .cdp import (CdpLut, CdpLutOutput, CdpResult, compute, compute_fp16, input_convert,
                  lut_lookup, lut_lookup_fp16, output_convert, round_half_away, run_cdp,
                  shift_round_saturate, square_sum)
from .program import CdpLutParams, CdpProgram, CdpProgramError, check_core_limits, decode

__all__ = ["CdpLut", "CdpLutOutput", "CdpResult", "run_cdp", "compute", "compute_fp16",
           "lut_lookup_fp16", "input_convert",
           "square_sum", "lut_lookup", "output_convert", "round_half_away",
           "shift_round_saturate", "CdpLutParams", "CdpProgram", "CdpProgramError", "decode",
           "check_core_limits"]
