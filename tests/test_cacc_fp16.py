"""sim.conv.cacc fp16 accumulation: NVDLA's fp accumulator cell, bit for bit.

Fast tests: known answers, and a digest of the model on the operands of :func:`_vectors`.
Slow test: NVDLA's ``NV_NVDLA_CACC_CALC_fp_48b`` (nvdla/hw ``nvdlav1``, with ``NV_DW_lsd``,
``DESIGNWARE_NOEXIST``) in Icarus, one operand pair a cycle, each delivered as a partial
(48-bit) or final (fp32) result; compared with :func:`sim.conv.cacc.fp48_add` /
:func:`sim.conv.cacc.fp48_to_fp32`. The sources are read with ``git show`` from
``NVDLA_HW_GIT`` into a temporary directory. Skipped without it or iverilog.

    NVDLA_HW_GIT=<nvdla/hw git dir> python -m pytest -m slow tests/test_cacc_fp16.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import numpy as np
import pytest

from sim.conv.cacc import accumulate_fp16, fp48_add, fp48_to_fp32
from sim.conv.cmac import fp16_mac_cell
from sim.nvfloat import fp16_from_float

GIT = os.environ.get("NVDLA_HW_GIT")


def _f32(codes):
    return np.asarray(codes, dtype=np.int64).astype(np.uint32).view(np.float32).astype(float)


def _digest(x):
    return hashlib.sha256(np.asarray(x, dtype="<i8").tobytes()).hexdigest()[:16]


def _vectors(n, seed):
    """(psum 44-bit, assembly 48-bit, assembly valid, deliver) operands: CMAC partial sums
    of random atoms (wide and narrow exponent spreads, NaN atoms), raw 44-bit codes (sums
    past 36 bits included), assembly values from chains of the model's own additions, raw
    48-bit codes, NaN and zero codes, exact cancellations."""
    rng = np.random.default_rng(seed)
    k = n // 4

    def atoms(m, lo, hi):
        c = ((rng.integers(0, 2, (m, 16)) << 15) | (rng.integers(lo, hi, (m, 16)) << 10)
             | rng.integers(0, 1024, (m, 16)))
        c[rng.random((m, 16)) < 0.003] = 0x7E00
        return c

    ps = np.concatenate([fp16_mac_cell(atoms(k, 0, 31), atoms(k, 0, 31))[0],
                         fp16_mac_cell(atoms(k, 12, 19), atoms(k, 12, 19))[0],
                         rng.integers(0, 1 << 44, k), rng.integers(0, 1 << 38, n - 3 * k)
                         | (rng.choice([0, 1, 31, 62, 63], n - 3 * k) << 38)])
    rng.shuffle(ps)
    # assembly values: partial sums folded a few times, then raw codes
    finite = np.where((ps >> 38) == 0x3F, ps & ((1 << 38) - 1), ps)
    acc = fp48_add(finite, 0, False)
    for _ in range(3):
        acc = np.where(rng.random(n) < 0.7, fp48_add(rng.permutation(finite), acc, True), acc)
    raw = rng.integers(0, 1 << 48, n)
    raw[rng.random(n) < 0.1] |= 0xFF << 40
    acc = np.where(rng.random(n) < 0.15, raw, acc)
    acc = np.where(rng.random(n) < 0.05, 0, acc)
    ps = np.where(rng.random(n) < 0.03, 0, ps)
    # exact cancellation: the assembly value is minus the partial sum
    neg = (finite & ~((1 << 38) - 1)) | (-finite & ((1 << 38) - 1))
    av = rng.random(n) < 0.85
    cancel = rng.random(n) < 0.03
    acc = np.where(cancel, fp48_add(neg, 0, False), acc)
    ps = np.where(cancel, finite, ps)
    return ps, acc, av | cancel, rng.random(n) < 0.5


def test_known_answers():
    p = fp16_mac_cell(fp16_from_float([[1.0, 2.0], [1.0, 1.0]]),
                      fp16_from_float([[1.0, -3.0], [0.5, 0.5]]))[0]
    assert list(_f32(accumulate_fp16(p[None]))) == [-5.0, 1.0]
    assert list(_f32(accumulate_fp16(np.stack([p, p, p])))) == [-15.0, 3.0]
    # the first partial sum ignores the assembly value
    assert fp48_add(p, 12345, False).tolist() == fp48_add(p, 0, False).tolist()
    # zero
    assert fp48_to_fp32(fp48_add(0, 0, False)) == 0
    # fp32 rounding of the 39-bit magnitude: ties up; 1 + 2^-24 -> 1 + 2^-23
    one = (63 << 40) | (1 << 38)
    assert _f32(fp48_to_fp32(one)) == 1.0
    assert _f32(fp48_to_fp32(one | (1 << 14))) == 1.0 + 2.0 ** -23
    # NaN: partial sum with exponent field 0x3F; its sign and mantissa reach the fp32 code
    nan = fp16_mac_cell([0x3C00], [0xFE05])[0]
    out = int(fp48_to_fp32(fp48_add(nan, one, True)))
    assert out == (1 << 31) | (0xFF << 23) | 0x205


def test_accumulate_is_close_to_float():
    rng = np.random.default_rng(4)
    w = fp16_from_float(rng.uniform(-1, 1, (9, 200, 16)))
    d = fp16_from_float(rng.uniform(-1, 1, (9, 200, 16)))
    p = fp16_mac_cell(w, d)[0]
    got = _f32(accumulate_fp16(p))
    exact = (w.astype(np.uint16).view(np.float16).astype(float)
             * d.astype(np.uint16).view(np.float16).astype(float)).sum((0, 2))
    assert np.all(np.abs(got - exact) <= 2.0 ** -18 * 16 * 9)


def test_digest():
    ps, acc, av, sel = _vectors(20000, 1)
    assert _digest(np.stack([ps, acc, av, sel])) == "145608734c9e9a4b", "operand generator changed"
    out = fp48_add(ps, acc, av)
    assert _digest(out) == "926f9f71081a72ce" and _digest(fp48_to_fp32(out)) == "2032aade6677c07d"


_TB = """`timescale 1ns/1ps
module tb;
reg clk = 0, rstn = 0;
reg [43:0] d; reg [47:0] o; reg ov = 0, sel = 0, vld = 0;
wire [31:0] fout; wire [47:0] pout; wire fv, pv;
NV_NVDLA_CACC_CALC_fp_48b u (.nvdla_core_clk(clk), .nvdla_core_rstn(rstn), .in_data(d),
  .in_op(o), .in_op_valid(ov), .in_sel(sel), .in_valid(vld), .out_final_data(fout),
  .out_final_valid(fv), .out_partial_data(pout), .out_partial_valid(pv));
reg [95:0] mem [0:`N-1];
integer i, fd;
always #5 clk = ~clk;
always @(posedge clk) begin
  if (pv) $fdisplay(fd, "p %h", pout);
  if (fv) $fdisplay(fd, "f %h", fout);
end
initial begin
  $readmemh("in.hex", mem);
  fd = $fopen("out.txt", "w");
  #12 rstn = 1;
  @(negedge clk);
  for (i = 0; i < `N; i = i + 1) begin
    {ov, sel, o, d} = mem[i]; vld = 1;
    @(negedge clk);
  end
  vld = 0;
  repeat (10) @(negedge clk);
  $fclose(fd);
  $finish;
end
endmodule
"""


@pytest.mark.slow
@pytest.mark.skipif(not GIT or not shutil.which("iverilog"),
                    reason="needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")
def test_against_nvdla_fp_cell(tmp_path):
    n = 20000
    ps, acc, av, sel = _vectors(n, 2)
    names = []
    for src in ["vmod/nvdla/cacc/NV_NVDLA_CACC_CALC_fp_48b.v", "vmod/vlibs/NV_DW_lsd.v"]:
        text = subprocess.run(["git", "-C", GIT, "show", f"nvdlav1:{src}"], check=True,
                              capture_output=True, text=True).stdout
        (tmp_path / os.path.basename(src)).write_text(text)
        names.append(os.path.basename(src))
    (tmp_path / "tb.v").write_text(_TB)
    words = (av.astype(np.int64).astype(object) << 93) | (sel.astype(object) << 92) \
        | (acc.astype(object) << 44) | ps.astype(object)
    (tmp_path / "in.hex").write_text("\n".join("%x" % w for w in words) + "\n")
    subprocess.run(["iverilog", "-g2012", "-DDESIGNWARE_NOEXIST", f"-DN={n}", "-o", "tb.vvp",
                    "-s", "tb", "tb.v", *names], cwd=tmp_path, check=True)
    subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, check=True, capture_output=True)
    rows = [line.split() for line in (tmp_path / "out.txt").read_text().splitlines()]
    # partial and final results leave in input order each (finals one stage later)
    hw = np.zeros(n, dtype=np.int64)
    for kind, idx in (("p", np.flatnonzero(~sel)), ("f", np.flatnonzero(sel))):
        got = [int(r[1], 16) for r in rows if r[0] == kind]
        assert len(got) == idx.size
        hw[idx] = got
    part = fp48_add(ps, acc, av)
    want = np.where(sel, fp48_to_fp32(part), part)
    bad = np.flatnonzero(hw != want)
    assert bad.size == 0, (f"{bad.size} of {n} differ, first "
                           + ", ".join(f"#{i}: {ps[i]:011x} {acc[i]:012x} {av[i]:d} -> hw "
                                       f"{hw[i]:x} model {want[i]:x}" for i in bad[:4]))
