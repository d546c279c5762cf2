"""CACC: the convolution accumulator (int8; int16 and fp16 on builds with them; spec
"Convolution Accumulator").

Assembles CMAC's partial sums into the layer's output values and delivers them to the SDP
(golden model :func:`sim.conv.cacc.deliver`; contract :mod:`hw.conv.common`).

Assembly buffer
    :func:`~hw.conv.common.max_stripe` positions x Atomic-K sums of
    :data:`~hw.conv.common.ACC_BITS` bits (two's complement, wrapping like the golden model),
    a :class:`~amaranth.lib.memory.Memory` updated by a read-modify-write pipeline: a psum
    with ``first=1`` stores its sums, any other adds them to the stored ones. The read port is
    transparent for the write port, so back-to-back psums of one position (a one-position
    stripe) see each other's sums without a bypass. A psum with ``last=1`` completes its
    position: the sums go on instead of back into the buffer.

Delivery
    Completed positions (their ``ACC_BITS`` sums) enter a FIFO of ``max_stripe`` positions (a
    whole stripe, so one stripe drains to the SDP while the next accumulates: the assembly
    buffer and the FIFO are the double buffer) and leave in completion order, each as
    ``AK / T`` transfers of ``T = sdp_bs_throughput`` int32 lanes (channels ``i*T ..
    i*T+T-1``). ``last`` marks the final transfer of the position whose psum had ``end=1``;
    ``done`` pulses the cycle after it.

Truncation (``D_CLIP_CFG.CLIP_TRUNCATE`` = ``truncate``), on the T lanes leaving the FIFO
(T rounders instead of AK)
    Each sum is shifted right by ``truncate`` rounding to nearest, ties away from zero
    (:func:`sim.formats.common.round_shift_right`: ``(x + half - (x < 0)) >> truncate`` with
    ``half = 2**truncate / 2``), then saturated to int32; every saturated element counts in
    ``sat_count`` (``D_OUT_SATURATION``, itself saturating at 2**32 - 1) the cycle after it
    is delivered (the flags are registered before the count adds them), so the count is
    complete when ``done`` pulses.

Pipeline (the accumulation stages move every cycle, with no enable: a psum with ``last`` is
taken only while the FIFO has a slot for it and for every completed position ahead of it, a
credit count; the delivery stages advance unless ``out`` holds its transfer; so back-pressure on
``out`` stalls ``psum`` without loss)::

    psum --> [read assembly row] --> [add; write back or complete] --> FIFO
         --> [T lanes + rounding constant] --> [shift, saturate, count] --> skid buffer --> out

int16 layers (builds where :func:`~hw.conv.common.conv_int16` holds; ``int16`` in, the
layer's precision): the psums carry ``AK / 2`` kernels' sums (a kernel group of int16), kept in
the same :data:`~hw.conv.common.ACC_BITS` = 48 bits (NVDLA's int16 accumulators), truncated
and saturated to int32 as int8; each position leaves as ``AK / 2 / T`` transfers (an int16 SDP
surface is ``memory_atom / 2 = AK / 2`` channels).

fp16 layers (builds where :func:`~hw.conv.common.conv_fp16` holds; ``fp16`` in, the layer's
precision, constant during a layer): the psums carry ``AK / 2`` kernels' 44-bit partial-sum
codes (bits 0..43 of ``sums[kk]``, ``kk < AK / 2``; the other sums are ignored). The assembly
entries of those kernels hold the 48-bit float codes of :func:`sim.conv.cacc.fp48_add`: a
psum with ``first=1`` is added to an empty accumulator, any other to the stored code
(:func:`hw.conv.fp48.fp48_add`, ``AK / 2`` adders in three steps: the partial sum's
normalization, :func:`~hw.conv.fp48.fp48_psum`, in stage 0 beside the row read; alignment and
addition, :func:`~hw.conv.fp48.fp48_align`, in stage 1; normalization and rounding,
:func:`~hw.conv.fp48.fp48_round`, in stage 2, which writes the row back, or hands a completed
position to the FIFO in the same cycle as for integers). A psum of the position in stage 1
whose ``first`` is clear (the next psum of a one-position stripe) waits one cycle, then reads
through the transparent read port what stage 2 writes: a one-position stripe takes a psum
every other cycle, longer stripes one per cycle. Each completed position leaves as
``AK / 2 / T`` transfers whose lanes carry the fp32 codes :func:`sim.conv.cacc.fp48_to_fp32`
gives (T converters, :func:`hw.conv.fp48.fp48_to_fp32`, in stage D1 in place of the rounding
constant; D2 passes the code on): no truncation, no saturation, ``sat_count`` stays 0. The latency from a
``last`` psum to ``out`` is the int8 one. Builds without fp16 generate no fp logic; int8 and
int16 layers on fp16 builds run the integer pipeline unchanged.

One psum per cycle while the FIFO has room; a psum with ``last=1`` reaches ``out`` after the
two accumulation stages, the FIFO's latency, the two delivery stages and the skid buffer
(:class:`hw.skid.SkidBuffer`: its ``ready`` upstream is a register, so the SDP's readiness
ends there) when the FIFO was empty.
``clear`` (layer start) empties the pipeline and FIFO and zeroes ``sat_count``; no psum is
accepted while it is high.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, ResetInserter, Signal, signed
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..skid import SkidBuffer
from .common import ACC_BITS, conv_fp16, conv_int16, conv_out_layout, max_stripe, psum_layout
from .fp48 import PSUM_LAYOUT, SUM_LAYOUT, fp48_align, fp48_psum, fp48_round, fp48_to_fp32

__all__ = ["Cacc"]

_I32_MAX = (1 << 31) - 1
_I32_MIN = -(1 << 31)


class Cacc(wiring.Component):
    """Accumulator, truncation/saturation and SDP delivery (see module docstring).

    Ports: ``psum`` in (:func:`~hw.conv.common.psum_layout`), ``out`` out
    (:func:`~hw.conv.common.conv_out_layout`), ``truncate`` (CLIP_TRUNCATE), ``kernels_m1``
    (D_DATAOUT_CHANNEL, informational), ``clear`` in, ``int16`` / ``fp16`` in (the layer's
    precision) on builds with them; ``sat_count``, ``done``, ``busy`` out.
    """

    def __init__(self, cfg):
        self._cfg = cfg
        self._ak, self._t = cfg.atomic_k, cfg.sdp_bs_throughput
        if self._ak % self._t:
            raise ValueError(f"{cfg.name}: sdp_bs_throughput={self._t} must divide "
                             f"atomic_k={self._ak}")
        self._depth = max_stripe(cfg)
        self._i16 = conv_int16(cfg)
        self._fp = conv_fp16(cfg)
        if (self._i16 or self._fp) and (self._ak // 2) % self._t:
            raise ValueError(f"{cfg.name}: sdp_bs_throughput={self._t} must divide "
                             f"atomic_k / 2 = {self._ak // 2} (int16 / fp16 kernel groups)")
        extra = {"int16": In(1)} if self._i16 else {}
        if self._fp:
            extra["fp16"] = In(1)
        super().__init__({**extra,
            "psum": In(stream.Signature(psum_layout(cfg))),
            "out": Out(stream.Signature(conv_out_layout(cfg))),
            "truncate": In(5),
            "kernels_m1": In(13),
            "clear": In(1),
            "sat_count": Out(32),
            "done": Out(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        ak, t = self._ak, self._t
        acc_layout = data.ArrayLayout(signed(ACC_BITS), ak)
        res_layout = data.StructLayout({"data": data.ArrayLayout(signed(ACC_BITS), ak),
                                        "end": 1})

        # ---- assembly buffer ------------------------------------------------------------
        m.submodules.asm = asm = memory.Memory(shape=acc_layout, depth=self._depth, init=[])
        wp = asm.write_port()
        rp = asm.read_port(transparent_for=(wp,))

        # ---- completed positions ----------------------------------------------------------
        q = fifo.SyncFIFOBuffered(width=res_layout.size, depth=self._depth)
        m.submodules.fifo = q = ResetInserter({"sync": self.clear})(q)

        # ---- pipeline control -----------------------------------------------------------
        # The accumulation stages never stall (no enable on their registers): a psum with
        # ``last`` is taken only while the FIFO has a slot for it and for every completed
        # position ahead of it (``used`` counts those slots: + a taken ``last`` psum, - the
        # FIFO's pop; ``room`` is ``used < depth`` registered); other psums need no slot
        s1_valid, s2_valid = Signal(), Signal()
        used = Signal(range(self._depth + 1))
        room = Signal(init=1)
        fits = ~self.psum.payload.last | room
        if not self._fp:
            m.d.comb += self.psum.ready.eq(fits & ~self.clear)
        take = self.psum.valid & self.psum.ready

        # stage 0: read the position's row
        m.d.comb += [rp.addr.eq(self.psum.payload.pos), rp.en.eq(1)]

        # stage 1: add, write back (or complete)
        p1 = Signal.like(self.psum.payload, name="s1")
        m.d.sync += [s1_valid.eq(take), p1.eq(self.psum.payload)]
        new = Signal(acc_layout)
        for k in range(ak):
            old = rp.data[k]
            m.d.comb += new[k].eq(Mux(p1.first, 0, old) + p1.sums[k])   # wraps to ACC_BITS
        if not self._fp:
            m.d.comb += [wp.addr.eq(p1.pos), wp.data.eq(new),
                         wp.en.eq(s1_valid & ~p1.last)]
        else:
            # fp16 layers: the partial sums' normalization in stage 0 (it does not need the
            # stored value), alignment and addition in stage 1, normalization and rounding in
            # stage 2, which writes the row back; a psum of the position in stage 1 (a
            # one-position stripe) waits a cycle, then reads the row stage 2 writes
            hazard = Signal()
            m.d.comb += [
                hazard.eq(self.fp16 & s1_valid & ~p1.last & ~self.psum.payload.first
                          & (self.psum.payload.pos == p1.pos)),
                self.psum.ready.eq(fits & ~self.clear & ~hazard),
            ]
            nf = ak // 2
            dp1 = [Signal(PSUM_LAYOUT, name=f"fp48_{k}_s1") for k in range(nf)]
            sm2 = [Signal(SUM_LAYOUT, name=f"fp48_{k}_s2") for k in range(nf)]
            f2_valid, f2_last = Signal(), Signal()
            f2_pos = Signal.like(p1.pos, name="f2_pos")
            for k in range(nf):
                dp0 = fp48_psum(m, self.psum.payload.sums[k].as_unsigned(), name=f"fp48_{k}")
                sm1 = fp48_align(m, dp1[k], rp.data[k].as_unsigned(), ~p1.first,
                                 name=f"fp48_{k}")
                m.d.sync += [dp1[k].eq(dp0), sm2[k].eq(sm1)]
            m.d.sync += [f2_valid.eq(s1_valid), f2_last.eq(p1.last), f2_pos.eq(p1.pos)]
            fsum = Signal(acc_layout)              # stage 2's sums (kernels >= AK/2: junk)
            for k in range(ak):
                m.d.comb += fsum[k].eq(fp48_round(m, sm2[k], name=f"fp48_{k}") if k < nf
                                       else new[k])
            m.d.comb += [
                wp.addr.eq(Mux(self.fp16, f2_pos, p1.pos)),
                wp.data.eq(Mux(self.fp16, fsum.as_value(), new.as_value())),
                wp.en.eq(Mux(self.fp16, f2_valid & ~f2_last, s1_valid & ~p1.last)),
            ]

        # stage 2: the completed position's sums, into the FIFO
        v2 = Signal(acc_layout)
        end2 = Signal()
        m.d.sync += [s2_valid.eq(s1_valid & p1.last), v2.eq(new), end2.eq(p1.end)]
        res = Signal(res_layout)
        if self._fp:
            m.d.comb += res.data.eq(Mux(self.fp16, fsum.as_value(), v2.as_value()))
        else:
            m.d.comb += res.data.eq(v2)
        m.d.comb += res.end.eq(end2)
        m.d.comb += [q.w_en.eq(s2_valid), q.w_data.eq(res)]    # a slot is reserved

        # ---- delivery: T lanes per transfer, rounded and saturated on the way out ---------
        n = ak // t
        head = res_layout(q.r_data)
        idx = Signal(range(max(n, 2)))
        if self._i16 or self._fp:
            wide = (self.int16 | self.fp16 if self._i16 and self._fp
                    else self.int16 if self._i16 else self.fp16)
            final = Signal()
            m.d.comb += final.eq(idx == Mux(wide, n // 2 - 1, n - 1))
        else:
            final = idx == n - 1
        # stage D1: x + 2^(t-1) - [x < 0 and t > 0] (floor of that / 2^t is x rounded); the
        # constant depends on truncate alone (shared by the lanes); stage D2 (the output
        # register): shift and saturate to int32 -- the rounded value is in range when
        # every bit of the sum from truncate + 31 up equals its sign (a mask, not a
        # full-width compare)
        kc = Signal(signed(ACC_BITS + 2))
        m.d.comb += kc.eq(((Const(1, 33) << self.truncate) >> 1) - 1)
        w3 = ACC_BITS + 2
        d1 = [Signal(signed(w3), name=f"d1_{j}") for j in range(t)]
        d1_valid, d1_last = Signal(), Signal()
        # the output register D2 feeds a skid buffer, so the SDP's ``ready`` (decided by its
        # feeder from the layer's check and its own pipeline) ends at the buffer's registers
        # instead of enabling D1, D2, the saturation counter and the FIFO read
        m.submodules.out_skid = out_skid = ResetInserter(self.clear)(
            SkidBuffer(self.out.payload.shape()))
        d2 = out_skid.i
        out_valid = d2.valid
        d_adv = Signal()                     # the output register is empty or being taken
        m.d.comb += d_adv.eq(~out_valid | d2.ready)
        sent = Signal()                      # the FIFO head's transfer idx enters D1
        m.d.comb += sent.eq(q.r_rdy & d_adv)
        if self._fp:
            # fp16: the T lanes' fp32 codes (only the first n / 2 transfers carry them), no
            # rounding constant; the code passes D2 unchanged, never saturating
            lane = Signal(data.ArrayLayout(signed(ACC_BITS), t))
            with m.Switch(idx):
                for i in range(n // 2):
                    with m.Case(i):
                        m.d.comb += lane.eq(head.data.as_value()[i * t * ACC_BITS:
                                                                 (i + 1) * t * ACC_BITS])
            fp32 = [Cat(fp48_to_fp32(m, lane[j], name=f"fp48to32_{j}"), Const(0, w3 - 32))
                    for j in range(t)]
        with m.If(d_adv):
            m.d.sync += [d1_valid.eq(q.r_rdy), d1_last.eq(head.end & final)]
            with m.Switch(idx):
                for i in range(n):
                    with m.Case(i):
                        for j in range(t):
                            x = head.data[i * t + j]
                            cin = ~(x[-1] & (self.truncate != 0))
                            if self._fp and i < n // 2:
                                m.d.sync += d1[j].eq(Mux(self.fp16, fp32[j], x + kc + cin))
                            else:
                                m.d.sync += d1[j].eq(x + kc + cin)
        with m.If(sent):
            m.d.sync += idx.eq(Mux(final, 0, idx + 1))
        m.d.comb += q.r_en.eq(sent & final)
        used_next = Signal.like(used)
        m.d.comb += used_next.eq(used + (take & self.psum.payload.last) - q.r_en)
        m.d.sync += [used.eq(used_next), room.eq(used_next < self._depth)]

        mask = Signal(w3)
        m.d.comb += mask.eq(Const((1 << w3) - 1, w3) << (self.truncate + 31))
        sat = Signal(t)
        # the step's overflows, added to the count a cycle later: the overflow test and the
        # 33-bit count are two paths, not one
        sat_n = Signal(range(t + 1))
        m.d.sync += sat_n.eq(0)
        with m.If(d_adv):
            m.d.sync += [out_valid.eq(d1_valid), d2.payload.last.eq(d1_last)]
            for j in range(t):
                sign = d1[j][-1]
                ovf = Signal(name=f"ovf{j}")
                big = ((d1[j].as_unsigned() ^ sign.replicate(w3)) & mask).any()
                if self._fp:
                    m.d.comb += ovf.eq(big & ~self.fp16)
                else:
                    m.d.comb += ovf.eq(big)
                m.d.comb += sat[j].eq(ovf & d1_valid)
                val = (d1[j] >> self.truncate)[:32]
                if self._fp:
                    val = Mux(self.fp16, d1[j][:32], val)
                m.d.sync += d2.payload.data[j].eq(
                    Mux(ovf, Mux(sign, _I32_MIN, _I32_MAX), val))
            m.d.sync += sat_n.eq(sum(sat[j] for j in range(t)))
        count = Signal(33)
        m.d.comb += count.eq(self.sat_count + sat_n)
        m.d.sync += self.sat_count.eq(Mux(count[32], 0xFFFF_FFFF, count[:32]))
        wiring.connect(m, out_skid.o, wiring.flipped(self.out))
        taken = self.out.valid & self.out.ready
        m.d.sync += self.done.eq(taken & self.out.payload.last)

        busy = (s1_valid | s2_valid | (q.w_level != 0) | d1_valid | out_valid | self.out.valid
                | (sat_n != 0))
        if self._fp:
            busy = busy | f2_valid
            with m.If(self.clear):
                m.d.sync += f2_valid.eq(0)
        m.d.comb += self.busy.eq(busy)

        with m.If(self.clear):
            m.d.sync += [s1_valid.eq(0), s2_valid.eq(0), used.eq(0), room.eq(1), idx.eq(0),
                         d1_valid.eq(0),
                         out_valid.eq(0), self.sat_count.eq(0), sat_n.eq(0), self.done.eq(0)]
        return m
