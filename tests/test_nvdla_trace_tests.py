"""NVDLA's own register-level regression tests (``verif/tests/trace_tests`` of nvdla/hw's
``nv_small`` branch: the nv_small, nv_small_256 and nv_large lists) on the golden model and
on the RTL, read from a local git mirror of nvdla/hw at test time.

The mirror is ``$NVDLA_HW_REPO`` (default ``/work/.mirror/nvdla+hw/repo``); without it every
test here skips. The traces are extracted into a temporary directory once per session
(``git ls-tree`` + ``git cat-file --batch``: nothing of NVDLA's is kept in this repository).

- A trace whose files the mirror lacks (the image-input traces' pixel files, one weight
  file) is reported as skipped, naming the files; it is not counted as a pass.
- A trace that needs a build feature its preset lacks (the SDP element-wise / LUT traces:
  an EW stage that is not bypassed) runs on the preset with the SDP Y stage (EW + LUT), the
  build its CRCs were made on, and must fail on the plain preset (golden model).
- Every other trace must pass: each of its CRCs is NVDLA's.

RTL: the playback engine (Verilator) runs each preset's traces in two harness processes side
by side (``-j 2``-style), one build per configuration: nv_small and nv_small_256 in the default
run, their EW / LUT traces on the Y-stage builds and nv_large in the slow suite.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
from pathlib import Path

import pytest

from arch.config import NvdlaConfig
from sim.trace import RegWrite, parse_trace
from sim.trace_run import EngineUnavailable, run_trace

from .conftest import NV_SMALL_EXT

REPO = Path(os.environ.get("NVDLA_HW_REPO", "/work/.mirror/nvdla+hw/repo"))
BRANCH = "nv_small"
ROOT = "verif/tests/trace_tests"
#: list -> (preset, number of tests NVDLA lists)
LISTS = {"nv_small": ("nv_small", 85), "nv_small_256": ("nv_small_256", 84),
         "nv_large": ("nv_large", 6)}
#: the presets with the SDP Y stage (EW + LUT) their EW / LUT traces were made on
Y_STAGE = {"nv_small": NV_SMALL_EXT,
           "nv_small_256": NvdlaConfig.preset("nv_small_256").replace(
               name="nv_small_256_ew_lut", sdp_ew=True, sdp_lut=True, sdp_ew_throughput=1)}
RTL_MAX_CYCLES = 2_000_000
#: harness processes side by side per build: 2 (the machine's cores), 1 when pytest-xdist
#: already runs two tests at a time
RTL_JOBS = 1 if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 else 2


def _git(*args, **kw):
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True,
                          **kw)


def _listing() -> dict:
    """{list: {test name: [(blob sha, size or None, path in the test's directory)]}}, or {}
    without the mirror (the size is None for a blob the mirror lacks)."""
    try:
        out = _git("ls-tree", "-r", "-l", "-z", BRANCH, f"{ROOT}/").stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return {}
    lists = {}
    for entry in filter(None, out.split("\0")):
        meta, path = entry.split("\t", 1)
        _, kind, sha, size = meta.split()
        parts = path[len(ROOT) + 1:].split("/")
        if kind != "blob" or len(parts) < 3 or parts[0] not in LISTS:
            continue
        lists.setdefault(parts[0], {}).setdefault(parts[1], []).append(
            (sha, int(size) if size.isdigit() else None, "/".join(parts[2:])))
    return lists


LISTING = _listing()


def _names(lst):
    return sorted(LISTING.get(lst, {}))


def _require_mirror():
    if not LISTING:
        pytest.skip(f"no nvdla/hw mirror with branch {BRANCH} at {REPO} (set NVDLA_HW_REPO)")


@pytest.fixture(scope="session")
def extracted(tmp_path_factory):
    """{list: (directory, {test: [files the mirror lacks]})}: every list extracted once."""
    _require_mirror()
    top = tmp_path_factory.mktemp("nvdla_trace_tests")
    blobs = [(lst, name, sha, size, rel) for lst, tests in LISTING.items()
             for name, files in tests.items() for sha, size, rel in files]
    proc = subprocess.Popen(["git", "-C", str(REPO), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write("".join(f"{b[2]}\n" for b in blobs).encode())
    proc.stdin.close()
    missing = {lst: {} for lst in LISTING}
    for lst, name, sha, size, rel in blobs:
        header = proc.stdout.readline().decode().split()
        dest = top / lst / name / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if header[1] == "missing":
            missing[lst].setdefault(name, []).append(rel)
            continue
        n = int(header[2])
        dest.write_bytes(proc.stdout.read(n))
        proc.stdout.read(1)                              # the newline after the content
    proc.wait()
    return {lst: (top / lst, missing[lst]) for lst in LISTING}


def needs_y_stage(trace) -> bool:
    """The trace runs the SDP element-wise stage (its EW_BYPASS written 0 in a layer)."""
    return any(isinstance(c, RegWrite) and c.block == "SDP" and c.register == "D_DP_EW_CFG"
               and not c.value & 1 for c in trace.commands)


def classify(lst, extracted):
    """(runs: [(name, cfg)], y_stage: [name], skipped: [(name, reason)]) of a list."""
    directory, missing = extracted[lst]
    cfg = NvdlaConfig.preset(LISTS[lst][0])
    runs, y_stage, skipped = [], [], []
    for name in _names(lst):
        if name in missing:
            skipped.append((name, f"the mirror lacks {', '.join(missing[name])}"))
            continue
        tr = parse_trace(str(directory / name), cfg, load_images=False)
        if needs_y_stage(tr) and not cfg.sdp_ew:
            y_stage.append(name)
        else:
            runs.append(name)
    return runs, y_stage, skipped


# -- the lists ------------------------------------------------------------------------------------
@pytest.mark.parametrize("lst", list(LISTS))
def test_lists_are_nvdlas(lst):
    _require_mirror()
    assert len(_names(lst)) == LISTS[lst][1]


# -- golden model ---------------------------------------------------------------------------------
def _golden_cases():
    return [pytest.param(lst, name, id=f"{lst}/{name}") for lst in LISTS for name in _names(lst)]


@pytest.mark.parametrize("lst, name", _golden_cases() or
                         [pytest.param(None, None, id="no-nvdla-hw-mirror")])
def test_golden(extracted, lst, name):
    directory, missing = extracted[lst]
    if name in missing:
        pytest.skip(f"{lst}/{name}: the mirror lacks {', '.join(missing[name])}")
    cfg = NvdlaConfig.preset(LISTS[lst][0])
    path = str(directory / name)
    if needs_y_stage(parse_trace(path, cfg, load_images=False)) and not cfg.sdp_ew:
        plain = run_trace(path, cfg)
        assert not plain.passed, f"{name} passed on {cfg.name} without the SDP Y stage"
        cfg = Y_STAGE[lst]
    r = run_trace(path, cfg)
    assert r.passed, r.message
    assert r.checks and all(c.passed for c in r.checks)


# -- RTL (playback engine) ------------------------------------------------------------------------
def _cost(path: Path) -> int:
    """A run-time estimate of a trace: the bytes of its images."""
    return sum(f.stat().st_size for f in path.iterdir())


def _deal(paths, n):
    """``paths`` into ``n`` batches of about equal cost (longest first, to the lightest)."""
    bins = [[0, []] for _ in range(n)]
    for p in sorted(paths, key=_cost, reverse=True):
        b = min(bins, key=lambda b: b[0])
        b[0] += _cost(p)
        b[1].append(p)
    return [sorted(b[1]) for b in bins if b[1]]


def run_rtl(paths, cfg, jobs=RTL_JOBS):
    """The traces on the playback engine: ``jobs`` harness processes side by side (one
    build); results in the order of ``paths``."""
    from tb.playback import build_harness, run_playback_batch
    try:
        build_harness(cfg)                              # once, before the processes start
    except EngineUnavailable as e:
        pytest.skip(str(e))
    batches = _deal(paths, jobs)
    with concurrent.futures.ThreadPoolExecutor(len(batches)) as pool:
        done = list(pool.map(lambda b: run_playback_batch([str(p) for p in b], cfg,
                                                          max_cycles=RTL_MAX_CYCLES), batches))
    by = {r.name: r for rs in done for r in rs}
    return [by[p.name] for p in paths]


def _check_rtl(results, label):
    bad = [f"{r.name}: {r.message}" for r in results if not r.passed or not r.checks]
    lines = [f"{label}: {sum(r.passed for r in results)} of {len(results)} pass"]
    lines += [f"  {r.name}: {'PASS' if r.passed else 'FAIL'} {r.cycles} cycles, layers "
              f"{r.layers}, {r.wall:.1f} s" for r in results]
    print("\n".join(lines))
    assert not bad, "\n".join(bad)


def _rtl_list(extracted, lst):
    _require_mirror()
    runs, y_stage, skipped = classify(lst, extracted)
    directory = extracted[lst][0]
    cfg = NvdlaConfig.preset(LISTS[lst][0])
    _check_rtl(run_rtl([directory / n for n in runs], cfg), f"{lst} on {cfg.name}")
    if skipped:
        print(f"{lst}: skipped (files missing from the mirror): " +
              "; ".join(f"{n}: {why}" for n, why in skipped))
    if y_stage:
        print(f"{lst}: on the Y-stage build ({Y_STAGE[lst].name}): {', '.join(y_stage)}")


@pytest.mark.rtl
def test_rtl_nv_small(extracted):
    _rtl_list(extracted, "nv_small")


@pytest.mark.rtl
@pytest.mark.slow          # nv_small's list runs the same engine by default (test time)
def test_rtl_nv_small_256(extracted):
    _rtl_list(extracted, "nv_small_256")


@pytest.mark.rtl
@pytest.mark.slow          # the public EW / LUT traces run on nv_small_ext by default
@pytest.mark.parametrize("lst", ["nv_small", "nv_small_256"])
def test_rtl_y_stage_traces(extracted, lst):
    """The EW / LUT traces on the preset with the SDP Y stage (nv_small's is the build the
    public EW / LUT traces already use; nv_small_256's is a build of its own)."""
    _require_mirror()
    _, y_stage, _ = classify(lst, extracted)
    if not y_stage:
        pytest.skip(f"{lst} has no EW / LUT trace")
    cfg = Y_STAGE[lst]
    directory = extracted[lst][0]
    _check_rtl(run_rtl([directory / n for n in y_stage], cfg), f"{lst} EW / LUT on {cfg.name}")


@pytest.mark.rtl
@pytest.mark.slow
def test_rtl_nv_large(extracted):
    """nv_large's six traces on the nv_large RTL (a long Verilator build)."""
    _rtl_list(extracted, "nv_large")


@pytest.mark.parametrize("lst", list(LISTS))
def test_skipped_traces_are_reported(extracted, lst):
    """What does not run, and why (the files the mirror lacks), as a skip of its own."""
    _, _, skipped = classify(lst, extracted)
    if skipped:
        pytest.skip(f"{lst}: {len(skipped)} not run: " +
                    "; ".join(f"{n}: {why}" for n, why in skipped))
