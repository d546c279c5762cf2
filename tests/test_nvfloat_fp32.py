"""sim.nvfloat's fp32 units (the SDP's fp16 datapath) against NVDLA's Verilog.

The digests are of the outputs of NVDLA's own units (nvdla/hw ``nvdlav1``,
``vmod/vlibs/HLS_fp16_to_fp32.v``, ``HLS_fp32_to_fp16.v``, ``HLS_fp32_add.v``,
``HLS_fp32_mul.v``, ``HLS_fp32_to_fp17.v``, ``HLS_fp17_to_fp32.v``) simulated with Icarus
Verilog on the inputs :func:`_vectors` draws (exhaustive for fp16 -> fp32 and fp17 -> fp32;
random and edge-case codes for the rest). The slow test re-runs
those units when ``NVDLA_HW_GIT`` names a git directory of nvdla/hw (sources read with
``git show`` into a temporary directory; nothing of NVDLA's is kept here):

    NVDLA_HW_GIT=<nvdla/hw git dir> python -m pytest -m slow tests/test_nvfloat_fp32.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sim.nvfloat import (FP32_MAX, fp16_from_float, fp16_to_fp32, fp17_to_fp32, fp32_add,
                         fp32_from_float, fp32_max, fp32_min, fp32_mul, fp32_relu, fp32_sub,
                         fp32_to_float, fp32_to_fp16, fp32_to_fp17, fraction_to_fp17)

GIT = os.environ.get("NVDLA_HW_GIT")
ONE = 0x3F800000
NEG = 1 << 31


def _digest(x):
    return hashlib.sha256(np.asarray(x, dtype="<i8").tobytes()).hexdigest()[:16]


def _vectors(n=100000):
    """(a, b) fp32 operand pairs: random codes, operands a few binades apart, x and -x,
    special codes (zeros, the largest finite, infinities, NaNs, denormals, exponent 1 / 254)
    against anything."""
    rng = np.random.default_rng(5)

    def rand32(k):
        return rng.integers(0, 1 << 32, k)

    def near(k, spread):
        s = rng.integers(0, 2, (2, k))
        m = rng.integers(0, 1 << 23, (2, k))
        e0 = rng.integers(0, 256, k)
        e1 = np.clip(e0 + rng.integers(-spread, spread + 1, k), 0, 255)
        return (s[0] << 31) | (e0 << 23) | m[0], (s[1] << 31) | (e1 << 23) | m[1]

    a1, b1 = rand32(n // 4), rand32(n // 4)
    a2, b2 = near(n // 2, 27)
    k = n // 8
    a3 = rand32(k)
    b3 = a3 ^ (rng.integers(0, 2, k) << 31)
    sp = np.array([0, NEG, ONE, NEG | ONE, FP32_MAX, NEG | FP32_MAX, 0x7F800000, 0xFF800000,
                   0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x00000001, 0x007FFFFF, 0x00800000,
                   0x3F7FFFFF, 0x7F000000, 0x47800000, 0x477FF000, 0x38800000, 0x33000000])
    a4 = rng.choice(sp, k)
    b4 = np.where(rng.random(k) < .5, rng.choice(sp, k), rand32(k))
    a = np.concatenate([a1, a2, a3, a4])
    b = np.concatenate([b1, b2, b3, b4])
    sw = rng.random(len(a)) < .5
    return np.where(sw, b, a), np.where(sw, a, b)


def _fp32_to_fp16_inputs(a):
    """fp32 codes for the fp16 converter: the operand codes, plus codes around every fp16
    rounding boundary (exponents 100..145, low 13 mantissa bits near the half point)."""
    rng = np.random.default_rng(6)
    k = 100000
    e = rng.integers(100, 146, k)
    m = (rng.integers(0, 1 << 10, k) << 13) | rng.choice(
        np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF]), k)
    s = rng.integers(0, 2, k)
    return np.concatenate([a, (s << 31) | (e << 23) | m])


def _fp32_to_fp17_inputs(a):
    """The converter inputs plus codes around fp17's smallest normal and largest values."""
    rng = np.random.default_rng(3)
    e = rng.integers(80, 165, 60000)
    m = rng.integers(0, 1 << 23, 60000)
    s = rng.integers(0, 2, 60000)
    return np.concatenate([_fp32_to_fp16_inputs(a), (s << 31) | (e << 23) | m])


DIGESTS = {"operands": "5652dfe762b43051",
           "fp32_add": "923fea48ddefd022", "fp32_mul": "f8c7bf07e306b337",
           "fp16_to_fp32": "63397c632b3d7268", "fp32_to_fp16": "16df8903151f44d8",
           "fp32_to_fp17": "6f6be247abbb7e1e", "fp17_to_fp32": "6094577beed92e71"}


def test_against_nvdla_verilog_digests():
    a, b = _vectors()
    assert _digest(np.stack([a, b])) == DIGESTS["operands"], "operand generator changed"
    assert _digest(fp32_add(a, b)) == DIGESTS["fp32_add"]
    assert _digest(fp32_mul(a, b)) == DIGESTS["fp32_mul"]
    assert _digest(fp16_to_fp32(np.arange(1 << 16))) == DIGESTS["fp16_to_fp32"]
    assert _digest(fp32_to_fp16(_fp32_to_fp16_inputs(a))) == DIGESTS["fp32_to_fp16"]
    assert _digest(fp32_to_fp17(_fp32_to_fp17_inputs(a))) == DIGESTS["fp32_to_fp17"]
    assert _digest(fp17_to_fp32(np.arange(1 << 17))) == DIGESTS["fp17_to_fp32"]


def test_known_answers():
    assert fp16_to_fp32(0x3C00) == ONE
    assert fp16_to_fp32(0x0001) == 0x33800000                 # 2^-24, normalized
    assert fp16_to_fp32(0x8000) == NEG                        # -0
    assert fp16_to_fp32(0x7C00) == FP32_MAX                   # inf -> largest finite
    assert fp16_to_fp32(0xFC00) == NEG | FP32_MAX
    assert fp16_to_fp32(0x7E00) == 0x7F800200                 # NaN payload unshifted
    assert fp32_to_fp16(ONE) == 0x3C00
    assert fp32_to_fp16(0x7F800000) == 0x7BFF                 # inf -> 65504
    assert fp32_to_fp16(0x477FF000) == 0x7BFF                 # 65520 rounds up past 65504
    assert fp32_to_fp16(0x477FE000) == 0x7BFF                 # 65504 exactly
    assert fp32_to_fp16(0x7FC00000) == 0x7C00                 # NaN -> low 10 bits: inf code
    assert fp32_to_fp16(0xFF800005) == 0xFC05
    assert fp32_to_fp16(0x33000000) == 0                      # 2^-25: tie -> 0
    assert fp32_to_fp16(0x33400000) == 1                      # 1.5 x 2^-25 -> 2^-24
    assert fp32_to_fp16(0x00000001) == 0                      # fp32 denormal -> 0
    assert fp32_add(ONE, NEG | ONE) == 0 and fp32_add(NEG | ONE, ONE) == NEG
    assert fp32_add(FP32_MAX, FP32_MAX) == FP32_MAX
    assert fp32_mul(ONE, NEG) == NEG
    assert fp32_mul(FP32_MAX, 0x40000000) == FP32_MAX
    assert fp32_max(0, NEG) == 0 and fp32_min(0, NEG) == NEG
    assert fp32_max(NEG, 0) == 0 and fp32_min(NEG, 0) == NEG
    assert fp32_max(ONE, 0x7FC00000) == 0x7FC00000
    assert fp32_relu(NEG) == 0 and fp32_relu(NEG | ONE) == 0 and fp32_relu(ONE) == ONE
    assert fp32_relu(0xFFC00000) == 0xFFC00000
    assert fp32_sub(ONE, ONE) == 0 and fp32_sub(0x7FC00000, ONE) == 0x7FC00000
    assert fp32_sub(ONE, 0x7FC00000) == 0xFFC00000           # b's NaN, sign flipped
    assert fp32_to_fp17(ONE) == 31 << 10 and fp32_to_fp17(0x7F800000) == (62 << 10) | 0x3FF
    assert fp32_to_fp17(0x30000000) == 0                      # 2^-31: below fp17's range
    assert fp17_to_fp32(31 << 10) == ONE and fp17_to_fp32(63 << 10) == FP32_MAX
    assert fraction_to_fp17(1 << 34) == 30 << 10                # 0.5
    assert fraction_to_fp17((1 << 35) - 1) == 31 << 10         # rounds up to 1
    assert fraction_to_fp17(0) == 0 and fraction_to_fp17(1) == 0


def test_correctly_rounded_in_range():
    """Operands within 25 binades and results in the normal range: the units round the exact
    sum / product to nearest even, as IEEE does."""
    rng = np.random.default_rng(8)
    n = 50000
    e0 = rng.integers(20, 230, n)
    e1 = np.clip(e0 + rng.integers(-25, 26, n), 1, 254)
    a = (rng.integers(0, 2, n) << 31) | (e0 << 23) | rng.integers(0, 1 << 23, n)
    b = (rng.integers(0, 2, n) << 31) | (e1 << 23) | rng.integers(0, 1 << 23, n)
    fa, fb = fp32_to_float(a), fp32_to_float(b)
    s = fa + fb
    ok = (np.abs(s) > 2.0 ** -120) & (np.abs(s) < 2.0 ** 127)
    assert np.array_equal(fp32_add(a, b)[ok], fp32_from_float(s)[ok])
    p = fa * fb
    ok = (np.abs(p) > 2.0 ** -120) & (np.abs(p) < 2.0 ** 127)
    assert np.array_equal(fp32_mul(a, b)[ok], fp32_from_float(p)[ok])
    v = rng.standard_normal(n) * 1000
    f = fp32_from_float(v)
    assert np.array_equal(fp32_to_fp16(f), fp16_from_float(fp32_to_float(f)))


# -----------------------------------------------------------------------------------------
# NVDLA's Verilog in Icarus
# -----------------------------------------------------------------------------------------
_TB = """`timescale 1ns/1ps
module tb;
reg clk = 0, rstn = 0;
always #5 clk = ~clk;
reg [{aw}-1:0] va [0:{n}-1];
reg [{bw}-1:0] vb [0:{n}-1];
integer ia = 0, ib = 0, no = 0, f, cyc = 0;
wire a_lz, b_lz, o_lz;
wire [{ow}-1:0] oz;
{mod} dut (.nvdla_core_clk(clk), .nvdla_core_rstn(rstn),
  .chn_a_rsc_z(va[ia]), .chn_a_rsc_vz(rstn && ia < {n}), .chn_a_rsc_lz(a_lz),
  {bport}
  .chn_o_rsc_z(oz), .chn_o_rsc_vz(1'b1), .chn_o_rsc_lz(o_lz));
initial begin
  $readmemh("a.hex", va);
  {bread}
  f = $fopen("out.hex", "w");
  #23 rstn = 1;
end
always @(posedge clk) if (rstn) begin
  cyc <= cyc + 1;
  if (a_lz && ia < {n}) ia <= ia + 1;
  {bstep}
  if (o_lz) begin $fwrite(f, "%h\\n", oz); no = no + 1; end
  if (no == {n} || cyc > {n} * 4 + 100) begin $fclose(f); $finish; end
end
endmodule
"""


def run_unit(module, a, b=None, aw=32, bw=32, ow=32):
    """Outputs of NVDLA's ``module`` (one of vmod/vlibs/HLS_*) on operand arrays."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"nvdla_{module}_{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    src = subprocess.run(["git", "-C", GIT, "show", f"nvdlav1:vmod/vlibs/{module}.v"],
                         check=True, capture_output=True, text=True).stdout
    (work / f"{module}.v").write_text(src)
    n = len(a)
    np.savetxt(work / "a.hex", np.asarray(a, dtype=np.int64), fmt="%x")
    two = b is not None
    if two:
        np.savetxt(work / "b.hex", np.asarray(b, dtype=np.int64), fmt="%x")
    tb = _TB.format(
        n=n, aw=aw, bw=bw, ow=ow, mod=module,
        bport=(".chn_b_rsc_z(vb[ib]), .chn_b_rsc_vz(rstn && ib < %d), .chn_b_rsc_lz(b_lz)," % n
               if two else ""),
        bread='$readmemh("b.hex", vb);' if two else "",
        bstep=f"if (b_lz && ib < {n}) ib <= ib + 1;" if two else "")
    (work / "tb.v").write_text(tb)
    subprocess.run(["iverilog", "-g2005", "-o", "sim.vvp", "tb.v", f"{module}.v"], cwd=work,
                   check=True, capture_output=True)
    subprocess.run(["vvp", "-n", "sim.vvp"], cwd=work, check=True, capture_output=True)
    out = [int(t, 16) for t in (work / "out.hex").read_text().split()]
    shutil.rmtree(work, ignore_errors=True)
    assert len(out) == n, f"{module}: {len(out)} of {n} outputs"
    return np.array(out, dtype=np.int64)




@pytest.mark.parametrize("unit", ["fp32_add", "fp32_mul", "fp16_to_fp32", "fp32_to_fp16",
                                  "fp32_to_fp17", "fp17_to_fp32"])
@pytest.mark.slow
@pytest.mark.skipif(not GIT or not shutil.which("iverilog"),
                    reason="needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")
def test_against_nvdla_verilog(unit):
    a, b = _vectors()
    if unit == "fp32_add":
        got, want = run_unit("HLS_fp32_add", a, b), fp32_add(a, b)
    elif unit == "fp32_mul":
        got, want = run_unit("HLS_fp32_mul", a, b), fp32_mul(a, b)
    elif unit == "fp16_to_fp32":
        x = np.arange(1 << 16)
        got, want = run_unit("HLS_fp16_to_fp32", x, aw=16), fp16_to_fp32(x)
    elif unit == "fp32_to_fp16":
        x = _fp32_to_fp16_inputs(a)
        got, want = run_unit("HLS_fp32_to_fp16", x, ow=16), fp32_to_fp16(x)
    elif unit == "fp32_to_fp17":
        x = _fp32_to_fp17_inputs(a)
        got, want = run_unit("HLS_fp32_to_fp17", x, ow=17), fp32_to_fp17(x)
    else:
        x = np.arange(1 << 17)
        got, want = run_unit("HLS_fp17_to_fp32", x, aw=17), fp17_to_fp32(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{bad.size} mismatches, first: "
                           + ", ".join(f"{int(i)}: got {int(got[i]):#x} want {int(want[i]):#x}"
                                       for i in bad[:5]))
    print(unit, _digest(got))
