"""Constrained-random Rubik layers, written as NVDLA trace directories.

Each program is one Rubik layer -- or two, ping-ponged through RBK register groups 0 and 1 --
in contract, split or merge mode, int8 and, on builds with them, int16 / fp16, MC or CV (on
builds with an SRAMIF) for input and output, with packed or padded line / surface / planar
strides and, in contract mode, deconvolution strides 1..32 in x (1..8 mostly) and 1..4 in y.
The input image is random bytes everywhere (the gaps between lines, surfaces and planes too,
so a model that copies a gap changes the CRC); the layer's ``RUBIK_<group>`` interrupt
precedes a CRC check of its output window (the output plus a zeroed guard band).

    paths = write_random_traces(cfg, out_dir, count=20, seed=1)    # golden CRCs included
    layer = rubik_layer(cfg, mode=SPLIT, W=9, H=3, C=11)
    path = write_trace(out_dir, "name", [layer], crcs)

Every program :func:`random_layer` returns is accepted by :func:`sim.rubik.program.decode`
(``write_random_traces`` also runs it on the golden core and redraws anything rejected).
"""

from __future__ import annotations

import numpy as np

from arch.registers import register_map
from sim.formats.common import align_up

from ..random_traces import (GUARD as _GUARD, SLOT as _SLOT, Regs, crc_check, enables,
                             finish_trace, golden_core, group_writes, random_ram as _ram,
                             run_trace_golden, set_fields as _set, start_trace,
                             write_invalid, write_random, RejectLog)
from .program import CONTRACT, ELEMENT_BYTES, MERGE, PRECISIONS, SPLIT

__all__ = ["rubik_layer", "random_layer", "write_trace", "write_random_traces",
           "write_invalid_traces", "INVALID_MUTATIONS", "reject_log", "golden_core",
           "run_trace_golden"]

_BASES = {"src": 0x8000_0000, "dst": 0x9000_0000}
_U = 32                         # the registers' address / stride unit


def rubik_layer(cfg, *, mode, W, H, C, prec=0, sx=1, sy=1, src_ram=1, dst_ram=1, slot=0,
                extra=(0, 0, 0, 0, 0), seed=0) -> dict:
    """One Rubik layer for ``cfg``: registers, a random input image and the output window.

    ``C`` is DATAIN_CHANNEL + 1 (split / merge) or DATAOUT_CHANNEL + 1 (contract; the
    input then holds ``sx * sy`` cubes of C channels). ``extra`` adds that many 32-byte units
    to (input line, input surface / planar, contract step, output line, output surface /
    planar) strides beyond the packed ones. Returns ``{"regs": {"RBK": words}, "images":
    [(addr, uint8 data, ram)], "window": (addr, size, ram), "info": {...}}``."""
    rmap = register_map(cfg)
    A = cfg.memory_atom
    b = ELEMENT_BYTES[prec]
    S = -(-C // (A // b))
    Lp = align_up(W * b, A)                         # one plane line, whole atoms
    e_il, e_is, e_cs, e_ol, e_os = extra
    src = _BASES["src"] + slot * _SLOT + _U * (slot * 3 % 7)
    dst = _BASES["dst"] + slot * _SLOT + _GUARD

    # -- input -----------------------------------------------------------------------------
    cs0 = 0
    if mode == MERGE:
        il = align_up(Lp, _U) + _U * e_il
        isurf = 0
        iplanar = align_up((H - 1) * il + Lp, _U) + _U * e_is
        in_size = (C - 1) * iplanar + (H - 1) * il + Lp
    else:
        il = align_up(W * A, _U) + _U * e_il
        isurf = align_up((H - 1) * il + W * A, _U) + _U * e_is
        iplanar = 0
        in_size = (S - 1) * isurf + (H - 1) * il + W * A
        if mode == CONTRACT:
            cs0 = align_up(in_size, _U) + _U * e_cs
            in_size += (sx * sy - 1) * cs0
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, align_up(in_size, A), dtype=np.uint8)

    # -- output ----------------------------------------------------------------------------
    if mode == CONTRACT:
        line_bytes, lines = W * sx * A, H * sy
    elif mode == SPLIT:
        line_bytes, lines = Lp, H
    else:
        line_bytes, lines = W * A, H
    ol = align_up(line_bytes, _U) + _U * e_ol
    one = (lines - 1) * ol + line_bytes
    osurf = align_up(one, _U) + _U * e_os
    n_out = C if mode == SPLIT else S
    extent = (n_out - 1) * osurf + one
    window = (dst - _GUARD, align_up(extent, _U) + 2 * _GUARD, dst_ram)

    # -- registers -------------------------------------------------------------------------
    r = Regs(rmap["RBK"])
    r.set("D_MISC_CFG", RUBIK_MODE=mode, IN_PRECISION=prec)
    r.set("D_DAIN_RAM_TYPE", DATAIN_RAM_TYPE=src_ram)
    r.set("D_DATAIN_SIZE_0", DATAIN_WIDTH=W - 1, DATAIN_HEIGHT=H - 1)
    r.set("D_DATAIN_SIZE_1", DATAIN_CHANNEL=(C * sx * sy if mode == CONTRACT else C) - 1)
    r.set("D_DAIN_ADDR_HIGH", DAIN_ADDR_HIGH=src >> 32)
    r.addr("D_DAIN_ADDR_LOW", src & 0xFFFFFFFF)
    r.addr("D_DAIN_LINE_STRIDE", il)
    r.addr("D_DAIN_SURF_STRIDE", isurf)
    r.addr("D_DAIN_PLANAR_STRIDE", iplanar)
    r.set("D_DAOUT_RAM_TYPE", DATAOUT_RAM_TYPE=dst_ram)
    r.set("D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=C - 1)
    r.set("D_DAOUT_ADDR_HIGH", DAOUT_ADDR_HIGH=dst >> 32)
    r.addr("D_DAOUT_ADDR_LOW", dst & 0xFFFFFFFF)
    r.addr("D_DAOUT_LINE_STRIDE", ol)
    r.addr("D_CONTRACT_STRIDE_0", cs0)
    r.addr("D_CONTRACT_STRIDE_1", sy * ol if mode == CONTRACT else 0)
    r.addr("D_DAOUT_SURF_STRIDE", 0 if mode == SPLIT else osurf)
    r.addr("D_DAOUT_PLANAR_STRIDE", osurf if mode == SPLIT else 0)
    r.set("D_DECONV_STRIDE", DECONV_X_STRIDE=sx - 1 if mode == CONTRACT else 0,
          DECONV_Y_STRIDE=sy - 1 if mode == CONTRACT else 0)
    r.set("D_PERF_ENABLE", PERF_EN=1)
    info = dict(mode=mode, W=W, H=H, C=C, prec=prec, sx=sx, sy=sy, src=(src, il, isurf, iplanar,
                cs0), src_ram=src_ram, dst=(dst, ol, osurf), dst_ram=dst_ram, extra=extra)
    return {"regs": {"RBK": r.words}, "images": [(src, image, src_ram)], "window": window,
            "info": info}


def random_layer(cfg, rng, slot=0, max_bytes=24000, mode=None) -> dict:
    """A random valid layer (input and output at most about ``max_bytes`` each)."""
    A = cfg.memory_atom
    precs = [p for p, n in PRECISIONS.items() if n in cfg.data_types]
    prec = int(rng.choice(precs))
    b = ELEMENT_BYTES[prec]
    mode = int(rng.integers(0, 3)) if mode is None else mode
    sx = sy = 1
    while True:
        if mode == CONTRACT:
            sx = int(rng.integers(9, 33)) if rng.random() < 0.15 else int(rng.integers(1, 9))
            sy = int(rng.integers(1, 5))
            W = int(rng.integers(1, 12))
            H = int(rng.integers(1, 4))
            C = int(rng.integers(1, 3 * A // b + 1))
        else:
            W = int(rng.integers(1, 2 * 64 // b + 10)) if rng.random() < 0.3 else \
                int(rng.integers(1, 20))
            H = int(rng.integers(1, 5))
            C = int(rng.integers(1, 2 * A // b + 6))
        S = -(-C // (A // b))
        size = S * H * W * A * sx * sy
        if mode != CONTRACT:
            size = max(size, C * H * align_up(W * b, 32))
        if size <= max_bytes:
            break
    extra = tuple(int(v) if rng.random() < 0.4 else 0 for v in rng.integers(0, 3, 5))
    return rubik_layer(cfg, mode=mode, W=W, H=H, C=C, prec=prec, sx=sx, sy=sy,
                       src_ram=_ram(cfg, rng), dst_ram=_ram(cfg, rng), slot=slot,
                       extra=extra, seed=int(rng.integers(0, 1 << 31)))


# ------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------
def write_trace(directory: str, name: str, layers: list, crcs=None) -> str:
    """Write ``layers`` (RBK groups 0, 1, 0, ...; from the third layer on, layer i waits for
    layer i - 2's interrupt before reusing its group) as the trace directory
    ``directory/name``; ``crcs`` are the expected CRCs (0 when unknown). Returns its path."""
    path, lines = start_trace(directory, name, layers)
    notes = []
    for i, layer in enumerate(layers):
        if i >= 2:
            lines.extend(notes[i - 2])
        g = i % 2
        lines += group_writes("RBK", g, layer["regs"]["RBK"])
        lines += enables("RBK")
        notes.append(crc_check(f"RUBIK_{g}", i, layer["window"], crcs))
    for note in notes[max(len(layers) - 2, 0):]:
        lines.extend(note)
    return finish_trace(path, name, lines)


#: the golden model's messages for the programs the last :func:`write_random_traces` redrew
reject_log = RejectLog()


def write_random_traces(cfg, directory: str, count: int, seed: int = 0,
                        two_layer_share: float = 0.3, max_bytes: int = 24000,
                        prefix: str = "rubik_random") -> list:
    """``count`` random valid programs as trace directories with golden CRCs; returns paths.
    Deterministic by ``seed``."""
    def draw(rng):
        n = 2 if rng.random() < two_layer_share else 1
        return [random_layer(cfg, rng, slot=i, max_bytes=max_bytes) for i in range(n)]
    return reject_log.keep(write_random(cfg, directory, count, seed, prefix, draw, write_trace))


# ------------------------------------------------------------------------------------------
# Invalid programs: each mutation breaks one rule and returns the field the message names
# ------------------------------------------------------------------------------------------
def _base_layer(cfg, mode=SPLIT, **over):
    spec = dict(mode=mode, W=5, H=3, C=cfg.memory_atom + 3, seed=5)     # two int8 surfaces
    if mode == CONTRACT:
        spec.update(sx=2, sy=2)
    spec.update(over)
    return rubik_layer(cfg, **spec)


def _reg(layer, cfg, reg, value):
    r = Regs(register_map(cfg)["RBK"])
    r.words = layer["regs"]["RBK"]
    r.addr(reg, value)


def _m_reserved_mode(cfg, layer):
    _set(cfg, layer, "RBK", "D_MISC_CFG", RUBIK_MODE=3)
    return "D_MISC_CFG.RUBIK_MODE"


def _m_reserved_precision(cfg, layer):
    _set(cfg, layer, "RBK", "D_MISC_CFG", IN_PRECISION=3)
    return "D_MISC_CFG.IN_PRECISION"


def _m_missing_precision(cfg, layer):
    missing = [p for p, n in PRECISIONS.items() if n not in cfg.data_types]
    if not missing:
        return None
    _set(cfg, layer, "RBK", "D_MISC_CFG", IN_PRECISION=missing[0])
    return "D_MISC_CFG.IN_PRECISION"


def _m_cv_without_sramif(cfg, layer):
    if cfg.sramif:
        return None
    _set(cfg, layer, "RBK", "D_DAOUT_RAM_TYPE", DATAOUT_RAM_TYPE=0)
    return "D_DAOUT_RAM_TYPE.DATAOUT_RAM_TYPE"


def _m_channel_mismatch(cfg, layer):
    _set(cfg, layer, "RBK", "D_DATAOUT_SIZE_1", DATAOUT_CHANNEL=layer["info"]["C"])
    return "D_DATAOUT_SIZE_1.DATAOUT_CHANNEL"


def _m_dst_line_overlap(cfg, layer):
    _reg(layer, cfg, "D_DAOUT_LINE_STRIDE", 0)
    return "D_DAOUT_LINE_STRIDE"


def _m_contract_line_overlap(cfg, layer):
    _reg(layer, cfg, "D_DAOUT_LINE_STRIDE", _U)
    _reg(layer, cfg, "D_CONTRACT_STRIDE_1", layer["info"]["sy"] * _U)
    return "D_DAOUT_LINE_STRIDE"


def _m_dst_planar_overlap(cfg, layer):
    _, ol, _ = layer["info"]["dst"]
    _reg(layer, cfg, "D_DAOUT_PLANAR_STRIDE", ol)
    return "D_DAOUT_PLANAR_STRIDE"


def _m_src_dst_overlap(cfg, layer):
    src = layer["info"]["src"][0]
    _reg(layer, cfg, "D_DAOUT_ADDR_LOW", src + _U)
    _set(cfg, layer, "RBK", "D_DAOUT_RAM_TYPE", DATAOUT_RAM_TYPE=layer["info"]["src_ram"])
    return "D_DAOUT_ADDR_LOW"


def _m_address_space(cfg, layer):
    if cfg.address_width >= 64:
        _set(cfg, layer, "RBK", "D_DAOUT_ADDR_HIGH", DAOUT_ADDR_HIGH=0xFFFFFFFF)
        _reg(layer, cfg, "D_DAOUT_ADDR_LOW", 0xFFFFFFE0)
    else:
        _set(cfg, layer, "RBK", "D_DAOUT_ADDR_HIGH", DAOUT_ADDR_HIGH=1)
    return "D_DAOUT_ADDR_HIGH"


def _m_contract_stride_1(cfg, layer):
    _, ol, _ = layer["info"]["dst"]
    _reg(layer, cfg, "D_CONTRACT_STRIDE_1", ol)          # sy = 2 lines expected
    return "D_CONTRACT_STRIDE_1"


def _m_dst_surface_overlap(cfg, layer):
    _, ol, _ = layer["info"]["dst"]
    _reg(layer, cfg, "D_DAOUT_SURF_STRIDE", ol)
    return "D_DAOUT_SURF_STRIDE"


def _m_contract_write_size(cfg, layer):
    # 1366 columns x 6 = 8196 atoms in one output line
    _set(cfg, layer, "RBK", "D_DATAIN_SIZE_0", DATAIN_WIDTH=1365)
    _set(cfg, layer, "RBK", "D_DECONV_STRIDE", DECONV_X_STRIDE=5)
    return "D_DATAIN_SIZE_0.DATAIN_WIDTH"


#: name -> (mode of the base layer, mutation)
INVALID_MUTATIONS = {
    "reserved_mode": (SPLIT, _m_reserved_mode),
    "reserved_precision": (MERGE, _m_reserved_precision),
    "missing_precision": (SPLIT, _m_missing_precision),
    "cv_without_sramif": (MERGE, _m_cv_without_sramif),
    "split_channel_mismatch": (SPLIT, _m_channel_mismatch),
    "merge_channel_mismatch": (MERGE, _m_channel_mismatch),
    "split_dst_line_overlap": (SPLIT, _m_dst_line_overlap),
    "split_dst_planar_overlap": (SPLIT, _m_dst_planar_overlap),
    "merge_dst_surface_overlap": (MERGE, _m_dst_surface_overlap),
    "contract_stride_1": (CONTRACT, _m_contract_stride_1),
    "contract_dst_line_overlap": (CONTRACT, _m_contract_line_overlap),
    "contract_dst_surface_overlap": (CONTRACT, _m_dst_surface_overlap),
    "contract_write_size": (CONTRACT, _m_contract_write_size),
    "src_dst_overlap": (CONTRACT, _m_src_dst_overlap),
    "address_space": (MERGE, _m_address_space),
}


def write_invalid_traces(cfg, directory: str) -> list:
    """One trace per applicable mutation of :data:`INVALID_MUTATIONS`; each one's golden run
    must fail with an error naming the field. Returns ``[(path, field)]``; the expected CRC is
    that of the untouched (all-zero) output window."""
    out = []
    for name, (mode, mutate) in INVALID_MUTATIONS.items():
        out += write_invalid(cfg, directory, "rubik", {name: mutate},
                             lambda c, m=mode: _base_layer(c, m), write_trace)
    return out
