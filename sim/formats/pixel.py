"""Pixel formats (ROI / image input): Table 33 of in_memory_data_formats.md.

A pixel format is pitch linear: line ``y`` of a plane starts ``y * line_stride`` bytes after the
plane's atom-aligned start address, and the ROI begins ``x_offset`` pixels into that line (the
"redundant data" between the aligned address and the first pixel). Semi-planar (``_N444``)
formats keep Y in plane 0 and interleaved U/V in plane 1, with its own ``uv_line_stride``; the
same ``x_offset`` applies to both planes.

Component layout: a format name lists its components from the most to the least significant bits
of the little-endian pixel word (``A8B8G8R8`` has R in byte 0, ``B10G10R10A2`` has A in bits 1:0;
for semi-planar formats the plane-1 word ``U8V8`` has V in byte 0). This is the reading of NVDLA's
C model, which reorders every format to R, G, B, A (or Y, U, V, A; X takes the A slot) before
conversion -- the channel order :func:`unpack_pixels` returns.

Conversion to signed values: the DMA extends each component to 17 bits before the input
convertor -- zero extension when PIXEL_SIGN_OVERRIDE is UNSIGNED, sign extension when SIGNED;
10-bit (and 2-bit alpha) fields of the packed 32-bit formats are first left-aligned into 16 bits
(:func:`pixel_to_signed`). Equation 1 ``truncate((d - offset) * SF)`` is :func:`convert_precision`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .common import FormatError, align_up, round_shift_right, saturate
from .rules import check_alignments

__all__ = [
    "PixelFormat", "PixelSettingError", "PIXEL_FORMATS", "pixel_format", "max_x_offset",
    "roi_base_and_x_offset", "PixelSurface", "check_pixel_setting", "pack_pixels",
    "unpack_pixels", "pixel_to_signed", "convert_precision", "pixel_line_bytes",
]


class PixelSettingError(FormatError):
    """A pixel-input setting outside Table 33 or the pitch-linear rules; names the field."""


@dataclass(frozen=True)
class Component:
    name: str       # R, G, B, A, X, Y, U, V
    plane: int
    lsb: int        # bit position in the plane's pixel word
    width: int      # bits


@dataclass(frozen=True)
class PixelFormat:
    """One row of Table 33 plus the component layout derived from the format name."""
    name: str
    code: int                   #: CDMA D_DATAIN_FORMAT.PIXEL_FORMAT value
    planes: int
    channels: int               #: valid channel size setting
    precision: str              #: valid input precision setting
    x_offset_max: int           #: Table 33 valid X offset range is 0..x_offset_max (32-B atom)
    bytes_per_pixel: tuple      #: bytes of one pixel in each plane
    components: tuple           #: Component per output channel, in output (RGBA/YUVA) order
    is_float: bool = False      #: components are fp16 bit patterns


# name, planes, channels, precision, x offset max -- Table 33, in PIXEL_FORMAT code order
_TABLE33 = [
    ("T_R8", 1, 1, "int8", 31), ("T_R10", 1, 1, "int16", 15), ("T_R12", 1, 1, "int16", 15),
    ("T_R16", 1, 1, "int16", 15), ("T_R16_I", 1, 1, "int16", 15), ("T_R16_F", 1, 1, "int16", 15),
    ("T_A16B16G16R16", 1, 4, "int16", 3), ("T_X16B16G16R16", 1, 4, "int16", 3),
    ("T_A16B16G16R16_F", 1, 4, "fp16", 3), ("T_A16Y16U16V16", 1, 4, "int16", 3),
    ("T_V16U16Y16A16", 1, 4, "int16", 3), ("T_A16Y16U16V16_F", 1, 4, "fp16", 3),
    ("T_A8B8G8R8", 1, 4, "int8", 7), ("T_A8R8G8B8", 1, 4, "int8", 7),
    ("T_B8G8R8A8", 1, 4, "int8", 7), ("T_R8G8B8A8", 1, 4, "int8", 7),
    ("T_X8B8G8R8", 1, 4, "int8", 7), ("T_X8R8G8B8", 1, 4, "int8", 7),
    ("T_B8G8R8X8", 1, 4, "int8", 7), ("T_R8G8B8X8", 1, 4, "int8", 7),
    ("T_A2B10G10R10", 1, 4, "int16", 7), ("T_A2R10G10B10", 1, 4, "int16", 7),
    ("T_B10G10R10A2", 1, 4, "int16", 7), ("T_R10G10B10A2", 1, 4, "int16", 7),
    ("T_A2Y10U10V10", 1, 4, "int16", 7), ("T_V10U10Y10A2", 1, 4, "int16", 7),
    ("T_A8Y8U8V8", 1, 4, "int8", 7), ("T_V8U8Y8A8", 1, 4, "int8", 7),
    ("T_Y8___U8V8_N444", 2, 3, "int8", 31), ("T_Y8___V8U8_N444", 2, 3, "int8", 31),
    ("T_Y10___U10V10_N444", 2, 3, "int16", 15), ("T_Y10___V10U10_N444", 2, 3, "int16", 15),
    ("T_Y12___U12V12_N444", 2, 3, "int16", 15), ("T_Y12___V12U12_N444", 2, 3, "int16", 15),
    ("T_Y16___U16V16_N444", 2, 3, "int16", 15), ("T_Y16___V16U16_N444", 2, 3, "int16", 15),
]

_TOKEN = re.compile(r"([ABGRXYUV])(\d+)")
# single-channel 10/12-bit formats sit in a 16-bit container
_CONTAINER = {"T_R10": 16, "T_R12": 16}
_SEMI_CONTAINER = {"8": 8, "10": 16, "12": 16, "16": 16}


def _plane_components(tokens, plane, container=None):
    """Components of one plane word, MSB-first ``tokens`` -> positions from the LSB."""
    comps, lsb = [], 0
    for name, width in reversed(tokens):
        w = container or width
        comps.append(Component(name, plane, lsb, w))
        lsb += w
    return comps, lsb


def _order(comps):
    names = [c.name for c in comps]
    if len(comps) == 1:
        return comps
    if "Y" in names:
        order = ["Y", "U", "V", "A"]
    else:
        order = ["R", "G", "B", "A"]
    by = {("A" if c.name == "X" else c.name): c for c in comps}
    return [by[n] for n in order if n in by]


def _build(name, code, planes, channels, precision, xmax):
    body = name[2:]
    is_float = body.endswith("_F")
    if planes == 1:
        core = body.split("_")[0]
        tokens = [(n, int(w)) for n, w in _TOKEN.findall(core)]
        container = _CONTAINER.get(name)
        comps, bits = _plane_components(tokens, 0, container)
        bpp = (bits // 8,)
    else:
        p0, p1 = body.split("___")
        p1 = p1.split("_")[0]
        ybits = _TOKEN.findall(p0)[0][1]
        cont = _SEMI_CONTAINER[ybits]
        c0, b0 = _plane_components([("Y", int(ybits))], 0, cont)
        c1, b1 = _plane_components([(n, int(w)) for n, w in _TOKEN.findall(p1)], 1, cont)
        comps, bpp = c0 + c1, (b0 // 8, b1 // 8)
    return PixelFormat(name, code, planes, channels, precision, xmax, bpp,
                       tuple(_order(comps)), is_float)


#: Table 33, keyed by format name (``"T_A8B8G8R8"``).
PIXEL_FORMATS = {row[0]: _build(row[0], code, *row[1:]) for code, row in enumerate(_TABLE33)}


def pixel_format(fmt) -> PixelFormat:
    """Look a format up by name (with or without the ``T_`` prefix) or by its code."""
    if isinstance(fmt, PixelFormat):
        return fmt
    if isinstance(fmt, (int, np.integer)):
        for f in PIXEL_FORMATS.values():
            if f.code == fmt:
                return f
        raise PixelSettingError(f"pixel_format code {fmt}: not in Table 33 (0..35)")
    key = fmt if str(fmt).startswith("T_") else "T_" + str(fmt)
    if key not in PIXEL_FORMATS:
        raise PixelSettingError(f"pixel_format {fmt!r}: not in Table 33")
    return PIXEL_FORMATS[key]


def max_x_offset(fmt, atom: int = 32) -> int:
    """Largest valid X offset: the pixels of plane 0 that fit in one atom, minus one.

    For 32-byte atoms this reproduces the last column of Table 33.
    """
    f = pixel_format(fmt)
    return max(atom // f.bytes_per_pixel[0] - 1, 0)


def pixel_line_bytes(fmt, W: int, x_offset: int = 0, plane: int = 0) -> int:
    """Bytes a line of ``plane`` spans from its aligned start: (x_offset + W) x bytes/pixel."""
    return (x_offset + W) * pixel_format(fmt).bytes_per_pixel[plane]


def roi_base_and_x_offset(roi_address: int, fmt, atom: int = 32) -> tuple[int, int]:
    """Split an ROI start address into the atom-aligned base and the X offset in pixels."""
    f = pixel_format(fmt)
    base = roi_address & ~(atom - 1)
    off = roi_address - base
    if off % f.bytes_per_pixel[0]:
        raise PixelSettingError(f"roi_address {roi_address:#x} is not on a pixel boundary of "
                                f"{f.name} ({f.bytes_per_pixel[0]} bytes per pixel)")
    return base, off // f.bytes_per_pixel[0]


def check_pixel_setting(fmt, *, channels: int | None = None, precision: str | None = None,
                        x_offset: int = 0, W: int | None = None,
                        line_stride: int | None = None, uv_line_stride: int | None = None,
                        base: int | None = None, uv_base: int | None = None,
                        atom: int = 32) -> PixelFormat:
    """Check an image-input setting against Table 33 and the pitch-linear rules.

    Channel size and input precision must be the format's; the X offset within
    0..:func:`max_x_offset`; start addresses and line strides aligned to the atom (32 bytes,
    mandatory); a line stride must cover (x_offset + W) pixels. Raises
    :class:`PixelSettingError` naming the field.
    """
    f = pixel_format(fmt)
    if channels is not None and channels != f.channels:
        raise PixelSettingError(f"{f.name}: channel size {channels} is invalid; Table 33 "
                                f"allows {f.channels}")
    if precision is not None and precision != f.precision:
        raise PixelSettingError(f"{f.name}: input precision {precision!r} is invalid; Table 33 "
                                f"allows {f.precision!r}")
    xmax = max_x_offset(f, atom)
    if not 0 <= x_offset <= xmax:
        raise PixelSettingError(f"{f.name}: x_offset {x_offset} outside the valid range "
                                f"0~{xmax}")
    try:
        check_alignments("pixel", atom=atom, start_address=base, line_stride=line_stride)
        check_alignments("pixel", atom=atom, start_address=uv_base, line_stride=uv_line_stride)
    except FormatError as e:
        raise PixelSettingError(f"{f.name}: {e}") from None
    if f.planes == 1 and (uv_line_stride is not None or uv_base is not None):
        raise PixelSettingError(f"{f.name}: uv_line_stride/uv_base apply to semi-planar formats")
    if W is not None:
        for plane, ls, nm in ((0, line_stride, "line_stride"), (1, uv_line_stride,
                                                                 "uv_line_stride")):
            if plane < f.planes and ls is not None:
                need = pixel_line_bytes(f, W, x_offset, plane)
                if ls < need:
                    raise PixelSettingError(f"{f.name}: {nm} {ls} < {need} bytes of "
                                            f"(x_offset + W) pixels")
    return f


@dataclass(frozen=True)
class PixelSurface:
    """A packed pixel surface: one byte array per plane, each starting at its aligned base."""
    planes: tuple
    line_stride: int
    uv_line_stride: int | None
    x_offset: int


def _word_view(data: np.ndarray, bpp: int) -> np.ndarray:
    dt = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8", 3: None, 6: None}[bpp]
    if dt is None:  # 3/6-byte words never occur for one plane; guard anyway
        raise FormatError(f"no {bpp}-byte pixel word")
    return np.ascontiguousarray(data).view(dt).astype(np.uint64)


def _raw_components(image, f: PixelFormat) -> np.ndarray:
    a = np.asarray(image)
    if a.ndim != 3 or a.shape[0] != len(f.components):
        raise PixelSettingError(f"{f.name}: image must be [{len(f.components)}, H, W] component "
                                f"codes in {''.join(c.name for c in f.components)} order, got "
                                f"shape {a.shape}")
    if a.dtype == np.float16:
        a = a.view(np.uint16)
    if a.size and a.dtype.kind not in "iub":
        raise PixelSettingError(f"{f.name}: components must be integer codes (fp16 formats: "
                                f"float16 or uint16 bit patterns), got {a.dtype}")
    a = a.astype(np.int64)
    for i, c in enumerate(f.components):
        if a[i].size and (a[i].min() < 0 or a[i].max() >= (1 << c.width)):
            raise PixelSettingError(f"{f.name}: component {c.name} codes must be in "
                                    f"[0, {(1 << c.width) - 1}]")
    return a


def pack_pixels(image, fmt, x_offset: int = 0, line_stride: int | None = None,
                uv_line_stride: int | None = None, atom: int = 32) -> PixelSurface:
    """Lay a [channels, H, W] image of raw component codes out as pitch-linear pixels.

    ``image`` channels are in output order (R, G, B, A / Y, U, V, A). Line strides default to the
    smallest atom multiple holding (x_offset + W) pixels. Bytes before ``x_offset`` and past the
    last pixel of a line are zero. Each plane array runs from its base to the end of the atom
    that holds its last pixel.
    """
    f = pixel_format(fmt)
    a = _raw_components(image, f)
    _, H, W = a.shape
    strides = [line_stride, uv_line_stride]
    for p in range(f.planes):
        if strides[p] is None:
            strides[p] = align_up(pixel_line_bytes(f, W, x_offset, p), atom)
    check_pixel_setting(f, x_offset=x_offset, W=W, line_stride=strides[0],
                        uv_line_stride=strides[1] if f.planes == 2 else None, atom=atom)
    planes = []
    for p in range(f.planes):
        bpp = f.bytes_per_pixel[p]
        words = np.zeros((H, W), np.uint64)
        for i, c in enumerate(f.components):
            if c.plane == p:
                words |= a[i].astype(np.uint64) << np.uint64(c.lsb)
        dt = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}[bpp]
        line_bytes = np.ascontiguousarray(words.astype(dt)).view(np.uint8).reshape(H, W * bpp)
        ls = strides[p]
        size = (H - 1) * ls + align_up(pixel_line_bytes(f, W, x_offset, p), atom)
        mem = np.zeros(size, np.uint8)
        idx = (np.arange(H, dtype=np.int64)[:, None] * ls + x_offset * bpp
               + np.arange(W * bpp, dtype=np.int64)[None, :])
        mem[idx] = line_bytes
        planes.append(mem)
    return PixelSurface(tuple(planes), strides[0], strides[1] if f.planes == 2 else None,
                        x_offset)


def unpack_pixels(plane0, fmt, W: int, H: int, x_offset: int = 0,
                  line_stride: int | None = None, base0: int = 0, plane1=None, base1: int = 0,
                  uv_line_stride: int | None = None, atom: int = 32) -> np.ndarray:
    """Read a [channels, H, W] image of raw component codes (int64) from pitch-linear memory.

    ``plane0`` (and ``plane1`` for semi-planar formats) are byte arrays; ``base0``/``base1`` the
    atom-aligned start addresses inside them. Channels come out in R, G, B, A (Y, U, V, A)
    order, as NVDLA's DMA reorders them.
    """
    f = pixel_format(fmt)
    strides = [line_stride, uv_line_stride]
    for p in range(f.planes):
        if strides[p] is None:
            strides[p] = align_up(pixel_line_bytes(f, W, x_offset, p), atom)
    if f.planes == 2 and plane1 is None:
        raise PixelSettingError(f"{f.name}: semi-planar format needs plane1")
    check_pixel_setting(f, x_offset=x_offset, W=W, line_stride=strides[0], base=base0,
                        uv_line_stride=strides[1] if f.planes == 2 else None,
                        uv_base=base1 if f.planes == 2 else None, atom=atom)
    out = np.zeros((len(f.components), H, W), np.int64)
    for p, (mem, base) in enumerate(((plane0, base0), (plane1, base1))[:f.planes]):
        bpp = f.bytes_per_pixel[p]
        mem = np.asarray(mem, np.uint8)
        idx = (base + np.arange(H, dtype=np.int64)[:, None] * strides[p] + x_offset * bpp
               + np.arange(W * bpp, dtype=np.int64)[None, :])
        if idx.size and idx.max() >= mem.size:
            raise FormatError(f"{f.name}: plane {p} needs {idx.max() + 1} bytes, has {mem.size}")
        words = _word_view(mem[idx].reshape(-1), bpp).reshape(H, W)
        for i, c in enumerate(f.components):
            if c.plane == p:
                out[i] = ((words >> np.uint64(c.lsb)) & np.uint64((1 << c.width) - 1)).astype(
                    np.int64)
    return out


def pixel_to_signed(codes, fmt, sign_override: bool = False) -> np.ndarray:
    """Extend raw component codes to the signed 17-bit convertor input.

    8-bit components stay 8 bits, 16-bit containers 16 bits; the 10-bit and 2-bit fields of the
    packed 32-bit formats are left-aligned into 16 bits. Then UNSIGNED (``sign_override=False``)
    zero-extends and SIGNED sign-extends: R8 0x87 -> 0x00087 (135) or 0x1ff87 (-121).
    fp16 formats have no integer meaning and are rejected.
    """
    f = pixel_format(fmt)
    if f.is_float:
        raise PixelSettingError(f"{f.name}: fp16 components are not extended to integers")
    a = np.asarray(codes, dtype=np.int64)
    out = np.empty_like(a)
    for i, c in enumerate(f.components):
        bits = 8 if c.width == 8 else 16
        v = a[i] << (bits - c.width)
        if sign_override:
            v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        out[i] = v
    return out


def convert_precision(values, offset: int, scale: int, truncate: int,
                      out_precision: str) -> np.ndarray:
    """Equations 1 and 3: ``saturate(round((d - offset) * scale / 2**truncate))`` to int8/int16.

    Integer-exact; rounding is to nearest with ties away from zero (the CDMA convertor's).
    The fp16 result of Equation 1 goes through the convertor's float path, which this format
    library does not model, so ``out_precision="fp16"`` is rejected.
    """
    if out_precision not in ("int8", "int16"):
        raise FormatError(f"convert_precision: out_precision {out_precision!r} not modelled "
                          "(int8/int16 only)")
    t = (np.asarray(values, np.int64) - int(offset)) * int(scale)
    return saturate(round_shift_right(t, int(truncate)), 8 if out_precision == "int8" else 16)
