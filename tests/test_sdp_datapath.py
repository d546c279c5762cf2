"""hw.sdp.datapath.SdpDatapath against the golden SDP stage functions of sim.sdp.

Random register programs (every ALU algorithm, bypass combination, REG/MEM operand source,
shifts up to the field maximum, PReLU, ReLU, EW operand converters, EW truncate, LUT index
modes / priorities / slopes, output converter, int8 and int16 output) on random input and
operand vectors with extremes, under random input gaps and output back-pressure. Outputs and
per-transfer statistics are compared bit for bit with the stage functions composed the way
``run_sdp`` composes them. One simulator per build runs many programs back to back (the
register fields only change while the pipeline is empty).
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Value
from amaranth.sim import Simulator

from arch.config import PRESETS, NvdlaConfig
from arch.registers import register_map
from hw.sdp.datapath import SdpDatapath
from sim.regs import GroupView
from sim.sdp import (ALU_EQL, LutParams, XStage, YStage, lut_lookup, output_convert,
                     sign_extend, wrap_signed, x_stage, y_operand_convert, y_stage)
from sim.sdp.lut import LE_DEPTH, LO_DEPTH, SdpLut

T4 = NvdlaConfig(name="sdp_t4", sdp_bs_throughput=4, sdp_bn_throughput=4)
#: a small build with the EW stage and the LUT, cheap enough to simulate many LUT programs
LUT4 = NvdlaConfig(name="sdp_lut4", sdp_bs_throughput=4, sdp_bn_throughput=4, sdp_ew=True,
                   sdp_lut=True, sdp_ew_throughput=4)
EXTREMES32 = [-(1 << 31), (1 << 31) - 1, 0, 1, -1]


# =========================================================================================
# Random stimulus
# =========================================================================================
def _value(rng, bits, signed=True, small=None):
    """A random field value (as the unsigned field bits): extremes, small or full range."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    k = rng.random()
    if k < 0.15:
        v = int(rng.choice([lo, hi, 0, 1, -1 if signed else 2]))
    elif k < 0.6 and small is not None:
        v = int(rng.integers(small[0], small[1] + 1))
    else:
        v = int(rng.integers(lo, hi + 1))
    return v & ((1 << bits) - 1)


def _vector(rng, shape, bits):
    """Signed values: a mix of extremes, small and full-range numbers."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    full = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    small = rng.integers(-300, 301, size=shape, dtype=np.int64)
    ext = rng.choice(np.array([lo, hi, 0, 1, -1], dtype=np.int64), size=shape)
    k = rng.random(shape)
    return np.where(k < 0.1, ext, np.where(k < 0.55, small, full))


def random_program(rng, cfg, focus=None):
    """{register: {field: value}} of the SDP block (D fields, plus the LUT S fields).
    ``focus="lut"``: the LUT is always used and the stages in front of it are mostly
    bypassed, so that the LUT sees the (boundary-seeking) input values."""
    lut = focus == "lut"
    bit = lambda p=0.5: int(rng.random() < p)        # noqa: E731
    prog = {}
    for prefix, present in (("BS", cfg.sdp_bs), ("BN", cfg.sdp_bn)):
        if not present:
            prog[f"D_DP_{prefix}_CFG"] = {f"{prefix}_BYPASS": 1}
            continue
        prog[f"D_DP_{prefix}_CFG"] = {
            f"{prefix}_BYPASS": bit(0.8 if lut else 0.2), f"{prefix}_ALU_BYPASS": bit(0.3),
            f"{prefix}_ALU_ALGO": int(rng.integers(0, 4)), f"{prefix}_MUL_BYPASS": bit(0.3),
            f"{prefix}_MUL_PRELU": bit(0.3), f"{prefix}_RELU_BYPASS": bit(0.6)}
        prog[f"D_DP_{prefix}_ALU_CFG"] = {
            f"{prefix}_ALU_SRC": bit(), f"{prefix}_ALU_SHIFT_VALUE": _value(rng, 6, False,
                                                                           (0, 16))}
        prog[f"D_DP_{prefix}_ALU_SRC_VALUE"] = {f"{prefix}_ALU_OPERAND":
                                                _value(rng, 16, True, (-300, 300))}
        prog[f"D_DP_{prefix}_MUL_CFG"] = {
            f"{prefix}_MUL_SRC": bit(), f"{prefix}_MUL_SHIFT_VALUE": _value(rng, 8, False,
                                                                           (0, 20))}
        prog[f"D_DP_{prefix}_MUL_SRC_VALUE"] = {f"{prefix}_MUL_OPERAND":
                                                _value(rng, 16, True, (-300, 300))}
    if cfg.sdp_ew:
        prog["D_DP_EW_CFG"] = {
            "EW_BYPASS": 0 if lut else bit(0.2), "EW_ALU_BYPASS": bit(0.8 if lut else 0.3),
            "EW_ALU_ALGO": int(rng.integers(0, 4)), "EW_MUL_BYPASS": bit(0.8 if lut else 0.3),
            "EW_MUL_PRELU": bit(0.3),
            "EW_LUT_BYPASS": 0 if lut else bit(0.4) if cfg.sdp_lut else 1}
        for unit in ("ALU", "MUL"):
            prog[f"D_DP_EW_{unit}_CFG"] = {f"EW_{unit}_SRC": bit(), f"EW_{unit}_CVT_BYPASS":
                                           bit(0.3)}
            prog[f"D_DP_EW_{unit}_SRC_VALUE"] = {f"EW_{unit}_OPERAND":
                                                 _value(rng, 32, True, (-3000, 3000))}
            prog[f"D_DP_EW_{unit}_CVT_OFFSET_VALUE"] = {f"EW_{unit}_CVT_OFFSET":
                                                        _value(rng, 32, True, (-300, 300))}
            prog[f"D_DP_EW_{unit}_CVT_SCALE_VALUE"] = {f"EW_{unit}_CVT_SCALE":
                                                       _value(rng, 16, True, (-300, 300))}
            prog[f"D_DP_EW_{unit}_CVT_TRUNCATE_VALUE"] = {f"EW_{unit}_CVT_TRUNCATE":
                                                          _value(rng, 6, False, (0, 12))}
        prog["D_DP_EW_TRUNCATE_VALUE"] = {"EW_TRUNCATE": _value(rng, 10, False, (0, 40))}
    else:
        prog["D_DP_EW_CFG"] = {"EW_BYPASS": 1}
    prog["D_DATA_FORMAT"] = {"OUT_PRECISION": bit(), "PROC_PRECISION": 0}
    prog["D_CVT_OFFSET"] = {"CVT_OFFSET": _value(rng, 32, True, (-1000, 1000))}
    prog["D_CVT_SCALE"] = {"CVT_SCALE": _value(rng, 16, True, (-64, 64))}
    prog["D_CVT_SHIFT"] = {"CVT_SHIFT": _value(rng, 6, False, (0, 20))}
    if cfg.sdp_lut:
        prog["S_LUT_CFG"] = {"LUT_LE_FUNCTION": bit(), "LUT_UFLOW_PRIORITY": bit(),
                             "LUT_OFLOW_PRIORITY": bit(), "LUT_HYBRID_PRIORITY": bit()}
        prog["S_LUT_INFO"] = {"LUT_LE_INDEX_OFFSET": _value(rng, 8, True, (-4, 20)),
                              "LUT_LE_INDEX_SELECT": _value(rng, 8, True, (-9, 24)),
                              "LUT_LO_INDEX_SELECT": _value(rng, 8, True, (-9, 24))}
        if lut and rng.random() < 0.7:                # indices that land in the tables
            prog["S_LUT_INFO"] = {"LUT_LE_INDEX_OFFSET": int(rng.integers(-3, 12)) & 0xFF,
                                  "LUT_LE_INDEX_SELECT": int(rng.integers(-4, 10)) & 0xFF,
                                  "LUT_LO_INDEX_SELECT": int(rng.integers(-2, 8)) & 0xFF}
        for t in ("LE", "LO"):
            start = _value(rng, 32, True, (-5000, 5000))
            if lut and rng.random() < 0.1:               # differences up to 2^32 - 1
                start = 1 << 31
            prog[f"S_LUT_{t}_START"] = {f"LUT_{t}_START": start}
            prog[f"S_LUT_{t}_END"] = {f"LUT_{t}_END": _value(rng, 32, True, (-5000, 50000))}
            prog[f"S_LUT_{t}_SLOPE_SCALE"] = {f"LUT_{t}_SLOPE_UFLOW_SCALE": _value(rng, 16),
                                              f"LUT_{t}_SLOPE_OFLOW_SCALE": _value(rng, 16)}
            prog[f"S_LUT_{t}_SLOPE_SHIFT"] = {f"LUT_{t}_SLOPE_UFLOW_SHIFT": _value(rng, 5),
                                              f"LUT_{t}_SLOPE_OFLOW_SHIFT": _value(rng, 5)}
    return prog


def random_transfers(rng, cfg, lanes, n, prog=None):
    """Input data [n, lanes] (int32) and memory operands {name: [n, lanes] int16}. With a
    LUT program, many inputs sit near the table starts / ends and index boundaries."""
    data = _vector(rng, (n, lanes), 32)
    if rng.random() < 0.5:                       # values an 8/16-bit pipeline would see
        data = np.where(rng.random((n, lanes)) < 0.7, _vector(rng, (n, lanes), 16), data)
    if prog is not None and "S_LUT_LE_START" in prog:
        points = [sign_extend(prog[f"S_LUT_{t}_{e}"][f"LUT_{t}_{e}"], 32)
                  for t in ("LE", "LO") for e in ("START", "END")]
        base = rng.choice(np.array(points, dtype=np.int64), size=(n, lanes))
        mag = np.int64(1) << rng.integers(0, 24, size=(n, lanes))
        near = base + rng.integers(-2, 3, size=(n, lanes)) * mag + rng.integers(-2, 3, (n, lanes))
        near = np.clip(near, -(1 << 31), (1 << 31) - 1)
        near = np.where(rng.random((n, lanes)) < 0.1, (1 << 31) - 1 - rng.integers(0, 3), near)
        data = np.where(rng.random((n, lanes)) < 0.6, near, data)
    ops = {}
    for stage, present in (("bs", cfg.sdp_bs), ("bn", cfg.sdp_bn), ("ew", cfg.sdp_ew)):
        if present:
            for unit in ("alu", "mul"):
                ops[f"{stage}_{unit}"] = _vector(rng, (n, lanes), 16)
    return data, ops


# =========================================================================================
# Golden: the sim.sdp stage functions composed as run_sdp composes them
# =========================================================================================
def _x_cfg(v, prefix):
    c = v[f"D_DP_{prefix}_CFG"]
    on = not c[f"{prefix}_BYPASS"]
    return on, XStage(
        alu_bypass=not (on and not c[f"{prefix}_ALU_BYPASS"]), alu_algo=c[f"{prefix}_ALU_ALGO"],
        alu_shift=v[f"D_DP_{prefix}_ALU_CFG"][f"{prefix}_ALU_SHIFT_VALUE"] & 0x3F,
        mul_bypass=bool(c[f"{prefix}_MUL_BYPASS"]), mul_prelu=bool(c[f"{prefix}_MUL_PRELU"]),
        mul_shift=v[f"D_DP_{prefix}_MUL_CFG"][f"{prefix}_MUL_SHIFT_VALUE"] & 0x3F,
        relu_bypass=bool(c[f"{prefix}_RELU_BYPASS"]))


def _operand(v, prefix, unit, ops, bits):
    if v[f"D_DP_{prefix}_{unit}_CFG"][f"{prefix}_{unit}_SRC"]:
        return ops[f"{prefix.lower()}_{unit.lower()}"]
    return sign_extend(v[f"D_DP_{prefix}_{unit}_SRC_VALUE"][f"{prefix}_{unit}_OPERAND"], bits)


def golden(v, lut, data, ops):
    """Expected output [n, lanes] and per-transfer stats {name: [n]} for GroupView ``v``."""
    x, stats = golden_before_converter(v, lut, data, ops)
    e = v.D_DP_EW_CFG
    eql = not e.EW_BYPASS and not e.EW_ALU_BYPASS and e.EW_ALU_ALGO == ALU_EQL
    out_bits = 16 if v.D_DATA_FORMAT.OUT_PRECISION else 8
    out, sat = output_convert(x, sign_extend(v.D_CVT_OFFSET.CVT_OFFSET, 32),
                              sign_extend(v.D_CVT_SCALE.CVT_SCALE, 16),
                              v.D_CVT_SHIFT.CVT_SHIFT, out_bits)
    stats["sat"] = sat.sum(axis=1)         # (counted in EQL mode too, as NVDLA's converter)
    if eql:
        out = wrap_signed(x, out_bits)
    stats["unequal"] = np.any((out & ((1 << out_bits) - 1)) != 0, axis=1).astype(np.int64)
    return out, stats


def golden_before_converter(v, lut, data, ops):
    """The X, Y and LUT stages: int32 values [n, lanes] and the LUT statistics."""
    n, lanes = data.shape
    x = data
    for prefix in ("BS", "BN"):
        on, st = _x_cfg(v, prefix)
        if on:
            x = x_stage(x, _operand(v, prefix, "ALU", ops, 16), _operand(v, prefix, "MUL", ops, 16),
                        st)
    e = v.D_DP_EW_CFG
    ew_on = not e.EW_BYPASS
    ew = YStage(alu_bypass=bool(e.EW_ALU_BYPASS), alu_algo=e.EW_ALU_ALGO,
                mul_bypass=bool(e.EW_MUL_BYPASS), mul_prelu=bool(e.EW_MUL_PRELU),
                truncate=v.D_DP_EW_TRUNCATE_VALUE.EW_TRUNCATE, lut_bypass=bool(e.EW_LUT_BYPASS))
    stats = {k: np.zeros(n, dtype=np.int64) for k in
             ("sat", "lut_uflow", "lut_oflow", "lut_hybrid", "lut_le_hit", "lut_lo_hit",
              "nan_out")}                   # (int layers here: no NaN outputs on fp16 builds)
    if ew_on:
        o = {}
        for unit in ("ALU", "MUL"):
            op = _operand(v, "EW", unit, ops, 32)
            if v[f"D_DP_EW_{unit}_CFG"][f"EW_{unit}_SRC"]:
                op = y_operand_convert(
                    op,
                    sign_extend(v[f"D_DP_EW_{unit}_CVT_OFFSET_VALUE"][f"EW_{unit}_CVT_OFFSET"], 32),
                    sign_extend(v[f"D_DP_EW_{unit}_CVT_SCALE_VALUE"][f"EW_{unit}_CVT_SCALE"], 16),
                    v[f"D_DP_EW_{unit}_CVT_TRUNCATE_VALUE"][f"EW_{unit}_CVT_TRUNCATE"] & 0x3F,
                    bool(v[f"D_DP_EW_{unit}_CFG"][f"EW_{unit}_CVT_BYPASS"]))
            o[unit] = op
        x = y_stage(x, o["ALU"], o["MUL"], ew)
        if not ew.lut_bypass:
            params = LutParams.from_view(v)
            rows = []
            for k in range(n):
                lo = lut_lookup(lut, x[k], params)
                rows.append(lo.value)
                for name in ("uflow", "oflow", "hybrid", "le_hit", "lo_hit"):
                    stats[f"lut_{name}"][k] = getattr(lo, name)
            x = np.stack(rows)
    return x, stats


def fit_converter(rng, prog, x):
    """Re-pick CVT_OFFSET / CVT_SHIFT so that most outputs land inside the output range (the
    rounding of every stage is then visible in the output)."""
    out_bits = 16 if prog["D_DATA_FORMAT"]["OUT_PRECISION"] else 8
    scale = int(rng.integers(1, 200)) * int(rng.choice([-1, 1]))
    offset = int(rng.choice(x.reshape(-1))) + int(rng.integers(-100, 101))
    offset = int(np.clip(offset, -(1 << 31), (1 << 31) - 1))
    spread = np.abs((x.astype(np.int64) - offset) * scale)
    big = int(np.percentile(spread, 70))
    shift = int(np.clip(big.bit_length() - (out_bits - 2) + int(rng.integers(-1, 2)), 0, 63))
    prog["D_CVT_OFFSET"] = {"CVT_OFFSET": offset & 0xFFFFFFFF}
    prog["D_CVT_SCALE"] = {"CVT_SCALE": scale & 0xFFFF}
    prog["D_CVT_SHIFT"] = {"CVT_SHIFT": shift}


# =========================================================================================
# Simulation harness
# =========================================================================================
def _field_values(layout, view):
    """{register: {field: value}} for a fields_layout, read from a GroupView."""
    return {reg: {f: view[reg][f] for f, _ in sub.shape} for reg, sub in layout}


class _Codec:
    """Packs input payloads and unpacks output payloads as plain integers (fast)."""

    def __init__(self, dut):
        self.dut, self.lanes = dut, dut.lanes
        self.inf = {name: f.offset for name, f in dut.in_layout}
        self.outf = {name: (f.offset, f.width) for name, f in dut.out_layout}

    def pack(self, data_row, ops_row, last):
        word = 0
        base = self.inf["data"]
        for lane, v in enumerate(data_row):
            word |= (int(v) & 0xFFFFFFFF) << (base + 32 * lane)
        for name, row in ops_row.items():
            base = self.inf[name]
            for lane, v in enumerate(row):
                word |= (int(v) & 0xFFFF) << (base + 16 * lane)
        return word | (int(last) << self.inf["last"])

    def unpack(self, word):
        off, _ = self.outf["data"]
        data = [sign_extend((word >> (off + 16 * lane)) & 0xFFFF, 16) for lane in range(self.lanes)]
        stats = {name: (word >> off) & ((1 << w) - 1) for name, (off, w) in self.outf.items()
                 if name != "data"}
        return data, stats


class Bench:
    """Runs programs on one simulator instance of a build."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.block = register_map(cfg)["SDP"]
        self.dut = SdpDatapath(cfg)
        self.codec = _Codec(self.dut)
        self.lut = SdpLut()
        self.cycles = []                  # (accepted inputs, cycles) per program

    async def load_lut(self, ctx, rng, full):
        """Write random LUT entries through the access port (all of them, or a few) and read
        them back (addresses past the ends included)."""
        dut = self.dut
        writes = []
        for table, depth in ((0, LE_DEPTH), (1, LO_DEPTH)):
            addrs = range(depth) if full else rng.integers(0, depth, size=8)
            for a in addrs:
                writes.append((table, int(a), _value(rng, 16, True, (-2000, 2000))))
        writes.append((0, LE_DEPTH + int(rng.integers(0, 900)), 0x1234))      # ignored
        writes.append((1, LO_DEPTH + int(rng.integers(0, 700)), 0x4321))      # ignored
        ctx.set(dut.lut_we, 1)
        for table, a, w in writes:
            ctx.set(dut.lut_table, table)
            ctx.set(dut.lut_addr, a)
            ctx.set(dut.lut_wdata, w)
            await ctx.tick()
            t = self.lut.table(table)
            if a < t.size:
                t[a] = sign_extend(w, 16)
        ctx.set(dut.lut_we, 0)
        ctx.set(dut.lut_re, 1)
        checks = [(0, a) for a in (0, 1, 63, 64, 65, 100, 1023)] + \
                 [(1, a) for a in (0, 5, 255, 256, 257, 1000)] + \
                 [(int(rng.integers(0, 2)), int(rng.integers(0, 300))) for _ in range(10)]
        for table, a in checks:                   # a synchronous read: data next cycle
            ctx.set(dut.lut_rd_table, table)
            ctx.set(dut.lut_rd_addr, a)
            await ctx.tick()
            t = self.lut.table(table)
            expect = int(t[a]) & 0xFFFF if a < t.size else 0
            assert ctx.get(dut.lut_rdata) == expect, (table, a)
        ctx.set(dut.lut_re, 0)

    async def run_program(self, ctx, rng, prog, n, gap, stall, tag, data=None):
        dut, codec, cfg = self.dut, self.codec, self.cfg
        given = data
        data, ops = random_transfers(rng, cfg, dut.lanes, n, prog)
        if given is not None:                    # directed input values
            data = np.asarray(given, dtype=np.int64).reshape(n, dut.lanes)
        elif rng.random() < 0.7:
            view = GroupView(self.block, {r: self.block[r].pack(**f) for r, f in prog.items()})
            fit_converter(rng, prog, golden_before_converter(view, self.lut, data, ops)[0])
        view = GroupView(self.block, {r: self.block[r].pack(**f) for r, f in prog.items()})
        ctx.set(dut.regs, _field_values(dut.regs_layout, view))
        if cfg.sdp_lut:
            ctx.set(dut.s, _field_values(dut.s_layout, view))
        expect, stats = golden(view, self.lut, data, ops)
        inputs = [codec.pack(data[k], {name: a[k] for name, a in ops.items()}, k == n - 1)
                  for k in range(n)]
        i_payload, o_payload = Value.cast(dut.i.payload), Value.cast(dut.o.payload)
        sent = got = cycles = 0
        first = None
        while got < n:
            cycles += 1
            assert cycles < 50 * (n + 40), f"{tag}: stuck after {got}/{n} outputs"
            valid = sent < n and rng.random() >= gap
            ctx.set(dut.i.valid, valid)
            if valid:
                ctx.set(i_payload, inputs[sent])
            ctx.set(dut.o.ready, rng.random() >= stall)
            _, _, i_ready, o_valid, o_ready, word = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.ready, o_payload)
            if valid and i_ready:
                first = cycles if first is None else first
                sent += 1
            if o_valid and o_ready:
                out, st = codec.unpack(word)
                k = got
                where = f"{tag} transfer {k}"
                assert out == [int(v) for v in expect[k]], \
                    f"{where}: data {out} != {list(expect[k])}\nprogram {prog}\n" \
                    f"input {list(data[k])}\nops { {nm: list(a[k]) for nm, a in ops.items()} }"
                assert st["last"] == (k == n - 1), where
                for name in st:
                    if name != "last":
                        assert st[name] == stats[name][k], \
                            f"{where}: {name} {st[name]} != {stats[name][k]}\nprogram {prog}"
                got += 1
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 0)
        self.cycles.append((n, cycles - first + 1))

    def run(self, seed, programs, transfers, lut_reloads=4, focus=None):
        rng = np.random.default_rng(seed)
        sim = Simulator(self.dut)
        sim.add_clock(1e-8)

        async def tb(ctx):
            if self.cfg.sdp_lut:
                await self.load_lut(ctx, rng, full=True)
            for p in range(programs):
                if self.cfg.sdp_lut and p and p % max(programs // lut_reloads, 1) == 0:
                    await self.load_lut(ctx, rng, full=False)
                prog = random_program(rng, self.cfg, focus)
                k = rng.random()
                gap, stall = (0.0, 0.0) if k < 0.25 else (float(rng.choice([0.2, 0.5])),
                                                          float(rng.choice([0.0, 0.3, 0.6])))
                await self.run_program(ctx, rng, prog, transfers, gap, stall,
                                       f"{self.cfg.name} seed {seed} program {p}")
        sim.add_testbench(tb)
        sim.run()


# =========================================================================================
# Tests
# =========================================================================================
@pytest.mark.parametrize("cfg,lanes", [(PRESETS["nv_small"], 1), (T4, 4),
                                       (PRESETS["nv_full"], 16)])
def test_interface(cfg, lanes):
    dut = SdpDatapath(cfg)
    dut._MustUse__silence = True          # only the interface is inspected here
    assert dut.lanes == lanes
    assert set(dut.in_layout.members) >= {"data", "last"}
    assert ("ew_alu" in dut.in_layout.members) == cfg.sdp_ew
    assert ("lut_uflow" in dut.out_layout.members) == cfg.sdp_lut
    assert hasattr(dut, "lut_rdata") == cfg.sdp_lut
    assert dut.latency == {1: 15, 4: 15, 16: 24}[lanes]     # nv_full: EW, LUT


def test_throughput_and_latency():
    """Ready held high and no gaps: one transfer per cycle after the pipeline latency."""
    bench = Bench(PRESETS["nv_small"])
    rng = np.random.default_rng(7)
    sim = Simulator(bench.dut)
    sim.add_clock(1e-8)

    async def tb(ctx):
        await bench.run_program(ctx, rng, random_program(rng, bench.cfg), 40, 0.0, 0.0,
                                "throughput")
    sim.add_testbench(tb)
    sim.run()
    (n, cycles), = bench.cycles
    assert cycles == n + bench.dut.latency


def _run_directed(cfg, programs):
    """Run (program, data) pairs on one simulator instance."""
    bench = Bench(cfg)
    rng = np.random.default_rng(11)
    sim = Simulator(bench.dut)
    sim.add_clock(1e-8)

    async def tb(ctx):
        for k, (prog, data) in enumerate(programs):
            await bench.run_program(ctx, rng, prog, len(data) // bench.dut.lanes, 0.3, 0.3,
                                    f"directed {k}", data=data)
    sim.add_testbench(tb)
    sim.run()


def test_directed_edges():
    """Extremes through bypassed stages and the converter's saturation boundaries: a value
    whose floor is 65536 or -65537, or that rounds up onto 65536, saturates uncounted
    (NVDLA's flag: the floor more than 1 from the result)."""
    edge = [-(1 << 31), (1 << 31) - 1, 0, 1, -1, -262145, -262146, -262143, 262141, 262142,
            262143, 262144, -131073, 131071, 65535, -65536, 32767, -32768, 127, -128, 128, -129,
            65536, 65537, -65537, -65538, 131073, 131074, 131075, -131074, -131075, -131076]
    passthrough = {"D_DP_BS_CFG": {"BS_BYPASS": 1}, "D_DP_BN_CFG": {"BN_BYPASS": 1},
                   "D_DP_EW_CFG": {"EW_BYPASS": 1}, "D_CVT_OFFSET": {"CVT_OFFSET": 0},
                   "D_CVT_SCALE": {"CVT_SCALE": 1}}
    programs = []
    for shift in (0, 1, 2, 31, 32, 48, 49, 63):
        for out in (0, 1):
            prog = dict(passthrough, D_CVT_SHIFT={"CVT_SHIFT": shift},
                        D_DATA_FORMAT={"OUT_PRECISION": out})
            programs.append((prog, edge))
    # X stages: a bypassed MUL still rounds by MUL_SHIFT; ALU shifts that saturate
    for k, shift in enumerate((0, 1, 15, 16, 17, 31, 32, 33, 48, 49, 63, 40, 34, 36)):
        operand = (0x8000, 0x7FFF, 0, 1, 0xFFFF)[k % 5]
        prog = dict(passthrough, D_CVT_SHIFT={"CVT_SHIFT": 0},
                    D_DATA_FORMAT={"OUT_PRECISION": 1},
                    D_DP_BS_CFG={"BS_BYPASS": 0, "BS_ALU_BYPASS": 0, "BS_ALU_ALGO": 2,
                                 "BS_MUL_BYPASS": 1, "BS_MUL_PRELU": 0, "BS_RELU_BYPASS": 1},
                    D_DP_BS_ALU_CFG={"BS_ALU_SRC": 0, "BS_ALU_SHIFT_VALUE": shift},
                    D_DP_BS_ALU_SRC_VALUE={"BS_ALU_OPERAND": operand},
                    D_DP_BS_MUL_CFG={"BS_MUL_SRC": 0,
                                     "BS_MUL_SHIFT_VALUE": (0, 1, 16, 33, 48, 49, 2)[k % 7]})
        programs.append((prog, edge))
    _run_directed(PRESETS["nv_small"], programs)


@pytest.mark.parametrize("seed", [1, 2])
def test_nv_small(seed):
    Bench(PRESETS["nv_small"]).run(seed, programs=60, transfers=6)


def test_t4():
    Bench(T4).run(3, programs=50, transfers=5)


def test_lut():
    """EW + LUT on 4 lanes: many LUT programs with boundary-seeking inputs."""
    Bench(LUT4).run(5, programs=120, transfers=5, focus="lut")


def test_nv_full():
    Bench(PRESETS["nv_full"]).run(4, programs=30, transfers=3)


@pytest.mark.slow
@pytest.mark.parametrize("cfg,focus,programs,transfers", [
    (PRESETS["nv_small"], None, 400, 8), (T4, None, 300, 8), (LUT4, None, 300, 6),
    (LUT4, "lut", 400, 6), (PRESETS["nv_full"], None, 120, 4)],
    ids=["nv_small", "t4", "lut4", "lut4_lut", "nv_full"])
def test_sweep(cfg, focus, programs, transfers):
    """A larger sweep (several minutes)."""
    Bench(cfg).run(100, programs=programs, transfers=transfers, focus=focus)
