"""The Redis store's pipelined client (service.store.resp) on a real redis-server: its deadline,
connection faults, lost replies, cancellation, error replies, bounds, TLS and URL options.

A ``Proxy`` between the client and Redis stands in for the network: it can hold Redis's replies
(a Redis that stopped answering) or cut the connection right after a command went through (a
reply lost on the way back).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from basra.service.store import StoreFullError, StoreUnavailableError, keys
from basra.service.store.redis import RedisStore
from basra.service.store.resp import NoScriptError, PipelinedClient
from tests.service.test_store_contract import commit, new, until
from tests.support import RedisProcess, free_port

MATCH = "M" * 22


class Proxy:
    """A TCP proxy to Redis on a free loopback port, in the test's event loop."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.holding = False
        """Replies are kept back (Redis seems not to answer)."""
        self.cut_after: bytes | None = None
        """Once a command holding these bytes reached Redis, the next reply from Redis is
        dropped and both connections are cut."""
        self.cut_every_time = False
        """Cut each time such a command reaches Redis, not only the first."""
        self.garble_next = False
        """The next reply from Redis reaches the client as bytes that are not RESP."""
        self.cuts = 0
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        redis_r, redis_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers += [client_w, redis_w]
        cut = asyncio.Event()

        async def upstream() -> None:
            while data := await client_r.read(65536):
                if self.cut_after is not None and self.cut_after in data:
                    if not self.cut_every_time:
                        self.cut_after = None
                    cut.set()
                redis_w.write(data)
                await redis_w.drain()

        async def downstream() -> None:
            while data := await redis_r.read(65536):
                if cut.is_set():  # the reply of the command that went through: lost
                    self.cuts += 1
                    break
                while self.holding:
                    await asyncio.sleep(0.01)
                if self.garble_next:
                    self.garble_next = False
                    data = b"@not RESP\r\n"
                client_w.write(data)
                await client_w.drain()

        tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the test is over
        finally:
            for task in tasks:
                task.cancel()
            for writer in (client_w, redis_w):
                writer.close()

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()


def in_loop(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())  # type: ignore[arg-type]


def store_at(url: str, timeout_s: float = 2, pool_size: int = 4) -> RedisStore:
    return RedisStore(
        url, cluster=False, ttl_s=3600, events_maxlen=50, timeout_s=timeout_s, pool_size=pool_size
    )


async def cannot_connect(url: str) -> None:
    """A store at ``url`` fails its first call: it cannot connect (a wrong password, TLS)."""
    store = store_at(url)
    try:
        with pytest.raises(StoreUnavailableError, match="cannot connect"):
            await store.load(MATCH)
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def proxied(
    redis_url: str, timeout_s: float = 2, pool_size: int = 4
) -> AsyncIterator[tuple[Proxy, RedisStore]]:
    """A Proxy to the Redis at ``redis_url`` and a store that reaches Redis through it; both
    closed at the end (the proxy answering again first)."""
    proxy = Proxy(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    await proxy.start()
    store = store_at(proxy.url, timeout_s=timeout_s, pool_size=pool_size)
    try:
        yield proxy, store
    finally:
        proxy.holding = False
        await store.close()
        await proxy.close()


def client_of(store: RedisStore) -> PipelinedClient:
    assert store._pipes is not None, "standalone Redis uses the pipelined client"
    return store._pipes


def test_many_commands_at_once_share_the_bounded_connections_and_each_gets_its_reply(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        store = store_at(redis_url, pool_size=2)
        pipes = client_of(store)
        try:
            await asyncio.gather(*(pipes.execute("SET", f"k{n}", n) for n in range(300)))
            got = await asyncio.gather(*(pipes.execute("GET", f"k{n}") for n in range(300)))
            assert got == [str(n).encode() for n in range(300)]
            assert pipes.connections <= 2
        finally:
            await store.close()

    in_loop(scenario)


def test_commands_sent_together_go_on_one_connection_in_order(redis_url: str) -> None:
    """execute_together (the commit script and the watch key's PEXPIRE): one connection, in
    order, even while other commands spread over the connections."""

    async def scenario() -> None:
        store = store_at(redis_url, pool_size=4)
        pipes = client_of(store)
        try:
            for n in range(20):
                others = [pipes.execute("CLIENT", "ID") for _ in range(20 + n)]
                together = pipes.execute_together(
                    ("CLIENT", "ID"), ("SET", "t", n), ("GET", "t"), ("CLIENT", "ID")
                )
                first, _, got, last = await asyncio.gather(*together)
                await asyncio.gather(*others)
                assert first == last
                assert got == str(n).encode()
            assert pipes.connections > 1
        finally:
            await store.close()

    in_loop(scenario)


def test_a_redis_that_stops_answering_fails_the_call_at_its_deadline(redis_url: str) -> None:
    async def scenario() -> None:
        async with proxied(redis_url, timeout_s=0.3) as (proxy, store):
            await store.create(new())
            proxy.holding = True
            with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.3 s"):
                await store.load(MATCH)
            proxy.holding = False
            # The stalled connection was closed; the next call gets a new one.
            assert (await store.load(MATCH)) == new().record

    in_loop(scenario)


def test_a_call_sent_again_after_another_calls_deadline_still_fails_at_its_own(
    redis_url: str,
) -> None:
    """Two calls on one connection to a Redis that stopped answering, the second sent later:
    at the first's deadline that connection is closed and the second, not yet due, is sent
    again on a new connection (its handshake unanswered too); it still fails at its own
    deadline instead of waiting for as long as Redis stays silent."""

    async def scenario() -> None:
        async with proxied(redis_url, timeout_s=0.3) as (proxy, store):
            await store.create(new())
            proxy.holding = True
            first = asyncio.ensure_future(store.load(MATCH))
            await asyncio.sleep(0.1)
            second = asyncio.ensure_future(store.load(MATCH))
            for call in (first, second):  # (wait_for: a guard against a hang, not a measure)
                with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.3 s"):
                    await asyncio.wait_for(call, 5)
            assert proxy.accepted == 2
            proxy.holding = False
            assert (await store.load(MATCH)) == new().record

    in_loop(scenario)


def test_calls_on_a_connection_whose_handshake_goes_unanswered_fail_each_at_its_deadline(
    redis_url: str,
) -> None:
    """The first calls of a store open a connection whose handshake Redis leaves unanswered:
    at the first call's deadline the connection attempt is given up and the later call, not
    yet due, is sent again on a new one; it fails at its own deadline (not when the given-up
    attempt's own time runs out, "cannot connect"), and once Redis answers again the next
    call gets a connection of its own."""

    async def scenario() -> None:
        async with proxied(redis_url, timeout_s=0.3) as (proxy, store):
            proxy.holding = True
            first = asyncio.ensure_future(store.load(MATCH))
            await asyncio.sleep(0.1)
            second = asyncio.ensure_future(store.load(MATCH))
            for call in (first, second):  # each at its deadline, not at the attempt's end
                with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.3 s"):
                    await asyncio.wait_for(call, 5)
            proxy.holding = False
            assert (await store.load(MATCH)) is None

    in_loop(scenario)


def test_a_call_whose_connection_is_lost_every_time_is_sent_twice_more_then_unavailable(
    redis_url: str,
) -> None:
    """A command whose connection is cut each time it reaches Redis is sent again on a new
    connection twice (RESENDS), then fails as unavailable, the loss named."""

    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            proxy.cut_after, proxy.cut_every_time = b"GET", True
            with pytest.raises(StoreUnavailableError, match=r"^the connection to Redis was lost$"):
                await store.load(MATCH)
            assert proxy.cuts == 3

    in_loop(scenario)


def test_a_redis_that_accepts_but_never_answers_the_handshake_fails_at_the_deadline() -> None:
    async def scenario() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(writer)
            await reader.read()  # never answers

        port = free_port()
        server = await asyncio.start_server(silent, "127.0.0.1", port)
        store = store_at(f"redis://127.0.0.1:{port}/0", timeout_s=0.3)
        try:
            with pytest.raises(StoreUnavailableError):
                await store.load(MATCH)
        finally:
            await store.close()
            server.close()
            for writer in accepted:
                writer.close()
            await server.wait_closed()

    in_loop(scenario)


def test_a_commit_whose_reply_was_lost_is_sent_again_and_applied_once(redis_url: str) -> None:
    """The reply to an applied commit is lost with its connection: the client sends the commit
    again on a new connection, and the script's version check answers the record it wrote (a
    lost race to the caller, who decides again on it) instead of applying it twice."""

    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            await store.create(new("O" * 22))
            assert await store.commit("O" * 22, commit(1))  # Redis holds the script now
            proxy.cut_after = b"EVALSHA"
            applied, current = await store.commit_or_current(MATCH, commit(1, request=b"r"))
            assert proxy.cuts == 1
            assert not applied
            assert current is not None
            assert (current.version, current.state) == (2, b"state-2")
            assert current.requests == (b"r", b"")
            page = await store.events(MATCH, 0)
            assert [e.version for e in page.entries] == [1, 2]  # one entry for version 2

    in_loop(scenario)


def test_a_call_on_a_connection_from_before_a_redis_restart_is_answered(
    aof_redis: RedisProcess,
) -> None:
    async def scenario() -> None:
        store = store_at(aof_redis.url)
        try:
            await store.create(new())
            await asyncio.to_thread(aof_redis.stop)
            with pytest.raises(StoreUnavailableError):
                await store.load(MATCH)
            await asyncio.to_thread(aof_redis.start)
            assert await store.load(MATCH) == new().record
            # Redis forgot the scripts: the commit sends its source once, then runs by SHA.
            assert await store.commit(MATCH, commit(1))
            assert await store.commit(MATCH, commit(2))
        finally:
            await store.close()

    in_loop(scenario)


def test_a_script_redis_no_longer_holds_is_sent_again_with_its_source(redis_url: str) -> None:
    async def scenario() -> None:
        store = store_at(redis_url)
        try:
            await store.create(new())
            redis.Redis.from_url(redis_url).script_flush()
            assert await store.commit(MATCH, commit(1))
            with pytest.raises(NoScriptError):
                await client_of(store).execute("EVALSHA", "0" * 40, 0)
        finally:
            await store.close()

    in_loop(scenario)


def test_a_cancelled_call_is_cancelled_and_its_late_reply_does_not_answer_the_next(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        async with proxied(redis_url, pool_size=1) as (proxy, store):
            await store.create(new())
            proxy.holding = True
            call = asyncio.create_task(store.load(MATCH))
            await asyncio.sleep(0.05)  # written, its reply held back
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            proxy.holding = False
            assert await store.load("X" * 22) is None  # not the cancelled call's reply
            assert await store.load(MATCH) == new().record
            assert proxy.accepted == 1  # the same connection, still in step

    in_loop(scenario)


def test_an_unreachable_redis_fails_every_call_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = store_at(RedisProcess(tmp_path / "never").url, timeout_s=30)
        try:
            results = await asyncio.gather(
                *(store.load(MATCH) for _ in range(10)), return_exceptions=True
            )
            assert all(isinstance(r, StoreUnavailableError) for r in results), results
            assert all(
                str(r).startswith("cannot connect to Redis: ConnectionError: ") for r in results
            ), results
        finally:
            await store.close()

    in_loop(scenario)


def test_an_error_reply_is_a_redis_error_and_out_of_memory_is_store_full(
    tmp_path: Path,
) -> None:
    process = RedisProcess(
        tmp_path / "r", args=("--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
    )
    process.start()

    async def scenario() -> None:
        store = store_at(process.url)
        pipes = client_of(store)
        try:
            await pipes.execute("SET", "s", "x")
            with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
                await pipes.execute("LPUSH", "s", "x")

            async def fill() -> None:
                for n in range(1000):
                    await pipes.execute("SET", f"f{n}", b"x" * 10_000)

            with pytest.raises(StoreFullError):
                await fill()
            with pytest.raises(StoreFullError):
                await store.create(new())
            assert await store.load(MATCH) is None  # reads still answer
        finally:
            await store.close()

    try:
        in_loop(scenario)
    finally:
        process.stop()


def test_password_username_and_database_come_from_the_url(own_redis: RedisProcess) -> None:
    process = own_redis
    process.start()
    setup = process.client()
    setup.acl_setuser(
        "alice", enabled=True, passwords=["+secret"], keys=["*"], channels=["*"], commands=["+@all"]
    )
    setup.config_set("requirepass", "pw")
    direct = redis.Redis(port=process.port, password="pw", db=3)
    for url in (
        f"redis://:pw@127.0.0.1:{process.port}/3",
        f"redis://alice:secret@127.0.0.1:{process.port}/3",
    ):
        direct.flushall()

        async def scenario(url: str = url) -> None:
            store = store_at(url)
            try:
                await store.create(new())
                assert await store.commit(MATCH, commit(1))
            finally:
                await store.close()

        in_loop(scenario)
        assert direct.exists(keys.match_key(MATCH))
    in_loop(lambda: cannot_connect(f"redis://:nope@127.0.0.1:{process.port}/0"))


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[RedisProcess, int, Path]]:
    """A redis-server with a TLS port, its certificate from a CA made here: (it, the TLS port,
    the CA's certificate)."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl makes the test certificates"

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=tmp_path)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", "/CN=basra test CA")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")  # fmt: skip
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "1", "-extfile", "san.ext")  # fmt: skip
    tls_port = free_port()
    process = RedisProcess(
        tmp_path / "redis",
        args=(
            "--tls-port", str(tls_port), "--tls-cert-file", str(tmp_path / "server.pem"),
            "--tls-key-file", str(tmp_path / "server.key"),
            "--tls-ca-cert-file", str(tmp_path / "ca.pem"), "--tls-auth-clients", "no",
        ),
    )  # fmt: skip
    process.start()  # its plain port answers the readiness check
    yield process, tls_port, tmp_path / "ca.pem"
    process.stop()


def test_a_rediss_url_speaks_tls_with_the_urls_ca(
    tls_redis: tuple[RedisProcess, int, Path],
) -> None:
    process, port, ca = tls_redis
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}&ssl_cert_reqs=required"

    async def scenario() -> None:
        store = store_at(url)
        try:
            await store.create(new())
            assert await store.commit(MATCH, commit(1))
            record = await store.load(MATCH)
            assert record is not None
            assert record.version == 2
            await store.ping()
        finally:
            await store.close()

    in_loop(scenario)
    assert process.client().exists(keys.match_key(MATCH))

    # Without the CA, the server's certificate is refused.
    in_loop(lambda: cannot_connect(f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required"))


def test_a_closed_client_refuses_calls(redis_url: str) -> None:
    async def scenario() -> None:
        store = store_at(redis_url)
        await store.create(new())
        await store.close()
        with pytest.raises(StoreUnavailableError, match=r"^the store client is closed$"):
            await store.load(MATCH)
        # A commit sends its script and the watch key's PEXPIRE together: both refused.
        refused = client_of(store).execute_together((b"GET", b"a"), (b"GET", b"b"))
        for future in refused:
            with pytest.raises(StoreUnavailableError, match=r"^the store client is closed$"):
                await future

    in_loop(scenario)


def test_closing_fails_the_calls_in_flight_and_gives_up_connecting(redis_url: str) -> None:
    """A client closed with a call waiting for its reply on an open connection and another
    on a connection still being made (its handshake unanswered): the close returns, each
    call fails as closed, and no connection is left open."""

    async def scenario() -> None:
        async with proxied(redis_url, timeout_s=5, pool_size=2) as (proxy, store):
            pipes = client_of(store)
            await store.create(new())
            proxy.holding = True
            answered = asyncio.ensure_future(store.load(MATCH))
            await asyncio.sleep(0)
            # 16 calls in flight fill the open connection: the next opens a second one.
            others = [asyncio.ensure_future(store.load(MATCH)) for _ in range(16)]
            await asyncio.sleep(0.05)
            assert pipes.connections == 2
            await asyncio.wait_for(store.close(), 5)
            for call in (answered, *others):
                with pytest.raises(StoreUnavailableError, match=r"^the store client is closed$"):
                    await call
            assert pipes.connections == 0

    in_loop(scenario)


def test_a_replica_cut_off_from_its_master_is_unavailable_in_its_own_words(
    own_redis: RedisProcess,
) -> None:
    """A master demoted to a replica that serves no stale data, its new master unreachable,
    answers MASTERDOWN on the store's open connection: StoreUnavailableError with Redis'
    reply (retryable), not a generic Redis error."""
    process = own_redis
    process.start()

    async def scenario() -> None:
        store = store_at(process.url)
        try:
            assert await store.load(MATCH) is None  # connected while Redis was a master
            with process.client() as direct:
                direct.config_set("replica-serve-stale-data", "no")
                direct.replicaof("127.0.0.1", free_port())
            with pytest.raises(
                StoreUnavailableError, match=r"^MASTERDOWN Link with MASTER is down"
            ):
                await asyncio.wait_for(store.load(MATCH), 10)  # (a guard against a hang)
        finally:
            await store.close()

    in_loop(scenario)


def test_a_burst_of_calls_opens_one_connection_at_a_time(redis_url: str) -> None:
    """Calls made at once before any connection is up wait for the one being opened rather
    than opening one per 16 calls; on a client of one connection, a burst on its open
    connection opens no second one."""

    async def scenario() -> None:
        store = store_at(redis_url, pool_size=4)
        single = store_at(redis_url, pool_size=1)
        try:
            burst = [asyncio.ensure_future(store.load(MATCH)) for _ in range(100)]
            await asyncio.sleep(0)  # each has sent its command
            assert client_of(store).connections == 1
            assert await asyncio.gather(*burst) == [None] * 100
            assert await single.load(MATCH) is None  # connected
            burst = [asyncio.ensure_future(single.load(MATCH)) for _ in range(100)]
            await asyncio.sleep(0)
            assert client_of(single).connections == 1
            assert await asyncio.gather(*burst) == [None] * 100
        finally:
            await store.close()
            await single.close()

    in_loop(scenario)


def test_a_reply_that_is_not_resp_drops_the_connection_and_the_call_is_sent_again(
    redis_url: str,
) -> None:
    """A reply that is not RESP: the connection cannot be trusted any more. It is closed, the
    call is answered on a new one, and nothing reaches the loop's exception handler."""

    async def scenario() -> None:
        unhandled: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, e: unhandled.append(e))
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            proxy.garble_next = True
            assert await asyncio.wait_for(store.load(MATCH), 10) == new().record
            assert proxy.accepted == 2
            assert unhandled == []

    in_loop(scenario)


def test_a_commit_to_a_redis_that_stops_answering_fails_at_its_deadline(redis_url: str) -> None:
    """A fresh store's first call may be a commit (its script and the watch key's PEXPIRE sent
    together): it is answered; once Redis stops answering, the next commit, the only call in
    flight, fails at its deadline, and nothing reaches the loop's exception handler."""

    async def scenario() -> None:
        unhandled: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, e: unhandled.append(e))
        async with proxied(redis_url, timeout_s=0.3) as (proxy, store):
            applied, current = await store.commit_or_current(MATCH, commit(1))
            assert (applied, current) == (False, None)  # no such match
            await store.create(new())
            await until(lambda: client_of(store)._timer is None, "the calls' timer to fire", 5)
            proxy.holding = True
            with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.3 s"):
                await asyncio.wait_for(store.commit(MATCH, commit(1)), 5)
            proxy.holding = False
            # Only its answer was held back: Redis ran it, once.
            record = await store.load(MATCH)
            assert record is not None
            assert record.version == 2
            assert await store.commit(MATCH, commit(2))
            assert unhandled == []

    in_loop(scenario)


def test_a_replica_refusing_writes_is_asked_again_then_unavailable(tmp_path: Path) -> None:
    """READONLY (the master Sentinel named was demoted) is answered on a new connection; a
    store that stays read-only fails the call UNAVAILABLE after the resends, not forever."""
    master = RedisProcess(tmp_path / "master")
    master.start()
    replica = RedisProcess(
        tmp_path / "replica", args=("--replicaof", "127.0.0.1", str(master.port))
    )
    replica.start()

    async def scenario() -> None:
        store = store_at(replica.url)
        try:
            with pytest.raises(StoreUnavailableError, match="READONLY"):
                await store.create(new())
            assert await store.load(MATCH) is None  # reads still answer
            assert client_of(store).connections >= 1
        finally:
            await store.close()

    try:
        in_loop(scenario)
    finally:
        replica.stop()
        master.stop()


def test_a_unix_socket_url_works_too(tmp_path: Path) -> None:
    socket = tmp_path / "redis.sock"
    process = RedisProcess(tmp_path / "r", args=("--unixsocket", str(socket)))
    process.start()

    async def scenario() -> None:
        store = store_at(f"unix://{socket}?db=2")
        try:
            await store.create(new())
            assert await store.commit(MATCH, commit(1))
            assert (await store.events(MATCH, 1)).entries[0].version == 2
        finally:
            await store.close()

    try:
        in_loop(scenario)
        assert redis.Redis(port=process.port, db=2).exists(keys.match_key(MATCH))
    finally:
        process.stop()
