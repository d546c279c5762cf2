"""Golden model of the SDP unit (spec: SDP, SDP_RDMA; RTL :mod:`hw.sdp`).

:mod:`sim.sdp.sdp` runs one offline SDP layer bit-exactly (``run_sdp``: program checks, the
BS/BN/EW stages, LUT, output converter, counters; int8, int16 and fp16) and holds the stage functions the RTL
datapath is checked against; :mod:`sim.sdp.lut` is the LUT RAMs with their CSB access port;
:mod:`sim.sdp.random_programs` draws constrained-random SDP programs and writes them as
NVDLA trace directories (import it by its full name: it needs the trace runner).
"""

from .lut import ACCESS_READ, ACCESS_WRITE, LE_DEPTH, LO_DEPTH, TABLE_LE, TABLE_LO, SdpLut
from .sdp import (
    ALU_EQL, LutOutput, LutParams, SdpProgramError, SdpResult, XStage, YStage,
    lut_index_exponent, lut_index_linear, lut_lookup, output_convert, round_shift_right, run_sdp,
    saturate, shift_left_saturate, shift_signed_saturate, sign_extend, wrap_signed, x_stage,
    x_stage_fp16, y_operand_convert, y_operand_fp16, y_stage, y_stage_fp16)

__all__ = [
    "SdpProgramError", "SdpResult", "run_sdp",
    # integer helpers
    "sign_extend", "wrap_signed", "saturate", "round_shift_right", "shift_left_saturate",
    "shift_signed_saturate",
    # stages
    "XStage", "YStage", "x_stage", "y_stage", "y_operand_convert", "output_convert", "ALU_EQL",
    "x_stage_fp16", "y_stage_fp16", "y_operand_fp16",
    "LutParams", "LutOutput", "lut_lookup", "lut_index_linear", "lut_index_exponent",
    # LUT RAMs
    "SdpLut", "LE_DEPTH", "LO_DEPTH", "TABLE_LE", "TABLE_LO", "ACCESS_READ", "ACCESS_WRITE",
]
