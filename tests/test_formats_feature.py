"""Feature data format (sim.formats.feature): worked examples, reference data, round trips."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sim.formats import (AlignmentError, FeatureStrides, FormatError, channels_per_atom,
                         feature_byte_offsets, feature_footprint, from_surface_packed_cube,
                         is_line_packed, is_surface_packed, pack_feature, pack_feature_batch,
                         packed_strides, surface_packed_equivalent, to_surface_packed_cube,
                         unpack_feature, unpack_feature_batch, values_to_bytes,
                         values_to_raw)

from .conftest import TRACES


def _cube(C, H, W, precision, seed=0):
    rng = np.random.default_rng(seed)
    if precision == "int8":
        return rng.integers(-128, 128, (C, H, W))
    if precision == "int16":
        return rng.integers(-32768, 32768, (C, H, W))
    return rng.integers(0, 1 << 16, (C, H, W)).astype(np.uint16).view(np.float16)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint16) if a.dtype == np.float16 else a


# --------------------------------------------------------------------------------- examples


def test_channels_per_atom():
    assert channels_per_atom(32, "int8") == 32
    assert channels_per_atom(32, "int16") == 16
    assert channels_per_atom(32, "fp16") == 16
    assert channels_per_atom(8, "int8") == 8
    assert channels_per_atom(8, "fp16") == 4


def test_packed_int8_addresses_atom32():
    # 40 channels -> 2 surfaces of 32; W=3, H=2: line 96 B, surface 192 B
    cube = _cube(40, 2, 3, "int8")
    mem, strides = pack_feature(cube, 32, "int8")
    assert strides == FeatureStrides(96, 192)
    assert mem.size == 2 * 192
    # element (c=33, h=1, w=2): surface 1, line 1, atom 2, byte 1 -> 192 + 96 + 64 + 1
    assert mem[353] == np.uint8(cube[33, 1, 2] & 0xFF)
    # element (c=5, h=0, w=1) -> 32 + 5
    assert mem[37] == np.uint8(cube[5, 0, 1] & 0xFF)
    # C' fastest: the first atom holds channels 0..31 of pixel (0, 0)
    assert np.array_equal(mem[:32], values_to_bytes(cube[:32, 0, 0], "int8"))
    # padding channels 40..63 of surface 1 are zero in every atom
    pad = mem[192:].reshape(6, 32)[:, 8:]
    assert not pad.any()


def test_packed_int16_addresses_atom32():
    cube = _cube(20, 2, 2, "int16", seed=1)
    mem, strides = pack_feature(cube, 32, "int16")
    assert strides == FeatureStrides(64, 128)
    # (c=17, h=0, w=1): surface 1 (16 ch/atom), atom 1, element 1 -> 128 + 32 + 2
    lo, hi = mem[162], mem[163]
    assert (int(hi) << 8 | int(lo)) == int(cube[17, 0, 1]) & 0xFFFF
    off = feature_byte_offsets(20, 2, 2, 32, "int16", strides)
    assert off[17, 0, 1] == 162
    assert off[0, 1, 0] == 64


def test_fp16_padding_is_zero_not_nan():
    cube = np.full((3, 2, 2), np.nan, dtype=np.float16)
    mem, _ = pack_feature(cube, 32, "fp16")
    atoms = mem.reshape(-1, 32)
    assert np.all(atoms[:, :6].view(np.uint16) == 0x7E00)   # the three NaN channels
    assert not atoms[:, 6:].any()                              # 13 padding channels: +0.0
    back = unpack_feature(mem, 0, 3, 2, 2, 32, "fp16")
    assert np.array_equal(_bits(back), _bits(cube))


def test_unpacked_layout_fig11():
    # line_stride 3 atoms for W=2, surface_stride 4 lines for H=2, int8 atom 32, C=33
    cube = _cube(33, 2, 2, "int8", seed=2)
    mem, strides = pack_feature(cube, 32, "int8", line_stride=96, surface_stride=384)
    assert not is_line_packed(2, 32, 96) and not is_surface_packed(2, 96, 384)
    assert mem.size == feature_footprint(33, 2, 2, 32, "int8", strides) == 384 + 96 + 64
    # the last atom of each line (64..95, 160..191) and the surface gap (192..383) are untouched
    assert not mem[64:96].any() and not mem[160:384].any()
    # (c=32, h=1, w=1) -> 384 + 96 + 32 + 0
    assert mem[512] == np.uint8(cube[32, 1, 1] & 0xFF)
    back = unpack_feature(mem, 0, 33, 2, 2, 32, "int8", line_stride=96, surface_stride=384)
    assert np.array_equal(back, cube)


def test_unpack_at_base_inside_larger_memory():
    cube = _cube(16, 3, 5, "fp16", seed=3)
    mem, s = pack_feature(cube, 32, "fp16")
    big = np.full(mem.size + 4096, 0xAB, np.uint8)
    big[1024:1024 + mem.size] = mem
    back = unpack_feature(big, 1024, 16, 3, 5, 32, "fp16", s.line_stride, s.surface_stride)
    assert np.array_equal(_bits(back), _bits(cube))


def test_atom8_layout():
    # nv_small: 8-byte atoms, 8 int8 channels per atom
    cube = _cube(9, 1, 2, "int8", seed=4)
    mem, strides = pack_feature(cube, 8, "int8")
    assert strides == FeatureStrides(16, 16)
    assert np.array_equal(mem[:8], values_to_bytes(cube[:8, 0, 0], "int8"))
    assert np.array_equal(mem[8:16], values_to_bytes(cube[:8, 0, 1], "int8"))
    assert mem[16] == np.uint8(cube[8, 0, 0] & 0xFF) and not mem[17:24].any()


def test_surface_packed_1x1xC_equivalence():
    cube = _cube(70, 1, 1, "int8", seed=5)
    assert surface_packed_equivalent(70, 32, "int8") == (32, 1, 3)
    eq = to_surface_packed_cube(cube, 32, "int8")
    assert eq.shape == (32, 1, 3)
    assert eq[5, 0, 2] == cube[69, 0, 0] and eq[6, 0, 2] == 0
    a, sa = pack_feature(cube, 32, "int8")
    b, sb = pack_feature(eq, 32, "int8")
    assert sa.surface_stride == 32 and is_surface_packed(1, sa.line_stride, sa.surface_stride)
    assert np.array_equal(a, b)
    assert np.array_equal(from_surface_packed_cube(eq, 70), cube)


def test_batches_at_batch_stride():
    cubes = np.stack([_cube(17, 2, 3, "int16", seed=s) for s in range(3)])
    mem, strides = pack_feature_batch(cubes, 32, "int16", batch_stride=1024)
    assert strides.batch_stride == 1024
    for n in range(3):
        one, _ = pack_feature(cubes[n], 32, "int16")
        assert np.array_equal(mem[n * 1024:n * 1024 + one.size], one)
    back = unpack_feature_batch(mem, 0, 3, 17, 2, 3, 32, "int16", batch_stride=1024)
    assert np.array_equal(back, cubes)
    # default batch stride: cubes back to back
    mem2, s2 = pack_feature_batch(cubes, 32, "int16")
    assert s2.batch_stride == 2 * 2 * 3 * 32


def test_packed_strides_helper():
    assert packed_strides(64, 4, 5, 32, "int16") == FeatureStrides(160, 640)
    assert packed_strides(64, 4, 5, 32, "int16", batches=2).batch_stride == 4 * 640


# --------------------------------------------------------------------------------- rules


def test_unaligned_line_stride_rejected():
    with pytest.raises(AlignmentError, match=r"feature line_stride 0x50 must be aligned to 32"):
        pack_feature(_cube(4, 2, 2, "int8"), 32, "int8", line_stride=80)


def test_unaligned_start_address_rejected():
    mem, _ = pack_feature(_cube(4, 2, 2, "int8"), 32, "int8")
    with pytest.raises(AlignmentError, match="start_address 0x10 must be aligned to 32"):
        unpack_feature(np.zeros(512, np.uint8), 16, 4, 2, 2, 32, "int8")
    # the same offset is fine with 8-byte atoms
    unpack_feature(np.zeros(512, np.uint8), 16, 4, 2, 2, 8, "int8")


def test_overlapping_strides_rejected():
    cube = _cube(40, 2, 3, "int8")
    with pytest.raises(FormatError, match="lines overlap"):
        pack_feature(cube, 32, "int8", line_stride=64)
    with pytest.raises(FormatError, match="surfaces overlap"):
        pack_feature(cube, 32, "int8", surface_stride=160)
    with pytest.raises(FormatError, match="batches overlap"):
        pack_feature_batch(np.stack([cube, cube]), 32, "int8", batch_stride=192)


def test_bad_atom_and_values_rejected():
    with pytest.raises(FormatError, match="memory atom 16"):
        pack_feature(_cube(4, 1, 1, "int8"), 16, "int8")
    with pytest.raises(FormatError, match=r"int8 data out of range"):
        pack_feature(np.full((2, 1, 1), 200), 32, "int8")


def test_memory_too_small_rejected():
    with pytest.raises(FormatError, match="outside the"):
        unpack_feature(np.zeros(64, np.uint8), 0, 4, 2, 2, 32, "int8")


# --------------------------------------------------------------------------------- reference


def _load_dat(path, size):
    mem = np.zeros(size, np.uint8)
    text = path.read_text()
    for m in re.finditer(r"offset:0x([0-9a-fA-F]+), size:(\d+), payload:([^}]*)}", text):
        off, n = int(m.group(1), 16), int(m.group(2))
        mem[off:off + n] = [int(x, 16) for x in m.group(3).split()]
    return mem


def test_nv_small_trace_feature_layout():
    """dc_14x7x49 loads a 14x7x49 int8 cube with line stride 0x80 and surface stride 0x380
    (8-byte atoms): the image must have data only where the layout puts elements."""
    d = TRACES / "nv_small" / "dc_14x7x49_3x4x49x32_int8_0"
    if not d.exists():
        pytest.skip("shared NVDLA traces not present")
    mem = _load_dat(d / "dc_14x7x49_3x4x49x32_int8_0_in_feature.dat", 0x1880)
    s = FeatureStrides(0x80, 0x380)
    assert feature_footprint(49, 7, 14, 8, "int8", s) <= 0x1880
    cube = unpack_feature(mem, 0, 49, 7, 14, 8, "int8", s.line_stride, s.surface_stride)
    again, _ = pack_feature(cube, 8, "int8", s.line_stride, s.surface_stride)
    assert np.array_equal(again, mem[:again.size])      # gaps and padding channels are zero
    assert not mem[again.size:].any()
    assert np.count_nonzero(cube) > 1000


# --------------------------------------------------------------------------------- properties


@st.composite
def feature_cases(draw):
    atom = draw(st.sampled_from([8, 32]))
    precision = draw(st.sampled_from(["int8", "int16", "fp16"]))
    C = draw(st.integers(1, 70))
    H = draw(st.integers(1, 4))
    W = draw(st.integers(1, 5))
    extra_line = draw(st.integers(0, 2)) * atom
    extra_surf = draw(st.integers(0, 3)) * atom
    seed = draw(st.integers(0, 2**16))
    return atom, precision, C, H, W, extra_line, extra_surf, seed


@settings(max_examples=50, deadline=None)
@given(feature_cases())
def test_feature_round_trip(case):
    atom, precision, C, H, W, extra_line, extra_surf, seed = case
    cube = _cube(C, H, W, precision, seed)
    ls = W * atom + extra_line
    ss = H * ls + extra_surf
    mem, strides = pack_feature(cube, atom, precision, ls, ss)
    back = unpack_feature(mem, 0, C, H, W, atom, precision, ls, ss)
    assert np.array_equal(_bits(back), _bits(cube))
    # every element sits where feature_byte_offsets says
    off = feature_byte_offsets(C, H, W, atom, precision, strides)
    raw = values_to_raw(cube, precision).reshape(-1)
    if precision == "int8":
        assert np.array_equal(mem[off.reshape(-1)], raw)
    else:
        lo = mem[off.reshape(-1)].astype(np.uint16)
        hi = mem[off.reshape(-1) + 1].astype(np.uint16)
        assert np.array_equal(lo | hi << 8, raw)
    # exactly C*H*W elements are non-padding; all other bytes are zero
    mask = np.zeros(mem.size, bool)
    bpe = 1 if precision == "int8" else 2
    for b in range(bpe):
        mask[off.reshape(-1) + b] = True
    assert not mem[~mask].any()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), feature_cases(), st.integers(0, 4))
def test_feature_batch_round_trip(N, case, extra_batch):
    atom, precision, C, H, W, extra_line, extra_surf, seed = case
    cubes = np.stack([_cube(C, H, W, precision, seed + n) for n in range(N)])
    ls = W * atom + extra_line
    ss = H * ls + extra_surf
    one = feature_footprint(C, H, W, atom, precision, FeatureStrides(ls, ss))
    bs = -(-one // atom) * atom + extra_batch * atom
    mem, _ = pack_feature_batch(cubes, atom, precision, ls, ss, bs)
    back = unpack_feature_batch(mem, 0, N, C, H, W, atom, precision, ls, ss, bs)
    assert np.array_equal(_bits(back), _bits(cubes))
