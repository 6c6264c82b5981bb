"""Prometheus metrics. Each server has its own registry, served on its metrics port.

The full list, for operators, is in deploy/README.md ("Metrics"). The counters and histograms a
call touches (``Tally``, ``Timing``) are plain numbers that the event loop's thread alone
writes, turned into Prometheus families when scraped: prometheus_client's own take a lock and
check their arguments on every ``inc`` and ``observe``, several times per Play. Gauges and the
counters only the WatchMatch reader touches are prometheus_client's.
"""

from __future__ import annotations

import bisect
import errno
import gc
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from basra.service.errors import ServiceError
from basra.service.store.base import (
    ChangeFeed,
    Commit,
    EventPage,
    Heartbeat,
    MatchRecord,
    NewMatch,
    Store,
    StoreFullError,
    WatchAccess,
)

T = TypeVar("T")
log = logging.getLogger("basra.rpc")
_LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


class Count:
    """One counter's value."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class Tally(Collector):
    """A Prometheus counter (``<name>_total``), optionally labelled, for the event loop's
    thread: ``inc`` is one addition. ``labels`` gives the child of some label values."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], Count] = {}
        self._solo = Count()
        registry.register(self)

    def labels(self, *values: str) -> Count:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = Count()
        return child

    def inc(self, amount: float = 1.0) -> None:
        self._solo.value += amount

    @property
    def value(self) -> float:
        """The count of an unlabelled counter."""
        return self._solo.value

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        if not self._labelnames:
            family.add_metric([], self._solo.value)
        for values, child in list(self._children.items()):
            family.add_metric(list(values), child.value)
        yield family


class Timed:
    """One histogram's counts: per bucket (not cumulative, +Inf last) and the sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # The first bucket whose upper bound is at least the value: Prometheus's "le".
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class Timing(Collector):
    """A Prometheus histogram with labels, for the event loop's thread (see ``Tally``)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        *,
        registry: CollectorRegistry,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._bounds = (*buckets, float("inf"))
        self._children: dict[tuple[str, ...], Timed] = {}
        registry.register(self)

    def labels(self, *values: str) -> Timed:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = Timed(self._bounds)
        return child

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, child in list(self._children.items()):
            total, buckets = 0, []
            for bound, count in zip(child.bounds, list(child.counts), strict=True):
                total += count
                buckets.append((floatToGoString(bound), float(total)))  # type: ignore[no-untyped-call]
            family.add_metric(list(values), buckets, child.sum)
        yield family


@dataclass(frozen=True)
class Metrics:
    """The service's metrics, registered in ``registry``."""

    registry: CollectorRegistry
    calls: Tally
    port_calls: Tally
    rejections: Tally
    latency: Timing
    plays: Tally
    basras: Tally
    matches_created: Tally
    matches_finished: Tally
    hands_dealt: Tally
    version_conflicts: Tally
    idempotent_replays: Tally
    store_latency: Timing
    store_errors: Tally
    store_up: Gauge
    watch_streams: Gauge
    watch_matches: Gauge
    watch_reconnects: Counter
    watch_deliveries: Tally
    record_cache: Tally
    http_streams_refused: Tally
    http_streams_stalled: Tally
    request_timeouts: Tally
    store_full: Gauge
    store_full_writes: Tally
    gc_pauses: Timing
    gc_freezes: Tally
    gc_thaws: Tally
    gc_frozen_garbage: Tally
    gc_frozen: Gauge
    bot_think: Timing
    bot_moves: Tally
    bot_fallbacks: Tally
    bot_worker_deaths: Tally
    bot_workers_ready: Gauge
    bot_thinking: Gauge
    bot_queue: Gauge
    bot_only_matches: Gauge
    calls_in_flight: Gauge
    """The calls held now, by port (``CallLimit``'s counts, read at each scrape)."""
    # Labelled children by label values, resolved once: every call goes through observe_call.
    _calls: dict[tuple[str, str], Count] = field(default_factory=dict, repr=False, compare=False)
    _latency: dict[str, Timed] = field(default_factory=dict, repr=False, compare=False)
    _port_calls: dict[str, Count] = field(default_factory=dict, repr=False, compare=False)

    def calls_finished(self) -> float:
        """The calls finished so far, every method and code (``basra_calls_total``)."""
        return sum(counter.value for counter in self._calls.values())

    def observe_call(
        self,
        method: str,
        match_id: str,
        elapsed: float,
        error: ServiceError | None,
        port: str = "grpc",
    ) -> None:
        """Count, time and log one finished call, whatever transport carried it (``port``:
        ``grpc`` or ``http``)."""
        code = "OK" if error is None else error.code.name
        key = (method, code)
        if (counter := self._calls.get(key)) is None:
            counter = self._calls[key] = self.calls.labels(method, code)
        counter.inc()
        if (on_port := self._port_calls.get(port)) is None:
            on_port = self._port_calls[port] = self.port_calls.labels(port)
        on_port.inc()
        if error is not None:
            self.rejections.labels(port, method, error.reason).inc()
        if (latency := self._latency.get(method)) is None:
            latency = self._latency[method] = self.latency.labels(method)
        latency.observe(elapsed)
        if error is not None:
            log.info(
                "call rejected",
                extra={
                    "method": method,
                    "code": code,
                    "reason": error.reason,
                    "match_id": match_id,
                    "ms": round(elapsed * 1e3, 2),
                },
            )
        elif log.isEnabledFor(logging.DEBUG):
            log.debug(
                "call",
                extra={
                    "method": method,
                    "code": code,
                    "match_id": match_id,
                    "ms": round(elapsed * 1e3, 2),
                },
            )

    @classmethod
    def create(cls) -> Metrics:
        registry = CollectorRegistry(auto_describe=True)
        return cls(
            registry=registry,
            calls=Tally(
                "basra_rpc_calls",
                "RPCs handled, by method and status code",
                ["method", "code"],
                registry=registry,
            ),
            port_calls=Tally(
                "basra_rpc_port_calls",
                "RPCs handled, by the port that served them (grpc, http)",
                ["port"],
                registry=registry,
            ),
            rejections=Tally(
                "basra_rpc_rejections",
                "RPCs answered with an error, by port, method and basra.v1 ErrorInfo reason",
                ["port", "method", "reason"],
                registry=registry,
            ),
            latency=Timing(
                "basra_rpc_latency_seconds",
                "RPC latency, by method",
                ["method"],
                buckets=_LATENCY_BUCKETS,
                registry=registry,
            ),
            plays=Tally("basra_plays", "Plays applied", registry=registry),
            basras=Tally("basra_basras", "Basras scored", registry=registry),
            matches_created=Tally("basra_matches_created", "Matches created", registry=registry),
            matches_finished=Tally(
                "basra_matches_finished",
                "Matches played to their end (the play that ended them)",
                registry=registry,
            ),
            hands_dealt=Tally("basra_hands_dealt", "Hands dealt", registry=registry),
            version_conflicts=Tally(
                "basra_version_conflicts",
                "Commits that lost a compare-and-set race and were retried",
                registry=registry,
            ),
            idempotent_replays=Tally(
                "basra_idempotent_replays",
                "Retries answered from a request_id record",
                registry=registry,
            ),
            store_latency=Timing(
                "basra_store_latency_seconds",
                "Store call latency",
                ["operation"],
                buckets=_LATENCY_BUCKETS,
                registry=registry,
            ),
            store_errors=Tally(
                "basra_store_errors",
                "Store calls that failed (unavailable)",
                ["operation"],
                registry=registry,
            ),
            store_up=Gauge(
                "basra_store_up", "1 when the last store health check passed", registry=registry
            ),
            watch_streams=Gauge(
                "basra_watch_streams", "Open WatchMatch streams", registry=registry
            ),
            watch_matches=Gauge(
                "basra_watch_matches",
                "Matches the replica's shared WatchMatch reader follows (they have open streams)",
                registry=registry,
            ),
            watch_reconnects=Counter(
                "basra_watch_reader_reconnects",
                "Times the shared WatchMatch reader lost its store connection and reconnected",
                registry=registry,
            ),
            watch_deliveries=Tally(
                "basra_watch_deliveries",
                "Events sent on WatchMatch streams",
                registry=registry,
            ),
            record_cache=Tally(
                "basra_record_cache",
                "Changes (Play, next Deal) that started from the record this replica remembered "
                "(hit: no GET) or had to load it (miss)",
                ["result"],
                registry=registry,
            ),
            bot_think=Timing(
                "basra_bot_think_seconds",
                "Wall time a bot of the service took to choose a move (off the event loop for "
                "the strong level), by level",
                ["level"],
                buckets=_LATENCY_BUCKETS,
                registry=registry,
            ),
            bot_moves=Tally(
                "basra_bot_moves",
                "Bot moves (plays and deals) this replica tried, by level and result: applied, "
                "or lost (another replica made the move first, or the match moved on)",
                ["level", "result"],
                registry=registry,
            ),
            bot_fallbacks=Tally(
                "basra_bot_fallbacks",
                "Strong bot moves made greedy instead, by reason: deadline (the search ran past "
                "it: stuck, its process replaced), queue_full, worker_died (the move's process "
                "died twice) or unavailable (no thinking process could be started)",
                ["reason"],
                registry=registry,
            ),
            bot_worker_deaths=Tally(
                "basra_bot_worker_deaths",
                "Strong bots' thinking processes that died (killed, out of memory) and were "
                "replaced",
                registry=registry,
            ),
            bot_workers_ready=Gauge(
                "basra_bot_workers_ready",
                "0 while a strong bots' thinking process cannot be started (the replica is not "
                "ready), else 1",
                registry=registry,
            ),
            bot_thinking=Gauge(
                "basra_bot_thinking",
                "Strong bot moves being thought in the thinking processes now",
                registry=registry,
            ),
            bot_queue=Gauge(
                "basra_bot_queue",
                "Strong bot moves waiting for a thinking process",
                registry=registry,
            ),
            bot_only_matches=Gauge(
                "basra_bot_only_matches",
                "Live matches of bots only this replica created (each counted until it ends)",
                registry=registry,
            ),
            store_full=Gauge(
                "basra_store_full",
                "1 when the last store health check found it refusing writes (out of memory)",
                registry=registry,
            ),
            store_full_writes=Tally(
                "basra_store_full_writes",
                "Store calls refused because the store is out of memory, by operation",
                ["operation"],
                registry=registry,
            ),
            http_streams_refused=Tally(
                "basra_http_streams_refused",
                "HTTP port calls refused at once (RESOURCE_EXHAUSTED): the process's calls, an "
                "address's, or the requests still arriving were at their limit",
                registry=registry,
            ),
            http_streams_stalled=Tally(
                "basra_http_streams_stalled",
                "HTTP port calls let go because a piece of their response waited longer than the "
                "request deadline for the client to take it",
                registry=registry,
            ),
            request_timeouts=Tally(
                "basra_request_timeouts",
                "Calls ended because their request message did not arrive in time",
                registry=registry,
            ),
            gc_pauses=Timing(
                "basra_gc_pause_seconds",
                "Garbage collections of the process and how long each paused it, by generation "
                "(2: a full collection)",
                ["generation"],
                buckets=_LATENCY_BUCKETS,
                registry=registry,
            ),
            gc_freezes=Tally(
                "basra_gc_freezes",
                "Times the long-lived objects were collected and frozen out of full collections",
                registry=registry,
            ),
            gc_thaws=Tally(
                "basra_gc_thaws",
                "Times the frozen objects were unfrozen and collected (they had doubled)",
                registry=registry,
            ),
            gc_frozen_garbage=Tally(
                "basra_gc_frozen_garbage_objects",
                "Garbage found among the frozen objects when they were thawed",
                registry=registry,
            ),
            gc_frozen=_frozen_gauge(registry),
            calls_in_flight=Gauge(
                "basra_calls_in_flight",
                "Calls the replica holds now (open WatchMatch streams included), by port",
                ["port"],
                registry=registry,
            ),
        )

    def serve_http(self, port: int, host: str = "::") -> Any:
        """Expose the metrics on ``host`` and ``port`` (0: a free port); returns the HTTP server
        (``server_port``, ``shutdown()``). ``::`` is every address, IPv4 included; on a host
        without IPv6 it falls back to 0.0.0.0, as gRPC does.

        Raises:
            OSError: the address cannot be bound (in use, or not this host's).
        """
        try:
            server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            if host != "::" or exc.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise
            server, _ = start_http_server(port, addr="0.0.0.0", registry=self.registry)  # noqa: S104
        return server


def _frozen_gauge(registry: CollectorRegistry) -> Gauge:
    frozen = Gauge(
        "basra_gc_frozen_objects",
        "Objects frozen out of the garbage collector's passes, as the freezing policy last "
        "counted them plus those it froze since",
        registry=registry,
    )
    # Counted when scraped until a freezing policy runs (gc_policy.GcPolicy): that walks every
    # frozen object with the interpreter lock held, which the policy's own figure spares.
    frozen.set_function(gc.get_freeze_count)
    return frozen


class InstrumentedStore:
    """A Store that records the latency and failures of every call."""

    def __init__(self, store: Store, metrics: Metrics) -> None:
        self.inner = store
        operations = ("load", "create", "commit", "events", "watch", "presence", "ping")
        # Labelled children resolved once: every call of every play goes through here.
        self._latency = {op: metrics.store_latency.labels(op) for op in operations}
        self._errors = {op: metrics.store_errors.labels(op) for op in operations}
        self._full = {op: metrics.store_full_writes.labels(op) for op in operations}
        self._load_latency = self._latency["load"]
        self._commit_latency = self._latency["commit"]

    async def _timed(self, operation: str, call: Awaitable[T]) -> T:
        start = time.perf_counter()
        try:
            return await call
        except StoreFullError:
            self._full[operation].inc()
            raise
        except Exception:
            self._errors[operation].inc()
            raise
        finally:
            self._latency[operation].observe(time.perf_counter() - start)

    async def load(self, match_id: str) -> MatchRecord | None:
        # The two calls of a Play, written out: _timed would add a coroutine to each.
        start = time.perf_counter()
        try:
            return await self.inner.load(match_id)
        except StoreFullError:
            self._full["load"].inc()
            raise
        except Exception:
            self._errors["load"].inc()
            raise
        finally:
            self._load_latency.observe(time.perf_counter() - start)

    async def create(self, new: NewMatch) -> bool:
        return await self._timed("create", self.inner.create(new))

    async def commit(self, match_id: str, commit: Commit) -> bool:
        return await self._timed("commit", self.inner.commit(match_id, commit))

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        start = time.perf_counter()
        try:
            return await self.inner.commit_or_current(match_id, commit)
        except StoreFullError:
            self._full["commit"].inc()
            raise
        except Exception:
            self._errors["commit"].inc()
            raise
        finally:
            self._commit_latency.observe(time.perf_counter() - start)

    async def events(self, match_id: str, after_version: int) -> EventPage:
        return await self._timed("events", self.inner.events(match_id, after_version))

    async def events_many(self, after: Mapping[str, int]) -> dict[str, EventPage]:
        return await self._timed("events", self.inner.events_many(after))

    async def watch_access(self, match_ids: Collection[str]) -> dict[str, WatchAccess | None]:
        return await self._timed("watch", self.inner.watch_access(match_ids))

    async def swap_watch_access(
        self,
        match_id: str,
        expected: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool,
    ) -> bool:
        swap = self.inner.swap_watch_access(match_id, expected, new, revoke=revoke)
        return await self._timed("watch", swap)

    async def heartbeat(
        self, replica: str, beats: Mapping[str, Heartbeat], now: float, ttl_s: float
    ) -> dict[str, frozenset[int]]:
        beat = self.inner.heartbeat(replica, beats, now, ttl_s)
        return await self._timed("presence", beat)

    async def connected(self, match_ids: Collection[str], now: float) -> dict[str, frozenset[int]]:
        return await self._timed("presence", self.inner.connected(match_ids, now))

    def feed(self, on_reconnect: Callable[[], None]) -> ChangeFeed:
        return self.inner.feed(on_reconnect)

    async def ping(self) -> None:
        await self._timed("ping", self.inner.ping())

    async def close(self) -> None:
        await self.inner.close()
