"""Rubik (RBK) facts shared by the golden model (:mod:`sim.rubik`) and the RTL
(:mod:`hw.rubik`): the register enums and the limits the program check applies."""

from __future__ import annotations

__all__ = ["CONTRACT", "SPLIT", "MERGE", "MODES", "PRECISIONS", "ELEMENT_BYTES", "RAM_CV",
           "RAM_MC", "MAX_CONTRACT_WRITE", "CONTRACT_WRITE_MAX_SX", "build_precisions"]

CONTRACT, SPLIT, MERGE = 0, 1, 2                #: D_MISC_CFG.RUBIK_MODE (3 is not defined)
MODES = {CONTRACT: "CONTRACT", SPLIT: "SPLIT", MERGE: "MERGE"}
PRECISIONS = {0: "int8", 1: "int16", 2: "fp16"}     #: D_MISC_CFG.IN_PRECISION (3 undefined)
ELEMENT_BYTES = {0: 1, 1: 2, 2: 2}
RAM_CV, RAM_MC = 0, 1                           #: D_DAIN_RAM_TYPE / D_DAOUT_RAM_TYPE
MAX_CONTRACT_WRITE = 8192       #: atoms of one contract-mode output line (13-bit size)
CONTRACT_WRITE_MAX_SX = 8       #: the output-line size limit applies while sx <= this


def build_precisions(cfg) -> set:
    """The IN_PRECISION values build ``cfg`` supports."""
    return {p for p, n in PRECISIONS.items() if n in cfg.data_types}
