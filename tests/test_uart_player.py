"""scripts.uart.TracePlayer against a fake board (a dict memory and CSB behind the serial
commands): partial words, wrap-around, and a trace's command sequence."""

import asyncio

import numpy as np
import pytest

from arch.config import load_config
from hw.bridge.serial_host import Command, Status
from scripts.uart import TraceDoesNotFit, TracePlayer


class FakeBoard:
    def __init__(self, size):
        self.size, self.mem, self.csb, self.log = size, {}, {}, []

    async def transact(self, cmd, addr=0, data=0):
        self.log.append((Command(cmd).name, addr, data))
        if cmd == Command.MEM_WRITE:
            assert addr % 4 == 0 and addr < self.size
            self.mem[addr] = data
            return Status.OK, data
        if cmd == Command.MEM_READ:
            return Status.OK, self.mem.get(addr, 0)
        if cmd == Command.CSB_WRITE:
            self.csb[addr] = data
            return Status.OK, data
        if cmd == Command.CSB_READ:
            return Status.OK, self.csb.get(addr, 0)
        return Status.BAD_COMMAND, data


def test_partial_words_and_wrap():
    board = FakeBoard(4096)
    p = TracePlayer(board.transact, load_config("nv_small"), 4096)
    board.mem[0x100] = 0xAABBCCDD
    board.mem[0x104] = 0x11223344
    asyncio.run(p.write_bytes(0x80000102, bytes([1, 2, 3])))   # wraps to 0x102..0x104
    assert board.mem[0x100] == 0x0201CCDD
    assert board.mem[0x104] == 0x11223303
    assert asyncio.run(p.read_bytes(0x90000101, 4)) == bytes([0xCC, 0x01, 0x02, 0x03])
    with pytest.raises(TraceDoesNotFit):
        asyncio.run(p.write_bytes(0xFFE, bytes(4)))             # past the end of the memory


def test_trace_commands_over_the_protocol(tmp_path):
    from sim.trace import parse_trace_text
    cfg = load_config("nv_small")
    text = """
mem_init(pri_mem, 0x80000000, 0x8, ALL_ZERO);
reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x7);
poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x7);
reg_write(NVDLA_GLB.S_INTR_STATUS_0, 0x0);
intr_notify(SDP_0, sync_id_0);
check_crc(sync_id_0, 1, 0x80000000, 0x8, 0x6522df69);
"""
    from types import SimpleNamespace
    trace = SimpleNamespace(commands=parse_trace_text(text, cfg, path=str(tmp_path / "t.cfg")))
    board = FakeBoard(4096)
    board.mem[0] = 0xFFFFFFFF
    p = TracePlayer(board.transact, cfg, 4096)
    real = board.transact

    async def transact(cmd, addr=0, data=0):        # the SDP layer "finishes" on the poll
        if cmd == Command.CSB_READ and addr == p.glb_status:
            return Status.OK, 0xFFFFFFFF
        return await real(cmd, addr, data)
    p.transact = transact
    ok, msgs = asyncio.run(p.run(trace))
    assert ok, msgs
    from arch.registers import register_map
    a = register_map(cfg).address("SDP.D_DATA_CUBE_WIDTH")
    assert board.csb[a] == 7 and board.mem[0] == 0 and board.mem[4] == 0
    assert ("CSB_WRITE", a, 7) in board.log and ("CSB_READ", a, 0) in board.log
    # intr_notify cleared the SDP group-0 status bit by writing it back
    mask = next(c.mask for c in trace.commands if type(c).__name__ == "IntrNotify")
    assert board.csb[p.glb_status] == mask


class WrappedMemory:
    """A golden-model memory decoded as the board's block RAM decodes it (addresses modulo
    its size), so that the player's local addresses and the layer's full ones meet."""

    def __init__(self, size):
        from sim.memory import SparseMemory
        self.size, self.mem = size, SparseMemory()

    def read(self, addr, size):
        return self.mem.read(addr % self.size, size)

    def write(self, addr, data):
        self.mem.write(addr % self.size, data)

    def fill(self, addr, size, value=0):
        self.mem.fill(addr % self.size, size, value)

    def gather(self, addrs):
        return self.mem.gather(addrs % self.size)

    def scatter(self, addrs, values):
        self.mem.scatter(addrs % self.size, values)


class GoldenBoard:
    """A fake board whose core is the golden model: the serial commands reach its CSB and
    its DBBIF memory (a layer runs as soon as a register write can start it)."""

    def __init__(self, cfg, size):
        from sim.core import GoldenCore
        self.core = GoldenCore(cfg)
        self.core.dbb = WrappedMemory(size)
        self.size = size

    async def transact(self, cmd, addr=0, data=0):
        if cmd == Command.MEM_WRITE:
            assert addr % 4 == 0 and addr < self.size
            self.core.dbb.write(addr, np.frombuffer(data.to_bytes(4, "little"), np.uint8))
            return Status.OK, data
        if cmd == Command.MEM_READ:
            return Status.OK, int.from_bytes(self.core.dbb.read(addr, 4).tobytes(), "little")
        if cmd == Command.CSB_WRITE:
            self.core.csb_write(addr >> 2, data)
            self.core.run()
            return Status.OK, data
        if cmd == Command.CSB_READ:
            return Status.OK, self.core.csb_read(addr >> 2)
        return Status.BAD_COMMAND, data


def test_every_command_on_a_golden_board(tmp_path):
    """NVDLA's SDP pass-through rewritten with every command of the language
    (tests/test_trace.py) passes through the serial protocol on a board whose core is the
    golden model; its copy with a wrong reg_read_check stops there."""
    from sim.trace import parse_trace
    from .test_trace import FILLS, NV_SMALL, rewrite_pass_through
    d = rewrite_pass_through(tmp_path)
    if d is None:
        pytest.skip(f"public traces not found at {NV_SMALL}")
    cfg = load_config("nv_small")
    board = GoldenBoard(cfg, 1 << 21)         # 2 MiB: the trace's regions do not alias
    p = TracePlayer(board.transact, cfg, 1 << 21)
    ok, msgs = asyncio.run(p.run(parse_trace(str(d), cfg)))
    assert ok, msgs
    assert sum("check_crc" in m for m in msgs) == 1
    assert sum(m.endswith(": equal") for m in msgs) == 1 + len(FILLS)    # every check_file
    cfg_file = d / f"{d.name}.cfg"
    cfg_file.write_text(cfg_file.read_text().replace(
        "reg_read_check(NVDLA_SDP.S_POINTER_0, 0x0);", "reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1);"))
    board = GoldenBoard(cfg, 1 << 21)
    ok, msgs = asyncio.run(TracePlayer(board.transact, cfg, 1 << 21).run(parse_trace(str(d), cfg)))
    assert not ok and msgs[-1].endswith("reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1): read 0x0")
