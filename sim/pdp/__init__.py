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

from .pdp import NanCounters, pool, pool_fp16, pool_program, round_recip, run_pdp, wrap_signed
from .program import (AVERAGE, MAX, MIN, PdpProgram, PdpProgramError, Split, decode,
                      max_pass_width, out_size, split_passes)

__all__ = ["PdpUnit", "check_flying_cube", "run_pdp", "pool", "pool_fp16", "pool_program",
           "round_recip", "wrap_signed", "NanCounters",
           "PdpProgram", "PdpProgramError", "Split", "decode", "max_pass_width", "out_size",
           "split_passes", "AVERAGE", "MAX", "MIN"]


class PdpUnit(UnitModel):
    """PDP layers: offline through PDP_RDMA, or flying from SDP (``run_flying``)."""

    name = "PDP"
    blocks = ("PDP", "PDP_RDMA")

    def install(self, core):
        self.counters = NanCounters()        # NVDLA's input NaN/Inf slots, across layers

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
                           sram=core.sram if core.cfg.sramif else None,
                           counters=self.counters)

        return Launch(("PDP", "PDP_RDMA"), run, "PDP layer")

    def run_flying(self, core, cube):
        """Pool SDP's output ``cube`` [C (or C padded to a surface), H, W] with the PDP
        consumer group; returns PDP's hardware-written fields. SDP's output cube must be PDP's
        input cube (:func:`check_flying_cube`)."""
        pdp = core.view("PDP")
        check_flying_cube(core.cfg, core.view("SDP"), pdp)
        return run_pdp(core.cfg, pdp, None, core.dbb,
                       sram=core.sram if core.cfg.sramif else None, flying_input=cube,
                       counters=self.counters)


def check_flying_cube(cfg, sdp, pdp):
    """SDP -> PDP: SDP's output (``OUT_PRECISION``, its cube width and height, its channels in
    whole surfaces of that precision's atom) must be the flying PDP layer's input cube; else
    :class:`PdpProgramError` naming the PDP field and the rule (the RTL's PDP ends such a
    layer without writing, taking and dropping SDP's output)."""
    out_prec = sdp.D_DATA_FORMAT.OUT_PRECISION
    in_prec = pdp.D_DATA_FORMAT.INPUT_DATA
    if out_prec != in_prec:
        raise PdpProgramError(
            f"PDP.D_DATA_FORMAT.INPUT_DATA={in_prec}: must equal "
            f"SDP.D_DATA_FORMAT.OUT_PRECISION={out_prec} (SDP's output is PDP's input)")
    for what in ("WIDTH", "HEIGHT"):
        s = getattr(sdp, f"D_DATA_CUBE_{what}")[what]
        p = getattr(pdp, f"D_DATA_CUBE_IN_{what}")[f"CUBE_IN_{what}"]
        if s != p:
            raise PdpProgramError(
                f"PDP.D_DATA_CUBE_IN_{what}.CUBE_IN_{what}={p}: must equal "
                f"SDP.D_DATA_CUBE_{what}.{what}={s} (SDP's output cube is PDP's input)")
    group = cfg.memory_atom // (2 if in_prec else 1)
    s = sdp.D_DATA_CUBE_CHANNEL.CHANNEL
    p = pdp.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL
    if s // group != p // group:
        raise PdpProgramError(
            f"PDP.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL={p}: SDP sends "
            f"SDP.D_DATA_CUBE_CHANNEL.CHANNEL={s} + 1 channels, {s // group + 1} surface(s) of "
            f"{group}; PDP's input must have as many surfaces ({p // group + 1})")
