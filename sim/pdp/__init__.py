"""Golden model of the PDP unit (spec: PDP, PDP_RDMA): max / min / average pooling.

:mod:`.program` decodes and checks the PDP and PDP_RDMA register groups (the message of a
rejected program names the field and the rule), :mod:`.pdp` pools whole cubes with numpy and
reads/writes them in memory. :class:`PdpUnit` is the unit the golden core registers as
``"PDP"``: an offline layer (``D_OPERATION_MODE_CFG.FLYING_MODE=OFF_FLYING``) starts when PDP
and PDP_RDMA are enabled; a flying one (ON_FLYING) waits for the SDP layer whose output goes
to PDP, which calls :meth:`PdpUnit.run_flying` with its output cube.
:mod:`sim.pdp.random_programs` writes constrained-random PDP layers as NVDLA trace
directories (import it by its full name: it needs the trace runner).
"""

from __future__ import annotations

from sim.core import Launch, UnitModel, Wait

from .pdp import pool, pool_program, round_recip, run_pdp, wrap_signed
from .program import (AVERAGE, MAX, MIN, PdpProgram, PdpProgramError, Split, decode,
                      max_pass_width, out_size, split_passes)

__all__ = ["PdpUnit", "run_pdp", "pool", "pool_program", "round_recip", "wrap_signed",
           "PdpProgram", "PdpProgramError", "Split", "decode", "max_pass_width", "out_size",
           "split_passes", "AVERAGE", "MAX", "MIN"]


class PdpUnit(UnitModel):
    """PDP layers: offline through PDP_RDMA, or flying from SDP (``run_flying``)."""

    name = "PDP"
    blocks = ("PDP", "PDP_RDMA")

    def plan(self, core):
        if not core.has_block("PDP") or not core.enabled("PDP"):
            return None
        pdp = core.view("PDP")
        if pdp.D_OPERATION_MODE_CFG.FLYING_MODE == 0:
            return Wait(f"group {core.consumer('PDP')}: D_OPERATION_MODE_CFG.FLYING_MODE="
                        "ON_FLYING takes its input from SDP; it runs with an SDP layer whose "
                        "D_FEATURE_MODE_CFG.OUTPUT_DST=PDP")

        def run():
            return run_pdp(core.cfg, core.view("PDP"), core.view("PDP_RDMA"), core.dbb,
                           sram=core.sram if core.cfg.sramif else None)

        return Launch(("PDP", "PDP_RDMA"), run, "PDP layer")

    def run_flying(self, core, cube):
        """Pool SDP's output ``cube`` [C (or C padded to a surface), H, W] with the PDP
        consumer group; returns PDP's hardware-written fields."""
        sdp = core.view("SDP")
        out_prec = sdp.D_DATA_FORMAT.OUT_PRECISION
        pdp = core.view("PDP")
        if out_prec != pdp.D_DATA_FORMAT.INPUT_DATA:
            raise PdpProgramError(
                f"PDP.D_DATA_FORMAT.INPUT_DATA={pdp.D_DATA_FORMAT.INPUT_DATA}: must equal "
                f"SDP.D_DATA_FORMAT.OUT_PRECISION={out_prec} (SDP's output is PDP's input)")
        return run_pdp(core.cfg, pdp, None, core.dbb,
                       sram=core.sram if core.cfg.sramif else None, flying_input=cube)
