"""Health follows the store. Redis out of memory (maxmemory with noeviction), on a real
redis-server with a tiny limit: writes fail RESOURCE_EXHAUSTED/STORE_FULL without a traceback,
reads still work, the metrics and the health status say so, and everything recovers when memory
is freed. Before the first store check, readiness is NOT_SERVING (not an unknown service)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import random
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

from basra.client.match import MatchClient, Rejection
from basra.service import logs
from basra.service.config import Settings
from basra.service.server import LIVENESS, SERVICE_NAME
from basra.service.store.memory import MemoryStore
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import play_match
from tests.service.test_http import healthz
from tests.support import RedisProcess, ServerThread, wait_until


@pytest.fixture
def small_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    process = RedisProcess(
        tmp_path / "redis", args=("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
    )
    process.start()
    yield process
    process.stop()


def fill(client: redis.Redis) -> int:
    """Write filler keys until Redis refuses one, then lower maxmemory below what is used (a
    refused write frees its buffer, which would leave room for the next small one): every write
    is now refused until the filler is deleted. Returns how many filler keys were written."""
    count = 0
    while True:
        try:
            client.set(f"filler:{count}", b"x" * 10_000)
        except redis.exceptions.OutOfMemoryError:
            break
        count += 1
        assert count < 10_000, "Redis never ran out of memory"
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", used - 200_000)
    return count


def health_status(server: ServerThread) -> int:
    stub = health_pb2_grpc.HealthStub(server.channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status)


def wait_health(server: ServerThread, status: int) -> None:
    deadline = time.monotonic() + 10
    while health_status(server) != status:
        assert time.monotonic() < deadline, f"health never became {status}"
        time.sleep(0.05)


def metric(server: ServerThread, pattern: str) -> float:
    port = server.server.metrics_port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = re.search(rf"^{pattern} (\S+)$", text, re.MULTILINE)
    assert found, pattern
    return float(found.group(1))


def test_a_full_redis_is_store_full_not_internal_and_health_says_so(
    start_server: Callable[..., ServerThread], small_redis: RedisProcess
) -> None:
    server = start_server(redis_url=small_redis.url, metrics_port=0)
    client = new_match(server, seed=4)
    wait_health(server, health_pb2.HealthCheckResponse.SERVING)
    filled = fill(small_redis.client())
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        created = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel, seed=5)))
        seat = client.view(0).turn
        card = client.view(seat).hand[0]
        played = Rejection.of(rpc_error(lambda: client.play(seat, card, 1)))
    finally:
        logging.getLogger("basra").handlers.clear()
    for rejection in (created, played):
        assert (rejection.code, rejection.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "STORE_FULL",
        )
    assert client.view(0).version == 1, "reads still work and nothing changed"
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    # Each refused call warns once, "store full" with Redis's own words for it and no
    # traceback (the health check warns of the store too, as often as it runs: its lines are
    # the server's, not the calls').
    refused = [r for r in records if r["logger"] == "basra.rpc" and r["level"] == "WARNING"]
    assert [r["msg"] for r in refused] == ["store full"] * 2
    assert all("maxmemory" in r["cause"] for r in refused)
    assert not any("exc" in r for r in records), "no traceback for an operating condition"
    assert not [r for r in records if r["level"] == "ERROR"]
    wait_health(server, health_pb2.HealthCheckResponse.NOT_SERVING)
    assert metric(server, "basra_store_full") == 1
    assert metric(server, 'basra_store_full_writes_total\\{operation="create"\\}') == 1
    assert metric(server, 'basra_store_full_writes_total\\{operation="commit"\\}') == 1
    assert metric(server, "basra_store_up") == 1  # reachable, only full
    # Memory freed: the replica comes back by itself and play resumes.
    small_redis.client().delete(*(f"filler:{n}" for n in range(filled)))
    wait_health(server, health_pb2.HealthCheckResponse.SERVING)
    assert metric(server, "basra_store_full") == 0
    play_match(client, random.Random(0), stop=lambda v: v.version >= 3)


class UnansweredPing(MemoryStore):
    """An embedded store whose health ping never answers."""

    async def ping(self) -> None:
        await asyncio.Event().wait()


def test_readiness_is_not_serving_until_the_first_store_check_passes() -> None:
    settings = Settings(metrics_port=None, http_listen=None)
    server = ServerThread(settings)
    try:
        # The usual store: a first ping is answered at once.
        wait_health(server, health_pb2.HealthCheckResponse.SERVING)
    finally:
        server.stop()
    stuck = ServerThread(settings, store=UnansweredPing(ttl_s=60, events_maxlen=10))
    try:
        stub = health_pb2_grpc.HealthStub(stuck.channel)
        for service in ("", SERVICE_NAME):
            answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING  # not NOT_FOUND
        liveness = stub.Check(health_pb2.HealthCheckRequest(service=LIVENESS), timeout=5)
        assert liveness.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        stuck.stop()


# What /healthz answers for each gRPC health status of the service ("").
READY: Final = {
    health_pb2.HealthCheckResponse.SERVING: 200,
    health_pb2.HealthCheckResponse.NOT_SERVING: 503,
}


def test_healthz_follows_the_grpc_health_status_in_every_state(
    start_server: Callable[..., ServerThread], small_redis: RedisProcess
) -> None:
    """Serving, store full, store unreachable, serving again, draining: in each, the HTTP port's
    /healthz says what the gRPC health service says (a balancer may probe either)."""
    server = start_server(redis_url=small_redis.url, store_timeout_s=0.5)
    client = redis.Redis.from_url(small_redis.url)

    def agree(status: int) -> None:
        wait_health(server, status)
        wait_until(lambda: healthz(server) == READY[status])

    agree(health_pb2.HealthCheckResponse.SERVING)
    fill(client)
    agree(health_pb2.HealthCheckResponse.NOT_SERVING)  # store full
    client.flushall()
    client.config_set("maxmemory", "3mb")
    agree(health_pb2.HealthCheckResponse.SERVING)
    client.close()
    small_redis.stop()
    agree(health_pb2.HealthCheckResponse.NOT_SERVING)  # store unreachable
    small_redis.start()
    agree(health_pb2.HealthCheckResponse.SERVING)
    # Draining: both say NOT_SERVING while the ports still answer (the drain's notice period);
    # the gRPC side is asked on a channel of its own (stopping closes the test's).
    with grpc.insecure_channel(server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        stopping = threading.Thread(target=lambda: server.stop(grace_s=2))
        stopping.start()
        wait_until(lambda: healthz(server) == 503)
        status = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING
        stopping.join(timeout=15)
