"""Drive the SDP unit (hw/sdp/) in Amaranth simulation and check it against the golden model.

Bench: :class:`hw.sdp.Sdp` wired to :class:`hw.mem.dmaif.DmaInterfaces` and the AXI slave
model of ``tb/axi_model.py`` (random back-pressure and latency). :func:`run_layers` runs a
sequence of layers (register-word program dicts) in one simulation. For every layer the whole
memory after the RTL run must equal the golden model's (``sim.sdp.run_sdp`` on the same image:
output bytes written, nothing else touched), the counters in ``status`` / ``rdma_status`` at
``done`` must equal what the golden model reports (or the group's previous value when it
reports none), and PDP-bound layers must stream the golden model's padded output. An invalid
program (the golden model raises) must finish without a single AXI request.

Used by the SDP tests (tests/test_sdp.py) and the throughput benchmark
(bench/sdp_throughput.py).
"""

import random

import numpy as np
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from arch.registers import register_map
from hw.conv.common import conv_winograd
from hw.mem.dmaif import DmaInterfaces
from hw.sdp import Sdp
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.sdp import SdpProgramError, run_sdp
from sim.sdp.lut import SdpLut
from tb.axi_model import AxiMemoryModel

__all__ = ["SdpBench", "run_layers", "pdp_sink", "golden", "view_value", "field_values", "mem_diff",
           "memory_pages", "pdp_expected", "STALLS_SDP", "STALLS_RDMA"]

STALLS_SDP = {("D_PERF_WDMA_WRITE_STALL", "WDMA_STALL")}
STALLS_RDMA = {("D_PERF_MRDMA_READ_STALL", "MRDMA_STALL"),
               ("D_PERF_BRDMA_READ_STALL", "BRDMA_STALL"),
               ("D_PERF_NRDMA_READ_STALL", "NRDMA_STALL"),
               ("D_PERF_ERDMA_READ_STALL", "ERDMA_STALL")}


# -----------------------------------------------------------------------------------------
# Bench
# -----------------------------------------------------------------------------------------
class SdpBench(Elaboratable):
    def __init__(self, cfg):
        self.cfg = cfg
        self.sdp = Sdp(cfg)
        self.reads = ["sdp"] + [n for n, on in (("sdp_b", cfg.sdp_bs), ("sdp_n", cfg.sdp_bn),
                                                ("sdp_e", cfg.sdp_ew)) if on]
        self.dmaif = DmaInterfaces(cfg, self.reads, ["sdp"])

    def elaborate(self, platform):
        m = Module()
        m.submodules.sdp, m.submodules.dmaif = self.sdp, self.dmaif
        for n in self.reads:
            wiring.connect(m, getattr(self.sdp, f"rd_{n}"), getattr(self.dmaif, f"rd_{n}"))
        wiring.connect(m, self.sdp.wr_sdp, self.dmaif.wr_sdp)
        return m


def view_value(layout, block, words):
    """The register-field struct value of ``layout`` from register words (reset defaults)."""
    out = {}
    for reg, reg_layout in layout:
        r = block[reg]
        word = words.get(reg, r.reset)
        out[reg] = {fld: (word >> r[fld].lsb) & ((1 << r[fld].width) - 1)
                    for fld, _ in reg_layout.shape}
    return layout.const(out)


def flying_cube(block, words, cfg=None) -> dict:
    """The value of :func:`hw.conv.common.sdp_cube_layout` for an SDP register program
    (``block`` SDP's register table, ``words`` its register words): what the convolution
    pipeline's ``sdp`` input sees of SDP's consumer group (with ``cfg``: on a build with fp16
    whether it is an fp16 layer; on a build with batching its batch count and the low bits of
    its destination address and strides)."""
    v = GroupView(block, words)
    out = {"int16": int(v.D_DATA_FORMAT.PROC_PRECISION == 1),
           "width": v.D_DATA_CUBE_WIDTH.WIDTH, "height": v.D_DATA_CUBE_HEIGHT.HEIGHT,
           "channel": v.D_DATA_CUBE_CHANNEL.CHANNEL}
    if cfg is not None and "fp16" in cfg.data_types:
        out["fp16"] = int(v.D_DATA_FORMAT.PROC_PRECISION == 2)
    if cfg is not None and conv_winograd(cfg):
        out["winograd"] = v.D_FEATURE_MODE_CFG.WINOGRAD
    if cfg is not None and cfg.batching:
        mask = (1 << cfg.memory_atom.bit_length()) - 1
        out["batches"] = v.D_FEATURE_MODE_CFG.BATCH_NUMBER
        for key, reg, fld in (("base_lo", "D_DST_BASE_ADDR_LOW", "DST_BASE_ADDR_LOW"),
                              ("line_lo", "D_DST_LINE_STRIDE", "DST_LINE_STRIDE"),
                              ("surf_lo", "D_DST_SURFACE_STRIDE", "DST_SURFACE_STRIDE")):
            out[key] = (v[reg][fld] << block[reg][fld].lsb) & mask
    return out


def field_values(view, layout):
    return {(reg, fld): int(view[reg][fld]) for reg, rl in layout for fld, _ in rl.shape}


def golden(cfg, prog, mem, lut=None):
    """The golden model's result of ``prog`` on ``mem``; ``lut``: the LUT RAMs (by default
    ``prog["lut"]``'s tables)."""
    rmap = register_map(cfg)
    if lut is None:
        lut = SdpLut()
        if prog["lut"]:
            lut.load(le=prog["lut"][0], lo=prog["lut"][1])
    words = {**prog["sdp"], **prog["s"]}
    return run_sdp(cfg, GroupView(rmap["SDP_RDMA"], prog["rdma"]),
                   GroupView(rmap["SDP"], words), mem, lut=lut)


def mem_diff(a, b, limit=8):
    """The first differing byte addresses: [(addr, rtl, golden)]."""
    out = []
    for base in sorted(set(a.touched()) | set(b.touched())):
        x, y = a.read(base, 1 << 16), b.read(base, 1 << 16)
        for off in np.nonzero(x != y)[0][:limit - len(out)]:
            out.append((hex(base + int(off)), int(x[off]), int(y[off])))
    return out


def memory_pages(mem):
    return {base: mem.read(base, 1 << 16).tobytes() for base in mem.touched()
            if mem.read(base, 1 << 16).any()}


# -----------------------------------------------------------------------------------------
# Running layers
# -----------------------------------------------------------------------------------------
def pdp_sink(sdp, out, seed, ready_share):
    """A simulator process taking ``sdp``'s PDP stream (ready with probability
    ``ready_share``); every transfer is appended to ``out`` as (values, last)."""
    async def process(ctx):
        prng = random.Random(seed)
        async for _, _, valid, ready, payload in ctx.tick().sample(
                sdp.pdp.valid, sdp.pdp.ready, sdp.pdp.payload):
            if valid and ready:
                out.append(([int(v) for v in payload.data], int(payload.last)))
            ctx.set(sdp.pdp.ready, prng.random() < ready_share)
    return process


def run_layers(cfg, layers, seed, *, latency=(0, 12), backpressure=0.3, pdp_ready=0.7,
               max_cycles=40000):
    """Run ``layers`` (program dicts, ``"invalid"`` set on invalid ones) back to back; check
    each against the golden model. Returns the cycle counts per layer."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    bench = SdpBench(cfg)
    sdp = bench.sdp
    rng = random.Random(seed)
    mem = SparseMemory()
    axis = [AxiMemoryModel(bench.dmaif, "dbb", cfg.dbbif_width, rng=rng, latency=latency,
                           backpressure=backpressure, max_burst=cfg.max_burst_length,
                           memory=mem)]
    if cfg.sramif:
        axis.append(AxiMemoryModel(bench.dmaif, "sram", cfg.sramif_width, rng=rng,
                                   latency=latency, backpressure=backpressure,
                                   max_burst=cfg.max_burst_length, memory=mem))
    status_layouts = {"SDP": sdp.status.shape(), "SDP_RDMA": sdp.rdma_status.shape()}
    held = {blk: [dict.fromkeys(field_values_zero(lay), 0) for _ in range(2)]
            for blk, lay in status_layouts.items()}
    groups = {"SDP": 0, "SDP_RDMA": 0}
    pdp_out = []
    cycles = []
    golden_lut = SdpLut()

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    for a in axis:
        a.add_to(sim)

    sim.add_process(pdp_sink(sdp, pdp_out, seed + 1, pdp_ready))

    async def lut_write(ctx, table, entries):
        ctx.set(sdp.lut_cfg_wdata, (1 << 17) | (table << 16))
        ctx.set(sdp.lut_cfg_we, 1)
        await ctx.tick()
        ctx.set(sdp.lut_cfg_we, 0)
        ctx.set(sdp.lut_data_we, 1)
        for v in entries:
            ctx.set(sdp.lut_data_wdata, v & 0xFFFF)
            await ctx.tick()
        ctx.set(sdp.lut_data_we, 0)
        golden_lut.csb_write("S_LUT_ACCESS_CFG", (1 << 17) | (table << 16))
        for v in entries:
            golden_lut.csb_write("S_LUT_ACCESS_DATA", v & 0xFFFF)

    async def lut_readback(ctx, table, start, count):
        """Read entries through the CSB port and compare with the golden LUT (past the end
        reads 0); returns nothing, asserts."""
        word = (table << 16) | start
        ctx.set(sdp.lut_cfg_wdata, word)
        ctx.set(sdp.lut_cfg_we, 1)
        await ctx.tick()
        ctx.set(sdp.lut_cfg_we, 0)
        golden_lut.write_access_cfg(word)
        for i in range(count):
            ctx.set(sdp.lut_data_re, 1)
            got = ctx.get(sdp.lut_data_rdata)
            assert got == golden_lut.read_access_data()
            await ctx.tick()
            ctx.set(sdp.lut_data_re, 0)
            assert ctx.get(sdp.lut_cfg_rdata) == golden_lut.read_access_cfg()
            if i % 3:                   # the next read in the next cycle, or a cycle later
                await ctx.tick()
        # a data write then a read of the same entry two cycles later (the pointer moved back)
        ctx.set(sdp.lut_cfg_wdata, (1 << 17) | word)
        ctx.set(sdp.lut_cfg_we, 1)
        await ctx.tick()
        ctx.set(sdp.lut_cfg_we, 0)
        golden_lut.write_access_cfg((1 << 17) | word)
        value = (start * 77 + 1234 + table) & 0xFFFF
        ctx.set(sdp.lut_data_wdata, value)
        ctx.set(sdp.lut_data_we, 1)
        await ctx.tick()
        ctx.set(sdp.lut_data_we, 0)
        golden_lut.csb_write("S_LUT_ACCESS_DATA", value)
        ctx.set(sdp.lut_cfg_wdata, word)
        ctx.set(sdp.lut_cfg_we, 1)
        await ctx.tick()
        ctx.set(sdp.lut_cfg_we, 0)
        golden_lut.write_access_cfg(word)
        ctx.set(sdp.lut_data_re, 1)
        expect = value if start < golden_lut.table(table).size else 0
        assert ctx.get(sdp.lut_data_rdata) == golden_lut.read_access_data() == expect
        await ctx.tick()
        ctx.set(sdp.lut_data_re, 0)

    async def tb(ctx):
        for n, prog in enumerate(layers):
            if prog["lut"]:
                await lut_write(ctx, 0, prog["lut"][0])
                await lut_write(ctx, 1, prog["lut"][1])
                await lut_readback(ctx, 0, 60, 8)          # crosses the end of LE
                await lut_readback(ctx, 1, 3, 4)
            for addr, data, *_ in prog["images"]:
                mem.write(addr, data)
            ref = SparseMemory()
            for base, page in memory_pages(mem).items():
                ref.write(base, np.frombuffer(page, dtype=np.uint8))
            if prog.get("rtl_rejects"):
                # valid for the golden model, but a mode the RTL lacks (e.g. fp16): the RTL
                # must finish it like an invalid program
                res, err = None, prog["rtl_rejects"]
            else:
                try:
                    # the LUT as the CSB left it (the read-back check rewrites an entry)
                    res = golden(cfg, prog, ref, lut=golden_lut.copy())
                    err = None
                except (SdpProgramError, NotImplementedError) as e:
                    res, err = None, e
            assert (err is not None) == bool(prog.get("invalid") or prog.get("rtl_rejects")), \
                (n, err)
            logs = [(len(a.ar_log), len(a.aw_log)) for a in axis]
            pdp_out.clear()

            ctx.set(sdp.regs, view_value(sdp.regs.shape(), sb, prog["sdp"]))
            ctx.set(sdp.s, view_value(sdp.s.shape(), sb, prog["s"]))
            ctx.set(sdp.rdma_regs, view_value(sdp.rdma_regs.shape(), rb, prog["rdma"]))
            ctx.set(sdp.op_en, 1)
            ctx.set(sdp.rdma_op_en, 1)
            start = 0
            while True:
                _, _, done, rdone, st, rst = await ctx.tick().sample(
                    sdp.done, sdp.rdma_done, sdp.status, sdp.rdma_status)
                start += 1
                assert start < max_cycles, f"layer {n} did not finish"
                if done:
                    break
            assert rdone
            ctx.set(sdp.op_en, 0)
            ctx.set(sdp.rdma_op_en, 0)
            cycles.append(start)
            got = {"SDP": field_values(st, status_layouts["SDP"]),
                   "SDP_RDMA": field_values(rst, status_layouts["SDP_RDMA"])}
            await ctx.tick().repeat(3)

            if err is not None:
                assert [(len(a.ar_log), len(a.aw_log)) for a in axis] == logs, \
                    f"layer {n}: invalid program touched memory ({err})"
                assert start < 40, f"invalid layer {n} took {start} cycles"
            assert memory_pages(mem) == memory_pages(ref), \
                f"layer {n}: memory differs at {mem_diff(mem, ref)}"
            # counters
            regs = res.status_registers() if res is not None else {"SDP": {"D_STATUS": 0},
                                                                    "SDP_RDMA": {}}
            for blk in ("SDP", "SDP_RDMA"):
                g = groups[blk]
                expect = dict(held[blk][g])
                block = rmap[blk]
                for reg, value in regs[blk].items():
                    for f in block[reg].fields:
                        if f.access == "ro" and (reg, f.name) in expect:
                            expect[(reg, f.name)] = (value >> f.lsb) & ((1 << f.width) - 1)
                perf_dma = prog["sdp" if blk == "SDP" else "rdma"].get("D_PERF_ENABLE", 0) & 1
                for key in (STALLS_SDP if blk == "SDP" else STALLS_RDMA):
                    if key in expect and perf_dma:
                        expect[key] = got[blk][key]           # not comparable; any count
                if err is not None:
                    expect = {**held[blk][g],
                              **({("D_STATUS", "STATUS_UNEQUAL"): 0} if blk == "SDP" else {})}
                    for key in (STALLS_SDP if blk == "SDP" else STALLS_RDMA):
                        if key in expect and perf_dma:
                            expect[key] = got[blk][key]
                    for key in got[blk]:
                        if key[0] in ("D_PERF_OUT_SATURATION",) or key[0].startswith("D_PERF_LUT"):
                            expect[key] = got[blk][key]       # enabled counters of an empty run
                assert got[blk] == expect, (n, blk, {k: (got[blk][k], expect[k])
                                                     for k in got[blk] if got[blk][k] != expect[k]})
                held[blk][g] = got[blk]
                groups[blk] ^= 1
            # PDP stream
            if res is not None and res.to_pdp:
                want = pdp_expected(cfg, res, prog, sdp.lanes)
                assert [d for d, _ in pdp_out] == want, f"layer {n}: PDP stream differs"
                assert [last for _, last in pdp_out] == [0] * (len(want) - 1) + [1]
            else:
                assert not pdp_out

    sim.add_testbench(tb)
    sim.run()
    return cycles


def field_values_zero(layout):
    return [(reg, fld) for reg, rl in layout for fld, _ in rl.shape]


def pdp_expected(cfg, res, prog, T):
    """The padded output in stream order: surface, line, position, T channels at a time, as
    the stream's signed 16-bit values (fp16 codes read as int16)."""
    out = np.asarray(res.padded_output, np.int64)            # [C_pad, H, W]
    out = ((out + 0x8000) & 0xFFFF) - 0x8000
    c_pad, H, W = out.shape
    group = cfg.memory_atom // (2 if prog["shape"][3] else 1)
    items = []
    for s in range(c_pad // group):
        for h in range(H):
            for w in range(W):
                for j in range(group // T):
                    c0 = s * group + j * T
                    items.append([int(v) for v in out[c0:c0 + T, h, w]])
    return items
