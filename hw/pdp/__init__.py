"""The PDP unit (spec: PDP, PDP_RDMA): pooling of a feature cube read from memory (offline,
through PDP_RDMA) or taken from the SDP (flying).

:class:`Pdp` (:mod:`hw.pdp.pdp`) is the whole unit of one build: program checks
(:mod:`hw.pdp.check`), the read DMA and its input splitter (:mod:`hw.pdp.rdma`), the pooling
core (:class:`PdpPool`, :mod:`hw.pdp.pool`), the write DMA's atom packer (:mod:`hw.pdp.wdma`)
and completion; it reaches memory through the cube readers/writers of :mod:`hw.mem`.
"""

from .pool import PdpPool
from .pdp import Pdp

__all__ = ["Pdp", "PdpPool"]
