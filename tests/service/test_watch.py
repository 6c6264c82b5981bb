"""WatchMatch as it runs in production: the shipped settings, many streams, one shared reader."""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from basra.engine import new_match as engine_new_match
from basra.engine.bots import random_play
from basra.service.config import Settings, from_args
from basra.v1 import basra_service_pb2 as pb
from tests.load.watchers import Crowd, redis_connections
from tests.service.conftest import new_match
from tests.support import ServerThread

CONFIG_ENV = Path(__file__).parents[2] / "deploy/kustomize/base/config.env"


def shipped_settings(redis_url: str) -> Settings:
    """The settings of deploy/kustomize/base/config.env, on this Redis, with creation open to
    the tests (seeds, no creation rate limit) and no metrics port."""
    environ = {}
    for line in CONFIG_ENV.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            environ[name] = value
    settings = from_args(argparse.Namespace(), environ)
    return replace(
        settings,
        redis_url=redis_url,
        allow_seeds=True,
        metrics_port=None,
        create_rate=100_000.0,
        create_burst=100_000,
    )


@pytest.fixture
def shipped(redis_url: str) -> Iterator[ServerThread]:
    server = ServerThread(shipped_settings(redis_url))
    yield server
    server.stop()


@pytest.fixture
def crowd(shipped: ServerThread) -> Iterator[Crowd]:
    crowd = Crowd(shipped.target)
    yield crowd
    crowd.close()


def test_a_stream_idle_longer_than_the_store_timeout_still_gets_the_next_play(
    shipped: ServerThread,
) -> None:
    """Issue 9: with the shipped settings every stream ended UNAVAILABLE after 2 s without an
    event (the blocking read's socket timeout was shorter than its XREAD BLOCK)."""
    client = new_match(shipped, seed=5)
    stream = client.stub.WatchMatch(
        pb.WatchMatchRequest(match_id=client.match_id, after_version=1),
        metadata=client.metadata(0),
    )
    # The scenario is a player thinking for longer than the store deadline: time must pass.
    time.sleep(shipped.settings.store_timeout_s * 1.5)
    play = random_play(engine_new_match(5)[0], random.Random(5))
    client.play(play.seat, play.card, play.plan or 0)
    event = next(iter(stream)).event
    assert event.version == 2
    assert event.HasField("card_played")
    stream.cancel()  # type: ignore[no-untyped-call]  # a grpc call as well as an iterator


def test_a_thousand_streams_get_every_play_over_a_few_redis_connections(
    shipped: ServerThread, crowd: Crowd, redis_url: str
) -> None:
    """Issue 9: each waiting stream held a Redis connection of its own (stream 101 failed with
    STORE_UNAVAILABLE). 1,000 streams (500 matches x 2 seats) now cost one shared reader."""
    direct = redis.Redis.from_url(redis_url)
    crowd.create(500)
    crowd.watch()
    metrics = shipped.server.metrics
    crowd.wait(
        lambda: metrics.watch_streams._value.get() == 1000 or bool(crowd.failed()),
        what="1000 streams open",
    )
    assert [s.error for s in crowd.failed()][:3] == []
    crowd.wait(lambda: metrics.watch_matches._value.get() == 500, what="500 matches followed")
    bound = shipped.settings.redis_pool_size + 2
    assert redis_connections(direct) <= bound
    crowd.play_everywhere()
    crowd.wait(lambda: len(crowd.got(2)) + len(crowd.failed()) == 1000, what="every stream")
    assert [s.error for s in crowd.failed()][:3] == []
    assert len(crowd.got(2)) == 1000
    assert redis_connections(direct) <= bound
    crowd.leave()
    crowd.wait(lambda: metrics.watch_streams._value.get() == 0, what="streams released")
    crowd.wait(lambda: metrics.watch_matches._value.get() == 0, what="matches unfollowed")
    direct.close()
