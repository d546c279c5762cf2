"""The SDP arithmetic datapath (spec: SDP -- X1/X2 ALU, MUL, PReLU, ReLU; Y operand converters,
MUL, ALU, LUT; output converter). Integer (int8 / int16); on builds with fp16 also fp16
layers through BS / BN / EW and the LUT.

One transfer of ``lanes`` elements per cycle flows through a fixed pipeline::

    i -> [in: 1] -> [BS: 3] -> [BN: 3] -> [EW: 3] -> [LUT: 6] -> [CVT: 5] -> o

Each bracket is one stage group and its number of registered steps; groups the build lacks
(``cfg.sdp_bs`` / ``sdp_bn`` / ``sdp_ew`` / ``sdp_lut``) are not built at all. Latency from an
accepted input transfer to its output transfer: nv_small (BS, BN) 12 cycles, a build with EW but
no LUT 15, nv_large 21 (nv_full too: its input step also widens fp16). The input step
shifts the BS / BN ALU operands (``ALU_SHIFT_VALUE``), so no ALU step has a shifter in front
of its add. When a layer bypasses a stage its steps still take their
cycles (the value passes through). Every step is one level of heavy arithmetic at most: a
33x16 / 32x32 / 35x17 multiplier, a barrel shifter with rounding, a 32-bit add/compare.

Arithmetic follows the bit-exact golden model :mod:`sim.sdp` (``x_stage``, ``y_operand_convert``,
``y_stage``, ``lut_lookup``, ``output_convert``) composed as ``run_sdp`` does:

* X stage (BS, BN): ALU operand ``saturate32(op16 << ALU_SHIFT)``, MAX / MIN / SUM (algo 3 is
  SUM) on 33 bits; MUL ``a * op16`` (49 bits) rounded right by MUL_SHIFT to a saturated int32
  (a bypassed MUL still applies MUL_SHIFT); PReLU keeps non-negative ``a`` (low 32 bits); ReLU.
  A bypassed stage passes its input unchanged.
* EW operand converters (only for MEM operands; run during the X steps): ``saturate32(round(
  (op16 - OFFSET) * SCALE >> TRUNCATE))``, or ``op16`` when the converter is bypassed. REG
  operands are the 32-bit ``EW_*_OPERAND`` fields.
* EW: MUL ``x * op`` (64 bits) rounded right by EW_TRUNCATE to int32, PReLU; ALU MAX / MIN /
  SUM / EQL (1 if unequal) saturated to int32.
* LUT: LE (linear or exponent index) and LO (linear) indices, table choice by the
  under/overflow/hybrid priorities, interpolation between two entries (35-bit fraction) or
  extrapolation from the first / last entry with the slope scale and signed shift.
* Output converter: ``(x - CVT_OFFSET) * CVT_SCALE`` rounded right by CVT_SHIFT into 17 bits
  (that saturation is what ``o.sat`` counts, flagged as NVDLA's Verilog does: only when the
  truncated value lies beyond 65536 or -65537) and saturated to OUT_PRECISION (int8 / int16). In
  EQL mode (EW on, EW ALU on, algo EQL) the converter is bypassed: the output is ``x``
  truncated to the output precision, while the 17-bit flag of the converter's result on
  ``x`` still counts on integer layers (NVDLA's ``NV_NVDLA_SDP_CORE_c`` computes it
  whatever the mode).

Rounding is round-half-away-from-zero everywhere, as in the golden model.

Per-transfer statistics on ``o`` (all ``lanes`` lanes count, padding included): ``sat`` lanes
whose converter saturated; with the LUT, ``lut_uflow`` / ``lut_oflow`` (chosen table under /
overflowed), ``lut_hybrid`` (chosen table hit), ``lut_le_hit`` / ``lut_lo_hit`` (index inside
that table), all 0 when the layer does not use the LUT; ``unequal``: any lane's output is
non-zero -- the rule of the golden model and of NVDLA's write DMA, which ORs every output
element into D_STATUS.STATUS_UNEQUAL; in EQL mode the outputs are the comparison results.
The perf enables (D_PERF_ENABLE) are the unit's business: these counts are always produced.

Flow control: the whole pipeline advances together when the output register is empty or
being read (``i.ready = ~o.valid | o.ready``); input gaps travel as bubbles. One transfer per
cycle while ``o.ready`` is high.

LUT RAM access (``cfg.sdp_lut``): LE entries 0..64 and LO entries 0..256 share one 322-entry
RAM (LO at 65). ``lut_we`` writes ``lut_wdata`` at ``lut_table`` / ``lut_addr`` on the clock
edge; ``lut_rdata`` is the entry at ``lut_rd_table`` / ``lut_rd_addr`` of the previous cycle
(a synchronous read: the RAM is block RAM; the unit's pointer gives the next cycle's address,
:func:`hw.sdp.sdp.lut_access`) (``lut_re`` only marks a read for the unit's pointer and is
otherwise unused here). Addresses past a table's end read 0 and ignore writes. Write the LUT
only while no layer uses it.

fp16 layers (builds whose ``data_types`` include fp16; ``PROC_PRECISION = FP16``): the golden
model's ``x_stage_fp16`` / ``fp32_to_fp16`` on fp32 codes with NVDLA's float units
(:mod:`hw.nvfloat`). On such builds the input step also widens the input's low
16 bits to fp32 and the BS / BN operands (register or memory) likewise, NaNs
to +0 with ``D_FEATURE_MODE_CFG.NAN_TO_ZERO``. Each X stage then uses its three steps for the
fp32 ALU (one adder and one max / min unit per lane), the fp32 multiplier (one per lane) and
PReLU / ReLU (the shift fields take no part); the converter's first step turns fp32 into fp16
(``o.sat``: outputs of magnitude 65504; ``o.nan_out``: NaN outputs; none in EQL mode). EW:
the operand steps widen fp16 memory operands (NaN -> +0 with NAN_TO_ZERO; the converters take
no part) and take the register operands as fp32 codes; then the fp32 multiplier with PReLU
(EW_TRUNCATE takes no part) and the fp32 ALU (max / min / sum, EQL on the raw codes). The LUT
(builds with fp16 and ``sdp_lut``; :func:`sim.sdp.sdp.lut_lookup_fp16`) computes beside the
integer one in the same six steps, ``fp`` choosing: fp32 ``x - START`` per table; the fp
indices (:func:`_index_fp16`: LE exponent = the exponent field - 127 - LE_INDEX_OFFSET with
the mantissa as the fraction, linear = the significand shifted by the exponent - 127 -
INDEX_SELECT - 23, 35-bit fractions) feeding the integer path's table choice, RAM addresses
and counters; ``x - (START or END + bias)`` in fp32 (bias: the fp32 2^LE_INDEX_OFFSET of an LE
exponent-table underflow, else +0; the four references + bias are per-unit fp32 adders on the
registers) and the fp17 weights ``1 - f`` (exactly 1 for f = 0) and ``f``; the fp16 entries
in fp17 times the weights, and the fp17 difference times the fp16 slope scale; the fp17 sums
``y0 x (1 - f) + y1 x f`` (hit) and ``y0 + diff x scale`` (miss); the chosen one widened to
fp32. The slope shifts take no part. The CDP's fp16 LUT (:mod:`hw.cdp.datapath`) shares the
float units and the RAM but not this arithmetic: its index keeps 16-bit fractions and reads
the exponent differently, and it interpolates as ``y0 + (y1 - y0) x f``. Int layers on such
builds compute as before. A flying fp16 layer's input is the accumulator's fp32 codes (an fp16
convolution), taken as they are in the first step (NaN -> +0 with NAN_TO_ZERO).

Precision conversion in the output converter (builds with int16 and fp16; data-format spec,
Precision Conversion, Table 30; golden :mod:`sim.sdp.convert`): int16 -> fp16
(``PROC_PRECISION = INT16``, ``OUT_PRECISION = FP16``) takes the converter's 17-bit result
through :class:`hw.nvfloat.Int17ToFp16` (nearest even) in its last step, magnitudes from
65520 up saturating to +-65504 (NVDLA's Verilog; no infinity), ``o.sat`` counting the outputs of magnitude 65504 instead of the 17-bit saturation;
fp16 -> int16 (``PROC_PRECISION = FP16``, ``OUT_PRECISION = INT16``) takes the fp16 result
through :class:`hw.nvfloat.Fp16ToInt16` (half away from zero, saturating, NaN -> -32768) in
its second step, no saturation or NaN counted. int8 <-> int16 conversions are the unit's
business (their arithmetic is the int8 layer's, saturated to OUT_PRECISION).

Not supported: Winograd / batch ordering (the unit's business; the arithmetic is per
element).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from arch.registers import register_map
from hw.arith import clip, comb, round_shift_right, round_shift_right_split, saturate
from hw import nvfloat
from hw.regfile import fields_layout

__all__ = ["SdpDatapath", "LE_DEPTH", "LO_DEPTH", "LUT_FRACTION_BITS", "lut_ram"]

LE_DEPTH, LO_DEPTH = 65, 257          # same as sim.sdp.lut
LUT_FRACTION_BITS = 35
ALU_MAX, ALU_MIN, ALU_SUM, ALU_EQL = 0, 1, 2, 3
FP16 = 2
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


# =========================================================================================
# Arithmetic helpers (build combinational logic, return Values)
# =========================================================================================
def _shift_left_saturate32(op16, shift6):
    """``sim.sdp.shift_left_saturate(op16, shift, 32)`` for a 6-bit shift."""
    op16 = Value.cast(op16)
    wide = op16 << shift6[:5]                                           # 47 bits
    big = Mux(op16 == 0, 0, Mux(op16[-1], _INT32_MIN, _INT32_MAX))
    return Mux(shift6[5], big, saturate(wide, 32)).as_signed()[:32].as_signed()


def _highest_one(v):
    """Index of the highest set bit of unsigned ``v`` (32 bits) and whether ``v`` is zero."""
    bits, cur = [], v
    for step in (16, 8, 4, 2, 1):
        hi = cur[step:2 * step]
        big = hi != 0
        bits.append(big)
        cur = Mux(big, hi, cur[:step])
    return Cat(*reversed(bits)), v == 0


def _popcount(flags):
    total = Const(0, 1)
    for f in flags:
        total = total + f
    return total


def _index_fp16(m, d, exponent, offset, select, depth, name):
    """One table's index in an fp16 layer (:func:`sim.sdp.sdp.lut_index_linear_fp16` /
    ``lut_index_exponent_fp16``) from the fp32 difference ``d = x - START``: ``(index,
    fraction, under, over)`` with a 35-bit fraction; the index is 0 on underflow (a negative,
    zero or NaN ``d``) and ``depth - 1`` on overflow, the fraction 0 on both. ``exponent``: a
    Value (LE: exponent mode) or False (LO); ``offset`` / ``select``: the signed 8-bit
    fields. The CDP's fp16 index (:meth:`hw.cdp.datapath.CdpDatapath._index_fp16`) differs:
    16-bit fractions, the exponent read as 8-bit signed in exponent mode, an infinite ``d``
    a hit at 0 in linear mode."""
    F, limit = LUT_FRACTION_BITS, depth - 1
    e, mant = d[23:31], d[:23]
    under = ((e == 0xFF) & mant.any()) | (d[:31] == 0) | d[31]
    # linear: d x 2^-select = sig x 2^ls, ls = (e - 127 read as 8-bit signed) - select - 23
    e8 = Signal(signed(8), name=f"{name}_e8")
    m.d.comb += e8.eq(e - 127)
    ls = Signal(signed(10), name=f"{name}_ls")
    m.d.comb += ls.eq(e8 - select - 23)
    amount = Signal(6, name=f"{name}_amount")
    m.d.comb += amount.eq(Mux(ls >= 0, 0, Mux(ls < -63, 63, (-ls)[:6])))
    fixed = Signal(F + 24, name=f"{name}_fixed")                 # sig x 2^(ls + 35)
    m.d.comb += fixed.eq(Cat(Const(0, F), mant, Const(1, 1)) >> amount)
    whole = fixed[F:]
    l_idx = Mux((ls >= 0) | (whole > 511), 511, whole[:9])
    l_frac = Mux(ls >= 0, 0, fixed[:F])
    l_over = l_idx >= limit
    if exponent is False:
        idx, frac, over = l_idx, l_frac, l_over
    else:
        # exponent: index = e - 127 - LE_INDEX_OFFSET, fraction = the mantissa
        ediff = Signal(signed(10), name=f"{name}_ediff")
        m.d.comb += ediff.eq(e - 127 - offset)
        under = under | (exponent & (ediff < 0))
        idx = Mux(exponent, ediff.as_unsigned()[:9], l_idx)
        frac = Mux(exponent, Cat(Const(0, F - 23), mant), l_frac)
        over = Mux(exponent, ediff >= limit, l_over)
    over = comb(m, ~under & over, f"{name}_over")
    under = comb(m, under, f"{name}_under")
    idx = Mux(under, 0, Mux(over, limit, idx))
    return idx, Mux(under | over, 0, frac), under, over


def lut_ram(m, access, lanes):
    """The LE + LO lookup-table RAM of a unit (SDP, CDP): LE at 0..64, LO at 65..321, signed
    16-bit entries, with the CSB access port of ``access``: ``lut_we`` writes ``lut_wdata``
    at ``lut_table`` / ``lut_addr`` on the clock edge; ``lut_rdata`` is the entry at the
    ``lut_rd_table`` / ``lut_rd_addr`` of the previous cycle (a synchronous read, 0 past a
    table's end), so that the RAM maps to block RAM.

    Returns ``lanes`` pairs of synchronous read ports ``(rp0, rp1)`` for the lookups (an
    entry and its neighbour). Lane 0 reads the RAM itself (``lut_ram``); every further lane
    reads a copy of it (``lut_ram1``, ``lut_ram2``, ...) written by the same write port, so
    every copy holds the same entries at every clock edge and a lane reads what it would
    read from the one RAM. One RAM with all 2 x ``lanes`` + 1 read ports (33 for nv_large's
    SDP) is what Yosys's ``memory_libmap`` could not map for ECP5: on nv_large's SDP
    datapath alone (``synth_ecp5``, Yosys 0.23) that pass grew from 1.7 GB to its 8 GB cap
    within a minute and aborted; a RAM with one write and at most three read ports is an
    ordinary block RAM mapping. With one lane (nv_small's CDP) this is the one RAM as
    before."""
    def place(table, addr, name):
        inside = comb(m, Mux(table, addr < LO_DEPTH, addr < LE_DEPTH), f"lut_{name}inside")
        return inside, comb(m, Mux(table, addr + LE_DEPTH, addr)[:9], f"lut_{name}ram_addr")

    w_inside, w_addr = place(access.lut_table, access.lut_addr, "")
    copies = []
    for k in range(lanes):
        mem = Memory(shape=unsigned(16), depth=LE_DEPTH + LO_DEPTH, init=[])
        m.submodules["lut_ram" if k == 0 else f"lut_ram{k}"] = mem
        wp = mem.write_port()
        m.d.comb += [wp.addr.eq(w_addr), wp.data.eq(access.lut_wdata),
                     wp.en.eq(access.lut_we & w_inside)]
        copies.append(mem)
    r_inside, r_addr = place(access.lut_rd_table, access.lut_rd_addr, "rd_")
    rp = copies[0].read_port()
    r_inside_q = Signal(name="lut_rd_inside_q")
    m.d.sync += r_inside_q.eq(r_inside)
    m.d.comb += [rp.addr.eq(r_addr), access.lut_rdata.eq(Mux(r_inside_q, rp.data, 0))]
    return [(mem.read_port(), mem.read_port()) for mem in copies]


class _Pipe:
    """Registered steps that all advance on ``en``. The state is a dict name -> Value; at
    every :meth:`step` each live entry becomes a register (entries set to None are dropped)."""

    def __init__(self, m, en):
        self.m, self.en = m, en
        self.steps = 0

    def step(self, state):
        self.steps += 1
        out = {}
        for name, value in state.items():
            if value is None:
                continue
            value = Value.cast(value)
            reg = Signal(value.shape(), name=f"s{self.steps}_{name}")
            with self.m.If(self.en):
                self.m.d.sync += reg.eq(value)
            out[name] = reg
        return out


# =========================================================================================
# The datapath
# =========================================================================================
class SdpDatapath(wiring.Component):
    """The SDP datapath of a build (see the module docstring).

    Ports
        ``regs``  In: the SDP D-group rw fields (``fields_layout(block.d_registers, ("rw",))``),
                  constant while a layer runs.
        ``s``     In (LUT builds): the SDP S-group rw fields (LUT configuration).
        ``i``     In stream of ``in_layout``: ``data`` (T x int32), the memory operands
                  ``bs_alu``/``bs_mul``/``bn_alu``/``bn_mul``/``ew_alu``/``ew_mul`` (T x int16,
                  only for the stages the build has; ignored when the source is REG), ``last``.
        ``o``     Out stream of ``out_layout``: ``data`` (T x int16, int8 or int16 range),
                  ``last``, ``sat``, ``lut_uflow``/``lut_oflow``/``lut_hybrid``/``lut_le_hit``/
                  ``lut_lo_hit`` (LUT builds), ``unequal``, ``nan_out`` (fp16 builds).
        ``lut_we``/``lut_re``/``lut_table``/``lut_addr``/``lut_wdata``/``lut_rd_table``/
        ``lut_rd_addr``/``lut_rdata`` (LUT
                  builds): LUT RAM access, write on the clock edge, combinational read.

    Attributes: ``lanes`` (T, elements per transfer), ``in_layout`` / ``out_layout`` (stream
    payloads), ``regs_layout`` / ``s_layout`` (register field views), ``latency`` (cycles from
    an accepted input to its output when ``o.ready`` stays high).
    """

    def __init__(self, cfg):
        self.cfg = cfg
        self.lanes = T = cfg.sdp_bs_throughput if cfg.sdp_bs else max(cfg.sdp_bn_throughput, 1)
        block = register_map(cfg)["SDP"]
        self.regs_layout = fields_layout(block.d_registers, ("rw",))
        self.s_layout = fields_layout(block.s_registers, ("rw",), ("S_POINTER", "S_STATUS"))
        ops = data.ArrayLayout(signed(16), T)
        fields = {"data": data.ArrayLayout(signed(32), T)}
        for stage, present in (("bs", cfg.sdp_bs), ("bn", cfg.sdp_bn), ("ew", cfg.sdp_ew)):
            if present:
                fields[f"{stage}_alu"] = ops
                fields[f"{stage}_mul"] = ops
        fields["last"] = 1
        self.in_layout = data.StructLayout(fields)
        count = range(T + 1)
        out = {"data": data.ArrayLayout(signed(16), T), "last": 1, "sat": count}
        if cfg.sdp_lut:
            out.update(lut_uflow=count, lut_oflow=count, lut_hybrid=count, lut_le_hit=count,
                       lut_lo_hit=count)
        out["unequal"] = 1
        self.fp16 = "fp16" in cfg.data_types
        #: int16 <-> fp16 in the output converter (builds with both precisions)
        self.fp_convert = self.fp16 and "int16" in cfg.data_types
        if self.fp16:
            out["nan_out"] = count
        self.out_layout = data.StructLayout(out)
        self.latency = (4 * cfg.sdp_bs + 4 * cfg.sdp_bn + 3 * cfg.sdp_ew + 6 * cfg.sdp_lut + 5)
        if cfg.sdp_ew and not (cfg.sdp_bs or cfg.sdp_bn):
            self.latency += 3                     # the EW operand converters need 3 steps
        self.latency += 2                         # the input register and input step
        members = {
            "regs": In(self.regs_layout),
            "i": In(stream.Signature(self.in_layout)),
            "o": Out(stream.Signature(self.out_layout)),
        }
        if cfg.sdp_lut:
            members.update({
                "s": In(self.s_layout),
                "lut_we": In(1), "lut_re": In(1), "lut_table": In(1), "lut_addr": In(10),
                "lut_wdata": In(16), "lut_rd_table": In(1), "lut_rd_addr": In(10),
                "lut_rdata": Out(16),
            })
        super().__init__(members)

    # ------------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        cfg, T = self.cfg, self.lanes
        self._fp_sigs = None

        out_valid = Signal()
        en = Signal()
        m.d.comb += [en.eq(~out_valid | self.o.ready), self.i.ready.eq(en)]
        pipe = _Pipe(m, en)

        p = self.i.payload
        st = {"valid": self.i.valid, "last": p.last}
        for lane in range(T):
            st[f"x{lane}"] = p.data[lane]
            for name in ("bs_alu", "bs_mul", "bn_alu", "bn_mul", "ew_alu", "ew_mul"):
                if name in self.in_layout.members:
                    st[f"{name}{lane}"] = p[name][lane]

        # -- the input register: the feeder's transfer as it comes (its operand selection in
        # front of the input step's shifter was a deep path of the ECP5 board netlist)
        st = pipe.step(dict(st))

        # -- the input step: the X stages' ALU operands shifted; fp16 builds: fp16 -> fp32
        # of the input and the BS / BN operands
        new = dict(st)
        self._input_step(m, st, new)
        if self.fp16:
            self._fp_in_step(m, st, new)
        st = pipe.step(new)

        # -- X stages and, in their first three steps, the EW operand converters ----------
        x_steps = []
        for prefix, present in (("BS", cfg.sdp_bs), ("BN", cfg.sdp_bn)):
            if present:
                x_steps += self._x_stage(m, prefix)
        cvt_steps = self._ew_operand_steps(m) if cfg.sdp_ew else []
        for k in range(max(len(x_steps), len(cvt_steps))):
            new = dict(st)
            for steps in (x_steps, cvt_steps):
                if k < len(steps):
                    steps[k](st, new)
            st = pipe.step(new)

        # -- Y stage -------------------------------------------------------------------------
        if cfg.sdp_ew:
            for fn in self._ew_steps(m):
                new = dict(st)
                fn(st, new)
                st = pipe.step(new)
        if cfg.sdp_lut:
            for fn in self._lut_steps(m, pipe):
                new = dict(st)
                fn(st, new)
                st = pipe.step(new)

        # -- output converter ------------------------------------------------------------
        for fn in self._cvt_steps(m):
            new = dict(st)
            fn(st, new)
            st = pipe.step(new)
        assert pipe.steps == self.latency

        o = self.o.payload
        m.d.comb += [self.o.valid.eq(out_valid), out_valid.eq(st["valid"]),
                     o.last.eq(st["last"]), o.sat.eq(st["sat"]), o.unequal.eq(st["unequal"])]
        if self.fp16:
            m.d.comb += o.nan_out.eq(st["nan_out"])
        for lane in range(T):
            m.d.comb += o.data[lane].eq(st[f"out{lane}"])
        if cfg.sdp_lut:
            for name in ("uflow", "oflow", "hybrid", "le_hit", "lo_hit"):
                m.d.comb += o[f"lut_{name}"].eq(st[f"lut_{name}"])
        return m

    # ------------------------------------------------------------------------------------
    def _fp_layer(self, m):
        """(an fp16 layer, NAN_TO_ZERO) as named signals (fp16 builds)."""
        r = self.regs
        if self._fp_sigs is None:
            self._fp_sigs = (comb(m, r.D_DATA_FORMAT.PROC_PRECISION == FP16, "fp_layer"),
                             comb(m, r.D_FEATURE_MODE_CFG.NAN_TO_ZERO, "fp_ntz"))
        return self._fp_sigs

    def _input_step(self, m, st, new):
        """First step: each X stage's ALU operand (memory or register) shifted left by
        ``ALU_SHIFT_VALUE`` with 32-bit saturation, ``{bs,bn}_opsh{lane}``. A shifter and the
        ALU's 33-bit add / compare in one step were the deepest SDP path of the whole-core
        ECP5 netlist (with the operand selection in front of them, 21 ns unplaced)."""
        r, T, cfg = self.regs, self.lanes, self.cfg
        for prefix, present in (("BS", cfg.sdp_bs), ("BN", cfg.sdp_bn)):
            if not present:
                continue
            low = prefix.lower()
            alu_cfg = r[f"D_DP_{prefix}_ALU_CFG"]
            shift6 = alu_cfg[f"{prefix}_ALU_SHIFT_VALUE"][:6]
            reg = r[f"D_DP_{prefix}_ALU_SRC_VALUE"][f"{prefix}_ALU_OPERAND"].as_signed()
            for lane in range(T):
                op = Mux(alu_cfg[f"{prefix}_ALU_SRC"], st[f"{low}_alu{lane}"], reg)
                new[f"{low}_opsh{lane}"] = _shift_left_saturate32(op, shift6)
                new[f"{low}_alu{lane}"] = None

    def _fp_in_step(self, m, st, new):
        """fp16 builds, first step: in an fp16 layer ``x`` becomes the fp32 code of its low
        16 bits (NaN -> +0 with NAN_TO_ZERO), or in a flying one (the accumulator's fp32
        codes) stays the code it is (NaN -> +0 with NAN_TO_ZERO); the BS / BN ALU and MUL operands (register or
        memory, NaN -> +0 with NAN_TO_ZERO) become fp32 codes ``{bs,bn}_f{a,m}{lane}``. Int
        layers pass ``x`` unchanged."""
        r, T, cfg = self.regs, self.lanes, self.cfg
        fp, ntz = self._fp_layer(m)

        def widen(v, name):
            h = comb(m, v[:16], f"{name}_h")
            h = Mux(ntz & (h[10:15] == 0x1F) & h[:10].any(), 0, h)
            return nvfloat.fp16_to_fp32(m, h)

        flying = comb(m, r.D_FEATURE_MODE_CFG.FLYING_MODE, "fp_flying")
        for lane in range(T):
            x = st[f"x{lane}"]
            w = widen(x, f"fp_in{lane}")          # (a NaN flushed as fp16: the same +0)
            # flying: the accumulator's fp32 code as it is (NaN -> +0 with NAN_TO_ZERO)
            f = comb(m, x.as_unsigned()[:32], f"fp_fly{lane}")
            f = Mux(ntz & nvfloat.fp32_is_nan(f), 0, f)
            w = Mux(flying, f, w)
            new[f"x{lane}"] = Mux(fp, w, x.as_unsigned()).as_signed()[:32].as_signed()
        for prefix, present in (("BS", cfg.sdp_bs), ("BN", cfg.sdp_bn)):
            if not present:
                continue
            low = prefix.lower()
            for unit, key in (("ALU", "a"), ("MUL", "m")):
                src = r[f"D_DP_{prefix}_{unit}_CFG"][f"{prefix}_{unit}_SRC"]
                reg = r[f"D_DP_{prefix}_{unit}_SRC_VALUE"][f"{prefix}_{unit}_OPERAND"]
                for lane in range(T):
                    op = Mux(src, st[f"{low}_{unit.lower()}{lane}"].as_unsigned(), reg)
                    new[f"{low}_f{key}{lane}"] = widen(op, f"{low}_f{key}{lane}")

    # ------------------------------------------------------------------------------------
    def _x_stage(self, m, prefix):
        """The four steps of one X stage (BS or BN): ALU, multiplier, the rounding shift's
        add, the shift / PReLU / ReLU (the rounding shift and the muxes in one step were one of
        the whole core's deepest paths)."""
        r, T = self.regs, self.lanes
        c = r[f"D_DP_{prefix}_CFG"]
        low = prefix.lower()
        on = comb(m, ~c[f"{prefix}_BYPASS"], f"{low}_on")
        alu_on = comb(m, on & ~c[f"{prefix}_ALU_BYPASS"], f"{low}_alu_on")
        algo = c[f"{prefix}_ALU_ALGO"]
        mul_cfg = r[f"D_DP_{prefix}_MUL_CFG"]
        mul_on = comb(m, on & ~c[f"{prefix}_MUL_BYPASS"], f"{low}_mul_on")
        prelu = comb(m, mul_on & c[f"{prefix}_MUL_PRELU"], f"{low}_prelu")
        relu = comb(m, on & ~c[f"{prefix}_RELU_BYPASS"], f"{low}_relu")
        mul_shift = comb(m, Mux(on, mul_cfg[f"{prefix}_MUL_SHIFT_VALUE"][:6], 0),
                          f"{low}_mul_shift")
        mul_mem = mul_cfg[f"{prefix}_MUL_SRC"]
        mul_reg = r[f"D_DP_{prefix}_MUL_SRC_VALUE"][f"{prefix}_MUL_OPERAND"].as_signed()
        one = Const(1, signed(16))
        if self.fp16:
            fp, _ = self._fp_layer(m)

        def alu(st, new):
            for lane in range(T):
                x = st[f"x{lane}"]
                opsh = st[f"{low}_opsh{lane}"]        # shifted in the input step
                res = Mux(algo == ALU_MAX, Mux(x > opsh, x, opsh),
                          Mux(algo == ALU_MIN, Mux(x < opsh, x, opsh), x + opsh))
                if self.fp16:
                    fa = st[f"{low}_fa{lane}"]
                    xf = x.as_unsigned()[:32]
                    sm = nvfloat.fp32_add(m, xf, fa)
                    mm = nvfloat.fp32_max_min(m, xf, fa, algo == ALU_MIN)
                    fres = Mux(algo == ALU_SUM, sm, mm)
                    res = Mux(fp, Cat(fres, fres[31]).as_signed(), res)
                    new[f"{low}_fa{lane}"] = None
                new[f"{low}_a{lane}"] = Mux(alu_on, res, x).as_signed()[:33].as_signed()
                new[f"{low}_m{lane}"] = Mux(mul_on, Mux(mul_mem, st[f"{low}_mul{lane}"],
                                                        mul_reg), one)
                new[f"x{lane}"] = new[f"{low}_opsh{lane}"] = new[f"{low}_mul{lane}"] = None

        def mul(st, new):
            for lane in range(T):
                new[f"{low}_p{lane}"] = st[f"{low}_a{lane}"] * st[f"{low}_m{lane}"]  # 49 bits
                new[f"{low}_m{lane}"] = None
                if self.fp16:
                    new[f"{low}_fp{lane}"] = nvfloat.fp32_mul(
                        m, st[f"{low}_a{lane}"].as_unsigned()[:32], st[f"{low}_fm{lane}"])
                    new[f"{low}_fm{lane}"] = None

        finishes = []

        def round_add(st, new):
            finishes.clear()
            for lane in range(T):
                early, finish = round_shift_right_split(m, st[f"{low}_p{lane}"], mul_shift, 32,
                                                        49, f"{low}_rsr{lane}")
                finishes.append(finish)
                new[f"{low}_ps{lane}"], new[f"{low}_pt{lane}"] = early["sum"], early["sat"]
                new[f"{low}_p{lane}"] = None

        def shift(st, new):
            for lane in range(T):
                a = st[f"{low}_a{lane}"]
                y, _ = finishes[lane]({"sum": st[f"{low}_ps{lane}"],
                                       "sat": st[f"{low}_pt{lane}"]})
                y = Mux(prelu & ~a[-1], a[:32].as_signed(), y)
                y = Mux(relu & y.as_signed()[-1], 0, y)
                if self.fp16:
                    af = a.as_unsigned()[:32]
                    fy = Mux(mul_on, Mux(prelu & ~af[31], af, st[f"{low}_fp{lane}"]), af)
                    fy = comb(m, fy, f"{low}_fy{lane}")
                    fy = Mux(relu & fy[31] & ~nvfloat.fp32_is_nan(fy), 0, fy)
                    y = Mux(fp, fy.as_signed(), y)
                    new[f"{low}_fp{lane}"] = None
                new[f"x{lane}"] = y.as_signed()[:32].as_signed()
                new[f"{low}_a{lane}"] = new[f"{low}_ps{lane}"] = new[f"{low}_pt{lane}"] = None

        return [alu, mul, round_add, shift]

    # ------------------------------------------------------------------------------------
    def _ew_operand_steps(self, m):
        """Three steps turning the EW memory operands into int32 (subtract, multiply,
        round-shift), choosing REG or MEM. Result: ``ew_aop{lane}``, ``ew_mop{lane}``."""
        r, T = self.regs, self.lanes
        units = {}
        for unit in ("ALU", "MUL"):
            ucfg = r[f"D_DP_EW_{unit}_CFG"]
            units[unit.lower()] = dict(
                mem=ucfg[f"EW_{unit}_SRC"], bypass=ucfg[f"EW_{unit}_CVT_BYPASS"],
                reg=r[f"D_DP_EW_{unit}_SRC_VALUE"][f"EW_{unit}_OPERAND"].as_signed(),
                offset=r[f"D_DP_EW_{unit}_CVT_OFFSET_VALUE"][f"EW_{unit}_CVT_OFFSET"].as_signed(),
                scale=r[f"D_DP_EW_{unit}_CVT_SCALE_VALUE"][f"EW_{unit}_CVT_SCALE"].as_signed(),
                trunc=r[f"D_DP_EW_{unit}_CVT_TRUNCATE_VALUE"][f"EW_{unit}_CVT_TRUNCATE"][:6])

        def sub(st, new):
            for u, c in units.items():
                for lane in range(T):
                    new[f"ew_{u}_d{lane}"] = st[f"ew_{u}{lane}"] - c["offset"]       # 33 bits

        def mul(st, new):
            for u, c in units.items():
                for lane in range(T):
                    new[f"ew_{u}_p{lane}"] = st[f"ew_{u}_d{lane}"] * c["scale"]      # 49 bits
                    new[f"ew_{u}_d{lane}"] = None

        def shift(st, new):
            for u, c in units.items():
                for lane in range(T):
                    v, _ = round_shift_right(m, st[f"ew_{u}_p{lane}"], c["trunc"], 32, 49,
                                              f"ew_{u}_cvt{lane}")
                    mem = Mux(c["bypass"], st[f"ew_{u}{lane}"], v)
                    if self.fp16:
                        # fp16 layers: the memory operand widened to fp32 (NaN -> +0 with
                        # NAN_TO_ZERO), the converter unused; the register is an fp32 code
                        fp, ntz = self._fp_layer(m)
                        h = comb(m, st[f"ew_{u}{lane}"].as_unsigned(), f"ew_{u}_h{lane}")
                        h = Mux(ntz & (h[10:15] == 0x1F) & h[:10].any(), 0, h)
                        mem = Mux(fp, nvfloat.fp16_to_fp32(m, h).as_signed(), mem)
                    new[f"ew_{u[0]}op{lane}"] = Mux(c["mem"], mem, c["reg"]).as_signed()[:32] \
                        .as_signed()
                    new[f"ew_{u}{lane}"] = new[f"ew_{u}_p{lane}"] = None

        return [sub, mul, shift]

    # ------------------------------------------------------------------------------------
    def _ew_steps(self, m):
        """EW multiplier (32x32), its rounding shift and PReLU, then the ALU."""
        r, T = self.regs, self.lanes
        c = r.D_DP_EW_CFG
        on = comb(m, ~c.EW_BYPASS, "ew_on")
        mul_on = comb(m, on & ~c.EW_MUL_BYPASS, "ew_mul_on")
        prelu = c.EW_MUL_PRELU
        alu_on = comb(m, on & ~c.EW_ALU_BYPASS, "ew_alu_on")
        algo = c.EW_ALU_ALGO
        trunc = r.D_DP_EW_TRUNCATE_VALUE.EW_TRUNCATE

        def mul(st, new):
            for lane in range(T):
                new[f"ew_p{lane}"] = st[f"x{lane}"] * st[f"ew_mop{lane}"]          # 64 bits
                if self.fp16:
                    new[f"ew_fp{lane}"] = nvfloat.fp32_mul(m, st[f"x{lane}"].as_unsigned(),
                                                           st[f"ew_mop{lane}"].as_unsigned())
                new[f"ew_mop{lane}"] = None

        def shift(st, new):
            for lane in range(T):
                x = st[f"x{lane}"]
                v, _ = round_shift_right(m, st[f"ew_p{lane}"], trunc, 32, 64, f"ew_rsr{lane}")
                if self.fp16:
                    fp, _ = self._fp_layer(m)
                    v = Mux(fp, st[f"ew_fp{lane}"].as_signed(), v)
                    new[f"ew_fp{lane}"] = None
                v = Mux(prelu & ~x[-1], x, v)
                new[f"x{lane}"] = Mux(mul_on, v, x).as_signed()[:32].as_signed()
                new[f"ew_p{lane}"] = None

        def alu(st, new):
            for lane in range(T):
                x, op = st[f"x{lane}"], st[f"ew_aop{lane}"]
                res = Mux(algo == ALU_MAX, Mux(x > op, x, op),
                          Mux(algo == ALU_MIN, Mux(x < op, x, op),
                              Mux(algo == ALU_EQL, x != op, saturate(x + op, 32))))
                if self.fp16:
                    fp, _ = self._fp_layer(m)
                    xf, of = x.as_unsigned(), op.as_unsigned()
                    sm = nvfloat.fp32_add(m, xf, of)
                    mm = nvfloat.fp32_max_min(m, xf, of, algo == ALU_MIN)
                    fres = Mux(algo == ALU_SUM, sm, Mux(algo == ALU_EQL, xf != of, mm))
                    res = Mux(fp, fres.as_signed(), res)
                new[f"x{lane}"] = Mux(alu_on, res, x).as_signed()[:32].as_signed()
                new[f"ew_aop{lane}"] = None

        return [mul, shift, alu]

    # ------------------------------------------------------------------------------------
    def _lut_ram(self, m):
        """The LE + LO RAM with its CSB access port; returns each lane's pair of read
        ports."""
        return lut_ram(m, self, self.lanes)

    def _lut_steps(self, m, pipe):
        """Six steps: differences, indices, table choice + RAM address, products, rounding
        and slope shift, final select. ``x{lane}`` is replaced only when the layer uses the
        LUT; the hit/flow flags become per-transfer counts in the converter steps."""
        r, s, T = self.regs, self.s, self.lanes
        ports = self._lut_ram(m)
        c = r.D_DP_EW_CFG
        lut_on = comb(m, ~c.EW_BYPASS & ~c.EW_LUT_BYPASS, "lut_on")
        lcfg, info = s.S_LUT_CFG, s.S_LUT_INFO
        le_linear = lcfg.LUT_LE_FUNCTION
        le_offset = info.LUT_LE_INDEX_OFFSET.as_signed()
        le_select = info.LUT_LE_INDEX_SELECT.as_signed()
        lo_select = info.LUT_LO_INDEX_SELECT.as_signed()
        le_start = s.S_LUT_LE_START.LUT_LE_START.as_signed()
        le_end = s.S_LUT_LE_END.LUT_LE_END.as_signed()
        lo_start = s.S_LUT_LO_START.LUT_LO_START.as_signed()
        lo_end = s.S_LUT_LO_END.LUT_LO_END.as_signed()
        les, los = s.S_LUT_LE_SLOPE_SCALE, s.S_LUT_LO_SLOPE_SCALE
        lesh, losh = s.S_LUT_LE_SLOPE_SHIFT, s.S_LUT_LO_SLOPE_SHIFT
        # bias 2^LE_INDEX_OFFSET of an LE exponent-table underflow (0 for offsets outside 0..31)
        bias_on = comb(m, ~le_linear & (le_offset >= 0) & (le_offset < 32), "lut_bias_on")
        bias = comb(m, Mux(bias_on, (Const(1, 32) << le_offset.as_unsigned()[:5])[:32], 0),
                     "lut_bias")
        F = LUT_FRACTION_BITS
        fp = None
        if self.fp16:
            fp, _ = self._fp_layer(m)
            # the extrapolation references (start or end) + bias as fp32 codes, per table and
            # side: bias = 2^LE_INDEX_OFFSET (fp32, exponent field offset + 127 wrapped to 8
            # bits) for an LE exponent-table underflow, else +0 (still added: the adder
            # flushes denormals)
            fbias = comb(m, Mux(le_linear, 0, Cat(Const(0, 23), (le_offset + 127)[:8])),
                         "lut_fbias")
            fref = {(t, side): comb(m, nvfloat.fp32_add(m, v.as_unsigned()[:32],
                                                         fbias if (t, side) == ("le", "u")
                                                         else Const(0, 32)),
                                     f"lut_fref_{t}{side}")
                    for t, side, v in (("le", "u", le_start), ("le", "o", le_end),
                                       ("lo", "u", lo_start), ("lo", "o", lo_end))}

        def diff(st, new):
            for lane in range(T):
                x = st[f"x{lane}"]
                new[f"lut_x{lane}"] = x
                for t, start in (("le", le_start), ("lo", lo_start)):
                    under = x <= start
                    new[f"{t}_u{lane}"] = under
                    new[f"{t}_d{lane}"] = Mux(under, 0, (x - start)[:32])
                    if self.fp16:                         # fp32 x - START
                        new[f"{t}_fd{lane}"] = nvfloat.fp32_sub(m, x.as_unsigned()[:32],
                                                                start.as_unsigned()[:32])

        def linear(lane, d, sel, depth, name):
            """Index / fraction / overflow of a linear table (sel: signed 8 bits)."""
            q = comb(m, Cat(Const(0, F), d) >> sel.as_unsigned()[:7], f"{name}_q{lane}")
            whole = q[F:]
            pos_over = whole >= depth - 1
            left = comb(m, d << Mux((-sel)[:8] > 8, 8, (-sel)[:8])[:4], f"{name}_l{lane}")
            neg_over = left >= depth - 1
            negative = sel[-1]
            over = Mux(negative, neg_over, pos_over)
            raw = Mux(negative, left[:9], whole[:9])
            index = Mux(over, depth - 1, raw)
            frac = Mux(negative, 0, q[:F])
            return index, frac, over

        def index(st, new):
            for lane in range(T):
                d = st[f"le_d{lane}"]
                # LE exponent: log2 of the difference (a leading-sign detector on 32 bits)
                neg = d[31]
                hb, none = _highest_one(Mux(neg, ~d, d))
                hb = comb(m, hb, f"le_hb{lane}")
                log2_9 = comb(m, Mux(none, Mux(neg, 0x1FF, 0), hb), f"le_log2_{lane}")
                e_under = st[f"le_u{lane}"] | (log2_9 < le_offset)
                e_raw = Mux(e_under, 0, (log2_9 - le_offset)[:9])
                e_over = e_raw >= LE_DEPTH - 1
                e_index = Mux(e_over, LE_DEPTH - 1, e_raw)
                safe = Mux(none, 0, hb)
                e_frac = (Cat(Const(0, F), d) >> safe)[:F]
                l_index, l_frac, l_over = linear(lane, d, le_select, LE_DEPTH, "le")
                new[f"le_i{lane}"] = Mux(le_linear, l_index, e_index)[:7]
                new[f"le_f{lane}"] = Mux(le_linear, l_frac, e_frac)
                new[f"le_o{lane}"] = Mux(le_linear, l_over, e_over)
                new[f"le_u{lane}"] = Mux(le_linear, st[f"le_u{lane}"], e_under)
                i, f, o = linear(lane, st[f"lo_d{lane}"], lo_select, LO_DEPTH, "lo")
                new[f"lo_i{lane}"], new[f"lo_f{lane}"], new[f"lo_o{lane}"] = i[:9], f, o
                new[f"le_d{lane}"] = new[f"lo_d{lane}"] = None
                if self.fp16:
                    fl = _index_fp16(m, st[f"le_fd{lane}"], ~le_linear, le_offset, le_select,
                                     LE_DEPTH, f"le_fp{lane}")
                    fo = _index_fp16(m, st[f"lo_fd{lane}"], False, 0, lo_select, LO_DEPTH,
                                     f"lo_fp{lane}")
                    for t, (fi, ff, fu, fov) in (("le", fl), ("lo", fo)):
                        w = len(new[f"{t}_i{lane}"])
                        new[f"{t}_i{lane}"] = Mux(fp, fi[:w], new[f"{t}_i{lane}"])
                        new[f"{t}_f{lane}"] = Mux(fp, ff, new[f"{t}_f{lane}"])
                        new[f"{t}_o{lane}"] = Mux(fp, fov, new[f"{t}_o{lane}"])
                        u = new.get(f"{t}_u{lane}", st[f"{t}_u{lane}"])
                        new[f"{t}_u{lane}"] = Mux(fp, fu, u)
                        new[f"{t}_fd{lane}"] = None

        def choose(st, new):
            for lane in range(T):
                le_u, le_o = st[f"le_u{lane}"], st[f"le_o{lane}"]
                lo_u, lo_o = st[f"lo_u{lane}"], st[f"lo_o{lane}"]
                le_hit, lo_hit = ~(le_u | le_o), ~(lo_u | lo_o)
                use_lo = comb(m, Mux(le_u & lo_u, lcfg.LUT_UFLOW_PRIORITY,
                                      Mux(le_o & lo_o, lcfg.LUT_OFLOW_PRIORITY,
                                          Mux(le_hit == lo_hit, lcfg.LUT_HYBRID_PRIORITY,
                                              ~le_hit))), f"lut_use_lo{lane}")
                uflow = comb(m, Mux(use_lo, lo_u, le_u), f"lut_uflow{lane}")
                oflow = comb(m, Mux(use_lo, lo_o, le_o), f"lut_oflow{lane}")
                flow = uflow | oflow
                a0 = comb(m, Mux(use_lo, st[f"lo_i{lane}"] + LE_DEPTH, st[f"le_i{lane}"])[:9],
                           f"lut_a0_{lane}")
                rp0, rp1 = ports[lane]
                m.d.comb += [rp0.addr.eq(a0), rp0.en.eq(pipe.en),
                             rp1.addr.eq(Mux(flow, a0, a0 + 1)), rp1.en.eq(pipe.en)]
                offset = Mux(use_lo, Mux(oflow, lo_end, lo_start), Mux(oflow, le_end, le_start))
                scale = Mux(use_lo, Mux(oflow, los.LUT_LO_SLOPE_OFLOW_SCALE,
                                        los.LUT_LO_SLOPE_UFLOW_SCALE),
                            Mux(oflow, les.LUT_LE_SLOPE_OFLOW_SCALE, les.LUT_LE_SLOPE_UFLOW_SCALE))
                shift = Mux(use_lo, Mux(oflow, losh.LUT_LO_SLOPE_OFLOW_SHIFT,
                                        losh.LUT_LO_SLOPE_UFLOW_SHIFT),
                            Mux(oflow, lesh.LUT_LE_SLOPE_OFLOW_SHIFT,
                                lesh.LUT_LE_SLOPE_UFLOW_SHIFT))
                b = Mux(~use_lo & uflow, bias, 0)
                new[f"lut_dx{lane}"] = st[f"lut_x{lane}"] - (b + offset)          # 35 bits
                if self.fp16:
                    # fp32 x - (reference + bias); the fp17 weights 1 - f (exactly 1 for
                    # f = 0) and f of the 35-bit fraction
                    ref = Mux(use_lo, Mux(oflow, fref["lo", "o"], fref["lo", "u"]),
                              Mux(oflow, fref["le", "o"], fref["le", "u"]))
                    new[f"lut_fdx{lane}"] = nvfloat.fp32_sub(
                        m, st[f"lut_x{lane}"].as_unsigned()[:32], ref)
                    f = comb(m, Mux(use_lo, st[f"lo_f{lane}"], st[f"le_f{lane}"]),
                             f"lut_ff{lane}")
                    new[f"lut_fa0{lane}"] = Mux(f == 0, 31 << 10, nvfloat.fraction_to_fp17(
                        m, ((1 << F) - f)[:F], F))
                    new[f"lut_fa1{lane}"] = nvfloat.fraction_to_fp17(m, f, F)
                new[f"lut_scale{lane}"] = scale.as_signed()[:16].as_signed()
                new[f"lut_shift{lane}"] = shift.as_signed()[:5].as_signed()
                new[f"lut_f{lane}"] = Mux(use_lo, st[f"lo_f{lane}"], st[f"le_f{lane}"])
                new[f"lut_flow{lane}"] = flow
                new[f"lut_fu{lane}"] = uflow
                new[f"lut_fo{lane}"] = oflow
                new[f"lut_le_hit{lane}"] = le_hit
                new[f"lut_lo_hit{lane}"] = lo_hit
                for k in ("le_i", "le_f", "le_o", "le_u", "lo_i", "lo_f", "lo_o", "lo_u",
                          "lut_x"):
                    new[f"{k}{lane}"] = None

        def products(st, new):
            for lane in range(T):
                rp0, rp1 = ports[lane]
                y0, y1 = rp0.data.as_signed(), rp1.data.as_signed()
                # y0 * (2^35 - f) + y1 * f == y0 * 2^35 + (y1 - y0) * f
                new[f"lut_ip{lane}"] = (Cat(Const(0, F), y0).as_signed()
                                        + (y1 - y0) * st[f"lut_f{lane}"])          # 53 bits
                new[f"lut_sp{lane}"] = st[f"lut_dx{lane}"] * st[f"lut_scale{lane}"]
                new[f"lut_y0{lane}"] = y0
                if self.fp16:
                    # fp16 entries and slope scale in fp17: y0 x (1 - f), y1 x f, and
                    # fp17(x - reference) x scale
                    fy0 = nvfloat.fp16_to_fp17(m, rp0.data)
                    new[f"lut_fy0{lane}"] = fy0
                    new[f"lut_fp0{lane}"] = nvfloat.fp17_mul(m, st[f"lut_fa0{lane}"], fy0)
                    new[f"lut_fp1{lane}"] = nvfloat.fp17_mul(
                        m, st[f"lut_fa1{lane}"], nvfloat.fp16_to_fp17(m, rp1.data))
                    new[f"lut_fpe{lane}"] = nvfloat.fp17_mul(
                        m, nvfloat.fp32_to_fp17(m, st[f"lut_fdx{lane}"]),
                        nvfloat.fp16_to_fp17(m, st[f"lut_scale{lane}"].as_unsigned()))
                    for k in ("lut_fa0", "lut_fa1", "lut_fdx"):
                        new[f"{k}{lane}"] = None
                for k in ("lut_f", "lut_dx", "lut_scale"):
                    new[f"{k}{lane}"] = None

        def rounding(st, new):
            for lane in range(T):
                ip, _ = round_shift_right(m, st[f"lut_ip{lane}"], F, 32, 53, f"lut_ip{lane}")
                sp = st[f"lut_sp{lane}"]
                sh = st[f"lut_shift{lane}"]
                right, _ = round_shift_right(m, sp, sh.as_unsigned()[:4], 32, 50,
                                              f"lut_sr{lane}")
                left = saturate(sp << (-sh).as_unsigned()[:5], 32)
                new[f"lut_interp{lane}"] = ip
                new[f"lut_slope{lane}"] = Mux(sh[-1], left, right).as_signed()[:32].as_signed()
                for k in ("lut_ip", "lut_sp", "lut_shift"):
                    new[f"{k}{lane}"] = None
                if self.fp16:                   # the fp17 sums: interpolation, extrapolation
                    new[f"lut_fi{lane}"] = nvfloat.fp17_add(m, st[f"lut_fp0{lane}"],
                                                            st[f"lut_fp1{lane}"])
                    new[f"lut_fe{lane}"] = nvfloat.fp17_add(m, st[f"lut_fy0{lane}"],
                                                            st[f"lut_fpe{lane}"])
                    for k in ("lut_fp0", "lut_fp1", "lut_fy0", "lut_fpe"):
                        new[f"{k}{lane}"] = None

        def select(st, new):
            flags = {k: [] for k in ("uflow", "oflow", "hybrid", "le_hit", "lo_hit")}
            for lane in range(T):
                extra = saturate(st[f"lut_y0{lane}"] + st[f"lut_slope{lane}"], 32)
                flow = st[f"lut_flow{lane}"]
                value = Mux(flow, extra, st[f"lut_interp{lane}"])
                if self.fp16:                   # fp17 result widened to fp32
                    fv = nvfloat.fp17_to_fp32(m, Mux(flow, st[f"lut_fe{lane}"],
                                                     st[f"lut_fi{lane}"]))
                    value = Mux(fp, fv.as_signed(), value)
                    new[f"lut_fe{lane}"] = new[f"lut_fi{lane}"] = None
                new[f"x{lane}"] = Mux(lut_on, value, st[f"x{lane}"]).as_signed()[:32].as_signed()
                flags["uflow"].append(st[f"lut_fu{lane}"])
                flags["oflow"].append(st[f"lut_fo{lane}"])
                flags["hybrid"].append(~flow)
                flags["le_hit"].append(st[f"lut_le_hit{lane}"])
                flags["lo_hit"].append(st[f"lut_lo_hit{lane}"])
                for k in ("lut_y0", "lut_slope", "lut_flow", "lut_interp", "lut_fu", "lut_fo",
                          "lut_le_hit", "lut_lo_hit"):
                    new[f"{k}{lane}"] = None
            for k, fl in flags.items():
                new[f"lut_{k}"] = Mux(lut_on, _popcount(fl), 0)

        return [diff, index, choose, products, rounding, select]

    # ------------------------------------------------------------------------------------
    def _cvt_steps(self, m):
        """Output converter: subtract, multiply, round-shift into 17 bits (the add, then the
        shift), saturate to the output precision (+ statistics)."""
        r, T, cfg = self.regs, self.lanes, self.cfg
        offset = r.D_CVT_OFFSET.CVT_OFFSET.as_signed()
        scale = r.D_CVT_SCALE.CVT_SCALE.as_signed()
        cvt_shift = r.D_CVT_SHIFT.CVT_SHIFT[:6]
        int8 = comb(m, r.D_DATA_FORMAT.OUT_PRECISION == 0, "out_int8")
        if self.fp_convert:
            out_fp = comb(m, r.D_DATA_FORMAT.OUT_PRECISION == FP16, "out_fp16")
        if cfg.sdp_ew:
            c = r.D_DP_EW_CFG
            eql = comb(m, ~c.EW_BYPASS & ~c.EW_ALU_BYPASS & (c.EW_ALU_ALGO == ALU_EQL), "eql")
        else:
            eql = Const(0, 1)

        if self.fp16:
            fp, _ = self._fp_layer(m)

        def sub(st, new):
            for lane in range(T):
                new[f"cvt_d{lane}"] = st[f"x{lane}"] - offset                      # 33 bits
                if self.fp16:
                    new[f"fo{lane}"] = nvfloat.fp32_to_fp16(m, st[f"x{lane}"].as_unsigned())
                new[f"xl{lane}"] = st[f"x{lane}"][:16]
                new[f"x{lane}"] = None

        def mul(st, new):
            for lane in range(T):
                new[f"cvt_p{lane}"] = st[f"cvt_d{lane}"] * scale                  # 49 bits
                new[f"cvt_d{lane}"] = None
                if self.fp_convert:
                    # fp16 -> int16 (an fp16 layer with OUT_PRECISION = INT16)
                    new[f"fi{lane}"] = nvfloat.fp16_to_int16(m, st[f"fo{lane}"])

        # the rounding shift in two steps (the add, then the shift and range check): in one
        # step it was the deepest path of the SDP's converter in the whole-core ECP5 netlist
        finish = {}

        def add(st, new):
            for lane in range(T):
                early, finish[lane] = round_shift_right_split(
                    m, st[f"cvt_p{lane}"], cvt_shift, 17, 49, f"cvt_rsr{lane}")
                new[f"cvt_sum{lane}"], new[f"cvt_sat{lane}"] = early["sum"], early["sat"]
                new[f"cvt_p{lane}"] = None

        def shift(st, new):
            for lane in range(T):
                t, sat = finish[lane]({"sum": st[f"cvt_sum{lane}"],
                                       "sat": st[f"cvt_sat{lane}"]})
                new[f"cvt_t{lane}"], new[f"cvt_s{lane}"] = t, sat
                new[f"cvt_sum{lane}"] = new[f"cvt_sat{lane}"] = None

        def final(st, new):
            sats, nonzero, nans = [], [], []
            for lane in range(T):
                t = st[f"cvt_t{lane}"]
                xl = st[f"xl{lane}"]
                conv = Mux(int8, saturate(t, 8), saturate(t, 16))
                wrap = Mux(int8, xl[:8].as_signed(), xl.as_signed())
                res = Mux(eql, wrap, conv)
                sat = st[f"cvt_s{lane}"]          # EQL too: NVDLA's converter flags it
                if self.fp_convert:
                    # int16 -> fp16 from the 17-bit result, fp16 -> int16 from the fp16 one;
                    # an fp16 output counts as saturated when it is +-65504, an int16 one
                    # made from fp16 never does
                    fo, fi = st[f"fo{lane}"], st[f"fi{lane}"]
                    # (an int past the fp16 range saturates to +-65504, NVDLA's Verilog)
                    hi = comb(m, nvfloat.int17_to_fp16(m, t), f"cvt_hi{lane}")
                    hs = Mux(hi[10:15] == 0x1F, Cat(Const(0x7BFF, 15), hi[15]), hi)
                    hf = comb(m, Mux(fp, fo, hs), f"cvt_h{lane}")
                    res = Mux(~eql, Mux(out_fp, hf.as_signed(), Mux(fp, fi, conv)), wrap)
                    sat = Mux(fp | out_fp, ~eql & out_fp & (hf[:15] == 0x7BFF), sat)
                    nans.append(out_fp & ~eql & (hf[10:15] == 0x1F) & hf[:10].any())
                    new[f"fo{lane}"] = new[f"fi{lane}"] = None
                elif self.fp16:
                    fo = st[f"fo{lane}"]
                    res = Mux(fp & ~eql, fo.as_signed(), res)
                    sat = Mux(fp, ~eql & (fo[:15] == 0x7BFF), sat)
                    nans.append(fp & ~eql & (fo[10:15] == 0x1F) & fo[:10].any())
                    new[f"fo{lane}"] = None
                out = comb(m, res.as_signed()[:16].as_signed(), f"out{lane}")
                new[f"out{lane}"] = out
                sats.append(sat)
                nonzero.append(out != 0)
                new[f"cvt_t{lane}"] = new[f"cvt_s{lane}"] = new[f"xl{lane}"] = None
            new["sat"] = _popcount(sats)
            new["unequal"] = Cat(*nonzero).any()
            if self.fp16:
                new["nan_out"] = _popcount(nans)

        return [sub, mul, add, shift, final]
