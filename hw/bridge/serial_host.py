"""SerialHost: a framed request/response protocol over a byte stream (the UART) that lets a PC
read and write CSB registers and the DBBIF memory.

Request, 11 bytes::

    0xA5  CMD  ADDR[4]  DATA[4]  CHK         (multi-byte fields little-endian)

Response, 7 bytes::

    0x5A  STATUS  DATA[4]  CHK

``CHK`` makes the sum of every byte after the start byte 0 modulo 256
(``CHK = -sum(CMD..DATA) & 0xFF``; ``-sum(STATUS..DATA) & 0xFF`` in a response).

Commands (:class:`Command`): ``CSB_WRITE`` / ``CSB_READ`` (``ADDR`` = CSB byte address, as in
NVDLA's register map; non-posted writes, answered once the core completes them),
``MEM_WRITE`` / ``MEM_READ`` (one 32-bit word of the DBBIF memory at byte address ``ADDR``,
bits [1:0] ignored), ``PING`` (answers ``DATA`` = ``0x4C44564E``, "NVDL"), ``IRQ`` (answers
``DATA`` bit 0 = the interrupt pin), ``RESET`` (holds ``core_reset`` for
:data:`RESET_CYCLES` cycles, then answers: the board resets the core and the AXI side of its
memories, whose contents stay, so a host can start each trace on a fresh core as NVDLA's
test benches do). Reads answer the value in ``DATA``; other answers carry the request's
``DATA``.

Statuses (:class:`Status`): ``OK``; ``BAD_CHECKSUM`` and ``BAD_COMMAND`` (nothing executed);
``BAD_ADDRESS`` (CSB address past 256 KiB or memory address past the memory; nothing
executed).

Robustness: bytes outside a frame other than ``0xA5`` are ignored; a UART framing error or a
gap of more than ``timeout`` clock cycles inside a frame drops the frame silently (no answer,
nothing executed). The host sends one request at a time and waits for its answer; after a
missing answer it waits longer than the timeout and sends again. Bytes that arrive while a
request executes or its answer is sent are discarded.
"""

from __future__ import annotations

import enum

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .csb_master import csb_master_members

__all__ = ["SerialHost", "Command", "Status", "SOF_REQUEST", "SOF_RESPONSE", "PING_VALUE",
           "RESET_CYCLES",
           "request_frame", "parse_response", "mem_members"]

SOF_REQUEST = 0xA5
SOF_RESPONSE = 0x5A
PING_VALUE = 0x4C44564E
RESET_CYCLES = 16


class Command(enum.IntEnum):
    CSB_WRITE = 0x01
    CSB_READ = 0x02
    MEM_WRITE = 0x03
    MEM_READ = 0x04
    PING = 0x05
    IRQ = 0x06
    RESET = 0x07


class Status(enum.IntEnum):
    OK = 0x00
    BAD_CHECKSUM = 0x01
    BAD_COMMAND = 0x02
    BAD_ADDRESS = 0x03


def request_frame(cmd: int, addr: int = 0, data: int = 0) -> bytes:
    """The 11 bytes of a request (host side)."""
    body = bytes([int(cmd)]) + (addr & 0xFFFFFFFF).to_bytes(4, "little") + \
        (data & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes([SOF_REQUEST]) + body + bytes([-sum(body) & 0xFF])


def parse_response(frame: bytes):
    """(status, data) of a 7-byte response; ValueError if it is malformed."""
    if len(frame) != 7 or frame[0] != SOF_RESPONSE or sum(frame[1:]) & 0xFF:
        raise ValueError(f"bad response frame {frame.hex()}")
    return Status(frame[1]), int.from_bytes(frame[2:6], "little")


def mem_members() -> dict:
    """The host word port of a memory, master side: one request held until ``mem_done``."""
    return {"mem_valid": Out(1), "mem_write": Out(1), "mem_addr": Out(32),
            "mem_wdata": Out(32), "mem_done": In(1), "mem_rdata": In(32), "mem_error": In(1)}


class SerialHost(wiring.Component):
    """``SerialHost(timeout)``: ``rx``/``tx`` byte streams (from :class:`UartRx` /
    to :class:`UartTx`), ``rx_error`` (UART framing error), the CSB master, the memory port
    (:func:`mem_members`), ``irq`` (the core's interrupt) and ``core_reset`` (held by the
    ``RESET`` command)."""

    def __init__(self, timeout: int):
        self._timeout = timeout
        members = {"rx": In(stream.Signature(8)), "rx_error": In(1),
                   "tx": Out(stream.Signature(8)), "irq": In(1), "core_reset": Out(1)}
        members.update(csb_master_members())
        members.update(mem_members())
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        buf = Signal(80)                 # CMD, ADDR, DATA, CHK (first byte in the low bits)
        cmd, addr, data = buf[0:8], buf[8:40], buf[40:72]
        count = Signal(range(11))
        csum = Signal(8)
        timer = Signal(range(self._timeout + 1))
        status = Signal(8)
        rdata = Signal(32)
        resp = Signal(56)
        resp_left = Signal(range(8))
        reset_left = Signal(range(RESET_CYCLES + 1))

        m.d.comb += [
            self.csb2nvdla_addr.eq(addr[2:18]), self.csb2nvdla_wdat.eq(data),
            self.csb2nvdla_nposted.eq(1),
            self.mem_addr.eq(addr), self.mem_wdata.eq(data),
            self.tx.payload.eq(resp[0:8]),
            self.rx.ready.eq(1),
        ]
        byte = self.rx.payload
        got = self.rx.valid

        def answer(st, value):
            body = Cat(Const(st, 8) if isinstance(st, int) else st, value)
            s = (body[0:8] + body[8:16] + body[16:24] + body[24:32] + body[32:40])[0:8]
            chk = (-s)[0:8]
            m.d.sync += [resp.eq(Cat(Const(SOF_RESPONSE, 8), body, chk)), resp_left.eq(7)]
            m.next = "RESPOND"

        with m.FSM():
            with m.State("HUNT"):
                with m.If(got & (byte == SOF_REQUEST)):
                    m.d.sync += [count.eq(0), csum.eq(0), timer.eq(self._timeout)]
                    m.next = "COLLECT"
            with m.State("COLLECT"):
                with m.If(self.rx_error):
                    m.next = "HUNT"
                with m.Elif(got):
                    m.d.sync += [buf.eq(Cat(buf[8:], byte)), csum.eq(csum + byte),
                                 count.eq(count + 1), timer.eq(self._timeout)]
                    with m.If(count == 9):
                        m.next = "CHECK"
                with m.Elif(timer == 0):
                    m.next = "HUNT"
                with m.Else():
                    m.d.sync += timer.eq(timer - 1)
            with m.State("CHECK"):
                with m.If(csum != 0):
                    answer(Status.BAD_CHECKSUM, data)
                with m.Else():
                    with m.Switch(cmd):
                        with m.Case(Command.CSB_WRITE, Command.CSB_READ):
                            with m.If(addr[18:] != 0):
                                answer(Status.BAD_ADDRESS, data)
                            with m.Else():
                                m.next = "CSB"
                        with m.Case(Command.MEM_WRITE, Command.MEM_READ):
                            m.next = "MEM"
                        with m.Case(Command.PING):
                            answer(Status.OK, Const(PING_VALUE, 32))
                        with m.Case(Command.IRQ):
                            answer(Status.OK, Cat(self.irq, Const(0, 31)))
                        with m.Case(Command.RESET):
                            m.d.sync += reset_left.eq(RESET_CYCLES)
                            m.next = "RESET"
                        with m.Default():
                            answer(Status.BAD_COMMAND, data)
            with m.State("CSB"):
                is_write = cmd == Command.CSB_WRITE
                m.d.comb += [self.csb2nvdla_valid.eq(1), self.csb2nvdla_write.eq(is_write)]
                with m.If(self.csb2nvdla_ready):
                    m.next = "CSB_WAIT"
            with m.State("CSB_WAIT"):
                with m.If((cmd == Command.CSB_WRITE) & self.nvdla2csb_wr_complete):
                    answer(Status.OK, data)
                with m.If((cmd == Command.CSB_READ) & self.nvdla2csb_valid):
                    answer(Status.OK, self.nvdla2csb_data)
            with m.State("MEM"):
                m.d.comb += [self.mem_valid.eq(1),
                             self.mem_write.eq(cmd == Command.MEM_WRITE)]
                with m.If(self.mem_done):
                    with m.If(self.mem_error):
                        answer(Status.BAD_ADDRESS, data)
                    with m.Elif(cmd == Command.MEM_READ):
                        answer(Status.OK, self.mem_rdata)
                    with m.Else():
                        answer(Status.OK, data)
            with m.State("RESET"):
                m.d.comb += self.core_reset.eq(1)
                m.d.sync += reset_left.eq(reset_left - 1)
                with m.If(reset_left == 1):
                    answer(Status.OK, data)
            with m.State("RESPOND"):
                m.d.comb += self.tx.valid.eq(1)
                with m.If(self.tx.ready):
                    m.d.sync += [resp.eq(resp >> 8), resp_left.eq(resp_left - 1)]
                    with m.If(resp_left == 1):
                        m.next = "HUNT"
        return m
