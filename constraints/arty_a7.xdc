# Arty A7 (Artix-7): extra constraints for the NVDLA board top, added as nvdla_extra.xdc
# (pins, the 100 MHz clock and the configuration voltage come from amaranth-boards).
# UART RX is asynchronous to the board clock (the bridge synchronizes it); TX and LEDs are
# slow outputs.
set_false_path -from [get_ports uart_0__rx__io]
set_false_path -to [get_ports {uart_0__tx__io led_*__io}]
