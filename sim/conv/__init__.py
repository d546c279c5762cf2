"""Golden model of the convolution pipeline: CDMA, CBUF, CSC, CMAC, CACC (direct convolution,
feature or image input, and Winograd).

Modules mirror NVDLA's units: :mod:`.program` decodes and checks the five register files,
:mod:`.cdma` fetches features and weights into the CBUF model (with data/weight reuse),
:mod:`.image` the image input (pixel formats, mean, input convertor, left/right padding),
:mod:`.csc` forms the sequencer's operands (padding, stride, dilation), :mod:`.cmac` computes
the exact sums, :mod:`.cacc` truncates and saturates them, and :mod:`.unit` runs a layer in
the golden core with the result flying into SDP. Winograd layers (``CONV_MODE=WINOGRAD``,
nv_large / nv_full) are decoded and run by :mod:`.winograd` (its arithmetic in
:mod:`.winograd_math`, random layers in :mod:`.winograd_programs`).
"""

from .program import ConvProgram, ConvProgramError, decode, entries_per_slice
from .unit import ConvUnit, run_conv

__all__ = ["ConvUnit", "run_conv", "ConvProgram", "ConvProgramError", "decode",
           "entries_per_slice"]
