"""MCIF / CVIF: one AXI4 memory interface shared by the DMA clients (spec: System interconnect,
DBBIF and SRAMIF; register blocks NVDLA_MCIF / NVDLA_CVIF).

:class:`Mcif` is instantiated once per memory bus: the MCIF on the DBBIF and, when the build has
one, the CVIF on the SRAMIF. Its clients speak the DMA client interface of :mod:`hw.mem.dma`; the
bus side is an AXI4 master as the spec's DBBIF section describes it:

* INCR bursts only, every beat the full bus width (no ``axsize``/``axburst`` ports), addresses
  aligned to the bus width, at most ``cfg.max_burst_length`` beats, never across a 4 KiB
  boundary. Reads fetch whole DMA words (a word narrower than the bus does not exist: a word
  is at least one bus beat); writes send whole words with byte strobes from the atom mask.
* AXI ID = client index (read and write clients are numbered separately). Read data and write
  responses are expected in order per ID; different IDs may come back in any order and read
  bursts of different IDs may interleave beat by beat.
* At most ``min(cfg.outstanding, OS_CNT + 1)`` read bursts and as many write bursts in flight
  (``CFG_OUTSTANDING_CNT.RD_OS_CNT`` / ``WR_OS_CNT``). The reference design compares its
  in-flight count against the register value plus one, so the register means "value + 1".
  A burst counts from its grant (it enters the AR/AW register) until its last R beat / its B
  response. (The reference counts beats rather than bursts; here the unit is the burst.)

Arbitration (``CFG_RD_WEIGHT_*`` / ``CFG_WR_WEIGHT_*``), as the reference ingress arbiters do
it: weighted round robin over clients that have a burst ready. A client granted afresh keeps
the grant for ``weight`` consecutive bursts as long as it keeps requesting, then the search
moves on to the next requesting client after it in index order; a client that stops
requesting loses its turn at once. A client whose weight is 0 is never granted (it is held
off, as in the reference). The grant unit is one AXI burst. A read client's requests enter
through a skid buffer (:class:`hw.skid.SkidBuffer`: one cycle, full rate), so a client's
``req.ready`` is a register and the arbitration is no part of the client's timing paths.

Read responses: R beats go by RID into the client's response buffer (a ``Memory`` FIFO of
whole words, written beat by beat through a write port of bus-width granularity). A read
burst is granted only when the buffer has room for every word the burst starts (credits), so
R is always accepted (``rready`` = 1) and a client that holds ``resp.ready`` low stalls only
itself. See :func:`response_fifo_depth` for the sizing. The words leave the buffer through a
second skid buffer, so the client's ``resp.ready`` ends at registers (a cycle of latency).

Writes: a granted write burst loads AW and queues a W command; the W engine takes exactly that
burst's beats from the client's ``dat`` stream in grant order (no interleaving between bursts).
A write burst is granted only while the client offers data. B responses are routed by BID; a
client's ``done`` pulses when the last burst of one of its requests is acknowledged.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..skid import SkidBuffer
from .axi import axi_members
from .dma import REQUEST_ATOMS_BITS, DmaReadPort, DmaWritePort, read_request, word_layout

__all__ = ["Mcif", "WeightedRoundRobin", "BurstSplitter", "ResponseBuffer",
           "response_fifo_depth", "burst_plan"]

_4K = 4096


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _pow2ceil(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def response_fifo_depth(cfg, geom, bus_width: int, latency: int) -> int:
    """Words of one client's read response buffer.

    A client reading at full rate has ``latency`` cycles of bus data in flight plus the
    interface's own round trip (grant, AR register, buffer write, committed level, output,
    credit return: under 16 cycles) plus one maximal burst. That many beats, converted to words,
    rounded up to a power of two and clamped to 32..512 words: long enough to stream the
    expected latency at full rate, bounded in area (nv_full's 1200-cycle DBBIF latency is
    clamped to 512 words, enough for full rate up to ~490 cycles of memory latency).
    """
    beats = latency + 16 + cfg.max_burst_length
    words = -(-beats * (bus_width // 8) // geom.word_bytes)
    return min(512, max(32, _pow2ceil(words)))


def burst_plan(cfg, geom, bus_width: int):
    """``(beats_per_word, max_beats, split_words)`` of one bus.

    Bursts normally hold whole words: ``max_beats`` is the largest multiple of the beats per
    word within ``cfg.max_burst_length``. When a word has more beats than a burst may
    (``split_words``), every burst is the largest power of two within the limit, which divides
    the word, so a word is several equal bursts.
    """
    bpw = geom.word_bytes // (bus_width // 8)
    mb = cfg.max_burst_length
    if mb >= bpw:
        return bpw, (mb // bpw) * bpw, False
    return bpw, 1 << _log2(mb), True


def context_layout(geom) -> data.StructLayout:
    """What the response side keeps per read request: first and last lane, words - 1."""
    lane_bits = max(1, _log2(geom.atoms_per_word))
    return data.StructLayout({"lane0": lane_bits, "lane_last": lane_bits,
                              "words": REQUEST_ATOMS_BITS + 1})


class WeightedRoundRobin(wiring.Component):
    """Weighted round-robin arbiter of ``n`` requesters (the reference ``*_ig_arb`` rule).

    ``valid``/``index``/``grant`` (one-hot) name the winner combinationally; the arbiter state
    advances when ``take`` is high in a cycle with ``valid``.
    """

    def __init__(self, n: int):
        self._n = n
        super().__init__({
            "requests": In(n), "weights": In(data.ArrayLayout(8, n)), "take": In(1),
            "valid": Out(1), "index": Out(range(max(2, n))), "grant": Out(n),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._n
        req = Signal(n)
        m.d.comb += req.eq(Cat(self.requests[i] & (self.weights[i] != 0) for i in range(n)))
        last = Signal(range(n + 1), init=n)     # n: nobody granted since reset
        left = Signal(8)                        # grants the last winner still has in a row
        keep = Signal()
        m.d.comb += keep.eq((last != n) & (req.bit_select(last, 1) if n > 1 else req[0])
                            & (left != 0))
        # round robin: the lowest requester above the last winner, else the lowest of all
        # (the last winner itself comes last): two lowest-set-bit picks (x & -x, a carry
        # chain) instead of a priority chain per possible last winner
        above = Signal(n)
        m.d.comb += above.eq(req & (Const((1 << n) - 1, n) << (last + 1))[:n])
        pool = Signal(n)
        m.d.comb += pool.eq(Mux(above != 0, above, req))
        pick = Signal(n)
        m.d.comb += pick.eq(pool & (-pool.as_signed()).as_unsigned()[:n])
        onehot = Signal(n)
        m.d.comb += onehot.eq(Mux(keep, Const(1, n) << last, pick))
        for b in range(len(self.index)):
            m.d.comb += self.index[b].eq(
                Cat(*[onehot[i] for i in range(n) if (i >> b) & 1] or [Const(0, 1)]).any())
        m.d.comb += [
            self.valid.eq(req != 0),
            self.grant.eq(Mux(self.valid, onehot, 0)),
        ]
        with m.If(self.take & self.valid):
            m.d.sync += [
                last.eq(self.index),
                left.eq(Mux(keep, left - 1, self.weights[self.index] - 1)),
            ]
        return m


class BurstSplitter(wiring.Component):
    """Cuts one client's requests into AXI bursts (see :func:`burst_plan`).

    Holds one request at a time. ``valid`` offers the next burst (``addr`` in bytes, ``len`` =
    beats - 1, ``words`` = words that start in it, ``last`` = last burst of the request); it
    advances when ``take`` is high. A new request is accepted in the cycle the last burst of
    the previous one is taken. ``accept`` pulses with the accepted request's ``context``
    (only accepted while ``context_ready``).
    """

    def __init__(self, cfg, geom, bus_width: int):
        self._geom = geom
        self._bus_bytes = bus_width // 8
        self._bpw, self._max_beats, self._split = burst_plan(cfg, geom, bus_width)
        self._beat_bits = geom.addr_width - _log2(self._bus_bytes)
        max_beats_total = (1 << (REQUEST_ATOMS_BITS + 1)) * self._bpw
        self._rem_shape = range(max_beats_total + 1)
        super().__init__({
            "req": In(stream.Signature(read_request(geom))),
            "context_ready": In(1),
            "accept": Out(1),
            "context": Out(context_layout(geom)),
            "valid": Out(1), "addr": Out(geom.addr_width), "len": Out(4),
            "words": Out(range(self._max_beats + 1)), "last": Out(1), "busy": Out(1),
            "take": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        geom, bpw = self._geom, self._bpw
        apw = geom.atoms_per_word
        beats_4k = _4K // self._bus_bytes

        busy = Signal()
        beat_addr = Signal(self._beat_bits)
        rem = Signal(self._rem_shape)
        # the offered burst's length and whether it is the request's last, registered with
        # the burst's address: the arbitration of every client's bursts starts from
        # flip-flops, not from this splitter's length arithmetic
        length = Signal(range(self._max_beats + 1))
        last = Signal()

        def plan(name, addr, remaining):
            """The burst at ``addr`` with ``remaining`` beats: min(max beats, remaining beats,
            beats to the 4 KiB boundary), and whether it ends the request."""
            to_4k = Signal(range(beats_4k + 1), name=f"{name}_to_4k")
            n = Signal(range(self._max_beats + 1), name=f"{name}_len")
            m.d.comb += to_4k.eq(beats_4k - addr[:_log2(beats_4k)])
            with m.If((remaining < self._max_beats) & (remaining < to_4k)):
                m.d.comb += n.eq(remaining)
            with m.Elif(to_4k < self._max_beats):
                m.d.comb += n.eq(to_4k)
            with m.Else():
                m.d.comb += n.eq(self._max_beats)
            return n, remaining == n

        if self._split:
            m.d.comb += self.words.eq(beat_addr[:_log2(bpw)] == 0)
        else:
            m.d.comb += self.words.eq(length >> _log2(bpw))
        m.d.comb += [
            self.busy.eq(busy),
            self.valid.eq(busy),
            self.addr.eq(beat_addr << _log2(self._bus_bytes)),
            self.len.eq(length - 1),
            self.last.eq(last),
        ]

        # a new request is taken in the cycle the last burst of the one before goes (a
        # client of one-atom lines issues a request a cycle); read clients have a skid buffer
        # in front, so this arbitration-dependent ready ends there
        finishing = self.take & self.last
        m.d.comb += self.req.ready.eq((~busy | finishing) & self.context_ready)
        m.d.comb += self.accept.eq(self.req.valid & self.req.ready)

        # Request -> words: first lane, last lane, word count.
        p = self.req.payload
        lane_bits = _log2(apw)
        lane0 = Signal(max(1, lane_bits))
        last_off = Signal(REQUEST_ATOMS_BITS + 1 + lane_bits)
        if lane_bits:
            m.d.comb += lane0.eq(p.addr[geom.atom_shift:geom.word_shift])
        m.d.comb += [
            last_off.eq(lane0 + p.atoms),
            self.context.lane0.eq(lane0),
            self.context.lane_last.eq(last_off[:lane_bits] if lane_bits else 0),
            self.context.words.eq(last_off >> lane_bits),
        ]

        next_addr = Signal.like(beat_addr)
        next_rem = Signal.like(rem)
        m.d.comb += [next_addr.eq(beat_addr + length), next_rem.eq(rem - length)]
        next_len, next_last = plan("next", next_addr, next_rem)
        new_addr = Signal.like(beat_addr)
        new_rem = Signal.like(rem)
        m.d.comb += [new_addr.eq((p.addr >> geom.word_shift) << _log2(bpw)),
                     new_rem.eq((self.context.words + 1) << _log2(bpw))]
        new_len, new_last = plan("new", new_addr, new_rem)
        with m.If(self.take):
            m.d.sync += [beat_addr.eq(next_addr), rem.eq(next_rem), length.eq(next_len),
                         last.eq(next_last)]
            with m.If(last):
                m.d.sync += busy.eq(0)
        with m.If(self.accept):
            m.d.sync += [busy.eq(1), beat_addr.eq(new_addr), rem.eq(new_rem),
                         length.eq(new_len), last.eq(new_last)]
        return m


class ResponseBuffer(wiring.Component):
    """One read client's response FIFO of ``depth`` words with credit accounting.

    ``beat_valid``/``beat_data``: an R beat of this client (always accepted; the credits make
    sure there is room). ``push_context``/``context``: a request accepted by the splitter, its
    context queued (``context_ready`` = room). ``reserve``: words reserved by a burst granted
    this cycle. ``credits``: words neither stored nor reserved. ``resp``: the client's word
    stream with the request's atom mask. ``empty``: nothing stored, reserved or queued.
    """

    def __init__(self, geom, bus_width: int, depth: int):
        assert depth >= 2 and depth & (depth - 1) == 0
        self._geom, self._bus_width, self._depth = geom, bus_width, depth
        self._bpw = geom.word_bits // bus_width
        super().__init__({
            "beat_valid": In(1), "beat_data": In(bus_width),
            "push_context": In(1), "context": In(context_layout(geom)),
            "context_ready": Out(1),
            "reserve": In(range(depth + 1)), "credits": Out(range(depth + 1)),
            "resp": Out(stream.Signature(word_layout(geom))),
            "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        geom, depth, bpw = self._geom, self._depth, self._bpw
        apw = geom.atoms_per_word
        ptr_bits = _log2(depth)

        # no_rw_check: a read of the word being written is never used (a word counts in
        # ``level`` two cycles after its write), so Yosys need not emulate read-before-write
        # across the block RAM's ports (about 140 FF per buffer on ECP5)
        m.submodules.mem = mem = Memory(shape=unsigned(geom.word_bits), depth=depth, init=[],
                                        attrs={"no_rw_check": True})
        wp = mem.write_port(granularity=self._bus_width if bpw > 1 else None)
        rp = mem.read_port()
        m.submodules.ctx = ctx = SyncFIFOBuffered(width=context_layout(geom).size, depth=depth)

        # Write side: beats fill the word at wptr lane by lane.
        wptr = Signal(ptr_bits)
        word_done = Signal()
        m.d.comb += [wp.addr.eq(wptr), wp.data.eq(self.beat_data.replicate(bpw))]
        if bpw > 1:
            beat = Signal(range(bpw))
            m.d.comb += [
                wp.en.eq(Mux(self.beat_valid, Const(1, bpw) << beat, 0)),
                word_done.eq(self.beat_valid & (beat == bpw - 1)),
            ]
            with m.If(self.beat_valid):
                m.d.sync += beat.eq(Mux(beat == bpw - 1, 0, beat + 1))
        else:
            m.d.comb += [wp.en.eq(self.beat_valid), word_done.eq(self.beat_valid)]
        with m.If(word_done):
            m.d.sync += wptr.eq(wptr + 1)

        # Read side: a word is visible two cycles after its last lane was written (the read
        # port is synchronous and not transparent), so the level counts committed words.
        done_d = Signal()
        level = Signal(range(depth + 1))
        rptr = Signal(ptr_bits)
        pop = Signal()
        head = context_layout(geom)(ctx.r_data)
        m.d.sync += done_d.eq(word_done)
        m.d.comb += [
            pop.eq(self.resp.valid & self.resp.ready),
            rp.addr.eq(rptr + pop),
            self.resp.valid.eq((level != 0) & ctx.r_rdy),
            self.resp.payload.data.eq(rp.data),
        ]
        m.d.sync += [level.eq(level + done_d - pop), rptr.eq(rptr + pop)]

        count = Signal(REQUEST_ATOMS_BITS + 1)        # word index within the head request
        first, final = count == 0, count == head.words
        lo = Mux(first, head.lane0, 0)
        hi = Mux(final, head.lane_last, apw - 1)
        m.d.comb += self.resp.payload.mask.eq(
            Cat((lo <= lane) & (lane <= hi) for lane in range(apw)))
        with m.If(pop):
            m.d.sync += count.eq(Mux(final, 0, count + 1))
        m.d.comb += ctx.r_en.eq(pop & final)

        m.d.comb += [
            ctx.w_en.eq(self.push_context),
            ctx.w_data.eq(self.context),
            self.context_ready.eq(ctx.w_rdy),
        ]

        credits = Signal(range(depth + 1), init=depth)
        m.d.sync += credits.eq(credits - self.reserve + pop)
        m.d.comb += [
            self.credits.eq(credits),
            self.empty.eq((credits == depth) & (ctx.level == 0)),
        ]
        return m


class Mcif(wiring.Component):
    """One AXI4 memory interface shared by DMA clients (see the module docstring).

    Parameters: ``cfg`` (build config: burst length, outstanding limit, address width),
    ``geom`` (:class:`hw.mem.dma.DmaGeometry` of the build), ``bus_width`` (AXI data bits),
    ``read_clients`` / ``write_clients`` (client names; a client's position is its AXI ID),
    ``prefix`` of the AXI members, ``latency`` (expected memory latency in cycles, sizes the
    response buffers; default ``cfg.dbbif_latency``).

    Members: ``rd_<name>: In(DmaReadPort)``, ``wr_<name>: In(DmaWritePort)``, the AXI ports
    ``axi_members(prefix, cfg.address_width, bus_width)``, ``rd_weight`` / ``wr_weight``
    (8 bits per client, reset 1), ``rd_os_cnt`` / ``wr_os_cnt`` (reset 255), ``idle``.
    """

    def __init__(self, cfg, geom, bus_width: int, read_clients, write_clients, *,
                 prefix: str = "dbb", latency: int | None = None):
        assert geom.word_bytes % (bus_width // 8) == 0, "a DMA word is whole bus beats"
        self._cfg, self._geom, self._bus_width = cfg, geom, bus_width
        self._read_clients, self._write_clients = list(read_clients), list(write_clients)
        assert self._read_clients and self._write_clients
        self._prefix = prefix
        latency = cfg.dbbif_latency if latency is None else latency
        self.resp_depth = response_fifo_depth(cfg, geom, bus_width, latency)
        nr, nw = len(self._read_clients), len(self._write_clients)
        members = {}
        for name in self._read_clients:
            members[f"rd_{name}"] = In(DmaReadPort(geom))
        for name in self._write_clients:
            members[f"wr_{name}"] = In(DmaWritePort(geom))
        members.update(axi_members(prefix, cfg.address_width, bus_width))
        members.update({
            "rd_weight": In(data.ArrayLayout(8, nr), init=[1] * nr),
            "wr_weight": In(data.ArrayLayout(8, nw), init=[1] * nw),
            "rd_os_cnt": In(8, init=0xff), "wr_os_cnt": In(8, init=0xff),
            "idle": Out(1),
        })
        super().__init__(members)

    @property
    def read_clients(self):
        return list(self._read_clients)

    @property
    def write_clients(self):
        return list(self._write_clients)

    def elaborate(self, platform):
        m = Module()
        cfg, geom, bw = self._cfg, self._geom, self._bus_width
        px = self._prefix
        a = {k[len(px) + 1:]: getattr(self, k) for k in
             axi_members(px, cfg.address_width, bw)}          # "ar_arvalid" -> signal
        bpw, _, _ = burst_plan(cfg, geom, bw)
        os_max = cfg.outstanding

        def limit(reg):
            plus1 = reg + 1
            return Mux(plus1 > os_max, os_max, plus1)

        # ---------------------------------------------------------------- reads
        nr = len(self._read_clients)
        m.submodules.rd_arb = rd_arb = WeightedRoundRobin(nr)
        rd_out = Signal(range(os_max + 1))
        ar_valid = a["ar_arvalid"]
        rd_fire = Signal()
        rd_idle = []
        for i, name in enumerate(self._read_clients):
            port = getattr(self, f"rd_{name}")
            spl = BurstSplitter(cfg, geom, bw)
            buf = ResponseBuffer(geom, bw, self.resp_depth)
            # a register slice before the splitter: the splitter's ready comes from the
            # arbitration of every client's bursts, which must not reach back into the
            # client's own request logic in the same cycle (the whole-core ECP5 netlist's
            # 31-level paths from one client's burst state into another's request FIFO)
            skid = SkidBuffer(read_request(geom))
            m.submodules[f"rd_skid_{name}"] = skid
            m.submodules[f"rd_split_{name}"] = spl
            m.submodules[f"rd_buf_{name}"] = buf
            wiring.connect(m, wiring.flipped(port.req), skid.i)
            wiring.connect(m, skid.o, spl.req)
            # and one after the response buffer: the client's ``resp.ready`` (its reader, its
            # serializer and the unit behind them deciding) would otherwise steer the
            # buffer's block-RAM read address in the same cycle
            rskid = SkidBuffer(buf.resp.payload.shape())
            m.submodules[f"rd_rskid_{name}"] = rskid
            wiring.connect(m, buf.resp, rskid.i)
            wiring.connect(m, rskid.o, wiring.flipped(port.resp))
            take = rd_fire & (rd_arb.index == i)
            m.d.comb += [
                spl.context_ready.eq(buf.context_ready),
                buf.push_context.eq(spl.accept),
                buf.context.eq(spl.context),
                rd_arb.requests[i].eq(spl.valid & (buf.credits >= spl.words)),
                spl.take.eq(take),
                buf.reserve.eq(Mux(take, spl.words, 0)),
                buf.beat_valid.eq(a["r_rvalid"] & (a["r_rid"] == i)),
                buf.beat_data.eq(a["r_rdata"]),
            ]
            rd_idle.append(~skid.o.valid & ~spl.busy & buf.empty & ~rskid.o.valid)
            with m.If(take):
                m.d.sync += [a["ar_araddr"].eq(spl.addr), a["ar_arlen"].eq(spl.len)]
        m.d.comb += [
            rd_arb.weights.eq(self.rd_weight),
            rd_arb.take.eq((~ar_valid | a["ar_arready"]) & (rd_out < limit(self.rd_os_cnt))),
            rd_fire.eq(rd_arb.take & rd_arb.valid),
            a["r_rready"].eq(1),
        ]
        with m.If(rd_fire):
            m.d.sync += [ar_valid.eq(1), a["ar_arid"].eq(rd_arb.index)]
        with m.Elif(a["ar_arready"]):
            m.d.sync += ar_valid.eq(0)
        rd_end = a["r_rvalid"] & a["r_rlast"]
        m.d.sync += rd_out.eq(rd_out + rd_fire - rd_end)

        # ---------------------------------------------------------------- writes
        nw = len(self._write_clients)
        client_bits = max(1, _log2(_pow2ceil(nw)))
        wcmd_layout = data.StructLayout({"client": client_bits, "len": 4,
                                         "beat": max(1, _log2(bpw))})
        m.submodules.wr_arb = wr_arb = WeightedRoundRobin(nw)
        m.submodules.wcmd = wcmd = SyncFIFOBuffered(width=wcmd_layout.size,
                                                    depth=max(2, min(os_max, 32)))
        wr_out = Signal(range(os_max + 1))
        aw_valid = a["aw_awvalid"]
        wr_fire = Signal()
        wr_idle = []
        head = wcmd_layout(wcmd.r_data)
        new_cmd = Signal(wcmd_layout)
        m.d.comb += wcmd.w_data.eq(new_cmd)
        w_beat = Signal(4)                 # beat index within the W burst
        w_word_beat = Signal(max(1, _log2(bpw)))   # beat index within the word
        word_beat = Mux(w_beat == 0, head.beat, w_word_beat) if bpw > 1 else Const(0, 1)
        w_space = ~a["w_wvalid"] | a["w_wready"]
        w_ready = Signal()                 # W engine takes a beat if the client offers one
        w_load = Signal()
        m.d.comb += w_ready.eq(w_space & wcmd.r_rdy)
        bid_known = Signal()
        b_take = Signal()
        w_last = w_beat == head.len
        for j, name in enumerate(self._write_clients):
            port = getattr(self, f"wr_{name}")
            spl = BurstSplitter(cfg, geom, bw)
            m.submodules[f"wr_split_{name}"] = spl
            m.submodules[f"wr_bq_{name}"] = bq = SyncFIFOBuffered(width=1, depth=os_max)
            wiring.connect(m, wiring.flipped(port.req), spl.req)
            take = wr_fire & (wr_arb.index == j)
            selected = head.client == j
            m.d.comb += [
                spl.context_ready.eq(1),
                wr_arb.requests[j].eq(spl.valid & port.dat.valid),
                spl.take.eq(take),
                bq.w_en.eq(take), bq.w_data.eq(spl.last),
                port.dat.ready.eq(w_ready & selected & (word_beat == bpw - 1)),
            ]
            # the burst's first beat within its word (0 unless words are split into bursts)
            start_beat = spl.addr[_log2(bw // 8):][:_log2(bpw)] if bpw > 1 else 0
            with m.If(take):
                m.d.sync += [a["aw_awaddr"].eq(spl.addr), a["aw_awlen"].eq(spl.len)]
                m.d.comb += [new_cmd.client.eq(j), new_cmd.len.eq(spl.len),
                             new_cmd.beat.eq(start_beat)]
            with m.If(selected):
                m.d.comb += w_load.eq(w_ready & port.dat.valid)
                with m.If(w_load):
                    m.d.sync += [
                        a["w_wdata"].eq(port.dat.payload.data.word_select(word_beat, bw)),
                        a["w_wstrb"].eq(self._strobes(port.dat.payload.mask, word_beat)),
                    ]
            hit = a["b_bvalid"] & (a["b_bid"] == j)
            with m.If(a["b_bid"] == j):
                m.d.comb += [bid_known.eq(1), a["b_bready"].eq(bq.r_rdy)]
            m.d.comb += [
                bq.r_en.eq(hit & bq.r_rdy),
                port.done.eq(hit & bq.r_rdy & bq.r_data[0]),
            ]
            wr_idle.append(~spl.busy)
        with m.If(~bid_known):
            m.d.comb += a["b_bready"].eq(1)          # unknown IDs are dropped
        m.d.comb += [
            b_take.eq(a["b_bvalid"] & a["b_bready"] & bid_known),
            wr_arb.weights.eq(self.wr_weight),
            wr_arb.take.eq((~aw_valid | a["aw_awready"]) & wcmd.w_rdy
                           & (wr_out < limit(self.wr_os_cnt))),
            wr_fire.eq(wr_arb.take & wr_arb.valid),
            wcmd.w_en.eq(wr_fire),
        ]
        with m.If(wr_fire):
            m.d.sync += [aw_valid.eq(1), a["aw_awid"].eq(wr_arb.index)]
        with m.Elif(a["aw_awready"]):
            m.d.sync += aw_valid.eq(0)
        m.d.sync += wr_out.eq(wr_out + wr_fire - b_take)

        # W engine: beats of the head command, in order.
        with m.If(w_load):
            m.d.sync += [
                a["w_wvalid"].eq(1), a["w_wlast"].eq(w_last),
                w_beat.eq(Mux(w_last, 0, w_beat + 1)),
            ]
            if bpw > 1:
                m.d.sync += w_word_beat.eq(word_beat + 1)
        with m.Elif(a["w_wready"]):
            m.d.sync += a["w_wvalid"].eq(0)
        m.d.comb += wcmd.r_en.eq(w_load & w_last)

        m.d.comb += self.idle.eq(
            (rd_out == 0) & (wr_out == 0) & ~ar_valid & ~aw_valid & ~a["w_wvalid"]
            & (wcmd.level == 0) & Cat(rd_idle).all() & Cat(wr_idle).all())
        return m

    def _strobes(self, mask, word_beat):
        """Byte strobes of beat ``word_beat`` of a word with atom ``mask``."""
        geom, bus_bytes = self._geom, self._bus_width // 8
        if geom.atom_bytes >= bus_bytes:
            lane = word_beat >> _log2(geom.atom_bytes // bus_bytes) if geom.atoms_per_word > 1 \
                else Const(0, 1)
            return mask.bit_select(lane, 1).replicate(bus_bytes)
        per_beat = bus_bytes // geom.atom_bytes
        lanes = mask.word_select(word_beat, per_beat) if geom.word_bytes > bus_bytes else mask
        return Cat(lanes[k].replicate(geom.atom_bytes) for k in range(per_beat))
