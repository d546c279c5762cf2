"""PDP_RDMA data side: input atoms (offline) or SDP values (flying) into the pooling core's
``T``-lane transfers (spec: PDP_RDMA; data-format spec: Feature Data Format -- an int16 atom
holds ``atom / 2`` channels of two bytes each, little-endian).

:class:`PdpAtomSplitter` turns one atom of int8 channels into ``G = atom / T`` transfers
(of 2-byte channels -- int16, or fp16 codes -- on builds with int16 or fp16 while ``int16``
is set: ``G / 2`` transfers), lane
``l`` of transfer ``g`` being channel ``g*T + l`` (sign-extended). :class:`LaneAdapter`
re-cuts the SDP's ``Ts``-lane flying output into ``T``-lane transfers (``Ts`` a multiple of
``T``). The read commands themselves (one cube per split) are issued by :class:`hw.pdp.Pdp`.
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..mem.cube import atom_layout
from ..sdp.wdma import out_layout
from .pool import lanes_layout

__all__ = ["PdpAtomSplitter", "LaneAdapter"]


class PdpAtomSplitter(wiring.Component):
    """Atoms (:func:`hw.mem.cube.atom_layout`) -> ``G`` transfers of ``T`` int8 lanes (with
    ``int16=True``: an ``int16`` input selecting ``G / 2`` transfers of int16 lanes)."""

    def __init__(self, geom, lanes, int16=False):
        self._geom, self._T = geom, lanes
        self._G = geom.atom_bytes // lanes
        self._int16 = int16
        ports = {
            "i": In(stream.Signature(atom_layout(geom))),
            "o": Out(stream.Signature(lanes_layout(lanes))),
        }
        if int16:
            ports["int16"] = In(1)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        T, G = self._T, self._G
        g = Signal(range(max(G, 2)))
        last = Signal()
        m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready & last)]
        if self._int16:
            m.d.comb += last.eq(g == Mux(self.int16, G // 2 - 1, G - 1))
        else:
            m.d.comb += last.eq(g == G - 1)
        for l in range(T):
            v8 = self.i.payload.data.word_select(g * T + l, 8).as_signed()
            if self._int16:
                v16 = self.i.payload.data.word_select(g * T + l, 16).as_signed()
                m.d.comb += self.o.payload.data[l].eq(Mux(self.int16, v16, v8))
            else:
                m.d.comb += self.o.payload.data[l].eq(v8)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += g.eq(Mux(last, 0, g + 1))
        return m


class LaneAdapter(wiring.Component):
    """``Ts``-lane values (:func:`hw.sdp.wdma.out_layout`) -> ``T``-lane transfers."""

    def __init__(self, in_lanes, lanes, value_bits=8):
        if in_lanes % lanes and lanes % in_lanes:
            raise ValueError(f"SDP->PDP: {in_lanes} SDP lanes and {lanes} PDP lanes: one "
                             "must be a multiple of the other")
        self._Ts, self._T = in_lanes, lanes
        self._bits = value_bits             # 16 on builds with int16
        super().__init__({
            "i": In(stream.Signature(out_layout(in_lanes))),
            "o": Out(stream.Signature(lanes_layout(lanes))),
        })

    def elaborate(self, platform):
        m = Module()
        if self._Ts < self._T:
            return self._gather(m)
        T, K = self._T, self._Ts // self._T
        k = Signal(range(max(K, 2)))
        last = Signal()
        m.d.comb += [last.eq(k == K - 1), self.o.valid.eq(self.i.valid),
                     self.i.ready.eq(self.o.ready & last)]
        for l in range(T):
            m.d.comb += self.o.payload.data[l].eq(
                self.i.payload.data[l] if K == 1 else
                _select(self.i.payload.data, k, T, l, K))
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += k.eq(Mux(last, 0, k + 1))
        return m


    def _gather(self, m):
        """Fewer SDP lanes than PDP lanes: ``T / Ts`` inputs make one output transfer."""
        Ts, T = self._Ts, self._T
        K = T // Ts
        k = Signal(range(K))
        buf = [Signal(signed(self._bits), name=f"gather{i}") for i in range((K - 1) * Ts)]
        full = Signal()
        m.d.comb += full.eq(k == K - 1)
        m.d.comb += [self.o.valid.eq(self.i.valid & full),
                     self.i.ready.eq(Mux(full, self.o.ready, 1))]
        for l in range(T):
            src = self.i.payload.data[l - (K - 1) * Ts] if l >= (K - 1) * Ts else buf[l]
            m.d.comb += self.o.payload.data[l].eq(src)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += k.eq(Mux(full, 0, k + 1))
            for kk in range(K - 1):
                with m.If(k == kk):
                    for l in range(Ts):
                        m.d.sync += buf[kk * Ts + l].eq(self.i.payload.data[l])
        return m


def _select(arr, k, T, l, K):
    from amaranth.hdl import Array
    return Array(arr[i * T + l] for i in range(K))[k]
