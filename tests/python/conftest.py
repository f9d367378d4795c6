"""Shared fixtures for the Python tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m schedlab ARGS`` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "schedlab", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=600,
    )


@pytest.fixture
def cli():
    return run_cli
