"""The convolution pipeline RTL: CDMA, CBUF, CSC, CMAC (A and B halves as one array), CACC.

:mod:`hw.conv.common` holds the contract between the units (CBUF layout, the sequence and the
payloads); each unit has a module of its own name, mirrored by :mod:`sim.conv` and the tests.
"""
