"""Redis Sentinel: the service finds the master through a real sentinel and plays on it."""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from basra.client.match import MatchClient
from basra.service.config import Settings
from basra.service.store import keys
from basra.service.store.redis import sentinel_master
from tests.service.driver import engine_replay, play_match, stored_state
from tests.support import REDIS_SERVER, RedisProcess, ServerThread, free_port


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[tuple[RedisProcess, int]]:
    """A master and one sentinel monitoring it as "basra-master": (master, sentinel port)."""
    master = RedisProcess(tmp_path / "master")
    master.start()
    port = free_port()
    config = tmp_path / "sentinel.conf"
    config.write_text(
        f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\n"
        f"sentinel monitor basra-master 127.0.0.1 {master.port} 1\n"
    )
    assert REDIS_SERVER
    process = subprocess.Popen(
        [REDIS_SERVER, str(config), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    probe = redis.Redis(port=port, socket_timeout=2)
    while True:
        try:
            if probe.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "basra-master"):  # type: ignore[no-untyped-call]
                break
        except redis.ConnectionError:
            pass
        assert time.monotonic() < deadline, "the sentinel did not start"
        time.sleep(0.1)
    yield master, port
    process.terminate()
    process.wait(timeout=10)
    master.stop()


def test_a_match_plays_through_a_sentinel_url(sentinel: tuple[RedisProcess, int]) -> None:
    master, port = sentinel
    server = ServerThread(
        Settings(
            redis_url=f"redis+sentinel://127.0.0.1:{port}/basra-master",
            allow_seeds=True,
            metrics_port=None,
        )
    )
    try:
        client, _ = MatchClient.create(server.channel, seed=5)
        played = play_match(client, random.Random(5))
    finally:
        server.stop()
    store = master.client()
    assert store.exists(keys.match_key(client.match_id))
    assert stored_state(store, client.match_id)[1] == engine_replay(5, played.plays)


@pytest.mark.parametrize(
    "url", ["redis+sentinel://127.0.0.1:26379", "redis+sentinel:///basra-master"]
)
def test_a_sentinel_url_must_name_sentinels_and_a_master(url: str) -> None:
    with pytest.raises(ValueError, match="names sentinels and a master"):
        sentinel_master(url, {})


def test_sentinel_needs_the_redis_server_binary() -> None:
    assert shutil.which("redis-server") == REDIS_SERVER
