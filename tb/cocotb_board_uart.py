"""cocotb bench of the board top (:class:`hw.board.BoardCore`: core + UART bridge + block RAM)
driven only through its UART pins: plays an NVDLA trace with :class:`scripts.uart.TracePlayer`
and checks its CRCs. Environment: ``NVDLA_TRACE`` (trace directory), ``UART_DIVISOR``,
``BOARD_MEM_BYTES``, ``NVDLA_CONFIG`` (from :func:`tb.runner.run_cocotb`)."""

import os

import cocotb
from cocotb.clock import Clock
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles, FallingEdge, with_timeout


class UartLink:
    def __init__(self, dut, divisor):
        self.dut, self.div = dut, divisor
        self.rx = Queue()
        dut.uart_rx.value = 1
        cocotb.start_soon(self._receive())

    async def _receive(self):
        d = self.dut
        while True:
            await FallingEdge(d.uart_tx)
            await ClockCycles(d.clk, self.div // 2)
            byte = 0
            for i in range(8):
                await ClockCycles(d.clk, self.div)
                byte |= int(d.uart_tx.value) << i
            await ClockCycles(d.clk, self.div)
            assert int(d.uart_tx.value) == 1, "stop bit"
            self.rx.put_nowait(byte)

    async def send(self, data: bytes):
        for byte in data:
            for bit in [0] + [byte >> i & 1 for i in range(8)] + [1]:
                self.dut.uart_rx.value = bit
                await ClockCycles(self.dut.clk, self.div)

    async def transact(self, cmd, addr=0, data=0):
        from hw.bridge.serial_host import parse_response, request_frame
        await self.send(request_frame(cmd, addr, data))
        frame = bytes([await with_timeout(self.rx.get(), 100 * self.div * 10 * 7, "ns")
                       for _ in range(7)])
        return parse_response(frame)


@cocotb.test()
async def trace_over_uart(dut):
    from hw.bridge.serial_host import Command, PING_VALUE, Status
    from scripts.uart import TracePlayer
    from sim.trace import parse_trace
    from tb.harness import config_from_env
    cfg = config_from_env()
    div = int(os.environ.get("UART_DIVISOR", "4"))
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    link = UartLink(dut, div)
    await ClockCycles(dut.clk, 5)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 5)
    assert await link.transact(Command.PING) == (Status.OK, PING_VALUE)
    player = TracePlayer(link.transact, cfg, int(os.environ.get("BOARD_MEM_BYTES", "65536")))
    ok, msgs = await player.run(parse_trace(os.environ["NVDLA_TRACE"], cfg))
    for m in msgs:
        dut._log.info(m)
    dut._log.info(f"{player.transactions} serial transactions")
    assert ok, "; ".join(msgs)
    assert any("check_crc" in m for m in msgs)
