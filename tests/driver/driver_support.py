"""What the driver tests share: the databases the durable cases run on, and fresh databases of each."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy

DATABASES = ["sqlite", "postgres"]
"""The DBOS system databases every durable case runs on."""


def database_url(kind: str, folder: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty DBOS system database of `kind` (a file in `folder`, or a new PostgreSQL database)."""
    if kind == "sqlite":
        return f"sqlite:///{folder / 'calls.sqlite'}"
    server: str = request.getfixturevalue("postgres_server")
    return sqlalchemy.make_url(server).set(database=f"scopetool_{uuid.uuid4().hex[:12]}").render_as_string(False)
