"""The Redis store: matches shared by every replica, Redis Cluster ready.

A match is a string (``keys.match_key``, see ``service.store.codec``) and a capped stream
(``keys.events_key``) under one hash tag, plus its watch access (``keys.watch_key``) once a seat
asked for a watch token. Loading is one GET; every change is one Lua script that
compares the version prefix, replaces the record, appends the event entry and restarts the
expiry of both keys (the idle TTL, or the finished TTL for the change that ends the match), and
publishes the new version on the match's shard channel (the wake-up of WatchMatch readers, see
``service.store.redis_feed``), followed in the same write by a PEXPIRE giving the watch key the
same expiry (the script cannot name that key: see ``_COMMIT``). The watch key thus expires with
the match: made, it takes the record's expiry. A replica that remembers a match's record (the
servicer's RecordCache) plays from it and sends only the script, which answers the current
record when the match moved on: one round trip per play on a warm replica, two on a cold one.
Every call has a deadline; past it, or on any connection fault, the call raises
StoreUnavailableError. On a Redis Cluster a script refused while its slot moves (TRYAGAIN: a
master holds only some of the keys it names) ran nowhere, and is sent again after a short
back-off until the slot has moved or the deadline has passed (``_settled``).

On a standalone or Sentinel-fronted Redis every call's commands (load, create, commit, events,
watch access, ping) go through the store's own pipelined client (``service.store.resp``: one
write and one future per command, the commit's PEXPIRE riding in the script's write, on at most
``pool_size`` shared connections that redis-py opens); the change feed and a Redis Cluster use
redis-py.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

import hiredis
from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel
from redis.backoff import ExponentialBackoff

from basra.service.store import keys
from basra.service.store.base import (
    Commit,
    EventEntry,
    EventPage,
    MatchRecord,
    NewMatch,
    StoreFullError,
    StoreUnavailableError,
    WatchAccess,
)
from basra.service.store.codec import (
    decode_record,
    decode_watch_access,
    encode_record,
    encode_watch_access,
    version_prefix,
)
from basra.service.store.redis_cluster import fold_asking
from basra.service.store.redis_feed import RedisFeed
from basra.service.store.resp import NoScriptError, PipelinedClient

_UNAVAILABLE: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ClusterError,
    redis_errors.ReadOnlyError,
    redis_errors.TryAgainError,
    OSError,
    TimeoutError,
)

# KEYS: match record, events stream. ARGV: ttl ms, maxlen, version, record, then the entry's
# field/value pairs.
_CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], ARGV[3] .. '-0', unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
"""

# KEYS: match record, events stream. ARGV: ttl ms, maxlen, expected version (8-byte prefix),
# new version, new record, wake channel, then the entry's field/value pairs. Answers 1 when
# applied; else the current record (false when the match is gone: another change won the race,
# and the caller decides again without a GET) and its PEXPIRETIME, for the watch key (see
# RedisStore.commit_or_current).
# The wake channel is no key (it shares the match's hash tag, so its slot), nor is the watch
# key: a declared key that does not exist makes the master importing the match's slot answer
# TRYAGAIN (a multi-key command with a missing key) to every commit until the slot has moved,
# and most matches never have a watch key. The watch key's expiry is set by a PEXPIRE sent
# right after this script, in the same write.
_COMMIT: Final = """
if redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[3] then
  return {redis.call('GET', KEYS[1]), redis.call('PEXPIRETIME', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[5], 'PX', ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], ARGV[4] .. '-0', unpack(ARGV, 7))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('SPUBLISH', ARGV[6], ARGV[4])
return 1
"""

# KEYS: match record, watch access. ARGV: expected access ("" for none), new access, "1" to
# announce a revocation, wake channel (no key: see _COMMIT). Answers 1 when swapped, 0 when the
# access is not the expected one or the match is gone. The access expires when the match does,
# at the same instant (each commit then gives both the same new expiry).
_SWAP_WATCH: Final = """
local at = redis.call('PEXPIRETIME', KEYS[1])
if at == -2 then return 0 end
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
if at > 0 then
  redis.call('SET', KEYS[2], ARGV[2], 'PXAT', at)
else
  redis.call('SET', KEYS[2], ARGV[2])
end
if ARGV[3] == '1' then redis.call('SPUBLISH', ARGV[4], '0') end
return 1
"""


@dataclass(frozen=True)
class _Script:
    source: str
    sha: str


def _script(source: str) -> _Script:
    return _Script(source, hashlib.sha1(source.encode()).hexdigest())  # noqa: S324 - Redis's name


_CREATE_SCRIPT: Final = _script(_CREATE)
_COMMIT_SCRIPT: Final = _script(_COMMIT)
_SWAP_WATCH_SCRIPT: Final = _script(_SWAP_WATCH)


class RedisStore:
    """Match storage in Redis (standalone, Sentinel-fronted or Cluster)."""

    def __init__(
        self,
        url: str,
        *,
        cluster: bool,
        ttl_s: float,
        events_maxlen: int,
        timeout_s: float,
        pool_size: int = 64,
        watch_poll_s: float = 5.0,
        finished_ttl_s: float | None = None,
    ) -> None:
        self._ttl_ms = int(ttl_s * 1000)
        # A finished match is kept this long after its last play (None: like an idle one).
        self._finished_ttl_ms = int((finished_ttl_s or ttl_s) * 1000)
        self._maxlen = events_maxlen
        self._timeout_s = timeout_s
        self._watch_poll_s = watch_poll_s
        # The deadline of each call is the asyncio.timeout in _call, covering the wait for a
        # connection, the write and the read together; redis-py's per-socket timeouts would add
        # a task and two timers to every command.
        options: dict[str, Any] = {
            # After a Redis restart every pooled connection is dead: a command that meets one is
            # sent again on a new connection (twice at most, within the call's deadline) instead
            # of failing although Redis is back. redis-py retries nothing unless told.
            "retry": Retry(ExponentialBackoff(cap=0.05, base=0.005), retries=2),
            "retry_on_error": [redis_errors.ConnectionError],
            "socket_connect_timeout": timeout_s,
            "decode_responses": False,
        }
        # Calls beyond pool_size wait for a slot instead of failing for want of a connection.
        self._slots = asyncio.Semaphore(pool_size)
        self._sentinels: list[Sentinel] = []
        self._redis: Redis | RedisCluster
        # WatchMatch streams hold no connection: each replica's one change feed (feed()) waits
        # for all of them, on a connection per Redis node of its own.
        self._feeds: list[RedisFeed] = []
        # Watch keys a lost commit left with its expiry, by match: the match's PEXPIRETIME to
        # give them, unless another commit of the match comes first (commit_or_current).
        self._watch_fixes: dict[str, int] = {}
        self._fixing: set[asyncio.Future[Any]] = set()  # a Cluster's fixes under way
        if cluster:
            # No socket timeout (redis-py's default is 5 s): with one, redis-py writes every
            # command under asyncio.wait_for, which on Python 3.11 returns the write's result
            # instead of raising a cancellation that lands as the write completes, so a call's
            # deadline could be lost (a create in a moving slot then retried for ever).
            self._redis = fold_asking(
                RedisCluster.from_url(
                    url, max_connections=pool_size, socket_timeout=None, **options
                )
            )
        elif url.startswith(SENTINEL_SCHEMES):
            self._redis, calls = sentinel_master(url, {**options, "max_connections": pool_size})
            self._sentinels = [calls]
        else:
            self._redis = Redis.from_url(
                url, max_connections=pool_size, health_check_interval=30, **options
            )
        self._create = self._redis.register_script(_CREATE)
        self._swap_watch = self._redis.register_script(_SWAP_WATCH)
        # Standalone and Sentinel: every call but memory_usage goes through the store's
        # pipelined client, on connections redis-py opens (service.store.resp). A Cluster
        # routes each key to its node: it stays on redis-py.
        self._pipes: PipelinedClient | None = None
        if isinstance(self._redis, Redis):  # a cluster client's connections live per node
            _pack_with_hiredis(self._redis)
            self._pipes = PipelinedClient(
                self._redis.connection_pool, size=pool_size, timeout_s=timeout_s
            )

    async def _call(self, operation: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``operation()`` within the call's deadline, again while a Cluster slot it names
        is moving (see ``_settled``)."""
        task = asyncio.current_task()
        moving: list[BaseException] = []
        try:
            async with asyncio.timeout(self._timeout_s):
                # At most pool_size calls at once; the others queue here, within the deadline.
                async with self._slots:
                    result = await _settled(operation, moving)
        except redis_errors.OutOfMemoryError as exc:
            raise StoreFullError(str(exc)) from None
        except _UNAVAILABLE as exc:
            if task is not None and task.cancelling():
                # The call was cancelled (its client left): not a store fault.
                raise asyncio.CancelledError from exc
            if isinstance(exc, TimeoutError) and moving:
                raise StoreUnavailableError(
                    f"a slot of the match was still moving at the deadline: {moving[-1]}"
                ) from moving[-1]
            raise StoreUnavailableError(f"{type(exc).__name__}: {exc}") from exc
        if task is not None and task.cancelling():
            # redis-py can swallow a cancellation that lands mid-command and answer normally: the
            # caller asked to stop (a server stopping its health watchdog waited forever on it).
            raise asyncio.CancelledError
        return result

    async def _script(
        self,
        script: _Script,
        keys: list[str],
        args: list[Any],
        *,
        then: tuple[bytes | str | int, ...] | None = None,
    ) -> Any:
        """Run a script by its SHA-1 on the pipelined client, sending its source only when
        Redis does not hold it (after a restart): one round trip, nearly always. ``then`` is
        a command sent right behind it, in the same write on the same connection; its reply
        is read and dropped."""
        assert self._pipes is not None
        for run, body in ((b"EVALSHA", script.sha), (b"EVAL", script.source)):
            call = (run, body, len(keys), *keys, *args)
            if then is None:
                ran = self._pipes.execute(*call)
            else:
                ran, after = self._pipes.execute_together(call, then)
                after.add_done_callback(_dropped)
            try:
                return await ran
            except NoScriptError:  # nothing ran: EVAL runs it and keeps it for the next EVALSHA
                continue
        raise AssertionError("EVAL never answers NOSCRIPT")

    async def _cluster_script(
        self, script: _Script, keys: list[str], args: list[Any], then: tuple[bytes | str | int, ...]
    ) -> Any:
        """``_script`` on a Redis Cluster: the script and ``then`` in one pipeline, so one
        write to the match's master (redis-py sends a redirected command again on its own)."""
        for run, body in (("EVALSHA", script.sha), ("EVAL", script.source)):
            pipe = self._redis.pipeline(transaction=False)
            pipe.execute_command(run, body, len(keys), *keys, *args)
            pipe.execute_command(*then)
            ran, _ = await pipe.execute(raise_on_error=False)
            if isinstance(ran, redis_errors.NoScriptError):
                continue
            if isinstance(ran, Exception):
                raise ran
            return ran
        raise AssertionError("EVAL never answers NOSCRIPT")

    async def load(self, match_id: str) -> MatchRecord | None:
        data: bytes | None
        if self._pipes is not None:
            data = await self._pipes.execute(b"GET", keys.match_key(match_id))
        else:
            data = await self._call(lambda: self._redis.get(keys.match_key(match_id)))
        return None if data is None else decode_record(match_id, data)

    async def create(self, new: NewMatch) -> bool:
        record = new.record
        names = [keys.match_key(record.match_id), keys.events_key(record.match_id)]
        args = [
            self._ttl_ms,
            self._maxlen,
            record.version,
            encode_record(record),
            *_entry_fields(new.entry),
        ]
        if self._pipes is not None:
            created = await self._script(_CREATE_SCRIPT, names, args)
        else:
            created = await self._call(lambda: self._create(keys=names, args=args))
        return bool(created)

    async def commit(self, match_id: str, commit: Commit) -> bool:
        applied, _ = await self.commit_or_current(match_id, commit)
        return applied

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        # This commit's PEXPIRE of the watch key replaces a fix not sent yet (_fix_watch_keys).
        self._watch_fixes.pop(match_id, None)
        names = [keys.match_key(match_id), keys.events_key(match_id)]
        ttl_ms = self._finished_ttl_ms if commit.finished else self._ttl_ms
        args = [
            ttl_ms,
            self._maxlen,
            version_prefix(commit.expected_version),
            commit.record.version,
            encode_record(commit.record),
            # The wake channel is an argument, not a key: an importing Cluster node refuses a
            # script naming a key it does not hold (see _COMMIT).
            keys.wake_channel(match_id),
            *_entry_fields(commit.entry),
        ]
        # The watch key (when the match has one) gets the match's new expiry from a PEXPIRE
        # right behind the script, in the same write: no round trip of its own, and no key
        # the script names that may not exist (see _COMMIT).
        refresh = ("PEXPIRE", keys.watch_key(match_id), ttl_ms)
        if self._pipes is not None:
            answer = await self._script(_COMMIT_SCRIPT, names, args, then=refresh)
        else:
            answer = await self._call(
                lambda: self._cluster_script(_COMMIT_SCRIPT, names, args, refresh)
            )
        if answer == 1:
            return True, None
        current, expires_at = answer
        # Not applied, so that PEXPIRE gave the watch key an expiry the match did not get.
        # The caller nearly always commits again at once, from the record answered here, and
        # that commit's own PEXPIRE sets it right; only if none follows before this task
        # yields is the match's own expiry sent to the watch key (_fix_watch_keys), without
        # the caller waiting: a lost race costs no round trip more.
        if not self._watch_fixes:
            asyncio.get_running_loop().call_soon(self._fix_watch_keys)
        self._watch_fixes[match_id] = int(expires_at)
        return False, decode_record(match_id, current) if current else None

    def _fix_watch_keys(self) -> None:
        """Give each watch key left with a lost commit's expiry its match's (see
        commit_or_current): PEXPIREAT the match's PEXPIRETIME, or DEL when the match is gone.
        Nobody waits for these; one that fails leaves the key to the match's next commit."""
        fixes, self._watch_fixes = self._watch_fixes, {}
        for match_id, expires_at in fixes.items():
            key = keys.watch_key(match_id)
            command: tuple[bytes | str | int, ...]
            if expires_at == -2:
                command = ("DEL", key)
            elif expires_at == -1:
                command = ("PERSIST", key)
            else:
                command = ("PEXPIREAT", key, expires_at)
            if self._pipes is not None:
                self._pipes.execute(*command).add_done_callback(_dropped)
            else:
                fix = functools.partial(self._redis.execute_command, *command)
                task = asyncio.ensure_future(self._call(fix))
                self._fixing.add(task)
                task.add_done_callback(self._fixing.discard)
                task.add_done_callback(_dropped)

    async def events(self, match_id: str, after_version: int) -> EventPage:
        return (await self.events_many({match_id: after_version}))[match_id]

    async def events_many(self, after: Mapping[str, int]) -> dict[str, EventPage]:
        # Per match, the oldest entry, then those after: all sent at once (a pipeline).
        if self._pipes is not None:
            calls = []
            for match_id, version in after.items():
                key = keys.events_key(match_id)
                calls.append(self._pipes.execute(b"XRANGE", key, b"-", b"+", b"COUNT", 1))
                calls.append(
                    self._pipes.execute(b"XRANGE", key, "(" + keys.stream_id(version), b"+")
                )
            # Every reply is read (a failed one raises below), so no failure goes unretrieved.
            replies = await asyncio.gather(*calls, return_exceptions=True)
            found: list[Any] = []
            for reply in replies:
                if isinstance(reply, BaseException):
                    raise reply
                found.append([(e[0], _fields(e[1])) for e in reply])
        else:  # on a Cluster, redis-py's pipeline: one per node

            def read() -> Awaitable[list[Any]]:
                pipe = self._redis.pipeline(transaction=False)
                for match_id, version in after.items():
                    key = keys.events_key(match_id)
                    pipe.xrange(key, "-", "+", count=1)
                    pipe.xrange(key, "(" + keys.stream_id(version), "+")
                return pipe.execute()

            found = await self._call(read)
        pages = {}
        for index, match_id in enumerate(after):
            first, entries = found[2 * index], found[2 * index + 1]
            if not first:
                pages[match_id] = EventPage((), None)
            else:
                pages[match_id] = EventPage(
                    tuple(_entry(e) for e in entries), _version(first[0][0])
                )
        return pages

    async def watch_access(self, match_ids: Collection[str]) -> dict[str, WatchAccess | None]:
        found: list[bytes | None]
        if self._pipes is not None:
            pipes = self._pipes
            replies = await asyncio.gather(
                *(pipes.execute(b"GET", keys.watch_key(match_id)) for match_id in match_ids),
                return_exceptions=True,  # every reply read, so no failure goes unretrieved
            )
            found = []
            for reply in replies:
                if isinstance(reply, BaseException):
                    raise reply
                found.append(reply)
        else:

            def read() -> Awaitable[list[Any]]:
                pipe = self._redis.pipeline(transaction=False)
                for match_id in match_ids:
                    pipe.get(keys.watch_key(match_id))
                return pipe.execute()

            found = await self._call(read)
        return {
            match_id: None if data is None else decode_watch_access(data)
            for match_id, data in zip(match_ids, found, strict=True)
        }

    async def swap_watch_access(
        self,
        match_id: str,
        expected: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool,
    ) -> bool:
        names = [keys.match_key(match_id), keys.watch_key(match_id)]
        args: list[Any] = [
            b"" if expected is None else encode_watch_access(expected),
            encode_watch_access(new),
            "1" if revoke else "0",
            keys.wake_channel(match_id),
        ]
        if self._pipes is not None:
            swapped = await self._script(_SWAP_WATCH_SCRIPT, names, args)
        else:
            swapped = await self._call(lambda: self._swap_watch(keys=names, args=args))
        return bool(swapped)

    def feed(self, on_reconnect: Callable[[], None]) -> RedisFeed:
        feed = RedisFeed(
            self._redis,
            poll_s=self._watch_poll_s,
            timeout_s=self._timeout_s,
            on_reconnect=on_reconnect,
        )
        self._feeds.append(feed)
        return feed

    async def ping(self) -> None:
        # A write, not PING: a Redis out of memory still answers PING but refuses every write.
        if self._pipes is not None:
            await self._pipes.execute(b"SET", keys.PROBE, b"1", b"PX", 60_000)
        else:
            await self._call(lambda: self._redis.set(keys.PROBE, b"1", px=60_000))

    async def close(self) -> None:
        self._watch_fixes.clear()  # none is sent after the close
        for feed in self._feeds:
            await feed.close()
        if self._fixing:
            await asyncio.wait(self._fixing, timeout=self._timeout_s)
        if self._pipes is not None:
            await self._pipes.close()
        await self._redis.aclose()
        for sentinel in self._sentinels:
            for client in sentinel.sentinels:
                await client.aclose()

    async def memory_usage(self, match_id: str) -> tuple[int, int]:
        """Bytes Redis uses for the match record and for its event stream (benchmarks)."""
        redis = self._redis
        record = await self._call(lambda: redis.memory_usage(keys.match_key(match_id), samples=0))
        stream = await self._call(lambda: redis.memory_usage(keys.events_key(match_id), samples=0))
        return int(record or 0), int(stream or 0)


async def _settled(operation: Callable[[], Awaitable[Any]], moving: list[BaseException]) -> Any:
    """``operation()``, run again after a short back-off as long as a Redis Cluster slot it
    names is moving and a master refused it (the caller's deadline ends this).

    While a slot moves, a master refuses a multi-key command (the create, commit and
    watch-access scripts) with TRYAGAIN: the master importing the slot unless it holds every
    key the command names (a match still being created has none; a match's watch key may not
    exist yet), the source when it holds some of them only (their MIGRATE is under way).
    Nothing ran, so the Redis Cluster specification has clients retry after some time; the
    move ends with ``CLUSTER SETSLOT ... NODE``, after which the command runs on the new
    master. redis-py retries TRYAGAIN itself for a while (up to 16 tries, the last ones 50 ms
    apart) and then gives up with ClusterError "TTL exhausted", which this retries as well: it
    is raised only after redirections and refusals, never after a command ran. Each refusal
    is appended to ``moving``, for the error the caller raises at its deadline.

    A cancellation (the deadline's) that redis-py swallowed on the way is raised again before
    the next try, or the deadline would be lost and the tries go on for ever."""
    task = asyncio.current_task()
    delay = _SLOT_MOVING_FIRST_S
    while True:
        try:
            return await operation()
        except redis_errors.TryAgainError as exc:
            moving.append(exc)
        except redis_errors.ClusterError as exc:
            if str(exc) != "TTL exhausted.":
                raise
            moving.append(exc)
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        await asyncio.sleep(delay)
        delay = min(2 * delay, _SLOT_MOVING_MAX_S)


_SLOT_MOVING_FIRST_S: Final = 0.01
_SLOT_MOVING_MAX_S: Final = 0.1
"""Back-off between tries of a command refused while its slot moves (then doubled, capped)."""


SENTINEL_SCHEMES: Final = ("redis+sentinel://", "rediss+sentinel://")
# TLS options a rediss+sentinel:// URL may carry in its query, as redis-py's rediss:// URLs do.
_TLS_QUERY: Final = ("ssl_ca_certs", "ssl_cert_reqs", "ssl_certfile", "ssl_keyfile")


@dataclass(frozen=True)
class SentinelURL:
    """What a Sentinel URL names: the sentinels, the master's name and database, and the
    connection options used for both the sentinels and the master (password, TLS)."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    db: int
    options: dict[str, Any]


def parse_sentinel_url(url: str) -> SentinelURL:
    """``redis+sentinel://[:password@]host:port[,host:port...]/<master name>[/db]``, or
    ``rediss+sentinel://...`` for TLS to the sentinels and the master, with optional query
    ``ssl_ca_certs``, ``ssl_cert_reqs`` (required, optional or none), ``ssl_certfile``,
    ``ssl_keyfile``.

    Raises:
        ValueError: the URL does not name at least one sentinel and a master, or has an
            unknown query option.
    """
    parts = urlsplit(url)
    hosts = parts.netloc.rpartition("@")[2]
    password = unquote(parts.password) if parts.password else None
    path = [p for p in parts.path.split("/") if p]
    sentinels = []
    for host in filter(None, hosts.split(",")):
        if host.startswith("["):  # [IPv6] or [IPv6]:port
            name, _, port = host[1:].partition("]")
            port = port.removeprefix(":")
        else:
            name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        sentinels.append((name, int(port or 26379)))
    if not sentinels or not path:
        raise ValueError(
            "a sentinel URL names sentinels and a master: redis+sentinel://host:26379/<master name>"
        )
    options: dict[str, Any] = {"password": password} if password else {}
    query = parse_qs(parts.query)
    if parts.scheme == "rediss+sentinel":
        options["ssl"] = True
        for key in _TLS_QUERY:
            if key in query:
                options[key] = query.pop(key)[-1]
    if query:
        raise ValueError(f"unknown sentinel URL options: {', '.join(sorted(query))}")
    return SentinelURL(tuple(sentinels), path[0], int(path[1]) if len(path) > 1 else 0, options)


def sentinel_master(url: str, options: dict[str, Any]) -> tuple[Redis, Sentinel]:
    """A client of the master that Redis Sentinel names (see ``parse_sentinel_url``), and the
    Sentinel whose own connections must be closed with it.

    The password, and TLS for rediss+sentinel://, apply to both the sentinels and the master.

    Raises:
        ValueError: the URL is not a valid sentinel URL.
    """
    parsed = parse_sentinel_url(url)
    # The sentinels get the timeouts and the URL's options (password, TLS), not the pool size.
    sentinel_options = {k: v for k, v in options.items() if k != "max_connections"}
    # redis-py's Sentinel is untyped; master_for returns a Redis client.
    sentinel = _Sentinel(  # type: ignore[no-untyped-call]
        list(parsed.sentinels),
        sentinel_kwargs={**sentinel_options, **parsed.options},
        **options,
        **parsed.options,
    )
    master: Redis = sentinel.master_for(parsed.master, db=parsed.db)
    return master, sentinel


class _Sentinel(Sentinel):
    """redis-py's Sentinel, whose "no master found" error says why each sentinel failed: its
    own names only each error's class, which hides a TLS certificate the CA does not sign."""

    async def discover_master(self, service_name: str) -> Any:
        try:
            return await super().discover_master(service_name)
        except MasterNotFoundError:
            causes = []
            for sentinel in self.sentinels:
                try:
                    await sentinel.ping()
                except (redis_errors.ConnectionError, redis_errors.TimeoutError) as exc:
                    options = sentinel.connection_pool.connection_kwargs
                    where = f"{options.get('host')}:{options.get('port')}"
                    causes.append(f"sentinel {where}: {_connection_failure(exc)}")
            causes.append(f"no master {service_name!r} found")
            raise MasterNotFoundError("; ".join(causes)) from None


def _connection_failure(exc: BaseException) -> str:
    """Why a connection failed, in the fewest words: an untrusted TLS certificate by name."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate not trusted ({cause.verify_message}): check ssl_ca_certs"
        cause = cause.__cause__ or cause.__context__
    # redis-py does not always chain the ssl error: its text then holds OpenSSL's verdict.
    text = str(exc)
    _, verdict, why = text.partition("certificate verify failed: ")
    if verdict:
        return f"TLS certificate not trusted ({why.partition(' (_ssl')[0]}): check ssl_ca_certs"
    return text


def _pack_with_hiredis(client: Redis) -> None:
    """Have the client's connections pack commands with hiredis (C) rather than redis-py's
    Python packer, as redis-py's blocking client does: the commit, with its record and event
    entry, is packed on every Play. The bytes are the same (tests/service/test_store_contract)."""
    pool = client.connection_pool
    base = pool.connection_class

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        # "MEMORY USAGE": its words go apart, as redis-py's packer splits a command name (a
        # str always, bytes with a space in them).
        first = args[0]
        if isinstance(first, str) or b" " in first:
            args = (*first.split(), *args[1:])
        return [hiredis.pack_command(args)]

    pool.connection_class = type(f"Hiredis{base.__name__}", (base,), {"pack_command": pack_command})


def _dropped(future: asyncio.Future[Any]) -> None:
    """Read a reply nobody waits for, a failure included (so that none goes unretrieved)."""
    if not future.cancelled():
        future.exception()


def _entry_fields(entry: EventEntry) -> list[bytes | str]:
    fields: list[bytes | str] = [keys.COMMAND, entry.command, keys.EVENTS, entry.events]
    for seat, cards in enumerate(entry.private):
        if cards:
            fields += [keys.private_field(seat), cards]
    return fields


def _fields(flat: list[bytes]) -> dict[bytes, bytes]:
    """A stream entry's fields as redis-py gives them, from the flat list Redis sends."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _version(stream_id: bytes) -> int:
    return int(stream_id.split(b"-", 1)[0])


def _entry(raw: tuple[bytes, dict[bytes, bytes]]) -> EventEntry:
    stream_id, fields = raw
    prefix = keys.PRIVATE_PREFIX.encode()
    dealt = {int(k[len(prefix) :]): v for k, v in fields.items() if k.startswith(prefix)}
    return EventEntry(
        version=_version(stream_id),
        command=fields[keys.COMMAND.encode()],
        events=fields[keys.EVENTS.encode()],
        private=tuple(dealt.get(seat, b"") for seat in range(max(dealt, default=-1) + 1)),
    )
