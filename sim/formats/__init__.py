"""NVDLA in-memory data formats: pure-numpy, vectorized packers and unpackers.

One module per format family of in_memory_data_formats.md:

* :mod:`.common` -- precisions, value <-> raw code <-> byte conversions;
* :mod:`.feature` -- feature data (pitch-linear C' -> W -> H -> C, strides, batches);
* :mod:`.pixel` -- pixel formats of Table 33 (packed / semi-planar, X offset, sign extension);
* :mod:`.weight` -- direct convolution, image input (pre/post-extension), deconvolution weights;
* :mod:`.winograd` -- Winograd weights (channel extension, G W G^T, phase-2 grouping);
* :mod:`.sparse` -- sparse weight compression (WMB, WGS, compressed surface) and decompression;
* :mod:`.sdp_operands` -- bias, PReLU, batch-norm and element-wise data (BytesPerAtom);
* :mod:`.rules` -- validators for Tables 29-32 (precision conversion), 34 and 35 (alignment);
* :mod:`.dlhdl` -- converter to/from another accelerator's external-memory layout.
"""

from .common import (ELEMENT_BYTES, PRECISIONS, FormatError, align_up, bytes_to_raw,
                     bytes_to_values, element_bytes, raw_to_bytes, raw_to_values,
                     round_shift_right, saturate, values_to_bytes, values_to_raw)
from .dlhdl import (dlhdl_conv_size, dlhdl_from_bytes, dlhdl_to_bytes, dlhdl_to_nvdla,
                    nvdla_to_dlhdl, pack_dlhdl_conv, pack_dlhdl_fc, parallel_transfer_number,
                    thread_number, unpack_dlhdl_conv, unpack_dlhdl_fc)
from .feature import (FeatureStrides, channels_per_atom, check_feature_strides,
                      feature_byte_offsets, feature_footprint, from_surface_packed_cube,
                      is_line_packed, is_surface_packed, pack_feature, pack_feature_batch,
                      packed_strides, surface_count, surface_packed_equivalent,
                      to_surface_packed_cube, unpack_feature, unpack_feature_batch)
from .pixel import (PIXEL_FORMATS, PixelFormat, PixelSettingError, PixelSurface,
                    check_pixel_setting, convert_precision, max_x_offset, pack_pixels,
                    pixel_format, pixel_to_signed, roi_base_and_x_offset, unpack_pixels)
from .rules import (AlignmentError, PrecisionConversionError, WeightOptionError,
                    alignment_requirement, check_alignment, check_alignments,
                    check_precision_conversion, check_weight_options)
from .sdp_operands import (bytes_per_atom, components_per_element, elements_per_atom,
                           pack_per_channel, pack_sdp_operand, sdp_operand_precision,
                           unpack_per_channel, unpack_sdp_operand)
from .sparse import (CompressedWeights, SparseFormatError, compress_weights,
                     decompress_weights)
from .weight import (WeightSurface, check_post_extension, default_group_k,
                     merge_deconv_weights, pack_dc_weights, pack_deconv_weights,
                     pack_image_weights, pre_extend_image_weights, split_deconv_weights,
                     undo_pre_extension, unpack_dc_weights, unpack_deconv_weights,
                     unpack_image_weights, weight_geometry)
from .winograd import (WINOGRAD_G, pack_winograd_weights, prepare_winograd_weights,
                       unpack_winograd_weights, winograd_extend_stride,
                       winograd_inverse_transform, winograd_pad_channels,
                       winograd_reduce_stride, winograd_transform)

__all__ = [
    "AlignmentError", "CompressedWeights", "ELEMENT_BYTES", "FeatureStrides", "FormatError",
    "PIXEL_FORMATS", "PRECISIONS", "PixelFormat", "PixelSettingError", "PixelSurface",
    "PrecisionConversionError", "SparseFormatError", "WINOGRAD_G", "WeightOptionError",
    "WeightSurface", "align_up", "alignment_requirement", "bytes_per_atom", "bytes_to_raw",
    "bytes_to_values", "channels_per_atom", "check_alignment", "check_alignments",
    "check_feature_strides", "check_pixel_setting", "check_post_extension",
    "check_precision_conversion", "check_weight_options", "components_per_element",
    "compress_weights", "convert_precision", "decompress_weights", "default_group_k",
    "dlhdl_conv_size", "dlhdl_from_bytes", "dlhdl_to_bytes", "dlhdl_to_nvdla", "element_bytes",
    "elements_per_atom", "feature_byte_offsets", "feature_footprint", "from_surface_packed_cube",
    "is_line_packed", "is_surface_packed", "max_x_offset", "merge_deconv_weights",
    "nvdla_to_dlhdl", "pack_dc_weights", "pack_deconv_weights", "pack_dlhdl_conv",
    "pack_dlhdl_fc", "pack_feature", "pack_feature_batch", "pack_image_weights",
    "pack_per_channel", "pack_pixels", "pack_sdp_operand", "pack_winograd_weights",
    "packed_strides", "parallel_transfer_number", "pixel_format", "pixel_to_signed",
    "pre_extend_image_weights", "prepare_winograd_weights", "raw_to_bytes", "raw_to_values",
    "roi_base_and_x_offset", "round_shift_right", "saturate", "sdp_operand_precision",
    "split_deconv_weights", "surface_count", "surface_packed_equivalent", "thread_number",
    "to_surface_packed_cube", "undo_pre_extension", "unpack_dc_weights", "unpack_deconv_weights",
    "unpack_dlhdl_conv", "unpack_dlhdl_fc", "unpack_feature", "unpack_feature_batch",
    "unpack_image_weights", "unpack_per_channel", "unpack_pixels", "unpack_sdp_operand",
    "unpack_winograd_weights", "values_to_bytes", "values_to_raw", "weight_geometry",
    "winograd_extend_stride", "winograd_inverse_transform", "winograd_pad_channels",
    "winograd_reduce_stride", "winograd_transform",
]
