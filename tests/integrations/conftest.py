"""Fixtures of the integration tests: a fresh log and registry of the shared tools per test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from integration_support import Log, make_registry

sys.path.insert(0, str(Path(__file__).parent.parent / "driver"))

from temporal_fixture import temporal_target  # noqa: F401 - the driver tests' Temporal dev server

from scopetool import Registry


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def registry(log: Log) -> Registry:
    return make_registry(log)
