"""cocotb testbench for the whole core: clock, reset, CSB driver, interrupt monitor and AXI
memories on the DBBIF (and SRAMIF when the build has one).

    tb = await CoreBench.start(dut)
    await tb.csb.write(addr, value)
    value = await tb.csb.read(addr)
    results = await tb.csb.burst([("w", a, v), ("r", a, None), ...])   # one per cycle
"""

from __future__ import annotations

import json
import os
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import First, RisingEdge

from arch.config import NvdlaConfig
from arch.registers import register_map

__all__ = ["CoreBench", "CsbDriver", "SparseAxiMemory", "config_from_env"]


def config_from_env() -> NvdlaConfig:
    """The build configuration the runner passed in ``NVDLA_CONFIG``."""
    return NvdlaConfig(**json.loads(os.environ["NVDLA_CONFIG"]))


class CsbDriver:
    """Drives csb2nvdla_* and collects nvdla2csb_* responses (spec: Configuration space bus).

    Requests are issued one per cycle while the core is ready; read data and write
    completions are matched to requests in order, which checks the spec's ordering rule.
    Responses are sampled only while a burst is in flight (no per-cycle Python otherwise);
    ``cycle`` is the clock cycle number derived from simulation time, and ``op_cycles`` the
    cycle in which each request of the last burst was accepted (``csb2nvdla_ready`` seen
    high at that clock edge), in order.
    """

    def __init__(self, dut, period_ns=10):
        self.dut = dut
        self.period_ns = period_ns
        self.reads = []                 # read data in arrival order
        self.completions = 0            # non-posted write completions seen
        self.accepted = 0
        self.op_cycles = []             # acceptance cycle of each request of the last burst
        self._h = {n: getattr(dut, n) for n in (
            "csb2nvdla_valid", "csb2nvdla_addr", "csb2nvdla_wdat", "csb2nvdla_write",
            "csb2nvdla_nposted", "csb2nvdla_ready", "nvdla2csb_valid", "nvdla2csb_data",
            "nvdla2csb_wr_complete")}
        self._edge = RisingEdge(dut.clk)

    @property
    def cycle(self) -> int:
        return int(get_sim_time("ns") // self.period_ns)

    def _sample(self):
        h = self._h
        if h["nvdla2csb_valid"].value:
            self.reads.append(int(h["nvdla2csb_data"].value))
        if h["nvdla2csb_wr_complete"].value:
            self.completions += 1

    async def burst(self, ops):
        """Issue ``ops`` = [("r", word, None) | ("w", word, data) | ("wn", word, data)] back
        to back. Returns (read values in order, cycles from first to last acceptance)."""
        h, edge = self._h, self._edge
        n_reads = sum(1 for op in ops if op[0] == "r")
        n_np = sum(1 for op in ops if op[0] == "wn")
        reads0, comp0 = len(self.reads), self.completions
        first = last = None
        self.op_cycles = accepted = []
        prev = (None, None, None, None)
        for kind, addr, data in ops:
            cur = (addr, data or 0, int(kind != "r"), int(kind == "wn"))
            h["csb2nvdla_valid"].value = 1
            for name, v, p in zip(("csb2nvdla_addr", "csb2nvdla_wdat", "csb2nvdla_write",
                                   "csb2nvdla_nposted"), cur, prev):
                if v != p:
                    h[name].value = v
            prev = cur
            while True:
                await edge
                self._sample()
                if h["csb2nvdla_ready"].value:
                    break
            self.accepted += 1
            last = self.cycle
            accepted.append(last)
            first = last if first is None else first
        h["csb2nvdla_valid"].value = 0
        for _ in range(8):
            if len(self.reads) - reads0 >= n_reads and self.completions - comp0 >= n_np:
                break
            await edge
            self._sample()
        got = self.reads[reads0:]
        assert len(got) == n_reads, f"expected {n_reads} read responses, got {len(got)}"
        assert self.completions - comp0 == n_np, \
            f"expected {n_np} write completions, got {self.completions - comp0}"
        return got, (last - first + 1) if ops else 0

    async def write(self, addr, data, nposted=False):
        await self.burst([("wn" if nposted else "w", addr, data)])

    async def read(self, addr):
        (value,), _ = await self.burst([("r", addr, None)])
        return value


class SparseAxiMemory:
    """AXI4 slave on one of the core's memory ports (``nvdla_core2dbb`` / ``nvdla_core2sram``)
    backed by a sparse byte memory (:class:`sim.memory.SparseMemory`; 64 KiB pages on first
    touch, so 0x80000000+ addresses cost nothing). Spec: DBBIF / SRAMIF (full-width INCR
    bursts of up to 16 beats, byte strobes).

    Event driven: while the port is idle it waits for ``arvalid`` / ``awvalid`` / ``wvalid``
    to rise and runs no per-cycle Python. With ``rng`` given, every ready/valid it drives is
    randomly withheld with probability ``busy`` (back-pressure) and each burst's read data or
    write response comes ``latency`` = (lo, hi) cycles after its address (uniform). Up to
    ``outstanding`` addresses are accepted ahead. Protocol problems (wlast misplaced, a 4 KiB
    crossing) are collected in ``errors``.

    ``mem`` is the backdoor: ``mem.write``, ``mem.fill``, ``mem.read`` (numpy, bulk).
    """

    def __init__(self, dut, prefix, width_bits, *, rng=None, busy=0.0, latency=(1, 1),
                 outstanding=16, period_ns=10):
        from sim.memory import SparseMemory
        self.dut, self.prefix = dut, prefix
        self.bytes = width_bits // 8
        self.mem = SparseMemory()
        self.rng, self.busy, self.latency = rng, busy, latency
        self.outstanding = outstanding
        self.period_ns = period_ns
        self.errors = []
        self.reads = self.writes = 0            # bursts served
        self._h = {n: getattr(dut, f"{prefix}_{n}") for n in (
            "ar_arvalid", "ar_arready", "ar_araddr", "ar_arlen", "ar_arid",
            "r_rvalid", "r_rready", "r_rdata", "r_rlast", "r_rid",
            "aw_awvalid", "aw_awready", "aw_awaddr", "aw_awlen", "aw_awid",
            "w_wvalid", "w_wready", "w_wdata", "w_wstrb", "w_wlast",
            "b_bvalid", "b_bready", "b_bid")}
        self._edge = RisingEdge(dut.clk)
        self._tasks = []
        self._idle_outputs()

    def _idle_outputs(self):
        h = self._h
        for n in ("ar_arready", "r_rvalid", "r_rlast", "r_rid", "r_rdata", "aw_awready",
                  "w_wready", "b_bvalid", "b_bid"):
            h[n].value = 0

    def start(self):
        self._tasks = [cocotb.start_soon(self._read_loop()),
                       cocotb.start_soon(self._write_loop())]

    def stop(self):
        """Drop every transaction in flight (for a core reset) and drive the port idle."""
        for t in self._tasks:
            t.cancel()
        self._tasks = []
        self._idle_outputs()

    def clear(self):
        from sim.memory import SparseMemory
        self.mem = SparseMemory()

    def _now(self):
        return int(get_sim_time("ns") // self.period_ns)

    def _go(self):
        return self.rng is None or self.rng.random() >= self.busy

    def _delay(self):
        lo, hi = self.latency
        return lo if self.rng is None or hi <= lo else self.rng.randint(lo, hi)

    def _burst_ok(self, kind, addr, beats):
        start = addr - addr % self.bytes
        if (start & 0xFFF) + beats * self.bytes > 0x1000:
            self.errors.append(f"{self.prefix} {kind} burst at {addr:#x} of {beats} beats "
                               "crosses a 4 KiB boundary")

    async def _read_loop(self):
        h, edge, nb = self._h, self._edge, self.bytes
        arvalid, rready = h["ar_arvalid"], h["r_rready"]
        bursts = []                     # [due cycle, id, beat addresses' base, beats, data]
        ar_ready = r_valid = 0
        beat = 0
        while True:
            if not bursts and not r_valid:
                if ar_ready:
                    h["ar_arready"].value = ar_ready = 0
                if not arvalid.value:
                    await RisingEdge(arvalid)
            # drive for the coming edge
            want = int(len(bursts) < self.outstanding and self._go())
            if want != ar_ready:
                h["ar_arready"].value = ar_ready = want
            if not r_valid and bursts and bursts[0][0] <= self._now() and self._go():
                b = bursts[0]
                if b[4] is None:
                    b[4] = self.mem.read(b[2], b[3] * nb).tobytes()
                h["r_rdata"].value = int.from_bytes(b[4][beat * nb:(beat + 1) * nb], "little")
                h["r_rlast"].value = int(beat == b[3] - 1)
                h["r_rid"].value = b[1]
                h["r_rvalid"].value = r_valid = 1
            await edge
            if r_valid and rready.value:
                beat += 1
                h["r_rvalid"].value = r_valid = 0
                if beat == bursts[0][3]:
                    bursts.pop(0)
                    beat = 0
                    self.reads += 1
            if ar_ready and arvalid.value:
                addr = int(h["ar_araddr"].value)
                beats = int(h["ar_arlen"].value) + 1
                self._burst_ok("read", addr, beats)
                bursts.append([self._now() + self._delay(), int(h["ar_arid"].value),
                               addr - addr % nb, beats, None])

    async def _write_loop(self):
        h, edge, nb = self._h, self._edge, self.bytes
        awvalid, wvalid, bready = h["aw_awvalid"], h["w_wvalid"], h["b_bready"]
        full = (1 << nb) - 1
        aws, wbursts, wbeats, resps = [], [], [], []   # addresses, complete data, current, B
        aw_ready = w_ready = b_valid = 0
        while True:
            if not aws and not wbeats and not wbursts and not resps and not b_valid:
                if aw_ready:
                    h["aw_awready"].value = aw_ready = 0
                if w_ready:
                    h["w_wready"].value = w_ready = 0
                if not awvalid.value and not wvalid.value:
                    await First(RisingEdge(awvalid), RisingEdge(wvalid))
            want = int(len(aws) < self.outstanding and self._go())
            if want != aw_ready:
                h["aw_awready"].value = aw_ready = want
            want = int(self._go())
            if want != w_ready:
                h["w_wready"].value = w_ready = want
            if not b_valid and resps and resps[0][0] <= self._now() and self._go():
                h["b_bid"].value = resps[0][1]
                h["b_bvalid"].value = b_valid = 1
            await edge
            if b_valid and bready.value:
                resps.pop(0)
                h["b_bvalid"].value = b_valid = 0
            if aw_ready and awvalid.value:
                addr = int(h["aw_awaddr"].value)
                beats = int(h["aw_awlen"].value) + 1
                self._burst_ok("write", addr, beats)
                aws.append((int(h["aw_awid"].value), addr - addr % nb, beats))
            if w_ready and wvalid.value:
                wbeats.append((int(h["w_wdata"].value), int(h["w_wstrb"].value)))
                if h["w_wlast"].value:
                    wbursts.append(wbeats)
                    wbeats = []
            while aws and wbursts:
                (bid, base, beats), data = aws.pop(0), wbursts.pop(0)
                if len(data) != beats:
                    self.errors.append(f"{self.prefix} write burst at {base:#x}: awlen says "
                                       f"{beats} beats, wlast after {len(data)}")
                for i, (word, strb) in enumerate(data):
                    self._store(base + i * nb, word, strb, full)
                self.writes += 1
                resps.append((self._now() + self._delay(), bid))

    def _store(self, addr, word, strb, full):
        nb = self.bytes
        raw = word.to_bytes(nb, "little")
        if strb == full:
            self.mem.write(addr, np.frombuffer(raw, np.uint8))
            return
        i = 0
        while strb:                      # contiguous runs of strobed bytes
            if strb & 1:
                j = i
                while strb & 1:
                    strb >>= 1
                    j += 1
                self.mem.write(addr + i, np.frombuffer(raw, np.uint8, j - i, i))
                i = j
            else:
                strb >>= 1
                i += 1


def _full_width_incr(ram):
    """Make a cocotbext-axi RAM treat every burst as full-width INCR.

    NVDLA's AW/AR channels have no ``*size``/``*burst`` signals (spec: DBBIF / SRAMIF: every
    burst is full bus width, INCR). cocotbext-axi builds each address transaction with absent
    fields at 0, i.e. 1-byte beats of a FIXED burst; give this RAM's sinks a transaction type
    whose absent fields default to the bus width and INCR instead.
    """
    size = (ram.write_if.byte_lanes - 1).bit_length()
    for ch, pre in ((ram.write_if.aw_channel, "aw"), (ram.read_if.ar_channel, "ar")):
        base = ch._transaction_obj

        def init(self, *args, _base=base, _pre=pre, **kwargs):
            kwargs.setdefault(f"{_pre}size", size)
            kwargs.setdefault(f"{_pre}burst", 1)             # INCR
            _base.__init__(self, *args, **kwargs)

        ch._transaction_obj = type(base.__name__, (base,), {"__init__": init})


class CoreBench:
    """Owns the clock, reset and bus models of one NvdlaCore simulation.

    ``memory``: True = cocotbext-axi ``AxiRam``s (``dbb`` / ``sram``), "sparse" =
    :class:`SparseAxiMemory` slaves (``dbb`` / ``sram``; ``mem_options`` go to them), False =
    the memory ports tied idle.
    """

    def __init__(self, dut, cfg):
        self.dut, self.cfg = dut, cfg
        self.rmap = register_map(cfg)
        self.csb = CsbDriver(dut)
        self.interrupt_edges = []       # cycle numbers of interrupt rising edges
        self.dbb = self.sram = None

    @classmethod
    async def start(cls, dut, cfg=None, *, memory=True, seed=None, mem_options=None,
                    clock_impl=None):
        tb = cls(dut, cfg or config_from_env())
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns", impl=clock_impl).start())
        dut.csb2nvdla_valid.value = 0
        dut.csb2nvdla_addr.value = 0
        dut.csb2nvdla_wdat.value = 0
        dut.csb2nvdla_write.value = 0
        dut.csb2nvdla_nposted.value = 0
        dut.rst.value = 1
        if memory == "sparse":
            tb._attach_sparse(random.Random(seed), **(mem_options or {}))
        elif memory:
            tb._attach_memories(random.Random(seed))
        else:
            tb._tie_memories()
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        for m in tb._sparse():
            m.start()
        cocotb.start_soon(tb._watch_interrupt())
        return tb

    def _sparse(self):
        return [m for m in (self.dbb, self.sram) if isinstance(m, SparseAxiMemory)]

    def _attach_sparse(self, rng, backpressure=True, busy=0.3, latency=(1, 16)):
        widths = {"nvdla_core2dbb": self.cfg.dbbif_width, "nvdla_core2sram": self.cfg.sramif_width}
        mems = [SparseAxiMemory(self.dut, p, widths[p], rng=rng if backpressure else None,
                                busy=busy, latency=latency,
                                outstanding=max(1, min(self.cfg.outstanding, 64)))
                for p in self._prefixes()]
        self.dbb = mems[0]
        self.sram = mems[1] if len(mems) > 1 else None

    async def reset(self, cycles=3):
        """Reset the core (``rst`` for ``cycles`` cycles); sparse memories drop what they
        have in flight (their contents stay: ``clear()`` them for a fresh memory)."""
        for m in self._sparse():
            m.stop()
        self.dut.csb2nvdla_valid.value = 0
        self.dut.rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        for m in self._sparse():
            m.start()
        self.interrupt_edges.clear()

    def _tie_memories(self):
        for prefix in self._prefixes():
            for sig in ("aw_awready", "w_wready", "b_bvalid", "ar_arready", "r_rvalid",
                        "b_bid", "r_rid", "r_rlast", "r_rdata"):
                getattr(self.dut, f"{prefix}_{sig}").value = 0

    def _prefixes(self):
        return ["nvdla_core2dbb"] + (["nvdla_core2sram"] if self.cfg.sramif else [])

    def _attach_memories(self, rng):
        from cocotbext.axi import AxiBus, AxiRam, AxiReadBus, AxiWriteBus
        from cocotbext.axi.axi_channels import AxiARBus, AxiAWBus

        class AWBus(AxiAWBus):          # NVDLA has no awsize/awburst: full-width INCR only
            _signals = ["awid", "awaddr", "awlen", "awvalid", "awready"]

        class ARBus(AxiARBus):
            _signals = ["arid", "araddr", "arlen", "arvalid", "arready"]

        from cocotbext.axi.axi_channels import AxiARSink, AxiBBus, AxiAWSink, AxiRBus, AxiWBus
        # NVDLA's awlen/arlen are 4 bits (spec tables), cocotbext-axi checks for AXI4's 8.
        for sink, sig in ((AxiAWSink, "awlen"), (AxiARSink, "arlen")):
            sink._signal_widths = {k: v for k, v in sink._signal_widths.items() if k != sig}
        rams = []
        for prefix in self._prefixes():
            d = self.dut
            bus = AxiBus(
                write=AxiWriteBus(aw=AWBus.from_prefix(d, f"{prefix}_aw"),
                                  w=AxiWBus.from_prefix(d, f"{prefix}_w"),
                                  b=AxiBBus.from_prefix(d, f"{prefix}_b")),
                read=AxiReadBus(ar=ARBus.from_prefix(d, f"{prefix}_ar"),
                                r=AxiRBus.from_prefix(d, f"{prefix}_r")))
            rams.append(AxiRam(bus, self.dut.clk, self.dut.rst, size=2 ** 32))
            # cocotbext-axi drives X on idle R/B payloads; the core's MCIF looks at rid/bid
            # while rvalid/bvalid are low (ready steered by ID), so start them at 0.
            for sig in ("r_rid", "r_rlast", "r_rdata", "b_bid"):
                getattr(d, f"{prefix}_{sig}").value = 0
        self.dbb = rams[0]
        self.sram = rams[1] if len(rams) > 1 else None
        for ram in rams:
            _full_width_incr(ram)

    def set_backpressure(self, rng, busy=0.3):
        """Random pauses on every channel of every memory (AXI back-pressure)."""
        def gen():
            while True:
                yield rng.random() < busy
        for ram in (self.dbb, self.sram):
            if ram is None:
                continue
            for ch in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                       ram.read_if.ar_channel, ram.read_if.r_channel):
                ch.set_pause_generator(gen())

    async def _watch_interrupt(self):
        pin = self.dut.nvdla2core_interrupt       # a register output: no glitches
        while True:
            await RisingEdge(pin)
            self.interrupt_edges.append(self.csb.cycle)

    @property
    def interrupt(self) -> int:
        return int(self.dut.nvdla2core_interrupt.value)

    async def ticks(self, n):
        for _ in range(n):
            await RisingEdge(self.dut.clk)

    # -- register access by name ---------------------------------------------------------
    def word(self, name) -> int:
        return self.rmap.address(name) >> 2

    async def write_reg(self, name, value=None, nposted=False, **fields):
        if value is None:
            _, reg = self.rmap.lookup(name)
            value = reg.pack(**fields)
        await self.csb.write(self.word(name), value, nposted)

    async def read_reg(self, name) -> int:
        return await self.csb.read(self.word(name))
