"""8N1 UART receiver and transmitter with byte streams; ``divisor`` = clock cycles per bit
(clock frequency / baud rate, a build parameter).

:class:`UartRx` samples each bit in its middle after a two-flop synchronizer; a start bit
shorter than half a bit is ignored, and a byte whose stop bit is 0 is dropped with a
``frame_error`` pulse. A received byte waits on ``o`` until taken; the next byte replaces it
(``overrun`` pulses). :class:`UartTx` sends each byte of ``i``.
"""


from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UartRx", "UartTx"]


def _check(divisor):
    if not isinstance(divisor, int) or divisor < 4:
        raise ValueError(f"divisor={divisor}: must be an integer >= 4 clock cycles per bit")


class UartRx(wiring.Component):
    rx: In(1, init=1)
    o: Out(stream.Signature(8))
    frame_error: Out(1)
    overrun: Out(1)

    def __init__(self, divisor: int):
        _check(divisor)
        self._divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        d = self._divisor
        rx = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(d))
        bit = Signal(range(9))
        shreg = Signal(8)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~rx):
                    m.d.sync += timer.eq(d // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(rx):
                    m.next = "IDLE"                      # glitch, not a start bit
                with m.Else():
                    m.d.sync += [timer.eq(d - 1), bit.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [shreg.eq(Cat(shreg[1:], rx)),
                                 timer.eq(d - 1), bit.eq(bit + 1)]
                    with m.If(bit == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(rx):
                    m.d.sync += [self.o.payload.eq(shreg), self.o.valid.eq(1)]
                    m.d.comb += self.overrun.eq(self.o.valid & ~self.o.ready)
                    m.next = "IDLE"
                with m.Else():
                    m.d.comb += self.frame_error.eq(1)
                    m.next = "BREAK"
            with m.State("BREAK"):                       # wait for the line to go idle
                with m.If(rx):
                    m.next = "IDLE"
        return m


class UartTx(wiring.Component):
    i: In(stream.Signature(8))
    tx: Out(1, init=1)

    def __init__(self, divisor: int):
        _check(divisor)
        self._divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        d = self._divisor
        timer = Signal(range(d))
        shreg = Signal(10, init=0x3FF)
        bits = Signal(range(11))
        m.d.comb += self.tx.eq(shreg[0])
        with m.If(bits == 0):
            m.d.comb += self.i.ready.eq(1)
            with m.If(self.i.valid):
                m.d.sync += [shreg.eq(1 << 9 | self.i.payload << 1), bits.eq(10),
                             timer.eq(d - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [shreg.eq(1 << 9 | shreg >> 1), bits.eq(bits - 1), timer.eq(d - 1)]
        return m
