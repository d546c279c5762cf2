"""The fp16 PDP golden model against NVDLA's own Verilog (nvdla/hw, branch ``nvdlav1``).

Needs a git directory of nvdla/hw in ``NVDLA_HW_GIT`` (e.g. the search tool's mirror) and Icarus
Verilog; skipped otherwise. Nothing of NVDLA's is kept in this repository: the sources are read
with ``git show`` into a temporary directory, next to our testbenches and two stubs (a
behavioural 64x116 line-buffer RAM, the clock gate bypassed).

* ``NV_NVDLA_PDP_core`` (preprocessor, 1D and 2D pooling, NVDLA's HLS fp16/fp17 units) runs
  flying fp16 layers fed as SDP would (one 32-byte atom per transfer, surface -> line ->
  column); its 8-byte output beats are compared with :func:`sim.pdp.pool_fp16`.
* ``NV_NVDLA_PDP_nan`` (the input NaN / Inf counters) runs a sequence of offline and flying
  layers; its reported counts are compared with :class:`sim.pdp.NanCounters` fed with
  :func:`sim.pdp.pdp.nan_counts`' rule (every beat but the layer's last);
  ``NV_NVDLA_PDP_WDMA_dat``'s NaN output counter likewise (with and without split width).

    NVDLA_HW_GIT=<nvdla/hw git dir> python -m pytest -m slow tests/test_pdp_fp16_nvdla_rtl.py

Known gap (not a bench problem): when the padding runs past the last window, i.e.
``(in + pad_a + pad_b - kernel) % stride != 0`` with ``pad_b`` (PAD_RIGHT / PAD_BOTTOM) > 0,
NVDLA's core sometimes emits a different number of windows than ``CUBE_OUT_*`` (an extra
window of stale values, or fewer), in int8 and int16 as in fp16 (e.g. kernel 5x5, stride 2x2,
pads 1/4/2/4 on 4x6: 5 output lines for 4; kernel 3x5, stride 2x3, pads 1/2/4/1 on 3x4; kernel
5x8, stride 4x1, pads 4/4/7/0 on 6x3). In a random sweep of 120 such 1D geometries no failure
had ``(in + pad_a + pad_b - kernel) % stride == 0 or pad_b == 0`` (NVDLA's 13 public PDP traces
all satisfy it), but many with neither also ran right. A sharper candidate that fit all 150
sampled geometries (0 wrong accepts, 15 needless rejects): ``rem == 0 or pad_b < stride``, and
the windows NVDLA's cal2d starts in the leading padding (``pad_a`` for stride 1, ``pad_a // 2``
for 2, ``pad_a // 3`` for 3, ``pad_a > stride`` for 4 and up) plus the first one must all
exist (``out >= that + 1``). Not yet a rule of :mod:`sim.pdp.program`; such geometries are left
out here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sim.nvfloat import fp16_is_inf, fp16_is_nan, fp17_from_float
from sim.pdp import AVERAGE, MAX, MIN, NanCounters, pool, pool_fp16, random_programs as rp
from sim.pdp.program import out_size

GIT = os.environ.get("NVDLA_HW_GIT")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GIT or not shutil.which("iverilog"),
                                 reason="needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")]

_SOURCES = ["vmod/nvdla/pdp/NV_NVDLA_PDP_core.v", "vmod/nvdla/pdp/NV_NVDLA_PDP_CORE_preproc.v",
            "vmod/nvdla/pdp/NV_NVDLA_PDP_CORE_cal1d.v", "vmod/nvdla/pdp/NV_NVDLA_PDP_CORE_unit1d.v",
            "vmod/nvdla/pdp/NV_NVDLA_PDP_CORE_cal2d.v", "vmod/nvdla/pdp/fp16_4add.v",
            "vmod/nvdla/pdp/cal1d_fp16_pool_sum.v", "vmod/vlibs/HLS_fp16_to_fp17.v",
            "vmod/vlibs/HLS_fp17_add.v", "vmod/vlibs/HLS_fp17_mul.v",
            "vmod/vlibs/HLS_fp17_to_fp16.v", "vmod/vlibs/NV_BLKBOX_SINK.v",
            "vmod/vlibs/NV_BLKBOX_SRC0.v", "vmod/vlibs/NV_CLK_gate_power.v",
            "vmod/include/simulate_x_tick.vh", "vmod/nvdla/pdp/NV_NVDLA_PDP_nan.v",
            "vmod/nvdla/pdp/NV_NVDLA_PDP_WDMA_dat.v"]

_RAM = """module nv_ram_rws_64x116 (clk, ra, re, dout, wa, we, di, pwrbus_ram_pd);
input clk; input [5:0] ra; input re; output reg [115:0] dout; input [5:0] wa; input we;
input [115:0] di; input [31:0] pwrbus_ram_pd;
reg [115:0] mem [0:63];
always @(posedge clk) begin if (re) dout <= mem[ra]; if (we) mem[wa] <= di; end
endmodule
"""

_CORE_TB = """`timescale 1ns/1ps
module tb;
reg clk = 0, rstn = 0;
always #5 clk = ~clk;
reg [31:0] cfg [0:63];
reg [255:0] din [0:4095];
integer nin, nout, i, j, f, cyc;
reg op_en = 0;
reg [255:0] sdp_pd; reg sdp_vld = 0; wire sdp_rdy;
wire [63:0] out_pd; wire out_vld;
NV_NVDLA_PDP_core dut (
 .nvdla_core_clk(clk), .nvdla_core_rstn(rstn), .datin_src_cfg(1'b0), .dp2reg_done(1'b0),
 .nvdla_op_gated_clk_fp16(clk), .padding_h_cfg(cfg[0][2:0]), .padding_v_cfg(cfg[1][2:0]),
 .pdp_dp2wdma_ready(1'b1), .pdp_rdma2dp_pd(76'd0), .pdp_rdma2dp_valid(1'b0),
 .pooling_channel_cfg(cfg[2][12:0]), .pooling_fwidth_cfg(10'd0), .pooling_lwidth_cfg(10'd0),
 .pooling_mwidth_cfg(10'd0), .pooling_out_fwidth_cfg(10'd0), .pooling_out_lwidth_cfg(10'd0),
 .pooling_out_mwidth_cfg(10'd0), .pooling_size_h_cfg(cfg[3][2:0]),
 .pooling_size_v_cfg(cfg[4][2:0]), .pooling_splitw_num_cfg(8'd0),
 .pooling_stride_h_cfg(cfg[5][3:0]), .pooling_stride_v_cfg(cfg[6][3:0]),
 .pooling_type_cfg(cfg[7][1:0]), .pwrbus_ram_pd(32'd0), .reg2dp_cube_in_channel(cfg[2][12:4]),
 .reg2dp_cube_in_height(cfg[8][12:0]), .reg2dp_cube_in_width(cfg[9][12:0]),
 .reg2dp_cube_out_width(cfg[10][12:0]), .reg2dp_flying_mode(1'b0),
 .reg2dp_input_data(cfg[24][1:0]), .reg2dp_kernel_height(cfg[4][2:0]),
 .reg2dp_kernel_stride_width(cfg[5][3:0]), .reg2dp_kernel_width(cfg[3][2:0]),
 .reg2dp_op_en(op_en), .reg2dp_pad_bottom_cfg(cfg[11][2:0]), .reg2dp_pad_left(cfg[0][2:0]),
 .reg2dp_pad_right(cfg[12][2:0]), .reg2dp_pad_right_cfg(cfg[12][2:0]),
 .reg2dp_pad_top(cfg[1][2:0]), .reg2dp_pad_value_1x_cfg(cfg[13][18:0]),
 .reg2dp_pad_value_2x_cfg(cfg[14][18:0]), .reg2dp_pad_value_3x_cfg(cfg[15][18:0]),
 .reg2dp_pad_value_4x_cfg(cfg[16][18:0]), .reg2dp_pad_value_5x_cfg(cfg[17][18:0]),
 .reg2dp_pad_value_6x_cfg(cfg[18][18:0]), .reg2dp_pad_value_7x_cfg(cfg[19][18:0]),
 .reg2dp_partial_width_out_first(10'd0), .reg2dp_partial_width_out_last(10'd0),
 .reg2dp_partial_width_out_mid(10'd0), .reg2dp_recip_height_cfg(cfg[20][16:0]),
 .reg2dp_recip_width_cfg(cfg[21][16:0]), .sdp2pdp_pd(sdp_pd), .sdp2pdp_valid(sdp_vld),
 .pdp_dp2wdma_pd(out_pd), .pdp_dp2wdma_valid(out_vld), .pdp_rdma2dp_ready(),
 .sdp2pdp_ready(sdp_rdy));
initial begin
  $readmemh("cfg.hex", cfg);
  $readmemh("din.hex", din);
  nin = cfg[22]; nout = cfg[23];
  f = $fopen("dout.hex", "w");
  i = 0; j = 0; cyc = 0;
  #33 rstn = 1;
  repeat (5) @(posedge clk);
  @(negedge clk) op_en = 1;
  while (j < nout && cyc < 20000) begin @(posedge clk); cyc = cyc + 1; end
  if (j < nout) $display("TIMEOUT %0d of %0d", j, nout);
  $fclose(f);
  $finish;
end
always @(posedge clk) if (op_en) begin
  if (out_vld && j < nout) begin $fwrite(f, "%h\\n", out_pd); j = j + 1; end
  if (sdp_vld && sdp_rdy) i = i + 1;
  #1;
  sdp_vld = i < nin;
  sdp_pd = din[i];
end
endmodule
"""

_NAN_TB = """`timescale 1ns/1ps
module tbn;
reg clk = 0, rstn = 0; always #5 clk = ~clk;
reg [75:0] pd; reg vld = 0; wire rdy; reg op_en = 0, fly = 0, done = 0;
wire [31:0] nan_num, inf_num; wire [75:0] out_pd; wire out_vld;
reg [63:0] beats [0:1023]; reg [31:0] layers [0:63];
integer L, nl, k, nb, base, f;
NV_NVDLA_PDP_nan dut(.nvdla_core_clk(clk), .nvdla_core_rstn(rstn), .dp2reg_done(done),
  .nan_preproc_prdy(1'b1), .pdp_rdma2dp_pd(pd), .pdp_rdma2dp_valid(vld),
  .reg2dp_flying_mode(~fly), .reg2dp_input_data(2'd2), .reg2dp_nan_to_zero(1'b0),
  .reg2dp_op_en(op_en), .dp2reg_inf_input_num(inf_num), .dp2reg_nan_input_num(nan_num),
  .nan_preproc_pd(out_pd), .nan_preproc_pvld(out_vld), .pdp_rdma2dp_ready(rdy));
initial begin
  $readmemh("nan_beats.hex", beats); $readmemh("nan_layers.hex", layers);
  f = $fopen("nan_out.txt", "w");
  nl = layers[0]; base = 0;
  #33 rstn = 1; repeat (3) @(posedge clk);
  for (L = 0; L < nl; L = L + 1) begin
    @(negedge clk); fly = layers[1 + 2 * L] != 0; nb = layers[2 + 2 * L]; op_en = 1;
    @(negedge clk);
    for (k = 0; k < nb; k = k + 1) begin
      pd = {(k == nb - 1), 3'd0, (k == nb - 1), 7'd0, beats[base + k]}; vld = 1;
      @(posedge clk); while (!rdy) @(posedge clk);
      @(negedge clk); vld = 0;
    end
    base = base + nb;
    repeat (5) @(negedge clk);
    done = 1; @(negedge clk); done = 0; op_en = 0;
    repeat (3) @(negedge clk);
    $fwrite(f, "%0d %0d\\n", nan_num, inf_num);
  end
  $fclose(f); $finish;
end
endmodule
"""

_WDMA_TB = """`timescale 1ns/1ps
module tbw;
reg clk = 0, rstn = 0; always #5 clk = ~clk;
reg [63:0] beats [0:4095]; reg [31:0] cfg [0:15];
reg [63:0] pd; reg vld = 0; wire rdy; reg op_load = 0, done = 0;
integer k, n, f;
NV_NVDLA_PDP_WDMA_dat dut(.nvdla_core_clk(clk), .nvdla_core_rstn(rstn),
 .dat0_fifo0_rd_prdy(1'b1), .dat0_fifo1_rd_prdy(1'b1), .dat0_fifo2_rd_prdy(1'b1),
 .dat0_fifo3_rd_prdy(1'b1), .dat1_fifo0_rd_prdy(1'b1), .dat1_fifo1_rd_prdy(1'b1),
 .dat1_fifo2_rd_prdy(1'b1), .dat1_fifo3_rd_prdy(1'b1), .dp2wdma_pd(pd), .dp2wdma_vld(vld),
 .op_load(op_load), .pwrbus_ram_pd(32'd0), .reg2dp_cube_out_channel(cfg[0][12:0]),
 .reg2dp_cube_out_height(cfg[1][12:0]), .reg2dp_cube_out_width(cfg[2][12:0]),
 .reg2dp_input_data(2'd2), .reg2dp_partial_width_out_first(cfg[3][9:0]),
 .reg2dp_partial_width_out_last(cfg[4][9:0]), .reg2dp_partial_width_out_mid(cfg[5][9:0]),
 .reg2dp_split_num(cfg[6][7:0]), .wdma_done(done), .dp2wdma_rdy(rdy));
initial begin
  $readmemh("wd_beats.hex", beats); $readmemh("wd_cfg.hex", cfg); n = cfg[7];
  f = $fopen("wd_out.txt", "w");
  #33 rstn = 1; repeat (3) @(negedge clk);
  op_load = 1; @(negedge clk); op_load = 0;
  for (k = 0; k < n; k = k + 1) begin
    pd = beats[k]; vld = 1; @(posedge clk); while (!rdy) @(posedge clk); @(negedge clk); vld = 0;
  end
  repeat (5) @(negedge clk); done = 1; @(negedge clk); done = 0; repeat (2) @(negedge clk);
  $fwrite(f, "%0d\\n", dut.nan_output_num); $fclose(f); $finish;
end
endmodule
"""

_FLAGS = ["-g2012", "-I.", "-DVLIB_BYPASS_POWER_CG", "-DVERILINT", "-DSYNTHESIS"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    d = tmp_path_factory.mktemp("nvdla_pdp")
    for src in _SOURCES:
        text = subprocess.run(["git", "-C", GIT, "show", f"nvdlav1:{src}"], check=True,
                              capture_output=True).stdout
        (d / Path(src).name).write_bytes(text)
    (d / "ram_stub.v").write_text(_RAM)
    (d / "tb_core.v").write_text(_CORE_TB)
    (d / "tb_nan.v").write_text(_NAN_TB)
    (d / "tb_wd.v").write_text(_WDMA_TB)
    core = ["tb_core.v", "ram_stub.v", "NV_BLKBOX_SINK.v", "NV_BLKBOX_SRC0.v",
            "NV_CLK_gate_power.v"] + [Path(s).name for s in _SOURCES[:11]]
    subprocess.run(["iverilog", *_FLAGS, "-o", "core_sim", "-s", "tb", *core], cwd=d,
                   check=True, capture_output=True)
    subprocess.run(["iverilog", *_FLAGS, "-o", "nan_sim", "-s", "tbn", "tb_nan.v",
                    "NV_NVDLA_PDP_nan.v"], cwd=d, check=True, capture_output=True)
    subprocess.run(["iverilog", *_FLAGS, "-o", "wd_sim", "-s", "tbw", "tb_wd.v",
                    "NV_NVDLA_PDP_WDMA_dat.v", "NV_BLKBOX_SINK.v", "NV_BLKBOX_SRC0.v",
                    "NV_CLK_gate_power.v"], cwd=d, check=True, capture_output=True)
    return d


def _run_core(d, x, method, kernel, stride, pad, pv, recip, prec=2):
    C, H, W = x.shape
    kw, kh = kernel
    sw, sh = stride
    pl, pr, pt, pb = pad
    ow, oh = out_size(W, pl, pr, kw, sw), out_size(H, pt, pb, kh, sh)
    S = -(-C // 16)
    xc = np.zeros((S * 16, H, W), np.int64)
    xc[:C] = x
    cfg = [pl, pt, C - 1, kw - 1, kh - 1, sw - 1, sh - 1, method, H - 1, W - 1, ow - 1, pb, pr,
           *[v & 0x7FFFF for v in pv], recip[1], recip[0], S * H * W, S * oh * ow * 4, prec]
    (d / "cfg.hex").write_text("\n".join("%x" % v for v in cfg) + "\n")
    (d / "din.hex").write_text("\n".join(
        "%064x" % sum((int(xc[s * 16 + i, h, w]) & 0xFFFF) << (16 * i) for i in range(16))
        for s in range(S) for h in range(H) for w in range(W)) + "\n")
    r = subprocess.run(["vvp", "-n", "core_sim"], cwd=d, capture_output=True, text=True)
    assert "TIMEOUT" not in r.stdout, r.stdout
    beats = [int(v, 16) for v in (d / "dout.hex").read_text().split()]
    got = np.array(beats, dtype=object).reshape(S, oh, ow, 4)
    out = np.zeros((S * 16, oh, ow), np.int64)
    for e in range(16):
        out[e::16] = np.vectorize(lambda b: (b >> (16 * (e % 4))) & 0xFFFF)(
            got[:, :, :, e // 4]).astype(np.int64)
    if prec == 1:                                    # int16: signed elements
        out = np.where(out >= 1 << 15, out - (1 << 16), out)
        return out, pool(xc, method, kernel, stride, pad, (ow, oh), pv, recip, 16)
    return out, pool_fp16(xc, method, kernel, stride, pad, (ow, oh), pv, recip)


#: (method, kernel, stride, pad (l, r, t, b), (W, H, C)) -- geometries that line up
GEOMETRIES = [
    (MIN, (4, 3), (4, 2), (1, 2, 1, 0), (1, 7, 25)),
    (AVERAGE, (2, 2), (2, 1), (0, 1, 1, 1), (7, 3, 28)),
    (MAX, (7, 6), (3, 3), (6, 5, 0, 1), (5, 6, 10)),
    (AVERAGE, (3, 6), (4, 3), (0, 1, 5, 5), (9, 3, 14)),
    (MIN, (8, 5), (3, 3), (5, 7, 3, 1), (9, 5, 20)),
    (AVERAGE, (6, 6), (2, 2), (2, 1, 3, 0), (4, 6, 19)),
    (AVERAGE, (1, 8), (1, 1), (0, 0, 7, 7), (6, 6, 5)),
    (MAX, (7, 6), (3, 1), (5, 1, 4, 1), (8, 3, 28)),
    (MIN, (3, 7), (2, 1), (1, 1, 6, 6), (5, 7, 22)),
    (AVERAGE, (4, 3), (4, 2), (3, 2, 0, 0), (4, 3, 24)),
]


@pytest.mark.parametrize("case", range(len(GEOMETRIES)))
def test_pdp_core_fp16_matches_nvdla_rtl(bench, case):
    method, kernel, stride, pad, (W, H, C) = GEOMETRIES[case]
    rng = np.random.default_rng(100 + case)
    x = rp._fp16_data(rng, (C, H, W))
    if case % 2:
        pv = tuple(int(fp17_from_float(n * float(rng.normal(0, 2)))) for n in range(1, 8))
        recip = (int(fp17_from_float(1 / kernel[0])), int(fp17_from_float(1 / kernel[1])))
    else:                                        # any 19-bit pad fields and 17-bit reciprocals
        pv = tuple(int(v) for v in rng.integers(0, 1 << 19, 7))
        recip = tuple(int(v) for v in rng.integers(0, 1 << 17, 2))
    got, want = _run_core(bench, x, method, kernel, stride, pad, pv, recip)
    assert np.array_equal(got, want), np.argwhere(got != want)[:8]



#: int16 average with any 19-bit pad fields and 17-bit reciprocals (kernel 6x4, stride 3x2,
#: pads 3/1/2/2 on 11x6 found the 22-bit row sum of NVDLA's cal1d)
INT16_GEOMETRIES = GEOMETRIES + [(AVERAGE, (6, 4), (3, 2), (3, 1, 2, 2), (11, 6, 20))]


@pytest.mark.parametrize("case", range(len(INT16_GEOMETRIES)))
def test_pdp_core_int16_average_matches_nvdla_rtl(bench, case):
    _, kernel, stride, pad, (W, H, C) = INT16_GEOMETRIES[case]
    rng = np.random.default_rng(300 + case)
    x = rng.integers(-(1 << 15), 1 << 15, (C, H, W))
    pv = tuple(int(v) for v in rng.integers(0, 1 << 19, 7))
    recip = tuple(int(v) for v in rng.integers(0, 1 << 17, 2))
    got, want = _run_core(bench, x, AVERAGE, kernel, stride, pad, pv, recip, prec=1)
    assert np.array_equal(got, want), np.argwhere(got != want)[:8]


def test_nan_counters_match_nvdla_rtl(bench):
    rng = np.random.default_rng(5)
    kinds = [0, 1, 0, 0, 1, 1, 0, 0, 1, 0]                  # 1: flying
    beats, layers, want = [], [len(kinds)], []
    slots = NanCounters()
    for fly in kinds:
        nb = 0 if fly else int(rng.integers(1, 12))
        el = rng.choice(np.array([0x3C00, 0x7C00, 0xFC00, 0x7E01, 0xFD00, 0x0000]), (nb, 4),
                        p=[.5, .1, .1, .1, .1, .1])
        beats += ["%016x" % sum(int(v) << (16 * i) for i, v in enumerate(b)) for b in el]
        layers += [fly, nb]
        body = el[:-1]                                      # the last beat is never counted
        want.append(slots.layer((int(fp16_is_nan(body).sum()), int(fp16_is_inf(body).sum())),
                                bool(fly)))
    (bench / "nan_beats.hex").write_text("\n".join(beats) + "\n")
    (bench / "nan_layers.hex").write_text("\n".join("%x" % v for v in layers) + "\n")
    subprocess.run(["vvp", "-n", "nan_sim"], cwd=bench, check=True, capture_output=True)
    got = [tuple(int(v) for v in line.split())
           for line in (bench / "nan_out.txt").read_text().splitlines()]
    assert got == want


def test_output_nan_counter_matches_nvdla_rtl(bench):
    """``NV_NVDLA_PDP_WDMA_dat``'s NaN output counter: every output beat but the layer's last,
    with and without split width."""
    rng = np.random.default_rng(1)
    for t in range(6):
        S, oh = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        if t % 2:                                            # 3 passes of 2, 1, 2 columns
            ow, cfg_split = 5, [2 - 1, 2 - 1, 1 - 1, 2]
        else:
            ow, cfg_split = int(rng.integers(1, 5)), [0, 0, 0, 0]
        n = S * oh * ow * 4
        el = rng.choice(np.array([0x3C00, 0x7E01, 0xFC00]), (n, 4), p=[.6, .3, .1])
        cfg = [S * 16 - 1, oh - 1, ow - 1, *cfg_split, n]
        (bench / "wd_cfg.hex").write_text("\n".join("%x" % v for v in cfg) + "\n")
        (bench / "wd_beats.hex").write_text("\n".join(
            "%016x" % sum(int(v) << (16 * i) for i, v in enumerate(b)) for b in el) + "\n")
        subprocess.run(["vvp", "-n", "wd_sim"], cwd=bench, check=True, capture_output=True)
        assert int((bench / "wd_out.txt").read_text()) == int(fp16_is_nan(el[:-1]).sum())
