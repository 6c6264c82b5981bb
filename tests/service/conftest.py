"""Servers for the service tests: in-process, port 0, on Redis (or the embedded store)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection
from basra.service import ratelimit
from basra.service.config import Settings
from basra.service.errors import DOMAIN
from basra.service.store import Store
from tests.service.driver import snapshot
from tests.support import ServerThread

BASE = Settings(
    allow_seeds=True,
    metrics_port=None,
    health_interval_s=0.2,
    watch_poll_s=0.5,
    bot_pace_s=0,
    # A store call may take seconds on a loaded machine (the suite beside another, say): past
    # the shipped 2 s it would fail UNAVAILABLE, which no test here asks for unless it sets a
    # deadline of its own (the outage tests do).
    store_timeout_s=30.0,
)


@pytest.fixture
def start_server() -> Iterator[Callable[..., ServerThread]]:
    """Start servers with settings overrides (on ``on_store`` when given, listening on ``listen``);
    all are stopped after the test."""
    started: list[ServerThread] = []

    def start(
        *, on_store: Store | None = None, listen: str = "127.0.0.1:0", **overrides: object
    ) -> ServerThread:
        from dataclasses import replace

        settings = replace(BASE, **overrides)  # type: ignore[arg-type]
        server = ServerThread(settings, listen=listen, store=on_store)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


class HeldClock:
    """The rate limits' clock, held still: time passes for them only when a test moves it."""

    def __init__(self) -> None:
        self.at = 1000.0

    def __call__(self) -> float:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += seconds


@pytest.fixture
def held_clock(monkeypatch: pytest.MonkeyPatch) -> HeldClock:
    """Every rate-limit bucket (the servers' too) reads this clock for the test's duration."""
    clock = HeldClock()
    monkeypatch.setattr(ratelimit, "now", clock)
    return clock


@pytest.fixture
def server(start_server: Callable[..., ServerThread], redis_url: str) -> ServerThread:
    """A server on the session's Redis."""
    return start_server(redis_url=redis_url)


@pytest.fixture(params=["redis", "embedded"])
def any_server(
    request: pytest.FixtureRequest, start_server: Callable[..., ServerThread]
) -> ServerThread:
    """A server on Redis, then on the embedded store."""
    if request.param == "redis":
        return start_server(redis_url=request.getfixturevalue("redis_url"))
    return start_server()


def new_match(server: ServerThread, seed: int = 7) -> MatchClient:
    client, _ = MatchClient.create(server.channel, seed=seed)
    return client


def rpc_error(call: Callable[[], object]) -> grpc.RpcError:
    """The error a call fails with (the test fails if it succeeds)."""
    try:
        call()
    except grpc.RpcError as error:
        return error
    raise AssertionError("the call was expected to fail")


def rejected(
    store: redis.Redis,
    client: MatchClient,
    call: Callable[[], object],
    code: grpc.StatusCode,
    reason: str,
) -> Rejection:
    """Make the call, expect the rejection, and prove the stored match did not change (malformed
    input must also name its field)."""
    before = snapshot(store, client.match_id)
    rejection = Rejection.of(rpc_error(call))
    assert (rejection.code, rejection.reason) == (code, reason), rejection
    assert rejection.domain == DOMAIN
    assert snapshot(store, client.match_id) == before, "a rejected call changed the match"
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        assert rejection.field_violations, "malformed input names its field"
        assert rejection.metadata["field"] in rejection.field_violations
    return rejection
