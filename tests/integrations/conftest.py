"""Fixtures of the integration tests: a fresh log and registry of the shared tools per test."""

from __future__ import annotations

import pytest
from integration_support import Log, make_registry

from scopetool import Registry


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def registry(log: Log) -> Registry:
    return make_registry(log)
