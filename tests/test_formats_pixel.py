"""Pixel formats (sim.formats.pixel): Table 33, component layouts, X offset, sign extension."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sim.formats import (PIXEL_FORMATS, FormatError, PixelSettingError, check_pixel_setting,
                         convert_precision, max_x_offset, pack_pixels, pixel_format,
                         pixel_to_signed, roi_base_and_x_offset, unpack_pixels)
from arch.config import PACKED_IMAGE_FORMATS, SEMI_PLANAR_IMAGE_FORMATS

# (name, planes, channels, precision, x offset max): a sample of Table 33 rows
TABLE33_ROWS = [
    ("T_R8", 1, 1, "int8", 31), ("T_R10", 1, 1, "int16", 15), ("T_R16_F", 1, 1, "int16", 15),
    ("T_A16B16G16R16", 1, 4, "int16", 3), ("T_A16B16G16R16_F", 1, 4, "fp16", 3),
    ("T_A16Y16U16V16_F", 1, 4, "fp16", 3), ("T_A8B8G8R8", 1, 4, "int8", 7),
    ("T_R8G8B8X8", 1, 4, "int8", 7), ("T_A2B10G10R10", 1, 4, "int16", 7),
    ("T_V10U10Y10A2", 1, 4, "int16", 7), ("T_V8U8Y8A8", 1, 4, "int8", 7),
    ("T_Y8___U8V8_N444", 2, 3, "int8", 31), ("T_Y12___V12U12_N444", 2, 3, "int16", 15),
    ("T_Y16___U16V16_N444", 2, 3, "int16", 15),
]


@pytest.mark.parametrize("name,planes,channels,precision,xmax", TABLE33_ROWS)
def test_table33_rows(name, planes, channels, precision, xmax):
    f = pixel_format(name)
    assert (f.planes, f.channels, f.precision, f.x_offset_max) == (planes, channels, precision,
                                                                   xmax)


def test_table33_complete_and_in_register_order():
    names = ["T_" + n for n in PACKED_IMAGE_FORMATS + SEMI_PLANAR_IMAGE_FORMATS]
    assert list(PIXEL_FORMATS) == names                 # codes 0..35 of PIXEL_FORMAT
    assert [f.code for f in PIXEL_FORMATS.values()] == list(range(36))
    for f in PIXEL_FORMATS.values():                    # X offset range = one atom of pixels
        assert max_x_offset(f, 32) == f.x_offset_max
        assert len(f.components) == f.channels
    assert pixel_format(12) is pixel_format("A8B8G8R8") is PIXEL_FORMATS["T_A8B8G8R8"]


def _one_pixel(name, values):
    f = pixel_format(name)
    img = np.array(values).reshape(len(values), 1, 1)
    return pack_pixels(img, f).planes


@pytest.mark.parametrize("name,memory", [
    ("T_A8B8G8R8", [1, 2, 3, 4]),       # R, G, B, A in bytes 0..3
    ("T_A8R8G8B8", [3, 2, 1, 4]),
    ("T_B8G8R8A8", [4, 1, 2, 3]),
    ("T_R8G8B8A8", [4, 3, 2, 1]),
    ("T_X8B8G8R8", [1, 2, 3, 4]),
    ("T_A8Y8U8V8", [3, 2, 1, 4]),       # Y=1 U=2 V=3 A=4 -> V, U, Y, A
    ("T_V8U8Y8A8", [4, 1, 2, 3]),
])
def test_8bit_component_bytes(name, memory):
    (p0,) = _one_pixel(name, [1, 2, 3, 4])
    assert list(p0[:4]) == memory and not p0[4:].any() and p0.size == 32


def test_10bit_packed_word():
    (p0,) = _one_pixel("T_A2B10G10R10", [0x155, 0x2AA, 0x3FF, 2])
    word = int.from_bytes(bytes(p0[:4]), "little")
    assert word == 0x155 | 0x2AA << 10 | 0x3FF << 20 | 2 << 30
    (p0,) = _one_pixel("T_R10G10B10A2", [0x155, 0x2AA, 0x3FF, 2])
    assert int.from_bytes(bytes(p0[:4]), "little") == 2 | 0x3FF << 2 | 0x2AA << 12 | 0x155 << 22


def test_16bit_components():
    (p0,) = _one_pixel("T_A16B16G16R16", [0x1111, 0x2222, 0x3333, 0x4444])
    assert list(p0[:8]) == [0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44]
    (p0,) = _one_pixel("T_V16U16Y16A16", [0x1111, 0x2222, 0x3333, 0x4444])   # Y U V A
    assert list(p0[:8]) == [0x44, 0x44, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33]


def test_semi_planar_planes():
    p0, p1 = _one_pixel("T_Y8___U8V8_N444", [7, 8, 9])       # Y=7 U=8 V=9
    assert p0[0] == 7 and list(p1[:2]) == [9, 8]              # plane 1 word U8V8: V low byte
    p0, p1 = _one_pixel("T_Y8___V8U8_N444", [7, 8, 9])
    assert list(p1[:2]) == [8, 9]
    p0, p1 = _one_pixel("T_Y16___U16V16_N444", [0x0102, 0x0304, 0x0506])
    assert list(p0[:2]) == [2, 1] and list(p1[:4]) == [6, 5, 4, 3]


def test_x_offset_and_roi_address():
    # an A8B8G8R8 ROI starting at 0x1008: base 0x1000, two redundant pixels
    assert roi_base_and_x_offset(0x1008, "T_A8B8G8R8") == (0x1000, 2)
    assert roi_base_and_x_offset(0x101F, "T_R8") == (0x1000, 31)
    with pytest.raises(PixelSettingError, match="not on a pixel boundary"):
        roi_base_and_x_offset(0x1006, "T_A8B8G8R8")
    img = np.arange(4 * 2 * 7).reshape(4, 2, 7) % 256
    surf = pack_pixels(img, "T_A8B8G8R8", x_offset=2)
    assert surf.line_stride == 64                            # (2 + 7) * 4 = 36 -> 64
    p0 = surf.planes[0]
    assert not p0[:8].any()                                  # the redundant pixels
    assert list(p0[8:12]) == list(img[:, 0, 0])
    assert list(p0[64 + 8:64 + 12]) == list(img[:, 1, 0])
    back = unpack_pixels(p0, "T_A8B8G8R8", 7, 2, x_offset=2, line_stride=64)
    assert np.array_equal(back, img)


def test_sign_extension_programming_guide_example():
    # R_8 value 0x87: UNSIGNED -> 0x00087, SIGNED -> 0x1ff87 (17-bit) = -121
    codes = np.array([[[0x87]]])
    assert pixel_to_signed(codes, "T_R8", sign_override=False)[0, 0, 0] == 0x87
    assert pixel_to_signed(codes, "T_R8", sign_override=True)[0, 0, 0] == -121
    # a 10-bit field is left-aligned into 16 bits first; 2-bit alpha likewise
    c = np.array([0x3FF, 0x200, 0x001, 3]).reshape(4, 1, 1)
    u = pixel_to_signed(c, "T_A2B10G10R10")[:, 0, 0]
    s = pixel_to_signed(c, "T_A2B10G10R10", sign_override=True)[:, 0, 0]
    assert list(u) == [0xFFC0, 0x8000, 0x40, 0xC000]
    assert list(s) == [-64, -32768, 64, -16384]
    assert pixel_to_signed(np.array([[[0x8001]]]), "T_R16", True)[0, 0, 0] == -32767
    with pytest.raises(PixelSettingError, match="fp16 components"):
        pixel_to_signed(codes, "T_R16_F")


def test_convert_precision_equation1():
    d = np.array([200, 255, 0, 3, -3])
    assert list(convert_precision(d, 128, 1, 0, "int8")) == [72, 127, -128, -125, -128]
    assert list(convert_precision(d, 0, 3, 1, "int16")) == [300, 383, 0, 5, -5]  # 4.5 -> 5
    assert list(convert_precision([1, 3, -1, -3], 0, 1, 1, "int8")) == [1, 2, -1, -2]
    with pytest.raises(FormatError, match="not modelled"):
        convert_precision(d, 0, 1, 0, "fp16")


# --------------------------------------------------------------------------------- rules


def test_setting_validators_name_the_field():
    with pytest.raises(PixelSettingError, match=r"x_offset 32 outside the valid range 0~31"):
        check_pixel_setting("T_R8", x_offset=32)
    with pytest.raises(PixelSettingError, match=r"x_offset 4 outside the valid range 0~3"):
        check_pixel_setting("T_A16B16G16R16", x_offset=4)
    with pytest.raises(PixelSettingError, match="channel size 3 is invalid; Table 33 allows 4"):
        check_pixel_setting("T_A8B8G8R8", channels=3)
    with pytest.raises(PixelSettingError, match="input precision 'int16' is invalid"):
        check_pixel_setting("T_R8", precision="int16")
    with pytest.raises(PixelSettingError, match="line_stride 0x30 must be aligned to 32"):
        check_pixel_setting("T_R8", line_stride=48)
    with pytest.raises(PixelSettingError, match="start_address 0x8 must be aligned to 32"):
        check_pixel_setting("T_R8", base=8)
    with pytest.raises(PixelSettingError, match=r"line_stride 32 < 36 bytes"):
        check_pixel_setting("T_A8B8G8R8", W=7, x_offset=2, line_stride=32)
    with pytest.raises(PixelSettingError, match="not in Table 33"):
        pixel_format("T_RGB565")
    f = check_pixel_setting("T_Y8___U8V8_N444", channels=3, precision="int8", x_offset=31,
                            W=10, line_stride=64, uv_line_stride=96)
    assert f.planes == 2
    with pytest.raises(PixelSettingError, match=r"uv_line_stride 64 < 82 bytes"):
        check_pixel_setting("T_Y8___U8V8_N444", x_offset=31, W=10, uv_line_stride=64)


def test_component_range_checked():
    with pytest.raises(PixelSettingError, match=r"component R codes must be in \[0, 1023\]"):
        pack_pixels(np.full((4, 1, 1), 1024), "T_A2B10G10R10")
    with pytest.raises(PixelSettingError, match=r"image must be \[3, H, W\]"):
        pack_pixels(np.zeros((4, 1, 1), int), "T_Y8___U8V8_N444")


def test_fp16_pixels_keep_bits():
    img = np.array([1.5, -2.0, np.inf, np.nan], dtype=np.float16).reshape(4, 1, 1)
    (p0,) = pack_pixels(img, "T_A16B16G16R16_F").planes
    back = unpack_pixels(p0, "T_A16B16G16R16_F", 1, 1)
    assert np.array_equal(back.astype(np.uint16), img.view(np.uint16))


def test_atom8_x_offset_range():
    assert max_x_offset("T_R8", atom=8) == 7
    assert max_x_offset("T_A8B8G8R8", atom=8) == 1
    with pytest.raises(PixelSettingError, match="0~7"):
        check_pixel_setting("T_R8", x_offset=8, atom=8)


# --------------------------------------------------------------------------------- properties


@st.composite
def pixel_cases(draw):
    f = pixel_format(draw(st.sampled_from(sorted(PIXEL_FORMATS))))
    atom = draw(st.sampled_from([8, 32]))
    W = draw(st.integers(1, 9))
    H = draw(st.integers(1, 3))
    x = draw(st.integers(0, max_x_offset(f, atom)))
    extra = draw(st.integers(0, 2)) * atom
    seed = draw(st.integers(0, 2**16))
    return f, atom, W, H, x, extra, seed


@settings(max_examples=50, deadline=None)
@given(pixel_cases())
def test_pixel_round_trip(case):
    f, atom, W, H, x, extra, seed = case
    rng = np.random.default_rng(seed)
    img = np.stack([rng.integers(0, 1 << c.width, (H, W)) for c in f.components])
    strides = [-(-((x + W) * b) // atom) * atom + extra for b in f.bytes_per_pixel]
    surf = pack_pixels(img, f, x, strides[0], strides[1] if f.planes == 2 else None, atom)
    p1 = surf.planes[1] if f.planes == 2 else None
    back = unpack_pixels(surf.planes[0], f, W, H, x, surf.line_stride, plane1=p1,
                         uv_line_stride=surf.uv_line_stride, atom=atom)
    assert np.array_equal(back, img)
    # bytes before the X offset are redundant data: left zero
    assert not surf.planes[0][:x * f.bytes_per_pixel[0]].any()
