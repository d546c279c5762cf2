"""The DMA client interface: how units talk to the memory interfaces (spec: Memory interface,
MCIF / CVIF; data-format spec: memory atoms).

Every unit that touches memory does it through read and write *client ports* of this module's
signatures, connected to :class:`hw.mem.dmaif.DmaInterfaces` (the MCIF on the DBBIF and, when the
build has one, the CVIF on the SRAMIF). Units normally do not drive a port by hand: the cube
reader and writer of :mod:`hw.mem.cube` do it for them.

Units of transfer
    *atom*: the build's memory atom (``cfg.memory_atom``, 8 or 32 bytes), the smallest unit a
    client addresses; every client address is atom aligned.
    *word*: ``max(atom, DBBIF bytes, SRAMIF bytes)``; ``atoms_per_word`` atoms side by side in
    *memory position*: lane ``i`` of a word holds the atom at ``word_address + i * atom``.
    A bus narrower than a word carries each word as several beats; that is the interface's
    business, not the client's.

Read port (client side: ``Out(DmaReadPort(geom))``)
    ``req``  stream of :func:`read_request` -- ``addr`` (atom aligned byte address),
             ``atoms`` (count - 1), ``ram_type`` (register enum: 0 = CV/SRAMIF, 1 = MC/DBBIF).
    ``resp`` stream of :func:`word_layout` -- one word per memory word the request touches, in
             request order (also across the two interfaces), ``mask`` marking the request's
             atoms in it. A client may hold ``resp.ready`` low as long as it likes; the
             interface never lets that stall another client.

Write port (client side: ``Out(DmaWritePort(geom))``)
    ``req``  as for reads.
    ``dat``  one word per memory word the request touches, in request order, atoms in memory
             position, ``mask`` exactly the request's atoms in that word (it becomes the AXI
             byte strobes, so nothing outside the request is ever written).
    ``done`` number of this client's requests completed in this cycle (every byte written and
             acknowledged by the bus), 0..2.

Cubes (the user side of :mod:`hw.mem.cube`)
    :func:`cube_layout` describes a transfer: ``batches`` x ``surfaces`` x ``lines`` lines of
    ``line_atoms`` atoms (all counts minus one, like the registers), line ``h`` of surface
    ``s`` of batch ``b`` starting at ``base + b*batch_stride + s*surface_stride +
    h*line_stride`` (byte strides, atom aligned), in that order (batch outermost, then
    surface, then line). A feature cube of width W is ``line_atoms = W - 1``; a packed
    1x1xC cube is one line of all its atoms.
    :func:`atom_words_layout` carries the atoms themselves: up to ``atoms_per_word`` atoms
    packed from lane 0 (``mask`` = valid lanes, always contiguous from lane 0), every line
    starting in a new transfer; ``last_line`` marks a line's final transfer, ``last`` the
    cube's.
"""

from __future__ import annotations

from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RAM_CV", "RAM_MC", "DmaGeometry", "read_request", "word_layout", "DmaReadPort",
           "DmaWritePort", "REQUEST_ATOMS_BITS", "cube_layout", "atom_words_layout"]

RAM_CV, RAM_MC = 0, 1          #: register enum of every *_RAM_TYPE field
REQUEST_ATOMS_BITS = 16        #: ``atoms`` field width: a request moves 1..65536 atoms


class DmaGeometry:
    """Widths of the DMA client interface of one build (derived from the config only)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.atom_bytes = cfg.memory_atom
        buses = [cfg.dbbif_width // 8] + ([cfg.sramif_width // 8] if cfg.sramif else [])
        self.word_bytes = max([self.atom_bytes] + buses)
        self.atoms_per_word = self.word_bytes // self.atom_bytes
        self.addr_width = cfg.address_width
        self.atom_shift = self.atom_bytes.bit_length() - 1
        self.word_shift = self.word_bytes.bit_length() - 1

    @property
    def word_bits(self) -> int:
        return self.word_bytes * 8

    @property
    def atom_bits(self) -> int:
        return self.atom_bytes * 8

    def __eq__(self, other):
        return isinstance(other, DmaGeometry) and (
            self.atom_bytes, self.word_bytes, self.addr_width) == (
            other.atom_bytes, other.word_bytes, other.addr_width)

    def __hash__(self):
        return hash((self.atom_bytes, self.word_bytes, self.addr_width))

    def __repr__(self):
        return (f"DmaGeometry(atom={self.atom_bytes}B, word={self.word_bytes}B, "
                f"addr={self.addr_width}b)")


def read_request(geom: DmaGeometry) -> data.StructLayout:
    """A read or write request: ``atoms + 1`` atoms from ``addr`` in memory ``ram_type``."""
    return data.StructLayout({"addr": geom.addr_width, "atoms": REQUEST_ATOMS_BITS,
                              "ram_type": 1})


def word_layout(geom: DmaGeometry) -> data.StructLayout:
    """One word of data with its atom-valid mask (lane i = atom i of the word)."""
    return data.StructLayout({"data": geom.word_bits, "mask": geom.atoms_per_word})


def cube_layout(geom: DmaGeometry) -> data.StructLayout:
    """A cube transfer command for :class:`hw.mem.cube.CubeReader` /
    :class:`hw.mem.cube.CubeWriter`."""
    aw = geom.addr_width
    return data.StructLayout({
        "base": aw, "ram_type": 1,
        "line_atoms": REQUEST_ATOMS_BITS, "lines": 13, "surfaces": 13, "batches": 5,
        "line_stride": aw, "surface_stride": aw, "batch_stride": aw,
    })


def atom_words_layout(geom: DmaGeometry) -> data.StructLayout:
    """Atoms of a cube, packed from lane 0 (see the module docstring)."""
    return data.StructLayout({"data": geom.word_bits, "mask": geom.atoms_per_word,
                              "last_line": 1, "last": 1})


class DmaReadPort(wiring.Signature):
    """A read client port, seen from the client (the unit)."""

    def __init__(self, geom: DmaGeometry):
        self.geom = geom
        super().__init__({
            "req": Out(stream.Signature(read_request(geom))),
            "resp": In(stream.Signature(word_layout(geom))),
        })

    def __eq__(self, other):
        return isinstance(other, DmaReadPort) and self.geom == other.geom

    def __hash__(self):
        return hash(("DmaReadPort", self.geom))


class DmaWritePort(wiring.Signature):
    """A write client port, seen from the client (the unit)."""

    def __init__(self, geom: DmaGeometry):
        self.geom = geom
        super().__init__({
            "req": Out(stream.Signature(read_request(geom))),
            "dat": Out(stream.Signature(word_layout(geom))),
            "done": In(2),
        })

    def __eq__(self, other):
        return isinstance(other, DmaWritePort) and self.geom == other.geom

    def __hash__(self):
        return hash(("DmaWritePort", self.geom))
