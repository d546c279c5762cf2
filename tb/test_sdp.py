"""The SDP unit (hw/sdp/sdp.py) against the golden model: random programs, bit-exact memory.

Bench: :class:`hw.sdp.Sdp` wired to :class:`hw.mem.dmaif.DmaInterfaces` and the AXI slave model of
``tb/axi_model.py`` (random back-pressure and latency). Each test runs a sequence of layers in
one simulation: random valid programs (``sim.sdp.random_programs.random_program``, extended here with
the LUT, EQL mode, output to PDP and, on an int16 build, int16 layers) and invalid mutations.
For every layer the whole memory after the RTL run must equal the golden model's
(``sim.sdp.run_sdp`` on the same image: output bytes written, nothing else touched), the
counters in ``status`` / ``rdma_status`` at ``done`` must equal what the golden model reports
(or the group's previous value when it reports none), and PDP-bound layers must stream the
golden model's padded output. An invalid program (the golden model raises) must finish
without a single AXI request.
"""

import random

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from arch.config import PRESETS, NvdlaConfig
from arch.registers import register_map
from hw.mem.dmaif import DmaInterfaces
from hw.sdp import Sdp
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.sdp import SdpProgramError, run_sdp
from sim.sdp.lut import LE_DEPTH, LO_DEPTH, SdpLut
from sim.sdp.random_programs import random_program
from tb.axi_model import AxiMemoryModel

SMALL = PRESETS["nv_small"]
SMALL_EW = SMALL.replace(name="nv_small_ew", sdp_ew=True, sdp_ew_throughput=1, sdp_lut=True,
                         data_types=frozenset({"int8", "int16"}))

STALLS_SDP = {("D_PERF_WDMA_WRITE_STALL", "WDMA_STALL")}
STALLS_RDMA = {("D_PERF_MRDMA_READ_STALL", "MRDMA_STALL"),
               ("D_PERF_BRDMA_READ_STALL", "BRDMA_STALL"),
               ("D_PERF_NRDMA_READ_STALL", "NRDMA_STALL"),
               ("D_PERF_ERDMA_READ_STALL", "ERDMA_STALL")}


# -----------------------------------------------------------------------------------------
# Bench
# -----------------------------------------------------------------------------------------
class Bench(Elaboratable):
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


def field_values(view, layout):
    return {(reg, fld): int(view[reg][fld]) for reg, rl in layout for fld, _ in rl.shape}


def _set_field(block, words, reg, **fields):
    r = block[reg]
    word = words.get(reg, r.reset)
    for name, v in fields.items():
        f = r[name]
        word = (word & ~f.mask) | ((int(v) << f.lsb) & f.mask)
    words[reg] = word


# -----------------------------------------------------------------------------------------
# Programs
# -----------------------------------------------------------------------------------------
def valid_program(cfg, rng, max_elems):
    """A random program of ``random_program`` with, where the build allows, the LUT, EQL and
    PDP output mixed in; ``lut`` writes (table, [(addr, value)]) for the LUT."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    p = random_program(cfg, rng, max_elems)
    sdp, rdma, s = dict(p["sdp"]), dict(p["rdma"]), {}
    _set_field(rb, rdma, "D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)))
    lut = None
    if cfg.sdp_lut and rng.random() < 0.4:
        _set_field(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=0, EW_LUT_BYPASS=0)
        le_linear = int(rng.integers(2))
        _set_field(sb, s, "S_LUT_CFG", LUT_LE_FUNCTION=le_linear,
                   LUT_UFLOW_PRIORITY=int(rng.integers(2)), LUT_OFLOW_PRIORITY=int(rng.integers(2)),
                   LUT_HYBRID_PRIORITY=int(rng.integers(2)))
        _set_field(sb, s, "S_LUT_INFO", LUT_LE_INDEX_OFFSET=int(rng.integers(-3, 5)) & 0xFF,
                   LUT_LE_INDEX_SELECT=int(rng.integers(-1, 4)) & 0xFF,
                   LUT_LO_INDEX_SELECT=int(rng.integers(-1, 3)) & 0xFF)
        for reg, fld, v in (("S_LUT_LE_START", "LUT_LE_START", rng.integers(-100, 20)),
                            ("S_LUT_LE_END", "LUT_LE_END", rng.integers(20, 200)),
                            ("S_LUT_LO_START", "LUT_LO_START", rng.integers(-300, 0)),
                            ("S_LUT_LO_END", "LUT_LO_END", rng.integers(0, 300))):
            _set_field(sb, s, reg, **{fld: int(v) & 0xFFFFFFFF})
        for reg, pre in (("S_LUT_LE_SLOPE_SCALE", "LUT_LE_SLOPE_"),
                         ("S_LUT_LO_SLOPE_SCALE", "LUT_LO_SLOPE_")):
            _set_field(sb, s, reg, **{f"{pre}UFLOW_SCALE": int(rng.integers(-300, 300)) & 0xFFFF,
                                      f"{pre}OFLOW_SCALE": int(rng.integers(-300, 300)) & 0xFFFF})
        for reg, pre in (("S_LUT_LE_SLOPE_SHIFT", "LUT_LE_SLOPE_"),
                         ("S_LUT_LO_SLOPE_SHIFT", "LUT_LO_SLOPE_")):
            _set_field(sb, s, reg, **{f"{pre}UFLOW_SHIFT": int(rng.integers(-4, 8)) & 0x1F,
                                      f"{pre}OFLOW_SHIFT": int(rng.integers(-4, 8)) & 0x1F})
        lut = {0: [int(v) for v in rng.integers(-3000, 3000, LE_DEPTH)],
               1: [int(v) for v in rng.integers(-3000, 3000, LO_DEPTH)]}
    if cfg.sdp_ew and rng.random() < 0.15:
        _set_field(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3)
    if cfg.pdp and rng.random() < 0.15:
        _set_field(sb, sdp, "D_FEATURE_MODE_CFG", OUTPUT_DST=1)
    return {"sdp": sdp, "rdma": rdma, "s": s, "images": p["images"], "lut": lut,
            "shape": p["shape"]}


def _m_field(block_key, reg, **fields):
    def mutate(cfg, p, rng):
        block = register_map(cfg)["SDP" if block_key == "sdp" else "SDP_RDMA"]
        _set_field(block, p[block_key], reg, **fields)
    return mutate


def _m_add(block_key, reg, delta):
    def mutate(cfg, p, rng):
        block = register_map(cfg)["SDP" if block_key == "sdp" else "SDP_RDMA"]
        p[block_key][reg] = (p[block_key].get(reg, block[reg].reset) + delta) & 0xFFFFFFFF
    return mutate


def _m_top_of_memory(cfg, p, rng):
    block = register_map(cfg)["SDP"]
    p["sdp"]["D_DST_BASE_ADDR_LOW"] = 0xFFFF_FFE0 & block["D_DST_BASE_ADDR_LOW"].mask()
    for blk in ("sdp", "rdma"):                  # at least 64 channels: 2+ surfaces
        b = register_map(cfg)["SDP" if blk == "sdp" else "SDP_RDMA"]
        _set_field(b, p[blk], "D_DATA_CUBE_CHANNEL", CHANNEL=63)
    _set_field(block, p["sdp"], "D_FEATURE_MODE_CFG", OUTPUT_DST=0)
    _set_field(block, p["sdp"], "D_DP_EW_CFG", EW_BYPASS=1)


def _m_dst_overlap(cfg, p, rng):
    block = register_map(cfg)["SDP"]
    p["sdp"]["D_DST_LINE_STRIDE"] = 0
    _set_field(block, p["sdp"], "D_DATA_CUBE_HEIGHT", HEIGHT=3)
    _set_field(register_map(cfg)["SDP_RDMA"], p["rdma"], "D_DATA_CUBE_HEIGHT", HEIGHT=3)


def _m_operand_without_dma(cfg, p, rng):
    sb, rb = register_map(cfg)["SDP"], register_map(cfg)["SDP_RDMA"]
    _set_field(sb, p["sdp"], "D_DP_BS_CFG", BS_BYPASS=0, BS_ALU_BYPASS=0)
    _set_field(sb, p["sdp"], "D_DP_BS_ALU_CFG", BS_ALU_SRC=1)
    _set_field(rb, p["rdma"], "D_BRDMA_CFG", BRDMA_DISABLE=1)


def _m_dma_without_operand(cfg, p, rng):
    sb, rb = register_map(cfg)["SDP"], register_map(cfg)["SDP_RDMA"]
    _set_field(sb, p["sdp"], "D_DP_BN_CFG", BN_BYPASS=1)
    _set_field(rb, p["rdma"], "D_NRDMA_CFG", NRDMA_DISABLE=0)


INVALID = {
    "in_fp16": _m_field("rdma", "D_FEATURE_MODE_CFG", IN_PRECISION=2),
    "out_reserved": _m_field("sdp", "D_DATA_FORMAT", OUT_PRECISION=3),
    "proc_mismatch": _m_field("rdma", "D_FEATURE_MODE_CFG", PROC_PRECISION=1),
    "x_alu_eql": _m_field("sdp", "D_DP_BS_CFG", BS_BYPASS=0, BS_ALU_BYPASS=0, BS_ALU_ALGO=3),
    "misaligned_dst": _m_add("sdp", "D_DST_BASE_ADDR_LOW", 4),
    "misaligned_src_stride": _m_add("rdma", "D_SRC_LINE_STRIDE", 3),
    "cube_mismatch": _m_add("rdma", "D_DATA_CUBE_CHANNEL", 1),
    "winograd": _m_field("sdp", "D_FEATURE_MODE_CFG", WINOGRAD=1),
    "batch": _m_field("sdp", "D_FEATURE_MODE_CFG", BATCH_NUMBER=1),
    "cv_ram": _m_field("rdma", "D_SRC_DMA_CFG", SRC_RAM_TYPE=0),
    "top_of_memory": _m_top_of_memory,
    "dst_overlap": _m_dst_overlap,
    "operand_without_dma": _m_operand_without_dma,
    "dma_without_operand": _m_dma_without_operand,
    "ew_missing": _m_field("sdp", "D_DP_EW_CFG", EW_BYPASS=0),
}


def golden(cfg, prog, mem):
    rmap = register_map(cfg)
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
def run_layers(cfg, layers, seed, *, latency=(0, 12), backpressure=0.3, pdp_ready=0.7,
               max_cycles=40000):
    """Run ``layers`` (program dicts, ``"invalid"`` set on invalid ones) back to back; check
    each against the golden model. Returns the cycle counts per layer."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    bench = Bench(cfg)
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

    async def pdp_sink(ctx):
        prng = random.Random(seed + 1)
        async for _, _, valid, ready, payload in ctx.tick().sample(
                sdp.pdp.valid, sdp.pdp.ready, sdp.pdp.payload):
            if valid and ready:
                pdp_out.append(([int(v) for v in payload.data], int(payload.last)))
            ctx.set(sdp.pdp.ready, prng.random() < pdp_ready)

    sim.add_process(pdp_sink)

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
        for _ in range(count):
            ctx.set(sdp.lut_data_re, 1)
            got = ctx.get(sdp.lut_data_rdata)
            assert got == golden_lut.read_access_data()
            await ctx.tick()
            ctx.set(sdp.lut_data_re, 0)
            assert ctx.get(sdp.lut_cfg_rdata) == golden_lut.read_access_cfg()
            await ctx.tick()

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
            try:
                res = golden(cfg, prog, ref)
                err = None
            except (SdpProgramError, NotImplementedError) as e:
                res, err = None, e
            assert (err is not None) == prog.get("invalid", False), (n, err)
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
    """The padded output in stream order: surface, line, position, T channels at a time."""
    out = res.padded_output                      # [C_pad, H, W]
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


def make_layers(cfg, seed, count, max_elems, invalid=(), want=None):
    """``count`` valid programs (accepted by the golden model and by ``want`` if given) with
    the ``invalid`` mutations inserted at random places."""
    rng = np.random.default_rng(seed)
    layers = []
    for _ in range(count):
        while True:
            prog = valid_program(cfg, rng, max_elems)
            if want is not None and not want(cfg, prog):
                continue
            try:
                golden(cfg, prog, _image(prog))
                break
            except (SdpProgramError, NotImplementedError):
                continue
        layers.append(prog)
    for name in invalid:
        while True:                   # (e.g. a destination rule does not apply to PDP output)
            prog = valid_program(cfg, rng, 64)
            prog = {**prog, "sdp": dict(prog["sdp"]), "rdma": dict(prog["rdma"]), "lut": None,
                    "invalid": True, "name": name}
            INVALID[name](cfg, prog, rng)
            try:
                golden(cfg, prog, _image(prog))
            except (SdpProgramError, NotImplementedError):
                break
        layers.insert(int(rng.integers(0, len(layers) + 1)), prog)
    return layers


def _image(prog):
    mem = SparseMemory()
    for addr, data, *_ in prog["images"]:
        mem.write(addr, data)
    return mem


# -----------------------------------------------------------------------------------------
# Tests
# -----------------------------------------------------------------------------------------
def test_nv_small_random_programs():
    layers = make_layers(SMALL, 1, 8, 200)
    run_layers(SMALL, layers, seed=1)


def test_nv_small_invalid_programs_finish_without_memory_traffic():
    names = [n for n in INVALID if n not in ("ew_missing",)] + ["ew_missing"]
    layers = make_layers(SMALL, 2, 2, 64, invalid=names)
    run_layers(SMALL, layers, seed=2)


def test_nv_full_random_programs():
    """nv_full: 16 lanes, 2 atoms per 512-bit word, int16, LUT, CV (SRAMIF) and MC memories."""
    cfg = NvdlaConfig.preset("nv_full")
    layers = make_layers(cfg, 11, 12, 600)
    assert {p["images"][0][2] for p in layers} == {0, 1}, "both RAM types drawn"
    run_layers(cfg, layers, seed=11)


def test_ew_lut_int16_build_random_programs():
    layers = make_layers(SMALL_EW, 3, 8, 160)
    run_layers(SMALL_EW, layers, seed=3)


def _int16_per_element(cfg, prog):
    rb = register_map(cfg)["SDP_RDMA"]
    per_el = [GroupView(rb, prog["rdma"])[f"D_{d}_CFG"][f"{d}_DATA_MODE"]
              and not GroupView(rb, prog["rdma"])[f"D_{d}_CFG"][f"{d}_DISABLE"]
              for d in ("BRDMA", "NRDMA", "ERDMA")]
    return prog["shape"][3] == 1 and any(per_el)


def test_int16_per_element_operands():
    layers = make_layers(SMALL_EW, 5, 3, 100, want=_int16_per_element)
    run_layers(SMALL_EW, layers, seed=5)


def test_slow_memory_and_pdp_backpressure():
    layers = make_layers(SMALL, 4, 3, 120)
    run_layers(SMALL, layers, seed=4, latency=(5, 40), backpressure=0.6, pdp_ready=0.3)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [SMALL, SMALL_EW], ids=lambda c: c.name)
def test_random_sweep(cfg):
    layers = make_layers(cfg, 10, 40, 600, invalid=list(n for n in INVALID
                                                          if cfg.sdp_ew or n != "ew_missing"))
    run_layers(cfg, layers, seed=10)
