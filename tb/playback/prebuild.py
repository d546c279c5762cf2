"""Build playback harnesses ahead of the tests that need them, in one background process.

Under ``pytest -n`` the first test to need a configuration's harness builds it while holding
the build directory's lock (:class:`tb.runner._Locked`); a second worker needing the same
build meanwhile waits, idle, through Verilog generation and Verilate (single-threaded phases
of about a minute each). :func:`start` runs the builds a test session will need one after the
other in a separate process as soon as the session is collected, so most are ready, or under
way on a third process rather than blocking a worker, when their tests come. Each build is the
one :func:`tb.playback.driver.build_harness` would make (same cache, same lock): a build a
worker already started is waited for, not repeated; one it has not reached is simply there
when it does.

    python -m tb.playback.prebuild FILE     # FILE: a pickled list of NvdlaConfig objects
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time

__all__ = ["start"]


def start(cfgs, log_path=None) -> subprocess.Popen | None:
    """Start building the playback harnesses of ``cfgs`` (NvdlaConfig objects, in that order;
    repeats dropped) in a background process; returns it (None: nothing to build). Its output
    goes to ``log_path`` (default: discarded)."""
    seen, todo = set(), []
    for cfg in cfgs:
        if cfg.name not in seen:
            seen.add(cfg.name)
            todo.append(cfg)
    if not todo:
        return None
    fd, path = tempfile.mkstemp(prefix="nvdla-prebuild-", suffix=".pkl")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(todo, f)
    out = open(log_path, "a") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen([sys.executable, "-m", "tb.playback.prebuild", path],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        if log_path:
            out.close()


def main(argv=None) -> int:
    from .driver import build_harness
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    with open(argv[0], "rb") as f:
        cfgs = pickle.load(f)
    os.unlink(argv[0])
    for cfg in cfgs:
        t0 = time.monotonic()
        try:
            build_harness(cfg)
        except Exception as e:                 # the test that needs it reports the failure
            print(f"prebuild {cfg.name}: {type(e).__name__}: {e}", flush=True)
            continue
        print(f"prebuild {cfg.name}: ready after {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
