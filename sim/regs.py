"""The golden model's register view: field values of one register group, by name.

Built from the same table as the hardware (``arch.registers``). A unit model receives a
``GroupView`` of its block's active D group (plus single-group registers) and reads fields as
attributes: ``view.D_DATA_CUBE_WIDTH.WIDTH``; ``view["D_DATA_CUBE_WIDTH"]["WIDTH"]`` works too.
Enum values compare as integers; ``view.enum("D_FEATURE_MODE_CFG", "FLYING_MODE")`` gives the
enumerator name.
"""

from __future__ import annotations

__all__ = ["GroupView", "RegView"]


class RegView:
    """Fields of one register word."""

    def __init__(self, reg, word):
        self._reg, self._word = reg, word

    @property
    def word(self):
        return self._word

    def __getitem__(self, name):
        f = self._reg[name]
        return (self._word >> f.lsb) & ((1 << f.width) - 1)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __repr__(self):
        return f"{self._reg.name}({self._reg.unpack(self._word)})"


class GroupView:
    """Registers of a block as field views; ``words`` maps register name -> 32-bit word."""

    def __init__(self, block, words):
        self._block, self._words = block, words

    @property
    def block(self):
        return self._block

    @property
    def words(self) -> dict:
        """The register words given (register name -> 32-bit word; reset values not added)."""
        return self._words

    def __getitem__(self, name):
        reg = self._block[name]
        return RegView(reg, self._words.get(name, reg.reset))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def enum(self, reg, field):
        f = self._block[reg][field]
        v = self[reg][field]
        for n, x in f.enum:
            if x == v:
                return n
        return v

    @classmethod
    def from_fields(cls, block, **regs):
        """Test helper: ``GroupView.from_fields(sdp, D_DATA_CUBE_WIDTH={"WIDTH": 7})``."""
        return cls(block, {name: block[name].pack(**vals) for name, vals in regs.items()})
