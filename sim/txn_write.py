"""Write one of our traces as an NVDLA traceplayer directory (``input.txn``, see sim/txn.py).

    write_txn(parse_trace("my_trace", cfg), cfg, "out/my_trace")

The ``.cfg`` commands become traceplayer commands:

- ``mem_init`` / ``mem_load``: ``load_mem`` of the 32-byte lines the command touches, holding
  what memory holds after it (so zero fills and sparse images land exactly);
- ``reg_write``: ``write_reg``, and with ``readback`` a ``read_reg`` of the written value
  under the register's read-write fields, as NVDLA's tests do (not for registers whose read
  value a hook supplies, such as LUT data ports); ``poll_reg_equal``: ``read_reg`` under a
  full mask;
- ``intr_notify``: ``wait``, ``read_reg`` of GLB ``S_INTR_STATUS`` for the source's bit,
  ``write_reg`` of that bit to clear it;
- ``check_crc``: ``dump_mem`` of the region widened to whole 32-byte lines, whose expected
  file is the golden model's memory at that point (the region's CRC must be the check's,
  else :class:`~sim.trace.TraceError`);
- ``check_nothing``, ``sync_notify``, ``sync_wait``: comments;
- ``reg_read``: ``read_reg`` under mask 0 (any value); ``reg_read_check``: ``read_reg`` under a
  full mask (the traceplayer reads again on a mismatch; a settled register reads the same);
- a single-shot ``intr_notify(id)``: ``wait``, then ``read_reg`` / ``write_reg`` of the
  sources pending at that point on the golden model (what the single shot clears);
- ``check_file``: ``dump_mem`` as ``check_crc``'s (the golden model's memory must equal the
  image there, else :class:`~sim.trace.TraceError`).

Register addresses are written in the nv_full layout, whatever the build's layout (as the
format has them). Memory addresses must be traceplayer ones (DBBIF 0x8xxxxxxx, SRAMIF 0x5xxxxxxx). Used by the
tests to make traceplayer directories from random programs; also a way to hand our traces to
NVDLA's own traceplayer harness.
"""

from __future__ import annotations

import os
import zlib

import numpy as np

from .memory import SparseMemory
from .trace import (CheckCrc, CheckFile, CheckNothing, IntrNotify, MemInit, MemLoad,
                    OrderingPoint, PollRegEqual, RegRead, RegReadCheck, RegWrite, Trace,
                    TraceError)
from .txn import DAT_LINE_BYTES, TXN_FILE, full_layout_word, txn_memory

__all__ = ["write_txn", "txn_dat_text"]


def txn_dat_text(data, header: str = "") -> str:
    """A traceplayer ``.dat`` file: optional header lines, then 32 bytes a line."""
    raw = bytes(data)
    if len(raw) % DAT_LINE_BYTES:
        raise ValueError(f"{len(raw)} bytes: not whole {DAT_LINE_BYTES}-byte lines")
    lines = [header] if header else []
    lines += [" " + " ".join(f"0x{b:02x}" for b in raw[i:i + DAT_LINE_BYTES])
              for i in range(0, len(raw), DAT_LINE_BYTES)]
    return "\n".join(lines) + "\n"


def _span(addr, size):
    lo = addr - addr % DAT_LINE_BYTES
    hi = -(-(addr + max(size, 1)) // DAT_LINE_BYTES) * DAT_LINE_BYTES
    return lo, hi - lo


def write_txn(trace: Trace, cfg, directory: str, readback: bool = True) -> str:
    """Write ``trace`` (a parsed ``.cfg`` trace) as a traceplayer directory; returns it."""
    from .core import GoldenCore
    from .trace_run import run_golden

    # the golden model's memory at every check_crc: run the trace step by step
    core = GoldenCore(cfg)
    glb = full_layout_word("GLB", "S_INTR_STATUS")

    def full(c):
        hit = core.rmap.at_word(c.addr)
        if hit is None:
            raise TraceError(f"{c.where}: {c.addr:#x} is no register of this build")
        return full_layout_word(hit[0].name, hit[1].name)
    os.makedirs(directory, exist_ok=True)
    pre = {"dbb": SparseMemory(), "sram": SparseMemory()}
    lines, nfile = [f"# {trace.name}: written from {os.path.basename(trace.path)}"], 0

    def dat(data, what):
        nonlocal nfile
        nfile += 1
        name = f"m{nfile}_{what}.dat"
        with open(os.path.join(directory, name), "w") as f:
            f.write(txn_dat_text(data, f"# {what}"))
        return name

    def where(c, addr, size):
        if txn_memory(addr) != c.mem or txn_memory(addr + max(size, 1) - 1) != c.mem:
            raise TraceError(f"{c.where}: {c.mem} {addr:#x}+{size:#x} is not a traceplayer "
                             "address (DBBIF 0x8xxxxxxx, SRAMIF 0x5xxxxxxx)")

    glb_mask = core.rmap.address("GLB.S_INTR_MASK") >> 2
    for c in trace.commands:
        if isinstance(c, IntrNotify) and c.single:   # the sources the single shot clears
            while not core.interrupt and core.step():
                pass
            pending = core.intr_status & c.mask & ~core.csb_read(glb_mask)
        run_golden(Trace(trace.name, trace.path, [c]), cfg, core=core)
        if isinstance(c, (MemInit, MemLoad)):
            mem = pre[c.mem]
            if isinstance(c, MemInit):
                c.apply(mem)
                lo, n = _span(c.addr, c.size)
            else:
                c.image.write_to(mem, c.addr)
                offs = c.image.offsets
                first = int(offs.min()) if offs.size else 0
                lo, n = _span(c.addr + first, (int(offs.max()) + 1 - first) if offs.size else 1)
            where(c, lo, n)
            lines.append(f"load_mem {lo:#x} {n:#x} {dat(mem.read(lo, n), 'load')}")
        elif isinstance(c, RegWrite):
            lines.append(f"write_reg 0xffff{full(c):04x} {c.value:#x} # {c.name}")
            hit = core.rmap.at_word(c.addr)
            if readback and hit and not core.has_read_hook(hit[0].name, hit[1].name):
                mask = hit[1].mask("rw")
                if mask:
                    lines.append(f"read_reg 0xffff{full(c):04x} {mask:#010x} "
                                 f"{c.value & mask:#010x} # {c.name}")
        elif isinstance(c, PollRegEqual):
            lines.append(f"read_reg 0xffff{full(c):04x} 0xffffffff {c.value:#x} # {c.name}")
        elif isinstance(c, RegRead):
            lines.append(f"read_reg 0xffff{full(c):04x} 0x00000000 0x0 # {c.name}")
        elif isinstance(c, RegReadCheck):
            lines.append(f"read_reg 0xffff{full(c):04x} 0xffffffff {c.value:#x} # {c.name}")
        elif isinstance(c, IntrNotify) and c.single:
            lines += ["wait",
                      f"read_reg 0xffff{glb:04x} {pending:#010x} {pending:#010x} # {c.what}",
                      f"write_reg 0xffff{glb:04x} {pending:#x} # clear {c.what}"]
        elif isinstance(c, IntrNotify):
            lines += ["wait",
                      f"read_reg 0xffff{glb:04x} {c.mask:#010x} {c.mask:#010x} # {c.source}",
                      f"write_reg 0xffff{glb:04x} {c.mask:#x} # clear {c.source}"]
        elif isinstance(c, (CheckCrc, CheckFile)):
            data = core.mem(c.mem).read(c.addr, c.size)
            if isinstance(c, CheckFile) and not np.array_equal(data, c.expected):
                raise TraceError(f"{c.where}: the golden model's memory does not match the "
                                 f"check's image {os.path.basename(c.path)}")
            if isinstance(c, CheckCrc) and zlib.crc32(data.tobytes()) != c.crc:
                raise TraceError(f"{c.where}: the golden model's memory does not match the "
                                 f"check's CRC {c.crc:#010x}: no expected file to write")
            lo, n = _span(c.addr, c.size)            # whole lines: the golden bytes around
            where(c, lo, n)
            lines.append(f"dump_mem {lo:#x} {n:#x} "
                         f"{dat(core.mem(c.mem).read(lo, n), 'expected')}")
        elif isinstance(c, (CheckNothing, OrderingPoint)):
            lines.append(f"# {type(c).__name__} {getattr(c, 'sync_id', '')}")
        else:                                                       # pragma: no cover
            raise TraceError(f"{c.where}: cannot write {type(c).__name__} as a traceplayer "
                             "command")
    with open(os.path.join(directory, TXN_FILE), "w") as f:
        f.write("\n".join(lines) + "\n")
    return directory
