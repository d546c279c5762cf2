"""Compressed weights in the CDMA: fetch the weight mask (WMB) and the packed non-zero weights
through the weight DMA client and expand them into the uncompressed weight byte stream that
the CDMA's weight placement writes into the CBUF (golden model:
:func:`sim.conv.cdma._decompress`, format :mod:`sim.formats.sparse`). Built only for builds
with ``weight_compression``; the CSC and CMAC see the same CBUF contents as for the
uncompressed surface.

Format: bit ``i`` of the WMB surface (bit ``i % 8`` of byte ``i // 8``) is 1 when element
``i`` of the uncompressed weight surface is non-zero (an element is a byte of an int8 layer,
a byte pair of an int16 or fp16 one); the compressed surface (``WEIGHT_BYTES`` bytes from
``WEIGHT_ADDR``) holds those non-zero elements back to back. The WGS surface (compressed
bytes per kernel group) is not needed to expand the stream and is not read: the mask alone
places every element. A 2-byte layer (``wide``, on builds with int16 or fp16) expands with
each mask bit doubled: the byte stream of its elements is the int8 expansion of that mask.

Operation, from ``start`` (registers stable until ``busy`` falls):

* ``out_atoms`` = ceil(``BYTE_PER_KERNEL`` x kernels / atom) uncompressed atoms are produced
  (shift-and-add product over the first cycles), one per cycle at best, each from ``atom``
  mask bits (``atom`` / 2 doubled when ``wide``; one mask atom serves 8 output atoms, 16
  when ``wide``) and as many bytes of a 2-atom window of compressed bytes as those bits
  mark;
* the WMB (the ceil(``out_atoms`` / 8) atoms the output needs) and the whole compressed
  surface (``WEIGHT_BYTES`` / atom atoms) are requested in chunks on the one cube command port,
  interleaved; each chunk is issued only when its FIFO has room for all its atoms (credits),
  so the ordered response stream never blocks; a small tag FIFO routes each command's atoms;
* surfaces that disagree with each other (the golden model's run-time WGS/WMB errors) neither
  hang nor overrun: past the end of the compressed surface the missing bytes read as 0, and
  compressed bytes the mask does not consume are read and dropped. The output is always
  ``out_atoms`` atoms: the weights the mask and the compressed bytes give.

Ports: ``start`` (in, pulse), ``wmb_base`` / ``wt_base`` / ``wt_bytes`` (compressed surface
bytes) / ``bpk`` / ``kernels`` / ``ram_type`` / ``wide`` (built with ``wide=True``: 2-byte
elements) (in, stable while busy), ``cmd`` (out, cube commands), ``atoms`` (in, the
serialized response atoms), ``data_atom`` (out, built with ``wide``: the atom on ``atoms``
is one of the compressed weights, not of the mask), ``o`` (out, uncompressed atoms;
``last`` on the final one), ``busy`` (out: commands, responses or output still pending).
"""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..mem.cube import atom_layout
from ..mem.dma import cube_layout

__all__ = ["WeightDecompressor"]

_DATA_CHUNK_BYTES = 256      #: compressed-weight request size
_MASK_CHUNK_BYTES = 64       #: mask request size


class WeightDecompressor(wiring.Component):
    """``WeightDecompressor(geom, wide=False)`` (see the module docstring; ``wide``: with the
    ``wide`` port for 2-byte elements)."""

    def __init__(self, geom, wide=False):
        self._geom = g = geom
        self._wide = wide
        super().__init__({
            **({"wide": In(1), "data_atom": Out(1)} if wide else {}),
            "start": In(1),
            "wmb_base": In(g.addr_width),
            "wt_base": In(g.addr_width),
            "wt_bytes": In(33),
            "bpk": In(19),
            "kernels": In(14),
            "ram_type": In(1),
            "cmd": Out(stream.Signature(cube_layout(g))),
            "atoms": In(stream.Signature(atom_layout(g))),
            "o": Out(stream.Signature(data.StructLayout({"data": g.atom_bits, "last": 1}))),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self._geom
        ATOM = g.atom_bits // 8
        ash = (ATOM - 1).bit_length()
        dchunk = max(1, _DATA_CHUNK_BYTES // ATOM)
        mchunk = max(1, _MASK_CHUNK_BYTES // ATOM)
        ddepth, mdepth = 2 * dchunk, 2 * mchunk
        m.submodules.dfifo = dfifo = SyncFIFOBuffered(width=g.atom_bits, depth=ddepth)
        m.submodules.mfifo = mfifo = SyncFIFOBuffered(width=g.atom_bits, depth=mdepth)
        m.submodules.tags = tags = SyncFIFOBuffered(width=1, depth=8)   # 1 = data command

        # -- sizes: out bytes = bpk x kernels (shift and add, 14 cycles) -------------------------
        prod = Signal(33)
        pa = Signal(14)
        pb = Signal(33)
        psteps = Signal(range(16))
        with m.If(self.start):
            m.d.sync += [prod.eq(0), pa.eq(self.kernels), pb.eq(self.bpk), psteps.eq(14)]
        with m.Elif(psteps != 0):
            m.d.sync += [prod.eq(prod + Mux(pa[0], pb, 0)), pa.eq(pa >> 1), pb.eq(pb << 1),
                         psteps.eq(psteps - 1)]
        sized = Signal()                       # sizes valid, commands may go
        out_atoms = Signal(34)
        m_atoms = Signal(31)
        d_atoms = Signal(34)
        m.d.comb += [out_atoms.eq((prod + ATOM - 1) >> ash),
                     m_atoms.eq((out_atoms + 7) >> 3)]
        wide = self.wide if self._wide else None    # 2-byte elements: a bit per byte pair
        if self._wide:
            with m.If(wide):
                m.d.comb += m_atoms.eq((out_atoms + 15) >> 4)
        with m.If(self.start):
            m.d.sync += d_atoms.eq(self.wt_bytes >> ash)

        # -- command issue: chunks with credits ------------------------------------------------
        m_iss, d_iss = Signal(31), Signal(34)          # atoms requested
        m_pop, d_pop = Signal(31), Signal(34)          # atoms taken out of the FIFOs
        m_addr, d_addr = Signal(g.addr_width), Signal(g.addr_width)
        m_left = Signal(32)
        d_left = Signal(35)
        m.d.comb += [m_left.eq(m_atoms - m_iss), d_left.eq(d_atoms - d_iss)]
        m_n = Signal(range(mchunk + 1))
        d_n = Signal(range(dchunk + 1))
        m.d.comb += [m_n.eq(Mux(m_left >= mchunk, mchunk, m_left)),
                     d_n.eq(Mux(d_left >= dchunk, dchunk, d_left))]
        m_room = Signal()
        d_room = Signal()
        # (m_iss < m_atoms, not m_left != 0: a new layer's sizes, e.g. a 2-byte layer's
        # smaller mask after an int8 one, may be below what the previous run issued until
        # ``start`` clears the counters, and must not issue a command at the old address)
        m.d.comb += [m_room.eq((m_iss < m_atoms) & (m_iss - m_pop + m_n <= mdepth)),
                     d_room.eq((d_iss < d_atoms) & (d_iss - d_pop + d_n <= ddepth))]
        # the mask first while its FIFO is at most half full (it gates every output atom)
        pick_m = Signal()
        m.d.comb += pick_m.eq(m_room & (~d_room | (m_iss - m_pop <= mchunk)))
        c = self.cmd.payload
        m.d.comb += [
            self.cmd.valid.eq(sized & ~self.start & (m_room | d_room) & tags.w_rdy),
            c.base.eq(Mux(pick_m, m_addr, d_addr)), c.ram_type.eq(self.ram_type),
            c.line_atoms.eq(Mux(pick_m, m_n, d_n) - 1), c.lines.eq(0), c.surfaces.eq(0),
            c.batches.eq(0), c.line_stride.eq(0), c.surface_stride.eq(0),
            c.batch_stride.eq(0),
            tags.w_data.eq(~pick_m), tags.w_en.eq(self.cmd.valid & self.cmd.ready),
        ]
        with m.If(self.cmd.valid & self.cmd.ready):
            with m.If(pick_m):
                m.d.sync += [m_iss.eq(m_iss + m_n), m_addr.eq(m_addr + (m_n << ash))]
            with m.Else():
                m.d.sync += [d_iss.eq(d_iss + d_n), d_addr.eq(d_addr + (d_n << ash))]

        # -- responses: routed by the tag of their command -----------------------------------
        a = self.atoms
        to_d = tags.r_data[0]
        m.d.comb += [
            dfifo.w_data.eq(a.payload.data), mfifo.w_data.eq(a.payload.data),
            dfifo.w_en.eq(a.valid & tags.r_rdy & to_d),
            mfifo.w_en.eq(a.valid & tags.r_rdy & ~to_d),
            a.ready.eq(tags.r_rdy & Mux(to_d, dfifo.w_rdy, mfifo.w_rdy)),
            tags.r_en.eq(a.valid & a.ready & a.payload.last),
        ]
        if self._wide:
            m.d.comb += self.data_atom.eq(to_d)

        # -- expansion -------------------------------------------------------------------------
        mreg = Signal(8 * ATOM)
        midx = Signal(4 if self._wide else 3)          # output atom within the mask atom
        mvalid = Signal()
        win = Signal(16 * ATOM)                        # 2 atoms of compressed bytes, byte 0 first
        cnt = Signal(range(2 * ATOM + 1))              # valid bytes in win (the rest are 0)
        out_left = Signal(34)
        exhausted = Signal()                           # every compressed atom is in win
        m.d.comb += exhausted.eq(d_pop == d_atoms)

        bits = Signal(ATOM)
        m.d.comb += bits.eq(mreg.word_select(midx[:3] if self._wide else midx, ATOM))
        if self._wide:
            assert ATOM % 2 == 0
            half = mreg.word_select(midx, ATOM // 2)
            with m.If(wide):
                m.d.comb += bits.eq(Cat(*(half[j // 2] for j in range(ATOM))))
        prefix = [Signal(range(ATOM + 1), name=f"prefix{j}") for j in range(ATOM + 1)]
        m.d.comb += prefix[0].eq(0)
        for j in range(ATOM):
            m.d.comb += prefix[j + 1].eq(prefix[j] + bits[j])
        n = prefix[ATOM]
        wbytes = Array([win.word_select(i, 8) for i in range(2 * ATOM)])
        out_bytes = [Mux(bits[j], wbytes[prefix[j]], 0) for j in range(ATOM)]
        emit = Signal()
        m.d.comb += [
            self.o.valid.eq(sized & mvalid & (out_left != 0) & ((cnt >= n) | exhausted)),
            self.o.payload.data.eq(Cat(*out_bytes)),
            self.o.payload.last.eq(out_left == 1),
            emit.eq(self.o.valid & self.o.ready),
        ]
        # window after this cycle's consumption, then a refill when an atom fits
        win1 = Signal.like(win)
        cnt1 = Signal.like(cnt)
        with m.If(emit):
            m.d.comb += [win1.eq(win >> (n << 3)), cnt1.eq(Mux(cnt >= n, cnt - n, 0))]
        with m.Else():
            m.d.comb += [win1.eq(win), cnt1.eq(cnt)]
        draining = Signal()                            # output done: drop what is left
        m.d.comb += draining.eq(sized & (out_left == 0))
        refill = Signal()
        m.d.comb += [refill.eq(sized & dfifo.r_rdy & (draining | (cnt1 <= ATOM))),
                     dfifo.r_en.eq(refill)]
        with m.If(refill):
            m.d.sync += [win.eq(win1 | (dfifo.r_data << (cnt1 << 3))),
                         cnt.eq(cnt1 + ATOM), d_pop.eq(d_pop + 1)]
        with m.Else():
            m.d.sync += [win.eq(win1), cnt.eq(cnt1)]
        # mask: the next atom when the current one is used up
        m_used = emit & ((midx == Mux(wide, 15, 7)) if self._wide else (midx == 7))
        m_need = ~mvalid | m_used
        m.d.comb += mfifo.r_en.eq(sized & m_need & mfifo.r_rdy)
        with m.If(emit):
            m.d.sync += [midx.eq(midx + 1), out_left.eq(out_left - 1)]
        with m.If(m_used):
            m.d.sync += mvalid.eq(0)
            if self._wide:                             # (an int8 index wraps by its width)
                m.d.sync += midx.eq(0)
        with m.If(mfifo.r_en):
            m.d.sync += [mreg.eq(mfifo.r_data), mvalid.eq(1), m_pop.eq(m_pop + 1)]

        # -- start ----------------------------------------------------------------------------
        with m.If(self.start):
            m.d.sync += [sized.eq(0), m_iss.eq(0), d_iss.eq(0), m_pop.eq(0), d_pop.eq(0),
                         m_addr.eq(self.wmb_base), d_addr.eq(self.wt_base), mvalid.eq(0),
                         midx.eq(0), win.eq(0), cnt.eq(0), out_left.eq(0)]
        with m.Elif(~sized & (psteps == 1)):
            m.d.sync += [sized.eq(1), out_left.eq((prod + Mux(pa[0], pb, 0) + ATOM - 1) >> ash)]
        pending = Signal()
        m.d.comb += pending.eq((psteps != 0) | (out_left != 0) | (m_iss != m_atoms)
                               | (d_iss != d_atoms) | (d_pop != d_atoms) | (m_pop != m_iss)
                               | tags.r_rdy)
        m.d.comb += self.busy.eq(pending)
        return m
