"""A real Redis Cluster of three masters: the service plays matches on it unchanged."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import redis
from redis.cluster import RedisCluster

from basra.client.match import MatchClient
from basra.service.config import Settings
from basra.service.store import keys
from tests.load.watchers import Crowd, redis_connections
from tests.service.driver import audit_replay, engine_replay, play_match, stored_state
from tests.support import RedisClusterProcess, RedisProcess, ServerThread


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
