"""ZynqCore: the core packaged for a Zynq block design (Vivado IP integrator, module reference).

Ports, named so Vivado infers two AXI interfaces, a clock, a reset and an interrupt:

* ``aclk``, ``aresetn`` (active-low, synchronous);
* ``s_axi_*``: AXI4-Lite slave, the CSB through :class:`hw.bridge.AxiLiteCsbBridge`
  (address window 256 KiB = CSB's 16-bit word space; DECERR/SLVERR as documented there);
* ``m_axi_*``: AXI4 master, the DBBIF with the AXI4 signals NVDLA leaves implicit made
  explicit (``awsize`` = bus width, ``awburst`` = INCR, ``awcache`` = 0b0011 (bufferable,
  modifiable), ``awprot`` = 0, lengths zero-extended to 8 bits; responses ``bresp``/``rresp``
  are accepted and ignored, as NVDLA's DBBIF does);
* ``irq``: the core's interrupt (level, active high) for ``IRQ_F2P``.

:func:`zynq_bd_tcl` writes the Tcl that builds the block design: a processing_system7 with
M_AXI_GP0 -> ``s_axi`` and ``m_axi`` -> S_AXI_HP0 through AXI interconnects, FCLK_CLK0 as
``aclk``, the PS reset, ``irq`` on IRQ_F2P, then wrapper, synthesis, implementation and a
bitstream.
"""

from __future__ import annotations

from amaranth.hdl import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..bridge import AxiLiteCsbBridge, connect_csb
from ..bridge.axil_csb import axil_members, csb_decode

__all__ = ["ZynqCore", "zynq_bd_tcl", "m_axi_members"]


def m_axi_members(addr_width: int, data_width: int, id_width: int = 8) -> dict:
    """AXI4 master members ``m_axi_*``."""
    members = {}
    for ch in ("aw", "ar"):
        members.update({f"m_axi_{ch}id": Out(id_width), f"m_axi_{ch}addr": Out(addr_width),
                        f"m_axi_{ch}len": Out(8), f"m_axi_{ch}size": Out(3),
                        f"m_axi_{ch}burst": Out(2), f"m_axi_{ch}lock": Out(1),
                        f"m_axi_{ch}cache": Out(4), f"m_axi_{ch}prot": Out(3),
                        f"m_axi_{ch}qos": Out(4), f"m_axi_{ch}valid": Out(1),
                        f"m_axi_{ch}ready": In(1)})
    members.update({
        "m_axi_wdata": Out(data_width), "m_axi_wstrb": Out(data_width // 8),
        "m_axi_wlast": Out(1), "m_axi_wvalid": Out(1), "m_axi_wready": In(1),
        "m_axi_bid": In(id_width), "m_axi_bresp": In(2), "m_axi_bvalid": In(1),
        "m_axi_bready": Out(1),
        "m_axi_rid": In(id_width), "m_axi_rdata": In(data_width), "m_axi_rresp": In(2),
        "m_axi_rlast": In(1), "m_axi_rvalid": In(1), "m_axi_rready": Out(1),
    })
    return members


class ZynqCore(wiring.Component):
    def __init__(self, cfg):
        self._cfg = cfg
        if cfg.sramif:
            raise ValueError(f"{cfg.name}: ZynqCore exports the DBBIF only; build without "
                             "sramif")
        members = {"aclk": In(1), "aresetn": In(1), "irq": Out(1)}
        members.update(axil_members("s_axi", 18))
        members.update(m_axi_members(cfg.address_width, cfg.dbbif_width))
        super().__init__(members)

    def elaborate(self, platform):
        from arch.registers import register_map
        from ..core import NvdlaCore
        m = Module()
        cfg = self._cfg
        m.domains.sync = cd = ClockDomain("sync")
        m.d.comb += [cd.clk.eq(self.aclk), cd.rst.eq(~self.aresetn)]
        m.submodules.core = core = NvdlaCore(cfg)
        m.submodules.bridge = bridge = AxiLiteCsbBridge(csb_decode(register_map(cfg)), 18)
        connect_csb(m, bridge, core)
        m.d.comb += [bridge.nvdla2core_interrupt.eq(core.nvdla2core_interrupt),
                     self.irq.eq(bridge.irq)]
        for name, member in axil_members("s_axi", 18).items():
            if member.flow == In:
                m.d.comb += getattr(bridge, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(bridge, name))
        size = (cfg.dbbif_width // 8).bit_length() - 1
        d = "nvdla_core2dbb"
        for ch in ("aw", "ar"):
            m.d.comb += [
                getattr(self, f"m_axi_{ch}id").eq(getattr(core, f"{d}_{ch}_{ch}id")),
                getattr(self, f"m_axi_{ch}addr").eq(getattr(core, f"{d}_{ch}_{ch}addr")),
                getattr(self, f"m_axi_{ch}len").eq(getattr(core, f"{d}_{ch}_{ch}len")),
                getattr(self, f"m_axi_{ch}size").eq(size),
                getattr(self, f"m_axi_{ch}burst").eq(1),
                getattr(self, f"m_axi_{ch}cache").eq(0b0011),
                getattr(self, f"m_axi_{ch}valid").eq(getattr(core, f"{d}_{ch}_{ch}valid")),
                getattr(core, f"{d}_{ch}_{ch}ready").eq(getattr(self, f"m_axi_{ch}ready")),
            ]
        m.d.comb += [
            self.m_axi_wdata.eq(core.nvdla_core2dbb_w_wdata),
            self.m_axi_wstrb.eq(core.nvdla_core2dbb_w_wstrb),
            self.m_axi_wlast.eq(core.nvdla_core2dbb_w_wlast),
            self.m_axi_wvalid.eq(core.nvdla_core2dbb_w_wvalid),
            core.nvdla_core2dbb_w_wready.eq(self.m_axi_wready),
            core.nvdla_core2dbb_b_bid.eq(self.m_axi_bid),
            core.nvdla_core2dbb_b_bvalid.eq(self.m_axi_bvalid),
            self.m_axi_bready.eq(core.nvdla_core2dbb_b_bready),
            core.nvdla_core2dbb_r_rid.eq(self.m_axi_rid),
            core.nvdla_core2dbb_r_rdata.eq(self.m_axi_rdata),
            core.nvdla_core2dbb_r_rlast.eq(self.m_axi_rlast),
            core.nvdla_core2dbb_r_rvalid.eq(self.m_axi_rvalid),
            self.m_axi_rready.eq(core.nvdla_core2dbb_r_rready),
        ]
        return m


def zynq_bd_tcl(part: str, top: str = "nvdla_zynq", verilog: str = "nvdla_zynq.v",
                hp_width: int = 64, project: str = "nvdla_zynq", fclk_mhz: int = 100) -> str:
    """Vivado batch Tcl: project, block design (PS7 + ``top`` as module reference), wrapper,
    bitstream. Run with ``vivado -mode batch -source build_bd.tcl``."""
    return f"""\
# Generated by `nvdla board`: the NVDLA core in a Zynq-7000 block design.
# vivado -mode batch -source build_bd.tcl
set here [file dirname [file normalize [info script]]]
create_project {project} $here/vivado -part {part} -force
add_files -norecurse $here/{verilog}
update_compile_order -fileset sources_1
create_bd_design "system"

# Processing system: GP0 master to the CSB bridge, HP0 slave for the DBBIF, PL interrupt.
set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7:5.5 ps7]
apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \\
    -config {{make_external "FIXED_IO, DDR" apply_board_preset "1" Master "Disable" Slave "Disable"}} $ps
set_property -dict [list \\
    CONFIG.PCW_USE_M_AXI_GP0 {{1}} \\
    CONFIG.PCW_USE_S_AXI_HP0 {{1}} \\
    CONFIG.PCW_S_AXI_HP0_DATA_WIDTH {{{hp_width}}} \\
    CONFIG.PCW_USE_FABRIC_INTERRUPT {{1}} \\
    CONFIG.PCW_IRQ_F2P_INTR {{1}} \\
    CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ {{{fclk_mhz}}} \\
] $ps

# The core (module reference to {top} in {verilog}).
set nvdla [create_bd_cell -type module -reference {top} nvdla]

# Clock and reset: FCLK_CLK0 everywhere, the PS reset through a proc_sys_reset.
set rst [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset:5.0 rst_fclk0]
connect_bd_net [get_bd_pins ps7/FCLK_CLK0] [get_bd_pins ps7/M_AXI_GP0_ACLK] \\
    [get_bd_pins ps7/S_AXI_HP0_ACLK] [get_bd_pins nvdla/aclk] [get_bd_pins rst_fclk0/slowest_sync_clk]
connect_bd_net [get_bd_pins ps7/FCLK_RESET0_N] [get_bd_pins rst_fclk0/ext_reset_in]
connect_bd_net [get_bd_pins rst_fclk0/peripheral_aresetn] [get_bd_pins nvdla/aresetn]

# GP0 -> s_axi (CSB), m_axi (DBBIF) -> HP0, with interconnects inserted by the automation.
apply_bd_automation -rule xilinx.com:bd_rule:axi4 \\
    -config {{Clk_master {{/ps7/FCLK_CLK0}} Clk_slave {{/ps7/FCLK_CLK0}} Clk_xbar {{/ps7/FCLK_CLK0}} \\
             Master {{/ps7/M_AXI_GP0}} Slave {{/nvdla/s_axi}} intc_ip {{New AXI Interconnect}}}} \\
    [get_bd_intf_pins nvdla/s_axi]
apply_bd_automation -rule xilinx.com:bd_rule:axi4 \\
    -config {{Clk_master {{/ps7/FCLK_CLK0}} Clk_slave {{/ps7/FCLK_CLK0}} Clk_xbar {{/ps7/FCLK_CLK0}} \\
             Master {{/nvdla/m_axi}} Slave {{/ps7/S_AXI_HP0}} intc_ip {{New AXI Interconnect}}}} \\
    [get_bd_intf_pins ps7/S_AXI_HP0]
connect_bd_net [get_bd_pins nvdla/irq] [get_bd_pins ps7/IRQ_F2P]

# CSB window: 256 KiB at 0x43C00000 (GP0); the DBBIF sees all of DDR through HP0.
assign_bd_address
set_property range 256K [get_bd_addr_segs {{ps7/Data/SEG_nvdla_reg0}}]
set_property offset 0x43C00000 [get_bd_addr_segs {{ps7/Data/SEG_nvdla_reg0}}]
validate_bd_design
save_bd_design

make_wrapper -files [get_files system.bd] -top
add_files -norecurse [glob $here/vivado/{project}.gen/sources_1/bd/system/hdl/system_wrapper.v]
set_property top system_wrapper [current_fileset]
launch_runs impl_1 -to_step write_bitstream -jobs 4
wait_on_run impl_1
report_utilization -file $here/utilization.rpt
write_hw_platform -fixed -include_bit -force $here/{project}.xsa
"""
