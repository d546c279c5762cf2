"""Host bridges to the core: AXI4-Lite -> CSB (:mod:`.axil_csb`), a UART with a framed
register/memory protocol (:mod:`.uart`, :mod:`.serial_host`), and an on-chip block-RAM AXI4
slave for the DBBIF with a host word port (:mod:`.axi_ram`)."""

from .csb_master import csb_master_members, connect_csb
from .axil_csb import AxiLiteCsbBridge, axil_members, Resp
from .uart import UartRx, UartTx
from .serial_host import SerialHost, Command, Status
from .axi_ram import AxiRam

__all__ = ["csb_master_members", "connect_csb", "AxiLiteCsbBridge", "axil_members", "Resp",
           "UartRx", "UartTx", "SerialHost", "Command", "Status", "AxiRam"]
