"""CDMA image input: what the convolution DMA writes into the CBUF for a pixel surface.

For ``D_DATAIN_FORMAT.DATAIN_FORMAT=PIXEL`` the CDMA reads a pitch-linear surface (Table 33 of
in_memory_data_formats.md; the format table is :mod:`sim.formats.pixel`) and writes one CBUF
line per image line: ``PAD_LEFT + width + PAD_RIGHT`` pixels of ``channels`` elements in the
processing precision, in R, G, B, A (Y, U, V, A; X takes the A slot) order. Per line ``y`` and
ROI pixel ``i``:

* plane 0 pixel at ``DATAIN_ADDR_0 + y*LINE_STRIDE + (PIXEL_X_OFFSET + i)*bytes0``;
* semi-planar plane 1 (U/V) pixel at ``DATAIN_ADDR_1 + y*LINE_UV_STRIDE + u + i*bytes1`` with
  ``u`` = the X offset in U/V bytes modulo the atom (:func:`~sim.conv.program.uv_x_offset_bytes`);
* each component is put in its 8- or 16-bit container (10-bit fields and the 2-bit alpha
  left-aligned) and extended to 17 bits: sign extension with PIXEL_SIGN_OVERRIDE=SIGNED_INT,
  zero extension otherwise (:func:`sim.formats.pixel.pixel_to_signed`);
* with ``D_CVT_CFG.CVT_EN``: ``saturate(round((d - o) * CVT_SCALE / 2^CVT_TRUNCATE))`` to the
  processing precision, ties away from zero, where ``o`` is the channel's mean
  (``D_MEAN_GLOBAL_*`` MEAN_RY/GU/BV/AX, signed 16 bits) when ``D_MEAN_FORMAT`` is ENABLE and
  ``CVT_OFFSET`` otherwise; without the convertor the container's bits go to the CBUF as they
  are (read as signed) and the mean is not applied;
* fp16 processing of integer pixels (the convertor is required, Table 29 / Equation 1):
  the rounded value saturates to 17 signed bits (NVDLA's convertor keeps a 17-bit
  intermediate, ``cmod/hls/cdma_libs/cdma_cvt.cpp``) and becomes the nearest fp16, ties to
  even, infinity past 65504 + half an ulp;
* fp16 pixels (the ``_F`` formats; fp16 processing only, no convertor) go to the CBUF as
  they are. With ``IN_PRECISION`` FP16 (T_R16_F is INT16 input in Table 33, and NVDLA's CDMA
  neither counts nor flushes its codes) their NaN and infinity codes are counted into the CDMA's ``D_NAN_INPUT_DATA_NUM`` /
  ``D_INF_INPUT_DATA_NUM`` over every element NVDLA's CDMA fetches (per line, from the ROI's
  first pixel to the end of the atom holding its last one), and with ``D_NAN_FLUSH_TO_ZERO``
  the NaNs become +0;
* the left and right padding pixels hold CDMA's ``D_ZERO_PADDING_VALUE`` in the processing
  precision (its low byte for int8; the 16 bits as they are for int16 and fp16),
  unconverted. Top and bottom padding is the sequencer's (CSC's pad value, :mod:`.csc`).
"""

from __future__ import annotations

import numpy as np

from sim.formats.common import round_shift_right, saturate
from sim.formats.pixel import pixel_to_signed
from sim.formats.weight import image_weight_offsets
from sim.nvfloat import fp16_is_inf, fp16_is_nan

from .program import FP16, INT8, ConvProgram, ConvProgramError, uv_x_offset_bytes

__all__ = ["image_codes", "convert_image", "fetch_image", "fp16_pixel_nan_inf", "image_weight_index",
           "int_to_fp16"]


def _check_space(cfg, base: int, offsets: np.ndarray, where: str):
    """``base`` + every offset inside the address space, in Python integers (a base near the
    top of a 64-bit space would overflow the int64 address arrays)."""
    if offsets.size and base + int(offsets.max()) >= (1 << cfg.address_width):
        raise ConvProgramError(f"{where}: the surface ends past the {cfg.address_width}-bit "
                               "address space")


def image_codes(cfg, p: ConvProgram, mem) -> np.ndarray:
    """Raw component codes int64 [channels, H, W] of the ROI, in output channel order."""
    img = p.image
    f = img.fmt
    H, W = p.height, p.width
    atom = cfg.memory_atom
    y = np.arange(H, dtype=np.int64)[:, None]
    i = np.arange(W, dtype=np.int64)[None, :]
    words = []
    for plane in range(f.planes):
        bpp = f.bytes_per_pixel[plane]
        if plane == 0:
            base = p.base
            start = y * p.line_stride + (img.x_offset + i) * bpp
            where = f"CDMA.D_DAIN_ADDR_LOW_0.DATAIN_ADDR_LOW_0={p.base:#x}"
        else:
            base = img.base1
            start = y * img.uv_line_stride + uv_x_offset_bytes(f, img.x_offset, atom) + i * bpp
            where = f"CDMA.D_DAIN_ADDR_LOW_1.DATAIN_ADDR_LOW_1={img.base1:#x}"
        offsets = start[..., None] + np.arange(bpp, dtype=np.int64)
        _check_space(cfg, base, offsets, where)
        addrs = base + offsets
        raw = mem.gather(addrs.reshape(-1)).reshape(H, W, bpp).astype(np.uint64)
        word = np.zeros((H, W), np.uint64)
        for b in range(bpp):                      # little-endian pixel word
            word |= raw[..., b] << np.uint64(8 * b)
        words.append(word)
    out = np.empty((len(f.components), H, W), np.int64)
    for k, c in enumerate(f.components):
        out[k] = ((words[c.plane] >> np.uint64(c.lsb)) & np.uint64((1 << c.width) - 1)).astype(
            np.int64)
    return out


def _signed16(v: np.ndarray) -> np.ndarray:
    v = v & 0xFFFF
    return np.where(v >= 0x8000, v - 0x10000, v)


def int_to_fp16(x: np.ndarray) -> np.ndarray:
    """fp16 codes (as signed 16-bit values) of integers within 17 signed bits: round to the
    nearest, ties to even, infinity when the magnitude rounds past 65504."""
    with np.errstate(over="ignore"):
        h = np.asarray(x, dtype=np.int64).astype(np.float64).astype(np.float16)
    return _signed16(h.view(np.uint16).astype(np.int64))


def convert_image(p: ConvProgram, codes: np.ndarray) -> np.ndarray:
    """Component codes [channels, H, W] -> CBUF values int64 [channels, H, W] in the
    processing precision (sign/zero extension, mean or offset, scale, truncate, saturate;
    fp16: see the module docstring). fp16 values are their codes as signed 16-bit values,
    as the feature path holds them."""
    img = p.image
    out_bits = 8 if p.precision == INT8 else 16
    if img.fmt.is_float:
        v = _signed16(codes)
        if p.nan_to_zero and p.in_precision == FP16:
            v = np.where(fp16_is_nan(v & 0xFFFF), 0, v)
        return v
    if p.cvt is None:
        # no convertor: the container's bits as they are, read as a signed value
        return pixel_to_signed(codes, img.fmt, sign_override=True)
    d = pixel_to_signed(codes, img.fmt, sign_override=img.signed)
    off, scale, trunc = p.cvt
    offsets = np.array(img.mean[:codes.shape[0]] if img.mean is not None
                       else [off] * codes.shape[0], dtype=np.int64)[:, None, None]
    if p.precision == FP16:                 # (decode requires the convertor here)
        return int_to_fp16(saturate(round_shift_right((d - offsets) * scale, trunc), 17))
    return saturate(round_shift_right((d - offsets) * scale, trunc), out_bits)


def _pad_element(p: ConvProgram) -> int:
    v = p.image.pad_value
    if p.precision == INT8:
        v &= 0xFF
        return v - 0x100 if v & 0x80 else v
    v &= 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def fp16_pixel_nan_inf(cfg, p: ConvProgram, mem) -> tuple[int, int]:
    """(NaN, infinity) counts of an fp16-pixel image as NVDLA's CDMA counts them: per line,
    every 16-bit element from the ROI's first pixel to the end of the atom holding the last
    one (the fetched atoms' tail included, the X offset before the ROI not)."""
    img = p.image
    atom = cfg.memory_atom
    bpp = img.fmt.bytes_per_pixel[0]
    first = img.x_offset * bpp
    end = -(-(img.x_offset + p.width) * bpp // atom) * atom
    offs = (np.arange(p.height, dtype=np.int64)[:, None] * p.line_stride
            + np.arange(first, end, dtype=np.int64)[None, :])
    _check_space(cfg, p.base, offs, f"CDMA.D_DAIN_ADDR_LOW_0.DATAIN_ADDR_LOW_0={p.base:#x}")
    raw = mem.gather((p.base + offs).reshape(-1)).astype(np.int64)
    v = raw[0::2] | (raw[1::2] << 8)
    return int(fp16_is_nan(v).sum()), int(fp16_is_inf(v).sum())


def fetch_image(cfg, p: ConvProgram, mem, stats: dict | None = None) -> np.ndarray:
    """The image as the CBUF holds it: int64 [1, H, PAD_LEFT + W + PAD_RIGHT, channels].
    fp16 pixels: ``stats["data"]`` = their (NaN, infinity) counts."""
    img = p.image
    if img.fmt.is_float and p.in_precision == FP16 and stats is not None:
        stats["data"] = fp16_pixel_nan_inf(cfg, p, mem)
    vals = convert_image(p, image_codes(cfg, p, mem))          # [C, H, W]
    C, H, W = vals.shape
    line = np.full((1, H, img.pad_left + W + img.pad_right, C), _pad_element(p), np.int64)
    line[0, :, img.pad_left:img.pad_left + W, :] = vals.transpose(1, 2, 0)
    return line


def image_weight_index(cfg, p: ConvProgram) -> np.ndarray:
    """Element offsets [K, C, R, S] of image-input weights (pre-extension, post-extension,
    direct-convolution grouping with Atomic-K kernel groups and Atomic-C small cubes)."""
    group_k = cfg.atomic_k if p.precision == INT8 else max(cfg.atomic_k // 2, 1)
    return image_weight_offsets(p.kernels, p.in_channels, p.kh, p.kw, group_k, cfg.atomic_c,
                                p.image.post_extension)
