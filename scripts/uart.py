"""``nvdla uart``: run NVDLA traces on a board through the UART bridge, or ping it.

    nvdla uart --port /dev/ttyUSB0 [--baud 115200] --config nv_small --ping
    nvdla uart --port /dev/ttyUSB0 --config nv_small --mem-bytes 65536 TRACE_DIR...

:class:`TracePlayer` plays a trace over any transport ``await transact(cmd, addr, data) ->
(status, data)`` (the serial protocol of :mod:`hw.bridge.serial_host`): memory images are
written word by word into the board's DBBIF memory (addresses modulo ``mem_bytes``, as the
board's block RAM decodes them), registers through CSB writes, ``poll_reg_equal`` and
``intr_notify`` by polling (``intr_notify`` clears the GLB status bit as NVDLA's test bench
does; the single-shot ``intr_notify(id)`` takes any unmasked source and clears every pending
one), ``reg_read`` / ``reg_read_check`` as one CSB read (the check compares the whole word),
``mem_init`` with the pattern's bytes, ``check_crc`` by reading the range back and computing
``zlib.crc32``, ``check_file`` by reading it back and comparing it with the image's bytes. The cocotb bench
``tb/cocotb_board_uart.py`` drives the same player through the board top's UART pin in
simulation; this command drives it through pyserial.
"""

from __future__ import annotations

import asyncio
import sys
import time
import zlib

import numpy as np

__all__ = ["add_arguments", "run", "TracePlayer", "TraceDoesNotFit"]


class TraceDoesNotFit(ValueError):
    pass


class TracePlayer:
    def __init__(self, transact, cfg, mem_bytes: int, max_polls: int = 10000):
        from arch.registers import register_map
        self.transact, self.cfg, self.size = transact, cfg, mem_bytes
        self.max_polls = max_polls
        self.rmap = register_map(cfg)
        self.glb_status = self.rmap.address("GLB.S_INTR_STATUS")
        self.glb_mask = self.rmap.address("GLB.S_INTR_MASK")
        self.transactions = 0

    async def _t(self, cmd, addr=0, data=0):
        from hw.bridge.serial_host import Status
        self.transactions += 1
        status, value = await self.transact(cmd, addr, data)
        if status != Status.OK:
            raise RuntimeError(f"serial command {cmd!r} at {addr:#x}: {status!r}")
        return value

    def _local(self, addr, size):
        base = addr % self.size
        if base + size > self.size:
            raise TraceDoesNotFit(f"{addr:#x}+{size:#x} wraps past the end of the "
                                  f"{self.size}-byte board memory")
        return base

    async def write_bytes(self, addr, data: bytes):
        from hw.bridge.serial_host import Command
        base = self._local(addr, len(data))
        first, end = base & ~3, (base + len(data) + 3) & ~3
        for w in range(first, end, 4):
            lo, hi = max(w, base), min(w + 4, base + len(data))
            if hi - lo == 4:
                word = int.from_bytes(data[lo - base:hi - base], "little")
            else:
                word = await self._t(Command.MEM_READ, w)
                for a in range(lo, hi):
                    word = word & ~(0xFF << 8 * (a - w)) | data[a - base] << 8 * (a - w)
            await self._t(Command.MEM_WRITE, w, word)

    async def read_bytes(self, addr, size) -> bytes:
        from hw.bridge.serial_host import Command
        base = self._local(addr, size)
        out = bytearray()
        for w in range(base & ~3, (base + size + 3) & ~3, 4):
            out += (await self._t(Command.MEM_READ, w)).to_bytes(4, "little")
        skip = base & 3
        return bytes(out[skip:skip + size])

    async def reset(self) -> bool:
        """Reset the board's core (the bridge's ``RESET``; memory contents stay), as NVDLA's
        test benches start each trace on a fresh core; False if the bridge lacks the command
        (an older bitstream)."""
        from hw.bridge.serial_host import Command, Status
        self.transactions += 1
        status, _ = await self.transact(Command.RESET, 0, 0)
        return status == Status.OK

    async def run(self, trace):
        """(passed, [messages]) of one parsed trace."""
        from hw.bridge.serial_host import Command
        from sim.trace import (CheckCrc, CheckFile, CheckNothing, IntrNotify, MemInit,
                               MemLoad, OrderingPoint, PollRegEqual, RegRead, RegReadCheck,
                               RegWrite)
        msgs = []
        for cmd in trace.commands:
            if isinstance(cmd, MemInit):
                await self.write_bytes(cmd.addr, cmd.data().tobytes())
            elif isinstance(cmd, MemLoad):
                img = cmd.image
                lo, hi = int(img.offsets.min()), int(img.offsets.max()) + 1
                buf = bytearray(await self.read_bytes(cmd.addr + lo, hi - lo))
                for off, b in zip(img.offsets.tolist(), img.data.tolist()):
                    buf[off - lo] = b
                await self.write_bytes(cmd.addr + lo, bytes(buf))
            elif isinstance(cmd, RegWrite):
                await self._t(Command.CSB_WRITE, cmd.addr << 2, cmd.value)
            elif isinstance(cmd, PollRegEqual):
                for _ in range(self.max_polls):
                    if await self._t(Command.CSB_READ, cmd.addr << 2) == cmd.value:
                        break
                else:
                    return False, msgs + [f"{cmd.where}: poll_reg_equal timed out"]
            elif isinstance(cmd, RegRead):
                await self._t(Command.CSB_READ, cmd.addr << 2)
            elif isinstance(cmd, RegReadCheck):
                got = await self._t(Command.CSB_READ, cmd.addr << 2)
                if got != cmd.value:
                    return False, msgs + [cmd.mismatch(got)]
            elif isinstance(cmd, IntrNotify):
                # a single shot waits for any unmasked source and clears every pending one
                masked = (await self._t(Command.CSB_READ, self.glb_mask)) if cmd.single else 0
                for _ in range(self.max_polls):
                    status = await self._t(Command.CSB_READ, self.glb_status)
                    if status & cmd.mask & ~masked:
                        clear = status & cmd.mask & ~masked if cmd.single else cmd.mask
                        await self._t(Command.CSB_WRITE, self.glb_status, clear)
                        break
                else:
                    return False, msgs + [f"{cmd.where}: {cmd.what} timed out"]
            elif isinstance(cmd, CheckCrc):
                crc = zlib.crc32(await self.read_bytes(cmd.addr, cmd.size)) & 0xFFFFFFFF
                ok = crc == cmd.crc
                msgs.append(f"{cmd.where}: check_crc {cmd.addr:#x}+{cmd.size:#x}: "
                            f"{crc:#010x} {'==' if ok else '!='} {cmd.crc:#010x}")
                if not ok:
                    return False, msgs
            elif isinstance(cmd, CheckFile):
                got = np.frombuffer(await self.read_bytes(cmd.addr, cmd.size), np.uint8)
                diff = np.flatnonzero(got != cmd.expected)
                msgs.append(f"{cmd.where}: check_file {cmd.addr:#x}+{cmd.size:#x}: "
                            + (f"{diff.size} bytes differ, first at {cmd.addr + int(diff[0]):#x}"
                               if diff.size else "equal"))
                if diff.size:
                    return False, msgs
            elif isinstance(cmd, (CheckNothing, OrderingPoint)):
                pass                      # nothing to check / ordering only: played in order
            else:
                return False, msgs + [f"{cmd.where}: {type(cmd).__name__} is not played over "
                                      f"the serial bridge"]
        return True, msgs


def add_arguments(p):
    p.add_argument("--port", required=True, help="serial port of the board (pyserial URL)")
    p.add_argument("--baud", type=int, default=115200)
    p.add_argument("--config", default="nv_small", help="the board's build configuration")
    p.add_argument("--mem-bytes", type=int, default=65536, help="the board's DBBIF memory")
    p.add_argument("--ping", action="store_true", help="only check the link")
    p.add_argument("traces", nargs="*", help="trace directories")


def run(args):
    try:
        import serial
    except ImportError:
        print(f"nvdla {args.command}: needs pyserial (pip install pyserial)", file=sys.stderr)
        return 2
    from arch.config import load_config
    from hw.bridge.serial_host import Command, PING_VALUE, parse_response, request_frame
    from sim.trace import parse_trace
    port = serial.serial_for_url(args.port, baudrate=args.baud, timeout=0.5)

    async def transact(cmd, addr=0, data=0):
        for _ in range(3):
            port.reset_input_buffer()
            port.write(request_frame(cmd, addr, data))
            frame = port.read(7)
            if len(frame) == 7:
                return parse_response(frame)
        raise RuntimeError("no answer from the board")

    cfg = load_config(args.config)
    status, value = asyncio.run(transact(Command.PING))
    print(f"ping: {status.name} {value:#010x}" + (" (NVDL)" if value == PING_VALUE else ""))
    if args.ping:
        return 0 if value == PING_VALUE else 1
    failed = 0
    for t in args.traces:
        player = TracePlayer(transact, cfg, args.mem_bytes)
        t0 = time.perf_counter()
        try:
            if not asyncio.run(player.reset()):
                print(f"nvdla {args.command}: the board's bridge has no RESET command: "
                      f"{t} runs on the core as the last trace left it", file=sys.stderr)
            ok, msgs = asyncio.run(player.run(parse_trace(t, cfg)))
        except (TraceDoesNotFit, RuntimeError, ValueError) as e:
            ok, msgs = False, [str(e)]
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {t} ({player.transactions} transactions, "
              f"{time.perf_counter() - t0:.1f} s)")
        for m in msgs:
            print("  " + m)
    print(f"{len(args.traces) - failed} passed, {failed} failed")
    return 1 if failed else 0
