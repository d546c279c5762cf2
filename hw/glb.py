"""GLB: hardware version and the interrupt controller (spec: Host interrupt; GLB registers).

``S_INTR_STATUS`` collects the per-unit, per-group done events (``done``, in the bit
positions of the status register); software sets bits through ``S_INTR_SET`` and clears them
by writing 1 to ``S_INTR_STATUS``; a set or a done event in the same cycle as a clear wins.
``interrupt`` (the ``nvdla2core_interrupt`` pin) is high, one cycle after the status changes,
while any status bit is set whose ``S_INTR_MASK`` bit is 0.
"""


from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .regfile import RegBus, RegisterFile

__all__ = ["Glb", "done_bit"]


def done_bit(glb_block, source: str, group: int) -> int:
    """Status bit of a done source: ``done_bit(glb, "SDP", 1)`` -> bit of SDP_DONE_STATUS1."""
    return glb_block["S_INTR_STATUS"][f"{source}_DONE_STATUS{group}"].lsb


class Glb(wiring.Component):
    bus: In(RegBus())
    done: In(32)
    interrupt: Out(1)

    def __init__(self, block):
        self._block = block
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.regs = regs = RegisterFile(self._block)
        wiring.connect(m, wiring.flipped(self.bus), regs.bus)
        status_reg = self._block["S_INTR_STATUS"]
        set_reg = self._block["S_INTR_SET"]
        mask_reg = self._block["S_INTR_MASK"]

        status = Signal(32)
        mask = Signal(32)
        for f in status_reg.fields:
            set_f = set_reg[f.name.replace("_STATUS", "_SET")]
            m.d.comb += [
                regs.w1c_set.S_INTR_STATUS[f.name].eq(
                    regs.pulse.S_INTR_SET[set_f.name] | self.done[f.lsb]),
                status[f.lsb].eq(regs.w1c_value.S_INTR_STATUS[f.name]),
                mask[f.lsb].eq(regs.s.S_INTR_MASK[f.name.replace("_STATUS", "_MASK")]),
            ]
        m.d.sync += self.interrupt.eq((status & ~mask).any())
        return m
