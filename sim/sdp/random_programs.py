"""Constrained-random SDP programs, written as NVDLA trace directories.

Each program is an offline SDP layer (or two, ping-ponged through both register groups) with a
random cube, random strides, random stage configuration and random operands from registers or
from the B/N/E read DMAs (per kernel or per element, 1 or 2 bytes, ALU/MUL/BOTH), drawn within
what the build allows; with ``lut=True`` (builds with fp16 and the SDP LUT) a program also
loads a random fp16 LUT (:func:`random_lut_fp16`) that most of its fp16 layers use. The
expected CRCs come from the golden model; the same directory then runs on any engine (``nvdla trace``), so golden and RTL are compared on identical programs:

    dirs = write_random_traces(cfg, out_dir, count=100, seed=1)

A check covers the destination surfaces plus a guard band before and after (zero-initialised),
so a write outside the programmed surfaces changes the CRC.

:func:`write_invalid_traces` makes programs the golden model rejects (each mutation names the
rule it breaks); on the RTL they must finish (the interrupt still comes) without writing: their
check is the all-zero destination window.
"""

from __future__ import annotations

import numpy as np

from arch.registers import register_map
from ..nvfloat import fp16_from_float, fp32_from_float
from .lut import LE_DEPTH, LO_DEPTH

from ..random_traces import (BYTES as _BYTES, GUARD as _GUARD, SLOT as _SLOT, Regs,
                             crc_check, enables, finish_trace, group_writes, random_ram,
                             start_trace, write_invalid, write_random)

__all__ = ["random_program", "random_lut_fp16", "fp16_codes", "fp16_layer", "use_lut", "write_trace", "write_random_traces",
           "write_invalid_traces", "INVALID_MUTATIONS", "Regs"]

#: conversion name -> (SDP_RDMA IN_PRECISION, PROC_PRECISION, SDP OUT_PRECISION)
_CONVERSIONS = {"16to8": (1, 0, 0), "8to16": (0, 0, 1), "16to8to16": (1, 0, 1),
                "int16_to_fp16": (1, 1, 2), "fp16_to_int16": (2, 2, 1)}

_BASES = {"src": 0x8000_0000, "B": 0x8100_0000, "N": 0x8200_0000, "E": 0x8300_0000,
          "dst": 0x9000_0000}


def _pick(rng, *options, p=None):
    return options[int(rng.choice(len(options), p=p))]


def fp16_codes(rng, n, wild=False):
    """``n`` fp16 codes: mostly moderate values (a few binades around 1, some exact small
    integers), now and then zeros, denormals, the largest finite value, infinities, NaNs;
    ``wild`` draws from a wider range (outputs reach the 65504 saturation)."""
    spread = 12 if wild else 4
    v = fp16_from_float(rng.standard_normal(n) * np.exp2(rng.integers(-spread, spread + 1, n)))
    r = rng.random(n)
    v = np.where(r < 0.1, fp16_from_float(rng.integers(-8, 9, n)), v)
    special = np.array([0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00,
                        0xFD55])
    return np.where(r > 0.98, rng.choice(special, n), v)


def _fp16_bytes(rng, nbytes, wild=False):
    return fp16_codes(rng, nbytes // 2, wild).astype("<u2").view(np.uint8)


def fp16_layer(cfg, rng, sdp, rdma, images):
    """Turn a drawn layer into fp16 (PROC/IN/OUT_PRECISION already FP16): fp16 input and
    operand data, fp16 register operands for BS / BN, fp32 ones for EW, NaN-to-zero and the
    NaN / Inf counters at random."""
    wild = rng.random() < 0.3
    for i, (addr, data, ram) in enumerate(images):
        images[i] = (addr, _fp16_bytes(rng, len(data), wild and i == 0), ram)
    for prefix in ("BS", "BN"):
        for unit in ("ALU", "MUL"):
            reg = f"D_DP_{prefix}_{unit}_SRC_VALUE"
            if reg in sdp.block:
                sdp.set(reg, **{f"{prefix}_{unit}_OPERAND": int(fp16_codes(rng, 1)[0])})
    if cfg.sdp_ew:
        for unit in ("ALU", "MUL"):
            code = int(fp32_from_float(float(rng.standard_normal()) * 2.0 ** int(
                rng.integers(-4, 5)))) if rng.random() < 0.9 else \
                int(rng.choice([0, 0x80000000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 1]))
            sdp.set(f"D_DP_EW_{unit}_SRC_VALUE", **{f"EW_{unit}_OPERAND": code})
    sdp.set("D_FEATURE_MODE_CFG", NAN_TO_ZERO=int(rng.random() < 0.5))
    sdp.set("D_PERF_ENABLE", PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))
    rdma.set("D_PERF_ENABLE", PERF_NAN_INF_COUNT_EN=int(rng.integers(2)))


def random_lut_fp16(cfg, rng) -> dict:
    """A random LUT for fp16 layers: ``{"s": {reg: word}, "le": [65 fp16 codes], "lo": [257
    fp16 codes]}`` (the single-group ``S_LUT_*`` registers; START / END fp32 codes, slope
    scales fp16 codes). Tuned to the values :func:`random_program` feeds the LUT (a few
    binades around 1): both LE modes, hits with interpolation, under- and overflows on either
    side (an exponent offset now and then low enough for exponent-table overflows), random
    priorities, whole-number START / END (exact differences: fractions of 0), now and then a
    special START / END (zeros, a denormal, infinities, a NaN)."""
    s = Regs(register_map(cfg)["SDP"])
    le_linear = int(rng.integers(2))
    s.set("S_LUT_CFG", LUT_LE_FUNCTION=le_linear, LUT_UFLOW_PRIORITY=int(rng.integers(2)),
          LUT_OFLOW_PRIORITY=int(rng.integers(2)), LUT_HYBRID_PRIORITY=int(rng.integers(2)))
    offset = int(rng.integers(-64, -57)) if rng.random() < 0.25 else int(rng.integers(-12, 4))
    s.set("S_LUT_INFO", LUT_LE_INDEX_OFFSET=offset & 0xFF,
          LUT_LE_INDEX_SELECT=int(rng.integers(-6, 2)) & 0xFF,
          LUT_LO_INDEX_SELECT=int(rng.integers(-8, 0)) & 0xFF)
    special = [0, 0x80000000, 1, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF]

    def bound(lo, hi):
        r = rng.random()
        if r < 0.05:
            return int(rng.choice(special))
        if r < 0.35:                     # whole numbers: exact differences, zero fractions
            return int(fp32_from_float(float(rng.integers(int(lo), int(hi) + 1))))
        return int(fp32_from_float(float(rng.uniform(lo, hi))))
    s.set("S_LUT_LE_START", LUT_LE_START=bound(-6.0, 1.0))
    s.set("S_LUT_LE_END", LUT_LE_END=bound(0.0, 8.0))
    s.set("S_LUT_LO_START", LUT_LO_START=bound(-4.0, 1.0))
    s.set("S_LUT_LO_END", LUT_LO_END=bound(0.0, 6.0))
    for t in ("LE", "LO"):
        codes = fp16_codes(rng, 2)
        s.set(f"S_LUT_{t}_SLOPE_SCALE", **{f"LUT_{t}_SLOPE_UFLOW_SCALE": int(codes[0]),
                                           f"LUT_{t}_SLOPE_OFLOW_SCALE": int(codes[1])})
        s.set(f"S_LUT_{t}_SLOPE_SHIFT", **{f"LUT_{t}_SLOPE_UFLOW_SHIFT": int(rng.integers(32)),
                                           f"LUT_{t}_SLOPE_OFLOW_SHIFT": int(rng.integers(32))})
    wild = rng.random() < 0.2
    return {"s": s.words, "le": [int(v) for v in fp16_codes(rng, LE_DEPTH, wild)],
            "lo": [int(v) for v in fp16_codes(rng, LO_DEPTH, wild)]}


def use_lut(cfg, sdp_words: dict) -> None:
    """Turn on the EW stage and its LUT in a program's SDP register words (``D_DP_EW_CFG``:
    EW_BYPASS = 0, EW_LUT_BYPASS = 0; the EW MUL / ALU settings stay as drawn)."""
    f = register_map(cfg)["SDP"]["D_DP_EW_CFG"]
    word = sdp_words.get("D_DP_EW_CFG", f.reset)
    sdp_words["D_DP_EW_CFG"] = word & ~f["EW_BYPASS"].mask & ~f["EW_LUT_BYPASS"].mask


def random_program(cfg, rng, max_elems: int = 1200, slot: int = 0, fp16: bool = True,
                   convert: bool = False) -> dict:
    """One random valid-looking SDP layer for ``cfg`` (the golden model has the last word).

    On builds with fp16, fp16 layers are drawn too unless ``fp16`` is False (suites whose seeds
    were chosen before the RTL SDP had fp16): then the draws are the same as a build without
    fp16, and on every other build they do not depend on ``fp16``.

    ``convert`` (builds with int16): 60 % of the layers convert precision, one of the read
    DMA's 16to8, the write DMA's 8to16, both, and (builds with fp16, ``fp16`` True) int16 ->
    fp16 and fp16 -> int16 (the result's ``"convert"`` names it, see
    :func:`sim.sdp.convert.conversion_mode`; None without). Without ``convert`` the draws do
    not change.

    Returns ``{"sdp": {reg: word}, "rdma": {reg: word}, "images": [(addr, bytes, ram)],
    "window": (addr, size, ram)}``; ``ram`` is the register enum (1 = MC / DBBIF =
    ``pri_mem``, 0 = CV / SRAMIF = ``sec_mem``, only on builds with an SRAMIF). Programs
    with different ``slot`` use disjoint memory (layers of one trace must not overlap: the
    check of an earlier layer runs when its own interrupt arrives).
    """
    rmap = register_map(cfg)
    bases = {k: v + slot * _SLOT for k, v in _BASES.items()}
    sdp, rdma = Regs(rmap["SDP"]), Regs(rmap["SDP_RDMA"])
    atom = cfg.memory_atom
    precs = [0] + ([1] if "int16" in cfg.data_types else []) + \
        ([2] if fp16 and "fp16" in cfg.data_types else [])
    prec = int(rng.choice(precs))
    conv = None
    if convert and "int16" in cfg.data_types and rng.random() < 0.6:
        kinds = ["16to8", "8to16", "16to8to16"]
        if fp16 and "fp16" in cfg.data_types:
            kinds += ["int16_to_fp16", "fp16_to_int16"]
        conv = kinds[int(rng.integers(len(kinds)))]
    in_prec, prec, out_prec = _CONVERSIONS[conv] if conv else (prec, prec, prec)
    nbytes = _BYTES[prec]
    group = atom // nbytes

    # -- cube ------------------------------------------------------------------------------
    while True:
        shape = _pick(rng, "tiny", "line", "column", "block", p=[0.15, 0.2, 0.15, 0.5])
        if shape == "tiny":
            W, H = 1, 1
        elif shape == "line":
            W, H = int(rng.integers(1, 40)), 1
        elif shape == "column":
            W, H = 1, int(rng.integers(1, 40))
        else:
            W, H = int(rng.integers(1, 10)), int(rng.integers(1, 10))
        C = int(rng.integers(1, 4 * group + 1))
        surfaces = -(-C // group)
        if W * H * surfaces * group <= max_elems:
            break

    def strides():
        line = W * atom + atom * int(rng.integers(0, 3)) * int(rng.random() < 0.5)
        surf = H * line + atom * int(rng.integers(0, 4)) * int(rng.random() < 0.5)
        return line, surf

    # surfaces in memory: the input's / output's precision (pairs of int16 surfaces per
    # int8 atom in the 16to8 / 8to16 modes)
    src_surfaces = surfaces * group // (atom // _BYTES[in_prec])
    dst_surfaces = surfaces * group // (atom // _BYTES[out_prec])

    def extent(line, surf, n):
        return W * H * n * atom if (W == 1 and H == 1) else n * surf

    images = []
    src_ram, dst_ram = random_ram(cfg, rng), random_ram(cfg, rng)
    src_off = atom * int(rng.integers(0, 64))
    src_line, src_surf = strides()
    src = bases["src"] + src_off
    images.append((src, rng.integers(0, 256, extent(src_line, src_surf, src_surfaces),
                                     dtype=np.uint8), src_ram))
    dst = bases["dst"] + _GUARD + atom * int(rng.integers(0, 64))
    dst_line, dst_surf = strides()
    window = (dst - _GUARD, extent(dst_line, dst_surf, dst_surfaces) + 2 * _GUARD, dst_ram)

    for regs in (sdp, rdma):
        regs.set("D_DATA_CUBE_WIDTH", WIDTH=W - 1)
        regs.set("D_DATA_CUBE_HEIGHT", HEIGHT=H - 1)
        regs.set("D_DATA_CUBE_CHANNEL", CHANNEL=C - 1)
    rdma.addr("D_SRC_BASE_ADDR_LOW", src)
    rdma.addr("D_SRC_LINE_STRIDE", src_line)
    rdma.addr("D_SRC_SURFACE_STRIDE", src_surf)
    rdma.set("D_SRC_DMA_CFG", SRC_RAM_TYPE=src_ram)
    rdma.set("D_FEATURE_MODE_CFG", FLYING_MODE=0, IN_PRECISION=in_prec, PROC_PRECISION=prec,
             OUT_PRECISION=out_prec)
    sdp.addr("D_DST_BASE_ADDR_LOW", dst)
    sdp.addr("D_DST_LINE_STRIDE", dst_line)
    sdp.addr("D_DST_SURFACE_STRIDE", dst_surf)
    sdp.set("D_DST_DMA_CFG", DST_RAM_TYPE=dst_ram)
    sdp.set("D_FEATURE_MODE_CFG", FLYING_MODE=0, OUTPUT_DST=0)
    sdp.set("D_DATA_FORMAT", PROC_PRECISION=prec, OUT_PRECISION=out_prec)
    sdp.set("D_PERF_ENABLE", PERF_DMA_EN=int(rng.integers(2)), PERF_LUT_EN=int(rng.integers(2)),
            PERF_SAT_EN=int(rng.integers(2)))

    tame = rng.random() < 0.6

    def s16():
        return int(rng.integers(-8, 9)) if tame else int(rng.integers(-(1 << 15), 1 << 15))

    # -- X stages (BS, BN) ----------------------------------------------------------------
    mem_units = {}
    for prefix, dma, present in (("BS", "B", cfg.sdp_bs), ("BN", "N", cfg.sdp_bn)):
        on = present and rng.random() < 0.75
        alu_on, mul_on = rng.random() < 0.7, rng.random() < 0.7
        sdp.set(f"D_DP_{prefix}_CFG", **{
            f"{prefix}_BYPASS": int(not on), f"{prefix}_ALU_BYPASS": int(not alu_on),
            f"{prefix}_ALU_ALGO": int(rng.integers(0, 3)),
            f"{prefix}_MUL_BYPASS": int(not mul_on),
            f"{prefix}_MUL_PRELU": int(rng.random() < 0.3),
            f"{prefix}_RELU_BYPASS": int(rng.random() < 0.6)})
        alu_mem = on and alu_on and rng.random() < 0.5
        mul_mem = on and mul_on and rng.random() < 0.5
        sdp.set(f"D_DP_{prefix}_ALU_CFG", **{
            f"{prefix}_ALU_SRC": int(alu_mem),
            f"{prefix}_ALU_SHIFT_VALUE": int(rng.integers(0, 8 if tame else 64))})
        sdp.set(f"D_DP_{prefix}_MUL_CFG", **{
            f"{prefix}_MUL_SRC": int(mul_mem),
            f"{prefix}_MUL_SHIFT_VALUE": int(rng.integers(0, 10 if tame else 64))})
        sdp.set(f"D_DP_{prefix}_ALU_SRC_VALUE", **{f"{prefix}_ALU_OPERAND": s16() & 0xFFFF})
        sdp.set(f"D_DP_{prefix}_MUL_SRC_VALUE", **{f"{prefix}_MUL_OPERAND": s16() & 0xFFFF})
        if alu_mem or mul_mem:
            mem_units[dma] = (alu_mem, mul_mem)

    # -- Y stage (EW) ----------------------------------------------------------------------
    ew_on = cfg.sdp_ew and rng.random() < 0.6
    if cfg.sdp_ew:
        alu_on, mul_on = rng.random() < 0.7, rng.random() < 0.7
        sdp.set("D_DP_EW_CFG", EW_BYPASS=int(not ew_on), EW_ALU_BYPASS=int(not alu_on),
                EW_ALU_ALGO=int(rng.integers(0, 3)), EW_MUL_BYPASS=int(not mul_on),
                EW_MUL_PRELU=int(rng.random() < 0.3), EW_LUT_BYPASS=1)
        alu_mem = ew_on and alu_on and rng.random() < 0.5
        mul_mem = ew_on and mul_on and rng.random() < 0.5
        for unit, m in (("ALU", alu_mem), ("MUL", mul_mem)):
            sdp.set(f"D_DP_EW_{unit}_CFG", **{f"EW_{unit}_SRC": int(m),
                                               f"EW_{unit}_CVT_BYPASS": int(rng.random() < 0.5)})
            sdp.set(f"D_DP_EW_{unit}_SRC_VALUE", **{
                f"EW_{unit}_OPERAND": int(rng.integers(-40, 41) if tame else
                                          rng.integers(-(1 << 31), 1 << 31)) & 0xFFFFFFFF})
            sdp.set(f"D_DP_EW_{unit}_CVT_OFFSET_VALUE", **{
                f"EW_{unit}_CVT_OFFSET": int(rng.integers(-20, 21)) & 0xFFFFFFFF})
            sdp.set(f"D_DP_EW_{unit}_CVT_SCALE_VALUE", **{f"EW_{unit}_CVT_SCALE": s16() & 0xFFFF})
            sdp.set(f"D_DP_EW_{unit}_CVT_TRUNCATE_VALUE", **{
                f"EW_{unit}_CVT_TRUNCATE": int(rng.integers(0, 6 if tame else 64))})
        sdp.set("D_DP_EW_TRUNCATE_VALUE", EW_TRUNCATE=int(rng.integers(0, 12 if tame else 1024)))
        if alu_mem or mul_mem:
            mem_units["E"] = (alu_mem, mul_mem)

    # -- operand DMAs ----------------------------------------------------------------------
    for dma in ("B", "N", "E"):
        reg = f"D_{dma}RDMA_CFG"
        if reg not in rdma.block:
            continue
        if dma not in mem_units:
            rdma.set(reg, **{f"{dma}RDMA_DISABLE": 1})
            continue
        alu_mem, mul_mem = mem_units[dma]
        use = 2 if alu_mem and mul_mem else (1 if alu_mem else 0)
        size = int(rng.integers(0, 2))
        if prec == 2:
            size = 1                     # fp16 operands are two bytes
        per_element = rng.random() < 0.5
        op_ram = random_ram(cfg, rng)
        rdma.set(reg, **{f"{dma}RDMA_DISABLE": 0, f"{dma}RDMA_DATA_USE": use,
                         f"{dma}RDMA_DATA_SIZE": size, f"{dma}RDMA_DATA_MODE": int(per_element),
                         f"{dma}RDMA_RAM_TYPE": op_ram})
        elem = (2 if use == 2 else 1) * (size + 1)
        prefix = {"B": "BS", "N": "BN", "E": "EW"}[dma]
        base = bases[dma] + atom * int(rng.integers(0, 16))
        if per_element and not (W == 1 and H == 1):
            line = W * group * elem + atom * int(rng.integers(0, 3))
            surf = H * line + atom * int(rng.integers(0, 3))
            nbytes_region = surfaces * surf
        else:
            line = surf = 0
            nbytes_region = surfaces * group * elem * (W * H if per_element else 1)
        rdma.addr(f"D_{prefix}_BASE_ADDR_LOW", base)
        rdma.addr(f"D_{prefix}_LINE_STRIDE", line)
        rdma.addr(f"D_{prefix}_SURFACE_STRIDE", surf)
        data = rng.integers(0, 256, nbytes_region, dtype=np.uint8)
        if tame:    # small operands keep the outputs away from saturation
            data = (rng.integers(-6, 7, nbytes_region) & 0xFF).astype(np.uint8)
            if size:
                data[1::2] = np.where(data[0::2] >= 128, 0xFF, 0)[: data[1::2].size]
        images.append((base, data, op_ram))

    # -- output converter ------------------------------------------------------------------
    if tame:
        sdp.set("D_CVT_OFFSET", CVT_OFFSET=int(rng.integers(-16, 17)) & 0xFFFFFFFF)
        sdp.set("D_CVT_SCALE", CVT_SCALE=int(rng.integers(1, 5)))
        sdp.set("D_CVT_SHIFT", CVT_SHIFT=int(rng.integers(0, 4)))
    else:
        sdp.set("D_CVT_OFFSET", CVT_OFFSET=int(rng.integers(0, 1 << 32)))
        sdp.set("D_CVT_SCALE", CVT_SCALE=int(rng.integers(0, 1 << 16)))
        sdp.set("D_CVT_SHIFT", CVT_SHIFT=int(rng.integers(0, 64)))
    if prec == 2:
        fp16_layer(cfg, rng, sdp, rdma, images)
    return {"sdp": sdp.words, "rdma": rdma.words, "images": images, "window": window,
            "shape": (W, H, C, prec), "convert": conv}


# ------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------
def write_trace(directory: str, name: str, layers: list, crcs=None) -> str:
    """Write ``layers`` (programs of :func:`random_program`, group 0, 1, 0, ...) as the trace
    directory ``directory/name``; ``crcs`` are the expected CRCs (0 when unknown)."""
    path, lines = start_trace(directory, name, layers)
    lut = layers[0].get("lut")
    if lut:                              # one LUT for the trace, loaded before any layer
        lines.append("reg_write(NVDLA_SDP.S_LUT_ACCESS_CFG_0, 0x20000);")      # WRITE, LE
        lines += [f"reg_write(NVDLA_SDP.S_LUT_ACCESS_DATA_0, {v:#x});" for v in lut["le"]]
        lines.append("reg_write(NVDLA_SDP.S_LUT_ACCESS_CFG_0, 0x30000);")      # WRITE, LO
        lines += [f"reg_write(NVDLA_SDP.S_LUT_ACCESS_DATA_0, {v:#x});" for v in lut["lo"]]
        lines += [f"reg_write(NVDLA_SDP.{reg}_0, {word:#x});" for reg, word in lut["s"].items()]
    for i, prog in enumerate(layers):
        lines += group_writes("SDP", i % 2, prog["sdp"])
        lines += group_writes("SDP_RDMA", i % 2, prog["rdma"])
        lines += enables("SDP", "SDP_RDMA")
    for i, prog in enumerate(layers):
        lines += crc_check(f"SDP_{i % 2}", i, prog["window"], crcs)
    return finish_trace(path, name, lines)


def write_random_traces(cfg, directory: str, count: int, seed: int = 0,
                        two_layer_share: float = 0.25, max_elems: int = 1200,
                        fp16: bool = True, lut: bool = False, convert: bool = False) -> list:
    """``count`` random valid programs as trace directories with golden CRCs; returns paths.

    Programs the golden model rejects are redrawn (the generator is constrained, not exact).
    ``fp16=False`` draws no fp16 layers on builds with fp16. ``lut`` (builds with fp16 and the
    SDP LUT, fp16 layers drawn): each program gets a LUT of :func:`random_lut_fp16` and 70 %
    of its fp16 layers use it (EW on, LUT on); without ``lut`` (and on other builds) the
    draws do not change. ``convert``: layers with precision conversion too (see
    :func:`random_program`; builds with int16).
    """
    with_lut = lut and fp16 and cfg.sdp_lut and "fp16" in cfg.data_types

    def draw(rng):
        n_layers = 2 if rng.random() < two_layer_share else 1
        layers = [random_program(cfg, rng, max_elems, slot=i, fp16=fp16, convert=convert)
                  for i in range(n_layers)]
        if with_lut:
            layers[0]["lut"] = random_lut_fp16(cfg, rng)
            for p in layers:
                if p["shape"][3] == 2 and rng.random() < 0.7:
                    use_lut(cfg, p["sdp"])
        return layers
    return write_random(cfg, directory, count, seed, "sdp_random", draw, write_trace)[0]


# ------------------------------------------------------------------------------------------
# Invalid programs
# ------------------------------------------------------------------------------------------
def _m_in_precision(cfg, p, rmap):
    if "fp16" in cfg.data_types:
        return None                    # valid there (fp16 is a supported precision)
    word = p["rdma"]["D_FEATURE_MODE_CFG"]
    f = rmap["SDP_RDMA"]["D_FEATURE_MODE_CFG"]["IN_PRECISION"]
    p["rdma"]["D_FEATURE_MODE_CFG"] = (word & ~f.mask) | (2 << f.lsb)       # fp16 input
    return "SDP_RDMA.D_FEATURE_MODE_CFG.IN_PRECISION"


def _m_misaligned_dst(cfg, p, rmap):
    if cfg.register_layout == "full":
        return None                    # the full layout has no low address bits to misalign
    p["sdp"]["D_DST_BASE_ADDR_LOW"] += 4
    return "SDP.D_DST_BASE_ADDR_LOW"


def _m_misaligned_src_stride(cfg, p, rmap):
    if cfg.register_layout == "full":
        return None
    p["rdma"]["D_SRC_LINE_STRIDE"] += 3
    return "SDP_RDMA.D_SRC_LINE_STRIDE"


def _m_out_precision(cfg, p, rmap):
    word = p["sdp"]["D_DATA_FORMAT"]
    f = rmap["SDP"]["D_DATA_FORMAT"]["OUT_PRECISION"]
    p["sdp"]["D_DATA_FORMAT"] = (word & ~f.mask) | (3 << f.lsb)              # reserved
    return "SDP.D_DATA_FORMAT.OUT_PRECISION"


def _m_rdma_out_precision(cfg, p, rmap):
    word = p["rdma"]["D_FEATURE_MODE_CFG"]
    f = rmap["SDP_RDMA"]["D_FEATURE_MODE_CFG"]["OUT_PRECISION"]
    p["rdma"]["D_FEATURE_MODE_CFG"] = (word & ~f.mask) | (3 << f.lsb)     # reserved
    return "SDP_RDMA.D_FEATURE_MODE_CFG.OUT_PRECISION"


def _m_x_alu_eql(cfg, p, rmap):
    b = rmap["SDP"]["D_DP_BS_CFG"]
    word = 0
    for name, v in (("BS_BYPASS", 0), ("BS_ALU_BYPASS", 0), ("BS_ALU_ALGO", 3),
                    ("BS_MUL_BYPASS", 1), ("BS_RELU_BYPASS", 1)):
        word |= (v << b[name].lsb) & b[name].mask
    p["sdp"]["D_DP_BS_CFG"] = word
    return "SDP.D_DP_BS_CFG.BS_ALU_ALGO"


INVALID_MUTATIONS = {"in_precision_fp16": _m_in_precision, "misaligned_dst": _m_misaligned_dst,
                     "misaligned_src_stride": _m_misaligned_src_stride,
                     "reserved_out_precision": _m_out_precision, "x_alu_eql": _m_x_alu_eql,
                     "rdma_out_precision": _m_rdma_out_precision}


def write_invalid_traces(cfg, directory: str, seed: int = 0) -> list:
    """One trace per applicable mutation of :data:`INVALID_MUTATIONS`; each one's golden run
    must fail with an error naming the field. Returns ``[(path, field)]``; the expected CRC
    is that of the untouched (all-zero) destination window."""
    rng = np.random.default_rng(seed)

    def base(cfg):
        prog = random_program(cfg, rng, 400)
        return {**prog, "sdp": dict(prog["sdp"]), "rdma": dict(prog["rdma"])}
    return write_invalid(cfg, directory, "sdp", INVALID_MUTATIONS, base, write_trace,
                         register_map(cfg))
