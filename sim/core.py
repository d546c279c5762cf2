"""The golden core: a register-level functional model of a whole NVDLA build.

    core = GoldenCore(cfg)
    core.csb_write(word_addr, data)      # CSB word addresses (byte address >> 2)
    core.csb_read(word_addr) -> int
    core.run()                           # launch every layer that can start, to quiescence
    core.interrupt                       # any(GLB S_INTR_STATUS & ~S_INTR_MASK)
    core.dbb, core.sram                  # SparseMemory of the DBBIF (MCIF) and SRAMIF (CVIF)

Register semantics (the same as the RTL's register files):

- Holes and blocks the build does not have read 0 and ignore writes.
- A register reads as the OR of its fields: rw/ro/const/w1c fields give their value, ``w``
  fields give 0. A write updates rw fields, pulses ``w`` fields (side effects such as GLB
  S_INTR_SET), clears w1c fields where 1 is written and leaves ro/const fields alone.
- Ping-pong blocks: S_POINTER.PRODUCER picks the D group CSB reads and writes;
  S_POINTER.CONSUMER (ro) is the group the datapath runs. A write to any D register of a group
  whose D_OP_ENABLE.OP_EN is 1 is dropped. S_STATUS.STATUS_g is IDLE (0) when group g is not
  enabled, RUNNING (1) when it is enabled and the consumer, PENDING (2) when enabled and not.
- When a layer completes, for every block taking part: the unit's ro D fields (status and
  performance counters) are written into the consumer group, its OP_EN clears, CONSUMER flips,
  and the block's done interrupt for that group is set in GLB S_INTR_STATUS.

Layers run as whole-cube numpy functions (no cycles). Unit models are plugged in through a
registry of :class:`UnitModel` (see ``sim/units.py``); an enabled group with no model, or
whose partners are not enabled yet, stays pending and :meth:`GoldenCore.pending` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from arch.registers import PINGPONG_BLOCKS, register_map, reset_readback

from .memory import SparseMemory
from .regs import GroupView

__all__ = ["GoldenCore", "UnitModel", "Launch", "Wait", "UnitError", "DONE_INTERRUPTS",
           "INTERRUPT_ORDER"]

# Done interrupts a block raises for group g when its layer completes (GLB S_INTR_STATUS
# field prefixes; the field is f"{prefix}_DONE_STATUS{g}"). RDMA blocks, CSC and CMAC raise
# none.
DONE_INTERRUPTS = {"SDP": ("SDP",), "PDP": ("PDP",), "CDP": ("CDP",),
                   "CDMA": ("CDMA_DAT", "CDMA_WT"), "CACC": ("CACC",), "RBK": ("RUBIK",),
                   "BDMA": ("BDMA",)}

# The order in which a layer's done interrupts come in hardware: down the pipeline (CDMA's
# data then weight fetch end first, then CACC, SDP, the PDP fed by SDP). NVDLA's traceplayer
# test conv_8x8_fc_int16 checks this order, one interrupt per wait.
INTERRUPT_ORDER = ("CDMA_DAT", "CDMA_WT", "CACC", "SDP", "PDP", "CDP", "RUBIK", "BDMA")


class UnitError(RuntimeError):
    """A unit model rejected its program (the message names the register field and rule) or
    failed; raised by :meth:`GoldenCore.step` naming the block and group."""


@dataclass
class Launch:
    """A layer ready to run once every block of ``blocks`` has its consumer group enabled.

    ``run()`` computes the layer (reading and writing the core's memories) and returns the
    hardware-written D fields per block: ``{block: {register: {field: value}}}``.

    Blocks without ping-pong groups (BDMA) take part too: they need no enable, ``groups``
    gives the group their completion reports (its done interrupt), and their written fields
    go to their single register group.
    """
    blocks: tuple
    run: Callable[[], dict]
    what: str = ""
    groups: dict = field(default_factory=dict)   #: {block: group} of non-ping-pong blocks


@dataclass
class Wait:
    """The unit's group is enabled but the layer cannot start; ``reason`` says why."""
    reason: str


class UnitModel:
    """A unit's golden model as the core sees it.

    ``blocks`` are the register blocks it owns. ``install(core)`` runs once per core (register
    hooks, RAMs such as the SDP LUT). ``plan(core)`` returns None when the unit's anchor group
    is not enabled, :class:`Wait` when it is but cannot start, or :class:`Launch`.
    """
    name = "?"
    blocks: tuple = ()

    def install(self, core) -> None:
        pass

    def plan(self, core):
        return None


@dataclass
class _BlockState:
    block: object
    pingpong: bool
    s: dict                               #: S (or all, when not ping-pong) register -> word
    d: list = field(default_factory=list)  #: two dicts register -> word (ping-pong only)


class GoldenCore:
    MAX_STEPS = 1000                     #: run() bound (layers launched in one call)
    #: When True, a completed layer's done interrupts are held and reach GLB S_INTR_STATUS
    #: one per :meth:`deliver_interrupt` (in :data:`INTERRUPT_ORDER`), as they would one
    #: after another in hardware; when False (default) they are all set at completion.
    stagger_interrupts = False

    def __init__(self, cfg, units=None):
        self.cfg = cfg
        self.rmap = register_map(cfg)
        self.dbb = SparseMemory()
        self.sram = SparseMemory()
        self.layers = 0                  #: layers completed so far
        self.log = []                    #: (block, group, what) per completed layer
        self.held_interrupts = []        #: (prefix, group) not yet delivered (staggered)
        self._blocks = {}
        for b in self.rmap:
            pp = b.name in PINGPONG_BLOCKS and b.pingpong
            st = _BlockState(b, pp, {})
            # After reset: rw/const fields hold their reset value, w1c 0, ro the hardware's
            # static value (arch.registers.STATIC_STATUS) or 0.
            for r in b.registers:
                if not (pp and r.group == "D"):
                    st.s[r.name] = reset_readback(b, r)
            if pp:
                st.d = [{r.name: reset_readback(b, r) for r in b.d_registers} for _ in range(2)]
            self._blocks[b.name] = st
        self._write_hooks = {}
        self._read_hooks = {}
        if "GLB" in self.rmap:
            self._init_glb()
        if units is None:
            from .units import default_units
            units = default_units(cfg)
        self.units = dict(units)
        for u in self.units.values():
            u.install(self)

    # -- register access ------------------------------------------------------------------
    def add_register_hook(self, block: str, register: str, on_write=None, on_read=None):
        """``on_write(data)`` after a CSB write to the register has updated its stored fields;
        ``on_read() -> int`` replaces its read value."""
        if on_write:
            self._write_hooks.setdefault((block, register), []).append(on_write)
        if on_read:
            self._read_hooks[(block, register)] = on_read

    def has_read_hook(self, block: str, register: str) -> bool:
        """Does a hook replace the register's read value (e.g. LUT data ports)?"""
        return (block, register) in self._read_hooks

    def _words(self, st, reg, group):
        if st.pingpong and reg.group == "D":
            return st.d[group]
        return st.s

    def csb_write(self, word_addr: int, data: int) -> None:
        hit = self.rmap.at_word(word_addr)
        if hit is None:
            return
        block, reg = hit
        data &= 0xFFFFFFFF
        st = self._blocks[block.name]
        if st.pingpong and reg.group == "D":
            g = self.producer(block.name)
            if self._op_en(st, g):
                return                   # the group is enabled: dropped
            words = st.d[g]
        else:
            words = st.s
        rw, w1c = reg.mask("rw"), reg.mask("w1c")
        old = words[reg.name]
        words[reg.name] = ((old & ~rw) | (data & rw)) & ~(data & w1c)
        for hook in self._write_hooks.get((block.name, reg.name), ()):
            hook(data)

    def csb_read(self, word_addr: int) -> int:
        hit = self.rmap.at_word(word_addr)
        if hit is None:
            return 0
        block, reg = hit
        hook = self._read_hooks.get((block.name, reg.name))
        if hook is not None:
            return hook() & 0xFFFFFFFF
        st = self._blocks[block.name]
        if st.pingpong and reg.name == "S_STATUS":
            return self._status_word(st, reg)
        if st.pingpong and reg.group == "D":
            words = st.d[self.producer(block.name)]
        else:
            words = st.s
        return words[reg.name] & reg.read_mask

    # -- field helpers (by name) ----------------------------------------------------------
    def field(self, block: str, register: str, name: str, group: int | None = None) -> int:
        """Stored value of a field; D registers of ping-pong blocks need ``group``
        (default: the consumer group)."""
        st = self._blocks[block]
        reg = st.block[register]
        if group is None and st.pingpong and reg.group == "D":
            group = self.consumer(block)
        f = reg[name]
        return (self._words(st, reg, group)[register] >> f.lsb) & ((1 << f.width) - 1)

    def set_field(self, block: str, register: str, name: str, value: int,
                  group: int | None = None) -> None:
        """Hardware-side write of a field (any access kind; used for ro status fields)."""
        st = self._blocks[block]
        reg = st.block[register]
        if group is None and st.pingpong and reg.group == "D":
            group = self.consumer(block)
        f = reg[name]
        if not 0 <= value < (1 << f.width):
            raise UnitError(f"{block}.{register}.{name}: hardware value {value} does not fit "
                            f"in {f.width} bits")
        words = self._words(st, reg, group)
        words[register] = (words[register] & ~f.mask) | (value << f.lsb)

    def has_block(self, block: str) -> bool:
        return block in self._blocks

    def producer(self, block: str) -> int:
        return self.field(block, "S_POINTER", "PRODUCER")

    def consumer(self, block: str) -> int:
        return self.field(block, "S_POINTER", "CONSUMER")

    def _op_en(self, st, group) -> bool:
        return bool(st.d[group]["D_OP_ENABLE"] & st.block["D_OP_ENABLE"]["OP_EN"].mask)

    def enabled(self, block: str, group: int | None = None) -> bool:
        """Is D_OP_ENABLE.OP_EN set in ``group`` (default: the consumer group)?"""
        st = self._blocks.get(block)
        if st is None or not st.pingpong:
            return False
        return self._op_en(st, self.consumer(block) if group is None else group)

    def _status_word(self, st, reg) -> int:
        cons = self.consumer(st.block.name)
        word = 0
        for g in (0, 1):
            f = reg[f"STATUS_{g}"]
            v = 0 if not self._op_en(st, g) else (1 if cons == g else 2)
            word |= v << f.lsb
        return word

    def view(self, block: str, group: int | None = None) -> GroupView:
        """The register view a unit model gets: S registers plus D group ``group`` (default:
        the consumer group)."""
        st = self._blocks[block]
        words = dict(st.s)
        if st.pingpong:
            words.update(st.d[self.consumer(block) if group is None else group])
        return GroupView(st.block, words)

    # -- GLB interrupts -------------------------------------------------------------------
    def _init_glb(self):
        glb = self.rmap["GLB"]
        status, mask, set_ = glb["S_INTR_STATUS"], glb["S_INTR_MASK"], glb["S_INTR_SET"]
        self._intr_pairs = []            # (status field mask, mask field mask)
        self._set_to_status = []         # (set field mask, status field mask)
        mfields = {f.name: f for f in mask.fields}
        sfields = {f.name: f for f in set_.fields}
        for f in status.fields:          # SDP_DONE_STATUS0 <-> SDP_DONE_MASK0, SDP_DONE_SET0
            m = mfields.get(f.name.replace("_STATUS", "_MASK"))
            s = sfields.get(f.name.replace("_STATUS", "_SET"))
            self._intr_pairs.append((f.mask, m.mask if m else 0))
            if s is not None:
                self._set_to_status.append((s.mask, f.mask))
        self.add_register_hook("GLB", "S_INTR_SET", on_write=self._intr_set)

    def _intr_set(self, data):
        st = self._blocks["GLB"].s
        for smask, fmask in self._set_to_status:
            if data & smask:
                st["S_INTR_STATUS"] |= fmask

    @property
    def intr_status(self) -> int:
        return self._blocks["GLB"].s["S_INTR_STATUS"] if "GLB" in self._blocks else 0

    @property
    def interrupt(self) -> bool:
        if "GLB" not in self._blocks:
            return False
        s = self._blocks["GLB"].s
        status, mask = s["S_INTR_STATUS"], s["S_INTR_MASK"]
        return any(status & sm and not mask & mm for sm, mm in self._intr_pairs)

    def raise_done(self, prefix: str, group: int) -> None:
        """Set ``<prefix>_DONE_STATUS<group>`` in GLB S_INTR_STATUS (hardware done)."""
        if "GLB" in self._blocks:
            self.set_field("GLB", "S_INTR_STATUS", f"{prefix}_DONE_STATUS{group}", 1)

    def deliver_interrupt(self) -> bool:
        """Set the next held done interrupt (:attr:`stagger_interrupts`); False when none."""
        if not self.held_interrupts:
            return False
        self.raise_done(*self.held_interrupts.pop(0))
        return True

    # -- memories -------------------------------------------------------------------------
    def memory(self, ram_type: int, where: str = "RAM_TYPE") -> SparseMemory:
        """The memory a unit's RAM-type field selects: 1 (MC/MCIF) -> dbb, 0 (CV/CVIF) ->
        sram. ``where`` names the field for the error on a build without SRAMIF."""
        if ram_type:
            return self.dbb
        if not self.cfg.sramif:
            raise UnitError(f"{where}=CV selects the SRAMIF, which this build does not have "
                            f"(sramif=False); use MC")
        return self.sram

    def mem(self, name: str) -> SparseMemory:
        """A memory by trace name: "dbb" or "sram"."""
        if name == "dbb":
            return self.dbb
        if name == "sram":
            if not self.cfg.sramif:
                raise UnitError("sec_mem: this build has no SRAMIF (sramif=False)")
            return self.sram
        raise KeyError(name)

    # -- layers ---------------------------------------------------------------------------
    def _plans(self):
        for unit in self.units.values():
            yield unit, unit.plan(self)

    def step(self) -> bool:
        """Advance the hardware: launch and complete one layer if one can start. Returns
        whether a layer ran. A unit model's error raises :class:`UnitError`."""
        for unit, plan in self._plans():
            if not isinstance(plan, Launch):
                continue
            if not all(self.enabled(b) for b in plan.blocks if self._pingpong(b)):
                continue
            groups = self._groups(plan.blocks, plan.groups)
            try:
                written = plan.run() or {}
            except UnitError as e:
                raise UnitError(f"{self._layer_name(unit, groups)}: {e}") from e
            except ValueError as e:
                raise UnitError(f"{self._layer_name(unit, groups)}: {e}") from e
            except Exception as e:       # a model bug: still a failure of this layer
                raise UnitError(f"{self._layer_name(unit, groups)}: "
                                f"{type(e).__name__}: {e}") from e
            self.complete(plan.blocks, written, plan.what or unit.name, plan.groups)
            return True
        return False

    def _pingpong(self, block: str) -> bool:
        """Does ``block`` take part through ping-pong groups? (A block the build does not have
        counts as one: it is never enabled.)"""
        st = self._blocks.get(block)
        return st is None or st.pingpong

    def _groups(self, blocks, fixed=None) -> dict:
        fixed = fixed or {}
        return {b: self.consumer(b) if self._pingpong(b) else fixed.get(b, 0) for b in blocks}

    @staticmethod
    def _layer_name(unit, groups):
        return f"{unit.name} layer (" + ", ".join(f"{b} group {g}" for b, g in groups.items()) \
            + ")"

    def complete(self, blocks, written=None, what="", groups=None) -> None:
        """Hardware completion of a layer on ``blocks`` (their consumer groups): store the
        hardware-written D fields, clear OP_EN, flip CONSUMER, raise done interrupts.
        Blocks without ping-pong groups complete ``groups[block]`` (default 0): their fields
        are stored and their done interrupt raised, nothing else."""
        written = written or {}
        unknown = set(written) - set(blocks)
        if unknown:
            raise UnitError(f"{what}: model wrote fields of blocks not in the layer: "
                            f"{sorted(unknown)}")
        groups = self._groups(blocks, groups)
        for b in blocks:
            g = groups[b]
            for reg, fields in written.get(b, {}).items():
                for f, v in fields.items():
                    self.set_field(b, reg, f, int(v), group=g)
            if not self._pingpong(b):
                continue
            self.set_field(b, "D_OP_ENABLE", "OP_EN", 0, group=g)
            self.set_field(b, "S_POINTER", "CONSUMER", g ^ 1)
        done = sorted(((prefix, groups[b]) for b in blocks for prefix in
                       DONE_INTERRUPTS.get(b, ())), key=lambda pg: INTERRUPT_ORDER.index(pg[0]))
        if self.stagger_interrupts:
            self.held_interrupts.extend(done)
        else:
            for prefix, g in done:
                self.raise_done(prefix, g)
        self.layers += 1
        self.log.append((tuple(blocks), tuple(groups[b] for b in blocks), what))

    def run(self, max_steps: int | None = None) -> int:
        """Run layers until none can start (at most ``max_steps``); returns how many ran."""
        n = 0
        limit = self.MAX_STEPS if max_steps is None else max_steps
        while n < limit and self.step():
            n += 1
        return n

    def pending(self) -> list:
        """Why enabled groups are not running: one sentence per stuck unit or block."""
        out, explained = [], set()
        modelled = {b for u in self.units.values() for b in u.blocks}
        for unit, plan in self._plans():
            if isinstance(plan, Wait):
                out.append(f"{unit.name}: {plan.reason}")
                explained.update(b for b in unit.blocks if self.enabled(b))
            elif isinstance(plan, Launch):
                missing = [b for b in plan.blocks
                           if self._pingpong(b) and not self.enabled(b)]
                if missing:
                    out.append(f"{plan.what or unit.name}: waiting for " + ", ".join(
                        f"{b} group {self.consumer(b)} D_OP_ENABLE" for b in missing))
                explained.update(plan.blocks)
        from .units import MODEL_BLOCKS
        model_of = {b: m for m, bs in MODEL_BLOCKS.items() for b in bs}
        unmodelled = {}
        for name, st in self._blocks.items():
            if not st.pingpong or not self.enabled(name) or name in explained:
                continue
            g = self.consumer(name)
            if name not in modelled:
                unmodelled.setdefault(model_of.get(name, name), []).append(f"{name} group {g}")
            else:
                out.append(f"{name} group {g} is enabled but no layer using it can start")
        for model, groups in unmodelled.items():
            out.append(f"the golden model has no {model} unit model yet "
                       f"({', '.join(groups)} enabled)")
        return out
