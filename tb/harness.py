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
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from arch.config import NvdlaConfig
from arch.registers import register_map

__all__ = ["CoreBench", "CsbDriver", "config_from_env"]


def config_from_env() -> NvdlaConfig:
    """The build configuration the runner passed in ``NVDLA_CONFIG``."""
    return NvdlaConfig(**json.loads(os.environ["NVDLA_CONFIG"]))


class CsbDriver:
    """Drives csb2nvdla_* and collects nvdla2csb_* responses (spec: Configuration space bus).

    Requests are issued one per cycle while the core is ready; read data and write
    completions are matched to requests in order, which checks the spec's ordering rule.
    """

    def __init__(self, dut):
        self.dut = dut
        self.reads = []                 # read data in arrival order
        self.completions = 0            # non-posted write completions seen
        self.cycle = 0
        self.accepted = 0
        cocotb.start_soon(self._monitor())

    async def _monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            if dut.nvdla2csb_valid.value:
                self.reads.append(int(dut.nvdla2csb_data.value))
            if dut.nvdla2csb_wr_complete.value:
                self.completions += 1

    async def burst(self, ops):
        """Issue ``ops`` = [("r", word, None) | ("w", word, data) | ("wn", word, data)] back
        to back. Returns (read values in order, cycles from first to last acceptance)."""
        dut = self.dut
        n_reads = sum(1 for op in ops if op[0] == "r")
        n_np = sum(1 for op in ops if op[0] == "wn")
        reads0, comp0 = len(self.reads), self.completions
        first = last = None
        for kind, addr, data in ops:
            dut.csb2nvdla_valid.value = 1
            dut.csb2nvdla_addr.value = addr
            dut.csb2nvdla_wdat.value = data or 0
            dut.csb2nvdla_write.value = int(kind != "r")
            dut.csb2nvdla_nposted.value = int(kind == "wn")
            while True:
                await RisingEdge(dut.clk)
                if dut.csb2nvdla_ready.value:
                    break
            self.accepted += 1
            first = self.cycle if first is None else first
            last = self.cycle
        dut.csb2nvdla_valid.value = 0
        for _ in range(8):
            if len(self.reads) - reads0 >= n_reads and self.completions - comp0 >= n_np:
                break
            await RisingEdge(dut.clk)
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


class CoreBench:
    """Owns the clock, reset and bus models of one NvdlaCore simulation."""

    def __init__(self, dut, cfg):
        self.dut, self.cfg = dut, cfg
        self.rmap = register_map(cfg)
        self.csb = CsbDriver(dut)
        self.interrupt_edges = []       # CSB-monitor cycle numbers of interrupt rising edges
        self.dbb = self.sram = None

    @classmethod
    async def start(cls, dut, cfg=None, *, memory=True, seed=None):
        tb = cls(dut, cfg or config_from_env())
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.csb2nvdla_valid.value = 0
        dut.csb2nvdla_addr.value = 0
        dut.csb2nvdla_wdat.value = 0
        dut.csb2nvdla_write.value = 0
        dut.csb2nvdla_nposted.value = 0
        dut.rst.value = 1
        if memory:
            tb._attach_memories(random.Random(seed))
        else:
            tb._tie_memories()
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        cocotb.start_soon(tb._watch_interrupt())
        return tb

    def _tie_memories(self):
        for prefix in self._prefixes():
            for sig in ("aw_awready", "w_wready", "b_bvalid", "ar_arready", "r_rvalid"):
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
        self.dbb = rams[0]
        self.sram = rams[1] if len(rams) > 1 else None

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
        prev = 0
        while True:
            await RisingEdge(self.dut.clk)
            now = int(self.dut.nvdla2core_interrupt.value)
            if now and not prev:
                self.interrupt_edges.append(self.csb.cycle)
            prev = now

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
