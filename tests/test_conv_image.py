"""Image input (DATAIN_FORMAT=PIXEL) in the convolution golden model (sim/conv/image.py): every
pixel format the nv_small and nv_large builds enable, packed with sim.formats, run through the
golden core as a trace and compared against a naive reference written here (component
extension, mean / offset, scale, truncation, saturation, left/right padding with CDMA's pad
value, top/bottom with CSC's, stride, pre- and post-extended weights); invalid image programs
are rejected naming the register field."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.conv import random_programs as rp
from sim.conv.image import image_codes
from sim.conv.image_programs import image_layer
from sim.conv.program import decode
from sim.formats.feature import unpack_feature
from sim.formats.pixel import max_x_offset, pixel_format
from sim.memory import SparseMemory
from sim.regs import GroupView
from sim.sdp.random_programs import Regs
from sim.trace import parse_trace
from sim.trace_run import run_golden

NV_SMALL = NvdlaConfig.preset("nv_small")
NV_LARGE = NvdlaConfig.preset("nv_large")
NV_FULL = NvdlaConfig.preset("nv_full")


# ------------------------------------------------------------------------------------------
# the naive reference
# ------------------------------------------------------------------------------------------
def _round_half_away(num: int, shift: int) -> int:
    if shift == 0:
        return num
    q, r = divmod(abs(num), 1 << shift)
    if 2 * r >= (1 << shift):
        q += 1
    return q if num >= 0 else -q


def ref_pixel_values(fmt, codes, signed, cvt, mean, out_bits=8):
    """[C, H, W] values entering the MAC, one element at a time."""
    f = pixel_format(fmt)
    out = np.zeros(codes.shape, dtype=np.int64)
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    for k, comp in enumerate(f.components):
        container = 8 if comp.width == 8 else 16          # 10-bit and 2-bit fields: 16 bits
        for idx, code in np.ndenumerate(codes[k]):
            v = int(code) << (container - comp.width)        # left-aligned in the container
            if cvt is None or signed:
                if v >= 1 << (container - 1):
                    v -= 1 << container
            if cvt is not None:
                off, scale, trunc = cvt
                o = mean[k] if mean is not None else off
                v = _round_half_away((v - o) * scale, trunc)
                v = min(max(v, lo), hi)
            out[(k,) + idx] = v
    return out


def _s8(v):
    v &= 0xFF
    return v - 256 if v & 0x80 else v


def ref_image_conv(vals, weights, stride, pad, cdma_pad, csc_pad):
    """Exact sums [K, Ho, Wo] of the image convolution."""
    C, H, W = vals.shape
    K, _, R, S = weights.shape
    sx, sy = stride
    pl, pr, pt, pb = pad
    Wp, Hp = pl + W + pr, pt + H + pb
    plane = np.full((C, Hp, Wp), csc_pad, dtype=np.int64)          # top / bottom rows
    plane[:, pt:pt + H, :] = cdma_pad                                # left / right columns
    plane[:, pt:pt + H, pl:pl + W] = vals
    Ho, Wo = (Hp - R) // sy + 1, (Wp - S) // sx + 1
    out = np.zeros((K, Ho, Wo), dtype=np.int64)
    for k in range(K):
        for oy in range(Ho):
            for ox in range(Wo):
                win = plane[:, oy * sy:oy * sy + R, ox * sx:ox * sx + S]
                out[k, oy, ox] = int(np.sum(win * weights[k]))
    return out


def _truncate(sums, clip):
    return np.vectorize(lambda v: _round_half_away(int(v), clip), otypes=[np.int64])(sums)


# ------------------------------------------------------------------------------------------
# layers for every enabled format
# ------------------------------------------------------------------------------------------
def _formats(cfg):
    return sorted(cfg.image_packed_formats) + sorted(cfg.image_semi_formats)


def draw_geometry(rng):
    """A small random image layer geometry: (W, H, S, R, sx, sy, (pl, pr, pt, pb), K), the
    kernel within the padded input."""
    W, H = int(rng.integers(3, 10)), int(rng.integers(2, 7))
    S, R = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sx, sy = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pl, pr = int(rng.integers(0, S)), int(rng.integers(0, S))
    pt, pb = int(rng.integers(0, R)), int(rng.integers(0, R))
    if W + pl + pr < S:
        pr = S - W - pl
    if H + pt + pb < R:
        pb = R - H - pt
    return W, H, S, R, sx, sy, (pl, pr, pt, pb), int(rng.integers(1, 7))


def _draw(cfg, fmt, seed):
    """A random valid image layer spec for ``fmt`` on ``cfg``."""
    rng = np.random.default_rng(seed)
    f = pixel_format(fmt)
    C = f.channels
    W, H, S, R, sx, sy, (pl, pr, pt, pb), K = draw_geometry(rng)
    codes = np.stack([rng.integers(0, 1 << c.width, (H, W)) for c in f.components])
    wide = any(c.width > 8 for c in f.components)
    signed = bool(rng.integers(0, 2))
    use_cvt = wide or not signed or bool(rng.integers(0, 2))
    cvt = mean = None
    if use_cvt:
        trunc = 8 + int(rng.integers(0, 3)) if wide else int(rng.integers(0, 3))
        cvt = (int(rng.integers(-60, 61)), int(rng.choice([1, 1, 2, 3, -1, -2])), trunc)
        if rng.random() < 0.5:
            span = 1 << (15 if wide else 7)
            mean = tuple(int(rng.integers(-span // 4, span // 2)) for _ in range(4))
    lanes = cfg.atomic_c
    post = 1
    for p in (4, 2):
        if S * C <= lanes // p and sx * C <= lanes // p and rng.random() < 0.6:
            post = p
            break
    return dict(fmt=fmt, image=codes, weights=rng.integers(-4, 5, (K, C, R, S)),
                stride=(sx, sy), pad=(pl, pr, pt, pb),
                pad_value=int(rng.integers(0, 1 << 16)),
                csc_pad_value=int(rng.integers(0, 1 << 16)),
                x_offset=int(rng.integers(0, max_x_offset(f, cfg.memory_atom) + 1)),
                signed=signed, cvt=cvt, mean=mean, post_extension=post,
                line_extra=int(rng.integers(0, 2)), uv_extra=int(rng.integers(0, 2)))


def _run(cfg, tmp_path, layer, name):
    path = rp.write_trace(str(tmp_path), name, [layer])
    core = rp.golden_core(cfg)
    res = run_golden(parse_trace(path, cfg), cfg, core=core)
    assert len(res.checks) == 1, res.message
    return core, res


def _check_layer(cfg, tmp_path, spec, name, prec=0):
    out_bits = 8 if prec == 0 else 16
    vals = ref_pixel_values(spec["fmt"], spec["image"], spec["signed"], spec["cvt"],
                            spec["mean"], out_bits)
    pv = (lambda v: _s8(v)) if prec == 0 else (lambda v: v - 65536 if v & 0x8000 else v)
    sums = ref_image_conv(vals, spec["weights"], spec["stride"], spec["pad"],
                          pv(spec["pad_value"]), pv(spec["csc_pad_value"]))
    # a CACC truncation that brings most sums into the output range (SDP passes through)
    clip = 0
    while clip < 16 and np.percentile(np.abs(sums), 75) >= (1 << (out_bits - 1)) >> 1 << clip:
        clip += 1
    layer = image_layer(cfg, clip=clip, prec=prec, **spec)
    core, _ = _run(cfg, tmp_path, layer, name)
    want = np.clip(_truncate(sums, clip), -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1)
    base, line, surf = layer["info"]["dst"]
    K, Ho, Wo = want.shape
    mem = core.dbb.read(base, layer["window"][1])
    got = unpack_feature(mem, 0, K, Ho, Wo, cfg.memory_atom, "int8" if prec == 0 else "int16",
                         line, surf)
    np.testing.assert_array_equal(got, want)
    return want


CASES = [(cfg, fmt) for cfg in (NV_SMALL, NV_LARGE) for fmt in _formats(cfg)]


@pytest.mark.parametrize("cfg, fmt", CASES, ids=[f"{c.name}-{f}" for c, f in CASES])
def test_image_format_matches_reference(tmp_path, cfg, fmt):
    nonconst = 0
    for i in range(2):
        spec = _draw(cfg, fmt, zlib.crc32(f"{cfg.name}/{fmt}/{i}".encode()))
        want = _check_layer(cfg, tmp_path, spec, f"img{i}")
        nonconst += len(np.unique(want)) > 1
    assert nonconst                      # the comparison sees varying values


def test_image_features_are_all_exercised():
    """The drawn specs cover mean, offsets, both signs, post-extension 2 and 4, no convertor,
    padding and strides."""
    seen = set()
    for cfg, fmt in CASES:
        for i in range(2):
            s = _draw(cfg, fmt, zlib.crc32(f"{cfg.name}/{fmt}/{i}".encode()))
            seen |= {f"post{s['post_extension']}", f"signed{int(s['signed'])}",
                     "mean" if s["mean"] else "offset" if s["cvt"] else "raw"}
            if s["x_offset"]:
                seen.add("x_offset")
            if max(s["stride"]) > 1:
                seen.add("stride")
            if s["pad"][0] and s["pad"][2]:
                seen.add("pad")
    assert {"post1", "post2", "post4", "signed0", "signed1", "mean", "offset", "raw",
            "x_offset", "stride", "pad"} <= seen, seen


def test_int16_processing_on_nv_full(tmp_path):
    """An 8-bit image converted to int16 (the convertor's int8 -> int16 path)."""
    rng = np.random.default_rng(5)
    spec = dict(fmt="X8R8G8B8", image=rng.integers(0, 256, (4, 4, 6)),
                weights=rng.integers(-100, 101, (5, 4, 2, 3)), stride=(1, 2),
                pad=(1, 2, 1, 0), pad_value=0x8123, csc_pad_value=0x7F01, x_offset=3,
                signed=False, cvt=(-300, 200, 2), mean=(100, -50, 7, 0), post_extension=2,
                line_extra=0, uv_extra=0)
    want = _check_layer(NV_FULL, tmp_path, spec, "img16", prec=1)
    assert np.count_nonzero(np.abs(want) > 127)          # really int16 values


def test_pixel_byte_layout_is_the_c_models():
    """Component positions read by the CDMA, checked against hand-written byte layouts
    (independent of sim.formats' packer): R8G8B8A8 has A in byte 0 and R in byte 3,
    B10G10R10A2 has A in bits 1:0 and R in bits 11:2, Y8___U8V8 has V in the first U/V byte."""
    cfg = NV_SMALL
    # R8G8B8A8: memory bytes A, B, G, R
    mem = SparseMemory()
    mem.write(0x1000, [0xA1, 0xB2, 0xC3, 0xD4])
    p = _program(cfg, "R8G8B8A8", W=1, base=0x1000)
    assert list(image_codes(cfg, p, mem)[:, 0, 0]) == [0xD4, 0xC3, 0xB2, 0xA1]
    # B10G10R10A2: word = B << 22 | G << 12 | R << 2 | A
    word = (0x155 << 22) | (0x2AA << 12) | (0x3F0 << 2) | 0x2
    mem.write(0x2000, list(word.to_bytes(4, "little")))
    p = _program(cfg, "B10G10R10A2", W=1, base=0x2000)
    assert list(image_codes(cfg, p, mem)[:, 0, 0]) == [0x3F0, 0x2AA, 0x155, 0x2]
    # Y8___U8V8_N444 with X offset 5 on 8-byte atoms: Y at base0 + 5, U/V at
    # base1 + (5 * 2) % 8 = base1 + 2: bytes V, U
    mem.write(0x3000 + 5, [0x77])
    mem.write(0x4000 + 2, [0x99, 0x55])
    p = _program(cfg, "Y8___U8V8_N444", W=1, base=0x3000, base1=0x4000, x_offset=5)
    assert list(image_codes(cfg, p, mem)[:, 0, 0]) == [0x77, 0x55, 0x99]


def _program(cfg, fmt, W, base, base1=0, x_offset=0):
    rng = np.random.default_rng(1)
    f = pixel_format(fmt)
    spec = dict(fmt=fmt, image=np.zeros((f.channels, 1, W), np.int64),
                weights=rng.integers(-1, 2, (1, f.channels, 1, 1)), cvt=(0, 1, 0),
                x_offset=x_offset)
    layer = image_layer(cfg, **spec)
    words = {b: dict(layer["regs"][b]) for b in rp.CONV_BLOCKS}
    words["CDMA"]["D_DAIN_ADDR_LOW_0"] = base
    words["CDMA"]["D_DAIN_ADDR_LOW_1"] = base1
    return _decode(cfg, words)


def _decode(cfg, words):
    rmap = register_map(cfg)
    return decode(cfg, *(GroupView(rmap[b], words[b]) for b in rp.CONV_BLOCKS))


# ------------------------------------------------------------------------------------------
# invalid image programs name the field
# ------------------------------------------------------------------------------------------
def _valid(cfg, fmt="A8B8G8R8", **over):
    rng = np.random.default_rng(3)
    f = pixel_format(fmt)
    spec = dict(fmt=fmt, image=np.stack([rng.integers(0, 1 << c.width, (4, 5))
                                         for c in f.components]),
                weights=rng.integers(-2, 3, (3, f.channels, 2, 2)), cvt=(0, 1, 8 if any(
                    c.width > 8 for c in f.components) else 0), pad=(1, 1, 0, 1))
    spec.update(over)
    layer = image_layer(cfg, **spec)
    return {b: dict(layer["regs"][b]) for b in rp.CONV_BLOCKS}


def _set(cfg, words, block, reg, **fields):
    r = Regs(register_map(cfg)[block])
    r.words = words[block]
    r.set(reg, **fields)


def _m_format_not_in_build(cfg, w):
    _set(cfg, w, "CDMA", "D_DATAIN_FORMAT", PIXEL_FORMAT=pixel_format("A16B16G16R16").code)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_FORMAT=T_A16B16G16R16"


def _m_table33_precision(cfg, w):
    for b in ("CDMA", "CSC"):
        _set(cfg, w, b, "D_MISC_CFG", IN_PRECISION=1)
    return "CDMA.D_MISC_CFG.IN_PRECISION=INT16"


def _m_x_offset(cfg, w):
    _set(cfg, w, "CDMA", "D_PIXEL_OFFSET", PIXEL_X_OFFSET=max_x_offset("A8B8G8R8",
                                                                        cfg.memory_atom) + 1)
    return "CDMA.D_PIXEL_OFFSET.PIXEL_X_OFFSET"


def _m_y_offset(cfg, w):
    _set(cfg, w, "CDMA", "D_PIXEL_OFFSET", PIXEL_Y_OFFSET=1)
    return "CDMA.D_PIXEL_OFFSET.PIXEL_Y_OFFSET"


def _m_unsigned_without_cvt(cfg, w):
    _set(cfg, w, "CDMA", "D_CVT_CFG", CVT_EN=0)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_SIGN_OVERRIDE=UNSIGNED_INT"


def _m_channels(cfg, w):
    _set(cfg, w, "CDMA", "D_DATAIN_SIZE_1", DATAIN_CHANNEL=2)
    _set(cfg, w, "CSC", "D_DATAIN_SIZE_EXT_1", DATAIN_CHANNEL_EXT=2)
    return "CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL"


def _m_weight_width(cfg, w):
    _set(cfg, w, "CSC", "D_WEIGHT_SIZE_EXT_0", WEIGHT_WIDTH_EXT=1)
    return "CSC.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT"


def _m_weight_channels(cfg, w):
    _set(cfg, w, "CSC", "D_WEIGHT_SIZE_EXT_1", WEIGHT_CHANNEL_EXT=6)
    return "CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT"


def _m_post_extension_too_wide(cfg, w):
    # 4 lines: kernel width 2 x 4 channels, or stride x 4 channels, beyond Atomic-C / 4
    _set(cfg, w, "CSC", "D_POST_Y_EXTENSION", Y_EXTENSION=2)
    sx = cfg.atomic_c // 16 + 1
    _set(cfg, w, "CSC", "D_CONV_STRIDE_EXT", CONV_X_STRIDE_EXT=sx - 1)
    _set(cfg, w, "CDMA", "D_CONV_STRIDE", CONV_X_STRIDE=sx - 1)
    return "CSC.D_POST_Y_EXTENSION.Y_EXTENSION"


def _m_post_extension_reserved(cfg, w):
    _set(cfg, w, "CSC", "D_POST_Y_EXTENSION", Y_EXTENSION=3)
    return "CSC.D_POST_Y_EXTENSION.Y_EXTENSION=3"


def _m_entries(cfg, w):
    for b in ("CDMA", "CSC"):
        _set(cfg, w, b, "D_ENTRY_PER_SLICE", ENTRIES=0 if cfg.cbuf_bank_width < 32 else 5)
    return "CDMA.D_ENTRY_PER_SLICE.ENTRIES"


def _m_line_stride(cfg, w):
    # PIXEL_X_OFFSET + 5 RGBA pixels take more than one atom
    w["CDMA"]["D_LINE_STRIDE"] = cfg.memory_atom
    _set(cfg, w, "CDMA", "D_PIXEL_OFFSET", PIXEL_X_OFFSET=max_x_offset("A8B8G8R8",
                                                                        cfg.memory_atom))
    return "CDMA.D_LINE_STRIDE.LINE_STRIDE"


def _m_mapping(cfg, w):
    _set(cfg, w, "CDMA", "D_DATAIN_FORMAT", PIXEL_MAPPING=1)
    return "CDMA.D_DATAIN_FORMAT.PIXEL_MAPPING"


def _m_batches(cfg, w):
    for b in ("CDMA", "CSC", "CACC"):
        _set(cfg, w, b, "D_BATCH_NUMBER", BATCHES=1)
    return "CDMA.D_BATCH_NUMBER.BATCHES=1" if cfg.batching else "CDMA.D_BATCH_NUMBER.BATCHES"


def _m_winograd(cfg, w):
    for b in rp.CONV_BLOCKS:
        _set(cfg, w, b, "D_MISC_CFG", CONV_MODE=1)
    return "CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD"


def _m_data_reuse_csc_only(cfg, w):
    _set(cfg, w, "CSC", "D_MISC_CFG", DATA_REUSE=1)
    return "CSC.D_MISC_CFG.DATA_REUSE"


def _m_csc_height_without_reuse(cfg, w):
    # without DATA_REUSE an image is fetched whole: the CSC's lines are the CDMA's
    _set(cfg, w, "CSC", "D_DATAIN_SIZE_EXT_0", DATAIN_HEIGHT_EXT=5)
    return "CSC.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT"


def _m_cdma_csc_pad(cfg, w):
    _set(cfg, w, "CSC", "D_ZERO_PADDING", PAD_LEFT=0)
    return "CDMA.D_ZERO_PADDING.PAD_LEFT"


def _m_output_too_wide(cfg, w):
    _set(cfg, w, "CSC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=6)     # 5 + 2 pads - 2 + 1 = 6
    _set(cfg, w, "CACC", "D_DATAOUT_SIZE_0", DATAOUT_WIDTH=6)
    return "CSC.D_DATAOUT_SIZE_0.DATAOUT_WIDTH"


IMAGE_MUTATIONS = {name[3:]: fn for name, fn in dict(globals()).items()
                   if name.startswith("_m_")}


@pytest.mark.parametrize("cfg", [NV_SMALL, NV_LARGE], ids=lambda c: c.name)
@pytest.mark.parametrize("name", sorted(IMAGE_MUTATIONS))
def test_invalid_image_program_names_the_field(cfg, name):
    _decode(cfg, _valid(cfg))                                  # the starting point is valid
    w = _valid(cfg)
    fld = IMAGE_MUTATIONS[name](cfg, w)
    with pytest.raises(ValueError) as e:
        _decode(cfg, w)
    assert fld in str(e.value), str(e.value)


def test_invalid_semi_planar_settings():
    cfg = NV_SMALL
    w = _valid(cfg, "Y8___U8V8_N444")
    _decode(cfg, w)
    w["CDMA"]["D_DAIN_ADDR_LOW_1"] += 4                       # not on an 8-byte atom
    with pytest.raises(ValueError, match="CDMA.D_DAIN_ADDR_LOW_1.DATAIN_ADDR_LOW_1"):
        _decode(cfg, w)
    w = _valid(cfg, "Y8___U8V8_N444")
    w["CDMA"]["D_LINE_UV_STRIDE"] = cfg.memory_atom          # 5 U/V pairs need 10 bytes
    with pytest.raises(ValueError, match="CDMA.D_LINE_UV_STRIDE.UV_LINE_STRIDE"):
        _decode(cfg, w)


def test_invalid_ten_bit_without_convertor():
    """A 10-bit format is int16 input (Table 33): an int8 build needs the convertor."""
    cfg = NV_LARGE
    w = _valid(cfg, "A2B10G10R10", signed=True)
    _decode(cfg, w)
    _set(cfg, w, "CDMA", "D_CVT_CFG", CVT_EN=0)
    with pytest.raises(ValueError, match="CDMA.D_MISC_CFG.IN_PRECISION=INT16"):
        _decode(cfg, w)


def test_invalid_table29_fp16_image_to_int8():
    """Table 29: fp16 pixels convert to fp16 only."""
    cfg = NV_FULL.replace(image_packed_formats=NV_FULL.image_packed_formats
                          | {"A16B16G16R16_F"})
    w = _valid(cfg)
    _set(cfg, w, "CDMA", "D_DATAIN_FORMAT", PIXEL_FORMAT=pixel_format("A16B16G16R16_F").code)
    for b in ("CDMA", "CSC"):
        _set(cfg, w, b, "D_MISC_CFG", IN_PRECISION=2)
    with pytest.raises(ValueError, match="CDMA.D_MISC_CFG.PROC_PRECISION=INT8.*Table 29"):
        _decode(cfg, w)


def test_post_extension_on_feature_input_is_rejected(tmp_path):
    cfg = NV_SMALL
    layer = rp._base_layer(cfg)
    r = Regs(register_map(cfg)["CSC"])
    r.words = layer["regs"]["CSC"]
    r.set("D_POST_Y_EXTENSION", Y_EXTENSION=1)
    path = rp.write_trace(str(tmp_path), "post_feature", [layer])
    res = run_golden(parse_trace(path, cfg), cfg, core=rp.golden_core(cfg))
    assert not res.passed and "CSC.D_POST_Y_EXTENSION.Y_EXTENSION=1" in res.message


# ------------------------------------------------------------------------------------------
# image data reuse (NVDLA's CDMA: an image layer after an image layer that kept its lines)
# ------------------------------------------------------------------------------------------
from .test_conv_winograd import _golden_trace, _window   # noqa: E402


@pytest.mark.parametrize("kind", ["full", "partial"])
@pytest.mark.parametrize("cfg, prec", [(NV_SMALL, 0), (NV_LARGE, 0),
                                       (NvdlaConfig.preset("nv_full"), 1),
                                       (NvdlaConfig.preset("nv_full"), 2)],
                         ids=["nv_small", "nv_large", "nv_full-int16", "nv_full-fp16"])
def test_image_reuse_pair_equals_the_second_layer_alone(tmp_path, cfg, prec, kind):
    """The second layer of a reuse pair (all the first one's lines, or its kept lines then a
    new band) writes what the same layer writes run alone, fetching its whole image; the
    CBUF log says it reused (and how many lines)."""
    from sim.conv import image_programs as ip
    rng = np.random.default_rng({"full": 11, "partial": 12}[kind] + 100 * prec)
    for i in range(4):
        first, second = ip.random_image_pair(cfg, rng, kind, max_macs=40_000, prec=prec)
        pair = _golden_trace(cfg, tmp_path, [first, second], f"pair{i}")
        log = pair.units["CONV"].state.log
        reuse = second["info"]["reuse"]
        assert log[-2] == ("data: full reuse" if kind == "full" else
                           f"data: partial reuse of {reuse['kept']} slices"), log
        assert second["info"]["H"] == reuse["kept"] + reuse["fetched"]
        alone = ip.reuse_second_alone(cfg, second)
        want = _window(_golden_trace(cfg, tmp_path, [alone], f"alone{i}"), alone)
        np.testing.assert_array_equal(_window(pair, second), want)
