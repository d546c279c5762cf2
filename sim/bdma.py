"""BDMA (bridge DMA) golden model (spec: Bridge DMA; register table block BDMA).

An operation copies ``SURF_REPEAT+1`` surfaces of ``LINE_REPEAT+1`` lines of ``LINE.SIZE+1``
32-byte units from a source to a destination memory (``*_RAM_TYPE``: 1 = MC / DBBIF,
0 = CV / SRAMIF); line ``h`` of surface ``s`` starts at ``ADDR + s*SURF.STRIDE +
h*LINE.STRIDE`` on each side. Addresses and strides are kept in 32-byte units by the
registers (``ADDR_LOW``/``STRIDE`` bits 31:5; ``ADDR_HIGH`` supplies address bits 63:32).

Programming model (as the NVDLA v1 hardware):

- A write of ``CFG_OP.EN = 1`` queues a copy of the current CFG registers in a command FIFO
  of :data:`FIFO_DEPTH` entries (``STATUS.FREE_SLOT`` = free entries). Queued operations do
  nothing until a launch.
- A write of ``CFG_LAUNCH0.GRP0_LAUNCH = 1`` (``CFG_LAUNCH1.GRP1_LAUNCH``) makes every
  operation queued since the previous launch a group 0 (1) batch and sets
  ``STATUS.GRP0_BUSY`` (``GRP1_BUSY``). Batches run in launch order, operations in queue
  order. When the last write of a batch is acknowledged the group's busy bit clears and GLB
  ``BDMA_DONE_STATUS0`` (``1``) is raised.
- ``STATUS.IDLE`` is 1 when nothing is queued or running.
- Stall counters: with ``CFG_STATUS.STALL_COUNT_EN`` the hardware counts the cycles its read
  (per group) and write requests wait for the memory interface; a group's
  ``STATUS_GRPg_{READ,WRITE}_STALL`` is cleared at its launch and takes the count at its
  completion. The golden model has no cycles: its memories never stall, so the counts are 0.

Rules (an invalid program raises :class:`sim.core.UnitError` naming the field and rule):
addresses and strides are multiples of 32 bytes (a CSB write with bits 4:0 set would be
silently truncated); ``LINE_REPEAT.NUMBER`` and ``SURF_REPEAT.NUMBER`` are at most 8191 (the
hardware's write side carries 13-bit repeat counts); CV needs a build with an SRAMIF; every
byte lies inside the build's address space; within one operation on one memory the source
and destination do not overlap (the result would depend on timing); at most 20 operations
are queued; a launch needs at least one queued operation; a group is not launched again while
it is busy. Destination lines may overlap each other: later lines win, as in the hardware's
in-order writes. Between operations the model follows program order; the hardware does not
promise that a later operation reads what an earlier one wrote unless software waits for the
earlier group's interrupt.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .core import Launch, UnitError, UnitModel, Wait

__all__ = ["FIFO_DEPTH", "UNIT", "MAX_REPEAT", "BdmaOp", "execute", "BdmaUnit",
           "program_writes"]

FIFO_DEPTH = 20          #: command FIFO entries (STATUS.FREE_SLOT after reset)
UNIT = 32                #: bytes per LINE.SIZE unit, address and stride unit
MAX_REPEAT = 8192        #: largest LINE_REPEAT+1 / SURF_REPEAT+1
RAM_CV, RAM_MC = 0, 1
_RAM_NAME = {RAM_CV: "CV (SRAMIF)", RAM_MC: "MC (DBBIF)"}

# Registers whose low 5 bits the hardware does not store (32-byte units).
_UNIT_REGS = ("CFG_SRC_ADDR_LOW", "CFG_DST_ADDR_LOW", "CFG_SRC_LINE", "CFG_DST_LINE",
              "CFG_SRC_SURF", "CFG_DST_SURF")


@dataclass(frozen=True)
class BdmaOp:
    """One BDMA operation. Addresses and strides in bytes; ``line_size``, ``line_repeat`` and
    ``surf_repeat`` are register values (count - 1)."""
    src_addr: int
    dst_addr: int
    line_size: int
    line_repeat: int = 0
    surf_repeat: int = 0
    src_line_stride: int = 0
    dst_line_stride: int = 0
    src_surf_stride: int = 0
    dst_surf_stride: int = 0
    src_ram: int = RAM_MC
    dst_ram: int = RAM_CV

    @property
    def line_bytes(self) -> int:
        return (self.line_size + 1) * UNIT

    @property
    def lines(self) -> int:
        return self.line_repeat + 1

    @property
    def surfaces(self) -> int:
        return self.surf_repeat + 1

    @property
    def nbytes(self) -> int:
        return self.line_bytes * self.lines * self.surfaces

    @classmethod
    def from_view(cls, v) -> "BdmaOp":
        """The operation the BDMA registers (a :class:`sim.regs.GroupView`) describe."""
        return cls(
            src_addr=(v.CFG_SRC_ADDR_HIGH.V8 << 32) | (v.CFG_SRC_ADDR_LOW.V32 << 5),
            dst_addr=(v.CFG_DST_ADDR_HIGH.V8 << 32) | (v.CFG_DST_ADDR_LOW.V32 << 5),
            line_size=v.CFG_LINE.SIZE, line_repeat=v.CFG_LINE_REPEAT.NUMBER,
            surf_repeat=v.CFG_SURF_REPEAT.NUMBER,
            src_line_stride=v.CFG_SRC_LINE.STRIDE << 5, dst_line_stride=v.CFG_DST_LINE.STRIDE << 5,
            src_surf_stride=v.CFG_SRC_SURF.STRIDE << 5, dst_surf_stride=v.CFG_DST_SURF.STRIDE << 5,
            src_ram=v.CFG_CMD.SRC_RAM_TYPE, dst_ram=v.CFG_CMD.DST_RAM_TYPE)

    def registers(self) -> dict:
        """``{register: 32-bit word}`` programming this operation (CFG_OP not included)."""
        m32 = 0xFFFFFFFF
        return {
            "CFG_SRC_ADDR_LOW": self.src_addr & m32, "CFG_SRC_ADDR_HIGH": self.src_addr >> 32,
            "CFG_DST_ADDR_LOW": self.dst_addr & m32, "CFG_DST_ADDR_HIGH": self.dst_addr >> 32,
            "CFG_LINE": self.line_size, "CFG_CMD": self.src_ram | (self.dst_ram << 1),
            "CFG_LINE_REPEAT": self.line_repeat, "CFG_SRC_LINE": self.src_line_stride,
            "CFG_DST_LINE": self.dst_line_stride, "CFG_SURF_REPEAT": self.surf_repeat,
            "CFG_SRC_SURF": self.src_surf_stride, "CFG_DST_SURF": self.dst_surf_stride,
        }

    # -- geometry -------------------------------------------------------------------------
    def _side(self, side):
        if side == "src":
            return self.src_addr, self.src_line_stride, self.src_surf_stride, self.src_ram
        return self.dst_addr, self.dst_line_stride, self.dst_surf_stride, self.dst_ram

    def line_starts(self, side: str) -> np.ndarray:
        """Start byte address of every line, in transfer order (int64, surface-major)."""
        base, ls, ss, _ = self._side(side)
        s = np.arange(self.surfaces, dtype=np.int64)[:, None] * ss
        h = np.arange(self.lines, dtype=np.int64)[None, :] * ls
        return (base + s + h).reshape(-1)

    def end(self, side: str) -> int:
        """One past the highest byte the side touches (python int, no overflow)."""
        base, ls, ss, _ = self._side(side)
        return base + self.surf_repeat * ss + self.line_repeat * ls + self.line_bytes

    # -- rules ----------------------------------------------------------------------------
    def validate(self, cfg) -> None:
        """Raise :class:`UnitError` naming the field and rule if the program is invalid."""
        for name, v in (("CFG_SRC_ADDR_LOW.V32", self.src_addr),
                        ("CFG_DST_ADDR_LOW.V32", self.dst_addr),
                        ("CFG_SRC_LINE.STRIDE", self.src_line_stride),
                        ("CFG_DST_LINE.STRIDE", self.dst_line_stride),
                        ("CFG_SRC_SURF.STRIDE", self.src_surf_stride),
                        ("CFG_DST_SURF.STRIDE", self.dst_surf_stride)):
            if v < 0 or v % UNIT:
                raise UnitError(f"{name}: {v:#x} is not a multiple of {UNIT} bytes (addresses "
                                f"and strides are in 32-byte units; bits 4:0 are not stored)")
        for name, v in (("CFG_SRC_LINE.STRIDE", self.src_line_stride),
                        ("CFG_DST_LINE.STRIDE", self.dst_line_stride),
                        ("CFG_SRC_SURF.STRIDE", self.src_surf_stride),
                        ("CFG_DST_SURF.STRIDE", self.dst_surf_stride)):
            if v >> 32:
                raise UnitError(f"{name}: {v:#x} does not fit the 32-bit stride register")
        if not 0 <= self.line_size < MAX_REPEAT:
            raise UnitError(f"CFG_LINE.SIZE={self.line_size}: must be 0..8191 (32-byte units "
                            f"minus one)")
        for name, v in (("CFG_LINE_REPEAT.NUMBER", self.line_repeat),
                        ("CFG_SURF_REPEAT.NUMBER", self.surf_repeat)):
            if not 0 <= v < MAX_REPEAT:
                raise UnitError(f"{name}={v}: must be 0..{MAX_REPEAT - 1} (the BDMA write side "
                                f"carries 13-bit repeat counts)")
        for name, ram in (("CFG_CMD.SRC_RAM_TYPE", self.src_ram),
                          ("CFG_CMD.DST_RAM_TYPE", self.dst_ram)):
            if ram not in (RAM_CV, RAM_MC):
                raise UnitError(f"{name}={ram}: must be 0 (CVSRAM) or 1 (MC)")
            if ram == RAM_CV and not cfg.sramif:
                raise UnitError(f"{name}=CVSRAM selects the SRAMIF, which this build does not "
                                f"have (sramif=False); use MC")
        limit = 1 << cfg.address_width
        for side, field in (("src", "CFG_SRC"), ("dst", "CFG_DST")):
            base = self._side(side)[0]
            if base >= limit:
                raise UnitError(f"{field}_ADDR_HIGH.V8: address {base:#x} is beyond the "
                                f"{cfg.address_width}-bit address space")
            if self.end(side) > limit:
                raise UnitError(f"{field}_ADDR_LOW/_LINE.STRIDE/_SURF.STRIDE: the {side} lines "
                                f"end at {self.end(side):#x}, beyond the {cfg.address_width}-bit "
                                f"address space (addresses do not wrap)")
            if self.end(side) > 1 << 62:
                raise UnitError(f"{field}_ADDR_HIGH.V8: the golden model's memories end at "
                                f"2^62 bytes")
        if self.src_ram == self.dst_ram and _overlap(self.line_starts("src"),
                                                     self.line_starts("dst"), self.line_bytes):
            raise UnitError(f"CFG_SRC_ADDR/CFG_DST_ADDR: source and destination lines overlap "
                            f"in {_RAM_NAME[self.src_ram]} memory; the result would depend on "
                            f"the order of reads and writes")


def _overlap(a_starts, b_starts, length) -> bool:
    """Does any interval [a, a+length) intersect any [b, b+length)?"""
    b = np.sort(b_starts)
    # For each a: the last b starting before a+length; overlap if it ends after a.
    i = np.searchsorted(b, a_starts + length, side="left") - 1
    ok = i >= 0
    return bool(np.any(b[i[ok]] + length > a_starts[ok]))


def _contiguous(starts, length) -> bool:
    return starts.size == 1 or bool(np.all(np.diff(starts) == length))


def execute(cfg, op: BdmaOp, dbb, sram=None) -> None:
    """Validate and perform one operation on the memories (``SparseMemory``)."""
    op.validate(cfg)
    mems = {RAM_MC: dbb, RAM_CV: sram}
    src_mem, dst_mem = mems[op.src_ram], mems[op.dst_ram]
    for name, mem in (("CFG_CMD.SRC_RAM_TYPE", src_mem), ("CFG_CMD.DST_RAM_TYPE", dst_mem)):
        if mem is None:
            raise UnitError(f"{name}=CVSRAM: no SRAMIF memory was given")
    lb = op.line_bytes
    src, dst = op.line_starts("src"), op.line_starts("dst")
    if _contiguous(src, lb):
        data = src_mem.read(int(src[0]), src.size * lb)
    else:
        data = src_mem.gather(src[:, None] + np.arange(lb, dtype=np.int64)).reshape(-1)
    if _contiguous(dst, lb):
        dst_mem.write(int(dst[0]), data)
        return
    addrs = (dst[:, None] + np.arange(lb, dtype=np.int64)).reshape(-1)
    if np.any(np.diff(np.sort(dst)) < lb):
        # Overlapping destination lines: keep the last write of every byte.
        uniq, first_in_reversed = np.unique(addrs[::-1], return_index=True)
        addrs, data = uniq, data[::-1][first_in_reversed]
    dst_mem.scatter(addrs, data)


def program_writes(rmap, op: BdmaOp, enable: bool = True) -> list:
    """CSB ``(word address, data)`` writes that program ``op`` and queue it (``CFG_OP``)."""
    blk = rmap["BDMA"]
    out = [((blk.base + blk[r].offset) >> 2, w) for r, w in op.registers().items()]
    if enable:
        out.append(((blk.base + blk["CFG_OP"].offset) >> 2, 1))
    return out


# --------------------------------------------------------------------------------------------
# The unit model in the golden core
# --------------------------------------------------------------------------------------------
class _State:
    def __init__(self):
        self.fifo = deque()              # queued BdmaOp
        self.gathered = 0                # operations queued since the last launch
        self.launches = deque()          # (group, operations) waiting to run
        self.raw = {}                    # last CSB data of the 32-byte-unit registers


class BdmaUnit(UnitModel):
    """BDMA in :class:`sim.core.GoldenCore`: reacts to CFG_OP / CFG_LAUNCH0/1 writes and runs
    each launched batch as one step (a :class:`Launch` of block BDMA with its group)."""

    name = "BDMA"
    blocks = ("BDMA",)

    def install(self, core):
        if not core.has_block("BDMA"):
            return
        st = core.bdma = _State()
        self._status(core)               # FREE_SLOT reads 20 after reset
        for reg in _UNIT_REGS:
            core.add_register_hook("BDMA", reg,
                                   on_write=lambda d, r=reg: st.raw.__setitem__(r, d))
        core.add_register_hook("BDMA", "CFG_OP", on_write=lambda d: self._op(core, d))
        for g in (0, 1):
            core.add_register_hook("BDMA", f"CFG_LAUNCH{g}",
                                   on_write=lambda d, g=g: self._launch(core, g, d))

    # -- CSB side -------------------------------------------------------------------------
    def _op(self, core, data):
        if not data & 1:
            return
        st = core.bdma
        for reg, raw in st.raw.items():
            if raw & (UNIT - 1):
                fld = "V32" if reg.endswith("ADDR_LOW") else "STRIDE"
                raise UnitError(f"BDMA CFG_OP.EN: {reg}.{fld} was written {raw:#010x}; bits "
                                f"4:0 must be 0 (32-byte units, the hardware drops them)")
        op = BdmaOp.from_view(core.view("BDMA"))
        try:
            op.validate(core.cfg)
        except UnitError as e:
            raise UnitError(f"BDMA CFG_OP.EN: {e}") from None
        if len(st.fifo) >= FIFO_DEPTH:
            raise UnitError(f"BDMA CFG_OP.EN: the command FIFO is full (STATUS.FREE_SLOT=0, "
                            f"{FIFO_DEPTH} operations queued); the operation would be dropped")
        st.fifo.append(op)
        st.gathered += 1
        self._status(core)

    def _launch(self, core, g, data):
        if not data & 1:
            return
        st = core.bdma
        fld = f"CFG_LAUNCH{g}.GRP{g}_LAUNCH"
        if st.gathered == 0:
            raise UnitError(f"BDMA {fld}: no operation was queued (CFG_OP.EN) since the last "
                            f"launch; the group would never complete")
        if core.field("BDMA", "STATUS", f"GRP{g}_BUSY"):
            raise UnitError(f"BDMA {fld}: group {g} is still busy (STATUS.GRP{g}_BUSY=1); wait "
                            f"for its BDMA_DONE interrupt")
        st.launches.append((g, st.gathered))
        st.gathered = 0
        core.set_field("BDMA", "STATUS", f"GRP{g}_BUSY", 1)
        for kind in ("READ", "WRITE"):
            core.set_field("BDMA", f"STATUS_GRP{g}_{kind}_STALL", "COUNT", 0)
        self._status(core)

    @staticmethod
    def _status(core):
        st = core.bdma
        core.set_field("BDMA", "STATUS", "FREE_SLOT", FIFO_DEPTH - len(st.fifo))
        core.set_field("BDMA", "STATUS", "IDLE", int(not st.fifo and not st.launches))

    # -- datapath -------------------------------------------------------------------------
    def plan(self, core):
        st = getattr(core, "bdma", None)
        if st is None:
            return None
        if not st.launches:
            if st.gathered:
                return Wait(f"{st.gathered} operation(s) queued, waiting for CFG_LAUNCH0/1")
            return None
        g, n = st.launches[0]

        def run():
            st.launches.popleft()
            for _ in range(n):
                execute(core.cfg, st.fifo.popleft(), core.dbb,
                        core.sram if core.cfg.sramif else None)
            idle = int(not st.fifo and not st.launches)
            status = {"FREE_SLOT": FIFO_DEPTH - len(st.fifo), "IDLE": idle,
                      f"GRP{g}_BUSY": 0}
            return {"BDMA": {"STATUS": status,
                             f"STATUS_GRP{g}_READ_STALL": {"COUNT": 0},
                             f"STATUS_GRP{g}_WRITE_STALL": {"COUNT": 0}}}

        return Launch(("BDMA",), run, f"BDMA group {g} ({n} operation{'s' * (n != 1)})",
                      groups={"BDMA": g})
