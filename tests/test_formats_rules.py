"""Validators (sim.formats.rules): Tables 29-32 precision conversion, Table 35 alignment."""

import pytest

from sim.formats import (AlignmentError, PrecisionConversionError, alignment_requirement,
                         check_alignment, check_precision_conversion)
from sim.formats.common import FormatError
from sim.formats.rules import check_alignments

# (unit, input, output, pipeline precision or None for "Invalid case")
CONVERSIONS = [
    # Table 29: convolution
    ("conv", "image_uint8", "int8", "int8"), ("conv", "image_uint8", "int16", "int16"),
    ("conv", "image_uint8", "fp16", "fp16"), ("conv", "image_int16", "int8", "int8"),
    ("conv", "image_uint16", "fp16", "fp16"),
    ("conv", "image_fp16", "int8", None), ("conv", "image_fp16", "int16", None),
    ("conv", "image_fp16", "fp16", "fp16"),
    ("conv", "int8", "int8", "int8"), ("conv", "int8", "int16", None),
    ("conv", "int16", "int8", None), ("conv", "int16", "int16", "int16"),
    ("conv", "int16", "fp16", None),
    ("conv", "fp16", "int8", None), ("conv", "fp16", "int16", None),
    ("conv", "fp16", "fp16", "fp16"),
    # Table 30: SDP
    ("sdp", "int8", "int8", "int32"), ("sdp", "int8", "int16", "int32"),
    ("sdp", "int8", "fp16", None),
    ("sdp", "int16", "int8", "int32"), ("sdp", "int16", "int16", "int32"),
    ("sdp", "int16", "fp16", "int32"),
    ("sdp", "fp16", "int8", None), ("sdp", "fp16", "int16", "fp32"),
    ("sdp", "fp16", "fp16", "fp32"),
    # Table 31: LRN
    ("cdp", "int8", "int8", "int8"), ("cdp", "int8", "int16", None), ("cdp", "int8", "fp16", None),
    ("cdp", "int16", "int8", None), ("cdp", "int16", "int16", "int16"),
    ("cdp", "int16", "fp16", None),
    ("cdp", "fp16", "int8", None), ("cdp", "fp16", "int16", None), ("cdp", "fp16", "fp16", "fp16"),
    # Table 32: pooling
    ("pdp", "int8", "int8", "int8"), ("pdp", "int8", "int16", None),
    ("pdp", "int16", "int8", None), ("pdp", "int16", "int16", "int16"),
    ("pdp", "int16", "fp16", None),
    ("pdp", "fp16", "int8", None), ("pdp", "fp16", "int16", None), ("pdp", "fp16", "fp16", "fp16"),
]
TABLE = {"conv": "Table 29", "sdp": "Table 30", "cdp": "Table 31", "pdp": "Table 32"}


@pytest.mark.parametrize("unit,src,dst,real", CONVERSIONS)
def test_precision_conversion_tables(unit, src, dst, real):
    if real is None:
        with pytest.raises(PrecisionConversionError,
                           match=rf"{TABLE[unit]} .*invalid case: "
                                 rf"input '{src}' -> output '{dst}'"):
            check_precision_conversion(unit, src, dst)
    else:
        assert check_precision_conversion(unit, src, dst) == real


def test_precision_conversion_aliases_and_pixel_formats():
    assert check_precision_conversion("pooling", "fp16", "fp16") == "fp16"
    assert check_precision_conversion("lrn", "int16", "int16") == "int16"
    assert check_precision_conversion("batchnorm", "int16", "fp16") == "int32"
    assert check_precision_conversion("conv", "T_A8B8G8R8", "fp16") == "fp16"
    assert check_precision_conversion("conv", "T_R16", "int8") == "int8"
    with pytest.raises(PrecisionConversionError,
                       match="Table 29.*'T_A16B16G16R16_F' -> output 'int8'"):
        check_precision_conversion("conv", "T_A16B16G16R16_F", "int8")
    with pytest.raises(PrecisionConversionError, match="'T_R16_F' -> output 'int16'"):
        check_precision_conversion("conv", "T_R16_F", "int16")


def test_precision_conversion_bad_arguments():
    with pytest.raises(PrecisionConversionError, match="unknown unit 'rubik'"):
        check_precision_conversion("rubik", "int8", "int8")
    with pytest.raises(PrecisionConversionError, match="output precision 'int32'"):
        check_precision_conversion("sdp", "int8", "int32")
    with pytest.raises(PrecisionConversionError, match="Table 30.*input format 'image_uint8'"):
        check_precision_conversion("sdp", "image_uint8", "int8")
    assert issubclass(PrecisionConversionError, ValueError)


# (format, start, line, surface, planar, data size) -- Table 35 with 32-byte atoms
TABLE35 = [
    ("feature", 32, 32, 32, 32, None),
    ("weight", 256, None, None, None, 128),
    ("wmb", 256, None, None, None, 128),
    ("wgs", 256, None, None, None, 128),
    ("pixel", 32, 32, None, None, None),
    ("bias", 32, 32, 32, None, None),
    ("prelu", 32, None, None, None, None),
    ("batch_norm", 32, None, None, None, None),
    ("eltwise", 32, 32, None, None, 32),
]
FIELDS = ("start_address", "line_stride", "surface_stride", "planar_stride", "data_size")


@pytest.mark.parametrize("row", TABLE35, ids=[r[0] for r in TABLE35])
def test_alignment_table35(row):
    fmt, *reqs = row
    for field, req in zip(FIELDS, reqs):
        assert alignment_requirement(fmt, field) == req
        if req is None:
            with pytest.raises(AlignmentError, match=f"Table 35: {field} does not apply to {fmt}"):
                check_alignment(fmt, field, 0)
            continue
        assert check_alignment(fmt, field, 3 * req) == 3 * req
        with pytest.raises(AlignmentError,
                           match=rf"Table 35: {fmt} {field} {3 * req + req // 2:#x} must be "
                                 rf"aligned to {req} bytes"):
            check_alignment(fmt, field, 3 * req + req // 2)


def test_alignment_scales_with_memory_atom():
    assert alignment_requirement("feature", "line_stride", atom=8) == 8
    assert alignment_requirement("pixel", "start_address", atom=8) == 8
    assert alignment_requirement("weight", "start_address", atom=8) == 256
    check_alignment("feature", "surface_stride", 0x48, atom=8)
    with pytest.raises(AlignmentError, match="aligned to 8 bytes"):
        check_alignment("feature", "surface_stride", 0x44, atom=8)


def test_alignment_bad_arguments():
    with pytest.raises(AlignmentError, match="unknown data format 'lut'"):
        check_alignment("lut", "start_address", 0)
    with pytest.raises(AlignmentError, match="unknown field 'pitch'"):
        check_alignment("feature", "pitch", 0)
    check_alignments("weight", start_address=0x1000, data_size=0x180, line_stride=None)
    with pytest.raises(AlignmentError, match="weight data_size 0x190"):
        check_alignments("weight", start_address=0x1000, data_size=0x190)
    assert issubclass(AlignmentError, FormatError) and issubclass(AlignmentError, ValueError)
