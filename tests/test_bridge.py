"""Host bridges in Amaranth simulation: AXI4-Lite -> CSB, UART, the serial protocol, the
block-RAM AXI4 slave."""

import random

import pytest
from amaranth.sim import Simulator

from arch.config import load_config
from arch.registers import register_map
from hw.bridge import AxiLiteCsbBridge, AxiRam, SerialHost, UartRx, UartTx, Resp
from hw.bridge.axil_csb import csb_decode
from hw.bridge.serial_host import (Command, Status, PING_VALUE, request_frame,
                                   parse_response)
from tb.bridge import (CsbSlaveModel, UartMonitor, axil_read, axil_write, serial_transaction,
                       uart_send, uart_send_bits)


def run_sim(dut, *benches, background=(), deadline=None):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for b in background:
        sim.add_testbench(b, background=True)
    for b in benches:
        sim.add_testbench(b)
    sim.run()


# -- AXI4-Lite -> CSB ----------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_axil_csb_read_write_with_backpressure(seed):
    rmap = register_map(load_config("nv_small"))
    dut = AxiLiteCsbBridge(csb_decode(rmap), 18)
    csb = CsbSlaveModel(dut, seed=seed)
    rng = random.Random(seed)
    # Registers of blocks of the build (byte addresses).
    addrs = [rmap.address("GLB.S_INTR_MASK"), rmap.address("SDP.D_DATA_CUBE_WIDTH"),
             rmap.address("CDMA.D_MISC_CFG"), rmap.address("MCIF.CFG_OUTSTANDING_CNT")]
    values = {a: rng.getrandbits(32) for a in addrs}

    async def bench(ctx):
        for a, v in values.items():
            assert await axil_write(ctx, dut, a, v, rng=rng) == Resp.OKAY
        for a, v in values.items():
            assert await axil_read(ctx, dut, a, rng=rng) == (Resp.OKAY, v)
        # writes reach the CSB non-posted, at the word address, in order
        writes = [e for e in csb.log if e[0]]
        assert writes == [(True, a, v) for a, v in values.items()]

    run_sim(dut, bench, background=[csb.run])


def test_axil_csb_errors_never_reach_csb():
    rmap = register_map(load_config("nv_small"))
    dut = AxiLiteCsbBridge(csb_decode(rmap), 18)
    csb = CsbSlaveModel(dut, seed=3, regs={0x1000: 0x1234})
    glb = rmap["GLB"]
    past_glb = glb.base + max(r.offset for r in glb.registers) + 4
    assert "RBK" not in rmap and "BDMA" not in rmap

    async def bench(ctx):
        # DECERR: a slot with no block in nv_small (BDMA 0x10000? RBK) and past CSB's window
        for a in (0x10000, 0x3F000):
            assert await axil_write(ctx, dut, a, 1) == Resp.DECERR
            assert await axil_read(ctx, dut, a) == (Resp.DECERR, 0)
        # SLVERR: past the last register of GLB; a partial write strobe
        assert await axil_write(ctx, dut, past_glb, 1) == Resp.SLVERR
        assert await axil_read(ctx, dut, past_glb) == (Resp.SLVERR, 0)
        assert await axil_write(ctx, dut, 0x1000, 0xFFFF, strb=0x3) == Resp.SLVERR
        assert csb.log == []
        # a good access afterwards still works
        assert await axil_read(ctx, dut, 0x1000) == (Resp.OKAY, 0x1234)
        assert csb.log == [(False, 0x1000, 0)]

    run_sim(dut, bench, background=[csb.run])


def test_axil_csb_interrupt_passthrough_and_alternation():
    rmap = register_map(load_config("nv_small"))
    dut = AxiLiteCsbBridge(csb_decode(rmap), 18)
    csb = CsbSlaveModel(dut, seed=5, stall=0.0, max_latency=1)

    async def bench(ctx):
        ctx.set(dut.nvdla2core_interrupt, 1)
        await ctx.tick()
        assert ctx.get(dut.irq) == 1
        ctx.set(dut.nvdla2core_interrupt, 0)
        await ctx.tick()
        assert ctx.get(dut.irq) == 0
        # a read and a write presented together: both complete
        ctx.set(dut.s_axi_araddr, 0x1004)
        ctx.set(dut.s_axi_arvalid, 1)
        ctx.set(dut.s_axi_rready, 1)
        ctx.set(dut.s_axi_bready, 1)
        assert await axil_write(ctx, dut, 0x1008, 7) == Resp.OKAY
        await ctx.tick().until(dut.s_axi_arready == 1)
        ctx.set(dut.s_axi_arvalid, 0)
        await ctx.tick().until(dut.s_axi_rvalid == 1)
        assert [e[1] for e in csb.log] == [0x1008, 0x1004] or \
            [e[1] for e in csb.log] == [0x1004, 0x1008]

    run_sim(dut, bench, background=[csb.run])


# -- UART ------------------------------------------------------------------------------------

def test_uart_tx_rx_and_framing_error():
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from amaranth.lib import stream
    div = 6

    class Pair(wiring.Component):
        i: In(stream.Signature(8))
        o: Out(stream.Signature(8))
        frame_error: Out(1)
        rx: In(1, init=1)
        tx: Out(1, init=1)

        def elaborate(self, platform):
            m = Module()
            m.submodules.tx = tx = UartTx(div)
            m.submodules.rx = rx = UartRx(div)
            wiring.connect(m, wiring.flipped(self.i), tx.i)
            wiring.connect(m, rx.o, wiring.flipped(self.o))
            m.d.comb += [self.tx.eq(tx.tx), rx.rx.eq(self.rx),
                         self.frame_error.eq(rx.frame_error)]
            return m

    dut = Pair()
    mon = UartMonitor(dut.tx, div)
    sent = [0x00, 0xFF, 0xA5, 0x5A, 0x81]
    got, errors = [], []

    async def collect(ctx):
        ctx.set(dut.o.ready, 1)
        while True:
            _, _, v, p, fe = await ctx.tick().sample(dut.o.valid, dut.o.payload, dut.frame_error)
            if v:
                got.append(p)
            if fe:
                errors.append(len(got))

    async def bench(ctx):
        for b in sent:                                   # TX side
            ctx.set(dut.i.payload, b)
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready == 1)
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(12 * div)
        assert mon.bytes == sent
        await uart_send(ctx, dut.rx, bytes([0x3C, 0xC3]), div)       # RX side
        await uart_send(ctx, dut.rx, bytes([0x77]), div, stop=0)    # framing error
        await ctx.tick().repeat(3 * div)
        await uart_send_bits(ctx, dut.rx, [0] * 1, div // 4)        # glitch: not a start
        await ctx.tick().repeat(3 * div)
        await uart_send(ctx, dut.rx, bytes([0x42]), div)
        await ctx.tick().repeat(2 * div)
        assert got == [0x3C, 0xC3, 0x42]
        assert errors == [2]

    run_sim(dut, bench, background=[mon.run, collect])


# -- the serial protocol through the UART, with the block RAM --------------------------------

DIV = 4


def _serial_dut(timeout=400):
    """SerialHost + UART + AxiRam(64-bit, 4 KiB) + CSB slave model."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from hw.bridge.csb_master import csb_master_members

    class Link(wiring.Component):
        def __init__(self):
            members = {"rx": In(1, init=1), "tx": Out(1, init=1), "irq": In(1)}
            members.update(csb_master_members())
            super().__init__(members)

        def elaborate(self, platform):
            m = Module()
            m.submodules.urx = urx = UartRx(DIV)
            m.submodules.utx = utx = UartTx(DIV)
            m.submodules.host = host = SerialHost(timeout)
            m.submodules.ram = self.ram = ram = AxiRam(4096, 64, 32)
            wiring.connect(m, urx.o, host.rx)
            wiring.connect(m, host.tx, utx.i)
            m.d.comb += [urx.rx.eq(self.rx), self.tx.eq(utx.tx), host.rx_error.eq(
                urx.frame_error), host.irq.eq(self.irq)]
            for n, mb in csb_master_members().items():
                if mb.flow == Out:
                    m.d.comb += getattr(self, n).eq(getattr(host, n))
                else:
                    m.d.comb += getattr(host, n).eq(getattr(self, n))
            for n in ("mem_valid", "mem_write", "mem_addr", "mem_wdata"):
                m.d.comb += getattr(ram, n).eq(getattr(host, n))
            for n in ("mem_done", "mem_rdata", "mem_error"):
                m.d.comb += getattr(host, n).eq(getattr(ram, n))
            return m

    return Link()


def test_serial_protocol_commands():
    dut = _serial_dut()
    csb = CsbSlaveModel(dut, seed=7)
    mon = UartMonitor(dut.tx, DIV)

    async def bench(ctx):
        t = lambda *a, **k: serial_transaction(ctx, dut.rx, mon, DIV, *a, **k)
        assert await t(Command.PING) == (Status.OK, PING_VALUE)
        assert await t(Command.CSB_WRITE, 0x9010, 0xDEADBEEF) == (Status.OK, 0xDEADBEEF)
        assert await t(Command.CSB_READ, 0x9010) == (Status.OK, 0xDEADBEEF)
        assert csb.log == [(True, 0x9010, 0xDEADBEEF), (False, 0x9010, 0)]
        assert await t(Command.CSB_READ, 0x40000) == (Status.BAD_ADDRESS, 0)
        # memory: both 32-bit halves of a 64-bit word, then the top of the 4 KiB
        for a, v in ((0x100, 0x11223344), (0x104, 0x55667788), (0xFFC, 0xCAFEF00D)):
            assert await t(Command.MEM_WRITE, a, v) == (Status.OK, v)
        for a, v in ((0x100, 0x11223344), (0x104, 0x55667788), (0xFFC, 0xCAFEF00D)):
            assert await t(Command.MEM_READ, a) == (Status.OK, v)
        assert await t(Command.MEM_READ, 0x1000) == (Status.BAD_ADDRESS, 0)
        ctx.set(dut.irq, 1)
        assert await t(Command.IRQ) == (Status.OK, 1)
        assert (await t(0x7F, 0, 5)) == (Status.BAD_COMMAND, 5)

    run_sim(dut, bench, background=[csb.run, mon.run])


def test_serial_protocol_rejects_bad_frames():
    dut = _serial_dut(timeout=300)
    csb = CsbSlaveModel(dut, seed=9)
    mon = UartMonitor(dut.tx, DIV)

    async def bench(ctx):
        t = lambda *a, **k: serial_transaction(ctx, dut.rx, mon, DIV, *a, **k)
        good = request_frame(Command.CSB_WRITE, 0x1004, 0x55)
        # bad checksum: answered BAD_CHECKSUM, nothing executed
        bad = bytearray(good)
        bad[-1] ^= 1
        assert await t(None, frame=bytes(bad)) == (Status.BAD_CHECKSUM, 0x55)
        # garbage before a frame is ignored
        assert await t(None, frame=bytes([0x00, 0xFF, 0x13, 0x5A]) + good) == (Status.OK,
                                                                                  0x55)
        assert csb.log == [(True, 0x1004, 0x55)]
        # a framing error inside a frame drops it silently ...
        await uart_send(ctx, dut.rx, good[:4], DIV)
        await uart_send(ctx, dut.rx, good[4:5], DIV, stop=0)
        await ctx.tick().repeat(4 * DIV)
        # ... the rest of it is ignored garbage (it holds no 0xA5), and nothing is answered
        assert await t(None, frame=good[5:], max_cycles=600) is None
        # a truncated frame times out; the next frame is served
        await uart_send(ctx, dut.rx, request_frame(Command.CSB_WRITE, 0x1008, 1)[:6], DIV)
        await ctx.tick().repeat(400)
        assert await t(Command.CSB_READ, 0x1004) == (Status.OK, 0x55)
        assert csb.log == [(True, 0x1004, 0x55), (False, 0x1004, 0)]

    run_sim(dut, bench, background=[csb.run, mon.run])


# -- AxiRam: AXI4 bursts and the host port ----------------------------------------------------

def test_axi_ram_bursts_and_host_port():
    dut = AxiRam(1024, 64, 32)
    rng = random.Random(11)
    P = "nvdla_core2dbb"
    s = lambda ch, n: getattr(dut, f"{P}_{ch}_{n}")
    ref = {}

    async def write_burst(ctx, addr, beats, strbs, tid):
        ctx.set(s("aw", "awaddr"), addr)
        ctx.set(s("aw", "awlen"), len(beats) - 1)
        ctx.set(s("aw", "awid"), tid)
        ctx.set(s("aw", "awvalid"), 1)
        await ctx.tick().until(s("aw", "awready") == 1)
        ctx.set(s("aw", "awvalid"), 0)
        for i, (data, strb) in enumerate(zip(beats, strbs)):
            while rng.random() < 0.3:
                ctx.set(s("w", "wvalid"), 0)
                await ctx.tick()
            ctx.set(s("w", "wdata"), data)
            ctx.set(s("w", "wstrb"), strb)
            ctx.set(s("w", "wlast"), i == len(beats) - 1)
            ctx.set(s("w", "wvalid"), 1)
            await ctx.tick().until(s("w", "wready") == 1)
            word = (addr // 8 + i) % 128
            old = ref.get(word, 0)
            for b in range(8):
                if strb >> b & 1:
                    old = old & ~(0xFF << 8 * b) | (data & (0xFF << 8 * b))
            ref[word] = old
        ctx.set(s("w", "wvalid"), 0)
        ctx.set(s("b", "bready"), 1)
        await ctx.tick().until(s("b", "bvalid") == 1)
        assert ctx.get(s("b", "bid")) == tid
        ctx.set(s("b", "bready"), 0)

    async def read_burst(ctx, addr, n, tid):
        ctx.set(s("ar", "araddr"), addr)
        ctx.set(s("ar", "arlen"), n - 1)
        ctx.set(s("ar", "arid"), tid)
        ctx.set(s("ar", "arvalid"), 1)
        await ctx.tick().until(s("ar", "arready") == 1)
        ctx.set(s("ar", "arvalid"), 0)
        out = []
        while len(out) < n:
            rr = int(rng.random() < 0.6)
            ctx.set(s("r", "rready"), rr)
            _, _, v, d, last, rid = await ctx.tick().sample(s("r", "rvalid"), s("r", "rdata"),
                                                         s("r", "rlast"), s("r", "rid"))
            if v and rr:
                out.append(d)
                assert rid == tid
                assert last == (len(out) == n)
        ctx.set(s("r", "rready"), 0)
        return out

    async def host(ctx, write, addr, data=0):
        ctx.set(dut.mem_valid, 1)
        ctx.set(dut.mem_write, write)
        ctx.set(dut.mem_addr, addr)
        ctx.set(dut.mem_wdata, data)
        rdata, err = await ctx.tick().sample(dut.mem_rdata, dut.mem_error).until(
            dut.mem_done == 1)
        ctx.set(dut.mem_valid, 0)
        return rdata, err

    async def bench(ctx):
        for k in range(6):
            n = rng.randint(1, 16)
            addr = rng.randrange(0, 1024, 8)
            beats = [rng.getrandbits(64) for _ in range(n)]
            strbs = [rng.choice([0xFF, 0x0F, 0xF0, rng.getrandbits(8)]) for _ in range(n)]
            await write_burst(ctx, addr, beats, strbs, tid=k)
            got = await read_burst(ctx, addr, n, tid=k + 100)
            assert got == [ref.get((addr // 8 + i) % 128, 0) for i in range(n)]
        # host writes a 32-bit word into each half; AXI reads the 64-bit word
        await host(ctx, 1, 0x10, 0xAAAA5555)
        await host(ctx, 1, 0x14, 0x12345678)
        assert await read_burst(ctx, 0x10, 1, tid=1) == [0x12345678AAAA5555]
        # host reads what AXI wrote; out of range is an error
        word = ref.get(0x20 // 8, 0)
        assert (await host(ctx, 0, 0x24))[0] == word >> 32
        assert (await host(ctx, 0, 0x400))[1] == 1

    run_sim(dut, bench)
