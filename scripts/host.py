"""``nvdla host``: play NVDLA trace directories on a board through its serial bridge.

    nvdla host --port /dev/ttyUSB0 [--baud 115200] --config nv_small TRACE_DIR...
    nvdla host --port /dev/ttyUSB0 --ping

The host side of the board's serial protocol (:mod:`hw.bridge.serial_host`): memory images
loaded word by word into the board's DBBIF memory, register writes over the CSB, interrupts
by polling, CRCs read back; one ``PASS``/``FAIL`` line per trace, then ``N passed, M failed``.
``--port`` is any pyserial URL (a device, ``socket://host:port``, ``rfc2217://...``).
The player itself is :class:`scripts.uart.TracePlayer` (``nvdla uart`` is the same command).
"""

from __future__ import annotations

from .uart import add_arguments, run

__all__ = ["add_arguments", "run"]
