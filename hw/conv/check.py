"""ConvCheck: the layer-start check of a convolution register program (the rules of
:func:`sim.conv.program.decode` and of the CBUF reuse in :func:`sim.conv.cdma.load_cbuf`, for
this RTL: int8, int16 where :func:`~hw.conv.common.conv_int16` holds and fp16 where
:func:`~hw.conv.common.conv_fp16` does; batches on builds
with ``batching``; Winograd layers, int8 and int16, where
:func:`~hw.conv.common.conv_winograd` holds).

``start`` (pulse) loads the consumer groups' fields; ``done`` pulses :data:`CHECK_CYCLES`
cycles later with ``ok``. The products the rules need go through small shift-and-add
multipliers (one adder each, one bit of the narrow factor per cycle, all in parallel), so the
check has no wide general multiplier. ``end`` (pulse, a valid layer's end, registers still
the layer's) records what the CBUF keeps for the next layer, as Cdma does.

Rules (any one fails the program)
    * two-column CBUF entries (``cbuf_entry_width`` = 2 x ``cbuf_bank_width``: NVDLA v1's
      nv_full): the registers count entries of two bank rows (entries per slice, data bank
      capacity) and the RTL runs int8, int16 and fp16 feature input and image input of
      every precision the build has;
    * modes: ``CONV_MODE`` WINOGRAD in any of the five blocks on a build where
      :func:`~hw.conv.common.conv_winograd` does not hold (where it holds: any block's
      ``CONV_MODE`` != CDMA's, see "Winograd" below); ``DATAIN_FORMAT`` CDMA != CSC;
      ``WEIGHT_FORMAT`` COMPRESSED (CDMA or CSC) on a build without ``weight_compression``,
      CDMA != CSC on one with it; ``BATCHES != 0`` (CDMA, CSC, CACC) on a build without
      ``batching``;
    * batches (builds with ``batching``; golden :func:`sim.conv.program.decode` and
      :func:`~sim.conv.program.check_batch_delivery`): ``BATCHES`` >= ``max_batch``, CSC's or
      CACC's count != CDMA's, SDP's ``BATCH_NUMBER`` != CDMA's, batches on image input,
      ``BATCH_STRIDE`` not atom aligned or (feature input) < ``SURF_STRIDE`` x surfaces, the
      batched delivery (output wider than one position: CACC's ``DATAOUT_ADDR``, and with
      several lines / surfaces its ``LINE_STRIDE`` / ``SURF_STRIDE``, equal SDP's destination
      ones modulo two atoms); every slice count below counts ``in_h x B`` (data banks,
      ``RLS_SLICES``, the kept slices, and data reuse needs the kept batch count); the last
      batch inside the address space (weights larger than the weight banks are fetched once
      per batch, :mod:`hw.conv.common` "Weight copies");
    * image input (``DATAIN_FORMAT`` PIXEL): the rules of :func:`hw.conv.image.image_rules`
      (the golden decode's image rules); the feature-only rules below (surface stride,
      ``LINE_PACKED`` / grain, overlapping surfaces, feature entries and address space,
      ``WEIGHT_CHANNEL_EXT`` = channels, the width spans) are off for an image, dilation
      is ignored;
    * precision: every ``IN_PRECISION`` / ``PROC_PRECISION`` must be INT8 -- except on builds
      where :func:`~hw.conv.common.conv_int16` holds, which also take a feature-input layer
      whose ten precision fields are all INT16, and builds where
      :func:`~hw.conv.common.conv_fp16` holds, which take one whose ten fields are all FP16
      (``CVT_EN`` is not a rule for int8: NVDLA's own int8 traces set it; an int16 layer with
      ``CVT_EN``, int16 to int16, runs). fp16 layers (the golden model's rules): no
      ``CVT_EN`` on fp16 input (the convertor takes integers: fp16 features here, fp16
      pixels in :func:`hw.conv.image.image_rules`; integer pixels convert to fp16), and the
      SDP layer they fly into is FP16 -- and an integer layer's is not (on every build with
      fp16), nor an int16 layer flying into an int8 SDP layer or an int8 layer into an
      int16 one (CACC delivers atoms of its own precision, SDP groups them by its own:
      :func:`sim.conv.unit.check_sdp_precision`); feature input whose ``IN_PRECISION`` is
      not ``PROC_PRECISION`` (Table 29: direct convolution converts no precision). Image
      layers take every processing precision of the build (int16 / fp16: 2 bytes per
      element in the CBUF line). RTL restriction on those builds, where the golden model
      would run the program: ``DATA_REUSE`` of slices (or ``WEIGHT_REUSE`` of weights) kept
      by a layer of another precision;
    * input cube: atom-aligned base, line and surface stride; ``LINE_PACKED`` exactly when
      ``LINE_STRIDE = W x atom``; ``GRAINS = 0`` unless lines are packed, grain <= height;
      lines that overlap (``LINE_STRIDE < W x atom``) and surfaces that overlap (``S > 1``
      and ``SURF_STRIDE < LINE_STRIDE x H``); ``POST_Y_EXTENSION`` on feature input; the cube past
      the address space (not checked on full data reuse: nothing is fetched); RAM type CV on a
      build without SRAMIF (input and weights);
    * agreement: CDMA size = its EXT size on image input (feature input ignores CDMA's EXT
      size, a Winograd register, as NVDLA does), CSC ``DATAIN_WIDTH_EXT`` / ``DATAIN_CHANNEL_EXT``
      = CDMA's width / channels, ``WEIGHT_CHANNEL_EXT`` = input channels, kernel counts, ``D_BANK``,
      ``WEIGHT_BYTES``, strides, left / top padding, the reuse / release bits (CDMA = CSC),
      ``DATAOUT_*`` (CSC = CACC), ``DATAOUT_CHANNEL`` = kernels, ``ATOMICS + 1`` = output
      width x height (feature input);
    * the flying output: SDP's cube (``sdp``, its consumer group) is the cube CACC delivers:
      the same width and height, and as many channels as kernels or the kernels rounded up
      to whole SDP atoms (the golden model's flying-input rule in :func:`sim.sdp.run_sdp`);
      a mismatch would leave one side waiting for values the other never sends;
    * CBUF: ``ENTRY_PER_SLICE`` (CDMA and CSC) = the entries a line takes; data + weight banks
      <= the build's; the slices held at once (kept + fetched, at least ``in_h``) x entries <=
      data banks x depth; one kernel group's bytes <= the weight banks;
    * weights: ``BYTE_PER_KERNEL + 1 = kw x kh x C``; ``WEIGHT_BYTES >= BYTE_PER_KERNEL x K``
      (uncompressed); ``WEIGHT_BYTES`` a multiple of 128; atom-aligned weight base; weights
      past the address space (not on weight reuse); ``SKIP_WEIGHT_RLS`` with more
      ``WEIGHT_BYTES`` than the weight banks hold;
    * compressed weights (builds with ``weight_compression``; golden
      :func:`sim.conv.program._compression`): ``WEIGHT_BYTES`` 0; ``WMB_BYTES`` (CDMA) !=
      one bit per weight element (a byte of an int8 layer, two bytes of an int16 or fp16
      one) rounded up to 128 bytes, CSC's != CDMA's; WGS / WMB base not atom aligned; WGS (4
      bytes per kernel group of the layer's precision) or WMB past the address space (not on weight
      reuse); data + weight banks > banks - 1 (the last bank is the mask's); with
      ``SKIP_WEIGHT_RLS``: ``WMB_BYTES`` > one bank, or ``BYTE_PER_KERNEL x K`` > the weight
      banks (this core keeps them expanded); a mask over one bank whose kernel group has more
      bits than the bank less 128 bytes (NVDLA's CDMA); the uncompressed group rule above
      holds for compressed weights too (they are expanded into the CBUF). The two expanded
      rules are this core's, not NVDLA's: :func:`sim.conv.core_limits.check_core_limits`
      states them beside the golden model, which takes such programs as NVDLA does;
    * sequencing: the dilated kernel larger than the padded input; ``(out - 1) x stride +
      span`` past the padded input (width and height); ``CLIP_TRUNCATE > 16``; ``RLS_SLICES +
      1 > in_h`` unless ``SKIP_DATA_RLS``;
    * reuse (CDMA keeps, for the next layer, the bank split, input format, width, entries per
      slice and memory atoms per position of the kept slices (an image's also its pixel
      format, left / right padding and precision), and the kept weights' bank split, bytes,
      kernel count, kernel size and channels): ``DATA_REUSE`` with kept slices of the same
      input format under the same bank split but another width or entries per slice (an
      image: or another pixel format, padding or precision); partial reuse with another number of
      atoms per position; kept + fetched lines fewer than ``DATAIN_HEIGHT_EXT + 1`` (without
      reuse: ``DATAIN_HEIGHT < DATAIN_HEIGHT_EXT``); ``WEIGHT_REUSE`` of kept weights with any
      other weight geometry, format, ``WMB_BYTES`` or bank split; ``WEIGHT_REUSE`` after a
      layer with the same bank split and input format that released its weights (an invalid
      configuration for NVDLA's CDMA).

Winograd (``CDMA.D_MISC_CFG.CONV_MODE`` WINOGRAD, builds where
:func:`~hw.conv.common.conv_winograd` holds; golden :func:`sim.conv.winograd.decode_winograd`)
    The layer's mode is CDMA's ``CONV_MODE``; CSC, CMAC_A, CMAC_B and CACC must program the
    same. Rejected: image input; fp16 (NVDLA runs it: a limit of this core,
    :func:`sim.conv.core_limits.check_core_limits`); batches; channels not a whole number
    of 32-byte atoms (32 int8 / 16 int16 elements); CDMA's ``DATAIN_WIDTH_EXT + 1`` /
    ``DATAIN_HEIGHT_EXT + 1`` not a multiple of 4 or, times ``CONV_X_STRIDE + 1`` /
    ``CONV_Y_STRIDE + 1``, not the padded width / height (``PAD_LEFT + W + PAD_RIGHT``,
    ``PAD_TOP + H + PAD_BOTTOM``: together the golden rules "padded a multiple of 4 x stride,
    EXT = padded / stride"); CSC's ``DATAIN_WIDTH_EXT`` != CDMA's; CSC's
    ``DATAIN_CHANNEL_EXT + 1`` != channels x sx x sy; CSC's ``DATAIN_HEIGHT_EXT + 1`` not a
    multiple of 4; CSC's stride or dilation EXT fields not 0 (its padding plays no part);
    weights not 4 x 4; ``ENTRY_PER_SLICE`` (CDMA or CSC) + 1 != the entries of an extended
    line (W_ext x its atoms, over the atoms of an entry) or > 1023; ``DATAOUT_WIDTH`` /
    ``HEIGHT`` + 1 not a multiple of 4 or more than the extended input less 4 (CSC's width,
    CSC's height); ``ATOMICS / 4 + 1`` != the 2 x 2 output tiles; ``RLS_SLICES + 1`` not a
    multiple of 4 (unless ``SKIP_DATA_RLS``). The rules above that are not direct-only hold
    as written (``WEIGHT_CHANNEL_EXT`` = CSC's channels, kernel counts, ``BYTE_PER_KERNEL +
    1`` = 16 x CSC's channels x bytes, ``WEIGHT_BYTES``, CSC = CACC output, ``DATAOUT_CHANNEL``
    = kernels, ``CLIP_TRUNCATE``, ``RLS_SLICES + 1 <= in_h``, the input cube in memory and the
    address space, compressed weights, the flying cube, the bank split); the direct-only ones
    are off: CSC = CDMA width / channels / strides / left and top padding, the kernel spans,
    the direct entries and ``ATOMICS + 1`` = outputs. The CDMA fetches ``DATAIN_HEIGHT_EXT +
    1`` (CDMA's) extended lines, so the slices held at once count those. Reuse (golden
    :func:`sim.conv.cdma.load_cbuf`, as :class:`hw.conv.cdma.Cdma` keys it): the kept
    slices' and weights' mode is part of their key -- a layer of the other mode reuses
    nothing and fetches (no reuse rule fires, ``WEIGHT_REUSE`` after a release neither); a
    Winograd layer's slices are keyed by CDMA's ``DATAIN_WIDTH_EXT`` and, for partial reuse,
    by the extended channels. SDP's ``D_FEATURE_MODE_CFG.WINOGRAD`` (golden
    :func:`sim.conv.unit.check_sdp_winograd`) is not seen here (the ``sdp`` port does not
    carry it).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..mem import dma_fields
from ..regfile import fields_layout
from .common import conv_fp16, conv_int16, conv_wide, conv_winograd, conv_winograd_fp16, \
    sdp_cube_layout
from .image import image_rules

__all__ = ["ConvCheck", "CHECK_CYCLES"]

_NARROW = 15                 #: bits of the narrow factor of every product
#: from ``start`` to ``done``: the products' cycles (final 4 cycles before ``done``), then
#: the sums of products registered (entries, the input's end address), every rule's result
#: registered, then the verdict registered
CHECK_CYCLES = _NARROW + 4
_BLOCKS = ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")
_CLIP_MAX = 16               #: 48-bit assembly -> 32-bit delivery
_WT_ALIGN_BITS = 7           #: WEIGHT_BYTES is a multiple of 128 bytes
_WINO_MAX_ENTRIES = 1023     #: a Winograd layer's widest ENTRY_PER_SLICE field (NVDLA's CSC)


class ConvCheck(wiring.Component):
    """``ConvCheck(cfg, rmap)``: the program check (see the module docstring).

    Members: ``<block>_regs`` (in, the consumer groups' rw fields), ``start`` / ``end`` (in,
    pulses), ``done`` / ``ok`` (out: ``ok`` is valid while ``done`` pulses); on builds with
    batching and weight compression ``wt_expanded`` (out, ``BYTE_PER_KERNEL`` x kernels, the
    expanded weight bytes, valid from ``done`` until the next ``start``).
    """

    def __init__(self, cfg, rmap):
        self._cfg, self._rmap = cfg, rmap
        members = {f"{b.lower()}_regs": In(fields_layout(rmap[b].d_registers, ("rw",)))
                   for b in _BLOCKS}
        members.update({"sdp": In(sdp_cube_layout(cfg)),
                        "start": In(1), "end": In(1), "done": Out(1), "ok": Out(1)})
        if cfg.batching and cfg.weight_compression:
            members["wt_expanded"] = Out(34)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cfg, rmap = self._cfg, self._rmap
        D, C = self.cdma_regs, self.csc_regs
        A, B, K = self.cmac_a_regs, self.cmac_b_regs, self.cacc_regs
        aw = cfg.address_width
        ATOM, BW, DEPTH = cfg.memory_atom, cfg.cbuf_bank_width, cfg.cbuf_bank_depth
        ash = (ATOM - 1).bit_length()
        P = cfg.cbuf_entry_bytes // ATOM                   # memory atoms per CBUF entry
        pb = (P - 1).bit_length()                          # (as the registers count them)
        EDEPTH = cfg.cbuf_entry_depth                      # entries per bank (registers)

        def byte_value(view, block, reg, fld):
            return dma_fields.byte_value(view, rmap[block], reg, fld)

        def address(view, block, low_reg, low_fld, high_reg, high_fld):
            return dma_fields.split_address(view, rmap[block], low_reg, low_fld, high_reg,
                                            high_fld, aw)

        def misaligned(v):
            return v[:ash].any() if ash else Const(0)

        errs = []
        late = []                                           # rules on the products
        img = Signal()                                      # image input (hw.conv.image)
        m.d.comb += img.eq(D.D_DATAIN_FORMAT.DATAIN_FORMAT == 1)

        # weight format: compressed only on builds with weight compression (hw.conv.wdecomp);
        # builds without it generate none of the compressed rules
        comp = cfg.weight_compression
        if comp:
            compressed = Signal()
            m.d.comb += compressed.eq(D.D_WEIGHT_FORMAT.WEIGHT_FORMAT)
            fmt_errs = [C.D_WEIGHT_FORMAT.WEIGHT_FORMAT != D.D_WEIGHT_FORMAT.WEIGHT_FORMAT]
        else:
            fmt_errs = [D.D_WEIGHT_FORMAT.WEIGHT_FORMAT != 0, C.D_WEIGHT_FORMAT.WEIGHT_FORMAT != 0]

        # -- modes and precision ---------------------------------------------------------
        # (i16b: builds with the 2-byte element path; i16: a layer of 2-byte elements, int16
        # or fp16; prec: the layer's precision, the reuse keys' precision)
        i16b = conv_wide(cfg)
        i16 = Signal()
        prec = D.D_MISC_CFG.PROC_PRECISION
        # wg: a Winograd layer (CDMA's CONV_MODE; builds where conv_winograd holds, see
        # "Winograd" below); elsewhere every block's CONV_MODE must be DIRECT
        wino = conv_winograd(cfg)
        wg = Signal() if wino else Const(0)
        if wino:
            m.d.comb += wg.eq(D.D_MISC_CFG.CONV_MODE)
            # SDP's WINOGRAD says what the convolution is (golden check_sdp_winograd)
            errs.append(self.sdp.winograd != wg)

        def mode_err(v):
            return v.D_MISC_CFG.CONV_MODE != (D.D_MISC_CFG.CONV_MODE if wino else 0)

        def direct(e):
            """A direct-convolution rule (off for a Winograd layer; on other builds as is)."""
            return ~wg & e if wino else e
        if i16b:
            m.d.comb += i16.eq((prec == 1) | (prec == 2))
            for v in (D, C, A, B, K):
                errs += [mode_err(v),
                         v.D_MISC_CFG.PROC_PRECISION != prec]
            errs += [prec == 3,
                     ~img & (D.D_MISC_CFG.IN_PRECISION != prec),
                     ~img & (C.D_MISC_CFG.IN_PRECISION != prec),
                     self.sdp.int16 != (prec == 1)]
            if not conv_int16(cfg):
                errs.append(prec == 1)
            if conv_fp16(cfg):
                # fp16: CACC delivers fp32 into an fp16 SDP layer; the input convertor takes
                # integers only (the golden model's rules: fp16 features here, fp16 pixels
                # in hw.conv.image; integer pixels convert to fp16)
                fp = Signal()
                m.d.comb += fp.eq(prec == 2)
                errs += [self.sdp.fp16 != fp,
                         (D.D_MISC_CFG.IN_PRECISION == 2) & D.D_CVT_CFG.CVT_EN]
                if not conv_winograd_fp16(cfg):
                    errs.append(wg & fp)    # fp16 Winograd here: a limit of this core
            else:
                errs.append(prec == 2)
                if "fp16" in cfg.data_types:
                    errs.append(self.sdp.fp16)
        else:
            for v in (D, C, A, B, K):
                errs += [mode_err(v), v.D_MISC_CFG.PROC_PRECISION != 0]
            errs += [~img & (D.D_MISC_CFG.IN_PRECISION != 0),
                     ~img & (C.D_MISC_CFG.IN_PRECISION != 0)]
            if "fp16" in cfg.data_types:                    # an int8 layer into fp16 SDP
                errs.append(self.sdp.fp16)
        bat = cfg.batching
        if bat:
            # batches (golden: sim.conv.program.decode, check_batch_delivery): at most
            # max_batch, one count in CDMA, CSC, CACC and SDP, feature input only
            nb_m1 = D.D_BATCH_NUMBER.BATCHES
            batched = Signal()
            m.d.comb += batched.eq(nb_m1 != 0)
            errs += [*fmt_errs, nb_m1 >= cfg.max_batch, C.D_BATCH_NUMBER.BATCHES != nb_m1,
                     K.D_BATCH_NUMBER.BATCHES != nb_m1, img & batched,
                     self.sdp.batches != nb_m1, wg & batched]
        else:
            errs += [*fmt_errs,
                     D.D_BATCH_NUMBER.BATCHES != 0, C.D_BATCH_NUMBER.BATCHES != 0,
                     K.D_BATCH_NUMBER.BATCHES != 0]

        # -- input cube --------------------------------------------------------------------
        wm1 = D.D_DATAIN_SIZE_0.DATAIN_WIDTH
        hm1 = D.D_DATAIN_SIZE_0.DATAIN_HEIGHT
        width, height, surfs = Signal(14), Signal(14), Signal(14)
        m.d.comb += [width.eq(wm1 + 1), height.eq(hm1 + 1),
                     surfs.eq((D.D_DATAIN_SIZE_1.DATAIN_CHANNEL >> ash) + 1)]
        if i16b:                                            # 2-byte elements
            with m.If(i16):
                m.d.comb += surfs.eq((Cat(Const(1, 1), D.D_DATAIN_SIZE_1.DATAIN_CHANNEL)
                                      >> ash) + 1)
        base = address(D, "CDMA", "D_DAIN_ADDR_LOW_0", "DATAIN_ADDR_LOW_0",
                       "D_DAIN_ADDR_HIGH_0", "DATAIN_ADDR_HIGH_0")
        ls = byte_value(D, "CDMA", "D_LINE_STRIDE", "LINE_STRIDE")
        ss = byte_value(D, "CDMA", "D_SURF_STRIDE", "SURF_STRIDE")
        line_packed = D.D_DAIN_MAP.LINE_PACKED
        grains = D.D_FETCH_GRAIN.GRAINS
        feature = ~img
        errs += [feature & (C.D_POST_Y_EXTENSION.Y_EXTENSION != 0),
                 feature & (ls < (width << ash))]
        errs += [misaligned(base), misaligned(ls), ~img & misaligned(ss),
                 ~img & (line_packed != (ls == (width << ash))),
                 ~img & ~line_packed & (grains != 0), ~img & (grains > hm1)]
        if not cfg.sramif:
            errs += [D.D_DAIN_RAM_TYPE.DATAIN_RAM_TYPE == 0,
                     D.D_WEIGHT_RAM_TYPE.WEIGHT_RAM_TYPE == 0]

        # -- agreement between the blocks ---------------------------------------------------
        ext = D.D_DATAIN_SIZE_EXT_0
        cext0, cext1 = C.D_DATAIN_SIZE_EXT_0, C.D_DATAIN_SIZE_EXT_1
        cw0, cw1 = C.D_WEIGHT_SIZE_EXT_0, C.D_WEIGHT_SIZE_EXT_1
        errs += [img & (ext.DATAIN_WIDTH_EXT != wm1), img & (ext.DATAIN_HEIGHT_EXT != hm1),
                 direct(cext0.DATAIN_WIDTH_EXT != wm1),
                 direct(cext1.DATAIN_CHANNEL_EXT != D.D_DATAIN_SIZE_1.DATAIN_CHANNEL),
                 ~img & (cw1.WEIGHT_CHANNEL_EXT != cext1.DATAIN_CHANNEL_EXT),
                 cw1.WEIGHT_KERNEL != D.D_WEIGHT_SIZE_1.WEIGHT_KERNEL,
                 C.D_BANK.DATA_BANK != D.D_BANK.DATA_BANK,
                 C.D_BANK.WEIGHT_BANK != D.D_BANK.WEIGHT_BANK,
                 direct(C.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT != D.D_CONV_STRIDE.CONV_X_STRIDE),
                 direct(C.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT != D.D_CONV_STRIDE.CONV_Y_STRIDE),
                 direct(C.D_ZERO_PADDING.PAD_LEFT != D.D_ZERO_PADDING.PAD_LEFT),
                 direct(C.D_ZERO_PADDING.PAD_TOP != D.D_ZERO_PADDING.PAD_TOP),
                 C.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL != cw1.WEIGHT_KERNEL,
                 K.D_DATAOUT_SIZE_0.DATAOUT_WIDTH != C.D_DATAOUT_SIZE_0.DATAOUT_WIDTH,
                 K.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT != C.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT,
                 K.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL != C.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL,
                 K.D_CLIP_CFG.CLIP_TRUNCATE > _CLIP_MAX]
        # the cube flying into SDP (channels: kernels, or kernels padded to SDP's atoms)
        S = self.sdp
        sdp_pad = Mux(S.int16, S.channel | max(ATOM // 2 - 1, 0), S.channel | (ATOM - 1))
        errs += [S.width != K.D_DATAOUT_SIZE_0.DATAOUT_WIDTH,
                 S.height != K.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT,
                 (K.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL != S.channel) &
                 (K.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL != sdp_pad)]
        for fld in ("DATA_REUSE", "WEIGHT_REUSE", "SKIP_DATA_RLS", "SKIP_WEIGHT_RLS"):
            errs.append(C.D_MISC_CFG[fld] != D.D_MISC_CFG[fld])
        wbytes = Signal(33)
        m.d.comb += wbytes.eq(byte_value(D, "CDMA", "D_WEIGHT_BYTES", "WEIGHT_BYTES"))
        errs.append(byte_value(C, "CSC", "D_WEIGHT_BYTES", "WEIGHT_BYTES") != wbytes)
        errs.append(wbytes[:_WT_ALIGN_BITS].any())
        wbase = address(D, "CDMA", "D_WEIGHT_ADDR_LOW", "WEIGHT_ADDR_LOW",
                        "D_WEIGHT_ADDR_HIGH", "WEIGHT_ADDR_HIGH")
        errs.append(misaligned(wbase))

        # -- CBUF split ----------------------------------------------------------------------
        dbanks, wbanks = Signal(7), Signal(7)
        m.d.comb += [dbanks.eq(D.D_BANK.DATA_BANK + 1), wbanks.eq(D.D_BANK.WEIGHT_BANK + 1)]
        errs.append(dbanks + wbanks > cfg.cbuf_banks)
        eps = Signal(16)                                     # ENTRY_PER_SLICE + 1
        m.d.comb += eps.eq(D.D_ENTRY_PER_SLICE.ENTRIES + 1)
        in_h = Signal(14)
        m.d.comb += in_h.eq(cext0.DATAIN_HEIGHT_EXT + 1)
        kernels = Signal(14)
        m.d.comb += kernels.eq(cw1.WEIGHT_KERNEL + 1)
        bpk = Signal(19)
        m.d.comb += bpk.eq(D.D_WEIGHT_SIZE_0.BYTE_PER_KERNEL + 1)

        # -- sequencing: spans and output sizes (small factors) ------------------------------
        for axis, o_m1, s_m1, k_m1, d_m1, n_m1, pa, pz in (
                ("x", C.D_DATAOUT_SIZE_0.DATAOUT_WIDTH, C.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT,
                 cw0.WEIGHT_WIDTH_EXT, C.D_DILATION_EXT.X_DILATION_EXT, cext0.DATAIN_WIDTH_EXT,
                 C.D_ZERO_PADDING.PAD_LEFT, D.D_ZERO_PADDING.PAD_RIGHT),
                ("y", C.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT, C.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT,
                 cw0.WEIGHT_HEIGHT_EXT, C.D_DILATION_EXT.Y_DILATION_EXT,
                 cext0.DATAIN_HEIGHT_EXT, C.D_ZERO_PADDING.PAD_TOP,
                 D.D_ZERO_PADDING.PAD_BOTTOM)):
            span = Signal(12, name=f"span_{axis}")           # (k - 1) x dilation + 1
            reach = Signal(18, name=f"reach_{axis}")         # (o - 1) x stride + span
            padded = Signal(15, name=f"padded_{axis}")
            # image input: dilation is ignored, the width rules are in hw.conv.image.
            # Registered, span a cycle before reach: the two products, the sum and the
            # comparison in one cycle were the whole core's deepest path (these rules
            # settle three cycles after ``start``, far inside CHECK_CYCLES)
            m.d.sync += [span.eq(k_m1 * (Mux(img, 0, d_m1) + 1) + 1),
                         reach.eq(o_m1 * (s_m1 + 1) + span),
                         padded.eq(n_m1 + 1 + pa + pz)]
            # (Winograd: the output rules are in "Winograd" below)
            gate = ~img if axis == "x" else 1
            errs += [direct(gate & (span > padded)), direct(gate & (reach > padded))]
        if bat:
            # every size in slices counts in_h x B (slice y x B + b)
            in_hb = Signal(19)
            height_b = Signal(19)
            m.d.comb += [in_hb.eq(in_h * (nb_m1 + 1)), height_b.eq(height * (nb_m1 + 1))]
            errs.append(~D.D_MISC_CFG.SKIP_DATA_RLS & (C.D_RELEASE.RLS_SLICES >= in_hb))
        else:
            in_hb, height_b = in_h, height
            errs.append(~D.D_MISC_CFG.SKIP_DATA_RLS & (C.D_RELEASE.RLS_SLICES >= in_h))

        # -- reuse state (recorded at the end of each valid layer) -------------------------------
        kept_count = Signal(19 if bat else 14)
        kept_all = Signal()
        key_dbank, key_wbank = Signal(5), Signal(5)
        key_width = Signal(13)
        key_eps = Signal(16)
        key_surfs = Signal(14)
        w_kept = Signal()
        w_any = Signal()                                     # a layer ended (reuse record)
        key_fmt = Signal()
        key_img = Signal()                                   # kept slices are an image's
        # an image's kept lines hold converted pixels: its pixel format, left / right padding
        # and precision must match too (sim.conv.cdma.load_cbuf)
        cur_ikey = Cat(D.D_DATAIN_FORMAT.PIXEL_FORMAT, D.D_ZERO_PADDING.PAD_LEFT,
                       D.D_ZERO_PADDING.PAD_RIGHT, prec)
        key_ikey = Signal(len(cur_ikey))
        ikey_ok = Signal()
        m.d.comb += ikey_ok.eq(~img | (key_ikey == cur_ikey))
        if bat:
            key_bat = Signal(5)
        # Winograd (golden load_cbuf's key): the kept slices' mode (a layer of the other mode
        # fetches anew, its weights too); a Winograd layer's width is its extended width
        # (CDMA's DATAIN_WIDTH_EXT, as Cdma keys it) and its kept slices' channels the
        # extended ones (the partial-reuse rule)
        key_wino = Signal()
        same_mode = key_wino == wg

        def in_mode(e):
            """``e`` and the kept slices / weights of this layer's mode (Winograd builds)."""
            return e & same_mode if wino else e
        width_key = Mux(wg, D.D_DATAIN_SIZE_EXT_0.DATAIN_WIDTH_EXT, wm1) if wino else wm1
        chan_key = Mux(wg, cext1.DATAIN_CHANNEL_EXT + 1, surfs) if wino else surfs
        # bytes, kernels, kw, kh, channels; image: weight channels, post-extension; compressed:
        # the format and the mask bytes; int16 builds: the precision
        wkey = [wbytes, cw1.WEIGHT_KERNEL, cw0.WEIGHT_WIDTH_EXT, cw0.WEIGHT_HEIGHT_EXT,
                cext1.DATAIN_CHANNEL_EXT, cw1.WEIGHT_CHANNEL_EXT, img,
                C.D_POST_Y_EXTENSION.Y_EXTENSION]
        if i16b:
            wkey += [prec]
        if comp:
            wmb_bytes = Signal(33)
            m.d.comb += wmb_bytes.eq(byte_value(D, "CDMA", "D_WMB_BYTES", "WMB_BYTES"))
            wkey += [compressed, Mux(compressed, wmb_bytes, 0)]
        cur_wkey = Cat(*wkey)
        w_key = Signal(len(cur_wkey))
        key_match = Signal()
        m.d.comb += key_match.eq((key_dbank == D.D_BANK.DATA_BANK)
                                 & (key_wbank == D.D_BANK.WEIGHT_BANK))
        misc = D.D_MISC_CFG
        d_reuse = Signal()
        full_reuse = Signal()
        w_reuse = Signal()
        same_fmt = Signal()                                  # kept and new: both images or not
        m.d.comb += same_fmt.eq(in_mode(key_img == img))
        m.d.comb += [
            d_reuse.eq(misc.DATA_REUSE & (kept_count != 0) & key_match & same_fmt
                       & (key_width == width_key) & (key_eps == eps) & ikey_ok),
            full_reuse.eq(d_reuse & kept_all),
            # kept weights of the other mode are not reused: the layer fetches its own
            w_reuse.eq(in_mode(misc.WEIGHT_REUSE & w_kept)),
        ]
        if bat:
            m.d.comb += d_reuse.eq(misc.DATA_REUSE & (kept_count != 0) & key_match & same_fmt
                                   & (key_width == width_key) & (key_eps == eps) & ikey_ok
                                   & (key_bat == nb_m1))
        # WEIGHT_REUSE after a layer (same banks, input format and mode) that released its
        # weights
        errs.append(in_mode(misc.WEIGHT_REUSE & w_any & ~w_kept & key_match
                            & (key_fmt == D.D_DATAIN_FORMAT.DATAIN_FORMAT)))
        if i16b:
            # kept slices of the other precision (the golden model would reinterpret values)
            key_i16 = Signal(2)
            with m.If(self.end):
                m.d.sync += key_i16.eq(prec)
            errs.append(in_mode(misc.DATA_REUSE & (kept_count != 0) & key_match & ~key_img
                                & (key_i16 != prec)))
        errs += [misc.DATA_REUSE & (kept_count != 0) & key_match & same_fmt & ~d_reuse,
                 d_reuse & ~kept_all & (key_surfs != chan_key),
                 w_reuse & (~key_match | (w_key != cur_wkey))]
        # the slices the CDMA fetches: the input lines, a Winograd layer's extended ones
        fetched = Mux(wg, D.D_DATAIN_SIZE_EXT_0.DATAIN_HEIGHT_EXT + 1, height_b) if wino \
            else height_b
        avail = Signal(20 if bat else 15)
        m.d.comb += avail.eq(Mux(d_reuse, kept_count, 0) + Mux(full_reuse, 0, fetched))
        errs.append(avail < in_hb)
        need = Signal(14)
        rls = Signal(13)
        if bat:
            need = in_hb
            m.d.comb += rls.eq(C.D_RELEASE.RLS_SLICES + 1)
        else:
            m.d.comb += [need.eq(cext0.DATAIN_HEIGHT_EXT + 1),
                         rls.eq(C.D_RELEASE.RLS_SLICES + 1)]
        with m.If(self.end):
            m.d.sync += [key_dbank.eq(D.D_BANK.DATA_BANK), key_wbank.eq(D.D_BANK.WEIGHT_BANK),
                         key_width.eq(width_key), key_eps.eq(eps),
                         key_surfs.eq(chan_key), key_img.eq(img), key_ikey.eq(cur_ikey),
                         kept_all.eq(misc.SKIP_DATA_RLS),
                         kept_count.eq(Mux(misc.SKIP_DATA_RLS, need,
                                           Mux(rls >= need, 0, need - rls))),
                         w_kept.eq(misc.SKIP_WEIGHT_RLS), w_key.eq(cur_wkey), w_any.eq(1),
                         key_fmt.eq(D.D_DATAIN_FORMAT.DATAIN_FORMAT)]
            if bat:
                m.d.sync += key_bat.eq(nb_m1)
            if wino:
                m.d.sync += key_wino.eq(wg)

        # -- products: shift-and-add, one bit of the narrow factor per cycle -----------------------
        load = self.start

        def product(name, narrow, wide, wide_bits):
            a = Signal(_NARROW, name=f"{name}_a")
            b = Signal(wide_bits + _NARROW, name=f"{name}_b")
            acc = Signal(wide_bits + _NARROW, name=name)
            with m.If(load):
                m.d.sync += [a.eq(narrow), b.eq(wide), acc.eq(0)]
            with m.Else():
                m.d.sync += [a.eq(a >> 1), b.eq(b << 1), acc.eq(acc + Mux(a[0], b, 0))]
            return acc

        whole = Signal(14)                                   # atoms in whole entries
        m.d.comb += whole.eq(surfs >> pb)
        if wino:
            # Winograd: W_ext x the atoms of an extended position (the line's atoms)
            wino_atoms = Signal(14)
            m.d.comb += wino_atoms.eq(Mux(i16, (cext1.DATAIN_CHANNEL_EXT + 1) >> (ash - 1),
                                          (cext1.DATAIN_CHANNEL_EXT + 1) >> ash)
                                      if i16b else (cext1.DATAIN_CHANNEL_EXT + 1) >> ash)
            p_whole = product("p_whole_w", Mux(wg, cext0.DATAIN_WIDTH_EXT + 1, whole),
                              Mux(wg, wino_atoms, width), 14)
        else:
            p_whole = product("p_whole_w", whole, width, 14)     # whole x W
        p_lines = product("p_ls_h", height, ls, 32)          # LINE_STRIDE x H
        p_surfs = product("p_ss_s", surfs - 1, ss, 32)       # SURF_STRIDE x (S - 1)
        # every slice held at once (kept + fetched; >= in_h, or an error above) x entries
        p_data = product("p_res_eps", avail, eps, 16)
        ow, oh = Signal(14), Signal(14)
        m.d.comb += [ow.eq(C.D_DATAOUT_SIZE_0.DATAOUT_WIDTH + 1),
                     oh.eq(C.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT + 1)]
        p_atoms = product("p_atoms", oh, ow, 14)            # output positions
        kwkh = Signal(11)
        m.d.comb += kwkh.eq((cw0.WEIGHT_WIDTH_EXT + 1) * (cw0.WEIGHT_HEIGHT_EXT + 1))
        wch = Mux(img, cw1.WEIGHT_CHANNEL_EXT, cext1.DATAIN_CHANNEL_EXT) + 1
        p_bpk = product("p_bpk", wch, kwkh, 11)              # kw x kh x C
        p_wt = product("p_wt", kernels, bpk, 19)             # BYTE_PER_KERNEL x K
        if cfg.batching and cfg.weight_compression:
            m.d.comb += self.wt_expanded.eq(p_wt)
        group_k = Signal(range(cfg.atomic_k + 1))
        m.d.comb += group_k.eq(Mux(kernels > cfg.atomic_k, cfg.atomic_k, kernels))
        if i16b:                                            # int16 kernel groups: AK / 2
            with m.If(i16):
                m.d.comb += group_k.eq(Mux(kernels > cfg.atomic_k // 2, cfg.atomic_k // 2,
                                           kernels))
        p_group = product("p_group", group_k, bpk, 19)       # one kernel group's bytes

        # entries per slice: whole x W plus the cripple group's entries
        rem = Signal(max(pb, 1))
        if P > 1:
            m.d.comb += rem.eq(surfs[:pb])
        crip = Signal(14)
        with m.If(rem == 0):
            m.d.comb += crip.eq(0)
        if P >= 2:
            with m.Elif(rem == P // 2):
                m.d.comb += crip.eq((width + 1) >> 1)
        if P >= 4:
            with m.Elif(rem == P // 4):
                m.d.comb += crip.eq((width + 3) >> 2)
        with m.Else():
            m.d.comb += crip.eq(width)
        entries = Signal(29)
        m.d.sync += entries.eq(p_whole + crip)
        late += [direct(~img & (entries != eps)),
                 direct(~img & ((C.D_ENTRY_PER_SLICE.ENTRIES + 1) != entries)),
                 p_data > (dbanks * EDEPTH),
                 (Mux(i16, p_bpk << 1, p_bpk) if i16b else p_bpk) != bpk,
                 (~compressed & (wbytes < p_wt)) if comp else (wbytes < p_wt),
                 p_group > wbanks * (DEPTH * BW),
                 D.D_MISC_CFG.SKIP_WEIGHT_RLS & (wbytes > wbanks * (DEPTH * BW)),
                 ~img & (surfs > 1) & (ss < p_lines),
                 direct(feature & (p_atoms != C.D_ATOMICS.ATOMICS + 1))]
        # the input and the weights inside the address space
        packed_1x1 = line_packed & D.D_DAIN_MAP.SURF_PACKED & (wm1 == 0) & (hm1 == 0)
        feat_end = Signal(aw + 20)
        if bat:
            # batch b from base + b x BATCH_STRIDE
            bs = byte_value(D, "CDMA", "D_BATCH_STRIDE", "BATCH_STRIDE")
            p_bs = product("p_bs_b", nb_m1, bs, 32)          # BATCH_STRIDE x (B - 1)
            m.d.sync += feat_end.eq(Mux(packed_1x1, base + (surfs << ash),
                                        base + p_lines - ls + p_surfs + (width << ash))
                                    + p_bs)
            errs += [batched & misaligned(bs),
                     # every slice held at once needs an entry (avail x eps fits a product)
                     avail > cfg.cbuf_banks * DEPTH]
            late += [batched & ~img & (bs < p_surfs + ss)]   # batches overlap
            # the batched delivery: CACC's output address and strides agree with SDP's
            # modulo two memory atoms (the lines / surfaces only when there are several)
            lo = ATOM.bit_length()
            S_ = self.sdp
            out_surfs_many = Mux(i16, K.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL >= ATOM // 2,
                                 K.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL >= ATOM) if i16b else \
                K.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL >= ATOM
            wide = batched & (K.D_DATAOUT_SIZE_0.DATAOUT_WIDTH != 0)
            errs += [
                wide & (byte_value(K, "CACC", "D_DATAOUT_ADDR", "DATAOUT_ADDR")[:lo]
                        != S_.base_lo),
                wide & (K.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT != 0)
                & (byte_value(K, "CACC", "D_LINE_STRIDE", "LINE_STRIDE")[:lo] != S_.line_lo),
                wide & out_surfs_many
                & (byte_value(K, "CACC", "D_SURF_STRIDE", "SURF_STRIDE")[:lo] != S_.surf_lo)]
        else:
            m.d.sync += feat_end.eq(Mux(packed_1x1, base + (surfs << ash),
                                        base + p_lines - ls + p_surfs + (width << ash)))
        late += [~img & ~full_reuse & (feat_end > (1 << aw)),
                 ~w_reuse & (wbase + wbytes > (1 << aw))]

        # -- compressed weights (golden: sim.conv.program._compression) ---------------------
        if comp:
            bank = DEPTH * BW
            wgs_base = address(D, "CDMA", "D_WGS_ADDR_LOW", "WGS_ADDR_LOW", "D_WGS_ADDR_HIGH",
                               "WGS_ADDR_HIGH")
            wmb_base = address(D, "CDMA", "D_WMB_ADDR_LOW", "WMB_ADDR_LOW", "D_WMB_ADDR_HIGH",
                               "WMB_ADDR_HIGH")
            gk = cfg.atomic_k
            assert gk & (gk - 1) == 0
            groups = Signal(14)                              # kernel groups
            need_wmb = Signal(33)                            # a bit per element, 128-byte units
            # (elements: bytes on int8 layers, byte pairs on int16 / fp16 ones)
            m.d.comb += [groups.eq((kernels + gk - 1) >> (gk - 1).bit_length()),
                         need_wmb.eq(((p_wt + 1023) >> 10) << 7)]
            group_bits = p_group
            if i16b:
                gk2 = max(gk // 2, 1)
                group_bits = Mux(i16, p_group >> 1, p_group)
                with m.If(i16):
                    m.d.comb += [groups.eq((kernels + gk2 - 1) >> (gk2 - 1).bit_length()),
                                 need_wmb.eq(((p_wt + 2047) >> 11) << 7)]
            errs += [compressed & (wbytes == 0),
                     compressed & (byte_value(C, "CSC", "D_WMB_BYTES", "WMB_BYTES") != wmb_bytes),
                     compressed & misaligned(wgs_base), compressed & misaligned(wmb_base),
                     compressed & (dbanks + wbanks > cfg.cbuf_banks - 1),
                     compressed & D.D_MISC_CFG.SKIP_WEIGHT_RLS & (wmb_bytes > bank)]
            late += [compressed & (wmb_bytes != need_wmb),
                     compressed & D.D_MISC_CFG.SKIP_WEIGHT_RLS & (p_wt > wbanks * bank),
                     compressed & ~w_reuse & (wgs_base + (groups << 2) > (1 << aw)),
                     compressed & ~w_reuse & (wmb_base + wmb_bytes > (1 << aw)),
                     # NVDLA: a mask larger than its bank streams a kernel group at a time
                     compressed & (wmb_bytes > bank) & (group_bits > 8 * (bank - 128))]

        # -- Winograd (golden: sim.conv.winograd.decode_winograd) ----------------------------
        if wino:
            dext = D.D_DATAIN_SIZE_EXT_0
            pad = D.D_ZERO_PADDING
            sx, sy = Signal(4), Signal(4)
            sxsy = Signal(7)
            ext_w, ext_h = Signal(14), Signal(14)             # CDMA's extended input
            tw, th = Signal(15), Signal(15)                   # the padded input
            channels = Signal(14)
            m.d.comb += [sx.eq(D.D_CONV_STRIDE.CONV_X_STRIDE + 1),
                         sy.eq(D.D_CONV_STRIDE.CONV_Y_STRIDE + 1), sxsy.eq(sx * sy),
                         ext_w.eq(dext.DATAIN_WIDTH_EXT + 1),
                         ext_h.eq(dext.DATAIN_HEIGHT_EXT + 1),
                         tw.eq(pad.PAD_LEFT + width + pad.PAD_RIGHT),
                         th.eq(pad.PAD_TOP + height + pad.PAD_BOTTOM),
                         channels.eq(D.D_DATAIN_SIZE_1.DATAIN_CHANNEL + 1)]
            # padded = stride x EXT with EXT a multiple of 4: the padded size is a multiple
            # of 4 x stride and EXT = padded / stride
            p_tw = product("p_wino_tw", sx, ext_w, 14)
            p_th = product("p_wino_th", sy, ext_h, 14)
            p_ce = product("p_wino_ce", sxsy, channels, 14)   # C x sx x sy
            ch_m1 = D.D_DATAIN_SIZE_1.DATAIN_CHANNEL
            # channels: whole 32-byte atoms (32 int8 / 16 int16 elements)
            ch_whole = Mux(i16, ch_m1[:4] == 15, ch_m1[:5] == 31) if i16b else ch_m1[:5] == 31
            cw_ext = cext0.DATAIN_WIDTH_EXT + 1
            wentries = Signal(29)                             # an extended line's entries
            m.d.sync += wentries.eq((p_whole + (P - 1)) >> pb)
            errs += [wg & img, wg & ~ch_whole,
                     wg & (dext.DATAIN_WIDTH_EXT[:2] != 3),
                     wg & (dext.DATAIN_HEIGHT_EXT[:2] != 3),
                     wg & (cext0.DATAIN_WIDTH_EXT != dext.DATAIN_WIDTH_EXT),
                     wg & (cext0.DATAIN_HEIGHT_EXT[:2] != 3),
                     wg & (C.D_CONV_STRIDE_EXT.CONV_X_STRIDE_EXT != 0),
                     wg & (C.D_CONV_STRIDE_EXT.CONV_Y_STRIDE_EXT != 0),
                     wg & (C.D_DILATION_EXT.X_DILATION_EXT != 0),
                     wg & (C.D_DILATION_EXT.Y_DILATION_EXT != 0),
                     wg & (cw0.WEIGHT_WIDTH_EXT != 3), wg & (cw0.WEIGHT_HEIGHT_EXT != 3),
                     wg & (C.D_DATAOUT_SIZE_0.DATAOUT_WIDTH[:2] != 3),
                     wg & (C.D_DATAOUT_SIZE_0.DATAOUT_HEIGHT[:2] != 3),
                     wg & (ow + 4 > cw_ext), wg & (oh + 4 > in_h),
                     wg & (D.D_ENTRY_PER_SLICE.ENTRIES > _WINO_MAX_ENTRIES),
                     wg & ~D.D_MISC_CFG.SKIP_DATA_RLS & (C.D_RELEASE.RLS_SLICES[:2] != 3)]
            late += [wg & (p_tw != tw), wg & (p_th != th),
                     wg & (p_ce != cext1.DATAIN_CHANNEL_EXT + 1),
                     wg & (wentries != eps),
                     wg & ((C.D_ENTRY_PER_SLICE.ENTRIES + 1) != wentries),
                     # ATOMICS / 4 + 1 = the 2 x 2 tiles (the sequencer drops the low bits)
                     wg & ((C.D_ATOMICS.ATOMICS >> 2) + 1 != (p_atoms >> 2))]

        # -- image input ------------------------------------------------------------------
        _, img_errs, img_late = image_rules(
            m, cfg, D, C, byte_value=byte_value, address=address, misaligned=misaligned,
            product=product, height=height, width=width, p_lines=p_lines, line_stride=ls,
            eps=eps, wide=i16 if i16b else None)
        errs += img_errs
        late += img_late

        # -- sequence ----------------------------------------------------------------
        count = Signal(range(CHECK_CYCLES + 1))
        with m.If(self.start):
            m.d.sync += count.eq(CHECK_CYCLES)
        with m.Elif(count != 0):
            m.d.sync += count.eq(count - 1)
        # every rule's result is registered, then their OR (the verdict) the cycle before
        # ``done``: a rule and the OR of all of them in one cycle were the whole-core ECP5
        # netlist's deepest path (23 ns unplaced). The field rules settle a cycle after
        # ``start`` (the span / reach rules three), the product rules three cycles before
        # ``done``, those on the registered sums of products (entries, the input's end) two.
        err_r = Signal(len(errs))
        late_r = Signal(len(late))
        ok = Signal()
        m.d.sync += [err_r.eq(Cat(*errs)), late_r.eq(Cat(*late)),
                     ok.eq(~err_r.any() & ~late_r.any())]
        m.d.comb += [self.done.eq(count == 1), self.ok.eq(ok)]
        return m
