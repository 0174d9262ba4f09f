"""Fixtures of the driver tests: a PostgreSQL server and a Temporal dev server for the durable cases, when had."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import pg_cluster  # the helper beside this file (also run by .ci/run)
from temporal_fixture import temporal_target  # noqa: F401 - a fixture, shared with tests/integrations


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server URL: the one .ci/run started, or a throwaway cluster; skipped without PostgreSQL."""
    url = os.environ.get(pg_cluster.ENV)
    if url:
        yield url
        return
    if pg_cluster.binaries() is None:
        pytest.skip(
            f"PostgreSQL is not installed (apt-get install postgresql, or set {pg_cluster.ENV}): "
            "the PostgreSQL cases of the durable driver are skipped"
        )
    folder = Path(tempfile.mkdtemp(prefix="scopetool-pg-"))  # not under pytest's 0700 folders: postgres reads it
    try:
        started = pg_cluster.start(folder)
        assert started is not None
        yield started
    finally:
        pg_cluster.stop(folder)
