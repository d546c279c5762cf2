"""The other accelerator's external-memory layout (sim.formats.dlhdl) and the converters."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sim.formats import (FormatError, dlhdl_conv_size, dlhdl_from_bytes, dlhdl_to_bytes,
                         dlhdl_to_nvdla, nvdla_to_dlhdl, pack_dlhdl_conv, pack_dlhdl_fc,
                         pack_feature, parallel_transfer_number, thread_number,
                         unpack_dlhdl_conv, unpack_dlhdl_fc, unpack_feature)


def _planes(Z, H=3, W=3):
    # plane z holds 100*(z+1) + 3*y + x, so every value names its position
    z, y, x = np.meshgrid(np.arange(Z), np.arange(H), np.arange(W), indexing="ij")
    return 100 * (z + 1) + 3 * y + x


def test_thread_and_parallel_transfer_numbers():
    assert (thread_number(9), parallel_transfer_number(9)) == (3, 4)      # the document's example
    assert (thread_number(16), parallel_transfer_number(16)) == (4, 4)
    assert (thread_number(64), parallel_transfer_number(64)) == (8, 8)
    assert parallel_transfer_number(25) == 8 and parallel_transfer_number(1) == 1
    with pytest.raises(FormatError, match="ConvThreadNumber 10 must be a positive square"):
        thread_number(10)


def test_3x3x4_into_1x36():
    cube = _planes(4)
    vec = pack_dlhdl_conv(cube, C=4, N=4)
    assert vec.size == 36 == dlhdl_conv_size(3, 3, 4, C=4, N=4)
    assert list(vec[:8]) == [100, 200, 300, 400, 101, 201, 301, 401]   # N values, then x
    assert list(vec[12:16]) == [103, 203, 303, 403]                     # next row (y = 1)
    assert np.array_equal(unpack_dlhdl_conv(vec, 4, 3, 3, C=4, N=4), cube)


def test_power_of_two_padding_3x3x5_threads_64():
    # thread number 64: C = N = 8; three zero planes make Z = 8; 1-by-72 vector
    cube = _planes(5)
    vec = pack_dlhdl_conv(cube, conv_thread_number=64)
    assert vec.size == 72 == dlhdl_conv_size(3, 3, 5, conv_thread_number=64)
    assert list(vec[:8]) == [100, 200, 300, 400, 500, 0, 0, 0]
    assert np.array_equal(unpack_dlhdl_conv(vec, 5, 3, 3, conv_thread_number=64), cube)


def test_power_of_two_padding_3x3x5_threads_16():
    # the read-back example: thread number C = N = 4; Z = 5 is padded to 3x3x8, a 1-by-72 vector
    cube = _planes(5)
    vec = pack_dlhdl_conv(cube, conv_thread_number=16)
    assert vec.size == 72
    assert list(vec[:4]) == [100, 200, 300, 400]
    assert list(vec[36:40]) == [500, 0, 0, 0]                        # second NXY block
    assert np.array_equal(unpack_dlhdl_conv(vec, 5, 3, 3, conv_thread_number=16), cube)


def test_non_power_of_two_padding():
    # C = 3, N = 4, Z = 4: one zero plane after the third channel, three after the fourth
    cube = _planes(4)
    vec = pack_dlhdl_conv(cube, conv_thread_number=9)
    assert vec.size == 72 == dlhdl_conv_size(3, 3, 4, conv_thread_number=9)   # 3*3*ceil(4/3)*4
    assert list(vec[:4]) == [100, 200, 300, 0]
    assert list(vec[36:40]) == [400, 0, 0, 0]
    # C = 3, N = 4, Z = 5: first three features, a zero plane, features 4-5, two zero planes
    vec5 = pack_dlhdl_conv(_planes(5), conv_thread_number=9)
    assert vec5.size == 72
    assert list(vec5[:4]) == [100, 200, 300, 0] and list(vec5[36:40]) == [400, 500, 0, 0]
    assert np.array_equal(unpack_dlhdl_conv(vec5, 5, 3, 3, conv_thread_number=9), _planes(5))


def test_output_size_formula():
    assert dlhdl_conv_size(3, 3, 4, C=4, N=4) == 36
    assert dlhdl_conv_size(3, 3, 4, C=3, N=4) == 72
    with pytest.raises(FormatError, match="N >= C"):
        dlhdl_conv_size(3, 3, 4, C=5, N=4)


def test_fully_connected_padding():
    v = np.arange(1, 7, dtype=np.float32)
    padded = pack_dlhdl_fc(v, N=8)
    assert list(padded) == [1, 2, 3, 4, 5, 6, 0, 0]
    assert np.array_equal(unpack_dlhdl_fc(padded, 6), v)
    b = dlhdl_to_bytes(pack_dlhdl_fc(np.arange(-3, 3), N=8), "int8")
    assert list(b) == [0xFD, 0xFE, 0xFF, 0, 1, 2, 0, 0]              # one byte per value


def test_little_endian_bytes():
    b = dlhdl_to_bytes(np.array([1.0, -2.0], np.float32), "single")
    assert list(b) == [0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0]
    assert list(dlhdl_from_bytes(b, "single")) == [1.0, -2.0]
    with pytest.raises(FormatError, match="int8 values out of range"):
        dlhdl_to_bytes(np.array([128]), "int8")
    with pytest.raises(FormatError, match="not a whole number of single values"):
        dlhdl_from_bytes(np.zeros(6, np.uint8), "single")


def test_nvdla_to_dlhdl_int8():
    cube = (_planes(5) % 128).astype(np.int64)
    mem, s = pack_feature(cube, 32, "int8")
    ext = nvdla_to_dlhdl(mem, 0, 5, 3, 3, 32, "int8", 9)
    assert ext.size == 72
    assert list(ext[:4].view(np.int8)) == [100, 200 % 128, 300 % 128, 0]
    mem2, s2 = dlhdl_to_nvdla(ext, 5, 3, 3, 9, 32, "int8")
    assert np.array_equal(mem2, mem)
    with pytest.raises(FormatError, match="int16 feature data has no external-memory"):
        nvdla_to_dlhdl(mem, 0, 5, 3, 3, 32, "int16", 9)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([1, 4, 9, 16, 25, 36, 64]), st.integers(1, 20), st.integers(1, 4),
       st.integers(1, 4), st.sampled_from(["int8", "fp16"]), st.sampled_from([8, 32]),
       st.integers(0, 999))
def test_converter_round_trip(threads, Z, H, W, precision, atom, seed):
    rng = np.random.default_rng(seed)
    if precision == "int8":
        cube = rng.integers(-128, 128, (Z, H, W))
    else:
        cube = rng.standard_normal((Z, H, W)).astype(np.float16)
    vec = pack_dlhdl_conv(cube, threads)
    assert vec.size == dlhdl_conv_size(H, W, Z, threads)
    assert np.array_equal(unpack_dlhdl_conv(vec, Z, H, W, threads), cube)
    mem, _ = pack_feature(cube, atom, precision)
    ext = nvdla_to_dlhdl(mem, 0, Z, H, W, atom, precision, threads)
    mem2, _ = dlhdl_to_nvdla(ext, Z, H, W, threads, atom, precision)
    assert np.array_equal(mem2, mem)
    back = unpack_feature(mem2, 0, Z, H, W, atom, precision)
    assert np.array_equal(back, cube)
