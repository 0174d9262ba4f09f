"""A throwaway PostgreSQL cluster on loopback, for the driver's tests and benchmark.

As a script (``.ci/run`` uses it)::

    eval "$(python tests/driver/pg_cluster.py start /tmp/scopetool-pg)"   # exports SCOPETOOL_TEST_POSTGRES_URL
    python tests/driver/pg_cluster.py stop /tmp/scopetool-pg

`start` prints nothing and exits 0 when no PostgreSQL server binaries are installed, so the tests that
need one are skipped with a clear message. PostgreSQL refuses to run as root, so as root the cluster
runs as the ``postgres`` user (Debian's package creates it). The cluster trusts local connections and
listens only on 127.0.0.1, on a free port.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ENV = "SCOPETOOL_TEST_POSTGRES_URL"
"""The environment variable the tests read a PostgreSQL URL from."""


def binaries() -> Path | None:
    """The folder holding initdb and pg_ctl (the newest installed version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str]) -> None:
    subprocess.run(_as_owner(command), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(folder: Path) -> str | None:
    """Create and start a cluster under `folder`; its URL, or None when PostgreSQL is not installed."""
    bindir = binaries()
    if bindir is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    data = folder / "data"
    _run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
    port = _free_port()
    options = f"-h 127.0.0.1 -p {port} -k {folder} -F -c max_connections=200"
    _run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-o", options, "-w", "start"])
    (folder / "port").write_text(str(port))
    return f"postgresql://postgres@127.0.0.1:{port}/scopetool_test"


def stop(folder: Path) -> None:
    """Stop the cluster under `folder` (if it runs) and delete the folder."""
    bindir = binaries()
    data = folder / "data"
    if bindir is not None and (data / "postmaster.pid").exists():
        subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    """``start FOLDER`` prints an ``export`` line for the shell; ``stop FOLDER`` tears the cluster down."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: pg_cluster.py start|stop FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    if argv[0] == "stop":
        stop(folder)
        return 0
    try:
        url = start(folder)
    except subprocess.CalledProcessError as error:
        print(
            f"pg_cluster.py: could not start PostgreSQL: {error.stderr.decode(errors='replace').strip()}",
            file=sys.stderr,
        )
        return 1
    if url is not None:
        print(f"export {ENV}={url}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
