"""The fp16 SDP datapath of the golden model against NVDLA's own Verilog (nvdla/hw,
branch ``nvdlav1``).

Needs a git directory of nvdla/hw in ``NVDLA_HW_GIT`` (e.g. the search tool's mirror) and Icarus
Verilog; skipped otherwise. Nothing of NVDLA's is kept in this repository: the sources are read
with ``git show`` into a temporary directory next to a generated testbench.

NVDLA's SDP datapath stages are HLS-generated modules with valid/ready channels; each runs
standalone in fp16 mode (``cfg_precision`` = 2) on random fp32 data (with zeros, infinities,
NaNs, denormals, the largest finite values mixed in) and random fp16 / fp32 operands, for many
register configurations, and its outputs are compared bit for bit with the golden model's
stage functions:

* ``NV_NVDLA_SDP_CORE_x`` (one BS / BN stage: ALU, MUL, PReLU, ReLU, NaN-to-zero on the
  operands, register or per-element operands) with :func:`sim.sdp.sdp.x_stage_fp16`;
* ``NV_NVDLA_SDP_CORE_Y_cvt`` (the EW operand converter) with
  :func:`sim.sdp.sdp.y_operand_fp16`;
* ``NV_NVDLA_SDP_CORE_Y_core`` (EW MUL then ALU, EQL included) with
  :func:`sim.sdp.sdp.y_stage_fp16`;
* ``NV_NVDLA_SDP_CORE_c`` (the output converter, fp32 -> fp16; equal mode) with
  :func:`sim.nvfloat.fp32_to_fp16`;
* ``NV_NVDLA_SDP_CORE_Y_idx`` (the LUT's index generation and table choice: exponent and
  linear LE, linear LO, any index offset / select, start values and priorities) with
  :func:`sim.sdp.sdp.lut_select_fp16`;
* ``NV_NVDLA_SDP_CORE_Y_inp`` (interpolation of hits, extrapolation of under- / overflows,
  on random packed inputs) with :func:`sim.sdp.sdp.lut_interp_fp16`.

The glue between the last two (``NV_NVDLA_SDP_CORE_Y_lut``: the RAM read of ``y0`` / ``y1``,
the per-flow offset, fp16 slope scale and the fp32 bias ``2^LE_INDEX_OFFSET``) was read, not
simulated; :func:`sim.sdp.sdp.lut_lookup_fp16` follows it.

    NVDLA_HW_GIT=<nvdla/hw git dir> python -m pytest -m slow tests/test_sdp_fp16_nvdla_rtl.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from sim.nvfloat import FP32_MAX, fp16_from_float, fp32_from_float, fp32_to_fp16
from sim.sdp.sdp import (ALU_EQL, ALU_MAX, ALU_MIN, ALU_SUM, XStage, YStage, x_stage_fp16,
                         y_operand_fp16, y_stage_fp16)

GIT = os.environ.get("NVDLA_HW_GIT")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GIT or not shutil.which("iverilog"),
                                 reason="needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")]


# -----------------------------------------------------------------------------------------
# a generic bench for NVDLA's HLS channel modules
# -----------------------------------------------------------------------------------------
class HlsBench:
    """One NVDLA HLS module compiled once; :meth:`run` streams beats through it.

    ``inputs`` {channel: width} are the module's ``<channel>_rsc_z/vz/lz`` input channels,
    ``output`` (channel, width) its output channel, ``cfg`` {port: width} its static inputs.
    Every input channel always offers its next beat (so a channel the configuration does not
    read is simply left alone); the output is always ready."""

    def __init__(self, module, path, inputs, output, cfg):
        self.dir = Path(tempfile.mkdtemp(prefix=f"nvdla_{module}_"))
        src = subprocess.run(["git", "-C", GIT, "show", f"nvdlav1:{path}"], check=True,
                             capture_output=True, text=True).stdout
        (self.dir / "dut.v").write_text(src)
        self.inputs, self.output, self.cfg = inputs, output, cfg
        lines = ["`timescale 1ns/1ps", "module tb;", "reg clk = 0, rstn = 0;",
                 "always #5 clk = ~clk;", "integer nout = 0, cyc = 0, f, nbeats;"]
        ports = [".nvdla_core_clk(clk)", ".nvdla_core_rstn(rstn)"]
        for name, w in inputs.items():
            lines += [f"reg [{w - 1}:0] m_{name} [0:65535];", f"integer i_{name} = 0;",
                      f"wire lz_{name};"]
            ports += [f".{name}_rsc_z(m_{name}[i_{name}])",
                      f".{name}_rsc_vz(rstn && i_{name} < nbeats)", f".{name}_rsc_lz(lz_{name})"]
        for name, w in cfg.items():
            lines += [f"reg [{w - 1}:0] c_{name} = 0;"]
            ports += [f".{name}(c_{name})"]
        oname, ow = output
        lines += [f"wire [{ow - 1}:0] oz;", "wire olz;"]
        ports += [f".{oname}_rsc_z(oz)", f".{oname}_rsc_vz(1'b1)", f".{oname}_rsc_lz(olz)"]
        lines += [f"{module} dut (" + ", ".join(ports) + ");", "initial begin",
                  '  if (!$value$plusargs("n=%d", nbeats)) nbeats = 0;']
        for name in inputs:
            lines += [f'  $readmemh("{name}.hex", m_{name});']
        for name in cfg:
            lines += [f'  if (!$value$plusargs("{name}=%h", c_{name})) c_{name} = 0;']
        lines += ['  f = $fopen("out.hex", "w");', "  #23 rstn = 1;", "end",
                  "always @(posedge clk) if (rstn) begin", "  cyc <= cyc + 1;"]
        for name in inputs:
            lines += [f"  if (lz_{name} && i_{name} < nbeats) i_{name} <= i_{name} + 1;"]
        lines += ['  if (olz) begin $fwrite(f, "%h\\n", oz); nout = nout + 1; end',
                  "  if (nout == nbeats || cyc > nbeats * 8 + 200) begin $fclose(f); $finish; "
                  "end", "end", "endmodule"]
        (self.dir / "tb.v").write_text("\n".join(lines) + "\n")
        subprocess.run(["iverilog", "-g2005", "-o", "sim.vvp", "tb.v", "dut.v"], cwd=self.dir,
                       check=True, capture_output=True)

    def run(self, beats: dict, cfg: dict, n: int):
        """``beats`` {channel: [n] Python ints}; returns the n output beats (ints)."""
        for name in self.inputs:
            vals = beats.get(name, [0] * n)
            (self.dir / f"{name}.hex").write_text("".join(f"{int(v):x}\n" for v in vals))
        args = [f"+n={n}"] + [f"+{k}={int(v):x}" for k, v in cfg.items()]
        subprocess.run(["vvp", "-n", "sim.vvp", *args], cwd=self.dir, check=True,
                       capture_output=True)
        out = [int(t, 16) for t in (self.dir / "out.hex").read_text().split()]
        assert len(out) == n, f"{len(out)} of {n} output beats"
        return out

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def pack(lanes, width):
    """[beats, lanes] ints -> one int per beat (lane 0 in the low bits)."""
    out = []
    for row in np.asarray(lanes, dtype=np.int64):
        v = 0
        for i, x in enumerate(row):
            v |= (int(x) & ((1 << width) - 1)) << (i * width)
        out.append(v)
    return out


def unpack(beats, lanes, width):
    return np.array([[(b >> (i * width)) & ((1 << width) - 1) for i in range(lanes)]
                     for b in beats], dtype=np.int64)


# -----------------------------------------------------------------------------------------
# operands
# -----------------------------------------------------------------------------------------
_SPECIAL32 = np.array([0, 1 << 31, 0x3F800000, 0xBF800000, FP32_MAX, FP32_MAX | (1 << 31),
                       0x7F800000, 0xFF800000, 0x7FC00000, 0xFF800001, 0x00000001,
                       0x807FFFFF, 0x00800000, 0x477FE000, 0xC77FF000, 0x33000000])
_SPECIAL16 = np.array([0, 0x8000, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00,
                       0xFC01, 0x0001, 0x83FF, 0x0400])


def fp32_data(rng, shape):
    """fp32 codes: mostly moderate values, some random codes and specials."""
    v = fp32_from_float(rng.standard_normal(shape) * np.exp2(rng.integers(-8, 9, shape)))
    r = rng.random(shape)
    v = np.where(r < .1, rng.integers(0, 1 << 32, shape), v)
    return np.where(r > .9, rng.choice(_SPECIAL32, shape), v)


def fp16_data(rng, shape):
    v = fp16_from_float(rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, shape)))
    r = rng.random(shape)
    v = np.where(r < .1, rng.integers(0, 1 << 16, shape), v)
    return np.where(r > .9, rng.choice(_SPECIAL16, shape), v)


def _check(got, want, what):
    bad = np.argwhere(got != want)
    assert bad.size == 0, (f"{what}: {len(bad)} mismatches, first "
                           + "; ".join(f"{tuple(int(i) for i in b)}: got {int(got[tuple(b)]):#x} "
                                       f"want {int(want[tuple(b)]):#x}" for b in bad[:4]))


# -----------------------------------------------------------------------------------------
# X stage
# -----------------------------------------------------------------------------------------
_X_CFG = {"cfg_mul_op_rsc_z": 16, "cfg_alu_op_rsc_z": 16, "cfg_alu_bypass_rsc_z": 1,
          "cfg_alu_algo_rsc_z": 2, "cfg_alu_src_rsc_z": 1, "cfg_alu_shift_value_rsc_z": 6,
          "cfg_mul_bypass_rsc_z": 1, "cfg_mul_prelu_rsc_z": 1, "cfg_mul_src_rsc_z": 1,
          "cfg_mul_shift_value_rsc_z": 6, "cfg_relu_bypass_rsc_z": 1, "cfg_nan_to_zero": 1,
          "cfg_precision": 2}


def _x_configs(rng, n):
    yield dict(alu_bypass=True, mul_bypass=True, relu_bypass=True)
    for algo in (ALU_MAX, ALU_MIN, ALU_SUM):
        for src in (0, 1):
            yield dict(alu_bypass=False, alu_algo=algo, alu_src=src, mul_bypass=True,
                       relu_bypass=True)
    for prelu in (0, 1):
        for src in (0, 1):
            yield dict(alu_bypass=True, mul_bypass=False, mul_prelu=prelu, mul_src=src,
                       relu_bypass=True)
    yield dict(alu_bypass=True, mul_bypass=True, relu_bypass=False)
    for _ in range(n):
        yield dict(alu_bypass=bool(rng.integers(2)), alu_algo=int(rng.integers(3)),
                   alu_src=int(rng.integers(2)), mul_bypass=bool(rng.integers(2)),
                   mul_prelu=int(rng.integers(2)), mul_src=int(rng.integers(2)),
                   relu_bypass=bool(rng.integers(2)), nan_to_zero=int(rng.integers(2)))


def test_x_stage():
    bench = HlsBench("NV_NVDLA_SDP_CORE_x", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_x.v",
                     {"chn_data_in": 512, "chn_alu_op": 256, "chn_mul_op": 256},
                     ("chn_data_out", 512), _X_CFG)
    rng = np.random.default_rng(11)
    n = 64
    try:
        for k, c in enumerate(_x_configs(rng, 24)):
            data = fp32_data(rng, (n, 16))
            alu_op, mul_op = fp16_data(rng, (n, 16)), fp16_data(rng, (n, 16))
            reg_alu, reg_mul = int(fp16_data(rng, 1)[0]), int(fp16_data(rng, 1)[0])
            ntz = c.get("nan_to_zero", k % 2)
            cfg = {"cfg_mul_op_rsc_z": reg_mul, "cfg_alu_op_rsc_z": reg_alu,
                   "cfg_alu_bypass_rsc_z": int(c["alu_bypass"]),
                   "cfg_alu_algo_rsc_z": c.get("alu_algo", 0),
                   "cfg_alu_src_rsc_z": c.get("alu_src", 0),
                   "cfg_alu_shift_value_rsc_z": int(rng.integers(64)),
                   "cfg_mul_bypass_rsc_z": int(c["mul_bypass"]),
                   "cfg_mul_prelu_rsc_z": c.get("mul_prelu", 0),
                   "cfg_mul_src_rsc_z": c.get("mul_src", 0),
                   "cfg_mul_shift_value_rsc_z": int(rng.integers(64)),
                   "cfg_relu_bypass_rsc_z": int(c["relu_bypass"]), "cfg_nan_to_zero": ntz,
                   "cfg_precision": 2}
            out = bench.run({"chn_data_in": pack(data, 32), "chn_alu_op": pack(alu_op, 16),
                             "chn_mul_op": pack(mul_op, 16)}, cfg, n)
            st = XStage(alu_bypass=c["alu_bypass"], alu_algo=c.get("alu_algo", 0),
                        mul_bypass=c["mul_bypass"], mul_prelu=bool(c.get("mul_prelu", 0)),
                        relu_bypass=c["relu_bypass"])
            want = x_stage_fp16(data, alu_op if c.get("alu_src") else reg_alu,
                                mul_op if c.get("mul_src") else reg_mul, st, bool(ntz))
            _check(unpack(out, 16, 32), want & 0xFFFFFFFF, f"config {k} {c}")
    finally:
        bench.close()


# -----------------------------------------------------------------------------------------
# EW operand converter, EW core
# -----------------------------------------------------------------------------------------
def test_ew_operand_converter():
    bench = HlsBench("NV_NVDLA_SDP_CORE_Y_cvt", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_Y_cvt.v",
                     {"chn_in": 64}, ("chn_out", 128),
                     {"cfg_bypass_rsc_z": 1, "cfg_offset_rsc_z": 32, "cfg_scale_rsc_z": 16,
                      "cfg_truncate_rsc_z": 6, "cfg_nan_to_zero_rsc_z": 1,
                      "cfg_precision_rsc_z": 2})
    rng = np.random.default_rng(12)
    try:
        for ntz in (0, 1):
            for bypass in (0, 1):
                ops = fp16_data(rng, (4096, 4))
                ops[:16] = np.resize(_SPECIAL16, (16, 4))
                cfg = {"cfg_bypass_rsc_z": bypass, "cfg_offset_rsc_z": int(rng.integers(1 << 32)),
                       "cfg_scale_rsc_z": int(rng.integers(1 << 16)),
                       "cfg_truncate_rsc_z": int(rng.integers(64)), "cfg_nan_to_zero_rsc_z": ntz,
                       "cfg_precision_rsc_z": 2}
                out = bench.run({"chn_in": pack(ops, 16)}, cfg, len(ops))
                _check(unpack(out, 4, 32), y_operand_fp16(ops, bool(ntz)),
                       f"nan_to_zero={ntz} bypass={bypass}")
    finally:
        bench.close()


def test_ew_core():
    cfgw = {"cfg_alu_bypass_rsc_z": 1, "cfg_alu_src_rsc_z": 1, "cfg_alu_op_rsc_z": 32,
            "cfg_alu_algo_rsc_z": 2, "cfg_mul_bypass_rsc_z": 1, "cfg_mul_src_rsc_z": 1,
            "cfg_mul_op_rsc_z": 32, "cfg_truncate_rsc_z": 10, "cfg_mul_prelu_rsc_z": 1,
            "cfg_precision": 2}
    bench = HlsBench("NV_NVDLA_SDP_CORE_Y_core", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_Y_core.v",
                     {"chn_data_in": 128, "chn_alu_op": 128, "chn_mul_op": 128},
                     ("chn_data_out", 128), cfgw)
    rng = np.random.default_rng(13)
    n = 256
    configs = [dict(alu_bypass=1, mul_bypass=1)]
    configs += [dict(alu_bypass=0, alu_algo=a, alu_src=s, mul_bypass=1)
                for a in (ALU_MAX, ALU_MIN, ALU_SUM, ALU_EQL) for s in (0, 1)]
    configs += [dict(alu_bypass=1, mul_bypass=0, mul_prelu=p, mul_src=s)
                for p in (0, 1) for s in (0, 1)]
    configs += [dict(alu_bypass=int(rng.integers(2)), alu_algo=int(rng.integers(4)),
                     alu_src=int(rng.integers(2)), mul_bypass=int(rng.integers(2)),
                     mul_prelu=int(rng.integers(2)), mul_src=int(rng.integers(2)))
                for _ in range(12)]
    try:
        for k, c in enumerate(configs):
            data = fp32_data(rng, (n, 4))
            alu_op, mul_op = fp32_data(rng, (n, 4)), fp32_data(rng, (n, 4))
            if c.get("alu_algo") == ALU_EQL:
                alu_op = np.where(rng.random((n, 4)) < .3, data, alu_op)
            reg_alu, reg_mul = int(fp32_data(rng, 1)[0]), int(fp32_data(rng, 1)[0])
            cfg = {"cfg_alu_bypass_rsc_z": c["alu_bypass"],
                   "cfg_alu_src_rsc_z": c.get("alu_src", 0),
                   "cfg_alu_op_rsc_z": reg_alu, "cfg_alu_algo_rsc_z": c.get("alu_algo", 0),
                   "cfg_mul_bypass_rsc_z": c["mul_bypass"],
                   "cfg_mul_src_rsc_z": c.get("mul_src", 0),
                   "cfg_mul_op_rsc_z": reg_mul, "cfg_truncate_rsc_z": int(rng.integers(1024)),
                   "cfg_mul_prelu_rsc_z": c.get("mul_prelu", 0), "cfg_precision": 2}
            out = bench.run({"chn_data_in": pack(data, 32), "chn_alu_op": pack(alu_op, 32),
                             "chn_mul_op": pack(mul_op, 32)}, cfg, n)
            st = YStage(alu_bypass=bool(c["alu_bypass"]), alu_algo=c.get("alu_algo", 0),
                        mul_bypass=bool(c["mul_bypass"]), mul_prelu=bool(c.get("mul_prelu", 0)))
            want = y_stage_fp16(data, alu_op if c.get("alu_src") else reg_alu,
                                mul_op if c.get("mul_src") else reg_mul, st)
            _check(unpack(out, 4, 32), want & 0xFFFFFFFF, f"config {k} {c}")
    finally:
        bench.close()


# -----------------------------------------------------------------------------------------
# output converter
# -----------------------------------------------------------------------------------------
def test_output_converter():
    bench = HlsBench("NV_NVDLA_SDP_CORE_c", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_c.v",
                     {"chn_in": 512}, ("chn_out", 272),
                     {"cfg_offset_rsc_z": 32, "cfg_scale_rsc_z": 16, "cfg_truncate_rsc_z": 6,
                      "cfg_proc_precision_rsc_z": 2, "cfg_out_precision_rsc_z": 2,
                      "cfg_mode_eql_rsc_z": 1})
    rng = np.random.default_rng(14)
    try:
        for eql in (0, 1):
            data = fp32_data(rng, (2048, 16))
            if eql:
                data = rng.integers(0, 2, (2048, 16))
            cfg = {"cfg_offset_rsc_z": int(rng.integers(1 << 32)),
                   "cfg_scale_rsc_z": int(rng.integers(1 << 16)),
                   "cfg_truncate_rsc_z": int(rng.integers(64)), "cfg_proc_precision_rsc_z": 2,
                   "cfg_out_precision_rsc_z": 2, "cfg_mode_eql_rsc_z": eql}
            out = bench.run({"chn_in": pack(data, 32)}, cfg, len(data))
            got = unpack([b & ((1 << 256) - 1) for b in out], 16, 16)
            want = data & 0xFFFF if eql else fp32_to_fp16(data)
            _check(got, want, f"eql={eql}")
    finally:
        bench.close()


# -----------------------------------------------------------------------------------------
# LUT: index generation, interpolation / extrapolation
# -----------------------------------------------------------------------------------------
def _fields(beat, layout):
    """{name: [4 lanes]} of one packed beat; ``layout`` [(name, width)] from bit 0 up, each
    field 4 lanes wide."""
    out, pos = {}, 0
    for name, w in layout:
        out[name] = [(beat >> (pos + i * w)) & ((1 << w) - 1) for i in range(4)]
        pos += 4 * w
    return out


def _pack_fields(values, layout):
    beat, pos = 0, 0
    for name, w in layout:
        for i in range(4):
            beat |= (int(values[name][i]) & ((1 << w) - 1)) << (pos + i * w)
        pos += 4 * w
    return beat


_IDX_OUT = [("fraction", 35), ("x", 32), ("oflow", 1), ("uflow", 1), ("sel", 1), ("addr", 9),
            ("le_hit", 1), ("lo_hit", 1)]
_INP_IN = [("x", 32), ("fraction", 35), ("y0", 16), ("y1", 16), ("scale", 16), ("shift", 5),
           ("offset", 32), ("bias", 32), ("flow", 1)]


def _lut_inputs(rng, shape, start):
    """fp32 codes near ``start`` (so both tables see hits, under- and overflows)."""
    from sim.nvfloat import fp32_to_float
    base = fp32_to_float(start)
    base = 0.0 if not np.isfinite(base) else base
    v = fp32_from_float(base + rng.standard_normal(shape) * np.exp2(rng.integers(-6, 12, shape)))
    return np.where(rng.random(shape) < .1, fp32_data(rng, shape), v)


def test_lut_index():
    from sim.lut import LutParams
    from sim.sdp.sdp import lut_select_fp16
    cfgw = {"cfg_lut_le_start_rsc_z": 32, "cfg_lut_lo_start_rsc_z": 32,
            "cfg_lut_le_index_offset_rsc_z": 8, "cfg_lut_le_index_select_rsc_z": 8,
            "cfg_lut_lo_index_select_rsc_z": 8, "cfg_lut_le_function_rsc_z": 1,
            "cfg_lut_uflow_priority_rsc_z": 1, "cfg_lut_oflow_priority_rsc_z": 1,
            "cfg_lut_hybrid_priority_rsc_z": 1, "cfg_precision_rsc_z": 2}
    bench = HlsBench("NV_NVDLA_SDP_CORE_Y_idx", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_Y_idx.v",
                     {"chn_lut_in": 128}, ("chn_lut_out", 324), cfgw)
    rng = np.random.default_rng(15)
    n = 512
    try:
        for k in range(24):
            starts = [int(fp32_from_float(rng.standard_normal() * 2.0 ** int(rng.integers(-4, 8))))
                      if rng.random() < .8 else int(fp32_data(rng, 1)[0]) for _ in range(2)]
            small = k % 3 != 0
            p = LutParams(le_linear=bool(rng.integers(2)),
                          uflow_priority_lo=bool(rng.integers(2)),
                          oflow_priority_lo=bool(rng.integers(2)),
                          hybrid_priority_lo=bool(rng.integers(2)),
                          le_index_offset=int(rng.integers(-8, 8) if small
                                              else rng.integers(-128, 128)),
                          le_index_select=int(rng.integers(-6, 6) if small
                                              else rng.integers(-128, 128)),
                          lo_index_select=int(rng.integers(-6, 6) if small
                                              else rng.integers(-128, 128)),
                          le_start=starts[0], lo_start=starts[1])
            x = _lut_inputs(rng, (n, 4), starts[k % 2])
            cfg = {"cfg_lut_le_start_rsc_z": p.le_start, "cfg_lut_lo_start_rsc_z": p.lo_start,
                   "cfg_lut_le_index_offset_rsc_z": p.le_index_offset & 0xFF,
                   "cfg_lut_le_index_select_rsc_z": p.le_index_select & 0xFF,
                   "cfg_lut_lo_index_select_rsc_z": p.lo_index_select & 0xFF,
                   "cfg_lut_le_function_rsc_z": int(p.le_linear),
                   "cfg_lut_uflow_priority_rsc_z": int(p.uflow_priority_lo),
                   "cfg_lut_oflow_priority_rsc_z": int(p.oflow_priority_lo),
                   "cfg_lut_hybrid_priority_rsc_z": int(p.hybrid_priority_lo),
                   "cfg_precision_rsc_z": 2}
            out = bench.run({"chn_lut_in": pack(x, 32)}, cfg, n)
            got = [_fields(b, _IDX_OUT) for b in out]
            index, frac, use_lo, uflow, oflow, le_hit, lo_hit = lut_select_fp16(x, p)
            for name, want in (("addr", index), ("fraction", frac), ("sel", use_lo),
                               ("uflow", uflow), ("oflow", oflow), ("le_hit", le_hit),
                               ("lo_hit", lo_hit), ("x", x)):
                g = np.array([r[name] for r in got], dtype=np.int64)
                _check(g, np.asarray(want, dtype=np.int64), f"config {k} {p} {name}")
    finally:
        bench.close()


def test_lut_interpolation():
    from sim.sdp.sdp import lut_interp_fp16
    bench = HlsBench("NV_NVDLA_SDP_CORE_Y_inp", "vmod/nvdla/sdp/NV_NVDLA_SDP_CORE_Y_inp.v",
                     {"chn_inp_in": 740}, ("chn_inp_out", 128), {"cfg_precision_rsc_z": 2})
    rng = np.random.default_rng(16)
    n = 2048
    frac_edges = np.array([0, 1, 2, (1 << 34), (1 << 35) - 1, (1 << 35) - 2, 1 << 20, 3 << 30])
    v = {"x": fp32_data(rng, (n, 4)),
         "fraction": np.where(rng.random((n, 4)) < .15, rng.choice(frac_edges, (n, 4)),
                              rng.integers(0, 1 << 35, (n, 4))),
         "y0": fp16_data(rng, (n, 4)), "y1": fp16_data(rng, (n, 4)),
         "scale": fp16_data(rng, (n, 4)), "shift": rng.integers(0, 32, (n, 4)),
         "offset": fp32_data(rng, (n, 4)),
         "bias": np.where(rng.random((n, 4)) < .5, 0, rng.integers(0, 256, (n, 4)) << 23),
         "flow": rng.integers(0, 2, (n, 4))}
    v["fraction"] = np.where(rng.random((n, 4)) < .2, v["fraction"] >> rng.integers(
        0, 35, (n, 4)), v["fraction"])
    try:
        beats = [_pack_fields({k: a[i] for k, a in v.items()}, _INP_IN) for i in range(n)]
        out = bench.run({"chn_inp_in": beats}, {"cfg_precision_rsc_z": 2}, n)
        want = lut_interp_fp16(v["x"], v["fraction"], v["y0"], v["y1"], v["scale"],
                               v["offset"], v["bias"], v["flow"] == 1)
        _check(unpack(out, 4, 32), want, "interpolation / extrapolation")
    finally:
        bench.close()
