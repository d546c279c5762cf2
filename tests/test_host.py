"""``nvdla host`` end to end: the command plays NVDLA trace directories over its serial
protocol (pyserial ``socket://`` URL) against a software board: a TCP server that speaks the
board's framed protocol (:mod:`hw.bridge.serial_host`) with the golden core behind it (CSB
writes and reads, DBBIF memory words, ping). The command must print the same PASS/FAIL lines
and ``N passed, M failed`` summary as ``nvdla trace`` and exit non-zero on a failure."""

from __future__ import annotations

import shutil
import socket
import threading

import pytest

from arch.config import load_config
from hw.bridge.serial_host import PING_VALUE, SOF_REQUEST, SOF_RESPONSE, Command, Status
from scripts.cli import main
from sim.core import GoldenCore

from .conftest import TRACES

pytest.importorskip("serial")

DIR = TRACES / "nv_small"


class GoldenBoard(threading.Thread):
    """A board on a TCP port: the golden core behind the serial protocol (memory addresses
    are the DBBIF's own: the host is told the memory spans the 32-bit space)."""

    def __init__(self, cfg):
        super().__init__(daemon=True)
        self.core = GoldenCore(cfg)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.frames = self.resets = 0

    def answer(self, cmd, addr, data):
        core = self.core
        if cmd == Command.CSB_WRITE:
            core.csb_write(addr >> 2, data)
            core.run()
            return Status.OK, data
        if cmd == Command.CSB_READ:
            core.run()
            return Status.OK, core.csb_read(addr >> 2)
        if cmd == Command.MEM_WRITE:
            core.dbb.write(addr, list(data.to_bytes(4, "little")))
            return Status.OK, data
        if cmd == Command.MEM_READ:
            return Status.OK, int.from_bytes(bytes(core.dbb.read(addr, 4)), "little")
        if cmd == Command.PING:
            return Status.OK, PING_VALUE
        if cmd == Command.IRQ:
            return Status.OK, int(core.interrupt)
        if cmd == Command.RESET:                 # a fresh core, the memory kept
            self.core = GoldenCore(self.core.cfg)
            self.core.dbb = core.dbb
            self.resets += 1
            return Status.OK, data
        return Status.BAD_COMMAND, 0

    def run(self):
        conn, _ = self.sock.accept()
        buf = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 11:
                    if buf[0] != SOF_REQUEST:
                        buf = buf[1:]
                        continue
                    frame, buf = buf[:11], buf[11:]
                    if sum(frame[1:]) & 0xFF:
                        status, value = Status.BAD_CHECKSUM, 0
                    else:
                        status, value = self.answer(frame[1],
                                                    int.from_bytes(frame[2:6], "little"),
                                                    int.from_bytes(frame[6:10], "little"))
                    self.frames += 1
                    body = bytes([int(status)]) + (value & 0xFFFFFFFF).to_bytes(4, "little")
                    conn.sendall(bytes([SOF_RESPONSE]) + body + bytes([-sum(body) & 0xFF]))


def _host(args, board):
    return main(["host", "--port", f"socket://127.0.0.1:{board.port}", "--config", "nv_small",
                 "--mem-bytes", str(1 << 32), *args])


def test_host_ping(capsys):
    board = GoldenBoard(load_config("nv_small"))
    board.start()
    assert _host(["--ping"], board) == 0
    assert "ping: OK 0x4c44564e (NVDL)" in capsys.readouterr().out


def test_host_plays_public_traces(capsys, tmp_path):
    """Two public traces (an SDP pass-through, a convolution) pass; a copy of one with a
    wrong CRC fails with the CRC named, and the summary line counts both."""
    names = ["sdp_1x1x8_pass_through_int8_0", "dc_1x1x8_1x1x8x1_int8_0"]
    if not all((DIR / n).is_dir() for n in names):
        pytest.skip(f"public traces not found at {DIR}")
    bad = tmp_path / "sdp_bad_crc"
    shutil.copytree(DIR / names[0], bad)
    cfg_file = next(bad.glob("*.cfg"))
    text = cfg_file.read_text()
    i = text.rindex("check_crc(")
    j = text.index(")", i)
    args = text[i:j].split(",")
    args[-1] = " 0x12345678"
    cfg_file.write_text(text[:i] + ",".join(args) + text[j:])
    board = GoldenBoard(load_config("nv_small"))
    board.start()
    rc = _host([str(DIR / n) for n in names] + [str(bad)], board)
    out = capsys.readouterr().out
    assert rc == 1, out
    lines = out.splitlines()
    assert sum(line.startswith("PASS ") for line in lines) == 2, out
    assert any(line.startswith("FAIL ") and "sdp_bad_crc" in line for line in lines), out
    assert "!= 0x12345678" in out
    assert lines[-1] == "2 passed, 1 failed"
    assert board.frames > 100 and board.resets == 3
