"""CubeReader / CubeWriter / AtomSerializer / AtomPacker (hw/mem/cube.py) against a port-level
DMA model (random back-pressure, latency, gaps, completion delays) and numpy references."""

import random

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import wiring
from amaranth.sim import Simulator

from arch.config import PRESETS
from hw.mem.cube import AtomPacker, AtomSerializer, CubeReader, CubeWriter, atom_layout
from hw.mem.dma import DmaGeometry, atom_words_layout, cube_layout, word_layout
from hw.mem.dmaif import DmaInterfaces
from sim.memory import SparseMemory
from tb.axi_model import AxiMemoryModel

GEOMS = {
    "nv_small": DmaGeometry(PRESETS["nv_small"]),                                  # 1 atom/word
    "nv_full": DmaGeometry(PRESETS["nv_full"]),                                    # 2
    "x4": DmaGeometry(PRESETS["nv_small"].replace(dbbif_width=256, name="x4")),   # 4
}
MEM = 1 << 16          # model memory bytes; addresses alias modulo MEM (MEM divides 2**aw)


# ------------------------------------------------------------------------------------------
# reference helpers

def request_words(g, addr, atoms):
    """[(word_addr, mask)] of a request, in order."""
    a0 = addr >> g.atom_shift
    out = {}
    for a in range(a0, a0 + atoms + 1):
        w = a // g.atoms_per_word
        out[w] = out.get(w, 0) | (1 << (a % g.atoms_per_word))
    return [((w * g.word_bytes) % (1 << g.addr_width), mk) for w, mk in out.items()]


def cube_lines(g, c):
    """[(addr, atoms)] of a cube command (dict), in order."""
    aw = 1 << g.addr_width
    res = []
    for b in range(c["batches"] + 1):
        for s in range(c["surfaces"] + 1):
            for h in range(c["lines"] + 1):
                res.append(((c["base"] + b * c["batch_stride"] + s * c["surface_stride"]
                             + h * c["line_stride"]) % aw, c["line_atoms"]))
    return res


def atom_at(g, mem, addr):
    a = addr % MEM
    return int.from_bytes(mem[a:a + g.atom_bytes].tobytes(), "little")


def packed_transfers(g, lines_atoms):
    """Packed atom-word transfers of a cube: [(atoms list, last_line, last)]."""
    out = []
    for li, atoms in enumerate(lines_atoms):
        for k in range(0, len(atoms), g.atoms_per_word):
            chunk = atoms[k:k + g.atoms_per_word]
            ll = k + g.atoms_per_word >= len(atoms)
            out.append((chunk, ll, ll and li == len(lines_atoms) - 1))
    return out


def pack(g, atoms, rng):
    """Word value with ``atoms`` from lane 0 and random garbage in the other lanes."""
    v = rng.getrandbits(g.word_bits)
    for i, a in enumerate(atoms):
        v &= ~(((1 << g.atom_bits) - 1) << (i * g.atom_bits))
        v |= a << (i * g.atom_bits)
    return v


def random_cube(g, rng, max_atoms=12, big=False):
    apw, ab = g.atoms_per_word, g.atom_bytes
    la = rng.randrange(max_atoms)
    lines, surfaces, batches = rng.randrange(4), rng.randrange(3), rng.randrange(2)
    if big:
        lines = rng.randrange(8)
    mode = rng.choice(["packed", "gapped", "random", "wrap"])
    line_b = (la + 1) * ab
    if mode == "packed":
        ls = line_b
        ss = ls * (lines + 1)
        bs = ss * (surfaces + 1)
    elif mode == "gapped":
        ls = line_b + rng.randrange(4 * apw) * ab
        ss = ls * (lines + 1) + rng.randrange(4 * apw) * ab
        bs = ss * (surfaces + 1) + rng.randrange(4 * apw) * ab
    elif mode == "random":
        ls, ss, bs = (rng.randrange(MEM // ab) * ab for _ in range(3))
    else:  # "negative" strides: wrap around the address space
        aw = 1 << g.addr_width
        ls, ss, bs = ((aw - rng.randrange(1, 64) * ab) % aw for _ in range(3))
    base = rng.randrange(1 << (g.addr_width - g.atom_shift)) << g.atom_shift
    if rng.random() < 0.5:                 # every start lane, explicitly
        base = (base & ~((g.word_bytes) - 1)) | (rng.randrange(apw) * ab)
    return dict(base=base, ram_type=rng.randrange(2), line_atoms=la, lines=lines,
                surfaces=surfaces, batches=batches, line_stride=ls, surface_stride=ss,
                batch_stride=bs)


# ------------------------------------------------------------------------------------------
# port-level agents; each cycle: every agent drives (inputs only), then every agent observes

class Source:
    """Drives a stream with ``items`` (layout constants), random gaps."""

    def __init__(self, stream, layout, items, rng, p_gap):
        self.s, self.lay, self.items, self.rng, self.p = stream, layout, list(items), rng, p_gap
        self.cur = None
        self.taken = []                       # cycle of each handshake

    def drive(self, ctx, now):
        if self.cur is None and self.items and self.rng.random() >= self.p:
            self.cur = self.items.pop(0)
            ctx.set(self.s.payload, self.lay.const(self.cur))
        ctx.set(self.s.valid, self.cur is not None)

    def observe(self, ctx, now):
        if self.cur is not None and ctx.get(self.s.ready):
            self.taken.append(now)
            self.cur = None


class Sink:
    """Accepts a stream with random back-pressure, records payloads."""

    def __init__(self, stream, rng, p_ready):
        self.s, self.rng, self.p = stream, rng, p_ready
        self.got, self.when = [], []
        self.lasts = 0                        # transfers with ``last`` (data streams)
        self.rdy = 0

    def drive(self, ctx, now):
        self.rdy = self.rng.random() < self.p
        ctx.set(self.s.ready, self.rdy)

    def observe(self, ctx, now):
        if self.rdy and ctx.get(self.s.valid):
            p = ctx.get(self.s.payload)
            self.got.append(p)
            self.when.append(now)
            self.lasts += getattr(p, "last", 0)


class ReadModel:
    """DMA read interface model: random request back-pressure, response words after a random
    latency (request order kept), random gaps; garbage outside the mask."""

    def __init__(self, g, port, mem, rng, p_req=0.7, max_lat=6, p_gap=0.3):
        self.g, self.port, self.mem, self.rng = g, port, mem, rng
        self.p_req, self.max_lat, self.p_gap = p_req, max_lat, p_gap
        self.reqs = []                        # (addr, atoms, ram_type) accepted
        self.words = []                       # (ready_cycle, word_addr, mask)
        self.cur = None
        self.last_ready = 0
        self.rdy = 0
        self.stall_seen = 0

    def drive(self, ctx, now):
        g = self.g
        self.rdy = self.rng.random() < self.p_req
        ctx.set(self.port.req.ready, self.rdy)
        if (self.cur is None and self.words and self.words[0][0] <= now
                and self.rng.random() >= self.p_gap):
            _, wa, mk = self.cur = self.words.pop(0)
            a = wa % MEM
            v = int.from_bytes(self.mem[a:a + g.word_bytes].tobytes(), "little")
            junk = self.rng.getrandbits(g.word_bits)
            for i in range(g.atoms_per_word):
                if not (mk >> i) & 1:
                    lane = ((1 << g.atom_bits) - 1) << (i * g.atom_bits)
                    v = (v & ~lane) | (junk & lane)
            ctx.set(self.port.resp.payload, word_layout(g).const({"data": v, "mask": mk}))
        ctx.set(self.port.resp.valid, self.cur is not None)

    def observe(self, ctx, now):
        if self.rdy and ctx.get(self.port.req.valid):
            r = ctx.get(self.port.req.payload)
            self.reqs.append((r.addr, r.atoms, r.ram_type))
            t = max(self.last_ready, now + 1 + self.rng.randrange(self.max_lat + 1))
            self.last_ready = t
            self.words += [(t, wa, mk) for wa, mk in request_words(self.g, r.addr, r.atoms)]
        if self.cur is not None and ctx.get(self.port.resp.ready):
            self.cur = None


class WriteModel:
    """DMA write interface model: checks every data word against the accepted requests,
    applies masked writes to the memory, reports completions after a random delay."""

    def __init__(self, g, port, mem, rng, p_req=0.7, p_dat=0.7, max_done=8):
        self.g, self.port, self.mem, self.rng = g, port, mem, rng
        self.p_req, self.p_dat, self.max_done = p_req, p_dat, max_done
        self.reqs = []
        self.expect = []                      # [(word_addr, mask, final_of_request)]
        self.due = []                         # completion cycles
        self.acked = self.acked_before = 0
        self.rdy_req = self.rdy_dat = 0
        self.n_done = 0

    def drive(self, ctx, now):
        self.acked_before = self.acked
        self.rdy_req = self.rng.random() < self.p_req
        self.rdy_dat = self.rng.random() < self.p_dat
        ctx.set(self.port.req.ready, self.rdy_req)
        ctx.set(self.port.dat.ready, self.rdy_dat)
        ready = [t for t in self.due if t <= now]
        self.n_done = min(2, len(ready))
        for t in ready[:self.n_done]:
            self.due.remove(t)
        ctx.set(self.port.done, self.n_done)

    def observe(self, ctx, now):
        g = self.g
        self.acked += self.n_done
        if self.rdy_req and ctx.get(self.port.req.valid):
            r = ctx.get(self.port.req.payload)
            self.reqs.append((r.addr, r.atoms, r.ram_type))
            ws = request_words(g, r.addr, r.atoms)
            self.expect += [(wa, mk, i == len(ws) - 1) for i, (wa, mk) in enumerate(ws)]
        if self.rdy_dat and ctx.get(self.port.dat.valid):
            d = ctx.get(self.port.dat.payload)
            assert self.expect, "write data before its request"
            wa, mk, final = self.expect.pop(0)
            assert d.mask == mk, f"mask {d.mask:b} != {mk:b} at {wa:#x}"
            v = d.data
            for i in range(g.atoms_per_word):
                if (mk >> i) & 1:
                    a = (wa + i * g.atom_bytes) % MEM
                    atom = (v >> (i * g.atom_bits)) & ((1 << g.atom_bits) - 1)
                    self.mem[a:a + g.atom_bytes] = np.frombuffer(
                        atom.to_bytes(g.atom_bytes, "little"), dtype=np.uint8)
            if final:
                self.due.append(now + 1 + self.rng.randrange(self.max_done + 1))


class Watch:
    """Checks ``busy`` cycle-exactly and records ``done`` pulses."""

    def __init__(self, dut, cmd_src, finish, done_check=None):
        self.dut, self.cmd, self.finish, self.check = dut, cmd_src, finish, done_check
        self.starts = self.ends = 0
        self.dones = []

    def drive(self, ctx, now):
        pass

    def observe(self, ctx, now):
        busy = ctx.get(self.dut.busy)
        assert busy == (self.starts != self.ends), f"busy {busy} at {now}"
        if self.check is not None and ctx.get(self.dut.done):
            self.check(len(self.dones))
            self.dones.append(now)
        self.starts = len(self.cmd.taken)
        self.ends = self.finish()


def run(dut, agents, finished, max_cycles, processes=()):
    top = Module()                      # a sync domain even for a combinational DUT
    top.submodules.dut = dut
    tick = Signal()
    top.d.sync += tick.eq(~tick)
    sim = Simulator(top)
    sim.add_clock(1e-8)
    for p in processes:
        sim.add_process(p)
    cycles = []

    async def tb(ctx):
        for now in range(max_cycles):
            for a in agents:
                a.drive(ctx, now)
            for a in agents:
                a.observe(ctx, now)
            if finished():
                cycles.append(now)
                return
            await ctx.tick()
        raise AssertionError(f"timeout after {max_cycles} cycles (deadlock?)")

    sim.add_testbench(tb)
    sim.run()
    return cycles[0]


# ------------------------------------------------------------------------------------------
# reader

def run_reader(g, cubes, seed, p_cmd_gap=0.3, p_out=0.7, model_kw=None, max_cycles=50000):
    rng = random.Random(seed)
    mem = np.frombuffer(rng.randbytes(MEM), dtype=np.uint8).copy()
    dut = CubeReader(g)
    src = Source(dut.cmd, cube_layout(g), cubes, rng, p_cmd_gap)
    model = ReadModel(g, dut.dma, mem, rng, **(model_kw or {}))
    sink = Sink(dut.data, rng, p_out)
    expect = []
    for c in cubes:
        expect += packed_transfers(g, [[atom_at(g, mem, a + k * g.atom_bytes)
                                        for k in range(n + 1)]
                                       for a, n in cube_lines(g, c)])
    watch = Watch(dut, src, lambda: sink.lasts)
    end = run(dut, [src, model, sink, watch],
              lambda: len(sink.got) >= len(expect) and not src.items and src.cur is None,
              max_cycles)
    # requests: exactly one per line, nothing outside the cube
    want = [(a, n, c["ram_type"]) for c in cubes for a, n in cube_lines(g, c)]
    assert model.reqs == want
    assert len(sink.got) == len(expect)
    for i, (p, (atoms, ll, last)) in enumerate(zip(sink.got, expect)):
        n = len(atoms)
        assert p.mask == (1 << n) - 1, f"transfer {i}: mask {p.mask:b}, want {n} atoms"
        got = [(p.data >> (k * g.atom_bits)) & ((1 << g.atom_bits) - 1) for k in range(n)]
        assert got == atoms, f"transfer {i}: data"
        assert (p.last_line, p.last) == (ll, last), f"transfer {i}: flags"
    return end, sink, src


def _every_lane_cubes(g, rng):
    """Cubes of 1, 2, ~1 word and ~2 words per line starting at every lane of a word."""
    cubes = []
    for lane in range(g.atoms_per_word):
        for la in (0, 1, g.atoms_per_word - 1, g.atoms_per_word, 2 * g.atoms_per_word + 1):
            c = random_cube(g, rng)
            c.update(base=0x1000 + lane * g.atom_bytes, line_atoms=la,
                     line_stride=(la + 1 + lane) * g.atom_bytes)
            cubes.append(c)
    return cubes


@pytest.mark.parametrize("name", list(GEOMS))
def test_reader_random(name):
    g = GEOMS[name]
    rng = random.Random(list(GEOMS).index(name))
    for seed in range(8):
        cubes = [random_cube(g, rng) for _ in range(8)]
        run_reader(g, cubes, seed)


@pytest.mark.parametrize("name", ["nv_full", "x4"])
def test_reader_back_to_back_every_lane(name):
    """Single-line and single-atom cubes at every start lane, no gaps between commands."""
    g = GEOMS[name]
    rng = random.Random(7)
    cubes = _every_lane_cubes(g, rng)
    run_reader(g, cubes, 1, p_cmd_gap=0.0, p_out=0.8,
               model_kw=dict(p_req=1.0, max_lat=0, p_gap=0.0))


def test_reader_stall_and_slow_memory():
    g = GEOMS["x4"]
    rng = random.Random(3)
    cubes = [random_cube(g, rng, max_atoms=20) for _ in range(4)]
    run_reader(g, cubes, 5, p_out=0.3, model_kw=dict(p_req=0.2, max_lat=30, p_gap=0.6))


# ------------------------------------------------------------------------------------------
# writer

def run_writer(g, cubes, seed, p_cmd_gap=0.3, p_in_gap=0.3, model_kw=None,
               max_cycles=50000):
    rng = random.Random(seed)
    mem = np.frombuffer(rng.randbytes(MEM), dtype=np.uint8).copy()
    want_mem = mem.copy()
    dut = CubeWriter(g)
    words = []
    for c in cubes:
        lines_atoms = []
        for a, n in cube_lines(g, c):
            atoms = [rng.getrandbits(g.atom_bits) for _ in range(n + 1)]
            lines_atoms.append(atoms)
            for k, v in enumerate(atoms):
                x = (a + k * g.atom_bytes) % MEM
                want_mem[x:x + g.atom_bytes] = np.frombuffer(
                    v.to_bytes(g.atom_bytes, "little"), dtype=np.uint8)
        for atoms, ll, last in packed_transfers(g, lines_atoms):
            words.append({"data": pack(g, atoms, rng), "mask": (1 << len(atoms)) - 1,
                          "last_line": ll, "last": last})
    nreq = np.cumsum([len(cube_lines(g, c)) for c in cubes])
    src = Source(dut.cmd, cube_layout(g), cubes, rng, p_cmd_gap)
    din = Source(dut.data, atom_words_layout(g), words, rng, p_in_gap)
    model = WriteModel(g, dut.dma, mem, rng, **(model_kw or {}))

    def done_check(k):
        assert k < len(cubes), "extra done"
        assert model.acked_before >= nreq[k], f"done {k} before its requests completed"

    watch = Watch(dut, src, lambda: len(watch.dones), done_check)
    end = run(dut, [src, din, model, watch],
              lambda: len(watch.dones) == len(cubes), max_cycles)
    want = [(a, n, c["ram_type"]) for c in cubes for a, n in cube_lines(g, c)]
    assert model.reqs == want
    assert not model.expect and not din.items
    assert np.array_equal(mem, want_mem), "memory differs"
    return end, din, model


@pytest.mark.parametrize("name", list(GEOMS))
def test_writer_random(name):
    g = GEOMS[name]
    rng = random.Random(10 + list(GEOMS).index(name))
    for seed in range(8):
        cubes = [random_cube(g, rng) for _ in range(8)]
        run_writer(g, cubes, seed)


@pytest.mark.parametrize("name", ["nv_full", "x4"])
def test_writer_back_to_back_every_lane(name):
    g = GEOMS[name]
    rng = random.Random(8)
    cubes = _every_lane_cubes(g, rng)
    run_writer(g, cubes, 2, p_cmd_gap=0.0, p_in_gap=0.0,
               model_kw=dict(p_req=1.0, p_dat=0.9, max_done=0))


def test_writer_many_cubes_slow_completion():
    """More small cubes than the completion queue holds, completions late: ``done`` once per
    cube, in order, never early."""
    g = GEOMS["nv_full"]
    rng = random.Random(9)
    cubes = [random_cube(g, rng, max_atoms=3) for _ in range(14)]
    for c in cubes:
        c.update(lines=0, surfaces=0, batches=0)
    run_writer(g, cubes, 3, p_cmd_gap=0.0, p_in_gap=0.0,
               model_kw=dict(p_req=1.0, p_dat=1.0, max_done=60))


def test_writer_slow_memory():
    g = GEOMS["x4"]
    rng = random.Random(4)
    cubes = [random_cube(g, rng, max_atoms=20) for _ in range(4)]
    run_writer(g, cubes, 6, p_in_gap=0.6, model_kw=dict(p_req=0.2, p_dat=0.3, max_done=40))


# ------------------------------------------------------------------------------------------
# throughput: long contiguous line, no back-pressure, zero latency

def _long_line(g, atoms, lane):
    return dict(base=0x2000 + lane * g.atom_bytes, ram_type=1, line_atoms=atoms - 1,
                lines=0, surfaces=0, batches=0, line_stride=0, surface_stride=0,
                batch_stride=0)


@pytest.mark.parametrize("name", list(GEOMS))
def test_reader_throughput(name):
    g = GEOMS[name]
    lane = g.atoms_per_word - 1
    atoms = 300 * g.atoms_per_word
    _, sink, src = run_reader(g, [_long_line(g, atoms, lane)], 0, p_cmd_gap=0.0, p_out=1.0,
                              model_kw=dict(p_req=1.0, max_lat=0, p_gap=0.0))
    span = sink.when[-1] - sink.when[0] + 1
    rate = len(sink.got) / span
    assert rate >= 0.95, rate
    assert len(sink.got) / (sink.when[-1] - src.taken[0]) >= 0.95


@pytest.mark.parametrize("name", list(GEOMS))
def test_writer_throughput(name):
    g = GEOMS[name]
    lane = g.atoms_per_word - 1
    atoms = 300 * g.atoms_per_word
    _, din, model = run_writer(g, [_long_line(g, atoms, lane)], 0, p_cmd_gap=0.0,
                               p_in_gap=0.0, model_kw=dict(p_req=1.0, p_dat=1.0, max_done=0))
    span = din.taken[-1] - din.taken[0] + 1
    assert len(din.taken) / span >= 0.95


@pytest.mark.parametrize("name", ["nv_full", "x4"])
def test_reader_short_lines_throughput(name):
    """Packed short lines starting at changing lanes: the response side still takes one
    word per cycle (a line's flush word overlaps the next line's first word)."""
    g = GEOMS[name]
    la = 2 * g.atoms_per_word            # 2*apw + 1 atoms per line: start lanes rotate
    c = dict(base=0x2000 + g.atom_bytes, ram_type=1, line_atoms=la, lines=47, surfaces=0,
             batches=0, line_stride=(la + 1) * g.atom_bytes, surface_stride=0,
             batch_stride=0)
    _, sink, src = run_reader(g, [c], 0, p_cmd_gap=0.0, p_out=1.0,
                              model_kw=dict(p_req=1.0, max_lat=0, p_gap=0.0))
    words = sum(len(request_words(g, a, n)) for a, n in cube_lines(g, c))
    assert words / (sink.when[-1] - src.taken[0]) >= 0.95


# ------------------------------------------------------------------------------------------
# atom serializer / packer

@pytest.mark.parametrize("name", list(GEOMS))
def test_serializer_packer_roundtrip(name):
    """words -> AtomSerializer -> atoms (checked) -> AtomPacker -> words (checked)."""
    g = GEOMS[name]
    rng = random.Random(11)
    lines_atoms = [[rng.getrandbits(g.atom_bits) for _ in range(rng.randrange(1, 10))]
                   for _ in range(12)]
    transfers = packed_transfers(g, lines_atoms)
    words = [{"data": pack(g, a, rng), "mask": (1 << len(a)) - 1, "last_line": ll,
              "last": last} for a, ll, last in transfers]
    flat = []
    for li, atoms in enumerate(lines_atoms):
        for k, a in enumerate(atoms):
            end = k == len(atoms) - 1
            flat.append((a, end, end and li == len(lines_atoms) - 1))

    for which in ("ser", "pack"):
        if which == "ser":
            dut = AtomSerializer(g)
            src = Source(dut.i, atom_words_layout(g), words, rng, 0.3)
            n = len(flat)
        else:
            dut = AtomPacker(g)
            src = Source(dut.i, atom_layout(g),
                         [{"data": a, "last_line": ll, "last": la} for a, ll, la in flat],
                         rng, 0.3)
            n = len(transfers)
        sink = Sink(dut.o, rng, 0.6)
        run(dut, [src, sink], lambda: len(sink.got) >= n, 20000)
        assert len(sink.got) == n
        if which == "ser":
            assert [(p.data, p.last_line, p.last) for p in sink.got] == flat
        else:
            for p, (atoms, ll, last) in zip(sink.got, transfers):
                assert p.mask == (1 << len(atoms)) - 1
                assert [(p.data >> (k * g.atom_bits)) & ((1 << g.atom_bits) - 1)
                        for k in range(len(atoms))] == atoms
                assert (p.last_line, p.last) == (ll, last)


# ------------------------------------------------------------------------------------------
# end to end: CubeReader / CubeWriter -> DmaInterfaces (MCIF, CVIF) -> AXI memory models

class _E2E(Elaboratable):
    def __init__(self, cfg):
        g = DmaGeometry(cfg)
        self.dmaif = DmaInterfaces(cfg, ["sdp"], ["sdp"])
        self.reader, self.writer = CubeReader(g), CubeWriter(g)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dmaif, m.submodules.reader = self.dmaif, self.reader
        m.submodules.writer = self.writer
        wiring.connect(m, self.reader.dma, self.dmaif.rd_sdp)
        wiring.connect(m, self.writer.dma, self.dmaif.wr_sdp)
        return m


E2E_READ, E2E_WRITE, E2E_SPAN = 0x10_0000, 0x20_0000, 0x4_0000


def _region_cube(g, rng, base, sramif):
    c = random_cube(g, rng, max_atoms=40)
    extent = (c["line_stride"] * c["lines"] + c["surface_stride"] * c["surfaces"]
              + c["batch_stride"] * c["batches"] + (c["line_atoms"] + 2) * g.word_bytes)
    if extent > E2E_SPAN // 8:                 # keep the cube inside its eighth
        ls = (c["line_atoms"] + 1 + rng.randrange(3)) * g.atom_bytes
        c.update(line_stride=ls, surface_stride=ls * (c["lines"] + 1),
                 batch_stride=ls * (c["lines"] + 1) * (c["surfaces"] + 1))
    c["base"] = base + rng.randrange(g.word_bytes // g.atom_bytes) * g.atom_bytes
    if not sramif:
        c["ram_type"] = 1
    return c


@pytest.mark.parametrize("name", ["nv_small", "nv_full"])
def test_end_to_end_axi(name):
    """Reader and writer at once through the real memory interfaces and AXI slave models
    (random bus latency and back-pressure): read atoms and written memory checked exactly."""
    cfg = PRESETS[name]
    g = DmaGeometry(cfg)
    rng = random.Random(21)
    top = _E2E(cfg)
    buses = {1: ("dbb", cfg.dbbif_width)}
    if cfg.sramif:
        buses[0] = ("sram", cfg.sramif_width)
    models, expected = {}, {}
    for rt, (bus, width) in buses.items():
        models[rt] = AxiMemoryModel(top.dmaif, bus, width, rng=random.Random(rt + 5),
                                    latency=(0, 40), backpressure=0.3,
                                    max_burst=cfg.max_burst_length)
        expected[rt] = SparseMemory()
        for base in (E2E_READ, E2E_WRITE):
            img = rng.randbytes(E2E_SPAN)
            models[rt].write(base, img)
            expected[rt].write(base, np.frombuffer(img, dtype=np.uint8))
    if not cfg.sramif:
        models[0], expected[0] = models[1], expected[1]

    rcubes, wcubes = [], []
    for k in range(6):
        rcubes.append(_region_cube(g, rng, E2E_READ + k * E2E_SPAN // 8, cfg.sramif))
        wcubes.append(_region_cube(g, rng, E2E_WRITE + k * E2E_SPAN // 8, cfg.sramif))
    expect = []
    for c in rcubes:
        mem = expected[c["ram_type"]]
        expect += packed_transfers(g, [[int.from_bytes(mem.read(a + k * g.atom_bytes,
                                                                g.atom_bytes).tobytes(),
                                                       "little") for k in range(n + 1)]
                                       for a, n in cube_lines(g, c)])
    words = []
    for c in wcubes:
        lines_atoms = []
        for a, n in cube_lines(g, c):
            atoms = [rng.getrandbits(g.atom_bits) for _ in range(n + 1)]
            lines_atoms.append(atoms)
            for k, v in enumerate(atoms):
                expected[c["ram_type"]].write(a + k * g.atom_bytes, np.frombuffer(
                    v.to_bytes(g.atom_bytes, "little"), dtype=np.uint8))
        for atoms, ll, last in packed_transfers(g, lines_atoms):
            words.append({"data": pack(g, atoms, rng), "mask": (1 << len(atoms)) - 1,
                          "last_line": ll, "last": last})

    rd, wr = top.reader, top.writer
    rsrc = Source(rd.cmd, cube_layout(g), rcubes, rng, 0.2)
    sink = Sink(rd.data, rng, 0.7)
    wsrc = Source(wr.cmd, cube_layout(g), wcubes, rng, 0.2)
    din = Source(wr.data, atom_words_layout(g), words, rng, 0.2)
    rwatch = Watch(rd, rsrc, lambda: sink.lasts)
    wwatch = Watch(wr, wsrc, lambda: len(wwatch.dones), lambda k: None)
    cycles = run(top, [rsrc, sink, wsrc, din, rwatch, wwatch],
        lambda: len(sink.got) >= len(expect) and len(wwatch.dones) == len(wcubes), 40000,
        processes=[m.run for rt, m in models.items() if rt in buses])
    assert len(sink.got) == len(expect)
    for i, (p, (atoms, ll, last)) in enumerate(zip(sink.got, expect)):
        n = len(atoms)
        assert p.mask == (1 << n) - 1, f"transfer {i}"
        assert [(p.data >> (k * g.atom_bits)) & ((1 << g.atom_bits) - 1)
                for k in range(n)] == atoms, f"transfer {i}: data"
        assert (p.last_line, p.last) == (ll, last), f"transfer {i}: flags"
    for rt in buses:
        for base in (E2E_READ, E2E_WRITE):
            got = models[rt].mem.read(base, E2E_SPAN)
            want = expected[rt].read(base, E2E_SPAN)
            assert np.array_equal(got, want), f"ram_type {rt}: memory at {base:#x} differs"
    print(f"{name}: {len(expect)} words read, {len(words)} written in {cycles} cycles")


def test_writer_one_atom_lines_full_rate_through_mcif():
    """One-atom lines (the CDP's pixel-by-pixel output) on a 512-bit DBBIF, memory without
    back-pressure: the writer takes one line per cycle through the real MCIF (whose write
    grant waits for the client's data). With a buffered line queue it took 3 per 4."""
    cfg = PRESETS["nv_small"].replace(name="t8", dbbif_width=512)
    g = DmaGeometry(cfg)
    assert g.atoms_per_word == 8
    rng = random.Random(3)
    top = _E2E(cfg)
    model = AxiMemoryModel(top.dmaif, "dbb", cfg.dbbif_width, rng=random.Random(4),
                           latency=(1, 1), b_latency=(1, 1), backpressure=0.0,
                           max_burst=cfg.max_burst_length)
    n = 256
    cube = dict(base=E2E_WRITE + 3 * g.atom_bytes, ram_type=1, line_atoms=0, lines=0,
                surfaces=n - 1, batches=0, line_stride=0, surface_stride=g.atom_bytes,
                batch_stride=0)
    atoms = [rng.getrandbits(g.atom_bits) for _ in range(n)]
    words = [{"data": a, "mask": 1, "last_line": 1, "last": int(k == n - 1)}
             for k, a in enumerate(atoms)]
    wsrc = Source(top.writer.cmd, cube_layout(g), [cube], rng, 0.0)
    din = Source(top.writer.data, atom_words_layout(g), words, rng, 0.0)
    watch = Watch(top.writer, wsrc, lambda: len(watch.dones), lambda k: None)
    run(top, [wsrc, din, watch], lambda: len(watch.dones) == 1, 5000,
        processes=[model.run])
    want = b"".join(a.to_bytes(g.atom_bytes, "little") for a in atoms)
    assert model.read(cube["base"], n * g.atom_bytes) == want
    rate = n / (din.taken[-1] - din.taken[0] + 1)
    assert rate >= 0.95, rate
