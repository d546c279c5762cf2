"""The register table: one description of every NVDLA block, register and field.

This is the single source of truth for the register files (``hw/regfile.py``), the CSB
decode (``hw/csb.py``), the golden model's register view (``sim/regs.py``), the trace
runner's name lookup and the generated register docs (``nvdla regs``).

The facts live in ``arch/registers.txt`` (grammar in its header), one entry per register
for both NVDLA v1 layouts: ``full`` (the architectural spec's map, GLB at 0) and ``small``
(the nv_small map: CFGROM at 0, GLB at 0x1000, ...). CFGROM entries are generated from the
build configuration (``arch/cfgrom.py``).

    rmap = register_map(cfg)            # the blocks this build has, in its layout
    rmap["SDP"]["D_DATA_CUBE_WIDTH"]["WIDTH"].width
    rmap.lookup("NVDLA_SDP.D_OP_ENABLE_0")  # -> (block, register)
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

__all__ = ["Field", "Register", "Block", "RegisterMap", "register_map", "raw_table",
           "UNIT_BLOCKS", "PINGPONG_BLOCKS", "RegisterError", "STATIC_STATUS",
           "reset_readback"]

_TABLE = os.path.join(os.path.dirname(__file__), "registers.txt")

ACCESSES = ("rw", "w", "ro", "const", "w1c")


class RegisterError(KeyError):
    """A register or field name that the build's map does not have."""

    def __str__(self):
        return self.args[0]


@dataclass(frozen=True)
class Field:
    name: str
    msb: int
    lsb: int
    access: str
    reset: int
    enum: tuple = ()                     #: ((NAME, value), ...)

    @property
    def width(self) -> int:
        return self.msb - self.lsb + 1

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def enum_value(self, name: str) -> int:
        for n, v in self.enum:
            if n == name:
                return v
        raise RegisterError(f"field {self.name} has no value {name!r}")


@dataclass(frozen=True)
class Register:
    name: str
    offset: int                          #: byte offset inside the block
    fields: tuple                        #: Field, in bit order

    @property
    def group(self) -> str:
        """"D" for the duplicated (ping-pong) group, "S" for the single group."""
        return "D" if self.name.startswith("D_") else "S"

    @property
    def reset(self) -> int:
        return functools.reduce(lambda a, f: a | (f.reset << f.lsb), self.fields, 0)

    def mask(self, *accesses) -> int:
        """Bits of the fields with one of ``accesses`` (all fields if none given)."""
        return functools.reduce(
            lambda a, f: a | (f.mask if not accesses or f.access in accesses else 0),
            self.fields, 0)

    @property
    def read_mask(self) -> int:
        return self.mask("rw", "ro", "const", "w1c")

    def __getitem__(self, name) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise RegisterError(f"register {self.name} has no field {name!r}")

    def pack(self, **values) -> int:
        """Register word from field values (missing fields take their reset value)."""
        word = self.reset
        for name, v in values.items():
            f = self[name]
            if isinstance(v, str):
                v = f.enum_value(v)
            if not 0 <= v < (1 << f.width):
                raise ValueError(f"{self.name}.{name}={v} does not fit in {f.width} bits")
            word = (word & ~f.mask) | (v << f.lsb)
        return word

    def unpack(self, word: int) -> dict:
        return {f.name: (word >> f.lsb) & ((1 << f.width) - 1) for f in self.fields}


@dataclass(frozen=True)
class Block:
    name: str
    base: int                            #: byte address of the block
    registers: tuple                     #: Register, by offset

    def __getitem__(self, name) -> Register:
        for r in self.registers:
            if r.name == name:
                return r
        raise RegisterError(f"block {self.name} has no register {name!r}")

    def __contains__(self, name):
        return any(r.name == name for r in self.registers)

    @property
    def pingpong(self) -> bool:
        return any(r.group == "D" for r in self.registers)

    @property
    def s_registers(self):
        return tuple(r for r in self.registers if r.group == "S")

    @property
    def d_registers(self):
        return tuple(r for r in self.registers if r.group == "D")

    @property
    def word_base(self) -> int:
        return self.base >> 2


# Which block belongs to which optional unit of the build (None: always present).
UNIT_BLOCKS = {
    "CFGROM": "small_layout", "GLB": None, "GEC": None, "MCIF": None, "CVIF": "sramif",
    "BDMA": "bdma", "CDMA": None, "CSC": None, "CMAC_A": None, "CMAC_B": None, "CACC": None,
    "SDP_RDMA": None, "SDP": None, "PDP_RDMA": "pdp", "PDP": "pdp", "CDP_RDMA": "cdp",
    "CDP": "cdp", "RBK": "rubik",
}

# Hardware-driven (ro) single-group fields whose value is fixed until their datapath exists;
# every other ro field reads 0 after reset. Shared by the RTL, the golden model and the tests.
STATIC_STATUS = {
    ("MCIF", "STATUS", "IDLE"): 1, ("CVIF", "STATUS", "IDLE"): 1,
    ("BDMA", "STATUS", "IDLE"): 1, ("BDMA", "STATUS", "FREE_SLOT"): 20,   # empty command FIFO
    ("CDMA", "S_CBUF_FLUSH_STATUS", "FLUSH_DONE"): 1,     # CBUF is ready after reset
}

# Sub-units whose register file has the ping-pong D group (spec: Ping-pong Synchronization).
PINGPONG_BLOCKS = ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC", "SDP_RDMA", "SDP", "PDP_RDMA",
                   "PDP", "CDP_RDMA", "CDP", "RBK")


def _bits(text):
    msb, _, lsb = text.partition(":")
    return int(msb), int(lsb or msb)


@functools.lru_cache(maxsize=None)
def raw_table():
    """Parse registers.txt: {block: (full_base, small_base, [(reg, offset, [field dict])])}."""
    blocks = {}
    cur = reg = None
    with open(_TABLE) as f:
        for lineno, line in enumerate(f, 1):
            text = line.split("#", 1)[0].rstrip()
            if not text:
                continue
            where = f"{_TABLE}:{lineno}"
            words = text.split()
            if text.startswith("block "):
                kv = dict(w.split("=", 1) for w in words[2:])
                cur = blocks[words[1]] = (int(kv["full"], 0), int(kv["small"], 0), [])
            elif text.startswith("    "):
                name, bits, access, reset, *opts = words
                if access not in ACCESSES:
                    raise SyntaxError(f"{where}: unknown access {access!r}")
                fd = {"name": name, "bits": _bits(bits), "access": access,
                      "reset": int(reset, 0), "small": None, "small_reset": None, "enum": ()}
                for o in opts:
                    k, _, v = o.partition("=")
                    if k == "small":
                        fd["small"] = _bits(v)
                    elif k == "small_reset":
                        fd["small_reset"] = int(v, 0)
                    elif k == "enum":
                        fd["enum"] = tuple((n, int(x, 0)) for n, x in
                                           (e.split(":") for e in v.split(",")))
                    else:
                        raise SyntaxError(f"{where}: unknown option {o!r}")
                reg[2].append(fd)
            elif text.startswith("  "):
                reg = (words[0], int(words[1], 0), [])
                cur[2].append(reg)
            else:
                raise SyntaxError(f"{where}: cannot parse {text!r}")
    return blocks


def _build_block(name, layout, entry):
    full_base, small_base, regs = entry
    out = []
    for rname, offset, fds in regs:
        fl = []
        for fd in fds:
            msb, lsb = fd["small"] if layout == "small" and fd["small"] else fd["bits"]
            reset = fd["small_reset"] if layout == "small" and fd["small_reset"] is not None \
                else fd["reset"]
            fl.append(Field(fd["name"], msb, lsb, fd["access"], reset, fd["enum"]))
        out.append(Register(rname, offset, tuple(fl)))
    return Block(name, small_base if layout == "small" else full_base, tuple(out))


class RegisterMap:
    """The blocks of one build, in its register layout, with name and address lookup."""

    def __init__(self, blocks, layout):
        self.layout = layout
        self.blocks = dict(blocks)
        self._by_word = {}
        for b in self.blocks.values():
            for r in b.registers:
                self._by_word[(b.base + r.offset) >> 2] = (b, r)

    def __getitem__(self, name) -> Block:
        try:
            return self.blocks[name]
        except KeyError:
            raise RegisterError(f"this build has no block {name!r}") from None

    def __contains__(self, name):
        return name in self.blocks

    def __iter__(self):
        return iter(self.blocks.values())

    def at_word(self, word_addr):
        """(block, register) at a CSB word address, or None for a hole."""
        return self._by_word.get(word_addr)

    def lookup(self, name: str):
        """Resolve ``NVDLA_SDP.D_OP_ENABLE_0`` / ``SDP.D_OP_ENABLE`` to (block, register)."""
        blk, _, reg = name.partition(".")
        if not reg:
            raise RegisterError(f"register name {name!r} is not BLOCK.REGISTER")
        blk = blk[len("NVDLA_"):] if blk.startswith("NVDLA_") else blk
        block = self[blk]
        if reg not in block and reg.endswith("_0") and reg[:-2] in block:
            reg = reg[:-2]
        return block, block[reg]

    def address(self, name: str) -> int:
        """Byte address of a register given by name."""
        block, reg = self.lookup(name)
        return block.base + reg.offset


@functools.lru_cache(maxsize=None)
def register_map(cfg) -> RegisterMap:
    """The register map of a build: its layout, and only the blocks it has."""
    from .cfgrom import cfgrom_block  # noqa: PLC0415 (cfgrom needs the table too)
    layout = cfg.register_layout
    present = {"small_layout": layout == "small", "sramif": cfg.sramif, "bdma": cfg.bdma,
               "pdp": cfg.pdp, "cdp": cfg.cdp, "rubik": cfg.rubik}
    blocks = {}
    if layout == "small":
        blocks["CFGROM"] = cfgrom_block(cfg)
    for name, entry in raw_table().items():
        unit = UNIT_BLOCKS[name]
        if unit is None or present[unit]:
            blocks[name] = _build_block(name, layout, entry)
    return RegisterMap(sorted(blocks.items(), key=lambda kv: kv[1].base), layout)


def all_blocks(layout):
    """Every block of the table in a layout, present in the build or not (for docs/tests)."""
    return {name: _build_block(name, layout, entry) for name, entry in raw_table().items()}


def reset_readback(block, reg) -> int:
    """What a CSB read of ``reg`` returns right after reset."""
    value = 0
    for f in reg.fields:
        if f.access in ("rw", "const"):
            value |= f.reset << f.lsb
        elif f.access == "ro":
            value |= STATIC_STATUS.get((block.name, reg.name, f.name), 0) << f.lsb
    return value
