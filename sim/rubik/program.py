"""Decode and check one Rubik (RBK) register group.

:func:`decode` turns the consumer group's registers into a :class:`RubikProgram` (byte
addresses and strides, element counts) or raises :class:`RubikProgramError` naming the
register field and the rule. The rules are those the NVDLA v1 hardware needs to run the layer
to completion with a defined result (see :mod:`sim.rubik` for the three modes):

- ``D_MISC_CFG.RUBIK_MODE`` is CONTRACT (0), SPLIT (1) or MERGE (2); 3 is not defined.
- ``D_MISC_CFG.IN_PRECISION`` is INT8 (0), INT16 (1) or FP16 (2), and one the build supports
  (``cfg.data_types``); 3 is not defined.
- ``D_DAIN_RAM_TYPE`` / ``D_DAOUT_RAM_TYPE`` = CV (0) need a build with an SRAMIF.
- Split and merge: ``D_DATAOUT_SIZE_1.DATAOUT_CHANNEL`` equals
  ``D_DATAIN_SIZE_1.DATAIN_CHANNEL`` (the hardware's read side counts the input channels, its
  write side the output channels: different counts never finish).
- Contract: ``D_CONTRACT_STRIDE_1`` equals ``(DECONV_Y_STRIDE + 1) * D_DAOUT_LINE_STRIDE``
  (the hardware steps the output by line stride only; the register is the spec's check);
  with ``DECONV_X_STRIDE < 8`` a whole output line, ``width * (DECONV_X_STRIDE + 1)`` atoms,
  is one write request of at most 8192 atoms (13-bit size).
- The output lines of one surface / plane do not overlap (line stride at least the line's
  bytes when there is more than one line) and neither do the surfaces / planes (surface or
  planar stride at least the extent of one surface / plane when there is more than one).
- Input and output regions do not overlap when they are in the same memory (the result would
  depend on the order of reads and writes).
- Every byte read or written lies inside the build's address space (``D_*_ADDR_HIGH``
  supplies address bits 63:32).

Addresses and strides are held in 32-byte units by the registers (bits 4:0 are not stored),
so they are always 32-byte aligned. ``D_DATAIN_SIZE_1.DATAIN_CHANNEL``,
``D_DAIN_PLANAR_STRIDE`` and ``D_DAOUT_PLANAR_STRIDE`` are not used in contract mode,
``D_CONTRACT_STRIDE_0/1`` and ``D_DECONV_STRIDE`` not in split / merge.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RubikProgramError", "RubikProgram", "decode", "CONTRACT", "SPLIT", "MERGE",
           "MODES", "PRECISIONS", "RAM_CV", "RAM_MC", "MAX_CONTRACT_WRITE"]

from arch.rubik import (CONTRACT, CONTRACT_WRITE_MAX_SX, ELEMENT_BYTES, MAX_CONTRACT_WRITE,
                        MERGE, MODES, PRECISIONS, RAM_CV, RAM_MC, SPLIT)

_R = "RBK"


class RubikProgramError(ValueError):
    """An RBK register program the hardware cannot run; the message names the register field
    and the rule."""


def _err(where: str, rule: str):
    raise RubikProgramError(f"{_R}.{where}: {rule}")


@dataclass(frozen=True)
class RubikProgram:
    """One Rubik layer. Addresses and strides in bytes; sizes are element counts."""
    mode: int
    precision: int
    atom: int                   #: bytes of one feature atom (the build's memory atom)
    width: int
    height: int
    in_channel: int
    out_channel: int
    sx: int                     #: deconvolution x stride (DECONV_X_STRIDE + 1)
    sy: int
    src_ram: int
    src: int
    src_line: int
    src_surf: int
    src_planar: int
    contract0: int              #: CONTRACT_STRIDE_0: input offset of each deconvolution x step
    contract1: int
    dst_ram: int
    dst: int
    dst_line: int
    dst_surf: int
    dst_planar: int

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.precision]

    @property
    def per_atom(self) -> int:
        """Channels in one atom (elements per surface)."""
        return self.atom // self.element_bytes

    @property
    def channels(self) -> int:
        """Channels of the feature cube the layer reads (split) or writes (merge, contract)."""
        return self.out_channel if self.mode == CONTRACT else self.in_channel

    @property
    def surfaces(self) -> int:
        return -(-self.channels // self.per_atom)

    @property
    def plane_line_bytes(self) -> int:
        """Bytes of one planar line as read (merge) or written (split): the width's bytes
        rounded up to whole atoms (split writes the rounding as zeros)."""
        return -(-self.width * self.element_bytes // self.atom) * self.atom

    # -- regions (for the overlap and address-space rules) -------------------------------
    def src_extent(self):
        """``(lowest, one past highest)`` byte address the layer reads."""
        W, H, A = self.width, self.height, self.atom
        if self.mode == CONTRACT:
            hi = ((self.surfaces - 1) * self.src_surf + (H - 1) * self.src_line
                  + (self.sx * self.sy - 1) * self.contract0 + W * A)
        elif self.mode == SPLIT:
            hi = (self.surfaces - 1) * self.src_surf + (H - 1) * self.src_line + W * A
        else:
            hi = ((self.channels - 1) * self.src_planar + (H - 1) * self.src_line
                  + self.plane_line_bytes)
        return self.src, self.src + hi

    def dst_line_bytes(self) -> int:
        if self.mode == CONTRACT:
            return self.width * self.sx * self.atom
        if self.mode == SPLIT:
            return self.plane_line_bytes
        return self.width * self.atom

    def dst_lines(self) -> int:
        return self.height * (self.sy if self.mode == CONTRACT else 1)

    def dst_extent(self):
        """``(lowest, one past highest)`` byte address the layer writes."""
        one = (self.dst_lines() - 1) * self.dst_line + self.dst_line_bytes()
        if self.mode == SPLIT:
            hi = (self.channels - 1) * self.dst_planar + one
        else:
            hi = (self.surfaces - 1) * self.dst_surf + one
        return self.dst, self.dst + hi


def _bytes(view, reg, fld):
    """An address or stride field in bytes (the field drops the low address bits)."""
    f = view.block[reg][fld]
    return view[reg][fld] << f.lsb


def decode(cfg, view) -> RubikProgram:
    """Check the RBK register group ``view`` (a :class:`sim.regs.GroupView`) for build
    ``cfg`` and return its program, or raise :class:`RubikProgramError`."""
    if not cfg.rubik:
        raise RubikProgramError(f"{_R}: this build has no Rubik (rubik=False)")
    misc = view.D_MISC_CFG
    mode = misc.RUBIK_MODE
    if mode not in MODES:
        _err(f"D_MISC_CFG.RUBIK_MODE={mode}", "not a defined mode (CONTRACT=0, SPLIT=1, "
             "MERGE=2)")
    prec = misc.IN_PRECISION
    if prec not in PRECISIONS:
        _err(f"D_MISC_CFG.IN_PRECISION={prec}", "not a defined precision (INT8=0, INT16=1, "
             "FP16=2)")
    if PRECISIONS[prec] not in cfg.data_types:
        _err(f"D_MISC_CFG.IN_PRECISION={PRECISIONS[prec].upper()}",
             f"this build supports {'/'.join(sorted(cfg.data_types))} only")
    rams = {}
    for reg, fld in (("D_DAIN_RAM_TYPE", "DATAIN_RAM_TYPE"),
                     ("D_DAOUT_RAM_TYPE", "DATAOUT_RAM_TYPE")):
        ram = view[reg][fld]
        if ram == RAM_CV and not cfg.sramif:
            _err(f"{reg}.{fld}=CV", "this build has no SRAMIF (CVIF); use MC")
        rams[reg] = ram

    size0 = view.D_DATAIN_SIZE_0
    src = (view.D_DAIN_ADDR_HIGH.DAIN_ADDR_HIGH << 32) | _bytes(view, "D_DAIN_ADDR_LOW",
                                                                "DAIN_ADDR_LOW")
    dst = (view.D_DAOUT_ADDR_HIGH.DAOUT_ADDR_HIGH << 32) | _bytes(view, "D_DAOUT_ADDR_LOW",
                                                                  "DAOUT_ADDR_LOW")
    dcs = view.D_DECONV_STRIDE
    p = RubikProgram(
        mode=mode, precision=prec, atom=cfg.memory_atom,
        width=size0.DATAIN_WIDTH + 1, height=size0.DATAIN_HEIGHT + 1,
        in_channel=view.D_DATAIN_SIZE_1.DATAIN_CHANNEL + 1,
        out_channel=view.D_DATAOUT_SIZE_1.DATAOUT_CHANNEL + 1,
        sx=dcs.DECONV_X_STRIDE + 1, sy=dcs.DECONV_Y_STRIDE + 1,
        src_ram=rams["D_DAIN_RAM_TYPE"], src=src,
        src_line=_bytes(view, "D_DAIN_LINE_STRIDE", "DAIN_LINE_STRIDE"),
        src_surf=_bytes(view, "D_DAIN_SURF_STRIDE", "DAIN_SURF_STRIDE"),
        src_planar=_bytes(view, "D_DAIN_PLANAR_STRIDE", "DAIN_PLANAR_STRIDE"),
        contract0=_bytes(view, "D_CONTRACT_STRIDE_0", "CONTRACT_STRIDE_0"),
        contract1=_bytes(view, "D_CONTRACT_STRIDE_1", "CONTRACT_STRIDE_1"),
        dst_ram=rams["D_DAOUT_RAM_TYPE"], dst=dst,
        dst_line=_bytes(view, "D_DAOUT_LINE_STRIDE", "DAOUT_LINE_STRIDE"),
        dst_surf=_bytes(view, "D_DAOUT_SURF_STRIDE", "DAOUT_SURF_STRIDE"),
        dst_planar=_bytes(view, "D_DAOUT_PLANAR_STRIDE", "DAOUT_PLANAR_STRIDE"))
    check(cfg, p)
    return p


def check(cfg, p: RubikProgram) -> None:
    """The rules of the module docstring on a decoded program."""
    if p.mode in (SPLIT, MERGE) and p.out_channel != p.in_channel:
        _err(f"D_DATAOUT_SIZE_1.DATAOUT_CHANNEL={p.out_channel - 1}",
             f"must equal D_DATAIN_SIZE_1.DATAIN_CHANNEL={p.in_channel - 1} in "
             f"{MODES[p.mode]} mode (the read and write sides must count the same channels)")
    if p.mode == CONTRACT:
        if p.contract1 != p.sy * p.dst_line:
            _err(f"D_CONTRACT_STRIDE_1.CONTRACT_STRIDE_1={p.contract1:#x}",
                 f"must equal (D_DECONV_STRIDE.DECONV_Y_STRIDE + 1) * "
                 f"D_DAOUT_LINE_STRIDE = {p.sy} * {p.dst_line:#x} = {p.sy * p.dst_line:#x} "
                 "(the output advances one line per deconvolution y step)")
        if p.sx <= CONTRACT_WRITE_MAX_SX and p.width * p.sx > MAX_CONTRACT_WRITE:
            _err(f"D_DATAIN_SIZE_0.DATAIN_WIDTH={p.width - 1}",
                 f"width * (DECONV_X_STRIDE + 1) = {p.width * p.sx} atoms: an output line is "
                 f"one write of at most {MAX_CONTRACT_WRITE} atoms when DECONV_X_STRIDE < 8")
    lines, line_bytes = p.dst_lines(), p.dst_line_bytes()
    if lines > 1 and p.dst_line < line_bytes:
        _err(f"D_DAOUT_LINE_STRIDE.DAOUT_LINE_STRIDE={p.dst_line:#x}",
             f"output lines of {line_bytes:#x} bytes would overlap (the line stride must be "
             "at least that)")
    extent = (lines - 1) * p.dst_line + line_bytes
    if p.mode == SPLIT:
        if p.channels > 1 and p.dst_planar < extent:
            _err(f"D_DAOUT_PLANAR_STRIDE.DAOUT_PLANAR_STRIDE={p.dst_planar:#x}",
                 f"output planes of {extent:#x} bytes would overlap (the planar stride must "
                 "be at least that)")
    elif p.surfaces > 1 and p.dst_surf < extent:
        _err(f"D_DAOUT_SURF_STRIDE.DAOUT_SURF_STRIDE={p.dst_surf:#x}",
             f"output surfaces of {extent:#x} bytes would overlap (the surface stride must be "
             "at least that)")
    limit = 1 << cfg.address_width
    for side, (lo, hi), reg in (("input", p.src_extent(), "D_DAIN_ADDR"),
                                ("output", p.dst_extent(), "D_DAOUT_ADDR")):
        if hi > limit:
            high = "HIGH.DAIN_ADDR_HIGH" if side == "input" else "HIGH.DAOUT_ADDR_HIGH"
            _err(f"{reg}_{high}/LOW", f"the {side} ends at {hi:#x}, beyond the "
                 f"{cfg.address_width}-bit address space (addresses do not wrap)")
    if p.src_ram == p.dst_ram:
        (slo, shi), (dlo, dhi) = p.src_extent(), p.dst_extent()
        if slo < dhi and dlo < shi:
            ram = "MC" if p.src_ram == RAM_MC else "CV"
            _err("D_DAOUT_ADDR_LOW.DAOUT_ADDR_LOW",
                 f"the output [{dlo:#x}, {dhi:#x}) overlaps the input [{slo:#x}, {shi:#x}) in "
                 f"{ram} memory; the result would depend on the order of reads and writes")
