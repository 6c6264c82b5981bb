"""One contract, two stores: the embedded store and the Redis store behave the same."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Protocol

import pytest
import redis
import redis.asyncio

from basra.service.config import EVENT_LOOPS, Settings
from basra.service.server import new_event_loop
from basra.service.store import (
    Commit,
    EventEntry,
    MatchRecord,
    NewMatch,
    Store,
    StoreUnavailableError,
    WatchAccess,
    keys,
)
from basra.service.store.codec import decode_watch_access, encode_watch_access
from basra.service.store.memory import MemoryStore
from basra.service.store.redis import RedisStore
from basra.service.store.redis_feed import RedisFeed
from tests.support import RedisProcess

StoreFactory = Callable[[], Store]


@pytest.fixture(params=["embedded", "redis"])
def make_store(request: pytest.FixtureRequest) -> StoreFactory:
    if request.param == "embedded":
        return lambda: MemoryStore(ttl_s=3600, events_maxlen=5)
    url = request.getfixturevalue("redis_url")
    return lambda: RedisStore(url, cluster=False, ttl_s=3600, events_maxlen=5, timeout_s=2)


def run(make_store: StoreFactory, scenario: Callable[[Store], Awaitable[None]]) -> None:
    async def main() -> None:
        store = make_store()
        try:
            await scenario(store)
        finally:
            await store.close()

    asyncio.run(main())


def entry(version: int, private: tuple[bytes, ...] = ()) -> EventEntry:
    return EventEntry(version, b"P" + bytes([version]), b"events-%d" % version, private)


def new(match_id: str = "M" * 22) -> NewMatch:
    record = MatchRecord(match_id, 1, b"state-1", (b"a" * 32, b"b" * 32), b"creation", (b"", b""))
    return NewMatch(record, entry(1, (b"\x01\x02", b"\x03\x04")))


def commit(version: int, seat: int = 0, request: bytes = b"") -> Commit:
    """The change from ``version``: a new state and the seat's request record."""
    requests = [b"", b""]
    requests[seat] = request
    record = new().record._replace(
        version=version + 1,
        state=b"state-%d" % (version + 1),
        requests=tuple(requests),
    )
    return Commit(version, record, entry(version + 1))


def test_load_of_an_unknown_match_is_none(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        assert await store.load("N" * 22) is None
        page = await store.events("N" * 22, 0)
        assert (page.entries, page.oldest_version) == ((), None)

    run(make_store, scenario)


def test_create_is_create_if_absent_and_load_returns_the_record(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        assert await store.create(new())
        other = NewMatch(new().record._replace(state=b"another match's"), new().entry)
        assert not await store.create(other)  # the id holds another match
        assert await store.create(new())  # the same create again: idempotent, nothing written
        assert await store.load("M" * 22) == new().record
        assert [e.version for e in (await store.events("M" * 22, 0)).entries] == [1]

    run(make_store, scenario)


def test_commit_is_compare_and_set_on_the_version(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        await store.create(new())
        assert await store.commit("M" * 22, commit(1, seat=1, request=b"req"))
        assert not await store.commit("M" * 22, commit(1))  # stale
        assert not await store.commit("M" * 22, commit(5))  # from the future
        record = await store.load("M" * 22)
        assert record is not None
        assert (record.version, record.state, record.requests) == (2, b"state-2", (b"", b"req"))
        assert record.token_hashes == new().record.token_hashes
        assert await store.commit("M" * 22, commit(2, seat=1, request=b""))
        record = await store.load("M" * 22)
        assert record is not None
        assert record.requests == (b"", b"")  # an empty request clears the seat's record
        assert not await store.commit("X" * 22, commit(1))  # no such match

    run(make_store, scenario)


def test_a_lost_commit_answers_the_current_record_in_the_same_call(
    make_store: StoreFactory,
) -> None:
    # What lets a replica play from the record it remembers: when the match moved on, the one
    # commit call brings back the match as it is now, so the retry needs no load.
    async def scenario(store: Store) -> None:
        await store.create(new())
        assert await store.commit_or_current("M" * 22, commit(1, seat=1, request=b"req")) == (
            True,
            None,
        )
        applied, current = await store.commit_or_current("M" * 22, commit(1))  # stale
        assert not applied
        assert current == await store.load("M" * 22)
        assert current is not None
        assert (current.version, current.state, current.requests) == (2, b"state-2", (b"", b"req"))
        applied, current = await store.commit_or_current("M" * 22, commit(7))  # from the future
        assert (applied, current) == (False, await store.load("M" * 22))
        # Nothing was written by the lost commits.
        page = await store.events("M" * 22, 0)
        assert [e.version for e in page.entries] == [1, 2]
        assert await store.commit_or_current("X" * 22, commit(1)) == (False, None)  # gone

    run(make_store, scenario)


def test_racing_commits_apply_exactly_one(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        await store.create(new())
        results = await asyncio.gather(
            *(store.commit("M" * 22, commit(1, seat=s % 2)) for s in range(10))
        )
        assert sum(results) == 1
        page = await store.events("M" * 22, 0)
        assert [e.version for e in page.entries] == [1, 2]

    run(make_store, scenario)


def test_events_come_in_order_after_a_version_with_each_seats_dealt_cards(
    make_store: StoreFactory,
) -> None:
    async def scenario(store: Store) -> None:
        await store.create(new())
        for version in (1, 2, 3):
            await store.commit("M" * 22, commit(version))
        page = await store.events("M" * 22, 1)
        assert [e.version for e in page.entries] == [2, 3, 4]
        assert page.entries[0] == entry(2)
        first = (await store.events("M" * 22, 0)).entries[0]
        assert (first.dealt_to(0), first.dealt_to(1), first.dealt_to(3)) == (
            b"\x01\x02",
            b"\x03\x04",
            b"",
        )
        assert first.command == b"P\x01"
        assert first.events == b"events-1"

    run(make_store, scenario)


def test_an_entry_dealing_to_a_later_seat_only_comes_back_as_it_was_written(
    make_store: StoreFactory,
) -> None:
    # The first seats dealt nothing (a deal to seat 2 of three, say): their parts come back
    # empty, as written, and the entry compares equal to the one committed.
    async def scenario(store: Store) -> None:
        await store.create(new())
        later = commit(1)._replace(entry=entry(2, (b"", b"", b"\x05\x06")))
        assert await store.commit("M" * 22, later)
        (got,) = (await store.events("M" * 22, 1)).entries
        assert got == entry(2, (b"", b"", b"\x05\x06"))
        assert got.private == (b"", b"", b"\x05\x06")

    run(make_store, scenario)


def test_the_feed_reports_each_commit_of_a_followed_match_once_it_is_followed(
    make_store: StoreFactory,
) -> None:
    async def scenario(store: Store) -> None:
        reconnects: list[None] = []
        feed = store.feed(lambda: reconnects.append(None))
        await store.create(new())
        await store.create(new("O" * 22))
        await store.commit("M" * 22, commit(1))  # before follow: not reported
        await feed.follow("M" * 22)
        waiting = asyncio.create_task(feed.changes())
        await store.commit("O" * 22, commit(1))  # never followed
        await store.commit("M" * 22, commit(2))
        changes = await asyncio.wait_for(waiting, 5)
        assert [(c.match_id, c.version) for c in changes] == [("M" * 22, 3)]
        page = await store.events("M" * 22, 2)
        assert [e.version for e in page.entries] == [3]
        feed.unfollow("M" * 22)
        await store.commit("M" * 22, commit(3))
        await feed.follow("O" * 22)
        await store.commit("O" * 22, commit(2))
        changes = await asyncio.wait_for(feed.changes(), 5)
        assert [(c.match_id, c.version) for c in changes] == [("O" * 22, 3)]
        assert reconnects == []
        await feed.close()

    run(make_store, scenario)


def test_embedded_store_a_closed_feed_reports_nothing_more_and_the_others_go_on() -> None:
    async def scenario(store: Store) -> None:
        closed, open_ = store.feed(lambda: None), store.feed(lambda: None)
        await store.create(new())
        for feed in (closed, open_):
            await feed.follow("M" * 22)
        await closed.close()
        await store.commit("M" * 22, commit(1))
        assert await asyncio.wait_for(closed.changes(), 5) == []
        changes = await asyncio.wait_for(open_.changes(), 5)
        assert [(c.match_id, c.version) for c in changes] == [("M" * 22, 2)]
        await open_.close()

    run(lambda: MemoryStore(ttl_s=3600, events_maxlen=5), scenario)


def test_events_of_many_matches_at_once(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        await store.create(new())
        await store.create(new("O" * 22))
        await store.commit("O" * 22, commit(1))
        pages = await store.events_many({"M" * 22: 0, "O" * 22: 1, "N" * 22: 0})
        assert [e.version for e in pages["M" * 22].entries] == [1]
        assert [e.version for e in pages["O" * 22].entries] == [2]
        assert pages["O" * 22].oldest_version == 1
        assert (pages["N" * 22].entries, pages["N" * 22].oldest_version) == ((), None)

    run(make_store, scenario)


def test_event_retention_is_capped(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        await store.create(new())
        for version in range(1, 9):
            await store.commit("M" * 22, commit(version))
        page = await store.events("M" * 22, 0)
        assert [e.version for e in page.entries] == [5, 6, 7, 8, 9]  # maxlen 5
        assert page.oldest_version == 5

    run(make_store, scenario)


def test_embedded_store_expires_idle_matches_and_every_commit_restarts_the_clock() -> None:
    now = [0.0]
    store = MemoryStore(ttl_s=10, events_maxlen=5, clock=lambda: now[0])

    async def scenario() -> None:
        await store.create(new())
        now[0] = 9
        assert await store.commit("M" * 22, commit(1))
        now[0] = 18
        assert await store.load("M" * 22) is not None
        now[0] = 19  # the commit's instant plus the TTL: gone
        assert await store.load("M" * 22) is None
        assert (await store.events("M" * 22, 0)).oldest_version is None

    asyncio.run(scenario())


def test_redis_store_sets_the_idle_expiry_on_both_keys_and_commits_restart_it(
    redis_url: str,
) -> None:
    direct = redis.Redis.from_url(redis_url)

    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=100, events_maxlen=5, timeout_s=2)
        try:
            await store.create(new())
            for key in (keys.match_key("M" * 22), keys.events_key("M" * 22)):
                assert 99_000 < direct.pttl(key) <= 100_000
                direct.pexpire(key, 5000)
            await store.commit("M" * 22, commit(1))
            for key in (keys.match_key("M" * 22), keys.events_key("M" * 22)):
                assert direct.pttl(key) > 99_000
        finally:
            await store.close()

    asyncio.run(scenario())


def test_watch_access_is_compare_and_set_and_a_revocation_is_reported(
    make_store: StoreFactory,
) -> None:
    async def scenario(store: Store) -> None:
        mid = "M" * 22
        first = WatchAccess(b"s" * 16, (b"h" * 32, b""))
        assert await store.watch_access((mid,)) == {mid: None}
        assert not await store.swap_watch_access(mid, None, first, revoke=False)
        await store.create(new())
        feed = store.feed(lambda: None)
        await feed.follow(mid)
        assert await store.swap_watch_access(mid, None, first, revoke=False)
        assert not await store.swap_watch_access(mid, None, first, revoke=False)
        current = (await store.watch_access((mid, "N" * 22)))[mid]
        assert current == first
        # A commit replaces the record only: the watch access stays as it was.
        await store.commit(mid, commit(1))
        assert (await store.watch_access((mid,)))[mid] == first
        revoked = WatchAccess(b"t" * 16, (b"", b"i" * 32))
        assert await store.swap_watch_access(mid, current, revoked, revoke=True)
        assert (await store.watch_access((mid,)))[mid] == revoked
        seen: list[tuple[str, int]] = []
        while (mid, 0) not in seen:
            seen += [(c.match_id, c.version) for c in await asyncio.wait_for(feed.changes(), 5)]
        # The commit (version 2), then the revocation: "read again", version 0. The swaps
        # without revoke reported nothing.
        assert seen == [(mid, 2), (mid, 0)]
        await feed.close()

    run(make_store, scenario)


def test_watch_access_decodes_what_it_encodes_and_refuses_other_bytes() -> None:
    access = WatchAccess(bytes(range(16)), (b"", b"h" * 32, b"\x01" + bytes(31)))
    data = encode_watch_access(access)
    assert decode_watch_access(data) == access
    for bad in (b"", b"\x02" + data[1:], data[:-1], data + b"\x00"):
        with pytest.raises(ValueError, match="not watch access"):
            decode_watch_access(bad)


def test_match_keys_share_one_cluster_slot() -> None:
    from redis.crc import key_slot

    for match_id in ("M" * 22, "abcDEF012_-xyzXYZ789ab"):
        slot = key_slot(keys.match_key(match_id).encode())
        assert slot == key_slot(keys.events_key(match_id).encode())
        assert slot == key_slot(keys.watch_key(match_id).encode())
        assert slot == key_slot(keys.wake_channel(match_id).encode())


def test_request_records_written_before_versions_still_give_their_stored_response() -> None:
    from basra.service import records

    old = b"h" * 16 + b"f" * 16 + b"\x0a\x02\x08\x01"  # the response bytes themselves
    decoded = records.SeatRequest.decode(old)
    assert decoded is not None
    assert (decoded.response, decoded.version) == (b"\x0a\x02\x08\x01", 0)
    new = records.SeatRequest(b"h" * 16, b"f" * 16, 77)
    assert records.SeatRequest.decode(new.encode()) == new
    assert len(new.encode()) == 41


def test_the_redis_store_tells_the_memory_a_match_uses_and_nothing_for_an_unknown_one(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=60, events_maxlen=100, timeout_s=5)
        try:
            await store.create(new())
            record, stream = await store.memory_usage("M" * 22)
            assert record > len(new().record.state)
            assert stream > len(new().entry.events)
            assert await store.memory_usage("N" * 22) == (0, 0)
        finally:
            await store.close()

    asyncio.run(scenario())


def test_the_redis_store_measures_every_node_of_a_long_stream(redis_url: str) -> None:
    # MEMORY USAGE of an aggregate samples 5 of its nodes unless told SAMPLES 0, and
    # extrapolates from them: a stream whose entries grow, each in a node of its own (past
    # stream-node-max-bytes), is measured whole only with SAMPLES 0.
    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=60, events_maxlen=100, timeout_s=5)
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            await store.create(new())
            for version in range(1, 30):
                grown = EventEntry(version + 1, b"P", b"e" * (5000 + 400 * version), ())
                assert await store.commit("M" * 22, commit(version)._replace(entry=grown))
            stream_key = keys.events_key("M" * 22)
            whole = await client.memory_usage(stream_key, samples=0)
            assert whole != await client.memory_usage(stream_key)  # the default samples 5
            assert whole != await client.memory_usage(stream_key, samples=1)
            record = await client.memory_usage(keys.match_key("M" * 22), samples=0)
            assert await store.memory_usage("M" * 22) == (record, whole)
        finally:
            await client.aclose()
            await store.close()

    asyncio.run(scenario())


def test_a_redis_store_built_without_pool_or_poll_settings_takes_the_shipped_defaults(
    redis_url: str,
) -> None:
    """RedisStore's own defaults for its connection pool and its change feed's poll are the
    service's (config.py), so a store built without them behaves as the shipped settings."""
    shipped = Settings()

    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=60, events_maxlen=5, timeout_s=2)
        try:
            assert isinstance(store._redis, redis.asyncio.Redis)
            assert isinstance(store._once, redis.asyncio.Redis)
            pools = (store._redis.connection_pool, store._once.connection_pool)
            assert sum(pool.max_connections for pool in pools) == shipped.redis_pool_size
            assert store.feed(lambda: None).poll_s == shipped.watch_poll_s
        finally:
            await store.close()

    asyncio.run(scenario())


def test_the_redis_store_uses_redis_pys_own_connections_with_the_hiredis_parser(
    redis_url: str,
) -> None:
    """No connection class of the store's own: both clients' pools make redis-py's Connection,
    which parses replies with hiredis (the redis[hiredis] extra) when it is installed."""
    from redis.asyncio import Redis
    from redis.asyncio.connection import Connection
    from redis.utils import HIREDIS_AVAILABLE

    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=60, events_maxlen=100, timeout_s=5)
        try:
            assert HIREDIS_AVAILABLE
            for client in (store._redis, store._once):
                assert isinstance(client, Redis)
                assert client.connection_pool.connection_class is Connection
            assert await store.load("M" * 22) is None
        finally:
            await store.close()

    asyncio.run(scenario())


def test_embedded_store_keeps_a_finished_match_only_for_the_finished_ttl() -> None:
    now = [0.0]
    store = MemoryStore(ttl_s=1000, events_maxlen=5, clock=lambda: now[0], finished_ttl_s=10)

    async def scenario() -> None:
        await store.create(new())
        assert await store.commit("M" * 22, commit(1)._replace(finished=True))
        await store.create(new("O" * 22))
        assert await store.commit("O" * 22, commit(1))  # not the final commit: the full TTL
        now[0] = 9.5
        assert await store.load("M" * 22) is not None
        now[0] = 10.5
        assert await store.load("M" * 22) is None
        assert await store.load("O" * 22) is not None

    asyncio.run(scenario())


def test_embedded_store_tells_the_followers_of_a_match_that_expired() -> None:
    """Version 0: watchers read again and find the match gone."""
    now = [0.0]
    store = MemoryStore(ttl_s=10, events_maxlen=5, clock=lambda: now[0])

    async def scenario() -> None:
        feed = store.feed(lambda: None)
        await store.create(new())
        await feed.follow("M" * 22)
        now[0] = 10
        assert await store.load("M" * 22) is None
        changes = await asyncio.wait_for(feed.changes(), 5)
        assert [(c.match_id, c.version) for c in changes] == [("M" * 22, 0)]
        await feed.close()

    asyncio.run(scenario())


def test_embedded_store_drops_expired_matches_at_every_1024th_creation() -> None:
    """Matches nobody reads again are dropped too (memory stays bounded): every 1024 creations
    the store sweeps, and the followers of what it dropped hear of it then, not before."""
    now = [0.0]
    store = MemoryStore(ttl_s=10, events_maxlen=5, clock=lambda: now[0])

    async def scenario() -> None:
        feed = store.feed(lambda: None)
        await store.create(new())  # creation 1
        await feed.follow("M" * 22)
        now[0] = 10
        for n in range(2, 1024):
            assert await store.create(new(f"{n:022d}"))
        waiting = asyncio.create_task(feed.changes())
        await asyncio.sleep(0)
        assert not waiting.done(), "swept before the 1024th creation"
        assert await store.create(new("1024".zfill(22)))
        changes = await asyncio.wait_for(waiting, 5)
        assert [(c.match_id, c.version) for c in changes] == [("M" * 22, 0)]
        await feed.close()

    asyncio.run(scenario())


def test_closing_a_feed_ends_a_wait_for_changes(make_store: StoreFactory) -> None:
    async def scenario(store: Store) -> None:
        feed = store.feed(lambda: None)
        await store.create(new())
        await feed.follow("M" * 22)
        waiting = asyncio.create_task(feed.changes())
        await asyncio.sleep(0)
        await feed.close()
        assert await asyncio.wait_for(waiting, 5) == []

    run(make_store, scenario)


class _WriteHook(redis.asyncio.Connection):
    """A redis-py connection that runs the callbacks in ``armed`` once, synchronously, as it
    writes its next command: lets a test act at that exact point of the event loop's order."""

    armed: ClassVar[list[Callable[[], object]]] = []

    async def connect(self) -> None:
        await super().connect()  # type: ignore[no-untyped-call]
        writer = self._writer
        assert writer is not None
        write = writer.writelines

        def writelines(data: Any) -> None:
            write(data)
            while _WriteHook.armed:
                _WriteHook.armed.pop()()

        writer.writelines = writelines  # type: ignore[method-assign]


@pytest.mark.parametrize("loop", EVENT_LOOPS)
def test_a_feed_closed_as_its_connection_writes_a_command_still_closes(
    redis_url: str, loop: str
) -> None:
    """The feed closes although its subscriber's writer was cancelled right as it wrote a
    command (here the SUNSUBSCRIBE of an unfollowed match; a PING or SSUBSCRIBE alike). redis-py
    writes under asyncio.wait_for whenever the connection has a socket timeout (its default is
    5 s), and Python 3.11's wait_for returns the write's result instead of raising a
    cancellation that lands once the write is done: the writer went on pinging, and the
    subscriber's close (so the server's stop) waited for it for ever. Not a matter of timing:
    the close starts from inside the write."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, connection_class=_WriteHook)
        feed = RedisFeed(client, poll_s=5, timeout_s=5, on_reconnect=lambda: None)
        closing: list[asyncio.Task[None]] = []
        written = asyncio.Event()

        def close_now() -> None:
            closing.append(asyncio.create_task(feed.close()))
            written.set()

        try:
            await feed.follow("M" * 22)
            _WriteHook.armed.append(close_now)
            feed.unfollow("M" * 22)  # the writer wakes to send SUNSUBSCRIBE
            # Deadlines against a hang, not measurements: nothing here waits for anything slow.
            await asyncio.wait_for(written.wait(), 20)
            done, _ = await asyncio.wait(closing, timeout=20)
            assert done, "the feed's close never returned: its writer swallowed the cancellation"
        finally:
            _WriteHook.armed.clear()
            await client.aclose()

    with asyncio.Runner(loop_factory=lambda: new_event_loop(loop)) as runner:
        runner.run(scenario())


def test_redis_store_sets_the_finished_ttl_on_both_keys_with_the_final_commit(
    redis_url: str,
) -> None:
    direct = redis.Redis.from_url(redis_url)

    async def scenario() -> None:
        store = RedisStore(
            redis_url, cluster=False, ttl_s=100_000, events_maxlen=5, timeout_s=2, finished_ttl_s=60
        )
        try:
            await store.create(new())
            assert await store.commit("M" * 22, commit(1))
            for key in (keys.match_key("M" * 22), keys.events_key("M" * 22)):
                assert 99_000_000 < direct.pttl(key) <= 100_000_000  # the idle TTL, 100,000 s
            assert await store.commit("M" * 22, commit(2)._replace(finished=True))
            for key in (keys.match_key("M" * 22), keys.events_key("M" * 22)):
                assert 0 < direct.pttl(key) <= 60_000
        finally:
            await store.close()

    asyncio.run(scenario())


class Expiries(Protocol):
    """What the tests read and set of a key's expiry: redis.Redis and redis.cluster.RedisCluster."""

    def pttl(self, name: str) -> Any: ...

    def pexpire(self, name: str, time: int) -> Any: ...

    def pexpiretime(self, key: str) -> Any: ...

    def get(self, name: str) -> Any: ...

    def delete(self, *names: str) -> Any: ...


def watch_key_lives_as_long_as_the_match(store: RedisStore, direct: Expiries) -> Awaitable[None]:
    """The watch key expires with the match's other keys, at the same instant: the create makes
    it (empty: no watch token yet), the first watch-token call gives it the match's remaining
    lifetime, every commit the match's new idle or finished expiry in the same script (also a
    commit made long after the last watch-token call), and a commit that lost its race touches
    none of them. A match whose create did not make it (an earlier store's) gets it from its
    first commit. ``store``'s idle TTL is 100 s, its finished TTL 60 s; the match's keys are
    made to expire sooner (PEXPIRE) in place of waiting."""
    mid = "W" * 22
    record, events, watch = keys.match_key(mid), keys.events_key(mid), keys.watch_key(mid)
    access = WatchAccess(b"s" * 16, (b"h" * 32, b""))

    def lag() -> int:
        """How much later than the record the watch key expires, in ms: set by the same script
        (or, by the watch-token call, to the record's own instant), within its run."""
        return int(direct.pexpiretime(watch)) - int(direct.pexpiretime(record))

    async def scenario() -> None:
        await store.create(new(mid))
        assert direct.get(watch) == b""
        assert (await store.watch_access((mid,)))[mid] is None
        assert 0 <= lag() < 1_000
        for key in (record, events, watch):
            direct.pexpire(key, 5_000)  # the match idle for all but 5 s of its TTL
        assert await store.swap_watch_access(mid, None, access, revoke=False)
        assert 0 < direct.pttl(record) <= 5_000
        assert lag() == 0  # the match's own expiry, from the same script
        # Played on after the watch key was made: each play gives it the match's idle TTL.
        assert await store.commit(mid, commit(1))
        assert direct.pttl(record) > 99_000
        assert 0 <= lag() < 1_000
        for key in (record, events, watch):
            direct.pexpire(key, 5_000)
        assert await store.commit(mid, commit(2))
        assert direct.pttl(record) > 99_000
        assert 0 <= lag() < 1_000
        # A commit that lost its race (a stale version) and would have ended the match
        # changes no expiry.
        expiries = [int(direct.pexpiretime(key)) for key in (record, events, watch)]
        assert not await store.commit(mid, commit(1)._replace(finished=True))
        assert [int(direct.pexpiretime(key)) for key in (record, events, watch)] == expiries
        # The final play: the watch key expires with the record, after the finished TTL.
        assert await store.commit(mid, commit(3)._replace(finished=True))
        assert 0 < direct.pttl(record) <= 60_000
        assert 0 <= lag() < 1_000
        assert (await store.watch_access((mid,)))[mid] == access
        # A match made before creates made its watch key: its first commit makes it, empty.
        other = "V" * 22
        await store.create(new(other))
        direct.delete(keys.watch_key(other))
        assert await store.commit(other, commit(1))
        assert direct.get(keys.watch_key(other)) == b""
        # The record's expiry, set by the same script run as a time to live: the two are equal
        # to within that run, which the test does not time.
        made = int(direct.pexpiretime(keys.watch_key(other)))
        assert 0 <= made - int(direct.pexpiretime(keys.match_key(other))) < 1_000
        assert (await store.watch_access((other,)))[other] is None

    return scenario()


async def probe_expires_within_a_minute(store: RedisStore, direct: Expiries) -> None:
    """The health check (ping) is a write of the probe key, which expires within a minute:
    checks leave nothing behind for long."""
    direct.delete(keys.PROBE)
    await store.ping()
    assert 50_000 < int(direct.pttl(keys.PROBE)) <= 60_000


def test_redis_store_keeps_the_watch_key_as_long_as_the_match(redis_url: str) -> None:
    """The watch-key lifetime on one Redis, and its expiring health probe."""
    direct = redis.Redis.from_url(redis_url)

    async def scenario() -> None:
        store = RedisStore(
            redis_url, cluster=False, ttl_s=100, events_maxlen=5, timeout_s=2, finished_ttl_s=60
        )
        try:
            await watch_key_lives_as_long_as_the_match(store, direct)
            await probe_expires_within_a_minute(store, direct)
        finally:
            await store.close()

    asyncio.run(scenario())
    direct.close()


def test_embedded_store_keeps_the_watch_access_as_long_as_the_match() -> None:
    """The embedded store keeps the access with the match: it goes when the match expires,
    after the idle TTL from the last commit or the finished TTL from the final one."""
    now = [0.0]
    store = MemoryStore(ttl_s=100, events_maxlen=5, clock=lambda: now[0], finished_ttl_s=60)
    mid = "M" * 22
    access = WatchAccess(b"s" * 16, (b"h" * 32, b""))

    async def scenario() -> None:
        await store.create(new())
        assert await store.swap_watch_access(mid, None, access, revoke=False)
        for version in (1, 2):  # played on for longer than the idle TTL after the swap
            now[0] += 90
            assert await store.commit(mid, commit(version))
        now[0] += 90
        assert (await store.watch_access((mid,)))[mid] == access
        assert await store.commit(mid, commit(3)._replace(finished=True))
        now[0] += 59
        assert (await store.watch_access((mid,)))[mid] == access
        now[0] += 1
        assert (await store.watch_access((mid,)))[mid] is None

    asyncio.run(scenario())


def test_redis_store_call_stays_cancelled_when_the_command_swallows_the_cancellation(
    redis_url: str,
) -> None:
    """A cancellation that lands mid-command and that the client library swallows (answering
    normally) still ends the caller: a server stopping its health watchdog waited on it forever."""

    async def swallowing() -> bytes:
        # What a client library that swallows the cancellation does.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        return b"answer"

    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=100, events_maxlen=5, timeout_s=30)
        try:
            call = asyncio.create_task(store._call(swallowing, store._slots))
            await asyncio.sleep(0)  # the command is under way
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_batch_of_reads_or_a_commit_that_fails_leaves_no_failure_unread(
    own_redis: RedisProcess,
) -> None:
    """events_many sends each match's two reads at once, a commit its script and the watch
    key's PEXPIRE behind it; when Redis is gone they all fail, and each failure is read (one
    raised, the others dropped), none left for the loop to report."""
    process = own_redis
    process.start()

    async def scenario() -> None:
        unhandled: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, e: unhandled.append(e))
        store = RedisStore(
            process.url, cluster=False, ttl_s=100, events_maxlen=5, timeout_s=1, finished_ttl_s=60
        )
        try:
            await store.events_many({"M" * 22: 0})  # connected
            process.stop()
            try:
                await store.events_many({"M" * 22: 0, "N" * 22: 0})
            except StoreUnavailableError:
                pass
            else:
                raise AssertionError("Redis is gone: the reads must fail")
            try:  # (not pytest.raises: its traceback would keep the commit's futures alive)
                await store.commit("M" * 22, commit(1))
            except StoreUnavailableError:
                pass
            else:
                raise AssertionError("Redis is gone: the commit must fail")
            await asyncio.sleep(0)  # the dropped reply's callback
            gc.collect()  # a failure nobody read is reported when its future is collected
            await asyncio.sleep(0)
            assert unhandled == []
        finally:
            await store.close()

    asyncio.run(scenario())


def test_presence_marks_live_seats_until_their_ttl_and_unmarks_gone_ones(
    make_store: StoreFactory,
) -> None:
    from basra.service.store.base import Heartbeat

    async def scenario(store: Store) -> None:
        match, other = "P" * 22, "Q" * 22
        at = 1_000_000.0
        # Replica a serves seat 0 of the match, replica b seats 0 and 1: one call each.
        assert await store.heartbeat("a", {match: Heartbeat((0,), ())}, at, 15) == {
            match: frozenset({0})
        }
        found = await store.heartbeat(
            "b", {match: Heartbeat((0, 1), ()), other: Heartbeat((), ())}, at, 15
        )
        assert found == {match: frozenset({0, 1}), other: frozenset()}
        # b's seat 0 ends: a's mark of seat 0 keeps it connected; b's seat 1 stays.
        assert await store.heartbeat("b", {match: Heartbeat((1,), (0,))}, at + 1, 15) == {
            match: frozenset({0, 1})
        }
        # Past a's mark (never renewed), only b's renewed seat 1 is left.
        assert await store.connected([match, other], at + 15.5) == {
            match: frozenset({1}),
            other: frozenset(),
        }
        assert await store.connected([match], at + 16.5) == {match: frozenset()}

    run(make_store, scenario)


def test_redis_presence_key_expires_a_ttl_after_its_last_renewal(redis_url: str) -> None:
    from basra.service.store.base import Heartbeat

    async def scenario() -> None:
        store = RedisStore(redis_url, cluster=False, ttl_s=3600, events_maxlen=5, timeout_s=2)
        try:
            match = "R" * 22
            await store.heartbeat("a", {match: Heartbeat((1,), ())}, 2_000_000.0, 15)
            ttl = redis.Redis.from_url(redis_url).pttl(keys.presence_key(match))
            assert 14_000 < ttl <= 15_000
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_seat_both_live_and_gone_in_one_beat_is_connected(make_store: StoreFactory) -> None:
    """A replica's beat names a seat live (a stream of it is open there now) and gone (one of
    its streams there ended since the last beat): the open stream wins, in every store."""
    from basra.service.store.base import Heartbeat

    async def scenario(store: Store) -> None:
        match = "S" * 22
        at = 1_000_000.0
        assert await store.heartbeat("a", {match: Heartbeat((0, 1), ())}, at, 15) == {
            match: frozenset({0, 1})
        }
        found = await store.heartbeat("a", {match: Heartbeat((0,), (0, 1))}, at + 1, 15)
        assert found == {match: frozenset({0})}
        assert await store.connected([match], at + 2) == {match: frozenset({0})}
        # The mark is renewed: it lasts a TTL from this beat.
        assert await store.connected([match], at + 15.5) == {match: frozenset({0})}

    run(make_store, scenario)
