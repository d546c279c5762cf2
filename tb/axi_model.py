"""An AXI4 slave memory for Amaranth simulation testbenches (DBBIF / SRAMIF of the DUT).

The model answers the flat NVDLA-style AXI ports of :func:`hw.mem.axi.axi_members` (``awlen`` /
``arlen`` 4 bits, no size/burst ports: every beat is the full data width, INCR) from a sparse
byte memory (:class:`sim.memory.SparseMemory`), with random back-pressure and latency, and
checks the master's side of the protocol, raising :class:`AxiProtocolError` on a violation.

Usage::

    mem = AxiMemoryModel(dut, "dbb", data_width=64, rng=random.Random(1),
                         latency=(0, 50), backpressure=0.3, max_burst=cfg.max_burst_length)
    mem.write(0x1000, bytes(range(64)))        # preload
    mem.add_to(sim)                            # or sim.add_process(mem.run)
    ...
    sim.run()
    assert mem.read(0x1000, 8) == ...
    before = mem.snapshot(); ...; mem.changed(before) -> sorted changed byte addresses

Behaviour (per clock):

* ``arready`` / ``awready`` / ``wready`` are low with probability ``backpressure``; an
  ``rvalid`` / ``bvalid`` gap is inserted with the same probability (a raised valid is held
  until accepted, as AXI requires).
* Each read burst waits a uniform random latency from ``latency`` (min, max) cycles after its AR
  handshake before its first beat; write responses wait ``b_latency`` after the last W beat.
* Read bursts and write responses are returned in AR/AW order per ID always; across IDs in
  acceptance order unless ``out_of_order`` (then any ready ID, at random). With
  ``interleave`` the beats of read bursts of different IDs may be mixed.
* W beats are matched to AW bursts in AW order; W before its AW is accepted and buffered.
* Checks: address aligned to the data width, ``len + 1 <= max_burst``, no 4 KiB crossing,
  ``wlast`` exactly on the last beat, in-flight bursts within ``max_outstanding`` (reads from
  AR to last R beat, writes from AW to B) when given.

Statistics for benchmarks: ``cycles``, ``r_beats``/``w_beats`` (and per ID in
``r_beats_by_id``/``w_beats_by_id``), ``ar_log``/``aw_log`` (``(cycle, id, addr, len)`` per
accepted burst), ``first_r``/``last_r``/``first_w``/``last_w`` (cycles of the first and last
data beat), ``max_rd_outstanding``/``max_wr_outstanding``.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np

from sim.memory import SparseMemory

__all__ = ["AxiMemoryModel", "AxiProtocolError"]


class AxiProtocolError(AssertionError):
    """The master broke an AXI / DBBIF rule (message names the channel and the rule)."""


class _Burst:
    __slots__ = ("id", "addr", "len", "beat", "ready_at", "seq")

    def __init__(self, id_, addr, len_, ready_at, seq):
        self.id, self.addr, self.len, self.beat = id_, addr, len_, 0
        self.ready_at, self.seq = ready_at, seq


class AxiMemoryModel:
    """AXI4 slave memory on the ports ``{prefix}_{ch}_{ch}{sig}`` of ``ports``.

    ``ports``: an object with the signals as attributes (the DUT component) or a dict name ->
    signal. ``rng``: a ``random.Random`` (or ``seed``). ``latency``/``b_latency``: (min, max)
    cycles. ``backpressure``: probability of a stall per channel per cycle. ``max_outstanding``:
    an int or ``(reads, writes)`` limit on bursts in flight, checked. ``memory``: a
    :class:`SparseMemory` to share (default: a new one).
    """

    def __init__(self, ports, prefix: str, data_width: int, *, rng=None, seed: int = 0,
                 latency=(0, 50), b_latency=(0, 8), backpressure: float = 0.3,
                 max_burst: int = 16, out_of_order: bool = False, interleave: bool = False,
                 max_outstanding=None, memory: SparseMemory | None = None):
        self.rng = rng if rng is not None else random.Random(seed)
        self.width, self.nbytes = data_width, data_width // 8
        self.latency, self.b_latency = tuple(latency), tuple(b_latency)
        self.backpressure = backpressure
        self.max_burst = max_burst
        self.out_of_order, self.interleave = out_of_order, interleave
        if max_outstanding is None or isinstance(max_outstanding, int):
            max_outstanding = (max_outstanding, max_outstanding)
        self.max_outstanding = tuple(max_outstanding)
        self.mem = memory if memory is not None else SparseMemory()

        def sig(ch, name):
            key = f"{prefix}_{ch}_{ch}{name}"
            return ports[key] if isinstance(ports, dict) else getattr(ports, key)

        self._in = [sig("ar", "valid"), sig("ar", "addr"), sig("ar", "len"), sig("ar", "id"),
                    sig("r", "ready"),
                    sig("aw", "valid"), sig("aw", "addr"), sig("aw", "len"), sig("aw", "id"),
                    sig("w", "valid"), sig("w", "data"), sig("w", "strb"), sig("w", "last"),
                    sig("b", "ready")]
        self._out = {n: sig(*n.split("_")) for n in
                     ("ar_ready", "aw_ready", "w_ready", "r_valid", "r_data", "r_id", "r_last",
                      "b_valid", "b_id")}
        self._state = {n: 0 for n in self._out}
        self.reset_stats()
        self._reads: list[_Burst] = []          # accepted, not fully returned, AR order
        self._r_cur: _Burst | None = None       # burst of the beat on R
        self._aws: deque[_Burst] = deque()      # AW bursts still taking W beats
        self._w_early: deque = deque()          # W beats that came before their AW
        self._bs: list[_Burst] = []             # finished writes waiting for B
        self._b_cur: _Burst | None = None
        self._seq = 0
        self.wr_inflight = 0

    # -- memory --------------------------------------------------------------------------
    def write(self, addr: int, data) -> None:
        """Preload (or overwrite) bytes at ``addr``."""
        self.mem.write(addr, np.frombuffer(bytes(data), dtype=np.uint8))

    def read(self, addr: int, n: int) -> bytes:
        """``n`` bytes at ``addr`` (untouched memory reads 0)."""
        return self.mem.read(addr, n).tobytes()

    def snapshot(self) -> dict:
        """A copy of every touched page: ``{base address: bytes}``."""
        return {base: self.mem.read(base, 1 << 16).tobytes() for base in self.mem.touched()}

    def changed(self, before: dict) -> list[int]:
        """Byte addresses whose value differs from ``before`` (a :meth:`snapshot`)."""
        out = []
        for base in sorted(set(before) | set(self.mem.touched())):
            old = np.frombuffer(before.get(base, bytes(1 << 16)), dtype=np.uint8)
            new = self.mem.read(base, 1 << 16)
            out.extend((base + np.nonzero(old != new)[0]).tolist())
        return out

    # -- statistics ----------------------------------------------------------------------
    def reset_stats(self) -> None:
        self.cycles = 0
        self.r_beats = self.w_beats = 0
        self.r_beats_by_id: dict[int, int] = {}
        self.w_beats_by_id: dict[int, int] = {}
        self.ar_log: list[tuple] = []
        self.aw_log: list[tuple] = []
        self.first_r = self.last_r = self.first_w = self.last_w = None
        self.max_rd_outstanding = self.max_wr_outstanding = 0

    @property
    def rd_inflight(self) -> int:
        return len(self._reads)

    @property
    def idle(self) -> bool:
        """No burst in flight and nothing buffered."""
        return not (self._reads or self._aws or self._w_early or self._bs or self._b_cur)

    # -- simulation ----------------------------------------------------------------------
    def add_to(self, sim) -> None:
        sim.add_process(self.run)

    async def run(self, ctx):
        """The model as an Amaranth simulator process (background)."""
        while True:
            # a plain await per cycle (not ``async for``): the model is left waiting when the
            # simulation ends, and must not be suspended inside an async generator then
            _, _, *v = await ctx.tick().sample(*self._in)
            (arvalid, araddr, arlen, arid, rready, awvalid, awaddr, awlen, awid,
             wvalid, wdata, wstrb, wlast, bready) = v
            now = self.cycles
            st = self._state
            r_hs, b_hs = st["r_valid"] and rready, st["b_valid"] and bready
            if r_hs:
                self._r_beat_done(now)
            if arvalid and st["ar_ready"]:
                self._ar(now, araddr, arlen, arid)
            if b_hs:
                self._b_done()
            if awvalid and st["aw_ready"]:
                self._aw(now, awaddr, awlen, awid)
            if wvalid and st["w_ready"]:
                self._w_beat(now, wdata, wstrb, wlast)
            self.cycles = now + 1
            self._drive(ctx, self._next_outputs(now + 1, st["r_valid"] and not r_hs,
                                                st["b_valid"] and not b_hs))

    def _drive(self, ctx, values=None):
        for name, value in (values or {}).items():
            if self._state[name] != value:
                ctx.set(self._out[name], value)
                self._state[name] = value

    # -- channel handlers ----------------------------------------------------------------
    def _check_burst(self, ch, addr, len_):
        if addr % self.nbytes:
            raise AxiProtocolError(f"{ch}: address {addr:#x} not aligned to {self.nbytes} bytes")
        if len_ + 1 > self.max_burst:
            raise AxiProtocolError(f"{ch}: {len_ + 1} beats exceed the maximum {self.max_burst}")
        if addr % 4096 + (len_ + 1) * self.nbytes > 4096:
            raise AxiProtocolError(f"{ch}: burst at {addr:#x} of {len_ + 1} beats crosses 4 KiB")

    def _ar(self, now, addr, len_, id_):
        self._check_burst("AR", addr, len_)
        lat = self.rng.randint(*self.latency)
        self._reads.append(_Burst(id_, addr, len_, now + lat, self._seq))
        self._seq += 1
        self.ar_log.append((now, id_, addr, len_))
        self.max_rd_outstanding = max(self.max_rd_outstanding, len(self._reads))
        lim = self.max_outstanding[0]
        if lim is not None and len(self._reads) > lim:
            raise AxiProtocolError(f"AR: {len(self._reads)} read bursts in flight, limit {lim}")

    def _r_beat_done(self, now):
        b = self._r_cur
        self.r_beats += 1
        self.r_beats_by_id[b.id] = self.r_beats_by_id.get(b.id, 0) + 1
        if self.first_r is None:
            self.first_r = now
        self.last_r = now
        b.beat += 1
        if b.beat > b.len:
            self._reads.remove(b)
            self._r_cur = None

    def _aw(self, now, addr, len_, id_):
        self._check_burst("AW", addr, len_)
        self._aws.append(_Burst(id_, addr, len_, 0, self._seq))
        self._seq += 1
        self.aw_log.append((now, id_, addr, len_))
        self.wr_inflight += 1
        self.max_wr_outstanding = max(self.max_wr_outstanding, self.wr_inflight)
        lim = self.max_outstanding[1]
        if lim is not None and self.wr_inflight > lim:
            raise AxiProtocolError(f"AW: {self.wr_inflight} write bursts in flight, limit {lim}")
        while self._w_early and self._aws:
            self._apply_w(now, *self._w_early.popleft())

    def _w_beat(self, now, data, strb, last):
        self.w_beats += 1
        if self.first_w is None:
            self.first_w = now
        self.last_w = now
        if self._aws:
            self._apply_w(now, data, strb, last)
        else:
            self._w_early.append((data, strb, last))

    def _apply_w(self, now, data, strb, last):
        b = self._aws[0]
        self.w_beats_by_id[b.id] = self.w_beats_by_id.get(b.id, 0) + 1
        if bool(last) != (b.beat == b.len):
            raise AxiProtocolError(f"W: wlast={last} on beat {b.beat} of a {b.len + 1}-beat "
                                   f"burst at {b.addr:#x} (id {b.id})")
        addr = b.addr + b.beat * self.nbytes
        raw = np.frombuffer(int(data).to_bytes(self.nbytes, "little"), dtype=np.uint8)
        if strb == (1 << self.nbytes) - 1:
            self.mem.write(addr, raw)
        elif strb:
            lanes = np.array([(strb >> i) & 1 for i in range(self.nbytes)], dtype=bool)
            old = self.mem.read(addr, self.nbytes)
            self.mem.write(addr, np.where(lanes, raw, old))
        b.beat += 1
        if b.beat > b.len:
            self._aws.popleft()
            b.ready_at = now + self.rng.randint(*self.b_latency)
            self._bs.append(b)

    def _b_done(self):
        self._bs.remove(self._b_cur)
        self._b_cur = None
        self.wr_inflight -= 1

    # -- next outputs --------------------------------------------------------------------
    def _stall(self):
        return self.backpressure > 0 and self.rng.random() < self.backpressure

    def _pick(self, pending, now, continuing):
        """The next burst to serve from ``pending`` (AR/AW order), or None."""
        if continuing is not None and not self.interleave:
            return continuing
        heads, seen = [], set()
        for b in pending:
            if b.id in seen:
                continue
            seen.add(b.id)
            if b.ready_at <= now:
                heads.append(b)
            elif not self.out_of_order:
                break                                # strict order across IDs
        if not heads:
            return None
        if self.out_of_order or self.interleave:
            return self.rng.choice(heads)
        return heads[0]

    def _next_outputs(self, now, r_hold, b_hold):
        """Output values for the next cycle (a raised, unaccepted R or B beat is held)."""
        nxt = {"ar_ready": int(not self._stall()), "aw_ready": int(not self._stall()),
               "w_ready": int(not self._stall())}
        if not r_hold:
            nxt["r_valid"] = 0
            if not self._stall():
                partial = self._r_cur if self._r_cur is not None and self._r_cur.beat else None
                b = self._pick(self._reads, now, partial)
                if b is not None:
                    self._r_cur = b
                    addr = b.addr + b.beat * self.nbytes
                    nxt.update(r_valid=1, r_id=b.id, r_last=int(b.beat == b.len),
                               r_data=int.from_bytes(self.read(addr, self.nbytes), "little"))
        if not b_hold:
            nxt["b_valid"] = 0
            if not self._stall():
                b = self._pick(self._bs, now, None)
                if b is not None:
                    self._b_cur = b
                    nxt.update(b_valid=1, b_id=b.id)
        return nxt
