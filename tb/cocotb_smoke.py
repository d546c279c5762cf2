"""Register-level smoke test of a generated core (driven by ``nvdla smoke``).

Reads the version and capability registers, programs both ping-pong groups of the SDP,
raises and clears an interrupt, and measures CSB throughput; every step is checked and
written as a line to the file named by ``NVDLA_SMOKE_LOG``.
"""

from __future__ import annotations

import os

import cocotb

from .harness import CoreBench


@cocotb.test()
async def smoke(dut):
    tb = await CoreBench.start(dut, memory=False)
    log = []

    def step(text):
        log.append(text)
        dut._log.info(text)

    hw = await tb.read_reg("GLB.S_NVDLA_HW_VERSION")
    assert hw == tb.rmap["GLB"]["S_NVDLA_HW_VERSION"].reset
    step(f"GLB.S_NVDLA_HW_VERSION = {hw:#010x} (MAJOR {hw & 0xff:#x}, MINOR {hw >> 8:#x})")
    if "CFGROM" in tb.rmap:
        ac = await tb.read_reg("CFGROM.CFGROM_CDMA_BASE_ATOMIC_C")
        ak = await tb.read_reg("CFGROM.CFGROM_CDMA_BASE_ATOMIC_K")
        banks = await tb.read_reg("CFGROM.CFGROM_CBUF_BASE_CBUF_BANK_NUM")
        assert (ac, ak, banks) == (tb.cfg.atomic_c, tb.cfg.atomic_k, tb.cfg.cbuf_banks)
        step(f"CFGROM: Atomic-C {ac}, Atomic-K {ak}, {banks} CBUF banks (match the build)")
    for group in (0, 1):
        await tb.write_reg("SDP.S_POINTER", group)
        await tb.write_reg("SDP.D_DATA_CUBE_WIDTH", 7 + group)
        await tb.write_reg("SDP.D_OP_ENABLE", 1, nposted=True)
        assert await tb.read_reg("SDP.D_DATA_CUBE_WIDTH") == 7 + group
        await tb.write_reg("SDP.D_DATA_CUBE_WIDTH", 99)          # dropped: group enabled
        assert await tb.read_reg("SDP.D_DATA_CUBE_WIDTH") == 7 + group
    status = await tb.read_reg("SDP.S_STATUS")
    assert status == 0x20001
    step("SDP: programmed groups 0 and 1 (width 7, 8), enabled both; writes to enabled "
         f"groups dropped; S_STATUS = {status:#x} (group 0 RUNNING, group 1 PENDING)")
    await tb.write_reg("GLB.S_INTR_SET", 1)
    await tb.ticks(2)
    assert tb.interrupt == 1
    await tb.write_reg("GLB.S_INTR_STATUS", 1)
    await tb.ticks(2)
    assert tb.interrupt == 0
    step("GLB: S_INTR_SET raised nvdla2core_interrupt, write-1-to-clear lowered it")
    ops = [("r", tb.word("GLB.S_NVDLA_HW_VERSION"), None)] * 500
    got, cycles = await tb.csb.burst(ops)
    assert got == [hw] * 500
    step(f"CSB: {len(ops)} back-to-back reads in {cycles} cycles "
         f"({len(ops) / cycles:.2f} requests per cycle)")
    path = os.environ.get("NVDLA_SMOKE_LOG")
    if path:
        with open(path, "w") as f:
            f.write("\n".join(log) + "\n")
