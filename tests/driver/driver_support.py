"""What the driver tests share: the databases the durable cases run on, and fresh databases of each."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy

from scopetool.driver.dbos import _sqlite_problem  # pyright: ignore[reportPrivateUsage]

DATABASES = ["sqlite", "postgres"]
"""The DBOS system databases every durable case runs on."""


def database_url(kind: str, folder: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty DBOS system database of `kind` (a file in `folder`, or a new PostgreSQL database)."""
    if kind == "sqlite":
        url = f"sqlite:///{folder / 'calls.sqlite'}"
        problem = _sqlite_problem(url)
        if problem is not None:
            pytest.skip(problem)
        return url
    server: str = request.getfixturevalue("postgres_server")
    return sqlalchemy.make_url(server).set(database=f"scopetool_{uuid.uuid4().hex[:12]}").render_as_string(False)
