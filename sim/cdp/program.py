"""CDP and CDP_RDMA register programs: decode and the rules of a program the hardware can run.

:func:`decode` turns the active register groups of CDP_RDMA and CDP (with the single-group LUT
registers of CDP) into a :class:`CdpProgram`; a program the hardware cannot run raises
:class:`CdpProgramError` whose message names the register field and the rule:

- ``CDP_RDMA.D_DATA_FORMAT.INPUT_DATA`` / ``CDP.D_DATA_FORMAT.INPUT_DATA_TYPE``: a precision of
  the build (``cfg.data_types``), reserved encodings rejected; the two must agree (CDP_RDMA
  reads the cube, CDP computes and writes it in the same precision);
- cube sizes: width, height and channel come from CDP_RDMA only (CDP has none); every field
  value is a legal size (1..8192);
- addresses and strides (``D_SRC_*`` of CDP_RDMA, ``D_DST_*`` of CDP): multiples of the memory
  atom, inside the build's address space; the output lines of one surface must not overlap
  (``D_DST_LINE_STRIDE`` >= W x atom when H > 1), nor the surfaces
  (``D_DST_SURFACE_STRIDE`` >= (H-1) x line stride + W x atom when there are several);
- ``*_RAM_TYPE=CV`` needs a build with an SRAMIF;
- LUT index ranges: ``S_LUT_INFO.LUT_LE_INDEX_SELECT`` and ``LUT_LO_INDEX_SELECT`` (signed 8
  bits) must lie in -32..31 (NVDLA's C model reads only 6 of their bits on int8 layers, 7 on
  int16: outside that range the hardware's interpretation is not established), and in exponent
  mode ``LUT_LE_INDEX_OFFSET`` (signed 8 bits) must be at most 39 (a square sum has at most 39
  significant bits: a larger offset makes every element underflow and NVDLA's underflow bias
  2^offset leaves the 64-bit range).

Every 2-bit ``D_LRN_CFG.NORMALZ_LEN`` encoding is a window the hardware has (3, 5, 7, 9).
FP16 layers are legal on builds with fp16 (:func:`sim.cdp.cdp.compute_fp16`). The LUT rules
above are the integer modes': in fp16 mode NVDLA's LUT reads ``LUT_LE_INDEX_SELECT``,
``LUT_LO_INDEX_SELECT`` and ``LUT_LE_INDEX_OFFSET`` at their full signed 8 bits (an index out of
range is an underflow or overflow, and the bias 2^offset an fp32), so every value is legal.
There is no precision conversion (the data-format spec: an LRN layer converts none; fp16 in
is fp16 out), which the equal-precision rule above enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lut import LutParams
from ..sdp.sdp import sign_extend

__all__ = ["CdpProgramError", "CdpProgram", "CdpLutParams", "decode", "check_core_limits",
           "INT8", "INT16", "FP16", "PRECISION_NAMES", "WINDOWS"]

INT8, INT16, FP16 = 0, 1, 2
PRECISION_NAMES = {INT8: "INT8", INT16: "INT16", FP16: "FP16"}
_TYPES = {INT8: "int8", INT16: "int16", FP16: "fp16"}
BYTES = {INT8: 1, INT16: 2, FP16: 2}
WINDOWS = (3, 5, 7, 9)                  #: D_LRN_CFG.NORMALZ_LEN 0..3
INDEX_SELECT_RANGE = (-32, 31)
LE_INDEX_OFFSET_MAX = 39


class CdpProgramError(ValueError):
    """A CDP / CDP_RDMA register program the hardware cannot run; the message names the
    register field and the rule."""


def _err(where: str, rule: str):
    raise CdpProgramError(f"{where}: {rule}")


class CdpLutParams(LutParams):
    """The CDP LUT configuration (single-group CDP registers, signed fields sign-extended):
    :class:`sim.lut.LutParams` with the table bounds signed 38 bits (HIGH [5:0] : LOW
    [31:0])."""

    @staticmethod
    def _bound(view, name: str) -> int:
        low = view[f"S_LUT_{name}_LOW"][f"LUT_{name}_LOW"]
        high = view[f"S_LUT_{name}_HIGH"][f"LUT_{name}_HIGH"]
        return sign_extend((high << 32) | low, 38)


@dataclass
class CdpProgram:
    """One CDP layer, decoded."""
    precision: int                     #: INT8 / INT16 / FP16
    width: int
    height: int
    channel: int
    src: tuple                         #: (ram_type, base, line_stride, surface_stride) bytes
    dst: tuple
    window: int = 3                    #: 3 / 5 / 7 / 9 channels
    sqsum_bypass: bool = False
    mul_bypass: bool = False
    datin_offset: int = 0              #: raw 16-bit field (the converter takes its low bits)
    datin_scale: int = 1               #: signed 16 bits
    datin_shift: int = 0               #: 0..31
    datout_offset: int = 0             #: raw 32-bit field
    datout_scale: int = 1              #: signed 16 bits
    datout_shift: int = 0              #: 0..63
    nan_to_zero: bool = False          #: D_NAN_FLUSH_TO_ZERO (fp16 layers)
    lut: CdpLutParams = field(default_factory=CdpLutParams)

    @property
    def bytes_per_element(self) -> int:
        return BYTES[self.precision]


def _byte_field(view, reg, fld):
    """An address or stride field in bytes (full-layout fields drop the low bits)."""
    f = view.block[reg][fld]
    return view[reg][fld] << f.lsb


def _address(cfg, view, name):
    low = _byte_field(view, f"D_{name}_BASE_ADDR_LOW", f"{name}_BASE_ADDR_LOW")
    high = view[f"D_{name}_BASE_ADDR_HIGH"][f"{name}_BASE_ADDR_HIGH"]
    return low | (high << 32) if cfg.address_width > 32 else low


def _precision(cfg, view, block, reg, fld):
    v = view[reg][fld]
    if v not in PRECISION_NAMES:
        _err(f"{block}.{reg}.{fld}={v}", "reserved value (valid: INT8=0, INT16=1, FP16=2)")
    if _TYPES[v] not in cfg.data_types:
        _err(f"{block}.{reg}.{fld}={PRECISION_NAMES[v]}",
             f"this build has no {_TYPES[v]} (data types: {', '.join(cfg.data_types)})")
    return v


def _surface(cfg, view, block, name, W, H, S, check_overlap):
    """(ram, base, line stride, surface stride) of the SRC/DST surface, checked."""
    ram = view[f"D_{name}_DMA_CFG"][f"{name}_RAM_TYPE"]
    if ram == 0 and not cfg.sramif:
        _err(f"{block}.D_{name}_DMA_CFG.{name}_RAM_TYPE=CV",
             "this build has no SRAMIF (sramif=False); use MC")
    base = _address(cfg, view, name)
    line = _byte_field(view, f"D_{name}_LINE_STRIDE", f"{name}_LINE_STRIDE")
    surf = _byte_field(view, f"D_{name}_SURFACE_STRIDE", f"{name}_SURFACE_STRIDE")
    atom = cfg.memory_atom
    for reg, value in ((f"D_{name}_BASE_ADDR_LOW", base), (f"D_{name}_LINE_STRIDE", line),
                       (f"D_{name}_SURFACE_STRIDE", surf)):
        if value % atom:
            _err(f"{block}.{reg}={value:#x}",
                 f"must be a multiple of the {atom}-byte memory atom")
    if check_overlap:
        if H > 1 and line < W * atom:
            _err(f"{block}.D_{name}_LINE_STRIDE={line:#x}",
                 f"must be at least W x atom = {W * atom:#x} bytes (lines of the output "
                 "would overlap)")
        one = (H - 1) * line + W * atom
        if S > 1 and surf < one:
            _err(f"{block}.D_{name}_SURFACE_STRIDE={surf:#x}",
                 f"must be at least (H-1) x line stride + W x atom = {one:#x} bytes "
                 "(surfaces of the output would overlap)")
    end = base + (S - 1) * surf + (H - 1) * line + W * atom
    if end > (1 << cfg.address_width):
        _err(f"{block}.D_{name}_BASE_ADDR_LOW={base:#x}",
             f"the cube ends at {end:#x}, outside the {cfg.address_width}-bit address space")
    return ram, base, line, surf


def decode(cfg, rdma, cdp) -> CdpProgram:
    """Decode and check the CDP layer of the GroupViews ``rdma`` (CDP_RDMA) and ``cdp``."""
    R, C_ = "CDP_RDMA", "CDP"
    prec = _precision(cfg, rdma, R, "D_DATA_FORMAT", "INPUT_DATA")
    cprec = cdp.D_DATA_FORMAT.INPUT_DATA_TYPE
    if cprec != prec:
        name = PRECISION_NAMES.get(cprec, str(cprec))
        _err(f"{C_}.D_DATA_FORMAT.INPUT_DATA_TYPE={name}",
             f"must equal {R}.D_DATA_FORMAT.INPUT_DATA={PRECISION_NAMES[prec]}")
    W = rdma.D_DATA_CUBE_WIDTH.WIDTH + 1
    H = rdma.D_DATA_CUBE_HEIGHT.HEIGHT + 1
    C = rdma.D_DATA_CUBE_CHANNEL.CHANNEL + 1
    S = -(-C // (cfg.memory_atom // BYTES[prec]))
    src = _surface(cfg, rdma, R, "SRC", W, H, S, check_overlap=False)
    dst = _surface(cfg, cdp, C_, "DST", W, H, S, check_overlap=True)

    lut = CdpLutParams.from_view(cdp)
    lo_, hi_ = INDEX_SELECT_RANGE
    integer = prec != FP16                   # fp16 mode reads the full 8-bit fields
    for fld, v, used in (("LUT_LE_INDEX_SELECT", lut.le_index_select, integer and lut.le_linear),
                         ("LUT_LO_INDEX_SELECT", lut.lo_index_select, integer)):
        if used and not lo_ <= v <= hi_:
            _err(f"{C_}.S_LUT_INFO.{fld}={v}",
                 f"index select must lie in {lo_}..{hi_} (NVDLA reads it as a 6-bit signed "
                 "value on int8 layers)")
    if integer and not lut.le_linear and lut.le_index_offset > LE_INDEX_OFFSET_MAX:
        _err(f"{C_}.S_LUT_INFO.LUT_LE_INDEX_OFFSET={lut.le_index_offset}",
             f"must be at most {LE_INDEX_OFFSET_MAX} in exponent mode (the square sum has "
             "at most 39 significant bits)")
    fb = cdp.D_FUNC_BYPASS
    return CdpProgram(
        precision=prec, width=W, height=H, channel=C, src=src, dst=dst,
        window=WINDOWS[cdp.D_LRN_CFG.NORMALZ_LEN],
        sqsum_bypass=bool(fb.SQSUM_BYPASS), mul_bypass=bool(fb.MUL_BYPASS),
        datin_offset=cdp.D_DATIN_OFFSET.DATIN_OFFSET,
        datin_scale=sign_extend(cdp.D_DATIN_SCALE.DATIN_SCALE, 16),
        datin_shift=cdp.D_DATIN_SHIFTER.DATIN_SHIFTER,
        datout_offset=cdp.D_DATOUT_OFFSET.DATOUT_OFFSET,
        datout_scale=sign_extend(cdp.D_DATOUT_SCALE.DATOUT_SCALE, 16),
        datout_shift=cdp.D_DATOUT_SHIFTER.DATOUT_SHIFTER,
        nan_to_zero=bool(cdp.D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO),
        lut=lut)


def check_core_limits(cfg, p: CdpProgram) -> None:
    """Raise :class:`CdpProgramError` when the decoded layer ``p`` is beyond this core's CDP
    RTL (:mod:`hw.cdp`), which would reject it like an invalid program though NVDLA v1 runs
    it. None remain: the RTL runs every layer :func:`decode` accepts (int8, int16 and fp16 on
    builds with them); kept so tests and generators can ask."""
