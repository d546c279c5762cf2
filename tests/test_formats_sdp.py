"""Bias / PReLU / batch-norm / element-wise data (sim.formats.sdp_operands)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sim.formats import (AlignmentError, FormatError, bytes_per_atom, components_per_element,
                         elements_per_atom, pack_per_channel, pack_sdp_operand,
                         sdp_operand_precision, unpack_per_channel, unpack_sdp_operand)

from .conftest import TRACES


@pytest.mark.parametrize("proc,use,size,expected", [
    ("int16", "bias", 2, 32),          # Fig. 18: C/32Byte (2 bytes x 16 elements)
    ("int8", "bias", 1, 32),
    ("int8", "bias", 2, 64),           # Fig. 19: C/64Byte
    ("fp16", "prelu", 2, 32),          # Fig. 22
    ("int8", "prelu", 2, 64),          # Fig. 23
    ("int16", "batch_norm", 2, 64),    # Fig. 24: C/64Byte
    ("int8", "batch_norm", 2, 128),    # Fig. 25: C/128Byte
    ("int8", "batch_norm", 1, 64),
    ("int8", "eltwise", 1, 32),        # Fig. 26
    ("int8", "eltwise", 2, 64),        # Fig. 27
    ("fp16", "eltwise_both", 2, 64),
])
def test_bytes_per_atom_rule(proc, use, size, expected):
    assert bytes_per_atom(proc, use, size) == expected
    assert bytes_per_atom(proc, use, size, atom=8) == expected // 4


def test_rule_tables():
    assert elements_per_atom("int8") == 32 and elements_per_atom("int16") == 16
    assert elements_per_atom("fp16") == 16
    assert [components_per_element(u) for u in
            ("bias", "prelu", "batch_norm", "eltwise", "eltwise_both")] == [1, 1, 2, 1, 2]


def test_per_channel_bias_int8_fig18():
    bias = np.arange(40) - 20
    mem = pack_per_channel(bias, "int8", "bias", 1)
    assert mem.size == 64                                   # two 32-byte atoms
    assert np.array_equal(mem[:40].view(np.int8), bias) and not mem[40:].any()
    assert np.array_equal(unpack_per_channel(mem, 0, 40, "int8", "bias", 1)[0], bias)


def test_per_channel_bias_two_bytes_int8_fig19():
    bias = np.array([1000, -2, 3])
    mem = pack_per_channel(bias, "int8", "bias", 2)
    assert mem.size == 64
    assert list(mem[:6]) == [0xE8, 0x03, 0xFE, 0xFF, 3, 0]


def test_batch_norm_pairs_packed_together():
    alu, mul = np.array([1, 2, 3]), np.array([10, 20, 30])
    mem = pack_per_channel(np.stack([alu, mul]), "int8", "batch_norm", 1)
    assert mem.size == 64 and list(mem[:6]) == [1, 10, 2, 20, 3, 30] and not mem[6:].any()
    mem16 = pack_per_channel(np.stack([alu, mul]), "int16", "batch_norm", 2)
    assert mem16.size == 64 and list(mem16[:8]) == [1, 0, 10, 0, 2, 0, 20, 0]
    back = unpack_per_channel(mem16, 0, 3, "int16", "batch_norm", 2)
    assert np.array_equal(back, [alu, mul])


def test_per_element_layout():
    # int8 element-wise, one byte: 32 channels per 32-byte atom, W then H then surfaces
    data = np.arange(40 * 2 * 3).reshape(40, 2, 3) % 100
    mem, strides = pack_sdp_operand(data, "int8", "eltwise", 1)
    assert (strides.line_stride, strides.surface_stride) == (96, 192)
    assert list(mem[:32]) == list(data[:32, 0, 0])
    assert list(mem[32:64]) == list(data[:32, 0, 1])
    assert list(mem[192:200]) == list(data[32:, 0, 0]) and not mem[200:224].any()
    # two bytes per element with int8 processing: 64-byte atoms (Fig. 27)
    mem2, s2 = pack_sdp_operand(data, "int8", "eltwise", 2)
    assert s2.line_stride == 192 and list(mem2[:4]) == [0, 0, 6, 0]
    # both ALU and MUL operands: components of one element adjacent
    both = np.stack([data // 4, 100 + data // 4])
    mem3, s3 = pack_sdp_operand(both, "int8", "eltwise_both", 1)
    assert s3.line_stride == 3 * 64 and list(mem3[:4]) == [0, 100, 1, 101]


def test_fp16_operands():
    d = np.array([1.0, -0.0, np.nan], np.float16).reshape(3, 1, 1)
    mem, _ = pack_sdp_operand(d, "fp16", "bias", 2)
    back = unpack_sdp_operand(mem, 0, 3, 1, 1, "fp16", "bias", 2)
    assert np.array_equal(back.view(np.uint16)[0], d.view(np.uint16))
    assert not mem[6:].any()


def test_operand_precision_note():
    assert sdp_operand_precision("int16", "int8") == "int8"
    assert sdp_operand_precision("int8", "int16") == "int8"
    assert sdp_operand_precision("int16", "fp16") == "int16"
    assert sdp_operand_precision("fp16", "fp16") == "fp16"


def test_operand_errors():
    with pytest.raises(FormatError, match="fp16 operands are 2 bytes"):
        bytes_per_atom("fp16", "bias", 1)
    with pytest.raises(FormatError, match="operand use 'scale'"):
        bytes_per_atom("int8", "scale", 1)
    with pytest.raises(FormatError, match=r"must be \[2, C, H, W\]"):
        pack_sdp_operand(np.zeros((3, 1, 1), int), "int8", "batch_norm", 1)
    with pytest.raises(AlignmentError, match="bias line_stride 0x70 must be aligned to 32"):
        pack_sdp_operand(np.zeros((3, 2, 2), int), "int8", "bias", 1, line_stride=112)
    with pytest.raises(FormatError, match="int8 data out of range"):
        pack_per_channel(np.array([300]), "int8", "bias", 1)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["int8", "int16", "fp16"]),
       st.sampled_from(["bias", "prelu", "batch_norm", "eltwise", "eltwise_both"]),
       st.sampled_from([1, 2]), st.sampled_from([8, 32]), st.integers(1, 50),
       st.integers(1, 3), st.integers(1, 4), st.integers(0, 2), st.integers(0, 999))
def test_operand_round_trip(proc, use, size, atom, C, H, W, extra, seed):
    if proc == "fp16":
        size = 2
    k = components_per_element(use)
    rng = np.random.default_rng(seed)
    if proc == "fp16":
        data = rng.standard_normal((k, C, H, W)).astype(np.float16)
    else:
        lim = 1 << (8 * size - 1)
        data = rng.integers(-lim, lim, (k, C, H, W))
    bpa = bytes_per_atom(proc, use, size, atom)
    ls = -(-W * bpa // atom) * atom + extra * atom
    mem, _ = pack_sdp_operand(data, proc, use, size, atom, line_stride=ls)
    back = unpack_sdp_operand(mem, 0, C, H, W, proc, use, size, atom, line_stride=ls)
    assert np.array_equal(back, data)
    pc = pack_per_channel(data[:, :, 0, 0], proc, use, size, atom)
    assert pc.size % bpa == 0
    assert np.array_equal(unpack_per_channel(pc, 0, C, proc, use, size, atom), data[:, :, 0, 0])


def _load_dat(path, size):
    mem = np.zeros(size, np.uint8)
    for m in re.finditer(r"offset:0x([0-9a-fA-F]+), size:(\d+), payload:([^}]*)}",
                         path.read_text()):
        off, n = int(m.group(1), 16), int(m.group(2))
        mem[off:off + n] = [int(x, 16) for x in m.group(3).split()]
    return mem


@pytest.mark.parametrize("trace,dat,C,H,W,line,surface", [
    # BRDMA_CFG 0x32 / NRDMA_CFG 0x32: per element, ALU only, one byte, int8, 8-byte atoms
    ("sdp_5x24x18_bs_int8_mem_0", "sdp_5x24x18_bs_int8_mem_0_bs.dat", 18, 24, 5, 0xc0, 0x1360),
    ("sdp_3x3x33_bn_int8_mem_0", "sdp_3x3x33_bn_int8_mem_0_bn.dat", 33, 3, 3, 0x80, 0x200),
])
def test_nv_small_trace_operand_layout(trace, dat, C, H, W, line, surface):
    """Operand images of two nv_small traces (BytesPerAtom = 8 x 1 x 1 with 8-byte atoms): the
    element bytes of the layout are populated and its padding channels are zero. (The line gaps
    of the second image hold filler bytes, which the hardware never reads.)"""
    d = TRACES / "nv_small" / trace
    if not d.exists():
        pytest.skip("shared NVDLA traces not present")
    mem = _load_dat(d / dat, 1 << 15)
    assert bytes_per_atom("int8", "bias", 1, atom=8) == 8
    geometry = dict(atom=8, line_stride=line, surface_stride=surface)
    real, _ = pack_sdp_operand(np.ones((C, H, W), int), "int8", "bias", 1, **geometry)
    full, _ = pack_sdp_operand(np.ones((-(-C // 8) * 8, H, W), int), "int8", "bias", 1,
                               **geometry)
    assert real.size == full.size
    pad = (full != 0) & (real == 0)
    assert pad.sum() == (full.sum() - real.sum()) and pad.any()
    assert not mem[:full.size][pad].any()
    assert np.mean(mem[:real.size][real != 0] != 0) > 0.9
    data = unpack_sdp_operand(mem, 0, C, H, W, "int8", "bias", 1, **geometry)
    assert data.shape == (1, C, H, W)
    again, _ = pack_sdp_operand(data, "int8", "bias", 1, **geometry)
    assert np.array_equal(again[real != 0], mem[:real.size][real != 0])
