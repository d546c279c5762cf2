"""NVDLA's traceplayer format (sim/txn.py, sim/txn_write.py) on the golden engine: directories
written from random programs the golden model checks, mismatch detection, malformed input
named by file and line, and NVDLA's own 12 nv_full traceplayer tests read from the nvdla/hw
mirror (``NVDLA_HW_REPO``, default /work/.mirror/nvdla+hw/repo; skipped when absent)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.core import GoldenCore
from sim.trace import TraceError, expand_trace_dirs, parse_trace
from sim.trace_run import DumpCheck, run_trace
from sim.txn import (DumpMem, ReadReg, WaitIntr, parse_plusargs, parse_txn, parse_txn_dat,
                     txn_memory)
from sim.txn_write import txn_dat_text, write_txn

from .conftest import NV_SMALL_EXT, playback

NV_FULL = NvdlaConfig.preset("nv_full")
# traceplayer addresses put every surface on the DBBIF (0x8xxxxxxx) here: no SRAMIF, no BDMA
NV_FULL_MC = NV_FULL.replace(name="nv_full_mc", sramif=False, bdma=False)
# RTL builds: nv_small with the SRAMIF (the playback suite's build), and with BDMA too
NV_SMALL_CV = NV_SMALL_BDMA = NV_SMALL_EXT       # SRAMIF and BDMA (one shared build)


def _random_txn(tmp_path, monkeypatch, unit, seed, cfg=NV_FULL_MC, name="txn"):
    """A random SDP or PDP program (golden CRCs) written as a traceplayer directory."""
    if unit == "sdp":
        import sim.sdp.random_programs as gen
    else:
        import sim.pdp.random_programs as gen
    monkeypatch.setitem(gen._BASES, "dst", 0x8800_0000)     # 0x9... is no traceplayer bus
    monkeypatch.setattr(gen, "random_ram" if unit == "sdp" else "_ram",
                        lambda cfg, rng: 1)                   # every surface at 0x8...
    [path] = gen.write_random_traces(cfg, str(tmp_path / f"cfg_{name}"), 1, seed=seed)
    trace = parse_trace(path, cfg)
    assert run_trace(trace, cfg).passed
    return write_txn(trace, cfg, str(tmp_path / name))


def _rewrite_read(d, register, expected):
    """Rewrite the first ``read_reg`` of ``register`` in ``d``'s input.txn to expect
    ``expected(value, mask)``; returns (txn path, its line index, address, mask, old value)."""
    txn = Path(d, "input.txn")
    lines = txn.read_text().splitlines()
    n = next(i for i, ln in enumerate(lines) if ln.startswith("read_reg") and register in ln)
    body, _, comment = lines[n].partition("#")
    _, addr, mask, value = body.split()
    lines[n] = f"read_reg {addr} {mask} {expected(int(value, 16), int(mask, 16)):#x} #{comment}"
    txn.write_text("\n".join(lines) + "\n")
    return txn, n, addr, mask, value


def _kinds(text):
    return {ln.split()[0] for ln in text.splitlines() if ln and not ln.startswith("#")}


@pytest.mark.parametrize("unit,seed", [("sdp", 1), ("sdp", 2), ("pdp", 1), ("pdp", 4)])
def test_random_program_as_txn(tmp_path, monkeypatch, unit, seed):
    d = _random_txn(tmp_path, monkeypatch, unit, seed)
    text = Path(d, "input.txn").read_text()
    assert _kinds(text) == {"load_mem", "write_reg", "read_reg", "wait", "dump_mem"}
    assert expand_trace_dirs([d]) == [d]
    trace = parse_trace(d, NV_FULL_MC)
    assert trace.deferred
    dumps = [c for c in trace.commands if isinstance(c, DumpMem)]
    res = run_trace(trace, NV_FULL_MC)
    assert res.passed, res.message
    assert len(res.checks) == len(dumps) >= 1
    assert all(isinstance(c, DumpCheck) and c.passed for c in res.checks)
    assert any(np.count_nonzero(c.expected) for c in dumps)
    # the written D_OP_ENABLE is read back as 1: the layer runs until the next wait
    enables = [c for c in trace.commands if isinstance(c, ReadReg) and
               c.name.endswith(".D_OP_ENABLE") and c.value & 1]
    assert enables
    # ... which a model finishing the layer at the enabling write does not satisfy
    trace.deferred = False
    res = run_trace(trace, NV_FULL_MC)
    assert not res.passed and "D_OP_ENABLE mask 0x00000001: expected 0x00000001, read " \
        "0x00000000" in res.message


def test_dump_mismatch_names_the_byte(tmp_path, monkeypatch):
    d = _random_txn(tmp_path, monkeypatch, "sdp", 3)
    dump = [c for c in parse_trace(d, NV_FULL_MC).commands if isinstance(c, DumpMem)][0]
    data = dump.expected.copy()
    i = int(np.flatnonzero(data)[0]) if np.count_nonzero(data) else 0
    data[i] ^= 0x5A
    Path(dump.path).write_text(txn_dat_text(data, "# corrupted"))
    res = run_trace(d, NV_FULL_MC)
    assert not res.passed
    [bad] = [c for c in res.checks if not c.passed]
    assert (bad.mismatches, bad.first, bad.first_expected, bad.first_actual) == \
        (1, dump.addr + i, int(data[i]), int(dump.expected[i]))
    assert f"{dump.where}: dump_mem dbb {dump.addr:#x}+{dump.size:#x}: 1 bytes differ, first " \
        f"at {dump.addr + i:#x}" in res.message


def test_read_mismatch_is_masked_and_named(tmp_path, monkeypatch):
    d = _random_txn(tmp_path, monkeypatch, "pdp", 2)
    # outside the mask: still equal
    txn, n, addr, mask, value = _rewrite_read(d, "D_DATA_CUBE_IN_WIDTH",
                                              lambda v, m: v | ~m & 0xFFFFFFFF)
    assert run_trace(d, NV_FULL_MC).passed
    # inside the mask: a failure naming the line and the register; the trace goes on
    _rewrite_read(d, "D_DATA_CUBE_IN_WIDTH", lambda v, m: int(value, 16) ^ 1)
    res = run_trace(d, NV_FULL_MC)
    assert not res.passed
    assert res.message == (f"{txn}:{n + 1}: read_reg PDP.D_DATA_CUBE_IN_WIDTH mask {mask}: "
                           f"expected {(int(value, 16) ^ 1) & int(mask, 16):#010x}, read "
                           f"{int(value, 16):#010x}")
    assert res.checks and all(c.passed for c in res.checks)


@pytest.mark.parametrize("line,error", [
    ("poke 0xffff0003 0x1", "unknown command 'poke' (known: load_mem, dump_mem, write_reg, "
                            "read_reg, wait)"),
    ("write_reg 0xffff0003", "write_reg takes 2 arguments, got 1"),
    ("read_reg 0xffff0003 0x1 12", "expected value must be a hex number 0x..., got '12'"),
    ("write_reg 0xffff0003 0x100000000", "register value 0x100000000 does not fit in 32 bits"),
    ("load_mem 0x12340000 0x20 a.dat", "memory address 0x12340000 is on no bus"),
    ("load_mem 0x80000000 0x20 missing.dat", "load_mem: cannot read missing.dat"),
    ("load_mem 0x80000000 0x40 a.dat", "0x40 bytes wanted, the file has 0x20"),
    ("dump_mem 0x80000000 0x10 a.dat", "size 0x10 is not a multiple of 32"),
    ("wait 1", "wait takes 0 arguments, got 1"),
])
def test_malformed_txn_names_file_and_line(tmp_path, line, error):
    (tmp_path / "a.dat").write_text(txn_dat_text(bytes(range(32)), "Data_size = 0x20"))
    (tmp_path / "input.txn").write_text(f"# header\nwrite_reg 0xffff0003 0x0\n{line} # x\n")
    with pytest.raises(TraceError) as e:
        parse_trace(str(tmp_path), NV_FULL)
    msg = str(e.value)
    assert error in msg
    where = f"{tmp_path / 'input.txn'}:3: " if "size 0x" not in error and "wanted" not in error \
        else f"{tmp_path / 'a.dat'}:1: "
    assert msg.startswith(where), msg
    assert not run_trace(str(tmp_path), NV_FULL).passed


def test_dat_files():
    text = ("dumped memory,start_address=0x80800000 size=0x40\n==========\n"
            + txn_dat_text(bytes(range(64))) + "\ndump done\n")
    assert parse_txn_dat(text, 64).tolist() == list(range(64))
    assert parse_txn_dat(text, 32).tolist() == list(range(32))   # the first SIZE bytes
    with pytest.raises(TraceError, match=r"f\.dat:3: a data line must be 32 0xNN bytes"):
        parse_txn_dat("x\ny\n 0x00 0x01\n", 32, "f.dat")
    assert (txn_memory(0x8000_0000), txn_memory(0x5fff_ffe0), txn_memory(0x9000_0000)) == \
        ("dbb", "sram", None)


def test_plusargs_set_the_read_tries(tmp_path):
    assert parse_plusargs("+read_reg_poll_retries=10 +continue_on_fail\n") == \
        {"read_reg_poll_retries": 10, "continue_on_fail": True}
    with pytest.raises(TraceError, match=r"plusargs.txt:2: unknown plusarg '\+fast'"):
        parse_plusargs("\n+fast\n")
    (tmp_path / "input.txn").write_text("read_reg 0xffff0003 0xffffffff 0x0\n")
    assert parse_txn(str(tmp_path), NV_FULL).commands[0].tries == 10
    (tmp_path / "plusargs.txt").write_text("+read_reg_poll_retries=100000 +continue_on_fail\n")
    [cmd] = parse_txn(str(tmp_path), NV_FULL).commands
    assert (cmd.tries, cmd.mask, cmd.value, cmd.name) == (100000, 0xFFFFFFFF, 0,
                                                          "GLB.S_INTR_STATUS")


def test_wait_without_a_layer_fails_with_the_line(tmp_path):
    (tmp_path / "input.txn").write_text("write_reg 0xffff0003 0xffffffff\nwait\n")
    trace = parse_trace(str(tmp_path), NV_FULL)
    assert isinstance(trace.commands[1], WaitIntr)
    res = run_trace(trace, NV_FULL)
    assert not res.passed
    assert res.message.startswith(f"{tmp_path / 'input.txn'}:2: wait: no interrupt came: the "
                                  "golden model cannot make progress")


def test_staggered_done_interrupts_come_one_at_a_time_down_the_pipeline():
    core = GoldenCore(NV_FULL)
    core.stagger_interrupts = True
    core.complete(("SDP", "CACC", "CDMA", "CSC"), what="convolution")
    status = core.rmap["GLB"]["S_INTR_STATUS"]
    order = []
    while core.deliver_interrupt():
        bits = [f.name for f in status.fields if core.intr_status & f.mask]
        order.append(bits)
        core.csb_write(core.rmap.address("GLB.S_INTR_STATUS") >> 2, 0xFFFFFFFF)
    assert order == [["CDMA_DAT_DONE_STATUS0"], ["CDMA_WT_DONE_STATUS0"],
                     ["CACC_DONE_STATUS0"], ["SDP_DONE_STATUS0"]]
    assert not core.interrupt


# --------------------------------------------------------------------------------------------
# NVDLA's traceplayer tests (nvdla/hw, branch nvdlav1, verif/traces/traceplayer)
# --------------------------------------------------------------------------------------------
HW_REPO = Path(os.environ.get("NVDLA_HW_REPO", "/work/.mirror/nvdla+hw/repo"))
TRACEPLAYER = "verif/traces/traceplayer"
NVDLA_TESTS = ("cc_alexnet_conv5_relu5_int16_dtest_cvsram", "conv_8x8_fc_int16",
               "googlenet_conv2_3x3_int16", "pdp_max_pooling_int16", "sanity0", "sanity1",
               "sanity1_cvsram", "sanity2", "sanity2_cvsram", "sanity3", "sanity3_cvsram",
               "sdp_relu_int16")
# NVDLA's two big conv tests read S_CBUF_FLUSH_STATUS expecting 0 after reset, which NVDLA's
# own RTL does not give either (its CBUF flush ends with FLUSH_DONE = 1; nvdla/hw issue #219)
FLUSH_READ = re.compile(r"input\.txn:135: read_reg CDMA\.S_CBUF_FLUSH_STATUS mask 0x00000001: "
                        r"expected 0x00000000, read 0x00000001$")


def _git(*args):
    return subprocess.run(["git", "-C", str(HW_REPO), *args], capture_output=True)


@pytest.fixture(scope="module")
def nvdla_tests(tmp_path_factory):
    """The traceplayer directories copied out of the mirror (blobs the mirror lacks are left
    out, so their tests fail to read them)."""
    ls = _git("ls-tree", "-r", "nvdlav1", TRACEPLAYER) if HW_REPO.exists() else None
    if ls is None or ls.returncode or not ls.stdout:
        pytest.skip(f"no nvdla/hw mirror with branch nvdlav1 at {HW_REPO} (NVDLA_HW_REPO)")
    root = tmp_path_factory.mktemp("traceplayer")
    for line in ls.stdout.decode().splitlines():
        meta, path = line.split("\t", 1)
        blob = _git("cat-file", "blob", meta.split()[2])
        if blob.returncode:
            continue
        dest = root / Path(path).relative_to(TRACEPLAYER)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(blob.stdout)
    return root


@pytest.mark.parametrize("name", NVDLA_TESTS)
def test_nvdla_traceplayer_test_on_golden(nvdla_tests, name):
    d = nvdla_tests / name
    if not d.is_dir():
        pytest.skip(f"{name} is not in the mirror")
    trace = parse_trace(str(d), NV_FULL) if name != NVDLA_TESTS[0] or \
        (d / "input_weight.dat").exists() else None
    if trace is None:
        pytest.skip("the mirror lacks cc_alexnet's input_weight.dat (its blob is absent)")
    res = run_trace(trace, NV_FULL)
    dumps = sum(isinstance(c, DumpMem) for c in trace.commands)
    assert len(res.checks) == dumps and all(c.passed for c in res.checks), res.message
    if name in ("googlenet_conv2_3x3_int16", NVDLA_TESTS[0]):
        assert not res.passed and FLUSH_READ.search(res.message), res.message
    else:
        assert res.passed, res.message


def _cocotb(paths, cfg, **options):
    from sim.trace_run import EngineUnavailable
    from tb.trace_rtl import run_rtl_batch
    try:
        return run_rtl_batch(paths, cfg, sim="icarus", **options)
    except EngineUnavailable as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("engine", ["playback", pytest.param("cocotb", marks=pytest.mark.slow)])
def test_rtl_engines_play_txn(tmp_path, monkeypatch, engine):
    """read_reg / wait / dump_mem on the RTL (the playback harness, and the cocotb engine on
    Icarus): a random SDP program as input.txn passes (nv_small with SRAMIF: register
    addresses moved from the nv_full layout by name), a corrupted expected byte and a wrong
    read back are found and named as on the golden engine."""
    good = _random_txn(tmp_path, monkeypatch, "sdp", 5, NV_SMALL_CV, "good")
    assert parse_trace(good, NV_SMALL_CV).commands      # written in the nv_full layout
    assert "write_reg 0xffff2c" in Path(good, "input.txn").read_text()     # SDP at 0xb000
    bad_dump = _random_txn(tmp_path, monkeypatch, "sdp", 5, NV_SMALL_CV, "bad_dump")
    dump = [c for c in parse_trace(bad_dump, NV_SMALL_CV).commands if isinstance(c, DumpMem)][0]
    data = dump.expected.copy()
    i = int(np.flatnonzero(data)[-1])
    data[i] ^= 0x81
    Path(dump.path).write_text(txn_dat_text(data))
    bad_read = _random_txn(tmp_path, monkeypatch, "sdp", 5, NV_SMALL_CV, "bad_read")
    txn, n, *_ = _rewrite_read(bad_read, "D_DATA_CUBE_CHANNEL", lambda v, m: v ^ 2)
    rtl = (playback if engine == "playback" else _cocotb)([good, bad_dump, bad_read],
                                                          NV_SMALL_CV, seed=3)
    gold = [run_trace(d, NV_SMALL_CV) for d in (good, bad_dump, bad_read)]
    assert [r.passed for r in rtl] == [r.passed for r in gold] == [True, False, False]
    assert rtl[0].layer_cycles > 0 and len(rtl[0].checks) == 1 and rtl[0].checks[0].passed
    assert rtl[1].message == gold[1].message and f"first at {dump.addr + i:#x}" in rtl[1].message
    assert rtl[2].message == gold[2].message
    assert rtl[2].message.startswith(f"{txn}:{n + 1}: read_reg SDP.D_DATA_CUBE_CHANNEL")


@pytest.mark.slow
def test_nvdla_bdma_sanity_tests_on_the_rtl(nvdla_tests):
    """NVDLA's BDMA sanity tests (DBBIF and CV-SRAM) on the RTL of nv_small with SRAMIF and
    BDMA, through the playback harness."""
    names = ["sanity0", "sanity1", "sanity1_cvsram", "sanity2", "sanity2_cvsram"]
    results = playback([str(nvdla_tests / n) for n in names], NV_SMALL_BDMA, seed=1)
    assert [(r.name, r.passed, r.message) for r in results] == \
        [(n, True, "") for n in names]


def test_every_command_as_txn(tmp_path):
    """NVDLA's SDP pass-through rewritten with every command of the ``.cfg`` language
    (tests/test_trace.py) written as a traceplayer directory passes on the golden model:
    pattern fills land as loads, reg_read / reg_read_check as reads under mask 0 / a full
    mask, the single shot as a wait and the clear of what was pending, check_file as a
    dump."""
    from arch.config import load_config
    from .test_trace import FILLS, NV_SMALL, rewrite_pass_through
    src = rewrite_pass_through(tmp_path)
    if src is None:
        pytest.skip(f"public traces not found at {NV_SMALL}")
    cfg = load_config("nv_small")
    d = write_txn(parse_trace(str(src), cfg), cfg, str(tmp_path / "txn"))
    text = Path(d, "input.txn").read_text()
    assert " 0x00000000 0x0 # nvdla_sdp.s_status_0" in text          # reg_read: any value
    assert "0xffffffff 0x0 # NVDLA_GLB.S_INTR_STATUS_0" in text      # reg_read_check
    res = run_trace(d, cfg)
    assert res.passed, res.message
    assert len(res.checks) == 2 + len(FILLS) and all(c.passed for c in res.checks)
