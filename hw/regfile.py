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
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegBus", "RegisterFile", "fields_layout"]

# The registers whose behaviour the ping-pong logic owns rather than plain storage.
_POINTER, _STATUS, _OP_ENABLE = "S_POINTER", "S_STATUS", "D_OP_ENABLE"


class RegBus(wiring.Signature):
    """Register access from the CSB slave to one block (seen from the CSB side).

    ``addr`` is the word offset in the block's 4 KiB slot; ``rdata`` answers combinationally
    for the current ``addr`` when ``sel``; ``we`` writes ``wdata`` when ``sel``.
    """

    def __init__(self):
        super().__init__({
            "sel": Out(1), "addr": Out(10), "we": Out(1), "wdata": Out(32),
            "rdata": In(32),
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
            groups = [Signal(self._d_layout, init=self._d_reset(), name=f"group{g}")
                      for g in range(2)]
            ro_groups = [Signal(self._d_ro, name=f"status{g}") if _nonempty(self._d_ro)
                         else None for g in range(2)]
            m.d.comb += [
                self.d.eq(Mux(consumer, groups[1], groups[0])),
                self.consumer.eq(consumer),
            ]
            # Completion: capture hardware fields, clear enable, flip consumer, interrupt.
            op_en = Signal()
            m.d.sync += op_en.eq(Mux(consumer, enabled[1], enabled[0]) & ~self.done)
            m.d.comb += self.op_en.eq(op_en)        # registered: low the cycle after done
            with m.If(self.done):
                m.d.sync += consumer.eq(~consumer)
                for g in range(2):
                    with m.If(consumer == g):
                        m.d.sync += enabled[g].eq(0)
                        if ro_groups[g] is not None:
                            m.d.sync += ro_groups[g].eq(self.d_status)
            m.d.comb += self.intr.eq(Mux(self.done, Mux(consumer, 0b10, 0b01), 0))

        # -- CSB access -----------------------------------------------------------------
        w1c_store = Signal(self._w1c) if _nonempty(self._w1c) else None
        st = SimpleNamespace(s_store=s_store, w1c_store=w1c_store, **({} if not self._pingpong else dict(
            producer=producer, consumer=consumer, enabled=enabled, groups=groups,
            ro_groups=ro_groups)))
        rdata = Signal(32)
        with m.Switch(bus.addr):
            for reg in block.registers:
                with m.Case(reg.offset >> 2):
                    self._access(m, reg, write, rdata, st)
        m.d.comb += bus.rdata.eq(Mux(bus.sel, rdata, 0))
        if w1c_store is not None:
            # Hardware set wins over a software clear in the same cycle.
            m.d.comb += self.w1c_value.eq(w1c_store)
            for reg_name, reg_layout in self._w1c:
                for f_name, _ in reg_layout.shape:
                    with m.If(self.w1c_set[reg_name][f_name]):
                        m.d.sync += w1c_store[reg_name][f_name].eq(1)
        return m

    # ------------------------------------------------------------------------------------
    def _access(self, m, reg, write, rdata, env):
        """Read value and write effect of one register (inside the address Case)."""
        bus = self.bus
        word = []                                    # (lsb, value) of readable fields

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
            groups, ro_groups = env.groups, env.ro_groups
            sel_en = Mux(producer, enabled[1], enabled[0])
            for f in reg.fields:
                if reg.name == _OP_ENABLE and f.name == "OP_EN":
                    place(f, sel_en)
                    with m.If(write & ~sel_en):
                        for g in range(2):
                            with m.If(producer == g):
                                m.d.sync += enabled[g].eq(bus.wdata[f.lsb])
                elif f.access == "rw":
                    vals = [grp[reg.name][f.name] for grp in groups]
                    place(f, Mux(producer, vals[1], vals[0]))
                    with m.If(write & ~sel_en):
                        for g in range(2):
                            with m.If(producer == g):
                                store(vals[g], f)
                elif f.access == "ro":
                    vals = [grp[reg.name][f.name] for grp in ro_groups]
                    place(f, Mux(producer, vals[1], vals[0]))
                elif f.access == "const":
                    place(f, Const(f.reset, f.width))
        else:
            for f in reg.fields:
                if f.access == "rw":
                    target = env.s_store[reg.name][f.name]
                    place(f, target)
                    with m.If(write):
                        store(target, f)
                elif f.access == "ro":
                    place(f, self.status[reg.name][f.name])
                elif f.access == "const":
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
