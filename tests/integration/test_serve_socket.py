"""The socket `serve` listens on: the connections it accepts answer without waiting on Nagle's algorithm."""

from __future__ import annotations

import asyncio
import socket

from server.cli import bind


def test_accepted_connections_have_nagle_off() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose protocol says TCP; an accepted one inherits the listener's.
    Without it a kept-alive connection's every response body waited 40 ms for the client's delayed ACK."""
    sock = bind("127.0.0.1", 0)
    nodelay: list[int] = []

    async def main() -> None:
        def made(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nodelay.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(made, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            for _ in range(100):
                if nodelay:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    assert nodelay and nodelay[0] != 0
