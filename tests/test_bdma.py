"""BDMA: the golden model (sim/bdma.py, in the golden core) and the RTL (hw/bdma.py).

Golden: worked copies (strides, MC->CV, CV->MC, MC->MC), the command FIFO / launch / group /
interrupt / STATUS behaviour, invalid programs, a trace through the golden engine.
RTL: the BDMA register file + ``Bdma`` driven over its CSB register bus, its DMA client ports
served by port-level models of the two memories (random back-pressure, latency, gaps and
completion delays); random programs (queued operations, both groups) compared with the golden
core fed the same CSB writes: both memories in full, interrupt pulses per group, STATUS and the
stall counters.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.sim import Simulator

from arch.config import NvdlaConfig
from arch.registers import register_map
from hw.mem.dma import DmaGeometry, word_layout
from sim.bdma import FIFO_DEPTH, BdmaOp, execute, program_writes
from sim.core import GoldenCore, UnitError
from sim.memory import SparseMemory

from .conftest import NV_SMALL_EXT

CFG = NvdlaConfig.preset("nv_full")
RMAP = register_map(CFG)
BLK = RMAP["BDMA"]
MC, CV = 1, 0


def waddr(reg):
    return (BLK.base + BLK[reg].offset) >> 2


def status(core, reg="STATUS"):
    return BLK[reg].unpack(core.csb_read(waddr(reg)))


def glb_done(core, g):
    f = RMAP["GLB"]["S_INTR_STATUS"][f"BDMA_DONE_STATUS{g}"]
    return (core.intr_status >> f.lsb) & 1


def queue(core, op):
    for a, d in program_writes(RMAP, op):
        core.csb_write(a, d)


def launch(core, g):
    core.csb_write(waddr(f"CFG_LAUNCH{g}"), 1)


def fill(mem, addr, size, seed):
    data = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    mem.write(addr, data)
    return data


def expected_copy(src_bytes, src_base, op):
    """Hand-written reference: the lines of ``op`` out of ``src_bytes`` (loaded at
    ``src_base``), in transfer order."""
    out = []
    for s in range(op.surfaces):
        for h in range(op.lines):
            a = op.src_addr + s * op.src_surf_stride + h * op.src_line_stride - src_base
            out.append(src_bytes[a:a + op.line_bytes])
    return out


# ============================================================================================
# golden model
# ============================================================================================
def test_golden_strided_copy_mc_to_cv():
    core = GoldenCore(CFG)
    src = fill(core.dbb, 0x8000_0000, 0x4000, 1)
    before = fill(core.sram, 0x1000, 0x2000, 2)
    op = BdmaOp(src_addr=0x8000_0100, dst_addr=0x1040, line_size=2, line_repeat=3,
                surf_repeat=2, src_line_stride=0x200, dst_line_stride=0x80,
                src_surf_stride=0x1000, dst_surf_stride=0x400, src_ram=MC, dst_ram=CV)
    queue(core, op)
    assert status(core) == {"FREE_SLOT": FIFO_DEPTH - 1, "IDLE": 0, "GRP0_BUSY": 0,
                            "GRP1_BUSY": 0}
    assert core.run() == 0                           # queued, not launched: nothing moves
    assert np.array_equal(core.sram.read(0x1000, 0x2000), before)
    launch(core, 0)
    assert status(core)["GRP0_BUSY"] == 1
    assert core.run() == 1
    exp = before.copy()
    lines = expected_copy(src, 0x8000_0000, op)
    for s in range(3):
        for h in range(4):
            a = 0x1040 + s * 0x400 + h * 0x80 - 0x1000
            exp[a:a + 96] = lines[s * 4 + h]
    assert np.array_equal(core.sram.read(0x1000, 0x2000), exp)
    assert status(core) == {"FREE_SLOT": FIFO_DEPTH, "IDLE": 1, "GRP0_BUSY": 0, "GRP1_BUSY": 0}
    assert glb_done(core, 0) == 1 and glb_done(core, 1) == 0
    assert core.log[-1] == (("BDMA",), (0,), "BDMA group 0 (1 operation)")


@pytest.mark.parametrize("src_ram,dst_ram", [(CV, MC), (MC, MC), (CV, CV)])
def test_golden_directions(src_ram, dst_ram):
    core = GoldenCore(CFG)
    mems = {MC: core.dbb, CV: core.sram}
    src = fill(mems[src_ram], 0x10000, 0x1000, 3)
    op = BdmaOp(src_addr=0x10020, dst_addr=0x40000, line_size=0, line_repeat=4,
                src_line_stride=0x60, dst_line_stride=0x20, src_ram=src_ram, dst_ram=dst_ram)
    queue(core, op)
    launch(core, 1)
    core.run()
    got = mems[dst_ram].read(0x40000, 5 * 32)      # packed destination
    assert np.array_equal(got, np.concatenate(expected_copy(src, 0x10000, op)))
    other = mems[1 - dst_ram] if src_ram != dst_ram else None
    if other is not None:
        assert not other.read(0x40000, 5 * 32).any()
    assert glb_done(core, 1) == 1 and glb_done(core, 0) == 0


def test_golden_queue_groups_and_interrupts():
    core = GoldenCore(CFG)
    fill(core.dbb, 0, 0x10000, 4)
    ops = [BdmaOp(src_addr=0x1000 * i, dst_addr=0x100 * i, line_size=i, src_ram=MC,
                  dst_ram=CV) for i in range(5)]
    for k, op in enumerate(ops[:3]):
        queue(core, op)
        assert status(core)["FREE_SLOT"] == FIFO_DEPTH - 1 - k
    launch(core, 0)                                  # ops 0..2 are group 0
    for op in ops[3:]:
        queue(core, op)
    assert status(core) == {"FREE_SLOT": FIFO_DEPTH - 5, "IDLE": 0, "GRP0_BUSY": 1,
                            "GRP1_BUSY": 0}
    assert core.step()                               # group 0 runs first
    assert status(core) == {"FREE_SLOT": FIFO_DEPTH - 2, "IDLE": 0, "GRP0_BUSY": 0,
                            "GRP1_BUSY": 0}
    assert glb_done(core, 0) and not glb_done(core, 1)
    assert core.pending() == ["BDMA: 2 operation(s) queued, waiting for CFG_LAUNCH0/1"]
    launch(core, 1)
    assert core.run() == 1
    assert glb_done(core, 1)
    assert [w for _, _, w in core.log] == ["BDMA group 0 (3 operations)",
                                           "BDMA group 1 (2 operations)"]
    for op in ops:
        assert np.array_equal(core.sram.read(op.dst_addr, op.line_bytes),
                              core.dbb.read(op.src_addr, op.line_bytes))
    # The GLB interrupt line follows S_INTR_MASK; writing 1 clears the status bit.
    glb = RMAP["GLB"]
    assert core.interrupt
    core.csb_write((glb.base + glb["S_INTR_MASK"].offset) >> 2, 0xC0)
    assert not core.interrupt
    core.csb_write((glb.base + glb["S_INTR_STATUS"].offset) >> 2, 0x40)
    assert not glb_done(core, 0) and glb_done(core, 1)
    # Stall counters read 0 in the untimed model, and CFG_STATUS is plain storage.
    core.csb_write(waddr("CFG_STATUS"), 1)
    assert status(core, "CFG_STATUS") == {"STALL_COUNT_EN": 1}
    for reg in ("STATUS_GRP0_READ_STALL", "STATUS_GRP1_WRITE_STALL"):
        assert status(core, reg) == {"COUNT": 0}


def test_golden_overlapping_destination_lines_last_wins():
    core = GoldenCore(CFG)
    src = fill(core.dbb, 0, 0x1000, 5)
    op = BdmaOp(src_addr=0, dst_addr=0x100, line_size=1, line_repeat=2, src_line_stride=64,
                dst_line_stride=32, src_ram=MC, dst_ram=CV)
    queue(core, op)
    launch(core, 0)
    core.run()
    exp = np.concatenate([src[0:32], src[64:96], src[128:192]])
    assert np.array_equal(core.sram.read(0x100, 128), exp)


def test_golden_trace_engine(tmp_path):
    from sim.trace_run import run_trace
    import zlib
    src = np.random.default_rng(6).integers(0, 256, 0x400, dtype=np.uint8)
    op = BdmaOp(src_addr=0x2000, dst_addr=0x80, line_size=3, line_repeat=1,
                src_line_stride=0x200, dst_line_stride=0x80, src_ram=MC, dst_ram=CV)
    expected = np.concatenate(expected_copy(src, 0x2000, op))      # packed at 0x80
    crc = zlib.crc32(expected.tobytes()) & 0xFFFFFFFF
    lines = ["// bdma copy", 'mem_load(pri_mem, 0x2000, "src.dat");']
    for name, word in op.registers().items():
        lines.append(f"reg_write(NVDLA_BDMA.{name}_0, {word:#x});")
    lines += ["reg_write(NVDLA_BDMA.CFG_OP_0, 0x1);", "reg_write(NVDLA_BDMA.CFG_LAUNCH0_0, 0x1);",
              "intr_notify(BDMA_0, sync_0);",
              "poll_reg_equal(NVDLA_BDMA.STATUS_0, 0x114);",
              f"check_crc(sync_0, sec_mem, 0x80, 0x100, {crc:#x});"]
    (tmp_path / "bdma.cfg").write_text("\n".join(lines) + "\n")
    payload = " ".join(f"{b:#04x}" for b in src)
    (tmp_path / "src.dat").write_text(f"{{offset:0x0, size:{src.size}, payload:{payload}}}\n")
    res = run_trace(str(tmp_path / "bdma.cfg"), CFG)
    assert res.passed, res.message
    assert res.checks and res.checks[0].passed


# -- invalid programs ---------------------------------------------------------------------------
def _error(core, writes):
    with pytest.raises(UnitError) as e:
        for a, d in writes:
            core.csb_write(a, d)
    return str(e.value)


def test_golden_rejects_misaligned_address():
    core = GoldenCore(CFG)
    op = BdmaOp(src_addr=0x1000, dst_addr=0x2000, line_size=0)
    writes = program_writes(RMAP, op, enable=False)
    writes += [(waddr("CFG_DST_LINE"), 0x48), (waddr("CFG_OP"), 1)]   # bits 4:0 set
    msg = _error(core, writes)
    assert "CFG_DST_LINE.STRIDE" in msg and "bits 4:0" in msg


def test_golden_rejects_bad_ranges_and_overlap():
    cases = [
        (dict(line_repeat=8192), "CFG_LINE_REPEAT.NUMBER"),
        (dict(surf_repeat=9000), "CFG_SURF_REPEAT.NUMBER"),
        (dict(src_ram=MC, dst_ram=MC, dst_addr=0x1040), "overlap"),
        (dict(src_addr=1 << 62), "2^62"),
    ]
    for kw, what in cases:
        core = GoldenCore(CFG)
        base = dict(src_addr=0x1000, dst_addr=0x8000, line_size=3, src_ram=MC, dst_ram=CV)
        base.update(kw)
        op = BdmaOp(**base)
        if "repeat" in what.lower():                  # beyond 13 bits: the model API only
            with pytest.raises(UnitError, match=what):
                op.validate(CFG)
            continue
        assert what in _error(core, program_writes(RMAP, op))


def test_golden_rejects_cv_without_sramif_and_wide_addresses():
    small = NvdlaConfig.preset("nv_small")
    op = BdmaOp(src_addr=0x1000, dst_addr=0x2000, line_size=0, src_ram=MC, dst_ram=CV)
    with pytest.raises(UnitError, match="CFG_CMD.DST_RAM_TYPE=CVSRAM.*sramif=False"):
        execute(small, op, SparseMemory(), None)
    narrow = CFG.replace(address_width=32, name="bdma32")
    op = BdmaOp(src_addr=0x1_0000_0000, dst_addr=0x2000, line_size=0)
    with pytest.raises(UnitError, match="CFG_SRC_ADDR_HIGH.V8.*32-bit"):
        op.validate(narrow)
    op = BdmaOp(src_addr=0xFFFF_FFE0, dst_addr=0x2000, line_size=1)
    with pytest.raises(UnitError, match="beyond the 32-bit"):
        op.validate(narrow)


def test_golden_rejects_fifo_overflow_and_bad_launches():
    core = GoldenCore(CFG)
    assert "no operation was queued" in _error(core, [(waddr("CFG_LAUNCH0"), 1)])
    op = BdmaOp(src_addr=0x1000, dst_addr=0x2000, line_size=0)
    for _ in range(FIFO_DEPTH):
        queue(core, op)
    assert status(core)["FREE_SLOT"] == 0
    assert "FREE_SLOT=0" in _error(core, [(waddr("CFG_OP"), 1)])
    core2 = GoldenCore(CFG)
    queue(core2, op)
    launch(core2, 1)
    queue(core2, op)
    assert "GRP1_BUSY=1" in _error(core2, [(waddr("CFG_LAUNCH1"), 1)])
    # CFG_OP / CFG_LAUNCH writes of 0 do nothing.
    core3 = GoldenCore(CFG)
    core3.csb_write(waddr("CFG_OP"), 0)
    core3.csb_write(waddr("CFG_LAUNCH0"), 0)
    assert status(core3) == {"FREE_SLOT": FIFO_DEPTH, "IDLE": 1, "GRP0_BUSY": 0, "GRP1_BUSY": 0}


# ============================================================================================
# RTL
# ============================================================================================
GEOM = DmaGeometry(CFG)
WL = word_layout(GEOM)


def request_words(g, addr, atoms):
    """(word address, atom mask) of every word a request touches."""
    first = addr >> g.atom_shift
    last = first + atoms
    out = []
    wa = (first // g.atoms_per_word) * g.atoms_per_word
    while wa <= last:
        mask = 0
        for i in range(g.atoms_per_word):
            if first <= wa + i <= last:
                mask |= 1 << i
        out.append((wa << g.atom_shift, mask))
        wa += g.atoms_per_word
    return out


class _Top(Elaboratable):
    """The BDMA register file and the unit, wired as in the core."""

    def __init__(self, cfg):
        from hw.bdma import Bdma
        from hw.regfile import RegisterFile
        self.rf = RegisterFile(register_map(cfg)["BDMA"])
        self.bdma = Bdma(cfg)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rf, m.submodules.bdma = rf, bdma = self.rf, self.bdma
        bus = rf.bus
        m.d.comb += [bdma.s.eq(rf.s), rf.status.eq(bdma.status),
                     bdma.csb_we.eq(bus.sel & bus.we), bdma.csb_addr.eq(bus.addr),
                     bdma.csb_wdata.eq(bus.wdata)]
        return m


class Memories:
    """Port-level model of the two memory interfaces behind ``rd_bdma`` / ``wr_bdma``:
    random request back-pressure, read words after a random latency (request order) with
    gaps and junk outside the mask, write words checked against the requests (address order,
    exact masks), masked writes, completions after a random delay (0..2 per cycle)."""

    def __init__(self, g, rd, wr, mems, rng, p_req=0.7, max_lat=8, p_gap=0.3, p_dat=0.7,
                 max_done=10):
        self.g, self.rd, self.wr, self.mems, self.rng = g, rd, wr, mems, rng
        self.p_req, self.max_lat, self.p_gap, self.p_dat, self.max_done = \
            p_req, max_lat, p_gap, p_dat, max_done
        self.words = []                  # read words: (due cycle, ram, word addr, mask)
        self.cur = None
        self.last_due = 0
        self.expect = []                 # write words: (ram, word addr, mask, final)
        self.due = []
        self.writes = []                 # accepted write requests (ram, addr, atoms)
        self.rd_stalls = self.wr_stalls = 0

    def drive(self, ctx, now):
        g, rng = self.g, self.rng
        self.r_rdy = rng.random() < self.p_req
        self.w_rdy = rng.random() < self.p_req
        self.d_rdy = rng.random() < self.p_dat
        ctx.set(self.rd.req.ready, self.r_rdy)
        ctx.set(self.wr.req.ready, self.w_rdy)
        ctx.set(self.wr.dat.ready, self.d_rdy)
        if (self.cur is None and self.words and self.words[0][0] <= now
                and rng.random() >= self.p_gap):
            _, ram, wa, mk = self.cur = self.words.pop(0)
            raw = self.mems[ram].read(wa, g.word_bytes).tobytes()
            v = int.from_bytes(raw, "little")
            junk = rng.getrandbits(g.word_bits)
            for i in range(g.atoms_per_word):
                if not (mk >> i) & 1:
                    lane = ((1 << g.atom_bits) - 1) << (i * g.atom_bits)
                    v = (v & ~lane) | (junk & lane)
            ctx.set(self.rd.resp.payload, WL.const({"data": v, "mask": mk}))
        ctx.set(self.rd.resp.valid, self.cur is not None)
        ready = [t for t in self.due if t <= now][:2]
        for t in ready:
            self.due.remove(t)
        self.n_done = len(ready)
        ctx.set(self.wr.done, self.n_done)

    def observe(self, ctx, now):
        g = self.g
        if ctx.get(self.rd.req.valid):
            if self.r_rdy:
                r = ctx.get(self.rd.req.payload)
                t = max(self.last_due, now + 1 + self.rng.randrange(self.max_lat + 1))
                self.last_due = t
                self.words += [(t, r.ram_type, wa, mk)
                               for wa, mk in request_words(g, r.addr, r.atoms)]
            else:
                self.rd_stalls += 1
        if self.cur is not None and ctx.get(self.rd.resp.ready):
            self.cur = None
        stalled = False
        if ctx.get(self.wr.req.valid):
            if self.w_rdy:
                r = ctx.get(self.wr.req.payload)
                self.writes.append((r.ram_type, r.addr, r.atoms))
                ws = request_words(g, r.addr, r.atoms)
                self.expect += [(r.ram_type, wa, mk, i == len(ws) - 1)
                                for i, (wa, mk) in enumerate(ws)]
            else:
                stalled = True
        if ctx.get(self.wr.dat.valid):
            if self.d_rdy:
                d = ctx.get(self.wr.dat.payload)
                assert self.expect, "write data before its request"
                ram, wa, mk, final = self.expect.pop(0)
                assert d.mask == mk, f"write mask {d.mask:b} != {mk:b} at {wa:#x}"
                raw = np.frombuffer(d.data.to_bytes(g.word_bytes, "little"), dtype=np.uint8)
                for i in range(g.atoms_per_word):
                    if (mk >> i) & 1:
                        a = i * g.atom_bytes
                        self.mems[ram].write(wa + a, raw[a:a + g.atom_bytes])
                if final:
                    self.due.append(now + 1 + self.rng.randrange(self.max_done + 1))
            else:
                stalled = True
        self.wr_stalls += stalled


class Csb:
    """Drives the BDMA register bus: a list of actions (write, wait for an interrupt, idle
    cycles), one write per cycle; records interrupt pulses and stall windows."""

    def __init__(self, top, actions, mem):
        self.top, self.actions, self.mem = top, list(actions), mem
        self.pulses = []                 # (cycle, group)
        self.waiting = None
        self.seen, self.consumed = [0, 0], [0, 0]
        self.idle = 0
        self.snapshots = {}              # name -> {register: fields} read at a 'snap' action
        self.stall_marks = {}            # name -> (rd_stalls, wr_stalls) at a 'mark' action
        self.done = False

    def drive(self, ctx, now):
        bus = self.top.rf.bus
        ctx.set(bus.sel, 0)
        ctx.set(bus.we, 0)
        while self.actions and self.waiting is None and self.idle == 0:
            kind, *args = self.actions[0]
            if kind == "write":
                self.actions.pop(0)
                ctx.set(bus.sel, 1)
                ctx.set(bus.we, 1)
                ctx.set(bus.addr, args[0])
                ctx.set(bus.wdata, args[1])
                return
            if kind == "wait_intr":          # like a GLB status bit: an earlier pulse counts
                g = args[0]
                if self.seen[g] > self.consumed[g]:
                    self.consumed[g] += 1
                else:
                    self.waiting = g
            elif kind == "idle":
                self.idle = args[0]
            elif kind == "snap":
                self.snapshots[args[0]] = self.read_status(ctx)
            elif kind == "mark":
                self.stall_marks[args[0]] = (self.mem.rd_stalls, self.mem.wr_stalls)
            self.actions.pop(0)

    def read_status(self, ctx):
        out = {}
        for reg in ("STATUS", "STATUS_GRP0_READ_STALL", "STATUS_GRP0_WRITE_STALL",
                    "STATUS_GRP1_READ_STALL", "STATUS_GRP1_WRITE_STALL"):
            view = self.top.bdma.status[reg]
            out[reg] = {f: ctx.get(view[f]) for f, _ in view.shape()}
        return out

    def observe(self, ctx, now):
        intr = ctx.get(self.top.bdma.intr)
        for g in range(2):
            if intr >> g & 1:
                self.pulses.append((now, g))
                self.seen[g] += 1
                if self.waiting == g:
                    self.waiting = None
                    self.consumed[g] += 1
        if self.idle:
            self.idle -= 1
        self.done = not self.actions and self.waiting is None and self.idle == 0


class PortStalls:
    """Counts the cycles the BDMA's read request, and its write request or data, wait."""

    def __init__(self, bdma):
        self.rd, self.wr = bdma.rd_bdma, bdma.wr_bdma
        self.rd_stalls = self.wr_stalls = 0

    def drive(self, ctx, now):
        pass

    def observe(self, ctx, now):
        rq, wq, wd = self.rd.req, self.wr.req, self.wr.dat
        self.rd_stalls += ctx.get(rq.valid) and not ctx.get(rq.ready)
        self.wr_stalls += (ctx.get(wq.valid) and not ctx.get(wq.ready)) or \
            (ctx.get(wd.valid) and not ctx.get(wd.ready))


class _E2E(_Top):
    """Register file + Bdma + DmaInterfaces (MCIF and CVIF) with AXI ports."""

    def __init__(self, cfg):
        from hw.mem.dmaif import DmaInterfaces
        super().__init__(cfg)
        self.dmaif = DmaInterfaces(cfg, ["bdma"], ["bdma"])

    def elaborate(self, platform):
        from amaranth.lib import wiring
        m = super().elaborate(platform)
        m.submodules.dmaif = self.dmaif
        wiring.connect(m, bdma=self.bdma.rd_bdma, dmaif=self.dmaif.rd_bdma)
        wiring.connect(m, bdma=self.bdma.wr_bdma, dmaif=self.dmaif.wr_bdma)
        return m


def run_e2e(actions, mems, seed, max_cycles=60000, latency=(0, 40), backpressure=0.3):
    """Run Bdma behind DmaInterfaces on AXI memory models sharing ``mems``."""
    from tb.axi_model import AxiMemoryModel
    top = _E2E(CFG)
    rng = random.Random(seed)
    stalls = PortStalls(top.bdma)
    csb = Csb(top, actions, stalls)
    sim = Simulator(top)
    sim.add_clock(1e-8)
    axis = [AxiMemoryModel(top.dmaif, prefix, width, rng=rng, memory=mems[ram],
                           latency=latency, backpressure=backpressure,
                           max_burst=CFG.max_burst_length)
            for prefix, width, ram in (("dbb", CFG.dbbif_width, MC),
                                       ("sram", CFG.sramif_width, CV))]
    for a in axis:
        a.add_to(sim)
    result = {}

    async def tb(ctx):
        for now in range(max_cycles):
            csb.drive(ctx, now)
            csb.observe(ctx, now)
            stalls.observe(ctx, now)
            if csb.done and ctx.get(top.bdma.status.STATUS.IDLE) and all(a.idle for a in axis):
                result["cycles"] = now
                result["final"] = csb.read_status(ctx)
                return
            await ctx.tick()
        raise AssertionError(f"timeout after {max_cycles} cycles (deadlock?)")

    sim.add_testbench(tb)
    sim.run()
    return csb, stalls, result


def run_rtl(actions, mems, seed, max_cycles=40000, **mem_kw):
    """Run the RTL on ``actions``; returns (Csb, Memories, cycles)."""
    top = _Top(CFG)
    rng = random.Random(seed)
    mem = Memories(GEOM, top.bdma.rd_bdma, top.bdma.wr_bdma, mems, rng, **mem_kw)
    csb = Csb(top, actions, mem)
    sim = Simulator(top)
    sim.add_clock(1e-8)
    result = {}

    async def tb(ctx):
        for now in range(max_cycles):
            csb.drive(ctx, now)
            mem.drive(ctx, now)
            csb.observe(ctx, now)
            mem.observe(ctx, now)
            if csb.done and ctx.get(top.bdma.status.STATUS.IDLE):
                result["cycles"] = now
                result["final"] = csb.read_status(ctx)
                return
            await ctx.tick()
        raise AssertionError(f"timeout after {max_cycles} cycles (deadlock?)")

    sim.add_testbench(tb)
    sim.run()
    return csb, mem, result


# -- random programs --------------------------------------------------------------------------
REGION = 0x4000                         # bytes per source / destination slot


def random_op(rng, k):
    """Operation ``k``: its source in slot 2k, destination in slot 2k+1 of its memory, so no
    operation reads what another writes and nothing overlaps."""
    line_size = rng.randrange(4)        # 1..4 units (32..128 bytes)
    lb = (line_size + 1) * 32
    lines, surfs = rng.randrange(1, 5), rng.randrange(1, 4)

    def strides():
        ls = lb + 32 * rng.choice([0, 0, 1, 3])
        ss = lines * ls + 32 * rng.choice([0, 1, 5])
        return ls, ss
    sls, sss = strides()
    dls, dss = strides()
    hi = rng.choice([0, 0, 1, 0x12])    # exercise ADDR_HIGH
    base = (hi << 32) + 0x10000
    return BdmaOp(src_addr=base + 2 * k * REGION + 32 * rng.randrange(8),
                  dst_addr=base + (2 * k + 1) * REGION + 32 * rng.randrange(8),
                  line_size=line_size, line_repeat=lines - 1, surf_repeat=surfs - 1,
                  src_line_stride=sls, dst_line_stride=dls, src_surf_stride=sss,
                  dst_surf_stride=dss, src_ram=rng.choice([MC, CV]), dst_ram=rng.choice([MC, CV]))


def block_writes(op, enable=True):
    """Register-bus writes (block word offset, data) programming ``op``."""
    out = [("write", BLK[r].offset >> 2, w) for r, w in op.registers().items()]
    if enable:
        out.append(("write", BLK["CFG_OP"].offset >> 2, 1))
    return out


def init_memories(ops, seed):
    """Both memories with random bytes over every slot any operation touches (so a stray
    write shows), identical copies for the golden core."""
    rtl = {MC: SparseMemory(), CV: SparseMemory()}
    core = GoldenCore(CFG)
    gold = {MC: core.dbb, CV: core.sram}
    rng = np.random.default_rng(seed)
    for k, op in enumerate(ops):
        for addr in (op.src_addr, op.dst_addr):
            base = addr - addr % REGION
            for ram in (MC, CV):
                data = rng.integers(0, 256, REGION + 0x400, dtype=np.uint8)
                rtl[ram].write(base, data)
                gold[ram].write(base, data)
    return rtl, core


def compare_memories(rtl, core):
    gold = {MC: core.dbb, CV: core.sram}
    for ram in (MC, CV):
        pages = set(rtl[ram].touched()) | set(gold[ram].touched())
        for p in sorted(pages):
            a, b = rtl[ram].read(p, 1 << 16), gold[ram].read(p, 1 << 16)
            if not np.array_equal(a, b):
                bad = np.flatnonzero(a != b)
                raise AssertionError(f"memory {'MC' if ram else 'CV'}: {bad.size} bytes differ "
                                     f"from the golden model, first at {p + bad[0]:#x}")


def build_program(rng, rounds, seq):
    """Random rounds: per round, a batch for group 0 and/or group 1. ``seq``: wait for each
    group's interrupt before the next launch (unambiguous stall accounting)."""
    ops, actions, launches = [], [], []
    for r in range(rounds):
        groups = rng.choice([[0], [1], [0, 1], [1, 0]])
        for g in groups:
            n = rng.randrange(1, 4)
            batch = [random_op(rng, len(ops) + i) for i in range(n)]
            ops += batch
            for op in batch:
                actions += block_writes(op)
                if rng.random() < 0.3:
                    actions.append(("idle", rng.randrange(1, 20)))
            actions.append(("idle", 3))     # the push lands 2 cycles after the write
            actions.append(("snap", f"r{r}g{g}_queued"))
            if seq:
                actions.append(("mark", f"r{r}g{g}"))
            actions.append(("write", BLK[f"CFG_LAUNCH{g}"].offset >> 2, 1))
            launches.append((g, batch, f"r{r}g{g}"))
            if seq:
                actions.append(("wait_intr", g))
                actions.append(("snap", f"r{r}g{g}_done"))
                actions.append(("mark", f"r{r}g{g}_end"))
        if not seq:
            for g in groups:
                actions.append(("wait_intr", g))
    return ops, actions, launches


def golden_replay(core, actions, stall_en):
    """Feed the golden core the same register writes (it runs a batch where the RTL test
    waits for its interrupt); returns its STATUS at each snapshot."""
    snaps = {}
    core.csb_write(waddr("CFG_STATUS"), stall_en)
    for kind, *args in actions:
        if kind == "write":
            core.csb_write((BLK.base >> 2) + args[0], args[1])
        elif kind == "wait_intr":
            core.run()
        elif kind == "snap":
            snaps[args[0]] = status(core)
    core.run()
    snaps["final"] = status(core)
    return snaps


def check_run(seed, rounds, seq, stall_en, e2e=False, **kw):
    rng = random.Random(seed)
    ops, actions, launches = build_program(rng, rounds, seq)
    actions = [("write", BLK["CFG_STATUS"].offset >> 2, stall_en)] + actions
    rtl_mem, core = init_memories(ops, seed)
    if e2e:
        csb, mem, res = run_e2e(actions, rtl_mem, seed, **kw)
    else:
        csb, mem, res = run_rtl(actions, rtl_mem, seed, **kw)
    gsnaps = golden_replay(core, actions[1:], stall_en)
    compare_memories(rtl_mem, core)
    if not e2e:
        # Every write request is exactly one destination line of a programmed operation.
        lines = {(op.dst_ram, int(a), op.line_bytes // 32 - 1)
                 for op in ops for a in op.line_starts("dst")}
        assert set(mem.writes) == lines and len(mem.writes) == len(lines)
    # One interrupt pulse per launch, of its group, in completion order.
    assert sorted(g for _, g in csb.pulses) == sorted(g for g, _, _ in launches)
    if seq:
        assert [g for _, g in csb.pulses] == [g for g, _, _ in launches]
    # STATUS: queued snapshots equal the golden model's; final idle state.
    if seq:                              # (concurrent: the RTL drains while software queues)
        for name, st in csb.snapshots.items():
            assert st["STATUS"] == gsnaps[name], (name, st["STATUS"], gsnaps[name])
    assert res["final"]["STATUS"] == gsnaps["final"] == {
        "FREE_SLOT": FIFO_DEPTH, "IDLE": 1, "GRP0_BUSY": 0, "GRP1_BUSY": 0}
    if seq:
        # Stall counters: the group's read / write waits between its launch and its done.
        for g, _, name in launches:
            r0, w0 = csb.stall_marks[name]
            r1, w1 = csb.stall_marks[name + "_end"]
            st = csb.snapshots[name + "_done"]
            exp_r = (r1 - r0) if stall_en else 0
            exp_w = (w1 - w0) if stall_en else 0
            assert st[f"STATUS_GRP{g}_READ_STALL"]["COUNT"] == exp_r, name
            assert st[f"STATUS_GRP{g}_WRITE_STALL"]["COUNT"] == exp_w, name
            assert st["STATUS"]["GRP0_BUSY"] == st["STATUS"]["GRP1_BUSY"] == 0
    return res["cycles"], sum(op.nbytes for op in ops)


@pytest.mark.parametrize("seed", [1, 2])
def test_rtl_random_concurrent_groups(seed):
    check_run(seed, rounds=2, seq=False, stall_en=1)


@pytest.mark.parametrize("stall_en", [1, 0])
def test_rtl_sequential_groups_stall_counters(stall_en):
    check_run(10 + stall_en, rounds=2, seq=True, stall_en=stall_en, p_req=0.5, p_dat=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 40))
def test_rtl_random_sweep(seed):
    check_run(seed, rounds=4, seq=seed % 2 == 0, stall_en=seed % 3 != 0, e2e=seed >= 30)


def test_rtl_fifo_full_drops_and_busy():
    """20 queued operations fill the FIFO (FREE_SLOT 0, IDLE 0); a 21st push is dropped (the
    golden model rejects it); the launch runs the 20 and the group completes once. An empty
    launch completes without moving anything."""
    ops = [BdmaOp(src_addr=0x1000 + 0x40 * k, dst_addr=0x20000 + 0x40 * k, line_size=0,
                  src_ram=MC, dst_ram=CV) for k in range(FIFO_DEPTH + 1)]
    actions = []
    for op in ops:
        actions += block_writes(op)
    actions += [("snap", "full"), ("write", BLK["CFG_LAUNCH0"].offset >> 2, 1), ("idle", 2),
                ("snap", "busy"), ("wait_intr", 0), ("snap", "done"),
                # A launch with nothing queued (the golden model rejects it) completes at once.
                ("write", BLK["CFG_LAUNCH1"].offset >> 2, 1), ("wait_intr", 1)]
    mems = {MC: SparseMemory(), CV: SparseMemory()}
    fill(mems[MC], 0x1000, 0x1000, 8)
    fill(mems[CV], 0x20000, 0x1000, 9)
    before = mems[CV].read(0x20000, 0x1000)
    csb, mem, res = run_rtl(actions, mems, 7)
    assert csb.snapshots["full"]["STATUS"] == {"FREE_SLOT": 0, "IDLE": 0, "GRP0_BUSY": 0,
                                               "GRP1_BUSY": 0}
    assert csb.snapshots["busy"]["STATUS"]["GRP0_BUSY"] == 1
    assert [g for _, g in csb.pulses] == [0, 1]
    got = mems[CV].read(0x20000, 0x1000)
    exp = before.copy()
    for k in range(FIFO_DEPTH):
        exp[0x40 * k:0x40 * k + 32] = mems[MC].read(0x1000 + 0x40 * k, 32)
    assert np.array_equal(got, exp)      # the 21st operation never ran
    assert res["final"]["STATUS"]["IDLE"] == 1


@pytest.mark.parametrize("seq", [False, True])
def test_rtl_end_to_end_axi(seq):
    """Bdma -> DmaInterfaces -> AXI memory models of the DBBIF and SRAMIF (random latency and
    back-pressure): the same checks as above, stall counters included in sequential mode."""
    check_run(40 + seq, rounds=2, seq=seq, stall_en=1, e2e=True)


@pytest.mark.rtl
@pytest.mark.parametrize("cfg", [NV_SMALL_EXT,
                                 pytest.param(NvdlaConfig.preset("nv_large"),
                                              marks=pytest.mark.slow)],
                         ids=lambda c: c.name)
def test_bdma_core_axi_memories(cfg):
    """The generated core under cocotb (Icarus by default): BDMA programmed over the CSB,
    cocotbext-axi memories with random back-pressure on the DBBIF and SRAMIF, both memories
    compared with the golden model (tb/cocotb_bdma.py). nv_small_ext (64-bit buses, 32-bit
    addresses; its Verilog is the one the playback suites build) in the default suite, nv_large
    (512-bit buses, 64-bit addresses) in the slow one."""
    import shutil
    from tb.runner import run_cocotb, simulator
    for mod in ("cocotb", "cocotb_tools", "cocotbext.axi"):
        pytest.importorskip(mod)
    if simulator() == "icarus" and not (shutil.which("iverilog") and shutil.which("vvp")):
        pytest.skip("iverilog / vvp not on PATH")
    assert run_cocotb(cfg, "tb.cocotb_bdma") == 2
