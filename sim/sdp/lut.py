"""The SDP lookup-table RAMs and their CSB access port.

The Y (element-wise) stage of the SDP ends in a lookup table made of two RAMs of signed
16-bit entries:

* LE ("linear or exponent"): 65 entries, indexed linearly or by log2 of the input;
* LO ("linear only"): 257 entries, always indexed linearly.

Software fills and reads them through two single-group SDP registers. A write of
``S_LUT_ACCESS_CFG`` sets the access pointer (LUT_ADDR), the table (LUT_TABLE_ID: LE=0, LO=1)
and the direction (LUT_ACCESS_TYPE: READ=0, WRITE=1). Every access to ``S_LUT_ACCESS_DATA``
then transfers one entry and advances the pointer by one: a data write stores LUT_DATA [15:0]
only when the direction is WRITE (the pointer advances either way), and a data read returns the
entry under the pointer. Addresses past the end of a table read as 0 and ignore writes; the
pointer is 10 bits wide and wraps.

The lookup arithmetic that uses these tables (index generation, table choice, interpolation)
is part of the SDP datapath model in :mod:`sim.sdp`.

    lut = SdpLut()
    lut.csb_write("S_LUT_ACCESS_CFG", 0x20000)      # WRITE, LE, address 0
    for v in values:
        lut.csb_write("S_LUT_ACCESS_DATA", v)
"""

from __future__ import annotations

import numpy as np

__all__ = ["SdpLut", "LE_DEPTH", "LO_DEPTH", "TABLE_LE", "TABLE_LO", "ACCESS_READ",
           "ACCESS_WRITE"]

LE_DEPTH = 65
LO_DEPTH = 257
TABLE_LE, TABLE_LO = 0, 1
ACCESS_READ, ACCESS_WRITE = 0, 1

_ADDR_BITS = 10                      # S_LUT_ACCESS_CFG.LUT_ADDR [9:0]
_TABLE_BIT = 16                      # S_LUT_ACCESS_CFG.LUT_TABLE_ID
_TYPE_BIT = 17                       # S_LUT_ACCESS_CFG.LUT_ACCESS_TYPE


def _as_int16(word: int) -> int:
    word &= 0xFFFF
    return word - 0x10000 if word & 0x8000 else word


class SdpLut:
    """The LE and LO tables (signed 16-bit entries, int64 arrays) and the access pointer."""

    def __init__(self):
        self.le = np.zeros(LE_DEPTH, dtype=np.int64)
        self.lo = np.zeros(LO_DEPTH, dtype=np.int64)
        self.addr = 0
        self.table_id = TABLE_LE
        self.access_type = ACCESS_READ

    def table(self, table_id: int) -> np.ndarray:
        return self.lo if table_id == TABLE_LO else self.le

    def _advance(self):
        self.addr = (self.addr + 1) & ((1 << _ADDR_BITS) - 1)

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
                t[self.addr] = _as_int16(word)
        self._advance()

    def read_access_data(self) -> int:
        """A CSB read of ``S_LUT_ACCESS_DATA``: the 16-bit entry under the pointer."""
        t = self.table(self.table_id)
        value = int(t[self.addr]) & 0xFFFF if self.addr < t.size else 0
        self._advance()
        return value

    def csb_write(self, reg_name: str, word: int) -> bool:
        """Route a CSB write of an SDP register by name (``S_LUT_ACCESS_CFG`` or
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

    # -- direct access (tests, other models) ---------------------------------------------
    def load(self, le=None, lo=None) -> None:
        """Fill the start of a table directly; values are taken as signed 16-bit."""
        for t, values in ((self.le, le), (self.lo, lo)):
            if values is not None:
                if len(values) > t.size:
                    raise ValueError(f"{len(values)} values for a {t.size}-entry table")
                t[:len(values)] = [_as_int16(int(v)) for v in values]

    def copy(self) -> "SdpLut":
        new = SdpLut()
        new.le[:], new.lo[:] = self.le, self.lo
        new.addr, new.table_id, new.access_type = self.addr, self.table_id, self.access_type
        return new
