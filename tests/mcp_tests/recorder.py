"""Run an MCP server with everything its client sends copied to a log: ``python recorder.py LOG COMMAND...``.

The client's lines (one JSON-RPC message each, as stdio frames them) are appended to LOG before they
are passed on, so a test can prove what reached the server and what never did. The server's process
id is written to ``LOG.pid`` (a test kills it there to make the server die in the middle of a call);
when the server ends, so does the recorder, with its exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path


def main() -> None:
    """Start the server, then copy standard input to it line by line, logging each line first."""
    log, *command = sys.argv[1:]
    server = subprocess.Popen(command, stdin=subprocess.PIPE)  # its output goes straight to the client
    Path(f"{log}.pid").write_text(str(server.pid))
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the server's output pipe is its own
    threading.Thread(target=lambda: os._exit(server.wait()), daemon=True).start()
    assert server.stdin is not None
    with Path(log).open("ab") as out:
        for line in sys.stdin.buffer:
            out.write(line)
            out.flush()
            try:
                server.stdin.write(line)
                server.stdin.flush()
            except BrokenPipeError:
                break
    server.stdin.close()
    sys.exit(server.wait())


if __name__ == "__main__":
    main()
