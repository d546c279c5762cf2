"""The LE/LO lookup-table core shared by the SDP and CDP golden models.

Both units end their datapath in the same two-table LUT:

* LE ("linear or exponent"): 65 signed 16-bit entries, indexed linearly or by log2 of the
  input's distance from LE_START;
* LO ("linear only"): 257 signed 16-bit entries, always indexed linearly.

:class:`LutRam` holds the two RAMs and their CSB access port (``S_LUT_ACCESS_CFG`` sets the
pointer LUT_ADDR, the table LUT_TABLE_ID (LE=0, LO=1) and the direction LUT_ACCESS_TYPE (READ=0,
WRITE=1); each ``S_LUT_ACCESS_DATA`` access transfers one entry and moves the pointer on). The
units differ in how the pointer moves, which is the ``pointer`` policy:

* ``"wrap"`` (SDP): every data access advances the 10-bit pointer, which wraps; a write stores
  only in WRITE direction, addresses past the end of a table read 0 and ignore writes;
* ``"hold"`` (CDP): a data write stores and advances only in WRITE direction, a data read
  returns the entry and advances only in READ direction; the pointer stops at the table's last
  entry (later accesses keep hitting it). A read in WRITE direction returns 0.

:func:`select_table` is the shared choice between the two tables' results (priorities and the
hit categories the units count). The index arithmetic differs per unit (SDP: 32-bit input,
35-bit fractions; CDP: 38-bit square sums, 16-bit fractions) and lives with each unit, on
the shared leading-one detector :func:`bit_length`. :class:`LutParams` is the configuration
both units' ``S_LUT_*`` registers hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LutParams", "LutRam", "select_table", "bit_length", "LE_DEPTH", "LO_DEPTH",
           "TABLE_LE", "TABLE_LO", "ACCESS_READ", "ACCESS_WRITE", "POINTER_POLICIES"]

LE_DEPTH = 65
LO_DEPTH = 257
TABLE_LE, TABLE_LO = 0, 1
ACCESS_READ, ACCESS_WRITE = 0, 1
POINTER_POLICIES = ("wrap", "hold")

_ADDR_BITS = 10                      # S_LUT_ACCESS_CFG.LUT_ADDR [9:0]
_TABLE_BIT = 16                      # S_LUT_ACCESS_CFG.LUT_TABLE_ID
_TYPE_BIT = 17                       # S_LUT_ACCESS_CFG.LUT_ACCESS_TYPE


@dataclass(frozen=True)
class LutParams:
    """The LUT configuration of a unit's single-group ``S_LUT_*`` registers (the SDP's and the
    CDP's have the same fields; signed ones sign-extended). :meth:`from_view` reads the SDP's
    layout, with one 32-bit register per table bound; :class:`sim.cdp.program.CdpLutParams`
    reads the CDP's 38-bit ``_LOW`` / ``_HIGH`` pairs (:meth:`_bound`)."""
    le_linear: bool = False            #: S_LUT_CFG.LUT_LE_FUNCTION (EXPONENT=0, LINEAR=1)
    uflow_priority_lo: bool = False    #: which table wins when both underflow (LE=0, LO=1)
    oflow_priority_lo: bool = False    #: ... both overflow
    hybrid_priority_lo: bool = False   #: ... both hit, or one under- and one overflows
    le_index_offset: int = 0           #: signed 8 bits (exponent mode)
    le_index_select: int = 0           #: signed 8 bits (linear mode; negative shifts left)
    lo_index_select: int = 0           #: signed 8 bits
    le_start: int = 0                  #: signed 32 bits (SDP) or 38 bits (CDP)
    le_end: int = 0
    lo_start: int = 0
    lo_end: int = 0
    le_uflow_scale: int = 0            #: signed 16 bits
    le_oflow_scale: int = 0
    lo_uflow_scale: int = 0
    lo_oflow_scale: int = 0
    le_uflow_shift: int = 0            #: signed 5 bits (negative shifts left)
    le_oflow_shift: int = 0
    lo_uflow_shift: int = 0
    lo_oflow_shift: int = 0

    @staticmethod
    def _bound(view, name: str) -> int:
        """Table bound ``name`` (``LE_START``, ...): the SDP's signed 32-bit register."""
        from .sdp.sdp import sign_extend
        return sign_extend(view[f"S_LUT_{name}"][f"LUT_{name}"], 32)

    @classmethod
    def from_view(cls, view) -> "LutParams":
        """The parameters in ``view``, a unit's register view (``S_LUT_*`` registers)."""
        from .sdp.sdp import sign_extend          # sim.sdp.sdp imports this module
        cfg, info = view.S_LUT_CFG, view.S_LUT_INFO
        les, los = view.S_LUT_LE_SLOPE_SCALE, view.S_LUT_LO_SLOPE_SCALE
        lesh, losh = view.S_LUT_LE_SLOPE_SHIFT, view.S_LUT_LO_SLOPE_SHIFT
        return cls(
            le_linear=bool(cfg.LUT_LE_FUNCTION),
            uflow_priority_lo=bool(cfg.LUT_UFLOW_PRIORITY),
            oflow_priority_lo=bool(cfg.LUT_OFLOW_PRIORITY),
            hybrid_priority_lo=bool(cfg.LUT_HYBRID_PRIORITY),
            le_index_offset=sign_extend(info.LUT_LE_INDEX_OFFSET, 8),
            le_index_select=sign_extend(info.LUT_LE_INDEX_SELECT, 8),
            lo_index_select=sign_extend(info.LUT_LO_INDEX_SELECT, 8),
            le_start=cls._bound(view, "LE_START"), le_end=cls._bound(view, "LE_END"),
            lo_start=cls._bound(view, "LO_START"), lo_end=cls._bound(view, "LO_END"),
            le_uflow_scale=sign_extend(les.LUT_LE_SLOPE_UFLOW_SCALE, 16),
            le_oflow_scale=sign_extend(les.LUT_LE_SLOPE_OFLOW_SCALE, 16),
            lo_uflow_scale=sign_extend(los.LUT_LO_SLOPE_UFLOW_SCALE, 16),
            lo_oflow_scale=sign_extend(los.LUT_LO_SLOPE_OFLOW_SCALE, 16),
            le_uflow_shift=sign_extend(lesh.LUT_LE_SLOPE_UFLOW_SHIFT, 5),
            le_oflow_shift=sign_extend(lesh.LUT_LE_SLOPE_OFLOW_SHIFT, 5),
            lo_uflow_shift=sign_extend(losh.LUT_LO_SLOPE_UFLOW_SHIFT, 5),
            lo_oflow_shift=sign_extend(losh.LUT_LO_SLOPE_OFLOW_SHIFT, 5),
        )


def bit_length(v):
    """Position of the highest set bit + 1 of non-negative int64 values (0 for 0): the
    leading-one detector of both units' exponent index."""
    v = np.asarray(v, dtype=np.int64)
    n = np.zeros(v.shape, dtype=np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        big = (v >> step) > 0
        n = np.where(big, n + step, n)
        v = np.where(big, v >> step, v)
    return n + (v > 0)


def as_int16(word: int) -> int:
    word &= 0xFFFF
    return word - 0x10000 if word & 0x8000 else word


class LutRam:
    """The LE and LO tables (signed 16-bit entries, int64 arrays) and the access pointer."""

    pointer = "wrap"                 #: pointer policy (see the module docstring)

    def __init__(self, pointer: str | None = None):
        if pointer is not None:
            if pointer not in POINTER_POLICIES:
                raise ValueError(f"pointer policy {pointer!r}: one of {POINTER_POLICIES}")
            self.pointer = pointer
        self.le = np.zeros(LE_DEPTH, dtype=np.int64)
        self.lo = np.zeros(LO_DEPTH, dtype=np.int64)
        self.addr = 0
        self.table_id = TABLE_LE
        self.access_type = ACCESS_READ

    def table(self, table_id: int) -> np.ndarray:
        return self.lo if table_id == TABLE_LO else self.le

    def _advance(self):
        if self.pointer == "wrap":
            self.addr = (self.addr + 1) & ((1 << _ADDR_BITS) - 1)
        elif self.addr < self.table(self.table_id).size - 1:
            self.addr += 1

    # -- CSB side ------------------------------------------------------------------------
    def write_access_cfg(self, word: int) -> None:
        """A CSB write of ``S_LUT_ACCESS_CFG``."""
        self.addr = word & ((1 << _ADDR_BITS) - 1)
        self.table_id = (word >> _TABLE_BIT) & 1
        self.access_type = (word >> _TYPE_BIT) & 1

    def read_access_cfg(self) -> int:
        """What a CSB read of ``S_LUT_ACCESS_CFG`` returns (the current pointer)."""
        return self.addr | (self.table_id << _TABLE_BIT) | (self.access_type << _TYPE_BIT)

    def write_access_data(self, word: int) -> None:
        """A CSB write of ``S_LUT_ACCESS_DATA``."""
        if self.access_type == ACCESS_WRITE:
            t = self.table(self.table_id)
            if self.addr < t.size:
                t[self.addr] = as_int16(word)
        elif self.pointer == "hold":
            return
        self._advance()

    def read_access_data(self) -> int:
        """A CSB read of ``S_LUT_ACCESS_DATA``: the 16-bit entry under the pointer."""
        if self.pointer == "hold" and self.access_type == ACCESS_WRITE:
            return 0
        t = self.table(self.table_id)
        value = int(t[self.addr]) & 0xFFFF if self.addr < t.size else 0
        self._advance()
        return value

    def csb_write(self, reg_name: str, word: int) -> bool:
        """Route a CSB write of a unit register by name (``S_LUT_ACCESS_CFG`` or
        ``S_LUT_ACCESS_DATA``, an optional ``_0`` suffix allowed); True if it was one."""
        if reg_name.endswith("_0"):
            reg_name = reg_name[:-2]
        if reg_name == "S_LUT_ACCESS_CFG":
            self.write_access_cfg(word)
        elif reg_name == "S_LUT_ACCESS_DATA":
            self.write_access_data(word)
        else:
            return False
        return True

    def csb_read(self, reg_name: str):
        """Route a CSB read by name; None if it is not a LUT access register."""
        if reg_name.endswith("_0"):
            reg_name = reg_name[:-2]
        if reg_name == "S_LUT_ACCESS_CFG":
            return self.read_access_cfg()
        if reg_name == "S_LUT_ACCESS_DATA":
            return self.read_access_data()
        return None

    def install(self, core, block: str) -> None:
        """Route ``block``'s LUT access registers of a :class:`sim.core.GoldenCore` here."""
        for reg in ("S_LUT_ACCESS_CFG", "S_LUT_ACCESS_DATA"):
            core.add_register_hook(block, reg,
                                   on_write=lambda word, r=reg: self.csb_write(r, word),
                                   on_read=lambda r=reg: self.csb_read(r))

    # -- direct access (tests, other models) ---------------------------------------------
    def load(self, le=None, lo=None) -> None:
        """Fill the start of a table directly; values are taken as signed 16-bit."""
        for t, values in ((self.le, le), (self.lo, lo)):
            if values is not None:
                if len(values) > t.size:
                    raise ValueError(f"{len(values)} values for a {t.size}-entry table")
                t[:len(values)] = [as_int16(int(v)) for v in values]

    def copy(self):
        new = type(self)()
        new.pointer = self.pointer
        new.le[:], new.lo[:] = self.le, self.lo
        new.addr, new.table_id, new.access_type = self.addr, self.table_id, self.access_type
        return new


def select_table(le_under, le_over, lo_under, lo_over, uflow_lo: bool, oflow_lo: bool,
                 hybrid_lo: bool):
    """Which table's result each element takes, and the hit category it counts in.

    Both tables underflow -> UFLOW_PRIORITY; both overflow -> OFLOW_PRIORITY; exactly one hits
    -> that one; both hit, or both miss on different sides -> HYBRID_PRIORITY (a priority of 1
    picks LO). Returns ``(use_lo, category)`` with category codes ``CAT_*``.
    """
    le_under, le_over = np.asarray(le_under, bool), np.asarray(le_over, bool)
    lo_under, lo_over = np.asarray(lo_under, bool), np.asarray(lo_over, bool)
    le_hit, lo_hit = ~(le_under | le_over), ~(lo_under | lo_over)
    both_u, both_o = le_under & lo_under, le_over & lo_over
    only_le = ~both_u & ~both_o & le_hit & ~lo_hit
    only_lo = ~both_u & ~both_o & lo_hit & ~le_hit
    category = np.select([both_u, both_o, only_le, only_lo],
                         [CAT_UFLOW, CAT_OFLOW, CAT_LE_HIT, CAT_LO_HIT], default=CAT_HYBRID)
    use_lo = np.select([both_u, both_o, only_le, only_lo],
                       [bool(uflow_lo), bool(oflow_lo), False, True], default=bool(hybrid_lo))
    return use_lo.astype(bool), category


#: hit categories of :func:`select_table`
CAT_UFLOW, CAT_OFLOW, CAT_LE_HIT, CAT_LO_HIT, CAT_HYBRID = range(5)
__all__ += ["CAT_UFLOW", "CAT_OFLOW", "CAT_LE_HIT", "CAT_LO_HIT", "CAT_HYBRID", "as_int16"]
