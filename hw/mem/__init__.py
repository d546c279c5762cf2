"""The memory side of the core: what every unit's DMA goes through to reach DBBIF and SRAMIF.

:mod:`hw.mem.dma` is the DMA client interface (read/write ports, words and atoms, the cube
command); :mod:`hw.mem.cube` turns cube commands into line requests and realigned atom words;
:mod:`hw.mem.dmaif` collects the client ports of a build and routes them to an
:mod:`hw.mem.mcif` AXI4 master per bus (MCIF on the DBBIF, CVIF on the SRAMIF), whose port
sets come from :mod:`hw.mem.axi`.
"""
