"""Cycles of a direct-convolution layer on this core: a stripe-level timeline of CDMA, CSC/CMAC
and CACC -> SDP, vectorised over the stripes of each kernel group.

What it follows (this core's RTL, ``hw/conv``; contract in ``hw/conv/common.py``):

- CDMA (``hw/conv/cdma.py``): input lines in order, one CBUF slice per line (a slice is
  usable once its last atom is written), and the weight surface as one byte stream, both
  through ONE CBUF write port (one memory atom per cycle, data and weights alternating when
  both have an atom). The read rate is ``min(1, dbbif bytes x efficiency / atom)`` atoms per
  cycle. Weights larger than the weight banks stream through a ring: a byte is fetched only
  when the CSC has released the bytes one ring before it (released a kernel group at a time).
  ``DATA_REUSE`` (:func:`data_reuse`, from the previous convolution layer's release): after
  a layer that kept every slice nothing is fetched; after one that released some, the kept
  lines are there from the start and the CDMA's ``DATAIN_HEIGHT`` lines follow them.
- CSC (``hw/conv/csc.py``): for kernel group g, stripe, channel group j, kernel position
  (r, s): one weight load (Atomic-K + 2 cycles, prepared while the previous block streams),
  then one atom per output position of the stripe. Stripes are ``max(16, 2 x Atomic-K)``
  positions (the last 1.5 stripes split in halves). A block therefore takes
  ``max(stripe length, Atomic-K + 2 + BLOCK_EXTRA)`` cycles; a stripe waits for the input
  lines its outputs read (``dat_slices``), and a kernel group's first stripe for the group's
  weights.
- CACC (``hw/conv/cacc.py``): an assembly buffer plus a one-stripe FIFO (double buffer): a
  stripe drains to SDP, ``Atomic-K / T`` transfers per position (``T = sdp_bs_throughput``),
  while the next accumulates. Per stripe the pipeline moves at ``max(compute, delivery)``.
- SDP writes the output (Ho x Wo x ceil(K / atom) atoms) through the DBBIF write channel.

Winograd layers (builds where the RTL runs them, :func:`arch.config.rtl_winograd`;
``hw/conv/wino_dat.py``): the CSC runs them as a 1 x 1 layer of ``16 x C_ext`` channels (one
atom per output and 4-channel small cube), and before each channel group (a CBUF bank row
of channels) of a stripe it reads the stripe's 4 x 4 input tiles, 17 cycles each, and
writes their PRA output into one half of its tile buffer (:data:`WINO_FILL_EXTRA` cycles
more) while the atoms of the previous channel group read the other half: a stripe's channel
group takes the longer of its atoms and its fill, and the layer's first fill is not hidden.
Where a stripe's atoms take about as long as its delivery to SDP the RTL is slower than
``max(compute, delivery)`` (``wg_28x8x128_32_i8``: the model 10 % low). The CDMA writes the padded, channel-extended lines; only the
unpadded input is read from memory (``fetch_fraction``), the padding takes write-port
cycles only.

The atomic-operation count (the MAC bound) is ``Wo x Ho x R x S x ceil(C / Atomic-C) x
ceil(K / Atomic-K)`` (per batch): one atom of Atomic-C channels against Atomic-K kernels per
cycle. Constants fitted on the measured layer cycles of ``bench/perf_calibration.tsv``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sim.conv.cdma import cbuf_data_key
from sim.formats.common import ceil_div

__all__ = ["ConvShape", "estimate_conv", "data_reuse", "mac_ops", "stripes", "wino_tiles",
           "OVERHEAD", "BLOCK_EXTRA", "WINO_TILE_CYCLES", "WINO_FILL_EXTRA"]

#: cycles from the final D_OP_ENABLE write to the interrupt that no rate hides: the register
#: copy, the first request, the CSC/CMAC/CACC pipeline depth, SDP's write-back and the
#: interrupt (fitted on dc_1x1x8_1x1x8x1_int8_0 and the others, harness memory; the memory
#: latency is added on top)
OVERHEAD = 70
#: cycles a weight load takes beyond Atomic-K + 2 when it cannot hide behind a short stripe
BLOCK_EXTRA = 0
#: Winograd: cycles of one input tile read (16 CBUF reads and the hand-over to the PRA)
WINO_TILE_CYCLES = 17
#: Winograd: cycles of a tile fill beyond its tile reads (the PRA and the last tile's 16
#: buffer rows, the hand-over to the atoms)
WINO_FILL_EXTRA = 24


@dataclass(frozen=True)
class ConvShape:
    """The geometry of a convolution layer, independent of the register encoding (so a layer
    decoded on one build can be evaluated on another, as a compiler would re-program it)."""
    width: int
    height: int
    channels: int              #: CSC channels (image input: the pre-extended kernel line)
    batches: int
    kernels: int
    kh: int
    kw: int
    stride_y: int
    dil_y: int
    pad_top: int
    out_width: int
    out_height: int
    element_bytes: int         #: 1 (int8) or 2 (int16 / fp16)
    line_bytes: int            #: bytes the CDMA fetches per input line (whole atoms)
    weight_bytes: int          #: bytes of the weight stream (WEIGHT_BYTES)
    data_fetched: bool = True  #: False when the layer fully reuses the kept slices
    weights_fetched: bool = True
    weight_banks: int = 0      #: the layer's weight banks (0: whatever the data leaves)
    #: partial data reuse: the input lines (per batch) already in the CBUF, the first ones
    #: of the CSC's, and the lines the CDMA fetches after them (None: ``height``)
    kept_lines: int = 0
    fetched_lines: int | None = None
    #: Winograd: the CBUF channel groups (bank rows) of an extended position, whose tiles
    #: each stripe reads once (0: a direct layer)
    wino_rows: int = 0
    #: the part of the CBUF data the CDMA reads from memory (Winograd: the unpadded input;
    #: the padding of the extended lines is written without a read); 1 for direct layers
    fetch_fraction: float = 1.0

    @classmethod
    def from_program(cls, p, cfg, reuse=None) -> "ConvShape":
        """From a :class:`sim.conv.program.ConvProgram` decoded on ``cfg``; ``reuse``: the
        ``(kept, fetched)`` lines of :func:`data_reuse` (what the layer before it left in the
        CBUF); without it a ``DATA_REUSE`` layer fetches nothing."""
        eb = p.element_bytes
        kept, fetched = reuse if reuse is not None else \
            ((p.in_height, 0) if p.data_reuse else (0, None))
        if p.winograd is not None:
            # the 1 x 1 layer of 16 x C_ext channels over the extended input (its lines as
            # the CDMA writes them)
            return cls(width=p.in_width, height=p.in_height, channels=16 * p.in_channels,
                       batches=1, kernels=p.kernels, kh=1, kw=1, stride_y=1, dil_y=1,
                       pad_top=-3, out_width=p.out_width, out_height=p.out_height,
                       element_bytes=eb, line_bytes=p.in_width * p.in_channels * eb,
                       weight_bytes=p.weight_bytes, data_fetched=fetched != 0,
                       weights_fetched=not p.weight_reuse, weight_banks=p.weight_bank,
                       kept_lines=kept if fetched else 0,
                       fetched_lines=fetched if kept and fetched else None,
                       wino_rows=ceil_div(p.in_channels * eb, cfg.cbuf_bank_width),
                       fetch_fraction=(p.width * p.height) / (p.in_width * p.in_height))
        if p.image is not None:
            line = ceil_div(p.width * p.in_channels // max(p.kw, 1) * eb, cfg.memory_atom) \
                * cfg.memory_atom
            channels, kw = p.in_channels, 1
        else:
            line = p.width * ceil_div(p.channels * eb, cfg.memory_atom) * cfg.memory_atom
            channels, kw = p.in_channels, p.kw
        return cls(width=p.in_width, height=p.in_height, channels=channels, batches=p.batches,
                   kernels=p.kernels, kh=p.kh, kw=kw, stride_y=p.stride_y, dil_y=p.dil_y,
                   pad_top=p.pad_top, out_width=p.out_width, out_height=p.out_height,
                   element_bytes=eb, line_bytes=line, weight_bytes=p.weight_bytes,
                   data_fetched=fetched != 0, weights_fetched=not p.weight_reuse,
                   weight_banks=p.weight_bank, kept_lines=kept if fetched else 0,
                   fetched_lines=fetched if kept and fetched else None)

    def retarget(self, cfg) -> "ConvShape":
        """The same layer as it would be programmed on ``cfg``: whole atoms of that build's
        memory atom, the weight banks whatever the input lines leave free."""
        atom = cfg.memory_atom
        if self.wino_rows:                  # (channels: 16 x the extended channels)
            cbytes = self.channels // 16 * self.element_bytes
            return replace(self, line_bytes=self.width * ceil_div(cbytes, atom) * atom,
                           weight_banks=0, wino_rows=ceil_div(cbytes, cfg.cbuf_bank_width))
        per_line = ceil_div(self.channels * self.element_bytes, atom) * atom
        return replace(self, line_bytes=self.width * per_line, weight_banks=0)


def data_reuse(prev, p) -> tuple:
    """``(kept, fetched)`` input lines per batch of convolution layer ``p`` after layer
    ``prev`` (programs), as the golden model's CBUF decides (``sim.conv.cdma.load_cbuf``,
    ``CbufState.release``): with ``DATA_REUSE`` after a layer with the same banks and slice
    format, all of ``prev``'s lines and no fetch when ``prev`` skipped its release, else the
    lines it kept (its slices past ``RLS_SLICES``) followed by the CDMA's fetch of
    ``DATAIN_HEIGHT`` lines; otherwise no kept lines and the whole input (``fetched`` None)."""
    if not p.data_reuse or prev is None or cbuf_data_key(prev) != cbuf_data_key(p):
        return 0, None
    used = prev.in_height * prev.batches                  # slices prev held at its end
    if prev.skip_data_rls:
        return used // p.batches, 0
    left = max(used - prev.rls_slices, 0)
    if not left:
        return 0, None                                    # nothing kept: a plain fetch
    return left // p.batches, p.height


def kernel_group(cfg, shape) -> int:
    """Kernels per group: Atomic-K int8 kernels, half as many 16-bit ones."""
    return max(cfg.atomic_k // shape.element_bytes, 1)


def channel_groups(cfg, shape) -> int:
    """Channel groups of the CSC's channel loop: Atomic-C channels (16-bit layers: 2 x
    Atomic-C bytes, two atoms a position)."""
    return ceil_div(shape.channels, cfg.atomic_c)


def mac_ops(cfg, shape) -> int:
    """Atomic operations of the layer: Wo x Ho x R x S x channel groups x kernel groups x
    batches (16-bit layers: two atoms per position and half the kernels per group)."""
    return (shape.out_width * shape.out_height * shape.kh * shape.kw * shape.element_bytes
            * channel_groups(cfg, shape) * ceil_div(shape.kernels, kernel_group(cfg, shape))
            * shape.batches)


def stripes(cfg, positions: int) -> np.ndarray:
    """Stripe lengths of one kernel group, as ``hw.conv.csc.stripe_length`` cuts them:
    ``ms = max(16, 2 x Atomic-K)`` positions while at least 1.5 ms remain, then the rest in
    one stripe (at most ms) or two halves."""
    ms = max(16, 2 * cfg.atomic_k)
    if positions <= ms:
        return np.array([positions] if positions else [], dtype=np.int64)
    full = (positions - (ms + ms // 2)) // ms + 1 if positions >= ms + ms // 2 else 0
    rest = positions - full * ms
    tail = [rest >> 1, rest - (rest >> 1)] if rest > ms else [rest]
    return np.array([ms] * full + tail, dtype=np.int64)


def wino_tiles(out_width: int, lens) -> np.ndarray:
    """The 4 x 4 input tiles each stripe (``lens``, raster order) reads: its outputs whose
    tile has no earlier output in the stripe (the tile's outputs in raster order: (2ty, 2tx),
    (2ty, 2tx + 1), (2ty + 1, 2tx), (2ty + 1, 2tx + 1); the one before an output is the
    previous position, or for (odd row, even column) the one a line up and right)."""
    lens = np.asarray(lens, dtype=np.int64)
    if not len(lens):
        return lens
    p = np.arange(int(lens.sum()), dtype=np.int64)
    start = np.repeat(np.cumsum(lens) - lens, lens)
    oy, ox = p // out_width, p % out_width
    prev = np.where(ox % 2 == 1, p - 1, np.where(oy % 2 == 1, p - out_width + 1, -1))
    new = (prev < 0) | (prev < start)
    return np.add.reduceat(new.astype(np.int64), np.cumsum(lens) - lens)


def _arrival(n, first, other, rate):
    """Cycle at which atom ``n`` (1-based, array) of a stream arrives, when it shares the
    write port 1:1 with a stream of ``other`` atoms; ``first`` is the stream's start."""
    both = min(first, other)
    n = np.asarray(n, dtype=np.float64)
    return np.where(n <= both, 2 * n, n + both) / rate


def estimate_conv(cfg, shape: ConvShape, memory) -> dict:
    """Cycles and bounds of one convolution layer (see the module docstring).

    Returns ``{"cycles", "bounds": {name: cycles}, "macs", "mac_ops"}``; bounds are
    ``mac`` (atomic operations, weight loads of short stripes included), ``fetch`` (CBUF
    write port / DBBIF read: atoms over the fetch rate), ``sdp`` (CACC -> SDP delivery),
    ``write`` (output bytes over the DBBIF write rate) and ``fixed`` (overhead + latency)."""
    atom = cfg.memory_atom
    ak = kernel_group(cfg, shape)
    cg = channel_groups(cfg, shape)
    groups = ceil_div(shape.kernels, ak)
    rs = shape.kh * shape.kw
    T = cfg.sdp_bs_throughput or 1
    positions = shape.out_width * shape.out_height
    rate = min(1.0, cfg.dbbif_bytes * memory.efficiency / atom)

    line_atoms = shape.line_bytes // atom if shape.data_fetched else 0
    slices = shape.height * shape.batches
    kept = shape.kept_lines if shape.data_fetched else 0
    fetched = shape.height if shape.fetched_lines is None else shape.fetched_lines
    data_atoms = line_atoms * fetched * shape.batches
    wt_atoms = ceil_div(shape.weight_bytes, atom) if shape.weights_fetched else 0
    # the data atoms read from memory (Winograd's padding is written, not read): those share
    # the read bandwidth with the weights; every data atom takes a cycle of the write port
    ff = shape.fetch_fraction
    read_atoms = data_atoms * ff
    # a stripe's positions, its last output row and so its last input line
    lens = stripes(cfg, positions)
    ends = np.cumsum(lens)
    last_row = (ends - 1) // shape.out_width
    need = np.clip(last_row * shape.stride_y + (shape.kh - 1) * shape.dil_y - shape.pad_top,
                   0, shape.height - 1)
    blk_min = cfg.atomic_k // shape.element_bytes + 2 + BLOCK_EXTRA
    blk = np.maximum(lens * shape.element_bytes, blk_min)        # 16-bit: two atoms per pos
    dur = blk * cg * rs
    first_fill = 0.0
    if shape.wino_rows and len(lens):   # Winograd: a tile fill per stripe and bank row,
        # hidden behind the previous item's atoms but for the layer's first
        fill = WINO_TILE_CYCLES * wino_tiles(shape.out_width, lens) + WINO_FILL_EXTRA
        dur = shape.wino_rows * np.maximum(dur / shape.wino_rows, fill)
        first_fill = float(fill[0])
    deliver = lens * (cfg.atomic_k // shape.element_bytes) / T
    eff = np.maximum(dur, deliver)

    # weights: group g's bytes end at its share of the stream; the ring bounds the lead
    group_end = np.minimum(np.arange(1, groups + 1) * ak * cg * rs * cfg.atomic_c,
                           shape.weight_bytes)
    w_free = _arrival(-(-group_end // atom), wt_atoms, read_atoms, rate) \
        if wt_atoms else np.zeros(groups)
    bank_bytes = cfg.cbuf_bank_width * cfg.cbuf_bank_depth
    ring = (shape.weight_banks or max(cfg.cbuf_banks - ceil_div(
        slices * max(line_atoms, 1) * atom, bank_bytes), 1)) * bank_bytes

    t = first_fill
    group_done = np.zeros(groups)
    for b in range(shape.batches):
        # (lines kept from the previous layer are there from the start; the fetched ones
        # follow them in the CSC's order)
        n_data = (np.maximum(need - kept, 0) * shape.batches + b + 1) * line_atoms
        d_ready = np.where(need < kept, 0.0, np.maximum(
            _arrival(n_data * ff, read_atoms, wt_atoms, rate), n_data)) \
            if line_atoms else np.zeros(len(lens))
        for g in range(groups):
            w_ready = w_free[g]
            if b == 0 and wt_atoms and group_end[g] > ring:
                h = int(np.searchsorted(group_end, group_end[g] - ring))
                if h < g:                           # waits for group h's release
                    w_ready = max(w_ready, group_done[h] + (group_end[g] - group_end[h])
                                  / atom / rate)
            ready = np.maximum(d_ready, w_ready - dur + blk)
            ready[0] = max(ready[0], t)
            # E_i = max(E_{i-1}, ready_i) + eff_i, as a running maximum over cumulative sums
            c = np.cumsum(eff)
            t = float(np.max(ready - (c - eff)) + c[-1]) if len(c) else t
            group_done[g] = t
    tail = float(min(dur[-1], deliver[-1])) if len(lens) else 0.0
    out_bytes = positions * shape.batches * ceil_div(shape.kernels * shape.element_bytes,
                                                     atom) * atom
    write = out_bytes / (cfg.dbbif_bytes * memory.efficiency)
    fixed = OVERHEAD + 2 * memory.latency
    cycles = max(t + tail, write) + fixed
    ops = mac_ops(cfg, shape)
    bounds = {
        "mac": float(groups * shape.batches * dur.sum()),
        "fetch": (read_atoms + wt_atoms) / rate,
        "sdp": float(groups * shape.batches * deliver.sum()),
        "write": write,
        "fixed": fixed,
    }
    macs = positions * shape.batches * shape.kernels * shape.channels * rs
    if shape.wino_rows:                 # the direct 3 x 3 layer's on the extended input
        macs = positions * shape.kernels * shape.channels // 16 * 9
    return {"cycles": cycles, "bounds": bounds, "mac_ops": ops, "macs": macs,
            "bytes": int(read_atoms) * atom + wt_atoms * atom + out_bytes}
