"""Register files generated from the register table (spec: Register Interface, Ping-pong
Synchronization Mechanism).

One :class:`RegisterFile` serves one block. It is described once by the table and
instantiated as: the single group (S registers), plus, for ping-pong blocks, two copies of
the duplicated group (D registers) steered by ``S_POINTER``:

* CSB side (``bus``): reads and writes go to the S group or to the D group selected by
  ``PRODUCER``; a write to a D group whose ``D_OP_ENABLE.OP_EN`` is set is dropped silently.
  Writing ``OP_EN = 1`` to an idle group enables it; only the hardware clears it.
* Datapath side: ``d`` is the consumer group's software fields as a typed view
  (``rf.d.D_DATA_CUBE_WIDTH.WIDTH``), ``s`` the single group's; ``op_en`` says the consumer
  group holds an enabled layer. The datapath pulses ``done`` when the layer completes: the
  hardware fields of ``d_status`` are captured into that group, its ``OP_EN`` is cleared,
  ``CONSUMER`` flips, and ``intr`` pulses the bit of the finished group. ``op_en`` is low for
  at least one cycle after ``done`` so that back-to-back layers are seen as two.
* ``S_STATUS`` reports IDLE (0), RUNNING (1: enabled and consumed) or PENDING (2: enabled,
  waiting) per group.

Field access kinds come from the table: ``rw`` stored; ``w`` write-only pulses (``pulse``
view, reads 0); ``ro`` driven by hardware (``status`` / ``d_status`` inputs); ``const`` the
reset value; ``w1c`` read, write 1 to clear, set by the ``w1c_set`` input (which wins over a
clear in the same cycle).

Read-back (FPGA cost): a read is answered the cycle after the request (:class:`RegBus`). The
software-written words of both groups (``rw`` fields; in a block without any, the ``const``
ones: the CFGROM) read back from a shadow memory, written on every CSB write the file keeps
with the value as stored (masked to the fields, writes to an enabled group dropped) and
rewritten with the reset values after reset (``bus.busy`` for one cycle per word); only the
hardware-driven fields (S_POINTER, S_STATUS, ``OP_EN``, ``ro``, ``w1c``, ``const`` beside
``rw`` fields) keep a multiplexer over the registers that have them.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["RegBus", "RegisterFile", "fields_layout"]

# Blocks with fewer stored words than this read them back through a multiplexer (a memory
# of a few words costs more than it saves: GLB, CMAC_A/B).
_MIN_SHADOW_WORDS = 4
# The registers whose behaviour the ping-pong logic owns rather than plain storage.
_POINTER, _STATUS, _OP_ENABLE = "S_POINTER", "S_STATUS", "D_OP_ENABLE"


class RegBus(wiring.Signature):
    """Register access from the CSB slave to one block (seen from the CSB side).

    ``addr`` is the word offset in the block's 4 KiB slot; ``we`` writes ``wdata`` when
    ``sel``. A read (``sel`` without ``we``) is answered in the next cycle: ``rdata`` holds
    the word as it was in the cycle of the request, and is 0 in every cycle that does not
    follow a read of this block (so the blocks' answers can be ORed). ``busy``: the block
    cannot take requests yet (after reset).
    """

    def __init__(self):
        super().__init__({
            "sel": Out(1), "addr": Out(10), "we": Out(1), "wdata": Out(32),
            "rdata": In(32), "busy": In(1),
        })


def fields_layout(registers, accesses, skip=()):
    """StructLayout {register: {field: unsigned(width)}} of the fields with those accesses."""
    regs = {}
    for reg in registers:
        if reg.name in skip:
            continue
        fl = {f.name: f.width for f in reg.fields if f.access in accesses}
        if fl:
            regs[reg.name] = data.StructLayout(fl)
    return data.StructLayout(regs)


def _nonempty(layout):
    return len(list(layout)) > 0


class RegisterFile(wiring.Component):
    """The register file of one block, built from its :class:`arch.registers.Block`."""

    def __init__(self, block):
        self._block = block
        self._pingpong = block.pingpong
        s_regs, d_regs = block.s_registers, block.d_registers
        special = (_POINTER, _STATUS) if self._pingpong else ()
        self._s_layout = fields_layout(s_regs, ("rw",), special)
        self._s_ro = fields_layout(s_regs, ("ro",), special)
        self._pulse = fields_layout(block.registers, ("w",))
        self._w1c = fields_layout(block.registers, ("w1c",))
        self._d_layout = fields_layout(d_regs, ("rw",))
        self._d_ro = fields_layout(d_regs, ("ro",))
        members = {"bus": In(RegBus())}
        if _nonempty(self._s_layout):
            members["s"] = Out(self._s_layout)
        if _nonempty(self._s_ro):
            members["status"] = In(self._s_ro)
        if _nonempty(self._pulse):
            members["pulse"] = Out(self._pulse)
        if _nonempty(self._w1c):
            members["w1c_value"] = Out(self._w1c)
            members["w1c_set"] = In(self._w1c)
        if self._pingpong:
            members.update({
                "d": Out(self._d_layout), "op_en": Out(1), "consumer": Out(1),
                "done": In(1), "intr": Out(2),
            })
            if _nonempty(self._d_ro):
                members["d_status"] = In(self._d_ro)
        super().__init__(members)

    @property
    def block(self):
        return self._block

    def elaborate(self, platform):
        m = Module()
        bus, block = self.bus, self._block
        write = bus.sel & bus.we
        self._words = self._shadow_words()

        # -- single group ---------------------------------------------------------------
        s_store = Signal(self._s_layout, init=self._s_reset()) if _nonempty(self._s_layout) \
            else None
        if s_store is not None:
            m.d.comb += self.s.eq(s_store)
        if _nonempty(self._pulse):
            for reg in block.registers:
                if reg.name not in self._pulse.members:
                    continue
                hit = write & (bus.addr == reg.offset >> 2)
                for f in reg.fields:
                    if f.access == "w":
                        m.d.comb += self.pulse[reg.name][f.name].eq(
                            Mux(hit, bus.wdata[f.lsb:f.msb + 1], 0))

        # -- duplicated groups ----------------------------------------------------------
        if self._pingpong:
            producer = Signal()
            consumer = Signal()
            enabled = [Signal(name=f"op_en_{g}") for g in range(2)]
            # the consumer group's software fields, loaded from the shadow (see _load)
            active = Signal(self._d_layout, init=self._d_reset())
            loaded = Signal(init=1)             # active equals the consumer group
            ro_groups = [Signal(self._d_ro, name=f"status{g}") if _nonempty(self._d_ro)
                         else None for g in range(2)]
            m.d.comb += [self.d.eq(active), self.consumer.eq(consumer)]
            # Completion: capture hardware fields, clear enable, flip consumer, interrupt.
            op_en = Signal()
            m.d.sync += op_en.eq(Mux(consumer, enabled[1], enabled[0]) & loaded & ~self.done)
            m.d.comb += self.op_en.eq(op_en)        # registered: low the cycle after done
            with m.If(self.done):
                m.d.sync += [consumer.eq(~consumer), loaded.eq(0)]
                for g in range(2):
                    with m.If(consumer == g):
                        m.d.sync += enabled[g].eq(0)
                        if ro_groups[g] is not None:
                            m.d.sync += ro_groups[g].eq(self.d_status)
            m.d.comb += self.intr.eq(Mux(self.done, Mux(consumer, 0b10, 0b01), 0))

        # -- CSB access -----------------------------------------------------------------
        w1c_store = Signal(self._w1c) if _nonempty(self._w1c) else None
        st = SimpleNamespace(s_store=s_store, w1c_store=w1c_store, **({} if not self._pingpong else dict(
            producer=producer, consumer=consumer, enabled=enabled, active=active,
            loaded=loaded, ro_groups=ro_groups)))
        read = bus.sel & ~bus.we
        live = Signal(32)                       # hardware-driven fields of the addressed word
        with m.Switch(bus.addr):
            for reg in block.registers:
                with m.Case(reg.offset >> 2):
                    self._access(m, reg, write, live, st)
        live_q = Signal(32)
        m.d.sync += live_q.eq(Mux(read, live, 0))
        shadow_q = self._shadow(m, write, read, st)
        m.d.comb += bus.rdata.eq(live_q | shadow_q)
        if w1c_store is not None:
            # Hardware set wins over a software clear in the same cycle.
            m.d.comb += self.w1c_value.eq(w1c_store)
            for reg_name, reg_layout in self._w1c:
                for f_name, _ in reg_layout.shape:
                    with m.If(self.w1c_set[reg_name][f_name]):
                        m.d.sync += w1c_store[reg_name][f_name].eq(1)
        return m

    # ------------------------------------------------------------------------------------
    def _shadow_words(self):
        """{word: (mask, reset, is_d)} of the registers the shadow answers: their software
        fields (``rw``) -- or, in a block without any, their ``const`` fields (a ROM)."""
        words = {}
        stored = self._stored_access()
        for reg in self._block.registers:
            if self._pingpong and reg.name in (_POINTER, _STATUS):
                continue
            mask = reset = 0
            for f in reg.fields:
                if f.access != stored or (reg.name == _OP_ENABLE and self._pingpong):
                    continue
                mask |= ((1 << f.width) - 1) << f.lsb
                reset |= f.reset << f.lsb
            if mask:
                words[reg.offset >> 2] = (mask, reset, self._pingpong and reg.group == "D")
        if len(words) < _MIN_SHADOW_WORDS and not self._pingpong:
            return {}                    # a few registers: a multiplexer is cheaper
        return words

    def _stored_access(self):
        kinds = {f.access for reg in self._block.registers for f in reg.fields}
        return "rw" if "rw" in kinds else "const"

    def _shadow(self, m, write, read, env):
        """The shadow copy of the software-visible stored words: a memory of both groups'
        words (group bit above the word offset, S registers in group 0), written with the
        value as stored on every CSB write the register file keeps, read one cycle after the
        request. After reset it is rewritten with the reset values, one word per cycle
        (``bus.busy`` meanwhile). Returns the read value (0 but after a read of a shadowed
        word)."""
        bus = self.bus
        words = self._words
        if not words:
            m.d.comb += bus.busy.eq(0)
            return Const(0, 32)
        k = max(words).bit_length()
        gbits = 1 if self._pingpong else 0
        depth = 1 << (k + gbits)
        init = [0] * depth
        for w, (mask, reset, is_d) in words.items():
            init[w] = reset
            if is_d:
                init[w | (1 << k)] = reset
        rom = self._stored_access() == "const"
        m.submodules.shadow = mem = Memory(shape=32, depth=depth, init=init,
                                           attrs={"no_rw_check": True})
        rd = mem.read_port()
        in_range = bus.addr[k:] == 0
        hit_q = Signal()
        m.d.sync += hit_q.eq(read & in_range)
        if rom:
            m.d.comb += [rd.addr.eq(bus.addr[:k]), bus.busy.eq(0)]
            return Mux(hit_q, rd.data, 0)

        # after reset: rewrite every word with its reset value
        sweeping = Signal(init=1)
        count = Signal(k + gbits)
        with m.If(sweeping):
            m.d.sync += count.eq(count + 1)
            with m.If(count == depth - 1):
                m.d.sync += sweeping.eq(0)
        m.d.comb += bus.busy.eq(sweeping)
        word = Signal(k)
        m.d.comb += word.eq(Mux(sweeping, count[:k], bus.addr[:k]))
        mask, reset, is_d = Signal(32), Signal(32), Signal()
        with m.Switch(word):
            for w, (wmask, wreset, w_is_d) in words.items():
                with m.Case(w):
                    m.d.comb += [mask.eq(wmask), reset.eq(wreset), is_d.eq(w_is_d)]
        wr = mem.write_port()
        if self._pingpong:
            self._load(m, mem, k, env, write, in_range)
            group = Mux(sweeping, count[k], env.producer & is_d)
            sel_en = Mux(env.producer, env.enabled[1], env.enabled[0])
            kept = ~(is_d & sel_en)
        else:
            group, kept = None, 1
        index = Cat(word, group) if self._pingpong else word
        m.d.comb += [
            rd.addr.eq(index), wr.addr.eq(index),
            wr.en.eq(sweeping | (write & in_range & kept)),
            wr.data.eq(Mux(sweeping, reset, bus.wdata & mask)),
        ]
        return Mux(hit_q, rd.data, 0)

    def _load(self, m, mem, k, env, write, in_range):
        """Keep ``active`` (the ``d`` view) equal to the consumer group. While the consumer
        group is also the producer's, every CSB write it keeps lands in ``active`` too; after
        ``done`` the new consumer group is copied from the shadow once it is enabled, one word
        per cycle (it cannot change meanwhile: writes to an enabled group are dropped).
        ``loaded``: ``active`` equals the consumer group, which ``op_en`` waits for."""
        bus = self.bus
        d_regs = [reg for reg in self._block.d_registers if (reg.offset >> 2) in self._words]
        first, last = min(r.offset >> 2 for r in d_regs), max(r.offset >> 2 for r in d_regs)
        port = mem.read_port()
        loading, got = Signal(), Signal()
        word, got_word = Signal(k), Signal(k)
        producer, consumer, loaded = env.producer, env.consumer, env.loaded
        cons_en = Mux(consumer, env.enabled[1], env.enabled[0])
        m.d.comb += port.addr.eq(Cat(word, consumer))
        m.d.sync += [got.eq(loading), got_word.eq(word)]
        with m.If(loading):
            m.d.sync += word.eq(word + 1)
            with m.If(word == last):
                m.d.sync += loading.eq(0)
        with m.Elif(cons_en & ~loaded & ~got):
            m.d.sync += [loading.eq(1), word.eq(first)]
        with m.If(got & (got_word == last)):
            m.d.sync += loaded.eq(1)
        # one source for every field of ``active``: the shadow's word or the CSB's
        mirror = write & in_range & (producer == consumer) & ~cons_en
        src, target = Signal(32), Signal(k)
        m.d.comb += [src.eq(Mux(got, port.data, bus.wdata)),
                     target.eq(Mux(got, got_word, bus.addr[:k]))]
        with m.If(got | mirror):
            with m.Switch(target):
                for reg in d_regs:
                    with m.Case(reg.offset >> 2):
                        for f in reg.fields:
                            if f.name in self._d_layout.members[reg.name].members:
                                m.d.sync += env.active[reg.name][f.name].eq(
                                    src[f.lsb:f.msb + 1])

    def _access(self, m, reg, write, rdata, env):
        """Write effect of one register and the read value of its hardware-driven fields
        (inside the address Case); the stored fields read back from the shadow."""
        bus = self.bus
        in_shadow = (reg.offset >> 2) in self._words
        const_live = not (in_shadow and self._stored_access() == "const")
        word = []                                    # (lsb, value) of live readable fields

        def place(f, value):
            word.append((f, value))

        def store(target, f):
            m.d.sync += target.eq(bus.wdata[f.lsb:f.msb + 1])

        if self._pingpong and reg.name == _POINTER:
            for f in reg.fields:
                if f.name == "PRODUCER":
                    place(f, env.producer)
                    with m.If(write):
                        store(env.producer, f)
                elif f.name == "CONSUMER":
                    place(f, env.consumer)
        elif self._pingpong and reg.name == _STATUS:
            consumer, enabled = env.consumer, env.enabled
            for g, f in enumerate(reg.fields):
                # IDLE 0, RUNNING 1, PENDING 2
                place(f, Mux(enabled[g], Mux(consumer == g, 1, 2), 0))
        elif reg.group == "D":
            producer, enabled = env.producer, env.enabled
            ro_groups = env.ro_groups
            sel_en = Mux(producer, enabled[1], enabled[0])
            for f in reg.fields:
                if reg.name == _OP_ENABLE and f.name == "OP_EN":
                    place(f, sel_en)
                    with m.If(write & ~sel_en):
                        for g in range(2):
                            with m.If(producer == g):
                                m.d.sync += enabled[g].eq(bus.wdata[f.lsb])
                elif f.access == "rw":
                    pass                             # stored in the shadow only
                elif f.access == "ro":
                    vals = [grp[reg.name][f.name] for grp in ro_groups]
                    place(f, Mux(producer, vals[1], vals[0]))
                elif f.access == "const" and const_live:
                    place(f, Const(f.reset, f.width))
        else:
            for f in reg.fields:
                if f.access == "rw":
                    target = env.s_store[reg.name][f.name]
                    if not in_shadow:
                        place(f, target)
                    with m.If(write):
                        store(target, f)
                elif f.access == "ro":
                    place(f, self.status[reg.name][f.name])
                elif f.access == "const" and const_live:
                    place(f, Const(f.reset, f.width))
                elif f.access == "w1c":
                    target = env.w1c_store[reg.name][f.name]
                    place(f, target)
                    with m.If(write & bus.wdata[f.lsb]):
                        m.d.sync += target.eq(0)
        parts, pos = [], 0
        for f, v in sorted(word, key=lambda fv: fv[0].lsb):
            if f.lsb > pos:
                parts.append(Const(0, f.lsb - pos))
            parts.append(Value.cast(v)[:f.width])
            pos = f.msb + 1
        m.d.comb += rdata.eq(Cat(*parts))

    def _s_reset(self):
        return {reg.name: {f.name: f.reset for f in reg.fields if f.access == "rw"}
                for reg in self._block.s_registers if reg.name in self._s_layout.members}

    def _d_reset(self):
        return {reg.name: {f.name: f.reset for f in reg.fields if f.access == "rw"}
                for reg in self._block.d_registers if reg.name in self._d_layout.members}
