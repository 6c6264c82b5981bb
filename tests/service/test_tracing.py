"""Traces: a whole match over gRPC and over Connect, and one against the service's bots, their
spans exported over OTLP/gRPC to a real receiver (an in-test TraceService server), read back and
checked: the caller's trace continued, parent-child links, each bot move a trace of its own
linked to what handed it its turn, the RPC and database attributes, no secret anywhere, log
lines joined."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import grpc
import pytest
from connectrpc.errors import ConnectError
from google.protobuf.message import Message
from opentelemetry.proto.trace.v1 import trace_pb2
from redis import exceptions as redis_errors

from basra.service import logs, tracing
from basra.service.config import Settings
from basra.service.metrics import InstrumentedStore
from basra.service.servicer import SERVICE
from basra.service.store import Commit, MatchRecord, Store
from basra.service.store.base import StoreUnavailableError
from basra.service.store.memory import MemoryStore
from basra.service.store.redis import RedisStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.otlp import Receiver, attributes, receiving
from tests.support import ServerThread, wait_until

API_KEY = "k" * 40
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN_ID}-01"


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, int]]:
    with receiving() as running:
        yield running


@pytest.fixture
def start_traced(
    receiver: tuple[Receiver, int], redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., ServerThread]]:
    """Start a server with tracing on (sampler 1.0, the standard environment) over Redis, with
    settings overrides; stopped after the test."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver[1]}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "basra-under-test")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "1.0")
    started: list[ServerThread] = []

    def start(store: Store | None = None, **overrides: Any) -> ServerThread:
        settings = Settings(
            redis_url=redis_url,
            allow_seeds=True,
            metrics_port=None,
            api_key=API_KEY,
            http_listen="127.0.0.1:0",
        )
        server = ServerThread(replace(settings, **overrides), store=store)
        started.append(server)
        assert server.server.tracing is not None
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def traced_server(start_traced: Callable[..., ServerThread]) -> ServerThread:
    """A server with tracing on (sampler 1.0, the standard environment) over Redis."""
    return start_traced()


@dataclass
class Caller:
    """Every RPC over one transport, each call sent with the caller's traceparent and baggage;
    what it sent that must stay secret."""

    server: ServerThread
    transport: str
    secrets: set[str] = field(default_factory=set)
    rejections: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.server.target)
        self.connect = BasraServiceClientSync(self.server.http_url)

    def close(self) -> None:
        self.channel.close()
        self.connect.close()

    def call(self, rpc: str, request: Message, credential: str = "") -> Any:
        headers = {"traceparent": TRACEPARENT, "baggage": "team=frontend"}
        if credential:
            headers["authorization"] = f"Bearer {credential}"
        if rpc == "CreateMatch":
            headers["x-api-key"] = API_KEY
        method = SERVICE.methods_by_name[rpc]
        output = getattr(pb, method.output_type.name)
        if self.transport == "grpc":
            kind = (
                self.channel.unary_stream if method.server_streaming else self.channel.unary_unary
            )
            stub = kind(
                f"/{SERVICE.full_name}/{rpc}",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=output.FromString,
            )
            result = stub(request, metadata=tuple(headers.items()), timeout=10)
        else:
            snake = "".join("_" + c.lower() if c.isupper() else c for c in rpc).lstrip("_")
            result = getattr(self.connect, snake)(request, headers=headers, timeout_ms=10_000)
        return list(result) if method.server_streaming else result

    def rejected(self, rpc: str, request: Message, credential: str = "") -> None:
        with pytest.raises((grpc.RpcError, ConnectError)):
            self.call(rpc, request, credential)
        self.rejections.append(rpc)


def whole_match(caller: Caller) -> str:
    """Create a match, play it to its end (rejected calls on the way), watch it as a
    spectator; the match id."""
    request_id = str(uuid.uuid4())
    caller.secrets.add(request_id)
    created = caller.call(
        "CreateMatch", pb.CreateMatchRequest(request_id=request_id, seed=11, rules="eram")
    )
    match_id: str = created.match_id
    tokens = {t.seat: t.token for t in created.seat_tokens}
    caller.secrets.update(tokens.values())
    # A play out of turn, and a forged token: rejections, traced with their reason.
    caller.rejected("GetMatch", pb.GetMatchRequest(match_id=match_id), "x" * 43)
    while True:
        view = caller.call("GetMatch", pb.GetMatchRequest(match_id=match_id), tokens[0]).view
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            break
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            deal = pb.DealRequest(match_id=match_id, request_id=str(uuid.uuid4()))
            caller.secrets.add(deal.request_id)
            caller.call("Deal", deal, tokens[0])
            continue
        seat = view.turn
        plans = caller.call("ListPlans", pb.ListPlansRequest(match_id=match_id), tokens[seat]).cards
        if view.version == 2:
            other = tokens[1 - seat]
            caller.rejected("Play", pb.PlayRequest(match_id=match_id, card=plans[0].card), other)
        play = pb.PlayRequest(
            match_id=match_id,
            card=plans[0].card,
            plan_id=1 if plans[0].plans else 0,
            request_id=str(uuid.uuid4()),
            expected_version=view.version,
        )
        caller.secrets.add(play.request_id)
        caller.call("Play", play, tokens[seat])
    watch = caller.call(
        "CreateWatchToken", pb.CreateWatchTokenRequest(match_id=match_id), tokens[0]
    ).watch_token
    caller.secrets.add(watch)
    events = caller.call("WatchMatch", pb.WatchMatchRequest(match_id=match_id), watch)
    assert events
    assert events[-1].event.version_complete
    caller.call("Score", pb.ScoreRequest(match_id=match_id), watch)
    return match_id


def strings(span: trace_pb2.Span) -> list[str]:
    """Every text a span carries: its name, its attributes' and its events'."""
    found = [span.name, *map(str, attributes(span.attributes).values())]
    for event in span.events:
        found.append(event.name)
        found.extend(map(str, attributes(event.attributes).values()))
    return found


@pytest.mark.parametrize("transport", ["grpc", "connect"])
def test_a_whole_match_is_traced_from_the_caller_through_the_engine_and_redis(
    traced_server: ServerThread, receiver: tuple[Receiver, int], transport: str
) -> None:
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    caller = Caller(traced_server, transport)
    try:
        match_id = whole_match(caller)
    finally:
        logging.getLogger("basra").handlers.clear()
        caller.close()
    traced_server.stop()  # exports every span still batched
    spans = receiver[0].spans()
    by_id = {span.span_id.hex(): span for span in spans}
    servers = [s for s in spans if s.kind == trace_pb2.Span.SPAN_KIND_SERVER]
    calls = [s for s in servers if not s.name.endswith(" delivery")]

    # The caller's trace continues: every call's span is a child of the caller's span.
    assert {s.trace_id.hex() for s in spans} == {TRACE_ID}
    assert {s.parent_span_id.hex() for s in calls} == {PARENT_SPAN_ID}
    for resource in receiver[0].resources():
        assert resource["service.name"] == "basra-under-test"
        assert resource["deployment.environment"] == "test"

    # One server span per call, named and attributed by the RPC conventions.
    system = "grpc" if transport == "grpc" else "connect_rpc"
    for span in calls:
        found = attributes(span.attributes)
        method = found["rpc.method"]
        assert span.name == f"basra.v1.BasraService/{method}"
        assert found["rpc.system"] == system
        assert found["rpc.service"] == "basra.v1.BasraService"
        assert found["basra.port"] == ("grpc" if transport == "grpc" else "http")
        assert found.get("basra.match_id") == match_id or method == "CreateMatch"
        assert "rpc.grpc.status_code" in found
    rejected = [
        a for a in map(attributes, (s.attributes for s in calls)) if "basra.error.reason" in a
    ]
    assert sorted(a["rpc.method"] for a in rejected) == sorted(caller.rejections)
    assert {(a["basra.error.reason"], a["rpc.grpc.status_code"]) for a in rejected} == {
        ("TOKEN_INVALID", grpc.StatusCode.PERMISSION_DENIED.value[0]),
        ("NOT_YOUR_TURN", grpc.StatusCode.FAILED_PRECONDITION.value[0]),
    }
    if transport == "connect":
        assert all("rpc.connect_rpc.error_code" in a for a in rejected)
    plays = [s for s in calls if attributes(s.attributes)["rpc.method"] == "Play"]
    assert len(plays) > 40

    # Children: the engine's work and every Redis round trip, under their call's span.
    children = [s for s in spans if s.kind != trace_pb2.Span.SPAN_KIND_SERVER]
    for child in children:
        assert child.parent_span_id.hex() in by_id, child.name
    redis_spans = [s for s in spans if s.kind == trace_pb2.Span.SPAN_KIND_CLIENT]
    for span in redis_spans:
        found = attributes(span.attributes)
        assert found["db.system"] == "redis"
        assert found["db.query.summary"] == span.name
        assert by_id[span.parent_span_id.hex()].kind == trace_pb2.Span.SPAN_KIND_SERVER
    names = {s.name for s in redis_spans}
    assert {"EVALSHA create", "EVALSHA commit", "GET"} <= names, names
    # A play: the engine's apply and its store round trips.
    for play in plays:
        below = {s.name for s in children if s.parent_span_id == play.span_id}
        if not attributes(play.attributes).get("basra.error.reason"):
            assert {"basra.engine.apply", "EVALSHA commit"} <= below, below
    listing = next(s for s in calls if attributes(s.attributes)["rpc.method"] == "ListPlans")
    assert "basra.engine.plans" in {s.name for s in children if s.parent_span_id == listing.span_id}
    (creation,) = [s for s in calls if attributes(s.attributes)["rpc.method"] == "CreateMatch"]
    below = {s.name for s in children if s.parent_span_id == creation.span_id}
    assert {"basra.engine.new_match", "EVALSHA create"} <= below, below

    # WatchMatch: its setup span, then one instant span per version sent, with its event.
    (setup,) = [s for s in calls if attributes(s.attributes)["rpc.method"] == "WatchMatch"]
    deliveries = [s for s in servers if s.name.endswith(" delivery")]
    assert deliveries
    assert all(d.parent_span_id == setup.span_id for d in deliveries)
    versions = [attributes(d.events[0].attributes)["basra.version"] for d in deliveries]
    assert versions == sorted(versions)
    assert versions[0] == 1
    assert len(set(versions)) > 40
    assert all(d.events[0].name == "basra.watch.delivered" for d in deliveries)
    assert setup.end_time_unix_nano < deliveries[0].start_time_unix_nano

    # No secret anywhere: seat and watch tokens, the API key, request ids (request bodies).
    assert len(caller.secrets) > 40
    for span in spans:
        for text in strings(span):
            for secret in (*caller.secrets, API_KEY):
                assert secret not in text, f"{span.name}: {text!r}"

    # Each call's log line names its trace and its server span.
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    call_lines = [line for line in lines if line["msg"] in ("call", "call rejected")]
    assert len(call_lines) == len(calls)
    call_spans = {s.span_id.hex(): s for s in calls}
    for line in call_lines:
        assert line["trace_id"] == TRACE_ID
        span = call_spans[line["span_id"]]
        assert attributes(span.attributes)["rpc.method"] == line["method"]
    for line in buffer.getvalue().splitlines():
        for secret in (*caller.secrets, API_KEY):
            assert secret not in line


LEVELS = {game_pb2.BOT_LEVEL_GREEDY: "greedy", game_pb2.BOT_LEVEL_STRONG: "strong"}
BOTS = [game_pb2.BOT_LEVEL_UNSPECIFIED, game_pb2.BOT_LEVEL_GREEDY, game_pb2.BOT_LEVEL_STRONG]


def against_bots(caller: Caller) -> tuple[str, int]:
    """A three-seat match of a person (seat 0) against the service's greedy and strong bots,
    played to its end: the person plays its first plan (or trails) and deals when it is next
    to deal, and waits for the bots' moves in between; the match id and the bots' moves."""
    created = caller.call(
        "CreateMatch", pb.CreateMatchRequest(seats=3, bots=BOTS, seed=11, rules="persian")
    )
    match_id: str = created.match_id
    (token,) = [t.token for t in created.seat_tokens]
    caller.secrets.add(token)

    def seen() -> game_pb2.MatchView:
        view: game_pb2.MatchView = caller.call(
            "GetMatch", pb.GetMatchRequest(match_id=match_id), token
        ).view
        return view

    def moved_on(version: int) -> bool:
        return seen().version > version

    person = 0
    view = seen()
    while view.status != game_pb2.MATCH_STATUS_MATCH_OVER:
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER and view.next_dealer == 0:
            caller.call("Deal", pb.DealRequest(match_id=match_id), token)
            person += 1
        elif view.status == game_pb2.MATCH_STATUS_PLAYING and view.to_play == 0:
            cards = caller.call("ListPlans", pb.ListPlansRequest(match_id=match_id), token).cards
            chosen = next((c for c in cards if c.plans), cards[0])
            play = pb.PlayRequest(
                match_id=match_id,
                card=chosen.card,
                plan_id=chosen.plans[0].id if chosen.plans else 0,
                trail=not chosen.plans,
                expected_version=view.version,
            )
            caller.call("Play", play, token)
            person += 1
        else:
            wait_until(partial(moved_on, view.version), 30, "the bots' moves")
        view = seen()
    # Every version after the creation's is a move, the person's or a bot's.
    return match_id, view.version - 1 - person


def test_each_bot_move_is_a_trace_of_its_own_linked_to_what_handed_it_its_turn(
    start_traced: Callable[..., ServerThread], receiver: tuple[Receiver, int]
) -> None:
    server = start_traced(bot_pace_s=0, bot_workers=1)
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    caller = Caller(server, "grpc")
    try:
        match_id, bot_moves = against_bots(caller)
    finally:
        logging.getLogger("basra").handlers.clear()
        caller.close()
    metrics = server.server.metrics

    def applied() -> float:
        return sum(metrics.bot_moves.labels(level, "applied").value for level in LEVELS.values())

    # The last bot move is counted once its task has the store's answer.
    wait_until(lambda: applied() == bot_moves, 10, "the last bot move counted")
    thought = {level: _count(metrics.bot_think, level) for level in LEVELS.values()}
    server.stop()  # exports every span still batched
    spans = receiver[0].spans()
    by_id = {span.span_id.hex(): span for span in spans}
    calls = [s for s in spans if s.kind == trace_pb2.Span.SPAN_KIND_SERVER]
    tried = [s for s in spans if s.name == "basra.bot.move"]
    moves = [s for s in tried if attributes(s.attributes)["basra.bot.outcome"] == "applied"]
    assert len(moves) == bot_moves > 20
    # A move tried again on a record a slower read put back in the replica's cache (last seen
    # wins there) loses its compare-and-set: it answers a version a move was applied at, once.
    answered = [attributes(s.attributes)["basra.version"] for s in moves]
    assert len(set(answered)) == len(answered)
    for again in (s for s in tried if s not in moves):
        assert attributes(again.attributes)["basra.bot.outcome"] == "lost"
        assert attributes(again.attributes)["basra.version"] in answered
    lost = sum(metrics.bot_moves.labels(level, "lost").value for level in LEVELS.values())
    assert lost == len(tried) - len(moves)

    # Each move: a root span of a trace of its own, named and attributed, never a token.
    levels = {1: "greedy", 2: "strong"}
    for move in tried:
        found = attributes(move.attributes)
        assert move.kind == trace_pb2.Span.SPAN_KIND_INTERNAL
        assert not move.parent_span_id
        assert move.trace_id.hex() != TRACE_ID
        assert found["basra.match_id"] == match_id
        assert found["basra.bot.level"] == levels[found["basra.bot.seat"]]
        assert found["basra.bot.action"] in ("play", "deal")
        assert isinstance(found["basra.version"], int)
    assert len({s.trace_id for s in tried}) == len(tried)
    assert {attributes(m.attributes)["basra.bot.action"] for m in moves} == {"play", "deal"}

    # Linked to what handed the bot its turn: the person's call (its Play, its Deal, the
    # creation) or the bot move before it (a bot after a bot).
    causes = []
    for move in moves:
        (link,) = move.links
        cause = by_id[link.span_id.hex()]
        assert link.trace_id == cause.trace_id
        causes.append(cause)
        if cause.name == "basra.bot.move":
            assert cause.end_time_unix_nano <= move.start_time_unix_nano
        else:
            assert cause in calls
            assert cause.trace_id.hex() == TRACE_ID
    assert {c.name for c in causes} >= {
        "basra.bot.move",
        "basra.v1.BasraService/Play",
        "basra.v1.BasraService/CreateMatch",
    }

    # Below each move: its thinking (a play's), the engine's work and the commit's round trip.
    for move in moves:
        found = attributes(move.attributes)
        below = [s for s in spans if s.parent_span_id == move.span_id]
        assert all(s.trace_id == move.trace_id for s in below)
        names = sorted(s.name for s in below)
        if found["basra.bot.action"] == "play":
            assert {"basra.bot.think", "basra.engine.apply", "EVALSHA commit"} <= set(names), names
            (thinking,) = [s for s in below if s.name == "basra.bot.think"]
            think = attributes(thinking.attributes)
            assert think["basra.bot.level"] == found["basra.bot.level"]
            pool = "process_pool" if found["basra.bot.level"] == "strong" else "event_loop"
            assert think["basra.bot.thinking"] == pool
        else:
            assert "basra.bot.think" not in names
            assert {"basra.engine.deal", "EVALSHA commit"} <= set(names), names
    # The think-time histogram (the dashboard's "Bots: think time per move") counts each
    # thinking span once, by level.
    thinking_spans = [s for s in spans if s.name == "basra.bot.think"]
    for level, count in thought.items():
        assert count == sum(
            1 for s in thinking_spans if attributes(s.attributes)["basra.bot.level"] == level
        )
        assert count > 5, level

    # No secret anywhere: the person's seat token, the API key.
    for span in spans:
        for text in strings(span):
            for secret in (*caller.secrets, API_KEY):
                assert secret not in text, f"{span.name}: {text!r}"
    for line in buffer.getvalue().splitlines():
        for secret in (*caller.secrets, API_KEY):
            assert secret not in line


class FailingCommits(MemoryStore):
    """The embedded store, whose commits fail as when Redis is away."""

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        raise StoreUnavailableError("Redis did not answer")


def test_a_failed_bot_move_is_an_error_span_and_its_warning_names_it(
    start_traced: Callable[..., ServerThread], receiver: tuple[Receiver, int]
) -> None:
    server = start_traced(store=FailingCommits(ttl_s=60, events_maxlen=100), bot_pace_s=0)
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    caller = Caller(server, "grpc")
    try:
        # Bots only: the first bot moves at once, and its commit fails.
        greedy = game_pb2.BOT_LEVEL_GREEDY
        caller.call("CreateMatch", pb.CreateMatchRequest(bots=[greedy, greedy], seed=7))
        wait_until(lambda: "bot move failed" in buffer.getvalue(), 30, "the failed bot move")
    finally:
        logging.getLogger("basra").handlers.clear()
        caller.close()
    server.stop()  # exports every span still batched
    spans = receiver[0].spans()
    (move,) = [s for s in spans if s.name == "basra.bot.move"]
    found = attributes(move.attributes)
    assert move.status.code == trace_pb2.Status.STATUS_CODE_ERROR
    assert found["error.type"] == "StoreUnavailableError"
    assert "basra.bot.outcome" not in found
    (creation,) = [s for s in spans if s.name.endswith("/CreateMatch")]
    assert [link.span_id for link in move.links] == [creation.span_id]
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (warning,) = [line for line in lines if line["msg"] == "bot move failed"]
    assert warning["trace_id"] == move.trace_id.hex()
    assert warning["span_id"] == move.span_id.hex()
    assert "Redis did not answer" in warning["exc"]


def _count(histogram: Any, level: str) -> float:
    """The observations of a labelled histogram's child (its ``_count`` series)."""
    for metric in histogram.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count") and sample.labels.get("level") == level:
                return float(sample.value)
    return 0.0


def test_without_an_endpoint_there_is_no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert tracing.from_environment() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert tracing.from_environment() is None


@pytest.mark.parametrize(
    ("name", "setting"),
    [
        ("OTEL_TRACES_SAMPLER", "sometimes"),
        ("OTEL_TRACES_SAMPLER_ARG", "1.5"),
        ("OTEL_TRACES_SAMPLER_ARG", "half"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_TRACES_EXPORTER", "zipkin"),
    ],
)
def test_a_tracing_setting_the_service_cannot_honour_stops_it_from_starting(
    monkeypatch: pytest.MonkeyPatch, name: str, setting: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv(name, setting)
    with pytest.raises(ValueError, match=name):
        tracing.from_environment()


@pytest.fixture
def silent_collector() -> Iterator[int]:
    """A collector's port that takes connections and never answers (nor reads)."""
    held: list[socket.socket] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.05)
        stop = threading.Event()

        def hold() -> None:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    held.append(listener.accept()[0])

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        yield int(listener.getsockname()[1])
        stop.set()
        holder.join()
    for connection in held:
        connection.close()


def test_a_collector_that_never_answers_holds_the_stop_no_longer_than_its_bound(
    silent_collector: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spans still batched get a bounded time to go; past it the stop goes on without
    them, says so once, and the SDK's exit handler does not wait for them either."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{silent_collector}")
    traced = tracing.from_environment()
    assert traced is not None
    traced.tracer.start_span("unsent").end()
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        assert traced.shutdown(timeout_s=0.2) is False
    finally:
        logging.getLogger("basra").handlers.clear()
    (line,) = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert (line["level"], line["logger"]) == ("WARNING", "basra.tracing")
    assert "did not answer" in line["msg"]


def test_the_sdks_own_records_go_through_the_json_formatter() -> None:
    """The OTLP exporter's failures are JSON lines like every other, secrets redacted, rather
    than plain text on stderr."""
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    token = "C" * 43
    try:
        exporter = logging.getLogger("opentelemetry.exporter.otlp.proto.grpc.exporter")
        exporter.warning("Failed to export traces, headers authorization: Bearer %s", token)
        exporter.debug("not shown: the libraries' records are warnings and worse")
    finally:
        logging.getLogger("basra").handlers.clear()
        logging.getLogger("opentelemetry").handlers.clear()
    (line,) = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert line["logger"] == "opentelemetry.exporter.otlp.proto.grpc.exporter"
    assert line["level"] == "WARNING"
    assert token not in line["msg"]


def test_untraced_calls_log_no_trace(start_server: Callable[..., ServerThread]) -> None:
    server = start_server()
    assert server.server.tracing is None
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    try:
        stub = server.channel.unary_unary(
            f"/{SERVICE.full_name}/ListRules",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.ListRulesResponse.FromString,
        )
        stub(pb.ListRulesRequest(), metadata=(("traceparent", TRACEPARENT),), timeout=10)
    finally:
        logging.getLogger("basra").handlers.clear()
    # The server's other lines (its health checks) may land in the buffer too: the call's own.
    logged = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (line,) = [entry for entry in logged if entry.get("method") == "ListRules"]
    assert "trace_id" not in line
    assert "span_id" not in line


def test_a_call_without_a_traceparent_starts_a_trace_of_its_own(
    traced_server: ServerThread, receiver: tuple[Receiver, int]
) -> None:
    stub = traced_server.channel.unary_unary(
        f"/{SERVICE.full_name}/ListRules",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.ListRulesResponse.FromString,
    )
    stub(pb.ListRulesRequest(), metadata=(("baggage", "team=frontend"),), timeout=10)
    stub(pb.ListRulesRequest(), metadata=(("traceparent", TRACEPARENT),), timeout=10)
    traced_server.stop()  # exports every span still batched
    spans = [s for s in receiver[0].spans() if s.name.endswith("/ListRules")]
    own, continued = sorted(spans, key=lambda s: s.trace_id.hex() == TRACE_ID)
    assert own.trace_id.hex() != TRACE_ID
    assert not own.parent_span_id
    assert continued.trace_id.hex() == TRACE_ID
    assert continued.parent_span_id.hex() == PARENT_SPAN_ID


def texts(span: trace_pb2.Span) -> list[str]:
    """Every text a span carries where an error could be written: its status message, its
    attributes, and its events' names and attributes (an exception event's message included)."""
    return [span.status.message, *strings(span)]


def test_no_span_carries_the_text_of_an_engine_error(
    traced_server: ServerThread, receiver: tuple[Receiver, int]
) -> None:
    """A play of a card the seat does not hold: the engine refuses it with a message that
    quotes the seat's hand. The engine's span names the error by its type, and no span's
    status, attribute or event carries the message or the hand."""
    caller = Caller(traced_server, "grpc")
    try:
        created = caller.call("CreateMatch", pb.CreateMatchRequest(seed=11, rules="eram"))
        match_id = created.match_id
        tokens = {t.seat: t.token for t in created.seat_tokens}
        view = caller.call("GetMatch", pb.GetMatchRequest(match_id=match_id), tokens[0]).view
        seat = view.turn
        other = caller.call("GetMatch", pb.GetMatchRequest(match_id=match_id), tokens[1 - seat])
        foreign = other.view.hand[0]  # a card of the other seat's hand
        play = pb.PlayRequest(match_id=match_id, card=foreign, trail=True)
        with pytest.raises(grpc.RpcError) as refused:
            caller.call("Play", play, tokens[seat])
    finally:
        caller.close()
    traced_server.stop()  # exports every span still batched
    error = refused.value
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    message = error.details() or ""
    hand = message[message.index("(") + 1 : message.rindex(")")]
    assert "not in your hand" in message
    assert len(hand.split()) == 4  # the seat's four cards, quoted
    spans = receiver[0].spans()
    applies = [s for s in spans if s.name == "basra.engine.apply"]
    assert applies
    for apply in applies:
        assert attributes(apply.attributes)["error.type"] == "CardNotInHandError"
        assert apply.status.message in ("", "CardNotInHandError")
    for span in spans:
        for text in texts(span):
            assert "not in your hand" not in text, f"{span.name}: {text!r}"
            assert hand not in text, f"{span.name}: {text!r}"


def test_no_span_carries_the_text_of_a_store_error(
    traced_server: ServerThread, receiver: tuple[Receiver, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis fails a round trip with an error whose text quotes what was sent (as a reply may):
    the call answers UNAVAILABLE, its span and the round trip's are error spans named by the
    error's type, and no span's status, attribute or event carries the text."""
    caller = Caller(traced_server, "grpc")
    sent = f"sent GET basra:match:{uuid.uuid4()}"
    try:
        created = caller.call("CreateMatch", pb.CreateMatchRequest(seed=11, rules="eram"))
        instrumented = traced_server.server.store
        assert isinstance(instrumented, InstrumentedStore)
        store = instrumented.inner
        assert isinstance(store, RedisStore)

        async def refuse(*args: object, **options: object) -> object:
            raise redis_errors.ConnectionError(f"Error while reading from the socket: {sent}")

        for client in (store._redis, store._once):
            monkeypatch.setattr(client, "execute_command", refuse)
        with pytest.raises(grpc.RpcError) as refused:
            caller.call(
                "GetMatch",
                pb.GetMatchRequest(match_id=created.match_id),
                created.seat_tokens[0].token,
            )
        monkeypatch.undo()
    finally:
        caller.close()
    traced_server.stop()  # exports every span still batched
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    spans = receiver[0].spans()
    (call,) = [s for s in spans if s.name.endswith("/GetMatch")]
    assert call.status.code == trace_pb2.Status.STATUS_CODE_ERROR
    failed = [
        s
        for s in spans
        if s.kind == trace_pb2.Span.SPAN_KIND_CLIENT and s.parent_span_id == call.span_id
    ]
    assert failed
    for span in failed:
        assert span.status.code == trace_pb2.Status.STATUS_CODE_ERROR
        kind = attributes(span.attributes)["error.type"]
        assert kind.isidentifier()  # a type's name
        assert span.status.message in ("", kind)
    for span in spans:
        for text in texts(span):
            assert sent not in text, f"{span.name}: {text!r}"
            assert "reading from the socket" not in text, f"{span.name}: {text!r}"


def test_a_failed_bot_moves_spans_carry_no_text_of_its_error(
    start_traced: Callable[..., ServerThread], receiver: tuple[Receiver, int]
) -> None:
    """A bot's move whose commit fails: its span is an error named by the error's type, and no
    span's status, attribute or event carries the error's text."""
    server = start_traced(store=FailingCommits(ttl_s=60, events_maxlen=100), bot_pace_s=0)
    caller = Caller(server, "grpc")
    try:
        greedy = game_pb2.BOT_LEVEL_GREEDY
        caller.call("CreateMatch", pb.CreateMatchRequest(bots=[greedy, greedy], seed=7))
        wait_until(
            lambda: any(s.name == "basra.bot.move" for s in receiver[0].spans()),
            30,
            "the failed bot move's span, exported",
        )
    finally:
        caller.close()
    server.stop()  # exports every span still batched
    spans = receiver[0].spans()
    moves = [s for s in spans if s.name == "basra.bot.move"]
    assert moves
    for move in moves:
        assert move.status.code == trace_pb2.Status.STATUS_CODE_ERROR
        assert move.status.message in ("", "StoreUnavailableError")
    for span in spans:
        for text in texts(span):
            assert "Redis did not answer" not in text, f"{span.name}: {text!r}"
