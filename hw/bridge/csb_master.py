"""The master side of NVDLA's CSB (spec: Configuration space bus), named as the core names it.

Bridges drive ``csb2nvdla_*`` and receive ``nvdla2csb_*``: the members below are those of
:class:`hw.core.NvdlaCore` with the flow flipped, so :func:`connect_csb` wires a bridge to the
core member by member.
"""

from __future__ import annotations

from amaranth.lib.wiring import In, Out

__all__ = ["csb_master_members", "connect_csb", "CSB_PORTS"]

CSB_PORTS = ("csb2nvdla_valid", "csb2nvdla_ready", "csb2nvdla_addr", "csb2nvdla_wdat",
             "csb2nvdla_write", "csb2nvdla_nposted", "nvdla2csb_valid", "nvdla2csb_data",
             "nvdla2csb_wr_complete")


def csb_master_members() -> dict:
    return {
        "csb2nvdla_valid": Out(1), "csb2nvdla_ready": In(1), "csb2nvdla_addr": Out(16),
        "csb2nvdla_wdat": Out(32), "csb2nvdla_write": Out(1), "csb2nvdla_nposted": Out(1),
        "nvdla2csb_valid": In(1), "nvdla2csb_data": In(32), "nvdla2csb_wr_complete": In(1),
    }


def connect_csb(m, master, core):
    """Drive ``core``'s CSB slave ports from ``master``'s CSB master ports (combinational)."""
    for name in CSB_PORTS:
        if name == "csb2nvdla_ready" or name.startswith("nvdla2csb"):
            m.d.comb += getattr(master, name).eq(getattr(core, name))
        else:
            m.d.comb += getattr(core, name).eq(getattr(master, name))
