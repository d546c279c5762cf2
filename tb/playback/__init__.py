"""Trace playback: NVDLA traces on the Verilated core with the memories, the CSB master and the
trace sequencing in compiled C++ (``harness.cpp``); Python only encodes the traces and reads
the results (``driver.py``; batch file format: ``format.md``)."""

from .driver import (PlaybackError, build_harness, encode_batch, run_playback,
                     run_playback_batch)

__all__ = ["PlaybackError", "build_harness", "encode_batch", "run_playback",
           "run_playback_batch"]
