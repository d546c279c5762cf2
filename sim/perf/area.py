"""An ECP5 area estimate of a build, calibrated on this project's measured Yosys syntheses.

ESTIMATE, not synthesis. The figures it is fitted on (README, "FPGA resources";
``nvdla synth --target ecp5``, core flattened, commit 1cb84fd / 017dc67):

=============  ========  =======  ======  ==========
build          LUT4      FF       DP16KD  MULT18X18D
=============  ========  =======  ======  ==========
nv_small       58,151    26,447   122     127
nv_small_256   97,210    47,749   314     327
=============  ========  =======  ======  ==========

and nv_small's per-unit runs (SDP datapath 3,631 LUT4 / 8 MULT per lane, PDP pool 6,363 /
12, CDP datapath 5,710 / 17, DMA interface 5.9k LUT4 at 64 bits).

- Multipliers: one MULT18X18D per int8 MAC (this core's CMAC) plus 63 elsewhere, plus the
  per-lane multipliers of SDP / PDP / CDP beyond one lane (nv_small: 127; nv_small_256:
  256 + 63 = 319 against 327 measured).
- Block RAM: the CBUF, each bank ``ceil(width bits / 36) x ceil(depth / 512)`` DP16KD (a
  DP16KD is at most 36 bits wide and 512 deep at that width: nv_small 32 x 2 = 64,
  nv_small_256 32 x 8 = 256), plus 58 others (exact on both).
- LUT4 / FF: linear in the MAC count through the two whole-core points (203 LUT4 and 111 FF
  per MAC). The two measured builds differ in Atomic-C and bank width together, so the slope
  also carries the CBUF / CSC / CACC width that grows with Atomic-C: it is not separable from
  these data. SDP / PDP / CDP lanes beyond one and a DBBIF wider than 64 bits add the per-unit
  figures above linearly (extrapolated, never measured at those sizes).
"""

from __future__ import annotations

from sim.formats.common import ceil_div

__all__ = ["estimate_area", "AREA_NOTE"]

AREA_NOTE = ("area: an ECP5 estimate (LUT4 / FF / DP16KD / MULT18X18D) from a linear model "
             "fitted on this project's measured nv_small and nv_small_256 Yosys syntheses "
             "(sim/perf/area.py), not a synthesis")

_LUT_BASE, _LUT_PER_MAC = 45_133, 203.4
_FF_BASE, _FF_PER_MAC = 19_349, 110.9
_BRAM_OTHER, _DSP_OTHER = 58, 63
_LANE = {"sdp_bs_throughput": (3_631, 8), "pdp_throughput": (6_363, 12),
         "cdp_throughput": (5_710, 17)}                       # LUT4, MULT per extra lane
_DMA_LUT_64 = 5_900


def cbuf_brams(cfg) -> int:
    """DP16KD blocks of the CBUF: per bank, 36-bit-wide columns x 512-deep rows."""
    return cfg.cbuf_banks * ceil_div(cfg.cbuf_bank_width * 8, 36) * \
        ceil_div(cfg.cbuf_bank_depth, 512)


def estimate_area(cfg) -> dict:
    """``{"lut4", "ff", "dp16kd", "mult18", "cbuf_bytes", "macs"}`` of build ``cfg``."""
    lut = _LUT_BASE + _LUT_PER_MAC * cfg.macs
    ff = _FF_BASE + _FF_PER_MAC * cfg.macs
    dsp = cfg.macs + _DSP_OTHER
    for p, (l, d) in _LANE.items():
        extra = max(getattr(cfg, p) - 1, 0)
        lut += extra * l
        dsp += extra * d
    lut += (cfg.dbbif_width / 64 - 1) * _DMA_LUT_64
    return {"lut4": int(round(lut)), "ff": int(round(ff)),
            "dp16kd": cbuf_brams(cfg) + _BRAM_OTHER, "mult18": int(dsp),
            "cbuf_bytes": cfg.cbuf_bytes, "macs": cfg.macs}
