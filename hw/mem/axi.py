"""AXI4 port sets of the DBBIF and SRAMIF (spec: System interconnect: DBBIF; SRAMIF).

NVDLA names every AXI signal with its channel in the prefix
(``nvdla_core2dbb_ar_arvalid``), so the ports are flat members named exactly as the spec
lists them.
"""

from __future__ import annotations

from amaranth.lib.wiring import In, Out

__all__ = ["axi_members", "AXI_ID_WIDTH"]

AXI_ID_WIDTH = 8


def axi_members(prefix: str, addr_width: int, data_width: int) -> dict:
    """Flat wiring members of an AXI4 master port set named ``{prefix}_{ch}_{ch}{sig}``."""
    spec = {
        "aw": {"awvalid": Out(1), "awready": In(1), "awlen": Out(4), "awaddr": Out(addr_width),
               "awid": Out(AXI_ID_WIDTH)},
        "w": {"wvalid": Out(1), "wready": In(1), "wdata": Out(data_width), "wlast": Out(1),
              "wstrb": Out(data_width // 8)},
        "b": {"bvalid": In(1), "bready": Out(1), "bid": In(AXI_ID_WIDTH)},
        "ar": {"arvalid": Out(1), "arready": In(1), "arlen": Out(4), "araddr": Out(addr_width),
               "arid": Out(AXI_ID_WIDTH)},
        "r": {"rvalid": In(1), "rready": Out(1), "rlast": In(1), "rdata": In(data_width),
              "rid": In(AXI_ID_WIDTH)},
    }
    return {f"{prefix}_{ch}_{sig}": member
            for ch, sigs in spec.items() for sig, member in sigs.items()}
