"""The pytest suite, one file per unit or tool (``pytest -n 2 tests``); benches, the cocotb
runner and the RTL trace engine they use live in ``tb/``."""
