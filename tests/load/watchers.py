"""Many WatchMatch streams at once, like a replica full of players: for the fan-out tests and
``make bench``.

``Crowd`` creates matches with known seeds, opens one stream per seat of each (or a spectator's),
spread over many client connections the way many browsers would be, then plays one move in every
match and records when each stream got it. It runs in its own event loop thread, so a test can
look at the server and at Redis while the streams are open.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import redis

from basra.client.match import card_pb
from basra.engine import new_match
from basra.engine.bots import random_play
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc

T = TypeVar("T")
STREAMS_PER_CONNECTION = (
    90  # under the shipped BASRA_MAX_CONCURRENT_STREAMS (100), as the API guide advises
)


@dataclass
class Watched:
    """One match of the crowd: its tokens, and the move played in it."""

    seed: int
    match_id: str
    tokens: dict[int, str]
    played_at: float = 0.0
    """When the Play was sent (time.monotonic)."""
    answered_at: float = 0.0
    """When the Play's response arrived."""


@dataclass
class Stream:
    """One open WatchMatch stream and what it received."""

    match: Watched
    seat: int
    events: list[Any] = field(default_factory=list)
    received_at: list[float] = field(default_factory=list)
    error: grpc.StatusCode | None = None
    call: Any = None


class Crowd:
    """Matches and their streams, driven from an event loop of their own."""

    def __init__(self, target: str, *, connections: int | None = None) -> None:
        self.target = target
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.connections = connections
        self.channels: list[grpc.aio.Channel] = []
        self.matches: list[Watched] = []
        self.streams: list[Stream] = []
        self._readers: list[asyncio.Task[None]] = []
        self.reopened = 0
        """Streams opened again because the server cut them before their first event."""
        self.cut_with: Counter[grpc.StatusCode] = Counter()
        """The status codes those streams ended with."""
        self._arrivals: Counter[int] = Counter()
        """Events received, by version, counted as they come: waiting on ``got`` would walk
        every stream, holding the interpreter lock the streams' loop needs to read."""

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 300) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def create(self, count: int, first_seed: int = 1) -> None:
        """Create ``count`` matches (seeds from ``first_seed``)."""
        self.run(self._create(count, first_seed))

    async def _create(self, count: int, first_seed: int) -> None:
        channel = grpc.aio.insecure_channel(self.target)
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        gate = asyncio.Semaphore(32)

        async def one(seed: int) -> Watched:
            request = pb.DealRequest(seed=seed, request_id=str(uuid.uuid4()))
            async with gate:
                response = await _retried(lambda: stub.Deal(request, timeout=60))
            return Watched(seed, response.match_id, {t.seat: t.token for t in response.seat_tokens})

        seeds = range(first_seed, first_seed + count)
        self.matches += await asyncio.gather(*(one(seed) for seed in seeds))
        await channel.close(None)

    def watch(
        self,
        tokens: Callable[[Watched], Sequence[tuple[int, str]]] | None = None,
        batch: int = 500,
    ) -> None:
        """Open streams from version 0: by default one per seat of every match; ``tokens``
        gives (label, token) pairs per match otherwise (a label is the stream's ``seat``).

        Streams open ``batch`` at a time, each batch once the previous one has received its
        first event (version 1, the deal), like clients arriving over some seconds; a stream
        cut before its first event is opened again, as a client does."""
        self.run(self._watch(tokens or (lambda m: sorted(m.tokens.items())), batch))

    async def _watch(
        self, tokens: Callable[[Watched], Sequence[tuple[int, str]]], batch: int
    ) -> None:
        wanted = [(Stream(m, seat), token) for m in self.matches for seat, token in tokens(m)]
        needed = self.connections or -(-len(wanted) // STREAMS_PER_CONNECTION)
        # A connection per channel (gRPC shares one per target otherwise), as many browsers do.
        local = [("grpc.use_local_subchannel_pool", 1)]
        while len(self.channels) < needed:
            self.channels.append(grpc.aio.insecure_channel(self.target, options=local))
        await asyncio.gather(*(channel.channel_ready() for channel in self.channels))
        stubs = [basra_service_pb2_grpc.BasraServiceStub(c) for c in self.channels]
        for first in range(0, len(wanted), batch):
            chunk = wanted[first : first + batch]
            for attempt in range(4):
                for index, (stream, token) in enumerate(chunk, start=first):
                    if attempt and stream.error is None:
                        continue
                    stream.error = None
                    stream.call = stubs[index % len(stubs)].WatchMatch(
                        pb.WatchMatchRequest(match_id=stream.match.match_id),
                        metadata=(("authorization", f"Bearer {token}"),),
                    )
                    self._readers.append(asyncio.create_task(self._read(stream)))
                while not all(s.events or s.error is not None for s, _ in chunk):
                    await asyncio.sleep(0.01)
                if all(s.error is None for s, _ in chunk):
                    break
                self.reopened += sum(s.error is not None for s, _ in chunk)
                self.cut_with.update(s.error for s, _ in chunk if s.error is not None)
        self.streams += [stream for stream, _ in wanted]

    async def _read(self, stream: Stream) -> None:
        try:
            async for response in stream.call:
                stream.received_at.append(time.monotonic())
                stream.events.append(response.event)
                self._arrivals[response.event.version] += 1
        except grpc.aio.AioRpcError as error:
            stream.error = error.code()
        except asyncio.CancelledError:
            pass

    def play_everywhere(self, per_second: float = 0) -> None:
        """One legal move in every match (paced at ``per_second`` plays when given)."""
        self.run(self._play(per_second))

    async def _play(self, per_second: float) -> None:
        channel = grpc.aio.insecure_channel(self.target)
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        gate = asyncio.Semaphore(64)
        start = time.monotonic()

        async def one(index: int, match: Watched) -> None:
            if per_second:
                await asyncio.sleep(max(0.0, start + index / per_second - time.monotonic()))
            state, _ = new_match(match.seed)
            play = random_play(state, random.Random(match.seed))
            request = pb.PlayRequest(
                match_id=match.match_id,
                card=card_pb(play.card),
                plan_id=play.plan or 0,
                request_id=uuid.uuid4().hex,
            )
            metadata = (("authorization", f"Bearer {match.tokens[play.seat]}"),)
            async with gate:
                match.played_at = time.monotonic()
                await _retried(lambda: stub.Play(request, metadata=metadata, timeout=60))
                match.answered_at = time.monotonic()

        await asyncio.gather(*(one(i, m) for i, m in enumerate(self.matches)))
        await channel.close(None)

    def wait(self, done: Callable[[], bool], timeout: float = 120, what: str = "") -> None:
        """Wait (polling) until ``done()``; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"not reached within {timeout} s: {what}")
            time.sleep(0.05)

    def got(self, version: int) -> list[Stream]:
        """The streams that received an event of ``version``."""
        return [s for s in self.streams if any(e.version == version for e in s.events)]

    def arrived(self, version: int) -> int:
        """Events of ``version`` received so far, on every stream: cheap to poll."""
        return self._arrivals[version]

    def failed(self) -> list[Stream]:
        return [s for s in self.streams if s.error is not None]

    def delays_ms(self, version: int, *, after_answer: bool = False) -> list[float]:
        """Per stream, from the Play sent (or its response received: 0 when the event came
        first) to the first event of ``version`` received."""
        delays = []
        for stream in self.streams:
            start = stream.match.answered_at if after_answer else stream.match.played_at
            for event, at in zip(stream.events, stream.received_at, strict=True):
                if event.version == version:
                    delays.append(max(0.0, at - start) * 1000)
                    break
        return delays

    def leave(self) -> None:
        """Cancel every stream (the clients go away)."""
        self.run(self._leave())

    async def _leave(self) -> None:
        for stream in self.streams:
            stream.call.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.run(self._close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    async def _close(self) -> None:
        for task in self._readers:
            task.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        for channel in self.channels:
            await channel.close(None)
        # A closed channel's calls end their status tasks on the loop's next rounds; a loop
        # stopped before those ran destroyed them pending ("Task was destroyed but it is
        # pending!", 139 of them after 10,000 streams in `make bench`).
        left = asyncio.all_tasks() - {asyncio.current_task()}
        if left:
            await asyncio.wait(left, timeout=10)


async def _retried(call: Callable[[], Awaitable[T]]) -> T:
    """A call retried (with the same request_id) when the server refused its stream, as a
    client does with UNAVAILABLE."""
    for attempt in range(5):
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or attempt == 4:
                raise
            await asyncio.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def redis_connections(client: redis.Redis) -> int:
    """Connections open to this Redis, not counting ``client``'s own."""
    listed = client.client_list()
    return len(listed) - 1
