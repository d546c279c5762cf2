"""The trace language (sim/trace.py), the trace runner (sim/trace_run.py, `nvdla trace`) and
the golden engine on NVDLA's public nv_small traces (skipped when ../shared is absent)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from arch.config import NvdlaConfig
from arch.registers import register_map
from sim import trace_run
from sim.core import GoldenCore, Launch, UnitModel
from sim.memory import SparseMemory
from sim.trace import (PATTERNS, CheckCrc, CheckFile, CheckNothing, IntrNotify, MemInit,
                       MemLoad, OrderingPoint, PollRegEqual, RegRead, RegReadCheck, RegWrite,
                       SyncNotify, SyncWait, TraceError, expand_trace_dirs, find_trace_cfg,
                       load_dat, parse_dat, parse_trace, pattern_bytes)
from sim.trace_run import EngineUnavailable, run_golden, run_trace
from sim.units import default_units, missing_models

from .conftest import NV_SMALL_EXT, TRACES

CFG = NvdlaConfig.preset("nv_small")
RMAP = register_map(CFG)
# nv_small with the SDP Y stage (EW + LUT): the build the EW/LUT traces' CRCs assume.
CFG_EW_LUT = NV_SMALL_EXT
EW_LUT_TRACES = ("sdp_3x3x32_ew_lo_lin_int8", "sdp_3x3x33_ew_int8_reg_0",
                 "sdp_3x3x33_ew_le_exp_int8")


def make_trace(tmp_path, text, name="t", dats=None):
    d = tmp_path / name
    d.mkdir()
    (d / f"{name}.cfg").write_text(text)
    for fname, content in (dats or {}).items():
        (d / fname).write_text(content)
    return d


#: the first bytes of pattern_bytes("RANDOM", 0x80000000, 0x1000): a change would change
#: what every engine fills
PINNED_RANDOM = [199, 82, 224, 140, 125, 89, 78, 32]

DAT = """{
{offset:0x0, size:4, payload:0x01 0x02 0x03 0x04} ,
{offset:0x10, size:2, payload:0xAB 0xcd} ,
}
"""


# -- parser -------------------------------------------------------------------------------------
def test_every_command(tmp_path):
    d = make_trace(tmp_path, """// a comment line
mem_init(pri_mem, 0x80000000, 0x100, ALL_ZERO);
mem_load(pri_mem, 0x80000000, "img.dat");   // trailing comment
reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x7);
reg_write(NVDLA_SDP_RDMA.D_OP_ENABLE_0,0x1);
reg_write(NVDLA_SDP.S_POINTER_0, 0);
poll_reg_equal(NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0,0x1);
intr_notify(SDP_1, sync_id_0);
intr_notify(CDMA_WT_0, other_sync);
check_crc(sync_id_0, 1, 0x80000000, 0x20, 0xdeadbeef);
check_crc(other_sync, pri_mem, 0x80000000, 0x20, 0x1);
check_nothing(sync_id_0);
""", dats={"img.dat": DAT})
    tr = parse_trace(str(d), CFG)
    assert tr.name == "t" and tr.path.endswith("t.cfg")
    c = tr.commands
    assert [type(x) for x in c] == [MemInit, MemLoad, RegWrite, RegWrite, RegWrite, PollRegEqual,
                                   IntrNotify, IntrNotify, CheckCrc, CheckCrc, CheckNothing]
    assert (c[0].mem, c[0].addr, c[0].size, c[0].pattern, c[0].line) == \
        ("dbb", 0x80000000, 0x100, "ALL_ZERO", 2)
    assert c[1].mem == "dbb" and c[1].addr == 0x80000000 and c[1].path.endswith("img.dat")
    assert c[1].image.size == 6
    w = c[2]
    assert (w.block, w.register, w.value) == ("SDP", "D_DATA_CUBE_WIDTH", 7)
    assert w.addr == RMAP.address("SDP.D_DATA_CUBE_WIDTH") >> 2
    assert (c[3].block, c[3].register, c[3].value) == ("SDP_RDMA", "D_OP_ENABLE", 1)
    assert c[4].value == 0
    assert (c[5].block, c[5].register, c[5].value) == ("CDMA", "S_CBUF_FLUSH_STATUS", 1)
    glb = RMAP["GLB"]["S_INTR_STATUS"]
    assert (c[6].source, c[6].sync_id, c[6].status_field, c[6].mask) == \
        ("SDP_1", "sync_id_0", "SDP_DONE_STATUS1", glb["SDP_DONE_STATUS1"].mask)
    assert c[7].status_field == "CDMA_WT_DONE_STATUS0"
    assert (c[8].sync_id, c[8].mem, c[8].addr, c[8].size, c[8].crc) == \
        ("sync_id_0", "dbb", 0x80000000, 0x20, 0xDEADBEEF)
    assert c[9].mem == "dbb"
    assert c[10].sync_id == "sync_id_0"
    assert c[10].where.endswith("t.cfg:12")
    assert tr.enabled_blocks() == {"SDP_RDMA"}


def test_dat_records():
    img = parse_dat(DAT, "x.dat")
    assert img.offsets.tolist() == [0, 1, 2, 3, 0x10, 0x11]
    assert img.data.tolist() == [1, 2, 3, 4, 0xAB, 0xCD]
    mem = SparseMemory()
    img.write_to(mem, 0x80000100)
    assert mem.read(0x80000100, 0x12).tolist() == [1, 2, 3, 4] + [0] * 12 + [0xAB, 0xCD]


def test_dat_without_outer_braces_and_one_digit_bytes():
    img = parse_dat("{offset:0x4, size:3, payload:0x0A 0x1 0xff},\n"
                    "{offset:0x7, size:1, payload:0x10},\n", "x.dat")
    assert img.offsets.tolist() == [4, 5, 6, 7]
    assert img.data.tolist() == [10, 1, 255, 16]


def test_dat_scattered_records_use_scatter():
    text = "".join(f"{{offset:{hex(i * 8)}, size:1, payload:{hex(i % 256)}}},\n"
                   for i in range(300))
    img = parse_dat(text)
    mem = SparseMemory()
    img.write_to(mem, 0x1000)
    assert mem.read(0x1000 + 8 * 299, 1)[0] == 299 % 256
    assert mem.read(0x1001, 7).tolist() == [0] * 7


def test_empty_dat():
    assert parse_dat("{\n}\n").size == 0


@pytest.mark.parametrize("text, line, message", [
    ("{\n{offset:0x0, size:3, payload:0x01 0x02} ,\n}\n", 2, "size:3 but has 2"),
    ("{\n{offset:0x0, size:1, payload:0x01},\ngarbage\n}\n", 3, "not a {offset"),
    ("{offset:0x0, size:1, payload:0x01},\n{offset:0x1, size:2, payload:0x01 12}\n", 2,
     "0xNN tokens"),
    ("{offset:0x0, size:1, payload:0x123}\n", 1, "0xNN tokens"),
])
def test_dat_errors(text, line, message):
    with pytest.raises(TraceError, match=rf"^img\.dat:{line}: .*{message}"):
        parse_dat(text, "img.dat")


def test_load_dat_missing_file(tmp_path):
    with pytest.raises(TraceError, match="cannot read image"):
        load_dat(str(tmp_path / "nope.dat"))


@pytest.mark.parametrize("stmt, message", [
    ("reg_write(NVDLA_SDP.D_NO_SUCH_0, 0x1);", r"unknown register NVDLA_SDP\.D_NO_SUCH_0"),
    ("reg_write(NVDLA_NOPE.D_OP_ENABLE_0, 0x1);", r"unknown register .*no block 'NOPE'"),
    ("reg_write(D_OP_ENABLE_0, 0x1);", "unknown register"),
    ("poll_reg_equal(NVDLA_SDP.BOGUS_0, 1);", r"unknown register NVDLA_SDP\.BOGUS_0"),
    ("reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x100000000);", "does not fit in 32 bits"),
    ("reg_write(NVDLA_SDP.D_OP_ENABLE_0, one);", "must be a number"),
    ("reg_write(NVDLA_SDP.D_OP_ENABLE_0);", "reg_write takes 2 arguments, got 1"),
    ("reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1)", "expected 'command"),
    ("reg_peek(NVDLA_SDP.D_OP_ENABLE_0, 0x1);", "unknown command 'reg_peek'"),
    ("reg_read(NVDLA_SDP.D_NO_SUCH_0, v);", r"unknown register NVDLA_SDP\.D_NO_SUCH_0"),
    ("reg_read(NVDLA_SDP.S_POINTER_0, 1+);", "reg_read: expected a variable name"),
    ("reg_read_check(NVDLA_SDP.S_POINTER_0);", "reg_read_check takes 2 arguments, got 1"),
    ("reg_read_check(NVDLA_SDP.S_POINTER_0, zero);", "must be a number"),
    ('mem_init(pri_mem, 0x0, "missing.dat", ONES);', "image \"missing.dat\" not found"),
    ('mem_init(pri_mem, 0x0, "empty.dat");', "has no bytes"),
    ("mem_init(pri_mem, 0x0, 0x10, ALL_ONES, 1);", "mem_init takes 3 or 4 arguments, got 5"),
    ("intr_notify(1x);", "bad sync id"),
    ("intr_notify(SDP_0, s, t);", "intr_notify takes 1 or 2 arguments, got 3"),
    ('check_file(never, pri_mem, 0x0, 0x4, "img.dat");', "check_file: sync id 'never'"),
    ("check_nothing(never, 1, 0x0, 0x10, 0x0);", "sync id 'never' has no intr_notify"),
    ("check_nothing(s, 1);", "check_nothing takes 1 or 5 arguments, got 2"),
    ("mem_init(pri_mem, 0x0, 0x10, ALL_ONES);", "unknown fill pattern"),
    ("mem_init(fast_mem, 0x0, 0x10, ALL_ZERO);", "unknown memory 'fast_mem'"),
    ('mem_load(pri_mem, 0x0, "missing.dat");', "image \"missing.dat\" not found"),
    ("mem_load(pri_mem, 0x0, img.dat);", "must be quoted"),
    ("intr_notify(FOO_0, s);", "unknown interrupt source 'FOO_0'"),
    ("intr_notify(SDP_2, s);", "unknown interrupt source 'SDP_2'"),
    ("check_crc(never, 1, 0x0, 0x10, 0x0);", "sync id 'never' has no intr_notify"),
    ("check_nothing(never);", "sync id 'never' has no intr_notify"),
    ("check_crc(never, 3, 0x0, 0x10, 0x0);", "unknown memory '3'|sync id"),
    ("sync_wait(NVDLA_CSC, never);", "sync_wait: sync id 'never' has no sync_notify"),
    ("sync_notify(CACC, s);", "sync_notify: expected NVDLA_<BLOCK>"),
    ("sync_notify(NVDLA_NOPE, s);", "sync_notify: unknown block 'NOPE'"),
    ("sync_wait(NVDLA_CSC);", "sync_wait takes 2 arguments, got 1"),
    ("sync_notify(NVDLA_CACC, 1x);", "bad sync id"),
])
def test_errors_name_file_and_line(tmp_path, stmt, message):
    d = make_trace(tmp_path, f"// header\nmem_init(pri_mem, 0x0, 0x10, ALL_ZERO);\n\n{stmt}\n",
                   dats={"img.dat": DAT, "empty.dat": "{\n}\n"})
    with pytest.raises(TraceError, match=rf"t\.cfg:4: .*(?:{message})"):
        parse_trace(str(d), CFG)


def test_the_rest_of_nvdlas_language(tmp_path):
    """mem_init patterns and over an image, reg_read, reg_read_check, the single-shot
    intr_notify, check_file, check_nothing with a check's arguments, names in any case."""
    d = make_trace(tmp_path, """mem_init(PRI_MEM, 0x80000000, 0x10, ADDR);
mem_init(pri_mem, 0x80000100, "img.dat");
mem_init(sec_mem, 0x50000000, "img.dat", fivea);
mem_init(pri_mem, 0x80000200, 0x8);
reg_read(nvdla_sdp.s_pointer_0, value);
reg_read_check(NVDLA_Sdp.S_Pointer_0, 0x1);
reg_write(nvdla_sdp.d_op_enable_0, 0x1);
poll_reg_equal(nvdla_glb.s_intr_status_0, 0x0);
intr_notify(sync_a);
intr_notify(cdma_dat_0, sync_b);
check_file(sync_a, pri_mem, 0x80000100, 0x4, "img.dat");
check_nothing(sync_b, pri_mem, 0x80000000, 0x10, 0x0);
sync_notify(nvdla_cacc, s);
sync_wait(Nvdla_Csc, s);
""", dats={"img.dat": DAT})
    c = parse_trace(str(d), CFG).commands
    assert [type(x) for x in c] == [MemInit, MemInit, MemInit, MemInit, RegRead, RegReadCheck,
                                   RegWrite, PollRegEqual, IntrNotify, IntrNotify, CheckFile,
                                   CheckNothing, SyncNotify, SyncWait]
    assert (c[0].pattern, c[0].size, c[0].fill, c[0].path) == ("ADDR", 0x10, None, "")
    assert c[0].data().tolist() == list(range(0x10))
    # over the image: offsets 0 .. 0x11 (the last record ends at 0x12), zeros by default
    assert (c[1].addr, c[1].size, c[1].pattern, c[1].fill) == (0x80000100, 0x12, "ALL_ZERO", 0)
    assert c[1].path.endswith("img.dat")
    assert (c[2].mem, c[2].size, c[2].pattern, c[2].fill) == ("sram", 0x12, "FIVEA", 0x5A)
    assert (c[3].size, c[3].pattern) == (8, "ALL_ZERO")
    sp = RMAP.address("SDP.S_POINTER") >> 2
    assert (c[4].block, c[4].register, c[4].addr, c[4].var) == ("SDP", "S_POINTER", sp, "value")
    assert (c[5].addr, c[5].value, c[5].name) == (sp, 1, "NVDLA_Sdp.S_Pointer_0")
    assert (c[6].block, c[6].register) == ("SDP", "D_OP_ENABLE")
    status = RMAP["GLB"]["S_INTR_STATUS"]
    assert c[8].single and c[8].sync_id == "sync_a" and c[8].mask == status.mask()
    assert c[8].what == "intr_notify(sync_a)"
    assert not c[9].single and c[9].source == "CDMA_DAT_0" and \
        c[9].mask == status["CDMA_DAT_DONE_STATUS0"].mask
    assert (c[10].sync_id, c[10].addr, c[10].size) == ("sync_a", 0x80000100, 4)
    assert c[10].expected.tolist() == [1, 2, 3, 4]
    assert c[11].sync_id == "sync_b"
    assert (c[12].block, c[13].block) == ("CACC", "CSC")


def test_check_file_image_must_cover_the_region(tmp_path):
    d = make_trace(tmp_path, """intr_notify(s);
check_file(s, pri_mem, 0x80000000, 0x4, "img.dat");
check_file(s, pri_mem, 0x80000000, 0x6, "img.dat");
""", dats={"img.dat": DAT})
    with pytest.raises(TraceError, match=r"t\.cfg:3: check_file: image \"img\.dat\" does not "
                       r"cover the region 0x80000000\+0x6 \(no byte at offset 0x4\)"):
        parse_trace(str(d), CFG)


def test_pattern_bytes():
    for name, byte in (("ALL_ZERO", 0), ("ONES", 0xFF), ("AFIVE", 0xA5), ("FIVEA", 0x5A)):
        assert PATTERNS[name] == byte and pattern_bytes(name, 0x123, 5).tolist() == [byte] * 5
    assert pattern_bytes("ADDR", 0x800000FE, 4).tolist() == [0xFE, 0xFF, 0x00, 0x01]
    r = pattern_bytes("RANDOM", 0x80000000, 0x1000)
    assert r.dtype == np.uint8 and r.size == 0x1000
    # fixed by address and size (every engine gets these bytes), the same for X
    assert np.array_equal(r, pattern_bytes("RANDOM", 0x80000000, 0x1000))
    assert np.array_equal(r, pattern_bytes("X", 0x80000000, 0x1000))
    assert r[:8].tolist() == PINNED_RANDOM
    assert not np.array_equal(r[:16], pattern_bytes("RANDOM", 0x80000008, 0x1000)[:16])
    assert not np.array_equal(r[:16], pattern_bytes("RANDOM", 0x80000000, 0x800)[:16])
    assert 100 < len(set(r.tolist())) and abs(float(r.mean()) - 127.5) < 10


def test_golden_runs_the_rest_of_the_language(tmp_path):
    """reg_read_check fails on a different word (the trace goes on), check_file fails on a
    different byte, the single-shot intr_notify clears every pending unmasked source."""
    d = make_trace(tmp_path, """mem_init(pri_mem, 0x80000000, 0x40, ONES);
mem_init(pri_mem, 0x80000100, "img.dat", AFIVE);
mem_load(pri_mem, 0x80000100, "img.dat");
reg_read(NVDLA_GLB.S_INTR_STATUS_0, before);
reg_read_check(NVDLA_SDP.S_POINTER_0, 0x0);
reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1);
reg_write(NVDLA_GLB.S_INTR_MASK_0, 0x10);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x13);
intr_notify(s);
reg_read_check(NVDLA_GLB.S_INTR_STATUS_0, 0x10);
check_file(s, pri_mem, 0x80000100, 0x4, "img.dat");
check_file(s, pri_mem, 0x80000100, 0x12, "ones.dat");
check_file(s, pri_mem, 0x80000000, 0x40, "ones.dat");
""", dats={"img.dat": DAT, "ones.dat": _dat_text(b"\xff" * 0x40),
           })
    r = run_golden(parse_trace(str(d), CFG), CFG, core=GoldenCore(CFG, units={}))
    assert not r.passed
    msgs = r.message.split("; ")
    assert msgs[0] == f"{d}/t.cfg:6: reg_read_check(NVDLA_SDP.S_POINTER_0, 0x1): read 0x0"
    # the image: 1 2 3 4 at 0..3, 0xa5 in the hole 4..0xf, 0xab 0xcd at 0x10
    assert msgs[1].startswith(f"{d}/t.cfg:12: check_file(s) dbb 0x80000100+0x12: 18 bytes "
                              "differ, first at 0x80000100 (expected 0xff, actual 0x01)"), msgs
    assert len(msgs) == 2 and [c.passed for c in r.checks] == [True, False, True]


def _dat_text(data: bytes, offset=0) -> str:
    return "{offset:%#x, size:%d, payload:%s}\n" % (offset, len(data),
                                                      " ".join(f"0x{b:02x}" for b in data))


# -- NVDLA's SDP pass-through trace rewritten with every command of the language ----------------
PASS_THROUGH = "sdp_8x8x32_bypass_int8_1"
#: the fill of each pattern: (pattern, address, size), each compared with check_file
FILLS = (("ALL_ZERO", 0x80100000, 0x30), ("ONES", 0x80100040, 0x28), ("AFIVE", 0x80100080, 0x20),
         ("FIVEA", 0x801000c0, 0x18), ("ADDR", 0x801000f0, 0x20), ("RANDOM", 0x80100200, 0x100),
         ("X", 0x80100400, 0x44))


def rewrite_pass_through(dst, src=None):
    """NVDLA's SDP pass-through trace (``PASS_THROUGH``) copied into ``dst`` and rewritten
    with every command NVDLA's player takes; returns the trace directory, or None when the
    public traces are absent. It must still pass: the output region is filled with RANDOM
    over its image's extent before the layer overwrites it, the input region with X before
    its image is loaded; each pattern fills its own region, compared with ``check_file``
    against an image the test writes; registers are read (``reg_read``) and checked
    (``reg_read_check``), some names are in lower case, the interrupt is a single shot, and
    the output is compared with the input (a pass-through) by ``check_file``."""
    src = src or (NV_SMALL / PASS_THROUGH)
    if not src.is_dir():
        return None
    out = dst / f"{PASS_THROUGH}_every_command"
    out.mkdir(parents=True)
    for f in src.iterdir():
        if f.suffix == ".dat":
            (out / f.name).write_text(f.read_text())
    text = (src / f"{PASS_THROUGH}.cfg").read_text()
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith('mem_load(pri_mem, 0x80000000, "SDP_0_input.dat")'):
            lines.append("mem_init(pri_mem, 0x80000000, 0x800, X);")
            lines.append(line)
            lines.append('mem_init(pri_mem, 0x80080000, "SDP_0_output.dat", RANDOM);')
            for pattern, addr, size in FILLS:
                lines.append(f"mem_init(pri_mem, {addr:#x}, {size:#x}, {pattern});")
                data = pattern_bytes(pattern, addr, size).tobytes()
                (out / f"fill_{pattern.lower()}.dat").write_text(_dat_text(data))
            lines.append("reg_read_check(NVDLA_SDP.S_POINTER_0, 0x0);")
            lines.append("reg_read(nvdla_sdp.s_status_0, sdp_status);")
            lines.append("sync_notify(nvdla_sdp_rdma, rdma_programmed);")
        elif s.startswith("reg_write(NVDLA_SDP_RDMA."):
            lines.append(line.replace("NVDLA_SDP_RDMA.", "nvdla_sdp_rdma.").replace(
                s[s.index(".") + 1:s.index(",")], s[s.index(".") + 1:s.index(",")].lower()))
        elif s.startswith("reg_write(NVDLA_SDP.D_OP_ENABLE_0"):
            lines.append("sync_wait(NVDLA_Sdp, rdma_programmed);")
            lines.append(line)
        elif s.startswith("intr_notify(SDP_0, "):
            lines.append("intr_notify(SDP_0_SDP_0_interrupt);")
            lines.append("reg_read_check(NVDLA_GLB.S_INTR_STATUS_0, 0x0);")
        elif s.startswith("check_crc("):
            lines.append(line)
            lines.append('check_file(SDP_0_SDP_0_interrupt, pri_mem, 0x80080000, 0x800, '
                         '"SDP_0_input.dat");')
            for pattern, addr, size in FILLS:
                lines.append(f'check_file(SDP_0_SDP_0_interrupt, pri_mem, {addr:#x}, {size:#x},'
                             f' "fill_{pattern.lower()}.dat");')
            lines.append("check_nothing(SDP_0_SDP_0_interrupt, pri_mem, 0x80080000, 0x800, "
                         "0x0);")
        else:
            lines.append(line)
    (out / f"{out.name}.cfg").write_text("\n".join(lines) + "\n")
    return out


def every_command_kinds(trace) -> set:
    return {type(c).__name__ + ("/single" if getattr(c, "single", False) else "")
            + (f"/{c.pattern}" if isinstance(c, MemInit) else "")
            + ("/image" if isinstance(c, MemInit) and c.path else "") for c in trace.commands}


def test_rewritten_pass_through_has_every_command(tmp_path):
    d = rewrite_pass_through(tmp_path)
    if d is None:
        pytest.skip(f"public traces not found at {NV_SMALL}")
    kinds = every_command_kinds(parse_trace(str(d), CFG))
    assert {"RegRead", "RegReadCheck", "IntrNotify/single", "CheckFile", "CheckCrc",
            "CheckNothing", "SyncNotify", "SyncWait", "MemLoad", "RegWrite",
            "MemInit/RANDOM/image"} <= kinds
    assert {f"MemInit/{p}" for p in PATTERNS} <= kinds
    assert "nvdla_sdp_rdma.d_src_base_addr_low_0" in (d / f"{d.name}.cfg").read_text()


def test_golden_rewritten_pass_through(tmp_path):
    d = rewrite_pass_through(tmp_path)
    if d is None:
        pytest.skip(f"public traces not found at {NV_SMALL}")
    r = run_trace(str(d), CFG)
    assert r.passed, r.message
    assert len(r.checks) == 2 + len(FILLS) and all(c.passed for c in r.checks)


def test_sync_notify_and_wait_are_ordering_points(tmp_path):
    d = make_trace(tmp_path, """sync_notify(NVDLA_CACC, sync_cacc);
reg_write(NVDLA_CSC.S_POINTER_0, 0x0);
sync_wait(NVDLA_CSC, sync_cacc);
sync_wait(NVDLA_CMAC_A, sync_cacc);   // one notify may release several waits
""")
    c = parse_trace(str(d), CFG).commands
    assert [type(x) for x in c] == [SyncNotify, RegWrite, SyncWait, SyncWait]
    assert (c[0].unit, c[0].block, c[0].sync_id) == ("NVDLA_CACC", "CACC", "sync_cacc")
    assert (c[2].block, c[2].sync_id, c[3].block) == ("CSC", "sync_cacc", "CMAC_A")
    assert isinstance(c[0], OrderingPoint) and isinstance(c[2], OrderingPoint)
    assert c[3].where.endswith("t.cfg:4")


def test_sync_wait_needs_an_earlier_notify(tmp_path):
    """Only a sync_notify earlier in the file counts (not a later one, not an intr_notify)."""
    for text in ("sync_wait(NVDLA_CSC, s);\nsync_notify(NVDLA_CACC, s);\n",
                 "reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);\nintr_notify(SDP_0, s);\n"
                 "sync_wait(NVDLA_CSC, s);\n"):
        d = make_trace(tmp_path, text, name=f"t{len(text)}")
        with pytest.raises(TraceError, match=r"\.cfg:[13]: sync_wait: sync id 's' has no "
                                             r"sync_notify before it"):
            parse_trace(str(d), CFG)


def test_golden_runner_treats_sync_points_as_no_ops(tmp_path):
    d = make_trace(tmp_path, """mem_init(pri_mem, 0x80000000, 0x10, ALL_ZERO);
sync_notify(NVDLA_SDP, a);
reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);
sync_wait(NVDLA_SDP_RDMA, a);
intr_notify(SDP_0, s);
sync_notify(NVDLA_CDMA, b);
sync_wait(NVDLA_CSC, b);
check_crc(s, 1, 0x80000000, 0x10, %#x);
""" % zlib.crc32(bytes(16)))
    res = run_golden(parse_trace(str(d), CFG), CFG)
    assert res.passed, res.message
    assert len(res.checks) == 1


def test_register_of_a_block_the_build_lacks(tmp_path):
    d = make_trace(tmp_path, "reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);\n")
    no_pdp = CFG.replace(name="no_pdp", pdp_throughput=0)
    with pytest.raises(TraceError, match=r"t\.cfg:1: unknown register .*no block 'PDP'"):
        parse_trace(str(d), no_pdp)


def test_bad_dat_reports_the_dat_line(tmp_path):
    d = make_trace(tmp_path, 'mem_load(pri_mem, 0x0, "bad.dat");\n',
                   dats={"bad.dat": "{\n{offset:0x0, size:2, payload:0x01}\n}\n"})
    with pytest.raises(TraceError, match=r"bad\.dat:2: record says size:2"):
        parse_trace(str(d), CFG)


def test_trace_dir_discovery(tmp_path):
    a = make_trace(tmp_path, "", name="a")
    b = make_trace(tmp_path, "", name="b")
    (b / "extra.cfg").write_text("")
    c = tmp_path / "c"
    c.mkdir()
    (c / "one.cfg").write_text("")
    assert find_trace_cfg(str(a)).endswith("a.cfg")
    assert find_trace_cfg(str(b)).endswith("b.cfg")      # <dir>.cfg wins
    assert find_trace_cfg(str(c)).endswith("one.cfg")
    assert expand_trace_dirs([str(tmp_path)]) == [str(a), str(b), str(c)]
    assert expand_trace_dirs([str(a)]) == [str(a)]
    with pytest.raises(TraceError, match="no such file"):
        expand_trace_dirs([str(tmp_path / "zzz")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TraceError, match="no trace directories"):
        expand_trace_dirs([str(empty)])


# -- golden engine with a stand-in unit -------------------------------------------------------
class CopyUnit(UnitModel):
    """Stand-in SDP: copies D_DATA_CUBE_WIDTH+1 bytes from SDP_RDMA's source to SDP's
    destination (enough to exercise the runner without the real SDP model)."""
    name = "SDP"
    blocks = ("SDP", "SDP_RDMA")

    def plan(self, core):
        if not core.enabled("SDP"):
            return None

        def run():
            rdma, sdp = core.view("SDP_RDMA"), core.view("SDP")
            n = sdp.D_DATA_CUBE_WIDTH.WIDTH + 1
            src = core.memory(rdma.D_SRC_DMA_CFG.SRC_RAM_TYPE)
            dst = core.memory(sdp.D_DST_DMA_CFG.DST_RAM_TYPE, "SDP.D_DST_DMA_CFG.DST_RAM_TYPE")
            dst.write(sdp.D_DST_BASE_ADDR_LOW.DST_BASE_ADDR_LOW,
                      src.read(rdma.D_SRC_BASE_ADDR_LOW.SRC_BASE_ADDR_LOW, n))
            return {"SDP": {"D_STATUS_NAN_INPUT_NUM": {"STATUS_NAN_INPUT_NUM": n}}}
        return Launch(("SDP", "SDP_RDMA"), run, "copy")


COPY_TRACE = """mem_init(pri_mem, 0x80000000, 0x100, ALL_ZERO);
mem_load(pri_mem, 0x80000000, "in.dat");
mem_init(pri_mem, 0x80001000, 0x10, ALL_ZERO);
reg_write(NVDLA_GLB.S_INTR_MASK_0, 0x0);
poll_reg_equal(NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0, 0x1);
reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x5);
reg_write(NVDLA_SDP.D_DST_BASE_ADDR_LOW_0, 0x80001000);
reg_write(NVDLA_SDP.D_DST_DMA_CFG_0, 0x1);
reg_write(NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0, 0x80000000);
reg_write(NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0, 0x1);
reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);
reg_write(NVDLA_SDP_RDMA.D_OP_ENABLE_0, 0x1);
intr_notify(SDP_0, sync_id_0);
check_crc(sync_id_0, 1, 0x80001000, 0x10, {crc});
poll_reg_equal(NVDLA_SDP.D_STATUS_NAN_INPUT_NUM_0, 0x6);
poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x0);
"""
IN_DAT = "{offset:0x0, size:8, payload:0x10 0x11 0x12 0x13 0x14 0x15 0x16 0x17},\n"
GOOD_CRC = zlib.crc32(bytes(range(0x10, 0x16)) + bytes(10))


def copy_core(cfg=CFG):
    return GoldenCore(cfg, units={"SDP": CopyUnit()})


def test_golden_runner_passes(tmp_path):
    d = make_trace(tmp_path, COPY_TRACE.format(crc=hex(GOOD_CRC)), dats={"in.dat": IN_DAT})
    tr = parse_trace(str(d), CFG)
    r = run_golden(tr, CFG, core=copy_core())
    assert r.passed, r.message
    assert r.cycles == 1 and r.cycle_unit == "layer-steps"
    assert [c.passed for c in r.checks] == [True]


def test_golden_runner_reports_crc_mismatch_and_continues(tmp_path):
    text = COPY_TRACE.format(crc="0x12345678") + \
        "check_crc(sync_id_0, pri_mem, 0x80001000, 0x10, {});\n".format(hex(GOOD_CRC))
    d = make_trace(tmp_path, text, dats={"in.dat": IN_DAT})
    r = run_golden(parse_trace(str(d), CFG), CFG, core=copy_core())
    assert not r.passed
    assert [c.passed for c in r.checks] == [False, True]
    bad = r.failed_checks[0]
    assert (bad.expected, bad.actual) == (0x12345678, GOOD_CRC)
    assert "t.cfg:14: check_crc(sync_id_0)" in r.message
    assert f"actual {GOOD_CRC:#010x}" in r.message


def test_golden_runner_without_a_model_fails_naming_it(tmp_path):
    d = make_trace(tmp_path, COPY_TRACE.format(crc=hex(GOOD_CRC)), dats={"in.dat": IN_DAT})
    r = run_golden(parse_trace(str(d), CFG), CFG, core=GoldenCore(CFG, units={}))
    assert not r.passed
    assert "t.cfg:13: intr_notify(SDP_0) never came" in r.message
    assert "no SDP unit model" in r.message
    assert r.cycles == 0


def test_golden_runner_poll_timeout(tmp_path):
    d = make_trace(tmp_path, "poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x3);\n")
    r = run_golden(parse_trace(str(d), CFG), CFG, core=copy_core())
    assert not r.passed
    assert "t.cfg:1: poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x3) reads 0x0" in r.message


def test_golden_runner_unit_error_fails_the_trace(tmp_path):
    text = COPY_TRACE.format(crc=hex(GOOD_CRC)).replace(
        "reg_write(NVDLA_SDP.D_DST_DMA_CFG_0, 0x1);", "reg_write(NVDLA_SDP.D_DST_DMA_CFG_0, 0x0);")
    d = make_trace(tmp_path, text, dats={"in.dat": IN_DAT})
    r = run_golden(parse_trace(str(d), CFG), CFG, core=copy_core())
    assert not r.passed
    assert "t.cfg:12: SDP layer (SDP group 0, SDP_RDMA group 0): " \
        "SDP.D_DST_DMA_CFG.DST_RAM_TYPE=CV" in r.message


def test_intr_notify_clears_only_its_bit(tmp_path):
    d = make_trace(tmp_path, """reg_write(NVDLA_GLB.S_INTR_SET_0, 0x30);
intr_notify(PDP_1, s);
poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x10);
""")
    r = run_golden(parse_trace(str(d), CFG), CFG, core=GoldenCore(CFG, units={}))
    assert r.passed, r.message


def test_run_trace_entry_points(tmp_path, monkeypatch):
    d = make_trace(tmp_path, "mem_init(pri_mem, 0x0, 0x10, ALL_ZERO);\n"
                   "reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);\nintr_notify(SDP_0, s);\n"
                   f"check_crc(s, 1, 0x0, 0x10, {zlib.crc32(bytes(16)):#x});\n")
    r = run_trace(str(d), CFG)
    assert r.passed and r.engine == "golden" and r.wall > 0
    bad = make_trace(tmp_path, "oops;\n", name="bad")
    r = run_trace(str(bad), CFG)
    assert not r.passed and "bad.cfg:1:" in r.message
    # An engine that cannot run says so (what "rtl" does without tb.trace_rtl).
    monkeypatch.setitem(trace_run.ENGINES, "rtl", trace_run.run_rtl_unavailable)
    with pytest.raises(EngineUnavailable, match="rtl engine is not available yet"):
        run_trace(str(d), CFG, engine="rtl", sim="icarus")
    with pytest.raises(EngineUnavailable, match="unknown engine"):
        run_trace(str(d), CFG, engine="spice")


# -- the CLI -----------------------------------------------------------------------------------
def test_cli_summary_and_exit_status(tmp_path, capsys):
    from scripts.trace import main
    head = ("mem_init(pri_mem, 0x0, 0x10, ALL_ZERO);\n"
            "reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);\nintr_notify(SDP_0, s);\n")
    make_trace(tmp_path, head + f"check_crc(s, 1, 0x0, 0x10, {zlib.crc32(bytes(16)):#x});\n",
               name="good")
    make_trace(tmp_path, head + "check_crc(s, 1, 0x0, 0x10, 0x1);\n", name="wrong")
    assert main([str(tmp_path / "good")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 passed, 0 failed"
    assert any(line.startswith("good ") and " PASS " in line for line in out)
    for jobs in ("1", "2"):
        assert main(["-j", jobs, str(tmp_path)]) == 1
        out = capsys.readouterr().out.splitlines()
        assert out[-1] == "1 passed, 1 failed"
        wrong = next(line for line in out if line.startswith("wrong "))
        assert " FAIL " in wrong
        assert f"expected 0x00000001 actual {zlib.crc32(bytes(16)):#010x}" in wrong
    # The same trace on the RTL (Icarus): the interrupt comes from GLB, the CRC from memory.
    assert main(["--engine", "rtl", "--sim", "icarus", str(tmp_path / "good")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 passed, 0 failed"
    assert any(line.startswith("good ") and " PASS " in line and "cycles" in line
               for line in out), out


def test_read_reference(tmp_path):
    from scripts.trace import Reference, read_reference
    f = tmp_path / "ref.tsv"
    f.write_text("trace\treference_pass\tlayer_cycles\n"
                 "a\tTrue\t100\n\n# a comment\nb\tFalse\t456\n")
    assert read_reference(f) == {"a": Reference(True, 100), "b": Reference(False, 456)}
    assert read_reference(f)["b"].layer_cycles == 456 and not read_reference(f)["b"].passed
    for text, message in (("a\tTrue\n", ":1: expected 3 tab-separated columns"),
                          ("a\tTrue\t1\nb\tTrue\tmany\n", ":2: layer cycles 'many'"),
                          ("a\tyes\t1\n", ":1: passed column 'yes'"),
                          ("a\tTrue\t-5\n", ":1: negative layer cycles")):
        f.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_reference(f)
    shared = TRACES / "nv_small_reference_cycles.tsv"
    if shared.is_file():
        table = read_reference(shared)
        assert len(table) >= 60
        assert table["sdp_8x8x32_bypass_int8_0"] == Reference(True, 2145)
        assert not table["sdp_3x3x33_ew_int8_reg_0"].passed


@pytest.mark.rtl
def test_cli_reference(tmp_path, capsys):
    """--reference: layer, ref and ratio on each RTL line, then the totals."""
    from scripts.trace import main
    # a layer without a datapath: the enable, then GLB's S_INTR_SET raises the interrupt
    # (2 cycles from the enable to the pin, see tests/test_trace_rtl.py)
    make_trace(tmp_path, "reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x1);\n"
               "reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);\nintr_notify(SDP_0, s);\n"
               "check_nothing(s);\n", name="lay")
    make_trace(tmp_path, "reg_write(NVDLA_GLB.S_INTR_SET_0, 0x1);\nintr_notify(SDP_0, s);\n"
               "check_nothing(s);\n", name="unlisted")
    ref = tmp_path / "ref.tsv"
    ref.write_text("trace\treference_pass\tlayer_cycles\nlay\tTrue\t4\n"
                   "elsewhere\tTrue\t1000\n")
    assert main(["--engine", "rtl", "--sim", "icarus", "--reference", str(ref),
                 str(tmp_path / "lay"), str(tmp_path / "unlisted")]) == 0
    out = capsys.readouterr().out.splitlines()
    lay = next(line for line in out if line.startswith("lay "))
    assert " PASS " in lay and " layer=2 ref=4 ratio=0.50 " in lay, lay
    unlisted = next(line for line in out if line.startswith("unlisted "))
    assert " layer=0 " in unlisted and "ref=" not in unlisted, unlisted
    i = out.index("layer cycles vs reference: 1 of 2 traces in both")
    assert out[i + 1].split() == ["ours", "2"]
    assert out[i + 2].split() == ["reference", "4"]
    assert out[i + 3].split() == ["ratio", "0.50"]
    assert out[-1] == "2 passed, 0 failed"
    # a malformed reference file is a usage error
    ref.write_text("lay\tTrue\n")
    assert main(["--engine", "rtl", "--reference", str(ref), str(tmp_path / "lay")]) == 2
    assert "--reference:" in capsys.readouterr().err
    # the golden model has no layer cycles: the reference is ignored, said once
    ref.write_text("lay\tTrue\t4\n")
    main(["--reference", str(ref), str(tmp_path / "lay")])
    out = capsys.readouterr().out
    assert "--reference: ignored" in out and "ratio=" not in out


# -- NVDLA's public nv_small traces --------------------------------------------------------------
NV_SMALL = TRACES / "nv_small"


def _public_traces():
    if not NV_SMALL.is_dir():
        return []
    return sorted(p.name for p in NV_SMALL.iterdir() if p.is_dir())


def _needed_models(name):
    tr = parse_trace(str(NV_SMALL / name), CFG, load_images=False)
    return missing_models(tr.enabled_blocks(), default_units(CFG))


def _golden_cases():
    """Public traces whose unit models exist (others are left out until their model lands);
    the EW/LUT traces run on nv_small with the SDP Y stage."""
    cases = []
    for name in _public_traces():
        if _needed_models(name):
            continue
        cfg = CFG_EW_LUT if name in EW_LUT_TRACES else CFG
        cases.append(pytest.param(name, cfg, id=name))
    return cases


def _require_public():
    if not NV_SMALL.is_dir():
        pytest.skip(f"public traces not found at {NV_SMALL}")


def test_public_traces_parse():
    _require_public()
    names = _public_traces()
    assert len(names) >= 60
    for name in names:
        tr = parse_trace(str(NV_SMALL / name), CFG)
        assert any(isinstance(c, (CheckCrc, CheckNothing)) for c in tr.commands), name
        assert any(isinstance(c, IntrNotify) for c in tr.commands), name


@pytest.mark.parametrize("name, cfg", _golden_cases() or
                         [pytest.param(None, None, id="no-public-traces-or-models")])
def test_golden_public_trace(name, cfg):
    _require_public()
    if name is None:
        pytest.skip("no public trace has all its unit models in the golden core yet")
    r = run_trace(str(NV_SMALL / name), cfg)
    assert r.passed, r.message


@pytest.mark.parametrize("name", EW_LUT_TRACES)
def test_ew_lut_traces_fail_on_plain_nv_small(name):
    _require_public()
    if _needed_models(name):
        pytest.skip("no golden SDP model yet")
    r = run_trace(str(NV_SMALL / name), CFG)
    assert not r.passed


def test_engine_crash_is_a_failed_trace(tmp_path):
    from sim.trace_run import ENGINES, register_engine

    def broken(trace, cfg, **options):
        raise KeyError("oops")
    register_engine("broken", broken)
    try:
        d = make_trace(tmp_path, "mem_init(pri_mem, 0x0, 0x10, ALL_ZERO);\n")
        r = run_trace(str(d), CFG, engine="broken")
        assert not r.passed and "internal error: KeyError" in r.message
    finally:
        del ENGINES["broken"]
