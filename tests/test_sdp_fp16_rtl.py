"""The RTL SDP's fp16 datapath (offline, BS / BN / EW / LUT, output to memory or PDP) against
the golden model, bit for bit, on nv_small_fp16 (nv_small with ``data_types`` int8 + fp16:
one lane, 8-byte atoms of 4 fp16 channels).

* unit level (:func:`tb.sdp_unit.run_layers`, Amaranth's simulator, AXI memory models with
  random back-pressure and latency): random fp16 programs of
  :func:`sim.sdp.random_programs.random_program` (fp16 data with NaNs, infinities, signed
  zeros, denormals and extremes; register, per-kernel and per-element operands; NaN-to-zero
  either way) mixed with int8 layers, with the memory written and every status counter
  (OUT_SATURATION, SDP's NaN / Inf counters, SDP_RDMA's NaN / Inf input counters) compared
  after each layer, the stream of layers sent to PDP compared; fp16 layers through the LUT (random fp16 LUTs of
  :func:`sim.sdp.random_programs.random_lut_fp16`, the five LUT counters compared too) on
  nv_small + EW / LUT + fp16 and, slow, nv_full; the fp16 LUT index alone against the
  golden model's index functions;
* on the generated core (playback engine, Verilator, random AXI back-pressure 30 %, latency
  1-24 cycles): random trace programs of :func:`sim.sdp.random_programs.write_random_traces`
  with fp16 layers (memory compared; the counters are the unit tests' business), on
  nv_small_fp16 and (slow) with a random fp16 LUT per program (``lut=True``) on
  nv_small_lut_fp16.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.sdp import SdpProgramError
from sim.sdp.random_programs import (random_lut_fp16, random_program, use_lut,
                                     write_random_traces)

from .conftest import NV_SMALL_EXT, NV_SMALL_FP16, assert_all_pass, playback

#: nv_small with SRAMIF, SDP EW + LUT, BDMA and Rubik (tests/conftest.py) and fp16
NV_SMALL_EXT_FP16 = NV_SMALL_EXT.replace(name="nv_small_ext_fp16",
                                         data_types=frozenset({"int8", "fp16"}))
#: nv_small with fp16, the SDP's EW stage and its LUT (the fp16 LUT on the generated core)
NV_SMALL_LUT_FP16 = NvdlaConfig.preset("nv_small").replace(
    name="nv_small_lut_fp16", data_types=frozenset({"int8", "fp16"}), sdp_ew=True,
    sdp_ew_throughput=1, sdp_lut=True)
FP16 = 2


def _set(block, regs, reg, **fields):
    word = regs.get(reg, block[reg].reset)
    for k, v in fields.items():
        f = block[reg].field(k) if hasattr(block[reg], "field") else \
            next(x for x in block[reg].fields if x.name == k)
        word = (word & ~(((1 << f.width) - 1) << f.lsb)) | ((v & ((1 << f.width) - 1)) << f.lsb)
    regs[reg] = word & 0xFFFFFFFF


def _is_fp16(cfg, p):
    f = next(x for x in register_map(cfg)["SDP"]["D_DATA_FORMAT"].fields
             if x.name == "PROC_PRECISION")
    return (p["sdp"].get("D_DATA_FORMAT", 0) >> f.lsb) & 3 == FP16


def fp16_layers(cfg, seed, count, max_elems, pdp_share=0.15, fp16_share=0.7, ew_off=0.0,
                eql=0.15, lut_share=0.0):
    """``count`` layers valid for the golden model: fp16 ones (``fp16_share``) and int8 ones,
    random perf enables; some layers sent to PDP (their stream compared); ``ew_off``: the
    share of fp16 layers whose EW stage is turned off (those that still pass the golden
    model's rules); ``eql``: the share of layers put in EW's equal
    mode (builds with EW); ``lut_share``: the share of fp16 layers that use the LUT (builds
    with it; a random LUT of :func:`sim.sdp.random_programs.random_lut_fp16` each, loaded
    through the CSB port before the layer; other layers draw the same as without)."""
    from tb.sdp_unit import golden
    from tests.test_sdp import _image
    rmap = register_map(cfg)
    sb, rb = rmap["SDP"], rmap["SDP_RDMA"]
    rng = np.random.default_rng(seed)
    layers = []
    while len(layers) < count:
        want_fp = rng.random() < fp16_share
        p = random_program(cfg, rng, max_elems)
        if _is_fp16(cfg, p) != want_fp:
            continue
        sdp, rdma = dict(p["sdp"]), dict(p["rdma"])
        _set(sb, sdp, "D_PERF_ENABLE", PERF_SAT_EN=int(rng.integers(2)),
             PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
        _set(rb, rdma, "D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)),
             PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
        if want_fp and cfg.sdp_ew and rng.random() < ew_off:
            _set(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=1)
        if cfg.sdp_ew and rng.random() < eql:
            _set(sb, sdp, "D_DP_EW_CFG", EW_BYPASS=0, EW_ALU_BYPASS=0, EW_ALU_ALGO=3)
        to_pdp = cfg.pdp and rng.random() < pdp_share
        if to_pdp:
            _set(sb, sdp, "D_FEATURE_MODE_CFG", OUTPUT_DST=1)
        prog = {"sdp": sdp, "rdma": rdma, "s": {}, "images": p["images"], "lut": None,
                "shape": p["shape"]}
        if want_fp and cfg.sdp_lut and lut_share and rng.random() < lut_share:
            lut = random_lut_fp16(cfg, rng)
            use_lut(cfg, sdp)
            prog.update(s=lut["s"], lut=(lut["le"], lut["lo"]))
        try:
            golden(cfg, prog, _image(prog))
        except (SdpProgramError, NotImplementedError):
            continue
        layers.append(prog)
    return layers


@pytest.mark.parametrize("seed, count", [(20, 10), pytest.param(21, 60,
                                                                marks=pytest.mark.slow)],
                         ids=["seed20", "seed21"])
def test_unit_random_fp16_layers(seed, count):
    from tb.sdp_unit import run_layers
    layers = fp16_layers(NV_SMALL_FP16, seed, count, 160)
    assert sum(_is_fp16(NV_SMALL_FP16, p) for p in layers) >= count // 3
    run_layers(NV_SMALL_FP16, layers, seed=seed, latency=(1, 24), backpressure=0.3)


@pytest.mark.parametrize("seed, count", [(26, 12), pytest.param(24, 40,
                                                                marks=pytest.mark.slow)],
                         ids=["seed26", "seed24"])
def test_unit_random_fp16_layers_with_ew(seed, count):
    """nv_small + EW / LUT / SRAMIF + fp16: fp16 EW (MUL then ALU incl. EQL) with fp16 memory
    and fp32 register operands, CV and MC memories."""
    from tb.sdp_unit import run_layers
    layers = fp16_layers(NV_SMALL_EXT_FP16, seed, count, 160)
    assert sum(_is_fp16(NV_SMALL_EXT_FP16, p) for p in layers) >= count // 3
    run_layers(NV_SMALL_EXT_FP16, layers, seed=seed, latency=(1, 24), backpressure=0.3)


@pytest.mark.parametrize("seed, count", [(40, 8), pytest.param(41, 40, marks=pytest.mark.slow)],
                         ids=["seed40", "seed41"])
def test_unit_random_fp16_lut_layers(seed, count):
    """fp16 layers through the LUT (nv_small + EW / LUT / SRAMIF + fp16): a random LUT per
    layer (fp16 entries and slope scales, fp32 START / END; LE in exponent or linear mode;
    random priorities), inputs that hit, interpolate (zero fractions too), under- and
    overflow both tables; the memory and the five LUT counters compared with the golden
    model (:func:`tb.sdp_unit.run_layers` compares every status counter)."""
    from tb.sdp_unit import golden, run_layers
    from tests.test_sdp import _image
    cfg = NV_SMALL_EXT_FP16
    layers = fp16_layers(cfg, seed, count, 120, lut_share=0.85, pdp_share=0.05)
    luts = [p for p in layers if p["lut"]]
    assert len(luts) >= count // 2
    if count >= 8:              # the cases the tables see (golden model counts)
        seen = np.zeros(5, int)
        le_modes = set()
        for p in luts:
            r = golden(cfg, p, _image(p))
            seen += [r.lut_uflow or 0, r.lut_oflow or 0, r.lut_hybrid or 0,
                     r.lut_le_hit or 0, r.lut_lo_hit or 0]
            le_modes.add(p["s"]["S_LUT_CFG"] & 1)
        assert (seen > 0).all(), seen
        assert le_modes == {0, 1}
    run_layers(cfg, layers, seed=seed, latency=(1, 24), backpressure=0.3)


def _uses_fp16_lut(trace_dir):
    """Whether a random trace has an fp16 layer with EW and the LUT on."""
    import re
    text = next(Path(trace_dir).glob("*.cfg")).read_text()
    ews = [int(v, 16) for v in re.findall(r"NVDLA_SDP\.D_DP_EW_CFG_0, (0x[0-9a-f]+)", text)]
    fps = re.findall(r"NVDLA_SDP\.D_DATA_FORMAT_0, (0x[0-9a-f]+)", text)
    return any(int(f, 16) == 0xA and not ew & 1 and not (ew >> 6) & 1
               for f, ew in zip(fps, ews))


@pytest.mark.rtl
@pytest.mark.slow                       # a build of its own (~3 min of CPU): slow suite
@pytest.mark.parametrize("seed, count", [(510, 30), (511, 200)], ids=["seed510", "seed511"])
def test_random_fp16_lut_programs_rtl_matches_golden(tmp_path, seed, count):
    """Random trace programs with a random fp16 LUT each (:func:`write_random_traces` with
    ``lut=True``) on the generated nv_small_lut_fp16 core under AXI back-pressure: most of
    their fp16 layers go through the LUT."""
    paths = write_random_traces(NV_SMALL_LUT_FP16, str(tmp_path), count, seed=seed,
                                max_elems=400, lut=True)
    with_lut = sum(_uses_fp16_lut(p) for p in paths)
    assert with_lut >= count // 4, with_lut
    assert_all_pass(playback(paths, NV_SMALL_LUT_FP16, max_cycles=1_000_000, seed=seed,
                             busy=0.3, latency=(1, 24)), count, show=20)


@pytest.mark.rtl
@pytest.mark.parametrize("seed, count", [(500, 40), pytest.param(501, 300,
                                                                 marks=pytest.mark.slow)],
                         ids=["seed500", "seed501"])
def test_random_fp16_sdp_programs_rtl_matches_golden(tmp_path, seed, count):
    paths = write_random_traces(NV_SMALL_FP16, str(tmp_path), count, seed=seed)
    fp16 = sum(any("NVDLA_SDP.D_DATA_FORMAT_0, 0xa)" in f.read_text()
                   for f in Path(p).glob("*.cfg")) for p in paths)
    assert fp16 >= count // 3, fp16                  # programs with an fp16 layer
    assert_all_pass(playback(paths, NV_SMALL_FP16, max_cycles=1_000_000, seed=seed, busy=0.3,
                             latency=(1, 24)), count, show=20)


@pytest.mark.slow
def test_unit_random_fp16_layers_nv_full():
    """nv_full: 16 lanes, 2 atoms per 512-bit word, int16 beside fp16, CV and MC memories,
    fp16 layers through the LUT."""
    from tb.sdp_unit import run_layers
    full = NvdlaConfig.preset("nv_full")
    layers = fp16_layers(full, 22, 24, 600, ew_off=0.3, lut_share=0.4)
    assert sum(_is_fp16(full, p) for p in layers) >= 3
    assert sum(bool(p["lut"]) for p in layers) >= 3
    run_layers(full, layers, seed=22, latency=(1, 24), backpressure=0.3)


def _brdma_on(cfg, p):
    rb = register_map(cfg)["SDP_RDMA"]
    return not (p["rdma"].get("D_BRDMA_CFG", rb["D_BRDMA_CFG"].reset) & 1)   # BRDMA_DISABLE


#: fp16 program mutations the golden model rejects: (name, block, register, fields, applies)
INVALID_FP16 = [
    ("out_int8", "sdp", "D_DATA_FORMAT", {"OUT_PRECISION": 0}, None),
    ("out_int16", "sdp", "D_DATA_FORMAT", {"OUT_PRECISION": 1}, None),
    ("rdma_proc_int8", "rdma", "D_FEATURE_MODE_CFG", {"PROC_PRECISION": 0}, None),
    ("in_int8", "rdma", "D_FEATURE_MODE_CFG", {"IN_PRECISION": 0}, None),
    ("brdma_one_byte", "rdma", "D_BRDMA_CFG", {"BRDMA_DATA_SIZE": 0}, _brdma_on),
]


def test_unit_invalid_fp16_layers_finish_without_memory_traffic():
    """fp16 layers broken in a precision rule (output precision, the RDMA's processing or
    input precision, a one-byte operand DMA): the golden model rejects them and the RTL ends
    them without DMA, between fp16 layers that run."""
    from tb.sdp_unit import golden, run_layers
    from tests.test_sdp import _image
    cfg = NV_SMALL_FP16
    rmap = register_map(cfg)
    rng = np.random.default_rng(30)
    layers = fp16_layers(cfg, 31, 3, 64, pdp_share=0, fp16_share=1)
    for name, blk, reg, fields, applies in INVALID_FP16:
        while True:
            p = random_program(cfg, rng, 64)
            if _is_fp16(cfg, p) and (applies is None or applies(cfg, p)):
                break
        prog = {"sdp": dict(p["sdp"]), "rdma": dict(p["rdma"]), "s": {}, "images": p["images"],
                "lut": None, "shape": p["shape"], "invalid": True, "name": name}
        _set(rmap["SDP" if blk == "sdp" else "SDP_RDMA"], prog[blk], reg, **fields)
        with pytest.raises((SdpProgramError, NotImplementedError)):
            golden(cfg, prog, _image(prog))
        layers.insert(int(rng.integers(len(layers) + 1)), prog)
    run_layers(cfg, layers, seed=30, latency=(1, 24), backpressure=0.3)


def test_lut_index_fp16_against_golden():
    """:func:`hw.sdp.datapath._index_fp16` alone (Amaranth's simulator) against the golden
    model's ``lut_index_exponent_fp16`` / ``lut_index_linear_fp16`` on 3,000 fp32 differences
    (normal, infinite, negative, NaN) with any index offset / select: index, 35-bit fraction,
    under- and overflow of both tables. (START = 0: the golden functions' subtraction leaves
    those differences as they are.)"""
    from amaranth.hdl import Elaboratable, Module, Signal, signed
    from amaranth.sim import Simulator
    from hw.sdp.datapath import LE_DEPTH, LO_DEPTH, _index_fp16
    from sim.sdp.sdp import lut_index_exponent_fp16, lut_index_linear_fp16

    class Bench(Elaboratable):
        def __init__(self):
            self.d, self.ex = Signal(32), Signal()
            self.off, self.sel = Signal(signed(8)), Signal(signed(8))
            self.outs = {}

        def elaborate(self, platform):
            m = Module()
            for depth in (LE_DEPTH, LO_DEPTH):
                vals = _index_fp16(m, self.d, self.ex if depth == LE_DEPTH else False,
                                   self.off, self.sel, depth, f"t{depth}")
                for k, v in zip("ifuo", vals):
                    sig = Signal(len(v), name=f"o{k}{depth}")
                    m.d.comb += sig.eq(v)
                    self.outs[k, depth] = sig
            return m

    bench = Bench()
    rng = np.random.default_rng(12)
    bad = []

    async def run(ctx):
        for _ in range(3000):
            e = 255 if rng.random() < 0.05 else int(rng.integers(1, 255))
            d = (int(rng.random() < 0.2) << 31) | (e << 23) | int(rng.integers(0, 1 << 23))
            if rng.random() < 0.03:
                d = 0x7F800000 | int(rng.integers(1, 1 << 23))               # NaN
            ex = int(rng.integers(2))
            off = int(rng.integers(-128, 128)) if rng.random() < 0.3 else \
                int(rng.integers(-70, 5))
            sel = int(rng.integers(-128, 128)) if rng.random() < 0.3 else \
                int(rng.integers(-10, 5))
            for sig, v in ((bench.d, d), (bench.ex, ex), (bench.off, off), (bench.sel, sel)):
                ctx.set(sig, v)
            for depth in (LE_DEPTH, LO_DEPTH):
                if ex and depth == LE_DEPTH:
                    want = lut_index_exponent_fp16(np.array([d]), 0, off, depth)
                else:
                    want = lut_index_linear_fp16(np.array([d]), 0, sel, depth)
                want = tuple(int(np.asarray(v).reshape(-1)[0]) for v in want)
                got = tuple(ctx.get(bench.outs[k, depth]) for k in "ifuo")
                if got != want:
                    bad.append((hex(d), ex, off, sel, depth, got, want))

    sim = Simulator(bench)
    sim.add_testbench(run)
    sim.run()
    assert not bad, bad[:5]
