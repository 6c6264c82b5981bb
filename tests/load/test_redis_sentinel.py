"""Redis Sentinel: the service finds the master through a real sentinel and plays on it."""

from __future__ import annotations

import asyncio
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
from basra.service.store.redis import RedisStore, parse_sentinel_url, sentinel_master
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


def test_a_rediss_sentinel_url_means_tls_to_the_sentinels_and_the_master() -> None:
    parsed = parse_sentinel_url(
        "rediss+sentinel://:p%40ss@s1:26380,[::1],s3/basra-master/2"
        "?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=required"
    )
    assert parsed.sentinels == (("s1", 26380), ("::1", 26379), ("s3", 26379))
    assert (parsed.master, parsed.db) == ("basra-master", 2)
    assert parsed.options == {
        "password": "p@ss",
        "ssl": True,
        "ssl_ca_certs": "/etc/ca.pem",
        "ssl_cert_reqs": "required",
    }
    plain = parse_sentinel_url("redis+sentinel://s1/basra-master")
    assert plain.options == {}
    with pytest.raises(ValueError, match="unknown sentinel URL options: ssl_ca_certs"):
        parse_sentinel_url("redis+sentinel://s1/basra-master?ssl_ca_certs=/etc/ca.pem")


def test_the_store_opens_tls_connections_to_sentinels_and_master() -> None:
    """Built from a rediss+sentinel URL (nothing is connected until a call), every client the
    store holds speaks TLS with the URL's CA; a real TLS sentinel is not run here."""
    from redis.asyncio import Redis
    from redis.asyncio.connection import SSLConnection
    from redis.asyncio.sentinel import SentinelManagedSSLConnection

    async def check() -> None:
        store = RedisStore(
            "rediss+sentinel://:pw@127.0.0.1:26379/basra-master?ssl_ca_certs=/etc/ca.pem",
            cluster=False,
            ttl_s=60,
            events_maxlen=10,
            timeout_s=1,
        )
        try:
            # The WatchMatch change feed makes its connections with this pool's connection class
            # and options too (service.store.redis_feed): TLS as well.
            for client in (store._redis,):
                assert isinstance(client, Redis)
                pool = client.connection_pool
                # (a subclass for calls: the store packs its commands with hiredis)
                assert issubclass(pool.connection_class, SentinelManagedSSLConnection)
                assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/ca.pem"
                assert pool.connection_kwargs["password"] == "pw"
            for sentinel in store._sentinels:
                for client in sentinel.sentinels:
                    pool = client.connection_pool
                    assert pool.connection_class is SSLConnection
                    assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/ca.pem"
        finally:
            await store.close()

    asyncio.run(check())
