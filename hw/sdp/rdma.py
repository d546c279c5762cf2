"""SDP_RDMA data side: the input cube and the BS/BN/EW operands as datapath transfers
(spec: SDP_RDMA; data-format spec: Feature Data Format, Bias / PReLU / Batch Normalization /
Element-Wise Data Format).

:class:`SdpFeeder` takes the memory atoms of the input cube (MRDMA) and of each operand DMA
(BRDMA / NRDMA / ERDMA), one atom per transfer in memory order, and produces the datapath's
input stream: ``lanes`` (T) channels of one cube position per transfer, with the memory
operands of the same channels beside them.

* Input: an atom holds ``atom / bytes`` channels of one position (int8: 1 byte, int16: 2 bytes
  little endian); it is split into ``atom / bytes / T`` transfers, channel ``j*T + l`` in lane
  ``l`` of transfer ``j``. Positions come surface by surface, line by line, as the cube reader
  delivers them (a 1x1 cube is one line of surfaces; the order is the same).
* Operands: one position of operand data is ``k = components x data_size / bytes`` atoms (1,
  2 or 4): ``group`` channels, each ``[alu, mul]`` (BOTH) or one component, of 1 byte (sign-extended)
  or 2 bytes. Per element, every position has its own ``k`` atoms; per kernel, the ``k`` atoms
  of a surface serve all ``H x W`` positions of that surface. Each operand DMA has a filling
  buffer and a current buffer, so the next position is fetched while the current one is used.

16 -> 8 (``in16to8``, built with ``convert``; data-format spec, Precision Conversion): the
layer is int8 (``int16`` low) but its input atoms are int16 and come in pairs, int16 surfaces
2s then 2s+1 of the same position; the pair is one int8 position's ``atom`` channels, channel
``c`` the c-th 16-bit value of the two atoms side by side, sign-extended.

Flying input (``flying`` high): the transfers come ready-made on ``fly`` (T int32 channels of
one position, the accumulator's output in the same order, ``last`` on the layer's final one)
instead of from ``feat`` atoms, which are then ignored; the position counters and operands work
the same way, so the operand of each channel lines up with its flying transfer. A surface is
``atom / bytes`` channels here too (``atom / bytes / T`` transfers per position).

Rate: T channels per cycle when the input delivers one atom per ``atom/bytes/T`` cycles and each
per-element operand delivers its ``k`` atoms within that time (``k + 1`` cycles for a position:
the buffer hand-over takes one cycle). On builds where an atom is a single transfer
(``atom/bytes == T``) per-element operands therefore slow the layer to one position per
``k + 1`` cycles; per-kernel operands only cost ``k + 1`` cycles per surface.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..mem.cube import atom_layout

__all__ = ["feeder_layout", "fly_layout", "operand_cfg_layout", "SdpFeeder", "STAGES", "USE_MUL", "USE_ALU",
           "USE_BOTH"]

STAGES = ("bs", "bn", "ew")
USE_MUL, USE_ALU, USE_BOTH = 0, 1, 2


def feeder_layout(lanes, stages):
    """The datapath input: T int32 channels, the memory operands of the build's stages."""
    fl = {"data": data.ArrayLayout(signed(32), lanes)}
    for st in stages:
        for unit in ("alu", "mul"):
            fl[f"{st}_{unit}"] = data.ArrayLayout(signed(16), lanes)
    fl["last"] = 1
    return data.StructLayout(fl)


def fly_layout(lanes):
    """A flying input transfer: T int32 channels, ``last`` on the layer's final transfer (the
    shape of :func:`hw.conv.common.conv_out_layout`)."""
    return data.StructLayout({"data": data.ArrayLayout(signed(32), lanes), "last": 1})


def operand_cfg_layout():
    """How one operand DMA's data is laid out (from its D_xRDMA_CFG)."""
    return data.StructLayout({"en": 1, "per_element": 1, "both": 1, "two_byte": 1, "use": 2})


class SdpFeeder(wiring.Component):
    """Input atoms + operand atoms -> datapath input transfers (see the module docstring).

    Parameters: ``geom`` (:class:`hw.mem.dma.DmaGeometry`), ``lanes`` (T), ``stages`` (the build's
    operand stages, a subset of ``("bs", "bn", "ew")``), ``int16`` (the build has int16),
    ``convert`` (the build reads int16 input into int8 layers: the ``in16to8`` port).

    Ports
        ``feat``          input cube atoms, memory order
        ``fly``           :func:`fly_layout` transfers, used instead of ``feat`` when ``flying``
        ``flying``        the layer's input is ``fly`` (else ``feat``)
        ``op_<stage>``    the stage's operand atoms, memory order
        ``int16``         the layer's precision is int16 (else int8)
        ``in16to8``       (``convert``) 16 -> 8: int16 input atoms paired into int8 positions
        ``width_m1``, ``height_m1``  cube size minus one (positions per surface)
        ``cfg_<stage>``   :func:`operand_cfg_layout` of the stage's DMA (``en`` = enabled)
        ``o``             :func:`feeder_layout` transfers, ``last`` on the cube's final one
    Configuration ports must be stable while a layer runs; ``clear`` resets the position
    counters and buffers between layers.
    """

    def __init__(self, geom, lanes, stages, int16=False, convert=False):
        self._geom, self._lanes, self._stages, self._int16 = geom, lanes, tuple(stages), int16
        self._convert = convert
        atom = geom.atom_bytes
        for nbytes in (1, 2) if int16 else (1,):
            if (atom // nbytes) % lanes:
                raise ValueError(f"{lanes} lanes do not divide the {atom // nbytes} channels "
                                 f"of a {atom}-byte atom of {nbytes}-byte elements")
        members = {
            "feat": In(stream.Signature(atom_layout(geom))),
            "fly": In(stream.Signature(fly_layout(lanes))), "flying": In(1),
            "int16": In(1), "width_m1": In(13), "height_m1": In(13), "clear": In(1),
            "o": Out(stream.Signature(feeder_layout(lanes, stages))),
        }
        if convert:
            members["in16to8"] = In(1)
        for st in self._stages:
            members[f"op_{st}"] = In(stream.Signature(atom_layout(geom)))
            members[f"cfg_{st}"] = In(operand_cfg_layout())
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        geom, T = self._geom, self._lanes
        atom = geom.atom_bytes
        fire = Signal()
        m.d.comb += fire.eq(self.o.valid & self.o.ready)

        # -- chunk / position counters ------------------------------------------------------
        chunks8 = atom // T
        chunks16 = atom // 2 // T if self._int16 else chunks8
        j = Signal(range(max(chunks8, 2)))
        j_last = Signal()
        m.d.comb += j_last.eq(j == Mux(self.int16, chunks16 - 1, chunks8 - 1))
        w = Signal(13)
        h = Signal(13)
        pos_end = j_last
        surf_end = Signal()
        m.d.comb += surf_end.eq(pos_end & (w == self.width_m1) & (h == self.height_m1))
        with m.If(fire):
            m.d.sync += j.eq(Mux(j_last, 0, j + 1))
            with m.If(pos_end):
                m.d.sync += w.eq(Mux(w == self.width_m1, 0, w + 1))
                with m.If(w == self.width_m1):
                    m.d.sync += h.eq(Mux(h == self.height_m1, 0, h + 1))

        # -- input atom --------------------------------------------------------------------
        fa = Signal(geom.atom_bits)
        fa_valid = Signal()
        fa_last = Signal()
        m.d.comb += self.feat.ready.eq(~self.flying & (~fa_valid | (fire & j_last)))
        if self._convert:
            # 16 -> 8: the atoms come in pairs (int16 surfaces 2s and 2s+1 of a position);
            # the first waits in ``fa``, the pair makes one int8 position (``fb`` the second)
            fb = Signal(geom.atom_bits)
            second = Signal()
            with m.If(self.feat.valid & self.feat.ready & self.in16to8):
                m.d.sync += second.eq(~second)
                with m.If(second):
                    m.d.sync += fb.eq(self.feat.payload.data)
            with m.If(self.clear):
                m.d.sync += second.eq(0)
            first_half = self.in16to8 & ~second
        with m.If(self.feat.valid & self.feat.ready):
            if self._convert:
                with m.If(~self.in16to8 | first_half):
                    m.d.sync += fa.eq(self.feat.payload.data)
                m.d.sync += [fa_valid.eq(~first_half), fa_last.eq(self.feat.payload.last)]
            else:
                m.d.sync += [fa.eq(self.feat.payload.data), fa_valid.eq(1),
                             fa_last.eq(self.feat.payload.last)]
        with m.Elif(fire & j_last):
            m.d.sync += fa_valid.eq(0)
        for lane in range(T):
            c = j * T + lane
            v8 = fa.word_select(c, 8).as_signed()
            if self._convert:
                v8 = Mux(self.in16to8, Cat(fa, fb).word_select(c, 16).as_signed(), v8)
            if self._int16:
                v16 = fa.word_select(c, 16).as_signed()
                v = Mux(self.int16, v16, v8)
            else:
                v = v8
            m.d.comb += self.o.payload.data[lane].eq(
                Mux(self.flying, self.fly.payload.data[lane], v))
        m.d.comb += self.o.payload.last.eq(
            Mux(self.flying, self.fly.payload.last, fa_last & j_last))

        # -- operands ----------------------------------------------------------------------
        ready_all = []
        kmax = 4
        for st in self._stages:
            port, cfg = getattr(self, f"op_{st}"), getattr(self, f"cfg_{st}")
            cur = Signal(kmax * geom.atom_bits, name=f"{st}_cur")
            cur_valid = Signal(name=f"{st}_cur_valid")
            nxt = Signal(kmax * geom.atom_bits, name=f"{st}_nxt")
            nxt_cnt = Signal(2, name=f"{st}_nxt_cnt")
            nxt_full = Signal(name=f"{st}_nxt_full")
            k_last = Signal(2, name=f"{st}_k_last")
            # atoms per position - 1: components x size / element bytes (int16: size 2)
            ks = cfg.both + cfg.two_byte - (self.int16 & cfg.two_byte)
            m.d.comb += k_last.eq(Mux(ks == 2, 3, Mux(ks == 1, 1, 0)))
            m.d.comb += port.ready.eq(cfg.en & ~nxt_full)
            with m.If(port.valid & port.ready):
                for i in range(kmax):
                    with m.If(nxt_cnt == i):
                        m.d.sync += nxt.word_select(i, geom.atom_bits).eq(port.payload.data)
                m.d.sync += nxt_cnt.eq(Mux(nxt_cnt == k_last, 0, nxt_cnt + 1))
                with m.If(nxt_cnt == k_last):
                    m.d.sync += nxt_full.eq(1)
            release = Signal(name=f"{st}_release")
            m.d.comb += release.eq(fire & Mux(cfg.per_element, pos_end, surf_end))
            with m.If((~cur_valid | release) & nxt_full):
                m.d.sync += [cur.eq(nxt), cur_valid.eq(1), nxt_full.eq(0)]
            with m.Elif(release):
                m.d.sync += cur_valid.eq(0)
            with m.If(self.clear):
                m.d.sync += [cur_valid.eq(0), nxt_full.eq(0), nxt_cnt.eq(0)]
            ready_all.append(~cfg.en | cur_valid)

            for lane in range(T):
                c = j * T + lane
                idx0 = Mux(cfg.both, c * 2, c)
                idx1 = c * 2 + 1

                def value(idx):
                    return Mux(cfg.two_byte, cur.word_select(idx, 16).as_signed(),
                               cur.word_select(idx, 8).as_signed())
                v0, v1 = value(idx0), value(idx1)
                m.d.comb += [
                    self.o.payload[f"{st}_alu"][lane].eq(v0),
                    self.o.payload[f"{st}_mul"][lane].eq(Mux(cfg.use == USE_BOTH, v1, v0)),
                ]

        ops_ok = Signal()
        m.d.comb += ops_ok.eq(Cat(*ready_all).all() if ready_all else 1)
        m.d.comb += [
            self.o.valid.eq(Mux(self.flying, self.fly.valid, fa_valid) & ops_ok),
            self.fly.ready.eq(self.flying & ops_ok & self.o.ready),
        ]
        with m.If(self.clear):
            m.d.sync += [j.eq(0), w.eq(0), h.eq(0), fa_valid.eq(0)]
        return m
