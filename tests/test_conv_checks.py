"""Invalid convolution programs: the RTL's layer-start check (hw/conv/check.py) against the
golden model's rules, and the core rejecting them without memory traffic.

* ``ConvCheck`` in Amaranth simulation: for valid random layers and layer pairs (every reuse
  kind) and for every mutation of :data:`sim.conv.random_programs.INVALID_MUTATIONS` plus
  the further ones below, its verdict equals the golden model's
  (:func:`sim.conv.program.decode`, then the CBUF reuse rules of
  :func:`sim.conv.cdma.load_cbuf`, and the flying cube's
  :func:`sim.sdp.sdp.check_flying_cube`); on int8-only builds, so the RTL's int8 restriction is
  the golden model's too. On nv_small_int16 the same for the mutations applied to an int16
  layer, int16-specific mutations and random int16 / int8 programs; the RTL-only int16
  restrictions (:mod:`hw.conv.check`) are checked on their own. Batches: on builds with
  batching (nv_large; its random programs batch half their layers) the golden verdict of a
  batched layer adds the delivery rule (:func:`sim.conv.program.check_batch_delivery`) and
  SDP's batch count. Winograd on nv_large_wino (:func:`hw.conv.common.conv_winograd`):
  random Winograd layers and pairs (reuse between Winograd layers, changes of mode), a
  mutation per Winograd rule and reuse pairs across the modes; off conv_winograd builds, and
  for fp16 off conv_winograd_fp16 builds, the check rejects Winograd layers
  (:func:`sim.conv.core_limits.check_core_limits`).
* The core (Verilator, one simulator start): every invalid trace of
  :func:`~sim.conv.random_programs.write_invalid_traces` raises its SDP interrupt, its
  checks (output window plus guard bands, zero) pass, the rejected layer issues no AXI write
  and no CDMA read (any AXI write lies in a valid layer's output window, any CDMA read in a
  valid layer's input images) -- and the golden model rejects the same program; a handful of
  valid random programs still pass.
* The playback engine (nv_small, nv_small_256; nv_small_int16 with int16 layers; nv_large in
  the slow suite, its build takes about 20 minutes): one invalid program per rule class (the
  mutation lists above) finishes with its interrupt while its output window, a 68 KiB band
  around it and every loaded image keep their contents
  (:func:`test_invalid_programs_playback_write_nothing`,
  :func:`test_invalid_int16_programs_playback_write_nothing`).
"""

from __future__ import annotations

import os
import types

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, ResetInserter, Signal
from amaranth.sim import Simulator

from arch.config import NvdlaConfig
from arch.registers import register_map
from hw.conv.check import CHECK_CYCLES, ConvCheck
from sim.conv import random_programs as rp
from sim.conv.cdma import CbufState, load_cbuf
from sim.conv.core_limits import check_core_limits
from sim.conv.unit import check_sdp_precision, check_sdp_winograd
from sim.conv.program import ConvProgramError, check_batch_delivery, decode
from sim.memory import SparseMemory
from sim.random_traces import MEM
from sim.regs import GroupView
from sim.sdp.random_programs import Regs
from sim.sdp.sdp import SdpProgramError, check_flying_cube
from sim.trace import parse_trace
from sim.trace_run import EngineUnavailable
from tb.sdp_unit import flying_cube, view_value

from .conftest import NV_SMALL_256_2COL, NV_SMALL_INT16

BLOCKS = ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")
NV_SMALL = NvdlaConfig.preset("nv_small")
NV_SMALL_256 = NvdlaConfig.preset("nv_small_256")
NV_LARGE = NvdlaConfig.preset("nv_large")
NV_FULL = NvdlaConfig.preset("nv_full")


# -- the golden verdict ------------------------------------------------------------------------
def golden_verdicts(cfg, layers):
    """[(ok, message)] per layer, in order, with the CBUF state carried between them."""
    rmap = register_map(cfg)
    state = CbufState()
    core = types.SimpleNamespace(dbb=SparseMemory(), sram=SparseMemory())
    out = []
    for layer in layers:
        views = [GroupView(rmap[b], layer["regs"][b]) for b in BLOCKS]
        try:
            p = decode(cfg, *views)
            if "SDP" in layer["regs"]:
                check_sdp_precision(p, GroupView(rmap["SDP"], layer["regs"]["SDP"]))
                check_sdp_winograd(p, GroupView(rmap["SDP"], layer["regs"]["SDP"]))
            check_core_limits(cfg, p)
            if p.batches > 1 and "SDP" in layer["regs"]:
                check_batch_delivery(cfg, p, views[-1],
                                     GroupView(rmap["SDP"], layer["regs"]["SDP"]))
            load_cbuf(core, cfg, p, state)
            if "SDP" in layer["regs"]:               # the cube flying into SDP
                check_flying_cube(cfg, GroupView(rmap["SDP"], layer["regs"]["SDP"]),
                                  (p.out_channels, p.out_height, p.out_width),
                                  batches=p.batches)
            out.append((True, ""))
        except (ConvProgramError, SdpProgramError) as e:
            out.append((False, str(e)))
    return out


def verdict_mismatches(cfg, names, programs, got):
    """["name: golden ..., rtl ..."] for each program whose RTL verdicts (``got``, from
    :func:`rtl_verdicts`) differ from :func:`golden_verdicts`."""
    bad = []
    for name, layers, rtl in zip(names, programs, got):
        gold = golden_verdicts(cfg, layers)
        if [ok for ok, _ in gold] != rtl:
            bad.append(f"{name}: golden {gold}, rtl {rtl}")
    return bad


# -- ConvCheck in simulation ---------------------------------------------------------------------
def rtl_verdicts(cfg, programs):
    """[[ok per layer] per program]; each program starts from a fresh CBUF record."""
    rmap = register_map(cfg)
    results = []

    async def bench(ctx):
        for layers in programs:
            ctx.set(dut.rst_record, 1)
            await ctx.tick()
            ctx.set(dut.rst_record, 0)
            got = []
            for layer in layers:
                for b in BLOCKS:
                    port = getattr(dut.check, f"{b.lower()}_regs")
                    ctx.set(port, view_value(port.shape(), rmap[b], layer["regs"][b]))
                if "SDP" in layer["regs"]:
                    ctx.set(dut.check.sdp, flying_cube(rmap["SDP"], layer["regs"]["SDP"],
                                                       cfg))
                else:                            # (an NVDLA trace's conv blocks alone)
                    cube = _agreeing_cube(rmap, layer["regs"]["CACC"])
                    if "winograd" in dut.check.sdp.shape().members:
                        cube["winograd"] = GroupView(rmap["CDMA"], layer["regs"]["CDMA"]) \
                            .D_MISC_CFG.CONV_MODE
                    ctx.set(dut.check.sdp, cube)
                ctx.set(dut.check.start, 1)
                await ctx.tick()
                ctx.set(dut.check.start, 0)
                n = 0
                while not ctx.get(dut.check.done):
                    await ctx.tick()
                    n += 1
                    assert n <= CHECK_CYCLES
                ok = bool(ctx.get(dut.check.ok))
                got.append(ok)
                await ctx.tick()
                if ok:                           # the layer's end: record the reuse state
                    ctx.set(dut.check.end, 1)
                    await ctx.tick()
                    ctx.set(dut.check.end, 0)
            results.append(got)

    dut = _CheckBench(cfg, rmap)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return results


def _agreeing_cube(rmap, cacc_words):
    """An int8 flying SDP cube equal to the one CACC delivers."""
    k = GroupView(rmap["CACC"], cacc_words)
    return {"int16": 0, "width": k.D_DATAOUT_SIZE_0.DATAOUT_WIDTH,
            "height": k.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT,
            "channel": k.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL}


class _CheckBench(Elaboratable):
    """ConvCheck with a synchronous reset of its record between programs."""

    def __init__(self, cfg, rmap):
        self.rst_record = Signal()
        self.check = ConvCheck(cfg, rmap)
        self._m = Module()
        self._m.submodules.check = ResetInserter(self.rst_record)(self.check)

    def elaborate(self, platform):
        return self._m


# -- programs ----------------------------------------------------------------------------------
def _set(cfg, layer, block, reg, **fields):
    r = Regs(register_map(cfg)[block])
    r.words = layer["regs"][block]
    r.set(reg, **fields)


def _word(cfg, layer, block, reg, value):
    layer["regs"][block][reg] = value


def _extra_mutations(cfg):
    """name -> mutation(cfg, layers) of the base layer, beyond INVALID_MUTATIONS."""
    atom = cfg.memory_atom

    def m(block, reg, **fields):
        return lambda cfg, layers: _set(cfg, layers[0], block, reg, **fields)

    def add(block, reg, delta):
        def f(cfg, layers):
            layers[0]["regs"][block][reg] = (layers[0]["regs"][block][reg] + delta) & 0xFFFFFFFF
        return f

    def seq(*fs):
        def f(cfg, layers):
            for g in fs:
                g(cfg, layers)
        return f

    def all5(reg, **fields):
        def f(cfg, layers):
            for b in BLOCKS:
                _set(cfg, layers[0], b, reg, **fields)
        return f

    def overlap_surfaces(cfg, layers):
        # two surfaces at least (the base layer's 11 channels are one 32-byte atom), the
        # second one starting inside the first one's lines
        if -(-11 // atom) < 2:
            layers[0] = rp._base_layer(cfg, C=atom + 11)
        _word(cfg, layers[0], "CDMA", "D_SURF_STRIDE", 6 * atom * 4)

    def past_memory(low, high, atoms):
        # the cube or surface starts ``atoms`` atoms below the top of the address space
        def f(cfg, layers):
            _word(cfg, layers[0], "CDMA", low, (1 << 32) - atoms * atom)
            if cfg.address_width > 32:
                _word(cfg, layers[0], "CDMA", high, (1 << (cfg.address_width - 32)) - 1)
        return f

    out = {
        "winograd_all": all5("D_MISC_CFG", CONV_MODE=1),
        "winograd_cmac_b": m("CMAC_B", "D_MISC_CFG", CONV_MODE=1),
        "proc_int16_cacc": m("CACC", "D_MISC_CFG", PROC_PRECISION=1),
        "proc_reserved": all5("D_MISC_CFG", PROC_PRECISION=3),
        "pixel": seq(m("CDMA", "D_DATAIN_FORMAT", DATAIN_FORMAT=1),
                     m("CSC", "D_DATAIN_FORMAT", DATAIN_FORMAT=1)),
        "pixel_csc_only": m("CSC", "D_DATAIN_FORMAT", DATAIN_FORMAT=1),
        "compressed": seq(m("CDMA", "D_WEIGHT_FORMAT", WEIGHT_FORMAT=1),
                          m("CSC", "D_WEIGHT_FORMAT", WEIGHT_FORMAT=1)),
        "compressed_csc_only": m("CSC", "D_WEIGHT_FORMAT", WEIGHT_FORMAT=1),
        "batches": seq(m("CDMA", "D_BATCH_NUMBER", BATCHES=1),
                       m("CSC", "D_BATCH_NUMBER", BATCHES=1),
                       m("CACC", "D_BATCH_NUMBER", BATCHES=1)),
        "batches_cacc_only": m("CACC", "D_BATCH_NUMBER", BATCHES=1),
        "width_ext": m("CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=3),
        "csc_channels": m("CSC", "D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=4),
        "weight_channels": m("CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=4),
        "cdma_kernels": m("CDMA", "D_WEIGHT_SIZE_1", WEIGHT_KERNEL=3),
        "byte_per_kernel": add("CDMA", "D_WEIGHT_SIZE_0", 1),
        "csc_weight_bytes": add("CSC", "D_WEIGHT_BYTES", 128),
        "csc_bank": m("CSC", "D_BANK", WEIGHT_BANK=2),
        "pad_top": m("CDMA", "D_ZERO_PADDING", PAD_TOP=0),
        "y_stride": m("CDMA", "D_CONV_STRIDE", CONV_Y_STRIDE=1),
        "out_height": m("CACC", "D_DATAOUT_SIZE_0", DATAOUT_HEIGHT=1),
        "out_channels": seq(m("CSC", "D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=3),
                            m("CACC", "D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=3)),
        "out_too_tall": seq(m("CSC", "D_DATAOUT_SIZE_0", DATAOUT_HEIGHT=5),
                            m("CACC", "D_DATAOUT_SIZE_0", DATAOUT_HEIGHT=5)),
        "kernel_too_tall": m("CSC", "D_DILATION_EXT", Y_DILATION_EXT=6),
        "reuse_bits_disagree": m("CSC", "D_MISC_CFG", SKIP_WEIGHT_RLS=1),
        "rls_slices": m("CSC", "D_RELEASE", RLS_SLICES=5),
        "csc_entries": add("CSC", "D_ENTRY_PER_SLICE", 1),
        "unaligned_base": add("CDMA", "D_DAIN_ADDR_LOW_0", 4),
        "unaligned_line_stride": add("CDMA", "D_LINE_STRIDE", 4),
        "unaligned_surf_stride": add("CDMA", "D_SURF_STRIDE", 4),
        "unaligned_weight": add("CDMA", "D_WEIGHT_ADDR_LOW", 4),
        "line_packed_flag": m("CDMA", "D_DAIN_MAP", LINE_PACKED=0),
        "grain_too_tall": m("CDMA", "D_FETCH_GRAIN", GRAINS=5),
        "surfaces_overlap": overlap_surfaces,
        "input_past_memory": past_memory("D_DAIN_ADDR_LOW_0", "D_DAIN_ADDR_HIGH_0", 2),
        "weights_past_memory": past_memory("D_WEIGHT_ADDR_LOW", "D_WEIGHT_ADDR_HIGH", 4),
        "weight_ram_cv": m("CDMA", "D_WEIGHT_RAM_TYPE", WEIGHT_RAM_TYPE=0)
        if not cfg.sramif else None,
        "data_height_short": m("CDMA", "D_DATAIN_SIZE_0", DATAIN_HEIGHT=3),
        "csc_height_long": m("CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=5,
                             DATAIN_WIDTH_EXT=5),
    }
    return {k: v for k, v in out.items() if v is not None}


def _sdp_mutations(cfg):
    """name -> mutation(cfg, layers): SDP's flying cube disagrees with the cube CACC delivers
    (the golden model names ``SDP.D_DATA_CUBE_WIDTH/HEIGHT/CHANNEL``; not a rule of
    :func:`sim.conv.program.decode`, so these stay out of :func:`_mutated_programs`)."""
    def cube(**fields):
        def f(cfg, layers):
            regs = layers[0]["regs"]["SDP"]
            for reg, fld in (("D_DATA_CUBE_WIDTH", "WIDTH"), ("D_DATA_CUBE_HEIGHT", "HEIGHT"),
                             ("D_DATA_CUBE_CHANNEL", "CHANNEL")):
                if fld in fields:
                    r = Regs(register_map(cfg)["SDP"])
                    r.words = regs
                    r.set(reg, **{fld: fields[fld](GroupView(r.block, regs)[reg][fld])})
        return f
    atom = cfg.memory_atom
    return {"sdp_width": cube(WIDTH=lambda v: v - 1),
            "sdp_height": cube(HEIGHT=lambda v: v - 1),
            "sdp_channels": cube(CHANNEL=lambda v: v + atom)}


def _sdp_rejects(cfg, layers):
    """A valid convolution whose flying SDP layer breaks SDP's own rule (output lines that
    overlap): SDP rejects it, the convolution ends without running (no hang on either side)."""
    layers[0]["regs"]["SDP"]["D_DST_LINE_STRIDE"] = cfg.memory_atom
    return "SDP.D_DST_LINE_STRIDE"


def _mutated_programs(cfg):
    """{name: layers} for INVALID_MUTATIONS and the extra mutations."""
    out = {}
    for name, mutate in rp.INVALID_MUTATIONS.items():
        layers = [rp._base_layer(cfg)]
        if mutate(cfg, layers) is not None:
            out[name] = layers
    for name, mutate in _extra_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        out[name] = layers
    return out


def _random_programs(cfg, seed, count):
    rng = np.random.default_rng(seed)
    out = []
    kinds = ("none",) + rp.REUSE_KINDS
    while len(out) < count:
        try:
            if len(out) % 2:
                out.append(rp.random_pair(cfg, rng, 50_000, kind=kinds[len(out) // 2 %
                                                                         len(kinds)]))
            else:
                out.append([rp.random_program(cfg, rng, 50_000, 0)])
        except rp._Redraw:
            continue
    return out


#: mutations that stay valid on the full register layout (no address or byte-count bits below
#: the 32-byte atom: the alignment mutations cannot be expressed; both verdicts are "valid")
_FULL_LAYOUT_VALID = {"weight_bytes_unaligned", "unaligned_base", "unaligned_line_stride",
                      "unaligned_surf_stride", "unaligned_weight"}


@pytest.mark.parametrize("cfg", [NV_SMALL, NV_SMALL_256, NV_LARGE, NV_SMALL_256_2COL, NV_FULL],
                         ids=lambda c: c.name)
def test_check_matches_golden_rules(cfg):
    named = _mutated_programs(cfg)
    randoms = _random_programs(cfg, 5, 40)
    # valid controls next to the partial-reuse overflow: kept + fetched slices fill the bank
    controls = {f"partial_reuse_fits_{n}": rp.partial_reuse_pair(cfg, n) for n in (1, 3)}
    programs = list(named.values()) + list(controls.values()) + randoms
    names = list(named) + list(controls) + [f"random{i}" for i in range(len(randoms))]
    got = rtl_verdicts(cfg, programs)
    assert [got[names.index(n)] for n in controls] == [[True, True]] * len(controls)
    bad = verdict_mismatches(cfg, names, programs, got)
    assert not bad, "\n".join(bad)
    # every named mutation is invalid on every build (each rule is exercised: the overlap
    # takes two surfaces, the address-space rules the build's address width)
    # (batch_dst_overlap breaks SDP's own rule: the SDP rejects it, not this check)
    valid = [n for n, r in zip(names, got) if n in named and all(r)
             and n not in ("batch_dst_overlap",)
             and not (cfg.register_layout == "full" and n in _FULL_LAYOUT_VALID)]
    assert not valid, valid


def test_check_compares_the_flying_cube():
    """SDP's flying cube must be CACC's: same width and height, channels = kernels or the
    kernels rounded up to whole SDP atoms (here 16 kernels into a 12-channel SDP cube)."""
    cfg = NV_SMALL
    programs = []
    for mutate in _sdp_mutations(cfg).values():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        programs.append(layers)
    padded = [rp._base_layer(cfg, K=16)]
    _set(cfg, padded[0], "SDP", "D_DATA_CUBE_CHANNEL", CHANNEL=11)
    programs += [padded, [rp._base_layer(cfg)]]
    assert rtl_verdicts(cfg, programs) == [[False]] * 3 + [[True], [True]]


def test_int16_on_int16_builds():
    """A build with int16 and bank-row CBUF entries (nv_small_int16, nv_full with bank-row
    entries) takes int16 layers, with the input convertor too (int16 to int16); the RTL-only
    restrictions there are rejected (the convertor between precisions: int8 input into an
    int16 layer and int16 input into an int8 one, an int16 layer into an int8 SDP layer and an
    int8 one into an int16 SDP layer, data reuse of slices kept by a layer of the other
    precision), and nv_full itself (two-column entries) takes its int8, int16 and fp16 layers,
    as the golden model does."""
    rows = NV_FULL.replace(name="nv_full_rows", cbuf_entry_width=0)
    assert rtl_verdicts(rows, [[rp._base_layer(rows, prec=1)], [rp._base_layer(rows)]]) == \
        [[True], [True]]
    fp16 = [rp._base_layer(NV_FULL, prec=2)]
    assert golden_verdicts(NV_FULL, fp16)[0][0] is True
    assert rtl_verdicts(NV_FULL, [[rp._base_layer(NV_FULL)], [rp._base_layer(NV_FULL, prec=1)],
                                  fp16]) == [[True], [True], [True]]
    cfg = NV_SMALL_INT16
    progs = {}
    progs["int16"] = [rp._base_layer(cfg, prec=1)]
    cvt = [rp._base_layer(cfg, prec=1)]
    _set(cfg, cvt[0], "CDMA", "D_CVT_CFG", CVT_EN=1)
    progs["int16_cvt"] = cvt
    for name, prec, in_prec in (("int8_to_int16_cvt", 1, 0), ("int16_to_int8_cvt", 0, 1)):
        layers = [rp._base_layer(cfg, prec=prec)]
        _set(cfg, layers[0], "CDMA", "D_CVT_CFG", CVT_EN=1)
        for b in ("CDMA", "CSC"):
            _set(cfg, layers[0], b, "D_MISC_CFG", IN_PRECISION=in_prec)
        progs[name] = layers
    for name, prec, sdp_prec in (("int16_into_int8_sdp", 1, 0), ("int8_into_int16_sdp", 0, 1)):
        layers = [rp._base_layer(cfg, prec=prec)]
        _set(cfg, layers[0], "SDP", "D_DATA_FORMAT", PROC_PRECISION=sdp_prec,
             OUT_PRECISION=sdp_prec)
        progs[name] = layers
    # int8 C = 16 and int16 C = 8: the same entries per slice (the other reuse rules pass)
    first = rp._base_layer(cfg, C=16, reuse=(0, 0, 1, 0))
    second = rp._base_layer(cfg, slot=1, prec=1, C=8, banks=first["info"]["banks"],
                            reuse=(1, 0, 0, 0), emit_feature=False,
                            feature_base=first["info"]["feature_base"])
    progs["int16_reuses_int8_data"] = [first, second]
    got = dict(zip(progs, rtl_verdicts(cfg, list(progs.values()))))
    assert got == {"int16": [True], "int16_cvt": [True], "int8_to_int16_cvt": [False],
                   "int16_to_int8_cvt": [False], "int16_into_int8_sdp": [False],
                   "int8_into_int16_sdp": [False], "int16_reuses_int8_data": [True, False]}, got


def _int16_mutations(cfg):
    """name -> mutation(cfg, layers) of the int16 base layer that the golden model rejects for
    int16 reasons: int8 counts where int16 ones are due, precisions that disagree."""
    def fields(block, reg, **f):
        return lambda cfg, layers: _set(cfg, layers[0], block, reg, **f)

    def both(reg, f):
        def g(cfg, layers):
            for b in ("CDMA", "CSC"):
                _set(cfg, layers[0], b, reg, **f(layers[0]))
        return g
    C, W, K, kh, kw = 11, 6, 9, 3, 2                       # rp._base_layer's geometry
    atom = cfg.memory_atom
    return {
        "int16_in_int8": both("D_MISC_CFG", lambda _: {"IN_PRECISION": 0}),
        "int16_cacc_int8": fields("CACC", "D_MISC_CFG", PROC_PRECISION=0),
        "int16_csc_in_int8": fields("CSC", "D_MISC_CFG", IN_PRECISION=0),
        "int16_entries_of_int8": both("D_ENTRY_PER_SLICE", lambda _: {
            "ENTRIES": W * -(-C // atom) - 1}),
        "int16_bpk_of_int8": fields("CDMA", "D_WEIGHT_SIZE_0",
                                    BYTE_PER_KERNEL=C * kh * kw - 1),
        "int16_weight_bytes_of_int8": lambda cfg, layers: [
            layers[0]["regs"][b].__setitem__("D_WEIGHT_BYTES", -(-K * C * kh * kw // 128) * 128)
            for b in ("CDMA", "CSC")],
    }


def _int16_programs(cfg, monkeypatch):
    """{name: layers}: every mutation of :func:`_mutated_programs` applied to the int16 base
    layer, and :func:`_int16_mutations`."""
    base = rp._base_layer
    monkeypatch.setattr(rp, "_base_layer",
                        lambda cfg, slot=0, **over: base(cfg, slot, **{"prec": 1, **over}))
    out = {f"i16_{k}": v for k, v in _mutated_programs(cfg).items()}
    for name, mutate in _int16_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        out[name] = layers
    return out


def test_int16_on_two_column_entries(monkeypatch):
    """nv_small_256_2col (two-column CBUF entries): the mutations on an int16 layer, the int16
    mutations, an int16 layer into an int8 SDP layer and an int8 one into an int16 SDP layer
    (both rejected, as on bank-row builds), int16 layers of every count of leftover atoms in
    a line's last entry, and random programs (int8 and int16 layers and pairs): the check's
    verdict is the golden model's (with this core's limits)."""
    cfg = NV_SMALL_256_2COL
    named = _int16_programs(cfg, monkeypatch)
    monkeypatch.undo()
    for name, prec, sdp_prec in (("int16_into_int8_sdp", 1, 0), ("int8_into_int16_sdp", 0, 1)):
        layers = [rp._base_layer(cfg, prec=prec)]
        _set(cfg, layers[0], "SDP", "D_DATA_FORMAT", PROC_PRECISION=sdp_prec,
             OUT_PRECISION=sdp_prec)
        named[name] = layers
    per_entry = cfg.cbuf_entry_bytes // cfg.memory_atom
    for n in range(1, 2 * per_entry + 1):                 # int16 C = n atoms of bytes
        named[f"i16_atoms{n}"] = [rp._base_layer(cfg, prec=1, C=n * cfg.memory_atom // 2)]
    randoms = _random_programs(cfg, 16, 30)
    programs = list(named.values()) + randoms
    names = list(named) + [f"random{i}" for i in range(len(randoms))]
    got = rtl_verdicts(cfg, programs)
    bad = verdict_mismatches(cfg, names, programs, got)
    assert not bad, "\n".join(bad)
    verdict = dict(zip(names, got))
    assert verdict["int16_into_int8_sdp"] == verdict["int8_into_int16_sdp"] == [False]
    assert all(verdict[f"i16_atoms{n}"] == [True] for n in range(1, 2 * per_entry + 1))
    assert all(not all(r) for n, r in verdict.items() if n.startswith("int16_"))
    assert any(L["info"]["prec"] == 1 and all(r)
               for layers, r in zip(randoms, got[len(named):]) for L in layers)


def test_check_matches_golden_rules_int16(monkeypatch):
    """nv_small_int16: the mutations on an int16 layer, the int16 mutations and random int16 /
    int8 layers and pairs: the check's verdict is the golden model's."""
    cfg = NV_SMALL_INT16
    named = _int16_programs(cfg, monkeypatch)
    monkeypatch.undo()
    randoms = _random_programs(cfg, 6, 40)
    programs = list(named.values()) + randoms
    names = list(named) + [f"random{i}" for i in range(len(randoms))]
    got = rtl_verdicts(cfg, programs)
    bad = verdict_mismatches(cfg, names, programs, got)
    assert not bad, "\n".join(bad)
    assert all(not all(r) for n, r in zip(names, got) if n.startswith("int16_"))


# -- the core: invalid traces finish without memory traffic, valid ones still pass --------
def _zero_crc(layer):
    import zlib
    return zlib.crc32(bytes(layer["window"][1]))


def _allowed(trace, n_valid):
    """Byte ranges the first ``n_valid`` layers of a trace may write / read (CDMA)."""
    from sim.trace import CheckCrc, MemLoad
    checks = [c for c in trace.commands if isinstance(c, CheckCrc)]
    writes = [(c.addr, c.addr + c.size) for c in checks[:n_valid]]
    reads = []
    for c in trace.commands:
        if isinstance(c, MemLoad):
            layer = int(os.path.basename(c.path).split("_")[0][1:])
            if layer < n_valid:
                reads.append((c.addr, c.addr + int(c.image.offsets.max()) + 1 + 256))
    return {"writes": writes, "reads": reads}


def _run_checked(cfg, items, tmp_path, **options):
    """Run [(trace dir, valid layers)] in one Verilator start; returns the result dicts."""
    import json
    import pickle
    from hw.core import dma_clients
    from tb.runner import run_cocotb
    from tb.trace_rtl import _check_tools
    try:
        _check_tools("verilator")
    except EngineUnavailable as e:
        pytest.skip(str(e))
    traces = [parse_trace(str(p), cfg) for p, _ in items]
    reads, _ = dma_clients(cfg)
    batch = {"traces": traces, "allowed": [_allowed(t, n) for t, (_, n) in zip(traces, items)],
             "read_ids": [reads.index("cdma_dat"), reads.index("cdma_wt")],
             "options": {"max_cycles": 100_000, "seed": 3, "busy": 0.3, "latency": (1, 24),
                         **options}}
    work = tmp_path / "sim"
    work.mkdir()
    with open(work / "batch.pkl", "wb") as f:
        pickle.dump(batch, f)
    try:
        run_cocotb(cfg, "tb.cocotb_conv_checks", "run_checked_traces", sim="verilator",
                   run_dir=work / "run",
                   extra_env={"NVDLA_TRACE_BATCH": str(work / "batch.pkl"),
                              "NVDLA_TRACE_RESULTS": str(work / "results.jsonl")})
    finally:
        lines = (work / "results.jsonl").read_text().splitlines() \
            if (work / "results.jsonl").exists() else []
    res = [json.loads(line) for line in lines]
    assert len(res) == len(items), "the simulator stopped early"
    return res


def _with_enable_order(order, fn, *args):
    saved = rp.ENABLE_ORDER
    rp.ENABLE_ORDER = order
    try:
        return fn(*args)
    finally:
        rp.ENABLE_ORDER = saved


CONV_FIRST = ("CACC", "CMAC_A", "CMAC_B", "CSC", "CDMA", "SDP_RDMA", "SDP")


@pytest.mark.rtl
@pytest.mark.slow
def test_core_rejects_invalid_programs_without_memory_traffic(tmp_path):
    """cocotb on Verilator (a build of its own, about 4.5 minutes): every invalid program's
    rejected layer makes no CDMA read and no write, valid programs write nothing outside their
    surfaces. The default suite checks the same on the playback engine: no AXI burst at all
    from a rejected layer (:func:`test_invalid_programs_playback_write_nothing`)."""
    cfg = NV_SMALL
    d = str(tmp_path / "traces")
    items = []                                   # (trace dir, valid layers)
    golden_invalid = []
    # write_invalid_traces: the offending layer is the last one
    for path, fld in rp.write_invalid_traces(cfg, d):
        res = rp.run_trace_golden(path, cfg)
        assert not res.passed and fld in res.message, (path, fld, res.message)
        n = sum(1 for c in parse_trace(path, cfg).commands if type(c).__name__ == "CheckCrc")
        items.append((path, n - 1))
    # further single-layer mutations, one of them with the convolution enabled before SDP
    for name, mutate in {**_extra_mutations(cfg), **_sdp_mutations(cfg),
                         "sdp_rejects": _sdp_rejects}.items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        path = rp.write_trace(d, f"conv_invalid_x_{name}", layers, [_zero_crc(layers[0])])
        golden_invalid.append(path)
        items.append((path, 0))
    layers = [rp._base_layer(cfg)]
    rp.INVALID_MUTATIONS["entry_per_slice"](cfg, layers)
    path = _with_enable_order(CONV_FIRST, rp.write_trace, d, "conv_invalid_conv_first",
                              layers, [_zero_crc(layers[0])])
    golden_invalid.append(path)
    items.append((path, 0))
    for path in golden_invalid:
        assert not rp.run_trace_golden(path, cfg).passed, path
    # valid programs: a few random ones and the base layer enabled convolution-first
    valid = rp.write_random_traces(cfg, d, 4, seed=21, max_macs=60_000)
    base = [rp._base_layer(cfg)]
    tmp = _with_enable_order(CONV_FIRST, rp.write_trace, d, "conv_valid_conv_first", base)
    crc = rp.run_trace_golden(tmp, cfg).checks[0].actual
    valid.append(_with_enable_order(CONV_FIRST, rp.write_trace, d, "conv_valid_conv_first",
                                    base, [crc]))
    for path in valid:
        items.append((path, 99))

    results = _run_checked(cfg, items, tmp_path)
    bad = []
    for (path, n_valid), r in zip(items, results):
        why = []
        if not r["passed"]:
            why.append(r["message"])
        if r["stray"]:
            why.append(f"{len(r['stray'])} bursts outside the valid layers' surfaces: "
                       f"{r['stray'][:3]}")
        if n_valid == 0 and (r["writes"] or r["reads"]):
            why.append(f"{r['writes']} AXI writes, {r['reads']} CDMA reads")
        if n_valid == 99 and not r["writes"]:
            why.append("a valid program wrote nothing")
        if why:
            bad.append(f"{r['name']}: " + "; ".join(why))
    assert not bad, "\n".join(bad)


def _trace_layer(path, cfg):
    """The convolution blocks' D registers a single-layer trace writes."""
    from sim.trace import RegWrite
    regs = {b: {} for b in BLOCKS}
    for c in parse_trace(str(path), cfg).commands:
        if isinstance(c, RegWrite) and c.block in BLOCKS and c.register.startswith("D_"):
            regs[c.block][c.register] = c.value
    return {"regs": regs}


def test_nvdla_dc_traces_pass_the_check():
    from .conftest import TRACES
    paths = sorted((TRACES / "nv_small").glob("dc_*"))
    if not paths:
        pytest.skip("NVDLA's traces are absent")
    layers = [[_trace_layer(p, NV_SMALL)] for p in paths]
    assert all(ok for (ok, _), in (golden_verdicts(NV_SMALL, l) for l in layers))
    assert rtl_verdicts(NV_SMALL, layers) == [[True]] * len(paths)


# -- the playback engine: one invalid program per rule class, nothing written -----------------
_BAND = 0x1000                  #: zeroed bytes checked before the rejected layer's window
_BAND_AFTER = 0x10000           #: ... and after it


def _no_write_trace(cfg, directory, name, layers):
    """Write ``layers`` (the last one invalid, any before it valid) as a trace whose checks show
    that the rejected layer wrote nothing: its output window with guard bands and a wider zeroed
    band around it stay zero, and every loaded image (inputs, weights) keeps its bytes. Returns
    the trace path."""
    import zlib
    crcs = [zlib.crc32(bytes(layer["window"][1])) for layer in layers]
    if len(layers) > 1:
        tmp = rp.write_trace(directory, f"{name}_valid_part", layers[:-1])
        got, err = rp._golden_crcs(cfg, tmp, len(layers) - 1)
        assert got is not None, f"{name}: a layer before the invalid one is invalid: {err}"
        crcs[:-1] = got
    path = rp.write_trace(directory, name, layers, crcs)
    waddr, wsize, wram = layers[-1]["window"]
    mem = MEM[wram]
    band = (waddr - _BAND, wsize + _BAND + _BAND_AFTER)
    sync = f"sync_id_{len(layers) - 1}"
    cfg_path = os.path.join(path, f"{name}.cfg")
    with open(cfg_path) as f:
        text = f.read()
    extra = [f"check_crc({sync}, {mem}, {band[0]:#x}, {band[1]:#x}, "
             f"{zlib.crc32(bytes(band[1])):#010x});"]
    for layer in layers:
        for addr, data, ram in layer["images"]:
            extra.append(f"check_crc({sync}, {MEM[ram]}, {addr:#x}, {data.size:#x}, "
                         f"{zlib.crc32(data.tobytes()):#010x});")
    with open(cfg_path, "w") as f:
        f.write(f"mem_init({mem}, {band[0]:#x}, {band[1]:#x}, ALL_ZERO);\n" + text
                + "\n".join(extra) + "\n")
    return path


def _invalid_rule_programs(cfg):
    """{name: (layers, field)} with one invalid program per rule class: the golden model's
    mutation list (the offending layer last; ``field`` the one its message names) and the
    further single-layer mutations of this file (``field`` None)."""
    out = {}
    for name, mutate in rp.INVALID_MUTATIONS.items():
        layers = [rp._base_layer(cfg)]
        fld = mutate(cfg, layers)
        if fld is not None:
            out[name] = (layers, fld)
    for name, mutate in _extra_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        out[f"x_{name}"] = (layers, None)
    for name, mutate in _sdp_mutations(cfg).items():
        layers = [rp._base_layer(cfg)]
        mutate(cfg, layers)
        out[name] = (layers, "SDP.D_DATA_CUBE_WIDTH")
    layers = [rp._base_layer(cfg)]
    out["sdp_rejects"] = (layers, _sdp_rejects(cfg, layers))
    return out


@pytest.mark.rtl
@pytest.mark.parametrize("cfg", [NV_SMALL, pytest.param(NV_SMALL_256, marks=pytest.mark.slow),
                                 pytest.param(NV_SMALL_256_2COL, marks=pytest.mark.slow),
                                 pytest.param(NV_LARGE, marks=pytest.mark.slow),
                                 pytest.param(NV_FULL, marks=pytest.mark.slow)],
                         ids=lambda c: c.name)
def test_invalid_programs_playback_write_nothing(tmp_path, cfg):
    """Every rule class on the playback engine: the golden model rejects the program, the RTL
    finishes the rejected layer (its SDP interrupt arrives, within a few cycles when it is the
    only layer) and nothing is written: the output window, a band of 68 KiB around it and all
    loaded images keep their contents, and a rejected single layer issues no AXI burst; a
    valid layer before it (two-layer rules) passes. (nv_small_256's and nv_small_256_2col's
    programs in the slow suite: the default one runs nv_small's, and nv_small_256_2col's
    entry rules on int16 layers, below.)"""
    programs = _invalid_rule_programs(cfg)
    if cfg.register_layout == "full":
        programs = {n: v for n, v in programs.items()
                    if n not in _FULL_LAYOUT_VALID and n[2:] not in _FULL_LAYOUT_VALID}
    _playback_writes_nothing(tmp_path, cfg, programs)


@pytest.mark.rtl
@pytest.mark.parametrize("cfg", [NV_SMALL_INT16,
                                 pytest.param(NV_SMALL_256_2COL, marks=pytest.mark.slow)],
                         ids=lambda c: c.name)
def test_invalid_int16_programs_playback_write_nothing(tmp_path, monkeypatch, cfg):
    """nv_small_int16 and nv_small_256_2col (two-column entries): every rule class on an int16
    layer (the mutations the golden model rejects) and the int16 mutations finish without
    writing, as on nv_small."""
    named = _int16_programs(cfg, monkeypatch)
    monkeypatch.undo()
    # (an SDP rule: tests/test_conv_batch_rtl.py runs it)
    named.pop("i16_batch_dst_overlap", None)
    programs = {n: (layers, None) for n, layers in named.items()
                if not golden_verdicts(cfg, layers)[-1][0]}
    assert len(programs) >= len(named) - 2, sorted(set(named) - set(programs))
    _playback_writes_nothing(tmp_path, cfg, programs)


def _playback_writes_nothing(tmp_path, cfg, programs):
    """Run {name: (layers, field)} (the last layer invalid) on the playback engine with the
    checks of :func:`_no_write_trace`, and a valid control that must be caught writing; a
    rejected single layer must issue no AXI burst at all (no read, no write)."""
    paths = []
    for name, (layers, fld) in programs.items():
        path = _no_write_trace(cfg, str(tmp_path), f"conv_nowrite_{name}", layers)
        res = rp.run_trace_golden(path, cfg)
        assert not res.passed and (fld is None or fld in res.message), (name, res.message)
        paths.append(path)
    # control: the valid base layer under the same checks must be caught writing its output
    control = [rp._base_layer(cfg)]
    paths.append(_no_write_trace(cfg, str(tmp_path), "conv_nowrite_control", control))
    try:
        from tb.playback import run_playback_batch
        results = run_playback_batch(paths, cfg, max_cycles=200_000, busy=0.3,
                                     latency=(1, 24), seed=9)
    except EngineUnavailable as e:
        pytest.skip(str(e))
    ctl = results.pop()
    assert not ctl.passed and [c.addr for c in ctl.failed_checks] == \
        [control[0]["window"][0], control[0]["window"][0] - _BAND], ctl.message
    bad = []
    for (name, (layers, _)), r in zip(programs.items(), results):
        if not r.passed:
            bad.append(f"{name}: {r.message}")
        elif len(r.checks) != len(layers) + 1 + sum(len(l["images"]) for l in layers):
            bad.append(f"{name}: {len(r.checks)} checks ran")
        elif len(layers) == 1 and not r.layers[-1] <= _REJECT_CYCLES:
            bad.append(f"{name}: the rejected layer took {r.layers[-1]} cycles")
        elif len(layers) == 1 and r.bursts != (0, 0):
            bad.append(f"{name}: the rejected layer issued {r.bursts[0]} read and "
                       f"{r.bursts[1]} write bursts")
    assert ctl.bursts[0] > 0 and ctl.bursts[1] > 0, ctl.bursts
    assert not bad, f"{len(bad)}/{len(paths)}:\n" + "\n".join(bad)


#: cycles from the rejected layer's last D_OP_ENABLE write to its interrupt, at most
_REJECT_CYCLES = 64         # measured: 22


# -- Winograd on the builds whose RTL runs it (hw.conv.common.conv_winograd) ---------------------
def _wino_base(cfg, slot=0, **over):
    """A small valid Winograd layer: 14 x 7 x 32 int8 (16 x 8 padded, stride 2 x 1: an 8 x 8
    x 64 extended input, 8 entries a line), 5 kernels, a 4 x 4 output."""
    from sim.conv import winograd_programs as wp
    rng = np.random.default_rng(3 + slot)
    spec = dict(W=14, H=7, C=32, K=5, stride=(2, 1), pad=(1, 1, 0, 1), pad_value=3)
    spec.update(over)
    we, he, ce, _ = wp.wino_geometry(spec["W"], spec["H"], spec["C"], spec["stride"],
                                     spec["pad"], spec.get("prec", 0), cfg.cbuf_entry_bytes)
    return wp.wino_layer(cfg, wt4=rng.integers(-5, 6, (spec["K"], ce, 4, 4)),
                         data=rng.integers(-5, 6, (spec["C"], spec["H"], spec["W"])),
                         slot=slot, **spec)


def _wino_out(cfg, layer, w=None, h=None, atomics=None):
    """Set the output size (CSC, CACC and the flying SDP cube agree) and ATOMICS."""
    for blk, reg, fld, v in (("CSC", "D_DATAOUT_SIZE_0", "DATAOUT_WIDTH", w),
                             ("CACC", "D_DATAOUT_SIZE_0", "DATAOUT_WIDTH", w),
                             ("CSC", "D_DATAOUT_SIZE_0", "DATAOUT_HEIGHT", h),
                             ("CACC", "D_DATAOUT_SIZE_0", "DATAOUT_HEIGHT", h),
                             ("SDP", "D_DATA_CUBE_WIDTH", "WIDTH", w),
                             ("SDP", "D_DATA_CUBE_HEIGHT", "HEIGHT", h),
                             ("SDP_RDMA", "D_DATA_CUBE_WIDTH", "WIDTH", w),
                             ("SDP_RDMA", "D_DATA_CUBE_HEIGHT", "HEIGHT", h)):
        if v is not None and blk in layer["regs"]:
            _set(cfg, layer, blk, reg, **{fld: v - 1})
    if atomics is not None:
        _set(cfg, layer, "CSC", "D_ATOMICS", ATOMICS=atomics)


def _wino_mutations(cfg):
    """name -> layers: one Winograd rule broken per program (the golden model rejects each),
    and ``ok_*`` controls the golden model accepts."""
    def one(mutate=None, **over):
        layer = _wino_base(cfg, **over)
        if mutate is not None:
            mutate(layer)
        return [layer]

    def f(block, reg, **fields):
        return lambda L: _set(cfg, L, block, reg, **fields)

    def both(reg, **fields):
        return lambda L: [_set(cfg, L, b, reg, **fields) for b in ("CDMA", "CSC")]

    def seq(*fs):
        return lambda L: [g(L) for g in fs]

    def bytes_(block, reg, delta):
        def g(L):
            L["regs"][block][reg] = (L["regs"][block][reg] + delta) & 0xFFFFFFFF
        return g

    out = {
        # geometry: channels, padding, extended sizes (CDMA and CSC)
        "w_channels_not_whole_atoms": one(C=20),
        "w_i16_channels_not_whole_atoms": one(C=24, prec=1),
        "w_padded_width": one(f("CDMA", "D_ZERO_PADDING", PAD_RIGHT=2)),
        "w_padded_height": one(f("CDMA", "D_ZERO_PADDING", PAD_BOTTOM=0)),
        "w_cdma_ext_width": one(f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=3)),
        "w_cdma_ext_width_not_4n": one(f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=6)),
        # padded = stride x EXT, but not a multiple of 4 x stride (every other field agrees)
        "w_padded_width_9_ext": one(seq(f("CDMA", "D_ZERO_PADDING", PAD_RIGHT=3),
                                        f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=8),
                                        f("CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=8),
                                        both("D_ENTRY_PER_SLICE", ENTRIES=8))),
        "w_padded_height_9_ext": one(seq(f("CDMA", "D_ZERO_PADDING", PAD_BOTTOM=2),
                                         f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=8))),
        "w_cdma_ext_height": one(f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=3)),
        "w_cdma_ext_height_not_4n": one(f("CDMA", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=8)),
        "w_csc_ext_width": one(f("CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_WIDTH_EXT=11)),
        "w_csc_ext_height_not_4n": one(f("CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=6)),
        "w_csc_ext_channels": one(f("CSC", "D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=31)),
        # the CSC's channels not extended, the weights agreeing with them
        "w_csc_channels_unextended": one(seq(
            f("CSC", "D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=31),
            f("CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=31),
            f("CDMA", "D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=16 * 32 - 1))),
        "w_csc_x_stride": one(f("CSC", "D_CONV_STRIDE_EXT", CONV_X_STRIDE_EXT=1)),
        "w_csc_y_stride": one(f("CSC", "D_CONV_STRIDE_EXT", CONV_Y_STRIDE_EXT=1)),
        "w_csc_x_dilation": one(f("CSC", "D_DILATION_EXT", X_DILATION_EXT=1)),
        "w_csc_y_dilation": one(f("CSC", "D_DILATION_EXT", Y_DILATION_EXT=1)),
        # weights
        "w_kernel_3x3": one(f("CSC", "D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=2,
                              WEIGHT_HEIGHT_EXT=2)),
        "w_kernel_4x3": one(f("CSC", "D_WEIGHT_SIZE_EXT_0", WEIGHT_HEIGHT_EXT=2)),
        "w_weight_channels": one(f("CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=31)),
        "w_byte_per_kernel": one(f("CDMA", "D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=575)),
        "w_cdma_kernels": one(f("CDMA", "D_WEIGHT_SIZE_1", WEIGHT_KERNEL=3)),
        "w_weight_bytes": one(seq(bytes_("CDMA", "D_WEIGHT_BYTES", -1024),
                                  bytes_("CSC", "D_WEIGHT_BYTES", -1024))),
        # output
        "w_output_not_4n": one(lambda L: _wino_out(cfg, L, w=3, atomics=11)),
        "w_output_too_wide": one(lambda L: _wino_out(cfg, L, w=8, atomics=31)),
        "w_output_too_tall": one(lambda L: _wino_out(cfg, L, h=8, atomics=31)),
        "w_cacc_height": one(f("CACC", "D_DATAOUT_SIZE_0", DATAOUT_HEIGHT=7)),
        "w_out_channels": one(seq(f("CSC", "D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=5),
                                  f("CACC", "D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=5))),
        "w_atomics": one(f("CSC", "D_ATOMICS", ATOMICS=19)),
        "w_atomics_short": one(f("CSC", "D_ATOMICS", ATOMICS=11)),
        "ok_atomics_low_bits": one(f("CSC", "D_ATOMICS", ATOMICS=12)),
        "ok_csc_padding": one(f("CSC", "D_ZERO_PADDING", PAD_LEFT=3, PAD_TOP=2)),
        # CBUF
        "w_entries": one(both("D_ENTRY_PER_SLICE", ENTRIES=15)),
        "w_entries_of_direct": one(both("D_ENTRY_PER_SLICE", ENTRIES=13)),
        "w_csc_entries": one(f("CSC", "D_ENTRY_PER_SLICE", ENTRIES=8)),
        "w_entries_over_1023": one(W=1030, H=6, C=64, K=1, stride=(1, 1), pad=(1, 1, 1, 1)),
        "w_data_banks": one(both("D_BANK", DATA_BANK=0, WEIGHT_BANK=14), W=62, C=128),
        "w_release_not_4n": one(f("CSC", "D_RELEASE", RLS_SLICES=2)),
        "w_release_too_many": one(f("CSC", "D_RELEASE", RLS_SLICES=11)),
        "ok_release_kept": one(seq(both("D_MISC_CFG", SKIP_DATA_RLS=1),
                                   f("CSC", "D_RELEASE", RLS_SLICES=2))),
        # modes and precisions
        "w_clip": one(f("CACC", "D_CLIP_CFG", CLIP_TRUNCATE=17)),
        # (the SDP layer and the batch stride agreeing: builds with batching)
        "w_batches": one(lambda L: [_set(cfg, L, b, "D_BATCH_NUMBER", BATCHES=1)
                                    for b in ("CDMA", "CSC", "CACC")] + [
            _set(cfg, L, "SDP", "D_FEATURE_MODE_CFG", BATCH_NUMBER=1),
            _word(cfg, L, "CDMA", "D_BATCH_STRIDE", 0x10000)] if cfg.batching else
            [_set(cfg, L, b, "D_BATCH_NUMBER", BATCHES=1) for b in ("CDMA", "CSC", "CACC")]),
        "w_precision_conversion": one(both("D_MISC_CFG", IN_PRECISION=1)),
        "w_image_input": one(both("D_DATAIN_FORMAT", DATAIN_FORMAT=1)),
        "w_cdma_direct": one(f("CDMA", "D_MISC_CFG", CONV_MODE=0)),
        "w_csc_direct": one(f("CSC", "D_MISC_CFG", CONV_MODE=0)),
        "w_cmac_a_direct": one(f("CMAC_A", "D_MISC_CFG", CONV_MODE=0)),
        "w_cmac_b_direct": one(f("CMAC_B", "D_MISC_CFG", CONV_MODE=0)),
        "w_cacc_direct": one(f("CACC", "D_MISC_CFG", CONV_MODE=0)),
        # feature-input rules shared with direct convolution
        "w_unaligned_base": one(bytes_("CDMA", "D_DAIN_ADDR_LOW_0", 4)),
        "w_line_stride_short": one(lambda L: _word(cfg, L, "CDMA", "D_LINE_STRIDE",
                                                   13 * cfg.memory_atom)),
        "w_unaligned_weight": one(bytes_("CDMA", "D_WEIGHT_ADDR_LOW", 4)),
        "w_input_past_memory": one(lambda L: [
            _word(cfg, L, "CDMA", "D_DAIN_ADDR_LOW_0", (1 << 32) - 2 * cfg.memory_atom)] + [
            _word(cfg, L, "CDMA", "D_DAIN_ADDR_HIGH_0", (1 << (cfg.address_width - 32)) - 1)
            for _ in range(cfg.address_width > 32)]),
        "w_sdp_height": one(lambda L: _set(cfg, L, "SDP", "D_DATA_CUBE_HEIGHT", HEIGHT=7)),
        # SDP's WINOGRAD must say what the convolution is (golden check_sdp_winograd)
        "w_sdp_winograd_off": one(lambda L: _set(cfg, L, "SDP", "D_FEATURE_MODE_CFG",
                                                 WINOGRAD=0)),
    }
    # int16: the base layer's rules on 16 channels (one atom)
    out["ok_i16_base"] = one(C=16, prec=1)
    out["w_i16_entries_of_int8"] = one(both("D_ENTRY_PER_SLICE", ENTRIES=3), C=16, prec=1)
    out["w_i16_byte_per_kernel_of_int8"] = one(
        f("CDMA", "D_WEIGHT_SIZE_0", BYTE_PER_KERNEL=16 * 32 - 1), C=16, prec=1)
    out["ok_base"] = one()
    return out


def _wino_reuse_programs(cfg):
    """name -> [first, second]: CBUF reuse across Winograd and direct layers under one bank
    split (the golden load_cbuf: reuse only within a mode, keyed by the extended width)."""
    banks = (4, 12)

    def wino(slot, reuse, **over):
        return _wino_base(cfg, slot, banks=banks, reuse=reuse, **over)

    def direct(slot, reuse, **over):
        return rp._base_layer(cfg, slot, banks=banks, reuse=reuse, **over)
    keep_all = (0, 0, 1, 1)
    sdp_wino = direct(0, (0, 0, 0, 0))
    assert "SDP" in sdp_wino["regs"]
    _set(cfg, sdp_wino, "SDP", "D_FEATURE_MODE_CFG", WINOGRAD=1)
    out = {
        "w_direct_into_sdp_winograd": [sdp_wino],
        "ok_w_full_data_reuse": [wino(0, (0, 0, 1, 0)), wino(1, (1, 0, 0, 0),
                                                            emit_feature=False)],
        "ok_w_weight_reuse": [wino(0, (0, 0, 0, 1)), wino(1, (0, 1, 0, 0), W=22)],
        # another extended width (entries too) under the same split: NVDLA rejects
        "w_data_reuse_other_width": [wino(0, (0, 0, 1, 0)), wino(1, (1, 0, 0, 0), W=22)],
        "w_weight_reuse_other_kernels": [wino(0, (0, 0, 0, 1)), wino(1, (0, 1, 0, 0), K=4)],
        "w_weight_reuse_released": [wino(0, (0, 0, 0, 0)), wino(1, (0, 1, 0, 0))],
        # a change of mode fetches anew: no reuse, no error
        "ok_direct_then_wino": [direct(0, keep_all), wino(1, (1, 1, 0, 0))],
        "ok_wino_then_direct": [wino(0, keep_all), direct(1, (1, 1, 0, 0))],
        "ok_direct_released_then_wino": [direct(0, (0, 0, 0, 0)), wino(1, (0, 1, 0, 0))],
    }
    # the same extended width and entries from another stride and channel count (8 x 8 x 64
    # extended: 16 x 8 x 32 at stride 2 x 1, 8 x 8 x 64 at stride 1): partial data reuse
    # keeps the extended lines, whatever the input's own channel count
    first = wino(0, (0, 0, 0, 0))
    _set(cfg, first, "CSC", "D_RELEASE", RLS_SLICES=3)
    out["ok_w_partial_reuse_other_stride"] = [
        first, wino(1, (1, 0, 0, 0), W=6, H=6, C=64, stride=(1, 1), pad=(1, 1, 1, 1),
                    csc_height=8)]
    return out


def _wino_randoms(cfg, seed, count):
    """Valid random Winograd programs (single layers and pairs of every kind of
    :data:`~sim.conv.winograd_programs.WINO_PAIR_KINDS`, int8 and int16 in turn)."""
    from sim.conv import winograd_programs as wp
    from sim.random_traces import Redraw
    rng = np.random.default_rng(seed)
    kinds = wp.WINO_PAIR_KINDS
    out = []
    while len(out) < count:
        prec = len(out) // 2 % 2 if "int16" in cfg.data_types else 0
        try:
            if len(out) % 2:
                out.append(wp.random_wino_pair(cfg, rng, kinds[len(out) // 2 % len(kinds)],
                                               prec, 60_000))
            else:
                out.append([wp.random_wino_program(cfg, rng, prec, 60_000)])
        except (Redraw, rp._Redraw):
            continue
    return out


def test_winograd_check_matches_golden_rules():
    """nv_large_wino (conv_winograd: Atomic-C 64, 32-byte atoms, bank-row entries; int8 and
    int16): the check's verdicts equal the golden model's (decode_winograd, load_cbuf's reuse
    rules, the flying cube) for random valid Winograd layers and pairs (CBUF reuse between
    Winograd layers, changes of mode both ways), one mutation per Winograd rule (each
    rejected), reuse pairs across the modes, and controls (accepted)."""
    from .conftest import NV_LARGE_WINO
    cfg = NV_LARGE_WINO
    named = {**_wino_mutations(cfg), **_wino_reuse_programs(cfg)}
    randoms = _wino_randoms(cfg, 8, 30)
    programs = list(named.values()) + randoms
    names = list(named) + [f"random{i}" for i in range(len(randoms))]
    gold = {n: [ok for ok, _ in golden_verdicts(cfg, p)] for n, p in zip(names, programs)}
    # the named programs are what their names say for the golden model
    assert [n for n in named if all(gold[n]) != n.startswith("ok_")] == []
    assert all(all(gold[n]) for n in names[len(named):])
    got = rtl_verdicts(cfg, programs)
    bad = verdict_mismatches(cfg, names, programs, got)
    assert not bad, "\n".join(bad)
    verdict = dict(zip(names, got))
    assert [n for n in named if all(verdict[n]) != n.startswith("ok_")] == []
    assert all(all(r) for r in got[len(named):])
    layers = [L for p in randoms for L in p]
    wino_layers = [L for L in layers if "ext" in L["info"]]
    assert {L["info"]["prec"] for L in wino_layers} == {0, 1}
    assert len(wino_layers) < len(layers)                 # direct layers in the pairs too


def test_winograd_check_on_nv_large():
    """nv_large (conv_winograd, int8, batching and weight compression): the same verdicts for
    its random Winograd layers and pairs (some with compressed weights), the mutations (a
    batched Winograd layer with SDP agreeing: rejected) and the reuse pairs."""
    cfg = NV_LARGE
    named = {n: p for n, p in {**_wino_mutations(cfg), **_wino_reuse_programs(cfg)}.items()
             if "i16" not in n}
    randoms = _wino_randoms(cfg, 9, 20)
    assert any(L["info"].get("compress") for p in randoms for L in p)
    programs = list(named.values()) + randoms
    names = list(named) + [f"random{i}" for i in range(len(randoms))]
    got = rtl_verdicts(cfg, programs)
    bad = verdict_mismatches(cfg, names, programs, got)
    assert not bad, "\n".join(bad)
    assert [n for n, r in zip(names, got) if all(r) != (not n.startswith("w_"))] == []


def test_winograd_rejected_without_conv_winograd():
    """Builds with ``winograd`` where conv_winograd does not hold (Atomic-C 32: the CDMA
    tests' nv_small_wino): the golden model runs their Winograd layers, this core's check
    rejects them (check_core_limits says so), and a direct layer still passes. fp16
    Winograd where an fp16 entry is not a small cube (nv_large_wino + fp16 on bank-row
    entries): the same. nv_large_wino's datapath on two-column entries (nv_full's CBUF
    layout) runs int8 and int16 Winograd layers, and with fp16 (nv_full, the tests'
    nv_large_wino_fp16) fp16 ones (conv_winograd_fp16): the check accepts them as the golden
    model does."""
    from sim.conv import winograd_programs as wp
    from arch.config import rtl_winograd
    from hw.conv.common import conv_winograd, conv_winograd_fp16
    from .conftest import NV_LARGE_WINO, NV_LARGE_WINO_FP16
    from .test_cdma import WINO_SMALL
    two_col = NV_LARGE_WINO.replace(name="nv_large_wino_2col",
                                    cbuf_entry_width=2 * NV_LARGE_WINO.cbuf_bank_width)
    fp16 = NV_LARGE_WINO.replace(name="nv_large_wino_fp16",
                                 data_types=frozenset({"int8", "int16", "fp16"}))
    for cfg, want in ((NV_LARGE_WINO, True), (NV_LARGE, True), (two_col, True),
                      (NV_FULL, True), (NV_SMALL, False), (fp16, True), (WINO_SMALL, False)):
        assert conv_winograd(cfg) == rtl_winograd(cfg) == want, cfg.name
    assert [conv_winograd_fp16(c) for c in (NV_FULL, NV_LARGE_WINO_FP16, fp16, two_col)] == \
        [True, True, False, False]
    rng = np.random.default_rng(4)

    def draw(cfg, precs, n):
        wino = []
        while len(wino) < n:
            try:
                wino.append([wp.random_wino_program(cfg, rng, precs[len(wino) % len(precs)],
                                                    60_000)])
            except Exception as e:                      # a redraw
                if "Redraw" not in type(e).__name__:
                    raise
        return wino

    for cfg, precs in ((WINO_SMALL, (0, 1)), (fp16, (2,))):
        wino = draw(cfg, precs, 2 * len(precs))
        rmap = register_map(cfg)
        for layers in wino:                             # NVDLA runs them: decode accepts
            p = decode(cfg, *(GroupView(rmap[b], layers[0]["regs"][b]) for b in BLOCKS))
            assert p.winograd is not None
            with pytest.raises(ConvProgramError, match="CONV_MODE=WINOGRAD.*this core's RTL"):
                check_core_limits(cfg, p)
        programs = wino + [[rp._base_layer(cfg)]]
        assert [v for v, in (golden_verdicts(cfg, p) for p in programs)] == \
            [(False, v[1]) for v, in (golden_verdicts(cfg, p) for p in wino)] + [(True, "")]
        assert rtl_verdicts(cfg, programs) == [[False]] * len(wino) + [[True]], cfg.name
    # two-column entries: int8 and int16 layers (every leftover atom count) accepted
    wino = draw(two_col, (0, 1), 8)
    assert all(all(ok for ok, _ in golden_verdicts(two_col, p)) for p in wino)
    assert rtl_verdicts(two_col, wino) == [[True]] * len(wino)
    # fp16 Winograd where an fp16 entry is a small cube: accepted, within the core's limits
    for cfg in (NV_FULL, NV_LARGE_WINO_FP16):
        wino = draw(cfg, (2,), 3)
        rmap = register_map(cfg)
        for layers in wino:
            check_core_limits(cfg, decode(cfg, *(GroupView(rmap[b], layers[0]["regs"][b])
                                                 for b in BLOCKS)))
        assert all(all(ok for ok, _ in golden_verdicts(cfg, p)) for p in wino), cfg.name
        assert rtl_verdicts(cfg, wino) == [[True]] * len(wino), cfg.name


def test_check_verdict_waits_for_the_widest_products():
    """The verdict comes after the products' last cycle, their registered sums and the rule
    registers. A tall layer (8192 lines of one atom, 1 x 1 kernel) needs its products' factor
    bit 13 (the 14th shift): ``ATOMICS`` against ``oh x ow`` (a product rule), and the input's
    end, ``base + H x LINE_STRIDE`` (a rule on a registered sum of products), at the top of
    the address space: ending at 2^32 passes, an atom higher fails. A verdict sampled two
    cycles early (``CHECK_CYCLES`` less two) passes the last; the one cycle between is for
    factors of 15 bits, beyond nv_small's fields."""
    import copy
    rng = np.random.default_rng(3)
    h = 8192
    layer = rp.conv_layer(NV_SMALL, W=1, H=h, C=8, K=8, data=rng.integers(-5, 6, (8, h, 1)),
                          weights=rng.integers(-5, 6, (8, 8, 1, 1)))

    def variant(atomics=None, base=None):
        v = copy.deepcopy(layer)
        if atomics is not None:
            _set(NV_SMALL, v, "CSC", "D_ATOMICS", ATOMICS=atomics)
        if base is not None:
            r = Regs(register_map(NV_SMALL)["CDMA"])
            r.words = v["regs"]["CDMA"]
            r.addr("D_DAIN_ADDR_LOW_0", base)
        return v

    extent = h * NV_SMALL.memory_atom                   # one atom a line, packed
    programs = [[layer], [variant(atomics=h)], [variant(base=(1 << 32) - extent)],
                [variant(base=(1 << 32) - extent + NV_SMALL.memory_atom)]]
    want = [[True], [False], [True], [False]]
    assert [[ok for ok, _ in golden_verdicts(NV_SMALL, p)] for p in programs] == want
    assert rtl_verdicts(NV_SMALL, programs) == want
