"""A real Redis Cluster of three masters: the service plays matches on it unchanged."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import grpc
import pytest
import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.crc import key_slot

from basra.client.match import MatchClient
from basra.service.config import Settings
from basra.service.store import keys
from basra.service.store.redis_feed import RedisFeed
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.load.watchers import Crowd, redis_connections
from tests.service.driver import audit_replay, engine_replay, play_match, stored_state
from tests.support import RedisClusterProcess, RedisProcess, ServerThread, wait_until


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisClusterProcess]:
    process = RedisClusterProcess(tmp_path)
    process.start()
    yield process
    process.stop()


def test_matches_play_to_the_end_on_a_three_master_cluster(cluster: RedisClusterProcess) -> None:
    server = ServerThread(
        Settings(redis_url=cluster.url, redis_cluster=True, allow_seeds=True, metrics_port=None)
    )
    try:
        clients = []
        for seed in range(8):
            client, _ = MatchClient.create(server.channel, seed=seed)
            played = play_match(client, random.Random(seed))
            clients.append((client, seed, played))
            # WatchMatch (blocking reads on the cluster) replays the whole match.
            assert sum(1 for _ in client.watch(1, 0, timeout=20)) > 48
    finally:
        server.stop()
    direct = RedisCluster.from_url(cluster.url)
    nodes_used = set()
    for client, seed, played in clients:
        as_redis = cast(redis.Redis, direct)
        version, state = stored_state(as_redis, client.match_id)
        assert state == engine_replay(seed, played.plays)
        assert audit_replay(as_redis, client.match_id) == (version, state)
        node = direct.get_node_from_key(keys.match_key(client.match_id))  # type: ignore[no-untyped-call]
        assert node is not None
        nodes_used.add(node.name)
    assert len(nodes_used) >= 2, "matches are spread over the masters"
    direct.close()


def test_streams_fan_out_from_one_reader_per_master(cluster: RedisClusterProcess) -> None:
    """200 streams (100 matches x 2 seats) on a three-master cluster: every stream gets the
    play of its match, and the replica holds per master no more than its command pool plus a
    small constant (its one subscribed connection, and the cluster client's own for the slot
    map)."""
    pool = 4
    server = ServerThread(
        Settings(
            redis_url=cluster.url,
            redis_cluster=True,
            redis_pool_size=pool,
            allow_seeds=True,
            metrics_port=None,
            create_rate=10_000.0,
            create_burst=10_000,
            caller_create_rate=10_000.0,
            caller_create_burst=10_000,
        )
    )
    crowd = Crowd(server.target)
    try:
        crowd.create(100)
        crowd.watch()
        metrics = server.server.metrics
        crowd.wait(lambda: metrics.watch_matches._value.get() == 100, what="100 matches followed")
        assert not crowd.failed()
        followed = [shard_channels(cluster, node) for node in cluster.nodes]
        assert sum(followed) == 100
        assert all(followed), "the matches followed are spread over every master"
        for node in cluster.nodes:
            assert redis_connections(node.client()) <= pool + 2
        crowd.play_everywhere()
        crowd.wait(lambda: len(crowd.got(2)) + len(crowd.failed()) == 200, what="every stream")
        assert not crowd.failed()
        crowd.leave()
        crowd.wait(lambda: metrics.watch_matches._value.get() == 0, what="matches unfollowed")
        crowd.wait(lambda: shard_channels(cluster) == 0, what="channels unsubscribed")
    finally:
        crowd.close()
        server.stop()


def shard_channels(cluster: RedisClusterProcess, node: RedisProcess | None = None) -> int:
    """Shard channels subscribed on one node, or on all of them."""
    count = 0
    for each in [node] if node else cluster.nodes:
        client = each.client()
        count += len(client.execute_command("PUBSUB", "SHARDCHANNELS"))  # type: ignore[no-untyped-call]
        client.close()
    return count


def migrate_slot(cluster: RedisClusterProcess, slot: int, target: RedisProcess) -> RedisProcess:
    """Move ``slot`` (and its keys) to the master ``target`` as redis-cli --cluster reshard does:
    SETSLOT IMPORTING/MIGRATING, MIGRATE the keys, SETSLOT NODE on every master. Returns the
    master that served it."""

    def node_id(node: RedisProcess) -> str:
        return str(node.client().execute_command("CLUSTER", "MYID").decode())  # type: ignore[no-untyped-call]

    def owner() -> RedisProcess:
        for node in cluster.nodes:
            for start, end, *_ in node.client().execute_command("CLUSTER", "SLOTS"):  # type: ignore[no-untyped-call]
                if start <= slot <= end:
                    return next(n for n in cluster.nodes if n.port == _[0][1])
        raise AssertionError(f"nobody serves slot {slot}")

    source = owner()
    assert source is not target
    source_id, target_id = node_id(source), node_id(target)
    src, dst = source.client(), target.client()
    dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)  # type: ignore[no-untyped-call]
    src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)  # type: ignore[no-untyped-call]
    while keys_left := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):  # type: ignore[no-untyped-call]
        src.execute_command(  # type: ignore[no-untyped-call]
            "MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys_left
        )
    for node in (target, source, *(n for n in cluster.nodes if n not in (source, target))):
        node.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)  # type: ignore[no-untyped-call]
    return source


class Follower:
    """One WatchMatch stream read in a thread of its own."""

    def __init__(self, client: MatchClient, seat: int) -> None:
        self.events: list[game_pb2.MatchEvent] = []
        self.error: grpc.RpcError | None = None
        self.call = client.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=client.match_id), metadata=client.metadata(seat)
        )
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for response in self.call:
                self.events.append(response.event)
        except grpc.RpcError as error:
            self.error = error

    def has(self, version: int) -> bool:
        return any(e.version >= version and e.version_complete for e in self.events)

    def close(self) -> None:
        self.call.cancel()  # type: ignore[no-untyped-call]  # a grpc call as well as an iterator
        self.thread.join(timeout=10)


def test_a_stream_follows_its_match_when_the_slot_moves_to_another_master(
    cluster: RedisClusterProcess,
) -> None:
    """Resharding moves a watched match's slot to another master (its keys and its shard
    channel with it: the old master unsubscribes the replica's reader, whose SSUBSCRIBE there
    is then answered MOVED): the streams, and a stream opened after the move, get every event
    exactly once, as a replay from the store gives them; the reader follows the channel to the
    new master, and the server stops cleanly however far its reroute got."""
    server = ServerThread(
        Settings(redis_url=cluster.url, redis_cluster=True, allow_seeds=True, metrics_port=None)
    )
    followers: list[Follower] = []
    try:
        client, _ = MatchClient.create(server.channel, seed=11)
        rng = random.Random(11)
        play_match(client, rng, stop=lambda v: v.version >= 3)
        followers = [Follower(client, 0), Follower(client, 1)]
        wait_until(lambda: all(f.has(3) for f in followers), what="the streams are live")
        slot = key_slot(keys.match_key(client.match_id).encode())
        direct = RedisCluster.from_url(cluster.url)
        before = direct.get_node_from_key(keys.match_key(client.match_id))  # type: ignore[no-untyped-call]
        target = next(n for n in cluster.nodes if n.port != before.port)
        source = migrate_slot(cluster, slot, target)
        play_match(client, rng, stop=lambda v: v.version >= 6)
        wait_until(lambda: all(f.has(6) for f in followers), what="the plays after the move")
        wait_until(lambda: shard_channels(cluster, target) == 1, what="resubscribed on target")
        assert shard_channels(cluster, source) == 0
        followers.append(Follower(client, 0))
        play_match(client, rng, stop=lambda v: v.version >= 9)
        wait_until(lambda: all(f.has(9) for f in followers), what="every stream gets it all")
        for index, follower in enumerate(followers):
            assert follower.error is None, follower.error
            replay = []
            for event in client.watch(index % 2, 0, timeout=10):
                replay.append(event)
                if event.version == 9 and event.version_complete:
                    break
            assert follower.events == replay  # every version once, in order, nothing else
        direct.close()
    finally:
        for follower in followers:
            follower.close()
        server.stop()


def test_the_feed_closes_while_a_reroute_is_closing_subscribers(
    cluster: RedisClusterProcess,
) -> None:
    """A reroute closes the subscribers left without channels; the feed closing meanwhile
    (the server stops right after a slot moved) waits for it instead of iterating the
    subscribers the reroute is removing. A subscriber's close swallows the cancellation of
    whoever awaits it, so cancelling the reroute alone does not stop it."""

    async def scenario() -> None:
        client = AsyncRedisCluster.from_url(cluster.url)
        await client.initialize()
        by_node: dict[str, str] = {}
        for n in range(200):
            match_id = f"match-{n:016d}"
            node = client.get_node_from_key(keys.wake_channel(match_id))
            assert node is not None
            by_node.setdefault(node.name, match_id)
        assert len(by_node) == 3
        feed = RedisFeed(client, poll_s=5, timeout_s=5, on_reconnect=lambda: None)
        for match_id in by_node.values():
            await feed.follow(match_id)
        left = list(by_node.values())[1:]
        for match_id in left:
            feed.unfollow(match_id)  # their subscribers stay, with no channel
        first = feed._subscribers[next(iter(by_node))]
        closing, release = asyncio.Event(), asyncio.Event()
        empty = [s for s in feed._subscribers.values() if s is not first]
        real_close = empty[0].close

        async def slow_close() -> None:
            closing.set()
            with contextlib.suppress(asyncio.CancelledError):  # as _Subscriber.close does
                await release.wait()
            await real_close()

        empty[0].close = slow_close  # type: ignore[method-assign]
        feed._reroute()
        await closing.wait()  # the reroute is closing the first empty subscriber
        stopping = asyncio.create_task(feed.close())
        await asyncio.sleep(0)
        release.set()
        await asyncio.wait_for(stopping, 10)
        assert all(s._task is None or s._task.done() for s in feed._subscribers.values())
        await client.aclose()

    asyncio.run(scenario())
