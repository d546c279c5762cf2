"""DmaInterfaces / Mcif (hw/mem/dmaif.py, hw/mem/mcif.py) in Amaranth simulation against the
AXI slave model of tb/axi_model.py: random requests from several clients at once, random back-pressure
and latency on the bus and on the client streams; read data, written memory, done counts,
idle, arbitration weights and outstanding limits checked exactly.
"""

import random

import pytest
from amaranth.sim import Simulator

from arch.config import NvdlaConfig
from hw.mem.dma import RAM_CV, RAM_MC, DmaGeometry
from hw.mem.dmaif import DmaInterfaces
from hw.mem.mcif import burst_plan
from tb.axi_model import AxiMemoryModel
from sim.memory import SparseMemory

SMALL = NvdlaConfig.preset("nv_small")
CONFIGS = {
    "nv_small": SMALL,
    "nv_full": NvdlaConfig.preset("nv_full"),
    "dbb32": SMALL.replace(dbbif_width=32, name="x"),                     # 2 beats per word
    "dbb32_b1": SMALL.replace(dbbif_width=32, max_burst_length=1, name="x1"),  # word = 2 bursts
    # atom 8 B < DBBIF 16 B < word 64 B (SRAMIF 512): 4 beats and 8 atoms per word
    "mixed": SMALL.replace(sramif=True, dbbif_width=128, sramif_width=512, name="mixed"),
}

READ_BASE = 0x0001_0000
WRITE_BASE = 0x0010_0000
REGION = 0x4000                 # bytes per client write region / read region


class DmaBench:
    """DmaInterfaces + one AXI memory model per bus + client drivers and checkers."""

    def __init__(self, cfg, read_clients, write_clients, *, seed=0, latency=(0, 50),
                 backpressure=0.3, client_stall=0.3, out_of_order=False, interleave=False,
                 max_outstanding=None):
        self.cfg, self.geom = cfg, DmaGeometry(cfg)
        self.rng = random.Random(seed)
        self.rc, self.wc = list(read_clients), list(write_clients)
        self.dut = DmaInterfaces(cfg, self.rc, self.wc)
        self.client_stall = client_stall
        buses = {"dbb": cfg.dbbif_width}
        if cfg.sramif:
            buses["sram"] = cfg.sramif_width
        self.models = {
            bus: AxiMemoryModel(self.dut, bus, width, rng=random.Random(seed * 7 + i),
                                latency=latency, backpressure=backpressure,
                                max_burst=cfg.max_burst_length, out_of_order=out_of_order,
                                interleave=interleave, max_outstanding=max_outstanding)
            for i, (bus, width) in enumerate(buses.items())}
        self.expected = {bus: SparseMemory() for bus in buses}
        self.sim = Simulator(self.dut)
        self.sim.add_clock(1e-8)
        for model in self.models.values():
            model.add_to(self.sim)
        self.pending = {}             # driver name -> items still to finish
        self.done_count = {c: 0 for c in self.wc}
        self.write_requests = {c: 0 for c in self.wc}
        self.idle_seen = {bus: set() for bus in ("mcif", "cvif")}
        self.settings = []            # (signal, value) applied at time 0

    # -- memory plan ---------------------------------------------------------------------
    def bus_of(self, ram_type):
        return "sram" if self.cfg.sramif and ram_type == RAM_CV else "dbb"

    def preload(self, bus, addr, n):
        data = bytes(self.rng.getrandbits(8) for _ in range(n))
        self.models[bus].write(addr, data)
        self.expected[bus].write(addr, list(data))

    def words_of(self, addr, atoms):
        """(word address, mask) of every word a request touches."""
        g = self.geom
        first = addr >> g.atom_shift
        last = first + atoms
        out = []
        for w in range(first // g.atoms_per_word, last // g.atoms_per_word + 1):
            mask = 0
            for lane in range(g.atoms_per_word):
                if first <= w * g.atoms_per_word + lane <= last:
                    mask |= 1 << lane
            out.append((w << g.word_shift, mask))
        return out

    def random_request(self, base, span_atoms, long=False):
        g = self.geom
        atoms = self.rng.randrange(120 if long else 24)
        start = self.rng.randrange(span_atoms - atoms)
        return base + start * g.atom_bytes, atoms

    # -- drivers -------------------------------------------------------------------------
    def _stall(self, p=None):
        p = self.client_stall if p is None else p
        return p > 0 and self.rng.random() < p

    async def _put(self, ctx, st, payload, p=None):
        while self._stall(p):
            await ctx.tick()
        ctx.set(st.payload, payload)
        ctx.set(st.valid, 1)
        # plain awaits, no ``until``/``async for``: a driver left waiting when the simulation
        # ends must not be suspended inside an async generator (noisy finalization)
        while not (await ctx.tick().sample(st.ready))[2]:
            pass
        ctx.set(st.valid, 0)

    def read_client(self, name, reqs, *, resp_stall=None):
        """Issue ``reqs`` [(addr, atoms, ram_type)] and check every response word."""
        port = getattr(self.dut, f"rd_{name}")
        g = self.geom
        expect = []
        for addr, atoms, ram in reqs:
            mem = self.expected[self.bus_of(ram)]
            for waddr, mask in self.words_of(addr, atoms):
                expect.append((waddr, mask, int.from_bytes(bytes(mem.read(waddr, g.word_bytes)),
                                                           "little")))
        key = f"rd_{name}"
        self.pending[key] = len(expect)

        async def issue(ctx):
            for addr, atoms, ram in reqs:
                await self._put(ctx, port.req, {"addr": addr, "atoms": atoms, "ram_type": ram})

        async def collect(ctx):
            stall = self.client_stall if resp_stall is None else resp_stall
            valid_sig, ready_sig = port.resp.valid, port.resp.ready
            payload_sig = port.resp.payload.as_value()
            data_mask = (1 << g.word_bits) - 1
            ready = 0
            for i, (waddr, mask, data) in enumerate(expect):
                while True:
                    want = int(not self._stall(stall))
                    if want != ready:
                        ctx.set(ready_sig, want)
                        ready = want
                    _, _, valid, payload = await ctx.tick().sample(valid_sig, payload_sig)
                    if valid and ready:
                        break
                got, gmask = payload & data_mask, payload >> g.word_bits
                assert gmask == mask, f"{name} word {i} @{waddr:#x}: mask {gmask:#x} != {mask:#x}"
                for lane in range(g.atoms_per_word):
                    if mask >> lane & 1:
                        sl = slice(lane * g.atom_bits, (lane + 1) * g.atom_bits)
                        a, b = _bits(got, sl), _bits(data, sl)
                        assert a == b, (f"{name} word {i} @{waddr:#x} lane {lane}: "
                                        f"{a:#x} != {b:#x}")
                self.pending[key] -= 1
            ctx.set(ready_sig, 0)

        self.sim.add_process(issue)
        self.sim.add_process(collect)

    def write_client(self, name, reqs):
        """Issue ``reqs`` [(addr, atoms, ram_type)] with random data; expect the memory."""
        port = getattr(self.dut, f"wr_{name}")
        g = self.geom
        words = []
        for addr, atoms, ram in reqs:
            mem = self.expected[self.bus_of(ram)]
            for waddr, mask in self.words_of(addr, atoms):
                data = self.rng.getrandbits(g.word_bits)
                words.append({"data": data, "mask": mask})
                raw = data.to_bytes(g.word_bytes, "little")
                for lane in range(g.atoms_per_word):
                    if mask >> lane & 1:
                        off = lane * g.atom_bytes
                        mem.write(waddr + off, list(raw[off:off + g.atom_bytes]))
        key = f"wr_{name}"
        self.pending[key] = len(reqs)
        self.write_requests[name] = len(reqs)

        async def issue(ctx):
            for addr, atoms, ram in reqs:
                await self._put(ctx, port.req, {"addr": addr, "atoms": atoms, "ram_type": ram})

        async def feed(ctx):
            for w in words:
                await self._put(ctx, port.dat, w)

        async def count(ctx):
            while True:
                _, _, done = await ctx.tick().sample(port.done)
                self.done_count[name] += done
                self.pending[key] -= done
                assert self.pending[key] >= 0, f"{name}: more done than requests"

        self.sim.add_process(issue)
        self.sim.add_process(feed)
        self.sim.add_process(count)

    def set(self, signal, value):
        self.settings.append((signal, value))

    # -- run -----------------------------------------------------------------------------
    def dut_mcif_depth(self):
        from hw.mem.mcif import response_fifo_depth
        return response_fifo_depth(self.cfg, self.geom, self.cfg.dbbif_width,
                                   self.cfg.dbbif_latency)

    def run(self, max_cycles, expect_idle=True):
        dut = self.dut
        idles = {"mcif": dut.mcif_idle}
        if self.cfg.sramif:
            idles["cvif"] = dut.cvif_idle
        result = {}

        async def watchdog(ctx):
            for sig, value in self.settings:
                ctx.set(sig, value)
            for name, sig in idles.items():
                assert ctx.get(sig) == 1, f"{name} not idle after reset"
            for cycle in range(max_cycles):
                await ctx.tick()
                for name, sig in idles.items():
                    self.idle_seen[name].add(ctx.get(sig))
                if not any(self.pending.values()):
                    break
            else:
                raise AssertionError(f"deadlock: not finished after {max_cycles} cycles: "
                                     f"{ {k: v for k, v in self.pending.items() if v} }")
            result["cycles"] = cycle
            await ctx.tick().repeat(4)
            for name, sig in idles.items() if expect_idle else ():
                assert ctx.get(sig) == 1, f"{name} not idle after the traffic"

        self.sim.add_testbench(watchdog)
        self.sim.run()
        for bus, model in self.models.items():
            assert model.idle or not expect_idle, f"{bus}: bursts still in flight"
        return result["cycles"]

    def check_memory(self):
        """Whole memory of every bus equals the expected image (nothing else written)."""
        for bus, model in self.models.items():
            exp = self.expected[bus]
            pages = set(model.mem.touched()) | set(exp.touched())
            for base in sorted(pages):
                got = model.mem.read(base, 1 << 16)
                want = exp.read(base, 1 << 16)
                if (got != want).any():
                    bad = [base + i for i in range(1 << 16) if got[i] != want[i]]
                    raise AssertionError(f"{bus}: {len(bad)} bytes differ, first at "
                                         f"{bad[0]:#x}: {got[bad[0] - base]:#x} != "
                                         f"{want[bad[0] - base]:#x}")


def _bits(value, sl):
    return (value >> sl.start) & ((1 << (sl.stop - sl.start)) - 1)


def random_traffic(cfg, *, seed, n_reads=10, n_writes=8, latency=(0, 50), backpressure=0.3,
                   client_stall=0.3, out_of_order=False, interleave=False, high_addr=0):
    rc, wc = ["cdma_dat", "sdp_b", "pdp"], ["sdp", "pdp"]
    bench = DmaBench(cfg, rc, wc, seed=seed, latency=latency, backpressure=backpressure,
                     client_stall=client_stall, out_of_order=out_of_order,
                     interleave=interleave)
    g, rng = bench.geom, bench.rng
    rbase, wbase = READ_BASE + high_addr, WRITE_BASE + high_addr
    buses = list(bench.models)
    for bus in buses:
        bench.preload(bus, rbase, REGION)
        for j in range(len(wc)):
            bench.preload(bus, wbase + j * REGION, REGION)
    ram_types = [RAM_MC, RAM_CV]
    for name in rc:
        reqs = []
        for k in range(n_reads):
            addr, atoms = bench.random_request(rbase, REGION // g.atom_bytes, long=k % 4 == 0)
            reqs.append((addr, atoms, rng.choice(ram_types)))
        bench.read_client(name, reqs)
    for j, name in enumerate(wc):
        cursor = {bus: 0 for bus in (RAM_MC, RAM_CV)}
        reqs = []
        for k in range(n_writes):
            ram = rng.choice(ram_types)
            # without an SRAMIF both ram types land on the DBBIF: one cursor, no overlap
            ck = ram if cfg.sramif else RAM_MC
            atoms = rng.randrange(100 if k % 3 == 0 else 20)
            start = cursor[ck] + rng.randrange(4)
            if (start + atoms + 1) * g.atom_bytes > REGION:
                break
            cursor[ck] = start + atoms + 1
            reqs.append((wbase + j * REGION + start * g.atom_bytes, atoms, ram))
        bench.write_client(name, reqs)
    cycles = bench.run(max_cycles=60000)
    bench.check_memory()
    for name in wc:
        assert bench.done_count[name] == bench.write_requests[name]
    assert 0 in bench.idle_seen["mcif"], "MCIF never reported busy"
    return bench, cycles


@pytest.mark.parametrize("name", ["nv_small", "nv_full", "dbb32", "mixed",
                                  pytest.param("dbb32_b1", marks=pytest.mark.slow)])
def test_random_traffic(name):
    """Three read and two write clients, both ram types, everything random."""
    bench, _ = random_traffic(CONFIGS[name], seed=list(CONFIGS).index(name) + 100,
                              high_addr=0x3_0000_0000 if name == "nv_full" else 0)
    if CONFIGS[name].sramif:
        assert 0 in bench.idle_seen["cvif"], "CVIF never used"
        assert bench.models["sram"].r_beats and bench.models["sram"].w_beats


@pytest.mark.parametrize("name", ["dbb32", "nv_full"])
def test_out_of_order_interleaved(name):
    """Read bursts of different IDs return out of order with their beats interleaved."""
    random_traffic(CONFIGS[name], seed=11, latency=(0, 30), out_of_order=True, interleave=True,
                   n_reads=6, n_writes=4)


def test_no_backpressure_zero_latency():
    """Nothing stalls: the R and W channels are busy nearly every cycle."""
    bench, cycles = random_traffic(SMALL, seed=5, latency=(0, 0), backpressure=0.0,
                                   client_stall=0.0)
    model = bench.models["dbb"]
    assert cycles < 1.1 * max(model.r_beats, model.w_beats) + 50, (cycles, model.r_beats)


def test_stalled_client_does_not_block_others():
    """A read client that never takes its responses leaves the bus to the others."""
    bench = DmaBench(SMALL, ["cdma_dat", "sdp"], ["sdp"], seed=3, latency=(0, 10),
                     backpressure=0.0, client_stall=0.0)
    bench.preload("dbb", READ_BASE, REGION)
    port = bench.dut.rd_cdma_dat

    async def hog(ctx):                       # many requests, responses never taken
        for k in range(8):
            await bench._put(ctx, port.req, {"addr": READ_BASE, "atoms": 255, "ram_type": 1})

    bench.sim.add_process(hog)
    bench.read_client("sdp", [(READ_BASE + 512 * k, 63, RAM_MC) for k in range(16)])
    cycles = bench.run(max_cycles=5000, expect_idle=False)
    # 1024 words for sdp plus at most the hog's response buffer (128 words) of bus time
    assert cycles < 1024 + 128 + 150, cycles
    assert bench.models["dbb"].r_beats_by_id[0] == bench.dut_mcif_depth()


def _saturate(bench, name, write, n, atoms):
    port = getattr(bench.dut, f"{'wr' if write else 'rd'}_{name}")

    async def issue(ctx):
        for k in range(n):
            await bench._put(ctx, port.req, {"addr": READ_BASE + k * (atoms + 1) * 8,
                                              "atoms": atoms, "ram_type": RAM_MC}, p=0)

    async def sink(ctx):
        if write:
            ctx.set(port.dat.valid, 1)
            ctx.set(port.dat.payload, {"data": 0, "mask": 1})
        else:
            ctx.set(port.resp.ready, 1)

    bench.sim.add_process(issue)
    bench.sim.add_process(sink)


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_weights(write):
    """Weights 1 and 3: 25 % / 75 % of the granted bursts while both clients saturate."""
    bench = DmaBench(SMALL, ["cdma_dat", "sdp"], ["sdp", "pdp"], seed=1, latency=(0, 0),
                     backpressure=0.0)
    model = bench.models["dbb"]
    a, b = (["sdp", "pdp"] if write else ["cdma_dat", "sdp"])
    for name in (a, b):
        _saturate(bench, name, write, 4, 1023)
    dut = bench.dut
    bench.set(dut.mcif_wr_weight if write else dut.mcif_rd_weight, [1, 3])
    bench.set(dut.mcif_rd_os_cnt, 3)         # the bus, not the response buffers, is contended

    async def until_enough(ctx):
        for _ in range(6000):
            await ctx.tick()
            if len(model.aw_log if write else model.ar_log) >= 400:
                return
        raise AssertionError("clients did not saturate")

    bench.sim.add_testbench(until_enough)
    bench.sim.add_testbench(bench_settings(bench))
    bench.sim.run()
    log = (model.aw_log if write else model.ar_log)[20:400]
    beats = [sum(ln + 1 for _, i, _, ln in log if i == k) for k in (0, 1)]
    share = beats[0] / sum(beats)
    assert abs(share - 0.25) < 0.02, f"weight 1 client got {share:.3f} of the beats"


def bench_settings(bench):
    async def apply(ctx):
        for sig, value in bench.settings:
            ctx.set(sig, value)
    return apply


def test_weight_zero_blocks_client():
    bench = DmaBench(SMALL, ["cdma_dat", "sdp"], ["sdp"], seed=2, latency=(0, 5),
                     backpressure=0.0)
    model = bench.models["dbb"]
    _saturate(bench, "cdma_dat", False, 2, 63)
    _saturate(bench, "sdp", False, 2, 63)
    bench.set(bench.dut.mcif_rd_weight, [0, 2])

    async def wait(ctx):
        await ctx.tick().repeat(400)

    bench.sim.add_testbench(wait)
    bench.sim.add_testbench(bench_settings(bench))
    bench.sim.run()
    ids = {i for _, i, _, _ in model.ar_log}
    assert ids == {1}
    assert model.r_beats_by_id[1] == 2 * 64


@pytest.mark.parametrize("os_cnt", [0, 2])
def test_outstanding_limit(os_cnt):
    """RD_OS_CNT / WR_OS_CNT = n allows n + 1 bursts in flight (checked by the model)."""
    limit = os_cnt + 1
    bench = DmaBench(SMALL, ["cdma_dat", "sdp"], ["sdp", "pdp"], seed=4, latency=(20, 40),
                     backpressure=0.1, client_stall=0.0, max_outstanding=limit)
    g = bench.geom
    bench.preload("dbb", READ_BASE, REGION)
    for j in range(2):
        bench.preload("dbb", WRITE_BASE + j * REGION, REGION)
    for name in ("cdma_dat", "sdp"):
        bench.read_client(name, [(READ_BASE + 256 * k, 31, RAM_MC) for k in range(4)])
    for j, name in enumerate(("sdp", "pdp")):
        bench.write_client(name, [(WRITE_BASE + j * REGION + 256 * k, 31, RAM_MC)
                                  for k in range(4)])
    for sig in (bench.dut.mcif_rd_os_cnt, bench.dut.mcif_wr_os_cnt):
        bench.set(sig, os_cnt)
    bench.run(max_cycles=20000)
    bench.check_memory()
    model = bench.models["dbb"]
    assert model.max_rd_outstanding == limit
    assert model.max_wr_outstanding == limit


def test_burst_rules_4k_and_length():
    """A long request crossing 4 KiB boundaries is cut at them and at max_burst_length."""
    cfg = SMALL
    bench = DmaBench(cfg, ["cdma_dat"], ["sdp"], seed=6, latency=(0, 3), backpressure=0.2)
    start = READ_BASE + 4096 - 24                      # 3 words before a 4 KiB boundary
    bench.preload("dbb", READ_BASE, 3 * 4096)
    bench.preload("dbb", WRITE_BASE, 3 * 4096)
    bench.read_client("cdma_dat", [(start, 600, RAM_MC)])
    bench.write_client("sdp", [(WRITE_BASE + 4096 - 8, 520, RAM_MC)])
    bench.run(max_cycles=20000)
    bench.check_memory()
    model = bench.models["dbb"]
    first = model.ar_log[0]
    assert (first[2], first[3]) == (start, 2)           # 3 beats up to the boundary
    assert model.aw_log[0][2:] == (WRITE_BASE + 4096 - 8, 0)
    bpw, max_beats, _ = burst_plan(cfg, bench.geom, cfg.dbbif_width)
    assert max(ln for *_, ln in model.ar_log) == max_beats - 1


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8])
def test_weighted_round_robin_matches_the_rule(n):
    """The arbiter against the rule it implements, cycle by cycle under random requests,
    weights (0 included) and takes: requests of weight 0 are ignored; the last winner keeps
    the grant while it requests and has grants of its weight left; otherwise the lowest
    requester above it wins, else the lowest of all (before any grant: the lowest)."""
    from hw.mem.mcif import WeightedRoundRobin
    dut = WeightedRoundRobin(n)
    rng = random.Random(n)
    bad = []

    async def bench(ctx):
        last, left = n, 0
        weights = [rng.choice([0, 1, 1, 2, 3, 255]) for _ in range(n)]
        for cycle in range(3000):
            if rng.random() < 0.02:
                weights = [rng.choice([0, 1, 1, 2, 3, 255]) for _ in range(n)]
            reqs = [rng.random() < 0.5 for _ in range(n)]
            take = rng.random() < 0.7
            for i in range(n):
                ctx.set(dut.requests[i], reqs[i])
                ctx.set(dut.weights[i], weights[i])
            ctx.set(dut.take, take)
            eff = [r and w != 0 for r, w in zip(reqs, weights)]
            keep = last < n and eff[last] and left != 0
            order = range(n) if last == n else [(last + 1 + k) % n for k in range(n)]
            want = last if keep else next((i for i in order if eff[i]), None)
            got = (ctx.get(dut.valid), ctx.get(dut.index) if ctx.get(dut.valid) else None,
                   ctx.get(dut.grant))
            exp = (int(any(eff)), want, (1 << want) if want is not None else 0)
            if got != exp:
                bad.append((cycle, reqs, weights, last, left, got, exp))
            if take and want is not None:
                left = left - 1 if keep else weights[want] - 1
                last = want
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert not bad, bad[:5]
