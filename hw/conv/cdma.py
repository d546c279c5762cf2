"""The convolution DMA (CDMA) for direct convolution with feature or image input, int8 (and
int16 / fp16 feature input on builds with them), batches on builds with batching (spec "Convolution
DMA"; golden model
:mod:`sim.conv.cdma`; CBUF layout :mod:`hw.conv.common`).

It fetches the layer's input cube and weight surface from memory into the CBUF and tells the
CSC how far both have arrived.

Feature data (:func:`sim.conv.cdma.feature_addresses`)
    Input line ``y`` is CBUF slice ``y``. Lines are fetched in order, one cube command per line
    (one DMA request per (line, surface) run of ``W`` atoms, surfaces in order), so a slice is
    complete after its last surface and the CSC can start on the first lines while the rest
    arrive. The line address follows the model exactly, fetch-grain quirk included: line ``y``
    of grain ``y0 = y // grain * grain`` starts at ``base + y0*LINE_STRIDE + (y-y0)*W*atom``
    (with packed lines); a 1 x 1 cube with packed lines and surfaces is one run of all its
    atoms from ``base``. Memory atom ``a`` of position ``x`` goes to the entry / lanes of the
    contract (channel group ``a // P``, the shared "cripple" group for the last ``S % P``
    atoms), one masked CBUF write per atom (two-column entries: the register entry's row pair,
    :mod:`hw.conv.common`). An int16 or fp16 layer (builds where
    :func:`~hw.conv.common.conv_wide` holds) is fetched as the int8 cube of ``2 x C`` byte
    channels (S = the memory atoms of ``2 x C`` bytes; fp16 never converts: the check rejects
    ``CVT_EN`` on fp16 layers; fetched fp16 NaN and infinity elements of data and weights are
    counted into the ``D_NAN_INPUT_*`` / ``D_INF_INPUT_*`` fields, and with
    ``D_NAN_FLUSH_TO_ZERO`` the data NaNs become +0). With ``D_CVT_CFG.CVT_EN`` every element of
    the atom (channels past ``C`` included, as the golden model does; the CSC reads them as 0)
    passes the input convertor (:class:`hw.conv.convertor.AtomConvertor`, two pipeline stages,
    one atom per cycle; an int16 layer's byte pairs are int16 elements converted to int16);
    the CSC's pad values are not converted.

    Batches (builds with ``batching``, ``B = D_BATCH_NUMBER.BATCHES + 1``): line ``y`` of
    batch ``b`` is slice ``y*B + b`` (NVDLA's layout, :mod:`hw.conv.common`); the lines are
    fetched in slice order, one command per (line, batch) from ``base + b*BATCH_STRIDE`` (the
    1 x 1 packed run once per batch), so the slices stay consecutive in the data ring. Every
    slice count (the slices the CSC uses, ``RLS_SLICES``, the kept slices) counts ``in_h x
    B``; data reuse also needs the kept slices' batch count.

Image input (``DATAIN_FORMAT=PIXEL``; :mod:`hw.conv.cdma_img`)
    The data reader and the data side of the CBUF write port belong to the image path: one
    request per line and plane, line ``y`` written as slice ``y`` (the padded pixel line,
    ``C`` bytes per pixel, :func:`sim.conv.image.fetch_image`). An image layer reuses only an
    image's kept lines (the same pixel format, padding and precision: the check), the way a
    feature layer reuses a feature layer's slices; a feature layer never reuses an image's.

Winograd (``D_MISC_CFG.CONV_MODE=WINOGRAD``, builds with ``winograd``; golden
:func:`sim.conv.winograd.fetch_winograd`)
    The CDMA writes the padded, channel-extended cube: the input lines are fetched as in
    direct convolution (one cube command per line, fetch grains and the packed 1 x 1 run
    included), and pad atoms (every element ``D_ZERO_PADDING_VALUE``: its low byte for int8,
    all 16 bits for int16) are inserted into the atom stream before the input convertor, so
    the stream is the padded input (``PAD_LEFT + W + PAD_RIGHT`` positions by ``PAD_TOP + H +
    PAD_BOTTOM`` lines), line by line, surface by surface, position by position, and the
    convertor converts the pad elements too. Padded line ``yp`` of stride ``(sx, sy)`` is part
    of extended slice ``yp // sy``; its position ``xp`` is extended position ``xp // sx`` and
    its atom ``s`` extended atom ``((yp % sy) x sx + xp % sx) x S + s`` of the ``S x sx x sy``
    atoms of an extended position (:func:`sim.conv.winograd_math.extend_channels`). Extended
    atom ``a`` of position ``x`` is placed as a direct layer's atom of a line of
    ``DATAIN_WIDTH_EXT + 1`` positions, except the cripple atoms (``r = S_ext % PE`` of them
    per position), which are packed densely rather than shared: the slice's cripple atom
    ``c = x x r + a % PE`` is atom lane ``c % PE`` of entry ``whole x W_ext + c // PE`` (the
    same place as the shared layout when ``r`` is ``PE / 2`` or ``PE / 4``; W_ext is a
    multiple of 4, so a slice is ``ENTRY_PER_SLICE + 1`` = ``W_ext x S_ext / PE`` entries).
    A slice is complete after its ``sy`` padded lines; ``dat_slices`` counts extended slices
    (``DATAIN_HEIGHT_EXT + 1`` of them). Reuse keys also hold the mode and, for a Winograd
    layer, the extended width. fp16: the pad atoms are counted by the NaN / Inf counters and
    flushed by ``D_NAN_FLUSH_TO_ZERO`` like the fetched ones (the golden model counts and
    flushes the padded cube).

Weights (:func:`sim.conv.cdma.fetch_weights`)
    ``WEIGHT_BYTES`` bytes from ``WEIGHT_ADDR`` as one byte stream: byte ``i`` at weight ring
    entry ``wt_base + i // BW``, lane ``i % BW`` (bytes past ``WEIGHT_BYTES`` in the last atom
    are not written). Requests of at most ``_WT_CHUNK`` bytes are issued only when the ring has
    room for them: a byte ``i`` is requested only when ``i < wt_released + weight ring bytes``,
    so weights larger than the weight banks stream through the ring as the CSC releases them.
    A batched layer (builds with batching) whose weights exceed the ring (``WEIGHT_BYTES``;
    compressed ones expanded) is fetched once per batch: ``B`` copies one after the other in
    the byte stream (``wt_bytes`` / ``wt_released`` count stream bytes), each read from
    ``WEIGHT_ADDR`` again (compressed: the decompressor run again, with the WMB, once the
    previous run is idle; the copy starts on the next ring row); ``wt_copy`` tells the CSC
    the copy stride in bytes and in ring rows (:mod:`hw.conv.common`, "Weight copies"). fp16
    weights are counted (NaN / Inf) in the first copy only, as the golden model counts them
    once.

Compressed weights (``D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED``; builds with
``weight_compression`` only, :mod:`hw.conv.wdecomp`)
    The weight client reads the WMB and the ``WEIGHT_BYTES`` packed non-zero bytes instead, and
    the decompressor expands them into the uncompressed byte stream (``BYTE_PER_KERNEL`` x
    kernels bytes, rounded up to whole atoms), placed exactly as an uncompressed surface: the
    CSC and CMAC see the same CBUF. The ring limit applies to the expanded bytes (an atom is
    written only when ``written + atom <= wt_released + ring bytes``). Kept compressed
    weights are reused by their expanded byte count. WGS is not read (the mask places every
    byte); surfaces that disagree with each other finish with the weights the mask and the
    compressed bytes give (missing bytes 0).

Reuse (mirrors :func:`sim.conv.cdma.load_cbuf`)
    At ``end`` the CDMA keeps, for the next layer, the slices not released
    (``SKIP_DATA_RLS``: all ``DATAIN_HEIGHT_EXT + 1`` the CSC used; otherwise those after the
    first ``RLS_SLICES + 1``) and whether the weights stay (``SKIP_WEIGHT_RLS``). A layer with
    ``DATA_REUSE`` whose bank split, input format (feature / image), width and entries per
    slice equal the previous layer's:
    full reuse (previous layer skipped its release) fetches no data and reports all kept slices
    at once; partial reuse puts ``dat_base`` on the first kept slice, counts the kept slices as
    written and fetches the new lines right after them. ``WEIGHT_REUSE`` with kept weights, the
    same bank split and the same ``WEIGHT_BYTES`` (and, builds with ``winograd``, the same
    mode) fetches no weights. Anything else starts fresh
    at ring position 0.

Ports
    ``regs``        in, the CDMA D-group rw fields (consumer group), stable from ``start`` to
                    ``end``; latched the cycle after ``start`` (the layer's copy serves until
                    its fetch is complete, also after ``end``).
    ``csc``         in, ``rls_slices`` = CSC ``D_RELEASE.RLS_SLICES``, ``height_ext`` = CSC
                    ``D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT`` (the slices the CSC uses);
                    latched with ``regs``.
    ``start``       in, pulse: the layer's groups are enabled (may come while the previous
                    layer's ``end`` bookkeeping runs; it is held until then).
    ``end``         in, pulse at the layer's end (after the CSC finished): update the reuse
                    state. Layers do not overlap: ``start`` of the next layer after ``end``.
                    The CSC may finish before the fetch does (lines no output reads, the
                    weight surface past the kernels): the Cdma then completes the fetch after
                    ``end`` from its latched registers, with no weight-ring limit (the CSC
                    released everything), so that kept slices are whole and nothing of the
                    layer is left in the readers; ``dat_slices`` and ``wt_bytes`` read 0 from
                    ``end`` until the next layer's counts (the next CSC may start meanwhile).
    ``rd_dat`` / ``rd_wt``  out, DMA read clients (feature data / weights).
    ``cbuf_wr``     out, :func:`hw.conv.common.cbuf_write_layout`, registered.
    ``dat_base``    out, data ring position (flat entry, the data region starts at 0) of slice 0
                    of this layer.
    ``dat_slices``  out, slices completely in the CBUF (kept ones included); raised the cycle
                    after the slice's last write is presented (the CBUF reads before it writes).
    ``wt_base``     out, weight ring position (relative to the weight region, i.e. flat entry
                    ``data_banks*DEPTH + wt_base``) of weight byte 0; always 0 here.
    ``wt_bytes``    out, weight bytes in the CBUF so far in this layer (all at once on reuse).
    ``wt_released`` in, weight bytes the CSC has finished with (monotonic, 0 at the layer's
                    start). Both count the weight stream (all copies) on builds with batching.
    ``wt_copy``     out (builds with batching), the weight copies of a batched layer
                    (:func:`~hw.conv.common.wt_copy_layout`).
    ``dat_done`` / ``wt_done``  out, one-cycle pulses when that fetch is complete (CDMA_DAT /
                    CDMA_WT done), together with the final ``dat_slices`` / ``wt_bytes``.
    ``status``      out, the CDMA ro fields: ``DAT_RD_STALL`` / ``WT_RD_STALL`` count the cycles
                    a read request waited for the memory interface while ``D_PERF_ENABLE.DMA_EN``
                    (cleared at ``start``, valid from the done pulses on); NaN / Inf counters and
                    the latency counters stay 0.
    ``busy``        out, a layer is between ``start`` and the end of its ``end`` bookkeeping
                    (fetch complete).

Throughput: one CBUF write per cycle, shared by data and weights (alternating when both have
an atom), so each stream moves one memory atom per cycle. Assumes a valid program
(:func:`sim.conv.program.decode` accepts it): in particular the kept plus fetched slices fit in
the data region and, with ``SKIP_WEIGHT_RLS``, the weights fit in the weight region.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, flipped

from arch.registers import register_map

from ..arith import seq_remainder
from ..mem import dma_fields
from ..mem.cube import AtomSerializer, CubeReader
from ..mem.dma import DmaGeometry, DmaReadPort, cube_layout
from ..regfile import fields_layout
from ..skid import SkidBuffer
from .cdma_img import ImageFetch
from .common import (cbuf_write_layout, conv_fp16, conv_int16, conv_wide, wt_copy_layout,
                     wt_count_bits)
from .convertor import AtomConvertor, Convertor
from .wdecomp import WeightDecompressor

__all__ = ["Cdma", "csc_fields_layout"]

_WT_CHUNK = 256          #: weight request size in bytes at most (flow control granule)


def csc_fields_layout() -> data.StructLayout:
    """The CSC register fields the CDMA needs (raw register values)."""
    return data.StructLayout({"rls_slices": 12, "height_ext": 13})


class Cdma(wiring.Component):
    """``Cdma(cfg)``: the direct-convolution CDMA (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._block = blk = register_map(cfg)["CDMA"]
        pos = range(cfg.cbuf_banks * cfg.cbuf_bank_depth)
        super().__init__({
            "regs": In(fields_layout(blk.d_registers, ("rw",))),
            "csc": In(csc_fields_layout()),
            "start": In(1),
            "end": In(1),
            "rd_dat": Out(DmaReadPort(geom)),
            "rd_wt": Out(DmaReadPort(geom)),
            "cbuf_wr": Out(cbuf_write_layout(cfg)),
            "dat_base": Out(pos),
            "dat_slices": Out(15),
            "wt_base": Out(pos),
            "wt_bytes": Out(wt_count_bits(cfg)),
            "wt_released": In(wt_count_bits(cfg)),
            "dat_done": Out(1),
            "wt_done": Out(1),
            "status": Out(fields_layout(blk.d_registers, ("ro",))),
            "busy": Out(1),
            # fp16 builds: the fetch is complete (its NaN / Inf counters are final)
            **({"drained": Out(1)} if conv_fp16(cfg) else {}),
            # builds with batching: the weight copies of a batched layer (see "Weights")
            **({"wt_copy": Out(wt_copy_layout(cfg))} if cfg.batching else {}),
            # builds with batching and compression: BYTE_PER_KERNEL x kernels (ConvCheck's)
            **({"wt_expanded": In(34)} if cfg.batching and cfg.weight_compression else {}),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, g, blk = self._cfg, self._geom, self._block
        # The layer's registers, latched when it starts (state LOAD): the fetch may still be
        # completing after ``end`` (state END), when the register files already present the
        # next layer's group.
        R = Signal.like(self.regs)
        csc = Signal.like(self.csc)
        load = Signal()
        with m.If(load):
            m.d.sync += [R.eq(self.regs), csc.eq(self.csc)]
        aw, ash = g.addr_width, g.atom_shift
        ATOM, BW, DEPTH = cfg.memory_atom, cfg.cbuf_bank_width, cfg.cbuf_bank_depth
        P = BW // ATOM                                   # atoms per bank row
        pb = (P - 1).bit_length()
        db = (DEPTH - 1).bit_length()
        # two-column entries (cbuf_entry_width = 2 x BW): the data layout counts register
        # entries of PE atoms, entry e = bank rows 2e and 2e + 1 (hw.conv.common)
        twocol = cfg.cbuf_entry_bytes != BW
        PE = cfg.cbuf_entry_bytes // ATOM                # atoms per register entry
        pbe = (PE - 1).bit_length()
        edb = (cfg.cbuf_entry_depth - 1).bit_length()
        PW = (cfg.cbuf_banks * DEPTH).bit_length() + 1   # ring arithmetic width

        def byte_value(reg, fld):
            return dma_fields.byte_value(R, blk, reg, fld)

        def address(low_reg, low_fld, high_reg, high_fld):
            return dma_fields.split_address(R, blk, low_reg, low_fld, high_reg, high_fld, aw)

        # -- program ---------------------------------------------------------------------
        misc = R.D_MISC_CFG
        width = Signal(14)                               # W
        height = Signal(14)                              # H (CDMA fetch)
        surfs = Signal(14)                               # S = memory atoms per position
        m.d.comb += [width.eq(R.D_DATAIN_SIZE_0.DATAIN_WIDTH + 1),
                     height.eq(R.D_DATAIN_SIZE_0.DATAIN_HEIGHT + 1),
                     surfs.eq((R.D_DATAIN_SIZE_1.DATAIN_CHANNEL >> ash) + 1)]
        if conv_wide(cfg):
            # int16 / fp16 layers: 2-byte elements, the line is the int8 layout of 2 x C bytes
            with m.If(misc.PROC_PRECISION != 0):
                m.d.comb += surfs.eq((Cat(Const(1, 1), R.D_DATAIN_SIZE_1.DATAIN_CHANNEL)
                                      >> ash) + 1)
        base = Signal(aw)
        wbase = Signal(aw)
        m.d.comb += [base.eq(address("D_DAIN_ADDR_LOW_0", "DATAIN_ADDR_LOW_0",
                                     "D_DAIN_ADDR_HIGH_0", "DATAIN_ADDR_HIGH_0")),
                     wbase.eq(address("D_WEIGHT_ADDR_LOW", "WEIGHT_ADDR_LOW",
                                      "D_WEIGHT_ADDR_HIGH", "WEIGHT_ADDR_HIGH"))]
        ls = byte_value("D_LINE_STRIDE", "LINE_STRIDE")
        ss = byte_value("D_SURF_STRIDE", "SURF_STRIDE")
        wbytes = Signal(33)
        m.d.comb += wbytes.eq(byte_value("D_WEIGHT_BYTES", "WEIGHT_BYTES"))
        line_packed = R.D_DAIN_MAP.LINE_PACKED
        packed_1x1 = Signal()
        m.d.comb += packed_1x1.eq(line_packed & R.D_DAIN_MAP.SURF_PACKED
                                  & (R.D_DATAIN_SIZE_0.DATAIN_WIDTH == 0)
                                  & (R.D_DATAIN_SIZE_0.DATAIN_HEIGHT == 0))
        eps = Signal(16)                                 # entries per slice
        m.d.comb += eps.eq(R.D_ENTRY_PER_SLICE.ENTRIES + 1)
        # batches (builds with batching): line y of batch b is slice y*B + b; the CDMA
        # fetches line by line, the batches of a line in turn
        bat = cfg.batching
        if bat:
            nb_m1 = R.D_BATCH_NUMBER.BATCHES
            bstride = byte_value("D_BATCH_STRIDE", "BATCH_STRIDE")
            slices = Signal(19)                          # H x B (the fetched slices)
            m.d.comb += slices.eq(height * (nb_m1 + 1))
        else:
            slices = height
        data_banks = Signal(6)
        weight_banks = Signal(6)
        m.d.comb += [data_banks.eq(R.D_BANK.DATA_BANK + 1),
                     weight_banks.eq(R.D_BANK.WEIGHT_BANK + 1)]
        n_dat = Signal(PW)                               # data ring entries
        n_wt = Signal(PW)
        m.d.comb += [n_dat.eq(data_banks << edb), n_wt.eq(weight_banks << db)]
        if twocol:
            wrow0 = Signal(PW)                           # weight region's first bank row
            m.d.comb += wrow0.eq(data_banks << db)
        else:
            wrow0 = n_dat
        wcap = Signal(PW + 8)                            # weight ring bytes
        m.d.comb += wcap.eq(n_wt * BW)

        def wrap(v, n):
            return Mux(v >= n, v - n, v)

        # cripple group of the last S % PE atoms
        rem = Signal(max(pbe, 1))
        if PE > 1:
            m.d.comb += rem.eq(surfs[:pbe])
        whole = Signal(14)                               # atoms in whole groups
        m.d.comb += whole.eq(surfs - rem)
        share2 = Signal()
        share4 = Signal()
        if PE >= 2:
            m.d.comb += share2.eq(rem == PE // 2)
        if PE >= 4:
            m.d.comb += share4.eq(rem == PE // 4)

        # -- movers ----------------------------------------------------------------------
        m.submodules.dat_reader = dat_reader = CubeReader(g)
        m.submodules.wt_reader = wt_reader = CubeReader(g)
        m.submodules.dat_ser = dat_ser = AtomSerializer(g)
        m.submodules.wt_ser = wt_ser = AtomSerializer(g)
        wiring.connect(m, flipped(self.rd_dat), dat_reader.dma)
        wiring.connect(m, flipped(self.rd_wt), wt_reader.dma)
        wiring.connect(m, dat_reader.data, dat_ser.i)
        # the feature atoms pass a skid buffer: the convertor's and the image fetch's
        # readiness no longer reaches back through the serializer into the reader and the
        # MCIF response in one cycle (one of the whole core's deepest paths)
        m.submodules.dat_skid = dat_skid = SkidBuffer(dat_ser.o.payload.shape())
        wiring.connect(m, dat_ser.o, dat_skid.i)
        dat_atoms = dat_skid.o
        wiring.connect(m, wt_reader.data, wt_ser.i)
        comp = cfg.weight_compression                    # compressed weights (hw.conv.wdecomp)
        if comp:
            compressed = Signal()
            m.submodules.wdec = wdec = WeightDecompressor(g, wide=conv_wide(cfg))
            if conv_wide(cfg):                     # int16 / fp16: a mask bit per byte pair
                m.d.comb += wdec.wide.eq(R.D_MISC_CFG.PROC_PRECISION != 0)
            m.d.comb += [
                compressed.eq(R.D_WEIGHT_FORMAT.WEIGHT_FORMAT),
                wdec.wmb_base.eq(address("D_WMB_ADDR_LOW", "WMB_ADDR_LOW", "D_WMB_ADDR_HIGH",
                                         "WMB_ADDR_HIGH")),
                wdec.wt_base.eq(wbase), wdec.wt_bytes.eq(wbytes),
                wdec.bpk.eq(R.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL + 1),
                wdec.kernels.eq(R.D_WEIGHT_SIZE_1.WEIGHT_KERNEL + 1),
                wdec.ram_type.eq(R.D_WEIGHT_RAM_TYPE.WEIGHT_RAM_TYPE),
                wdec.atoms.payload.eq(wt_ser.o.payload),
            ]
        # image input (hw.conv.cdma_img): the data reader and the data writes are its
        m.submodules.img = imgf = ImageFetch(cfg)
        is_img = R.D_DATAIN_FORMAT.DATAIN_FORMAT
        m.d.comb += imgf.regs.eq(R)
        # feature input: the input convertor on every atom (hw.conv.convertor)
        m.submodules.dat_cvt = dcv = AtomConvertor(g, shared=True)
        m.d.comb += dcv.offset.eq(R.D_CVT_OFFSET.CVT_OFFSET.as_signed())
        # one Convertor for both paths: a layer is either feature or image input, and both
        # paths are empty (busy_any) when the register group, and so is_img, changes
        lanes = max(g.atom_bits // 8, cfg.cbuf_bank_width)
        m.submodules.cvt = cvt = Convertor(lanes, int16=conv_int16(cfg), fp16=conv_fp16(cfg))
        m.d.comb += [cvt.cvt_en.eq(R.D_CVT_CFG.CVT_EN),
                     cvt.scale.eq(R.D_CVT_SCALE.CVT_SCALE.as_signed()),
                     cvt.trunc.eq(R.D_CVT_CFG.CVT_TRUNCATE)]
        if conv_wide(cfg):
            # int16 feature input: byte pairs; image input of int16 / fp16 processing: the
            # image path's whole elements in lane pairs (fp16: their fp16 codes)
            proc = R.D_MISC_CFG.PROC_PRECISION
            m.d.comb += [cvt.wide.eq(Mux(is_img, proc != 0, proc == 1)), cvt.full.eq(is_img)]
            if conv_fp16(cfg):
                m.d.comb += cvt.fp16.eq(is_img & (proc == 2))
        for client in (imgf.cvt, dcv.cvt):
            n = len(client.q)
            m.d.comb += client.q.eq(cvt.q.as_value()[:n * 8])
        with m.If(is_img):
            m.d.comb += [cvt.en.eq(imgf.cvt.en)]
            m.d.comb += [cvt.d[i].eq(imgf.cvt.d[i]) for i in range(len(imgf.cvt.d))]
            m.d.comb += [cvt.o[i].eq(imgf.cvt.o[i]) for i in range(len(imgf.cvt.o))]
        with m.Else():
            m.d.comb += [cvt.en.eq(dcv.cvt.en)]
            m.d.comb += [cvt.d[i].eq(dcv.cvt.d[i]) for i in range(len(dcv.cvt.d))]
            m.d.comb += [cvt.o[i].eq(dcv.cvt.o[i]) for i in range(len(dcv.cvt.o))]

        # -- persistent reuse state --------------------------------------------------------
        kept_count = Signal(15)
        kept_base = Signal(PW)
        kept_end = Signal(PW)
        kept_all = Signal()
        key_dbank = Signal(5)
        key_wbank = Signal(5)
        key_width = Signal(13)
        key_eps = Signal(16)
        key_img = Signal()                               # the kept slices are an image's
        if bat:
            key_bat = Signal(5)
        w_kept = Signal()
        w_kept_bytes = Signal(33)
        if comp:
            w_wr = Signal(34)                            # weight bytes written (compressed)
            w_kept_total = Signal(34)                    # ... by the layer that kept them

        key_match = Signal()
        m.d.comb += key_match.eq((key_dbank == R.D_BANK.DATA_BANK)
                                 & (key_wbank == R.D_BANK.WEIGHT_BANK))
        wg = cfg.winograd
        if wg:
            # Winograd layers (see "Winograd"): kept slices are reused only by a layer of the
            # same mode, and a Winograd layer's slices are keyed by the extended width
            wino = Signal()
            m.d.comb += wino.eq(R.D_MISC_CFG.CONV_MODE & ~R.D_DATAIN_FORMAT.DATAIN_FORMAT)
            key_wino = Signal()
            width_key = Mux(wino, R.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT,
                            R.D_DATAIN_SIZE_0.DATAIN_WIDTH)
        else:
            width_key = R.D_DATAIN_SIZE_0.DATAIN_WIDTH
        d_reuse = Signal()
        full_reuse = Signal()
        w_reuse = Signal()
        m.d.comb += [
            d_reuse.eq(misc.DATA_REUSE & (kept_count != 0) & key_match & (key_img == is_img)
                       & (key_width == R.D_DATAIN_SIZE_0.DATAIN_WIDTH)
                       & (key_eps == eps)),
            full_reuse.eq(d_reuse & kept_all),
            w_reuse.eq(misc.WEIGHT_REUSE & w_kept & key_match & (w_kept_bytes == wbytes)),
        ]
        if bat:
            m.d.comb += d_reuse.eq(misc.DATA_REUSE & (kept_count != 0) & key_match & (key_img == is_img)
                                   & (key_width == R.D_DATAIN_SIZE_0.DATAIN_WIDTH)
                                   & (key_eps == eps) & (key_bat == nb_m1))
        if wg:
            m.d.comb += d_reuse.eq(misc.DATA_REUSE & (kept_count != 0) & key_match
                                   & (key_img == is_img) & (key_wino == wino)
                                   & (key_width == width_key) & (key_eps == eps)
                                   & ((key_bat == nb_m1) if bat else 1))
            # kept weights of the other mode are not reused either (the golden load_cbuf
            # fetches them anew, and ConvCheck accepts such a layer)
            m.d.comb += w_reuse.eq(misc.WEIGHT_REUSE & w_kept & key_match
                                   & (w_kept_bytes == wbytes) & (key_wino == wino))
        base_next = Signal(PW)
        m.d.comb += base_next.eq(Mux(d_reuse, kept_base, 0))

        # -- control -----------------------------------------------------------------------
        pend_start = Signal()
        decide = Signal()
        finish = Signal()                                # end bookkeeping this cycle
        with m.If(self.start):
            m.d.sync += pend_start.eq(1)
        with m.If(decide):
            m.d.sync += pend_start.eq(0)

        # background ring arithmetic: dat_base + k * entries (k = released / used slices)
        acc_rls, acc_need = Signal(PW), Signal(PW)
        left_rls, left_need = Signal(14), Signal(19 if cfg.batching else 14)
        with m.If(left_rls != 0):
            m.d.sync += [acc_rls.eq(wrap(acc_rls + eps, n_dat)), left_rls.eq(left_rls - 1)]
        with m.If(left_need != 0):
            m.d.sync += [acc_need.eq(wrap(acc_need + eps, n_dat)), left_need.eq(left_need - 1)]
        acc_ready = (left_rls == 0) & (left_need == 0)

        need = Signal(14)
        rls = Signal(13)
        if bat:                                          # slices the CSC uses: in_h x B
            need = Signal(19)
            m.d.comb += [need.eq((csc.height_ext + 1) * (nb_m1 + 1)),
                         rls.eq(csc.rls_slices + 1)]
        else:
            m.d.comb += [need.eq(csc.height_ext + 1), rls.eq(csc.rls_slices + 1)]
        running = Signal()                               # RUN: between start and end
        ending = Signal()                                # END: completing the fetch
        fetching = Signal()                              # data or weights still to write

        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                with m.If(self.start | pend_start):
                    m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += load.eq(1)
                m.next = "DECIDE"
            with m.State("DECIDE"):
                m.d.comb += decide.eq(1)
                m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [self.busy.eq(1), running.eq(1)]
                with m.If(self.end):
                    m.next = "END"
            with m.State("END"):
                # the CSC may finish before every fetched line or weight byte arrived (lines
                # no output reads, the weight surface's tail): the fetch completes here, so
                # that the kept slices are whole and nothing of this layer is left in the
                # readers for the next one
                m.d.comb += [self.busy.eq(1), ending.eq(1)]
                with m.If(acc_ready & ~fetching):
                    m.d.comb += finish.eq(1)
                    m.next = "IDLE"

        m.d.comb += imgf.start.eq(decide & is_img & ~full_reuse)
        with m.If(decide):
            m.d.sync += [acc_rls.eq(base_next), acc_need.eq(base_next),
                         left_rls.eq(rls), left_need.eq(need)]

        with m.If(finish):
            m.d.sync += [key_dbank.eq(R.D_BANK.DATA_BANK), key_wbank.eq(R.D_BANK.WEIGHT_BANK),
                         key_width.eq(R.D_DATAIN_SIZE_0.DATAIN_WIDTH),
                         key_eps.eq(eps), key_img.eq(is_img), kept_end.eq(acc_need),
                         w_kept.eq(misc.SKIP_WEIGHT_RLS), w_kept_bytes.eq(wbytes)]
            if bat:
                m.d.sync += key_bat.eq(nb_m1)
            if wg:
                m.d.sync += [key_wino.eq(wino), key_width.eq(width_key)]
            if comp:
                m.d.sync += w_kept_total.eq(w_wr)
            with m.If(misc.SKIP_DATA_RLS):
                m.d.sync += [kept_base.eq(self.dat_base), kept_count.eq(need), kept_all.eq(1)]
            with m.Else():
                m.d.sync += [kept_base.eq(acc_rls), kept_all.eq(0),
                             kept_count.eq(Mux(rls >= need, 0, need - rls))]

        # -- feature data: command side (one cube per line) -------------------------------
        cmd_left = Signal(19 if bat else 14)             # lines still to request
        yls = Signal(aw)                                 # y * LINE_STRIDE
        g0 = Signal(aw)                                  # y0 * LINE_STRIDE
        pk = Signal(aw)                                  # (y - y0) * W * atom
        gleft = Signal(12)                               # lines left in this grain - 1
        fvalid, fready = Signal(), Signal()
        dc = Signal(cube_layout(g))
        dcmd = dat_reader.cmd
        m.d.comb += [
            dcmd.valid.eq(Mux(is_img, imgf.cmd.valid, fvalid)),
            dcmd.payload.eq(Mux(is_img, imgf.cmd.payload, dc)),
            fready.eq(dcmd.ready & ~is_img), imgf.cmd.ready.eq(dcmd.ready & is_img),
            fvalid.eq(cmd_left != 0),
            dc.ram_type.eq(R.D_DAIN_RAM_TYPE.DATAIN_RAM_TYPE),
            dc.lines.eq(0), dc.batches.eq(0), dc.line_stride.eq(0), dc.batch_stride.eq(0),
        ]
        if bat:
            cb = Signal(5)                               # batch of the next command
            boff = Signal(aw)                            # its offset: cb x BATCH_STRIDE
            fbase = base + boff
        else:
            fbase = base
        with m.If(packed_1x1):
            m.d.comb += [dc.base.eq(fbase), dc.line_atoms.eq(surfs - 1), dc.surfaces.eq(0),
                         dc.surface_stride.eq(0)]
        with m.Else():
            m.d.comb += [dc.base.eq(fbase + g0 + pk), dc.line_atoms.eq(width - 1),
                         dc.surfaces.eq(surfs - 1), dc.surface_stride.eq(ss)]

        def next_line():
            m.d.sync += yls.eq(yls + ls)
            with m.If((gleft == 0) | ~line_packed):
                m.d.sync += [g0.eq(yls + ls), pk.eq(0), gleft.eq(R.D_FETCH_GRAIN.GRAINS)]
            with m.Else():
                m.d.sync += [pk.eq(pk + (width << ash)), gleft.eq(gleft - 1)]
        if not bat:
            with m.If(fvalid & fready):
                m.d.sync += [cmd_left.eq(cmd_left - 1), yls.eq(yls + ls)]
                with m.If((gleft == 0) | ~line_packed):
                    m.d.sync += [g0.eq(yls + ls), pk.eq(0),
                                 gleft.eq(R.D_FETCH_GRAIN.GRAINS)]
                with m.Else():
                    m.d.sync += [pk.eq(pk + (width << ash)), gleft.eq(gleft - 1)]
        else:
            with m.If(fvalid & fready):
                m.d.sync += cmd_left.eq(cmd_left - 1)
                with m.If(cb == nb_m1):
                    m.d.sync += [cb.eq(0), boff.eq(0)]
                    next_line()
                with m.Else():
                    m.d.sync += [cb.eq(cb + 1), boff.eq(boff + bstride)]

        # -- weights: command side (chunks when the ring has room) ----------------------------
        chunk = max(1, _WT_CHUNK // ATOM)
        n_atoms = Signal(34)
        m.d.comb += n_atoms.eq((wbytes + ATOM - 1) >> ash)
        w_iss = Signal(34)                               # atoms requested
        w_addr = Signal(aw)
        w_fetch = Signal()
        WB = wt_count_bits(cfg)
        room = Signal(max(WB + 1, 34))                   # wt_released + ring bytes
        m.d.comb += room.eq(self.wt_released + wcap)
        # atoms that may be requested: ``limit_c`` from this cycle's release, ``limit`` the
        # registered copy the commands use (one cycle late, so never above the true room
        # while the release only grows; 0 outside RUN / END and after a copy change, where
        # it could be stale-high)
        limit_c = Signal(34)
        limit = Signal(34)
        m.d.sync += limit.eq(Mux(running | ending, limit_c, 0))
        if bat:
            # the weight copies of a batched layer (one when its weights fit the banks): the
            # current copy starts at byte c_base of the stream, from WEIGHT_ADDR again
            refetch = Signal()
            cstride = Signal(35)                         # a copy's bytes (whole ring rows)
            row_bits = pb + ash                          # log2 of a ring row's bytes
            over, stride = wbytes > wcap, wbytes
            if comp:
                # compressed: a copy is the expanded surface (whole atoms), copies start on
                # whole ring rows; the decompressor runs once per copy
                exp_r = Signal(34)
                with m.If(load):
                    m.d.sync += exp_r.eq(self.wt_expanded)
                exp_atoms = Signal(35)
                m.d.comb += exp_atoms.eq(((exp_r + ATOM - 1) >> ash) << ash)
                over = Mux(compressed, exp_atoms > wcap, over)
                stride = Mux(compressed, ((exp_r + BW - 1) >> row_bits) << row_bits, stride)
            m.d.comb += [refetch.eq((nb_m1 != 0) & over), cstride.eq(stride)]
            c_base = Signal(WB)
            c_left = Signal(6)                           # copies after the current one
            rel = Signal(signed(WB + 2))                 # room from the copy's start
            m.d.comb += rel.eq(room - c_base)
            m.d.comb += limit_c.eq(Mux(ending | (rel >= wbytes), n_atoms,
                                       Mux(rel[-1], 0, rel[ash:])))
        else:
            m.d.comb += limit_c.eq(Mux(ending | (room >= wbytes), n_atoms, room >> ash))
        space = Signal(35)
        m.d.comb += space.eq(limit - w_iss)
        n_req = Signal(range(chunk + 1))
        m.d.comb += n_req.eq(Mux(space >= chunk, chunk, space))
        wcmd = wt_reader.cmd
        wc = wcmd.payload
        u_valid = Signal() if comp else wcmd.valid       # the uncompressed surface's commands
        u_cond = (w_fetch & (running | ending) & (w_iss < n_atoms) & ~space[-1]
                  & (space != 0))
        m.d.comb += [
            u_valid.eq((u_cond & ~compressed) if comp else u_cond),
            wc.base.eq(w_addr), wc.ram_type.eq(R.D_WEIGHT_RAM_TYPE.WEIGHT_RAM_TYPE),
            wc.line_atoms.eq(n_req - 1), wc.lines.eq(0), wc.surfaces.eq(0),
            wc.batches.eq(0), wc.line_stride.eq(0), wc.surface_stride.eq(0),
            wc.batch_stride.eq(0),
        ]
        if comp:
            m.d.comb += wcmd.valid.eq(u_valid)
            with m.If(compressed):
                m.d.comb += [wcmd.valid.eq(wdec.cmd.valid), wcmd.payload.eq(wdec.cmd.payload)]
            m.d.comb += wdec.cmd.ready.eq(wcmd.ready & compressed)
        with m.If(u_valid & wcmd.ready):
            m.d.sync += [w_iss.eq(w_iss + n_req), w_addr.eq(w_addr + (n_req << ash))]
            if bat:
                with m.If((w_iss + n_req == n_atoms) & (c_left != 0)):   # the next copy
                    m.d.sync += [w_iss.eq(0), w_addr.eq(wbase), c_left.eq(c_left - 1),
                                 c_base.eq(c_base + wbytes), limit.eq(0)]

        # -- feature data: atom placement ---------------------------------------------------
        d_active = Signal()
        d_lines = Signal(19 if bat else 14)              # lines left - 1
        x = Signal(14)
        xe = Signal(14)                                  # x // share
        xs = Signal(2)                                   # x % share
        a = Signal(14)                                   # atom (surface) of the position
        sub = Signal(max(pbe, 1))                        # a % PE
        grp = Signal(PW)                                 # entry of x = 0 in this group
        sb = Signal(PW)                                  # slice base
        crip = Signal()
        m.d.comb += crip.eq(a >= whole)
        s2 = crip & share2
        s4 = crip & share4
        lane_d = Signal(max(pbe, 1))                     # atom lane of the (register) entry
        if PE >= 4:
            m.d.comb += lane_d.eq(Mux(s2, (xs << (pbe - 1)) + sub,
                                      Mux(s4, (xs << (pbe - 2)) + sub, sub)))
        elif PE == 2:
            m.d.comb += lane_d.eq(Mux(s2, xs, sub))
        entry_d = Signal(PW)
        m.d.comb += entry_d.eq(wrap(grp + xe, n_dat))
        last_x = x == width - 1
        last_a = a == surfs - 1
        slice_end = Signal()
        m.d.comb += slice_end.eq(last_x & last_a)

        def direct_step():
            with m.If(last_x):
                m.d.sync += [x.eq(0), xe.eq(0), xs.eq(0)]
                with m.If(last_a):
                    nsb = wrap(sb + eps, n_dat)
                    m.d.sync += [a.eq(0), sub.eq(0), sb.eq(nsb), grp.eq(nsb),
                                 d_lines.eq(d_lines - 1)]
                    with m.If(d_lines == 0):
                        m.d.sync += d_active.eq(0)
                with m.Else():
                    m.d.sync += a.eq(a + 1)
                    if PE > 1:
                        m.d.sync += sub.eq(sub + 1)
                        with m.If(sub == PE - 1):
                            m.d.sync += grp.eq(wrap(grp + width, n_dat))
                    else:
                        m.d.sync += grp.eq(wrap(grp + width, n_dat))
            with m.Else():
                m.d.sync += x.eq(x + 1)
                with m.If((s2 & (xs == 0)) | (s4 & (xs != 3))):
                    m.d.sync += xs.eq(xs + 1)
                with m.Else():
                    m.d.sync += [xs.eq(0), xe.eq(xe + 1)]

        if wg:
            # -- Winograd: the padded input, channel-extended (see "Winograd") -------------
            # the padded line yp (phase wa = yp % sy of extended slice yp // sy) streams
            # surface by surface, padded position xp = wx * sx + wb; its atom s is extended
            # atom (wa * sx + wb) * S + s of extended position wx
            sx = Signal(4)
            sy = Signal(4)
            m.d.comb += [sx.eq(R.D_CONV_STRIDE.CONV_X_STRIDE + 1),
                         sy.eq(R.D_CONV_STRIDE.CONV_Y_STRIDE + 1)]
            w_ext = Signal(14)
            h_ext = Signal(14)
            m.d.comb += [w_ext.eq(R.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT + 1),
                         h_ext.eq(R.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1)]
            sx_s = Signal(18)                            # sx x S: one padded line's step
            s_ext = Signal(20)                           # S x sx x sy extended atoms
            m.d.comb += [sx_s.eq(sx * surfs), s_ext.eq(sx_s * sy)]
            w_rem = Signal(max(pbe, 1))                  # extended cripple group's atoms
            if PE > 1:
                m.d.comb += w_rem.eq(s_ext[:pbe])
            w_whole = Signal(20)
            m.d.comb += w_whole.eq(s_ext - w_rem)
            wa = Signal(4)                               # yp % sy
            wb = Signal(4)                               # xp % sx
            wx = Signal(14)                              # xp // sx
            ws = Signal(14)                              # surface
            wa_s = Signal(20)                            # wa x sx x S
            wb_s = Signal(18)                            # wb x S
            a_ext = Signal(20)
            m.d.comb += a_ext.eq(wa_s + wb_s + ws)
            w_j = Signal(20)                             # channel group of the entry
            w_sub = Signal(max(pbe, 1))
            m.d.comb += w_j.eq(a_ext >> pbe)
            if PE > 1:
                m.d.comb += w_sub.eq(a_ext[:pbe])
            w_crip = Signal()
            m.d.comb += w_crip.eq(a_ext >= w_whole)
            # the extended cripple atoms are packed densely (W_ext is a multiple of 4, so
            # they take W_ext x rem / PE entries, the golden model's ENTRY_PER_SLICE): atom
            # ``wx x rem + sub`` of the group's run
            w_c = Signal(16)
            m.d.comb += w_c.eq(wx * w_rem + w_sub)
            w_e = Signal(PW + 1)
            m.d.comb += w_e.eq(w_j * w_ext + Mux(w_crip, w_c >> pbe, wx))
            with m.If(wino):
                m.d.comb += [entry_d.eq(wrap(sb + w_e, n_dat)),
                             slice_end.eq((wa == sy - 1) & (ws == surfs - 1)
                                          & (wx == w_ext - 1) & (wb == sx - 1))]
                if PE > 1:
                    m.d.comb += lane_d.eq(Mux(w_crip, w_c[:pbe], w_sub))

            pad_now = Signal()                           # the next atom in is a pad atom
            pv = R.D_ZERO_PADDING_VALUE.PAD_VALUE
            pad_atom = Signal(ATOM * 8)
            m.d.comb += pad_atom.eq(Cat(*[pv[:8]] * ATOM))
            if conv_wide(cfg):                           # 16-bit elements: all of PAD_VALUE
                with m.If(R.D_MISC_CFG.PROC_PRECISION != 0):
                    m.d.comb += pad_atom.eq(Cat(*[pv[:16]] * (ATOM // 2)))

            def wino_step():
                with m.If(wb == sx - 1):
                    m.d.sync += [wb.eq(0), wb_s.eq(0)]
                    with m.If(wx == w_ext - 1):
                        m.d.sync += wx.eq(0)
                        with m.If(ws == surfs - 1):
                            m.d.sync += ws.eq(0)
                            with m.If(wa == sy - 1):
                                nsb = wrap(sb + eps, n_dat)
                                m.d.sync += [wa.eq(0), wa_s.eq(0), sb.eq(nsb),
                                             d_lines.eq(d_lines - 1)]
                                with m.If(d_lines == 0):
                                    m.d.sync += d_active.eq(0)
                            with m.Else():
                                m.d.sync += [wa.eq(wa + 1), wa_s.eq(wa_s + sx_s)]
                        with m.Else():
                            m.d.sync += ws.eq(ws + 1)
                    with m.Else():
                        m.d.sync += wx.eq(wx + 1)
                with m.Else():
                    m.d.sync += [wb.eq(wb + 1), wb_s.eq(wb_s + surfs)]

        # -- weights: atom placement ----------------------------------------------------------
        w_active = Signal()
        wpos = Signal(PW)                                # weight ring entry
        wlane = Signal(max(pb, 1))
        wrem = Signal(34)                                # bytes not yet written
        wlast = Signal()
        wmask_atom = Signal(ATOM)
        m.d.comb += wlast.eq(wrem <= ATOM)
        m.d.comb += wmask_atom.eq(Cat(*[wrem > i for i in range(ATOM)]))
        # the weight atom stream placed in the ring: the fetched surface, or (compressed) the
        # decompressor's output, taken while the ring has room for it
        if not comp:
            ws_valid, ws_ready, ws_data = wt_ser.o.valid, wt_ser.o.ready, wt_ser.o.payload.data
        else:
            ws_valid, ws_ready, ws_data = Signal(), Signal(), Signal(ATOM * 8)
            m.d.comb += [ws_valid.eq(wt_ser.o.valid), ws_data.eq(wt_ser.o.payload.data),
                         wt_ser.o.ready.eq(ws_ready)]
            with m.If(compressed):
                m.d.comb += [
                    ws_valid.eq(wdec.o.valid & (ending | (w_wr + ATOM <= room))),
                    ws_data.eq(wdec.o.payload.data), wdec.o.ready.eq(ws_ready),
                    wt_ser.o.ready.eq(wdec.atoms.ready), wdec.atoms.valid.eq(wt_ser.o.valid),
                    wlast.eq(wdec.o.payload.last), wmask_atom.eq((1 << ATOM) - 1),
                ]

        # -- the CBUF write port: data and weights alternate --------------------------------
        ds = dcv.o
        prio = Signal()                                  # 1: weights first
        take_d = Signal()
        take_w = Signal()
        iw = imgf.wr
        d_valid = Signal()
        m.d.comb += [
            d_valid.eq(Mux(is_img, iw.valid, ds.valid & d_active)),
            take_d.eq(d_valid & ~(ws_valid & w_active & prio)),
            take_w.eq(ws_valid & w_active & ~take_d),
            ds.ready.eq(take_d & ~is_img), ws_ready.eq(take_w),
            dat_atoms.ready.eq(Mux(is_img, imgf.atoms.ready, dcv.i.ready)),
            dcv.i.valid.eq(dat_atoms.valid & ~is_img), dcv.i.payload.eq(dat_atoms.payload),
            imgf.atoms.valid.eq(dat_atoms.valid & is_img),
            imgf.atoms.payload.eq(dat_atoms.payload),
            iw.ready.eq(take_d & is_img),
        ]
        with m.If(take_d | take_w):
            m.d.sync += prio.eq(take_d)

        wr = self.cbuf_wr
        wr_slice = Signal()                              # registered with the write
        wr_dlast = Signal()
        wr_wbytes = Signal(max(WB, 34))
        wr_wlast = Signal()
        wr_wt = Signal()
        amask = (1 << ATOM) - 1
        m.d.sync += [wr.en.eq(take_d | take_w), wr_slice.eq(0), wr_dlast.eq(0), wr_wt.eq(0),
                     wr_wlast.eq(0)]
        # image lines go after the kept ones (partial reuse: from ``kept_end``), around the
        # data ring (bank rows; two-column entries: 2 per entry)
        img_off = Signal(PW + 1)
        img_addr = Signal(PW + 2)
        ring_rows = (n_dat << 1) if twocol else n_dat
        m.d.comb += img_addr.eq(iw.payload.addr + img_off)
        with m.If(take_d & is_img):
            m.d.sync += [wr.addr.eq(Mux(img_addr >= ring_rows, img_addr - ring_rows, img_addr)),
                         wr.data.eq(iw.payload.data),
                         wr.mask.eq(iw.payload.mask), wr_slice.eq(iw.payload.slice_end),
                         wr_dlast.eq(iw.payload.last)]
        with m.If(take_d & ~is_img):
            if twocol:                                   # row 2e + the lane's column
                lane_r = lane_d[:pb]
                m.d.sync += wr.addr.eq(Cat(lane_d[pbe - 1], entry_d))
            else:
                lane_r = lane_d
                m.d.sync += wr.addr.eq(entry_d)
            m.d.sync += [wr.data.eq(Cat(*[ds.payload.data] * P)),
                         wr.mask.eq(Const(amask, BW) << (lane_r << ash) if P > 1 else amask),
                         wr_slice.eq(slice_end), wr_dlast.eq(slice_end & (d_lines == 0))]
            if wg:
                with m.If(wino):
                    wino_step()
                with m.Else():
                    direct_step()
            else:
                direct_step()
        if bat:
            wb_base = Signal(WB)                         # stream byte of the copy written
            wb_left = Signal(6)                          # copies after it
            w_first = Signal()                           # writing the first copy
            if comp:
                wd_next = Signal()                       # the decompressor's next copy
        with m.If(take_w):
            m.d.sync += [wr.addr.eq(wrow0 + wpos), wr.data.eq(Cat(*[ws_data] * P)),
                         wr.mask.eq((wmask_atom << (wlane << ash)) if P > 1 else wmask_atom),
                         wr_wt.eq(1), wr_wlast.eq(wlast),
                         wr_wbytes.eq(wbytes - Mux(wlast, 0, wrem - ATOM)),
                         wrem.eq(Mux(wlast, 0, wrem - ATOM))]
            if bat:
                # a copy's last atom: the next copy follows in the next ring row (a copy is a
                # multiple of 128 bytes, whole rows)
                m.d.sync += wr_wbytes.eq(wb_base + wbytes - Mux(wlast, 0, wrem - ATOM))
                with m.If(wlast & (wb_left != 0)):
                    m.d.sync += [wr_wlast.eq(0), wrem.eq(wbytes), wb_left.eq(wb_left - 1),
                                 wb_base.eq(wb_base + cstride)]
                    m.d.sync += w_first.eq(0) if not comp else \
                        w_first.eq(w_first & compressed)
            if comp:
                m.d.sync += w_wr.eq(w_wr + ATOM)
                with m.If(compressed):
                    m.d.sync += wr_wbytes.eq(w_wr + ATOM)
            if P > 1:
                m.d.sync += wlane.eq(wlane + 1)
                with m.If(wlane == P - 1):
                    m.d.sync += wpos.eq(wrap(wpos + 1, n_wt))
            else:
                m.d.sync += wpos.eq(wrap(wpos + 1, n_wt))
            if bat and comp:
                # a compressed copy's end: the next copy from the next whole ring row,
                # expanded by the decompressor run again (once it is idle; its trailing
                # reads still count as the first copy's fp16 weights)
                with m.If(wlast & (wb_left != 0) & compressed):
                    m.d.sync += [w_wr.eq(wb_base + cstride), wd_next.eq(1), wlane.eq(0),
                                 wpos.eq(wrap(wpos + 1, n_wt))]
            with m.If((wlast & (wb_left == 0)) if bat else wlast):
                m.d.sync += w_active.eq(0)

        # -- announcements, one cycle after the write is presented ---------------------------
        # (builds with ``cbuf_write_regs``: the CBUF registers the write, which lands a cycle
        # later, and so do the announcements)
        landing = wr.en
        for i in range(cfg.cbuf_write_regs):
            now = {"wr_en": wr.en, "wr_slice": wr_slice, "wr_dlast": wr_dlast,
                   "wr_wlast": wr_wlast, "wr_wt": wr_wt, "wr_wbytes": wr_wbytes}
            late = {n: Signal.like(v, name=f"{n}_late{i}") for n, v in now.items()}
            m.d.sync += [late[n].eq(v) for n, v in now.items()]
            landing = landing | late["wr_en"]
            wr_slice, wr_dlast, wr_wlast, wr_wt, wr_wbytes = (
                late[n] for n in ("wr_slice", "wr_dlast", "wr_wlast", "wr_wt", "wr_wbytes"))
        m.d.sync += [self.dat_done.eq(wr_dlast), self.wt_done.eq(wr_wlast)]
        with m.If(wr_slice & running):
            m.d.sync += self.dat_slices.eq(self.dat_slices + 1)
        with m.If(wr_wt & running):
            m.d.sync += self.wt_bytes.eq(wr_wbytes)
        with m.If(self.end):             # nothing is announced to the next layer before DECIDE
            m.d.sync += [self.dat_slices.eq(0), self.wt_bytes.eq(0)]
        busy_any = ((cmd_left != 0) | d_active | w_active | landing | imgf.busy | dcv.busy)
        m.d.comb += fetching.eq((busy_any | wdec.busy) if comp else busy_any)
        if conv_fp16(cfg):
            m.d.comb += self.drained.eq(acc_ready & ~fetching)

        # -- layer end: the fetch is complete, nothing more to request ---------------------
        with m.If(finish):
            m.d.sync += [w_fetch.eq(0), cmd_left.eq(0), d_active.eq(0), w_active.eq(0)]

        # -- layer start ---------------------------------------------------------------------
        fpos = Mux(d_reuse, kept_end, 0)
        with m.If(decide):
            m.d.sync += img_off.eq((fpos << 1) if twocol else fpos)
            m.d.sync += [
                self.dat_base.eq(base_next), self.wt_base.eq(0),
                self.dat_slices.eq(Mux(d_reuse, kept_count, 0)),
                # data
                cmd_left.eq(Mux(full_reuse | is_img, 0, Mux(packed_1x1, 1, height) if not bat
                                else Mux(packed_1x1, nb_m1 + 1, slices))),
                yls.eq(0), g0.eq(0), pk.eq(0), gleft.eq(R.D_FETCH_GRAIN.GRAINS),
                d_active.eq(~full_reuse & ~is_img), d_lines.eq(slices - 1),
                x.eq(0), xe.eq(0), xs.eq(0), a.eq(0), sub.eq(0), grp.eq(fpos), sb.eq(fpos),
                # weights
                w_fetch.eq(~w_reuse), w_iss.eq(0), w_addr.eq(wbase),
                w_active.eq(~w_reuse & (wbytes != 0)), wpos.eq(0), wlane.eq(0),
                wrem.eq(wbytes), self.wt_bytes.eq(Mux(w_reuse, wbytes, 0)),
                self.dat_done.eq(full_reuse), self.wt_done.eq(w_reuse | (wbytes == 0)),
            ]
            if comp:
                # reused compressed weights: the uncompressed bytes their layer wrote
                m.d.sync += w_wr.eq(Mux(w_reuse, w_kept_total, 0))
                with m.If(compressed & w_reuse):
                    m.d.sync += self.wt_bytes.eq(w_kept_total)
        if bat:
            ncopy_m1 = Mux(refetch, nb_m1, 0)
            with m.If(decide):
                m.d.sync += [cb.eq(0), boff.eq(0), c_base.eq(0), c_left.eq(ncopy_m1),
                             wb_base.eq(0), wb_left.eq(ncopy_m1), w_first.eq(1)]
            # the CSC's side of the copies: the stride in bytes and in weight ring rows
            # (WEIGHT_BYTES / bank width modulo the ring's rows, computed once per layer)
            rows, rows_ok = seq_remainder(m, decide, cstride[row_bits:], n_wt, "wt_copy_rows")
            m.d.comb += [self.wt_copy.bytes.eq(Mux(refetch, cstride, 0)),
                         self.wt_copy.rows.eq(rows), self.wt_copy.ok.eq(rows_ok)]
        if comp and bat:
            # the decompressor once per copy: its next run when the previous one is idle
            # (its trailing reads counted with the first copy's fp16 weights)
            m.d.comb += wdec.start.eq((decide & compressed & ~w_reuse) | (wd_next & ~wdec.busy))
            with m.If(decide):
                m.d.sync += wd_next.eq(0)
            with m.Elif(wd_next & ~wdec.busy):
                m.d.sync += [wd_next.eq(0), w_first.eq(0)]
        elif comp:
            m.d.comb += wdec.start.eq(decide & compressed & ~w_reuse)

        # -- counters --------------------------------------------------------------------------
        st = self.status
        if conv_fp16(cfg):
            # fp16 layers (golden sim.conv.cdma.fetch_feature / fetch_weights): every fetched
            # feature atom's NaN / infinity elements are counted, then with NAN_TO_ZERO its
            # NaNs become +0 on the way to the convertor; every fetched weight atom is
            # counted (weights are not flushed). The counts start at 0 with each layer.
            fp_layer = Signal()
            fp_in = Signal()                       # fp16 input: features, the fp16 pixels
            m.d.comb += [fp_layer.eq(R.D_MISC_CFG.PROC_PRECISION == 2),
                         fp_in.eq(R.D_MISC_CFG.IN_PRECISION == 2)]
            ntz = R.D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO
            lanes16 = ATOM // 2

            def classify(data, name):
                nan, inf = Signal(lanes16, name=f"{name}_nan"), Signal(lanes16, name=f"{name}_inf")
                for i in range(lanes16):
                    e = data[16 * i:16 * i + 16]
                    top = e[10:15].all()
                    m.d.comb += [nan[i].eq(top & e[:10].any()), inf[i].eq(top & ~e[:10].any())]
                return nan, inf

            d_atom = dat_atoms.payload.data
            d_nan, d_inf = classify(d_atom, "fp_dat")
            flushed = fp_flushed = Signal.like(d_atom, name="fp_dat_flushed")
            for i in range(lanes16):
                m.d.comb += flushed[16 * i:16 * i + 16].eq(
                    Mux(fp_in & ntz & d_nan[i], 0, d_atom[16 * i:16 * i + 16]))
            m.d.comb += [dcv.i.payload.data.eq(flushed), imgf.atoms.payload.data.eq(flushed)]
            w_nan, w_inf = classify(wt_ser.o.payload.data, "fp_wt")
            # an image line's first atom: the elements before its first ROI pixel are not
            # counted (golden sim.conv.image.fp16_pixel_nan_inf)
            d_take = ((dcv.i.valid & dcv.i.ready) | (imgf.atoms.valid & imgf.atoms.ready)) & fp_in
            counted = Signal(lanes16, name="fp_dat_counted")
            for i in range(lanes16):
                m.d.comb += counted[i].eq(~is_img | (2 * i >= imgf.lead))
            d_nan, d_inf = d_nan & counted, d_inf & counted
            if wg:
                # Winograd: the pad atoms are counted and flushed as the fetched ones
                p_nan, p_inf = classify(pad_atom, "fp_pad")
                d_nan, d_inf = Mux(pad_now, p_nan, d_nan), Mux(pad_now, p_inf, d_inf)
                pad_flushed = Signal.like(pad_atom, name="fp_pad_flushed")
                for i in range(lanes16):
                    m.d.comb += pad_flushed[16 * i:16 * i + 16].eq(
                        Mux(fp_in & ntz & p_nan[i], 0, pad_atom[16 * i:16 * i + 16]))
            w_take = wt_ser.o.valid & wt_ser.o.ready & fp_layer
            if bat:                                # a batched layer's copies count once
                w_take = w_take & w_first
            if comp:                               # compressed: the weights, not their mask
                w_take = w_take & (~compressed | wdec.data_atom)
            for take, bits, reg, fld in (
                    (d_take, d_nan, "D_NAN_INPUT_DATA_NUM", "NAN_DATA_NUM"),
                    (d_take, d_inf, "D_INF_INPUT_DATA_NUM", "INF_DATA_NUM"),
                    (w_take, w_nan, "D_NAN_INPUT_WEIGHT_NUM", "NAN_WEIGHT_NUM"),
                    (w_take, w_inf, "D_INF_INPUT_WEIGHT_NUM", "INF_WEIGHT_NUM")):
                c = Signal(32, name=fld.lower())
                n = Signal(range(lanes16 + 1), name=f"{fld.lower()}_atom")
                m.d.comb += n.eq(sum(bits[i] for i in range(lanes16)))
                with m.If(decide):
                    m.d.sync += c.eq(0)
                with m.Elif(take):
                    m.d.sync += c.eq(c + n)
                m.d.comb += st[reg][fld].eq(c)
        dma_en = R.D_PERF_ENABLE.DMA_EN
        for port, reg, fld in ((self.rd_dat, "D_PERF_DAT_READ_STALL", "DAT_RD_STALL"),
                               (self.rd_wt, "D_PERF_WT_READ_STALL", "WT_RD_STALL")):
            c = Signal(32, name=fld.lower())
            with m.If(decide):
                m.d.sync += c.eq(0)
            with m.Elif(dma_en & port.req.valid & ~port.req.ready & (c != (1 << 32) - 1)):
                m.d.sync += c.eq(c + 1)
            m.d.comb += st[reg][fld].eq(c)
        if wg:
            # -- Winograd: the padded lines into the convertor (see "Winograd") -------------
            # pad atoms are inserted into the fetched atom stream in the order of the padded
            # input (line by line, surface by surface, position by position), so the
            # convertor sees them as the golden model's padded cube; the placement above
            # walks the same order
            zp = R.D_ZERO_PADDING
            wpad = Signal(15)                            # padded width
            hpad = Signal(15)                            # padded height
            m.d.comb += [wpad.eq(zp.PAD_LEFT + width + zp.PAD_RIGHT),
                         hpad.eq(zp.PAD_TOP + height + zp.PAD_BOTTOM)]
            i_act = Signal()
            i_y = Signal(15)
            i_s = Signal(14)
            i_x = Signal(15)
            m.d.comb += pad_now.eq(i_act & ((i_y < zp.PAD_TOP) | (i_y >= zp.PAD_TOP + height)
                                            | (i_x < zp.PAD_LEFT)
                                            | (i_x >= zp.PAD_LEFT + width)))
            d_data = fp_flushed if conv_fp16(cfg) else dat_atoms.payload.data
            pad_in = pad_flushed if conv_fp16(cfg) else pad_atom
            i_take = Signal()
            with m.If(wino):
                m.d.comb += [dcv.i.valid.eq(pad_now | (dat_atoms.valid & i_act)),
                             dcv.i.payload.data.eq(Mux(pad_now, pad_in, d_data)),
                             dat_atoms.ready.eq(dcv.i.ready & i_act & ~pad_now),
                             i_take.eq(dcv.i.valid & dcv.i.ready)]
            with m.If(i_take):
                with m.If(i_x == wpad - 1):
                    m.d.sync += i_x.eq(0)
                    with m.If(i_s == surfs - 1):
                        m.d.sync += [i_s.eq(0), i_y.eq(i_y + 1)]
                        with m.If(i_y == hpad - 1):
                            m.d.sync += i_act.eq(0)
                    with m.Else():
                        m.d.sync += i_s.eq(i_s + 1)
                with m.Else():
                    m.d.sync += i_x.eq(i_x + 1)
            with m.If(decide):
                m.d.sync += [i_act.eq(wino & ~full_reuse), i_y.eq(0), i_s.eq(0), i_x.eq(0),
                             wa.eq(0), wb.eq(0), wx.eq(0), ws.eq(0), wa_s.eq(0), wb_s.eq(0)]
                with m.If(wino):
                    m.d.sync += d_lines.eq(h_ext - 1)
            with m.If(finish):
                m.d.sync += i_act.eq(0)
        return m
