"""Golden model of the Rubik unit (RBK, the data reshape engine; spec: "Data Reshape
Engine" and the RUBIK register table). Rubik only moves bytes: elements are 1 (int8) or 2
(int16, fp16) bytes as ``D_MISC_CFG.IN_PRECISION`` says, and a feature atom is the build's
memory atom ``A`` (32 bytes on nv_large / nv_full, as NVDLA v1) holding ``A / b`` channels.
``D_MISC_CFG.RUBIK_MODE`` picks one of three layouts (W, H = ``D_DATAIN_SIZE_0`` + 1; all
addresses and strides in bytes; ``in`` = the ``D_DAIN_*`` registers, ``out`` = ``D_DAOUT_*``):

- CONTRACT (0): the second hardware layer of a deconvolution. The input is the channel
  extended cube a convolution wrote: for each of the ``sx * sy`` deconvolution steps
  (``D_DECONV_STRIDE`` + 1; step ``g = dy * sx + dx``) a feature cube of ``S`` surfaces
  (``S = ceil((DATAOUT_CHANNEL + 1) / (A / b))``), W x H, at ``in + g * CONTRACT_STRIDE_0``
  with the input line and surface strides. Atom (s, h, w) of step (dx, dy) becomes output
  pixel ``(w * sx + dx, h * sy + dy)`` of surface s: the output is a feature cube of
  ``W * sx`` x ``H * sy`` x ``DATAOUT_CHANNEL + 1`` with the output line and surface strides
  (``CONTRACT_STRIDE_1`` = ``sy`` output lines, checked). Whole atoms move, channel padding
  included.
- SPLIT (1): a feature cube of ``DATAIN_CHANNEL + 1`` channels -> one plane per channel:
  element (c, h, w) goes to ``out + c * DAOUT_PLANAR_STRIDE + h * DAOUT_LINE_STRIDE + w * b``.
  Each plane line is written in whole atoms: its ``W * b`` bytes, then zeros up to the next
  atom boundary (as NVDLA's C model: the write DMA moves whole atoms).
- MERGE (2): the inverse: planes at ``in + c * DAIN_PLANAR_STRIDE + h * DAIN_LINE_STRIDE``
  -> a feature cube with the output line and surface strides; the channel padding of its
  last surface is written as zeros.

A layer starts when the RBK consumer group is enabled and, when done, writes
``D_PERF_READ_STALL`` / ``D_PERF_WRITE_STALL`` (0 here: the golden model's memories never
stall) and raises GLB ``RUBIK_DONE_STATUS<group>`` (S_INTR_STATUS bits 8 and 9). A program
breaking the rules of :mod:`.program` raises :class:`RubikProgramError` naming the field.
:mod:`sim.rubik.random_programs` writes constrained-random layers as trace directories.
"""

from __future__ import annotations

from sim.core import Launch, UnitModel

from .program import (CONTRACT, MERGE, MODES, PRECISIONS, SPLIT, RubikProgram,
                      RubikProgramError, decode)
from .rubik import contract_atoms, merge_planes, run_program, run_rubik, split_atoms

__all__ = ["RubikUnit", "RubikProgram", "RubikProgramError", "decode", "run_rubik",
           "run_program", "contract_atoms", "split_atoms", "merge_planes", "CONTRACT",
           "SPLIT", "MERGE", "MODES", "PRECISIONS"]


class RubikUnit(UnitModel):
    """Rubik layers: one layer per enabled RBK consumer group."""

    name = "RUBIK"
    blocks = ("RBK",)

    def plan(self, core):
        if not core.has_block("RBK") or not core.enabled("RBK"):
            return None

        def run():
            return run_rubik(core.cfg, core.view("RBK"), core.dbb,
                             core.sram if core.cfg.sramif else None)

        return Launch(("RBK",), run, "Rubik layer")
