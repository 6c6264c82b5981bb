"""Many matches on two server processes sharing one Redis, with crashes and a Redis restart:
every match ends, and every move is applied exactly once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from grpc_health.v1 import health_pb2

from tests.load.harness import ScriptedMatch, ServerProcess, final_state, run_load
from tests.service.driver import audit_replay, stored_state
from tests.support import RedisProcess, wait_until

MATCHES = 16


@pytest.fixture
def servers(aof_redis: RedisProcess) -> Iterator[list[ServerProcess]]:
    running = [ServerProcess(aof_redis.url), ServerProcess(aof_redis.url)]
    yield running
    for server in running:
        server.stop()


def check_exactly_once(store: redis.Redis, matches: list[ScriptedMatch]) -> None:
    """Each match holds the engine's result of its script, and its audit log has one entry per
    step: nothing lost, nothing applied twice."""
    for match in matches:
        assert match.done == len(match.steps)
        version, state = stored_state(store, match.match_id)
        assert state == final_state(match)
        assert state.winner is not None
        assert version == 1 + len(match.steps)
        assert audit_replay(store, match.match_id) == (version, state)


def progress(matches: list[ScriptedMatch]) -> float:
    return sum(m.done for m in matches) / sum(len(m.steps) for m in matches)


def test_many_matches_spread_over_two_servers_all_end_exactly_once(
    servers: list[ServerProcess], aof_redis: RedisProcess
) -> None:
    matches = run_load([s.target for s in servers], range(MATCHES), lambda _: None)
    check_exactly_once(aof_redis.client(), matches)


def test_a_server_killed_mid_load_loses_and_doubles_nothing(
    servers: list[ServerProcess], aof_redis: RedisProcess
) -> None:
    def crash(matches: list[ScriptedMatch]) -> None:
        wait_until(lambda: progress(matches) > 0.3, 60, "a third of the plays")
        servers[0].kill()

    matches = run_load([s.target for s in servers], range(100, 100 + MATCHES), crash)
    assert sum(m.retries for m in matches) > 0, "clients had to fail over"
    check_exactly_once(aof_redis.client(), matches)


def test_redis_restarted_with_aof_mid_load_matches_resume(
    servers: list[ServerProcess], aof_redis: RedisProcess
) -> None:
    observed: dict[str, bool] = {}

    def restart(matches: list[ScriptedMatch]) -> None:
        wait_until(lambda: progress(matches) > 0.3, 60, "a third of the plays")
        aof_redis.stop()
        wait_until(lambda: servers[1].health() == health_pb2.HealthCheckResponse.NOT_SERVING, 10)
        observed["not serving while down"] = True
        # Keep Redis down until the load has met the outage (a client had to retry).
        retried = sum(m.retries for m in matches)
        wait_until(lambda: sum(m.retries for m in matches) > retried, 30)
        aof_redis.start()
        wait_until(lambda: servers[1].health() == health_pb2.HealthCheckResponse.SERVING, 10)
        observed["serving again without a restart"] = True

    matches = run_load([s.target for s in servers], range(200, 200 + MATCHES), restart)
    assert observed == {"not serving while down": True, "serving again without a restart": True}
    assert sum(m.retries for m in matches) > 0
    check_exactly_once(aof_redis.client(), matches)
