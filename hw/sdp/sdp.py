"""The SDP unit: SDP_RDMA, datapath, SDP_WDMA, counters and completion (spec: SDP, SDP_RDMA;
golden model :mod:`sim.sdp`).

One offline layer::

    op_en & rdma_op_en -> CHECK (program rules, address ranges) -+-> invalid: done at once
                                                                  +-> RUN: cube readers
    (input, B/N/E operands) -> SdpFeeder -> SdpDatapath -> SdpAtomPacker -> skid buffer
    -> CubeWriter,
    done + rdma_done in the cycle after the writer reports every byte acknowledged.

Output to PDP (``D_FEATURE_MODE_CFG.OUTPUT_DST = PDP``) streams the datapath's values on
``pdp`` (:func:`hw.sdp.wdma.out_layout`: ``data`` = T signed 16-bit output values, channels
``j*T .. j*T+T-1`` of the current atom's position, in the order of the input cube; ``last`` on
the final transfer) and finishes after the last one is taken. EW EQL mode writes nothing and
finishes after the last value (STATUS_UNEQUAL carries the result).

Flying mode (``D_FEATURE_MODE_CFG.FLYING_MODE = ON``): the input is the convolution
accumulator's int32 cube on ``flying`` (:func:`hw.conv.common.conv_out_layout`: ``data`` = T
signed 32-bit channels of one position, ``last`` on the layer's final transfer) in SDP's input
order -- surface by surface (an atom's worth of channels, ``atom / bytes``), line by line,
position by position, T channels at a time; the last surface is whole (the accumulator
sends zeros past ``DATA_CUBE_CHANNEL``; they are processed and written like offline padding). The input read DMA (MRDMA) is
not started; the B/N/E operand DMAs read memory exactly as offline (when SDP_RDMA takes part:
its ``op_en`` is set), aligned with the position and channels of each flying transfer. The
output (memory or PDP) and completion are as offline. ``flying`` is only taken while the
layer runs (after its checks); a flying layer waits for its data as long as it takes.

Batch mode (builds with ``batching``, ``D_FEATURE_MODE_CFG.BATCH_NUMBER`` = B - 1 > 0; flying
input only): the accumulator delivers batch 0's cube, then batch 1's, ...; the operand DMAs
read their cube once per batch (a batch stride of 0: every batch uses the same operands) and
the writer puts batch ``b`` at ``DST_BASE + b x DST_BATCH_STRIDE`` (cube commands with B
batches), a 1x1 cube with its strides.

Flying layers and the convolution's check (``flying_go``, ``flying_abort``)
    A flying layer that passes its own checks issues no DMA command (operand reads, output
    writes) until its producer has passed its check: it waits until ``flying_go`` (the
    convolution pipeline runs a valid layer) or the first ``flying`` transfer. A
    ``flying_wait`` is high while a flying layer that passed its own checks waits so (the
    convolution pipeline starts its layer's check only then, comparing this layer's cube
    with its own). A flying layer that fails its own checks, with no producer abort to pair
    with, pulses ``flying_reject``: the convolution ends its next layer without running it
    (the pair's golden run fails on SDP's rule; neither side waits for the other). A ``flying_abort`` pulse (the producer rejected its program) is kept until a flying layer
    takes it: the flying layer waiting for its producer, or the next flying layer to start,
    ends then like an invalid program (``done``, no DMA, nothing written). A running layer
    (its producer was valid) is never aborted; a flying layer that fails its own checks takes
    a pending abort with it. So either unit may be enabled first.

The same contract towards the PDP (``pdp_go``, ``pdp_abort``)
    A layer with ``OUTPUT_DST=PDP`` holds ``pdp_go`` while it runs and pulses ``pdp_abort``
    when it ends without running (its program rejected, or its own producer aborted), so a
    flying PDP layer waiting for its data ends too.

Invalid programs
    A layer the golden model rejects (``run_sdp`` raises SdpProgramError, or
    NotImplementedError for the modes it does not cover) issues no DMA and finishes in the
    cycle after its check (about 12 cycles). The rules (all checked, any one fails):

    * SDP ``WINOGRAD`` on a build where :func:`hw.conv.common.conv_winograd` does not hold;
      where it holds (golden ``sim.sdp.sdp``'s Winograd rules): ``WINOGRAD`` on offline, to
      PDP, with ``BATCH_NUMBER != 0``, with a cube not a multiple of 4 wide and high, with
      ``OUT_PRECISION != PROC_PRECISION`` or with EW EQL (the output is then written as any
      flying layer's: CACC delivers it in the ordinary order);
      ``OUTPUT_DST = PDP`` on a build without PDP; ``BATCH_NUMBER != 0``
      on a build without batching; with batching: ``BATCH_NUMBER >= max_batch``, and batches
      offline, to PDP, with EW EQL, with a taking-part RDMA whose ``BATCH_NUMBER`` differs,
      ``DST_BATCH_STRIDE`` not atom aligned or shorter than one batch's output (``(S - 1) x
      surface stride + (H - 1) x line stride + W atoms``; a batched 1x1 cube follows the
      strides), the last batch past the address space;
    * precision: ``PROC_PRECISION`` must be INT8, (int16 builds) INT16 or (fp16 builds)
      FP16, ``OUT_PRECISION`` equal to it (a flying FP16 layer takes an fp16 convolution's
      fp32 codes; the convolution's check pairs the precisions) unless the layer converts
      (below); RDMA ``IN_PRECISION`` / ``PROC_PRECISION`` / ``OUT_PRECISION`` not 3, and
      when the RDMA takes part (offline, or its group enabled) RDMA ``PROC_PRECISION`` = SDP's
      (in batch mode ``OUT_PRECISION`` too); offline ``IN_PRECISION`` = ``PROC_PRECISION``
      unless 16 -> 8;
    * BS / BN: enabled ALU with ``ALU_ALGO = 3``; a stage enabled that the build lacks (EW,
      LUT too);
    * per operand DMA (B/N/E): taking part = RDMA takes part and ``*_DISABLE = NO``. A stage
      ALU/MUL with ``SRC = MEM`` needs its DMA; a DMA taking part needs such an operand, a
      ``DATA_USE`` of MUL / ALU / BOTH matching the operands read from memory, ``TWO_BYTE``
      unless int8, an atom-aligned base (and line / surface strides per element), RAM type MC
      on builds without SRAMIF, and its data inside the address space;
    * RDMA ``FLYING_MODE``, ``WINOGRAD`` and cube size equal to SDP's (when it takes part;
      in flying mode SDP_RDMA takes part only when its ``op_en`` is set too, as in the golden
      model -- decided when the layer issues its DMA and kept to its end, so an RDMA group
      enabled for a later layer while a flying layer without RDMA runs stays that layer's);
    * offline: source RAM type, atom-aligned base / line / surface stride, cube inside the
      address space;
    * destination (written unless PDP or EQL): RAM type, alignment, lines and surfaces that
      do not overlap (``H > 1``: line stride >= W atoms; ``S > 1``: surface stride >= (H - 1)
      x line stride + W atoms; not for 1x1 cubes), inside the address space.

Precision conversion (builds with int16; data-format spec, Precision Conversion, Table 30 and
Equation 3; golden model: "Precision conversion" of :mod:`sim.sdp.sdp`)
    * 16 -> 8 (offline, SDP_RDMA ``IN_PRECISION = INT16`` with ``PROC_PRECISION = INT8``):
      the layer runs as int8 (operands too); int8 surface s is int16 surfaces 2s and 2s+1
      side by side (an odd last int16 surface is followed by one more read), the input cube
      is read as ``2 x S`` int16 surfaces (the address checks too) and
      :class:`hw.sdp.rdma.SdpFeeder` pairs their atoms.
    * 8 -> 16 (offline, ``PROC_PRECISION = INT8`` with ``OUT_PRECISION = INT16``; with 16 ->
      8 too: both): int8 surface s is written as int16 surfaces 2s and 2s+1
      (:class:`hw.sdp.wdma.SdpAtomPacker` splits each int8 atom), the output cube has ``2 x
      S`` surfaces (checks included).
    * Both twin-surface modes move a position's pair of atoms together: unless the cube is
      1x1 (one run of atoms, already in that order) the reader / writer get one cube per
      (int8 surface, line) whose W one-atom lines pairs are ``(2s, h, w)``, ``(2s+1, h,
      w)`` (:meth:`Sdp._twin_commands`), so a conversion layer moves one atom per request.
    * int16 <-> fp16 (builds with fp16 too; ``PROC_PRECISION`` INT16 with ``OUT_PRECISION``
      FP16 or the reverse, offline or flying): the output converter's business
      (:mod:`hw.sdp.datapath`); the layout is that of the processing precision.
    * Rejected: every other pair (int8 <-> fp16, int16 -> int8 in the converter), a flying
      8 -> 16.

Counters (``status`` / ``rdma_status``, valid in the cycle ``done`` pulses)
    ``STATUS_UNEQUAL`` every layer; ``OUT_SATURATION`` when ``PERF_SAT_EN``; the five LUT
    counters when ``PERF_LUT_EN``; the DMA stall counters when the block's ``PERF_DMA_EN``:
    cycles a read request (``MRDMA`` input, ``BRDMA`` / ``NRDMA`` / ``ERDMA`` operands) or a
    write request (``WDMA``) waited for the memory interface. Counters saturate at 2^32 - 1.
    A counter whose enable is off keeps the value its register group already holds: the unit
    mirrors both groups' values (it flips its group pointer on every ``done``, like the
    register file's CONSUMER). fp16 builds: an fp16 layer that ran sets SDP's
    ``D_STATUS_NAN_INPUT_NUM`` / ``INF_INPUT_NUM`` to 0 (NVDLA ties them off) and
    ``D_STATUS_NAN_OUTPUT_NUM`` to the NaN outputs (padding included, whatever
    ``PERF_NAN_INF_COUNT_EN`` says; an int16 -> fp16 layer sets all three too, an fp16 ->
    int16 one counts no NaN output), and, with SDP_RDMA's ``PERF_NAN_INF_COUNT_EN`` and
    ``IN_PRECISION = FP16``, SDP_RDMA's ``D_STATUS_NAN_INPUT_NUM`` / ``INF_INPUT_NUM`` to the
    fp16 NaN / infinity codes read (padding channels included); otherwise (int layers, rejected
    layers, builds without fp16) they keep their group's value.

LUT access (``cfg.sdp_lut``)
    ``lut_cfg_we`` + ``lut_cfg_wdata``: a CSB write of S_LUT_ACCESS_CFG sets the pointer
    (address, table, direction); ``lut_data_we`` + ``lut_data_wdata``: a write of
    S_LUT_ACCESS_DATA stores LUT_DATA at the pointer when the direction is WRITE and the
    address is inside the table, and advances the pointer; ``lut_data_re``: a read of
    S_LUT_ACCESS_DATA, ``lut_data_rdata`` is the entry under the pointer in the same cycle (0
    past the table's end), and the pointer advances. ``lut_cfg_rdata`` is the current pointer
    (what a read of S_LUT_ACCESS_CFG returns, :mod:`sim.sdp.lut`).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, flipped

from arch.registers import register_map

from ..mem.cube import AtomPacker, AtomSerializer, CubeReader, CubeWriter
from ..mem.dma import RAM_CV, DmaGeometry, DmaReadPort, DmaWritePort, cube_layout
from ..mem import dma_fields
from ..mem.dma_fields import cube_address
from ..conv.common import conv_out_layout, conv_winograd
from ..regfile import fields_layout
from ..skid import SkidBuffer
from .rdma import STAGES, USE_ALU, USE_BOTH, USE_MUL, SdpFeeder, operand_cfg_layout
from .wdma import SdpAtomPacker, out_layout

__all__ = ["Sdp", "lut_access"]

INT8, INT16, FP16 = 0, 1, 2
ALU_EQL = 3
_COUNTER_MAX = (1 << 32) - 1
_DMA_NAME = {"bs": "BRDMA", "bn": "NRDMA", "ew": "ERDMA"}
_PORT = {"bs": "rd_sdp_b", "bn": "rd_sdp_n", "ew": "rd_sdp_e"}


def _default_datapath(cfg):
    from .datapath import SdpDatapath
    return SdpDatapath(cfg)


class Sdp(wiring.Component):
    """The SDP + SDP_RDMA unit of one build (see the module docstring).

    ``Sdp(cfg)``; ``datapath`` may replace the :class:`hw.sdp.datapath.SdpDatapath` factory
    (tests). ``lanes`` is the datapath's T.
    """

    def __init__(self, cfg, datapath=None):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._rmap = rmap = register_map(cfg)
        self._dp = (datapath or _default_datapath)(cfg)
        self.lanes = T = self._dp.lanes
        self._stages = tuple(st for st, on in zip(STAGES, (cfg.sdp_bs, cfg.sdp_bn, cfg.sdp_ew))
                             if on)
        fly_lanes = conv_out_layout(cfg).members["data"].length
        if fly_lanes != T:
            raise ValueError(f"{cfg.name}: the flying input carries {fly_lanes} lanes "
                             f"(conv_out_layout), the SDP datapath {T}")
        rb, sb = rmap["SDP_RDMA"], rmap["SDP"]
        members = {
            "rdma_regs": In(fields_layout(rb.d_registers, ("rw",))),
            "rdma_op_en": In(1), "rdma_done": Out(1),
            "rdma_status": Out(fields_layout(rb.d_registers, ("ro",))),
            "regs": In(fields_layout(sb.d_registers, ("rw",))),
            "s": In(fields_layout(sb.s_registers, ("rw",), ("S_POINTER", "S_STATUS"))),
            "op_en": In(1), "done": Out(1),
            "status": Out(fields_layout(sb.d_registers, ("ro",))),
            "rd_sdp": Out(DmaReadPort(geom)),
            "wr_sdp": Out(DmaWritePort(geom)),
            "pdp": Out(stream.Signature(out_layout(T))),
            "flying": In(stream.Signature(conv_out_layout(cfg))),
            "flying_go": In(1), "flying_abort": In(1), "flying_wait": Out(1),
            "flying_reject": Out(1),
            "pdp_go": Out(1), "pdp_abort": Out(1),
            "busy": Out(1),
        }
        for st in self._stages:
            members[_PORT[st]] = Out(DmaReadPort(geom))
        if cfg.sdp_lut:
            members.update({
                "lut_cfg_we": In(1), "lut_cfg_wdata": In(32), "lut_cfg_rdata": Out(32),
                "lut_data_we": In(1), "lut_data_wdata": In(32),
                "lut_data_re": In(1), "lut_data_rdata": Out(32),
            })
        super().__init__(members)

    # ------------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        cfg, geom, T = self._cfg, self._geom, self.lanes
        rb, sb = self._rmap["SDP_RDMA"], self._rmap["SDP"]
        R, S = self.rdma_regs, self.regs
        aw, ash = geom.addr_width, geom.atom_shift
        int16_ok = "int16" in cfg.data_types
        fp_ok = "fp16" in cfg.data_types

        def misaligned(v):
            return v[:ash].any() if ash else Const(0)

        def cv_bad(ram):
            return (ram == RAM_CV) if not cfg.sramif else Const(0)

        errs = []

        # -- cube and precision ----------------------------------------------------------
        fm, rfm = S.D_FEATURE_MODE_CFG, R.D_FEATURE_MODE_CFG
        flying = fm.FLYING_MODE
        to_pdp = fm.OUTPUT_DST
        # Whether SDP_RDMA takes part is decided when the layer's DMA starts and kept to its
        # end: a flying layer without RDMA must not take up an RDMA group enabled (for a
        # later layer) while it runs
        rdma_active = Signal()
        rdma_lock, rdma_kept = Signal(), Signal()
        m.d.comb += rdma_active.eq(Mux(rdma_lock, rdma_kept, ~flying | self.rdma_op_en))
        wm1 = S.D_DATA_CUBE_WIDTH.WIDTH
        hm1 = S.D_DATA_CUBE_HEIGHT.HEIGHT
        cm1 = S.D_DATA_CUBE_CHANNEL.CHANNEL
        one_by_one = Signal()
        m.d.comb += one_by_one.eq((wm1 == 0) & (hm1 == 0))
        proc = S.D_DATA_FORMAT.PROC_PRECISION
        out = S.D_DATA_FORMAT.OUT_PRECISION
        is16 = Signal()
        m.d.comb += is16.eq(proc == INT16) if int16_ok else is16.eq(0)
        prec_ok = (proc == INT8) | ((proc == INT16) if int16_ok else Const(0))
        if fp_ok:
            isfp = Signal()
            wide = Signal()                      # two-byte elements: int16 or fp16
            m.d.comb += [isfp.eq(proc == FP16), wide.eq(is16 | isfp)]
            prec_ok = prec_ok | isfp
        else:
            isfp, wide = Const(0), is16
        bat = cfg.batching
        batched = Signal()                       # batch mode (builds with batching)
        if bat:
            m.d.comb += batched.eq(fm.BATCH_NUMBER != 0)
            errs += [fm.BATCH_NUMBER >= cfg.max_batch, batched & ~flying,
                     batched & to_pdp,
                     batched & rdma_active & (rfm.BATCH_NUMBER != fm.BATCH_NUMBER),
                     batched & rdma_active & (rfm.OUT_PRECISION != out)]
        else:
            errs += [fm.BATCH_NUMBER != 0]
        # Winograd output (builds where the convolution runs it, hw.conv.common.conv_winograd;
        # the remaining rules with EQL below): flying, to memory, one batch. CACC delivers it
        # in the ordinary order, so it is written as any flying layer
        wino = conv_winograd(cfg)
        if wino:
            errs += [fm.WINOGRAD & ~flying, fm.WINOGRAD & to_pdp,
                     fm.WINOGRAD & (fm.BATCH_NUMBER != 0)]
        else:
            errs.append(fm.WINOGRAD)
        if not cfg.pdp:
            errs.append(to_pdp)
        if int16_ok:
            # precision conversions (data-format spec, Precision Conversion, Table 30)
            m16to8, m8to16, fp_cvt = self._conversions(m, proc, out, rfm, flying)
            errs += [rfm.IN_PRECISION == 3, rfm.PROC_PRECISION == 3, rfm.OUT_PRECISION == 3,
                     ~prec_ok, (out != proc) & ~m8to16 & ~fp_cvt,
                     rdma_active & (rfm.PROC_PRECISION != proc),
                     ~flying & (rfm.IN_PRECISION != proc) & ~m16to8]
            errs += self._conversion_errors(flying, m8to16)
        else:
            m16to8 = m8to16 = None
            errs += [rfm.IN_PRECISION == 3, rfm.PROC_PRECISION == 3, rfm.OUT_PRECISION == 3,
                     ~prec_ok, out != proc,
                     rdma_active & (rfm.PROC_PRECISION != proc),
                     ~flying & (rfm.IN_PRECISION != proc)]
        errs += [rdma_active & (rfm.FLYING_MODE != flying),
                 rdma_active & (rfm.WINOGRAD != fm.WINOGRAD),
                 rdma_active & (R.D_DATA_CUBE_WIDTH.WIDTH != wm1),
                 rdma_active & (R.D_DATA_CUBE_HEIGHT.HEIGHT != hm1),
                 rdma_active & (R.D_DATA_CUBE_CHANNEL.CHANNEL != cm1)]
        # surfaces - 1 (channels per atom: atom >> precision)
        sm1 = Signal(13)
        m.d.comb += sm1.eq(Mux(wide, cm1 >> max(ash - 1, 0), cm1 >> ash))

        # -- stages ------------------------------------------------------------------------
        has = {"bs": cfg.sdp_bs, "bn": cfg.sdp_bn, "ew": cfg.sdp_ew}
        ew_cfg = S.D_DP_EW_CFG
        ew_on = ~ew_cfg.EW_BYPASS
        eql = Signal()
        m.d.comb += eql.eq(ew_on & ~ew_cfg.EW_ALU_BYPASS & (ew_cfg.EW_ALU_ALGO == ALU_EQL))
        if wino:
            # Winograd output: a multiple of 4 wide and high, no precision conversion, no EQL
            errs += [fm.WINOGRAD & (wm1[:2] != 3), fm.WINOGRAD & (hm1[:2] != 3),
                     fm.WINOGRAD & (out != proc), fm.WINOGRAD & eql]
        if not cfg.sdp_ew:
            errs.append(ew_on)
        if not cfg.sdp_lut:
            errs.append(ew_on & ~ew_cfg.EW_LUT_BYPASS)
        op_cfg = {}
        cubes = []                               # (name, enabled, command)

        def cube(name, enabled, base, ram, packed, line_atoms_packed, line_atoms, ls, ss,
                 bs=None):
            c = Signal(cube_layout(geom), name=f"cube_{name}")
            m.d.comb += [c.base.eq(base), c.ram_type.eq(ram), c.batches.eq(0)]
            if bat and bs is not None:
                # batch mode: the operands repeat for every batch (stride 0), the output
                # batch b goes to DST + b x DST_BATCH_STRIDE
                m.d.comb += [c.batches.eq(fm.BATCH_NUMBER), c.batch_stride.eq(bs)]
            with m.If(packed):
                m.d.comb += [c.line_atoms.eq(line_atoms_packed), c.lines.eq(0),
                             c.surfaces.eq(0), c.line_stride.eq(0), c.surface_stride.eq(0)]
            with m.Else():
                m.d.comb += [c.line_atoms.eq(line_atoms), c.lines.eq(hm1),
                             c.surfaces.eq(sm1), c.line_stride.eq(ls), c.surface_stride.eq(ss)]
            cubes.append((name, enabled, c))
            return c

        for st in STAGES:
            P = st.upper()
            c = S[f"D_DP_{P}_CFG"]
            on = ~c[f"{P}_BYPASS"]
            if st != "ew":
                if not has[st]:
                    errs.append(on)
                errs.append(on & ~c[f"{P}_ALU_BYPASS"] & (c[f"{P}_ALU_ALGO"] == ALU_EQL))
            need_alu = Signal(name=f"{st}_need_alu")
            need_mul = Signal(name=f"{st}_need_mul")
            m.d.comb += [
                need_alu.eq(on & ~c[f"{P}_ALU_BYPASS"] & S[f"D_DP_{P}_ALU_CFG"][f"{P}_ALU_SRC"]),
                need_mul.eq(on & ~c[f"{P}_MUL_BYPASS"] & S[f"D_DP_{P}_MUL_CFG"][f"{P}_MUL_SRC"]),
            ]
            dname = _DMA_NAME[st]
            dc = R[f"D_{dname}_CFG"]
            en = Signal(name=f"{st}_dma_en")
            m.d.comb += en.eq(rdma_active & ~dc[f"{dname}_DISABLE"])
            use = dc[f"{dname}_DATA_USE"]
            expected = Mux(need_alu & need_mul, USE_BOTH, Mux(need_alu, USE_ALU, USE_MUL))
            per_el = dc[f"{dname}_DATA_MODE"]
            two = dc[f"{dname}_DATA_SIZE"]
            base, ls, ss = cube_address(R, rb, P, aw)
            errs += [~en & (need_alu | need_mul), en & ~(need_alu | need_mul),
                     en & (use == 3), en & (use != expected), en & ~two & (proc != INT8),
                     en & misaligned(base), en & per_el & (misaligned(ls) | misaligned(ss)),
                     en & cv_bad(dc[f"{dname}_RAM_TYPE"])]
            if st not in self._stages:
                continue
            oc = Signal(operand_cfg_layout(), name=f"{st}_opcfg")
            both = use == USE_BOTH
            m.d.comb += [oc.en.eq(en), oc.per_element.eq(per_el), oc.both.eq(both),
                         oc.two_byte.eq(two), oc.use.eq(use)]
            op_cfg[st] = oc
            ks = Signal(2, name=f"{st}_ks")       # log2(atoms per position)
            m.d.comb += ks.eq(both + two - (wide & two))
            packed = ~per_el | one_by_one
            cube(st, en, base, dc[f"{dname}_RAM_TYPE"], packed,
                 ((sm1 + 1) << ks) - 1, ((wm1 + 1) << ks) - 1, ls, ss, bs=0)

        # -- input and output surfaces -----------------------------------------------------
        src_base, src_ls, src_ss = cube_address(R, rb, "SRC", aw)
        src_ram = R.D_SRC_DMA_CFG.SRC_RAM_TYPE
        errs += [~flying & (cv_bad(src_ram) | misaligned(src_base) | misaligned(src_ls)
                            | misaligned(src_ss))]
        src_sm1 = self._twin_surfaces(m, sm1, m16to8, "src_sm1")
        cube_src = cube("src", ~flying, src_base, src_ram, one_by_one, src_sm1, wm1, src_ls,
                        src_ss)

        writes = Signal()
        m.d.comb += writes.eq(~to_pdp & ~eql)
        dst_base, dst_ls, dst_ss = cube_address(S, sb, "DST", aw)
        dst_ram = S.D_DST_DMA_CFG.DST_RAM_TYPE
        errs += [writes & (cv_bad(dst_ram) | misaligned(dst_base) | misaligned(dst_ls)
                           | misaligned(dst_ss))]
        line_bytes = Signal(13 + ash + 1)
        m.d.comb += line_bytes.eq((wm1 + 1) << ash)
        if bat:
            # a batched 1x1 cube follows the strides (only one batch is one run of atoms)
            dst_1x1 = Signal()
            m.d.comb += dst_1x1.eq(one_by_one & ~batched)
            dst_bs = dma_fields.byte_value(S, sb, "D_DST_BATCH_STRIDE", "DST_BATCH_STRIDE")
            errs += [batched & eql, writes & batched & misaligned(dst_bs)]
        else:
            dst_1x1, dst_bs = one_by_one, None
        errs.append(writes & ~dst_1x1 & (hm1 != 0) & (dst_ls < line_bytes))
        dst_sm1 = self._twin_surfaces(m, sm1, m8to16, "dst_sm1")
        cube_dst = cube("dst", writes, dst_base, dst_ram, dst_1x1, dst_sm1, wm1, dst_ls, dst_ss,
                        bs=dst_bs)

        # -- the check sequence: one multiplier, two products per cube -------------------------
        ew_ = aw + 18
        steps = []                               # (a, b, cube index)
        for i, (name, enabled, c) in enumerate(cubes):
            steps += [(c.surfaces, c.surface_stride, i, "s"), (c.lines, c.line_stride, i, "l")]
            if bat and name == "dst":
                steps.append((c.batches, c.batch_stride, i, "b"))
        step = Signal(range(len(steps) + 3))
        prod = Signal(13 + aw)
        sel_a = Signal(13)
        sel_b = Signal(aw)
        for i, (a, b, _, _) in enumerate(steps):
            with m.If(step == i):
                m.d.comb += [sel_a.eq(a), sel_b.eq(b)]
        # three registered steps: the selected fields, their product, the sum (the field
        # multiplexer, the multiplier and the wide add in one cycle were one of the whole
        # core's deepest paths); mul_step / acc_step: the step whose operands sel_*_r / whose
        # product prod_r hold (len(steps) and above: none)
        sel_a_r, sel_b_r = Signal.like(sel_a), Signal.like(sel_b)
        m.d.comb += prod.eq(sel_a_r * sel_b_r)
        prod_r = Signal.like(prod)
        mul_step = Signal(range(len(steps) + 3), init=len(steps))
        acc_step = Signal(range(len(steps) + 3), init=len(steps))
        m.d.sync += [sel_a_r.eq(sel_a), sel_b_r.eq(sel_b), prod_r.eq(prod),
                     mul_step.eq(len(steps)), acc_step.eq(mul_step)]
        ends = [Signal(ew_, name=f"end_{name}") for name, _, _ in cubes]
        dst_lines = Signal(13 + aw)              # (H - 1) x destination line stride
        if bat:
            dst_surfs = Signal(13 + aw)          # (S - 1) x destination surface stride
        for i, (_, _, ci, kind) in enumerate(steps):
            with m.If(acc_step == i):
                m.d.sync += ends[ci].eq(ends[ci] + prod_r)
                if cubes[ci][0] == "dst" and kind == "l":
                    m.d.sync += dst_lines.eq(prod_r)
                if bat and cubes[ci][0] == "dst" and kind == "s":
                    m.d.sync += dst_surfs.eq(prod_r)
        static_err = Signal()
        m.d.comb += static_err.eq(Cat(*errs).any())

        bad_range = []
        for (name, enabled, c), end in zip(cubes, ends):
            bad_range.append(enabled & (end > (1 << aw)))
        dst_surf_need = Signal(ew_)
        m.d.comb += dst_surf_need.eq(dst_lines + line_bytes)
        overlap = writes & ~dst_1x1 & (dst_sm1 != 0) & (dst_ss < dst_surf_need)
        if bat:
            # batches must not overlap: one batch's output spans (S-1) x surface stride +
            # (H-1) x line stride + W atoms
            overlap = overlap | (writes & batched & (dst_bs < dst_surfs + dst_surf_need))
        # the verdict registered (from the sums' cycle to DECIDE: a routed critical path of
        # the ECP5 board, through the overlap test's add and compare)
        invalid = Signal()
        m.d.sync += invalid.eq(static_err | Cat(*bad_range).any() | overlap)

        # -- datapath and data movers -------------------------------------------------------------
        m.submodules.datapath = dp = self._dp
        m.submodules.feeder = feeder = SdpFeeder(geom, T, self._stages, int16_ok or fp_ok,
                                                 convert=int16_ok)
        m.submodules.packer = packer = SdpAtomPacker(geom, T, int16_ok or fp_ok,
                                                     convert=int16_ok)
        if int16_ok:
            m.d.comb += [feeder.in16to8.eq(m16to8), packer.out8to16.eq(m8to16)]
        m.submodules.in_reader = in_reader = CubeReader(geom)
        m.submodules.in_ser = in_ser = AtomSerializer(geom)
        wiring.connect(m, flipped(self.rd_sdp), in_reader.dma)
        wiring.connect(m, in_reader.data, in_ser.i)
        if int16_ok:
            feat_last = Signal()                 # the input's last atom (see _twin_last)
            m.d.comb += [feeder.feat.valid.eq(in_ser.o.valid),
                         in_ser.o.ready.eq(feeder.feat.ready),
                         feeder.feat.payload.data.eq(in_ser.o.payload.data),
                         feeder.feat.payload.last_line.eq(in_ser.o.payload.last_line),
                         feeder.feat.payload.last.eq(feat_last)]
        else:
            wiring.connect(m, in_ser.o, feeder.feat)
        readers = {}
        for st in self._stages:
            rd = CubeReader(geom)
            ser = AtomSerializer(geom)
            m.submodules[f"{st}_reader"] = rd
            m.submodules[f"{st}_ser"] = ser
            wiring.connect(m, flipped(getattr(self, _PORT[st])), rd.dma)
            wiring.connect(m, rd.data, ser.i)
            wiring.connect(m, ser.o, getattr(feeder, f"op_{st}"))
            m.d.comb += getattr(feeder, f"cfg_{st}").eq(op_cfg[st])
            readers[st] = rd
        m.submodules.writer = writer = CubeWriter(geom)
        m.submodules.apack = apack = AtomPacker(geom)
        wiring.connect(m, flipped(self.wr_sdp), writer.dma)
        wiring.connect(m, packer.o, apack.i)
        # the writer's data ready follows the MCIF's write path combinationally: a skid buffer
        # ends it here instead of in the packers, the datapath and the feeder
        m.submodules.wr_skid = wr_skid = SkidBuffer(apack.o.payload.shape())
        wiring.connect(m, apack.o, wr_skid.i)
        wiring.connect(m, wr_skid.o, writer.data)
        m.d.comb += [feeder.int16.eq(wide), feeder.width_m1.eq(wm1), feeder.height_m1.eq(hm1),
                     feeder.flying.eq(flying),
                     packer.int16.eq(wide), packer.width_m1.eq(wm1),
                     packer.packed.eq(dst_1x1)]

        # feeder -> datapath (fields by name), datapath configuration
        dpi = dp.i.payload
        for name in dpi.shape().members:
            if name in feeder.o.payload.shape().members:
                m.d.comb += dpi[name].eq(feeder.o.payload[name])
        m.d.comb += [dp.i.valid.eq(feeder.o.valid), feeder.o.ready.eq(dp.i.ready)]
        m.d.comb += dp.regs.eq(S)
        if hasattr(dp, "s"):
            m.d.comb += dp.s.eq(self.s)

        # datapath -> PDP / packer / drop
        o = dp.o
        o_fire = Signal()
        m.d.comb += [self.pdp.payload.data.eq(o.payload.data),
                     self.pdp.payload.last.eq(o.payload.last),
                     packer.i.payload.data.eq(o.payload.data),
                     packer.i.payload.last.eq(o.payload.last)]

        # -- control -----------------------------------------------------------------------------
        running = Signal()
        start = Signal()
        m.d.comb += start.eq(self.op_en & (flying | self.rdma_op_en))
        cmd_pend = {name: Signal(name=f"pend_{name}") for name, _, _ in cubes}
        cmd_port = {"src": in_reader.cmd, "dst": writer.cmd,
                    **{st: readers[st].cmd for st in self._stages}}
        twin = {}                                # cube -> its twin-surface mode
        if int16_ok:
            twin["src"] = Signal(name="twin_src")
            twin["dst"] = Signal(name="twin_dst")
            m.d.comb += [twin["src"].eq(m16to8 & ~one_by_one),
                         twin["dst"].eq(m8to16 & ~dst_1x1)]
        for name, enabled, c in cubes:
            port = cmd_port[name]
            m.d.comb += port.valid.eq(cmd_pend[name])
            if name in twin:
                continue                         # (below, with the layer's issue)
            m.d.comb += port.payload.eq(c)
            with m.If(port.valid & port.ready):
                m.d.sync += cmd_pend[name].eq(0)
        clear = Signal()
        m.d.comb += [feeder.clear.eq(clear), packer.clear.eq(clear)]

        finish = Signal()
        m.d.comb += [self.done.eq(finish), self.rdma_done.eq(finish & rdma_active)]
        issue = Signal()                         # start the layer's DMA commands
        for name, enabled, c in cubes:
            if name in twin:
                port = cmd_port[name]
                fire = port.valid & port.ready
                seq, seq_last = self._twin_commands(m, name, c, issue, fire, sm1, hm1, wm1)
                m.d.comb += port.payload.eq(Mux(twin[name], seq, c))
                with m.If(fire & (~twin[name] | seq_last)):
                    m.d.sync += cmd_pend[name].eq(0)
        if int16_ok:
            m.d.comb += feat_last.eq(self._twin_last(m, in_ser.o, issue, twin["src"], sm1,
                                                     hm1))
        written = writer.done                    # the output's last write completed
        if "dst" in twin:
            # 8 -> 16 writes one cube per line pair: the layer's end is the last one's
            inflight = Signal(range(writer.queue + 3))
            dst_fire = writer.cmd.valid & writer.cmd.ready
            m.d.sync += inflight.eq(inflight + dst_fire - writer.done)
            with m.If(clear):
                m.d.sync += inflight.eq(0)
            written = writer.done & (~twin["dst"] | (~cmd_pend["dst"] & (inflight == 1)))
        with m.If(issue):
            for name, enabled, c in cubes:
                m.d.sync += cmd_pend[name].eq(enabled)
            m.d.sync += [rdma_lock.eq(1), rdma_kept.eq(rdma_active)]
        with m.If(finish):
            m.d.sync += rdma_lock.eq(0)
        abort_pend = Signal()                    # a flying_abort not yet taken
        abort_take = Signal()
        with m.If(abort_take):
            m.d.sync += abort_pend.eq(0)
        with m.Elif(self.flying_abort):
            m.d.sync += abort_pend.eq(1)
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                with m.If(start):
                    m.d.sync += [step.eq(0), dst_lines.eq(0)]
                    for end, (name, _, c) in zip(ends, cubes):
                        m.d.sync += end.eq(c.base + ((c.line_atoms + 1) << ash))
                    m.d.comb += clear.eq(1)
                    m.next = "CHECK"
            with m.State("CHECK"):
                # one cycle per product, three more for the last product, its sum and the
                # registered verdict
                m.d.sync += [step.eq(step + 1), mul_step.eq(step)]
                with m.If(step == len(steps) + 2):
                    m.next = "DECIDE"
            with m.State("DECIDE"):
                with m.If(invalid):
                    with m.If(flying):
                        m.d.comb += [abort_take.eq(1),
                                     self.flying_reject.eq(~abort_pend & ~self.flying_abort)]
                    m.d.comb += self.pdp_abort.eq(to_pdp)
                    m.next = "FINISH"
                with m.Elif(flying):                 # (the input cube is not enabled)
                    m.next = "FLY_WAIT"
                with m.Else():
                    m.d.comb += issue.eq(1)
                    m.next = "RUN"
            with m.State("FLY_WAIT"):
                m.d.comb += self.flying_wait.eq(~abort_pend)
                with m.If(abort_pend | self.flying_abort):
                    m.d.comb += [abort_take.eq(1), self.pdp_abort.eq(to_pdp)]
                    m.next = "FINISH"
                with m.Elif(self.flying_go | self.flying.valid):
                    m.d.comb += issue.eq(1)
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [running.eq(1), self.pdp_go.eq(to_pdp)]
                with m.If(writes):
                    with m.If(written):
                        m.next = "FINISH"
                with m.Elif(o_fire & o.payload.last):
                    m.next = "FINISH"
            with m.State("FINISH"):
                m.d.comb += finish.eq(1)
                m.next = "IDLE"
        m.d.comb += self.busy.eq(running)

        # flying input: taken only while a flying layer runs
        fly_on = Signal()
        m.d.comb += [
            fly_on.eq(running & flying),
            feeder.fly.payload.data.eq(self.flying.payload.data),
            feeder.fly.payload.last.eq(self.flying.payload.last),
            feeder.fly.valid.eq(self.flying.valid & fly_on),
            self.flying.ready.eq(feeder.fly.ready & fly_on),
        ]

        # output routing (only while running)
        with m.If(to_pdp):
            m.d.comb += [self.pdp.valid.eq(o.valid & running), o.ready.eq(self.pdp.ready & running)]
        with m.Elif(eql):
            m.d.comb += o.ready.eq(running)
        with m.Else():
            m.d.comb += [packer.i.valid.eq(o.valid & running),
                         o.ready.eq(packer.i.ready & running)]
        m.d.comb += o_fire.eq(o.valid & o.ready)

        # -- counters ------------------------------------------------------------------------
        fp_ran = None
        if fp_ok:
            # an fp16 layer that ran (a rejected one keeps its groups' NaN / Inf counters)
            fp_ran = Signal()
            with m.If(clear):
                m.d.sync += fp_ran.eq(0)
            with m.Elif(issue):
                # (with int16: fp16 output from an int16 pipeline counts its NaN outputs too)
                m.d.sync += fp_ran.eq((isfp | (out == FP16)) if int16_ok else isfp)
        self._counters(m, o, o_fire, clear, finish, running, readers, in_reader, writer,
                       fp_ran, dp)
        if cfg.sdp_lut:
            self._lut_access(m, dp)
        return m

    # ------------------------------------------------------------------------------------
    def _conversions(self, m, proc, out, rfm, flying):
        """The precision conversions a layer asks for (builds with int16; data-format spec,
        Precision Conversion, Table 30 and Equation 3): ``(16to8, 8to16, fp)``. 16 -> 8: an
        offline int16 input (SDP_RDMA ``IN_PRECISION = INT16``) processed as int8
        (``PROC_PRECISION = INT8``): the read DMA pairs int16 surfaces 2s and 2s+1 into int8
        surface s. 8 -> 16: int8 processing written as int16 (``OUT_PRECISION = INT16``):
        int8 surface s goes to int16 surfaces 2s and 2s+1. fp: int16 <-> fp16 in the output
        converter (builds with fp16 too), offline or flying."""
        m16to8, m8to16 = Signal(name="mode_16to8"), Signal(name="mode_8to16")
        m.d.comb += [m16to8.eq(~flying & (rfm.IN_PRECISION == INT16) & (proc == INT8)),
                     m8to16.eq((proc == INT8) & (out == INT16))]
        if "fp16" in self._cfg.data_types:
            fp_cvt = Signal(name="mode_fp_convert")
            m.d.comb += fp_cvt.eq(((proc == INT16) & (out == FP16))
                                  | ((proc == FP16) & (out == INT16)))
        else:
            fp_cvt = Const(0)
        return m16to8, m8to16, fp_cvt

    @staticmethod
    def _conversion_errors(flying, m8to16):
        """Conversion rules beyond the precisions (the golden model's): 8 -> 16 only offline
        (a flying layer converts only between precisions of the same bit depth)."""
        return [flying & m8to16]

    @staticmethod
    def _twin_surfaces(m, sm1, mode, name):
        """Surfaces - 1 of a cube in memory: ``sm1``, or with a twin-surface conversion
        (``mode``: 16 -> 8 input, 8 -> 16 output) the two int16 surfaces of every int8 one."""
        if mode is None:
            return sm1
        v = Signal(14, name=name)
        m.d.comb += v.eq(Mux(mode, (sm1 << 1) | 1, sm1))
        return v

    def _twin_commands(self, m, name, c, load, fire, sm1, hm1, wm1):
        """The cube commands of a twin-surface conversion (not 1x1): for each int8 surface s
        and line h, one cube of W one-atom lines pairs: position w's atom in int16 surface 2s
        then in 2s+1 (``lines = 1`` with the surface stride as line stride, ``surfaces = W -
        1`` one atom apart). ``c`` is the whole cube (base, strides, RAM type); ``load``
        starts the sequence, ``fire`` takes one command. Returns (command, last)."""
        geom = self._geom
        aw = geom.addr_width
        s_left, h_left = Signal(13, name=f"{name}_tw_s"), Signal(13, name=f"{name}_tw_h")
        surf, line = Signal(aw, name=f"{name}_tw_surf"), Signal(aw, name=f"{name}_tw_line")
        cmd = Signal(cube_layout(geom), name=f"{name}_tw_cmd")
        m.d.comb += [cmd.base.eq(line), cmd.ram_type.eq(c.ram_type), cmd.line_atoms.eq(0),
                     cmd.lines.eq(1), cmd.line_stride.eq(c.surface_stride),
                     cmd.surfaces.eq(wm1), cmd.surface_stride.eq(1 << geom.atom_shift),
                     cmd.batches.eq(0)]
        last = Signal(name=f"{name}_tw_last")
        m.d.comb += last.eq((s_left == 0) & (h_left == 0))
        with m.If(load):
            m.d.sync += [s_left.eq(sm1), h_left.eq(hm1), surf.eq(c.base), line.eq(c.base)]
        with m.Elif(fire):
            with m.If(h_left != 0):
                m.d.sync += [h_left.eq(h_left - 1), line.eq(line + c.line_stride)]
            with m.Else():
                nxt = (surf + (c.surface_stride << 1))[:aw]
                m.d.sync += [s_left.eq(s_left - 1), h_left.eq(hm1), surf.eq(nxt),
                             line.eq(nxt)]
        return cmd, last

    @staticmethod
    def _twin_last(m, atoms, load, on, sm1, hm1):
        """The input cube's last atom when 16 -> 8 reads it as one cube per (int8 surface,
        line) (:meth:`_twin_commands`): every one of those ends with ``last``, only the final
        one's counts (the layer's last transfer ends a PDP or EQL layer)."""
        s_left, h_left = Signal(13, name="src_tw_last_s"), Signal(13, name="src_tw_last_h")
        fire_last = atoms.valid & atoms.ready & atoms.payload.last
        with m.If(load):
            m.d.sync += [s_left.eq(sm1), h_left.eq(hm1)]
        with m.Elif(fire_last & on):
            with m.If(h_left != 0):
                m.d.sync += h_left.eq(h_left - 1)
            with m.Else():
                m.d.sync += [s_left.eq(s_left - 1), h_left.eq(hm1)]
        return atoms.payload.last & (~on | ((s_left == 0) & (h_left == 0)))

    # ------------------------------------------------------------------------------------
    def _counters(self, m, o, o_fire, clear, finish, running, readers, in_reader, writer,
                  isfp=None, dp=None):
        S, R = self.regs, self.rdma_regs
        pe, rpe = S.D_PERF_ENABLE, R.D_PERF_ENABLE

        def counter(name, inc, when):
            c = Signal(32, name=name)
            nxt = Signal(33, name=f"{name}_next")
            m.d.comb += nxt.eq(c + inc)
            with m.If(clear):
                m.d.sync += c.eq(0)
            with m.Elif(when):
                m.d.sync += c.eq(Mux(nxt[32], _COUNTER_MAX, nxt[:32]))
            return c

        live_s, live_r = {}, {}
        unequal = Signal()
        with m.If(clear):
            m.d.sync += unequal.eq(0)
        with m.Elif(o_fire & o.payload.unequal):
            m.d.sync += unequal.eq(1)
        live_s[("D_STATUS", "STATUS_UNEQUAL")] = (unequal, None)
        live_s[("D_PERF_OUT_SATURATION", "OUT_SATURATION")] = (
            counter("out_sat", o.payload.sat, o_fire), pe.PERF_SAT_EN)
        if self._cfg.sdp_lut:
            for reg, fld, port in (("D_PERF_LUT_UFLOW", "LUT_UFLOW", "lut_uflow"),
                                   ("D_PERF_LUT_OFLOW", "LUT_OFLOW", "lut_oflow"),
                                   ("D_PERF_LUT_HYBRID", "LUT_HYBRID", "lut_hybrid"),
                                   ("D_PERF_LUT_LE_HIT", "LUT_LE_HIT", "lut_le_hit"),
                                   ("D_PERF_LUT_LO_HIT", "LUT_LO_HIT", "lut_lo_hit")):
                live_s[(reg, fld)] = (counter(port, o.payload[port], o_fire), pe.PERF_LUT_EN)
        else:
            # no LUT: PERF_LUT_EN reports zeros (the golden model's counts without a LUT pass)
            for reg, fld in (("D_PERF_LUT_UFLOW", "LUT_UFLOW"), ("D_PERF_LUT_OFLOW", "LUT_OFLOW"),
                             ("D_PERF_LUT_HYBRID", "LUT_HYBRID"),
                             ("D_PERF_LUT_LE_HIT", "LUT_LE_HIT"),
                             ("D_PERF_LUT_LO_HIT", "LUT_LO_HIT")):
                live_s[(reg, fld)] = (Const(0, 32), pe.PERF_LUT_EN)
        live_s[("D_PERF_WDMA_WRITE_STALL", "WDMA_STALL")] = (
            counter("wdma_stall", 1, running & writer.stall), pe.PERF_DMA_EN)
        live_r[("D_PERF_MRDMA_READ_STALL", "MRDMA_STALL")] = (
            counter("mrdma_stall", 1, running & in_reader.stall), rpe.PERF_DMA_EN)
        for st, reg, fld in (("bs", "D_PERF_BRDMA_READ_STALL", "BRDMA_STALL"),
                             ("bn", "D_PERF_NRDMA_READ_STALL", "NRDMA_STALL"),
                             ("ew", "D_PERF_ERDMA_READ_STALL", "ERDMA_STALL")):
            if st in readers:
                live_r[(reg, fld)] = (counter(f"{st}_stall", 1, running & readers[st].stall),
                                      rpe.PERF_DMA_EN)
            else:
                live_r[(reg, fld)] = (Const(0, 32), rpe.PERF_DMA_EN)

        if isfp is not None:
            # fp16 layers: SDP's input counters are 0, its NaN output count is not gated;
            # SDP_RDMA counts the fp16 NaN / infinity codes of the input it reads when its
            # PERF_NAN_INF_COUNT_EN is on and IN_PRECISION is FP16
            i_fire = Signal()
            m.d.comb += i_fire.eq(dp.i.valid & dp.i.ready)
            nan_in, inf_in = [], []
            for lane in range(self.lanes):
                h = dp.i.payload.data[lane][:16]
                top = h[10:15] == 0x1F
                nan_in.append(top & h[:10].any())
                inf_in.append(top & ~h[:10].any())

            def popcount(flags):
                total = Const(0, 1)
                for f in flags:
                    total = total + f
                return total

            live_s[("D_STATUS_NAN_INPUT_NUM", "STATUS_NAN_INPUT_NUM")] = (Const(0, 32), isfp)
            live_s[("D_STATUS_INF_INPUT_NUM", "STATUS_INF_INPUT_NUM")] = (Const(0, 32), isfp)
            live_s[("D_STATUS_NAN_OUTPUT_NUM", "STATUS_NAN_OUTPUT_NUM")] = (
                counter("nan_out", o.payload.nan_out, o_fire), isfp)
            r_en = Signal()
            m.d.comb += r_en.eq(isfp & rpe.PERF_NAN_INF_COUNT_EN
                                & (R.D_FEATURE_MODE_CFG.IN_PRECISION == FP16))
            live_r[("D_STATUS_NAN_INPUT_NUM", "STATUS_NAN_INPUT_NUM")] = (
                counter("rdma_nan_in", popcount(nan_in), i_fire), r_en)
            live_r[("D_STATUS_INF_INPUT_NUM", "STATUS_INF_INPUT_NUM")] = (
                counter("rdma_inf_in", popcount(inf_in), i_fire), r_en)

        # Both register groups' current values, to report an unchanged counter.
        for port, live, done in ((self.status, live_s, finish),
                                 (self.rdma_status, live_r, finish & self.rdma_done)):
            layout = port.shape()
            grp = Signal(name=f"{'sdp' if port is self.status else 'rdma'}_group")
            banks = [Signal(layout, name=f"{'sdp' if port is self.status else 'rdma'}_bank{g}")
                     for g in range(2)]
            held = Signal(layout)
            m.d.comb += held.eq(Mux(grp, banks[1], banks[0]))
            for reg, reg_layout in layout:
                for fld, _ in reg_layout.shape:
                    if (reg, fld) not in live:
                        continue                         # NaN / Inf: stay 0
                    value, enable = live[(reg, fld)]
                    if enable is None:
                        m.d.comb += port[reg][fld].eq(value)
                    else:
                        m.d.comb += port[reg][fld].eq(Mux(enable, value, held[reg][fld]))
            with m.If(done):
                m.d.sync += grp.eq(~grp)
                for g in range(2):
                    with m.If(grp == g):
                        m.d.sync += banks[g].eq(port)

    # ------------------------------------------------------------------------------------
    def _lut_access(self, m, dp):
        lut_access(m, self, dp)


def lut_access(m, unit, dp):
    """The S_LUT_ACCESS_CFG / _DATA pointer (sim/sdp/lut.py) of a unit with a LUT (SDP, CDP):
    ``unit``'s ``lut_cfg_*`` / ``lut_data_*`` CSB ports drive ``dp``'s LUT RAM port
    (:func:`hw.sdp.datapath.lut_ram`)."""
    addr = Signal(10)
    table = Signal()
    write = Signal()
    m.d.comb += unit.lut_cfg_rdata.eq(Cat(addr, Const(0, 6), table, write))
    in_range = Mux(table, addr < 257, addr < 65)
    # the pointer after this cycle: the RAM's synchronous read port gets it now, so its data
    # is the current pointer's entry in every cycle (as a combinational read would be; a
    # write goes to the current pointer, which then moves on, so no read sees a stale word)
    addr_n, table_n = Signal(10), Signal()
    m.d.comb += [addr_n.eq(addr), table_n.eq(table)]
    with m.If(unit.lut_cfg_we):
        m.d.comb += [addr_n.eq(unit.lut_cfg_wdata[:10]), table_n.eq(unit.lut_cfg_wdata[16])]
        m.d.sync += write.eq(unit.lut_cfg_wdata[17])
    with m.Elif(unit.lut_data_we | unit.lut_data_re):
        m.d.comb += addr_n.eq(addr + 1)
    m.d.sync += [addr.eq(addr_n), table.eq(table_n)]
    m.d.comb += [dp.lut_table.eq(table), dp.lut_addr.eq(addr),
                 dp.lut_rd_table.eq(table_n), dp.lut_rd_addr.eq(addr_n),
                 dp.lut_wdata.eq(unit.lut_data_wdata[:16]),
                 dp.lut_we.eq(unit.lut_data_we & write & in_range),
                 unit.lut_data_rdata.eq(Mux(in_range, dp.lut_rdata, 0))]
    if hasattr(dp, "lut_re"):
        m.d.comb += dp.lut_re.eq(unit.lut_data_re)
