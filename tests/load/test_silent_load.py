"""8,000 connections that send nothing, held against the HTTP port of a real server process with
the shipped settings (HTTP/1.1 alone), from one address and from 200: each is closed after the
read timeout and its client opens another at once, so 8,000 stay open throughout, while an
honest client on 127.0.0.1 plays over Connect (HTTP/1.1) and gRPC with every call answered
within its deadline, and /healthz (the readiness probe) answers ready."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.h2attacks import ROUNDS, Honest, on_time, serving
from tests.support import wait_until

HELD: Final = 8000
"""Connections held open at once."""
MOST_PLAYS: Final = 20_000
"""The honest client's plays at most: many times what the read timeout takes to pass."""


class Holders:
    """``HELD`` silent connections from ``addresses`` loopback addresses (127.0.0.2, ...), each
    opened again as soon as the server closes it, in a thread of their own until ``stop``."""

    def __init__(self, port: int, addresses: int) -> None:
        self.open = 0
        self.reopened = 0
        self._port = port
        self._addresses = addresses
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    async def _run(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
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

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(10)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
        assert not self._thread.is_alive(), "the holders did not let go"


@contextlib.contextmanager
def holding(port: int, addresses: int) -> Iterator[Holders]:
    holders = Holders(port, addresses)
    holders.start()
    try:
        wait_until(lambda: holders.open == HELD, 120, f"{HELD} silent connections open")
        yield holders
    finally:
        holders.stop()


@pytest.mark.parametrize("addresses", [1, 200])
def test_silent_connections_held_leave_honest_callers_served_and_the_replica_ready(
    tmp_path: Path, addresses: int
) -> None:
    with serving(tmp_path, http2=False) as served, holding(served.http_port, addresses) as held:
        honest = Honest(served, http2=False)  # it connects after all of theirs
        try:
            # Plays on until the server has closed every silent connection it first held (the
            # read timeout) and their clients have opened new ones.
            for rounds in range(MOST_PLAYS):
                with on_time("while silent connections are held"):
                    honest.play()
                    assert honest.ready()
                if rounds >= ROUNDS and held.reopened >= HELD:
                    break
            assert held.reopened >= HELD, "the server closes the silent connections it holds"
        finally:
            honest.close()
