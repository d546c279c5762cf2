"""PDP pooling core: max / min / average over kernel windows of 1..8 x 1..8 with strides
1..16 and padding on all four sides (spec: PDP; NVDLA's C model defines the arithmetic).

The core pools one *job* at a time: a sub-cube of ``W`` x ``H`` positions x ``S`` surfaces
(one split of the layer's width, or the whole width) into ``Wout`` x ``Hout`` x ``S``. Its
input is the sub-cube in memory order -- surface by surface, line by line, position by
position, an atom's channels as ``G = atom / T`` transfers of ``T`` lanes -- and its output
the pooled cube in the same order (``last_line`` on an output line's last transfer, ``last``
on the job's last).

Arithmetic (``B`` = 8 for int8, 16 for int16; sums in 16 bits wrapping like NVDLA's line
buffer -- on builds with int16, 22 = B + 6 bits in the horizontal ring and in the line
buffer):

* max / min take the extreme of the window's real elements; padding is not used;
* average sums the real elements; a window row with ``p`` padded columns adds
  ``PAD_VALUE_px`` once, a window with ``q`` padded rows adds ``PAD_VALUE_qx x kernel_width``
  (as NVDLA's RTL: a row adds the pad value's low B + 3 bits (11 / 19) and keeps its sum in
  11 bits for int8, 22 for int16 (cal1d's 16-bit lanes are 22 bits wide), the padded rows add
  all 19 bits x kernel width); the sum is multiplied by
  ``RECIP_KERNEL_WIDTH / 2^16``, rounded half away from zero, then by
  ``RECIP_KERNEL_HEIGHT / 2^16``, rounded the same way; as in NVDLA's RTL (cal2d) the sum
  enters as B + 6 bits (14 / 22), the width step keeps B + 3 bits and the height step B,
  where a non-negative result keeps only its low B + 2 / B - 1 bits plus the rounding carry
  (a positive average wraps modulo 2^(bits - 1); NVDLA's C model differs here).

Precision (``PdpPool(..., int16=True)``, builds whose ``data_types`` include int16): the
layer's ``cfg.int16`` selects the widths above and the transfers per atom (``G`` for int8,
``G / 2`` for int16: an atom holds half as many 2-byte elements); one build runs int8 and
int16 layers. On int8-only builds none of this exists (16-bit sums, no ``int16`` field).

fp16 (``PdpPool(..., fp16=True)``, builds whose ``data_types`` include fp16; the layer's
``cfg.fp16``; ``G / 2`` transfers per atom; lanes carry the raw fp16 codes), as the golden
model (:func:`sim.pdp.pdp.pool_fp16`) and NVDLA's RTL compute it, with the units of
:mod:`hw.nvfloat`:

* max / min on the codes ordered by sign and magnitude; a NaN wins, along a line the running
  result's (it is the comparison's first operand), down the lines the new line's;
* average in fp17: the input converted (``Fp16ToFp17``) as it enters the horizontal ring; a
  window row is ``((x0 + x1) + x2) + ...`` then ``+ PAD_VALUE_<nh>X`` (low 17 bits, +0 when
  no column is padded); down the lines ``row + (running sum)``, then ``+ PAD_VALUE_<nv>X x
  kernel_width`` (an fp17 product), ``x RECIP_KERNEL_WIDTH``, ``x RECIP_KERNEL_HEIGHT`` (low
  17 bits, fp17) and the conversion to fp16. The sums are kept as 17-bit codes in the ring and
  the line buffer (at least 17 bits wide on such builds).

The fp17 adders are combinational and replicated per open window like the integer adders
(``8 x T`` in the ring update, ``8 x T`` in the line buffer update, ``2 x T`` for the pad
additions), plus ``2 x T + 1`` multipliers: on ECP5 the core takes 30.8k LUT4 on nv_small_fp16
against 6.2k on nv_small (``nvdla synth --unit pdp_pool``; fine for simulation, large for an
FPGA).

Structure: a horizontal stage keeps the windows of the current line open in a ring of 16
slots (each a small LUT RAM of ``G`` entries of ``T`` lanes, read asynchronously at the
input's and at the flush's channel group), two halves of 8 that alternate line by line:
every input transfer updates all open windows at once (at most 8, one update per slot of
the line's half) and closes the oldest when it reaches the window's last column. Windows
that end in the right padding close together at the line's end; a flush process sends them
on one per cycle while the next line's input already runs (the ring keeps both lines'
windows; a new window whose slot is still being flushed waits). The row results go to the
vertical stage: a line buffer (:class:`amaranth.lib.memory.Memory`, one entry per output
position and channel group, 8 output-line slots wide) where every row result updates the
open output lines of its column in one read-modify-write, and the oldest line is emitted
when its window's last row arrives. Output lines ending in the bottom padding are read out
after the surface's last input line through a second read port, while the next surface's
input runs. A final two-stage pipeline applies the reciprocal multiplies. Throughput: one
input transfer per cycle (``T`` elements); the vertical stage takes one row result per
cycle, so a line with more windows than positions (stride 1 with right padding) takes
``Wout`` rather than ``W`` cycles per channel group.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..nvfloat import fp16_to_fp17, fp17_add, fp17_mul, fp17_to_fp16

__all__ = ["PdpPool", "job_layout", "lanes_layout", "pool_out_layout", "pool_cfg_layout",
           "METHOD_AVE", "METHOD_MAX", "METHOD_MIN", "SLOTS", "pad_value"]

METHOD_AVE, METHOD_MAX, METHOD_MIN = 0, 1, 2
SLOTS = 8                                   # open windows per direction (kernel <= 8)
H_SLOTS = 16                                # horizontal ring: a line's windows + the previous
                                            # line's windows still flushing
ACC = 16                                    # int8 sums: 16 bits, wrapping
ACC16 = 22                                  # builds with int16: B + 6 bits, wrapping
ROW_BITS = 11                               # a window row's sum: B + 3 bits, wrapping
ROW_BITS16 = 19                             # int16: the pad value a row adds (B + 3 bits)
ROW_SUM16 = 22                              # int16: a window row's sum, B + 6 bits, wrapping
FP17 = 17                                   # builds with fp16: sums are fp17 codes
#: fp17 codes of the kernel widths 1..8 (the vertical padding's PAD_VALUE x kernel_width)
_KW_FP17 = [(e << 10) | m for e, m in ((31, 0), (32, 0), (32, 0x200), (33, 0), (33, 0x100),
                                       (33, 0x200), (33, 0x300), (34, 0))]


def lanes_layout(lanes):
    """One input transfer: ``T`` signed values."""
    return data.StructLayout({"data": data.ArrayLayout(signed(16), lanes)})


def pool_out_layout(lanes):
    return data.StructLayout({"data": data.ArrayLayout(signed(16), lanes),
                              "last_line": 1, "last": 1})


def job_layout():
    """One job: input width, output width (minus one) and its left / right padding."""
    return data.StructLayout({"win_m1": 13, "wout_m1": 13, "pad_left": 3, "pad_right": 3})


def pool_cfg_layout(int16=False, fp16=False):
    """The layer's pooling parameters (static while the layer runs); ``int16`` / ``fp16``
    (builds with int16 / fp16) add the layer's precision flags."""
    fields = {
        "method": 2, "kw_m1": 3, "kh_m1": 3, "sw_m1": 4, "sh_m1": 4,
        "pad_top": 3, "pad_bottom": 3, "h_m1": 13, "hout_m1": 13, "s_m1": 13,
        "pad_values": data.ArrayLayout(19, 7), "recip_w": 17, "recip_h": 17,
    }
    if int16:
        fields["int16"] = 1
    if fp16:
        fields["fp16"] = 1
    return data.StructLayout(fields)


def pad_value(m, values, count, bits, acc=ACC):
    """``PAD_VALUE_{count}X`` as its low ``bits`` sign-extended to ``acc`` bits, 0 when
    ``count`` is 0 (NVDLA's cal1d adds the low B + 3 bits to a line sum, cal2d multiplies
    all 19 by the kernel width)."""
    out = Signal(signed(acc))
    with m.Switch(count):
        for n in range(1, 8):
            with m.Case(n):
                m.d.comb += out.eq(values[n - 1][:bits].as_signed())
    return out


class _Axis:
    """Incremental window bookkeeping along one axis (columns of a line, or lines).

    Windows ``o = 0, 1, ...`` cover positions ``o*stride - pad .. o*stride - pad + k - 1``.
    ``lo`` is the oldest open window, ``hi`` the newest started; ``lo_start`` / ``hi_next``
    the start of ``lo`` / of ``hi + 1``. Signals are created in the module ``m``.
    """

    def __init__(self, m, name, ow_bits):
        self.lo = Signal(ow_bits, name=f"{name}_lo")
        self.hi = Signal(ow_bits, name=f"{name}_hi")
        self.lo_start = Signal(signed(20), name=f"{name}_lo_start")
        self.hi_next = Signal(signed(20), name=f"{name}_hi_next")
        self.hi_new = Signal(name=f"{name}_hi_new")
        self.active = Signal(range(SLOTS + 2), name=f"{name}_active")
        m.d.comb += self.active.eq(self.hi + 1 - self.lo)

    def start_values(self, m, pad, s_m1, out_m1):
        """(hi, hi_next) at position 0 -- every window starting at or before it is open --
        from the fields ``pad`` / ``s_m1`` / ``out_m1``, in two registered steps (``hi``, then
        ``hi_next`` from it): valid two cycles after the fields last changed. A restart at a
        new line or surface then takes no comparison or multiplier after the input
        handshake."""
        stride = s_m1 + 1
        name = self.lo.name[:-3]
        hi0 = Signal.like(self.lo, name=f"{name}_start_hi")
        cand = Signal.like(self.lo, name=f"{name}_start_cand")
        m.d.comb += cand.eq(0)
        for o in range(1, SLOTS):
            with m.If((o * stride <= pad) & (o <= out_m1)):
                m.d.comb += cand.eq(o)
        nxt = Signal.like(self.hi_next, name=f"{name}_start_next")
        m.d.sync += [hi0.eq(cand), nxt.eq(_sg((hi0 + 1) * stride) - _sg(pad))]
        return hi0, nxt

    def reset(self, m, pad, start):
        """Statements for position 0; ``start`` is :meth:`start_values`."""
        hi0, nxt = start
        return [self.lo.eq(0), self.lo_start.eq(-_sg(pad)),
                self.hi.eq(hi0), self.hi_next.eq(nxt), self.hi_new.eq(0)]

    def lo_end(self, k_m1):
        return self.lo_start + k_m1

    def masks(self, m, name, pos, base, n=SLOTS):
        """(member, first, lo slot) at position ``pos``; window ``o`` is in slot
        ``(base + o) mod n``."""
        sb = (n - 1).bit_length()
        member = Signal(n, name=f"{name}_member")
        first = Signal(n, name=f"{name}_first")
        lo_slot, hi_slot = Signal(sb, name=f"{name}_lo_slot"), Signal(sb, name=f"{name}_hi_slot")
        m.d.comb += [lo_slot.eq(base + self.lo), hi_slot.eq(base + self.hi),
                     member.eq(_span(m, f"{name}_span", lo_slot, self.active, n))]
        for k in range(n):
            m.d.comb += first[k].eq(member[k] & ((pos == 0) | (self.hi_new & (hi_slot == k))))
        return member, first, lo_slot

    def advance(self, m, pos, k_m1, s_m1, out_m1):
        """Update after position ``pos`` (sync statements added to ``m``)."""
        stride = s_m1 + 1
        with m.If(self.lo_end(k_m1) == pos):
            m.d.sync += [self.lo.eq(self.lo + 1), self.lo_start.eq(self.lo_start + stride)]
        with m.If((self.hi_next == pos + 1) & (self.hi < out_m1)):
            m.d.sync += [self.hi.eq(self.hi + 1), self.hi_next.eq(self.hi_next + stride),
                         self.hi_new.eq(1)]
        with m.Else():
            m.d.sync += self.hi_new.eq(0)


def _span(m, name, first_slot, count, n=SLOTS):
    """Mask of ``count`` (0..8) of ``n`` slots from ``first_slot`` on, wrapping."""
    mask = Signal(n, name=name)
    for k in range(n):
        rel = Signal((n - 1).bit_length(), name=f"{name}_rel{k}")
        m.d.comb += [rel.eq(k - first_slot), mask[k].eq(rel < count)]
    return mask


def _half(par, mask):
    """A mask of the 8 slots of a ring half as the 16-slot ring's: half ``par``."""
    return Mux(par, Cat(Const(0, SLOTS), mask), Cat(mask, Const(0, SLOTS)))


def _sg(v):
    """``v`` (unsigned) as a signed value one bit wider."""
    return Cat(v, Const(0, 1)).as_signed()


def _pads(m, name, start, k_m1, last_pos):
    """Padded positions of the window starting at ``start`` (signed) within 0..last_pos."""
    end = Signal(signed(21), name=f"{name}_end")
    lo = Signal(signed(21), name=f"{name}_lo")
    hi = Signal(signed(21), name=f"{name}_hi")
    n = Signal(signed(21), name=f"{name}_n")
    m.d.comb += [end.eq(start + k_m1), lo.eq(Mux(start < 0, 0, start)),
                 hi.eq(Mux(end > last_pos, last_pos, end)),
                 n.eq(k_m1 + 1 - (hi - lo + 1))]
    return n[:4]


def _pad17(m, name, values, count):
    """``PAD_VALUE_{count}X``'s low 17 bits (an fp17 code), +0 when ``count`` is 0."""
    out = Signal(FP17, name=name)
    with m.Switch(count):
        for n in range(1, 8):
            with m.Case(n):
                m.d.comb += out.eq(values[n - 1][:FP17])
    return out


def _fp16_key(h):
    """Sign-magnitude order of the fp16 code ``h`` as a signed value (-0 below +0)."""
    return Cat(h[:15] ^ h[15].replicate(15), h[15]).as_signed()


def _fp16_pick(m, first, second, is_max):
    """NVDLA's fp16 max (``is_max``) / min of two codes: a NaN wins, ``first``'s if both are."""
    def nan(h):
        return (h[10:15] == 0x1F) & h[:10].any()
    take1 = Mux(is_max, _fp16_key(first) > _fp16_key(second),
                _fp16_key(first) < _fp16_key(second))
    r = Signal(16)
    m.d.comb += r.eq(Mux(nan(first), first, Mux(nan(second), second,
                                                 Mux(take1, first, second))))
    return r


def _round_recip(m, name, value, recip, bits, acc=ACC, sel16=None, bits16=None):
    """``value x recip / 2^16`` rounded half away from zero into ``bits`` signed bits as
    NVDLA's cal2d does it: a negative product keeps the low ``bits`` of its rounded quotient,
    a non-negative one only the low ``bits - 1`` (plus the rounding carry), so a positive
    result wraps modulo 2^(bits - 1) (254 -> 126 in int8). With ``sel16`` (builds with
    int16) the same product is rounded into ``bits16`` bits instead while ``sel16`` is set."""
    p = Signal(signed(acc + 2 + 18), name=f"{name}_prod")
    q = Signal(signed(acc + 4), name=f"{name}_q")
    frac = p[:16]
    m.d.comb += [p.eq(value * Cat(recip, Const(0, 1)).as_signed()), q.eq(p >> 16)]

    def rounded(n, suffix):
        pos = Signal(n, name=f"{name}_pos{suffix}")
        neg = Signal(n, name=f"{name}_neg{suffix}")
        r = Signal(signed(n), name=f"{name}{suffix}")
        m.d.comb += [pos.eq(q[:n - 1] + (frac >= 0x8000)),
                     neg.eq(q + (frac > 0x8000)),
                     r.eq(Mux(p < 0, neg, pos))]
        return r

    r = rounded(bits, "")
    if sel16 is None:
        return r
    r16 = rounded(bits16, "_16")
    out = Signal(signed(bits16), name=f"{name}_sel")
    m.d.comb += out.eq(Mux(sel16, r16, r))
    return out


def _row_layout():
    """What a row result needs from its input line's vertical bookkeeping."""
    return data.StructLayout({
        "member": SLOTS, "first": SLOTS, "emit": 1, "slot": 3, "vpad": 4, "last_out": 1,
        "vf": 1, "vf_slot": 3, "vf_rows_m1": 3, "vf_start": signed(20), "vf_last": 1})


class PdpPool(wiring.Component):
    """The pooling core (see the module docstring).

    ``lanes``: T; ``groups``: G = transfers per atom; ``line_atoms``: the line buffer holds
    this many output positions (a job's ``Wout`` must not exceed it).

    Slots: window ``ow`` of a line is slot ``ow mod 8`` of the ring's half for the line (the
    halves alternate line by line), output line ``oh`` is line buffer slot ``(vbase + oh) mod 8``
    with ``vbase`` advancing by ``Hout`` every surface: the windows still being flushed out
    of the previous line (surface) keep their slots while the next line (surface) opens
    new ones, so flushes overlap the next input. A new window whose slot is still being
    flushed waits for the flush (interlock).
    """

    def __init__(self, lanes, groups, line_atoms, int16=False, fp16=False):
        self._T, self._G, self._lb = lanes, groups, line_atoms
        self._int16, self._fp16 = int16, fp16
        if (int16 or fp16) and groups % 2:
            raise ValueError(f"PdpPool: int16 / fp16 need an even number of transfers per atom "
                             f"(groups={groups}: pdp_throughput <= memory_atom / 2)")
        super().__init__({
            "cfg": In(pool_cfg_layout(int16, fp16)),
            "job": In(stream.Signature(job_layout())),
            "i": In(stream.Signature(lanes_layout(lanes))),
            "o": Out(stream.Signature(pool_out_layout(lanes))),
            "clear": In(1),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        T, G, LB = self._T, self._G, self._lb
        cfg = self.cfg
        acc = ACC16 if self._int16 else FP17 if self._fp16 else ACC
        is16 = cfg.int16 if self._int16 else None
        isfp = cfg.fp16 if self._fp16 else None      # the layer pools fp16
        wide = is16                                  # 2-byte elements (int16 or fp16)
        if isfp is not None:
            wide = isfp if is16 is None else (is16 | isfp)

        def wrap(v, b8, b16):
            """The low B-dependent bits of ``v``, signed: ``b8`` for int8, ``b16`` for
            int16."""
            if is16 is None:
                return v[:b8].as_signed()
            return Mux(is16, v[:b16].as_signed(), v[:b8].as_signed())

        def is_last_group(g):
            """``g`` is an atom's last transfer (G, or G / 2 for int16 / fp16)."""
            if wide is None:
                return g == G - 1
            return g == Mux(wide, G // 2 - 1, G - 1)
        jb = (G - 1).bit_length()
        ob = max(1, (LB - 1).bit_length())
        avg = Signal()
        m.d.comb += avg.eq(cfg.method == METHOD_AVE)

        # the horizontal ring's sums are only used in their low B + 3 bits (int8) / B + 6 bits
        # (int16: NVDLA's cal1d keeps 22-bit row sums): 22 bits on builds with int16
        # (int8-only builds keep their 16)
        hacc = ROW_SUM16 if self._int16 else FP17 if self._fp16 else ACC

        def op(old, new, width=acc, vertical=False):
            """Lane-wise max / min / wrapping sum; on fp16 layers the fp16 max / min (a NaN
            wins: the running result's along a line, the new line's down the lines) or the
            fp17 sum (``old + new`` along a line, ``new + old`` down the lines)."""
            # max and min share one comparison: min takes ``new`` when it is not above
            # ``old`` (equal values are the same either way)
            r = Signal(signed(width))
            m.d.comb += r.eq(Mux(avg, old + new,
                                 Mux((new > old) ^ (cfg.method == METHOD_MIN), new, old)))
            if isfp is None:
                return r
            first, second = (new, old) if vertical else (old, new)
            fr = Signal(signed(width))
            m.d.comb += fr.eq(Mux(avg, fp17_add(m, first[:FP17], second[:FP17]),
                                  _fp16_pick(m, first[:16], second[:16],
                                             cfg.method == METHOD_MAX)))
            out = Signal(signed(width))
            m.d.comb += out.eq(Mux(isfp, fr, r))
            return out

        def addr(ow, g):
            return Cat(g[:jb], ow[:ob]) if jb else ow[:ob]

        sw, sh = cfg.sw_m1 + 1, cfg.sh_m1 + 1

        # -- input position, window bookkeeping ------------------------------------------
        job = Signal(job_layout())
        s = Signal(13)
        h = Signal(13)
        w = Signal(13)
        j = Signal(range(max(G, 2)))
        j_last = Signal()
        m.d.comb += j_last.eq(is_last_group(j))
        hx = _Axis(m, "hx", 14)                 # windows along the line (ow)
        vx = _Axis(m, "vx", 14)                 # windows along the height (oh)
        # start values of a new line / surface from the job's and the layer's fields
        h_start = hx.start_values(m, job.pad_left, cfg.sw_m1, job.wout_m1)
        v_start = vx.start_values(m, cfg.pad_top, cfg.sh_m1, cfg.hout_m1)
        hpar = Signal()                         # the ring half of this line's windows
        vbase = Signal(3)
        last_s = Signal()
        m.d.comb += last_s.eq(s == cfg.s_m1)

        HS = H_SLOTS
        # ring slot k: G entries of T lanes in LUT RAM, read at the input's channel group j
        # (update) and at the flush's hf_j, written at j
        ring_layout = data.ArrayLayout(signed(hacc), T)
        ring_mem = []
        for k in range(HS):
            m.submodules[f"ring{k}"] = mem = Memory(shape=ring_layout, depth=G, init=[])
            ring_mem.append(mem)

        # -- stage registers ------------------------------------------------------------
        hres_layout = data.StructLayout({
            "valid": 1, "ow": 14, "j": max(jb, 1), "data": data.ArrayLayout(signed(acc), T),
            "last_line": 1, "last": 1, "row": _row_layout()})
        a = Signal(hres_layout, name="a")       # stage A's result (combinational)
        b = Signal(hres_layout, name="b")       # stage B: line buffer read-modify-write
        c = Signal(data.StructLayout({"valid": 1, "data": data.ArrayLayout(signed(acc), T),
                                      "last_line": 1, "last": 1}))
        cm = Signal(data.StructLayout({"valid": 1, "data": data.ArrayLayout(signed(acc + 4), T),
                                       "last_line": 1, "last": 1}))
        d = Signal(pool_out_layout(T))
        d_valid = Signal()
        adv = Signal()                          # the output pipeline moves
        b_stall = Signal()                      # stage B waits (flush interlock)
        a_adv = Signal()                        # stage A's result enters stage B
        m.d.comb += [adv.eq(~d_valid | self.o.ready), a_adv.eq(adv & ~b_stall),
                     self.o.valid.eq(d_valid), self.o.payload.eq(d)]

        m.submodules.lbuf = lbuf = Memory(shape=SLOTS * T * acc, depth=LB * G, init=[])
        wp = lbuf.write_port()
        rp = lbuf.read_port(transparent_for=(wp,))
        fp = lbuf.read_port()                   # bottom-padding flush
        rd_addr = Signal(ob + jb)
        m.d.comb += [rp.addr.eq(rd_addr), rp.en.eq(a_adv)]

        # -- this line's vertical flags -------------------------------------------------
        vmember, vfirst, vlo_slot = vx.masks(m, "v", h, vbase)
        row = Signal(_row_layout())
        row_used = Signal()
        last_row = Signal()
        m.d.comb += [
            row_used.eq(vmember.any()), last_row.eq(h == cfg.h_m1),
            row.member.eq(vmember), row.first.eq(vfirst),
            row.emit.eq((vx.active != 0) & ((vx.lo_end(cfg.kh_m1) == h) | last_row)),
            row.slot.eq(vlo_slot), row.vpad.eq(_pads(m, "vpad_lo", vx.lo_start, cfg.kh_m1,
                                                     cfg.h_m1)),
            row.last_out.eq(last_s & (vx.lo == cfg.hout_m1)),
            row.vf.eq(last_row & (vx.active >= 2)), row.vf_slot.eq(vlo_slot + 1),
            row.vf_rows_m1.eq(vx.active - 2), row.vf_start.eq(vx.lo_start + sh),
            row.vf_last.eq(last_s),
        ]

        # -- horizontal flush process (windows ending in the right padding) ---------------
        hf_active = Signal()
        hf_ow = Signal(14)
        hf_end = Signal(14)
        hf_start = Signal(signed(20))
        hf_j = Signal(range(max(G, 2)))
        hf_par = Signal()                       # the ring half being flushed
        hf_mask = Signal(HS)
        hf_row = Signal(_row_layout())
        hf_jl = Signal()
        m.d.comb += hf_jl.eq(is_last_group(hf_j))
        hf_slot = Signal(4)
        m.d.comb += hf_slot.eq(Cat(hf_ow[:3], hf_par))
        hpad_f = self._row_pad(m, _pads(m, "hpad_f", hf_start, cfg.kw_m1, job.win_m1),
                               is16, acc)
        f_slot_vals = [[Signal(signed(hacc), name=f"fslot{k}_{l}") for l in range(T)]
                       for k in range(HS)]
        ring_upd = []                           # per slot: read port at j, write port at j
        for k in range(HS):
            rf_port = ring_mem[k].read_port(domain="comb")
            ru_port = ring_mem[k].read_port(domain="comb")
            wr_port = ring_mem[k].write_port()
            ring_upd.append((ru_port, wr_port))
            m.d.comb += rf_port.addr.eq(hf_j)
            for l in range(T):
                m.d.comb += f_slot_vals[k][l].eq(rf_port.data[l])
        hf_vals = [Array(f_slot_vals[k][l] for k in range(HS))[hf_slot] for l in range(T)]

        # -- horizontal stage on the input ---------------------------------------------------
        # window ow of a line is slot ow mod 8 of the line's half: the masks within the half
        # (at most 8 windows are open), then over the ring
        hmember8, hfirst, hlo_rel = hx.masks(m, "h", w, 0)
        hmember = Signal(HS)
        m.d.comb += hmember.eq(_half(hpar, hmember8))
        hemit = Signal()
        row_end = Signal()
        needs_hf = Signal()
        m.d.comb += [
            hemit.eq(row_used & (hx.active != 0) &
                     ((hx.lo_end(cfg.kw_m1) == w) | (w == job.win_m1))),
            row_end.eq(j_last & (w == job.win_m1)),
            needs_hf.eq(row_end & row_used & (hx.active >= 2)),
        ]
        hpad_lo = self._row_pad(m, _pads(m, "hpad_lo", hx.lo_start, cfg.kw_m1, job.win_m1),
                                is16, acc)
        x = self.i.payload.data
        if isfp is not None:            # fp16 average: the ring sums fp17 codes
            xf = []
            for l in range(T):
                v = Signal(signed(hacc), name=f"xin{l}")
                m.d.comb += v.eq(Mux(isfp & avg, fp16_to_fp17(m, x[l][:16]), x[l]))
                xf.append(v)
            x = xf
        # one update per slot of a half: slot k of the line's half, written back to it
        new_vals = [[Signal(signed(hacc), name=f"hnew{k}_{l}") for l in range(T)]
                    for k in range(SLOTS)]
        for k in range(HS):
            ru_port, wr_port = ring_upd[k]
            m.d.comb += [ru_port.addr.eq(j), wr_port.addr.eq(j)]
            for l in range(T):
                m.d.comb += wr_port.data[l].eq(new_vals[k % SLOTS][l])
        for k in range(SLOTS):
            for l in range(T):
                old = Mux(hpar, ring_upd[k + SLOTS][0].data[l], ring_upd[k][0].data[l])
                m.d.comb += new_vals[k][l].eq(Mux(hfirst[k], x[l], op(old, x[l], hacc)))
        lo_new = [Array(new_vals[k][l] for k in range(SLOTS))[hlo_rel] for l in range(T)]

        running = Signal()
        fresh = Signal(2)                       # a job's first cycles: the start values settle
        in_ok = Signal()
        m.d.comb += [
            in_ok.eq(running & (fresh == 0) & a_adv &
                     ~(hf_active & (hemit | needs_hf | (hmember & hf_mask).any()))),
            self.i.ready.eq(in_ok),
        ]
        in_fire = Signal()
        m.d.comb += in_fire.eq(self.i.valid & in_ok)

        a_fp = None
        if isfp is not None:            # fp16: max / min as is, average + PAD_VALUE (fp17)
            hpad17_f = _pad17(m, "hpad17_f", cfg.pad_values,
                              _pads(m, "hpad17f", hf_start, cfg.kw_m1, job.win_m1))
            hpad17_lo = _pad17(m, "hpad17_lo", cfg.pad_values,
                               _pads(m, "hpad17lo", hx.lo_start, cfg.kw_m1, job.win_m1))
            a_pad = Mux(hf_active, hpad17_f, hpad17_lo)
            a_fp = []
            for l in range(T):
                src = Signal(signed(acc), name=f"a_src{l}")
                v = Signal(signed(acc), name=f"a_fp{l}")
                m.d.comb += [src.eq(Mux(hf_active, hf_vals[l], lo_new[l])),
                             v.eq(Mux(avg, fp17_add(m, src[:FP17], a_pad), src))]
                a_fp.append(v)

        def row_value(l, v):
            """Stage A's lane ``l``: the int row result ``v``, or the fp16 one."""
            return v if a_fp is None else Mux(isfp, a_fp[l], v)

        def tag(ow, g, rowf):
            ll = (ow == job.wout_m1) & is_last_group(g)
            return [a.last_line.eq(ll), a.last.eq(ll & rowf.last_out),
                    a.row.eq(rowf), a.row.vf.eq(rowf.vf & ll)]

        with m.If(hf_active):
            m.d.comb += [a.valid.eq(a_adv), a.ow.eq(hf_ow), a.j.eq(hf_j),
                         rd_addr.eq(addr(hf_ow, hf_j))]
            m.d.comb += tag(hf_ow, hf_j, hf_row)
            for l in range(T):
                m.d.comb += a.data[l].eq(row_value(l, wrap(hf_vals[l] + Mux(avg, hpad_f, 0),
                                                           ROW_BITS, ROW_SUM16)))
            with m.If(a_adv):
                m.d.sync += hf_j.eq(Mux(hf_jl, 0, hf_j + 1))
                with m.If(hf_jl):
                    m.d.sync += [hf_ow.eq(hf_ow + 1), hf_start.eq(hf_start + sw)]
                    with m.If(hf_ow == hf_end):
                        m.d.sync += [hf_active.eq(0), hf_mask.eq(0)]
        with m.Else():
            m.d.comb += [a.valid.eq(in_fire & hemit), a.ow.eq(hx.lo), a.j.eq(j),
                         rd_addr.eq(addr(hx.lo, j))]
            m.d.comb += tag(hx.lo, j, row)
            for l in range(T):
                m.d.comb += a.data[l].eq(row_value(l, wrap(lo_new[l] + Mux(avg, hpad_lo, 0),
                                                           ROW_BITS, ROW_SUM16)))

        # input position and bookkeeping updates
        for k in range(HS):
            m.d.comb += ring_upd[k][1].en.eq(in_fire & hmember[k])
        with m.If(in_fire):
            m.d.sync += j.eq(Mux(j_last, 0, j + 1))
            with m.If(row_end):
                m.d.sync += [w.eq(0), hpar.eq(~hpar)]
                m.d.sync += hx.reset(m, job.pad_left, h_start)
                with m.If(needs_hf):
                    m.d.sync += [hf_active.eq(1), hf_ow.eq(hx.lo + 1), hf_end.eq(hx.hi),
                                 hf_start.eq(hx.lo_start + sw), hf_j.eq(0), hf_par.eq(hpar),
                                 hf_mask.eq(_half(hpar, _span(m, "hf_span", hlo_rel + 1,
                                                              hx.active - 1))),
                                 hf_row.eq(row)]
                with m.If(last_row):
                    m.d.sync += [h.eq(0), s.eq(s + 1), vbase.eq(vbase + cfg.hout_m1 + 1)]
                    m.d.sync += vx.reset(m, cfg.pad_top, v_start)
                with m.Else():
                    m.d.sync += h.eq(h + 1)
                    vx.advance(m, h, cfg.kh_m1, cfg.sh_m1, cfg.hout_m1)
            with m.Elif(j_last):
                m.d.sync += w.eq(w + 1)
                hx.advance(m, w, cfg.kw_m1, cfg.sw_m1, job.wout_m1)

        # -- vertical flush process (output lines ending in the bottom padding) -----------
        vf_active = Signal()
        vf_ow = Signal(14)
        vf_j = Signal(range(max(G, 2)))
        vf_slot = Signal(3)
        vf_rows = Signal(3)
        vf_start = Signal(signed(20))
        vf_last = Signal()
        vf_mask = Signal(SLOTS)
        f1 = Signal(data.StructLayout({"valid": 1, "slot": 3, "vpad": 4, "last_line": 1,
                                       "last": 1}))
        vf_busy = Signal()
        m.d.comb += vf_busy.eq(vf_active | f1.valid)
        vf_jl = Signal()
        m.d.comb += vf_jl.eq(is_last_group(vf_j))
        m.d.comb += [fp.addr.eq(addr(vf_ow, vf_j)), fp.en.eq(adv)]
        with m.If(adv):
            m.d.sync += f1.valid.eq(vf_active)
            with m.If(vf_active):
                ll = (vf_ow == job.wout_m1) & vf_jl
                m.d.sync += [f1.slot.eq(vf_slot),
                             f1.vpad.eq(_pads(m, "vpad_f", vf_start, cfg.kh_m1, cfg.h_m1)),
                             f1.last_line.eq(ll), f1.last.eq(ll & vf_last & (vf_rows == 0)),
                             vf_j.eq(Mux(vf_jl, 0, vf_j + 1))]
                with m.If(vf_jl):
                    m.d.sync += vf_ow.eq(vf_ow + 1)
                    with m.If(vf_ow == job.wout_m1):
                        m.d.sync += [vf_ow.eq(0), vf_slot.eq(vf_slot + 1),
                                     vf_start.eq(vf_start + sh), vf_rows.eq(vf_rows - 1)]
                        with m.If(vf_rows == 0):
                            m.d.sync += vf_active.eq(0)
        with m.If(~vf_busy):
            m.d.sync += vf_mask.eq(0)

        # -- stage B: line buffer read-modify-write ------------------------------------
        m.d.comb += b_stall.eq(b.valid & (((b.row.member & vf_mask).any()) |
                                          ((b.row.emit | b.row.vf) & vf_busy)))
        with m.If(a_adv):
            m.d.sync += b.eq(a)
        with m.Elif(adv):
            pass
        rdv = [[rp.data.word_select(k * T + l, acc).as_signed() for l in range(T)]
               for k in range(SLOTS)]
        fdv = [[fp.data.word_select(k * T + l, acc).as_signed() for l in range(T)]
               for k in range(SLOTS)]
        wdata = Signal(SLOTS * T * acc)
        vnew = [[Signal(signed(acc), name=f"vnew{k}_{l}") for l in range(T)]
                for k in range(SLOTS)]
        for k in range(SLOTS):
            for l in range(T):
                m.d.comb += vnew[k][l].eq(Mux(b.row.first[k], b.data[l],
                                              op(rdv[k][l], b.data[l], vertical=True)))
                m.d.comb += wdata.word_select(k * T + l, acc).eq(
                    Mux(b.row.member[k], vnew[k][l], rdv[k][l]))
        m.d.comb += [wp.addr.eq(addr(b.ow, b.j)), wp.data.eq(wdata),
                     wp.en.eq(a_adv & b.valid & b.row.member.any())]
        with m.If(a_adv & b.valid & b.row.vf):
            m.d.sync += [vf_active.eq(1), vf_ow.eq(0), vf_j.eq(0), vf_slot.eq(b.row.vf_slot),
                         vf_rows.eq(b.row.vf_rows_m1), vf_start.eq(b.row.vf_start),
                         vf_last.eq(b.row.vf_last),
                         vf_mask.eq(_span(m, "vf_span", b.row.vf_slot, b.row.vf_rows_m1 + 1))]

        # -- stage C: the pooled sum (with the vertical padding) -----------------------------
        kpad = Signal(signed(acc))
        vpad_sel = Signal(4)
        m.d.comb += [vpad_sel.eq(Mux(f1.valid, f1.vpad, b.row.vpad)),
                     kpad.eq(pad_value(m, cfg.pad_values, vpad_sel, 19, acc) *
                                (cfg.kw_m1 + 1))]
        c_fp = None
        if isfp is not None:            # fp16: max / min as is, average + PAD_VALUE x kw (fp17)
            kw17 = Array(Const(v, FP17) for v in _KW_FP17)[cfg.kw_m1]
            kpad17 = fp17_mul(m, _pad17(m, "vpad17", cfg.pad_values, vpad_sel), kw17)
            c_fp = []
            for l in range(T):
                src = Signal(signed(acc), name=f"c_src{l}")
                v = Signal(signed(acc), name=f"c_fp{l}")
                m.d.comb += [src.eq(Mux(f1.valid, Array(fdv[k][l] for k in range(SLOTS))[f1.slot],
                                        Array(vnew[k][l] for k in range(SLOTS))[b.row.slot])),
                             v.eq(Mux(avg, fp17_add(m, src[:FP17], kpad17), src))]
                c_fp.append(v)

        def sum_value(l, v):
            """Stage C's lane ``l``: the int window sum ``v``, or the fp16 one."""
            return v if c_fp is None else Mux(isfp, c_fp[l], v)
        with m.If(adv):
            with m.If(f1.valid):
                m.d.sync += [c.valid.eq(1), c.last_line.eq(f1.last_line), c.last.eq(f1.last)]
                for l in range(T):
                    m.d.sync += c.data[l].eq(sum_value(
                        l, Array(fdv[k][l] for k in range(SLOTS))[f1.slot] + Mux(avg, kpad, 0)))
            with m.Else():
                m.d.sync += [c.valid.eq(b.valid & b.row.emit & ~b_stall),
                             c.last_line.eq(b.last_line), c.last.eq(b.last)]
                for l in range(T):
                    m.d.sync += c.data[l].eq(sum_value(
                        l, Array(vnew[k][l] for k in range(SLOTS))[b.row.slot] +
                        Mux(avg, kpad, 0)))
        with m.If(a_adv):
            pass

        # -- reciprocal multiplies (stages CM, D) -------------------------------------------
        with m.If(adv):
            m.d.sync += [cm.valid.eq(c.valid), cm.last_line.eq(c.last_line),
                         cm.last.eq(c.last)]
            for l in range(T):
                # the window sum as NVDLA's B + 6 bits, the width result as B + 3 bits
                r = _round_recip(m, f"rw{l}", wrap(c.data[l], 14, 22), cfg.recip_w, 11, acc,
                                 is16, 19)
                v = Mux(avg, r, c.data[l])
                if isfp is not None:    # fp16 average: x RECIP_KERNEL_WIDTH (fp17)
                    v = Mux(isfp, Mux(avg, fp17_mul(m, c.data[l][:FP17], cfg.recip_w), c.data[l]),
                            v)
                m.d.sync += cm.data[l].eq(v)
            m.d.sync += [d_valid.eq(cm.valid), d.last_line.eq(cm.last_line),
                         d.last.eq(cm.last)]
            for l in range(T):
                r = _round_recip(m, f"rh{l}", cm.data[l], cfg.recip_h, 8, acc, is16, 16)
                v = Mux(avg, r, wrap(cm.data[l], 8, 16))
                if isfp is not None:    # fp16: x RECIP_KERNEL_HEIGHT (fp17), to fp16
                    v = Mux(isfp, Mux(avg, fp17_to_fp16(m, fp17_mul(m, cm.data[l][:FP17],
                                                                     cfg.recip_h)),
                                      cm.data[l][:16]), v)
                m.d.sync += d.data[l].eq(v)

        # -- jobs ------------------------------------------------------------------------------
        empty = Signal()
        m.d.comb += [empty.eq(~hf_active & ~b.valid & ~vf_busy & ~c.valid & ~cm.valid &
                              ~d_valid)]
        with m.FSM(name="pool"):
            with m.State("IDLE"):
                m.d.comb += [self.job.ready.eq(~hf_active & ~b.valid & ~vf_busy),
                             self.idle.eq(empty)]
                with m.If(self.job.valid & self.job.ready):
                    m.d.sync += [job.eq(self.job.payload), s.eq(0), h.eq(0), w.eq(0), j.eq(0),
                                 fresh.eq(3)]
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += running.eq(1)
                with m.If(fresh != 0):          # h_start / v_start of the new job settle
                    m.d.sync += fresh.eq(fresh - 1)
                with m.If(fresh == 1):
                    m.d.sync += [*hx.reset(m, job.pad_left, h_start),
                                 *vx.reset(m, cfg.pad_top, v_start)]
                with m.If(in_fire & row_end & last_row & last_s):
                    m.next = "IDLE"

        with m.If(self.clear):
            m.d.sync += [b.valid.eq(0), c.valid.eq(0), cm.valid.eq(0), d_valid.eq(0),
                         hf_active.eq(0), vf_active.eq(0), f1.valid.eq(0), hf_mask.eq(0),
                         vf_mask.eq(0)]
        return m

    def _row_pad(self, m, count, is16, acc):
        """The pad value a window row with ``count`` padded columns adds: PAD_VALUE_<count>X's
        low B + 3 bits (11, or 19 for int16)."""
        p8 = pad_value(m, self.cfg.pad_values, count, ROW_BITS, acc)
        if is16 is None:
            return p8
        p16 = pad_value(m, self.cfg.pad_values, count, ROW_BITS16, acc)
        out = Signal(signed(acc))
        m.d.comb += out.eq(Mux(is16, p16, p8))
        return out
