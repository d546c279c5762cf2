"""Parser for NVDLA register-level traces (the ``.cfg`` language) and their ``.dat`` images.

A trace directory holds ``<name>.cfg`` and the ``.dat`` memory images it loads::

    mem_init(pri_mem, 0x80000100, 0xf00, ALL_ZERO);
    mem_load(pri_mem, 0x80000100, "image.dat");
    reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);
    poll_reg_equal(NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0, 0x1);
    intr_notify(SDP_0, sync_id_0);
    check_crc(sync_id_0, 1, 0x900001c0, 0xf00, 0x3347874c);
    check_nothing(sync_id_1);
    sync_notify(NVDLA_CACC, sync_cacc);
    sync_wait(NVDLA_CSC, sync_cacc);

``sync_notify`` / ``sync_wait`` are ordering points between the register streams of different
units (NVDLA's trace generator writes them, e.g. the CSC programming waits until CACC's is
written). A player that runs the file in order already meets them, so the engines treat them
as no-ops; a ``sync_wait`` on an id no ``sync_notify`` before it notified is an error.

The rest of the language NVDLA's trace player accepts (its parser and test bench; none of the
public nv_small traces uses it):

    mem_init(pri_mem, 0x80000000, 0x100, ADDR);       // fill patterns: PATTERNS
    mem_init(pri_mem, 0x80000000, "image.dat");       // over the image's extent, ALL_ZERO
    mem_init(pri_mem, 0x80000000, "image.dat", ONES); // ... or a pattern
    reg_read(NVDLA_SDP.S_STATUS_0, status);           // one read, the value is not used
    reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1);       // one read, the whole word compared
    intr_notify(sync_id_0);                           // single shot: the next interrupt
    check_file(sync_id_0, pri_mem, 0x80001000, 0x40, "expected.dat");

- fill patterns (NVDLA's memory model): ``ALL_ZERO`` 0x00, ``ONES`` 0xff, ``AFIVE`` 0xa5,
  ``FIVEA`` 0x5a, ``ADDR`` the low byte of each byte's address; ``RANDOM`` and ``X`` (NVDLA:
  ``$urandom`` / unknown bits) are one pseudo-random byte sequence fixed by the address and
  size (:func:`pattern_bytes`), so every engine fills the same bytes;
- ``mem_init`` over an image covers ``[addr, addr + last offset + 1)`` of the image, as
  NVDLA's memory model does; without a pattern it fills zeros (NVDLA's model leaves its fill
  byte at 0 when the pattern is missing);
- ``intr_notify`` with one argument waits for the next interrupt of any source (the pin) and
  clears every pending unmasked source, as NVDLA's handler clears an interrupt (it writes
  back ``S_INTR_STATUS & ~S_INTR_MASK``). NVDLA's parser accepts this single shot, but its
  handler files it under no unit and stops at the first interrupt finding no expected one
  for that unit: the semantics here are ours;
- ``check_file`` compares the region with the image's bytes at offsets ``0 .. size - 1``
  (the image must have all of them; NVDLA's player leaves this check unimplemented);
- ``check_nothing`` may carry the four arguments of a check (ignored), as NVDLA's parser
  allows.

Unit, block and register names (and memory names) are taken in any case: NVDLA's player
upper-cases them before looking them up.

``//`` starts a comment. Register names resolve through the build's register map, so a
trace naming a register (or block) the build does not have is an error. A ``.dat`` image is
a list of ``{offset:0x.., size:N, payload:0x.. 0x.. ...}`` records (byte payloads, offsets
relative to the load address), optionally wrapped in ``{ ... }``.

    trace = parse_trace("traces/nv_small/sdp_1x1x1_pass_through_int8", cfg)
    for cmd in trace.commands: ...

Every problem raises :class:`TraceError` with ``file:line: problem``.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from dataclasses import dataclass, field

import numpy as np

from arch.registers import RegisterError, register_map

__all__ = ["TraceError", "Command", "MemInit", "MemLoad", "RegWrite", "PollRegEqual",
           "IntrNotify", "CheckCrc", "CheckNothing", "SyncNotify", "SyncWait", "OrderingPoint",
           "RegRead", "RegReadCheck", "CheckFile", "PATTERNS", "pattern_bytes",
           "DatImage", "Trace", "parse_trace",
           "parse_trace_text", "load_dat", "parse_dat", "find_trace_cfg", "is_trace_dir",
           "expand_trace_dirs", "MEMORIES", "INTR_SOURCES"]


class TraceError(ValueError):
    """A malformed trace or image; the message starts with ``file:line:``."""


# Memory names of the trace language -> the core's memory ("dbb" = DBBIF / primary memory,
# "sram" = SRAMIF / secondary memory). check_crc's memory argument is also given as 1.
MEMORIES = {"pri_mem": "dbb", "sec_mem": "sram", "1": "dbb"}

# intr_notify sources: <UNIT>_<group> -> GLB S_INTR_STATUS field prefix.
INTR_SOURCES = {"SDP": "SDP", "CDP": "CDP", "PDP": "PDP", "BDMA": "BDMA", "RUBIK": "RUBIK",
                "RBK": "RUBIK", "CDMA_DAT": "CDMA_DAT", "CDMA_WT": "CDMA_WT",
                "CACC": "CACC"}


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


#: mem_init fill patterns of NVDLA's memory model: the byte of a constant fill, or None for
#: those computed per byte (pattern_bytes)
PATTERNS = {"ALL_ZERO": 0x00, "ONES": 0xFF, "AFIVE": 0xA5, "FIVEA": 0x5A, "ADDR": None,
            "RANDOM": None, "X": None}

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix64(z):
    """splitmix64's finalizer on uint64 arrays (wrapping arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def pattern_bytes(pattern: str, addr: int, size: int) -> np.ndarray:
    """The ``size`` bytes ``mem_init`` writes at ``addr`` with ``pattern`` (uint8).

    ``RANDOM`` / ``X``: byte i is the top byte of splitmix64's finalizer of ``seed + (i + 1)
    * 0x9E3779B97F4A7C15`` (mod 2**64), with ``seed`` that finalizer of ``addr ^ (size <<
    32)`` -- a fixed function of address and size, so every engine gets the same bytes."""
    const = PATTERNS[pattern]
    if const is not None:
        return np.full(size, const, dtype=np.uint8)
    if pattern == "ADDR":
        return ((np.arange(size, dtype=np.uint64) + np.uint64(addr & 0xFFFFFFFFFFFFFFFF))
                & np.uint64(0xFF)).astype(np.uint8)
    seed = _mix64(np.uint64((addr ^ (size << 32)) & 0xFFFFFFFFFFFFFFFF))
    with np.errstate(over="ignore"):
        z = seed + (np.arange(1, size + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return (_mix64(z) >> np.uint64(56)).astype(np.uint8)


@dataclass(frozen=True)
class MemInit(Command):
    mem: str                         #: "dbb" or "sram"
    addr: int
    size: int
    pattern: str                     #: a key of PATTERNS
    path: str = ""                   #: the image whose extent gave the size ("" if none)

    @property
    def fill(self):
        """The byte of a constant fill, or None when the bytes vary (:meth:`data`)."""
        return PATTERNS[self.pattern]

    def data(self) -> np.ndarray:
        """The bytes the command writes (uint8, ``size`` of them)."""
        return pattern_bytes(self.pattern, self.addr, self.size)

    def apply(self, mem) -> None:
        """Fill a SparseMemory."""
        if self.fill is not None:
            mem.fill(self.addr, self.size, self.fill)
        else:
            mem.write(self.addr, self.data())


@dataclass(frozen=True)
class DatImage:
    """A parsed ``.dat`` image: byte offsets (relative to the load address) and values."""
    path: str
    offsets: np.ndarray = field(repr=False)      #: int64, one per byte
    data: np.ndarray = field(repr=False)         #: uint8, one per byte

    @property
    def size(self) -> int:
        return int(self.data.size)

    def write_to(self, mem, base: int) -> None:
        """Store the image at ``base`` in a SparseMemory (contiguous runs as block writes)."""
        if not self.data.size:
            return
        offs = self.offsets
        breaks = np.flatnonzero(np.diff(offs) != 1) + 1
        if breaks.size <= 64:
            starts = np.concatenate(([0], breaks))
            ends = np.concatenate((breaks, [offs.size]))
            for s, e in zip(starts.tolist(), ends.tolist()):
                mem.write(base + int(offs[s]), self.data[s:e])
        else:
            mem.scatter(base + offs, self.data)


@dataclass(frozen=True)
class MemLoad(Command):
    mem: str
    addr: int
    path: str                        #: the image file, resolved against the trace directory
    image: DatImage = field(repr=False)


@dataclass(frozen=True)
class RegWrite(Command):
    name: str                        #: as written in the trace (NVDLA_SDP.D_OP_ENABLE_0)
    block: str                       #: block name in the register map (SDP)
    register: str                    #: register name in the register map (D_OP_ENABLE)
    addr: int                        #: CSB word address
    value: int


@dataclass(frozen=True)
class PollRegEqual(Command):
    name: str
    block: str
    register: str
    addr: int
    value: int


@dataclass(frozen=True)
class IntrNotify(Command):
    source: str                      #: as written (SDP_0); "" for a single shot
    sync_id: str
    status_field: str                #: GLB S_INTR_STATUS field (SDP_DONE_STATUS0); "" single
    mask: int                        #: that field's bit; single shot: every field's bits
    #: ``intr_notify(sync_id)``: the next interrupt of any unmasked source; every pending
    #: unmasked source is cleared
    single: bool = False

    @property
    def what(self) -> str:
        return f"intr_notify({self.sync_id})" if self.single else f"intr_notify({self.source})"


@dataclass(frozen=True)
class RegRead(Command):
    """``reg_read(NAME, var)``: one CSB read; the value is not checked."""
    name: str
    block: str
    register: str
    addr: int
    var: str


@dataclass(frozen=True)
class RegReadCheck(Command):
    """``reg_read_check(NAME, VALUE)``: one CSB read, the whole word must equal VALUE."""
    name: str
    block: str
    register: str
    addr: int
    value: int

    def mismatch(self, got: int) -> str:
        return (f"{self.where}: reg_read_check({self.name}, {self.value:#x}): read {got:#x}")


@dataclass(frozen=True)
class CheckFile(Command):
    """``check_file``: after the sync point, the region must equal the image's bytes."""
    sync_id: str
    mem: str
    addr: int
    size: int
    path: str
    expected: np.ndarray = field(repr=False)     #: uint8, ``size`` bytes (offsets 0..size-1)


@dataclass(frozen=True)
class CheckCrc(Command):
    sync_id: str
    mem: str
    addr: int
    size: int
    crc: int


@dataclass(frozen=True)
class CheckNothing(Command):
    sync_id: str


@dataclass(frozen=True)
class OrderingPoint(Command):
    """``sync_notify`` / ``sync_wait``: ordering only (a no-op for an in-order player)."""
    unit: str                        #: as written (NVDLA_CACC)
    block: str                       #: the register-map block (CACC)
    sync_id: str


@dataclass(frozen=True)
class SyncNotify(OrderingPoint):
    pass


@dataclass(frozen=True)
class SyncWait(OrderingPoint):
    pass


@dataclass
class Trace:
    name: str
    path: str                        #: the .cfg file (or a traceplayer's input.txn)
    commands: list
    #: layers start at the engine's next wait or retried read instead of at the enabling
    #: write (NVDLA's traceplayer tests read D_OP_ENABLE back while the layer would still run)
    deferred: bool = False

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)

    def enabled_blocks(self) -> set:
        """Blocks whose D_OP_ENABLE the trace sets (what the trace needs the core to run)."""
        return {c.block for c in self.commands
                if isinstance(c, RegWrite) and c.register == "D_OP_ENABLE" and c.value & 1}


# --------------------------------------------------------------------------------------------
# .dat images
# --------------------------------------------------------------------------------------------
_NUM = r"(?:0[xX][0-9a-fA-F]+|\d+)"
_REC = re.compile(r"\{\s*offset\s*:\s*(" + _NUM + r")\s*,\s*size\s*:\s*(" + _NUM
                  + r")\s*,\s*payload\s*:([^{}]*)\}")
_HEXBYTE = re.compile(r"0[xX]([0-9a-fA-F]{1,2})(?![0-9a-zA-Z])")
_DAT_FILLER = re.compile(r"[\s{},]*")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def parse_dat(text: str, path: str = "<dat>") -> DatImage:
    """Parse the text of a ``.dat`` image (vectorized over records)."""
    recs = _REC.findall(text)
    # Everything outside the records must be braces, commas, whitespace or comments.
    stray = re.search(r"[^\s{},]", re.sub(r"//[^\n]*", "", _REC.sub(" ", text)))
    if stray:  # again, keeping positions, to name the line
        rest = _REC.sub(lambda m: " " * (m.end() - m.start()), text)
        rest = re.sub(r"//[^\n]*", "", rest)
        stray = re.search(r"[^\s{},]", rest)
        ln = _line_of(rest, stray.start())
        snippet = text.splitlines()[ln - 1].strip()[:60]
        raise TraceError(f"{path}:{ln}: not a {{offset:.., size:.., payload:..}} record: "
                         f"{snippet!r}")
    if not recs:
        return DatImage(path, np.zeros(0, np.int64), np.zeros(0, np.uint8))
    offs_s, sizes_s, payloads = zip(*recs)
    offs = np.array(list(map(int, offs_s, itertools.repeat(0))), dtype=np.int64)
    sizes = np.array(list(map(int, sizes_s, itertools.repeat(0))), dtype=np.int64)
    counts = np.fromiter((p.count("0x") + p.count("0X") for p in payloads), np.int64,
                         len(payloads))
    joined = " ".join(payloads)
    hexes = _HEXBYTE.findall(joined)
    # Every whitespace/comma separated token of a payload must be one 0xNN byte.
    if len(hexes) != counts.sum() or len(joined.replace(",", " ").split()) != len(hexes):
        for i, p in enumerate(payloads):
            n = len(_HEXBYTE.findall(p))
            if n != counts[i] or len(p.replace(",", " ").split()) != n:
                raise TraceError(f"{path}:{_record_line(text, i)}: payload bytes must be "
                                 f"0xNN tokens: {p.strip()[:60]!r}")
    bad = np.flatnonzero(counts != sizes)
    if bad.size:
        i = int(bad[0])
        raise TraceError(f"{path}:{_record_line(text, i)}: record says size:{sizes[i]} but "
                         f"has {counts[i]} payload bytes")
    digits = "".join(hexes)
    if len(digits) != 2 * len(hexes):  # some 0xN tokens with one digit
        digits = "".join(h.rjust(2, "0") for h in hexes)
    data = np.frombuffer(bytes.fromhex(digits), dtype=np.uint8)
    starts = np.cumsum(sizes) - sizes
    within = np.arange(data.size, dtype=np.int64) - np.repeat(starts, sizes)
    offsets = np.repeat(offs, sizes) + within
    return DatImage(path, offsets, data)


def _record_line(text: str, index: int) -> int:
    for i, m in enumerate(_REC.finditer(text)):
        if i == index:
            return _line_of(text, m.start())
    return 1


def load_dat(path: str) -> DatImage:
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise TraceError(f"{path}:1: cannot read image: {e.strerror}") from None
    return parse_dat(text, path)


# --------------------------------------------------------------------------------------------
# .cfg traces
# --------------------------------------------------------------------------------------------
_STMT = re.compile(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*;\s*$")
_COMMANDS = ("mem_init", "mem_load", "reg_write", "reg_read", "reg_read_check", "poll_reg_equal",
             "intr_notify", "check_crc", "check_file", "check_nothing", "sync_notify",
             "sync_wait")
_ARITY = {"mem_init": (3, 4), "mem_load": (3,), "reg_write": (2,), "reg_read": (2,),
          "reg_read_check": (2,), "poll_reg_equal": (2,), "intr_notify": (1, 2),
          "check_crc": (5,), "check_file": (5,), "check_nothing": (1, 5), "sync_notify": (2,),
          "sync_wait": (2,)}


def _strip_comment(line: str) -> str:
    if "//" not in line:
        return line
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i]
    return line


def _split_args(text: str):
    if '"' not in text:
        return [a.strip() for a in text.split(",")] if text.strip() else []
    args, cur, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    args.append("".join(cur).strip())
    return [] if args == [""] else args


@functools.lru_cache(maxsize=8192)
def _lookup(rmap, name):
    return rmap.lookup(name)


class _Parser:
    def __init__(self, path, cfg, base_dir, load_images):
        self.path = path
        self.rmap = register_map(cfg)
        self.base_dir = base_dir
        self.load_images = load_images
        self.images = {}
        self.syncs = set()
        self.notified = set()            # sync_notify ids so far

    def err(self, line, msg):
        raise TraceError(f"{self.path}:{line}: {msg}")

    def number(self, line, what, text, bits=None):
        try:
            v = int(text, 0)
        except ValueError:
            self.err(line, f"{what} must be a number, got {text!r}")
        if v < 0 or (bits is not None and v >> bits):
            self.err(line, f"{what} {text} does not fit in {bits} bits")
        return v

    def memory(self, line, text):
        try:
            return MEMORIES[text.lower()]
        except KeyError:
            self.err(line, f"unknown memory {text!r} (expected pri_mem, sec_mem or 1)")

    def register(self, line, name):
        try:                          # NVDLA's player upper-cases block and register names
            return _lookup(self.rmap, name.upper())
        except RegisterError as e:
            self.err(line, f"unknown register {name}: {e}")

    def image(self, line, cmd, fname):
        """(path, DatImage or None) of a quoted image name, resolved against the trace."""
        if not (len(fname) >= 2 and fname[0] == fname[-1] == '"'):
            self.err(line, f"{cmd}: file name must be quoted, got {fname!r}")
        p = os.path.join(self.base_dir, fname[1:-1])
        if not os.path.isfile(p):
            self.err(line, f"{cmd}: image {fname} not found in {self.base_dir}")
        img = self.images.get(p)
        if img is None:
            img = self.images[p] = load_dat(p)
        return p, img

    def sync(self, line, text):
        if not re.fullmatch(r"[A-Za-z_]\w*", text):
            self.err(line, f"bad sync id {text!r}")
        return text

    def parse(self, text):
        cmds = []
        for ln, raw in enumerate(text.splitlines(), 1):
            s = _strip_comment(raw).strip()
            if not s:
                continue
            m = _STMT.match(s)
            if not m:
                self.err(ln, f"expected 'command(args);', got {s[:60]!r}")
            name, args = m.group(1), _split_args(m.group(2))
            if name not in _COMMANDS:
                self.err(ln, f"unknown command {name!r} (known: {', '.join(_COMMANDS)})")
            if len(args) not in _ARITY[name]:
                n = " or ".join(map(str, _ARITY[name]))
                self.err(ln, f"{name} takes {n} arguments, got {len(args)}")
            cmds.append(getattr(self, "c_" + name)(ln, *args))
        return cmds

    def c_mem_init(self, ln, mem, addr, what, pattern="ALL_ZERO"):
        key = pattern.upper()
        if key not in PATTERNS:
            self.err(ln, f"mem_init: unknown fill pattern {pattern!r} (expected "
                     f"{', '.join(PATTERNS)})")
        memory, base = self.memory(ln, mem), self.number(ln, "address", addr, 64)
        if what.startswith('"'):              # over an image's extent
            p, img = self.image(ln, "mem_init", what)
            if not img.size:
                self.err(ln, f"mem_init: image {what} has no bytes: no extent to fill")
            return MemInit(self.path, ln, memory, base, int(img.offsets.max()) + 1, key, p)
        return MemInit(self.path, ln, memory, base, self.number(ln, "size", what, 40), key)

    def c_mem_load(self, ln, mem, addr, fname):
        if self.load_images:
            p, img = self.image(ln, "mem_load", fname)
        else:
            if not (len(fname) >= 2 and fname[0] == fname[-1] == '"'):
                self.err(ln, f"mem_load: file name must be quoted, got {fname!r}")
            p, img = os.path.join(self.base_dir, fname[1:-1]), None
            if not os.path.isfile(p):
                self.err(ln, f"mem_load: image {fname} not found in {self.base_dir}")
        return MemLoad(self.path, ln, self.memory(ln, mem), self.number(ln, "address", addr, 64),
                       p, img)

    def _reg_cmd(self, cls, ln, name, value):
        block, reg = self.register(ln, name)
        return cls(self.path, ln, name, block.name, reg.name, (block.base + reg.offset) >> 2,
                   self.number(ln, "register value", value, 32))

    def c_reg_write(self, ln, name, value):
        return self._reg_cmd(RegWrite, ln, name, value)

    def c_poll_reg_equal(self, ln, name, value):
        return self._reg_cmd(PollRegEqual, ln, name, value)

    def c_reg_read_check(self, ln, name, value):
        return self._reg_cmd(RegReadCheck, ln, name, value)

    def c_reg_read(self, ln, name, var):
        if not re.fullmatch(r"\w+", var):
            self.err(ln, f"reg_read: expected a variable name, got {var!r}")
        block, reg = self.register(ln, name)
        return RegRead(self.path, ln, name, block.name, reg.name,
                       (block.base + reg.offset) >> 2, var)

    def c_intr_notify(self, ln, source, sync_id=None):
        if sync_id is None:                   # single shot: the next interrupt of any source
            sid = self.sync(ln, source)
            self.syncs.add(sid)
            try:
                status = self.rmap["GLB"]["S_INTR_STATUS"]
            except RegisterError as e:
                self.err(ln, f"intr_notify: {e}")
            return IntrNotify(self.path, ln, "", sid, "", status.mask(), True)
        source = source.upper()               # NVDLA's player upper-cases the source
        m = re.fullmatch(r"([A-Z_]+?)_([01])", source)
        if not m or m.group(1) not in INTR_SOURCES:
            self.err(ln, f"intr_notify: unknown interrupt source {source!r} (expected "
                     f"<UNIT>_<group> with UNIT one of {', '.join(INTR_SOURCES)})")
        fname = f"{INTR_SOURCES[m.group(1)]}_DONE_STATUS{m.group(2)}"
        try:
            f = self.rmap["GLB"]["S_INTR_STATUS"][fname]
        except RegisterError as e:
            self.err(ln, f"intr_notify: {e}")
        sid = self.sync(ln, sync_id)
        self.syncs.add(sid)
        return IntrNotify(self.path, ln, source, sid, fname, f.mask)

    def _known_sync(self, ln, cmd, sync_id):
        sid = self.sync(ln, sync_id)
        if sid not in self.syncs:
            self.err(ln, f"{cmd}: sync id {sid!r} has no intr_notify before it")
        return sid

    def c_check_crc(self, ln, sync_id, mem, addr, size, crc):
        return CheckCrc(self.path, ln, self._known_sync(ln, "check_crc", sync_id),
                        self.memory(ln, mem), self.number(ln, "address", addr, 64),
                        self.number(ln, "size", size, 40), self.number(ln, "CRC", crc, 32))

    def c_check_file(self, ln, sync_id, mem, addr, size, fname):
        sid = self._known_sync(ln, "check_file", sync_id)
        memory, base = self.memory(ln, mem), self.number(ln, "address", addr, 64)
        n = self.number(ln, "size", size, 40)
        p, img = self.image(ln, "check_file", fname)
        expected = np.zeros(n, dtype=np.uint8)
        have = np.zeros(n, dtype=bool)
        sel = (img.offsets >= 0) & (img.offsets < n)
        expected[img.offsets[sel]] = img.data[sel]
        have[img.offsets[sel]] = True
        if not have.all():
            gap = int(np.flatnonzero(~have)[0])
            self.err(ln, f"check_file: image {fname} does not cover the region {base:#x}+{n:#x}"
                     f" (no byte at offset {gap:#x})")
        return CheckFile(self.path, ln, sid, memory, base, n, p, expected)

    def c_check_nothing(self, ln, sync_id, *_check):
        return CheckNothing(self.path, ln, self._known_sync(ln, "check_nothing", sync_id))

    def _unit(self, ln, cmd, unit):
        m = re.fullmatch(r"NVDLA_([A-Z][A-Z0-9_]*)", unit.upper())
        if not m:
            self.err(ln, f"{cmd}: expected NVDLA_<BLOCK>, got {unit!r}")
        if m.group(1) not in self.rmap:
            self.err(ln, f"{cmd}: unknown block {m.group(1)!r} (this build's blocks: "
                     f"{', '.join(b.name for b in self.rmap)})")
        return m.group(1)

    def c_sync_notify(self, ln, unit, sync_id):
        block = self._unit(ln, "sync_notify", unit)
        sid = self.sync(ln, sync_id)
        self.notified.add(sid)
        return SyncNotify(self.path, ln, unit, block, sid)

    def c_sync_wait(self, ln, unit, sync_id):
        block = self._unit(ln, "sync_wait", unit)
        sid = self.sync(ln, sync_id)
        if sid not in self.notified:
            self.err(ln, f"sync_wait: sync id {sid!r} has no sync_notify before it")
        return SyncWait(self.path, ln, unit, block, sid)


def parse_trace_text(text: str, cfg, path: str = "<trace>", base_dir: str = ".",
                     load_images: bool = True) -> list:
    """Commands of a trace given as text (images resolved against ``base_dir``)."""
    return _Parser(path, cfg, base_dir, load_images).parse(text)


def find_trace_cfg(directory: str) -> str:
    """The ``.cfg`` of a trace directory: ``<dir name>.cfg``, or its only ``.cfg``."""
    name = os.path.basename(os.path.normpath(directory))
    own = os.path.join(directory, name + ".cfg")
    if os.path.isfile(own):
        return own
    cfgs = sorted(f for f in os.listdir(directory) if f.endswith(".cfg"))
    if len(cfgs) == 1:
        return os.path.join(directory, cfgs[0])
    if not cfgs:
        raise TraceError(f"{directory}: no .cfg trace file in this directory")
    raise TraceError(f"{directory}: several .cfg files ({', '.join(cfgs)}) and none is "
                     f"{name}.cfg")


def is_trace_dir(directory: str) -> bool:
    """A ``.cfg`` trace directory, or a traceplayer directory (``input.txn``, sim/txn.py)."""
    if os.path.isfile(os.path.join(directory, "input.txn")):
        return True
    try:
        return any(f.endswith(".cfg") and os.path.isfile(os.path.join(directory, f))
                   for f in os.listdir(directory))
    except OSError:
        return False


def expand_trace_dirs(paths) -> list:
    """Trace directories from arguments: a trace directory, a directory of trace directories
    (searched recursively), a ``.cfg`` file or a traceplayer ``input.txn``."""
    out = []
    for p in paths:
        if os.path.isfile(p) and (p.endswith(".cfg") or os.path.basename(p) == "input.txn"):
            out.append(p)
        elif is_trace_dir(p):
            out.append(p)
        elif os.path.isdir(p):
            subs = sorted(os.path.join(p, d) for d in os.listdir(p)
                          if os.path.isdir(os.path.join(p, d)))
            found = expand_trace_dirs(subs)
            if not found:
                raise TraceError(f"{p}: no trace directories (a trace directory holds a .cfg "
                                 "or an input.txn)")
            out.extend(found)
        elif not os.path.exists(p):
            raise TraceError(f"{p}: no such file or directory")
    return out


def parse_trace(path: str, cfg, load_images: bool = True) -> Trace:
    """Parse a trace directory (or its ``.cfg``) for build ``cfg``; a directory holding
    ``input.txn`` (or that file) is an NVDLA traceplayer test, read by :mod:`sim.txn`."""
    if os.path.basename(path) == "input.txn" or (os.path.isdir(path)
                                                  and os.path.isfile(os.path.join(path,
                                                                                  "input.txn"))):
        from .txn import parse_txn
        return parse_txn(path, cfg)
    if os.path.isdir(path):
        cfg_path = find_trace_cfg(path)
    else:
        cfg_path = path
    try:
        with open(cfg_path) as f:
            text = f.read()
    except OSError as e:
        raise TraceError(f"{cfg_path}:1: cannot read trace: {e.strerror}") from None
    base = os.path.dirname(cfg_path) or "."
    name = os.path.basename(os.path.normpath(path)) if os.path.isdir(path) else \
        os.path.splitext(os.path.basename(cfg_path))[0]
    return Trace(name, cfg_path, parse_trace_text(text, cfg, cfg_path, base, load_images))
