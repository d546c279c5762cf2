"""The PDP unit on the generated core: NVDLA's 12 pdp_* traces and the SDP->PDP flying trace
(sdp_pdp_32x16x32_pass_through_int8_0) of nv_small, plus invalid programs the check block
must reject (the layer completes, nothing is written), in one Verilator run under random AXI
back-pressure; every CRC must match.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.trace_run import EngineUnavailable
from tb.trace_rtl import run_rtl_batch

from .conftest import TRACES
from .test_pdp import random_layer, reference
from .test_trace import make_trace

NV_SMALL = NvdlaConfig.preset("nv_small")
DIR = TRACES / "nv_small"
PDP_TRACES = ["pdp_16x6x16_4x2_split_max_int8_0", "pdp_1x1x1_3x3_ave_int8_0",
              "pdp_1x3x8_8x8_ave_int8_0", "pdp_24x16x1_8x8_ave_int8_0",
              "pdp_28x28x8_2x2_max_int8_0", "pdp_7x9x10_3x3_int8", "pdp_8x8x32_1x1_int8_0",
              "pdp_8x8x32_1x1_int8_1", "pdp_8x8x64_2x2_ave_int8_0", "pdp_8x8x64_2x2_int8",
              "pdp_8x8x64_2x2_min_int8_0", "pdp_8x9x19_3x3_ave_int8_0",
              "sdp_pdp_32x16x32_pass_through_int8_0"]


def test_list_covers_the_public_pdp_traces():
    if not DIR.is_dir():
        pytest.skip(f"public traces not found at {DIR}")
    public = sorted(n for n in os.listdir(DIR) if n.startswith(("pdp_", "sdp_pdp_")))
    assert sorted(PDP_TRACES) == public


#: invalid offline programs (field writes on top of a valid 8x8x8 2x2 max layer)
INVALID = {
    "int16": "reg_write(NVDLA_PDP.D_DATA_FORMAT_0, 0x1);",
    "window_past_input": "reg_write(NVDLA_PDP.D_POOLING_KERNEL_CFG_0, 0x707);",
    "pad_ge_kernel": "reg_write(NVDLA_PDP.D_POOLING_PADDING_CFG_0, 0x2);",
    "method3": "reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0, 0x13);",
    "split_sum": "reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0, 0x111);\n"
                 "reg_write(NVDLA_PDP_RDMA.D_OPERATION_MODE_CFG_0, 0x1);",
}


def _invalid(tmp_path, name, extra):
    """A 2x2 max layer over an 8x8x8 cube, made invalid by ``extra``; the layer must end
    (interrupt) with the destination untouched."""
    zero = zlib.crc32(bytes(0x200)) & 0xFFFFFFFF
    text = f"""mem_init(pri_mem, 0x80000000, 0x1000, ALL_ZERO);
mem_load(pri_mem, 0x80000000, "in.dat");
reg_write(NVDLA_PDP_RDMA.D_DATA_CUBE_IN_WIDTH_0, 0x7);
reg_write(NVDLA_PDP_RDMA.D_DATA_CUBE_IN_HEIGHT_0, 0x7);
reg_write(NVDLA_PDP_RDMA.D_DATA_CUBE_IN_CHANNEL_0, 0x7);
reg_write(NVDLA_PDP_RDMA.D_FLYING_MODE_0, 0x1);
reg_write(NVDLA_PDP_RDMA.D_SRC_BASE_ADDR_LOW_0, 0x80000000);
reg_write(NVDLA_PDP_RDMA.D_SRC_LINE_STRIDE_0, 0x40);
reg_write(NVDLA_PDP_RDMA.D_SRC_SURFACE_STRIDE_0, 0x200);
reg_write(NVDLA_PDP_RDMA.D_SRC_RAM_CFG_0, 0x1);
reg_write(NVDLA_PDP.D_DATA_CUBE_IN_WIDTH_0, 0x7);
reg_write(NVDLA_PDP.D_DATA_CUBE_IN_HEIGHT_0, 0x7);
reg_write(NVDLA_PDP.D_DATA_CUBE_IN_CHANNEL_0, 0x7);
reg_write(NVDLA_PDP.D_DATA_CUBE_OUT_WIDTH_0, 0x3);
reg_write(NVDLA_PDP.D_DATA_CUBE_OUT_HEIGHT_0, 0x3);
reg_write(NVDLA_PDP.D_DATA_CUBE_OUT_CHANNEL_0, 0x7);
reg_write(NVDLA_PDP.D_OPERATION_MODE_CFG_0, 0x11);
reg_write(NVDLA_PDP.D_POOLING_KERNEL_CFG_0, 0x110101);
reg_write(NVDLA_PDP.D_DST_BASE_ADDR_LOW_0, 0x80000800);
reg_write(NVDLA_PDP.D_DST_LINE_STRIDE_0, 0x20);
reg_write(NVDLA_PDP.D_DST_SURFACE_STRIDE_0, 0x80);
reg_write(NVDLA_PDP.D_DST_RAM_CFG_0, 0x1);
{extra}
reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_PDP_RDMA.D_OP_ENABLE_0, 0x1);
intr_notify(PDP_0, sync_id_0);
check_crc(sync_id_0, pri_mem, 0x80000800, 0x200, {zero:#x});
"""
    ones = " ".join(["0x01"] * 0x200)
    return make_trace(tmp_path, text, f"pdp_invalid_{name}",
                      {"in.dat": f"{{offset:0x0, size:512, payload:{ones}}}\n"})


def _dat(data: bytes) -> str:
    return f"{{offset:0x0, size:{len(data)}, payload:{' '.join(f'0x{b:02x}' for b in data)}}}\n"


def random_trace(tmp_path, seed):
    """A random offline int8 PDP layer (split width in some) as a trace whose
    CRC comes from the naive reference of tests/test_pdp.py."""
    rng = np.random.default_rng(seed)
    L, jobs = random_layer(rng, max_w=20, max_h=9)
    job = jobs[0]
    W, H, S = job["W"], L["H"], int(rng.integers(1, 4))
    C = int(rng.integers((S - 1) * 8 + 1, S * 8 + 1))
    kw, sw, pl = L["kw"], L["sw"], job["pl"]
    wout, hout = job["wout"], L["hout"]
    x = rng.integers(-128, 128, size=(S, H, W, 8))
    y = reference(x, L, job)
    in_ls = 8 * (W + int(rng.integers(0, 3)))
    in_ss = in_ls * H + 8 * int(rng.integers(0, 3))
    out_ls = 8 * (wout + int(rng.integers(0, 3)))
    out_ss = out_ls * hout + 8 * int(rng.integers(0, 3))
    src = bytearray(in_ss * S)
    for si in range(S):
        for hh in range(H):
            for ww in range(W):
                a = si * in_ss + hh * in_ls + 8 * ww
                src[a:a + 8] = bytes(int(v) & 0xFF for v in x[si, hh, ww])
    dst = bytearray(out_ss * S)
    for si in range(S):
        for oh in range(hout):
            for ow in range(wout):
                a = si * out_ss + oh * out_ls + 8 * ow
                dst[a:a + 8] = bytes(int(v) & 0xFF for v in y[si, oh, ow])
    # split width: parts of whole output windows
    split, pin, pout = 0, 0, 0
    if wout >= 3 and rng.random() < 0.6:
        n = int(rng.integers(2, min(4, wout) + 1))
        mid_out = int(rng.integers(1, max(1, (wout - 2) // max(n - 2, 1)) + 1)) if n > 2 else 1
        f_out = int(rng.integers(1, wout - (n - 2) * mid_out))
        l_out = wout - f_out - (n - 2) * mid_out
        first = f_out * sw - pl + kw - sw
        mid = mid_out * sw
        l_in = W - first - (n - 2) * mid
        # only part 0 may have left padding: part 1 starts at a real column
        if l_out >= 1 and 1 <= first and f_out * sw >= pl and l_in >= 1 and \
                l_in + kw - sw >= 1 and \
                max(first, mid, l_in) <= 1024:
            split = n - 1
            pin = (first - 1) | ((l_in - 1) << 10) | ((mid - 1) << 20)
            pout = (f_out - 1) | ((l_out - 1) << 10) | ((mid_out - 1) << 20)
    pads = L["pads"]
    regs = {
        "PDP_RDMA": {"D_DATA_CUBE_IN_WIDTH": W - 1, "D_DATA_CUBE_IN_HEIGHT": H - 1,
                     "D_DATA_CUBE_IN_CHANNEL": C - 1, "D_FLYING_MODE": 1,
                     "D_SRC_BASE_ADDR_LOW": 0x80000000, "D_SRC_LINE_STRIDE": in_ls,
                     "D_SRC_SURFACE_STRIDE": in_ss, "D_SRC_RAM_CFG": 1,
                     "D_OPERATION_MODE_CFG": split, "D_PARTIAL_WIDTH_IN": pin,
                     "D_POOLING_KERNEL_CFG": (kw - 1) | ((sw - 1) << 4)},
        "PDP": {"D_DATA_CUBE_IN_WIDTH": W - 1, "D_DATA_CUBE_IN_HEIGHT": H - 1,
                "D_DATA_CUBE_IN_CHANNEL": C - 1, "D_DATA_CUBE_OUT_WIDTH": wout - 1,
                "D_DATA_CUBE_OUT_HEIGHT": hout - 1, "D_DATA_CUBE_OUT_CHANNEL": C - 1,
                "D_OPERATION_MODE_CFG": L["method"] | 0x10 | (split << 8),
                "D_PARTIAL_WIDTH_IN": pin, "D_PARTIAL_WIDTH_OUT": pout,
                "D_POOLING_KERNEL_CFG": (kw - 1) | ((L["kh"] - 1) << 8) | ((sw - 1) << 16)
                | ((L["sh"] - 1) << 20),
                "D_RECIP_KERNEL_WIDTH": L["rkw"], "D_RECIP_KERNEL_HEIGHT": L["rkh"],
                "D_POOLING_PADDING_CFG": pl | (L["pt"] << 4) | (job["pr"] << 8)
                | (L["pb"] << 12),
                **{f"D_POOLING_PADDING_VALUE_{i + 1}_CFG": pads[i] for i in range(7)},
                "D_SRC_BASE_ADDR_LOW": 0x80000000, "D_SRC_LINE_STRIDE": in_ls,
                "D_SRC_SURFACE_STRIDE": in_ss, "D_DST_BASE_ADDR_LOW": 0x80100000,
                "D_DST_LINE_STRIDE": out_ls, "D_DST_SURFACE_STRIDE": out_ss,
                "D_DST_RAM_CFG": 1},
    }
    lines = [f"mem_init(pri_mem, 0x80000000, {len(src):#x}, ALL_ZERO);",
             'mem_load(pri_mem, 0x80000000, "in.dat");',
             f"mem_init(pri_mem, 0x80100000, {len(dst):#x}, ALL_ZERO);"]
    for block, fields in regs.items():
        lines += [f"reg_write(NVDLA_{block}.{r}_0, {v:#x});" for r, v in fields.items()]
    lines += ["reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);",
              "reg_write(NVDLA_PDP_RDMA.D_OP_ENABLE_0, 0x1);",
              "intr_notify(PDP_0, sync_id_0);",
              f"check_crc(sync_id_0, pri_mem, 0x80100000, {len(dst):#x}, "
              f"{zlib.crc32(bytes(dst)) & 0xFFFFFFFF:#x});"]
    return make_trace(tmp_path, "\n".join(lines) + "\n", f"pdp_random_{seed}",
                      {"in.dat": _dat(bytes(src))})


N_RANDOM = 32


@pytest.mark.rtl
def test_public_pdp_traces_rtl(tmp_path):
    """The 13 public traces pass; the invalid programs finish without writing; random layers
    (8 of the 32 with split width) match the naive reference."""
    if not DIR.is_dir():
        pytest.skip(f"public traces not found at {DIR}")
    extra = [str(_invalid(tmp_path, n, e)) for n, e in INVALID.items()]
    extra += [str(random_trace(tmp_path, seed)) for seed in range(N_RANDOM)]
    try:
        results = run_rtl_batch([str(DIR / n) for n in PDP_TRACES] + extra, NV_SMALL,
                                sim="verilator", max_cycles=300_000, busy=0.3,
                                latency=(1, 24))
    except EngineUnavailable as e:
        pytest.skip(str(e))
    assert len(results) == len(PDP_TRACES) + len(extra)
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)}/{len(results)} PDP traces fail:\n" + "\n".join(bad)
