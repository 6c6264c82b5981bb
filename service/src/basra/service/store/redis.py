"""The Redis store: matches shared by every replica, Redis Cluster ready.

A match is a string (``keys.match_key``, see ``service.store.codec``), a capped stream
(``keys.events_key``) and its watch access (``keys.watch_key``, empty until a seat asks for a
watch token) under one hash tag, all three made by the script that creates the match. Loading
is one GET; every change is one Lua script that compares the version prefix, replaces the
record, appends the event entry, restarts the expiry of the three keys (the idle TTL, or the
finished TTL for the change that ends the match) and publishes the new version on the match's
shard channel (the wake-up of WatchMatch readers, see ``service.store.redis_feed``). The keys
thus expire together. A replica that remembers a match's record (the servicer's RecordCache)
plays from it and sends only that script, which answers the current record when the match
moved on: one round trip per play on a warm replica, two on a cold one.

Every command goes through redis-py's public asyncio clients (``redis.asyncio.Redis``, its
Sentinel-managed master, or ``RedisCluster``), several commands of one call in one
``pipeline(transaction=False)``: one write, one round trip. Every call has a deadline; past it,
or on a connection fault that may not be retried, the call raises StoreUnavailableError.

**Resends by rule.** A command whose connection is lost between its write and its reply may or
may not have run. It is sent again only if it is on the allow-list (``RESENDABLE``,
``RESENDABLE_SCRIPTS``): ``_send`` checks every command of a call there and sends the call on
the store's resending client (redis-py's Retry: twice more, on ConnectionError) when all are,
else on its one-shot client (no Retry: the loss is StoreUnavailableError). A refusal that
ran nothing is another matter: READONLY (a demoted master, Sentinel names the new one), and on
a Redis Cluster a redirection or TRYAGAIN while a slot moves (``_settled``), are sent again
whatever the command.
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel
from redis.backoff import ExponentialBackoff, NoBackoff

from basra.service.store import keys
from basra.service.store.base import (
    Commit,
    EventEntry,
    EventPage,
    Heartbeat,
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
from basra.service.store.redis_cluster import close_cluster, fold_asking
from basra.service.store.redis_feed import RedisFeed
from basra.service.tracing import Tracing, store_failed

_UNAVAILABLE: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ClusterError,
    redis_errors.ReadOnlyError,
    redis_errors.TryAgainError,
    OSError,
    TimeoutError,
)
# Error replies of a Redis that cannot serve now (loading, busy with a script, a replica cut off
# from its master, a cluster slot moving or down): the call is unavailable, not wrong.
_UNAVAILABLE_REPLIES: Final = ("LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN")

RESENDS: Final = 2
"""Times a call on the allow-list whose connection was lost is sent again (within its
deadline); also the times a call refused READONLY is."""

# KEYS: match record, events stream, watch access. ARGV: ttl ms, maxlen, version, record, then
# the entry's field/value pairs. Answers 1 when created, or when the match holds this very
# record (this create ran already: its record carries the hashes of seat tokens drawn for it
# alone, so no other create writes the same bytes); 0 when the id holds another match.
# The watch access is made empty (no watch token yet): every key a commit names then exists,
# which a Cluster master importing the match's slot needs to run the commit before the move
# ends (a multi-key command naming a key it does not hold is refused TRYAGAIN).
_CREATE: Final = """
local current = redis.call('GET', KEYS[1])
if current then return current == ARGV[4] and 1 or 0 end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], ARGV[3] .. '-0', unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], '', 'PX', ARGV[1])
return 1
"""

# KEYS: match record, events stream, watch access. ARGV: ttl ms, maxlen, expected version
# (8-byte prefix), new version, new record, wake channel, then the entry's field/value pairs.
# Answers 1 when applied; else the current record (false when the match is gone): another
# change won the race, and the caller decides again without a GET. A change not applied
# touches nothing, the watch access's expiry included.
# The watch access of a match whose create did not make it (a match made by an earlier version
# of the store) is made empty by its first commit. The wake channel is no key: it shares the
# match's hash tag, so its slot.
_COMMIT: Final = """
if redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[3] then
  return redis.call('GET', KEYS[1])
end
redis.call('SET', KEYS[1], ARGV[5], 'PX', ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], ARGV[4] .. '-0', unpack(ARGV, 7))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if redis.call('PEXPIRE', KEYS[3], ARGV[1]) == 0 then
  redis.call('SET', KEYS[3], '', 'PX', ARGV[1])
end
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

# KEYS: the match's presence set. ARGV: now (epoch ms), the marks' expiry (epoch ms), ttl ms,
# replica, the number of live seats, the live seats, then the gone seats. Drops the expired
# marks, removes this replica's gone seats' marks, then renews its live seats' marks (and the
# key's TTL), so that a seat both gone and live stays marked, as in the embedded store: a
# stream of it is open. Answers the members still unexpired ("<seat>:<replica>").
_HEARTBEAT: Final = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local live = tonumber(ARGV[5])
for i = 6 + live, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i] .. ':' .. ARGV[4]) end
for i = 6, 5 + live do redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i] .. ':' .. ARGV[4]) end
if live > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
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
_HEARTBEAT_SCRIPT: Final = _script(_HEARTBEAT)

_SCRIPT_NAMES: Final = {
    text: name
    for script, name in (
        (_CREATE_SCRIPT, "create"),
        (_COMMIT_SCRIPT, "commit"),
        (_SWAP_WATCH_SCRIPT, "swap_watch"),
        (_HEARTBEAT_SCRIPT, "heartbeat"),
    )
    for text in (script.sha, script.source)
}
"""The store's scripts' names, by SHA-1 (EVALSHA) and by source (EVAL): what a span shows."""


def _summary(commands: Sequence[Command]) -> str:
    """A round trip's commands by name, each script by its name: never a key or an argument
    (a span's name and ``db.query.summary``)."""
    names = []
    for command in commands:
        name = _text(command[0]).upper()
        if name in ("EVALSHA", "EVAL"):
            name += " " + _SCRIPT_NAMES.get(_text(command[1]), "script")
        elif name == "MEMORY":
            name += " " + _text(command[1]).upper()
        names.append(name)
    return " ".join(names)


RESENDABLE: Final[Mapping[str, str]] = {
    # Command name: why sending it again after it may have run is the same as running it once.
    "GET": "a read: it changes nothing",
    "XRANGE": "a read: it changes nothing",
    "ZRANGEBYSCORE": "a read (a match's connected seats): it changes nothing",
    "MEMORY": "MEMORY USAGE, a read: it changes nothing",
    "SET": "only the health probe's (checked by key in resendable): one constant byte, a fixed"
    " relative expiry; twice leaves the key as once does",
    # Not here: EVAL/EVALSHA of any script but those in RESENDABLE_SCRIPTS, and every command
    # the store does not send.
}
"""Commands the store may send again after a lost connection, each with the reason."""

RESENDABLE_SCRIPTS: Final[Mapping[str, str]] = {
    # Script SHA-1: why running it again after it ran changes nothing.
    _CREATE_SCRIPT.sha: "create-if-absent: run again after it applied, it finds its own record"
    " (the seat token hashes drawn for this create alone make it unique) and answers created"
    " again without writing anything; a match of another create answers not created",
    _COMMIT_SCRIPT.sha: "the commit is a compare-and-set on the match's version: run again after"
    " it applied, it finds the version it wrote, applies nothing and answers that record (the"
    " caller sees a lost race and decides again on it: a seat's own request is answered from"
    " its request record, never played twice)",
    _HEARTBEAT_SCRIPT.sha: "presence marks set to an expiry fixed before sending, removed, and"
    " expired ones dropped: run again, it sets the same scores, removes what is gone already"
    " and restarts the key's TTL a moment later",
    # Not here: the watch-access swap (a compare-and-swap that, run again after it applied,
    # answers "not swapped": the caller reads again, draws a new salt and revokes again).
}
"""Scripts (by SHA-1) the store may run again after a lost connection, each with the reason."""


def resendable(command: Sequence[Any]) -> bool:
    """Whether ``command`` (name and arguments, as sent) is on the allow-list."""
    name = _text(command[0]).upper()
    if name == "EVALSHA":
        return _text(command[1]) in RESENDABLE_SCRIPTS
    if name == "EVAL":
        return _script(_text(command[1])).sha in RESENDABLE_SCRIPTS
    if name == "SET":
        return _text(command[1]) == keys.PROBE
    return name in RESENDABLE


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _refused_unrun(exc: BaseException) -> bool:
    """A READONLY refusal: the command ran nowhere. redis-py's Sentinel-managed connection
    reports it as ConnectionError ("The previous master is now a slave"), raised while handling
    the ReadOnlyError, after closing the connection; the next one asks Sentinel again."""
    if isinstance(exc, redis_errors.ReadOnlyError):
        return True
    return isinstance(exc, redis_errors.ConnectionError) and isinstance(
        exc.__context__, redis_errors.ReadOnlyError
    )


Command = tuple[bytes | str | int | float, ...]


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
        self.tracing: Tracing | None = None
        """Traces: a client span per round trip of a traced call (set by the server)."""
        self._ttl_ms = int(ttl_s * 1000)
        # A finished match is kept this long after its last play (None: like an idle one).
        self._finished_ttl_ms = int((finished_ttl_s or ttl_s) * 1000)
        self._maxlen = events_maxlen
        self._timeout_s = timeout_s
        self._watch_poll_s = watch_poll_s
        # The deadline of each call is the asyncio.timeout in _call, covering the wait for a
        # connection, the write and the read together. No socket timeout (redis-py's default is
        # 5 s): with one, redis-py writes every command under asyncio.wait_for, a task and two
        # timers more per command, and on a Cluster, on Python 3.11, that wait_for returns the
        # write's result instead of raising a cancellation that lands as the write completes,
        # so a call's deadline could be lost (a create in a moving slot then retried for ever).
        options: dict[str, Any] = {
            "socket_connect_timeout": timeout_s,
            "socket_timeout": None,
            "decode_responses": False,
        }
        # The resending client: after a Redis restart every pooled connection is dead, and a
        # command on the allow-list that meets one is sent again on a new connection (twice at
        # most, within the call's deadline) instead of failing although Redis is back.
        resending: dict[str, Any] = {
            "retry": Retry(ExponentialBackoff(cap=0.05, base=0.005), retries=RESENDS),
            "retry_on_error": [redis_errors.ConnectionError],
        }
        # The one-shot client: a lost connection fails the call (it may have run).
        once: dict[str, Any] = {"retry": Retry(NoBackoff(), 0)}
        # The pool is shared out: a quarter (one at least) to the one-shot client, which sends
        # the rarer calls (creations, watch-access swaps), the rest (one at least) to the
        # resending one; each has as many connections (per node, on a Cluster) as calls it may
        # have in flight. Calls beyond that wait for a slot instead of failing for want of a
        # connection.
        once_size = max(1, pool_size // 4)
        resending_size = max(1, pool_size - once_size)
        self._slots = asyncio.Semaphore(resending_size)
        self._once_slots = asyncio.Semaphore(once_size)
        self._sentinels: list[Sentinel] = []
        self._redis: Redis | RedisCluster
        """The resending client (the change feed's connections are made like its own)."""
        self._once: Redis | RedisCluster
        """The one-shot client."""
        # WatchMatch streams hold no connection: each replica's one change feed (feed()) waits
        # for all of them, on a connection per Redis node of its own.
        self._feeds: list[RedisFeed] = []
        if cluster:

            def cluster_client(size: int, retries: dict[str, Any]) -> RedisCluster:
                return fold_asking(
                    RedisCluster.from_url(url, max_connections=size, **options, **retries)
                )

            self._redis = cluster_client(resending_size, resending)
            self._once = cluster_client(once_size, once)
        elif url.startswith(SENTINEL_SCHEMES):
            self._redis, sentinel = sentinel_master(
                url, {**options, **resending, "max_connections": resending_size}
            )
            parsed = parse_sentinel_url(url)
            self._once = sentinel.master_for(
                parsed.master, db=parsed.db, max_connections=once_size, **once
            )
            self._sentinels = [sentinel]
        else:

            def client(size: int, retries: dict[str, Any]) -> Redis:
                return Redis.from_url(
                    url, max_connections=size, health_check_interval=30, **options, **retries
                )

            self._redis = client(resending_size, resending)
            self._once = client(once_size, once)

    def _client(
        self, commands: Sequence[Command]
    ) -> tuple[Redis | RedisCluster, asyncio.Semaphore]:
        """The client for a call of ``commands``, and its slots: the resending one only when
        every command is on the allow-list (``resendable``)."""
        if all(resendable(c) for c in commands):
            return self._redis, self._slots
        return self._once, self._once_slots

    async def _send(self, *commands: Command, raise_on_error: bool = True) -> list[Any]:
        """Send ``commands`` in one round trip (one command, or one pipeline that is not a
        transaction) within the call's deadline, on the client the allow-list picks; their
        replies, in order. A failed command raises its error, or with ``raise_on_error``
        False leaves it in its place. A call refused READONLY is sent again (``RESENDS``
        times at most): it ran nowhere."""
        client, slots = self._client(commands)

        async def attempt() -> list[Any]:
            if len(commands) == 1:
                try:
                    return [await client.execute_command(*commands[0])]
                except redis_errors.ResponseError as exc:
                    if raise_on_error or _refused_unrun(exc):
                        raise
                    return [exc]
            # As a context manager the pipeline gives its connection back (or closes it) however
            # the call ends, cancelled by the deadline included; else a cancelled call's socket
            # stays checked out of the pool until garbage collection finds it open.
            async with client.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                # Errors in place, raised here as Redis said them (a pipeline's own raise
                # rewrites their text).
                replies: list[Any] = await pipe.execute(raise_on_error=False)
            for reply in replies:
                if isinstance(reply, redis_errors.ReadOnlyError) or (
                    raise_on_error and isinstance(reply, Exception)
                ):
                    raise reply
            return replies

        async def send() -> list[Any]:
            for tries in range(RESENDS + 1):
                try:
                    return await attempt()
                except (redis_errors.ReadOnlyError, redis_errors.ConnectionError) as exc:
                    if tries == RESENDS or not _refused_unrun(exc):
                        raise
            raise AssertionError("unreachable")

        tracing = self.tracing
        span = None if tracing is None else tracing.store(_summary(commands), len(commands))
        if span is None:
            replies: list[Any] = await self._call(send, slots)
            return replies
        try:
            replies = await self._call(send, slots)
        except BaseException as exc:
            store_failed(span, exc)
            raise
        finally:
            span.end()
        return replies

    async def _call(self, operation: Callable[[], Awaitable[Any]], slots: asyncio.Semaphore) -> Any:
        """Run ``operation()`` within the call's deadline, once one of ``slots`` is free, again
        while a Cluster slot it names is moving (see ``_settled``)."""
        task = asyncio.current_task()
        moving: list[BaseException] = []
        try:
            async with asyncio.timeout(self._timeout_s):
                # The others queue here, within the deadline.
                async with slots:
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
            if isinstance(exc, TimeoutError):
                raise StoreUnavailableError(
                    f"TimeoutError: Redis did not answer within {self._timeout_s:g} s"
                ) from exc
            raise StoreUnavailableError(f"{type(exc).__name__}: {exc}") from exc
        except redis_errors.ResponseError as exc:
            if str(exc).startswith(_UNAVAILABLE_REPLIES):
                raise StoreUnavailableError(str(exc)) from exc
            raise
        if task is not None and task.cancelling():
            # redis-py can swallow a cancellation that lands mid-command and answer normally: the
            # caller asked to stop (a server stopping its health watchdog waited forever on it).
            raise asyncio.CancelledError
        return result

    async def _script(self, script: _Script, keys: list[str], args: list[Any]) -> Any:
        """Run a script by its SHA-1, sending its source only when Redis does not hold it
        (after a restart, or SCRIPT FLUSH): one round trip, nearly always."""
        for run, body in (("EVALSHA", script.sha), ("EVAL", script.source)):
            (ran,) = await self._send((run, body, len(keys), *keys, *args), raise_on_error=False)
            if isinstance(ran, redis_errors.NoScriptError):
                continue  # nothing ran: EVAL runs it and keeps it for the next EVALSHA
            if isinstance(ran, redis_errors.OutOfMemoryError):
                raise StoreFullError(str(ran))
            if isinstance(ran, redis_errors.ResponseError) and str(ran).startswith(
                _UNAVAILABLE_REPLIES
            ):
                raise StoreUnavailableError(str(ran)) from ran
            if isinstance(ran, Exception):
                raise ran
            return ran
        raise AssertionError("EVAL never answers NOSCRIPT")

    async def load(self, match_id: str) -> MatchRecord | None:
        (data,) = await self._send(("GET", keys.match_key(match_id)))
        return None if data is None else decode_record(match_id, data)

    async def create(self, new: NewMatch) -> bool:
        record = new.record
        match_id = record.match_id
        names = [keys.match_key(match_id), keys.events_key(match_id), keys.watch_key(match_id)]
        args = [
            self._ttl_ms,
            self._maxlen,
            record.version,
            encode_record(record),
            *_entry_fields(new.entry),
        ]
        return bool(await self._script(_CREATE_SCRIPT, names, args))

    async def commit(self, match_id: str, commit: Commit) -> bool:
        applied, _ = await self.commit_or_current(match_id, commit)
        return applied

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        names = [keys.match_key(match_id), keys.events_key(match_id), keys.watch_key(match_id)]
        ttl_ms = self._finished_ttl_ms if commit.finished else self._ttl_ms
        args = [
            ttl_ms,
            self._maxlen,
            version_prefix(commit.expected_version),
            commit.record.version,
            encode_record(commit.record),
            # The wake channel is an argument, not a key: an importing Cluster node refuses a
            # script naming a key it does not hold (see _CREATE).
            keys.wake_channel(match_id),
            *_entry_fields(commit.entry),
        ]
        answer = await self._script(_COMMIT_SCRIPT, names, args)
        if answer == 1:
            return True, None
        return False, decode_record(match_id, answer) if answer else None

    async def events(self, match_id: str, after_version: int) -> EventPage:
        return (await self.events_many({match_id: after_version}))[match_id]

    async def events_many(self, after: Mapping[str, int]) -> dict[str, EventPage]:
        # Per match, the oldest entry, then those after: all in one pipeline (on a Cluster,
        # redis-py sends one per node).
        commands: list[Command] = []
        for match_id, version in after.items():
            key = keys.events_key(match_id)
            commands.append(("XRANGE", key, "-", "+", "COUNT", 1))
            commands.append(("XRANGE", key, "(" + keys.stream_id(version), "+"))
        found = await self._send(*commands)
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
        found = await self._send(*(("GET", keys.watch_key(match_id)) for match_id in match_ids))
        return {
            # Empty: the match's create made it, and no seat has asked for a watch token.
            match_id: decode_watch_access(data) if data else None
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
        return bool(await self._script(_SWAP_WATCH_SCRIPT, names, args))

    async def heartbeat(
        self, replica: str, beats: Mapping[str, Heartbeat], now: float, ttl_s: float
    ) -> dict[str, frozenset[int]]:
        # One script per match (its key's slot), all in one pipeline: one round trip a beat.
        now_ms = int(now * 1000)
        ttl_ms = max(1, int(ttl_s * 1000))
        commands: list[Command] = []
        for match_id, beat in beats.items():
            key = keys.presence_key(match_id)
            args: Command = (now_ms, now_ms + ttl_ms, ttl_ms, replica, len(beat.live))
            commands.append(
                ("EVALSHA", _HEARTBEAT_SCRIPT.sha, 1, key, *args, *beat.live, *beat.gone)
            )
        if not commands:
            return {}
        replies = await self._send(*commands, raise_on_error=False)
        if any(isinstance(r, redis_errors.NoScriptError) for r in replies):
            # Redis lost its scripts (a restart, SCRIPT FLUSH): the same beat with the source.
            # Nothing ran for those, and running the others again changes nothing.
            sent = [("EVAL", _HEARTBEAT_SCRIPT.source, *command[2:]) for command in commands]
            replies = await self._send(*sent, raise_on_error=False)
        for reply in replies:
            if isinstance(reply, redis_errors.OutOfMemoryError):
                raise StoreFullError(str(reply))
            if isinstance(reply, redis_errors.ResponseError) and str(reply).startswith(
                _UNAVAILABLE_REPLIES
            ):
                raise StoreUnavailableError(str(reply)) from reply
            if isinstance(reply, Exception):
                raise reply
        return {
            match_id: _seats_of(members) for match_id, members in zip(beats, replies, strict=True)
        }

    async def connected(self, match_ids: Collection[str], now: float) -> dict[str, frozenset[int]]:
        since = f"({int(now * 1000)}"
        found = await self._send(
            *(("ZRANGEBYSCORE", keys.presence_key(m), since, "+inf") for m in match_ids)
        )
        return {m: _seats_of(members) for m, members in zip(match_ids, found, strict=True)}

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
        await self._send(("SET", keys.PROBE, b"1", "PX", 60_000))

    async def close(self) -> None:
        for feed in self._feeds:
            await feed.close()
        for client in (self._redis, self._once):
            if isinstance(client, RedisCluster):
                await close_cluster(client)  # aclose alone can leave connections open
            else:
                await client.aclose()
        for sentinel in self._sentinels:
            for client in sentinel.sentinels:
                await client.aclose()

    async def memory_usage(self, match_id: str) -> tuple[int, int]:
        """Bytes Redis uses for the match record and for its event stream (benchmarks)."""
        record, stream = await self._send(
            ("MEMORY", "USAGE", keys.match_key(match_id), "SAMPLES", 0),
            ("MEMORY", "USAGE", keys.events_key(match_id), "SAMPLES", 0),
        )
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
    # The sentinels get the URL's options (password, TLS), not the pool size, and a socket
    # timeout (the connect timeout): a sentinel that stops answering must not hold the
    # master's discovery, wherever it runs.
    sentinel_options = {k: v for k, v in options.items() if k != "max_connections"}
    sentinel_options["socket_timeout"] = options.get("socket_connect_timeout")
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


def _entry_fields(entry: EventEntry) -> list[bytes | str]:
    fields: list[bytes | str] = [keys.COMMAND, entry.command, keys.EVENTS, entry.events]
    for seat, cards in enumerate(entry.private):
        if cards:
            fields += [keys.private_field(seat), cards]
    return fields


def _seats_of(members: list[bytes]) -> frozenset[int]:
    """The seats of a presence set's members (``<seat>:<replica>``)."""
    return frozenset(int(member.split(b":", 1)[0]) for member in members)


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
