"""Redis Sentinel: the service finds the master through a real sentinel and plays on it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError
from redis.backoff import NoBackoff

from basra.client.match import MatchClient, Rejection
from basra.service import logs
from basra.service.config import Settings
from basra.service.store import keys
from basra.service.store.redis import (
    RedisStore,
    _connection_failure,
    parse_sentinel_url,
    sentinel_master,
)
from tests.service.conftest import rpc_error
from tests.service.driver import engine_replay, play_match, stored_state
from tests.support import REDIS_SERVER, RedisProcess, ServerThread, free_port, wait_until


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
    said = "a sentinel URL names sentinels and a master: redis+sentinel://host:26379/<master name>"
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        sentinel_master(url, {})


def test_sentinel_hosts_with_and_without_ports_and_every_unknown_option_named() -> None:
    parsed = parse_sentinel_url("redis+sentinel://[::1]:26381,[fe80::2],s3:26390,s4/m")
    assert parsed.sentinels == (("::1", 26381), ("fe80::2", 26379), ("s3", 26390), ("s4", 26379))
    with pytest.raises(ValueError, match=r"^unknown sentinel URL options: a, b$"):
        parse_sentinel_url("redis+sentinel://s1/m?b=1&a=2")


def test_the_master_gets_the_urls_db_and_the_options_and_the_sentinels_not_the_pool() -> None:
    options = {"max_connections": 7, "socket_connect_timeout": 1.5, "socket_timeout": None}
    master, sentinel = sentinel_master("redis+sentinel://s1:26380/basra-master/2", options)
    pool = master.connection_pool
    assert (pool.connection_kwargs["db"], pool.max_connections) == (2, 7)
    assert pool.connection_kwargs["socket_connect_timeout"] == 1.5
    assert pool.connection_kwargs["socket_timeout"] is None  # the store's call deadline bounds it
    (client,) = sentinel.sentinels
    assert client.connection_pool.connection_kwargs["socket_connect_timeout"] == 1.5
    # A sentinel that stops answering must not hold the master's discovery.
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 1.5
    assert client.connection_pool.max_connections != 7  # nothing connected: nothing to close


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
    store holds speaks TLS with the URL's CA (a real TLS sentinel: the tests below)."""
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
            for client in (store._redis, store._once):
                assert isinstance(client, Redis)
                pool = client.connection_pool
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


# -- TLS: a TLS-only master and a TLS-only sentinel, certificates made at test time ----------------

OPENSSL = shutil.which("openssl")


def make_ca(directory: Path, name: str) -> tuple[Path, Path, Path]:
    """A certificate authority and a server certificate it signed for 127.0.0.1 (openssl CLI):
    (CA certificate, server certificate, server key)."""
    assert OPENSSL, "the openssl command line tool is required (Debian package openssl)"
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key = directory / "ca.key", directory / "ca.pem", directory / "server.key"
    csr, cert, ext = directory / "server.csr", directory / "server.pem", directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def openssl(*args: str | Path) -> None:
        assert OPENSSL
        subprocess.run([OPENSSL, *args], check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
            "-days", "2", "-subj", f"/CN={name}")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
            "-out", cert, "-days", "2", "-extfile", ext)  # fmt: skip
    return ca, cert, key


def tls_args(ca: Path, cert: Path, key: Path) -> list[str]:
    return [
        "--tls-cert-file", str(cert),
        "--tls-key-file", str(key),
        "--tls-ca-cert-file", str(ca),
        "--tls-auth-clients", "no",
    ]  # fmt: skip


def tls_client(port: int, ca: Path) -> redis.Redis:
    return redis.Redis(port=port, ssl=True, ssl_ca_certs=str(ca), socket_timeout=2)


def answers(client: redis.Redis, *command: str) -> bool:
    try:
        return bool(client.execute_command(*command))  # type: ignore[no-untyped-call]
    except redis.ConnectionError:
        return False


@pytest.fixture
def tls_sentinel(tmp_path: Path) -> Iterator[tuple[int, int, Path]]:
    """A master and a sentinel monitoring it as "basra-master", both TLS only (no plain-text
    port): (master port, sentinel port, the CA certificate that signed both)."""
    assert REDIS_SERVER
    ca, cert, key = make_ca(tmp_path / "pki", "basra-test-ca")
    master_port, sentinel_port = free_port(), free_port()
    master = [REDIS_SERVER, "--port", "0", "--tls-port", str(master_port), "--bind", "127.0.0.1",
              "--save", "", "--dir", str(tmp_path), *tls_args(ca, cert, key)]  # fmt: skip
    processes = [subprocess.Popen(master, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_until(lambda: answers(tls_client(master_port, ca), "PING"), what="the TLS master")
        config = tmp_path / "sentinel.conf"
        config.write_text(
            f"port 0\ntls-port {sentinel_port}\nbind 127.0.0.1\ndir {tmp_path}\n"
            f"tls-cert-file {cert}\ntls-key-file {key}\ntls-ca-cert-file {ca}\n"
            "tls-auth-clients no\ntls-replication yes\n"
            f"sentinel monitor basra-master 127.0.0.1 {master_port} 1\n"
        )
        processes.append(
            subprocess.Popen(
                [REDIS_SERVER, str(config), "--sentinel"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        probe = tls_client(sentinel_port, ca)
        wait_until(
            lambda: answers(probe, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "basra-master"),
            what="the TLS sentinel",
        )
        yield master_port, sentinel_port, ca
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)


def test_a_match_plays_through_a_tls_sentinel_to_a_tls_master(
    tls_sentinel: tuple[int, int, Path],
) -> None:
    """Neither Redis has a plain-text port, so a match that plays went over TLS both ways."""
    master_port, sentinel_port, ca = tls_sentinel
    for port in (master_port, sentinel_port):
        assert not answers(redis.Redis(port=port, socket_timeout=2), "PING")  # TLS only
    server = ServerThread(
        Settings(
            redis_url=f"rediss+sentinel://127.0.0.1:{sentinel_port}/basra-master?ssl_ca_certs={ca}",
            allow_seeds=True,
            metrics_port=None,
        )
    )
    try:
        client, _ = MatchClient.create(server.channel, seed=5)
        played = play_match(client, random.Random(5), stop=lambda v: v.version >= 20)
        # WatchMatch's reader subscribes over TLS as well.
        events = client.watch(0, 0, timeout=10)
        assert [next(events).version for _ in range(3)] == [1, 2, 3]
    finally:
        server.stop()
    master = tls_client(master_port, ca)
    assert master.exists(keys.match_key(client.match_id))
    assert stored_state(master, client.match_id)[1] == engine_replay(5, played.plays)


def test_a_tls_sentinel_with_the_wrong_ca_is_refused_with_a_clear_error(
    tls_sentinel: tuple[int, int, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, sentinel_port, _ = tls_sentinel
    other_ca, _, _ = make_ca(tmp_path / "other-pki", "some-other-ca")
    server = ServerThread(
        Settings(
            redis_url=(
                f"rediss+sentinel://127.0.0.1:{sentinel_port}/basra-master?ssl_ca_certs={other_ca}"
            ),
            allow_seeds=True,
            metrics_port=None,
        )
    )
    try:
        with caplog.at_level(logging.WARNING, logger="basra"):
            error = rpc_error(lambda: MatchClient.create(server.channel, seed=5))
            wait_until(
                lambda: any(r.name == "basra.server" for r in caplog.records),
                what="the health check's verdict",
            )
        rejection = Rejection.of(error)
        assert (rejection.code, rejection.reason) == (
            grpc.StatusCode.UNAVAILABLE,
            "STORE_UNAVAILABLE",
        )
        # What an operator reads: the call's warning and the health check's error say why, in
        # the part of the field the JSON log keeps.
        logged = {r.name: str(logs.clip(getattr(r, "cause", ""))) for r in caplog.records}
        for logger in ("basra.rpc", "basra.server"):
            said = logged[logger]
            assert f"sentinel 127.0.0.1:{sentinel_port}: TLS certificate not trusted" in said
        # Whole, it gives OpenSSL's verdict in words only (not its source file and line).
        for record in caplog.records:
            if record.name in ("basra.rpc", "basra.server"):
                cause = str(getattr(record, "cause", ""))
                assert re.search(r"TLS certificate not trusted \([a-z -]+\): check ssl_ca", cause)
    finally:
        server.stop()


def test_an_untrusted_certificate_is_named_wherever_it_is_in_the_chain_of_causes() -> None:
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate"
    said = "TLS certificate not trusted (self-signed certificate): check ssl_ca_certs"
    caused = redis.ConnectionError("Error connecting to 127.0.0.1:26379")
    caused.__cause__ = untrusted
    assert _connection_failure(caused) == said
    in_context = OSError("the handshake failed")
    in_context.__context__ = untrusted
    assert _connection_failure(in_context) == said
    assert _connection_failure(redis.ConnectionError("Connection refused")) == "Connection refused"


def test_an_untrusted_certificate_named_only_in_the_text_is_named_in_words() -> None:
    # redis-py does not always chain the ssl error: OpenSSL's verdict is then read from the
    # text, without its source file and line.
    unchained = redis.ConnectionError(
        "Error 1 connecting to 127.0.0.1:26379. [SSL: CERTIFICATE_VERIFY_FAILED] certificate "
        "verify failed: unable to get local issuer certificate (_ssl.c:1006)."
    )
    assert _connection_failure(unchained) == (
        "TLS certificate not trusted (unable to get local issuer certificate): check ssl_ca_certs"
    )


def test_no_master_found_says_why_each_sentinel_failed_one_by_one() -> None:
    # Two sentinels that nothing listens on (their ports held, bound but not listening, so
    # that no other server takes them meanwhile): the error names each, and then the master.
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(2)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        ports = [int(sock.getsockname()[1]) for sock in sockets]
        parts = _no_master_found(ports)
    assert len(parts) == 3, parts
    for port, part in zip(ports, parts, strict=False):
        assert part.startswith(f"sentinel 127.0.0.1:{port}: "), part
        assert f"Error 111 connecting to 127.0.0.1:{port}." in part, part  # ECONNREFUSED
    assert parts[2] == "no master 'basra-master' found"


def _no_master_found(ports: list[int]) -> list[str]:
    """The parts of the error discover_master raises with sentinels on ``ports``."""
    url = f"redis+sentinel://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}/basra-master"

    async def discover() -> str:
        # No retries: each refusal is final.
        options = {"socket_connect_timeout": 2, "retry": Retry(NoBackoff(), 0)}
        master, sentinel = sentinel_master(url, options)
        try:
            with pytest.raises(MasterNotFoundError) as refused:
                await sentinel.discover_master("basra-master")
            return str(refused.value)
        finally:
            await master.aclose()
            for client in sentinel.sentinels:
                await client.aclose()

    return asyncio.run(discover()).split("; ")


def test_a_creation_refused_readonly_after_a_failover_goes_through_on_the_new_master(
    sentinel: tuple[RedisProcess, int], tmp_path: Path
) -> None:
    """The failover is complete (the old master is a replica of the new one, and the sentinel
    names the new one) while the store still holds a connection to the old master: the
    creation sent there is refused READONLY (it ran nothing), and is sent again on a new
    connection, which the sentinel points at the new master, where it is created."""
    from tests.service.test_store_contract import new

    old, port = sentinel
    promoted = RedisProcess(tmp_path / "promoted")
    promoted.start()

    async def scenario() -> None:
        store = RedisStore(
            f"redis+sentinel://127.0.0.1:{port}/basra-master",
            cluster=False,
            ttl_s=60,
            events_maxlen=10,
            timeout_s=5,
        )
        try:
            assert await store.create(new("O" * 22))  # a pooled connection to the old master
            with promoted.client() as direct:
                direct.replicaof("NO", "ONE")
            with old.client() as direct:
                direct.replicaof("127.0.0.1", promoted.port)
            with redis.Redis(port=port) as watcher:
                watcher.execute_command("SENTINEL", "REMOVE", "basra-master")
                watcher.execute_command(
                    "SENTINEL", "MONITOR", "basra-master", "127.0.0.1", promoted.port, 1
                )
            assert await store.create(new())
            with old.client() as direct:
                assert direct.info("errorstats")["errorstat_READONLY"]["count"] >= 1
            with promoted.client() as direct:
                assert direct.exists(keys.match_key("M" * 22))
        finally:
            await store.close()

    try:
        asyncio.run(scenario())
    finally:
        promoted.stop()
