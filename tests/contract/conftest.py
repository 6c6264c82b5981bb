"""Servers for the contract tests: each golden vector's own, with the settings it asks for."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.contract import golden
from tests.contract.golden import Json
from tests.support import ServerThread, free_port

ServeVector = Callable[[Json], ServerThread]


@pytest.fixture
def serve_vector(request: pytest.FixtureRequest) -> Iterator[ServeVector]:
    """Start a fresh server for a vector (on the session Redis when it needs Redis; for the
    "unreachable" store, on a free port where nothing listens); all stop after the test."""
    started: list[ServerThread] = []

    def start(vector: Json) -> ServerThread:
        server = vector["server"]
        needs_redis = server.get("store", "redis") == "redis"
        redis_url: str | None = request.getfixturevalue("redis_url") if needs_redis else None
        unreachable = f"redis://127.0.0.1:{free_port()}/0"
        thread = ServerThread(golden.settings_for(server, redis_url, unreachable))
        started.append(thread)
        return thread

    yield start
    for thread in started:
        thread.stop()
