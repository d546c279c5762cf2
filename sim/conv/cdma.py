"""CDMA golden model: what the convolution DMA puts into the convolution buffer.

Direct-convolution feature fetch (spec "Convolution DMA", data-format spec "Feature Data
Format"): element (b, y, x, c) of the input cube is read at::

    base + b*BATCH_STRIDE + y*LINE_STRIDE + (c // atom)*SURF_STRIDE + x*atom + (c % atom)*bytes

with two NVDLA particulars kept exactly: with packed lines the DMA reads ``FETCH_GRAIN`` lines
as one run of ``width x grain`` atoms from the grain's first line, and a 1 x 1 cube with
packed lines and surfaces is read as one run of atoms from the batch's base. The optional
input convertor (``D_CVT_*``) turns int8/int16 input into the processing precision
(saturate(round((d - offset) * scale / 2^truncate)), ties away from zero).

Weights: ``WEIGHT_BYTES`` bytes from ``WEIGHT_ADDR`` in the direct-convolution weight layout
(kernel groups of Atomic-K int8 kernels, half for int16/fp16; small cubes of Atomic-C
channels), unpacked to ``[K, C, R, S]``.

The CBUF itself is modelled by what it holds for the sequencer (:class:`CbufState`): the
input lines (slices) still resident, the weights, and the settings that decide whether the
next layer may reuse them (``D_MISC_CFG`` DATA_REUSE / WEIGHT_REUSE / SKIP_*_RLS,
``CSC.D_RELEASE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.formats.common import ceil_div, round_shift_right, saturate
from sim.formats.sparse import SparseFormatError, decompress_weights
from sim.formats.weight import dc_weight_offsets

from .image import fetch_image, image_weight_index
from .program import FP16, INT8, RAM_CV, ConvProgram, ConvProgramError

__all__ = ["fetch_feature", "fetch_weights", "weight_values", "fp16_nan_inf", "CbufState", "load_cbuf"]


def _decode(raw: np.ndarray, nbytes: int) -> np.ndarray:
    """Little-endian signed values from uint8 [..., nbytes]."""
    v = raw[..., 0].astype(np.int64)
    if nbytes == 2:
        v = v | (raw[..., 1].astype(np.int64) << 8)
    bits = 8 * nbytes
    return np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)


def _check_space(cfg, base: int, offsets: np.ndarray, where: str):
    """``base`` + every offset inside the address space, in Python integers: on a 64-bit
    build a base near the top would overflow the int64 address arrays."""
    if offsets.size and base + int(offsets.max()) >= (1 << cfg.address_width):
        raise ConvProgramError(f"{where}: the surface ends past the {cfg.address_width}-bit "
                               "address space")


def feature_addresses(p: ConvProgram, atom: int, base: int | None = None) -> np.ndarray:
    """Byte addresses [B, H, W, S, atom] of the fetched input (S = surfaces), from ``base``
    (default ``p.base``; 0 gives the offsets)."""
    base = p.base if base is None else base
    nbytes = 2 if p.in_precision else 1
    per_atom = atom // nbytes            # elements of one memory atom
    S = ceil_div(p.channels, per_atom)
    b = np.arange(p.batches, dtype=np.int64)[:, None, None, None, None]
    y = np.arange(p.height, dtype=np.int64)[None, :, None, None, None]
    x = np.arange(p.width, dtype=np.int64)[None, None, :, None, None]
    s = np.arange(S, dtype=np.int64)[None, None, None, :, None]
    k = np.arange(atom, dtype=np.int64)[None, None, None, None, :]
    if p.line_packed and p.surf_packed and p.width == 1 and p.height == 1:
        # one run of atoms per batch
        return base + b * p.batch_stride + s * atom + k + 0 * (x + y)
    if p.line_packed:
        # a grain of lines is one run of width x grain atoms from the grain's first line
        y0 = (y // p.grain) * p.grain
        line = y0 * p.line_stride + (y - y0) * p.width * atom
    else:
        line = y * p.line_stride
    return base + b * p.batch_stride + line + s * p.surf_stride + x * atom + k


def fp16_nan_inf(codes) -> tuple[int, int]:
    """(NaN, infinity) counts of fp16 codes (any integer form of the 16 bits)."""
    c = np.asarray(codes, dtype=np.int64) & 0xFFFF
    top = (c & 0x7C00) == 0x7C00
    mant = (c & 0x3FF) != 0
    return int((top & mant).sum()), int((top & ~mant).sum())


def fetch_feature(cfg, p: ConvProgram, mem, stats: dict | None = None) -> np.ndarray:
    """The input cube as the CBUF holds it: int64 [B, H, W, C_atoms] in the processing
    precision, channels rounded up to whole memory atoms (the tail is whatever memory holds;
    the sequencer masks channels past DATAIN_CHANNEL_EXT).

    fp16 input (NVDLA's CDMA): every fetched element, the atoms' tails included, is counted
    into ``stats["data"]`` = (NaN, infinity) counts, then with ``D_NAN_FLUSH_TO_ZERO`` the
    NaNs become +0."""
    atom = cfg.memory_atom
    offsets = feature_addresses(p, atom, base=0)
    _check_space(cfg, p.base, offsets,
                 f"CDMA.D_DAIN_ADDR_LOW_0.DATAIN_ADDR_LOW_0={p.base:#x}")
    addrs = p.base + offsets
    raw = mem.gather(addrs.reshape(-1)).reshape(addrs.shape)
    nbytes = 2 if p.in_precision else 1
    B, H, W, S, _ = raw.shape
    vals = _decode(raw.reshape(B, H, W, S, atom // nbytes, nbytes), nbytes)
    vals = vals.reshape(B, H, W, S * (atom // nbytes))
    if p.in_precision == FP16:
        if stats is not None:
            stats["data"] = fp16_nan_inf(vals)
        if p.nan_to_zero:
            c = vals & 0xFFFF
            vals = np.where(((c & 0x7C00) == 0x7C00) & ((c & 0x3FF) != 0), 0, vals)
    if p.cvt is not None:
        off, scale, trunc = p.cvt
        out_bits = 8 if p.precision == INT8 else 16
        vals = saturate(round_shift_right((vals - off) * scale, trunc), out_bits)
    return vals


def weight_values(cfg, p: ConvProgram, mem, stats: dict | None = None) -> np.ndarray:
    """The weight surface's elements int64 [kernels x BYTE_PER_KERNEL / element bytes] in
    memory order (decompressed when the weights are compressed), whatever the layout (direct,
    image or Winograd). In an fp16 layer the ``WEIGHT_BYTES`` fetched bytes (as fp16 codes;
    compressed ones as fetched) are counted into ``stats["weight"]`` = (NaN, infinity)
    counts; weights are never flushed (NVDLA's CDMA counts them but flushes data only)."""
    nbytes = p.element_bytes
    offsets = np.arange(p.weight_bytes, dtype=np.int64)
    _check_space(cfg, p.weight_base, offsets,
                 f"CDMA.D_WEIGHT_ADDR_LOW.WEIGHT_ADDR_LOW={p.weight_base:#x}")
    addrs = p.weight_base + offsets
    raw = mem.gather(addrs)
    if p.precision == FP16 and stats is not None:
        w = raw[: raw.size // 2 * 2].astype(np.int64)
        stats["weight"] = fp16_nan_inf(w[0::2] | (w[1::2] << 8))
    if p.compression is not None:
        raw = _decompress(cfg, p, mem, raw)
    n = p.kernels * p.byte_per_kernel
    return _decode(raw[:n].reshape(-1, nbytes), nbytes)


def fetch_weights(cfg, p: ConvProgram, mem, stats: dict | None = None) -> np.ndarray:
    """Weights int64 [K, C, R, S] from the direct-convolution (or image) weight surface
    (:func:`weight_values` fetches and counts them)."""
    vals = weight_values(cfg, p, mem, stats)
    if p.image is not None:
        return vals[image_weight_index(cfg, p)]
    group_k = cfg.atomic_k if p.precision == INT8 else max(cfg.atomic_k // 2, 1)
    cube_c = cfg.atomic_c
    off = dc_weight_offsets(p.kernels, p.in_channels, p.kh, p.kw, group_k, cube_c)
    return vals[off]


def _decompress(cfg, p: ConvProgram, mem, comp: np.ndarray) -> np.ndarray:
    """The uncompressed weight surface of a compressed weight: WGS (a 32-bit byte count per
    kernel group), WMB (a bit per element) and the packed non-zero elements
    (:mod:`sim.formats.sparse`). Surfaces that disagree name the register that points at
    the one at fault."""
    c = p.compression
    wgs_off = np.arange(4 * len(c.groups), dtype=np.int64)
    wmb_off = np.arange(c.wmb_bytes, dtype=np.int64)
    _check_space(cfg, c.wgs_base, wgs_off, f"CDMA.D_WGS_ADDR_LOW.WGS_ADDR_LOW={c.wgs_base:#x}")
    _check_space(cfg, c.wmb_base, wmb_off, f"CDMA.D_WMB_ADDR_LOW.WMB_ADDR_LOW={c.wmb_base:#x}")
    wgs_addrs, wmb_addrs = c.wgs_base + wgs_off, c.wmb_base + wmb_off
    wgs, wmb = mem.gather(wgs_addrs), mem.gather(wmb_addrs)
    try:
        data = decompress_weights((wgs, wmb, comp), c.groups, p.name)
    except SparseFormatError as e:
        field = {"WGS": f"CDMA.D_WGS_ADDR_LOW.WGS_ADDR_LOW={c.wgs_base:#x}",
                 "WMB": f"CDMA.D_WMB_ADDR_LOW.WMB_ADDR_LOW={c.wmb_base:#x}"}.get(
            str(e)[:3], f"CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES={p.weight_bytes}")
        raise ConvProgramError(f"{field}: {e}") from None
    # the CBUF holds compressed kernel groups: each must fit the weight banks
    sizes = wgs.view("<u4").astype(np.int64)
    cap = p.weight_bank * cfg.cbuf_entry_depth * cfg.cbuf_entry_bytes
    if sizes.max() > cap:
        g = int(sizes.argmax())
        raise ConvProgramError(
            f"CDMA.D_BANK.WEIGHT_BANK={p.weight_bank - 1}: compressed kernel group {g} needs "
            f"{int(sizes[g])} bytes; {p.weight_bank} weight bank(s) hold {cap}")
    return data


@dataclass
class CbufState:
    """What the convolution buffer keeps between layers (for reuse)."""
    slices: np.ndarray | None = None      #: resident input lines [n, W, C_atoms] (h-major,
    #: batches interleaved: slice i = line i // B of batch i % B)
    key: tuple | None = None              #: (mode, data bank, weight bank, format, W, C, B)
    kept_all: bool = False                #: previous layer skipped its data release
    weights: np.ndarray | None = None
    wkey: tuple | None = None
    weights_kept: bool = False
    log: list = field(default_factory=list)
    #: the last layer's fp16 NaN / infinity counts: {"data": (nan, inf), "weight": (nan, inf)}
    #: (zeros for what it did not fetch, and for integer layers)
    stats: dict = field(default_factory=dict)

    def release(self, p: ConvProgram, used: np.ndarray, key: tuple, weights: np.ndarray,
                wkey: tuple) -> None:
        """The CBUF at the end of layer ``p`` (direct or Winograd): with SKIP_DATA_RLS it keeps
        every slice it used (``used``, in CBUF order), else it releases the first
        ``RLS_SLICES`` and keeps the rest; the weights stay for the next layer only with
        SKIP_WEIGHT_RLS. ``key`` / ``wkey`` say what a reusing layer must match."""
        if p.skip_data_rls:
            self.slices, self.kept_all = used, True
        else:
            left = used[p.rls_slices:]
            self.slices, self.kept_all = (left if left.shape[0] else None), False
        self.key = key
        self.weights, self.wkey, self.weights_kept = weights, wkey, p.skip_weight_rls


def _memory(core, ram_type):
    return core.sram if ram_type == RAM_CV else core.dbb


def cbuf_data_key(p: ConvProgram) -> tuple:
    """What a layer reusing the kept slices must share with the layer that kept them: mode,
    banks, input kind, width, entries, batches and, for image input (the kept lines hold
    converted pixels), the pixel format, the CDMA's left / right padding and the precision.
    The first four name the slice format (a different one is no reuse at all)."""
    img = p.image
    key = (int(p.winograd is not None), p.data_bank, p.weight_bank, int(img is not None),
           p.in_width, p.entries, p.batches)
    if img is not None:
        key += (img.fmt.name, img.pad_left, img.pad_right, p.precision)
    return key


def load_cbuf(core, cfg, p: ConvProgram, state: CbufState):
    """Fetch what this layer needs into the CBUF model (or reuse what is there); return the
    input cube [B, H, W, C_atoms] and weights [K, C, R, S] the sequencer works on, and update
    ``state`` for the next layer."""
    state.stats = {"data": (0, 0), "weight": (0, 0)}
    mode = int(p.winograd is not None)
    img = p.image
    key = cbuf_data_key(p)
    B = p.batches
    fetch = fetch_feature
    if mode:
        from .winograd import fetch_winograd as fetch
    if img is not None:
        # image input reuses an image's kept lines as NVDLA's CDMA does (the previous layer
        # also image input, same banks: full reuse when it kept everything, else the kept
        # lines then the new fetch); they hold converted pixels, so the pixel format, the
        # CDMA's left / right padding and the processing precision must be the same too
        fetch = fetch_image
    if (p.data_reuse and state.slices is not None and state.key != key
            and state.key[:4] == key[:4]):
        what = ("width, pixel format, left / right padding or precision" if img is not None
                else "width, channel count or batch count")
        raise ConvProgramError(
            f"CDMA.D_MISC_CFG.DATA_REUSE=ENABLE: the previous layer's CBUF data has another "
            f"{what} (entries per slice must match to reuse it)")
    if state.slices is not None and state.key == key and p.data_reuse:
        kept = state.slices
        if state.kept_all:
            new = np.zeros((0,) + kept.shape[1:], np.int64)     # full reuse: no fetch
            state.log.append("data: full reuse")
        else:
            cube = fetch(cfg, p, _memory(core, p.ram_type), state.stats)
            new = cube.transpose(1, 0, 2, 3).reshape(-1, *cube.shape[2:])
            state.log.append(f"data: partial reuse of {kept.shape[0]} slices")
        if new.size and new.shape[1:] != kept.shape[1:]:
            raise ConvProgramError("CDMA.D_MISC_CFG.DATA_REUSE=ENABLE: the kept slices and the "
                                   "fetched input differ in width or channels")
        slices = np.concatenate([kept, new]) if new.size else kept
        fetched = new.shape[0]
    else:
        cube = fetch(cfg, p, _memory(core, p.ram_type), state.stats)
        slices = cube.transpose(1, 0, 2, 3).reshape(-1, *cube.shape[2:])
        fetched = slices.shape[0]
        state.log.append("data: fetched")
    # NVDLA's CSC releases slices only at a layer's end: every slice held at once (kept ones
    # plus the whole fetch) needs its own entries in the data banks, or the fetch waits forever
    cap = p.data_bank * cfg.cbuf_entry_depth
    if slices.shape[0] * p.entries > cap:
        kept_n = slices.shape[0] - fetched
        kept_txt = f"the {kept_n} kept slice(s) and " if kept_n else ""
        raise ConvProgramError(
            f"CDMA.D_DATAIN_SIZE_0.DATAIN_HEIGHT={p.height - 1}: {kept_txt}the {fetched} "
            f"fetched slice(s) need {slices.shape[0] * p.entries} CBUF entries ({p.entries} "
            f"each); D_BANK.DATA_BANK={p.data_bank - 1} holds {cap}")
    need = p.in_height * B
    if slices.shape[0] < need:
        raise ConvProgramError(
            f"CSC.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT={p.in_height - 1}: the CBUF holds "
            f"{slices.shape[0] // B} line(s) of this input ({slices.shape[0]} slices), the "
            f"layer needs {p.in_height}")
    used = slices[:need]
    cube = used.reshape(p.in_height, B, *used.shape[1:]).transpose(1, 0, 2, 3)
    return _finish(core, cfg, p, state, cube, key)


def _finish(core, cfg, p: ConvProgram, state: CbufState, cube, key):
    """Weights (fetched or reused) and the CBUF bookkeeping at the end of the layer."""
    B = cube.shape[0]
    used = cube.transpose(1, 0, 2, 3).reshape(-1, *cube.shape[2:])
    post = p.image.post_extension if p.image is not None else 0
    mode = int(p.winograd is not None)
    wkey = (mode, p.data_bank, p.weight_bank, p.weight_bytes, p.kernels, p.kh, p.kw,
            p.in_channels, p.precision, post,
            None if p.compression is None else (p.compression.wmb_bytes, p.compression.groups))
    if (p.weight_reuse and state.key is not None and not state.weights_kept
            and state.key[:4] == key[:4]):
        # NVDLA's CDMA: after a layer under the same mode and bank split that released its
        # weights, WEIGHT_REUSE is an invalid configuration (after a change it just fetches)
        raise ConvProgramError("CDMA.D_MISC_CFG.WEIGHT_REUSE=ENABLE: the previous layer released "
                               "its weights (SKIP_WEIGHT_RLS=DISABLE); nothing to reuse")
    # a change of mode fetches (NVDLA's CDMA: the kept weights are another mode's)
    if (state.weights is not None and state.weights_kept and p.weight_reuse
            and state.wkey[0] == wkey[0]):
        if (state.wkey[-1] is None) != (p.compression is None):
            # NVDLA's CDMA: weight reuse across a change of weight format is a config error
            raise ConvProgramError(
                "CDMA.D_MISC_CFG.WEIGHT_REUSE=ENABLE: the previous layer's weights are "
                f"{'un' if p.compression is not None else ''}compressed, this layer's are not "
                "(D_WEIGHT_FORMAT must match to reuse them)")
        if state.wkey != wkey:
            raise ConvProgramError("CDMA.D_MISC_CFG.WEIGHT_REUSE=ENABLE: the previous layer's "
                                   "weights have another geometry or bank split")
        weights = state.weights
        state.log.append("weights: reused")
    else:
        mem = _memory(core, p.weight_ram)
        if mode:
            from .winograd import winograd_weights
            weights = winograd_weights(cfg, p, weight_values(cfg, p, mem, state.stats))
        else:
            weights = fetch_weights(cfg, p, mem, state.stats)
        state.log.append("weights: fetched")
    state.release(p, used, key, weights, wkey)
    return cube, weights
