"""Runs an MCP server command with its standard input teed to a file: what reached the server, line by line.

``python recorder.py LOG PIDFILE COMMAND [ARG ...]``: every line written to this process's stdin
is appended to LOG (flushed at once) and passed on to COMMAND; COMMAND's stdout and stderr are this
process's own. COMMAND's process id is written to PIDFILE, so a test can stop the server itself.
"""

from __future__ import annotations

import subprocess
import sys
import threading


def main() -> int:
    """Start the command, tee stdin into it, and exit with its exit code."""
    log, pidfile, *command = sys.argv[1:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    with open(pidfile, "w", encoding="utf-8") as file:
        file.write(str(child.pid))
    assert child.stdin is not None

    def tee() -> None:
        with open(log, "ab") as record:
            for line in sys.stdin.buffer:
                record.write(line)
                record.flush()
                try:
                    child.stdin.write(line)
                    child.stdin.flush()
                except OSError:
                    break
        try:
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=tee, daemon=True).start()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
