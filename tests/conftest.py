"""Shared pytest fixtures and paths: ../shared (reference material) sits beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arch.config import NvdlaConfig

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NVDLA_SHARED", ROOT.parent / "shared"))
TRACES = SHARED / "nvdla" / "traces"

#: the 16-bit integer pixel formats (int16 and fp16 image processing) and the fp16 ones (fp16
#: processing only): the int16 and fp16 builds below take them beside nv_small's own
WIDE_INT_PIXELS = frozenset({"R16", "R16_I", "A16B16G16R16", "X16B16G16R16"})
WIDE_FP_PIXELS = frozenset({"R16_F", "A16B16G16R16_F", "A16Y16U16V16_F"})
WIDE_SEMI_PIXELS = frozenset({"Y16___U16V16_N444"})
_NV_SMALL = NvdlaConfig.preset("nv_small")

#: nv_small with int16 beside int8 (each layer picks its precision), batching (up to 8
#: batches), weight compression, CDP throughput 4 (an int16 atom is one transfer of 4 lanes)
#: and the 16-bit integer pixel formats: the one int16 build the conv, PDP, CDP, batched,
#: compressed-weight and int16 image RTL suites share (one Verilator build: each distinct
#: build costs the default run about 1.5 minutes of its 2 cores). Programs without compressed
#: weights or images draw and run as on a build without them. Its CBUF has the board builds'
#: timing choices: registers before the banks and after the data port's multiplexer
#: (``cbuf_data_read_regs=2``: the CSC's data three cycles after the read) and the registered
#: write (``cbuf_write_regs``).
NV_SMALL_INT16 = _NV_SMALL.replace(
    name="nv_small_int16", data_types=frozenset({"int8", "int16"}), batching=True,
    max_batch=8, weight_compression=True, cdp_throughput=4, cbuf_data_read_regs=2,
    cbuf_write_regs=1, image_packed_formats=_NV_SMALL.image_packed_formats | WIDE_INT_PIXELS,
    image_semi_formats=_NV_SMALL.image_semi_formats | WIDE_SEMI_PIXELS)
#: nv_small with fp16 beside int8 (one lane per unit, 8-byte atoms of 4 fp16 channels) on
#: two-column CBUF entries (16-byte register entries of two 8-byte bank rows, as nv_full's 128
#: of 2 x 64: the fp16 cells multiply whole entries, as nv_full's do), and the 16-bit and fp16
#: pixel formats: the fp16 suites of the SDP, PDP, CDP, convolution and image input
NV_SMALL_FP16 = _NV_SMALL.replace(
    name="nv_small_fp16", data_types=frozenset({"int8", "fp16"}), cbuf_entry_width=16,
    image_packed_formats=_NV_SMALL.image_packed_formats | WIDE_INT_PIXELS | WIDE_FP_PIXELS,
    image_semi_formats=_NV_SMALL.image_semi_formats | WIDE_SEMI_PIXELS)
#: the same on bank-row CBUF entries (an fp16 cell per Csc atom of Atomic-C / 2 channels: a
#: channel group is two cell operations): the golden fp16 convolution tests, the Cmac / Cacc
#: units and the slow suite's bank-row fp16 shards
NV_SMALL_FP16_ROWS = NV_SMALL_FP16.replace(name="nv_small_fp16_rows", cbuf_entry_width=0)

#: nv_small with the optional interfaces and units: SRAMIF (CV memory), SDP EW + LUT (the
#: build NVDLA's EW / LUT traces assume), BDMA and Rubik, and PDP / CDP throughput 8 with a
#: 512-bit DBBIF (the PDP and CDP suites' multi-lane build, ``NV_SMALL_T8``). One Verilator
#: build shared by the CV, EW / LUT, BDMA, Rubik and multi-lane PDP / CDP suites.
NV_SMALL_EXT = NvdlaConfig.preset("nv_small").replace(
    name="nv_small_ext", sramif=True, sdp_ew=True, sdp_lut=True, sdp_ew_throughput=1, bdma=True,
    rubik=True, pdp_throughput=8, cdp_throughput=8, dbbif_width=512)
#: PDP and CDP throughput 8 with a 512-bit DBBIF, nv_small-sized otherwise: the PDP and CDP
#: suites' multi-lane build (the extended build)
NV_SMALL_T8 = NV_SMALL_EXT
#: nv_small_256 with two-column CBUF entries (64-byte register entries of two 32-byte bank
#: rows, as nv_full's 128 of 2 x 64; such entries need int16 in data_types) and batching, as
#: nv_full has both: the RTL runs its int8 feature layers, batched or not
NV_SMALL_256_2COL = NvdlaConfig.preset("nv_small_256").replace(
    name="nv_small_256_2col", data_types=frozenset({"int8", "int16"}), cbuf_entry_width=64,
    batching=True, max_batch=8)

#: nv_small with int8, int16 and fp16 on two-column CBUF entries: the three precisions mixed
#: (the slow suite's)
NV_SMALL_FP16_2COL = NV_SMALL_FP16.replace(
    name="nv_small_fp16_2col", data_types=frozenset({"int8", "int16", "fp16"}))

#: the full register layout (nv_full's: no CFGROM, 64-bit addresses with bits [4:0] dropped,
#: every unit) on a smaller datapath (Atomic-C 32 x Atomic-K 32, one PDP / CDP lane, int8): the
#: register plane of nv_full at a fraction of its elaboration time (the default suite's)
NV_FULL_LAYOUT = NvdlaConfig.preset("nv_full").replace(
    name="nv_full_layout", data_types=frozenset({"int8"}), atomic_c=32, atomic_k=32,
    cbuf_bank_width=32, cbuf_bank_depth=128, cbuf_entry_width=0, sdp_bs_throughput=1,
    sdp_bn_throughput=1, sdp_ew_throughput=1, pdp_throughput=1, cdp_throughput=1,
    dbbif_width=256, sramif_width=256, winograd=False, max_batch=8,
    # int8 only: the int8 builds' pixel formats (nv_full's own include 16-bit and fp16 ones)
    image_packed_formats=NvdlaConfig.preset("nv_large").image_packed_formats,
    image_semi_formats=NvdlaConfig.preset("nv_large").image_semi_formats)
#: nv_large's register map (the small layout with every optional unit: CVIF, BDMA, Rubik, SDP
#: EW + LUT, batching, Winograd and weight compression in CFGROM) on nv_small's datapath: its
#: register plane at a quarter of nv_large's elaboration time (the default suite's). Only the
#: CFGROM values differ from nv_large's (they describe the datapath).
NV_LARGE_LAYOUT = NvdlaConfig.preset("nv_large").replace(
    name="nv_large_layout", atomic_c=8, atomic_k=8, memory_atom=8, cbuf_banks=32,
    cbuf_bank_width=8, cbuf_bank_depth=512, sdp_bs_throughput=1, sdp_bn_throughput=1,
    sdp_ew_throughput=1, pdp_throughput=1, cdp_throughput=1, dbbif_width=64, sramif_width=64)

#: Winograd on the RTL (hw.conv.common.conv_winograd): nv_large's 64 x 32 datapath with int8
#: and int16, small otherwise (CBUF 16 x 128 rows, one-lane SDP / PDP / CDP, no batching,
#: compression, SRAMIF, BDMA or Rubik); the slow suite's
#: (defined once, in the Winograd cycle benchmark, which may not import a test file)
from bench.winograd_cycles import BUILD as NV_LARGE_WINO  # noqa: E402
#: the same on two-column CBUF entries (nv_full's layout: register entries of two bank rows)
NV_LARGE_WINO_2COL = NV_LARGE_WINO.replace(name="nv_large_wino_2col", cbuf_entry_width=128)
#: the same with fp16 (nv_full's fp16 Winograd datapath: an fp16 entry is one small cube)
NV_LARGE_WINO_FP16 = NV_LARGE_WINO_2COL.replace(
    name="nv_large_wino_fp16", data_types=frozenset({"int8", "int16", "fp16"}))


def pack_fields(layout, block, words):
    """The value of a :func:`hw.regfile.fields_layout` view (``layout`` of ``block``) holding
    the register words ``words`` ({register name: word}; reset values for the others): what
    a unit's ``regs`` port sees for that program."""
    value = 0
    for reg in block.d_registers:
        if reg.name not in layout.members:
            continue
        inner = layout.members[reg.name]
        base = layout[reg.name].offset
        for f in reg.fields:
            if f.name in inner.members:
                width = f.msb - f.lsb + 1
                v = (words.get(reg.name, reg.reset) >> f.lsb) & ((1 << width) - 1)
                value |= v << (base + inner[f.name].offset)
    return value


def playback(paths, cfg, **options):
    """Run trace directories on the playback engine (:func:`tb.playback.run_playback_batch`);
    skip the test where the engine is unavailable (no Verilator)."""
    from sim.trace_run import EngineUnavailable
    try:
        from tb.playback import run_playback_batch
        return run_playback_batch(paths, cfg, **options)
    except EngineUnavailable as e:
        pytest.skip(str(e))


def assert_all_pass(results, count, what="programs", show=10):
    """``count`` results, every one passed (its golden CRCs matched); lists the first
    ``show`` failures."""
    assert len(results) == count
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not bad, f"{len(bad)}/{count} {what} differ from the golden model:\n" + \
        "\n".join(bad[:show])


# -- build contention -------------------------------------------------------------------------
def _lock_wait_log() -> Path:
    from tb.runner import LOCK_WAITS
    return LOCK_WAITS


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):            # the controller (or no xdist)
        log = _lock_wait_log()
        session.config._nvdla_lock_wait_start = log.stat().st_size if log.exists() else 0


def pytest_terminal_summary(terminalreporter, config):
    """How long test processes waited for a build another one was making (tb.runner._Locked):
    with ``pytest -n`` a waiting worker idles, so this is run time the builds cost twice."""
    start = getattr(config, "_nvdla_lock_wait_start", None)
    log = _lock_wait_log()
    if start is None or not log.exists():
        return
    with open(log) as f:
        f.seek(start)
        waits = [line.split(maxsplit=1) for line in f if line.strip()]
    if waits:
        total = sum(float(w) for w, _ in waits)
        worst = max(waits, key=lambda w: float(w[0]))
        terminalreporter.write_line(
            f"build lock waits: {len(waits)}, {total:.0f} s in all (longest {float(worst[0]):.0f}"
            f" s on {worst[1].strip()})")


# -- builds ahead of their tests ----------------------------------------------------------------
#: the playback builds of the suite, by name: a session whose selected RTL tests take one of
#: them as a parameter builds it ahead (tb.playback.prebuild) when it runs on several workers
PREBUILDS = {c.name: c for c in (NvdlaConfig.preset("nv_small"), NV_SMALL_INT16, NV_SMALL_FP16,
                                 NV_SMALL_EXT, NvdlaConfig.preset("nv_small_256"),
                                 NV_SMALL_256_2COL, NV_SMALL_T8)}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """On the first xdist worker (``pytest -n`` 2 or more; ``NVDLA_PREBUILD=0`` turns it off):
    start building the playback harnesses of :data:`PREBUILDS` that the selected RTL tests
    take as parameters, in the order the tests come, in one background process."""
    worker = getattr(config, "workerinput", None)
    if worker is None or worker.get("workerid") != "gw0" or \
            int(worker.get("workercount", 1)) < 2 or os.environ.get("NVDLA_PREBUILD") == "0" \
            or config.option.collectonly:
        return
    order = []
    for item in items:
        if item.get_closest_marker("rtl") and hasattr(item, "callspec"):
            order += [v for v in item.callspec.params.values()
                      if isinstance(v, NvdlaConfig) and PREBUILDS.get(v.name) == v]
    if order:
        from tb.playback.prebuild import start
        from tb.runner import BUILD
        BUILD.mkdir(parents=True, exist_ok=True)
        config._nvdla_prebuild = start(order, BUILD / "prebuild.log")


def pytest_sessionfinish(session, exitstatus):
    """An interrupted session stops the builds ahead (their process group: Verilator, make and
    the compilers); otherwise they finish (the last tests may still need them)."""
    proc = getattr(session.config, "_nvdla_prebuild", None)
    if proc is not None and proc.poll() is None and exitstatus == pytest.ExitCode.INTERRUPTED:
        import signal
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
