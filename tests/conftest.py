"""Shared fixtures. ``mirror`` is the offline data mirror (../shared/data) when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def mirror() -> Path:
    env = os.environ.get("FEDCLUST_DATA_MIRROR")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"offline data mirror not found at {path}")
    return path
