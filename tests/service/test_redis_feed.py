"""The Redis change feed (store.redis_feed) on a redis-server of each test's own: what its one
subscribed connection does when Redis is down, drops it, falls silent or sends what it should
not, and what it leaves behind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import redis

from basra.service.store import keys
from basra.service.store.base import StoreUnavailableError
from basra.service.store.redis import RedisStore
from basra.service.store.redis_feed import RedisFeed
from tests.support import RedisClusterProcess, RedisProcess, wait_until

MATCH, OTHER = "M" * 22, "O" * 22


class Reconnects:
    """The feed's on_reconnect: how many times it was called."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def run_feed(
    process: RedisProcess | RedisClusterProcess,
    scenario: Callable[[RedisFeed, Reconnects], Coroutine[Any, Any, None]],
    *,
    timeout_s: float = 0.2,
    poll_s: float = 5.0,
) -> Reconnects:
    """Run ``scenario`` with a feed of a RedisStore on ``process`` (started or not; a Redis or
    a Redis Cluster), then close both; the feed's reconnections."""
    reconnects = Reconnects()

    async def main() -> None:
        store = RedisStore(
            process.url,
            cluster=isinstance(process, RedisClusterProcess),
            ttl_s=60,
            events_maxlen=10,
            timeout_s=timeout_s,
            watch_poll_s=poll_s,
        )
        feed = store.feed(reconnects)
        try:
            await scenario(feed, reconnects)
        finally:
            await store.close()

    asyncio.run(main())
    return reconnects


def publish(process: RedisProcess, match_id: str, payload: str) -> None:
    """What a commit publishes on the match's wake channel (its new version), or ``payload``."""
    with process.client() as client:
        client.execute_command("SPUBLISH", keys.wake_channel(match_id), payload)


async def changes_until(feed: RedisFeed, match_id: str, version: int) -> list[tuple[str, int]]:
    """Every change the feed reports, up to and with ``(match_id, version)``."""
    seen: list[tuple[str, int]] = []
    while (match_id, version) not in seen:
        seen += [(c.match_id, c.version) for c in await asyncio.wait_for(feed.changes(), 10)]
    return seen


def shard_channels(process: RedisProcess) -> int:
    with process.client() as client:
        return len(client.execute_command("PUBSUB", "SHARDCHANNELS"))


def answers(process: RedisProcess) -> bool:
    with process.client() as client:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False


async def in_thread(condition: Callable[[], object], what: str, timeout: float = 10) -> None:
    """wait_until, off the loop (the feed's tasks go on meanwhile)."""
    await asyncio.to_thread(wait_until, condition, timeout, what)


def test_a_follow_while_redis_is_down_fails_in_time_and_is_subscribed_once_redis_is_up(
    own_redis: RedisProcess,
) -> None:
    """Redis down: follow answers StoreUnavailableError naming the channel within the store
    deadline, and leaves no waiter behind; a wait still under way when Redis comes back is
    woken, the reader (which kept retrying) subscribes the channel and reports it read again
    (version 0: what was published meanwhile is lost)."""
    channel = keys.wake_channel(MATCH).encode()

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        with pytest.raises(StoreUnavailableError, match=f"no subscription to {channel!r}"):
            await asyncio.wait_for(feed.follow(MATCH), 10)
        subscriber = feed._subscribers[""]
        assert subscriber._waiters == {}
        # One wait gives up while another still waits: the one left is woken all the same.
        still = asyncio.create_task(subscriber.subscribed(channel, 60))
        with pytest.raises(StoreUnavailableError):
            await subscriber.subscribed(channel, 0.01)
        assert reconnects.count >= 1  # the reader retries
        await asyncio.to_thread(own_redis.start)
        await asyncio.wait_for(still, 20)
        await asyncio.wait_for(feed.follow(MATCH), 10)
        assert subscriber._waiters == {}
        assert await changes_until(feed, MATCH, 0) == [(MATCH, 0)]

    run_feed(own_redis, scenario)


def test_a_channel_unfollowed_while_redis_was_down_is_not_read_again_when_followed_anew(
    own_redis: RedisProcess,
) -> None:
    """A channel left while its subscription was lost is forgotten with it: followed again
    once the reader has its connection back, it is reported only when a commit publishes."""

    def reader_connected() -> bool:
        with own_redis.client() as client:
            return len(client.client_list()) >= 2  # this one and the reader's

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        with pytest.raises(StoreUnavailableError):
            await asyncio.wait_for(feed.follow(MATCH), 10)
        feed.unfollow(MATCH)
        await asyncio.to_thread(own_redis.start)
        await in_thread(reader_connected, "the reader connected")
        await asyncio.wait_for(feed.follow(MATCH), 10)
        publish(own_redis, MATCH, "3")
        assert await changes_until(feed, MATCH, 3) == [(MATCH, 3)]

    run_feed(own_redis, scenario)


def test_after_a_lost_connection_every_channel_is_read_again_and_stays_followed(
    own_redis: RedisProcess,
) -> None:
    """Redis drops the reader's connection: the feed says so (on_reconnect), subscribes again
    and reports each followed channel read again; the channels stay followed afterwards (a
    later follow changes nothing for them), until unfollowed."""
    own_redis.start()

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        await asyncio.wait_for(feed.follow(MATCH), 10)
        with own_redis.client() as client:
            assert client.client_kill_filter(_type="pubsub") == 1
        assert await changes_until(feed, MATCH, 0) == [(MATCH, 0)]
        assert reconnects.count == 1
        await asyncio.wait_for(feed.follow(OTHER), 10)
        publish(own_redis, MATCH, "5")
        assert await changes_until(feed, MATCH, 5) == [(MATCH, 5)]
        feed.unfollow(MATCH)
        feed.unfollow(OTHER)
        await in_thread(lambda: shard_channels(own_redis) == 0, "both channels unsubscribed")

    run_feed(own_redis, scenario)


def test_a_message_that_is_no_version_is_logged_with_its_node_and_the_reader_goes_on(
    own_redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """Something else publishing on a wake channel: the reader logs the failure once, as an
    error naming its node (none: not a Cluster) with the traceback, then reconnects, reads
    every channel again and reports the next commit."""
    own_redis.start()
    caplog.set_level(logging.WARNING, logger="basra.store")

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        await asyncio.wait_for(feed.follow(MATCH), 10)
        publish(own_redis, MATCH, "not-a-version")
        assert await changes_until(feed, MATCH, 0) == [(MATCH, 0)]
        publish(own_redis, MATCH, "4")
        assert await changes_until(feed, MATCH, 4) == [(MATCH, 4)]

    reconnects = run_feed(own_redis, scenario)
    assert reconnects.count == 1
    failed = [r for r in caplog.records if r.name == "basra.store"]
    assert [(r.levelno, r.getMessage()) for r in failed] == [(logging.ERROR, "watch reader failed")]
    assert failed[0].__dict__["node"] == ""
    assert failed[0].exc_info is not None
    assert failed[0].exc_info[0] is ValueError


def test_an_idle_reader_pings_and_keeps_its_connection(own_redis: RedisProcess) -> None:
    """With nothing to send, the reader PINGs every poll_s, so an idle connection that answers
    is kept: it is never taken for a dead one (silence past poll_s plus the deadline)."""
    own_redis.start()

    def pings() -> int:
        with own_redis.client() as client:
            stats = client.info("commandstats")
        return int(stats.get("cmdstat_ping", {}).get("calls", 0))

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        await asyncio.wait_for(feed.follow(MATCH), 10)
        await in_thread(lambda: pings() >= 3, "three PINGs")
        publish(own_redis, MATCH, "2")
        assert await changes_until(feed, MATCH, 2) == [(MATCH, 2)]

    reconnects = run_feed(own_redis, scenario, timeout_s=1.0, poll_s=0.1)
    assert reconnects.count == 0


def test_a_connection_that_falls_silent_is_dropped_and_opened_again(
    own_redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis stops answering (CLIENT PAUSE, as a dropped NAT entry would look): the reader
    takes the silence past poll_s plus the deadline for a dead connection and opens another,
    and a connection that cannot be opened in time (the paused Redis answers nothing) counts
    as lost too, again and again, until Redis answers; then the next commit is reported."""
    own_redis.start()

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        await asyncio.wait_for(feed.follow(MATCH), 10)
        with own_redis.client() as client:
            client.execute_command("CLIENT", "PAUSE", 5000, "ALL")
        await in_thread(lambda: reconnects.count >= 3, "three reconnections")
        await in_thread(lambda: answers(own_redis), "Redis answers again", 30)
        assert await changes_until(feed, MATCH, 0) == [(MATCH, 0)]
        publish(own_redis, MATCH, "6")
        assert await changes_until(feed, MATCH, 6) == [(MATCH, 6)]

    caplog.set_level(logging.WARNING, logger="basra.store")
    run_feed(own_redis, scenario, timeout_s=0.2, poll_s=0.1)
    # The first loss says why: the silence, and how long it lasted.
    lost = [r for r in caplog.records if r.getMessage() == "watch reader lost its Redis connection"]
    assert lost[0].__dict__["cause"] == "TimeoutError: no answer from Redis for 0.3 s"


def test_commands_answered_together_confirm_a_channel_once_all_are_answered(
    own_redis: RedisProcess,
) -> None:
    """A match followed, left and followed again while Redis holds the reader's commands
    (CLIENT PAUSE): SSUBSCRIBE, SUNSUBSCRIBE and SSUBSCRIBE of one channel wait together. Their
    answers confirm the channel at the last one only, and none is taken for an SUNSUBSCRIBE
    nobody sent (a slot that moved): the channel is not read again, it is reported when a
    commit publishes, and the standalone feed never reroutes."""
    own_redis.start()
    channel = keys.wake_channel(MATCH).encode()

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        await asyncio.wait_for(feed.follow(OTHER), 10)  # the reader is connected
        subscriber = feed._subscribers[""]
        with own_redis.client() as client:
            client.execute_command("CLIENT", "PAUSE", 1500, "ALL")
        first = asyncio.create_task(feed.follow(MATCH))
        await in_thread(lambda: channel in subscriber._requested, "SSUBSCRIBE sent")
        feed.unfollow(MATCH)
        await in_thread(lambda: channel not in subscriber._requested, "SUNSUBSCRIBE sent")
        again = asyncio.create_task(feed.follow(MATCH))
        await in_thread(lambda: channel in subscriber._requested, "SSUBSCRIBE sent again")
        await asyncio.wait_for(asyncio.gather(first, again), 10)
        publish(own_redis, MATCH, "3")
        assert await changes_until(feed, MATCH, 3) == [(MATCH, 3)]
        assert feed._rerouting is None

    reconnects = run_feed(own_redis, scenario, timeout_s=5.0)
    assert reconnects.count == 0
