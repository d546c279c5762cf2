"""The SDP unit in flying mode (input from the convolution accumulator) against the golden model.

The unit (:class:`tb.sdp_unit.SdpBench`: SDP + MCIF/CVIF + AXI memory models under random
back-pressure and latency) runs a sequence of layers; a flying layer's int32 cube is streamed on
``sdp.flying`` (:func:`hw.conv.common.conv_out_layout`, SDP's input order, whole surfaces with
zeros past the cube's channels) with random valid gaps. Each layer's whole memory afterwards
must equal ``sim.sdp.run_sdp(..., flying_input=cube)`` on the same image (output written bit
for bit, nothing else touched), PDP-bound layers must stream the golden model's values, the
golden model's counters must match, the input read DMA must issue no request, and operand
reads may only touch the operand regions. Offline layers run in the same sequence.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest
from amaranth.sim import Simulator

from arch.config import PRESETS, NvdlaConfig
from arch.registers import register_map
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.sdp import SdpProgramError, run_sdp
from sim.sdp.lut import SdpLut
from sim.sdp.random_programs import Regs, random_program
from tb.axi_model import AxiMemoryModel
from tb.sdp_unit import SdpBench, field_values, pdp_sink, mem_diff, memory_pages, pdp_expected, view_value

SMALL = PRESETS["nv_small"]
FULL = NvdlaConfig.preset("nv_full")
_DMAS = ("BRDMA", "NRDMA", "ERDMA")


# -----------------------------------------------------------------------------------------
# Layers
# -----------------------------------------------------------------------------------------
def _input_cube(rng, shape):
    """A random int32 cube [C, H, W]: small values, full-range values, or near the extremes."""
    W, H, C, _ = shape
    kind = rng.choice(["small", "full", "extreme", "mixed"])
    lo, hi = -(1 << 31), (1 << 31) - 1
    if kind == "small":
        return rng.integers(-300, 301, (C, H, W))
    if kind == "full":
        return rng.integers(lo, hi, (C, H, W), endpoint=True)
    if kind == "extreme":
        edge = rng.integers(0, 1 << 12, (C, H, W))
        return np.where(rng.random((C, H, W)) < 0.5, lo + edge, hi - edge)
    big = rng.integers(lo, hi, (C, H, W), endpoint=True)
    return np.where(rng.random((C, H, W)) < 0.5, big, rng.integers(-40, 41, (C, H, W)))


def _dma_used(cfg, rdma_words):
    rb = register_map(cfg)["SDP_RDMA"]
    view = GroupView(rb, rdma_words)
    return [d for d in _DMAS if f"D_{d}_CFG" in rb
            and not view[f"D_{d}_CFG"][f"{d}_DISABLE"]]


def flying_layer(cfg, rng, max_elems, gap=None, fp16=False):
    """A random flying layer: a random offline program turned flying (SDP_RDMA enabled when
    operands come from memory, else at random; when it is off its registers are scrambled,
    which must not matter), output to memory, PDP or EQL, a random int32 input cube (no fp16
    programs unless ``fp16``; the caller gives an fp16 layer fp32 codes)."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    p = random_program(cfg, rng, max_elems, fp16=fp16)
    sdp, rdma = Regs(sb), Regs(rb)
    sdp.words, rdma.words = dict(p["sdp"]), dict(p["rdma"])
    sdp.set("D_FEATURE_MODE_CFG", FLYING_MODE=1)
    rdma.set("D_FEATURE_MODE_CFG", FLYING_MODE=1)
    rdma_on = bool(_dma_used(cfg, rdma.words)) or rng.random() < 0.5
    if rdma_on:                          # IN_PRECISION is unused in flying mode
        rdma.set("D_FEATURE_MODE_CFG", IN_PRECISION=int(rng.integers(0, 3)))
    else:                                # ignored: SDP_RDMA does not take part
        rdma.set("D_FEATURE_MODE_CFG", FLYING_MODE=int(rng.integers(2)),
                 PROC_PRECISION=int(rng.integers(0, 3)))
        rdma.set("D_DATA_CUBE_CHANNEL", CHANNEL=int(rng.integers(0, 100)))
        rdma.set("D_SRC_DMA_CFG", SRC_RAM_TYPE=0)
        rdma.addr("D_SRC_LINE_STRIDE", 3)
    rdma.set("D_OP_ENABLE", OP_EN=int(rdma_on))
    if cfg.pdp and rng.random() < 0.2:
        sdp.set("D_FEATURE_MODE_CFG", OUTPUT_DST=1)
    elif cfg.sdp_ew and rng.random() < 0.15:
        sdp.set("D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3, EW_LUT_BYPASS=1)
    return {"sdp": sdp.words, "rdma": rdma.words, "rdma_op_en": int(rdma_on),
            "images": p["images"][1:],             # no input surface in memory
            "src": p["images"][0], "shape": p["shape"],
            "cube": _input_cube(rng, p["shape"]),
            "gap": float(rng.choice([0.0, 0.2, 0.6])) if gap is None else gap}


def offline_layer(cfg, rng, max_elems):
    p = random_program(cfg, rng, max_elems, fp16=False)
    return {"sdp": p["sdp"], "rdma": p["rdma"], "rdma_op_en": 1, "images": p["images"],
            "shape": p["shape"], "cube": None}


def _golden(cfg, layer, mem):
    rmap = register_map(cfg)
    return run_sdp(cfg, GroupView(rmap["SDP_RDMA"], layer["rdma"]),
                   GroupView(rmap["SDP"], layer["sdp"]), mem, lut=SdpLut(),
                   flying_input=layer["cube"])


def _valid(cfg, layer):
    mem = SparseMemory()
    for addr, data, *_ in layer["images"]:
        mem.write(addr, data)
    try:
        _golden(cfg, layer, mem)
        return True
    except (SdpProgramError, NotImplementedError):
        return False


def make_layers(cfg, seed, count, max_elems, offline=1, want=None):
    """``count`` valid flying layers (and ``offline`` offline ones at random places)."""
    rng = np.random.default_rng(seed)
    layers = []
    while len(layers) < count:
        layer = flying_layer(cfg, rng, max_elems)
        if _valid(cfg, layer) and (want is None or want(cfg, layer)):
            layers.append(layer)
    for _ in range(offline):
        while True:
            layer = offline_layer(cfg, rng, max_elems)
            if _valid(cfg, layer):
                break
        layers.insert(int(rng.integers(0, len(layers) + 1)), layer)
    return layers


def stream_transfers(cfg, layer, T):
    """The flying transfers of a layer: surface, line, position, T channels at a time; whole
    surfaces (zeros past the cube's channels); ``last`` on the final one."""
    W, H, C, prec = layer["shape"]
    group = cfg.memory_atom // (2 if prec else 1)
    c_pad = -(-C // group) * group
    cube = np.zeros((c_pad, H, W), dtype=np.int64)
    cube[:C] = layer["cube"]
    items = []
    for s in range(c_pad // group):
        for h in range(H):
            for w in range(W):
                for j in range(group // T):
                    c0 = s * group + j * T
                    items.append([int(v) for v in cube[c0:c0 + T, h, w]])
    return [(d, int(i == len(items) - 1)) for i, d in enumerate(items)]


# -----------------------------------------------------------------------------------------
# Running
# -----------------------------------------------------------------------------------------
def run_flying_layers(cfg, layers, seed, *, latency=(0, 12), backpressure=0.3, pdp_ready=0.7,
                      max_cycles=60000):
    """Run ``layers`` back to back in one simulation and check each against the golden model.
    Returns, per layer, (cycles to done, cycles from the first to the last flying transfer)."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    bench = SdpBench(cfg)
    sdp = bench.sdp
    T = sdp.lanes
    rng = random.Random(seed)
    mem = SparseMemory()
    axis = [AxiMemoryModel(bench.dmaif, "dbb", cfg.dbbif_width, rng=rng, latency=latency,
                           backpressure=backpressure, max_burst=cfg.max_burst_length,
                           memory=mem)]
    if cfg.sramif:
        axis.append(AxiMemoryModel(bench.dmaif, "sram", cfg.sramif_width, rng=rng,
                                   latency=latency, backpressure=backpressure,
                                   max_burst=cfg.max_burst_length, memory=mem))
    st_layouts = {"SDP": sdp.status.shape(), "SDP_RDMA": sdp.rdma_status.shape()}
    fly_queue = deque()
    fly_taken = []                                 # cycles of accepted flying transfers
    fly_gap = [0.0]
    pdp_out = []
    results = []

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    for a in axis:
        a.add_to(sim)

    async def fly_source(ctx):
        """Drives ``sdp.flying`` from ``fly_queue`` with random gaps; a raised valid is held
        with its payload until taken."""
        prng = random.Random(seed + 2)
        layout = sdp.flying.payload.shape()
        cycle = 0
        offered = False
        while True:
            if not offered and fly_queue and prng.random() >= fly_gap[0]:
                data, last = fly_queue[0]
                ctx.set(sdp.flying.payload, layout.const({"data": data, "last": last}))
                offered = True
            ctx.set(sdp.flying.valid, offered)
            _, _, valid, ready = await ctx.tick().sample(sdp.flying.valid, sdp.flying.ready)
            cycle += 1
            if valid and ready:
                fly_queue.popleft()
                fly_taken.append(cycle)
                offered = False

    sim.add_process(pdp_sink(sdp, pdp_out, seed + 1, pdp_ready))
    sim.add_process(fly_source)

    async def tb(ctx):
        held = {"SDP": {}, "SDP_RDMA": {}}
        for n, layer in enumerate(layers):
            flying = layer["cube"] is not None
            for addr, data, *_ in layer["images"]:
                mem.write(addr, data)
            ref = SparseMemory()
            for base, page in memory_pages(mem).items():
                ref.write(base, np.frombuffer(page, dtype=np.uint8))
            if layer.get("rtl_rejects"):   # valid for the golden model, a mode the RTL
                res = None                 # lacks (fp16): it must end like an invalid one
            else:
                try:
                    res = _golden(cfg, layer, ref)
                except (SdpProgramError, NotImplementedError) as e:
                    assert layer.get("invalid"), (n, e)
                    res = None
                else:
                    assert not layer.get("invalid"), f"layer {n} is valid"
            logs = [(len(a.ar_log), len(a.aw_log)) for a in axis]
            pdp_out.clear()
            fly_taken.clear()
            transfers = stream_transfers(cfg, layer, T) if flying and res is not None else []
            fly_gap[0] = layer.get("gap", 0.0)
            early = bool(transfers) and n % 2 == 0   # data waiting before the layer starts
            if early:
                fly_queue.extend(transfers)
                await ctx.tick().repeat(5)
                assert len(fly_queue) == len(transfers), "flying data taken before op_en"

            ctx.set(sdp.regs, view_value(sdp.regs.shape(), sb, layer["sdp"]))
            ctx.set(sdp.s, view_value(sdp.s.shape(), sb, {}))
            ctx.set(sdp.rdma_regs, view_value(sdp.rdma_regs.shape(), rb, layer["rdma"]))
            ctx.set(sdp.op_en, 1)
            ctx.set(sdp.rdma_op_en, layer["rdma_op_en"])
            if transfers and not early:
                await ctx.tick().repeat(1 + int(rng.random() * 30))
                fly_queue.extend(transfers)
            count = 0
            late = layer.get("rdma_late")          # SDP_RDMA enabled for a later layer
            while True:
                _, _, done, rdone, st, rst = await ctx.tick().sample(
                    sdp.done, sdp.rdma_done, sdp.status, sdp.rdma_status)
                count += 1
                assert count < max_cycles, f"layer {n} did not finish"
                if done:
                    break
                if late is not None and fly_taken:
                    ctx.set(sdp.rdma_regs, view_value(sdp.rdma_regs.shape(), rb, late))
                    ctx.set(sdp.rdma_op_en, 1)
                    late = None
            rdma_active = (not flying) or bool(layer["rdma_op_en"])
            assert bool(rdone) == rdma_active, (n, rdone)
            ctx.set(sdp.op_en, 0)
            ctx.set(sdp.rdma_op_en, 0)
            span = (fly_taken[-1] - fly_taken[0] + 1) if fly_taken else 0
            results.append((count, span))
            await ctx.tick().repeat(3)

            if res is None:                        # invalid: no DMA at all, done at once
                assert [(len(a.ar_log), len(a.aw_log)) for a in axis] == logs, n
                assert count < 40, f"invalid layer {n} took {count} cycles"
                assert memory_pages(mem) == memory_pages(ref)
                assert not pdp_out
                continue
            if flying:
                assert not fly_queue, f"layer {n}: {len(fly_queue)} flying transfers left"
                assert len(fly_taken) == len(transfers)
                # reads: operand regions only (no input surface)
                regions = [(addr, addr + len(data)) for addr, data, *_ in layer["images"]]
                for a, (nr, _) in zip(axis, logs):
                    for _, _, addr, ln in a.ar_log[nr:]:
                        end = addr + (ln + 1) * a.nbytes
                        assert any(lo - lo % a.nbytes <= addr and end <= -(-hi // a.nbytes)
                                   * a.nbytes for lo, hi in regions), \
                            f"layer {n}: read {addr:#x}..{end:#x} outside the operand regions"
                if not layer["images"]:
                    assert [len(a.ar_log) for a in axis] == [x for x, _ in logs]
            assert memory_pages(mem) == memory_pages(ref), \
                f"layer {n}: memory differs at {mem_diff(mem, ref)}"
            if res.to_pdp:
                want = pdp_expected(cfg, res, layer, T)
                assert [d for d, _ in pdp_out] == want, f"layer {n}: PDP stream differs"
                assert [last for _, last in pdp_out] == [0] * (len(want) - 1) + [1]
            else:
                assert not pdp_out
            # counters the golden model reports
            got = {"SDP": field_values(st, st_layouts["SDP"]),
                   "SDP_RDMA": field_values(rst, st_layouts["SDP_RDMA"])}
            for blk, regs in res.status_registers().items():
                block = rmap[blk]
                for reg, value in regs.items():
                    for f in block[reg].fields:
                        if f.access == "ro" and (reg, f.name) in got[blk]:
                            assert got[blk][(reg, f.name)] == \
                                (value >> f.lsb) & ((1 << f.width) - 1), (n, reg, f.name)
            perf_dma = layer["rdma"].get("D_PERF_ENABLE", 0) & 1
            if flying and rdma_active and perf_dma:
                assert got["SDP_RDMA"][("D_PERF_MRDMA_READ_STALL", "MRDMA_STALL")] == 0

    sim.add_testbench(tb)
    sim.run()
    return results


# -----------------------------------------------------------------------------------------
# Tests
# -----------------------------------------------------------------------------------------
def _kinds(cfg, layers):
    """What the flying layers cover: operands from memory / registers only, PDP, RDMA off."""
    out = set()
    for layer in layers:
        if layer["cube"] is None:
            out.add("offline")
            continue
        out.add("dma" if _dma_used(cfg, layer["rdma"]) else "regs")
        if not layer["rdma_op_en"]:
            out.add("rdma_off")
        fm = GroupView(register_map(cfg)["SDP"], layer["sdp"]).D_FEATURE_MODE_CFG
        if fm.OUTPUT_DST:
            out.add("pdp")
    return out


def test_nv_small_flying_layers():
    layers = make_layers(SMALL, 21, 10, 200, offline=2)
    assert {"offline", "dma", "regs", "rdma_off", "pdp"} <= _kinds(SMALL, layers)
    run_flying_layers(SMALL, layers, seed=21)


def test_nv_small_flying_rdma_enabled_later():
    """A flying layer without SDP_RDMA whose RDMA group is enabled while it runs (for the next
    layer, which reads operands from memory: the RDMA groups are taken in order, as NVDLA's
    traces program them) finishes with its own operands and leaves that group alone."""
    layers = make_layers(SMALL, 5, 30, 200, offline=0)
    dma = [ly["rdma"] for ly in layers if ly["cube"] is not None and _dma_used(SMALL, ly["rdma"])]
    off = [ly for ly in layers if ly["cube"] is not None and not ly["rdma_op_en"]]
    assert dma and len(off) >= 3
    for i, ly in enumerate(off[:3]):
        ly["rdma_late"] = dma[i % len(dma)]
    run_flying_layers(SMALL, off[:3], seed=5)


def test_nv_small_flying_slow_memory():
    layers = make_layers(SMALL, 22, 4, 120, offline=0,
                         want=lambda cfg, layer: bool(_dma_used(cfg, layer["rdma"])))
    run_flying_layers(SMALL, layers, seed=22, latency=(5, 40), backpressure=0.6,
                      pdp_ready=0.3)


@pytest.mark.parametrize("cfg", [SMALL, FULL], ids=lambda c: c.name)
def test_flying_full_rate(cfg):
    """Register operands, no gaps, no back-pressure: one transfer (T lanes) per cycle."""
    rng = np.random.default_rng(23)
    layers = []
    while len(layers) < 3:
        layer = flying_layer(cfg, rng, 400, gap=0.0)
        if (layer["shape"][0] * layer["shape"][1] >= 8 and not _dma_used(cfg, layer["rdma"])
                and _valid(cfg, layer)):
            layers.append(layer)
    results = run_flying_layers(cfg, layers, seed=23, backpressure=0.0, pdp_ready=1.0)
    T = cfg.sdp_bs_throughput
    for layer, (_, span) in zip(layers, results):
        assert span == len(stream_transfers(cfg, layer, T)), (span, layer["shape"])


def test_nv_full_flying_layers():
    """nv_full: 16 lanes per transfer, 512-bit words, int16 layers, CV and MC memories."""
    layers = make_layers(FULL, 31, 5, 300, offline=1)
    assert {"offline", "dma"} <= _kinds(FULL, layers)
    run_flying_layers(FULL, layers, seed=31)


def _invalid_flying(cfg, rng):
    """Flying programs the golden model rejects, one per rule: (name, layer)."""
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    out = []

    def draw(want):
        while True:
            layer = flying_layer(cfg, rng, 64)
            if _valid(cfg, layer) and want(layer):
                return {**layer, "sdp": dict(layer["sdp"]), "rdma": dict(layer["rdma"]),
                        "invalid": True}

    def with_rdma(layer):
        return bool(layer["rdma_op_en"])

    def setf(layer, key, reg, **fields):
        regs = Regs(sb if key == "sdp" else rb)
        regs.words = layer[key]
        regs.set(reg, **fields)

    # operands from memory, but SDP_RDMA not enabled
    layer = draw(lambda l: bool(_dma_used(cfg, l["rdma"])))
    layer["rdma_op_en"] = 0
    setf(layer, "rdma", "D_OP_ENABLE", OP_EN=0)
    out.append(("operands_without_rdma", layer))
    # SDP_RDMA taking part must agree on mode, cube and precision
    for name, reg, fields in (("rdma_offline", "D_FEATURE_MODE_CFG", {"FLYING_MODE": 0}),
                              ("rdma_proc", "D_FEATURE_MODE_CFG", {"PROC_PRECISION": 3}),
                              ("rdma_out", "D_FEATURE_MODE_CFG", {"OUT_PRECISION": 3}),
                              ("rdma_height", "D_DATA_CUBE_HEIGHT", {"HEIGHT": 77})):
        layer = draw(with_rdma)
        setf(layer, "rdma", reg, **fields)
        out.append((name, layer))
    # destination rules still apply
    layer = draw(lambda l: not GroupView(sb, l["sdp"]).D_FEATURE_MODE_CFG.OUTPUT_DST
                 and GroupView(sb, l["sdp"]).D_DP_EW_CFG.EW_BYPASS)
    layer["sdp"]["D_DST_BASE_ADDR_LOW"] = (layer["sdp"]["D_DST_BASE_ADDR_LOW"] + 4) \
        & sb["D_DST_BASE_ADDR_LOW"].mask()
    out.append(("misaligned_dst", layer))
    return out


def test_nv_small_invalid_flying_programs_finish_without_memory_traffic():
    rng = np.random.default_rng(24)
    bad = _invalid_flying(SMALL, rng)
    layers = make_layers(SMALL, 25, 3, 100, offline=0)
    for name, layer in bad:
        assert not _valid(SMALL, layer), name
        layers.insert(int(rng.integers(0, len(layers) + 1)), layer)
    run_flying_layers(SMALL, layers, seed=24)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [SMALL, FULL], ids=lambda c: c.name)
def test_flying_sweep(cfg):
    layers = make_layers(cfg, 40, 30, 600, offline=3)
    run_flying_layers(cfg, layers, seed=40)


# -----------------------------------------------------------------------------------------
# Winograd output (D_FEATURE_MODE_CFG.WINOGRAD=ON)
# -----------------------------------------------------------------------------------------
def _winograd(cfg, layer):
    """``layer`` with SDP's and SDP_RDMA's WINOGRAD on (in place); returns it."""
    rmap = register_map(cfg)
    for key, blk in (("sdp", "SDP"), ("rdma", "SDP_RDMA")):
        regs = Regs(rmap[blk])
        regs.words = layer[key]
        regs.set("D_FEATURE_MODE_CFG", WINOGRAD=1)
    return layer


def _wino_layers(cfg, rng, count, want):
    """``count`` flying layers with WINOGRAD on (a cube a multiple of 4 wide and high), and
    ``want(layer)``; each one valid for the golden model."""
    out = []
    while len(out) < count:
        layer = flying_layer(cfg, rng, 400)
        W, H = layer["shape"][:2]
        if W % 4 or H % 4 or not want(layer):
            continue
        layer = _winograd(cfg, {**layer, "sdp": dict(layer["sdp"]),
                                "rdma": dict(layer["rdma"])})
        if _valid(cfg, layer):
            out.append(layer)
    return out


def test_winograd_output_on_conv_winograd_builds():
    """nv_large_wino (:func:`hw.conv.common.conv_winograd`): flying layers with WINOGRAD on,
    to memory, are accepted and written bit for bit as the golden model writes them (CACC
    delivers Winograd output in the ordinary order); WINOGRAD on offline, to PDP, with a
    cube not a multiple of 4 high or with EW EQL ends without memory traffic (the golden model rejects them
    too). On a Winograd build without conv_winograd (Atomic-C 32: the CDMA tests'
    nv_small_wino) a flying WINOGRAD layer the golden model runs is rejected."""
    from .conftest import NV_LARGE_WINO
    cfg = NV_LARGE_WINO
    sb = register_map(cfg)["SDP"]
    rng = np.random.default_rng(61)

    def to_mem(layer):
        fm = GroupView(sb, layer["sdp"])
        return not fm.D_FEATURE_MODE_CFG.OUTPUT_DST and fm.D_DP_EW_CFG.EW_BYPASS

    good = _wino_layers(cfg, rng, 3, to_mem)
    bad = []
    # offline: a valid offline layer with WINOGRAD on
    while True:
        layer = offline_layer(cfg, rng, 200)
        if _valid(cfg, layer):
            break
    bad.append(("offline", _winograd(cfg, layer)))
    # to PDP: a valid flying one turned to PDP
    layer = _wino_layers(cfg, rng, 1, to_mem)[0]
    Regs_ = Regs(sb)
    Regs_.words = layer["sdp"]
    Regs_.set("D_FEATURE_MODE_CFG", OUTPUT_DST=1)
    bad.append(("to_pdp", layer))
    # a cube 4n + 1 high: the same layer's cube without its last line (SDP and its RDMA)
    layer = _wino_layers(cfg, rng, 1, to_mem)[0]
    for key, blk in (("sdp", "SDP"), ("rdma", "SDP_RDMA")):
        r = Regs(register_map(cfg)[blk])
        r.words = layer[key]
        r.set("D_DATA_CUBE_HEIGHT", HEIGHT=GroupView(r.block, layer[key])
              .D_DATA_CUBE_HEIGHT.HEIGHT - 1)
    layer["cube"] = layer["cube"][:, :-1]
    bad.append(("height", layer))
    # EW EQL (compares, writes nothing): not with Winograd
    layer = _wino_layers(cfg, rng, 1, to_mem)[0]
    Regs_ = Regs(sb)
    Regs_.words = layer["sdp"]
    Regs_.set("D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3, EW_LUT_BYPASS=1)
    bad.append(("eql", layer))
    for name, layer in bad:
        assert not _valid(cfg, layer), name
        layer["invalid"] = True
    layers = good[:1] + [bad[0][1]] + good[1:2] + [b for _, b in bad[1:]] + good[2:]
    assert [bool(GroupView(sb, l["sdp"]).D_FEATURE_MODE_CFG.WINOGRAD) for l in layers] == \
        [True] * 7
    run_flying_layers(cfg, layers, seed=61)

    # a Winograd build without conv_winograd (Atomic-C 32): rejected
    from .test_cdma import WINO_SMALL
    layer = {**good[0], "sdp": dict(good[0]["sdp"]), "rdma": dict(good[0]["rdma"]),
             "rtl_rejects": True}
    assert _valid(WINO_SMALL, layer)
    run_flying_layers(WINO_SMALL, [layer], seed=62)
