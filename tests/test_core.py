"""Register semantics of the golden core (sim/core.py): the same rules as the RTL register
files -- holes, access kinds, ping-pong groups, dropped writes, status, completion and the
GLB interrupt controller."""

from __future__ import annotations

import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim.core import GoldenCore, Launch, UnitError, UnitModel, Wait
from tests.conftest import NV_SMALL_EXT

CFG = NvdlaConfig.preset("nv_small")
RMAP = register_map(CFG)


def addr(name):
    return RMAP.address(name) >> 2


def field_bits(name, field, value):
    _, reg = RMAP.lookup(name)
    f = reg[field]
    return (value & f.mask) >> f.lsb


class FakeSdp(UnitModel):
    """A stand-in unit: runs when SDP (+ SDP_RDMA) consumer groups are enabled."""
    name = "FAKE_SDP"
    blocks = ("SDP", "SDP_RDMA")

    def __init__(self, counters=None, error=None, need_rdma=True):
        self.runs = []
        self.counters = counters or {}
        self.error = error
        self.need_rdma = need_rdma

    def plan(self, core):
        if not core.enabled("SDP"):
            return None
        blocks = ("SDP", "SDP_RDMA") if self.need_rdma else ("SDP",)

        def run():
            view = core.view("SDP")
            self.runs.append((core.consumer("SDP"), view.D_DATA_CUBE_WIDTH.WIDTH))
            if self.error:
                raise self.error
            return {"SDP": self.counters}
        return Launch(blocks, run, "fake SDP layer")


def core_with(*units, cfg=CFG):
    return GoldenCore(cfg, units={u.name: u for u in units})


# -- plain register access -------------------------------------------------------------------
def test_holes_read_zero_and_ignore_writes():
    core = core_with()
    glb = RMAP["GLB"]
    hole = (glb.base + 0x10) >> 2
    assert RMAP.at_word(hole) is None
    core.csb_write(hole, 0xFFFFFFFF)
    assert core.csb_read(hole) == 0
    assert core.csb_read(0x3FFFFFF) == 0


def test_absent_block_reads_zero():
    cfg = CFG.replace(name="no_pdp", pdp_throughput=0)
    core = core_with(cfg=cfg)
    pdp_op_en = addr("PDP.D_OP_ENABLE")           # nv_small address of the missing block
    core.csb_write(pdp_op_en, 1)
    assert core.csb_read(pdp_op_en) == 0
    assert not core.enabled("PDP")


def test_rw_fields_store_only_their_bits():
    core = core_with()
    a = addr("SDP.D_DATA_CUBE_WIDTH")
    core.csb_write(a, 0xFFFFFFFF)
    assert core.csb_read(a) == 0x1FFF
    a = addr("SDP.D_DP_BS_CFG")                    # fields at 0, 1, 3:2, 4, 5, 6
    core.csb_write(a, 0xFFFFFFFF)
    assert core.csb_read(a) == 0x7F


def test_reset_values():
    core = core_with()
    assert core.csb_read(addr("SDP.D_DP_BS_CFG")) == RMAP["SDP"]["D_DP_BS_CFG"].reset
    assert core.csb_read(addr("GLB.S_NVDLA_HW_VERSION")) == 0x303031
    # Hardware-driven fields read 0 after reset, except the static ones (CBUF flushed).
    assert core.csb_read(addr("CDMA.S_CBUF_FLUSH_STATUS")) == 1
    assert core.csb_read(addr("MCIF.STATUS")) == 1 << 8          # IDLE only, FREE_SLOT 0
    assert core.csb_read(addr("SDP.D_STATUS_NAN_INPUT_NUM")) == 0


def test_const_and_ro_ignore_writes():
    core = core_with()
    a = addr("GLB.S_NVDLA_HW_VERSION")
    core.csb_write(a, 0)
    assert core.csb_read(a) == 0x303031
    a = addr("SDP.D_STATUS_NAN_INPUT_NUM")
    core.csb_write(a, 0x1234)
    assert core.csb_read(a) == 0
    a = addr("CDMA.S_CBUF_FLUSH_STATUS")
    core.csb_write(a, 0)
    assert core.csb_read(a) == 1


def test_cfgrom_is_constant():
    core = core_with()
    cfgrom = RMAP["CFGROM"]
    for reg in cfgrom.registers[:8]:
        a = (cfgrom.base + reg.offset) >> 2
        core.csb_write(a, 0xFFFFFFFF ^ reg.reset)
        assert core.csb_read(a) == reg.reset


def test_w_fields_read_zero():
    core = core_with()
    a = addr("GLB.S_INTR_SET")
    core.csb_write(a, 1)
    assert core.csb_read(a) == 0


# -- ping-pong ----------------------------------------------------------------------------------
def test_producer_selects_the_group():
    core = core_with()
    ptr, width = addr("SDP.S_POINTER"), addr("SDP.D_DATA_CUBE_WIDTH")
    core.csb_write(width, 5)                       # group 0
    core.csb_write(ptr, 1)
    assert core.csb_read(ptr) == 1
    assert core.csb_read(width) == 0
    core.csb_write(width, 9)                       # group 1
    assert core.csb_read(width) == 9
    core.csb_write(ptr, 0)
    assert core.csb_read(width) == 5
    assert core.view("SDP", 0).D_DATA_CUBE_WIDTH.WIDTH == 5
    assert core.view("SDP", 1).D_DATA_CUBE_WIDTH.WIDTH == 9


def test_consumer_is_read_only():
    core = core_with()
    ptr = addr("SDP.S_POINTER")
    core.csb_write(ptr, 1 << 16)
    assert core.csb_read(ptr) == 0
    assert core.consumer("SDP") == 0


def test_writes_to_an_enabled_group_are_dropped():
    core = core_with()
    op_en, width = addr("SDP.D_OP_ENABLE"), addr("SDP.D_DATA_CUBE_WIDTH")
    core.csb_write(width, 3)
    core.csb_write(op_en, 1)
    core.csb_write(width, 7)
    assert core.csb_read(width) == 3
    core.csb_write(op_en, 0)                       # D_OP_ENABLE too: only hardware clears it
    assert core.csb_read(op_en) == 1
    assert core.enabled("SDP", 0)
    # The other group is still writable, and single-group registers too.
    core.csb_write(addr("SDP.S_POINTER"), 1)
    core.csb_write(width, 7)
    assert core.csb_read(width) == 7
    core.csb_write(addr("SDP.S_LUT_LE_START"), 0x55)
    assert core.csb_read(addr("SDP.S_LUT_LE_START")) == 0x55


def status(core, block):
    word = core.csb_read(addr(f"{block}.S_STATUS"))
    return field_bits(f"{block}.S_STATUS", "STATUS_0", word), \
        field_bits(f"{block}.S_STATUS", "STATUS_1", word)


def test_status_transitions_and_completion():
    fake = FakeSdp(counters={"D_STATUS_NAN_INPUT_NUM": {"STATUS_NAN_INPUT_NUM": 42}})
    core = core_with(fake)
    ptr = addr("SDP.S_POINTER")
    assert status(core, "SDP") == (0, 0)                       # IDLE, IDLE
    core.csb_write(addr("SDP.D_DATA_CUBE_WIDTH"), 4)
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    assert status(core, "SDP") == (1, 0)                       # RUNNING, IDLE
    core.csb_write(ptr, 1)
    core.csb_write(addr("SDP.D_DATA_CUBE_WIDTH"), 6)
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    assert status(core, "SDP") == (1, 2)                       # RUNNING, PENDING
    # SDP_RDMA is not enabled yet: nothing can start, and pending() says what is missing.
    assert core.step() is False
    assert any("SDP_RDMA group 0" in p for p in core.pending())
    core.csb_write(addr("SDP_RDMA.D_OP_ENABLE"), 1)            # RDMA producer is 0
    assert core.step() is True
    assert fake.runs == [(0, 4)]
    assert status(core, "SDP") == (0, 1)                       # IDLE, RUNNING
    assert core.consumer("SDP") == 1 and core.consumer("SDP_RDMA") == 1
    assert not core.enabled("SDP", 0) and not core.enabled("SDP_RDMA", 0)
    # The hardware-written field landed in group 0 (read through producer 0).
    core.csb_write(ptr, 0)
    assert core.csb_read(addr("SDP.D_STATUS_NAN_INPUT_NUM")) == 42
    assert core.csb_read(addr("SDP.D_OP_ENABLE")) == 0
    # Done interrupt of group 0, nothing for the RDMA.
    st = core.csb_read(addr("GLB.S_INTR_STATUS"))
    assert st == RMAP["GLB"]["S_INTR_STATUS"]["SDP_DONE_STATUS0"].mask
    # Group 1 needs its SDP_RDMA group 1; then it runs, and consumer returns to 0.
    assert core.step() is False
    core.csb_write(addr("SDP_RDMA.S_POINTER"), 1)
    core.csb_write(addr("SDP_RDMA.D_OP_ENABLE"), 1)
    assert core.run() == 1
    assert fake.runs == [(0, 4), (1, 6)]
    assert core.consumer("SDP") == 0
    assert status(core, "SDP") == (0, 0)
    assert core.layers == 2
    glb = RMAP["GLB"]["S_INTR_STATUS"]
    assert core.intr_status == glb["SDP_DONE_STATUS0"].mask | glb["SDP_DONE_STATUS1"].mask


def test_next_layer_starts_when_already_enabled():
    fake = FakeSdp(need_rdma=False)
    core = core_with(fake)
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    core.csb_write(addr("SDP.S_POINTER"), 1)
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    assert core.run() == 2
    assert [g for g, _ in fake.runs] == [0, 1]


def test_completion_interrupts_per_block():
    core = core_with()
    glb = RMAP["GLB"]["S_INTR_STATUS"]
    for b in ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC", "SDP_RDMA", "PDP", "CDP"):
        core.csb_write(addr(f"{b}.D_OP_ENABLE"), 1)
    core.complete(("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC", "SDP_RDMA", "PDP", "CDP"))
    expect = sum(glb[f].mask for f in ("CDMA_DAT_DONE_STATUS0", "CDMA_WT_DONE_STATUS0",
                                        "CACC_DONE_STATUS0", "PDP_DONE_STATUS0",
                                        "CDP_DONE_STATUS0"))
    assert core.intr_status == expect


def test_missing_model_stays_pending():
    core = core_with()                                          # no unit models at all
    core.csb_write(addr("PDP.D_OP_ENABLE"), 1)
    assert core.run() == 0
    assert core.enabled("PDP")
    assert any("PDP" in p and "no PDP unit model" in p for p in core.pending())
    assert status(core, "PDP") == (1, 0)


def test_wait_reason_is_reported():
    class Waiter(UnitModel):
        name = "W"
        blocks = ("SDP",)

        def plan(self, core):
            return Wait("because") if core.enabled("SDP") else None
    core = core_with(Waiter())
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    assert core.step() is False
    assert core.pending() == ["W: because"]


def test_unit_errors_name_the_layer():
    fake = FakeSdp(error=ValueError("SDP.D_DATA_CUBE_WIDTH.WIDTH: too wide"), need_rdma=False)
    core = core_with(fake)
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    with pytest.raises(UnitError, match=r"SDP group 0.*D_DATA_CUBE_WIDTH.WIDTH: too wide"):
        core.step()
    assert core.enabled("SDP")                                  # nothing completed


def test_memory_selection():
    core = core_with()
    assert core.memory(1) is core.dbb
    with pytest.raises(UnitError, match="SDP.D_DST_DMA_CFG.DST_RAM_TYPE=CV.*sramif"):
        core.memory(0, "SDP.D_DST_DMA_CFG.DST_RAM_TYPE")
    big = GoldenCore(NvdlaConfig.preset("nv_large"), units={})
    assert big.memory(0) is big.sram


# -- GLB interrupts ---------------------------------------------------------------------------
def test_interrupt_set_mask_clear():
    core = core_with()
    glb = RMAP["GLB"]
    st, mask, set_ = addr("GLB.S_INTR_STATUS"), addr("GLB.S_INTR_MASK"), addr("GLB.S_INTR_SET")
    pdp1 = glb["S_INTR_STATUS"]["PDP_DONE_STATUS1"].mask
    cacc0 = glb["S_INTR_STATUS"]["CACC_DONE_STATUS0"].mask
    assert not core.interrupt
    core.csb_write(set_, glb["S_INTR_SET"].pack(PDP_DONE_SET1=1, CACC_DONE_SET0=1))
    assert core.csb_read(st) == pdp1 | cacc0
    assert core.interrupt
    core.csb_write(mask, glb["S_INTR_MASK"].pack(PDP_DONE_MASK1=1, CACC_DONE_MASK0=1))
    assert core.csb_read(mask) == pdp1 | cacc0
    assert not core.interrupt                                    # all set bits masked
    assert core.csb_read(st) == pdp1 | cacc0                     # status still records them
    core.csb_write(mask, glb["S_INTR_MASK"].pack(PDP_DONE_MASK1=1))
    assert core.interrupt
    core.csb_write(st, 0)                                        # writing 0 clears nothing
    assert core.csb_read(st) == pdp1 | cacc0
    core.csb_write(st, cacc0)                                    # write 1 to clear
    assert core.csb_read(st) == pdp1
    assert not core.interrupt
    core.csb_write(st, 0xFFFFFFFF)
    assert core.csb_read(st) == 0


def test_hardware_done_sets_status_even_when_masked():
    core = core_with(FakeSdp(need_rdma=False))
    core.csb_write(addr("GLB.S_INTR_MASK"), 0xFFFFFFFF)
    core.csb_write(addr("SDP.D_OP_ENABLE"), 1)
    core.run()
    assert core.intr_status == RMAP["GLB"]["S_INTR_STATUS"]["SDP_DONE_STATUS0"].mask
    assert not core.interrupt
    core.csb_write(addr("GLB.S_INTR_MASK"), 0)
    assert core.interrupt


# -- the SDP unit's register hooks ---------------------------------------------------------------
def test_sdp_lut_access_port():
    pytest.importorskip("sim.sdp")
    pytest.importorskip("sim.sdp.lut")
    cfg = NV_SMALL_EXT
    core = GoldenCore(cfg)
    assert "SDP" in core.units
    acc, data = addr("SDP.S_LUT_ACCESS_CFG"), addr("SDP.S_LUT_ACCESS_DATA")
    core.csb_write(acc, (1 << 17) | (1 << 16) | 3)          # WRITE, LO table, address 3
    for v in (0x1234, 0xFFFF):
        core.csb_write(data, v)
    assert core.sdp_lut.lo[3:5].tolist() == [0x1234, -1]
    assert core.csb_read(acc) & 0x3FF == 5                  # the pointer advanced
    core.csb_write(acc, (1 << 16) | 3)                      # READ, LO, address 3
    assert [core.csb_read(data), core.csb_read(data)] == [0x1234, 0xFFFF]


def test_lut_registers_are_plain_without_a_lut():
    core = GoldenCore(CFG)                                  # nv_small: no SDP LUT
    data = addr("SDP.S_LUT_ACCESS_DATA")
    core.csb_write(data, 0x1234)
    assert core.csb_read(data) == 0x1234


def test_ro_fields_from_model_registers():
    from sim.units import ro_fields
    sdp = RMAP["SDP"]
    assert ro_fields(sdp, {"D_STATUS": 1, "D_PERF_OUT_SATURATION": 7}) == \
        {"D_STATUS": {"STATUS_UNEQUAL": 1}, "D_PERF_OUT_SATURATION": {"OUT_SATURATION": 7}}
    with pytest.raises(UnitError, match="no hardware-written"):
        ro_fields(sdp, {"D_DATA_CUBE_WIDTH": 1})
