"""Redis and nginx from Debian's packages, started on loopback for a test and stopped after it.

`.ci/run` installs both (``apt-get install -y redis-server nginx``). Where one is not installed the
test is skipped, naming the package; under CI (``SCOPETOOL_REQUIRE_EXTRAS=1``) it fails instead.
Each server gets a free port, a configuration in the test's own folder, and a bounded wait for its port.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Generator, Sequence
from pathlib import Path

import pytest

START_TIMEOUT = 20.0
"""Seconds a server gets to accept connections."""


def program(name: str, package: str) -> str:
    """The path of the program `name` (also looked for in /usr/sbin), or a skip naming the Debian `package`."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is not None:
        return found
    message = f"{name} is not installed: apt-get install -y {package} (.ci/run installs it)"
    if os.environ.get("SCOPETOOL_REQUIRE_EXTRAS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS's choice)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Return once 127.0.0.1:`port` accepts a connection; fail if `process` ends or START_TIMEOUT passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _, err = process.communicate(timeout=5)
            pytest.fail(f"{what} ended with {process.returncode} before listening: {err.decode(errors='replace')}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    pytest.fail(f"{what} did not listen on port {port} within {START_TIMEOUT:g} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate `process`, then kill it if it has not ended within five seconds; close its pipes."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


@contextlib.contextmanager
def redis(folder: Path) -> Generator[str]:
    """A Redis server on a free loopback port, keeping nothing on disk: its ``redis://`` URL."""
    port = free_port()
    command = [program("redis-server", "redis-server"), "--bind", "127.0.0.1", "--port", str(port)]
    command += ["--save", "", "--appendonly", "no", "--dir", str(folder), "--protected-mode", "yes"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, process, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(process)


@contextlib.contextmanager
def nginx_round_robin(folder: Path, upstreams: Sequence[int]) -> Generator[str]:
    """nginx on a free loopback port passing each request to the next of `upstreams` in turn: its base URL.

    Responses are not buffered (a stream of server-sent events goes through as it comes), and the
    client's ``Host`` is passed on (the upstreams check it).
    """
    port = free_port()
    servers = "".join(f"        server 127.0.0.1:{upstream} max_fails=0;\n" for upstream in upstreams)
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers that can read this folder
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    config = folder / "nginx.conf"
    config.write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\nerror_log {folder}/logs/error.log;\n"
        "events { worker_connections 256; }\n"
        "http {\n"
        f"    access_log {folder}/logs/access.log;\n"
        f"    client_body_temp_path {folder}/body;\n    proxy_temp_path {folder}/proxy;\n"
        f"    fastcgi_temp_path {folder}/fastcgi;\n    uwsgi_temp_path {folder}/uwsgi;\n"
        f"    scgi_temp_path {folder}/scgi;\n"
        f"    upstream gateways {{\n{servers}    }}\n"
        f"    server {{\n        listen 127.0.0.1:{port};\n"
        "        location / {\n"
        "            proxy_pass http://gateways;\n"
        "            proxy_http_version 1.1;\n"
        '            proxy_set_header Connection "";\n'
        "            proxy_set_header Host $http_host;\n"
        "            proxy_buffering off;\n"
        "            proxy_read_timeout 60s;\n"
        "        }\n    }\n}\n"
    )
    command = [program("nginx", "nginx"), "-p", str(folder), "-c", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, process, "nginx")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)
