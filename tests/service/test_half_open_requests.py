"""Half-open requests (headers and one byte of a message, then nothing) against a real server
process, its memory read from /proc: every such call is ended, and memory stays bounded however
many arrive. The full-size attack (250 connections x 100 streams) is in ``make bench``.

The HTTP port's servers here speak cleartext HTTP/2 too (``http2_cleartext``, as behind a
gateway that speaks it to the pods): the HTTP/2 surface is what these requests test."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, cast

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.client.match import Rejection
from basra.service.grpc_transport import register_bounded
from basra.service.limits import CallLimit, RequestDeadline, peer_host
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.h2attacks import ANSWERED_S, ATTACKER, serving, withstand_half_open_on_grpc
from tests.halfopen import (
    ACK,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PING,
    PREFACE,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    Attack,
    frame,
    half_open,
    read_frame,
    request_headers,
    rss_bytes,
)
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import play_match
from tests.support import ServerThread, free_port, serve_process, wait_until

CONNECTIONS, STREAMS, WAVES = 20, 100, 5
CONNECT: Final = "application/proto"
"""A Connect unary call's content type: the HTTP port serves Connect and gRPC-Web, and answers
gRPC calls at once (UNIMPLEMENTED)."""


def content_type(port_kind: str) -> str:
    """The half-open calls' content type on a port: gRPC, or Connect on the HTTP port."""
    return CONNECT if port_kind == "http" else "application/grpc"


# Held without bound, 10,000 half-open calls take about 230 MB (23 KB each, measured).
MAX_GROWTH = 100 * 2**20


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """A server process (call limit 300, request deadline 1 s, cleartext HTTP/2 on the HTTP
    port); its gRPC and HTTP ports."""
    port, http_port = free_port(), free_port()
    with serve_process(
        tmp_path / "serve.log",
        port,
        *("--request-timeout-seconds", "1", "--max-concurrent-rpcs", "300"),
        *("--http-listen", f"127.0.0.1:{http_port}", "--http2-cleartext"),
    ) as process:
        assert_serving(port)
        yield process, port, http_port


@pytest.fixture
def start_server(
    start_server: Callable[..., ServerThread],
) -> Callable[..., ServerThread]:
    """The suite's ``start_server``, its HTTP port speaking cleartext HTTP/2 unless told not."""

    def start(**overrides: Any) -> ServerThread:
        return start_server(**{"http2_cleartext": True, **overrides})

    return start


def assert_serving(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        grpc.channel_ready_future(channel).result(timeout=60)
        status = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="liveness"), timeout=10
        )
        assert status.status == health_pb2.HealthCheckResponse.SERVING


async def wave(
    port: int, pid: int, connections: int, streams: int, content_type: str
) -> tuple[Attack, int]:
    """One attack: hold the streams until the server has ended every one; the peak RSS seen."""
    attack, stop = Attack(), asyncio.Event()
    task = asyncio.ensure_future(
        half_open("127.0.0.1", port, connections, streams, stop, attack, content_type=content_type)
    )
    peak = rss_bytes(pid)
    deadline = time.monotonic() + 60
    try:
        while not (
            attack.opened == connections * streams
            and attack.answered + attack.dropped == attack.opened
        ):
            if time.monotonic() > deadline:
                break  # reported by the caller's assertion
            await asyncio.sleep(0.05)
            peak = max(peak, rss_bytes(pid))
    finally:
        stop.set()
        await task
    return attack, peak


@pytest.mark.parametrize(
    ("port_kind", "connections", "waves"),
    [
        ("grpc", CONNECTIONS, WAVES),
        # 10,000 streams a wave, from one address: those past a connection's
        # BASRA_HTTP_MAX_CONCURRENT_STREAMS are refused (REFUSED_STREAM); of the others at most
        # BASRA_MAX_PENDING_PER_PEER wait for their request, the rest are refused at once.
        ("http", 100, 2),
    ],
)
def test_half_open_requests_are_ended_and_memory_stays_bounded(
    server_process: tuple[subprocess.Popen[bytes], int, int],
    port_kind: str,
    connections: int,
    waves: int,
) -> None:
    process, grpc_port, http_port = server_process
    port = http_port if port_kind == "http" else grpc_port
    base = rss_bytes(process.pid)
    peaks = []
    for _ in range(waves):
        attack, peak = asyncio.run(
            wave(port, process.pid, connections, STREAMS, content_type(port_kind))
        )
        assert attack.opened == connections * STREAMS
        # Each call is ended: past the limits at once, the others at the request deadline.
        assert attack.answered == attack.opened, "half-open calls the server still holds"
        peaks.append(peak)
    growth = max(peaks) - base
    assert growth < MAX_GROWTH, f"RSS grew {growth >> 20} MiB: {[p >> 20 for p in peaks]}"
    assert process.poll() is None
    assert_serving(grpc_port)


@pytest.mark.parametrize(
    ("method", "message", "answer"),
    [
        (
            "/basra.v1.BasraService/GetMatch",
            pb.GetMatchRequest(match_id="m" * 22),
            pb.GetMatchResponse,
        ),
        # The health service's handlers get the same deadline, wrapped when registered
        # (grpc_transport.register_bounded): the server has no interceptor.
        (
            "/grpc.health.v1.Health/Check",
            health_pb2.HealthCheckRequest(service="liveness"),
            health_pb2.HealthCheckResponse,
        ),
    ],
    ids=["GetMatch", "health Check"],
)
def test_a_request_that_does_not_arrive_in_time_is_request_timeout(
    start_server: Callable[..., ServerThread],
    method: str,
    message: Message,
    answer: type[Message],
) -> None:
    """A client that opens a call and holds its message back is cut at the request deadline
    with DEADLINE_EXCEEDED/REQUEST_TIMEOUT (a client-streaming call lets a gRPC client hold it)."""
    server = start_server(request_timeout_s=0.5)
    release = threading.Event()

    def held_back() -> Iterator[Message]:
        release.wait(60)  # until the server has answered: never within the deadline
        yield message

    call = server.channel.stream_unary(
        method,
        request_serializer=type(message).SerializeToString,
        response_deserializer=answer.FromString,
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
    request stream of its own that waits for its request itself (grpc_transport.register)."""
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


def test_health_and_reflection_streams_count_in_the_call_limit(
    start_server: Callable[..., ServerThread],
) -> None:
    """Every handler of the gRPC port counts in the one call limit, the standard health and
    reflection services' streams included: past it a call is refused at once, and each
    stream's end gives its place back."""
    server = start_server(max_concurrent_rpcs=3)
    http = server.server.http
    assert http is not None
    calls = http.app.connect.calls
    health = health_pb2_grpc.HealthStub(server.channel)
    reflect = server.channel.stream_stream(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    done = threading.Event()

    def questions() -> Iterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")
        done.wait(60)  # the stream stays open until the test is done with it

    watches = [
        health.Watch(health_pb2.HealthCheckRequest(service="liveness"), timeout=60)
        for _ in range(2)
    ]
    # An iterator of responses and a call (grpc-stubs types it as neither).
    reflection: Any = reflect(questions(), timeout=60)
    try:
        for watch in watches:
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        services = next(reflection).list_services_response.service
        assert "basra.v1.BasraService" in {service.name for service in services}
        assert calls.grpc == 3
        refused = rpc_error(
            lambda: health.Check(health_pb2.HealthCheckRequest(service="liveness"), timeout=10)
        )
        assert (refused.code(), refused.details()) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "Concurrent RPC limit exceeded",
        )
        watches[0].cancel()
        wait_until(lambda: calls.grpc == 2)
        assert health.Check(health_pb2.HealthCheckRequest(service="liveness"), timeout=10)
    finally:
        done.set()
        for watch in watches:
            watch.cancel()
        reflection.cancel()
    wait_until(lambda: calls.grpc == 0)


def test_a_servicer_that_names_no_methods_is_refused() -> None:
    """register_bounded fails closed: code generated without the methods by name (grpcio-tools
    before 1.63) would otherwise register nothing, and the service would answer UNIMPLEMENTED."""

    def add(servicer: object, server: Any) -> None:
        server.add_generic_rpc_handlers(())

    with pytest.raises(RuntimeError, match="registered no method handlers"):
        register_bounded(cast(grpc.aio.Server, object()), RequestDeadline(1), add, object())


async def hundred_half_open(host: str, port: int) -> Attack:
    """10 connections x 10 half-open requests, held until the server has ended all 100 (or for
    30 s)."""
    attack, stop = Attack(), asyncio.Event()
    task = asyncio.ensure_future(half_open(host, port, 10, 10, stop, attack, content_type=CONNECT))
    started = time.monotonic()
    while time.monotonic() - started < 30 and not (
        attack.opened == 100 and attack.answered + attack.dropped == attack.opened
    ):
        await asyncio.sleep(0.05)
    stop.set()
    await task
    return attack


@pytest.mark.parametrize("limit", [40, 1000])
def test_half_open_requests_on_the_http_port_are_ended(
    start_server: Callable[..., ServerThread], limit: int
) -> None:
    """Every half-open request on the HTTP port is ended: at once past the call limit, else at
    the request deadline; none holds its memory for as long as its client keeps its connection.
    (A stream past the connection's stream limit is refused at once.)"""
    server = start_server(request_timeout_s=0.5, max_concurrent_rpcs=limit)
    host, port = server.http_address

    result = asyncio.run(hundred_half_open(host, port))
    assert result.opened == 100
    assert result.answered + result.dropped == 100
    # Every call ended counts no more: the port's budget is whole again.
    http = server.server.http
    assert http is not None
    wait_until(lambda: http.app.connect.calls.http == 0)


def test_a_response_left_unread_holds_no_call(
    start_server: Callable[..., ServerThread],
) -> None:
    """A client that reads no response body (a flow-control window of 0) holds none of the
    call limit while it keeps its connections: each unary call ends once its answer is handed
    to the server, which holds it in the stream's window (at most the connection's streams of
    them); otherwise a few such connections would hold the call limit, and the port would
    refuse every other client."""
    server = start_server(request_timeout_s=0.5, max_concurrent_rpcs=10)
    host, port = server.http_address
    http = server.server.http
    assert http is not None
    calls = http.app.connect.calls
    transport = SyncHTTPTransport(http_version=HTTPVersion.HTTP2)
    try:
        # 30 streams: 10 held by the call limit until the request deadline, 20 answered
        # RESOURCE_EXHAUSTED at once; no response body can be written.
        with holding(host, port, 2, 15, CONNECT, window=0) as attack:
            wait_until(lambda: attack.opened == 30 and calls.http == 10)
            wait_until(lambda: calls.http == 0)
            client = BasraServiceClientSync(server.http_url, http_client=SyncClient(transport))
            assert client.deal(pb.DealRequest(request_id=str(uuid.uuid4()))).match_id
            assert attack.connections_closed == 0
    finally:
        transport.close()


def test_a_stream_left_unread_past_its_wait_is_let_go(
    start_server: Callable[..., ServerThread],
) -> None:
    """A WatchMatch stream whose client reads none of it (a flow-control window of 0) is let go
    once a piece of its response has waited ``response_wait_s``, while the client keeps its
    connection: otherwise such streams would hold the call limit for as long as their
    connections live."""
    server = start_server(response_wait_s=0.5)
    host, port = server.http_address
    http = server.server.http
    assert http is not None
    stalls, calls = server.server.metrics.http_streams_stalled, http.app.connect.calls
    match = new_match(server)
    # Events enough that the stream's answer does not fit what the server buffers for it.
    play_match(match, random.Random(0), stop=lambda view: view.version > 40)
    fields = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/basra.v1.BasraService/WatchMatch"),
        (":authority", f"{host}:{port}"),
        ("content-type", "application/connect+proto"),
        ("connect-protocol-version", "1"),
        ("authorization", f"Bearer {match.tokens[0]}"),
    ]
    block = b"".join(
        b"\x00" + bytes((len(n),)) + n.encode() + bytes((len(v),)) + v.encode() for n, v in fields
    )
    request = pb.WatchMatchRequest(match_id=match.match_id).SerializeToString()
    envelope = b"\x00" + len(request).to_bytes(4, "big") + request
    shut = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 0)

    closed = threading.Event()
    done = threading.Event()

    async def watch_unread() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(PREFACE + frame(SETTINGS, 0, 0, shut) + shut)
            writer.write(frame(HEADERS, END_HEADERS, 1, block) + block)
            writer.write(frame(DATA, END_STREAM, 1, envelope) + envelope)
            while not done.is_set():
                try:
                    kind, flags, _, payload = await asyncio.wait_for(read_frame(reader), 0.1)
                except TimeoutError:
                    continue
                if kind == SETTINGS and not flags & ACK:
                    writer.write(frame(SETTINGS, ACK, 0))
                elif kind == PING and not flags & ACK:
                    writer.write(frame(PING, ACK, 0, payload) + payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            closed.set()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    watcher = threading.Thread(target=asyncio.run, args=(watch_unread(),))
    watcher.start()
    try:
        wait_until(lambda: stalls.value == 1 and calls.http == 0)
        assert not closed.is_set()
    finally:
        done.set()
        watcher.join(10)


def test_the_http_port_listens_with_the_kernels_whole_backlog(
    start_server: Callable[..., ServerThread],
) -> None:
    """The HTTP port queues as many connections not yet accepted as the kernel allows, as the
    gRPC port does: past a short backlog, a burst of connections arriving at once (clients
    reconnecting together, or a flood) is reset unserved once the kernel gives up on them."""
    server = start_server()
    http = server.server.http
    assert http is not None
    # ss shows a listening socket's backlog, as the kernel capped it, as its Send-Q.
    listing = subprocess.run(
        ["ss", "-Htln", f"sport = :{http.port}"], check=True, capture_output=True, text=True
    ).stdout.split()
    backlog = int(listing[2])
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    assert backlog == min(socket.SOMAXCONN, somaxconn)
    assert backlog > 100


@contextlib.contextmanager
def holding(
    host: str,
    port: int,
    connections: int,
    streams: int,
    content_type: str = "application/grpc",
    window: int | None = None,
    source: str | None = None,
) -> Iterator[Attack]:
    """Half-open requests held from another thread until the block ends (``window``,
    ``source``: as ``half_open``'s)."""
    attack, ready = Attack(), threading.Event()
    stop: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def hold() -> None:
        event = asyncio.Event()
        stop.append((asyncio.get_running_loop(), event))
        ready.set()
        path = "/basra.v1.BasraService/GetMatch"
        await half_open(
            host, port, connections, streams, event, attack, path, content_type, window, source
        )

    thread = threading.Thread(target=asyncio.run, args=(hold(),))
    thread.start()
    try:
        assert ready.wait(10)
        yield attack
    finally:
        loop, event = stop[0]
        if thread.is_alive():  # else every connection was closed by the server already
            loop.call_soon_threadsafe(event.set)
        thread.join(30)


def test_the_call_limit_holds_across_both_ports(
    start_server: Callable[..., ServerThread],
) -> None:
    """The call limit is the process's, not each port's: calls held on one port leave the other
    only what remains, so a flood on both holds no more calls, nor memory, than on one."""
    server = start_server(request_timeout_s=20, max_concurrent_rpcs=40)
    http = server.server.http
    assert http is not None
    calls = http.app.connect.calls
    host, http_port = server.http_address
    stub = pb_grpc.BasraServiceStub(server.channel)
    transport = SyncHTTPTransport(http_version=HTTPVersion.HTTP2)
    connect = BasraServiceClientSync(server.http_url, http_client=SyncClient(transport))

    def deal_over_grpc() -> object:
        return stub.Deal(pb.DealRequest(request_id=str(uuid.uuid4())), timeout=10)

    def deal_over_connect() -> object:
        return connect.deal(pb.DealRequest(request_id=str(uuid.uuid4())))

    try:
        with holding(host, http_port, 4, 10, CONNECT):
            wait_until(lambda: calls.http == 40)
            error = rpc_error(deal_over_grpc)
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert error.details() == "Concurrent RPC limit exceeded"
        wait_until(lambda: calls.http == 0)
        assert deal_over_grpc()

        with holding("127.0.0.1", server.port, 4, 10):
            wait_until(lambda: calls.grpc == 40)
            with pytest.raises(ConnectError) as refused:
                deal_over_connect()
            assert refused.value.code == Code.RESOURCE_EXHAUSTED
            assert calls.http == 0
        wait_until(lambda: calls.grpc == 0)
        assert deal_over_connect()
    finally:
        transport.close()


@pytest.mark.parametrize("content_type", ["application/grpc-web+proto", CONNECT])
def test_half_open_requests_of_a_client_that_left_are_let_go(
    start_server: Callable[..., ServerThread], content_type: str
) -> None:
    """A client that leaves with its requests half sent frees their calls at once, not at the
    request deadline: an answer left waiting to be written to a connection that is gone would
    hold its call's memory and its place in the call limit for good, and enough of them would
    shut the HTTP port, then both ports."""
    server = start_server(request_timeout_s=60, max_concurrent_rpcs=100)
    http = server.server.http
    assert http is not None
    calls = http.app.connect.calls
    host, port = server.http_address
    with holding(host, port, 4, 10, content_type) as attack:
        wait_until(lambda: calls.http == 40)
    assert (attack.opened, attack.connections_closed) == (40, 4)
    wait_until(lambda: calls.http == 0, timeout=10)


def test_a_connection_serves_on_after_data_for_a_stream_already_answered(
    start_server: Callable[..., ServerThread],
) -> None:
    """A call past the limit is answered before its request has arrived; the rest of that
    request, arriving afterwards, is for a stream the server has let go of. The connection
    serves on: its other calls, and new ones, are not lost with it."""
    server = start_server(request_timeout_s=30, max_concurrent_rpcs=1)
    host, port = server.http_address
    # A Connect unary call, answered before its request ends: HTTP/2 keeps the stream open
    # for the rest of the request.
    path = "/basra.v1.BasraService/GetMatch"
    headers = request_headers(f"{host}:{port}", path, "application/proto")
    http = server.server.http
    assert http is not None
    calls = http.app.connect.calls

    async def exchange() -> tuple[bool, bool]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            # Stream 1 takes the one call; stream 3, past the limit, is answered at once.
            writer.write(PREFACE + frame(SETTINGS, 0, 0))
            for stream in (1, 3):
                writer.write(frame(HEADERS, END_HEADERS, stream, headers) + headers)
            answered_early = await read_until(reader, writer, ends(3))
            # Once stream 3's call is over (only stream 1's counts),
            while calls.http != 1:
                await asyncio.sleep(0.01)
            # the rest of stream 3's request arrives; then a whole new request on stream 5,
            # answered (past the limit too) only if the connection still serves.
            writer.write(frame(DATA, END_STREAM, 3, b"\x00") + b"\x00")
            writer.write(frame(HEADERS, END_HEADERS, 5, headers) + headers)
            writer.write(frame(DATA, END_STREAM, 5))
            return answered_early, await read_until(reader, writer, ends(5))
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    answered_early, served_on = asyncio.run(asyncio.wait_for(exchange(), 30))
    assert answered_early
    assert served_on


def ends(stream: int) -> Callable[[int, int, int], bool]:
    """Whether a frame ends ``stream`` (its response's last HEADERS or DATA)."""

    def wanted(kind: int, flags: int, on: int) -> bool:
        return on == stream and kind in (HEADERS, DATA) and bool(flags & END_STREAM)

    return wanted


async def read_until(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    wanted: Callable[[int, int, int], bool],
) -> bool:
    """Read frames (acknowledging settings) until one that is ``wanted`` (given its type,
    flags and stream): True; False when the server closes the connection."""
    try:
        while True:
            kind, flags, on, _ = await read_frame(reader)
            if kind == SETTINGS and not flags & ACK:
                writer.write(frame(SETTINGS, ACK, 0))
            elif kind == GOAWAY:
                return False
            elif wanted(kind, flags, on):
                return True
    except (asyncio.IncompleteReadError, ConnectionError):
        return False


@pytest.mark.parametrize("port_kind", ["grpc", "http"])
def test_one_address_holds_no_more_than_its_share_of_the_calls(
    start_server: Callable[..., ServerThread], port_kind: str
) -> None:
    """Calls held from one client address stop at BASRA_MAX_CALLS_PER_PEER: past it that address
    is refused at once, while another address is served on both ports."""
    server = start_server(request_timeout_s=60, max_concurrent_rpcs=100, max_calls_per_peer=30)
    http = server.server.http
    assert http is not None
    calls = http.app.connect.calls
    host, http_port = server.http_address
    port = http_port if port_kind == "http" else server.port
    with holding(host, port, 5, 10, content_type(port_kind), source=ATTACKER) as attack:
        wait_until(lambda: attack.opened == 50 and attack.answered + attack.dropped == 20)
        assert calls.peers == {ATTACKER: 30}
        assert_served_on_both_ports(server)
    wait_until(lambda: not calls.peers)


@pytest.mark.parametrize("port_kind", ["grpc", "http"])
def test_requests_still_arriving_from_one_address_are_bounded(
    start_server: Callable[..., ServerThread], port_kind: str
) -> None:
    """Calls whose request is still arriving stop at BASRA_MAX_PENDING_PER_PEER from one address
    and BASRA_MAX_PENDING_REQUESTS in all: such a call costs the server what a served one does
    while its client may hold it for the whole request deadline at no cost of its own."""
    server = start_server(request_timeout_s=60, max_pending_requests=25, max_pending_per_peer=15)
    http = server.server.http
    assert http is not None
    pending = http.app.connect.deadline.pending
    host, http_port = server.http_address
    port = http_port if port_kind == "http" else server.port
    with holding(host, port, 4, 10, content_type(port_kind), source=ATTACKER) as attack:
        wait_until(lambda: attack.opened == 40 and attack.answered + attack.dropped == 25)
        assert pending.peers == {ATTACKER: 15}
        assert_served_on_both_ports(server)
        with holding(host, port, 4, 10, content_type(port_kind), source="127.0.0.3") as second:
            # 10 of this address's wait: what the process's 25 leave.
            wait_until(lambda: second.opened == 40 and second.answered + second.dropped == 30)
            assert pending.peers == {ATTACKER: 15, "127.0.0.3": 10}
    wait_until(lambda: not pending.peers)


def assert_served_on_both_ports(server: ServerThread) -> None:
    """A Deal from 127.0.0.1 answers on the gRPC port and over Connect."""
    stub = pb_grpc.BasraServiceStub(server.channel)
    assert stub.Deal(pb.DealRequest(request_id=str(uuid.uuid4())), timeout=10).match_id
    transport = SyncHTTPTransport(http_version=HTTPVersion.HTTP2)
    try:
        client = BasraServiceClientSync(server.http_url, http_client=SyncClient(transport))
        assert client.deal(pb.DealRequest(request_id=str(uuid.uuid4()))).match_id
    finally:
        transport.close()


def test_an_idle_http2_connection_is_closed(start_server: Callable[..., ServerThread]) -> None:
    """An HTTP/2 connection that opens no stream and answers nothing (not the server's ping) is
    closed once nothing has arrived for the read timeout and its ping is unanswered as long
    again: otherwise each held its memory for good."""
    server = start_server(http_read_timeout_s=1)
    host, port = server.http_address

    async def idle() -> bool:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(PREFACE + frame(SETTINGS, 0, 0))
        try:
            while await reader.read(65536):
                pass  # the server's SETTINGS and its acknowledgement, then its close
            return True
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    assert asyncio.run(asyncio.wait_for(idle(), 30))


def test_a_connection_that_sends_nothing_is_closed(
    start_server: Callable[..., ServerThread],
) -> None:
    """A connection that sends not a byte is closed after the read timeout, like one idle
    between requests: otherwise such connections, which cost their client nothing, would fill
    the connections the port serves at once. So the port speaks HTTP/1.1 alone unless told to
    speak cleartext HTTP/2 too: granian's HTTP/1.1-or-HTTP/2 mode reads a connection's first
    bytes with no timer, before hyper's header timeout starts."""
    server = start_server(http_read_timeout_s=1, http2_cleartext=False)
    host, port = server.http_address
    with socket.create_connection((host, port), timeout=5) as connection:
        assert connection.recv(1) == b""  # the server's close; a timeout raises


FILES: Final = 1024
"""The file descriptors a server process may open in the test of connections that send nothing
(a low limit, as some container runtimes set)."""


def test_connections_that_send_nothing_leave_the_grpc_port_served(tmp_path: Path) -> None:
    """More connections that send nothing than the process may open files: granian serves at
    most half the process's file descriptors at once, the others wait unaccepted in the
    backlog, so the gRPC port still takes a new connection and answers on it (were they all
    accepted, the process would have no descriptor left for it)."""
    with serving(tmp_path, files=FILES) as served:
        silent: list[socket.socket] = []

        def waiting() -> int:
            # ss shows a listening socket's connections not yet accepted as its Recv-Q.
            listing = subprocess.run(
                ["ss", "-Htln", f"sport = :{served.http_port}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            return int(listing[1])

        try:
            for _ in range(FILES + 100):
                silent.append(
                    socket.create_connection(
                        ("127.0.0.1", served.http_port), timeout=10, source_address=(ATTACKER, 0)
                    )
                )
            served_at_once = FILES // 2
            wait_until(
                lambda: waiting() == len(silent) - served_at_once,
                30,
                f"{served_at_once} connections accepted, the others waiting",
            )
            options = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own
            with grpc.insecure_channel(f"127.0.0.1:{served.port}", options=options) as channel:
                deal = pb_grpc.BasraServiceStub(channel).Deal(
                    pb.DealRequest(request_id=str(uuid.uuid4())), timeout=5
                )
            assert deal.match_id
            assert waiting() == len(silent) - served_at_once
        finally:
            for connection in silent:
                connection.close()


def test_an_http1_connection_idle_between_requests_is_closed(
    start_server: Callable[..., ServerThread],
) -> None:
    """An HTTP/1.1 connection that sends no next request is closed after the read timeout."""
    server = start_server(http_read_timeout_s=1)
    host, port = server.http_address
    with socket.create_connection((host, port), timeout=30) as connection:
        connection.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        received = b""
        while chunk := connection.recv(65536):  # the answer, then the server's close
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 ")


def test_peer_host_is_the_address_without_its_port() -> None:
    assert peer_host("ipv4:10.1.2.3:5000") == "10.1.2.3"
    assert peer_host("ipv6:[::1]:5000") == "::1"
    assert peer_host("unix:/tmp/socket") == "unix:/tmp/socket"


def test_a_call_limit_counts_each_address_apart() -> None:
    calls = CallLimit(3, peer_limit=2)
    assert calls.take("a")
    assert calls.take("a")
    assert not calls.take("a")
    assert calls.take("b")
    calls.http = 3
    assert not calls.take("c")  # the process is full, whatever the address
    calls.http = 0
    calls.give("a")
    assert calls.peers == {"a": 1, "b": 1}
    calls.give("a")
    assert calls.peers == {"b": 1}


@pytest.mark.parametrize("both", [False, True], ids=["grpc", "both-ports"])
def test_half_open_requests_on_the_grpc_port_leave_honest_calls_served(
    both: bool, tmp_path: Path
) -> None:
    """Half-open requests from another address on the gRPC port (and on the HTTP port at the
    same time) while an honest client plays on the gRPC port: each of its calls answered within
    its deadline, none refused or cancelled, and the memory given back once the server has let
    go of them all. The load tier floods 250 and 500 connections."""
    with serving(tmp_path, deadline_s=ANSWERED_S) as served:
        withstand_half_open_on_grpc(served, 8, 100, both=both)
