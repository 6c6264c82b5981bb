"""The Redis store on redis-py's public client, against a real redis-server: resends by rule
(the allow-list), deadlines, lost replies, restarts, scripts Redis forgot, cancellation, error
replies, READONLY, and the URL's options (password, database, TLS, unix socket).

A ``Proxy`` between the store and Redis stands in for the network. It synchronises on events,
never on time: ``forwarded`` is set once a marked command reached Redis, and replies wait on
``replying`` (cleared: a Redis that stopped answering). It can also cut the connection right
after a marked command went through, dropping its reply (a reply lost on the way back).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from basra.service.store import StoreFullError, StoreUnavailableError, WatchAccess, keys
from basra.service.store.redis import (
    _COMMIT,
    _COMMIT_SCRIPT,
    _CREATE,
    _CREATE_SCRIPT,
    _HEARTBEAT,
    _HEARTBEAT_SCRIPT,
    _SWAP_WATCH_SCRIPT,
    RESENDABLE,
    RESENDS,
    RedisStore,
    _refused_unrun,
    resendable,
)
from tests.service.test_store_contract import commit, new
from tests.support import RedisProcess, free_port

MATCH = "M" * 22


class Proxy:
    """A TCP proxy to Redis on a free loopback port, in the test's event loop."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.marker: bytes | None = None
        """Commands holding these bytes are counted (``seen``) and set ``forwarded``."""
        self.cut_times = 0
        """Cut the connection once a marked command reached Redis, its reply dropped, this
        many times more."""
        self.seen = 0
        self.cuts = 0
        self.accepted = 0
        self.forwarded = asyncio.Event()
        self.replying = asyncio.Event()
        self.replying.set()
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
                if self.marker is not None and self.marker in data:
                    self.seen += 1
                    if self.cut_times > 0:
                        self.cut_times -= 1
                        cut.set()
                    self.forwarded.set()
                redis_w.write(data)
                await redis_w.drain()

        async def downstream() -> None:
            while data := await redis_r.read(65536):
                if cut.is_set():  # the reply of the command that went through: lost
                    self.cuts += 1
                    break
                await self.replying.wait()
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
        self.replying.set()
        self._server.close()
        for writer in self._writers:
            writer.close()


def store_at(url: str, timeout_s: float = 2, pool_size: int = 4) -> RedisStore:
    return RedisStore(
        url, cluster=False, ttl_s=3600, events_maxlen=50, timeout_s=timeout_s, pool_size=pool_size
    )


@contextlib.asynccontextmanager
async def proxied(
    redis_url: str, timeout_s: float = 2, pool_size: int = 4
) -> AsyncIterator[tuple[Proxy, RedisStore]]:
    proxy = Proxy(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    await proxy.start()
    store = store_at(proxy.url, timeout_s=timeout_s, pool_size=pool_size)
    try:
        yield proxy, store
    finally:
        proxy.replying.set()
        await store.close()
        await proxy.close()


async def cannot_connect(url: str) -> None:
    """A store at ``url`` fails its first call: it cannot connect (a wrong password, TLS)."""
    store = store_at(url)
    try:
        with pytest.raises(StoreUnavailableError):
            await store.load(MATCH)
    finally:
        await store.close()


def script_calls(redis_url: str) -> int:
    """EVALSHA and EVAL calls Redis counted (each is one run of a script, or a NOSCRIPT)."""
    with redis.Redis.from_url(redis_url) as direct:
        stats = direct.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval")
    )


# -- The allow-list ---------------------------------------------------------------------------


def test_the_allow_list_holds_reads_the_probe_and_the_commit_script_only() -> None:
    """Decided by what each command does: reads, the probe's SET, the version-checked commit
    script, the create script that knows its own record and the presence heartbeat (scores
    fixed before sending); not the watch access swap, nor any command the list does not
    name."""
    assert set(RESENDABLE) == {"GET", "XRANGE", "ZRANGEBYSCORE", "MEMORY", "SET"}
    assert all(reason for reason in RESENDABLE.values())  # each entry says why
    assert resendable(("GET", "k"))
    assert resendable((b"get", b"k"))
    assert resendable(("XRANGE", "k", "-", "+"))
    assert not resendable(("PEXPIRE", keys.watch_key(MATCH), 1000))
    assert resendable(("EVALSHA", _COMMIT_SCRIPT.sha, 2, "a", "b"))
    assert resendable((b"EVAL", _COMMIT.encode(), 2, "a", "b"))
    assert resendable(("EVALSHA", _CREATE_SCRIPT.sha, 2, "a", "b"))
    assert resendable(("EVAL", _CREATE, 2, "a", "b"))
    assert resendable(("SET", keys.PROBE, b"1", "PX", 60_000))
    assert resendable(("ZRANGEBYSCORE", keys.presence_key(MATCH), "(1", "+inf"))
    assert resendable(("EVALSHA", _HEARTBEAT_SCRIPT.sha, 1, keys.presence_key(MATCH), 1, 2))
    assert resendable(("EVAL", _HEARTBEAT, 1, keys.presence_key(MATCH), 1, 2))
    assert not resendable(("SET", keys.match_key(MATCH), b"x"))  # the probe's only
    assert not resendable(("EVALSHA", _SWAP_WATCH_SCRIPT.sha, 2, "a", "b"))
    assert not resendable(("INCR", "k"))
    assert not resendable(("XADD", "k", "*", "f", "v"))


def test_a_command_not_on_the_list_is_not_resent_after_its_connection_drops(
    redis_url: str,
) -> None:
    """The watch-access swap runs, and its connection is cut before the reply: the call fails
    as unavailable and the script is not sent again (Redis ran it once, it counted one call),
    although Redis is there to answer."""

    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            first, second = WatchAccess(b"s" * 16, ()), WatchAccess(b"t" * 16, ())
            assert await store.swap_watch_access(MATCH, None, first, revoke=False)
            before = script_calls(redis_url)
            proxy.marker, proxy.cut_times = b"EVALSHA", 1
            with pytest.raises(StoreUnavailableError, match="ConnectionError"):
                await store.swap_watch_access(MATCH, first, second, revoke=True)
            assert (proxy.seen, proxy.cuts) == (1, 1)
            assert script_calls(redis_url) == before + 1
            assert (await store.watch_access([MATCH]))[MATCH] == second  # it ran, once

    asyncio.run(scenario())


def test_a_pipeline_mixing_commands_on_and_off_the_list_is_never_resent(redis_url: str) -> None:
    """One command off the list makes the whole call unsafe to send again: a pipeline of a
    read and an INCR whose connection is cut before the reply fails as unavailable, and the
    INCR ran once (no call mixes them today: this guards the first that does)."""
    counter = "{" + MATCH + "}:counter"

    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            proxy.marker, proxy.cut_times = b"INCR", 1
            with pytest.raises(StoreUnavailableError, match="ConnectionError"):
                await store._send(("GET", keys.match_key(MATCH)), ("INCR", counter))
            assert (proxy.seen, proxy.cuts) == (1, 1)
        with redis.Redis.from_url(redis_url) as direct:
            assert direct.get(counter) == b"1"  # it ran, once
            direct.delete(counter)

    asyncio.run(scenario())


def test_a_create_whose_reply_was_lost_is_resent_by_rule_and_answers_created(
    redis_url: str,
) -> None:
    """The create script is on the list: its reply lost, it is sent again, finds its own record
    and answers created, with the match written once; a create of another record under the
    same id still answers not created."""

    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            assert await store.create(new("O" * 22))  # Redis holds the script now
            proxy.marker, proxy.cut_times = b"EVALSHA", 1
            assert await store.create(new())
            assert (proxy.seen, proxy.cuts) == (2, 1)
            assert await store.load(MATCH) == new().record
            assert [e.version for e in (await store.events(MATCH, 0)).entries] == [1]
            other = new()
            other = type(other)(other.record._replace(state=b"other"), other.entry)
            assert not await store.create(other)

    asyncio.run(scenario())


def test_a_commit_whose_reply_was_lost_is_resent_by_rule_and_applied_once(redis_url: str) -> None:
    """The commit script is on the list: its reply lost with its connection, it is sent again
    on a new one, and the version check answers the record it wrote (a lost race to the
    caller, who decides again on it) instead of applying it twice."""

    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            await store.create(new("O" * 22))
            assert await store.commit("O" * 22, commit(1))  # Redis holds the script now
            proxy.marker, proxy.cut_times = b"EVALSHA", 1
            applied, current = await store.commit_or_current(MATCH, commit(1, request=b"r"))
            assert (proxy.seen, proxy.cuts) == (2, 1)  # sent again, answered the second time
            assert not applied
            assert current is not None
            assert (current.version, current.state) == (2, b"state-2")
            assert current.requests == (b"r", b"")
            page = await store.events(MATCH, 0)
            assert [e.version for e in page.entries] == [1, 2]  # one entry for version 2

    asyncio.run(scenario())


def test_a_read_whose_connection_is_lost_every_time_is_resent_twice_then_unavailable(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        async with proxied(redis_url) as (proxy, store):
            await store.create(new())
            proxy.marker, proxy.cut_times = b"GET", 100
            with pytest.raises(StoreUnavailableError, match="ConnectionError"):
                await store.load(MATCH)
            assert proxy.cuts == 1 + RESENDS

    asyncio.run(scenario())


def test_a_read_on_a_connection_killed_by_redis_is_answered(redis_url: str) -> None:
    """CLIENT KILL from a second connection closes every connection of the store: the next
    read, on the list, is answered (sent again on a new connection when redis-py wrote it on
    the killed one before it saw the close)."""

    async def scenario() -> None:
        store = store_at(redis_url)
        try:
            await store.create(new())
            assert await store.load(MATCH) == new().record
            with redis.Redis.from_url(redis_url) as direct:
                killed = direct.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
            assert killed >= 1
            assert await store.load(MATCH) == new().record
        finally:
            await store.close()

    asyncio.run(scenario())


# -- Deadlines, restarts, scripts, cancellation ------------------------------------------------


def test_a_redis_that_stops_answering_fails_the_call_at_its_deadline(redis_url: str) -> None:
    async def scenario() -> None:
        async with proxied(redis_url, timeout_s=0.3) as (proxy, store):
            await store.create(new())
            proxy.replying.clear()
            with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.3 s"):
                await store.load(MATCH)
            proxy.replying.set()
            # The cut-off connection was closed; the next call gets its own reply.
            assert (await store.load(MATCH)) == new().record

    asyncio.run(scenario())


def test_a_store_call_runs_in_its_callers_task_alone(redis_url: str) -> None:
    """The call's deadline is the store's own: redis-py, given a socket timeout, writes each
    command under asyncio.wait_for, a task (and its timers) more per command, on every Play."""

    async def scenario() -> None:
        store = store_at(redis_url)
        made: list[object] = []
        loop = asyncio.get_running_loop()

        def counting(
            loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
        ) -> asyncio.Task[Any]:
            made.append(getattr(coro, "__qualname__", coro))
            return asyncio.Task(coro, loop=loop, **kwargs)

        try:
            await store.create(new())  # connections open, scripts loaded
            loop.set_task_factory(counting)
            assert await store.load(MATCH) == new().record
            assert made == []
        finally:
            loop.set_task_factory(None)
            await store.close()

    asyncio.run(scenario())


def test_a_cancelled_call_is_cancelled_and_its_late_reply_does_not_answer_the_next(
    redis_url: str,
) -> None:
    async def scenario() -> None:
        async with proxied(redis_url, pool_size=1) as (proxy, store):
            await store.create(new())
            assert await store.load(MATCH) == new().record  # the reads' connection is open
            proxy.replying.clear()
            proxy.marker = b"GET"
            call = asyncio.create_task(store.load(MATCH))
            # Written; its reply held back. (wait_for: a guard against a hang, not a measure.)
            await asyncio.wait_for(proxy.forwarded.wait(), 10)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            proxy.replying.set()
            assert await store.load("X" * 22) is None  # not the cancelled call's reply
            assert await store.load(MATCH) == new().record

    asyncio.run(scenario())


def test_calls_on_connections_from_before_a_redis_restart_are_answered(
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
            assert await store.create(new("O" * 22))
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_script_redis_no_longer_holds_is_sent_again_with_its_source(redis_url: str) -> None:
    async def scenario() -> None:
        store = store_at(redis_url)
        try:
            await store.create(new())
            with redis.Redis.from_url(redis_url) as direct:
                direct.script_flush()
            assert await store.commit(MATCH, commit(1))
            record = await store.load(MATCH)
            assert record is not None
            assert record.version == 2
        finally:
            await store.close()

    asyncio.run(scenario())


def test_an_unreachable_redis_fails_every_call(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = store_at(RedisProcess(tmp_path / "never").url, timeout_s=30)
        try:
            results = await asyncio.gather(
                *(store.load(MATCH) for _ in range(10)),
                store.create(new()),
                return_exceptions=True,
            )
            assert all(isinstance(r, StoreUnavailableError) for r in results), results
            assert all("ConnectionError" in str(r) for r in results), results
        finally:
            await store.close()

    asyncio.run(scenario())


# -- Error replies -----------------------------------------------------------------------------


def test_an_error_reply_is_a_redis_error_and_out_of_memory_is_store_full(
    tmp_path: Path,
) -> None:
    process = RedisProcess(
        tmp_path / "r", args=("--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
    )
    process.start()

    async def scenario() -> None:
        store = store_at(process.url)
        try:
            with redis.Redis.from_url(process.url) as direct:
                direct.set(keys.events_key(MATCH), b"not a stream")
                with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
                    await store.events(MATCH, 0)  # XRANGE of a string
                direct.delete(keys.events_key(MATCH))
                for n in range(1000):
                    try:
                        direct.set(f"f{n}", b"x" * 10_000)
                    except redis.exceptions.OutOfMemoryError:
                        break
                else:
                    raise AssertionError("Redis never ran out of memory")
            with pytest.raises(StoreFullError):
                await store.create(new())
            with pytest.raises(StoreFullError):
                await store.ping()
            assert await store.load(MATCH) is None  # reads still answer
        finally:
            await store.close()

    try:
        asyncio.run(scenario())
    finally:
        process.stop()


def test_a_replica_cut_off_from_its_master_is_unavailable_in_its_own_words(
    own_redis: RedisProcess,
) -> None:
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
                StoreUnavailableError, match=r"^MasterDownError: Link with MASTER is down"
            ):
                await asyncio.wait_for(store.load(MATCH), 10)  # (a guard against a hang)
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_readonly_refusal_reported_as_a_lost_connection_is_known_unrun() -> None:
    """After a Sentinel failover the old primary refuses writes READONLY, and redis-py's
    Sentinel-managed connection reports that as a ConnectionError raised while handling the
    ReadOnlyError: the command ran nowhere, so it may be sent again. A connection lost any
    other way may have run it."""

    def lost(during: BaseException | None) -> redis.exceptions.ConnectionError:
        try:
            try:
                if during is not None:
                    raise during
                raise redis.exceptions.ConnectionError("Connection closed by server.")
            except redis.exceptions.ReadOnlyError as refused:
                raise redis.exceptions.ConnectionError(
                    "The previous master is now a slave"
                ) from refused
        except redis.exceptions.ConnectionError as exc:
            return exc

    readonly = redis.exceptions.ReadOnlyError("You can't write against a read only replica.")
    assert _refused_unrun(readonly)
    assert _refused_unrun(lost(readonly))
    assert not _refused_unrun(lost(None))
    assert not _refused_unrun(redis.exceptions.ConnectionError("reset by peer"))


def test_a_replica_refusing_writes_is_asked_again_then_unavailable(tmp_path: Path) -> None:
    """READONLY ran nothing: the create is sent again (RESENDS times), and a store that stays
    read-only fails it as unavailable, not for ever; reads still answer."""
    master = RedisProcess(tmp_path / "master")
    master.start()
    replica = RedisProcess(
        tmp_path / "replica", args=("--replicaof", "127.0.0.1", str(master.port))
    )
    replica.start()

    async def scenario() -> None:
        store = store_at(replica.url)
        try:
            with pytest.raises(StoreUnavailableError, match="ReadOnlyError"):
                await store.create(new())
            assert await store.load(MATCH) is None
            with replica.client() as direct:
                refused = direct.info("errorstats")["errorstat_READONLY"]["count"]
            assert refused == 1 + RESENDS
        finally:
            await store.close()

    try:
        asyncio.run(scenario())
    finally:
        replica.stop()
        master.stop()


# -- The URL's options -------------------------------------------------------------------------


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

        asyncio.run(scenario())
        assert direct.exists(keys.match_key(MATCH))
    asyncio.run(cannot_connect(f"redis://:nope@127.0.0.1:{process.port}/0"))
    direct.close()
    setup.close()


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

    asyncio.run(scenario())
    with process.client() as direct:
        assert direct.exists(keys.match_key(MATCH))
    # Without the CA, the server's certificate is refused.
    asyncio.run(cannot_connect(f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required"))


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
        asyncio.run(scenario())
        with redis.Redis(port=process.port, db=2) as direct:
            assert direct.exists(keys.match_key(MATCH))
    finally:
        process.stop()
