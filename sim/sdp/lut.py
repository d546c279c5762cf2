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

The RAMs and the port are the LUT core shared with the CDP (:class:`sim.lut.LutRam`, pointer
policy ``"wrap"``). The lookup arithmetic that uses these tables (index generation,
interpolation) is part of the SDP datapath model in :mod:`sim.sdp`; the table choice is the
shared :func:`sim.lut.select_table`.

    lut = SdpLut()
    lut.csb_write("S_LUT_ACCESS_CFG", 0x20000)      # WRITE, LE, address 0
    for v in values:
        lut.csb_write("S_LUT_ACCESS_DATA", v)
"""

from __future__ import annotations

from ..lut import ACCESS_READ, ACCESS_WRITE, LE_DEPTH, LO_DEPTH, TABLE_LE, TABLE_LO, LutRam

__all__ = ["SdpLut", "LE_DEPTH", "LO_DEPTH", "TABLE_LE", "TABLE_LO", "ACCESS_READ",
           "ACCESS_WRITE"]


class SdpLut(LutRam):
    """The SDP's LE and LO tables (signed 16-bit entries, int64 arrays) and access pointer
    (10 bits, advancing on every data access and wrapping)."""

    pointer = "wrap"
