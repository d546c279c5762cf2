"""What the convolution units share: sizes and the payloads between them (int8 datapath;
int16 layers on builds where :func:`conv_int16` holds, see "int16 layers" below).

The pipeline (spec "Convolution Pipeline"; golden model :mod:`sim.conv`)::

    MCIF/CVIF -> Cdma --cbuf_wr--> Cbuf <--dat_rd / wt_rd-- Csc --dat / wt--> Cmac --psum-->
    Cacc --out--> SDP flying input

Sizes, all from the build config: ``AC = cfg.atomic_c`` int8 channels per atomic operation,
``AK = cfg.atomic_k`` kernels, ``BW = cfg.cbuf_bank_width`` bytes per CBUF entry (= AC),
``NB = cfg.cbuf_banks`` banks of ``DEPTH = cfg.cbuf_bank_depth`` entries, ``ATOM =
cfg.memory_atom`` bytes, ``T = cfg.sdp_bs_throughput`` SDP lanes.

CBUF layout (the contract between Cdma and Csc)
    Flat entry address ``e`` in ``[0, NB*DEPTH)``: bank ``e // DEPTH``, row ``e % DEPTH``. The
    data region is banks ``[0, data_banks)`` (``D_BANK.DATA_BANK + 1``), the weight region the
    next ``weight_banks`` banks. Both regions are rings: a position ``p`` inside a region of
    ``n`` entries is kept in ``[0, n)`` (wrap by compare-and-subtract, sizes are not powers of
    two) and its flat address is ``region_base + p``.

    Data: input line ``y`` of batch ``b`` is slice ``s = y*B + b``; a slice takes
    ``ENTRIES + 1`` entries (:func:`sim.conv.entries_per_slice`) from ``dat_base + s*(ENTRIES+1)``
    on. In a slice, memory atom ``a`` (channels ``a*ATOM .. a*ATOM+ATOM-1``) of position ``x``
    sits in channel group ``j = a // P`` (``P = BW // ATOM`` atoms per entry) at byte lanes
    ``(a % P)*ATOM`` of entry ``j*W + x`` -- except the last, partial group (``r = atoms % P``
    atoms, the "cripple" group), which 2 or 4 positions share when ``r*2 == P`` or ``r*4 == P``
    (``share`` = 2 / 4; otherwise 1): entry ``whole*W + x // share``, lanes offset by
    ``(x % share) * (BW // share)``. A Csc data atom (AC channels of one position) is one
    entry (or the ``BW // share`` lanes of the shared one), channels past the input's C read 0.

    Two-column entries (``cfg.cbuf_entry_bytes`` = 2 x BW: NVDLA v1's nv_full; int8, int16
    and fp16 feature and image input): the registers count
    entries of ``EB = cbuf_entry_bytes`` bytes, register entry ``e`` being bank rows ``2e``
    and ``2e + 1`` (byte ``b < EB`` of it at row ``2e + b // BW``, lane ``b % BW``). The data
    layout above holds with entries, ``P``, the data region size and ``dat_base`` counted in
    register entries (``P = EB // ATOM``, the data region ``data_banks x cfg.cbuf_entry_depth`` entries, so
    the cripple group is shared by 4 positions at ``P / 4`` atoms, by 2 at ``P / 2``); the Csc's
    atom of channel group ``j`` (``AC`` channels, one row) and position ``x`` is row
    ``2*(slice + (j // 2)*W + x) + j % 2``; a shared entry gives each of its 2 positions a
    row (``x % 2``), each of its 4 half a row (row ``x // 2 % 2``, lanes ``x % 2 * BW / 2``).
    Weights and ``wt_base`` stay in bank rows (the weight region starts at row
    ``data_banks*DEPTH``).

    Image input (``DATAIN_FORMAT=PIXEL``): slice ``y`` is image line ``y`` with the CDMA's
    left/right padding, ``PAD_LEFT + W + PAD_RIGHT`` pixels of ``C`` bytes back to back from
    byte 0 of its first entry (byte ``b`` at entry ``b // BW``, lane ``b % BW``). The Csc
    reads it as pre-extended kernel lines: the atom of output ``ox``, kernel line ``r`` and
    channel group ``j`` is bytes ``ox*sx*C + j*AC ..`` of line ``oy*sy + r - pad_top``
    (with post-extension, ``p`` lines' ``S*C`` bytes side by side).

    Weights: the weight surface (direct-convolution layout, :func:`sim.formats.weight.
    dc_weight_offsets` with ``group_k = AK``, ``cube_c = AC``) is stored byte ``i`` at entry
    ``wt_base + i // BW``, lane ``i % BW`` (mod the region). Kernel group ``g`` (``Kg = min(AK,
    K - g*AK)`` kernels) occupies bytes ``[g*AK*C*R*S, g*AK*C*R*S + Kg*C*R*S)``; inside it the
    block of channel group ``j`` (``Cj`` channels) and kernel position ``(r, s)`` is ``Kg*Cj``
    bytes (kernel ``kk``'s channels at ``kk*Cj``), blocks in ``j``-major, ``(r, s)`` order --
    so one stripe streams its group's bytes sequentially.

    Positions (added with :mod:`hw.conv.cdma` / :mod:`hw.conv.cbuf`): ``dat_base`` is a data
    ring position (the data region starts at flat entry 0, so it is also the flat entry);
    ``wt_base`` is a weight ring position, flat entry ``data_banks*DEPTH + wt_base``. The CDMA
    writes only what it fetched: whole memory atoms (so channels ``C .. ceil(C/ATOM)*ATOM - 1``
    hold whatever memory holds) and, in a slice, only the lanes of the layout above (e.g. the
    unused atoms of an unshared cripple entry keep older contents); forcing channels past C to
    0 is the Csc's job, as in :mod:`sim.conv.csc`.

Cdma -> Csc progress (:class:`hw.conv.cdma.Cdma`)
    ``dat_slices`` (slices of this layer complete, from ``dat_base`` on) and ``wt_bytes``
    (weight bytes in the ring) grow one cycle after the last write they cover is presented;
    the Cbuf reads before it writes, so a read issued in the cycle a count covers it sees the
    data. ``wt_released`` (Csc -> Cdma, bytes, monotonic, 0 at the layer's start): the Cdma
    writes weight byte ``i`` only when ``i < wt_released + weight ring bytes``; a Csc streaming
    weights larger than the ring must release them. ``end`` (pulse after the layer) lets the
    Cdma keep the unreleased slices (``RLS_SLICES``) and weights for the next layer's reuse.

Weight copies (builds with batching; :func:`wt_copy_layout`)
    The Csc walks a batched layer's weights once per batch (batch-major sequence, below). When
    they fit the weight ring, the Cdma fetches them once and the Csc releases nothing before
    the last batch. When they exceed the ring, the Cdma fetches the surface once per batch:
    the byte stream is ``B`` copies of ``S`` bytes, copy ``b`` at stream bytes ``b*S ..``, and
    ``wt_bytes`` / ``wt_released`` count stream bytes. ``S`` is ``WEIGHT_BYTES`` (whole ring
    rows: a multiple of 128 bytes), or for compressed weights (expanded in the CBUF, the
    decompressor run once per copy) ``BYTE_PER_KERNEL x K`` rounded up to whole ring rows
    (a copy's last row partly unwritten). ``wt_copy`` tells the Csc: ``bytes`` (``S`` when
    copying, else 0) and ``rows`` (a copy's advance in ring rows, ``S / BW`` modulo the ring,
    valid with ``ok``, a few dozen cycles after the layer starts). The Csc starts batch ``b +
    1`` at copy ``b + 1``'s first byte and releases copy ``b`` whole when batch ``b`` ends.

Sequence (Csc; one int8 layer of one batch; batches repeat it, batch-major)
    For kernel group ``g``; for stripe (a run of at most :func:`max_stripe` consecutive output
    positions in raster order); for channel group ``j``; for kernel position ``(r, s)`` (a
    *block*): one weight load (``wt``: the set's ``AK`` kernel rows, row 0 first, one per
    cycle on consecutive cycles, as NVDLA's CSC sends a kernel's weights per cycle), then one
    data atom per output position of the stripe (``dat``), the first with ``swap`` (CMAC
    moves the loaded weights to its active set). The CMAC's ``wt.ready`` is a level: high
    while its shadow set is not full, so it stays high through a load the Csc starts while it
    is high (the Csc starts one only then and never pauses inside it).
    ``first`` marks the atoms of the stripe's first block (CACC starts the sums), ``last``
    those of its final block (CACC completes them), ``pos`` the position in the stripe,
    ``end`` the layer's final atom.

int16 layers (builds with int16: :func:`conv_int16`)
    ``PROC_PRECISION = INT16`` (per layer; the check takes IN_PRECISION = PROC_PRECISION;
    the input convertor converts int16 to int16, :mod:`hw.conv.convertor`). Elements are 2
    bytes little endian, so everything in the CBUF is the int8 layout of a cube with ``2 x C``
    byte channels: a line takes the memory atoms of ``2 x C`` bytes, an entry holds ``AC /
    2`` channels. The weight surface follows the golden
    model (:func:`sim.formats.weight.dc_weight_offsets` with ``group_k = AK / 2``, ``cube_c
    = AC``): kernel groups of ``AK / 2`` kernels, channel groups of ``AC`` int16 channels
    (``2 x AC`` bytes, two entries of a position). The Csc sequence is the int8 one over
    such groups with one more, innermost loop: each position of a block sends two ``dat``
    atoms (``half`` 0 and 1: the channel group's first and second ``AC / 2`` channels, one
    entry each; only half 0 when the group has at most ``AC / 2`` channels). ``swap`` and
    ``first`` are on half 0, ``last`` and ``end`` on the position's final half. A weight load
    carries ``AK / 2`` kernels x ``AC`` int16 channels in the same bits: kernel ``kk``'s
    channels ``h*AC/2 .. h*AC/2 + AC/2 - 1`` are row ``2*kk + h`` of ``data``, channel
    ``h*AC/2 + c`` at bytes ``2c, 2c + 1``. Cmac's sums ``0 .. AK/2 - 1`` are the kernels'
    (exact: ``AC / 2`` int16 products, :func:`psum_bits`), Cacc keeps them in
    :data:`ACC_BITS` (NVDLA's 48-bit int16 accumulators) and delivers ``AK / 2`` channels per
    position: an int16 kernel group is one int16 SDP surface (``memory_atom / 2`` channels).
    Two-column entries: the int16 channel group ``j`` (``2 x AC`` bytes) is the int8 layout's
    channel groups ``2j`` and ``2j + 1``, i.e. register entry ``j*W + x`` of the slice; half
    ``h`` is its row ``2*(j*W + x) + h`` (a shared cripple entry as for int8: its group has
    at most ``AC / 2`` channels, one half, the even row).

CACC -> SDP
    Completed stripes leave in order; each position's AK sums, truncated and saturated to
    int32, go out T lanes at a time (channels ``i*T .. i*T+T-1`` of the group). Kernel group
    ``g`` is output surface ``g`` (the config keeps ``atomic_k == memory_atom``), so the
    stream is in SDP's input order: surface, line, position, channel; ``last`` on the layer's
    final transfer.
"""

from __future__ import annotations

from amaranth.hdl import Signal, signed
from amaranth.lib import data

from arch.config import rtl_winograd, rtl_winograd_fp16

__all__ = ["conv_int16", "conv_fp16", "conv_winograd", "conv_winograd_fp16", "fp16_cell_pairs", "fp16_two_pass", "conv_wide", "max_stripe",
           "psum_bits", "ACC_BITS", "cbuf_write_layout", "cbuf_read_signature",
           "dat_layout", "wt_layout", "wt_set_layout", "psum_layout", "conv_out_layout", "sdp_cube_layout",
           "wt_count_bits", "wt_copy_layout"]

#: CACC assembly width: the golden model keeps 48 bits (every int8 sum is exact in it).
ACC_BITS = 48


def ready_gated_pipeline(m, i, o, latency: int):
    """The valid chain of a fixed-latency pipeline between streams ``i`` and ``o``: every
    stage register advances together when the last stage is empty or ``o.ready`` is high (the
    returned ``adv`` signal, which also drives ``i.ready``), so one payload a cycle flows in
    steady state and ``o.valid`` comes ``latency`` transfers after ``i.valid``. Stage registers
    load under ``m.If(adv)``."""
    adv = Signal()
    valid = Signal(latency)
    m.d.comb += [adv.eq(~valid[-1] | o.ready), i.ready.eq(adv), o.valid.eq(valid[-1])]
    with m.If(adv):
        m.d.sync += valid.eq((valid << 1) | i.valid)
    return adv


def conv_int16(cfg) -> bool:
    """The convolution RTL computes int16 layers on this build: ``data_types`` has int16
    (CBUF entries of bank rows or NVDLA v1's two-column entries, nv_full). Otherwise it is the
    int8 pipeline, generated exactly as before."""
    return "int16" in cfg.data_types


def conv_fp16(cfg) -> bool:
    """The convolution RTL computes fp16 layers on this build: ``data_types`` has fp16. An fp16
    layer moves through CDMA, CBUF and CSC exactly as an int16 one (2-byte elements, ``AC / 2``
    per Csc atom, kernel groups of ``AK / 2``); Cmac's fp16 cells give 44-bit partial-sum codes
    (:func:`sim.conv.cmac.fp16_mac_cell`) and Cacc folds them in its 48-bit float assembly
    (:func:`sim.conv.cacc.fp48_add`) and delivers fp32 codes. A cell multiplies one CBUF entry
    of fp16 codes (:func:`fp16_cell_pairs`)."""
    return "fp16" in cfg.data_types


def fp16_cell_pairs(cfg) -> int:
    """The pairs of one fp16 MAC cell: a CBUF entry of 16-bit elements, as the golden model's
    fp16 atom (:func:`sim.conv.unit.run_conv_fp16_cacc`): ``AC / 2`` on bank-row entries (a
    Csc atom; a channel group's two entries are two cell operations), ``AC`` on two-column
    entries (nv_full's 64: the entry's two rows, two Csc atoms, are one cell operation)."""
    return cfg.cbuf_entry_bytes // 2


def fp16_two_pass(cfg) -> bool:
    """An fp16 cell's entry is two Csc atoms (two-column entries with fp16): Cmac runs it as two
    operations of one ``AC / 2``-pair cell (:class:`~hw.conv.fp16_cell.Fp16Cell` ``two_pass``)
    and Csc tags each group's last atom (``hend``)."""
    return conv_fp16(cfg) and fp16_cell_pairs(cfg) > cfg.atomic_c // 2


def conv_winograd(cfg) -> bool:
    """The convolution RTL runs Winograd layers (int8, and int16 where :func:`conv_int16`
    holds) on this build: :func:`arch.config.rtl_winograd` (``winograd``, Atomic-C 64, 32-byte
    memory atoms; bank-row or two-column entries). fp16 Winograd only where
    :func:`conv_winograd_fp16` holds; elsewhere the check rejects it (a limit of this core:
    :func:`sim.conv.core_limits.check_core_limits`)."""
    return rtl_winograd(cfg)


def conv_winograd_fp16(cfg) -> bool:
    """The convolution RTL runs fp16 Winograd layers too: :func:`arch.config.rtl_winograd_fp16`
    (an fp16 entry is one small cube, so :func:`fp16_two_pass` holds and the two-pass cell
    aligns the cube's 64 products once, as NVDLA's cell in Winograd mode). Csc atoms then carry
    ``zero`` besides ``neg``: the data stay whole (they take part in the alignment and the NaN
    search) and the cell drops or negates the aligned parts (:mod:`hw.conv.wino_dat`)."""
    return rtl_winograd_fp16(cfg)


def conv_wide(cfg) -> bool:
    """The convolution RTL has the 2-byte element path (int16 or fp16 layers)."""
    return conv_int16(cfg) or conv_fp16(cfg)


def max_stripe(cfg) -> int:
    """Output positions per stripe at most (CACC assembly depth): 2 x Atomic-K, at least 16,
    so that a block's weight load (AK entries) hides behind its data atoms."""
    return max(16, 2 * cfg.atomic_k)


def stripe_len(rem, ms: int):
    """The length of the next stripe (an expression) when ``rem`` output positions of the
    kernel group are left: ``rem`` up to ``ms``, half of it below ``1.5 ms``, else ``ms``
    (:func:`hw.conv.csc.stripe_length` is the same rule for testbenches)."""
    from amaranth.hdl import Mux
    return Mux(rem <= ms, rem, Mux(rem < ms + ms // 2, rem >> 1, ms))


def psum_bits(cfg) -> int:
    """Width of one CMAC partial sum: Atomic-C int8 x int8 products, exact; with int16
    (:func:`conv_int16`) at least the exact sum of Atomic-C / 2 int16 x int16 products (each
    in ``[-2**30 + 2**15, 2**30]``)."""
    bits = 16 + (cfg.atomic_c - 1).bit_length() + 1
    if conv_int16(cfg):
        bits = max(bits, 32 + (max(cfg.atomic_c // 2, 1) - 1).bit_length())
    if conv_fp16(cfg):
        bits = max(bits, 44)                  # an fp16 cell's partial-sum code
    return bits


def wt_count_bits(cfg) -> int:
    """Width of the weight stream counters ``wt_bytes`` / ``wt_released``: a 32-bit
    ``WEIGHT_BYTES``, or with batching up to ``max_batch`` copies of it."""
    return 32 + (max(cfg.max_batch, 1) - 1).bit_length() + 1 if cfg.batching else 32


def wt_copy_layout(cfg) -> data.StructLayout:
    """Cdma -> Csc on builds with batching: the weight copies (module docstring)."""
    return data.StructLayout({"bytes": 35, "rows": range(cfg.cbuf_banks * cfg.cbuf_bank_depth
                                                         + 1), "ok": 1})


def cbuf_write_layout(cfg) -> data.StructLayout:
    """One CBUF write (Cdma -> Cbuf; always accepted): ``mask`` enables bytes."""
    return data.StructLayout({"en": 1, "addr": range(cfg.cbuf_banks * cfg.cbuf_bank_depth),
                              "data": cfg.cbuf_bank_width * 8, "mask": cfg.cbuf_bank_width})


def cbuf_read_signature(cfg):
    """A CBUF read port as its user sees it: ``en`` + ``addr`` in, ``data`` the entry one
    cycle later (synchronous read, no back-pressure)."""
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    return wiring.Signature({"en": Out(1), "addr": Out(range(cfg.cbuf_banks *
                                                              cfg.cbuf_bank_depth)),
                             "data": In(cfg.cbuf_bank_width * 8)})


def dat_layout(cfg) -> data.StructLayout:
    """Csc -> Cmac data atom (see the module docstring); ``half`` (int16 / fp16 builds only):
    which half of a 2-byte channel group the atom's ``AC / 2`` elements are; ``hend`` (fp16 on
    two-column entries only): the atom is its group's last (half 1, or a short group's lone
    half 0); ``neg`` (builds where :func:`conv_winograd` holds): bit ``c``, lane ``c`` (int16:
    element ``c``) is multiplied negated (a Winograd atom's POA sign, :mod:`hw.conv.wino_dat`;
    0 in direct atoms); ``zero`` (builds where :func:`conv_winograd_fp16` holds): bit ``c``,
    element ``c``'s aligned product is left out of an fp16 Winograd atom's sum (its POA
    coefficient is 0; the data stay whole, 0 in direct atoms)."""
    fields = {"data": data.ArrayLayout(signed(8), cfg.atomic_c),
              "swap": 1, "first": 1, "last": 1, "pos": range(max_stripe(cfg)), "end": 1}
    if conv_wide(cfg):
        fields["half"] = 1
    if fp16_two_pass(cfg):
        fields["hend"] = 1          # the channel group's last atom (half 0 of a short group)
    if conv_winograd(cfg):
        # Winograd atoms (hw.conv.wino_dat): lane c (int16: element c) enters negated
        fields["neg"] = cfg.atomic_c
    if conv_winograd_fp16(cfg):
        # fp16 Winograd atoms: element c's aligned part is dropped (its POA coefficient 0)
        fields["zero"] = cfg.atomic_c // 2
    return data.StructLayout(fields)


def wt_layout(cfg) -> data.StructLayout:
    """Csc -> Cmac, one transfer of a weight load: one kernel row, ``data[c]`` for AC channels
    (0 where the group or the channel group is short); on builds where :func:`conv_fp16`
    holds also ``kmask`` (the row belongs to a kernel of the layer; an fp16 cell of a kernel
    past the layer's gives +0, not the NaN of its data). ``AK`` rows make a set
    (:func:`wt_set_layout`), row ``k`` the ``k``-th transfer."""
    fields = {"data": data.ArrayLayout(signed(8), cfg.atomic_c)}
    if conv_fp16(cfg):
        fields["kmask"] = 1
    return data.StructLayout(fields)


def wt_set_layout(cfg) -> data.StructLayout:
    """A whole weight set (the CMAC's shadow and active sets): ``data[k][c]`` for AK kernels x
    AC channels; on builds where :func:`conv_fp16` holds ``kmask`` (bit ``k``: row ``k``'s)."""
    fields = {"data": data.ArrayLayout(data.ArrayLayout(signed(8), cfg.atomic_c),
                                       cfg.atomic_k)}
    if conv_fp16(cfg):
        fields["kmask"] = cfg.atomic_k
    return data.StructLayout(fields)


def psum_layout(cfg) -> data.StructLayout:
    """Cmac -> Cacc: AK partial sums of one data atom, with its tags."""
    return data.StructLayout({
        "sums": data.ArrayLayout(signed(psum_bits(cfg)), cfg.atomic_k),
        "first": 1, "last": 1, "pos": range(max_stripe(cfg)), "end": 1})


def conv_out_layout(cfg) -> data.StructLayout:
    """Cacc -> SDP flying input: T int32 channels, ``last`` on the layer's final transfer."""
    return data.StructLayout({"data": data.ArrayLayout(signed(32), cfg.sdp_bs_throughput),
                              "last": 1})


def sdp_cube_layout(cfg=None) -> data.StructLayout:
    """What the convolution's check needs of SDP's consumer group (the flying layer waiting
    for it): its processing precision (int16: half the channels per atom; ``fp16`` on builds
    with fp16) and its cube size
    fields (``D_DATA_CUBE_WIDTH`` / ``HEIGHT`` / ``CHANNEL``, each the size minus one). On
    builds with batching (``cfg.batching``) also its ``BATCH_NUMBER`` and the low
    ``log2(atom) + 1`` bits of its destination base, line and surface stride in bytes (the
    batched delivery rule, :func:`sim.conv.program.check_batch_delivery`); on builds where
    :func:`conv_winograd` holds its ``WINOGRAD`` bit (it must say what the convolution is:
    :func:`sim.conv.unit.check_sdp_winograd`)."""
    fields = {"int16": 1, "width": 13, "height": 13, "channel": 13}
    if cfg is not None and "fp16" in cfg.data_types:
        fields["fp16"] = 1                    # SDP processes fp16 (builds with fp16)
    if cfg is not None and cfg.batching:
        lo = cfg.memory_atom.bit_length()
        fields.update({"batches": 5, "base_lo": lo, "line_lo": lo, "surf_lo": lo})
    if cfg is not None and conv_winograd(cfg):
        fields["winograd"] = 1                # SDP's D_FEATURE_MODE_CFG.WINOGRAD
    return data.StructLayout(fields)
