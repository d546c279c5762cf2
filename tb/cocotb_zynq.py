"""cocotb bench of :class:`hw.board.ZynqCore` (``nvdla_zynq``) as the Zynq PS would drive it:
cocotbext-axi's AXI4-Lite master on ``s_axi_*`` (GP0) and an AXI4 RAM on ``m_axi_*`` (HP0).
Checks the bridge against the real core (register read-back, the build's HW version, DECERR and
SLVERR answers that never reach the CSB, the interrupt pin) and plays an NVDLA SDP trace through
it (``NVDLA_TRACE``), matching its CRC."""

import itertools
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam


class ZynqBench:
    def __init__(self, dut):
        self.dut = dut
        cocotb.start_soon(Clock(dut.aclk, 10, unit="ns").start())
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.aclk, dut.aresetn,
                          reset_active_level=False, size=2 ** 32)
        self.ram.read_if.r_channel.set_pause_generator(itertools.cycle([0, 0, 1]))
        self.ram.write_if.b_channel.set_pause_generator(itertools.cycle([0, 1]))

    async def reset(self):
        self.dut.aresetn.value = 0
        await ClockCycles(self.dut.aclk, 10)
        self.dut.aresetn.value = 1
        await ClockCycles(self.dut.aclk, 10)

    async def write(self, addr, value):
        r = await self.axil.write(addr, value.to_bytes(4, "little"))
        return int(r.resp)

    async def read(self, addr):
        r = await self.axil.read(addr, 4)
        return int(r.resp), int.from_bytes(r.data, "little")

    async def transact(self, cmd, addr=0, data=0):
        """The serial protocol's commands on AXI (for :class:`scripts.uart.TracePlayer`)."""
        from hw.bridge.serial_host import Command, Status
        if cmd == Command.CSB_WRITE:
            resp = await self.write(addr, data)
            return (Status.OK if resp == 0 else Status.BAD_ADDRESS), data
        if cmd == Command.CSB_READ:
            resp, value = await self.read(addr)
            return (Status.OK if resp == 0 else Status.BAD_ADDRESS), value
        if cmd == Command.MEM_WRITE:
            self.ram.write(addr & ~3, data.to_bytes(4, "little"))
            return Status.OK, data
        if cmd == Command.MEM_READ:
            return Status.OK, int.from_bytes(self.ram.read(addr & ~3, 4), "little")
        raise ValueError(cmd)


@cocotb.test()
async def bridge_and_trace(dut):
    from arch.registers import register_map
    from scripts.uart import TracePlayer
    from sim.trace import parse_trace
    from tb.harness import config_from_env
    cfg = config_from_env()
    rmap = register_map(cfg)
    tb = ZynqBench(dut)
    await tb.reset()
    # a read/write register of the build reads back what was written
    a = rmap.address("SDP.D_DATA_CUBE_WIDTH")
    assert await tb.write(a, 0x1234) == 0
    assert await tb.read(a) == (0, 0x1234)
    # GLB's HW version reads the reset value of the register table
    glb = rmap["GLB"]
    hw = next(r for r in glb.registers if r.offset == 0)
    resp, value = await tb.read(glb.base)
    assert resp == 0 and value == hw.reset, (hex(value), hex(hw.reset))
    # DECERR: a slot without a block; SLVERR: past GLB's last register
    assert await tb.read(0x3F000) == (3, 0)
    assert await tb.write(0x3F000, 1) == 3
    assert (await tb.read(glb.base + 0x100))[0] == 2
    assert int(dut.irq.value) == 0
    trace = os.environ.get("NVDLA_TRACE")
    if trace:
        seen = []

        async def watch_irq():
            while True:
                await RisingEdge(dut.irq)
                seen.append(1)
        cocotb.start_soon(watch_irq())
        player = TracePlayer(tb.transact, cfg, 2 ** 32)
        ok, msgs = await player.run(parse_trace(trace, cfg))
        for m in msgs:
            dut._log.info(m)
        assert ok, "; ".join(msgs)
        assert any("check_crc" in m for m in msgs)
        assert seen, "the layer's interrupt never reached irq"
        assert int(dut.irq.value) == 0          # cleared through S_INTR_STATUS
