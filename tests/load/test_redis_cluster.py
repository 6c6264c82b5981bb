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
from tests.service.driver import audit_replay, engine_replay, play_match, stored_state
from tests.support import RedisClusterProcess, ServerThread


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
