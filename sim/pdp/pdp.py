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
    the field's low B + 3 bits, signed), kept in B + 3 bits. Over the lines of the window,
    those sums plus ``kernel_width x PAD_VALUE_<nv>X`` (``nv`` = padded lines; the whole
    19-bit field, signed), kept in B + 6 bits. So a program whose PAD_VALUE_NX holds N times
    the pad value averages over the whole kernel with the pad value counted at every padded
    position. The sum is then multiplied by ``RECIP_KERNEL_WIDTH`` / 2^16 and rounded half
    away from zero into B + 3 bits, then by ``RECIP_KERNEL_HEIGHT`` / 2^16, rounded the same
    way into B bits. Nothing saturates: every step keeps low bits, as NVDLA's RTL does (a
    non-negative product keeps one bit fewer before the rounding bit is added, see
    :func:`round_recip`; NVDLA's C model agrees wherever the average fits, which is what its
    compiler programs: reciprocals ``2^16 // kernel`` and pad values N x v).

Split width (``SPLIT_NUM`` > 0) runs the passes of :func:`sim.pdp.program.split_passes` one
after another on their own columns (re-read overlap included) and padding.

The layer writes ``D_NAN_INPUT_NUM``, ``D_INF_INPUT_NUM`` and ``D_NAN_OUTPUT_NUM`` (0: they
count fp16 NaN/Inf only); the stall counters ``D_PERF_WRITE_STALL`` / PDP_RDMA
``D_PERF_READ_STALL`` are timing and stay untouched in this untimed model.
"""

from __future__ import annotations

import numpy as np

from .program import AVERAGE, BYTES, MAX, RAM_CV, PdpProgram, decode

__all__ = ["run_pdp", "pool", "pool_program", "read_cube", "write_cube", "wrap_signed",
           "round_recip", "STATUS_FIELDS"]

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
    # horizontal: per real line, real elements + PAD_VALUE_<nh>X in B + 3 bits
    xw = np.zeros((C, H, W + pl + pr), np.int64)
    xw[:, :, pl:pl + W] = x
    rows = _window_sums(xw, kw, sw, ow, axis=2)                       # [C, H, ow]
    nh = kw - _real_counts(W, pl, kw, sw, ow)
    pad_1d = wrap_signed(pv[nh], bits + 3)
    rows = wrap_signed(rows + pad_1d[None, None, :], bits + 3)
    # vertical: the line sums + kernel_width x PAD_VALUE_<nv>X in B + 6 bits
    xh = np.zeros((C, H + pt + pb, ow), np.int64)
    xh[:, pt:pt + H, :] = rows
    sums = _window_sums(xh, kh, sh, oh, axis=1)                       # [C, oh, ow]
    nv = kh - _real_counts(H, pt, kh, sh, oh)
    pad_2d = wrap_signed(wrap_signed(pv[nv], 19) * kw, bits + 6)
    sums = wrap_signed(sums + pad_2d[None, :, None], bits + 6)
    return round_recip(round_recip(sums, recip[0], bits + 3), recip[1], bits)


def pool_program(p: PdpProgram, cube):
    """The pooled output [C', oh, ow] of program ``p`` for the input ``cube`` [C', H, W] (C'
    the channels including the last surface's padding), pass by pass."""
    cube = np.asarray(cube, dtype=np.int64)
    out = np.empty((cube.shape[0], p.out_height, p.out_width), np.int64)
    bits = 8 * p.element_bytes
    for s in p.splits:
        part = cube[:, :, s.in_start:s.in_start + s.in_width]
        out[:, :, s.out_start:s.out_start + s.out_width] = pool(
            part, p.method, (p.kernel_w, p.kernel_h), (p.stride_w, p.stride_h),
            (s.pad_left, s.pad_right, p.pad_top, p.pad_bottom), (s.out_width, p.out_height),
            p.pad_values, (p.recip_w, p.recip_h), bits)
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


def read_cube(cfg, mem, base, line, surf, channels, height, width, nbytes, where="PDP_RDMA"):
    """[C', H, W] values (C' = whole surfaces) of a feature cube in memory."""
    atom = cfg.memory_atom
    group = atom // nbytes
    surfaces = -(-channels // group)
    addrs = _addresses(base, line, surf, surfaces, height, width, atom)
    _check_space(cfg, addrs, f"{where}.D_SRC_BASE_ADDR_LOW", base)
    raw = mem.gather(addrs).astype(np.int64).reshape(surfaces, height, width, group, nbytes)
    v = raw[..., 0] if nbytes == 1 else raw[..., 0] | (raw[..., 1] << 8)
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


def run_pdp(cfg, pdp, rdma, mem, sram=None, flying_input=None) -> dict:
    """Run one PDP layer; returns ``{block: {register: {field: value}}}`` of the
    hardware-written fields. ``flying_input`` [C or C rounded up to a surface, H, W] is SDP's
    output (FLYING_MODE=ON_FLYING); otherwise PDP_RDMA reads the input."""
    flying = flying_input is not None
    p = decode(cfg, pdp, rdma, flying=flying)
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
        cube = wrap_signed(cube, 8 * nbytes)
    else:
        ram, base, line, surf = p.src
        cube = read_cube(cfg, _memory(ram, mem, sram), base, line, surf, p.channel, p.height,
                         p.width, nbytes)
    out = pool_program(p, cube)
    ram, base, line, surf = p.dst
    write_cube(cfg, _memory(ram, mem, sram), base, line, surf, out, nbytes)
    written = {"PDP": {k: dict(v) for k, v in STATUS_FIELDS.items()}}
    if not flying:
        written["PDP_RDMA"] = {}
    return written
