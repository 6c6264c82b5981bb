"""Half-open requests (headers and one byte of a message, then nothing) against a real server
process, its memory read from /proc: every such call is ended, and memory stays bounded however
many arrive. The full-size attack (250 connections x 100 streams) is in ``make bench``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from basra.client.match import Rejection
from basra.v1 import basra_service_pb2 as pb
from tests.halfopen import Attack, half_open, rss_bytes
from tests.service.conftest import rpc_error
from tests.support import ServerThread, embedded_serve, free_port, wait_until

CONNECTIONS, STREAMS, WAVES = 20, 100, 5
# Held without bound, 10,000 half-open calls take about 230 MB (23 KB each, measured).
MAX_GROWTH = 100 * 2**20


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASRA_")}
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        embedded_serve(port, "--request-timeout-seconds", "1", "--max-concurrent-rpcs", "300"),
        stdout=log,
        stderr=log,
        env=env,
    )
    try:
        assert_serving(port)
        yield process, port
    finally:
        process.kill()
        process.wait()
        log.close()


def assert_serving(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        grpc.channel_ready_future(channel).result(timeout=60)
        status = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="liveness"), timeout=10
        )
        assert status.status == health_pb2.HealthCheckResponse.SERVING


async def wave(port: int, pid: int) -> tuple[Attack, int]:
    """One attack: hold the streams until the server has ended every one; the peak RSS seen."""
    attack, stop = Attack(), asyncio.Event()
    task = asyncio.ensure_future(half_open("127.0.0.1", port, CONNECTIONS, STREAMS, stop, attack))
    peak = rss_bytes(pid)
    deadline = time.monotonic() + 60
    try:
        while not (attack.opened == CONNECTIONS * STREAMS and attack.answered == attack.opened):
            if time.monotonic() > deadline:
                break  # reported by the caller's assertion
            await asyncio.sleep(0.05)
            peak = max(peak, rss_bytes(pid))
    finally:
        stop.set()
        await task
    return attack, peak


def test_half_open_requests_are_ended_and_memory_stays_bounded(
    server_process: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = server_process
    base = rss_bytes(process.pid)
    peaks = []
    for _ in range(WAVES):
        attack, peak = asyncio.run(wave(port, process.pid))
        assert attack.opened == CONNECTIONS * STREAMS
        # Each call is ended: past the call limit at once, the others at the request deadline.
        assert attack.answered == attack.opened, "half-open calls the server still holds"
        peaks.append(peak)
    growth = max(peaks) - base
    assert growth < MAX_GROWTH, f"RSS grew {growth >> 20} MiB: {[p >> 20 for p in peaks]}"
    assert process.poll() is None
    assert_serving(port)


def test_a_request_that_does_not_arrive_in_time_is_request_timeout(
    start_server: Callable[..., ServerThread],
) -> None:
    """A client that opens GetMatch and holds its message back is cut at the request deadline
    with DEADLINE_EXCEEDED/REQUEST_TIMEOUT (a client-streaming call lets a gRPC client hold it)."""
    server = start_server(request_timeout_s=0.5)
    release = threading.Event()

    def held_back() -> Iterator[pb.GetMatchRequest]:
        release.wait(60)  # until the server has answered: never within the deadline
        yield pb.GetMatchRequest(match_id="m" * 22)

    call = server.channel.stream_unary(
        "/basra.v1.BasraService/GetMatch",
        request_serializer=pb.GetMatchRequest.SerializeToString,
        response_deserializer=pb.GetMatchResponse.FromString,
    )
    try:
        rejection = Rejection.of(rpc_error(lambda: call(held_back(), timeout=30)))
    finally:
        release.set()
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "REQUEST_TIMEOUT",
    )
    assert rejection.metadata == {"timeout_s": "0.5"}
    assert server.server.metrics.request_timeouts.value == 1


def test_calls_held_back_at_different_times_each_get_their_own_deadline(
    start_server: Callable[..., ServerThread],
) -> None:
    """The request deadlines share one timer: a call held back after the first one was cut, and
    calls that send their message meanwhile, are each treated by their own deadline."""
    server = start_server(request_timeout_s=0.3)
    release = threading.Event()

    def held_back() -> Iterator[pb.GetMatchRequest]:
        release.wait(60)
        yield pb.GetMatchRequest(match_id="m" * 22)

    call = server.channel.stream_unary(
        "/basra.v1.BasraService/GetMatch",
        request_serializer=pb.GetMatchRequest.SerializeToString,
        response_deserializer=pb.GetMatchResponse.FromString,
    )
    stub = health_pb2_grpc.HealthStub(server.channel)
    try:
        for _ in range(2):  # the second wait starts after the first one was cut
            prompt = stub.Check(health_pb2.HealthCheckRequest(service="liveness"), timeout=5)
            assert prompt.status == health_pb2.HealthCheckResponse.SERVING
            rejection = Rejection.of(rpc_error(lambda: call(held_back(), timeout=30)))
            assert (rejection.code, rejection.reason) == (
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "REQUEST_TIMEOUT",
            )
    finally:
        release.set()
    assert server.server.metrics.request_timeouts.value == 2


def test_a_watch_request_that_does_not_arrive_in_time_is_request_timeout(
    start_server: Callable[..., ServerThread],
) -> None:
    """WatchMatch takes its request within the same deadline, although it is registered as a
    request stream of its own rather than through the interceptor (grpc_transport.register)."""
    server = start_server(request_timeout_s=0.5)
    release = threading.Event()

    def held_back() -> Iterator[pb.WatchMatchRequest]:
        release.wait(60)  # until the server has answered: never within the deadline
        yield pb.WatchMatchRequest(match_id="m" * 22)

    call = server.channel.stream_stream(
        "/basra.v1.BasraService/WatchMatch",
        request_serializer=pb.WatchMatchRequest.SerializeToString,
        response_deserializer=pb.WatchMatchResponse.FromString,
    )
    try:
        rejection = Rejection.of(rpc_error(lambda: list(call(held_back(), timeout=30))))
    finally:
        release.set()
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "REQUEST_TIMEOUT",
    )
    assert server.server.metrics.request_timeouts.value == 1


@pytest.mark.parametrize("limit", [1000])
def test_half_open_requests_on_the_http_port_are_ended(
    start_server: Callable[..., ServerThread], limit: int
) -> None:
    # Before the HTTP port bounded its calls, none of these was ever ended: each held its
    # memory for as long as the client kept its connection.
    server = start_server(request_timeout_s=0.5, max_concurrent_rpcs=limit)
    host, port = server.http_url[len("http://") :].rsplit(":", 1)

    async def attack() -> Attack:
        attack, stop = Attack(), asyncio.Event()
        task = asyncio.ensure_future(half_open(host, int(port), 4, 25, stop, attack))
        started = time.monotonic()
        while time.monotonic() - started < 30 and not (
            attack.opened == 100 and attack.answered == attack.opened
        ):
            await asyncio.sleep(0.05)
        stop.set()
        await task
        return attack

    result = asyncio.run(attack())
    assert (result.opened, result.answered) == (100, 100)
    # Every call ended counts no more: the port's budget is whole again.
    http = server.server.http
    assert http is not None
    wait_until(lambda: http.app.connect.calls == 0)
