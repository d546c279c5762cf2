"""Winograd convolution (``D_MISC_CFG.CONV_MODE=WINOGRAD``): decode, rules and the layer's sums.

NVDLA v1 computes a 3 x 3 convolution (of the stride-extended cube) as F(2x2, 3x3): the CDMA
pads the feature input on all four sides with ``D_ZERO_PADDING_VALUE`` (its low byte for
int8) and writes it channel-extended by the stride (:func:`.winograd_math.extend_channels`);
the CSC reads the 4 x 4 input tile of each 2 x 2 output tile, its PRA computes ``B^T d B``
(shifted by ``PRA_TRUNCATE``); the CMAC multiplies by the stored 4 x 4 weights
(``G W G^T``, prepared by the compiler: :func:`sim.formats.prepare_winograd_weights`), sums 4
channels and applies ``A^T M A``; CACC sums the channel blocks and truncates as in direct
convolution. SDP (``D_FEATURE_MODE_CFG.WINOGRAD=ON``) writes the ordinary output cube.

:func:`decode_winograd` checks the registers after :func:`sim.conv.program.decode` has checked
the feature input (precisions, cube in memory); the rules follow NVDLA's CDMA / CSC (RTL
``NV_NVDLA_CDMA_wg``, ``NV_NVDLA_CSC_dl`` / ``_sg``; C model ``WinoConv*Sequencer*``):

* feature input only, no precision conversion, one batch;
* the channels a whole number of 32-byte memory atoms;
* the padded input (PAD_LEFT + width + PAD_RIGHT, PAD_TOP + height + PAD_BOTTOM) a multiple of
  4 x the stride; CDMA's and CSC's ``D_DATAIN_SIZE_EXT`` = padded / stride, CSC's channels
  the extended ``channels x Sx x Sy``;
* the CSC's own stride and dilation 0 (the stride is in the channels), its padding plays no
  part (the CDMA wrote it);
* 4 x 4 weights over the extended channels, ``BYTE_PER_KERNEL`` = 16 x C_ext x bytes;
* the output a multiple of 4 wide and high, at most the extended input less 4 (a tile at
  (2ty, 2tx) reads 4 lines / columns); ``ATOMICS / 4`` + 1 = the 2 x 2 tiles (NVDLA's
  sequencer drops the low 2 bits);
* ``ENTRY_PER_SLICE`` + 1 = W_ext x C_ext x bytes / entry bytes, at most 1023 + 1 (the CSC
  asserts the top two bits of the field clear); the data banks hold H_ext such lines;
* ``RLS_SLICES`` + 1 a multiple of 4 (the CBUF is written 4 extended lines at a time);
* ``CLIP_TRUNCATE`` at most 16; ``PRA_TRUNCATE`` 3 acts as 2 (the CSC RTL clamps it; NVDLA's
  C model shifts by 3: the RTL is followed).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sim.formats.common import round_shift_right, saturate
from sim.formats.winograd import winograd_weight_offsets
from sim.nvfloat import fp16_is_nan

from .program import (FP16, INT8, PRECISIONS, ConvProgram, FeatureInput,
                      WinogradInput, _BYTES, _err, _same, cbuf_banks, clip_truncate,
                      reuse_flags, weight_surface)
from .cdma import fetch_feature, fp16_nan_inf
from .winograd_math import extend_channels, input_tiles, place_tiles, poa, pra_fp16, pra_int

__all__ = ["decode_winograd", "fetch_winograd", "winograd_weights", "winograd_sums",
           "winograd_fp16_psums",
           "pad_element", "WINO_ATOM"]

#: the channels of a Winograd layer are whole 32-byte atoms (NVDLA's CDMA writes 4 x 4 x 32
#: bytes sub-cubes)
WINO_ATOM = 32
#: the widest ENTRY_PER_SLICE field a Winograd layer may program
MAX_ENTRIES_FIELD = 1023


def decode_winograd(cfg, cdma, csc, cacc, f: FeatureInput) -> ConvProgram:
    """The Winograd part of :func:`sim.conv.program.decode` (see the module docstring)."""
    W = "CDMA.D_MISC_CFG.CONV_MODE=WINOGRAD"
    prec, ebytes = f.precision, _BYTES[f.precision]
    if cfg.memory_atom != WINO_ATOM or cfg.atomic_c % 16:
        _err(W, f"Winograd needs 32-byte memory atoms and Atomic-C a multiple of 16 (this "
             f"build: {cfg.memory_atom}, {cfg.atomic_c})")
    if f.batches != 1:
        _err(f"CDMA.D_BATCH_NUMBER.BATCHES={f.batches - 1}", "Winograd convolves one batch")
    if (f.channels * ebytes) % WINO_ATOM:
        _err(f"CDMA.D_DATAIN_SIZE_1.DATAIN_CHANNEL={f.channels - 1}",
             f"Winograd channels must fill whole {WINO_ATOM}-byte atoms: {f.channels} "
             f"{PRECISIONS[prec]} channels are {f.channels * ebytes} bytes")
    pad = cdma.D_ZERO_PADDING
    pl, pr, pt, pb = pad.PAD_LEFT, pad.PAD_RIGHT, pad.PAD_TOP, pad.PAD_BOTTOM
    sx = cdma.D_CONV_STRIDE.CONV_X_STRIDE + 1
    sy = cdma.D_CONV_STRIDE.CONV_Y_STRIDE + 1
    tw, th = pl + f.width + pr, pt + f.height + pb
    for axis, total, s, fld in (("width", tw, sx, "PAD_RIGHT"), ("height", th, sy, "PAD_BOTTOM")):
        if total % (4 * s):
            _err(f"CDMA.D_ZERO_PADDING.{fld}={pr if fld == 'PAD_RIGHT' else pb}",
                 f"the padded {axis} ({total}) must be a multiple of 4 x stride ({4 * s})")
    ext_w, ext_h, ext_c = tw // sx, th // sy, f.channels * sx * sy
    for blk, v in (("CDMA", cdma), ("CSC", csc)):
        _same("padded width / CONV_X_STRIDE", ext_w - 1,
              f"{blk}.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT",
              v.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT, "the extended input")
    _same("padded height / CONV_Y_STRIDE", ext_h - 1,
          "CDMA.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT", cdma.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT,
          "the extended input")
    _same("DATAIN_CHANNEL + 1 x CONV_X_STRIDE x CONV_Y_STRIDE", ext_c - 1,
          "CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT", csc.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT,
          "the channel-extended input")
    # with DATA_REUSE the CSC may convolve kept lines too (checked when the CBUF is loaded)
    in_h = csc.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1
    if in_h % 4:
        _err(f"CSC.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT={in_h - 1}",
             "Winograd input lines come in groups of 4: must be a multiple of 4, less 1")
    for reg, fld in (("D_CONV_STRIDE_EXT", "CONV_X_STRIDE_EXT"),
                     ("D_CONV_STRIDE_EXT", "CONV_Y_STRIDE_EXT"),
                     ("D_DILATION_EXT", "X_DILATION_EXT"), ("D_DILATION_EXT", "Y_DILATION_EXT")):
        if csc[reg][fld]:
            _err(f"CSC.{reg}.{fld}={csc[reg][fld]}",
                 "must be 0 in Winograd (the CDMA extends the channels by the stride)")

    entries = ext_w * ext_c * ebytes // cfg.cbuf_entry_bytes
    if ext_w * ext_c * ebytes % cfg.cbuf_entry_bytes:
        entries += 1
    for blk, v in (("CDMA", cdma), ("CSC", csc)):
        e = v.D_ENTRY_PER_SLICE.ENTRIES
        if e != entries - 1:
            _err(f"{blk}.D_ENTRY_PER_SLICE.ENTRIES={e}",
                 f"must be {entries - 1}: an extended line of {ext_w} x {ext_c} "
                 f"{PRECISIONS[prec]} elements takes {entries} CBUF entries")
    if entries - 1 > MAX_ENTRIES_FIELD:
        _err(f"CSC.D_ENTRY_PER_SLICE.ENTRIES={entries - 1}",
             f"at most {MAX_ENTRIES_FIELD} in Winograd (NVDLA's CSC)")
    data_bank, weight_bank = cbuf_banks(cfg, cdma, csc, in_h, entries,
                                        f"{in_h} extended lines x {entries}")

    kw = csc.D_WEIGHT_SIZE_EXT_0.WEIGHT_WIDTH_EXT + 1
    kh = csc.D_WEIGHT_SIZE_EXT_0.WEIGHT_HEIGHT_EXT + 1
    if (kw, kh) != (4, 4):
        _err(f"CSC.D_WEIGHT_SIZE_EXT_0=({kw - 1}, {kh - 1})",
             "Winograd weights are 4 x 4 (WEIGHT_WIDTH_EXT = WEIGHT_HEIGHT_EXT = 3)")
    wc = csc.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT + 1
    _same("CSC.D_DATAIN_SIZE_EXT_1.DATAIN_CHANNEL_EXT", ext_c - 1,
          "CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_CHANNEL_EXT", wc - 1, "kernels span the input")
    kernels = csc.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL + 1
    _same("CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL", kernels - 1,
          "CDMA.D_WEIGHT_SIZE_1.WEIGHT_KERNEL", cdma.D_WEIGHT_SIZE_1.WEIGHT_KERNEL,
          "one kernel count")
    bpk = 16 * ext_c * ebytes
    _same("16 x extended channels x element bytes", bpk - 1,
          "CDMA.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL", cdma.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL,
          "bytes per 4 x 4 kernel")
    wbytes, weight_base, compression = weight_surface(cfg, cdma, csc, prec, kernels, bpk,
                                                      data_bank, weight_bank)

    ow = csc.D_DATAOUT_SIZE_0.DATAOUT_WIDTH + 1
    oh = csc.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT + 1
    oc = csc.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL + 1
    for o, n, fld in ((ow, ext_w, "DATAOUT_WIDTH"), (oh, in_h, "DATAOUT_HEIGHT")):
        if o % 4:
            _err(f"CSC.D_DATAOUT_SIZE_0.{fld}={o - 1}",
                 "Winograd outputs are a multiple of 4 wide and high (must be 4n - 1)")
        if o > n - 4:
            _err(f"CSC.D_DATAOUT_SIZE_0.{fld}={o - 1}",
                 f"at most the extended input less 4 ({n} - 4): each 2 x 2 tile reads 4 x 4")
    _same("CSC.D_WEIGHT_SIZE_EXT_1.WEIGHT_KERNEL", kernels - 1,
          "CSC.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL", oc - 1, "one output channel per kernel")
    for reg, fld in (("D_DATAOUT_SIZE_0", "DATAOUT_WIDTH"), ("D_DATAOUT_SIZE_0", "DATAOUT_HEIGHT"),
                     ("D_DATAOUT_SIZE_1", "DATAOUT_CHANNEL")):
        _same(f"CSC.{reg}.{fld}", csc[reg][fld], f"CACC.{reg}.{fld}", cacc[reg][fld],
              "one output cube")
    tiles = ow * oh // 4
    atomics = csc.D_ATOMICS.ATOMICS
    if atomics // 4 + 1 != tiles:
        _err(f"CSC.D_ATOMICS.ATOMICS={atomics}",
             f"ATOMICS / 4 + 1 must be the {tiles} 2 x 2 output tiles ({4 * tiles - 4} .. "
             f"{4 * tiles - 1}; NVDLA's sequencer drops the low 2 bits)")
    clip = clip_truncate(cacc)
    misc = reuse_flags(cdma, csc)
    rls = csc.D_RELEASE.RLS_SLICES + 1
    if not misc.SKIP_DATA_RLS:
        if rls % 4:
            _err(f"CSC.D_RELEASE.RLS_SLICES={rls - 1}",
                 "Winograd releases whole groups of 4 extended lines (must be 4n - 1)")
        if rls > in_h:
            _err(f"CSC.D_RELEASE.RLS_SLICES={rls - 1}",
                 f"cannot release {rls} lines of a {in_h}-line extended input")
    pra = csc.D_PRA_CFG.PRA_TRUNCATE
    return ConvProgram(
        precision=prec, in_precision=f.in_precision, width=f.width, height=f.height,
        channels=f.channels, batches=1, base=f.base, line_stride=f.line_stride,
        surf_stride=f.surf_stride, batch_stride=f.batch_stride, line_packed=f.line_packed,
        surf_packed=f.surf_packed, ram_type=f.ram_type, grain=f.grain, entries=entries,
        cvt=f.cvt, in_width=ext_w, in_height=in_h, in_channels=ext_c, kernels=kernels, kw=4,
        kh=4, byte_per_kernel=bpk, weight_bytes=wbytes, weight_base=weight_base,
        weight_ram=f.weight_ram, stride_x=sx, stride_y=sy, dil_x=1, dil_y=1, pad_left=0,
        pad_top=0, pad_value=cdma.D_ZERO_PADDING_VALUE.PAD_VALUE, out_width=ow, out_height=oh,
        out_channels=oc, data_bank=data_bank, weight_bank=weight_bank,
        data_reuse=bool(misc.DATA_REUSE), weight_reuse=bool(misc.WEIGHT_REUSE),
        skip_data_rls=bool(misc.SKIP_DATA_RLS), skip_weight_rls=bool(misc.SKIP_WEIGHT_RLS),
        rls_slices=rls, clip_truncate=clip, compression=compression,
        nan_to_zero=f.nan_to_zero,
        winograd=WinogradInput(pad=(pl, pr, pt, pb),
                               pad_value=cdma.D_ZERO_PADDING_VALUE.PAD_VALUE,
                               pra_truncate=min(pra, 2), pra_truncate_field=pra))


def pad_element(p: ConvProgram) -> int:
    """The pad element the CDMA writes, as a signed value of the input precision (int8: the
    low byte of ``D_ZERO_PADDING_VALUE``; 16-bit: all of it, fp16 as its code)."""
    v = p.winograd.pad_value
    if p.in_precision == INT8:
        v &= 0xFF
        return v - 0x100 if v & 0x80 else v
    v &= 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def fetch_winograd(cfg, p: ConvProgram, mem, stats: dict | None = None) -> np.ndarray:
    """What the CDMA writes into the CBUF for a Winograd layer: the padded input, channel
    extended, int64 [1, H_ext, W_ext, C_ext] in the processing precision.

    The CDMA feeds the pad elements through the input convertor like the fetched data (NVDLA's
    RTL puts them into the data stream before ``NV_NVDLA_CDMA_cvt``). fp16: its NaN / infinity
    counters count every element it writes, padding included, and ``D_NAN_FLUSH_TO_ZERO``
    flushes the written NaNs (padding included)."""
    raw_stats: dict = {}
    # fetch unflushed, unconverted; the flush and the convertor apply to the padded cube
    cube = fetch_feature(cfg, replace(p, cvt=None, nan_to_zero=False), mem, raw_stats)
    pl, pr, pt, pb = p.winograd.pad
    C = p.channels
    padded = np.full((pt + p.height + pb, pl + p.width + pr, C), pad_element(p), np.int64)
    padded[pt:pt + p.height, pl:pl + p.width] = cube[0, :, :, :C]
    if p.in_precision == FP16:
        if stats is not None:
            stats["data"] = fp16_nan_inf(padded)
        if p.nan_to_zero:
            padded = np.where(fp16_is_nan(padded & 0xFFFF), 0, padded)
    if p.cvt is not None:
        off, scale, trunc = p.cvt
        padded = saturate(round_shift_right((padded - off) * scale, trunc),
                          8 if p.precision == INT8 else 16)
    return extend_channels(padded, p.stride_x, p.stride_y)[None]


def winograd_weights(cfg, p: ConvProgram, values: np.ndarray) -> np.ndarray:
    """The stored 4 x 4 weights [K, C_ext, 4, 4] from the weight surface's elements in memory
    order (:func:`sim.conv.cdma.weight_values`): Winograd's phase-2 grouping of Atomic-K
    kernels (half for 16-bit precisions) and 4-channel small cubes."""
    group_k = cfg.atomic_k if p.precision == INT8 else max(cfg.atomic_k // 2, 1)
    return values[winograd_weight_offsets(p.kernels, p.in_channels, group_k)]


def winograd_sums(p: ConvProgram, cube: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The exact sums int64 [1, K, Ho, Wo] of an integer Winograd layer (cube [1, H_ext,
    W_ext, C_ext] as the CBUF holds it, weights [K, C_ext, 4, 4] as stored): PRA, the MAC
    cells' products and 4-channel sums, POA, CACC's sum over the channel blocks (exact
    integers: the order does not matter)."""
    bits = 8 if p.precision == INT8 else 16
    t = input_tiles(cube[0], p.out_height, p.out_width)            # [Ty, Tx, C, 4, 4]
    v = pra_int(t, p.winograd.pra_truncate, bits)
    Ty, Tx, C = v.shape[:3]
    m = np.einsum("tcp,kcp->ktp", v.reshape(Ty * Tx, C, 16),
                  weights.reshape(-1, C, 16).astype(np.int64))
    y = poa(m.reshape(-1, Ty, Tx, 4, 4))                           # [K, Ty, Tx, 2, 2]
    return place_tiles(y)[None]



def winograd_fp16_psums(p: ConvProgram, cube: np.ndarray, weights: np.ndarray,
                        kernel_chunk: int = 16):
    """The CMAC partial sums of an fp16 Winograd layer in the order CACC folds them:
    (psums int64 [C_ext / 4, 1, K, Ho, Wo], NaN flags of the same shape), one per 4-channel
    block (NVDLA's sequencer walks the blocks in channel order for each output tile). Each
    block is one MAC cell operation in Winograd mode (:func:`sim.conv.cmac.fp16_wino_cell`)
    on the PRA's fp16 output (:func:`.winograd_math.pra_fp16`) and the stored weights; the
    cell's four results are the tile's 2 x 2 outputs. Kernels are taken ``kernel_chunk`` at a
    time (memory only)."""
    from .cmac import fp16_wino_cell
    v = pra_fp16(input_tiles(cube[0] & 0xFFFF, p.out_height, p.out_width))  # [Ty,Tx,C,4,4]
    Ty, Tx, C = v.shape[:3]
    nb = C // 4
    # [T, nb, 64]: element (y x 4 + x) x 4 + c of each block
    dv = v.reshape(Ty * Tx, nb, 4, 16).transpose(0, 1, 3, 2).reshape(Ty * Tx, nb, 64)
    w = (np.asarray(weights, np.int64) & 0xFFFF).reshape(-1, nb, 4, 16)
    wv = w.transpose(0, 1, 3, 2).reshape(-1, nb, 64)
    K = wv.shape[0]
    ps = np.zeros((Ty * Tx, K, nb, 4), np.int64)
    nan = np.zeros((Ty * Tx, K, nb), bool)
    for k0 in range(0, K, kernel_chunk):
        k1 = min(K, k0 + kernel_chunk)
        ps[:, k0:k1], nan[:, k0:k1] = fp16_wino_cell(wv[None, k0:k1], dv[:, None])
    # [T, K, nb, 4] -> [nb, K, Ty, Tx, 2, 2] -> [nb, K, Ho, Wo]
    ps = place_tiles(ps.reshape(Ty, Tx, K, nb, 2, 2).transpose(3, 2, 0, 1, 4, 5))
    nan = np.broadcast_to(nan.reshape(Ty, Tx, K, nb).transpose(3, 2, 0, 1)[..., None, None],
                          (nb, K, Ty, Tx, 2, 2))
    return ps[:, None], place_tiles(np.ascontiguousarray(nan))[:, None]
