"""The CDP unit (spec: CDP, CDP_RDMA): cross-channel local response normalization.

:class:`Cdp` (:mod:`hw.cdp.cdp`) is the whole unit of one build: program checks
(:mod:`hw.cdp.check`), the read DMA and pixel-order feeder (:mod:`hw.cdp.rdma`), the LRN
datapath of ``cfg.cdp_throughput`` lanes (:class:`CdpDatapath`, :mod:`hw.cdp.datapath`), the
write DMA (:mod:`hw.cdp.wdma`), counters and completion.
"""

from .cdp import Cdp
from .datapath import CdpDatapath

__all__ = ["Cdp", "CdpDatapath"]
