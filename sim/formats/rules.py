"""Validators for the format rules: precision conversion, alignment and weight options.

* :func:`check_precision_conversion` -- Tables 29-32 ("Precision Conversion") of
  in_memory_data_formats.md: which configured input format / output precision pairs each unit
  accepts, and the precision the pipeline then runs at.
* :func:`check_alignment` / :func:`alignment_requirement` -- Table 35 ("Alignment of Start
  Address and Stride").
* :func:`check_weight_options` -- Table 34 ("Weight formats and options").

Every rejection raises a :class:`~sim.formats.common.FormatError` subclass whose message names
the offending case and the table it comes from.
"""

from __future__ import annotations

from .common import FormatError, PRECISIONS

__all__ = [
    "PrecisionConversionError", "AlignmentError", "WeightOptionError",
    "check_precision_conversion", "pipeline_precision", "IMAGE_INPUT_FORMATS",
    "ALIGNMENT_TABLE", "ALIGNMENT_FIELDS", "alignment_requirement", "check_alignment",
    "check_alignments", "WEIGHT_TYPES", "check_weight_options",
]


class PrecisionConversionError(FormatError):
    """An input format / output precision pair a unit does not support (Tables 29-32)."""


class AlignmentError(FormatError):
    """An address, stride or size that breaks Table 35."""


class WeightOptionError(FormatError):
    """A weight type / option combination that Table 34 or the option's own limits forbid."""


# ---------------------------------------------------------------------------------------------
# Tables 29-32

#: Configured input formats of image input mode (Table 29). Integer pixels may be converted to
#: any precision; floating-point pixels only to fp16.
IMAGE_INPUT_FORMATS = ("image_uint8", "image_int16", "image_uint16", "image_fp16")

_INVALID = None
# unit -> {(input format, output precision): pipeline precision (None = invalid case)}
_CONV = {}
for _img in ("image_uint8", "image_int16", "image_uint16"):
    for _out in PRECISIONS:
        _CONV[(_img, _out)] = _out
_CONV.update({("image_fp16", "int8"): _INVALID, ("image_fp16", "int16"): _INVALID,
              ("image_fp16", "fp16"): "fp16"})
for _in in PRECISIONS:
    for _out in PRECISIONS:
        _CONV[(_in, _out)] = _in if _in == _out else _INVALID  # DC / Winograd: no conversion

_SDP = {
    ("int8", "int8"): "int32", ("int8", "int16"): "int32", ("int8", "fp16"): _INVALID,
    ("int16", "int8"): "int32", ("int16", "int16"): "int32", ("int16", "fp16"): "int32",
    ("fp16", "int8"): _INVALID, ("fp16", "int16"): "fp32", ("fp16", "fp16"): "fp32",
}
_SAME_ONLY = {(i, o): (i if i == o else _INVALID) for i in PRECISIONS for o in PRECISIONS}

_UNITS = {
    "conv": ("Table 29 (convolution)", _CONV),
    "sdp": ("Table 30 (SDP, offline mode)", _SDP),
    "cdp": ("Table 31 (CDP / LRN)", _SAME_ONLY),
    "pdp": ("Table 32 (PDP / pooling)", _SAME_ONLY),
}
_UNIT_ALIASES = {"convolution": "conv", "cc": "conv", "lrn": "cdp", "pooling": "pdp",
                 "batchnorm": "sdp", "eltwise": "sdp"}


def _image_class(in_format: str) -> str:
    """Map a pixel format name (``T_...``) to its Table 29 image input class."""
    from .pixel import pixel_format  # late import: pixel depends on nothing here
    fmt = pixel_format(in_format)
    if fmt.is_float:                      # the _F formats (T_R16_F lists int16 in Table 33)
        return "image_fp16"
    if fmt.precision == "int8":
        return "image_uint8"
    return "image_uint16"


def check_precision_conversion(unit: str, in_format: str, out_precision: str) -> str:
    """Check a configured (input format, output precision) pair for ``unit``.

    ``unit`` is ``"conv"`` (Table 29), ``"sdp"`` (Table 30), ``"cdp"`` (Table 31) or ``"pdp"``
    (Table 32); aliases ``"lrn"``, ``"pooling"``, ``"batchnorm"``, ``"eltwise"`` are accepted.
    ``in_format`` is a feature precision (``"int8"``, ``"int16"``, ``"fp16"``), an image input
    class of :data:`IMAGE_INPUT_FORMATS` (conv only) or a pixel format name such as
    ``"T_A8B8G8R8"`` (conv only).

    Returns the real precision of the pipeline ("int8", "int16", "fp16", "int32" or "fp32"); for
    the convolution pipeline this is also the weight precision. Raises
    :class:`PrecisionConversionError` naming the invalid case.
    """
    key = _UNIT_ALIASES.get(unit, unit)
    if key not in _UNITS:
        raise PrecisionConversionError(
            f"unknown unit {unit!r}: expected one of {sorted(_UNITS)} "
            f"(or {sorted(_UNIT_ALIASES)})")
    table, rules = _UNITS[key]
    fmt = in_format
    if key == "conv" and isinstance(fmt, str) and fmt.upper().startswith("T_"):
        fmt = _image_class(fmt)
    if out_precision not in PRECISIONS:
        raise PrecisionConversionError(
            f"{table}: output precision {out_precision!r} is not one of {list(PRECISIONS)}")
    if (fmt, out_precision) not in rules:
        valid_in = sorted({i for i, _ in rules})
        raise PrecisionConversionError(
            f"{table}: input format {in_format!r} is not one of {valid_in}")
    real = rules[(fmt, out_precision)]
    if real is None:
        raise PrecisionConversionError(
            f"{table}: invalid case: input {in_format!r} -> output {out_precision!r} "
            f"is not supported by {key}")
    return real


def pipeline_precision(unit: str, in_format: str, out_precision: str) -> str:
    """Alias of :func:`check_precision_conversion` for call sites that want the result."""
    return check_precision_conversion(unit, in_format, out_precision)


# ---------------------------------------------------------------------------------------------
# Table 35

ALIGNMENT_FIELDS = ("start_address", "line_stride", "surface_stride", "planar_stride",
                    "data_size")

# "A" marks the 32-byte entries: they are the memory atom (32 bytes in the spec's build; a build
# with 8-byte atoms addresses memory in 8-byte units, see arch/config.py memory_atom).
_A = "atom"
#: data format -> alignment per field of :data:`ALIGNMENT_FIELDS` (None = not applicable).
ALIGNMENT_TABLE = {
    "feature":     (_A, _A, _A, _A, None),
    "weight":      (256, None, None, None, 128),
    "wmb":         (256, None, None, None, 128),
    "wgs":         (256, None, None, None, 128),
    "pixel":       (_A, _A, None, None, None),
    "bias":        (_A, _A, _A, None, None),
    "prelu":       (_A, None, None, None, None),
    "batch_norm":  (_A, None, None, None, None),
    "eltwise":     (_A, _A, None, None, _A),
}
_FORMAT_ALIASES = {"feature_data": "feature", "compressed_weight": "weight",
                   "uncompressed_weight": "weight", "pitch_linear_pixel": "pixel",
                   "batchnorm": "batch_norm", "bn": "batch_norm", "element_wise": "eltwise",
                   "ew": "eltwise", "batch_stride": "planar_stride",
                   "cube_stride": "planar_stride"}


def _resolve_format(data_format: str) -> str:
    key = _FORMAT_ALIASES.get(data_format, data_format)
    if key not in ALIGNMENT_TABLE:
        raise AlignmentError(f"Table 35: unknown data format {data_format!r}; "
                             f"known: {sorted(ALIGNMENT_TABLE)}")
    return key


def alignment_requirement(data_format: str, field: str, atom: int = 32):
    """Required alignment in bytes of ``field`` for ``data_format`` (Table 35), or None if the
    table marks it not applicable. The spec's 32-byte entries scale with the memory atom."""
    key = _resolve_format(data_format)
    f = _FORMAT_ALIASES.get(field, field)
    if f not in ALIGNMENT_FIELDS:
        raise AlignmentError(f"Table 35: unknown field {field!r}; known: {list(ALIGNMENT_FIELDS)}")
    req = ALIGNMENT_TABLE[key][ALIGNMENT_FIELDS.index(f)]
    return atom if req == _A else req


def check_alignment(data_format: str, field: str, value: int, atom: int = 32) -> int:
    """Raise :class:`AlignmentError` unless ``value`` meets Table 35 for (format, field).

    A field the table marks not applicable is rejected too (passing one is a mistake).
    Returns ``value``.
    """
    req = alignment_requirement(data_format, field, atom)
    key = _resolve_format(data_format)
    if req is None:
        raise AlignmentError(f"Table 35: {field} does not apply to {key} data")
    if int(value) % req:
        raise AlignmentError(f"Table 35: {key} {field} {value:#x} must be aligned to {req} bytes")
    return value


def check_alignments(data_format: str, atom: int = 32, **fields) -> None:
    """:func:`check_alignment` for every ``field=value`` given (None values are skipped)."""
    for f, v in fields.items():
        if v is not None:
            check_alignment(data_format, f, v, atom)


# ---------------------------------------------------------------------------------------------
# Table 34

WEIGHT_TYPES = ("dc", "winograd", "image", "deconv")
_WEIGHT_NAMES = {"dc": "Weight for DC", "winograd": "Weight for Winograd",
                 "image": "Weight for image input", "deconv": "Weight for deconvolution"}


def check_weight_options(weight_type: str, compression: bool = False,
                         post_extension: int = 1) -> None:
    """Table 34: sparse compression is allowed for every weight type; channel post-extension
    (parameter 2 or 4; 1 means off) only for image input weights."""
    if weight_type not in WEIGHT_TYPES:
        raise WeightOptionError(f"Table 34: unknown weight type {weight_type!r}; "
                                f"known: {list(WEIGHT_TYPES)}")
    if post_extension not in (1, 2, 4):
        raise WeightOptionError(f"post-extension parameter {post_extension}: must be 1, 2 or 4")
    if post_extension != 1 and weight_type != "image":
        raise WeightOptionError(f"Table 34: {_WEIGHT_NAMES[weight_type]} does not support "
                                f"channel post-extension (parameter {post_extension})")
    if not isinstance(compression, bool):
        raise WeightOptionError("compression must be True or False")
