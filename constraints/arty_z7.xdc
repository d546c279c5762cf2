# Arty Z7-20 (Zynq-7020): the NVDLA core in a block design. Clock (FCLK_CLK0) and reset come
# from the PS and are constrained by the processing_system7 IP; no pins are used.
set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]
