"""CMAC golden model: Atomic-K dot products of Atomic-C operands, summed over the layer.

int8 and int16 products are exact (NVDLA's MAC cells keep every bit: an int8 partial sum of
Atomic-C products is at most 22 bits on nv_small), so the layer's raw sums are the exact
integer convolution; the CMAC_A / CMAC_B halves each take half of the kernels of an Atomic-K
group, which does not change the values.
"""

from __future__ import annotations

import numpy as np

from .csc import padded_input, windows
from .program import ConvProgram

__all__ = ["convolve", "convolve_fp16", "fp16_mac_cell", "fp16_wino_cell", "fp16_psum_value",
           "FP16_PSUM_BITS",
           "FP16_PSUM_FRAC"]


def convolve(p: ConvProgram, cube: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Exact sums int64 [B, K, Ho, Wo] of the layer (cube [B, H, W, C*], weights [K, C, R, S]).

    One numpy contraction per kernel position; no per-element loops.
    """
    padded = padded_input(p, cube)
    B = cube.shape[0]
    acc = np.zeros((B, p.out_height, p.out_width, p.kernels), dtype=np.int64)
    w = weights.astype(np.int64)
    for ky, kx, win in windows(p, padded):
        # [B, Ho, Wo, C] . [C, K] -> [B, Ho, Wo, K]
        acc += np.tensordot(win, w[:, :, ky, kx].T, axes=([3], [0]))
    return acc.transpose(0, 3, 1, 2)


# -----------------------------------------------------------------------------------------
# fp16: NVDLA's MAC cell, bit for bit
# -----------------------------------------------------------------------------------------
# The fp16 MAC cell does not form IEEE products. Each fp16 operand becomes a 15-bit magnitude
# and a 3-bit "coarse" exponent: the exponent field's low two bits shift the significand
# (implied 1 for a normal number; a denormal's mantissa doubled, i.e. read with exponent 1),
# its high three bits stay as the exponent, so the value is ``mag x 2^(4 x hi - 25)``. An
# infinity is the number 2^16 (exponent 31, mantissa 0); a NaN is handled apart. A cell sums the
# products of an atom (64 operand pairs on NVDLA's full config) aligned to the largest coarse
# exponent sum of the atom's non-zero pairs, in steps of 4 bits; a product 8 or more steps
# below is dropped. Each product is a radix-4 Booth multiplier (sign folded into the recoding)
# reduced by carry-save adder trees to two 32-bit words, and those two words are shifted right
# separately, so the dropped bits are not a plain truncation of the product; the sign-extension
# constants of the Booth rows are shifted with them and compensated per product by a constant
# that depends only on the shift. The result is exact integer arithmetic on those words, of
# which the cell keeps 38 bits (a two's-complement sum), next to the 6-bit
# exponent ``4 x max``. An atom with a NaN (in any pair, zero or not) delivers the NaN of the
# first one, weights before data, lowest channel first: exponent field all ones, its sign and
# mantissa. Checked against NVDLA's Verilog (``NV_NVDLA_CMAC_CORE_mac`` and its mul / exp /
# nan units); see tests/test_cmac_fp16.py.

FP16_PSUM_BITS = 44      #: width of a cell's fp16 partial sum (6-bit exponent, 38-bit sum)
FP16_PSUM_FRAC = 50      #: value = sum x 2^(exponent field - FP16_PSUM_FRAC)


def _csa_tree(rows, width):
    """Carry-save reduction of ``rows`` (int64 arrays) to two ``width``-bit words, grouping
    three rows at a time from the first, leftovers carried over, until two remain."""
    mask = (1 << width) - 1
    a = [np.asarray(r, np.int64) & mask for r in rows]
    while len(a) > 2:
        g = len(a) // 3
        t = []
        for i in range(g):
            x, y, z = a[3 * i:3 * i + 3]
            t += [x ^ y ^ z, (((x & y) | (y & z) | (x & z)) << 1) & mask]
        a = t + a[3 * g:]
    return a[0], a[1]


def _booth_row(code, neg, src):
    """One radix-4 Booth row (17 bits with the inverted sign bit) and its +1 for negation."""
    c = code ^ (neg * 7)
    inv = ((c == 4) | (c == 5) | (c == 6)).astype(np.int64)
    one = (1 << 16) | src
    two = (1 << 16) | ((src << 1) & 0xFFFF)
    row = np.where((c == 1) | (c == 2), one, 1 << 16)
    row = np.where(c == 3, two, row)
    row = np.where((c == 5) | (c == 6), ~src & 0xFFFF, row)
    row = np.where(c == 4, ((~src & 0x7FFF) << 1) | 1, row)
    return row, inv


def _carry_save_product(a, b, neg):
    """The two 32-bit words whose sum (mod 2^32) is the Booth product of 15-bit magnitudes
    ``a`` x ``b`` (negated when ``neg``), plus the rows' sign-extension constant."""
    lo = (a & 0xFF) << 1
    hi = (a >> 7) & 0x1FF
    codes = [(lo >> (2 * i)) & 7 for i in range(4)] + [(hi >> (2 * i)) & 7 for i in range(4)]
    rows = [_booth_row(c, neg, b) for c in codes]

    def half(r):
        (d0, i0), (d1, i1), (d2, i2), (d3, i3) = r
        return [d0, (d1 << 2) | i0, (d2 << 4) | (i1 << 2), (d3 << 6) | (i2 << 4), i3 << 6]

    l0 = _csa_tree(half(rows[:4]), 24)
    l1 = _csa_tree(half(rows[4:]), 24)
    return _csa_tree([l0[0], l0[1], l1[0] << 8, l1[1] << 8], 32)


def _fp16_operand(x, mask):
    """(15-bit magnitude, coarse exponent (0 where masked), NaN flag) of fp16 codes."""
    e = (x >> 10) & 31
    m = x & 0x3FF
    sig = np.where(e != 0, 0x400 | m, m << 1)
    mag = (sig << (e & 3)) & 0x7FFF
    nan = (e == 31) & (m != 0) & mask
    return mag, np.where(mask, e >> 2, 0), nan


# per-product constant by shift (0..7): the shifted Booth constant's compensation
_SHIFT_CONST = np.array(
    [sum(((0xF0 >> s) >> j & 1) * ((5 if j % 2 == 0 else 80) << (8 * (j // 2))) for j in range(8))
     - (0xAAAA0000 >> (4 * s)) for s in range(8)], dtype=np.int64)


def _fp16_aligned(weights, data, weight_mask=None):
    """The fp16 cell's aligned products of atoms [..., n]: (parts int64 [..., n] -- each
    product's two carry-save words shifted to the atom's alignment, plus its constant; 0 for
    pairs that take no part --, the exponent field ``4 x max`` [...], the NaN code [...],
    NaN flags [...]). See :func:`fp16_mac_cell`."""
    w = np.asarray(weights, dtype=np.int64) & 0xFFFF
    d = np.asarray(data, dtype=np.int64) & 0xFFFF
    w, d = np.broadcast_arrays(w, d)
    wmask = ((w & 0x7FFF) != 0 if weight_mask is None
             else np.broadcast_to(np.asarray(weight_mask, bool), w.shape))
    dmask = (d & 0x7FFF) != 0
    wmag, wexp, wnan = _fp16_operand(w, wmask)
    dmag, dexp, dnan = _fp16_operand(d, dmask)
    nan_w, nan_d = wnan.any(-1), dnan.any(-1)
    live = wmask & dmask & ~(nan_w | nan_d)[..., None]
    esum = np.where(live, wexp + dexp, 0)
    emax = esum.max(-1) if esum.shape[-1] else np.zeros(esum.shape[:-1], np.int64)
    sft = emax[..., None] - esum
    take = live & (sft < 8)
    s = np.where(take, sft, 0)
    ra, rb = _carry_save_product(wmag, dmag, ((w ^ d) >> 15) & 1)
    part = (ra >> (4 * s)) + (rb >> (4 * s)) + _SHIFT_CONST[s]
    # (NVDLA adds a constant 2^38 modulo 2^46 for the rows' remaining sign extension: it
    # falls outside the 38 bits kept)
    part = np.where(take, part, 0)
    # NaN: the first one, weights then data
    nans = np.concatenate([wnan, dnan], -1)
    codes = np.concatenate([w, d], -1)
    anynan = nans.any(-1)
    first = np.take_along_axis(codes, np.argmax(nans, -1)[..., None], -1)[..., 0]
    nan_code = (0x3F << 38) | ((((first >> 15) & 1) << 10 | (first & 0x3FF)) << 27)
    return part, emax << 2, nan_code, anynan


def fp16_mac_cell(weights, data, weight_mask=None):
    """NVDLA's fp16 MAC cell on atoms: (partial sums int64 [...], NaN flags bool [...]).

    ``weights`` and ``data`` are fp16 codes [..., n] (n = the atom's channel count), paired by
    channel. A pair takes part (in the alignment too) when both elements' magnitude bits are
    not all zero: CSC's element masks (its weight decoder and data loader both mark an fp16
    element by ``code & 0x7FFF != 0``). ``weight_mask`` (bool [..., n]) overrides the weight
    side, for driving the cell as NVDLA's bench does. The partial sum is a 44-bit code: bits 43..38 the
    exponent field ``4 x max coarse exponent sum``, bits 37..0 the two's-complement sum, its
    value ``sum x 2^(exponent field - 50)``; a NaN atom gives ``0x3F`` in the exponent field
    and the NaN's sign and mantissa in bits 37..27 (see :data:`FP16_PSUM_FRAC`)."""
    part, efield, nan_code, anynan = _fp16_aligned(weights, data, weight_mask)
    total = part.sum(-1) & ((1 << 38) - 1)
    return np.where(anynan, nan_code, (efield << 38) | total), anynan


#: CMAC's Winograd output transform A^T (rows: the cell's two output rows / columns)
_WINO_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.int64)


def fp16_wino_cell(weights, data, weight_mask=None):
    """NVDLA's fp16 MAC cell in Winograd mode (``cfg_is_wg``): (partial sums int64 [..., 4],
    NaN flags bool [...]).

    ``weights`` and ``data`` are fp16 codes [..., 64]: a 4 x 4 tile of 4 channels, element
    ``(y x 4 + x) x 4 + c`` (the CSC's PRA output and the stored weights). The 64 products are
    aligned once, as the direct cell aligns an atom (:func:`fp16_mac_cell`); each position's 4
    channels are summed, ``A^T M A`` gives the 2 x 2 outputs (row-major), each a 44-bit code
    with the tile's one exponent field over its 38-bit sum. A NaN anywhere gives the NaN code
    on all four."""
    part, efield, nan_code, anynan = _fp16_aligned(weights, data, weight_mask)
    m = part.reshape(*part.shape[:-1], 4, 4, 4).sum(-1)                # [..., y, x]
    y = np.matmul(np.matmul(_WINO_AT, m), _WINO_AT.T) & ((1 << 38) - 1)
    y = y.reshape(*y.shape[:-2], 4)
    out = (efield[..., None] << 38) | y
    return np.where(anynan[..., None], nan_code[..., None], out), anynan


def fp16_psum_value(psum):
    """float64 value of fp16 partial-sum codes (NaN codes give NaN)."""
    p = np.asarray(psum, dtype=np.int64)
    e = (p >> 38) & 0x3F
    s = p & ((1 << 38) - 1)
    s = np.where(s >> 37, s - (1 << 38), s)
    v = np.ldexp(s.astype(np.float64), (e - FP16_PSUM_FRAC).astype(np.int64))
    return np.where(e == 0x3F, np.nan, v)


def _convolve_fp16_image(p: ConvProgram, padded, weights, atom_c, group_atoms):
    """:func:`convolve_fp16` of an image layer: the CSC's atoms are the pre-extended kernel
    line (element ``s*C + c``: pixel ``s`` of the window, channel ``c``), with
    post-extension the row group's lines one after the other (``ri*S*C + s*C + c``), cut into
    atoms of ``atom_c`` elements (Atomic-C per channel group); per output, channel groups
    outermost, then row groups, the group's atoms innermost -- the order and the atoms in
    which the fp16 cell aligns and sums (the integer layers' order does not matter)."""
    K, C, S = p.kernels, p.in_channels, p.kw
    pe = p.image.post_extension
    w = np.asarray(weights, dtype=np.int64) & 0xFFFF
    wins = {(ky, kx): win for ky, kx, win in windows(p, padded)}
    B, Ho, Wo = wins[0, 0].shape[:3]
    rowgroups = []                                    # (data [B, Ho, Wo, L], weights [K, L])
    for r0 in range(0, p.kh, pe):
        ks = range(r0, min(p.kh, r0 + pe))
        d = np.concatenate([wins[ky, kx] for ky in ks for kx in range(S)], axis=-1)
        wv = np.concatenate([w[:, :, ky, :].transpose(0, 2, 1).reshape(K, S * C) for ky in ks],
                            axis=-1)
        rowgroups.append((d, wv))
    steps = []                                        # per row group: (psums, nans) [G, ...]
    for d, wv in rowgroups:
        L = d.shape[-1]
        G = -(-L // atom_c)
        pad_c = G * atom_c - L
        dd = np.pad(d, ((0, 0), (0, 0), (0, 0), (0, pad_c))).reshape(B, Ho, Wo, 1, G, atom_c)
        ww = np.pad(wv, ((0, 0), (0, pad_c))).reshape(K, G, atom_c)
        ps, nan = fp16_mac_cell(ww[None, None, None], dd)          # [B, Ho, Wo, K, G]
        steps.append((ps.transpose(4, 0, 3, 1, 2), nan.transpose(4, 0, 3, 1, 2)))
    ga = max(1, group_atoms)
    gmax = max(st[0].shape[0] for st in steps)
    order = [(r, g) for q in range(-(-gmax // ga)) for r in range(len(steps))
             for g in range(q * ga, min(steps[r][0].shape[0], (q + 1) * ga))]
    psums = np.stack([steps[r][0][g] for r, g in order])
    nans = np.stack([steps[r][1][g] for r, g in order])
    return psums, nans


def convolve_fp16(p: ConvProgram, cube: np.ndarray, weights: np.ndarray, atom_c: int,
                  group_atoms: int = 1):
    """The CMAC partial sums of an fp16 layer, in the order CACC receives them per output.

    ``cube`` [B, H, W, C*] and ``weights`` [K, C, R, S] hold fp16 codes (any integer form of
    the 16 bits); ``atom_c`` is the channels of one atom (a CBUF entry of 16-bit elements).
    Returns (psums int64 [G x R x S, B, K, Ho, Wo], NaN flags of the same shape): atom g
    (atom_c channels each, the last one zero-filled), kernel row r, kernel column s, in the
    order of NVDLA's sequencer (``NV_NVDLA_CSC_sg``: within a stripe, channel groups
    outermost, then kernel rows, kernel columns fastest). A channel group is Atomic-C
    channels: ``group_atoms`` atoms (Atomic-C / atom_c: 1 on nv_full, whose 128-byte entry
    holds 64 fp16 channels; 2 on builds whose entries are Atomic-C bytes, e.g. nv_small +
    fp16, where this core's CSC sends a group's two entries one after the other for each
    kernel position), the group's atoms innermost."""
    padded = padded_input(p, cube) & 0xFFFF
    if p.image is not None:
        return _convolve_fp16_image(p, padded, weights, atom_c, group_atoms)
    B, _, _, C = padded.shape
    G = -(-C // atom_c)
    pad_c = G * atom_c - C
    w = np.asarray(weights, dtype=np.int64) & 0xFFFF
    w = np.pad(w, ((0, 0), (0, pad_c), (0, 0), (0, 0))).reshape(p.kernels, G, atom_c,
                                                                  p.kh, p.kw)
    steps = {}
    for ky, kx, win in windows(p, padded):
        d = np.pad(win, ((0, 0), (0, 0), (0, 0), (0, pad_c)))
        d = d.reshape(B, p.out_height, p.out_width, 1, G, atom_c)
        ps, nan = fp16_mac_cell(w[None, None, None, :, :, :, ky, kx], d)   # [B, Ho, Wo, K, G]
        steps[ky, kx] = (ps.transpose(4, 0, 3, 1, 2), nan.transpose(4, 0, 3, 1, 2))
    ga = max(1, group_atoms)
    order = [(g, ky, kx) for q in range(-(-G // ga)) for ky in range(p.kh)
             for kx in range(p.kw) for g in range(q * ga, min(G, (q + 1) * ga))]
    psums = np.stack([steps[ky, kx][0][g] for g, ky, kx in order])
    nans = np.stack([steps[ky, kx][1][g] for g, ky, kx in order])
    return psums, nans
