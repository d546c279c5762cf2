"""sim.conv.cmac.fp16_mac_cell: NVDLA's fp16 MAC cell, bit for bit.

Fast tests: known answers and a digest of the model's partial sums on the vectors of
:func:`_vectors` (the slow test below compares the same kind of vectors with NVDLA's Verilog).

Slow test: ``NV_NVDLA_CMAC_CORE_mac`` of nvdla/hw (branch ``nvdlav1``, with its
``NV_NVDLA_CMAC_CORE_MAC_mul`` / ``_exp`` / ``_nan`` units and ``NV_DW02_tree`` /
``NV_DW_minmax``, ``DESIGNWARE_NOEXIST``) runs in Icarus in fp16 direct-convolution mode, fed
as ``NV_NVDLA_CMAC_CORE_active`` feeds it (operand magnitudes shifted by the exponent's low
bits, 3-bit exponents, non-zero and NaN flags; the preprocessing is ours, in
:func:`_cell_inputs`); its 44-bit partial sums and NaN flags are compared with the model. The
sources are read with ``git show`` from ``NVDLA_HW_GIT`` into a temporary directory; nothing of
NVDLA's is kept here. Skipped without ``NVDLA_HW_GIT`` or iverilog.

    NVDLA_HW_GIT=<nvdla/hw git dir> python -m pytest -m slow tests/test_cmac_fp16.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import numpy as np
import pytest

from sim.conv.cmac import fp16_mac_cell, fp16_psum_value
from sim.nvfloat import fp16_from_float, fp16_to_float

GIT = os.environ.get("NVDLA_HW_GIT")
SPECIAL = np.array([0, 0x8000, 1, 0x8001, 0x3FF, 0x83FF, 0x400, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF,
                    0x7C01, 0xFE00, 0x7FFF, 0x3C00, 0x0200])


def _vectors(n, seed):
    """n atoms of 64 (weight, data) fp16 pairs and weight masks: random codes over all
    exponents, rows with a growing share of special codes (zeros, denormals, infinities,
    NaNs, extremes), NaNs kept in about 30% of the rows, 10% of the weight masks clear."""
    rng = np.random.default_rng(seed)

    def rnd():
        return ((rng.integers(0, 2, (n, 64)) << 15) | (rng.integers(0, 32, (n, 64)) << 10)
                | rng.integers(0, 1024, (n, 64)))

    wt, dat = rnd(), rnd()
    nan_row = rng.random(n) < 0.3
    for a in (wt, dat):
        sel = rng.random((n, 64)) < np.linspace(0, 0.6, n)[:, None]
        a[sel] = rng.choice(SPECIAL, int(sel.sum()))
        nan = (((a >> 10) & 31) == 31) & ((a & 1023) != 0)
        a[nan & ~nan_row[:, None]] = 0x7C00
    # narrow exponent spread in a third of the rows (most products survive the alignment)
    narrow = rng.random(n) < 1 / 3
    for a in (wt, dat):
        e = rng.integers(13, 18, (n, 64))
        a[narrow] = ((a[narrow] & 0x83FF) | (e[narrow] << 10))
    return wt, dat, rng.random((n, 64)) < 0.9


def _digest(x):
    return hashlib.sha256(np.asarray(x, dtype="<i8").tobytes()).hexdigest()[:16]


def _value(w, d):
    psum, nan = fp16_mac_cell(fp16_from_float(w), fp16_from_float(d))
    assert not nan
    return float(fp16_psum_value(psum))


def test_known_answers():
    assert _value([1.0, 2.0], [1.0, -3.0]) == -5.0
    psum, _ = fp16_mac_cell([0x3C00], [0x3C00])
    assert psum == (24 << 38) | (1 << 26)                     # exponent field 4 x (3 + 3)
    assert _value([0.5] * 64, [0.25] * 64) == 8.0
    # an infinity is the number 2^16
    assert float(fp16_psum_value(fp16_mac_cell([0x7C00], [0x3C00])[0])) == 65536.0
    assert float(fp16_psum_value(fp16_mac_cell([0xFC00], [0x4000])[0])) == -131072.0
    # denormals are exact: 2^-24 x 2^-24
    assert float(fp16_psum_value(fp16_mac_cell([0x0001], [0x0001])[0])) == 2.0 ** -48
    # zeros (either sign) take no part: a zero sum with exponent field 0
    assert fp16_mac_cell([0x8000, 0], [0x3C00, 0x8000])[0] == 0
    assert fp16_mac_cell([0x3C00, 0], [0x8000, 0])[0] == 0
    # ... unless a weight mask marks the zero weight: its exponent then counts (4 x (0 + 3))
    assert fp16_mac_cell([0x8000, 0], [0x3C00, 0x8000], [True, False])[0] == 12 << 38


def test_alignment_drops_small_products():
    # 2^15 x 2^15 fixes the alignment (coarse exponents 7 + 7)
    big = [2.0 ** 15, 2.0 ** 15]
    assert _value([2.0 ** 15, 1.0], [2.0 ** 15, 2.0 ** -12]) == 2.0 ** 30   # 11 steps: dropped
    assert _value(big, [2.0 ** 15, 2.0 ** -9]) == 2.0 ** 30 + 64            # 6 steps: kept
    # ... but its bits below the aligned window are lost (truncated, not rounded): 96 -> 64
    assert _value(big, [2.0 ** 15, 1.5 * 2.0 ** -9]) == 2.0 ** 30 + 64


def test_weight_mask_and_exponent_of_zero_weights():
    # a zero weight counts in the alignment only when a mask marks it (CSC never does)
    w = fp16_from_float([0.0, 1.0 + 2.0 ** -10])
    d = fp16_from_float([2.0 ** 15, 2.0 ** -4])
    kept = fp16_psum_value(fp16_mac_cell(w, d, [False, True])[0])
    cut = fp16_psum_value(fp16_mac_cell(w, d, [True, True])[0])
    assert kept == (1 + 2.0 ** -10) * 2.0 ** -4 and cut < kept
    assert fp16_psum_value(fp16_mac_cell(w, d)[0]) == kept


def test_nan_atoms():
    nan_w, nan_d = 0xFE01, 0x7C05
    psum, nan = fp16_mac_cell([0x3C00, nan_w], [nan_d, 0x3C00])
    assert nan and psum == (0x3F << 38) | ((0x400 | 0x201) << 27)   # the weight's NaN first
    psum, nan = fp16_mac_cell([0x3C00, 0], [nan_d, 0x3C00])
    assert nan and psum == (0x3F << 38) | (0x005 << 27)
    # a masked weight NaN does not count
    assert not fp16_mac_cell([nan_w], [0x3C00], [False])[1]
    assert np.isnan(fp16_psum_value(psum))


def test_close_to_exact_sum():
    """Narrow exponent spread: the cell's sum is within the truncation of every product."""
    rng = np.random.default_rng(11)
    w = fp16_from_float(rng.uniform(-2, 2, (500, 64)))
    d = fp16_from_float(rng.uniform(-2, 2, (500, 64)))
    got = fp16_psum_value(fp16_mac_cell(w, d)[0])
    exact = (fp16_to_float(w) * fp16_to_float(d)).sum(-1)
    scale = np.abs(fp16_to_float(w) * fp16_to_float(d)).max(-1)
    assert np.all(np.abs(got - exact) <= scale * 2.0 ** -20 * 64)


def test_digest():
    wt, dat, wm = _vectors(2000, 1)
    assert _digest(np.stack([wt, dat, wm])) == "2845ad9e6294c091", "operand generator changed"
    psum, nan = fp16_mac_cell(wt, dat, wm)
    assert _digest(psum) == "f830eef0093cc3ed" and int(nan.sum()) == 395


# -----------------------------------------------------------------------------------------
# NVDLA's Verilog
# -----------------------------------------------------------------------------------------
_SOURCES = ["vmod/nvdla/cmac/NV_NVDLA_CMAC_CORE_mac.v",
            "vmod/nvdla/cmac/NV_NVDLA_CMAC_CORE_MAC_mul.v",
            "vmod/nvdla/cmac/NV_NVDLA_CMAC_CORE_MAC_exp.v",
            "vmod/nvdla/cmac/NV_NVDLA_CMAC_CORE_MAC_nan.v", "vmod/vlibs/NV_DW02_tree.v",
            "vmod/vlibs/NV_DW_minmax.v"]

_TB = """`timescale 1ns/1ps
module tb;
reg clk = 0, rstn = 0, cfg_reg_en = 0;
reg [1023:0] dd, wd; reg [63:0] dn, wn, dm, wm; reg [127:0] dz, wz; reg [191:0] de, we;
reg [103:0] dp, wp; reg pre = 0;
wire [175:0] out; wire out_nan, out_pvld;
NV_NVDLA_CMAC_CORE_mac u (.nvdla_core_clk(clk), .nvdla_wg_clk(clk), .nvdla_core_rstn(rstn),
  .cfg_is_fp16(1'b1), .cfg_is_int16(1'b0), .cfg_is_int8(1'b0), .cfg_is_wg(1'b0),
  .cfg_reg_en(cfg_reg_en), .dat_actv_data(dd), .dat_actv_nan(dn), .dat_actv_nz(dz),
  .dat_actv_pvld(dp), .dat_pre_exp(de), .dat_pre_mask(dm), .dat_pre_pvld(pre),
  .dat_pre_stripe_end(pre), .dat_pre_stripe_st(pre), .wt_actv_data(wd), .wt_actv_nan(wn),
  .wt_actv_nz(wz), .wt_actv_pvld(wp), .wt_sd_exp(we), .wt_sd_mask(wm), .wt_sd_pvld(pre),
  .mac_out_data(out), .mac_out_nan(out_nan), .mac_out_pvld(out_pvld));
reg [1023:0] m_dd[0:`N-1], m_wd[0:`N-1];
reg [63:0] m_dn[0:`N-1], m_wn[0:`N-1], m_dm[0:`N-1], m_wm[0:`N-1];
reg [127:0] m_dz[0:`N-1], m_wz[0:`N-1];
reg [191:0] m_de[0:`N-1], m_we[0:`N-1];
integer i, fd;
always #5 clk = ~clk;
always @(posedge clk) if (out_pvld) $fdisplay(fd, "%h %b", out[43:0], out_nan);
initial begin
  $readmemh("dd.hex", m_dd); $readmemh("wd.hex", m_wd); $readmemh("dn.hex", m_dn);
  $readmemh("wn.hex", m_wn); $readmemh("dz.hex", m_dz); $readmemh("wz.hex", m_wz);
  $readmemh("de.hex", m_de); $readmemh("we.hex", m_we); $readmemh("dm.hex", m_dm);
  $readmemh("wm.hex", m_wm);
  fd = $fopen("out.txt", "w");
  dp = 0; wp = 0;
  #12 rstn = 1; @(negedge clk) cfg_reg_en = 1; @(negedge clk) cfg_reg_en = 0;
  repeat (3) @(negedge clk);
  // one atom a cycle: exponents ("pre") of atom i with the operands ("actv") of atom i-1
  for (i = 0; i <= `N; i = i + 1) begin
    pre = i < `N;
    if (i < `N) begin de = m_de[i]; dm = m_dm[i]; we = m_we[i]; wm = m_wm[i]; end
    if (i > 0) begin
      dp = {104{1'b1}}; wp = {104{1'b1}};
      dd = m_dd[i-1]; wd = m_wd[i-1]; dn = m_dn[i-1]; wn = m_wn[i-1];
      dz = m_dz[i-1]; wz = m_wz[i-1];
    end
    @(negedge clk);
  end
  dp = 0; wp = 0;
  repeat (20) @(negedge clk);
  $fclose(fd);
  $finish;
end
endmodule
"""


def _pack(rows, bits):
    out = []
    for r in rows:
        v = 0
        for i, x in enumerate(r):
            v |= int(x) << (bits * i)
        out.append("%x" % v)
    return "\n".join(out) + "\n"


def _cell_inputs(wt, dat, wmask):
    """The MAC cell's inputs as NVDLA's CMAC active stage forms them from CSC's atoms."""
    def operand(x, mask):
        e, m = (x >> 10) & 31, x & 1023
        sig = np.where(e != 0, 1024 | m, m << 1)
        op = (x & 0x8000) | ((sig << (e & 3)) & 0x7FFF)
        return op, np.where(mask, e >> 2, 0), (e == 31) & (m != 0) & mask

    dmask = (dat & 0x7FFF) != 0
    wop, wexp, wnan = operand(wt, wmask)
    dop, dexp, dnan = operand(dat, dmask)
    dnz = dmask & ~dnan.any(-1, keepdims=True)
    wnz = wmask & ~wnan.any(-1, keepdims=True)
    return {"dd": _pack(dop, 16), "wd": _pack(wop, 16), "dn": _pack(dnan, 1),
            "wn": _pack(wnan, 1), "dz": _pack(np.repeat(dnz, 2, -1), 1),
            "wz": _pack(np.repeat(wnz, 2, -1), 1), "de": _pack(dexp, 3), "we": _pack(wexp, 3),
            "dm": _pack(dnz, 1), "wm": _pack(wnz, 1)}


@pytest.mark.slow
@pytest.mark.skipif(not GIT or not shutil.which("iverilog"),
                    reason="needs NVDLA_HW_GIT (nvdla/hw git dir) and iverilog")
@pytest.mark.parametrize("seed", [2])
def test_against_nvdla_mac_cell(tmp_path, seed):
    n = 2000
    wt, dat, wm = _vectors(n, seed)
    names = []
    for src in _SOURCES:
        text = subprocess.run(["git", "-C", GIT, "show", f"nvdlav1:{src}"], check=True,
                              capture_output=True, text=True).stdout
        (tmp_path / os.path.basename(src)).write_text(text)
        names.append(os.path.basename(src))
    (tmp_path / "tb.v").write_text(_TB)
    for k, v in _cell_inputs(wt, dat, wm).items():
        (tmp_path / f"{k}.hex").write_text(v)
    subprocess.run(["iverilog", "-g2005", "-DDESIGNWARE_NOEXIST", f"-DN={n}", "-o", "tb.vvp",
                    "-s", "tb", "tb.v", *names], cwd=tmp_path, check=True)
    subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, check=True, capture_output=True)
    rows = [line.split() for line in (tmp_path / "out.txt").read_text().splitlines()]
    assert len(rows) == n
    hw = np.array([int(r[0], 16) for r in rows], dtype=np.int64)
    hw_nan = np.array([r[1] == "1" for r in rows])
    psum, nan = fp16_mac_cell(wt, dat, wm)
    bad = np.flatnonzero((hw != psum) | (hw_nan != nan))
    assert bad.size == 0, f"{bad.size} atoms differ, first {bad[:5]}"
    assert 0.1 < nan.mean() < 0.4
