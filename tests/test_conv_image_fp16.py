"""fp16 image input in the convolution golden model (sim/conv/image.py): fp16 pixels (the ``_F``
formats) taken as they are, integer pixels converted to fp16 by the CDMA's convertor (17-bit
saturation, then the nearest fp16), the fp16 NaN / infinity input counters and NaN flushing on
fp16 pixels, and the precision rules of Tables 29 and 33 for them.

The CBUF values are checked element for element against a naive reference written here
(Python's own binary16 conversion); whole layers against a float64 convolution of the same
values within fp16 accumulation error (the bit-exact fp16 arithmetic itself is the conv fp16
pipeline's, tested in tests/test_conv_fp16.py)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from sim.conv import random_programs as rp
from sim.conv.cdma import CbufState, load_cbuf
from sim.conv.image import convert_image, image_codes
from sim.conv.image_programs import image_layer, write_random_image_traces
from sim.conv.program import decode
from sim.conv.unit import BLOCKS
from sim.formats.pixel import max_x_offset, pixel_format
from sim.trace import parse_trace
from sim.trace_run import run_golden

from .conftest import NV_SMALL_FP16
from .test_conv_fp16 import _Core
from .test_conv_fp16 import _signed16 as _s16
from .test_conv_image import _round_half_away, draw_geometry

#: nv_small with fp16 and int16 and every 16-bit and fp16 pixel format besides its own
CFG = NV_SMALL_FP16.replace(
    name="nv_small_fp16_img", data_types=frozenset({"int8", "int16", "fp16"}),
    image_packed_formats=NV_SMALL_FP16.image_packed_formats | {
        "R16", "R16_I", "R16_F", "A16B16G16R16", "A16B16G16R16_F", "A16Y16U16V16_F",
        "X16B16G16R16"},
    image_semi_formats=NV_SMALL_FP16.image_semi_formats | {"Y16___U16V16_N444"})

FP_FORMATS = ["R16_F", "A16B16G16R16_F", "A16Y16U16V16_F"]
INT_FORMATS = ["R8", "A8B8G8R8", "Y8___U8V8_N444", "A2B10G10R10", "R16", "R16_I",
               "A16B16G16R16", "Y16___U16V16_N444"]


def _fp16(v: float) -> int:
    """Python's binary16 (round to nearest even); infinity past the largest finite value."""
    try:
        return struct.unpack("<H", struct.pack("<e", float(v)))[0]
    except OverflowError:
        return 0xFC00 if v < 0 else 0x7C00


def _to_float(codes):
    return (np.asarray(codes, np.int64) & 0xFFFF).astype(np.uint16).view(np.float16).astype(
        np.float64)


def ref_fp16_values(fmt, codes, signed, cvt, mean):
    """[C, H, W] fp16 codes entering the MAC, one element at a time."""
    f = pixel_format(fmt)
    out = np.zeros(codes.shape, dtype=np.int64)
    for k, comp in enumerate(f.components):
        container = 8 if comp.width == 8 else 16
        for idx, code in np.ndenumerate(codes[k]):
            if f.is_float:
                out[(k,) + idx] = int(code) & 0xFFFF
                continue
            v = int(code) << (container - comp.width)
            if signed and v >= 1 << (container - 1):
                v -= 1 << container
            off, scale, trunc = cvt
            o = mean[k] if mean is not None else off
            v = _round_half_away((v - o) * scale, trunc)
            v = min(max(v, -(1 << 16)), (1 << 16) - 1)          # the 17-bit intermediate
            out[(k,) + idx] = _fp16(v)
    return _s16(out)


def _draw(fmt, seed, tame=True):
    rng = np.random.default_rng(seed)
    f = pixel_format(fmt)
    C = f.channels
    W, H, S, R, sx, sy, (pl, pr, pt, pb), K = draw_geometry(rng)
    if f.is_float:
        codes = np.asarray(rng.standard_normal((C, H, W)) * 4, np.float16).view(
            np.uint16).astype(np.int64)
        cvt = mean = None
    else:
        codes = np.stack([rng.integers(0, 1 << c.width, (H, W)) for c in f.components])
        wide = any(c.width > 8 for c in f.components)
        trunc = int(rng.integers(0, 4)) + (6 if wide else 0)
        cvt = (int(rng.integers(-60, 61)), int(rng.choice([1, 2, 3, -1, -2])), trunc)
        mean = None
        if rng.random() < 0.5:
            span = 1 << (15 if wide else 7)
            mean = tuple(int(rng.integers(-span // 4, span // 2)) for _ in range(4))
    post = 1
    for p in (4, 2):
        if S * C <= CFG.atomic_c // p and sx * C <= CFG.atomic_c // p and rng.random() < 0.6:
            post = p
            break
    w = np.asarray(rng.standard_normal((K, C, R, S)) / 4, np.float16)
    return dict(fmt=fmt, image=codes, weights=_s16(w.view(np.uint16)), stride=(sx, sy),
                pad=(pl, pr, pt, pb), pad_value=_fp16(float(rng.normal())),
                csc_pad_value=_fp16(float(rng.normal())),
                x_offset=int(rng.integers(0, max_x_offset(f, CFG.memory_atom) + 1)),
                signed=bool(rng.integers(0, 2)), cvt=cvt, mean=mean, post_extension=post,
                line_extra=int(rng.integers(0, 2)), uv_extra=int(rng.integers(0, 2)))


def _program(layer):
    core = _Core(CFG, layer)
    return core, decode(CFG, *(core.view(b) for b in BLOCKS))


def _sdp_output(core, layer):
    info = layer["info"]
    base, line, surf = info["dst"]
    per = CFG.memory_atom // 2
    K, Ho, Wo = info["K"], info["Ho"], info["Wo"]
    out = np.zeros((-(-K // per) * per, Ho, Wo), np.int64)
    for s in range(out.shape[0] // per):
        for y in range(Ho):
            raw = core.dbb.read(base + s * surf + y * line, Wo * CFG.memory_atom)
            out[s * per:(s + 1) * per, y] = raw.view(np.uint16).reshape(-1, per).T
    return out[:K]


@pytest.mark.parametrize("fmt", FP_FORMATS + INT_FORMATS)
def test_fp16_image_values_and_layer(tmp_path, fmt):
    """The CBUF values of an fp16 image layer equal the naive reference element for element;
    the layer's output equals a float64 convolution of them (CDMA's left / right and CSC's
    top / bottom fp16 pad values included) within fp16 accumulation error."""
    spec = _draw(fmt, zlib.crc32(fmt.encode()))
    layer = image_layer(CFG, prec=2, **spec)
    core, p = _program(layer)
    want = ref_fp16_values(fmt, spec["image"], spec["signed"], spec["cvt"], spec["mean"])
    np.testing.assert_array_equal(convert_image(p, image_codes(CFG, p, core.dbb)), want)

    path = rp.write_trace(str(tmp_path), "img", [layer])
    gcore = rp.golden_core(CFG)
    run_golden(parse_trace(path, CFG), CFG, core=gcore)
    got = _to_float(_sdp_output(gcore, layer))

    vals = _to_float(want)
    C, H, W = vals.shape
    pl, pr, pt, pb = spec["pad"]
    plane = np.full((C, pt + H + pb, pl + W + pr), _to_float(spec["csc_pad_value"]))
    plane[:, pt:pt + H, :] = _to_float(spec["pad_value"])
    plane[:, pt:pt + H, pl:pl + W] = vals
    wts = _to_float(spec["weights"])
    K, _, R, S = wts.shape
    sx, sy = spec["stride"]
    Ho, Wo = layer["info"]["Ho"], layer["info"]["Wo"]
    ref = np.zeros((K, Ho, Wo))
    mag = np.zeros((K, Ho, Wo))
    for oy in range(Ho):
        for ox in range(Wo):
            win = plane[:, oy * sy:oy * sy + R, ox * sx:ox * sx + S]
            ref[:, oy, ox] = np.einsum("kcrs,crs->k", wts, win)
            mag[:, oy, ox] = np.einsum("kcrs,crs->k", np.abs(wts), np.abs(win))
    assert np.isfinite(ref).all()
    np.testing.assert_array_less(np.abs(got - ref), mag * 2.0 ** -9 + 2.0 ** -20)
    assert len(np.unique(got)) > 1


def test_int_to_fp16_rounds_to_even_and_overflows_to_infinity():
    """The convertor's fp16 path at its edges: ties to even above 2048, 65504 the largest
    finite value, infinity from 65520, the 17-bit saturation (-65536 is -infinity in fp16),
    and a negative zero never appears (0 is +0)."""
    d = [0, 1, -1, 2049, 2051, 4097, 65504, 65519, 65520, 70000, -70000, -65504, -65520]
    spec = dict(fmt="R16_I", image=np.array(d, np.int64).reshape(1, 1, -1) & 0xFFFF,
                weights=np.zeros((1, 1, 1, 1), np.int64), signed=True)
    # the value reaches the convertor as (d - 0) * 1 >> 0; R16_I holds d in 16 bits, so the
    # wide ones come from a scale of 2 on half the value
    for scale in (1, 2):
        src = [v // scale if abs(v) // scale < 32768 else 0 for v in d]
        spec["image"] = np.array(src, np.int64).reshape(1, 1, -1) & 0xFFFF
        layer = image_layer(CFG, prec=2, cvt=(0, scale, 0), **spec)
        core, p = _program(layer)
        got = convert_image(p, image_codes(CFG, p, core.dbb))[0, 0] & 0xFFFF
        want = [_fp16(max(min(v * scale, 65535), -65536)) for v in src]
        assert list(got) == want, (scale, list(map(hex, got)), list(map(hex, want)))
    assert _fp16(65519) == 0x7BFF and _fp16(65520) == 0x7C00 and _fp16(2049) == 0x6800


def test_fp16_pixel_nan_inf_counts_and_flush():
    """CDMA's fp16 input counters on fp16 pixels count every element from the ROI's first
    pixel to the end of the atom holding the last one, per line (not the X offset before the
    ROI); D_NAN_FLUSH_TO_ZERO makes the NaNs +0 (infinities stay). T_R16_F, INT16 input by
    Table 33, is neither counted nor flushed (as NVDLA's CDMA)."""
    atom = CFG.memory_atom
    W, H = 3, 2
    img = np.asarray(np.arange(W * H).reshape(1, H, W) + 1, np.float16).view(np.uint16).astype(
        np.int64)
    img[0, 0, 1] = 0x7E00            # NaN in the ROI
    img[0, 1, 2] = 0xFC00            # -inf in the ROI
    for fmt, counted in (("A16B16G16R16_F", True), ("R16_F", False)):
        C = pixel_format(fmt).channels
        codes = np.repeat(img, C, axis=0)
        xo = 1 if fmt == "R16_F" else 0
        for flush in (False, True):
            layer = image_layer(CFG, fmt=fmt, image=codes, weights=np.full((1, C, 1, 1), 0x3C00),
                                prec=2, x_offset=xo, nan_to_zero=flush)
            core, p = _program(layer)
            base, stride = layer["info"]["feature_base"], layer["regs"]["CDMA"]["D_LINE_STRIDE"]
            bpp = pixel_format(fmt).bytes_per_pixel[0]
            tail = (xo + W) * bpp
            # a NaN in the X offset before the ROI (never counted); an infinity in the atom
            # tail after line 0's last pixel (counted, when the tail exists)
            if xo:
                core.dbb.write(base, np.array([0x01, 0x7E], np.uint8))
            tail_inf = tail % atom != 0
            if tail_inf:
                core.dbb.write(base + tail, np.array([0x00, 0x7C], np.uint8))
            state = CbufState()
            cube, _ = load_cbuf(core, CFG, p, state)
            if counted:
                assert state.stats["data"] == (C, C + int(tail_inf)), state.stats
            else:
                assert state.stats["data"] == (0, 0), state.stats
            nan_slot = cube[0, 0, 1, 0] & 0xFFFF
            assert nan_slot == (0 if flush and counted else 0x7E00)
            assert cube[0, 1, 2, 0] & 0xFFFF == 0xFC00


def _decode_err(layer):
    with pytest.raises(ValueError) as e:
        _program(layer)
    return str(e.value)


def _set(layer, block, reg, **fields):
    from arch.registers import register_map
    from sim.sdp.random_programs import Regs
    r = Regs(register_map(CFG)[block])
    r.words = layer["regs"][block]
    r.set(reg, **fields)


def test_fp16_image_rules():
    """The rules that name the field: the convertor takes no fp16 pixels; fp16 pixels go to
    fp16 only (Table 29); Table 33's input precision of T_R16_F (INT16) and of the fp16 ones;
    integer pixels into fp16 need the convertor; an unsigned fp16 pixel needs none."""
    spec = _draw("A16B16G16R16_F", 1)
    layer = image_layer(CFG, prec=2, **spec)
    _program(layer)                                           # valid as drawn
    _set(layer, "CDMA", "D_DATAIN_FORMAT", PIXEL_SIGN_OVERRIDE=0)
    _program(layer)                                           # sign is an integer matter
    _set(layer, "CDMA", "D_CVT_CFG", CVT_EN=1)
    assert "CDMA.D_CVT_CFG.CVT_EN=ENABLE" in _decode_err(layer)

    layer = image_layer(CFG, prec=2, **_draw("R16_F", 2))
    _program(layer)
    _set(layer, "CDMA", "D_CVT_CFG", CVT_EN=1)
    assert "CDMA.D_CVT_CFG.CVT_EN=ENABLE" in _decode_err(layer)
    layer = image_layer(CFG, prec=2, **_draw("R16_F", 2))
    for b in ("CDMA", "CSC"):
        _set(layer, b, "D_MISC_CFG", IN_PRECISION=2)
    assert "CDMA.D_MISC_CFG.IN_PRECISION=FP16" in _decode_err(layer)

    layer = image_layer(CFG, prec=2, **_draw("A16Y16U16V16_F", 3))
    for b in ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC"):
        _set(layer, b, "D_MISC_CFG", PROC_PRECISION=1)
    msg = _decode_err(layer)
    assert "CDMA.D_MISC_CFG.PROC_PRECISION=INT16" in msg and "Table 29" in msg

    layer = image_layer(CFG, prec=2, **_draw("A8B8G8R8", 4))
    _program(layer)
    _set(layer, "CDMA", "D_CVT_CFG", CVT_EN=0)
    _set(layer, "CDMA", "D_DATAIN_FORMAT", PIXEL_SIGN_OVERRIDE=1)
    assert "CDMA.D_MISC_CFG.IN_PRECISION=INT8" in _decode_err(layer)


def test_random_image_layers_in_every_precision(tmp_path):
    """The random generator draws image layers of every processing precision the build has
    (every format of each, fp16 pixels into fp16 only), and the golden model runs them: it
    redraws few, and the fp16 layers' outputs are not constant."""
    from sim.conv.image_programs import image_formats_for
    paths = write_random_image_traces(CFG, str(tmp_path), 24, seed=11, max_macs=20_000,
                                      precs=(0, 1, 2))
    names = [p.rsplit("/", 1)[-1] for p in paths]
    for prec, tag in enumerate(("_i8", "_i16", "_fp16")):
        got = [n for n in names if n.endswith(tag)]
        assert len(got) == 8
        fmts = {n[len("img_random_11_0000_"):-len(tag)] for n in got}
        assert fmts <= set(image_formats_for(CFG, prec))
    assert any("_F_fp16" in n for n in names)
    assert not any("_F_i" in n for n in names)
    for path in paths:
        res = run_golden(parse_trace(path, CFG), CFG, core=rp.golden_core(CFG))
        assert res.passed, res.message


def test_random_image_precisions_must_be_the_builds():
    """Asking for a precision the build lacks is an error naming it, not an endless redraw."""
    from tests.conftest import NV_SMALL_FP16 as FP16_ONLY
    with pytest.raises(ValueError, match="has no int16"):
        write_random_image_traces(FP16_ONLY, "/nonexistent", 1, precs=(0, 1))
