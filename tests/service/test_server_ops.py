"""What operators rely on: health, reflection, metrics, limits, logs, and draining on SIGTERM."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import os
import random
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from basra.client.match import MatchClient, Rejection
from basra.service import logs
from basra.service.server import loop_name
from basra.v1 import basra_service_pb2 as pb
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import play_match
from tests.support import ServerThread, embedded_serve, free_port, sample_value, wait_until


def test_health_and_reflection(server: ServerThread) -> None:
    health = health_pb2_grpc.HealthStub(server.channel)
    deadline = time.monotonic() + 5
    while health.Check(health_pb2.HealthCheckRequest(service="")).status != 1:
        assert time.monotonic() < deadline, "health never turned SERVING"
        time.sleep(0.05)
    for service in ("", "basra.v1.BasraService", "liveness"):
        status = health.Check(health_pb2.HealthCheckRequest(service=service)).status
        assert status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(server.channel)
    answers = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    names = {s.name for a in answers for s in a.list_services_response.service}
    assert {"basra.v1.BasraService", "grpc.health.v1.Health"} <= names


def test_metrics_count_calls_plays_conflicts_and_store_latency(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, metrics_port=0)
    client = new_match(server, seed=3)
    play_match(client, random.Random(0), stop=lambda v: v.plays_left <= 40)
    waiting = 1 - client.view(0).turn
    # The seat not on turn tries to play: FAILED_PRECONDITION (NOT_YOUR_TURN).
    rpc_error(lambda: client.play(waiting, client.view(waiting).hand[0]))
    port = server.server.metrics_port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()

    def value(pattern: str) -> float:
        match = re.search(rf"^{pattern} (\S+)$", text, re.M)
        assert match, pattern
        return float(match.group(1))

    assert value(r'basra_rpc_calls_total\{code="OK",method="Play"\}') == 8
    assert value(r'basra_rpc_calls_total\{code="FAILED_PRECONDITION",method="Play"\}') == 1
    assert value("basra_plays_total") == 8
    assert value("basra_matches_created_total") == 1
    assert value(r'basra_store_latency_seconds_count\{operation="commit"\}') == 8
    assert value(r'basra_rpc_latency_seconds_count\{method="ListPlans"\}') >= 8
    assert value("basra_store_up") == 1
    assert "basra_version_conflicts_total" in text


def test_oversized_messages_are_refused(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, max_message_bytes=1024)
    client = new_match(server)
    error = rpc_error(
        lambda: client.stub.GetMatch(
            pb.GetMatchRequest(match_id="x" * 4000), metadata=client.metadata(0)
        )
    )
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert client.view(0).version == 1  # the server is fine


def test_concurrent_streams_per_connection_are_capped(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, max_concurrent_streams=2)
    client = new_match(server)
    streams = [
        client.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=client.match_id, after_version=1),
            metadata=client.metadata(0),
        )
        for _ in range(2)
    ]
    registry = server.server.metrics.registry
    wait_until(
        lambda: registry.get_sample_value("basra_watch_streams") == 2, what="both streams open"
    )
    error = rpc_error(
        lambda: client.stub.GetMatch(
            pb.GetMatchRequest(match_id=client.match_id), metadata=client.metadata(0), timeout=0.5
        )
    )
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    for stream in streams:
        stream.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs leaves it untyped
    # The call waits (up to its own deadline) for a stream slot to be freed.
    assert client.view(0).version == 1


def test_logs_are_json_and_never_hold_a_token(server: ServerThread) -> None:
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    try:
        client = new_match(server, seed=2)
        play_match(client, random.Random(1), stop=lambda v: v.plays_left <= 30)
        rpc_error(
            lambda: client.stub.GetMatch(
                pb.GetMatchRequest(match_id=client.match_id),
                metadata=(("authorization", "Bearer wrong"),),
            )
        )
    finally:
        logging.getLogger("basra").handlers.clear()
    lines = buffer.getvalue().splitlines()
    records = [json.loads(line) for line in lines]
    assert any(r["msg"] == "match created" for r in records)
    assert any(r.get("reason") == "TOKEN_INVALID" for r in records)
    assert sum(r["msg"] == "call" for r in records) >= 20
    for token in client.tokens.values():
        assert token not in buffer.getvalue()


def test_logged_request_fields_are_cut_to_a_bounded_length(server: ServerThread) -> None:
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    sent = "m" * 60_000
    try:
        error = rpc_error(
            lambda: server.channel.unary_unary(
                "/basra.v1.BasraService/GetMatch",
                request_serializer=pb.GetMatchRequest.SerializeToString,
                response_deserializer=pb.GetMatchResponse.FromString,
            )(pb.GetMatchRequest(match_id=sent))
        )
    finally:
        logging.getLogger("basra").handlers.clear()
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    (line,) = [line for line in buffer.getvalue().splitlines() if "call rejected" in line]
    assert len(line) < 1000
    record = json.loads(line)
    assert record["match_id"] == "m" * logs.FIELD_LIMIT + "...[59900 more characters]"
    assert logs.clip(7) == 7


def test_logged_bytes_fields_are_cut_as_strings_are() -> None:
    """A bytes field (a request's raw bytes) is logged as its text, cut to the same bound as a
    string field, not written whole as a bytes literal."""
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        logging.getLogger("basra.test").info(
            "bytes", extra={"sent": b"b" * 5_000, "text": "s" * 5_000, "odd": b"\xff" + b"o" * 200}
        )
    finally:
        logging.getLogger("basra").handlers.clear()
    (record,) = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert record["sent"] == "b" * logs.FIELD_LIMIT + "...[4900 more characters]"
    assert record["text"] == "s" * logs.FIELD_LIMIT + "...[4900 more characters]"
    # Bytes that are not UTF-8 are logged with a replacement character, cut all the same.
    assert record["odd"] == "\ufffd" + "o" * (logs.FIELD_LIMIT - 1) + "...[101 more characters]"
    assert logs.clip(b"short") == "short"


def test_redaction_masks_anything_shaped_like_a_secret() -> None:
    token = "A" * 43
    text = logs.redact(f'authorization: Bearer {token} x-api-key: "k3y" raw {token}')
    assert token not in text
    assert "k3y" not in text
    assert text.count("[REDACTED]") == 3


@contextlib.contextmanager
def serving(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A server in a child process, its log on the pipe of its stderr (and its stdout, where
    nothing is written, on another); killed if the test leaves it running."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe:
                pipe.close()


def test_sigterm_turns_health_off_drains_and_exits_cleanly(tmp_path: Path) -> None:
    port = free_port()
    command = embedded_serve(port, "--drain-seconds", "3", "--allow-seeds")
    with serving(command, {**os.environ, "BASRA_LOG_LEVEL": "INFO"}) as process:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        ready = grpc.channel_ready_future(channel)
        # Starting a process is slow on a busy machine: wait for it to serve, or to have exited.
        wait_until(lambda: ready.done() or process.poll() is not None, 60, "the server to start")
        assert process.poll() is None, "the server exited at start"
        client, _ = MatchClient.create(channel, seed=4)
        # From version 0 the stream answers at once (the match's first events), so a first
        # message proves it is open on the server; then it waits for more.
        stream = client.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=client.match_id, after_version=0),
            metadata=client.metadata(0),
        )
        opened = threading.Event()
        ended: list[grpc.StatusCode] = []

        def consume() -> None:
            try:
                for _ in stream:
                    opened.set()
                ended.append(grpc.StatusCode.OK)
            except grpc.RpcError as error:
                ended.append(error.code())

        watcher = threading.Thread(target=consume)
        watcher.start()
        assert opened.wait(timeout=10), "the watch stream did not open"
        process.send_signal(signal.SIGTERM)
        health = health_pb2_grpc.HealthStub(channel)
        # While draining, health says NOT_SERVING and the open stream is still being served.
        open_while_draining = False

        def draining() -> bool:
            nonlocal open_while_draining
            try:
                status = health.Check(health_pb2.HealthCheckRequest(), timeout=0.5).status
            except grpc.RpcError:
                return process.poll() is not None
            if status == health_pb2.HealthCheckResponse.NOT_SERVING:
                open_while_draining |= not ended
                return True
            return False

        wait_until(draining, 10, "health NOT_SERVING after SIGTERM")
        assert process.wait(timeout=15) == 0
        watcher.join(timeout=5)
        assert open_while_draining, "the open stream is given the drain time"
        assert ended, "then it is cut"
        assert ended[0] != grpc.StatusCode.OK
        channel.close()
        assert process.stderr is not None
        # Every line, the HTTP port server's (granian's) included, is one of the JSON logger's.
        messages = [json.loads(line)["msg"] for line in process.stderr.read().splitlines()]
        assert messages[-2:] == ["draining", "stopped"]
        assert process.stdout is not None
        assert process.stdout.read() == ""


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_serve_runs_on_the_loop_chosen_and_its_serving_line_says_which(loop: str) -> None:
    port = free_port()
    command = embedded_serve(port, "--drain-seconds", "0")
    env = {**os.environ, "BASRA_LOG_LEVEL": "INFO", "BASRA_EVENT_LOOP": loop}
    with serving(command, env) as process:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            ready = grpc.channel_ready_future(channel)
            wait_until(lambda: ready.done() or process.poll() is not None, 60, "the server")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        records = [json.loads(line) for line in process.stderr.read().splitlines()]
        (started,) = (r for r in records if r["msg"] == "serving")
        assert started["event_loop"] == loop, started


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_in_process_servers_run_on_the_loop_their_settings_choose(
    start_server: Callable[..., ServerThread], loop: str
) -> None:
    # The suite's servers (tests.support.ServerThread) make their loop as serve() does.
    server = start_server(event_loop=loop)
    assert loop_name(server.loop) == loop
    new_match(server)  # and serve on it


def test_client_errors_unpack_exactly_one_error_info(server: ServerThread) -> None:
    client = new_match(server)
    r = Rejection.of(rpc_error(lambda: client.deal(0)))
    assert r.reason == "HAND_IN_PROGRESS"
    assert r.metadata == {"hand": "1", "plays_left": "48"}


@pytest.mark.parametrize("grace", [0.0])
def test_stopping_a_server_closes_its_store(
    start_server: Callable[..., ServerThread], redis_url: str, grace: float
) -> None:
    server = start_server(redis_url=redis_url)
    new_match(server)
    server.stop(grace)
    assert server.loop.is_closed()


def test_watch_streams_whose_client_left_are_closed(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    """A stream waiting on an idle match writes nothing; it must still end when its client goes,
    long before its store wait (5 s here) would, and whatever the garbage collector does (gRPC
    leaves the handler of a cancelled stream to be finalized whenever it is collected)."""
    server = start_server(redis_url=redis_url, watch_poll_s=5.0)
    client = new_match(server, seed=3)
    play_match(client, random.Random(1), stop=lambda v: v.plays_left < 30)
    streams = [
        client.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=client.match_id), metadata=client.metadata(i % 2)
        )
        for i in range(40)
    ]

    def read_some_then_leave(index: int, stream: Any) -> None:  # a response iterator and a call
        for count, _ in enumerate(stream, start=1):
            if count >= 1 + index % 4:
                break
        stream.cancel()

    readers = [
        threading.Thread(target=read_some_then_leave, args=(i, s)) for i, s in enumerate(streams)
    ]
    gauge = server.server.metrics.watch_streams
    gc.disable()
    try:
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout=10)
        deadline = time.monotonic() + 3
        while sample_value(gauge) > 0:
            assert time.monotonic() < deadline, f"{sample_value(gauge)} streams still open"
            time.sleep(0.05)
    finally:
        gc.enable()
