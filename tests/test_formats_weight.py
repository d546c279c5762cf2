"""Weight formats (sim.formats.weight / winograd / sparse): worked examples and round trips."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sim.formats import (WINOGRAD_G, FormatError, SparseFormatError, WeightOptionError,
                         check_post_extension, check_weight_options, compress_weights,
                         decompress_weights, merge_deconv_weights, pack_dc_weights,
                         pack_deconv_weights, pack_image_weights, pack_winograd_weights,
                         pre_extend_image_weights, prepare_winograd_weights,
                         split_deconv_weights, undo_pre_extension, unpack_dc_weights,
                         unpack_deconv_weights, unpack_image_weights, unpack_winograd_weights,
                         values_to_bytes, weight_geometry, winograd_extend_stride,
                         winograd_inverse_transform, winograd_pad_channels,
                         winograd_reduce_stride, winograd_transform)
from sim.formats.weight import dc_weight_offsets, image_weight_offsets


def _weights(shape, precision, seed=0, zero_fraction=0.0):
    rng = np.random.default_rng(seed)
    if precision == "int8":
        w = rng.integers(-128, 128, shape)
    elif precision == "int16":
        w = rng.integers(-32768, 32768, shape)
    else:
        w = rng.integers(0, 1 << 16, shape).astype(np.uint16)
        w[(w & 0x7C00) == 0x7C00] = 0x3C00              # avoid NaN/Inf for value compares
        w = w.view(np.float16)
    if zero_fraction:
        w = np.where(rng.random(shape) < zero_fraction, np.zeros((), w.dtype), w)
    return w


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint16) if a.dtype == np.float16 else a


# --------------------------------------------------------------------------------- DC


def test_dc_group_of_16_kernels_3x3x192_bytes_fig13():
    # int16: 192 bytes = 96 channels -> cubes of 64 + 32 elements; 16 kernels = one group
    w = _weights((16, 96, 3, 3), "int16", seed=1)
    s = pack_dc_weights(w, "int16")
    assert s.size == 16 * 96 * 9 * 2 == 27648 and s.data.size == 27648   # already 128-aligned
    d = s.data
    # K0_00, K1_00, ..., K15_00: channel cube 0 of position (0, 0) of each kernel, 128 B each
    for k in range(16):
        assert np.array_equal(d[k * 128:(k + 1) * 128], values_to_bytes(w[k, :64, 0, 0], "int16"))
    # then K0_01 (position (0, 1)) ...
    assert np.array_equal(d[16 * 128:17 * 128], values_to_bytes(w[0, :64, 0, 1], "int16"))
    # position (1, 0) follows the three positions of line 0 (W before H)
    assert np.array_equal(d[3 * 16 * 128:3 * 16 * 128 + 128],
                          values_to_bytes(w[0, :64, 1, 0], "int16"))
    # cube 1 (channels 64..95, 64 B, no zero fill) starts after 9 positions x 16 kernels
    base = 9 * 16 * 128
    assert np.array_equal(d[base:base + 64], values_to_bytes(w[0, 64:, 0, 0], "int16"))
    assert np.array_equal(d[-64:], values_to_bytes(w[15, 64:, 2, 2], "int16"))   # K15_17


def test_dc_groups_and_alignment():
    w = _weights((40, 70, 1, 2), "int8", seed=2)        # groups of 32 + 8 kernels
    s = pack_dc_weights(w, "int8")
    assert s.group_elements == (32 * 70 * 2, 8 * 70 * 2)
    assert s.size == 40 * 70 * 2 == 5600 and s.data.size == 5632       # 128-byte zero fill
    assert not s.data[5600:].any()
    # second group starts right after the first: K32's cube 0 at (0, 0)
    assert np.array_equal(s.data[4480:4480 + 64], values_to_bytes(w[32, :64, 0, 0], "int8"))
    # the last cube of a kernel is 6 channels long (70 = 64 + 6), not zero-filled to 64
    off = dc_weight_offsets(40, 70, 1, 2, 32, 64)
    assert off[1, 64, 0, 0] - off[0, 64, 0, 0] == 6
    assert np.array_equal(unpack_dc_weights(s.data, 40, 70, 1, 2, "int8"), w)


def test_weight_geometry():
    assert weight_geometry("int8") == (64, 32)
    assert weight_geometry("fp16") == (64, 16)
    assert weight_geometry("int8", atomic_c=8, atomic_k=8) == (8, 8)          # nv_small


# --------------------------------------------------------------------------------- image


def test_pre_extension_5x5x3_fig14():
    # one kernel, value 25*c + 5*r + s: plane c holds 25c + 0..24 like the figure's 0..24
    c, r, s = np.meshgrid(np.arange(3), np.arange(5), np.arange(5), indexing="ij")
    w = (25 * c + 5 * r + s)[None]
    ext = pre_extend_image_weights(w)
    assert ext.shape == (1, 15, 5, 1)                      # 1 x 5 x 15: W=1, H=5, C=15
    assert list(ext[0, :, 1, 0]) == [5, 30, 55, 6, 31, 56, 7, 32, 57, 8, 33, 58, 9, 34, 59]
    assert list(ext[0, :, 0, 0]) == [0, 25, 50, 1, 26, 51, 2, 27, 52, 3, 28, 53, 4, 29, 54]
    assert np.array_equal(undo_pre_extension(ext, 3), w)
    # mapping: the image weight is the DC weight of the extended kernel
    s1 = pack_image_weights(w, "int16")
    s2 = pack_dc_weights(ext, "int16")
    assert np.array_equal(s1.data, s2.data)


def test_post_extension_2_lines_fig16():
    # 16 int16 kernels 3x3x4: pre-extended C = 12; 2-line post-extension -> row group 0 holds
    # lines 0-1 (24 channels), row group 1 only line 2 (12 channels, no zero line added)
    w = _weights((16, 4, 3, 3), "int16", seed=3)
    s = pack_image_weights(w, "int16", post_extension=2)
    assert s.size == 16 * 36 * 2
    ext = pre_extend_image_weights(w)[..., 0]               # [K, 12, R]
    el = s.data[:s.size].view("<u2").astype(np.int64)
    el = np.where(el >= 32768, el - 65536, el)
    assert np.array_equal(el[:24], np.concatenate([ext[0, :, 0], ext[0, :, 1]]))   # K0 rg0
    assert np.array_equal(el[24:48], np.concatenate([ext[1, :, 0], ext[1, :, 1]]))  # K1 rg0
    assert np.array_equal(el[384:396], ext[0, :, 2])                                # K0 rg1
    assert np.array_equal(el[396:408], ext[1, :, 2])                                # K1 rg1
    assert np.array_equal(unpack_image_weights(s.data, 16, 4, 3, 3, "int16", 2), w)


def test_post_extension_limits():
    check_post_extension(2, C=4, S=8)                       # 32 <= 64/2
    check_post_extension(4, C=4, S=4)                       # 16 <= 64/4
    with pytest.raises(WeightOptionError, match="pre-extended channel size S\\*C = 36 exceeds 32"):
        check_post_extension(2, C=4, S=9)
    with pytest.raises(WeightOptionError, match="conv_x_stride\\*C = 20 exceeds 16"):
        check_post_extension(4, C=4, S=3, stride_x=5)
    with pytest.raises(WeightOptionError, match="must be 1, 2 or 4"):
        check_post_extension(3, C=1, S=1)
    with pytest.raises(WeightOptionError, match="exceeds 32"):
        pack_image_weights(_weights((1, 4, 3, 9), "int8"), "int8", post_extension=2)


def test_weight_options_table34():
    for t in ("dc", "winograd", "image", "deconv"):
        check_weight_options(t, compression=True)
    check_weight_options("image", post_extension=4)
    for t, name in (("dc", "Weight for DC"), ("winograd", "Weight for Winograd"),
                    ("deconv", "Weight for deconvolution")):
        with pytest.raises(WeightOptionError,
                           match=f"Table 34: {name} does not support channel post-extension"):
            check_weight_options(t, post_extension=2)


def test_image_channel_padding():
    w = _weights((2, 3, 3, 3), "int8", seed=4)
    s = pack_image_weights(w, "int8", channels=4)           # RGB weights for an RGBA format
    back = unpack_image_weights(s.data, 2, 4, 3, 3, "int8")
    assert np.array_equal(back[:, :3], w) and not back[:, 3].any()


# --------------------------------------------------------------------------------- deconv


def test_deconv_set_split():
    w = np.arange(2 * 1 * 4 * 5).reshape(2, 1, 4, 5)
    sets = split_deconv_weights(w, stride_x=2, stride_y=2)
    assert sets.shape == (4, 2, 1, 2, 3)                     # ceil(4/2) x ceil(5/2)
    assert np.array_equal(sets[1], np.pad(w[:, :, 0::2, 1::2], ((0, 0), (0, 0), (0, 0), (0, 1))))
    assert np.array_equal(sets[2][..., :3], w[:, :, 1::2, 0::2])
    assert sets[3][0, 0, 0, 2] == 0                         # (1, 5) is outside the kernel
    assert np.array_equal(merge_deconv_weights(sets, 4, 5, 2, 2), w)


def test_deconv_reverse_raster_mapping():
    w = _weights((3, 5, 4, 4), "int8", seed=5)
    surfaces = pack_deconv_weights(w, "int8", stride_x=2, stride_y=2)
    assert len(surfaces) == 4
    s0 = split_deconv_weights(w, 2, 2)[0]
    d = surfaces[0].data
    # first small cube: last position (R'-1, S'-1) of K0, then K1, K2 at that position
    assert np.array_equal(d[:5], values_to_bytes(s0[0, :, 1, 1], "int8"))
    assert np.array_equal(d[5:10], values_to_bytes(s0[1, :, 1, 1], "int8"))
    assert np.array_equal(d[15:20], values_to_bytes(s0[0, :, 1, 0], "int8"))
    assert np.array_equal(unpack_deconv_weights(surfaces, 3, 5, 4, 4, "int8", 2, 2), w)


# --------------------------------------------------------------------------------- winograd


def test_winograd_g_matrix_and_transform_exact():
    assert np.array_equal(WINOGRAD_G, [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
    ones = np.ones((3, 3), np.int64)
    # G 1 G^T = outer([1, 1.5, 0.5, 1], same); scale 2**2 keeps it integral
    assert np.array_equal(winograd_transform(ones, "int16", scale_log2=2),
                          [[4, 6, 2, 4], [6, 9, 3, 6], [2, 3, 1, 2], [4, 6, 2, 4]])
    # unscaled integers round to nearest, ties away from zero: 2.25 -> 2, 0.75 -> 1, 1.5 -> 2
    assert np.array_equal(winograd_transform(ones, "int8"),
                          [[1, 2, 1, 1], [2, 2, 1, 2], [1, 1, 0, 1], [1, 2, 1, 1]])
    assert np.array_equal(winograd_transform(-ones, "int8")[1], [-2, -2, -1, -2])
    f = winograd_transform(ones.astype(np.float16), "fp16")
    assert f.dtype == np.float16 and f[1, 1] == 2.25 and f[2, 1] == 0.75
    g = np.arange(9).reshape(3, 3) - 4
    ref = WINOGRAD_G @ g @ WINOGRAD_G.T
    assert np.array_equal(winograd_transform(g, "int16", 2), (4 * ref).astype(np.int64))
    # saturation
    assert winograd_transform(np.full((3, 3), 127), "int8", 2)[1, 1] == 127


def test_winograd_inverse_transform():
    g = _weights((5, 3, 3), "int8", seed=6)
    t = winograd_transform(g, "int16", scale_log2=2)
    assert np.array_equal(winograd_inverse_transform(t, "int16", scale_log2=2), g)
    h = (np.arange(9).reshape(3, 3) / 4).astype(np.float16)
    assert np.array_equal(winograd_inverse_transform(winograd_transform(h, "fp16"), "fp16"), h)


def test_winograd_channel_padding():
    assert winograd_pad_channels(np.ones((1, 3, 3, 3), int), "int8").shape[1] == 32
    assert winograd_pad_channels(np.ones((1, 17, 3, 3), int), "int16").shape[1] == 32
    p = winograd_pad_channels(np.ones((1, 16, 3, 3), int), "fp16")
    assert p.shape[1] == 16


def test_winograd_stride_extension_fig15():
    # 5x5 kernel of 64 bytes (32 int16 channels), stride 2 -> 3x3 of 256 bytes -> 4x4
    w = _weights((16, 32, 5, 5), "int16", seed=7)
    ext = winograd_extend_stride(w, 2, 2)
    assert ext.shape == (16, 128, 3, 3)
    for py, px, c, r, s in [(0, 0, 3, 1, 2), (0, 1, 31, 0, 0), (1, 0, 7, 1, 1), (1, 1, 0, 1, 1)]:
        assert ext[4, (py * 2 + px) * 32 + c, r, s] == w[4, c, 2 * r + py, 2 * s + px]
    assert ext[4, (1 * 2 + 0) * 32 + 5, 2, 0] == 0          # row 5 is past the 5x5 kernel
    assert np.array_equal(winograd_reduce_stride(ext, 32, 5, 5, 2, 2), w)
    with pytest.raises(FormatError, match="ceil\\(R/stride_y\\) == ceil\\(S/stride_x\\) == 3"):
        winograd_extend_stride(w, 1, 1)


def test_winograd_phase2_mapping_fig15():
    w = _weights((16, 32, 5, 5), "int8", seed=8) // 8          # small enough to stay exact
    surf = prepare_winograd_weights(w.astype(np.int64), "int16", 2, 2, scale_log2=2)
    t = winograd_transform(winograd_extend_stride(w, 2, 2), "int16", 2)   # [16, 128, 4, 4]
    assert surf.size == 16 * 128 * 16 * 2 == 65536
    d = surf.data
    # K0_00, K1_00, ... K15_00: 4x4x4 cubes of 128 bytes, channel fastest then W then H
    for k in (0, 1, 15):
        cube = t[k, 0:4].transpose(1, 2, 0)                    # [r, s, c]
        assert np.array_equal(d[k * 128:(k + 1) * 128], values_to_bytes(cube, "int16"))
    # K0_01 follows K15_00
    assert np.array_equal(d[16 * 128:17 * 128],
                          values_to_bytes(t[0, 4:8].transpose(1, 2, 0), "int16"))
    # the last cube is K15_31
    assert np.array_equal(d[-128:], values_to_bytes(t[15, 124:128].transpose(1, 2, 0), "int16"))
    assert np.array_equal(unpack_winograd_weights(d, 16, 128, "int16"), t)


def test_winograd_groups_int8():
    t = _weights((40, 32, 4, 4), "int8", seed=9)
    s = pack_winograd_weights(t, "int8")
    assert s.group_elements == (32 * 32 * 16, 8 * 32 * 16)
    # second group starts after the first: K32 cube 0
    assert np.array_equal(s.data[32 * 32 * 16:32 * 32 * 16 + 64],
                          values_to_bytes(t[32, :4].transpose(1, 2, 0), "int8"))
    with pytest.raises(FormatError, match="multiple of 4"):
        pack_winograd_weights(np.zeros((1, 6, 4, 4), int), "int8")


# --------------------------------------------------------------------------------- sparse


def test_sparse_worked_example():
    # 2 kernels of 1x1x8 int8, one group: elements in surface order
    w = np.array([[5, 0, 0, 7, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, -2]]).reshape(2, 8, 1, 1)
    s = pack_dc_weights(w, "int8")
    assert list(s.data[:16]) == [5, 0, 0, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xFE]
    cw = compress_weights(s)
    assert list(cw.wmb[:2]) == [0b00001001, 0b10000001]       # bit i = element i, LSB first
    assert cw.wmb_bytes == 2 and cw.wmb.size == 128 and not cw.wmb[2:].any()
    assert list(cw.weights[:4]) == [5, 7, 1, 0xFE] and cw.weights.size == 128
    assert cw.group_bytes == (4,) and list(cw.wgs[:4]) == [4, 0, 0, 0] and cw.wgs.size == 128
    assert np.array_equal(decompress_weights(cw, s.group_elements, "int8"), s.data)


def test_sparse_int16_groups_and_wgs():
    # int16: one bit per 2-byte element; 20 kernels -> groups of 16 + 4
    w = np.zeros((20, 2, 1, 1), np.int64)
    w[0, 0] = 300
    w[17, 1] = -1
    s = pack_dc_weights(w, "int16")
    cw = compress_weights(s)
    assert cw.group_bytes == (2, 2)
    assert list(cw.wgs[:8]) == [2, 0, 0, 0, 2, 0, 0, 0]
    assert cw.wmb[0] == 1 and cw.wmb[4] == 0b1000            # element 35 = K17 c1 (32 + 2*1+1)
    assert list(cw.weights[:4]) == [0x2C, 0x01, 0xFF, 0xFF]
    assert np.array_equal(decompress_weights(cw, s.group_elements, "int16"), s.data)


def test_sparse_keeps_fp16_negative_zero():
    w = np.array([0.0, -0.0, 1.0, 0.0], np.float16).reshape(1, 4, 1, 1)
    s = pack_dc_weights(w, "fp16")
    cw = compress_weights(s)
    assert cw.wmb[0] == 0b0110 and cw.group_bytes == (4,)
    back = decompress_weights(cw, s.group_elements, "fp16")
    assert np.array_equal(back, s.data)


def test_sparse_rejects_inconsistent_surfaces():
    s = pack_dc_weights(_weights((4, 8, 1, 1), "int8", seed=10, zero_fraction=0.5), "int8")
    cw = compress_weights(s)
    wgs = cw.wgs.copy()
    wgs[0] += 1
    with pytest.raises(SparseFormatError, match="WGS of group 0 is .* but its WMB marks"):
        decompress_weights((wgs, cw.wmb, cw.weights), s.group_elements, "int8")
    wmb = cw.wmb.copy()
    wmb[100] = 1
    with pytest.raises(SparseFormatError, match="set bits past the last weight element"):
        decompress_weights((cw.wgs, wmb, cw.weights), s.group_elements, "int8")


# --------------------------------------------------------------------------------- properties


precisions = st.sampled_from(["int8", "int16", "fp16"])


@settings(max_examples=50, deadline=None)
@given(precisions, st.integers(1, 40), st.integers(1, 80), st.integers(1, 3),
       st.integers(1, 3), st.sampled_from([(64, None), (8, 8), (16, 4)]), st.integers(0, 999))
def test_dc_round_trip_and_sparse(precision, K, C, R, S, geometry, seed):
    cube_c, group_k = geometry
    w = _weights((K, C, R, S), precision, seed, zero_fraction=0.4)
    s = pack_dc_weights(w, precision, group_k, cube_c)
    assert s.data.size % 128 == 0 and sum(s.group_elements) == K * C * R * S
    assert np.array_equal(_bits(unpack_dc_weights(s.data, K, C, R, S, precision, group_k,
                                                  cube_c)), _bits(w))
    # the mapping is a permutation of the K*C*R*S element slots
    off = dc_weight_offsets(K, C, R, S, group_k or (32 if precision == "int8" else 16), cube_c)
    assert np.array_equal(np.sort(off.reshape(-1)), np.arange(K * C * R * S))
    cw = compress_weights(s)
    assert cw.wgs.size % 128 == cw.wmb.size % 128 == cw.weights.size % 128 == 0
    assert sum(cw.group_bytes) == cw.weight_bytes
    assert np.array_equal(decompress_weights(cw, s.group_elements, precision), s.data)


@settings(max_examples=50, deadline=None)
@given(precisions, st.integers(1, 20), st.integers(1, 4), st.integers(1, 7),
       st.integers(1, 4), st.sampled_from([1, 2, 4]), st.integers(0, 999))
def test_image_round_trip(precision, K, C, R, S, post, seed):
    if post > 1 and S * C * post > 64:
        S = max(1, 64 // (C * post))
        if S * C * post > 64:
            post = 1
    w = _weights((K, C, R, S), precision, seed)
    s = pack_image_weights(w, precision, post_extension=post)
    back = unpack_image_weights(s.data, K, C, R, S, precision, post)
    assert np.array_equal(_bits(back), _bits(w))
    off = image_weight_offsets(K, C, R, S, 32 if precision == "int8" else 16, 64, post)
    assert np.array_equal(np.sort(off.reshape(-1)), np.arange(K * C * R * S))


@settings(max_examples=40, deadline=None)
@given(precisions, st.integers(1, 20), st.integers(1, 10), st.integers(1, 7),
       st.integers(1, 7), st.integers(1, 3), st.integers(1, 3), st.integers(0, 999))
def test_deconv_round_trip(precision, K, C, R, S, sx, sy, seed):
    w = _weights((K, C, R, S), precision, seed)
    surfaces = pack_deconv_weights(w, precision, sx, sy)
    assert len(surfaces) == sx * sy
    back = unpack_deconv_weights(surfaces, K, C, R, S, precision, sx, sy)
    assert np.array_equal(_bits(back), _bits(w))


@settings(max_examples=40, deadline=None)
@given(precisions, st.integers(1, 40), st.integers(1, 40), st.integers(1, 3),
       st.integers(0, 999))
def test_winograd_round_trip(precision, K, C, stride, seed):
    size = 3 * stride - (seed % stride)                       # ceil(size / stride) == 3
    w = _weights((K, C, size, size), precision, seed)
    if precision != "fp16":
        w = w // 16                                            # keep 4 G W G^T in range
    p = winograd_pad_channels(w, precision)
    ext = winograd_extend_stride(p, stride, stride)
    assert ext.shape[1] == p.shape[1] * stride * stride
    assert np.array_equal(_bits(winograd_reduce_stride(ext, p.shape[1], size, size, stride,
                                                       stride)), _bits(p))
    t = winograd_transform(ext, precision, scale_log2=0 if precision == "fp16" else 2)
    s = pack_winograd_weights(t, precision)
    back = unpack_winograd_weights(s.data, K, ext.shape[1], precision)
    assert np.array_equal(_bits(back), _bits(t))
    if precision != "fp16":
        assert np.array_equal(winograd_inverse_transform(back, precision, 2), ext)
