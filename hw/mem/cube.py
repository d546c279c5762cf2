"""Cube reader and cube writer: the reusable memory movers every unit uses (spec: Memory
interface, MCIF / CVIF client side; data-format spec: memory atoms, line / surface / batch
strides).

The port contract is :mod:`hw.mem.dma`. A *cube command* (:func:`hw.mem.dma.cube_layout`) names
``batches x surfaces x lines`` lines of ``line_atoms`` atoms (all counts minus one); the
reader turns it into one DMA read request per line and the returned memory words into
:func:`hw.mem.dma.atom_words_layout` transfers (atoms packed from lane 0, a new transfer at every
line start); the writer does the reverse: one DMA write request per line and the packed atom
words placed back at their memory position with exact atom masks.

Lines start on any atom, so with ``atoms_per_word > 1`` a line generally starts at a non-zero
lane of a memory word. Both directions therefore carry a *realigner*: a one-word holding
register and a rotation by the line's start lane, which keeps one full word per cycle in
steady state. When a line's last packed word and last memory word differ, one extra
("flush") word ends the line: the reader takes the next line's first memory word in that same
cycle (so its memory side never pauses); the writer's flush cycle is a memory word too (one
input pause, no output pause).

Commands are pipelined: the next command is accepted in the cycle the previous cube's last
request is issued, provided a small queue has room (reader: ``queue`` cubes whose data is
not yet delivered; writer: ``queue`` cubes awaiting completion), so request issue of cube
``k+1`` overlaps the data of cube ``k``. Contiguous lines are not merged into larger
requests: every request is exactly one line.

:class:`AtomSerializer` and :class:`AtomPacker` convert between atom words and one atom per
transfer, for units that process a single atom at a time.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from hw.mem.dma import (REQUEST_ATOMS_BITS, DmaGeometry, DmaReadPort, DmaWritePort,
                    atom_words_layout, cube_layout)

__all__ = ["CubeReader", "CubeWriter", "AtomSerializer", "AtomPacker", "atom_layout"]


def atom_layout(geom: DmaGeometry) -> data.StructLayout:
    """One atom of a cube with its line / cube end flags (the serialised form)."""
    return data.StructLayout({"data": geom.atom_bits, "last_line": 1, "last": 1})


def _lane_bits(geom):
    return max(1, (geom.atoms_per_word - 1).bit_length())


def _rotate(m, word, amount, geom, left):
    """``word`` rotated by ``amount`` atoms (variable); lane ``i`` of a right rotation is
    lane ``i + amount`` of ``word``."""
    apw, ab = geom.atoms_per_word, geom.atom_bits
    if apw == 1:
        return word
    options = []
    for k in range(apw):
        options.append(word.rotate_left(k * ab) if left else word.rotate_right(k * ab))
    out = Signal(geom.word_bits)
    m.d.comb += out.eq(Array(options)[amount])
    return out


def _lanes_below(n, apw):
    """Mask of lanes ``0 .. n-1`` (``n`` in ``0 .. apw``)."""
    return Cat(*[n > i for i in range(apw)])


def _merge(hold, rot, n, geom):
    """Lanes below ``n`` from ``hold``, the others from ``rot``."""
    ab = geom.atom_bits
    return Cat(*[Mux(n > i, hold[i * ab:(i + 1) * ab], rot[i * ab:(i + 1) * ab])
                 for i in range(geom.atoms_per_word)])


class _LineWalker(wiring.Component):
    """Walks a cube command and emits one line request per line (batch, surface, line order)
    with running addresses (adders only, addresses wrap at ``addr_width``).

    ``req`` carries the request plus the line's start lane and a ``last`` flag (cube's final
    line). ``enable`` gates acceptance of the next command.
    """

    def __init__(self, geom: DmaGeometry):
        self.geom = geom
        lw = _lane_bits(geom)
        self.line_layout = data.StructLayout({
            "addr": geom.addr_width, "atoms": REQUEST_ATOMS_BITS, "ram_type": 1,
            "lane": lw, "last": 1})
        super().__init__({
            "cmd": In(stream.Signature(cube_layout(geom))),
            "req": Out(stream.Signature(self.line_layout)),
            "enable": In(1),
            "active": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geom
        aw = g.addr_width
        c = Signal(cube_layout(g))
        line_addr, surf_addr, batch_addr = (Signal(aw, name=n) for n in ("la", "sa", "ba"))
        h, s, b = Signal(13), Signal(13), Signal(5)
        active = self.active

        low = (1 << g.atom_shift) - 1
        m.d.comb += [
            self.req.valid.eq(active),
            self.req.payload.addr.eq(line_addr & ~Const(low, aw)),
            self.req.payload.atoms.eq(c.line_atoms),
            self.req.payload.ram_type.eq(c.ram_type),
            self.req.payload.lane.eq(line_addr[g.atom_shift:g.word_shift]
                                     if g.atoms_per_word > 1 else 0),
            self.req.payload.last.eq((h == 0) & (s == 0) & (b == 0)),
        ]
        with m.If(self.req.valid & self.req.ready):
            with m.If(h != 0):
                m.d.sync += [h.eq(h - 1), line_addr.eq(line_addr + c.line_stride)]
            with m.Elif(s != 0):
                nxt = (surf_addr + c.surface_stride)[:aw]
                m.d.sync += [s.eq(s - 1), h.eq(c.lines), surf_addr.eq(nxt),
                             line_addr.eq(nxt)]
            with m.Elif(b != 0):
                nxt = (batch_addr + c.batch_stride)[:aw]
                m.d.sync += [b.eq(b - 1), s.eq(c.surfaces), h.eq(c.lines),
                             batch_addr.eq(nxt), surf_addr.eq(nxt), line_addr.eq(nxt)]
            with m.Else():
                m.d.sync += active.eq(0)

        # the next command is taken when idle or with the current cube's last request
        m.d.comb += self.cmd.ready.eq(self.enable & (~active | (
            self.req.valid & self.req.ready & self.req.payload.last)))
        with m.If(self.cmd.valid & self.cmd.ready):
            p = self.cmd.payload
            m.d.sync += [c.eq(p), active.eq(1), line_addr.eq(p.base), surf_addr.eq(p.base),
                         batch_addr.eq(p.base), h.eq(p.lines), s.eq(p.surfaces),
                         b.eq(p.batches)]
        return m


class CubeReader(wiring.Component):
    """Reads a cube through a DMA read port and delivers its atoms packed from lane 0.

    Members
        ``cmd``   in, :func:`hw.mem.dma.cube_layout` -- one command is one whole cube.
        ``dma``   out, :class:`hw.mem.dma.DmaReadPort` -- one request per line, issued ahead of
                  the data (as many outstanding as the interface accepts).
        ``data``  out, :func:`hw.mem.dma.atom_words_layout` -- every line starts a new transfer;
                  ``last_line`` / ``last`` flag a line's and the cube's final transfer.
                  Lanes outside ``mask`` are undefined.
        ``busy``  out -- a command is accepted and not all its data delivered.
        ``stall`` out -- a request is waiting for the interface this cycle.

    ``queue``: how many accepted cubes may still owe data (their line counts wait in a FIFO
    for the data side). The next command is taken with the current cube's last request.
    Output is registered; ``dma.resp.ready`` depends combinationally on ``data.ready``.
    """

    def __init__(self, geom: DmaGeometry, *, queue: int = 8):
        self.geom = geom
        self.queue = queue
        super().__init__({
            "cmd": In(stream.Signature(cube_layout(geom))),
            "dma": Out(DmaReadPort(geom)),
            "data": Out(stream.Signature(atom_words_layout(geom))),
            "busy": Out(1),
            "stall": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geom
        apw, lw = g.atoms_per_word, _lane_bits(g)
        cw = apw.bit_length()                # atom counts 0 .. apw (totals 0 .. 2*apw)

        # -- request side -------------------------------------------------------------------
        m.submodules.walker = walker = _LineWalker(g)
        counts = data.StructLayout({"line_atoms": REQUEST_ATOMS_BITS, "lines": 13,
                                    "surfaces": 13, "batches": 5})
        m.submodules.cubes = cubes = SyncFIFOBuffered(width=counts.size, depth=self.queue)
        m.d.comb += [
            walker.cmd.valid.eq(self.cmd.valid), walker.cmd.payload.eq(self.cmd.payload),
            self.cmd.ready.eq(walker.cmd.ready), walker.enable.eq(cubes.w_rdy),
            self.dma.req.valid.eq(walker.req.valid),
            self.dma.req.payload.addr.eq(walker.req.payload.addr),
            self.dma.req.payload.atoms.eq(walker.req.payload.atoms),
            self.dma.req.payload.ram_type.eq(walker.req.payload.ram_type),
            walker.req.ready.eq(self.dma.req.ready),
            self.stall.eq(self.dma.req.valid & ~self.dma.req.ready),
        ]

        # -- data side: line / cube counters ------------------------------------------------
        d_active = Signal()
        d_line_atoms, d_lines, d_surfaces = Signal(REQUEST_ATOMS_BITS), Signal(13), Signal(13)
        d_h, d_s, d_b = Signal(13), Signal(13), Signal(5)
        d_left = Signal(REQUEST_ATOMS_BITS + 1)

        # -- realigner state and the output register ----------------------------------------
        hold = Signal(g.word_bits)
        hcnt = Signal(cw)
        flush, flush_last = Signal(), Signal()
        out = self.data
        can_load = ~out.valid | out.ready
        m.d.comb += self.dma.resp.ready.eq(d_active & can_load)

        resp = self.dma.resp.payload
        mask = resp.mask
        lo = Signal(lw)
        for i in reversed(range(apw)):
            with m.If(mask[i]):
                m.d.comb += lo.eq(i)
        cnt = Signal(cw)
        m.d.comb += cnt.eq(sum(mask[i] for i in range(apw)))
        # while the flush word leaves, a new line's first word starts from an empty hold
        held = Signal(cw)
        m.d.comb += held.eq(Mux(flush, 0, hcnt))
        rot = _rotate(m, resp.data, (lo - held)[:lw], g, left=False)
        comb = _merge(hold, rot, held, g)
        total = Signal(cw + 1)
        m.d.comb += total.eq(held + cnt)
        line_end = d_left == cnt
        last_line_of_cube = (d_h == 0) & (d_s == 0) & (d_b == 0)
        cube_end = Signal()
        take = self.dma.resp.valid & self.dma.resp.ready
        m.d.comb += cube_end.eq(take & line_end & last_line_of_cube)

        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)

        with m.If(flush & can_load):
            m.d.sync += [out.valid.eq(1), out.payload.data.eq(hold),
                         out.payload.mask.eq(_lanes_below(hcnt, apw)),
                         out.payload.last_line.eq(1), out.payload.last.eq(flush_last),
                         flush.eq(0), hcnt.eq(0)]

        with m.If(take & flush):
            # the output register is taken by the flush word: park this word in the hold
            # (up to a full word); a one-word line becomes the next flush word
            m.d.sync += [hold.eq(rot), hcnt.eq(cnt), flush.eq(line_end),
                         flush_last.eq(last_line_of_cube)]
        with m.Elif(take & line_end):
            m.d.sync += [out.valid.eq(1), out.payload.data.eq(comb)]
            with m.If(total > apw):
                m.d.sync += [out.payload.mask.eq((1 << apw) - 1),
                             out.payload.last_line.eq(0), out.payload.last.eq(0),
                             flush.eq(1), flush_last.eq(last_line_of_cube),
                             hold.eq(rot), hcnt.eq(total - apw)]
            with m.Else():
                m.d.sync += [out.payload.mask.eq(_lanes_below(total, apw)),
                             out.payload.last_line.eq(1),
                             out.payload.last.eq(last_line_of_cube), hcnt.eq(0)]
        with m.Elif(take):
            with m.If(total >= apw):
                m.d.sync += [out.valid.eq(1), out.payload.data.eq(comb),
                             out.payload.mask.eq((1 << apw) - 1),
                             out.payload.last_line.eq(0), out.payload.last.eq(0),
                             hold.eq(rot), hcnt.eq(total - apw)]
            with m.Else():
                m.d.sync += [hold.eq(comb), hcnt.eq(total)]

        with m.If(take & line_end):
            m.d.sync += d_left.eq(d_line_atoms + 1)
            with m.If(d_h != 0):
                m.d.sync += d_h.eq(d_h - 1)
            with m.Elif(d_s != 0):
                m.d.sync += [d_s.eq(d_s - 1), d_h.eq(d_lines)]
            with m.Elif(d_b != 0):
                m.d.sync += [d_b.eq(d_b - 1), d_s.eq(d_surfaces), d_h.eq(d_lines)]
            with m.Else():
                m.d.sync += d_active.eq(0)
        with m.Elif(take):
            m.d.sync += d_left.eq(d_left - cnt)

        # -- cube count queue: command -> data side -----------------------------------------
        w_counts, nxt = Signal(counts), Signal(counts)
        p = self.cmd.payload
        m.d.comb += [
            w_counts.line_atoms.eq(p.line_atoms), w_counts.lines.eq(p.lines),
            w_counts.surfaces.eq(p.surfaces), w_counts.batches.eq(p.batches),
            cubes.w_data.eq(w_counts), cubes.w_en.eq(self.cmd.valid & self.cmd.ready),
            nxt.eq(cubes.r_data), cubes.r_en.eq(~d_active | cube_end),
        ]
        with m.If(cubes.r_rdy & cubes.r_en):
            m.d.sync += [d_active.eq(1),
                         d_line_atoms.eq(nxt.line_atoms), d_left.eq(nxt.line_atoms + 1),
                         d_lines.eq(nxt.lines), d_surfaces.eq(nxt.surfaces),
                         d_h.eq(nxt.lines), d_s.eq(nxt.surfaces), d_b.eq(nxt.batches)]

        inflight = Signal(range(self.queue + 3))
        m.d.sync += inflight.eq(inflight + (self.cmd.valid & self.cmd.ready)
                                - (out.valid & out.ready & out.payload.last))
        m.d.comb += self.busy.eq(inflight != 0)
        return m


class CubeWriter(wiring.Component):
    """Writes a cube, given as packed atom words, through a DMA write port.

    Members
        ``cmd``   in, :func:`hw.mem.dma.cube_layout` -- one command is one whole cube.
        ``data``  in, :func:`hw.mem.dma.atom_words_layout` -- atoms packed from lane 0, every line
                  starting a new transfer. Line ends come from the cube geometry; ``mask``,
                  ``last_line`` and ``last`` are not checked.
        ``dma``   out, :class:`hw.mem.dma.DmaWritePort` -- one request per line, its words at
                  memory position with exactly the line's atoms in ``mask``.
        ``done``  out -- high for one cycle per cube once every request of that cube has
                  completed (``dma.done``); cubes complete in command order.
        ``busy``  out -- a command is accepted and its ``done`` not yet given.
        ``stall`` out -- a request is waiting for the interface this cycle.

    Requests run at most ``line_queue`` lines ahead of the data; a line's data words never
    precede its request, and may follow it by one cycle: the line queue is a plain
    (first-word-fall-through) FIFO, not a buffered one. The interface grants a write burst
    only while ``dma.dat`` offers a word and holds one request until its burst is granted,
    so a request leads its data by at most about two lines; with the buffered FIFO's extra
    cycle, one-atom lines (CDP's pixel-by-pixel cube) streamed at 3 per 4 cycles instead of
    one per cycle. ``queue``: how many cubes may await their completions; the next
    command is taken with the current cube's last request. ``dma.dat`` is registered;
    ``data.ready`` depends combinationally on ``dma.dat.ready``.
    """

    def __init__(self, geom: DmaGeometry, *, line_queue: int = 4, queue: int = 4):
        self.geom = geom
        self.line_queue, self.queue = line_queue, queue
        super().__init__({
            "cmd": In(stream.Signature(cube_layout(geom))),
            "data": In(stream.Signature(atom_words_layout(geom))),
            "dma": Out(DmaWritePort(geom)),
            "done": Out(1),
            "busy": Out(1),
            "stall": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geom
        apw, lw = g.atoms_per_word, _lane_bits(g)
        cw = apw.bit_length()

        # -- request side: walker -> dma.req and the line queue -----------------------------
        m.submodules.walker = walker = _LineWalker(g)
        line = data.StructLayout({"atoms": REQUEST_ATOMS_BITS, "lane": lw})
        m.submodules.lines = lines = SyncFIFO(width=line.size, depth=self.line_queue)
        m.submodules.marks = marks = SyncFIFOBuffered(width=32, depth=self.queue)
        issued, acked = Signal(32), Signal(32)

        wreq = walker.req
        room = Signal()
        m.d.comb += [
            walker.cmd.valid.eq(self.cmd.valid), walker.cmd.payload.eq(self.cmd.payload),
            self.cmd.ready.eq(walker.cmd.ready), walker.enable.eq(marks.w_rdy),
            room.eq(lines.w_rdy & (marks.w_rdy | ~wreq.payload.last)),
            self.dma.req.valid.eq(wreq.valid & room),
            self.dma.req.payload.addr.eq(wreq.payload.addr),
            self.dma.req.payload.atoms.eq(wreq.payload.atoms),
            self.dma.req.payload.ram_type.eq(wreq.payload.ram_type),
            wreq.ready.eq(self.dma.req.ready & room),
            self.stall.eq(self.dma.req.valid & ~self.dma.req.ready),
        ]
        issue = wreq.valid & wreq.ready
        lw_data = Signal(line)
        m.d.comb += [
            lw_data.atoms.eq(wreq.payload.atoms), lw_data.lane.eq(wreq.payload.lane),
            lines.w_data.eq(lw_data), lines.w_en.eq(issue),
            marks.w_data.eq(issued + 1), marks.w_en.eq(issue & wreq.payload.last),
        ]
        with m.If(issue):
            m.d.sync += issued.eq(issued + 1)

        # -- completions --------------------------------------------------------------------
        m.d.sync += acked.eq(acked + self.dma.done)
        reached = Signal()
        m.d.comb += [reached.eq(~(acked - marks.r_data)[31]),
                     self.done.eq(marks.r_rdy & reached),
                     marks.r_en.eq(self.done)]

        # -- data side ----------------------------------------------------------------------
        w_active, first = Signal(), Signal()
        w_left = Signal(REQUEST_ATOMS_BITS + 1)
        lane = Signal(lw)
        hold = Signal(g.word_bits)
        flush = Signal()
        fcnt = Signal(cw)
        out = self.dma.dat
        can_load = ~out.valid | out.ready
        m.d.comb += self.data.ready.eq(w_active & can_load & ~flush)
        take = self.data.valid & self.data.ready

        cnt = Signal(cw)
        m.d.comb += cnt.eq(Mux(w_left >= apw, apw, w_left))
        line_end = w_left <= apw
        rot = _rotate(m, self.data.payload.data, lane, g, left=True)
        end_lane = Signal(cw + 1)                   # one past the word's last atom
        m.d.comb += end_lane.eq(lane + cnt)
        hold_mask = Mux(first, 0, _lanes_below(lane, apw))
        new_mask = _lanes_below(end_lane, apw) & ~_lanes_below(lane, apw)

        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(flush & can_load):
            m.d.sync += [out.valid.eq(1), out.payload.data.eq(hold),
                         out.payload.mask.eq(_lanes_below(fcnt, apw)), flush.eq(0)]
        with m.If(take):
            m.d.sync += [out.valid.eq(1), out.payload.data.eq(_merge(hold, rot, lane, g)),
                         out.payload.mask.eq(hold_mask | new_mask),
                         hold.eq(rot), first.eq(0)]
            with m.If(line_end):
                m.d.sync += w_active.eq(0)
                with m.If(end_lane > apw):
                    m.d.sync += [flush.eq(1), fcnt.eq(end_lane - apw)]
            with m.Else():
                m.d.sync += w_left.eq(w_left - apw)

        nxt = Signal(line)
        m.d.comb += [nxt.eq(lines.r_data),
                     lines.r_en.eq(~w_active | (take & line_end))]
        with m.If(lines.r_rdy & lines.r_en):
            m.d.sync += [w_active.eq(1), first.eq(1), w_left.eq(nxt.atoms + 1),
                         lane.eq(nxt.lane)]

        inflight = Signal(range(self.queue + 3))
        m.d.sync += inflight.eq(inflight + (self.cmd.valid & self.cmd.ready) - self.done)
        m.d.comb += self.busy.eq(inflight != 0)
        return m


class AtomSerializer(wiring.Component):
    """Splits atom words (packed from lane 0) into one atom per transfer; ``last_line`` /
    ``last`` go with a word's final atom. Combinational (no added latency)."""

    def __init__(self, geom: DmaGeometry):
        self.geom = geom
        super().__init__({
            "i": In(stream.Signature(atom_words_layout(geom))),
            "o": Out(stream.Signature(atom_layout(geom))),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geom
        apw = g.atoms_per_word
        i, o = self.i, self.o
        if apw == 1:
            m.d.comb += [o.valid.eq(i.valid), i.ready.eq(o.ready),
                         o.payload.data.eq(i.payload.data),
                         o.payload.last_line.eq(i.payload.last_line),
                         o.payload.last.eq(i.payload.last)]
            return m
        idx = Signal(range(apw))
        final = Signal()
        m.d.comb += [
            final.eq((idx == apw - 1) | ~Cat(i.payload.mask, 0).bit_select(idx + 1, 1)),
            o.valid.eq(i.valid),
            o.payload.data.eq(i.payload.data.word_select(idx, g.atom_bits)),
            o.payload.last_line.eq(i.payload.last_line & final),
            o.payload.last.eq(i.payload.last & final),
            i.ready.eq(o.ready & final),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += idx.eq(Mux(final, 0, idx + 1))
        return m


class AtomPacker(wiring.Component):
    """Packs one atom per transfer into atom words from lane 0, closing a word when it is full
    or at ``last_line`` / ``last`` (the inverse of :class:`AtomSerializer`). Registered
    output, one atom per cycle."""

    def __init__(self, geom: DmaGeometry):
        self.geom = geom
        super().__init__({
            "i": In(stream.Signature(atom_layout(geom))),
            "o": Out(stream.Signature(atom_words_layout(geom))),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geom
        apw, ab = g.atoms_per_word, g.atom_bits
        i, o = self.i, self.o
        buf = Signal(g.word_bits)
        cnt = Signal(range(apw))
        m.d.comb += i.ready.eq(~o.valid | o.ready)
        with m.If(o.ready):
            m.d.sync += o.valid.eq(0)
        word = Signal(g.word_bits)
        m.d.comb += word.eq(buf)
        for k in range(apw):
            with m.If(cnt == k):
                m.d.comb += word[k * ab:(k + 1) * ab].eq(i.payload.data)
        complete = (cnt == apw - 1) | i.payload.last_line | i.payload.last
        with m.If(i.valid & i.ready):
            with m.If(complete):
                m.d.sync += [o.valid.eq(1), o.payload.data.eq(word),
                             o.payload.mask.eq(_lanes_below(cnt + 1, apw)),
                             o.payload.last_line.eq(i.payload.last_line | i.payload.last),
                             o.payload.last.eq(i.payload.last), cnt.eq(0)]
            with m.Else():
                m.d.sync += [buf.eq(word), cnt.eq(cnt + 1)]
        return m
