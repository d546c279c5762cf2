"""Golden model of NVDLA's PDP (planar data processor: max / min / average pooling).

One call runs one hardware layer:

    written = run_pdp(cfg, pdp_view, rdma_view, mem, sram=None)          # offline
    written = run_pdp(cfg, pdp_view, None, mem, flying_input=cube)       # SDP -> PDP

Offline, PDP_RDMA reads the input cube (every line of every surface at ``base + h x line
stride + s x surface stride``, 1x1 cubes too); flying, the cube is SDP's output including the
channel padding of its last surface. The output is written the same way (whole atoms, the
padding lanes of the last surface pooled like real data) at the destination surfaces.

Arithmetic (per element, exact integers; ``B`` = 8 for int8, 16 for int16):

MAX / MIN
    The extreme of the input elements inside the window; padded positions do not take part.
AVERAGE
    The window is summed in two steps, as the hardware does. Per input line, the horizontal
    sum of the real elements plus ``PAD_VALUE_<nh>X`` (``nh`` = padded columns of the window;
    the field's low B + 3 bits, signed), kept in 11 bits for int8 (B + 3), 22 for int16
    (B + 6: NVDLA's cal1d int16 lanes are 22 bits wide; checked against its Verilog). Over the lines of the window,
    those sums plus ``kernel_width x PAD_VALUE_<nv>X`` (``nv`` = padded lines; the whole
    19-bit field, signed), kept in B + 6 bits. So a program whose PAD_VALUE_NX holds N times
    the pad value averages over the whole kernel with the pad value counted at every padded
    position. The sum is then multiplied by ``RECIP_KERNEL_WIDTH`` / 2^16 and rounded half
    away from zero into B + 3 bits, then by ``RECIP_KERNEL_HEIGHT`` / 2^16, rounded the same
    way into B bits. Nothing saturates: every step keeps low bits, as NVDLA's RTL does (a
    non-negative product keeps one bit fewer before the rounding bit is added, see
    :func:`round_recip`; NVDLA's C model agrees wherever the average fits, which is what its
    compiler programs: reciprocals ``2^16 // kernel`` and pad values N x v).

fp16 (builds with fp16; :func:`pool_fp16`, units of :mod:`sim.nvfloat`), as NVDLA's RTL
computes it (nvdla/hw ``vmod/nvdla/pdp``: ``NV_NVDLA_PDP_CORE_unit1d``/``cal1d``/``cal2d``,
``NV_NVDLA_PDP_nan``, ``NV_NVDLA_PDP_WDMA_dat``; where NVDLA's C model differs, as in the
order of the padding additions, the RTL is followed):

MAX / MIN
    On the raw fp16 codes, no conversion: ordered by sign and magnitude (so -0 < +0 and
    max(+0, -0) = +0, infinities ordinary extremes). A NaN wins any comparison and passes
    unchanged (sign and payload): along a line the window keeps the first NaN it meets (the
    running result is the comparison's first operand); down the lines a line's NaN replaces
    the running result (there the new line is the first operand), so the output NaN is that of
    the lowest line holding one. Padded positions do not take part.
AVERAGE
    In fp17 (:mod:`sim.nvfloat`): every input element converted (an infinity becomes the
    largest fp17 value). Along each line the window's real elements are added left to right
    (``acc = acc + x``), then ``PAD_VALUE_<nh>X`` is added once (the field's low 17 bits read
    as an fp17 code; +0 when ``nh`` = 0). Down the lines those line results are added top to
    bottom (``acc = line + acc``), then ``PAD_VALUE_<nv>X x kernel_width`` (an fp17 product)
    is added once. The sum is multiplied by ``RECIP_KERNEL_WIDTH`` then by
    ``RECIP_KERNEL_HEIGHT`` (both fp17 codes) and converted to fp16 (rounded to nearest even,
    saturating at 65504, NaN payloads kept). NVDLA's compiler writes ``PAD_VALUE_NX`` = N x
    the pad value and the reciprocals 1/kernel, all in fp17.
NaN handling and counters (fp16 only; int layers count 0)
    Offline, ``D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO`` replaces every NaN the PDP_RDMA delivers by +0
    before pooling (flying input is never flushed). ``D_NAN_INPUT_NUM`` / ``D_INF_INPUT_NUM``
    count the NaNs / infinities among the elements PDP_RDMA delivers (whole atoms: a split's
    re-read columns again, the last surface's padding lanes too) and ``D_NAN_OUTPUT_NUM`` the
    NaNs among the elements written (whole atoms), each counted before the flush, except that
    NVDLA's counters miss the last 8 bytes (4 elements) of the layer: the last beat of the last
    atom (last split, last surface, last line, last column) is never added. The input counters
    exist only on the PDP_RDMA path: a flying layer reports the counts an earlier offline layer
    stored, by NVDLA's two-slot scheme (:class:`NanCounters`).

How sure: the fp16/fp17 units are bit-exact to NVDLA's HLS Verilog (:mod:`sim.nvfloat`);
max / min / average on flying input (the 1D and 2D orders, the pad additions, the
reciprocals, NaN priority, conversions) match NVDLA's ``NV_NVDLA_PDP_core`` Verilog bit for
bit on random layers; the input counters (last beat, two slots) match ``NV_NVDLA_PDP_nan``
and the output counter ``NV_NVDLA_PDP_WDMA_dat`` (``tests/test_pdp_fp16_nvdla_rtl.py``,
needs an nvdla/hw checkout). Read from the Verilog but not simulated: the NaN flush, which
input beat is last (PDP_RDMA's split -> surface -> line -> column -> 8-byte beat order) and
split width for fp16 (the offline path feeds the same pooling units).

Split width (``SPLIT_NUM`` > 0) runs the passes of :func:`sim.pdp.program.split_passes` one
after another on their own columns (re-read overlap included) and padding.

The layer writes ``D_NAN_INPUT_NUM``, ``D_INF_INPUT_NUM`` and ``D_NAN_OUTPUT_NUM`` (see
above; 0 on int layers); the stall counters ``D_PERF_WRITE_STALL`` / PDP_RDMA
``D_PERF_READ_STALL`` are timing and stay untouched in this untimed model.
"""

from __future__ import annotations

import numpy as np

from sim.nvfloat import (fp16_is_inf, fp16_is_nan, fp16_to_fp17, fp17_add, fp17_from_float,
                         fp17_mul, fp17_to_fp16)

from .program import AVERAGE, BYTES, FP16, MAX, RAM_CV, PdpProgram, decode

__all__ = ["run_pdp", "pool", "pool_fp16", "pool_program", "read_cube", "write_cube",
           "wrap_signed", "round_recip", "STATUS_FIELDS", "NanCounters", "nan_counts"]

#: hardware-written PDP fields of a layer and their value in this model
STATUS_FIELDS = {"D_NAN_INPUT_NUM": {"NAN_INPUT_NUM": 0},
                 "D_INF_INPUT_NUM": {"INF_INPUT_NUM": 0},
                 "D_NAN_OUTPUT_NUM": {"NAN_OUTPUT_NUM": 0}}


def wrap_signed(x, bits: int):
    """The low ``bits`` bits of int64 ``x`` as a signed value."""
    x = np.asarray(x, dtype=np.int64)
    half = np.int64(1) << (bits - 1)
    return ((x + half) & ((np.int64(1) << bits) - 1)) - half


def round_recip(x, recip: int, bits: int):
    """``x * recip / 2^16`` rounded half away from zero into ``bits`` signed bits.

    As NVDLA's RTL builds it: a negative product keeps the low ``bits`` bits of its floor
    (plus one when the fraction is above one half); a non-negative one keeps the low
    ``bits - 1`` bits of its floor plus the rounding bit (so an overflowing positive
    average wraps modulo 2^(bits - 1), not 2^bits)."""
    v = np.asarray(x, dtype=np.int64) * np.int64(recip)
    q, f = v >> 16, v & 0xFFFF
    low = np.int64((1 << (bits - 1)) - 1)
    return wrap_signed(np.where(v >= 0, (q & low) + (f >= 0x8000), q + (f > 0x8000)), bits)


def _window_sums(a, kernel: int, stride: int, count: int, axis: int):
    """Sums of ``kernel`` consecutive entries along ``axis`` at ``stride``, ``count`` of them."""
    c = np.cumsum(a, axis=axis, dtype=np.int64)
    zero_shape = list(a.shape)
    zero_shape[axis] = 1
    c = np.concatenate([np.zeros(zero_shape, np.int64), c], axis=axis)
    starts = np.arange(count) * stride
    return np.take(c, starts + kernel, axis=axis) - np.take(c, starts, axis=axis)


def _real_counts(n: int, pad: int, kernel: int, stride: int, count: int):
    """Real (unpadded) positions in each of ``count`` windows over ``pad + n + ...``."""
    start = np.arange(count) * stride - pad
    return np.minimum(start + kernel, n) - np.maximum(start, 0)


def _row_bits(bits: int) -> int:
    """Bits a window row's sum keeps (NVDLA's cal1d): B + 3 for int8 (11), B + 6 for int16
    (22: the 16-bit lanes of the 1D unit are 22 bits wide)."""
    return bits + 6 if bits == 16 else bits + 3


def pool(x, method: int, kernel, stride, pad, out_size, pad_values=(0,) * 7,
         recip=(0x10000, 0x10000), bits: int = 8):
    """Pool one pass: ``x`` [C, H, W] int input, ``kernel``/``stride`` (w, h), ``pad`` (left,
    right, top, bottom), ``out_size`` (ow, oh), ``pad_values`` the raw PAD_VALUE_1X..7X
    fields, ``recip`` (RECIP_KERNEL_WIDTH, RECIP_KERNEL_HEIGHT), ``bits`` the element width.
    Returns [C, oh, ow] int64."""
    x = np.asarray(x, dtype=np.int64)
    C, H, W = x.shape
    kw, kh = kernel
    sw, sh = stride
    pl, pr, pt, pb = pad
    ow, oh = out_size
    if method != AVERAGE:
        fill = np.iinfo(np.int64).min if method == MAX else np.iinfo(np.int64).max
        padded = np.full((C, H + pt + pb, W + pl + pr), fill, np.int64)
        padded[:, pt:pt + H, pl:pl + W] = x
        win = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2))
        win = win[:, ::sh, ::sw][:, :oh, :ow]
        return win.max(axis=(3, 4)) if method == MAX else win.min(axis=(3, 4))

    pv = np.array([0] + [int(v) for v in pad_values], np.int64)     # index: padded positions
    # horizontal: per real line, real elements + PAD_VALUE_<nh>X (11 / 22 bits, see above)
    xw = np.zeros((C, H, W + pl + pr), np.int64)
    xw[:, :, pl:pl + W] = x
    rows = _window_sums(xw, kw, sw, ow, axis=2)                       # [C, H, ow]
    nh = kw - _real_counts(W, pl, kw, sw, ow)
    pad_1d = wrap_signed(pv[nh], bits + 3)
    rows = wrap_signed(rows + pad_1d[None, None, :], _row_bits(bits))
    # vertical: the line sums + kernel_width x PAD_VALUE_<nv>X in B + 6 bits
    xh = np.zeros((C, H + pt + pb, ow), np.int64)
    xh[:, pt:pt + H, :] = rows
    sums = _window_sums(xh, kh, sh, oh, axis=1)                       # [C, oh, ow]
    nv = kh - _real_counts(H, pt, kh, sh, oh)
    pad_2d = wrap_signed(wrap_signed(pv[nv], 19) * kw, bits + 6)
    sums = wrap_signed(sums + pad_2d[None, :, None], bits + 6)
    return round_recip(round_recip(sums, recip[0], bits + 3), recip[1], bits)


def _fp16_key(h):
    """Sign-magnitude order of fp16 codes as an integer (-0 below +0)."""
    mag = h & 0x7FFF
    return np.where(h & 0x8000, -mag - 1, mag)


def _fp16_pick(first, second, method):
    """NVDLA's fp16 max / min of two codes: a NaN wins (``first``'s if both are NaN)."""
    n1, n2 = fp16_is_nan(first), fp16_is_nan(second)
    k1, k2 = _fp16_key(first), _fp16_key(second)
    take1 = k1 > k2 if method == MAX else k1 < k2
    return np.where(n1, first, np.where(n2, second, np.where(take1, first, second)))


def _windows(n: int, pad: int, kernel: int, stride: int, count: int):
    """Input positions [count, kernel] of each window's taps (-1 outside the input)."""
    pos = np.arange(count)[:, None] * stride - pad + np.arange(kernel)[None, :]
    return np.where((pos >= 0) & (pos < n), pos, -1)


def _fold(x, taps, axis, step):
    """Run ``step(acc, new)`` over each window's real taps in order along ``axis`` of ``x``;
    ``taps`` [count, kernel] from :func:`_windows`. Returns x with ``axis`` -> count."""
    acc = None
    started = np.zeros(taps.shape[0], bool)
    for k in range(taps.shape[1]):
        t = taps[:, k]
        real = t >= 0
        v = np.take(x, np.where(real, t, 0), axis=axis)
        shape = [1] * x.ndim
        shape[axis] = -1
        first = (real & ~started).reshape(shape)
        more = (real & started).reshape(shape)
        if acc is None:
            acc = v
        else:
            acc = np.where(first, v, np.where(more, step(acc, v), acc))
        started |= real
    return acc


def pool_fp16(x, method: int, kernel, stride, pad, out_size, pad_values=(0,) * 7,
              recip=(0x7C00, 0x7C00)):
    """Pool one fp16 pass: ``x`` [C, H, W] fp16 codes; other arguments as :func:`pool`
    (``pad_values`` and ``recip`` hold fp17 codes in their low 17 bits). Returns [C, oh, ow]
    fp16 codes (see the module docstring for the arithmetic)."""
    x = np.asarray(x, dtype=np.int64) & 0xFFFF
    C, H, W = x.shape
    kw, kh = kernel
    sw, sh = stride
    pl, pr, pt, pb = pad
    ow, oh = out_size
    cols = _windows(W, pl, kw, sw, ow)
    rows = _windows(H, pt, kh, sh, oh)
    if method != AVERAGE:
        line = _fold(x, cols, 2, lambda acc, v: _fp16_pick(acc, v, method))
        return _fold(line, rows, 1, lambda acc, v: _fp16_pick(v, acc, method))
    pv = np.array([0] + [int(v) & 0x1FFFF for v in pad_values], np.int64)
    line = _fold(fp16_to_fp17(x), cols, 2, fp17_add)                   # [C, H, ow]
    nh = (cols < 0).sum(axis=1)
    line = fp17_add(line, pv[nh][None, None, :])
    total = _fold(line, rows, 1, lambda acc, v: fp17_add(v, acc))       # [C, oh, ow]
    nv = (rows < 0).sum(axis=1)
    pad_2d = fp17_mul(pv[nv], fp17_from_float(kw))
    total = fp17_add(total, pad_2d[None, :, None])
    avg = fp17_mul(fp17_mul(total, int(recip[0]) & 0x1FFFF), int(recip[1]) & 0x1FFFF)
    return fp17_to_fp16(avg)


def pool_program(p: PdpProgram, cube):
    """The pooled output [C', oh, ow] of program ``p`` for the input ``cube`` [C', H, W] (C'
    the channels including the last surface's padding), pass by pass."""
    cube = np.asarray(cube, dtype=np.int64)
    out = np.empty((cube.shape[0], p.out_height, p.out_width), np.int64)
    bits = 8 * p.element_bytes
    for s in p.splits:
        part = cube[:, :, s.in_start:s.in_start + s.in_width]
        args = (part, p.method, (p.kernel_w, p.kernel_h), (p.stride_w, p.stride_h),
                (s.pad_left, s.pad_right, p.pad_top, p.pad_bottom), (s.out_width, p.out_height),
                p.pad_values, (p.recip_w, p.recip_h))
        out[:, :, s.out_start:s.out_start + s.out_width] = \
            pool_fp16(*args) if p.precision == FP16 else pool(*args, bits)
    return out


# -----------------------------------------------------------------------------------------
# fp16 NaN / Inf counters
# -----------------------------------------------------------------------------------------
_BEAT = 4            #: elements of the last 8-byte beat NVDLA's counters miss


def _count_but_last_beat(mask, last):
    """Count ``mask`` [C', ...] over everything but the last beat: channels C'-4.. at the
    index ``last`` (a tuple of the trailing axes)."""
    return int(mask.sum()) - int(mask[(slice(-_BEAT, None),) + last].sum())


def nan_counts(p: PdpProgram, cube, out):
    """``(nan_in, inf_in, nan_out)`` of an fp16 layer as NVDLA counts them (``cube`` the raw
    input codes before the flush, ``out`` the output codes; see the module docstring)."""
    if p.precision != FP16:
        return 0, 0, 0
    nan_in = inf_in = 0
    for s in p.splits:
        part = cube[:, :, s.in_start:s.in_start + s.in_width]
        nan_in += int(fp16_is_nan(part).sum())
        inf_in += int(fp16_is_inf(part).sum())
    last = (-1, -1)
    nan_in -= int(fp16_is_nan(cube[(slice(-_BEAT, None),) + last]).sum())
    inf_in -= int(fp16_is_inf(cube[(slice(-_BEAT, None),) + last]).sum())
    return nan_in, inf_in, _count_but_last_beat(fp16_is_nan(out), last)


class NanCounters:
    """NVDLA's input NaN / Inf counter slots (``NV_NVDLA_PDP_nan``): an offline layer stores
    its counts in slot ``store`` (which then flips); every layer, offline or flying, reports
    slot ``report`` (which then flips). Offline-only sequences report their own counts; a
    flying layer reports a stale slot and shifts the pairing of the offline layers after it
    (they then report the previous offline layer's counts) until another flying layer."""

    def __init__(self):
        self.slots = [(0, 0), (0, 0)]
        self.store = 0
        self.report = 0

    def layer(self, counts, flying: bool):
        """``counts`` (nan_in, inf_in) of this layer (ignored when flying); returns the pair
        the layer reports."""
        if not flying:
            self.slots[self.store] = counts
            self.store ^= 1
        out = self.slots[self.report]
        self.report ^= 1
        return out


# -----------------------------------------------------------------------------------------
# Memory
# -----------------------------------------------------------------------------------------
def _addresses(base, line, surf, surfaces, height, width, atom):
    s = np.arange(surfaces, dtype=np.int64)[:, None, None, None] * surf
    h = np.arange(height, dtype=np.int64)[None, :, None, None] * line
    w = np.arange(width, dtype=np.int64)[None, None, :, None] * atom
    b = np.arange(atom, dtype=np.int64)[None, None, None, :]
    return base + s + h + w + b


def _check_space(cfg, addrs, where, base):
    if int(addrs.max()) >= (1 << cfg.address_width) or int(addrs.min()) < 0:
        raise ValueError(f"{where}={base:#x}: the surface ends outside the "
                         f"{cfg.address_width}-bit address space")


def read_cube(cfg, mem, base, line, surf, channels, height, width, nbytes, where="PDP_RDMA",
              signed=True):
    """[C', H, W] values (C' = whole surfaces) of a feature cube in memory (``signed=False``:
    the raw codes, for fp16)."""
    atom = cfg.memory_atom
    group = atom // nbytes
    surfaces = -(-channels // group)
    addrs = _addresses(base, line, surf, surfaces, height, width, atom)
    _check_space(cfg, addrs, f"{where}.D_SRC_BASE_ADDR_LOW", base)
    raw = mem.gather(addrs).astype(np.int64).reshape(surfaces, height, width, group, nbytes)
    v = raw[..., 0] if nbytes == 1 else raw[..., 0] | (raw[..., 1] << 8)
    if signed:
        v = wrap_signed(v, 8 * nbytes)
    return v.transpose(0, 3, 1, 2).reshape(surfaces * group, height, width)


def write_cube(cfg, mem, base, line, surf, cube, nbytes, where="PDP"):
    """Write [C', H, W] (C' = whole surfaces) as a feature cube; returns (first, end) bytes."""
    atom = cfg.memory_atom
    group = atom // nbytes
    c, h, w = cube.shape
    surfaces = c // group
    addrs = _addresses(base, line, surf, surfaces, h, w, atom)
    _check_space(cfg, addrs, f"{where}.D_DST_BASE_ADDR_LOW", base)
    v = np.asarray(cube, np.int64).reshape(surfaces, group, h, w).transpose(0, 2, 3, 1)
    data = np.empty(v.shape + (nbytes,), np.uint8)
    for i in range(nbytes):
        data[..., i] = (v >> (8 * i)) & 0xFF
    mem.scatter(addrs.reshape(-1), data.reshape(-1))
    return int(addrs.min()), int(addrs.max()) + 1


def _memory(ram, mem, sram):
    return sram if ram == RAM_CV and sram is not None else mem


def run_pdp(cfg, pdp, rdma, mem, sram=None, flying_input=None, counters=None) -> dict:
    """Run one PDP layer; returns ``{block: {register: {field: value}}}`` of the
    hardware-written fields. ``flying_input`` [C or C rounded up to a surface, H, W] is SDP's
    output (FLYING_MODE=ON_FLYING; fp16: the codes); otherwise PDP_RDMA reads the input.
    ``counters`` (:class:`NanCounters`, kept by the unit across layers) gives the input NaN /
    Inf counts a layer reports; without it a layer reports its own (0 when flying)."""
    flying = flying_input is not None
    p = decode(cfg, pdp, rdma, flying=flying)
    fp16 = p.precision == FP16
    nbytes = p.element_bytes
    group = cfg.memory_atom // nbytes
    c_pad = -(-p.channel // group) * group
    if flying:
        cube = np.asarray(flying_input, dtype=np.int64)
        if cube.ndim != 3 or cube.shape[1:] != (p.height, p.width) or \
                cube.shape[0] not in (p.channel, c_pad):
            raise ValueError(
                f"PDP.D_DATA_CUBE_IN_*: the SDP output cube [C={cube.shape[0]}, "
                f"H={cube.shape[1] if cube.ndim == 3 else '?'}, "
                f"W={cube.shape[2] if cube.ndim == 3 else '?'}] does not match PDP's input "
                f"cube [C={p.channel}, H={p.height}, W={p.width}]")
        if cube.shape[0] != c_pad:
            cube = np.concatenate([cube, np.zeros((c_pad - p.channel, p.height, p.width),
                                                  np.int64)])
        cube = cube & 0xFFFF if fp16 else wrap_signed(cube, 8 * nbytes)
    else:
        ram, base, line, surf = p.src
        cube = read_cube(cfg, _memory(ram, mem, sram), base, line, surf, p.channel, p.height,
                         p.width, nbytes, signed=not fp16)
    pooled = cube
    if fp16 and not flying and p.nan_to_zero:
        pooled = np.where(fp16_is_nan(cube), 0, cube)
    out = pool_program(p, pooled)
    ram, base, line, surf = p.dst
    write_cube(cfg, _memory(ram, mem, sram), base, line, surf, out, nbytes)
    nan_in, inf_in, nan_out = nan_counts(p, cube, out)
    if flying:
        nan_in = inf_in = 0
    if counters is not None:
        nan_in, inf_in = counters.layer((nan_in, inf_in), flying)
    written = {"PDP": {"D_NAN_INPUT_NUM": {"NAN_INPUT_NUM": nan_in},
                       "D_INF_INPUT_NUM": {"INF_INPUT_NUM": inf_in},
                       "D_NAN_OUTPUT_NUM": {"NAN_OUTPUT_NUM": nan_out}}}
    if not flying:
        written["PDP_RDMA"] = {}
    return written
