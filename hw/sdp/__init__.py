"""The SDP unit (spec: SDP, SDP_RDMA; golden model :mod:`sim.sdp`).

:class:`Sdp` (:mod:`hw.sdp.sdp`) is the whole unit of one build: program checks, the read
DMAs and operand feeder (:mod:`hw.sdp.rdma`), the BS/BN/EW/LUT/output-converter datapath of T
lanes (:class:`SdpDatapath`, :mod:`hw.sdp.datapath`), the write DMA's atom packer
(:mod:`hw.sdp.wdma`), the counters and completion; it reaches memory through the cube
readers/writers of :mod:`hw.mem`.
"""

from .datapath import SdpDatapath
from .sdp import Sdp

__all__ = ["Sdp", "SdpDatapath"]
