"""Servers restarting and Redis going away: matches continue, calls fail cleanly, health tells."""

from __future__ import annotations

import io
import json
import logging
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from basra.client.match import MatchClient, Rejection
from basra.service import logs
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import play_match
from tests.support import RedisProcess, ServerThread


def health(server: ServerThread, service: str = "") -> int:
    stub = health_pb2_grpc.HealthStub(server.channel)
    response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(response.status)


def wait_for(predicate: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def test_a_server_restarted_mid_match_continues_it(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    first = start_server(redis_url=redis_url)
    client = new_match(first, seed=12)
    play_match(client, random.Random(1), stop=lambda v: v.plays_left <= 30)
    before = client.view(0)
    first.stop()
    second = start_server(redis_url=redis_url)
    resumed = client.via(second.channel)
    assert resumed.view(0) == before
    play_match(resumed, random.Random(2))
    assert resumed.score(0).scoreboard.HasField("winner")


def test_redis_down_gives_unavailable_and_not_serving_then_recovers(
    start_server: Callable[..., ServerThread], aof_redis: RedisProcess
) -> None:
    server = start_server(redis_url=aof_redis.url, store_timeout_s=0.5)
    client = new_match(server, seed=21)
    play_match(client, random.Random(4), stop=lambda v: v.plays_left <= 40)
    view = client.view(0)
    seat = view.turn
    card = client.view(seat).hand[0]
    wait_for(lambda: health(server) == health_pb2.HealthCheckResponse.SERVING)
    aof_redis.stop()
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        for call in (lambda: client.view(seat), lambda: client.play(seat, card)):
            r = Rejection.of(rpc_error(call))
            assert (r.code, r.reason) == (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
    finally:
        logging.getLogger("basra").handlers.clear()
    # Each logged as a warning with its cause, for the operator (no traceback: a known condition).
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    unavailable = [r for r in records if r["msg"] == "store unavailable"]
    assert len(unavailable) >= 2
    for record in unavailable:
        assert record["level"] == "WARNING"
        assert "exc" not in record
        assert record["cause"] not in ("", "None")
    wait_for(lambda: health(server) == health_pb2.HealthCheckResponse.NOT_SERVING)
    assert health(server, "basra.v1.BasraService") == health_pb2.HealthCheckResponse.NOT_SERVING
    assert health(server, "liveness") == health_pb2.HealthCheckResponse.SERVING
    aof_redis.start()  # same port, AOF replays the match
    wait_for(lambda: health(server) == health_pb2.HealthCheckResponse.SERVING)
    assert client.view(0) == view  # nothing lost, nothing applied while it was down
    play_match(client, random.Random(5))
    assert client.score(1).scoreboard.HasField("winner")


def test_an_unreachable_redis_fails_fast_with_a_deadline(
    start_server: Callable[..., ServerThread], tmp_path: Path
) -> None:
    dead = RedisProcess(tmp_path / "never")  # never started: nothing listens on its port
    server = start_server(redis_url=dead.url, store_timeout_s=0.3)
    # The server's own store deadline (0.3 s) answers long before the caller's (30 s): a server
    # that waited on the dead Redis would leave the caller with DEADLINE_EXCEEDED instead.
    r = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel, seed=1, timeout=30)))
    assert (r.code, r.reason) == (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
    wait_for(lambda: health(server) == health_pb2.HealthCheckResponse.NOT_SERVING)


def test_after_a_redis_restart_no_call_fails_on_a_stale_pooled_connection(
    start_server: Callable[..., ServerThread], aof_redis: RedisProcess
) -> None:
    server = start_server(redis_url=aof_redis.url)
    client = new_match(server, seed=4)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda _: client.view(0), range(64)))  # many pooled connections
    aof_redis.stop()
    wait_for(lambda: health(server) == health_pb2.HealthCheckResponse.NOT_SERVING)
    aof_redis.start()
    wait_for(lambda: health(server) == health_pb2.HealthCheckResponse.SERVING)
    with ThreadPoolExecutor(16) as pool:  # most of them meet a connection from before
        views = list(pool.map(lambda _: client.view(0), range(64)))
    assert {v.version for v in views} == {1}
