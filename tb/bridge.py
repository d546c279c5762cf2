"""Amaranth-simulation helpers for the host bridges (tests/test_bridge.py, tests/test_board.py):
a CSB slave model with random stalls and latencies, an AXI4-Lite master, UART bit drivers
and a serial-protocol host."""

from __future__ import annotations

import random

from hw.bridge.serial_host import parse_response, request_frame

__all__ = ["CsbSlaveModel", "axil_write", "axil_read", "uart_send", "uart_send_bits",
           "UartMonitor", "serial_transaction", "StubCore"]


class CsbSlaveModel:
    """A CSB slave on a component's ``csb2nvdla_*`` master ports: registers in a dict,
    ``ready`` stalls with probability ``stall``, responses 1..``max_latency`` cycles after
    the request, in order. ``log`` records (write, byte address, data) per accepted request."""

    def __init__(self, dut, seed=0, stall=0.4, max_latency=4, regs=None):
        self.dut, self.rng = dut, random.Random(seed)
        self.stall, self.max_latency = stall, max_latency
        self.regs = dict(regs or {})
        self.log = []

    async def run(self, ctx):
        d = self.dut
        pending = []            # [cycles left, write, data]
        while True:
            ready = self.rng.random() >= self.stall
            ctx.set(d.csb2nvdla_ready, ready)
            ctx.set(d.nvdla2csb_valid, 0)
            ctx.set(d.nvdla2csb_wr_complete, 0)
            if pending and pending[0][0] <= 0:
                _, write, data = pending.pop(0)
                if write:
                    ctx.set(d.nvdla2csb_wr_complete, 1)
                else:
                    ctx.set(d.nvdla2csb_valid, 1)
                    ctx.set(d.nvdla2csb_data, data)
            for p in pending:
                p[0] -= 1
            _, _, valid, write, addr, wdat, nposted = await ctx.tick().sample(
                d.csb2nvdla_valid, d.csb2nvdla_write, d.csb2nvdla_addr, d.csb2nvdla_wdat,
                d.csb2nvdla_nposted)
            if valid and ready:
                byte_addr = addr << 2
                self.log.append((bool(write), byte_addr, wdat if write else 0))
                if write:
                    self.regs[byte_addr] = wdat
                    if nposted:
                        pending.append([self.rng.randint(0, self.max_latency - 1), 1, 0])
                else:
                    pending.append([self.rng.randint(0, self.max_latency - 1), 0,
                                    self.regs.get(byte_addr, 0)])


async def axil_write(ctx, d, addr, data, strb=0xF, rng=None, p="s_axi"):
    """One AXI4-Lite write; returns BRESP. ``rng`` randomizes BREADY."""
    s = lambda n: getattr(d, f"{p}_{n}")
    ctx.set(s("awaddr"), addr)
    ctx.set(s("awvalid"), 1)
    ctx.set(s("wdata"), data)
    ctx.set(s("wstrb"), strb)
    ctx.set(s("wvalid"), 1)
    aw = w = False
    while not (aw and w):
        _, _, awr, wr = await ctx.tick().sample(s("awready"), s("wready"))
        if awr:
            aw = True
            ctx.set(s("awvalid"), 0)
        if wr:
            w = True
            ctx.set(s("wvalid"), 0)
    while True:
        br = 1 if rng is None else int(rng.random() < 0.5)
        ctx.set(s("bready"), br)
        _, _, bv, resp = await ctx.tick().sample(s("bvalid"), s("bresp"))
        if bv and br:
            ctx.set(s("bready"), 0)
            return resp


async def axil_read(ctx, d, addr, rng=None, p="s_axi"):
    """One AXI4-Lite read; returns (RRESP, RDATA)."""
    s = lambda n: getattr(d, f"{p}_{n}")
    ctx.set(s("araddr"), addr)
    ctx.set(s("arvalid"), 1)
    while True:
        _, _, arr = await ctx.tick().sample(s("arready"))
        if arr:
            ctx.set(s("arvalid"), 0)
            break
    while True:
        rr = 1 if rng is None else int(rng.random() < 0.5)
        ctx.set(s("rready"), rr)
        _, _, rv, resp, data = await ctx.tick().sample(s("rvalid"), s("rresp"), s("rdata"))
        if rv and rr:
            ctx.set(s("rready"), 0)
            return resp, data


async def uart_send_bits(ctx, pin, bits, divisor):
    for b in bits:
        ctx.set(pin, b)
        await ctx.tick().repeat(divisor)
    ctx.set(pin, 1)


async def uart_send(ctx, pin, data: bytes, divisor, stop=1, gap=0):
    """Send bytes 8N1 on ``pin`` (``stop=0`` makes a framing error)."""
    for byte in data:
        await uart_send_bits(ctx, pin, [0] + [byte >> i & 1 for i in range(8)] + [stop],
                             divisor)
        if gap:
            await ctx.tick().repeat(gap)


class UartMonitor:
    """Background testbench decoding bytes from a TX pin into ``self.bytes``."""

    def __init__(self, pin, divisor):
        self.pin, self.divisor, self.bytes = pin, divisor, []

    async def run(self, ctx):
        d = self.divisor
        while True:
            while ctx.get(self.pin):     # (no .until(): background-safe at teardown)
                await ctx.tick()
            await ctx.tick().repeat(d // 2)
            byte = 0
            for i in range(8):
                await ctx.tick().repeat(d)
                byte |= ctx.get(self.pin) << i
            await ctx.tick().repeat(d)
            assert ctx.get(self.pin) == 1, "stop bit"
            self.bytes.append(byte)


async def serial_transaction(ctx, pin, monitor, divisor, cmd, addr=0, data=0, frame=None,
                             max_cycles=None):
    """Send one request and wait for the 7-byte answer: (status, data), or None if no answer
    comes within ``max_cycles`` (default 30 byte times after the request)."""
    start = len(monitor.bytes)
    await uart_send(ctx, pin, frame if frame is not None else request_frame(cmd, addr, data),
                    divisor)
    limit = max_cycles or 30 * 10 * divisor + 2000
    waited = 0
    while len(monitor.bytes) < start + 7:
        await ctx.tick().repeat(divisor)
        waited += divisor
        if waited > limit:
            return None
    return parse_response(bytes(monitor.bytes[start:start + 7]))


def StubCore(cfg, nregs=64):
    """NvdlaCore's ports around 64 CSB scratch registers (:class:`hw.board.stub.CsbScratch`)."""
    from hw.board.stub import CsbScratch
    return CsbScratch(cfg, nregs)
