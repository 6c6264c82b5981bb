"""The Redis change feed: one subscribed connection per Redis node, shared by every stream.

Each commit publishes the match's new version on the match's shard channel
(``keys.wake_channel``, ``SPUBLISH`` in the commit script). A replica keeps one connection per
Redis node (one in all unless Redis is a Cluster) that ``SSUBSCRIBE``s to the channels of the
matches its streams follow, so a waiting stream costs no connection. The message is only a
wake-up: events are read from the match's stream, the source of truth, so a message lost while
a connection was down is made good by reading again. After each reconnection every channel of
the node is reported with version 0 ("read again"), once it is subscribed again.

A connection is checked every ``poll_s`` (PING): one that answers nothing for ``poll_s`` plus
the store deadline is dropped and opened again, so a silently dead connection (a dropped NAT
entry, a failed-over node) stops waking streams for that long at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import AbstractConnection

from basra.service.store import keys
from basra.service.store.base import Change, PendingChanges, StoreUnavailableError

log = logging.getLogger("basra.store")

_LOST: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ResponseError,  # MOVED and the like: the node does not serve the channel
    OSError,
    TimeoutError,
)
_BACKOFF_S: Final = (0.05, 0.1, 0.25, 0.5, 1.0)
# A subscriber's connection options over its client's. No socket timeout: with one, redis-py
# writes every command under asyncio.wait_for, which on Python 3.11 returns the write's result
# instead of raising a cancellation that lands as the write completes, so a writer cancelled
# then (its connection lost, the feed closing) went on pinging and its subscriber's close, so a
# server's stop, waited for ever. The reader's own deadline finds a dead connection (_read).
_CONNECTION: Final = {"health_check_interval": 0, "socket_timeout": None}


class _Subscriber:
    """One connection to one Redis node, subscribed to the channels the feed routes to it.

    ``wanted`` is what should be subscribed; the writer task sends the difference (one
    SSUBSCRIBE or SUNSUBSCRIBE per channel: a Cluster node takes one slot per command), the
    reader task reads the confirmations and messages. A channel is confirmed once every command
    sent for it has been answered and the last one subscribed it.
    """

    def __init__(
        self,
        name: str,
        connect: Callable[[], AbstractConnection],
        feed: RedisFeed,
    ) -> None:
        self.name = name
        self._connect = connect
        self._feed = feed
        self.wanted: set[bytes] = set()
        self._requested: set[bytes] = set()
        self._outstanding: dict[bytes, int] = {}
        self._confirmed: set[bytes] = set()
        self._resync: set[bytes] = set()
        self._waiters: dict[bytes, list[asyncio.Future[None]]] = {}
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def want(self, channel: bytes, *, resync: bool = False) -> None:
        self.wanted.add(channel)
        if resync:
            self._resync.add(channel)
        self._dirty.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"basra-feed-{self.name}")

    def drop(self, channel: bytes) -> None:
        self.wanted.discard(channel)
        self._resync.discard(channel)
        self._confirmed.discard(channel)
        self._dirty.set()

    async def subscribed(self, channel: bytes, timeout_s: float) -> None:
        """Return once ``channel`` is subscribed; StoreUnavailableError after ``timeout_s``."""
        if channel in self._confirmed:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(channel, []).append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter
        except TimeoutError:
            raise StoreUnavailableError(f"no subscription to {channel!r} in time") from None
        finally:
            waiters = self._waiters.get(channel, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._waiters.pop(channel, None)

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        failures = 0
        while not self._closed:
            connection = self._connect()
            writer: asyncio.Task[None] | None = None
            try:
                async with asyncio.timeout(self._feed.timeout_s):
                    await connection.connect()  # type: ignore[no-untyped-call]
                failures = 0
                self._requested.clear()
                self._outstanding.clear()
                self._dirty.set()
                writer = asyncio.create_task(self._write(connection))
                await self._read(connection)
            except _LOST as exc:
                log.warning(
                    "watch reader lost its Redis connection",
                    extra={"node": self.name, "cause": f"{type(exc).__name__}: {exc}"},
                )
            except Exception as exc:  # the reader must outlive anything: streams rely on it
                log.error("watch reader failed", extra={"node": self.name}, exc_info=exc)
            finally:
                if writer is not None:
                    writer.cancel()
                    with contextlib.suppress(asyncio.CancelledError, *_LOST):
                        await writer
                with contextlib.suppress(*_LOST):
                    await connection.disconnect(nowait=True)
            if self._closed:
                return
            # Whatever was published meanwhile is lost: every channel is read again once it is
            # subscribed again.
            self._confirmed.clear()
            self._resync |= self.wanted
            self._feed.lost(self)
            await asyncio.sleep(_BACKOFF_S[min(failures, len(_BACKOFF_S) - 1)])
            failures += 1

    async def _write(self, connection: AbstractConnection) -> None:
        while True:
            try:
                async with asyncio.timeout(self._feed.poll_s):
                    await self._dirty.wait()
            except TimeoutError:
                await connection.send_command("PING", check_health=False)
                continue
            self._dirty.clear()
            subscribe = self.wanted - self._requested
            unsubscribe = self._requested - self.wanted
            if not subscribe and not unsubscribe:
                continue
            commands: list[tuple[Any, ...]] = []
            for channel in subscribe:
                commands.append(("SSUBSCRIBE", channel))
                self._requested.add(channel)
            for channel in unsubscribe:
                commands.append(("SUNSUBSCRIBE", channel))
                self._requested.discard(channel)
            for _, channel in commands:
                self._outstanding[channel] = self._outstanding.get(channel, 0) + 1
            await connection.send_packed_command(
                connection.pack_commands(commands), check_health=False
            )

    async def _read(self, connection: AbstractConnection) -> None:
        # The writer pings every poll_s: silence for longer than that plus the deadline means
        # the connection is dead although no error says so.
        silence_s = self._feed.poll_s + self._feed.timeout_s
        while True:
            reply = await connection.read_response(
                timeout=silence_s, disconnect_on_error=False, push_request=True
            )
            if reply is None:
                raise TimeoutError(f"no answer from Redis for {silence_s:.1f} s")
            if not isinstance(reply, list):
                continue  # PONG
            kind = reply[0]
            if kind == b"smessage":
                self._feed.report(reply[1], int(reply[2]))
            elif kind in (b"ssubscribe", b"sunsubscribe"):
                self._answered(reply[1], subscribed=kind == b"ssubscribe")

    def _answered(self, channel: bytes, *, subscribed: bool) -> None:
        outstanding = self._outstanding.get(channel, 0)
        if outstanding == 0:
            # An SUNSUBSCRIBE nobody sent: the channel's slot moved to another node.
            self._requested.discard(channel)
            self._confirmed.discard(channel)
            if channel in self.wanted:
                self._feed.moved(channel)
            return
        if outstanding == 1:
            del self._outstanding[channel]
        else:
            self._outstanding[channel] = outstanding - 1
            return
        if subscribed and channel in self._requested and channel in self.wanted:
            self._confirmed.add(channel)
            for waiter in self._waiters.pop(channel, []):
                if not waiter.done():
                    waiter.set_result(None)
            if channel in self._resync:
                self._resync.discard(channel)
                self._feed.report(channel, 0)


class RedisFeed:
    """The Store.feed of the Redis store (standalone, Sentinel-fronted or Cluster)."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        poll_s: float,
        timeout_s: float,
        on_reconnect: Callable[[], None],
    ) -> None:
        self._client = client
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self._on_reconnect = on_reconnect
        self._subscribers: dict[str, _Subscriber] = {}
        self._route: dict[bytes, _Subscriber] = {}
        self._changes = PendingChanges()
        self._rerouting: asyncio.Task[None] | None = None

    async def follow(self, match_id: str) -> None:
        channel = keys.wake_channel(match_id).encode()
        subscriber = self._route.get(channel)
        if subscriber is None:
            subscriber = self._route[channel] = await self._subscriber_for(channel)
            subscriber.want(channel)
        await subscriber.subscribed(channel, self.timeout_s)

    def unfollow(self, match_id: str) -> None:
        channel = keys.wake_channel(match_id).encode()
        subscriber = self._route.pop(channel, None)
        if subscriber is not None:
            subscriber.drop(channel)

    async def changes(self) -> list[Change]:
        return await self._changes.take()

    async def close(self) -> None:
        self._changes.close()
        if self._rerouting is not None:
            # Awaited: a reroute cancelled while it closes a subscriber goes on (the subscriber's
            # close swallows the cancellation) and would change _subscribers under the loop below.
            self._rerouting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rerouting
        for subscriber in list(self._subscribers.values()):
            await subscriber.close()

    def report(self, channel: bytes, version: int) -> None:
        if channel in self._route:
            self._changes.put(Change(keys.match_of_channel(channel), version))

    def lost(self, subscriber: _Subscriber) -> None:
        """A subscriber lost its connection (it reconnects and reports every channel)."""
        self._on_reconnect()
        if isinstance(self._client, RedisCluster):
            self._reroute()

    def moved(self, channel: bytes) -> None:
        """The channel's slot moved to another node (Cluster only)."""
        subscriber = self._route.get(channel)
        if subscriber is not None:
            subscriber.drop(channel)
            subscriber.want(channel, resync=True)
        self._reroute()

    async def _subscriber_for(self, channel: bytes) -> _Subscriber:
        client = self._client
        if not isinstance(client, RedisCluster):
            name = ""
            if name not in self._subscribers:
                pool = client.connection_pool
                options = {**pool.connection_kwargs, **_CONNECTION}
                self._subscribers[name] = _Subscriber(
                    name, lambda: pool.connection_class(**options), self
                )
            return self._subscribers[name]
        if not client.nodes_manager.slots_cache:
            # Unavailable as every ChangeFeed method (the watch streams handle that, not these);
            # RedisClusterException: a slot map that leaves slots to no master.
            try:
                async with asyncio.timeout(self.timeout_s):
                    await client.initialize()
            except (*_LOST, redis_errors.RedisClusterException) as exc:
                raise StoreUnavailableError(
                    f"no Redis Cluster slot map: {type(exc).__name__}: {exc}"
                ) from exc
        try:
            node = client.get_node_from_key(channel.decode())
        except redis_errors.SlotNotCoveredError:
            node = None  # (None itself comes only of replica lookups)
        if node is None:
            raise StoreUnavailableError(f"no Redis Cluster node serves {channel!r}")
        if node.name not in self._subscribers:
            options = {**node.connection_kwargs, **_CONNECTION}
            connection_class = node.connection_class
            self._subscribers[node.name] = _Subscriber(
                node.name, lambda: connection_class(**options), self
            )
        return self._subscribers[node.name]

    def _reroute(self) -> None:
        if self._rerouting is None or self._rerouting.done():
            self._rerouting = asyncio.create_task(self._rerouted())

    async def _rerouted(self) -> None:
        """Refresh the Cluster's slot map and move every channel to the node serving it now."""
        client = self._client
        assert isinstance(client, RedisCluster)
        for delay in _BACKOFF_S:
            try:
                async with asyncio.timeout(self.timeout_s):
                    await client.nodes_manager.initialize()
                break
            except _LOST:
                await asyncio.sleep(delay)
        else:
            return  # the subscribers keep trying their nodes; the next loss reroutes again
        for channel, current in list(self._route.items()):
            subscriber = await self._subscriber_for(channel)
            if subscriber is not current:
                current.drop(channel)
                self._route[channel] = subscriber
                subscriber.want(channel, resync=True)
        for name, subscriber in list(self._subscribers.items()):
            if not subscriber.wanted:
                del self._subscribers[name]
                await subscriber.close()
