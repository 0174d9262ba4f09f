"""The floor of any process in the middle: copy a server's stdio to the client and back, doing nothing else.

``python benchmarks/relay.py COMMAND [ARGS...]`` starts COMMAND and copies what it reads on its own
standard input to the server's, and what the server writes to its own standard output, on one asyncio
event loop, as a Python gateway must before it does any work of its own. `benchmarks/gateway.py` measures it
beside the gateway: what it adds to the direct call is what a process in the middle costs on this
machine, and what the gateway adds beyond it is the gateway's own work.
"""

from __future__ import annotations

import asyncio
import sys


async def copy(reader: asyncio.StreamReader, write: asyncio.StreamWriter | None) -> None:
    """Copy `reader` to `write` (this process's standard output when None), chunk by chunk, until it ends."""
    out = sys.stdout.buffer
    while chunk := await reader.read(1 << 16):
        if write is None:
            out.write(chunk)
            out.flush()
        else:
            write.write(chunk)
            await write.drain()
    if write is not None:
        write.close()


async def main() -> None:
    """Start the server and relay both ways until either side ends."""
    server = await asyncio.create_subprocess_exec(
        *sys.argv[1:], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin.buffer)
    await asyncio.wait(
        [asyncio.ensure_future(copy(stdin, server.stdin)), asyncio.ensure_future(copy(server.stdout, None))],
        return_when=asyncio.FIRST_COMPLETED,
    )
    server.kill()
    await server.wait()


if __name__ == "__main__":
    asyncio.run(main())
