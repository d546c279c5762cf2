"""Reader for NVDLA's nv_full "traceplayer" tests: a directory with ``input.txn``.

NVDLA's nvdlav1 branch ships register-level tests in a second format, played by its
Verilator harness (``verif/verilator``) after a converter turns ``input.txn`` into a binary
command stream. A directory holds ``input.txn``, the ``.dat`` memory files it names and
optionally ``plusargs.txt``. One command per line, ``#`` starts a comment, numbers are hex::

    load_mem 0x80000000 0x1000 sample_surf.dat   # ADDR SIZE FILE: SIZE bytes of FILE at ADDR
    write_reg 0xffff100b 0x800                    # CSBADDR DATA: a CSB write
    read_reg 0xffff100b 0xffffffe0 0x800          # CSBADDR MASK EXPECTED: read until
                                                  # (value & MASK) == (EXPECTED & MASK)
    wait                                          # wait for the interrupt pin
    dump_mem 0x80800000 0x1000 output.dat         # ADDR SIZE FILE: memory must equal FILE

CSB addresses are word addresses (byte address >> 2) in the nv_full ("full") register layout;
bits above 15 are not part of the address (NVDLA's are all ``0xffff``). On a build with the
small layout the reader moves each register to its address there by name (a register the
build does not have is an error), so the same test runs on any build with its units. Memory addresses pick the bus as NVDLA's harness does: ``0x8xxxxxxx`` is
the DBBIF (primary memory), ``0x5xxxxxxx`` the SRAMIF (CV-SRAM); anything else is an error.

Semantics, from NVDLA's harness and converter:

- ``read_reg`` compares under the mask and retries on a mismatch (the harness reads again,
  so hardware time passes between tries); after the last try the trace has failed but goes
  on. Tries: 10 (the Verilator harness), or ``+read_reg_poll_retries=N`` of ``plusargs.txt``
  (the UVM bench's option; NVDLA gives 10 or 100000).
- ``wait`` waits for the interrupt pin (any unmasked GLB ``S_INTR_STATUS`` bit) and clears
  nothing: the trace clears status with a ``write_reg`` to ``S_INTR_STATUS`` itself.
- ``.dat`` files: lines that do not start with ``0x`` (after at most one space) are header
  or comment lines and are skipped; every data line holds exactly 32 bytes as ``0xNN``
  tokens, the first token at the lowest address; the first SIZE bytes are used (SIZE a
  multiple of 32), so a file may hold more. A ``dump_mem`` file is the expected content
  of the region (NVDLA's harness writes the actual bytes elsewhere and compares); its header
  line ``dumped memory,start_address=...`` is informational only (NVDLA's CV-SRAM variants
  keep the DBBIF address there).
- ``plusargs.txt``: ``+read_reg_poll_retries=N`` and ``+continue_on_fail`` (the golden
  engine always continues after a failed read, as NVDLA's Verilator harness does).

``parse_txn(directory, cfg)`` returns a :class:`sim.trace.Trace` whose commands are the
usual :class:`~sim.trace.RegWrite` / :class:`~sim.trace.MemLoad` plus :class:`ReadReg`,
:class:`WaitIntr` and :class:`DumpMem`; its ``deferred`` flag asks the engine to start
layers at the next wait or retried read, not at the enabling write (see
:mod:`sim.trace_run`). Every problem raises :class:`~sim.trace.TraceError` with
``file:line: problem``.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

import numpy as np

from arch.registers import all_blocks, register_map

from .trace import Command, DatImage, MemLoad, RegWrite, Trace, TraceError

__all__ = ["TXN_FILE", "ReadReg", "WaitIntr", "DumpMem", "is_txn_dir", "parse_txn",
           "parse_txn_text", "parse_txn_dat", "parse_plusargs", "txn_memory", "full_layout_word",
           "DEFAULT_READ_TRIES", "DAT_LINE_BYTES"]

TXN_FILE = "input.txn"
PLUSARGS_FILE = "plusargs.txt"
DEFAULT_READ_TRIES = 10          #: NVDLA's Verilator harness: tries per read_reg
DAT_LINE_BYTES = 32              #: bytes per data line of a traceplayer .dat file
_CSB_ADDR_MASK = 0xFFFF          #: the CSB address bits (the top 16 are not an address)


@dataclass(frozen=True)
class ReadReg(Command):
    """``read_reg``: read until ``value & mask == expected & mask`` (``tries`` reads)."""
    addr: int                        #: CSB word address
    mask: int
    value: int                       #: expected value
    tries: int
    name: str                        #: BLOCK.REGISTER, or the address of a hole


@dataclass(frozen=True)
class WaitIntr(Command):
    """``wait``: until the core's interrupt pin is high (nothing is cleared)."""


@dataclass(frozen=True)
class DumpMem(Command):
    """``dump_mem``: the memory region must equal ``expected`` byte for byte."""
    mem: str                         #: "dbb" or "sram"
    addr: int
    size: int
    path: str                        #: the expected-content file
    expected: np.ndarray = field(repr=False)     #: uint8, ``size`` bytes


def txn_memory(addr: int) -> str | None:
    """The bus of a traceplayer memory address, as NVDLA's harness decodes it: "dbb" for
    0x8xxxxxxx, "sram" for 0x5xxxxxxx, None otherwise."""
    return {0x8: "dbb", 0x5: "sram"}.get((addr >> 28) & 0xF) if addr >> 32 == 0 else None


@functools.lru_cache(maxsize=1)
def _full_layout():
    """({word: (block, register)}, {(block, register): word}) of the nv_full layout."""
    by_word, by_name = {}, {}
    for b in all_blocks("full").values():
        for r in b.registers:
            word = (b.base + r.offset) >> 2
            by_word[word] = (b.name, r.name)
            by_name[(b.name, r.name)] = word
    return by_word, by_name


def full_layout_word(block: str, register: str) -> int:
    """The CSB word address of a register in the nv_full layout (what input.txn holds)."""
    return _full_layout()[1][(block, register)]


_DATA_LINE = re.compile(r"^ ?0x")
_HEX_TOKEN = re.compile(r"0x([0-9a-fA-F]{2})")


def parse_txn_dat(text: str, size: int, path: str = "<dat>") -> np.ndarray:
    """The first ``size`` bytes of a traceplayer ``.dat`` file (uint8)."""
    if size % DAT_LINE_BYTES:
        raise TraceError(f"{path}:1: size {size:#x} is not a multiple of {DAT_LINE_BYTES} "
                         "bytes (a data line)")
    need = size // DAT_LINE_BYTES
    out = []
    for ln, line in enumerate(text.splitlines(), 1):
        if len(out) == need:
            break
        if not _DATA_LINE.match(line):
            continue
        tokens = line.split()
        hexes = _HEX_TOKEN.findall(line)
        if len(tokens) != DAT_LINE_BYTES or len(hexes) != DAT_LINE_BYTES \
                or any(len(t) != 4 for t in tokens):
            raise TraceError(f"{path}:{ln}: a data line must be {DAT_LINE_BYTES} 0xNN bytes, "
                             f"got {line.strip()[:60]!r}")
        out.append("".join(hexes))
    if len(out) < need:
        raise TraceError(f"{path}:1: {size:#x} bytes wanted, the file has "
                         f"{len(out) * DAT_LINE_BYTES:#x}")
    return np.frombuffer(bytes.fromhex("".join(out)), dtype=np.uint8)


def parse_plusargs(text: str, path: str = PLUSARGS_FILE) -> dict:
    """``{"read_reg_poll_retries": N, "continue_on_fail": True}`` from ``plusargs.txt``."""
    out = {}
    for ln, line in enumerate(text.splitlines(), 1):
        for tok in line.split("#", 1)[0].split():
            m = re.fullmatch(r"\+read_reg_poll_retries=(\d+)", tok)
            if m:
                out["read_reg_poll_retries"] = int(m.group(1))
            elif tok == "+continue_on_fail":
                out["continue_on_fail"] = True
            else:
                raise TraceError(f"{path}:{ln}: unknown plusarg {tok!r} (known: "
                                 "+read_reg_poll_retries=N, +continue_on_fail)")
    return out


_ARITY = {"load_mem": 3, "dump_mem": 3, "write_reg": 2, "read_reg": 3, "wait": 0}


class _Reader:
    def __init__(self, path, cfg, base_dir, tries):
        self.path = path
        self.rmap = register_map(cfg)
        self.base_dir = base_dir
        self.tries = tries
        self.texts = {}

    def err(self, ln, msg):
        raise TraceError(f"{self.path}:{ln}: {msg}")

    def number(self, ln, what, text, bits=32):
        if not re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            self.err(ln, f"{what} must be a hex number 0x..., got {text!r}")
        v = int(text, 16)
        if v >> bits:
            self.err(ln, f"{what} {text} does not fit in {bits} bits")
        return v

    def register(self, ln, text):
        word = self.number(ln, "register address", text) & _CSB_ADDR_MASK
        if self.rmap.layout != "full":           # move it to the build's layout by name
            names = _full_layout()[0].get(word)
            if names is None:
                self.err(ln, f"register address {text} is no register of the nv_full layout")
            block, reg = names
            if block not in self.rmap or reg not in self.rmap[block]:
                self.err(ln, f"register address {text} is {block}.{reg}, which this build "
                             "does not have")
            word = self.rmap.address(f"{block}.{reg}") >> 2
        hit = self.rmap.at_word(word)
        return word, (hit[0].name, hit[1].name) if hit else ("", f"{word:#06x}")

    def memory(self, ln, addr):
        mem = txn_memory(addr)
        if mem is None:
            self.err(ln, f"memory address {addr:#x} is on no bus (0x8xxxxxxx = DBBIF, "
                         "0x5xxxxxxx = SRAMIF)")
        return mem

    def dat(self, ln, cmd, fname, size):
        p = os.path.join(self.base_dir, fname)
        if p not in self.texts:
            try:
                with open(p) as f:
                    self.texts[p] = f.read()
            except OSError as e:
                self.err(ln, f"{cmd}: cannot read {fname}: {e.strerror}")
        return p, parse_txn_dat(self.texts[p], size, p)

    def parse(self, text):
        cmds = []
        for ln, raw in enumerate(text.splitlines(), 1):
            words = raw.split("#", 1)[0].split()
            if not words:
                continue
            name, args = words[0], words[1:]
            if name not in _ARITY:
                self.err(ln, f"unknown command {name!r} (known: {', '.join(_ARITY)})")
            if len(args) != _ARITY[name]:
                self.err(ln, f"{name} takes {_ARITY[name]} arguments, got {len(args)}")
            cmds.append(getattr(self, "c_" + name)(ln, *args))
        return cmds

    def c_write_reg(self, ln, addr, data):
        word, (block, reg) = self.register(ln, addr)
        return RegWrite(self.path, ln, f"{block}.{reg}" if block else reg, block, reg, word,
                        self.number(ln, "register value", data))

    def c_read_reg(self, ln, addr, mask, value):
        word, (block, reg) = self.register(ln, addr)
        return ReadReg(self.path, ln, word, self.number(ln, "mask", mask),
                       self.number(ln, "expected value", value), self.tries,
                       f"{block}.{reg}" if block else reg)

    def c_wait(self, ln):
        return WaitIntr(self.path, ln)

    def _mem_args(self, ln, cmd, addr, size):
        a = self.number(ln, "address", addr)
        n = self.number(ln, "size", size)
        mem = self.memory(ln, a)
        if txn_memory(a + max(n, 1) - 1) != mem:
            self.err(ln, f"{cmd}: {a:#x}+{n:#x} runs off its bus's address range")
        return mem, a, n

    def c_load_mem(self, ln, addr, size, fname):
        mem, a, n = self._mem_args(ln, "load_mem", addr, size)
        p, data = self.dat(ln, "load_mem", fname, n)
        image = DatImage(p, np.arange(n, dtype=np.int64), data)
        return MemLoad(self.path, ln, mem, a, p, image)

    def c_dump_mem(self, ln, addr, size, fname):
        mem, a, n = self._mem_args(ln, "dump_mem", addr, size)
        p, data = self.dat(ln, "dump_mem", fname, n)
        return DumpMem(self.path, ln, mem, a, n, p, data)


def is_txn_dir(directory) -> bool:
    return os.path.isfile(os.path.join(directory, TXN_FILE))


def parse_txn_text(text: str, cfg, path: str = TXN_FILE, base_dir: str = ".",
                   tries: int = DEFAULT_READ_TRIES) -> list:
    """Commands of an ``input.txn`` given as text (files resolved against ``base_dir``)."""
    return _Reader(path, cfg, base_dir, tries).parse(text)


def parse_txn(path: str, cfg) -> Trace:
    """A traceplayer directory (or its ``input.txn``) as a :class:`~sim.trace.Trace`."""
    directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
    txn = os.path.join(directory, TXN_FILE) if os.path.isdir(path) else path
    tries = DEFAULT_READ_TRIES
    plus = os.path.join(directory, PLUSARGS_FILE)
    if os.path.isfile(plus):
        with open(plus) as f:
            tries = parse_plusargs(f.read(), plus).get("read_reg_poll_retries", tries)
    try:
        with open(txn) as f:
            text = f.read()
    except OSError as e:
        raise TraceError(f"{txn}:1: cannot read trace: {e.strerror}") from None
    name = os.path.basename(os.path.normpath(directory))
    return Trace(name, txn, parse_txn_text(text, cfg, txn, directory, max(1, tries)),
                 deferred=True)
