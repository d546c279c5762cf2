"""What the constrained-random program generators of the units share: register words built
field by field, trace directories (memory images, register groups, enables, interrupt and CRC
checks), golden CRCs, the draw / golden-check / redraw loop and invalid-program traces.

Each unit's generator (``sim/<unit>/random_programs.py``) draws its layers and orders its own
register writes; this module writes them out:

    path, lines = start_trace(directory, name, layers)    # images and zeroed output windows
    lines += group_writes("PDP", 0, words)                # S_POINTER, then the D registers
    lines += enables("PDP", "PDP_RDMA")
    lines += crc_check("PDP_0", 0, layer["window"], crcs)
    finish_trace(path, name, lines)

A layer is a dict with ``"images": [(addr, uint8 data, ram)]`` and ``"window": (addr, size,
ram)`` (``ram``: the RAM_TYPE register value, 1 = MC / DBBIF = ``pri_mem``, 0 = CV / SRAMIF =
``sec_mem``); the window is the output plus a zero-initialised guard band of :data:`GUARD`
bytes before and after it, so a write outside the output changes the CRC.
"""

from __future__ import annotations

import os
import shutil
import zlib

import numpy as np

from arch.registers import register_map

from .trace import parse_trace
from .trace_run import run_golden

__all__ = ["Regs", "Redraw", "GUARD", "SLOT", "MEM", "BYTES", "random_ram", "set_fields",
           "dat_text", "start_trace", "group_writes", "enables", "crc_check", "finish_trace",
           "golden_core", "run_trace_golden", "golden_crcs", "write_random", "zero_crc",
           "write_invalid"]

GUARD = 64                     # guard band before and after an output window, in bytes
SLOT = 0x0040_0000             # address offset between the layers of one trace
MEM = {1: "pri_mem", 0: "sec_mem"}      # RAM_TYPE -> trace memory name
BYTES = {0: 1, 1: 2, 2: 2}     # precision (INT8, INT16, FP16) -> bytes per element


class Regs:
    """Register words of one block, built field by field from the register table."""

    def __init__(self, block):
        self.block = block
        self.words = {}

    def set(self, reg, **fields):
        r = self.block[reg]
        word = self.words.get(reg, r.reset)
        for name, value in fields.items():
            f = r[name]
            word = (word & ~f.mask) | ((int(value) << f.lsb) & f.mask)
        self.words[reg] = word

    def addr(self, reg, value):
        """An address/stride register holding a byte value (low bits dropped by the field)."""
        r = self.block[reg]
        self.words[reg] = int(value) & r.mask()


class Redraw(Exception):
    """Raised by a generator when a draw cannot be completed; :func:`write_random` draws
    again."""


def random_ram(cfg, rng):
    """RAM type of one surface: MC (1), or 70 % CV (0) on builds with an SRAMIF."""
    return int(rng.random() < 0.7) if cfg.sramif else 1


def set_fields(cfg, layer, block, reg, **fields):
    """Set fields of register ``reg`` of ``block`` in ``layer["regs"]`` (in place)."""
    r = Regs(register_map(cfg)[block])
    r.words = layer["regs"][block]
    r.set(reg, **fields)


# ------------------------------------------------------------------------------------------
# Trace files
# ------------------------------------------------------------------------------------------
def dat_text(data: np.ndarray) -> str:
    """A memory image as the text of an NVDLA trace ``.dat`` file (32 bytes a line)."""
    out = ["{"]
    for off in range(0, data.size, 32):
        chunk = data[off:off + 32]
        out.append(f"{{offset:{off:#x}, size:{chunk.size}, payload:"
                   + " ".join(f"0x{b:02x}" for b in chunk.tolist()) + "} ,")
    out.append("}")
    return "\n".join(out) + "\n"


def start_trace(directory: str, name: str, layers: list, label_windows: bool = False):
    """Create the trace directory ``directory/name`` and write the images of ``layers`` into
    it (``l<i>_m<j>.dat``). Returns ``(path, lines)``: the ``.cfg`` lines that initialise and
    load each image, then zero each layer's output window (preceded by a ``//Dest of layer
    <i>`` comment with ``label_windows``)."""
    path = os.path.join(directory, name)
    os.makedirs(path, exist_ok=True)
    lines = []
    for i, layer in enumerate(layers):
        for j, (addr, data, ram) in enumerate(layer["images"]):
            fname = f"l{i}_m{j}.dat"
            with open(os.path.join(path, fname), "w") as f:
                f.write(dat_text(data))
            lines.append(f"mem_init({MEM[ram]}, {addr:#x}, {data.size:#x}, ALL_ZERO);")
            lines.append(f'mem_load({MEM[ram]}, {addr:#x}, "{fname}");')
        waddr, wsize, wram = layer["window"]
        if label_windows:
            lines.append(f"//Dest of layer {i}")
        lines.append(f"mem_init({MEM[wram]}, {waddr:#x}, {wsize:#x}, ALL_ZERO);")
    return path, lines


def group_writes(block: str, group: int, words: dict) -> list:
    """Lines that select register group ``group`` of ``block`` and write ``words``."""
    lines = [f"reg_write(NVDLA_{block}.S_POINTER_0, {group:#x});"]
    for reg, word in words.items():
        lines.append(f"reg_write(NVDLA_{block}.{reg}_0, {word:#x});")
    return lines


def enables(*blocks) -> list:
    """Lines that enable ``blocks``, in that order."""
    return [f"reg_write(NVDLA_{block}.D_OP_ENABLE_0, 0x1);" for block in blocks]


def crc_check(intr: str, i: int, window, crcs) -> list:
    """Lines that wait for interrupt ``intr`` (e.g. ``SDP_0``) as ``sync_id_<i>`` and then
    check the CRC of ``window``: ``crcs[i]``, or 0 when ``crcs`` is None (not known yet)."""
    waddr, wsize, wram = window
    crc = crcs[i] if crcs else 0
    return [f"intr_notify({intr}, sync_id_{i});",
            f"check_crc(sync_id_{i}, {MEM[wram]}, {waddr:#x}, {wsize:#x}, {crc:#010x});"]


def finish_trace(path: str, name: str, lines: list) -> str:
    """Write ``lines`` as the trace's ``<name>.cfg``; returns ``path``."""
    with open(os.path.join(path, f"{name}.cfg"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------------------------------
# Golden runs
# ------------------------------------------------------------------------------------------
def golden_core(cfg):
    """A GoldenCore with the default units."""
    from .core import GoldenCore
    return GoldenCore(cfg)


def run_trace_golden(path, cfg, core=golden_core):
    """Run a trace directory on a fresh golden core ``core(cfg)``."""
    return run_golden(parse_trace(path, cfg), cfg, core=core(cfg))


def golden_crcs(cfg, path, n, core=golden_core):
    """Run the trace at ``path`` on ``core(cfg)``; returns ``(crcs, None)`` when it ends with
    ``n`` CRC checks (``sync_id_*``), else ``(None, the golden model's message)`` (a layer
    was rejected or never finished)."""
    res = run_trace_golden(path, cfg, core)
    checks = list(res.checks)
    if len(checks) != n or not all(c.sync_id.startswith("sync_id") for c in checks):
        return None, res.message or "incomplete"
    return [c.actual for c in checks], None


def write_random(cfg, directory: str, count: int, seed: int, prefix: str, draw, write_trace,
                 core=golden_core):
    """``count`` random programs as trace directories ``<prefix>_<seed>_<n>`` with golden
    CRCs. ``draw(rng)`` returns a program's layers (or raises :class:`Redraw`);
    ``write_trace(directory, name, layers, crcs=None)`` writes it. A program the golden model
    (``core(cfg)``) rejects is removed and drawn again. Deterministic by ``seed``; returns
    ``(paths, messages of the rejected programs)``."""
    rng = np.random.default_rng(seed)
    paths, rejected = [], []
    while len(paths) < count:
        try:
            layers = draw(rng)
        except Redraw:
            continue
        name = f"{prefix}_{seed}_{len(paths):04d}"
        path = write_trace(directory, name, layers)
        crcs, err = golden_crcs(cfg, path, len(layers), core)
        if crcs is None:
            rejected.append(err)
            shutil.rmtree(path)
            continue
        write_trace(directory, name, layers, crcs)
        paths.append(path)
    return paths, rejected


# ------------------------------------------------------------------------------------------
# Invalid programs
# ------------------------------------------------------------------------------------------
def zero_crc(window) -> int:
    """CRC of an untouched (all-zero) output window."""
    return zlib.crc32(bytes(window[1]))


def write_invalid(cfg, directory: str, prefix: str, mutations: dict, base, write_trace,
                  *extra) -> list:
    """One single-layer trace ``<prefix>_invalid_<name>`` per applicable mutation:
    ``base(cfg)`` draws a fresh valid layer, ``mutations[name](cfg, layer, *extra)`` breaks it
    in place and returns the field the golden model's message must name (None: not
    applicable to this build, no trace). The expected CRC is that of the untouched output
    window. Returns ``[(path, field)]``."""
    out = []
    for name, mutate in mutations.items():
        layer = base(cfg)
        fld = mutate(cfg, layer, *extra)
        if fld is None:
            continue
        crc = zero_crc(layer["window"])
        out.append((write_trace(directory, f"{prefix}_invalid_{name}", [layer], [crc]), fld))
    return out
