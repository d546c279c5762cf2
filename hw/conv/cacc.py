"""CACC: the convolution accumulator (int8; int16 on builds with it; spec
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

Completion (``D_CLIP_CFG.CLIP_TRUNCATE`` = ``truncate``)
    Each sum is shifted right by ``truncate`` rounding to nearest, ties away from zero
    (:func:`sim.formats.common.round_shift_right`: ``(x + half - (x < 0)) >> truncate`` with
    ``half = 2**truncate / 2``), then saturated to int32; every saturated element counts in
    ``sat_count`` (``D_OUT_SATURATION``, itself saturating at 2**32 - 1).

Delivery
    Completed positions enter a FIFO of ``max_stripe`` positions (a whole stripe, so one
    stripe drains to the SDP while the next accumulates: the assembly buffer and the FIFO are
    the double buffer) and leave in completion order, each as ``AK / T`` transfers of ``T =
    sdp_bs_throughput`` int32 lanes (channels ``i*T .. i*T+T-1``). ``last`` marks the final
    transfer of the position whose psum had ``end=1``; ``done`` pulses the cycle after it.

Pipeline (ready-gated: all stages advance unless a completed position waits for a full FIFO,
so back-pressure on ``out`` stalls ``psum`` without loss)::

    psum --> [read assembly row] --> [add; write back or complete] --> [round-shift]
         --> [saturate, count] --> FIFO --> T lanes per cycle --> out

int16 layers (builds where :func:`~hw.conv.common.conv_int16` holds; ``int16`` in, the
layer's precision): the psums carry ``AK / 2`` kernels' sums (a kernel group of int16), kept in
the same :data:`~hw.conv.common.ACC_BITS` = 48 bits (NVDLA's int16 accumulators), truncated
and saturated to int32 as int8; each position leaves as ``AK / 2 / T`` transfers (an int16 SDP
surface is ``memory_atom / 2 = AK / 2`` channels).

One psum per cycle while the FIFO has room; a psum with ``last=1`` reaches the FIFO 4 cycles
after its transfer, and ``out`` 2 cycles later (the FIFO's latency) when the FIFO was empty.
``clear`` (layer start) empties the pipeline and FIFO and zeroes ``sat_count``; no psum is
accepted while it is high.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, ResetInserter, Signal, signed
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import ACC_BITS, conv_int16, conv_out_layout, max_stripe, psum_layout

__all__ = ["Cacc"]

_I32_MAX = (1 << 31) - 1
_I32_MIN = -(1 << 31)


class Cacc(wiring.Component):
    """Accumulator, truncation/saturation and SDP delivery (see module docstring).

    Ports: ``psum`` in (:func:`~hw.conv.common.psum_layout`), ``out`` out
    (:func:`~hw.conv.common.conv_out_layout`), ``truncate`` (CLIP_TRUNCATE), ``kernels_m1``
    (D_DATAOUT_CHANNEL, informational), ``clear`` in; ``sat_count``, ``done``, ``busy`` out.
    """

    def __init__(self, cfg):
        self._cfg = cfg
        self._ak, self._t = cfg.atomic_k, cfg.sdp_bs_throughput
        if self._ak % self._t:
            raise ValueError(f"{cfg.name}: sdp_bs_throughput={self._t} must divide "
                             f"atomic_k={self._ak}")
        self._depth = max_stripe(cfg)
        self._i16 = conv_int16(cfg)
        if self._i16 and (self._ak // 2) % self._t:
            raise ValueError(f"{cfg.name}: sdp_bs_throughput={self._t} must divide "
                             f"atomic_k / 2 = {self._ak // 2} (int16 kernel groups)")
        extra = {"int16": In(1)} if self._i16 else {}
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
        res_layout = data.StructLayout({"data": data.ArrayLayout(signed(32), ak), "end": 1})

        # ---- assembly buffer ------------------------------------------------------------
        m.submodules.asm = asm = memory.Memory(shape=acc_layout, depth=self._depth, init=[])
        wp = asm.write_port()
        rp = asm.read_port(transparent_for=(wp,))

        # ---- completed positions ----------------------------------------------------------
        q = fifo.SyncFIFOBuffered(width=res_layout.size, depth=self._depth)
        m.submodules.fifo = q = ResetInserter({"sync": self.clear})(q)

        # ---- pipeline control -----------------------------------------------------------
        s1_valid, s2_valid, s3_valid = Signal(), Signal(), Signal()
        adv = Signal()
        m.d.comb += adv.eq(~s3_valid | q.w_rdy)
        m.d.comb += self.psum.ready.eq(adv & ~self.clear)
        take = self.psum.valid & self.psum.ready

        # stage 0: read the position's row
        m.d.comb += [rp.addr.eq(self.psum.payload.pos), rp.en.eq(adv)]

        # stage 1: add, write back (or complete)
        p1 = Signal.like(self.psum.payload, name="s1")
        with m.If(adv):
            m.d.sync += [s1_valid.eq(take), p1.eq(self.psum.payload)]
        new = Signal(acc_layout)
        for k in range(ak):
            old = rp.data[k]
            m.d.comb += new[k].eq(Mux(p1.first, 0, old) + p1.sums[k])   # wraps to ACC_BITS
        m.d.comb += [wp.addr.eq(p1.pos), wp.data.eq(new),
                     wp.en.eq(adv & s1_valid & ~p1.last)]

        # stage 2: round-shift right by truncate, ties away from zero
        v2 = Signal(acc_layout)
        end2 = Signal()
        with m.If(adv):
            m.d.sync += [s2_valid.eq(s1_valid & p1.last), v2.eq(new), end2.eq(p1.end)]
        # floor((x + 2^(t-1) - [x < 0]) / 2^t) is x rounded (x itself for t = 0): the adder's
        # constant depends on truncate alone (shared by the lanes); the shift comes next stage
        kc = Signal(signed(ACC_BITS + 2))
        m.d.comb += kc.eq(((Const(1, 33) << self.truncate) >> 1) - 1)
        t3 = [Signal(signed(ACC_BITS + 2), name=f"t3_{k}") for k in range(ak)]
        end3 = Signal()
        with m.If(adv):
            m.d.sync += [s3_valid.eq(s2_valid), end3.eq(end2)]
            for k in range(ak):
                cin = ~(v2[k][-1] & (self.truncate != 0))
                m.d.sync += t3[k].eq(v2[k] + kc + cin)

        # stage 3: shift, saturate to int32 (the rounded value is in range when every bit of
        # the sum from truncate + 31 up equals its sign: a mask, not a full-width compare),
        # count, push
        w3 = ACC_BITS + 2
        mask = Signal(w3)
        m.d.comb += mask.eq(Const((1 << w3) - 1, w3) << (self.truncate + 31))
        res = Signal(res_layout)
        sat = Signal(ak)
        for k in range(ak):
            sign = t3[k][-1]
            ovf = Signal(name=f"ovf{k}")
            m.d.comb += ovf.eq(((t3[k].as_unsigned() ^ sign.replicate(w3)) & mask).any())
            if self._i16 and k >= ak // 2:         # no kernel of an int16 group
                m.d.comb += sat[k].eq(ovf & ~self.int16)
            else:
                m.d.comb += sat[k].eq(ovf)
            with m.If(ovf):
                m.d.comb += res.data[k].eq(Mux(sign, _I32_MIN, _I32_MAX))
            with m.Else():
                m.d.comb += res.data[k].eq((t3[k] >> self.truncate)[:32])
        m.d.comb += res.end.eq(end3)
        push = Signal()
        m.d.comb += [push.eq(s3_valid & q.w_rdy), q.w_en.eq(push), q.w_data.eq(res)]

        count = Signal(33)
        m.d.comb += count.eq(self.sat_count + sum(sat[k] for k in range(ak)))
        with m.If(push):
            m.d.sync += self.sat_count.eq(Mux(count[32], 0xFFFF_FFFF, count[:32]))

        # ---- delivery: T lanes per transfer ----------------------------------------------
        n = ak // t
        head = res_layout(q.r_data)
        idx = Signal(range(max(n, 2)))
        if self._i16:
            final = Signal()
            m.d.comb += final.eq(idx == Mux(self.int16, n // 2 - 1, n - 1))
        else:
            final = idx == n - 1
        m.d.comb += self.out.valid.eq(q.r_rdy)
        with m.Switch(idx):
            for i in range(n):
                with m.Case(i):
                    for j in range(t):
                        m.d.comb += self.out.payload.data[j].eq(head.data[i * t + j])
        m.d.comb += self.out.payload.last.eq(head.end & final)
        sent = self.out.valid & self.out.ready
        with m.If(sent):
            m.d.sync += idx.eq(Mux(final, 0, idx + 1))
        m.d.comb += q.r_en.eq(sent & final)
        m.d.sync += self.done.eq(sent & self.out.payload.last)

        m.d.comb += self.busy.eq(s1_valid | s2_valid | s3_valid | (q.w_level != 0))

        with m.If(self.clear):
            m.d.sync += [s1_valid.eq(0), s2_valid.eq(0), s3_valid.eq(0), idx.eq(0),
                         self.sat_count.eq(0), self.done.eq(0)]
        return m
