"""PdpCheck: the layer-start check of a PDP (+ PDP_RDMA) register program.

A program that fails any rule finishes at once: ``done`` (and ``rdma_done`` when PDP_RDMA
takes part) without any DMA and without writing anything, so a bad program never hangs the
unit. ``start`` (pulse) samples the rules; ``done`` pulses :data:`CHECK_CYCLES` cycles later
with ``ok``.

Rules (any one fails the program)
    * precision: PDP ``INPUT_DATA`` must be INT8, or INT16 / FP16 on builds whose
      ``data_types`` include int16 / fp16; PDP_RDMA's (when it takes part) must equal it. The
      reserved code 3 fails;
    * ``POOLING_METHOD`` 3;
    * padding not smaller than the kernel (``PAD_LEFT`` / ``PAD_RIGHT`` >= kernel width,
      ``PAD_TOP`` / ``PAD_BOTTOM`` >= kernel height): a window of padding only;
    * the kernel larger than the padded input (width and height);
    * output size: an output line / position whose window starts past the input, or ends past
      the padded input (``(out - 1) x stride + kernel > pad + in + pad``), for the height and
      for each width part (the whole width, or the first, middle and last split);
    * split width (``SPLIT_NUM > 0``): the input parts (first + middle x (n - 2) + last) not
      adding up to ``CUBE_IN_WIDTH``, the output parts not adding up to ``CUBE_OUT_WIDTH``, a
      middle / last part's input width (``PARTIAL_WIDTH_IN + kernel - stride``) below 1;
      split width in flying mode;
    * a width part's output wider than the line buffer allows for the kernel height and
      vertical stride (:func:`arch.pdp.max_pass_width`, shared with the golden model);
    * ``CUBE_OUT_CHANNEL != CUBE_IN_CHANNEL``;
    * PDP_RDMA (offline) disagreeing with PDP on the input cube, ``SPLIT_NUM``, and with split
      width on ``PARTIAL_WIDTH_IN`` and the kernel width / stride; PDP_RDMA ``FLYING_MODE``
      not OFF while PDP runs offline;
    * memory: source (offline) / destination base, line or surface stride not atom-aligned;
      RAM type CV on a build without SRAMIF.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal

from arch.pdp import max_pass_width
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..mem.dma import RAM_CV
from ..mem.dma_fields import byte_value
from ..regfile import fields_layout

__all__ = ["PdpCheck", "CHECK_CYCLES", "INT8", "INT16", "FP16"]

CHECK_CYCLES = 3
INT8, INT16, FP16 = 0, 1, 2


class PdpCheck(wiring.Component):
    """``PdpCheck(cfg, rmap, line_atoms)``: the program check (see the module docstring).

    Members: ``regs`` / ``rdma_regs`` (in, the groups' rw fields), ``rdma_active`` (in:
    PDP_RDMA takes part), ``start`` (in), ``done`` / ``ok`` (out).
    """

    def __init__(self, cfg, rmap, line_atoms):
        self._cfg, self._lb = cfg, line_atoms
        self._pb, self._rb = pb, rb = rmap["PDP"], rmap["PDP_RDMA"]
        self._ash = (cfg.memory_atom).bit_length() - 1
        super().__init__({
            "regs": In(fields_layout(pb.d_registers, ("rw",))),
            "rdma_regs": In(fields_layout(rb.d_registers, ("rw",))),
            "rdma_active": In(1),
            "start": In(1), "done": Out(1), "ok": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, ash = self._cfg, self._ash
        P, R = self.regs, self.rdma_regs
        mode, kc, pc = P.D_OPERATION_MODE_CFG, P.D_POOLING_KERNEL_CFG, P.D_POOLING_PADDING_CFG
        flying = ~mode.FLYING_MODE
        offline = mode.FLYING_MODE
        kw, kh = kc.KERNEL_WIDTH + 1, kc.KERNEL_HEIGHT + 1
        sw, sh = kc.KERNEL_STRIDE_WIDTH + 1, kc.KERNEL_STRIDE_HEIGHT + 1
        pl, pr, pt, pbot = pc.PAD_LEFT, pc.PAD_RIGHT, pc.PAD_TOP, pc.PAD_BOTTOM
        W = P.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH + 1
        H = P.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT + 1
        Wo = P.D_DATA_CUBE_OUT_WIDTH.CUBE_OUT_WIDTH + 1
        Ho = P.D_DATA_CUBE_OUT_HEIGHT.CUBE_OUT_HEIGHT + 1
        # line buffer: widest pass for this kernel height / vertical stride
        lb = Signal(range(self._lb + 1))
        table = Array(Const(min(max_pass_width(cfg, k + 1, s + 1), self._lb),
                            range(self._lb + 1))
                      for s in range(16) for k in range(8))
        m.d.comb += lb.eq(table[Cat(kc.KERNEL_HEIGHT[:3], kc.KERNEL_STRIDE_HEIGHT[:4])])
        split = mode.SPLIT_NUM
        n = split + 1
        errs = []

        def bad_axis(win, wout, p0, p1, k, st, exact=False):
            """Window placement rules of one axis part (see the module docstring); ``exact``:
            also one more window fitting (the output size must be the window count)."""
            last_start = Signal(24)
            m.d.sync += last_start.eq((wout - 1) * st)
            errs = [k > p0 + win + p1, last_start > p0 + win - 1,
                    last_start + k > p0 + win + p1]
            if exact:
                errs.append(last_start + st + k <= p0 + win + p1)
            return errs

        # precision, method, padding
        prec = P.D_DATA_FORMAT.INPUT_DATA
        has16 = "int16" in cfg.data_types
        hasfp = "fp16" in cfg.data_types
        if hasfp:
            ok_prec = (prec == INT8) | (prec == FP16)
            if has16:
                ok_prec |= prec == INT16
            errs += [~ok_prec, self.rdma_active & (R.D_DATA_FORMAT.INPUT_DATA != prec)]
        elif has16:
            errs += [(prec != INT8) & (prec != INT16),
                     self.rdma_active & (R.D_DATA_FORMAT.INPUT_DATA != prec)]
        else:
            errs += [prec != INT8, self.rdma_active & (R.D_DATA_FORMAT.INPUT_DATA != INT8)]
        errs += [
                 mode.POOLING_METHOD == 3,
                 kc.KERNEL_WIDTH > 7, kc.KERNEL_HEIGHT > 7,
                 pl >= kw, pt >= kh,
                 P.D_DATA_CUBE_OUT_CHANNEL.CUBE_OUT_CHANNEL !=
                 P.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL]
        errs += bad_axis(H, Ho, pt, pbot, kh, sh, exact=True)

        # width parts
        pw_in, pw_out = P.D_PARTIAL_WIDTH_IN, P.D_PARTIAL_WIDTH_OUT
        overlap = Signal(range(-16, 9))
        m.d.comb += overlap.eq(kw - sw)
        f_in, m_in, l_in = (pw_in.PARTIAL_WIDTH_IN_FIRST + 1, pw_in.PARTIAL_WIDTH_IN_MID + 1,
                            pw_in.PARTIAL_WIDTH_IN_LAST + 1)
        f_out, m_out, l_out = (pw_out.PARTIAL_WIDTH_OUT_FIRST + 1,
                               pw_out.PARTIAL_WIDTH_OUT_MID + 1,
                               pw_out.PARTIAL_WIDTH_OUT_LAST + 1)
        mid_in = Signal(range(-16, 1040))
        last_in = Signal(range(-16, 1040))
        m.d.comb += [mid_in.eq(m_in + overlap), last_in.eq(l_in + overlap)]
        whole = split == 0
        errs += bad_axis(W, Wo, pl, pr, kw, sw, exact=True)
        errs.append(whole & (Wo > lb))
        sp = ~whole
        errs += [sp & x for x in bad_axis(f_in, f_out, pl, 0, kw, sw)]
        # split rules: the first part ends where its last window ends, holds the overlap
        # re-read by the next part; a middle part is whole strides; exact window counts
        f_end, m_span = Signal(24), Signal(24)
        m.d.sync += [f_end.eq((f_out - 1) * sw + kw), m_span.eq(m_out * sw)]
        errs += [sp & (f_end != f_in + pl), sp & (f_in < overlap),
                 sp & (split > 1) & (m_span != m_in)]
        errs += [sp & x for x in bad_axis(last_in, l_out, 0, pr, kw, sw, exact=True)]
        errs += [sp & (split > 1) & (mid_in < 1)] + \
            [sp & (split > 1) & x for x in bad_axis(mid_in, m_out, 0, 0, kw, sw)]
        errs += [sp & (last_in < 1)]
        errs += [sp & (f_out > lb), sp & (split > 1) & (m_out > lb), sp & (l_out > lb)]
        sum_in, sum_out = Signal(24), Signal(24)
        m.d.sync += [sum_in.eq(f_in + (n - 2) * m_in + l_in),
                     sum_out.eq(f_out + (n - 2) * m_out + l_out)]
        errs += [sp & (sum_in != W), sp & (sum_out != Wo), sp & flying]

        # PDP_RDMA agreement
        ra = self.rdma_active
        rk = R.D_POOLING_KERNEL_CFG
        errs += [ra & (R.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH != P.D_DATA_CUBE_IN_WIDTH.CUBE_IN_WIDTH),
                 ra & (R.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT !=
                       P.D_DATA_CUBE_IN_HEIGHT.CUBE_IN_HEIGHT),
                 ra & (R.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL !=
                       P.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL),
                 ra & (R.D_OPERATION_MODE_CFG.SPLIT_NUM != split),
                 ra & sp & (R.D_PARTIAL_WIDTH_IN.PARTIAL_WIDTH_IN_FIRST !=
                            pw_in.PARTIAL_WIDTH_IN_FIRST),
                 ra & sp & (R.D_PARTIAL_WIDTH_IN.PARTIAL_WIDTH_IN_LAST !=
                            pw_in.PARTIAL_WIDTH_IN_LAST),
                 ra & sp & (split > 1) & (R.D_PARTIAL_WIDTH_IN.PARTIAL_WIDTH_IN_MID !=
                                          pw_in.PARTIAL_WIDTH_IN_MID),
                 ra & (rk.KERNEL_WIDTH != kc.KERNEL_WIDTH),
                 ra & (rk.KERNEL_STRIDE_WIDTH != kc.KERNEL_STRIDE_WIDTH),
                 offline & ~R.D_FLYING_MODE.FLYING_MODE]

        # memory
        def misaligned(v):
            return v[:ash].any() if ash else Const(0)

        def cv_bad(ram):
            return (ram == RAM_CV) if not cfg.sramif else Const(0)

        pb, rb = self._pb, self._rb
        src = [byte_value(R, rb, f"D_SRC_{r}", f"SRC_{r}")
               for r in ("BASE_ADDR_LOW", "LINE_STRIDE", "SURFACE_STRIDE")]
        dst = [byte_value(P, pb, f"D_DST_{r}", f"DST_{r}")
               for r in ("BASE_ADDR_LOW", "LINE_STRIDE", "SURFACE_STRIDE")]
        # output lines / surfaces must not overlap
        atom = cfg.memory_atom
        surfaces = Signal(16)
        cm1 = P.D_DATA_CUBE_IN_CHANNEL.CUBE_IN_CHANNEL
        if hasfp:       # an atom holds atom (int8) or atom / 2 (int16, fp16) channels
            m.d.comb += surfaces.eq(Mux((prec == INT16) | (prec == FP16), cm1 >> (ash - 1),
                                        cm1 >> ash) + 1)
        elif has16:     # an atom holds atom (int8) or atom / 2 (int16) channels
            m.d.comb += surfaces.eq(Mux(prec == INT16, cm1 >> (ash - 1), cm1 >> ash) + 1)
        else:
            m.d.comb += surfaces.eq((cm1 >> ash) + 1)
        line_bytes, surf_need = Signal(32), Signal(48)
        m.d.comb += line_bytes.eq(Wo * atom)
        m.d.sync += surf_need.eq((Ho - 1) * dst[1] + line_bytes)
        errs += [(Ho > 1) & (dst[1] < line_bytes),
                 (surfaces > 1) & (dst[2] < surf_need)]
        errs += [offline & (Cat(*[misaligned(v) for v in src]).any() |
                            cv_bad(R.D_SRC_RAM_CFG.SRC_RAM_TYPE)),
                 Cat(*[misaligned(v) for v in dst]).any() | cv_bad(P.D_DST_RAM_CFG.DST_RAM_TYPE)]

        # the products (window starts, part spans and sums, the surface's extent) are
        # registered a cycle before the rules that compare them (a product and its
        # comparisons in one cycle were one of the whole core's deepest paths), then the
        # rules, then the verdict: CHECK_CYCLES
        err_bits = Signal(len(errs))
        m.d.sync += err_bits.eq(Cat(*errs))
        busy = Signal(CHECK_CYCLES - 1)
        m.d.sync += [busy.eq(Cat(self.start, busy[:-1])), self.done.eq(busy[-1]),
                     self.ok.eq(~err_bits.any())]
        return m
