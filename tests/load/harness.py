"""Server processes and scripted bot clients that fail over: for load and fault tests."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from basra.client.match import card_pb
from basra.engine import State
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from tests.bench.service_bench import Step, script
from tests.service.driver import engine_replay
from tests.support import basra_engine, free_port

RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


class ServerProcess:
    """``basra-engine serve`` in a process of its own, on a free port."""

    def __init__(self, redis_url: str, *extra: str) -> None:
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [
                basra_engine(),
                "serve",
                "--listen",
                self.target,
                "--redis-url",
                redis_url,
                "--allow-seeds",
                "--metrics-port",
                "off",
                "--http-listen",
                "off",
                "--store-timeout-seconds",
                "0.5",
                "--health-interval-seconds",
                "0.2",
                "--drain-seconds",
                "1",
                "--log-level",
                "ERROR",
                "--create-rate",
                "1000",
                "--create-burst",
                "1000",
                "--caller-create-rate",
                "1000",
                "--caller-create-burst",
                "1000",
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ},
        )
        with grpc.insecure_channel(self.target) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)

    def health(self) -> int:
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            return int(stub.Check(health_pb2.HealthCheckRequest(), timeout=2).status)

    def kill(self) -> None:
        """A crash: no drain, no goodbye."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@dataclass
class ScriptedMatch:
    """A match played from a script, each step with its own request_id (reused on retries)."""

    seed: int
    steps: list[Step] = field(init=False)
    match_id: str = ""
    tokens: dict[int, str] = field(default_factory=dict)
    done: int = 0
    retries: int = 0

    def __post_init__(self) -> None:
        self.steps = script(self.seed)


class FailoverClient:
    """Sends each call to a random server; on UNAVAILABLE or a deadline, the same request again
    (same request_id) to the next server, until ``patience_s`` runs out."""

    def __init__(self, targets: Sequence[str], rng: random.Random, patience_s: float = 30) -> None:
        self.channels = [grpc.insecure_channel(t) for t in targets]
        self.stubs = [basra_service_pb2_grpc.BasraServiceStub(c) for c in self.channels]
        self.rng = rng
        self.patience_s = patience_s

    def call(self, method: str, request: Any, metadata: Any, match: ScriptedMatch) -> Any:
        start = self.rng.randrange(len(self.stubs))
        give_up = time.monotonic() + self.patience_s
        attempt = 0
        while True:
            stub = self.stubs[(start + attempt) % len(self.stubs)]
            try:
                return getattr(stub, method)(request, metadata=metadata, timeout=2)
            except grpc.RpcError as error:
                if error.code() not in RETRYABLE or time.monotonic() > give_up:
                    raise
                attempt += 1
                match.retries += 1
                time.sleep(min(0.02 * 2**attempt, 0.5))

    def close(self) -> None:
        for channel in self.channels:
            channel.close()


def play(client: FailoverClient, match: ScriptedMatch) -> None:
    """Create the match and play its whole script through the failover client."""
    created = client.call(
        "Deal", pb.DealRequest(seed=match.seed, request_id=str(uuid.uuid4())), None, match
    )
    match.match_id = created.match_id
    match.tokens = {t.seat: t.token for t in created.seat_tokens}
    for step in match.steps:
        metadata = (("authorization", f"Bearer {match.tokens[step.seat]}"),)
        request_id = uuid.uuid4().hex
        if step.card is None:
            client.call(
                "Deal",
                pb.DealRequest(match_id=match.match_id, request_id=request_id),
                metadata,
                match,
            )
        else:
            client.call(
                "Play",
                pb.PlayRequest(
                    match_id=match.match_id,
                    card=card_pb(step.card),
                    plan_id=step.plan,
                    request_id=request_id,
                ),
                metadata,
                match,
            )
        match.done += 1


def run_load(
    targets: Sequence[str], seeds: Sequence[int], during: Callable[[list[ScriptedMatch]], None]
) -> list[ScriptedMatch]:
    """Play every seed's match concurrently (a thread each); ``during`` runs alongside."""
    matches = [ScriptedMatch(seed) for seed in seeds]
    errors: list[BaseException] = []

    def worker(index: int, match: ScriptedMatch) -> None:
        client = FailoverClient(targets, random.Random(index))
        try:
            play(client, match)
        except BaseException as error:  # reported by the test
            errors.append(error)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i, m)) for i, m in enumerate(matches)]
    for thread in threads:
        thread.start()
    during(matches)
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    assert all(not t.is_alive() for t in threads), "a bot client stalled"
    return matches


def final_state(match: ScriptedMatch) -> State:
    """The state the script ends in, by the engine alone."""
    plays = [(step.seat, step.card, step.plan) for step in match.steps if step.card is not None]
    return engine_replay(match.seed, plays)
