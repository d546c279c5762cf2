"""Shared pytest fixtures and paths: ../shared (reference material) sits beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NVDLA_SHARED", ROOT.parent / "shared"))
TRACES = SHARED / "nvdla" / "traces"
