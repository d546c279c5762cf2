"""The Rubik golden model (sim/rubik): known answers, a naive reference, random programs as
traces, invalid programs.

- split of a cube laid out by :func:`sim.formats.feature.pack_feature` gives one plane per
  channel holding that channel's values (plane lines zero-padded to whole atoms), and merge
  of those planes gives the feature layout back (``unpack_feature`` equals the cube; channel
  padding zero), for int8 / int16 / fp16;
- contract of the ``sx * sy`` cubes a deconvolution writes (cube ``(dx, dy)`` holds output
  pixels ``(w * sx + dx, h * sy + dy)``, each packed with ``pack_feature``) is the output cube
  in feature layout;
- random layers equal a naive per-element reference written from the register fields;
- random programs (nv_small + Rubik, nv_full) written as traces with golden CRCs pass again on
  the golden engine (``nvdla trace --engine golden`` too), raise ``RUBIK_DONE_STATUS<g>``;
- invalid programs fail naming the register field; a build without Rubik has no unit.
"""

from __future__ import annotations

import subprocess
import sys
import zlib

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.core import GoldenCore
from sim.formats.common import values_to_bytes
from sim.formats.feature import pack_feature, unpack_feature
from sim.rubik import CONTRACT, MERGE, SPLIT, RubikProgramError, decode
from sim.rubik import random_programs as rp
from sim.rubik.program import ELEMENT_BYTES
from sim.units import default_units

NV_SMALL_RBK = NvdlaConfig.preset("nv_small").replace(name="nv_small_rbk", rubik=True)
NV_FULL = NvdlaConfig.preset("nv_full")
PREC = {0: "int8", 1: "int16", 2: "fp16"}


def _values(rng, prec, shape):
    if prec == 2:
        return rng.standard_normal(shape).astype(np.float16)
    half = 1 << (8 * ELEMENT_BYTES[prec] - 1)
    return rng.integers(-half, half, shape)


def _program_regs(cfg, core, group, words):
    rmap = register_map(cfg)
    blk = rmap["RBK"]
    core.csb_write((blk.base + blk["S_POINTER"].offset) >> 2, group)
    for reg, word in words.items():
        core.csb_write((blk.base + blk[reg].offset) >> 2, word)
    core.csb_write((blk.base + blk["D_OP_ENABLE"].offset) >> 2, 1)


def _layer_regs(cfg, **kw):
    return rp.rubik_layer(cfg, **kw)["regs"]["RBK"]


# -----------------------------------------------------------------------------------------
# Known answers
# -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg,prec", [(NV_SMALL_RBK, 0), (NV_FULL, 0), (NV_FULL, 1),
                                      (NV_FULL, 2)])
def test_split_then_merge_gives_the_cube_back(cfg, prec):
    rng = np.random.default_rng(3 + prec)
    A, b = cfg.memory_atom, ELEMENT_BYTES[prec]
    C, H, W = A // b + 5, 3, 70                    # two surfaces, widths past a 64 chunk
    cube = _values(rng, prec, (C, H, W))
    in_line = -(-W * A // 32) * 32                # the registers hold 32-byte units
    feat, strides = pack_feature(cube, A, PREC[prec], in_line, in_line * H)
    core = GoldenCore(cfg)
    src, planes, back = 0x100000, 0x200000, 0x300000
    core.dbb.write(src, feat)
    core.dbb.fill(planes, 0x40000, 0xAA)           # stale bytes: the padding must be written
    lp = -(-W * b // A) * A
    line, planar = -(-lp // 32) * 32 + 32, 0x1000
    regs = _layer_regs(cfg, mode=SPLIT, W=W, H=H, C=C, prec=prec)
    r = rp.Regs(register_map(cfg)["RBK"])
    r.words = regs
    r.addr("D_DAIN_ADDR_LOW", src)
    r.addr("D_DAIN_LINE_STRIDE", strides.line_stride)
    r.addr("D_DAIN_SURF_STRIDE", strides.surface_stride)
    r.addr("D_DAOUT_ADDR_LOW", planes)
    r.addr("D_DAOUT_LINE_STRIDE", line)
    r.addr("D_DAOUT_PLANAR_STRIDE", planar)
    _program_regs(cfg, core, 0, regs)
    assert core.run() == 1
    for c in range(C):
        for h in range(H):
            got = core.dbb.read(planes + c * planar + h * line, lp)
            assert np.array_equal(got[:W * b], values_to_bytes(cube[c, h], PREC[prec]))
            assert not got[W * b:].any()                           # padded with zeros
            # nothing past the whole atoms of the line
            assert np.all(core.dbb.read(planes + c * planar + h * line + lp, line - lp) == 0xAA)

    # merge the planes into a differently strided feature cube
    out_line = in_line + 64
    out_surf = out_line * H + 32
    r2 = rp.Regs(register_map(cfg)["RBK"])
    r2.words = _layer_regs(cfg, mode=MERGE, W=W, H=H, C=C, prec=prec)
    r2.addr("D_DAIN_ADDR_LOW", planes)
    r2.addr("D_DAIN_LINE_STRIDE", line)
    r2.addr("D_DAIN_PLANAR_STRIDE", planar)
    r2.addr("D_DAOUT_ADDR_LOW", back)
    r2.addr("D_DAOUT_LINE_STRIDE", out_line)
    r2.addr("D_DAOUT_SURF_STRIDE", out_surf)
    core.dbb.fill(back, 2 * out_surf, 0x55)
    _program_regs(cfg, core, 1, r2.words)
    assert core.run() == 1
    mem = core.dbb.read(back, 2 * out_surf)
    got = unpack_feature(mem, 0, C, H, W, A, PREC[prec], out_line, out_surf)
    assert np.array_equal(got.view(np.uint8) if prec == 2 else got,
                          cube.view(np.uint8) if prec == 2 else cube)
    # the channel padding of the last surface is written as zeros
    per = A // b
    pad_c = 2 * per - C
    for h in range(H):
        for w in range(W):
            atom = mem[out_surf + h * out_line + w * A:][:A]
            assert not atom[(per - pad_c) * b:].any()
    # GLB: both groups' done interrupts (S_INTR_STATUS bits 8 and 9), RBK idle again
    glb = register_map(cfg)["GLB"]
    status = core.csb_read((glb.base + glb["S_INTR_STATUS"].offset) >> 2)
    assert status >> 8 & 3 == 3 and core.interrupt
    rbk = register_map(cfg)["RBK"]
    assert core.csb_read((rbk.base + rbk["S_STATUS"].offset) >> 2) == 0


@pytest.mark.parametrize("cfg,prec,sx,sy", [(NV_SMALL_RBK, 0, 2, 2), (NV_SMALL_RBK, 0, 3, 1),
                                            (NV_FULL, 1, 2, 3), (NV_FULL, 0, 10, 2),
                                            (NV_FULL, 2, 1, 4)])
def test_contract_is_the_deconvolution_layout(cfg, prec, sx, sy):
    rng = np.random.default_rng(sx * 10 + sy)
    A, b = cfg.memory_atom, ELEMENT_BYTES[prec]
    C, H, W = A // b + 3, 3, 5
    out = _values(rng, prec, (C, H * sy, W * sx))  # the deconvolution's result
    core = GoldenCore(cfg)
    src, dst = 0x100000, 0x400000
    line = -(-W * A // 32) * 32 + 32
    surf = -(-(H * line) // 32) * 32
    cs0 = 2 * surf + 64                          # C fits two surfaces
    for dy in range(sy):
        for dx in range(sx):
            part = out[:, dy::sy, dx::sx]        # what the convolution writes for step (dx, dy)
            mem, _ = pack_feature(part, A, PREC[prec], line, surf)
            core.dbb.write(src + (dy * sx + dx) * cs0, mem)
    r = rp.Regs(register_map(cfg)["RBK"])
    r.words = _layer_regs(cfg, mode=CONTRACT, W=W, H=H, C=C, prec=prec, sx=sx, sy=sy)
    oline = -(-W * sx * A // 32) * 32 + 96
    osurf = oline * H * sy
    r.addr("D_DAIN_ADDR_LOW", src)
    r.addr("D_DAIN_LINE_STRIDE", line)
    r.addr("D_DAIN_SURF_STRIDE", surf)
    r.addr("D_CONTRACT_STRIDE_0", cs0)
    r.addr("D_DAOUT_ADDR_LOW", dst)
    r.addr("D_DAOUT_LINE_STRIDE", oline)
    r.addr("D_CONTRACT_STRIDE_1", sy * oline)
    r.addr("D_DAOUT_SURF_STRIDE", osurf)
    _program_regs(cfg, core, 0, r.words)
    assert core.run() == 1
    got = unpack_feature(core.dbb.read(dst, 2 * osurf), 0, C, H * sy, W * sx, A, PREC[prec],
                         oline, osurf)
    view = (lambda a: a.view(np.uint16)) if prec == 2 else (lambda a: a)
    assert np.array_equal(view(got), view(out))


def test_contract_hand_computed():
    """nv_small + Rubik (8-byte atoms), int8, one surface, 2 x 1 input, deconvolution
    strides 2 x 2: input cube (dx, dy) at 0x1000 + (2 * dy + dx) * 0x40 holds atoms whose
    bytes are 0x{g}{w} (g = 2 * dy + dx); output line y at 0x8000 + y * 0x20 is
    atoms (w=0,dx=0) (w=0,dx=1) (w=1,dx=0) (w=1,dx=1) of dy = y."""
    cfg = NV_SMALL_RBK
    core = GoldenCore(cfg)
    for g in range(4):
        for w in range(2):
            core.dbb.write(0x1000 + g * 0x40 + w * 8, np.full(8, g * 16 + w, np.uint8))
    r = rp.Regs(register_map(cfg)["RBK"])
    r.words = _layer_regs(cfg, mode=CONTRACT, W=2, H=1, C=8, sx=2, sy=2)
    r.addr("D_DAIN_ADDR_LOW", 0x1000)
    r.addr("D_CONTRACT_STRIDE_0", 0x40)
    r.addr("D_DAOUT_ADDR_LOW", 0x8000)
    r.addr("D_DAOUT_LINE_STRIDE", 0x20)
    r.addr("D_CONTRACT_STRIDE_1", 0x40)
    _program_regs(cfg, core, 0, r.words)
    assert core.run() == 1
    out = core.dbb.read(0x8000, 0x40).reshape(2, 4, 8)
    assert out[:, :, 0].tolist() == [[0x00, 0x10, 0x01, 0x11], [0x20, 0x30, 0x21, 0x31]]
    assert (out == out[:, :, :1]).all()


# -----------------------------------------------------------------------------------------
# Random layers against a naive reference
# -----------------------------------------------------------------------------------------
def _naive(layer, A):
    """Expected output bytes {address: byte} of a random layer, element by element from its
    parameters (``info``) and input image."""
    i = layer["info"]
    (base, image, _), = layer["images"]
    src, il, isurf, iplanar, cs0 = i["src"]
    dst, ol, osurf = i["dst"]
    b = ELEMENT_BYTES[i["prec"]]
    per = A // b
    W, H, C = i["W"], i["H"], i["C"]
    S = -(-C // per)
    out = {}

    def rd(addr, n):
        return image[addr - base:addr - base + n]

    if i["mode"] == CONTRACT:
        sx, sy = i["sx"], i["sy"]
        for s in range(S):
            for y in range(H * sy):
                for x in range(W * sx):
                    h, dy, w, dx = y // sy, y % sy, x // sx, x % sx
                    a = rd(src + s * isurf + h * il + (dy * sx + dx) * cs0 + w * A, A)
                    for k in range(A):
                        out[dst + s * osurf + y * ol + x * A + k] = a[k]
    elif i["mode"] == SPLIT:
        lp = -(-W * b // A) * A
        for c in range(C):
            for h in range(H):
                for x in range(lp):
                    out[dst + c * osurf + h * ol + x] = 0
                for w in range(W):
                    e = rd(src + (c // per) * isurf + h * il + w * A + (c % per) * b, b)
                    for k in range(b):
                        out[dst + c * osurf + h * ol + w * b + k] = e[k]
    else:
        for s in range(S):
            for h in range(H):
                for w in range(W):
                    for k in range(per):
                        c = s * per + k
                        e = rd(src + c * iplanar + h * il + w * b, b) if c < C else [0] * b
                        for j in range(b):
                            out[dst + s * osurf + h * ol + w * A + k * b + j] = e[j]
    return out


def _against_naive(cfg, seed, count, max_bytes):
    rng = np.random.default_rng(seed)
    seen = set()
    for n in range(count):
        layer = rp.random_layer(cfg, rng, max_bytes=max_bytes, mode=n % 3)
        i = layer["info"]
        seen.add((i["mode"], i["prec"]))
        core = GoldenCore(cfg)
        for addr, data, ram in layer["images"]:
            core.memory(ram).write(addr, data)
        _program_regs(cfg, core, 0, layer["regs"]["RBK"])
        assert core.run() == 1
        want = _naive(layer, cfg.memory_atom)
        waddr, wsize, wram = layer["window"]
        got = core.memory(wram).read(waddr, wsize)
        exp = np.zeros(wsize, np.uint8)
        addrs = np.fromiter(want.keys(), np.int64) - waddr
        assert addrs.min() >= rp._GUARD and addrs.max() < wsize - rp._GUARD
        exp[addrs] = np.fromiter(want.values(), np.uint8)
        assert np.array_equal(got, exp), i
    assert {m for m, _ in seen} == {CONTRACT, SPLIT, MERGE}


@pytest.mark.parametrize("cfg", [NV_SMALL_RBK, NV_FULL], ids=lambda c: c.name)
def test_random_layers_equal_a_naive_reference(cfg):
    _against_naive(cfg, 21, 24, 6000)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [NV_SMALL_RBK, NvdlaConfig.preset("nv_large"), NV_FULL],
                         ids=lambda c: c.name)
def test_more_random_layers_equal_a_naive_reference(cfg):
    _against_naive(cfg, 1234, 90, 24000)


# -----------------------------------------------------------------------------------------
# Random programs as traces
# -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg,count", [(NV_SMALL_RBK, 8), (NV_FULL, 8)],
                         ids=lambda v: getattr(v, "name", v))
def test_random_programs_round_trip(tmp_path, cfg, count):
    paths = rp.write_random_traces(cfg, str(tmp_path), count, seed=7)
    assert len(paths) == count and not rp.reject_log()
    for path in paths:
        res = rp.run_trace_golden(path, cfg)
        assert res.passed, res.message
        assert res.checks and all(c.actual != zlib.crc32(bytes(c.size)) for c in res.checks)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [NV_SMALL_RBK, NvdlaConfig.preset("nv_large"), NV_FULL],
                         ids=lambda c: c.name)
def test_more_random_programs_round_trip(tmp_path, cfg):
    paths = rp.write_random_traces(cfg, str(tmp_path), 60, seed=99)
    assert len(paths) == 60 and not rp.reject_log()
    for path in paths:
        res = rp.run_trace_golden(path, cfg)
        assert res.passed, res.message


def test_nvdla_trace_command_runs_rubik_on_golden(tmp_path):
    cfg = NV_SMALL_RBK
    path, = rp.write_random_traces(cfg, str(tmp_path), 1, seed=3)
    toml = tmp_path / "nv_small_rbk.toml"
    toml.write_text('base = "nv_small"\nname = "nv_small_rbk"\nrubik = true\n')
    run = subprocess.run([sys.executable, "-m", "scripts.cli", "trace", "--engine", "golden",
                          "--config", str(toml), path], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_random_layers_cover_the_register_space():
    seen = set()
    for cfg in (NV_SMALL_RBK, NV_FULL):
        rng = np.random.default_rng(5)
        for _ in range(200):
            layer = rp.random_layer(cfg, rng)
            i = layer["info"]
            core = GoldenCore(cfg)
            _program_regs(cfg, core, 0, layer["regs"]["RBK"])
            decode(cfg, core.view("RBK"))                   # accepted
            seen.add(("mode", i["mode"]))
            seen.add(("prec", i["prec"]))
            seen.add(("ram", i["src_ram"], i["dst_ram"]))
            if i["mode"] == CONTRACT:
                seen.add(("sx>8", i["sx"] > 8))
                seen.add(("sy>1", i["sy"] > 1))
            else:
                seen.add(("W>64", i["W"] > 64))
            if any(i["extra"]):
                seen.add("padded strides")
    want = {("mode", m) for m in (0, 1, 2)} | {("prec", p) for p in (0, 1, 2)} | \
        {("ram", a, b) for a in (0, 1) for b in (0, 1)} | \
        {("sx>8", True), ("sx>8", False), ("sy>1", True), ("W>64", True), "padded strides"}
    assert want <= seen, want - seen


# -----------------------------------------------------------------------------------------
# Invalid programs
# -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [NV_SMALL_RBK, NV_FULL], ids=lambda c: c.name)
def test_invalid_programs_name_the_field(tmp_path, cfg):
    cases = rp.write_invalid_traces(cfg, str(tmp_path))
    assert len(cases) >= 13
    for path, fld in cases:
        res = rp.run_trace_golden(path, cfg)
        assert not res.passed and f"RBK.{fld}" in res.message, (fld, res.message)


def _decode(cfg, words):
    core = GoldenCore(cfg)
    rmap = register_map(cfg)
    blk = rmap["RBK"]
    for reg, word in words.items():
        core.csb_write((blk.base + blk[reg].offset) >> 2, word)
    return decode(cfg, core.view("RBK", 0))


def test_decode_rules_name_field_and_rule():
    cfg = NV_SMALL_RBK
    p = _decode(cfg, _layer_regs(cfg, mode=CONTRACT, W=4, H=2, C=9, sx=3, sy=2))
    assert (p.mode, p.width, p.height, p.out_channel, p.sx, p.sy, p.surfaces) == \
        (CONTRACT, 4, 2, 9, 3, 2, 2)
    words = _layer_regs(cfg, mode=SPLIT, W=4, H=2, C=9, prec=0)
    with pytest.raises(RubikProgramError, match=r"RBK\.D_MISC_CFG\.IN_PRECISION=INT16: this "
                       r"build supports int8 only"):
        _decode(cfg, {**words, "D_MISC_CFG": 1 | 1 << 8})
    with pytest.raises(RubikProgramError, match=r"RBK\.D_MISC_CFG\.RUBIK_MODE=3: not a defined "
                       r"mode"):
        _decode(cfg, {**words, "D_MISC_CFG": 3})
    with pytest.raises(RubikProgramError, match=r"DATAOUT_CHANNEL=9: must equal "
                       r"D_DATAIN_SIZE_1\.DATAIN_CHANNEL=8 in SPLIT mode"):
        _decode(cfg, {**words, "D_DATAOUT_SIZE_1": 9})
    with pytest.raises(RubikProgramError, match=r"D_DAIN_RAM_TYPE\.DATAIN_RAM_TYPE=CV: this "
                       r"build has no SRAMIF"):
        _decode(cfg, {**words, "D_DAIN_RAM_TYPE": 0})
    cw = _layer_regs(cfg, mode=CONTRACT, W=4, H=2, C=9, sx=3, sy=2)
    with pytest.raises(RubikProgramError, match=r"D_CONTRACT_STRIDE_1\.CONTRACT_STRIDE_1=.*must equal "
                       r"\(D_DECONV_STRIDE\.DECONV_Y_STRIDE \+ 1\) \* D_DAOUT_LINE_STRIDE"):
        _decode(cfg, {**cw, "D_CONTRACT_STRIDE_1": cw["D_CONTRACT_STRIDE_1"] + 32})
    with pytest.raises(RubikProgramError, match=r"overlaps the input"):
        _decode(cfg, {**cw, "D_DAOUT_ADDR_LOW": cw["D_DAIN_ADDR_LOW"]})


def test_builds_without_rubik_have_no_unit():
    assert "RUBIK" not in default_units(NvdlaConfig.preset("nv_small"))
    assert "RUBIK" in default_units(NV_SMALL_RBK)
    assert "RUBIK" in default_units(NvdlaConfig.preset("nv_large"))
