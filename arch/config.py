"""Build configuration: every hardware parameter of an NVDLA build in one frozen object.

Follows the "Hardware Parameters" section of the NVDLA architectural spec (feature selection
and design sizing) plus the interface parameters of "External Interfaces" (DBBIF/SRAMIF
width, address width, burst length, outstanding requests) and the register layout.

    cfg = NvdlaConfig.preset("nv_small")
    cfg = load_config("nv_small")                 # preset name
    cfg = load_config("my_build.toml")           # TOML: base = "nv_large" + overrides

Every rule is checked at construction; a violation raises :class:`ConfigError` naming the
parameter and the rule.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields, replace

__all__ = ["ConfigError", "NvdlaConfig", "PRESETS", "load_config", "rtl_winograd",
           "rtl_winograd_fp16", "DATA_TYPES",
           "PACKED_IMAGE_FORMATS", "SEMI_PLANAR_IMAGE_FORMATS"]

DATA_TYPES = ("int8", "int16", "fp16")

# Pixel formats a build may accept for image input, in CFGROM bit order.
PACKED_IMAGE_FORMATS = (
    "R8", "R10", "R12", "R16", "R16_I", "R16_F", "A16B16G16R16", "X16B16G16R16",
    "A16B16G16R16_F", "A16Y16U16V16", "V16U16Y16A16", "A16Y16U16V16_F", "A8B8G8R8",
    "A8R8G8B8", "B8G8R8A8", "R8G8B8A8", "X8B8G8R8", "X8R8G8B8", "B8G8R8X8", "R8G8B8X8",
    "A2B10G10R10", "A2R10G10B10", "B10G10R10A2", "R10G10B10A2", "A2Y10U10V10",
    "V10U10Y10A2", "A8Y8U8V8", "V8U8Y8A8",
)
SEMI_PLANAR_IMAGE_FORMATS = (
    "Y8___U8V8_N444", "Y8___V8U8_N444", "Y10___U10V10_N444", "Y10___V10U10_N444",
    "Y12___U12V12_N444", "Y12___V12U12_N444", "Y16___U16V16_N444", "Y16___V16U16_N444",
)


class ConfigError(ValueError):
    """An invalid build parameter or combination; the message names the parameter and rule."""


def _is_pow2(v: int) -> bool:
    return isinstance(v, int) and v > 0 and (v & (v - 1)) == 0


def _formats_from_mask(names, mask):
    return frozenset(n for i, n in enumerate(names) if mask >> i & 1)


# The image formats of the reference int8 builds (CFGROM CDMA_IMAGE_IN_FORMATS_*).
_INT8_PACKED = _formats_from_mask(PACKED_IMAGE_FORMATS, 0x0CFFF001)
_INT8_SEMI = _formats_from_mask(SEMI_PLANAR_IMAGE_FORMATS, 0x3)


@dataclass(frozen=True)
class NvdlaConfig:
    """All parameters of one NVDLA build. Frozen; derive variants with :meth:`replace`."""

    name: str = "custom"
    # -- feature selection ---------------------------------------------------------------
    data_types: frozenset = frozenset({"int8"})   #: feature/weight precisions supported
    winograd: bool = False
    batching: bool = False
    max_batch: int = 1                            #: largest batch when batching is on
    weight_compression: bool = False
    sramif: bool = False                          #: second memory bus (SRAMIF / CVIF)
    image_packed_formats: frozenset = _INT8_PACKED
    image_semi_formats: frozenset = _INT8_SEMI
    sdp_bs: bool = True                           #: SDP X1 (bias/scale) stage
    sdp_bn: bool = True                           #: SDP X2 (batch-norm) stage
    sdp_ew: bool = False                          #: SDP Y (element-wise) stage
    sdp_lut: bool = False                         #: SDP LUT (part of the Y stage)
    bdma: bool = False
    rubik: bool = False
    # -- design sizing -------------------------------------------------------------------
    atomic_c: int = 8
    atomic_k: int = 8
    memory_atom: int = 8                          #: bytes (Atomic-M)
    cbuf_banks: int = 32
    cbuf_bank_width: int = 8                      #: bytes per bank entry
    cbuf_bank_depth: int = 512                    #: entries per bank
    #: bytes of one CBUF entry as the registers count entries (D_ENTRY_PER_SLICE, D_BANK
    #: capacity): 0 = cbuf_bank_width; NVDLA v1's nv_full: 128 (an entry is a row of two
    #: 64-byte bank columns, 256 per bank: its cmod and traceplayer tests count so)
    cbuf_entry_width: int = 0
    #: bits of each memory a CBUF bank is built from: 0 = one memory per bank (as wide as
    #: the bank); a divisor of the bank width in whole bytes splits every bank into lanes
    #: of that width, addressed alike (an FPGA build choice: 16 maps an ECP5 bank to
    #: 1K x 18 block RAMs, each driving 16 read outputs instead of 36)
    cbuf_ram_width: int = 0
    #: registers on the CBUF data read port, 0, 1 or 2: 1 puts one after the port's bank
    #: multiplexer, cutting the block RAM output -> multiplexer -> CSC byte placement path
    #: in two; 2 also registers the read's enable and address before the banks, so the
    #: CSC's address arithmetic ends at flip-flops and the nets to every bank start at them.
    #: The CSC's data reads take 1 + this many cycles (an FPGA timing choice; the
    #: convolution takes a cycle or two more per layer; not with Winograd, whose tile
    #: reader assumes one)
    cbuf_data_read_regs: int = 0
    #: registers on the CBUF's write port, 0 or 1: 1 registers the CDMA's write (enable,
    #: entry, data, byte mask) once more inside the CBUF, so the wires that fan out to every
    #: bank's block RAMs start at a register with no logic before them, and the CDMA's
    #: write arbitration ends at registers it can keep close (an FPGA timing choice; the
    #: CDMA announces a slice or weight bytes a cycle later, as the write lands a cycle later)
    cbuf_write_regs: int = 0
    sdp_bs_throughput: int = 1
    sdp_bn_throughput: int = 1
    sdp_ew_throughput: int = 0
    pdp_throughput: int = 1                       #: 0 = no PDP
    cdp_throughput: int = 1                       #: 0 = no CDP
    # -- memory interfaces ---------------------------------------------------------------
    dbbif_width: int = 64                         #: bits
    sramif_width: int = 512                       #: bits (used when sramif)
    address_width: int = 32                       #: 32 or 64
    max_burst_length: int = 4                     #: beats per AXI burst
    outstanding: int = 64                         #: outstanding AXI requests per interface
    dbbif_latency: int = 50                       #: expected primary memory latency (cycles)
    sramif_latency: int = 128                     #: expected SRAM latency (cycles)
    # -- register map --------------------------------------------------------------------
    register_layout: str = "small"                #: "full" (spec map) or "small" (CFGROM map)

    def __post_init__(self):
        object.__setattr__(self, "data_types", frozenset(self.data_types))
        object.__setattr__(self, "image_packed_formats", frozenset(self.image_packed_formats))
        object.__setattr__(self, "image_semi_formats", frozenset(self.image_semi_formats))
        self._validate()

    # ------------------------------------------------------------------------------------
    def _validate(self):
        def err(param, rule):
            raise ConfigError(f"{self.name}: {param}={getattr(self, param)!r}: {rule}")

        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("bool",) and not isinstance(v, bool):
                err(f.name, "must be true or false")
            if f.type in ("int",) and (isinstance(v, bool) or not isinstance(v, int)):
                err(f.name, "must be an integer")

        if not self.data_types or not self.data_types <= set(DATA_TYPES):
            err("data_types", f"must be a non-empty subset of {list(DATA_TYPES)}")
        if "int8" not in self.data_types:
            err("data_types", "must include int8 (Atomic-C/K are sized for the lowest precision)")
        if not (_is_pow2(self.atomic_c) and 8 <= self.atomic_c <= 128):
            err("atomic_c", "must be a power of two from 8 to 128")
        if not (_is_pow2(self.atomic_k) and 4 <= self.atomic_k <= 32):
            err("atomic_k", "must be a power of two from 4 to 32")
        if self.atomic_k > self.atomic_c:
            err("atomic_k", f"must not exceed atomic_c ({self.atomic_c})")
        if self.memory_atom not in (8, 32):
            err("memory_atom", "must be 8 or 32 bytes")
        if self.memory_atom > self.atomic_c:
            err("memory_atom", f"must not exceed atomic_c ({self.atomic_c}) bytes: "
                "a CBUF entry holds whole memory atoms")
        if self.atomic_k != self.memory_atom:
            err("atomic_k", f"must equal memory_atom ({self.memory_atom}): a kernel group of "
                "Atomic-K int8 kernels is one output surface, which CACC delivers to SDP in "
                "surface order")
        if not (_is_pow2(self.cbuf_banks) and 2 <= self.cbuf_banks <= 32):
            err("cbuf_banks", "must be a power of two from 2 to 32")
        if self.cbuf_bank_width != self.atomic_c:
            err("cbuf_bank_width", f"must equal atomic_c x int8 element size = {self.atomic_c} "
                "bytes (one atomic cube per entry)")
        if not _is_pow2(self.cbuf_bank_depth):
            err("cbuf_bank_depth", "must be a power of two")
        if self.cbuf_entry_width not in (0, self.cbuf_bank_width, 2 * self.cbuf_bank_width):
            err("cbuf_entry_width", f"must be 0 (= cbuf_bank_width), {self.cbuf_bank_width} or "
                f"{2 * self.cbuf_bank_width} (two bank columns per entry)")
        if self.cbuf_entry_bytes != self.cbuf_bank_width and \
                not self.data_types & {"int16", "fp16"}:
            err("cbuf_entry_width", "two-column entries hold Atomic-C 16-bit elements: need "
                "int16 or fp16 in data_types")
        bank_bits = self.cbuf_bank_width * 8
        if self.cbuf_ram_width and not (self.cbuf_ram_width % 8 == 0
                                        and bank_bits % self.cbuf_ram_width == 0):
            err("cbuf_ram_width", f"must be 0 (one memory per bank) or a multiple of 8 that "
                f"divides the bank width of {bank_bits} bits")
        if self.cbuf_write_regs not in (0, 1):
            err("cbuf_write_regs", "must be 0 or 1")
        if self.cbuf_data_read_regs not in (0, 1, 2):
            err("cbuf_data_read_regs", "must be 0, 1 or 2")
        elif self.cbuf_data_read_regs and self.winograd:
            err("cbuf_data_read_regs", "must be 0 with winograd (the Winograd tile reader "
                "takes the CBUF data one cycle after its read)")
        bank_bytes = self.cbuf_bank_width * self.cbuf_bank_depth
        if not 4096 <= bank_bytes <= 32768:
            err("cbuf_bank_depth", f"bank size {self.cbuf_bank_width} x {self.cbuf_bank_depth}"
                f" = {bank_bytes} bytes must be 4 KiB to 32 KiB")
        if self.batching and not 2 <= self.max_batch <= 32:
            err("max_batch", "must be 2 to 32 when batching is enabled")
        if not self.batching and self.max_batch != 1:
            err("max_batch", "must be 1 when batching is disabled")
        for p, on in (("sdp_bs_throughput", self.sdp_bs), ("sdp_bn_throughput", self.sdp_bn),
                      ("sdp_ew_throughput", self.sdp_ew)):
            v = getattr(self, p)
            if on and not (_is_pow2(v) and v <= 16):
                err(p, "must be a power of two from 1 to 16 when its stage is enabled")
            if not on and v != 0:
                err(p, "must be 0 when its stage is disabled")
        if self.sdp_lut and not self.sdp_ew:
            err("sdp_lut", "the LUT is part of the SDP element-wise (Y) stage: needs sdp_ew")
        for p in ("pdp_throughput", "cdp_throughput"):
            v = getattr(self, p)
            if v not in (0, 1, 2, 4, 8):
                err(p, "must be 0 (unit absent) or a power of two up to 8")
        if "int16" in self.data_types and self.cdp_throughput > self.memory_atom // 2:
            err("cdp_throughput", f"must be at most memory_atom / 2 = {self.memory_atom // 2} "
                "with int16 (an int16 atom holds memory_atom / 2 channels)")
        if self.bdma and not self.sramif:
            err("bdma", "BDMA copies between the DBBIF and the SRAMIF: needs sramif")
        unknown = self.image_packed_formats - set(PACKED_IMAGE_FORMATS)
        if unknown:
            err("image_packed_formats", f"unknown formats {sorted(unknown)}")
        unknown = self.image_semi_formats - set(SEMI_PLANAR_IMAGE_FORMATS)
        if unknown:
            err("image_semi_formats", f"unknown formats {sorted(unknown)}")
        fp_formats = sorted(f for f in self.image_packed_formats if f.endswith("_F"))
        if fp_formats and "fp16" not in self.data_types:
            err("image_packed_formats", f"{', '.join(fp_formats)}: fp16 pixels are processed in "
                "fp16 only (precision conversion, Table 29): need fp16 in data_types")
        for p in ("dbbif_width", "sramif_width"):
            v = getattr(self, p)
            if v not in (32, 64, 128, 256, 512):
                err(p, "must be 32, 64, 128, 256 or 512 bits")
        if self.address_width not in (32, 64):
            err("address_width", "must be 32 or 64")
        if not 1 <= self.max_burst_length <= 16:
            err("max_burst_length", "must be 1 to 16 beats (AXI awlen/arlen are 4 bits)")
        if not 1 <= self.outstanding <= 256:
            err("outstanding", "must be 1 to 256 requests")
        if not 1 <= self.dbbif_latency <= 65535:
            err("dbbif_latency", "must be 1 to 65535 cycles (CFGROM CIF_BASE_LATENCY)")
        if not 1 <= self.sramif_latency <= 65535:
            err("sramif_latency", "must be 1 to 65535 cycles")
        if self.register_layout not in ("full", "small"):
            err("register_layout", "must be 'full' or 'small'")
        if self.register_layout == "full":
            if self.memory_atom != 32:
                err("register_layout", "the full layout drops address bits [4:0]: "
                    "needs memory_atom = 32")
            if self.cbuf_banks > 16:
                err("register_layout", "the full layout's D_BANK fields are 4 bits: "
                    "needs cbuf_banks <= 16")
        if self.cbuf_bank_depth * self.cbuf_banks > (1 << 14):
            err("cbuf_bank_depth", "CBUF entries per slice (D_ENTRY_PER_SLICE) are 14 bits: "
                "cbuf_banks x cbuf_bank_depth must be <= 16384")

    # ------------------------------------------------------------------------------------
    @property
    def pdp(self) -> bool:
        return self.pdp_throughput > 0

    @property
    def cdp(self) -> bool:
        return self.cdp_throughput > 0

    @property
    def macs(self) -> int:
        return self.atomic_c * self.atomic_k

    @property
    def cbuf_entry_bytes(self) -> int:
        """Bytes of one CBUF entry as the registers count entries."""
        return self.cbuf_entry_width or self.cbuf_bank_width

    @property
    def cbuf_entry_depth(self) -> int:
        """CBUF entries per bank as the registers count them."""
        return self.cbuf_bank_width * self.cbuf_bank_depth // self.cbuf_entry_bytes

    @property
    def cbuf_bytes(self) -> int:
        return self.cbuf_banks * self.cbuf_bank_width * self.cbuf_bank_depth

    @property
    def dbbif_bytes(self) -> int:
        return self.dbbif_width // 8

    def replace(self, **changes) -> "NvdlaConfig":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = sorted(v) if isinstance(v, frozenset) else v
        return out

    @staticmethod
    def preset(name: str) -> "NvdlaConfig":
        try:
            return PRESETS[name]
        except KeyError:
            raise ConfigError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}") from None

    @classmethod
    def from_overrides(cls, base: str | NvdlaConfig, overrides: dict) -> "NvdlaConfig":
        base_cfg = cls.preset(base) if isinstance(base, str) else base
        known = {f.name for f in fields(cls)}
        for k in overrides:
            if k not in known:
                raise ConfigError(f"unknown build parameter {k!r}; known: {', '.join(sorted(known))}")
        return replace(base_cfg, **overrides)


def _presets():
    small = NvdlaConfig(name="nv_small")
    small256 = replace(small, name="nv_small_256", atomic_c=32, atomic_k=8,
                       cbuf_bank_width=32, cbuf_bank_depth=128)
    large = NvdlaConfig(
        name="nv_large", winograd=True, batching=True, max_batch=32, weight_compression=True,
        sramif=True, sdp_ew=True, sdp_lut=True, bdma=True, rubik=True,
        atomic_c=64, atomic_k=32, memory_atom=32, cbuf_banks=16, cbuf_bank_width=64,
        cbuf_bank_depth=512, sdp_bs_throughput=16, sdp_bn_throughput=16, sdp_ew_throughput=4,
        pdp_throughput=8, cdp_throughput=8, dbbif_width=512, sramif_width=512,
        address_width=64, dbbif_latency=1200, sramif_latency=128, register_layout="small")
    full = NvdlaConfig(
        name="nv_full", data_types=frozenset(DATA_TYPES), winograd=True, batching=True,
        max_batch=32, weight_compression=True, sramif=True, sdp_ew=True, sdp_lut=True,
        bdma=True, rubik=True, atomic_c=64, atomic_k=32, memory_atom=32, cbuf_banks=16,
        cbuf_bank_width=64, cbuf_bank_depth=512, cbuf_entry_width=128, sdp_bs_throughput=16,
        sdp_bn_throughput=16, sdp_ew_throughput=4, pdp_throughput=8, cdp_throughput=8,
        dbbif_width=512, sramif_width=512, address_width=64, dbbif_latency=1200,
        register_layout="full",
        # NVDLA v1's nv_full CDMA takes every pixel format 0x00..0x23 of the data-format
        # spec (its image controller asserts on larger codes only); the int8 builds'
        # CFGROM lists the 8- and 10-bit ones
        image_packed_formats=frozenset(PACKED_IMAGE_FORMATS),
        image_semi_formats=frozenset(SEMI_PLANAR_IMAGE_FORMATS))
    return {c.name: c for c in (small, small256, large, full)}


PRESETS = _presets()


def load_config(spec: str | os.PathLike | NvdlaConfig) -> NvdlaConfig:
    """A preset name, or a TOML file ``base = "preset"`` followed by parameter overrides."""
    if isinstance(spec, NvdlaConfig):
        return spec
    spec = str(spec)
    if spec in PRESETS:
        return PRESETS[spec]
    if not os.path.exists(spec):
        raise ConfigError(f"--config {spec!r} is neither a preset ({', '.join(PRESETS)}) "
                          "nor an existing TOML file")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(spec, "rb") as f:
        try:
            doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{spec}: not valid TOML: {e}") from None
    doc = dict(doc)
    base = doc.pop("base", "nv_small")
    name = doc.pop("name", os.path.splitext(os.path.basename(spec))[0])
    for k in ("data_types", "image_packed_formats", "image_semi_formats"):
        if k in doc:
            if not isinstance(doc[k], list):
                raise ConfigError(f"{spec}: {k} must be a list")
            doc[k] = frozenset(doc[k])
    return NvdlaConfig.from_overrides(base, {"name": name, **doc})


def rtl_winograd(cfg: NvdlaConfig) -> bool:
    """The builds whose convolution RTL runs Winograd layers (int8, and int16 where the build
    has it; not fp16): ``winograd``, Atomic-C 64 (a data atom is one 4-channel x 16-position
    small cube of the Winograd weight surface, so the weights are read as a 1 x 1 direct
    layer's: :mod:`hw.conv.wino_dat`) and 32-byte memory atoms, on bank-row or two-column
    CBUF entries: nv_large and nv_full. One predicate for the RTL
    (:func:`hw.conv.common.conv_winograd`) and the golden model's statement of this core's
    limits (:func:`sim.conv.core_limits.check_core_limits`)."""
    return cfg.winograd and cfg.atomic_c == 64 and cfg.memory_atom == 32


def rtl_winograd_fp16(cfg: NvdlaConfig) -> bool:
    """The builds whose convolution RTL also runs fp16 Winograd layers: :func:`rtl_winograd`,
    fp16, and a CBUF entry of ``2 x Atomic-C`` bytes (two-column entries: nv_full). There an
    entry of fp16 codes is one small cube (4 channels x 16 tile positions) and an fp16 MAC
    cell multiplies the whole entry, as NVDLA's 64-pair cell does in Winograd mode: one
    alignment for the 64 products, the POA applied to the aligned parts
    (:mod:`hw.conv.wino_dat`, :mod:`hw.conv.fp16_cell`)."""
    return rtl_winograd(cfg) and "fp16" in cfg.data_types and \
        cfg.cbuf_entry_bytes == 2 * cfg.atomic_c
