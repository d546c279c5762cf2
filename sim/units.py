"""The unit registry of the golden core: which layers it can launch, and how.

:func:`default_units` returns ``{name: UnitModel}`` for the unit models that exist in
``sim/``. A unit whose model module is missing is simply not registered: its enabled groups
stay pending (``GoldenCore.pending()`` says so) and the trace runner reports a failure
instead of hanging.

Layers and the blocks that must all be enabled for them to start (their consumer groups):

- SDP offline (``D_FEATURE_MODE_CFG.FLYING_MODE=OFF``): SDP + SDP_RDMA; with
  ``OUTPUT_DST=PDP`` also PDP, whose model then takes the SDP output on the fly.
- SDP flying (input from CACC): launched by the convolution pipeline (``sim/conv``: CDMA,
  CSC, CMAC_A, CMAC_B, CACC, SDP and, when its group is enabled, SDP_RDMA).
- PDP offline (``D_OPERATION_MODE_CFG.FLYING_MODE=OFF_FLYING``): PDP + PDP_RDMA
  (``sim/pdp``, builds with ``cfg.pdp``). With ON_FLYING the PDP unit's plan waits: the layer
  runs inside the SDP layer that sends its output to PDP (see below).
- CDP (``sim/cdp``, builds with ``cfg.cdp``): CDP + CDP_RDMA, one layer when both consumer
  groups are enabled. The unit owns the CDP LUT RAMs (``core.cdp_lut``, a
  :class:`sim.cdp.CdpLut` on the LUT core of ``sim/lut.py`` shared with the SDP) behind CDP's
  ``S_LUT_ACCESS_CFG`` / ``S_LUT_ACCESS_DATA``, and writes back D_OUT_SATURATION, the LUT
  counters D_PERF_LUT_UFLOW/OFLOW/HYBRID/LE_HIT/LO_HIT and the NaN/Inf counters on every layer,
  as NVDLA's C model does.
- BDMA (``sim/bdma.py``, builds with ``cfg.bdma``): not ping-pong; a ``CFG_LAUNCH0/1`` write
  makes the queued operations a batch, which runs as one step of block BDMA with its group.
- Rubik (``sim/rubik``, builds with ``cfg.rubik``): RBK alone, one layer per enabled consumer
  group (contract, split or merge).

Contracts between the units:

- The PDP model (``sim.pdp.PdpUnit``, registered as ``"PDP"``) provides ``run_flying(core,
  cube) -> {block: {register: {field: value}}}`` for SDP->PDP: ``cube`` is SDP's output
  [C rounded up to whole surfaces, H, W] (SDP streams the channel padding of its last surface
  too; a cube of exactly C channels is padded with zeros). The SDP launch lists PDP among its
  blocks, so PDP completes and raises PDP_DONE with it; PDP's own ``plan`` returns
  :class:`~sim.core.Wait` while PDP is in flying mode.
- The convolution model registered as ``"CONV"`` lists the SDP blocks in its :class:`Launch`
  and calls ``core.units["SDP"].run_layer(core, pdp, flying_input=cube)`` with the CACC
  output.
"""

from __future__ import annotations

import importlib

from .core import Launch, UnitError, UnitModel, Wait

__all__ = ["SdpUnit", "CdpUnit", "default_units", "MODEL_BLOCKS", "missing_models", "ro_fields"]

# Which unit model owns which blocks (for diagnostics and for choosing tests).
MODEL_BLOCKS = {
    "SDP": ("SDP", "SDP_RDMA"),
    "PDP": ("PDP", "PDP_RDMA"),
    "CDP": ("CDP", "CDP_RDMA"),
    "CONV": ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC"),
    "RUBIK": ("RBK",),
    "BDMA": ("BDMA",),
}


def _optional(module):
    """Import ``sim.<module>`` if it exists (a missing model is not an error).

    ``module`` may be a unit package (``"sdp"``, ``"conv"``: ``sim/<unit>/__init__.py``) or a
    dotted module in one (``"sdp.lut"``). Only the absence of ``sim.<module>`` itself or of a
    package on its path counts as missing; a model that exists but fails to import raises.
    """
    name = f"sim.{module}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != "sim" and (name == e.name or name.startswith(f"{e.name}.")):
            return None
        raise


class SdpUnit(UnitModel):
    """SDP layers through ``sim.sdp.run_sdp`` (offline; SDP->PDP fused when PDP exists)."""

    name = "SDP"
    blocks = MODEL_BLOCKS["SDP"]

    def __init__(self, sdp_module, lut_module=None):
        self._sdp = sdp_module
        self._lut = lut_module

    def install(self, core):
        core.sdp_lut = None
        if self._lut is None or not core.cfg.sdp_lut or not core.has_block("SDP"):
            return
        core.sdp_lut = self._lut.SdpLut()
        # The LUT access port: the RAM pointer and data go through the LUT model.
        core.sdp_lut.install(core, "SDP")

    def plan(self, core):
        if not core.enabled("SDP"):
            return None
        g = core.consumer("SDP")
        sdp = core.view("SDP")
        mode = sdp.D_FEATURE_MODE_CFG
        if mode.FLYING_MODE:
            conv = "" if "CONV" in core.units else " (the golden model has no convolution " \
                "pipeline yet)"
            return Wait(f"group {g}: D_FEATURE_MODE_CFG.FLYING_MODE=ON takes its input "
                        f"from CACC; it runs with a convolution layer{conv}")
        blocks = ["SDP", "SDP_RDMA"]
        pdp = None
        if mode.OUTPUT_DST:
            pdp = core.units.get("PDP")
            if pdp is None or not hasattr(pdp, "run_flying"):
                return Wait(f"group {g}: D_FEATURE_MODE_CFG.OUTPUT_DST=PDP needs the PDP "
                            f"golden model, which does not exist yet")
            blocks.append("PDP")

        def run():
            return self.run_layer(core, pdp)

        return Launch(tuple(blocks), run, "SDP layer")

    def run_layer(self, core, pdp=None, flying_input=None):
        """Run the SDP layer of the consumer groups; returns the hardware-written fields
        (with the fused PDP's when ``pdp`` is given). ``flying_input`` is the accumulator
        cube of a fused convolution."""
        res = self._sdp.run_sdp(core.cfg, core.view("SDP_RDMA"), core.view("SDP"), core.dbb,
                                lut=core.sdp_lut, flying_input=flying_input,
                                sram=core.sram if core.cfg.sramif else None)
        written = {b: ro_fields(core.rmap[b], regs)
                   for b, regs in res.status_registers().items()}
        if pdp is not None:
            # SDP streams whole surfaces: the channel padding of the last one goes to PDP too
            written.update(pdp.run_flying(core, res.padded_output))
        return written


class CdpUnit(UnitModel):
    """CDP layers (CDP + CDP_RDMA) through ``sim.cdp.run_cdp``."""

    name = "CDP"
    blocks = MODEL_BLOCKS["CDP"]

    def __init__(self, cdp_module):
        self._cdp = cdp_module

    def install(self, core):
        core.cdp_lut = None
        if not core.has_block("CDP"):
            return
        core.cdp_lut = self._cdp.CdpLut()
        core.cdp_lut.install(core, "CDP")

    def plan(self, core):
        if not core.enabled("CDP") and not core.enabled("CDP_RDMA"):
            return None

        def run():
            res = self._cdp.run_cdp(core.cfg, core.view("CDP_RDMA"), core.view("CDP"),
                                    core.memory, lut=core.cdp_lut)
            return {b: ro_fields(core.rmap[b], regs)
                    for b, regs in res.status_registers().items()}

        return Launch(("CDP", "CDP_RDMA"), run, "CDP layer")


def ro_fields(block, registers):
    """``{register: word}`` of hardware-written registers -> ``{register: {field: value}}`` of
    their ro fields (what the hardware stores into the finished group)."""
    out = {}
    for name, word in registers.items():
        reg = block[name]
        fields = {f.name: (int(word) & f.mask) >> f.lsb for f in reg.fields if f.access == "ro"}
        if not fields:
            raise UnitError(f"model returned {block.name}.{name}, which has no hardware-written "
                            f"(ro) field")
        out[name] = fields
    return out


def default_units(cfg) -> dict:
    """``{name: UnitModel}`` for the unit models present in ``sim/``."""
    units = {}
    sdp = _optional("sdp")
    if sdp is not None and hasattr(sdp, "run_sdp"):
        units["SDP"] = SdpUnit(sdp, _optional("sdp.lut"))
    conv = _optional("conv")
    if conv is not None and hasattr(conv, "ConvUnit"):
        units["CONV"] = conv.ConvUnit()
    cdp = _optional("cdp")
    if cdp is not None and hasattr(cdp, "run_cdp") and cfg.cdp:
        units["CDP"] = CdpUnit(cdp)
    pdp = _optional("pdp")
    if pdp is not None and hasattr(pdp, "PdpUnit") and cfg.pdp:
        units["PDP"] = pdp.PdpUnit()
    bdma = _optional("bdma")
    if bdma is not None and cfg.bdma:
        units["BDMA"] = bdma.BdmaUnit()
    rubik = _optional("rubik")
    if rubik is not None and hasattr(rubik, "RubikUnit") and cfg.rubik:
        units["RUBIK"] = rubik.RubikUnit()
    return units


def missing_models(blocks, units) -> list:
    """Unit models (MODEL_BLOCKS names) needed for ``blocks`` but absent from ``units``."""
    need = {m for m, bs in MODEL_BLOCKS.items() for b in blocks if b in bs}
    have = {n for n in units}
    return sorted(need - have)
