"""Connections that send nothing, held against a server's HTTP port: each opened again as soon
as the server closes it, so that as many stay open as the flood holds (the load tier's
``test_silent_load`` and ``make bench``'s silent figures)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Final

from tests.h2attacks import ClientThread
from tests.support import wait_until

HELD: Final = 8000
"""Connections held open at once."""


class Holders(ClientThread):
    """``HELD`` silent connections from ``addresses`` loopback addresses (127.0.0.2, ...), each
    opened again as soon as the server closes it, in a thread of their own until ``stop``."""

    def __init__(self, port: int, addresses: int) -> None:
        self.open = 0
        self.reopened = 0
        self._port = port
        self._addresses = addresses
        super().__init__("holders")

    async def _connections(self) -> None:
        await asyncio.gather(*(self._hold(n) for n in range(HELD)))

    async def _hold(self, n: int) -> None:
        assert self._stop is not None
        source = f"127.0.0.{2 + n % self._addresses}"
        while not self._stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self._port, local_addr=(source, 0)
                )
            except OSError:
                await asyncio.sleep(0.05)  # the port refused: try again, as a flood would
                continue
            self.open += 1
            try:
                closed = asyncio.ensure_future(reader.read(1))
                stopping = asyncio.ensure_future(self._stop.wait())
                await asyncio.wait({closed, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                if closed.done():
                    self.reopened += 1
                else:
                    closed.cancel()
            except ConnectionError:
                self.reopened += 1
            finally:
                self.open -= 1
                writer.close()
                with contextlib.suppress(ConnectionError):
                    await writer.wait_closed()


@contextlib.contextmanager
def holding(port: int, addresses: int) -> Iterator[Holders]:
    holders = Holders(port, addresses)
    holders.start()
    try:
        wait_until(lambda: holders.open == HELD, 120, f"{HELD} silent connections open")
        yield holders
    finally:
        holders.stop()
