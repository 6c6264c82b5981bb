"""The gRPC server: BasraService, the standard health service, reflection, metrics, draining.

``create_server`` builds and starts a server (tests bind port 0); ``serve`` runs one until
SIGTERM or SIGINT, then drains within ``drain_s`` (see ``BasraServer.stop``): health turns
NOT_SERVING at once, calls are still served for a quarter of the time, then in-flight calls get
the rest to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import signal
import socket
from dataclasses import dataclass, field
from typing import Any, Final

import grpc
import uvloop
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from basra import engine
from basra.service import logs
from basra.service.config import (
    EVENT_LOOPS,
    LISTEN_FORMS,
    Settings,
    flag_name,
    resolve_listen,
)
from basra.service.gc_policy import GcPolicy, PauseTimer
from basra.service.grpc_transport import register, register_bounded
from basra.service.http import HttpServer, Readiness, build_app, start_http
from basra.service.limits import CallLimit, RequestDeadline
from basra.service.metrics import InstrumentedStore, Metrics
from basra.service.servicer import Servicer
from basra.service.store import Store, StoreFullError, StoreUnavailableError
from basra.service.store.memory import MemoryStore
from basra.service.store.redis import RedisStore
from basra.service.tracing import Tracing, from_environment
from basra.v1 import basra_service_pb2

log = logging.getLogger("basra.server")
SERVICE_NAME: Final = basra_service_pb2.DESCRIPTOR.services_by_name["BasraService"].full_name
LIVENESS: Final = "liveness"
"""Health service name for liveness probes: SERVING while the process runs, whatever the store
(a store outage must not restart every replica). Readiness uses SERVICE_NAME (or "")."""


class StartupError(Exception):
    """The server cannot start as configured; the message is one line naming the setting."""


def metrics_host(settings: Settings) -> str:
    """The address the metrics server binds: ``metrics_host``, else the host of ``listen``
    (so a server listening on localhost does not publish its metrics to the network)."""
    if settings.metrics_host is not None:
        return settings.metrics_host.strip("[]")
    host = settings.listen.rpartition(":")[0].strip("[]")
    return host or "::"


def _check_free(listen: str) -> None:
    """Raise OSError when ``listen``'s host is not this machine's or its port is taken, before
    gRPC tries it (and logs a line of its own that would bury the one clear error)."""
    hosts, port = resolve_listen(listen)
    if port == 0:
        return
    for host in hosts:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise OSError(f"port {port} is in use") from None
                # Another family or address gRPC may still manage (no IPv6 here): let it try.


def new_event_loop(name: str) -> asyncio.AbstractEventLoop:
    """A new event loop of the kind ``Settings.event_loop`` names: ``serve`` runs on it, and so
    do the tests' in-process servers (tests/support.py), so the suite runs the production loop.

    Raises:
        ValueError: ``name`` is not one of ``EVENT_LOOPS``.
    """
    loop: asyncio.AbstractEventLoop
    if name == "uvloop":
        loop = uvloop.new_event_loop()
    elif name == "asyncio":
        # The standard library's own loop, whatever event loop policy the process installed
        # (asyncio.new_event_loop() would follow the policy: uvloop.install() makes it uvloop's).
        loop = asyncio.SelectorEventLoop()
    else:
        raise ValueError(f"event loop must be {' or '.join(EVENT_LOOPS)}, not {name!r}")
    # What asyncio would print on stderr goes through the JSON formatter (clipped, redacted).
    loop.set_exception_handler(logs.log_loop_exception)
    return loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """Which of ``EVENT_LOOPS`` ``loop`` is (the "serving" log line says it)."""
    return "uvloop" if isinstance(loop, uvloop.Loop) else "asyncio"


def open_store(settings: Settings) -> Store:
    """The Redis store when a URL is configured, else the embedded one."""
    if settings.redis_url is None:
        return MemoryStore(
            settings.match_ttl_s, settings.events_maxlen, finished_ttl_s=settings.finished_ttl_s
        )
    return RedisStore(
        settings.redis_url,
        cluster=settings.redis_cluster,
        pool_size=settings.redis_pool_size,
        ttl_s=settings.match_ttl_s,
        events_maxlen=settings.events_maxlen,
        timeout_s=settings.store_timeout_s,
        watch_poll_s=settings.watch_poll_s,
        finished_ttl_s=settings.finished_ttl_s,
    )


def grpc_options(settings: Settings) -> list[tuple[str, int]]:
    """The gRPC server's channel options (``make bench`` builds its bare server with them)."""
    return [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.max_concurrent_streams", settings.max_concurrent_streams),
        # Calls whose headers have arrived wait in gRPC core until the event loop accepts them;
        # past 1,000 waiting (its default, 3,000 at the most) core cancels new ones, which cut
        # streams in bursts when thousands of clients (re)connect at once. As many may wait as
        # may run: the call limit bounds them again once accepted (a call past it is refused at
        # once), and core still drops a call that waited 30 s
        # (grpc.server_max_unrequested_time_in_server).
        ("grpc.server.max_pending_requests", settings.max_concurrent_rpcs),
        ("grpc.server.max_pending_requests_hard_limit", settings.max_concurrent_rpcs),
        ("grpc.so_reuseport", 0),
        # Connections are long-lived: ageing them out lets clients spread onto replicas added
        # by the autoscaler. Calls in flight get the grace; a cut WatchMatch resumes by version.
        ("grpc.max_connection_age_ms", 600_000),
        ("grpc.max_connection_age_grace_ms", 30_000),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ]


@dataclass
class BasraServer:
    """A running server and what it owns."""

    grpc_server: grpc.aio.Server
    port: int
    store: Store
    metrics: Metrics
    health: Any  # grpc_health.v1.health.aio.HealthServicer (published untyped)
    metrics_port: int | None = None
    servicer: Servicer | None = None
    http: HttpServer | None = None
    """The HTTP port (Connect, gRPC-Web, /healthz, web table), unless disabled."""
    readiness: Readiness = field(default_factory=Readiness)
    tracing: Tracing | None = None
    """Traces (None: the OpenTelemetry environment names no endpoint)."""
    _watchdog: asyncio.Task[None] | None = field(default=None, repr=False)
    _metrics_http: Any = field(default=None, repr=False)
    _pause_timer: PauseTimer | None = field(default=None, repr=False)
    _gc_policy: asyncio.Task[None] | None = field(default=None, repr=False)

    def start_gc_policy(self, policy: GcPolicy) -> None:
        """Keep full collections short from here on (``basra.service.gc_policy``): the process's
        garbage collector is the process's, so ``serve`` does this and an embedding program
        decides for itself."""
        self._gc_policy = asyncio.create_task(policy.run(), name="basra-gc-policy")

    async def stop(self, drain_s: float | None) -> None:
        """Drain and stop within ``drain_s`` seconds, then close the store.

        The first quarter is notice: health says NOT_SERVING (so health-checking load balancers
        move away) while calls are still served. Then new calls are refused and in-flight ones
        (open WatchMatch streams included) get the rest of the time before they are cut.
        """
        for task in (self._watchdog, self._gc_policy):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.health.enter_graceful_shutdown()
        self.readiness.serving = False
        if drain_s:
            await asyncio.sleep(drain_s / 4)
        grace = drain_s * 3 / 4 if drain_s else drain_s
        stopping = [self.grpc_server.stop(grace)]
        if self.http is not None:
            stopping.append(self.http.stop(grace))
        await asyncio.gather(*stopping)
        if self.servicer is not None:
            await self.servicer.close()
        await self.store.close()
        if self._metrics_http is not None:
            await asyncio.to_thread(self._metrics_http.shutdown)
            self._metrics_http.server_close()
        if self._pause_timer is not None:
            self._pause_timer.remove()
        if self.tracing is not None:
            # The spans still batched are exported before the process goes.
            await asyncio.to_thread(self.tracing.shutdown)

    async def watch_store(self, interval_s: float) -> None:
        """Keep the health status in step with the store: NOT_SERVING while it is unreachable
        or refuses writes (out of memory: every Play and creation would fail STORE_FULL). If the
        HTTP server has stopped by itself, the process is not live any more: liveness turns
        NOT_SERVING too, so that the kubelet restarts it."""
        seen: str | None = None
        messages = {
            "ok": "store reachable",
            "full": "store full (out of memory, refusing writes): NOT_SERVING",
            "down": "store unreachable: NOT_SERVING",
            "bots": "strong bots' thinking processes cannot be started: NOT_SERVING",
        }
        while True:
            if self.http is not None and self.http.failed:
                log.error("the HTTP server stopped: liveness NOT_SERVING")
                await self.health.set(LIVENESS, health_pb2.HealthCheckResponse.NOT_SERVING)
                for name in ("", SERVICE_NAME):
                    await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
                self.readiness.serving = False
                return
            cause = None
            try:
                await self.store.ping()
                state = "ok"
            except StoreFullError:
                state = "full"
            except StoreUnavailableError as exc:
                state = "down"
                cause = str(exc)  # why: refused, timed out, a TLS certificate not trusted
            if state == "ok" and self.servicer is not None and not self.servicer.bots_ready:
                state = "bots"
            if state != seen:
                status = (
                    health_pb2.HealthCheckResponse.SERVING
                    if state == "ok"
                    else health_pb2.HealthCheckResponse.NOT_SERVING
                )
                for name in ("", SERVICE_NAME):
                    await self.health.set(name, status)
                self.readiness.serving = state == "ok"
                self.metrics.store_up.set(0 if state == "down" else 1)
                self.metrics.store_full.set(1 if state == "full" else 0)
                level = logging.INFO if state == "ok" else logging.ERROR
                log.log(level, messages[state], extra={"cause": cause} if cause else {})
                seen = state
            await asyncio.sleep(interval_s)


async def create_server(settings: Settings, store: Store | None = None) -> tuple[BasraServer, int]:
    """Build and start a server on ``settings.listen``; returns it and the bound port.

    Raises:
        StartupError: the gRPC, metrics or HTTP port cannot be bound (the message names the
            flag).
    """
    try:
        tracing = from_environment()
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    metrics = Metrics.create()
    inner = store or open_store(settings)
    if isinstance(inner, RedisStore):
        inner.tracing = tracing
    instrumented = InstrumentedStore(inner, metrics)
    options = grpc_options(settings)
    deadline = RequestDeadline(
        settings.request_timeout_s,
        metrics.request_timeouts.inc,
        # Both ports' calls together, every handler of each counted, and those still waiting
        # for their request message, in all and per client address.
        CallLimit(settings.max_concurrent_rpcs, settings.max_calls_per_peer),
        CallLimit(settings.max_pending_requests, settings.max_pending_per_peer),
    )
    # Read at each scrape, so a call costs nothing more for being counted.
    metrics.calls_in_flight.labels("grpc").set_function(lambda: deadline.calls.grpc)
    metrics.calls_in_flight.labels("http").set_function(lambda: deadline.calls.http)
    # Half-open requests (headers and part of a message, then nothing) each hold a call:
    # bounded in number per process by the call limit, which every handler registered here
    # counts itself in, per connection by max_concurrent_streams, and in time by the request
    # deadline (limits.py). No interceptor and no maximum_concurrent_rpcs: each
    # would cost every call for what these already bound.
    server = grpc.aio.server(options=options)
    core = Servicer(settings, instrumented, metrics, tracing)
    register(server, core, deadline)
    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    register_bounded(
        server, deadline, health_pb2_grpc.add_HealthServicer_to_server, health_servicer
    )
    register_bounded(
        server,
        deadline,
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server,
        # What reflection.enable_server_reflection registers on a grpc.aio server.
        reflection.aio.ReflectionServicer(  # type: ignore[attr-defined]  # published untyped
            (
                SERVICE_NAME,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            )
        ),
    )
    await health_servicer.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)
    # Not ready until the first store check passes (a Check before it answered NOT_FOUND).
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    why = f"the port is in use or the address is not this machine's: {LISTEN_FORMS}"
    try:
        _check_free(settings.listen)
        port = server.add_insecure_port(settings.listen)
    except OSError as exc:
        port, why = 0, str(exc)
    except RuntimeError:
        port = 0  # grpc raises or returns 0, depending on its version
    if port == 0:
        await instrumented.close()
        if tracing is not None:
            tracing.shutdown()
        raise StartupError(f"cannot listen on {settings.listen} ({flag_name('listen')}): {why}")
    metrics_http = None
    if settings.metrics_port is not None:
        host = metrics_host(settings)
        try:
            metrics_http = metrics.serve_http(settings.metrics_port, host)
        except OSError as exc:
            await server.stop(None)
            await instrumented.close()
            if tracing is not None:
                tracing.shutdown()
            raise StartupError(
                f"cannot serve metrics on {host or '*'} port {settings.metrics_port} "
                f"({flag_name('metrics_port')}, {flag_name('metrics_host')}): {exc.strerror or exc}"
            ) from None
    await server.start()
    running = BasraServer(
        server, port, instrumented, metrics, health_servicer, servicer=core, tracing=tracing
    )
    running._pause_timer = PauseTimer(metrics)
    running._pause_timer.install()
    if metrics_http is not None:
        running.metrics_port = int(metrics_http.server_port)
        running._metrics_http = metrics_http
    if settings.http_listen is not None:
        try:
            running.http = await start_http(
                build_app(core, settings, running.readiness, deadline, metrics), settings
            )
        except BaseException as exc:
            await running.stop(0)
            if isinstance(exc, OSError):
                cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
                raise StartupError(
                    f"cannot listen on {settings.http_listen} ({flag_name('http_listen')}): "
                    f"{cause.strerror or cause}"
                ) from None
            raise
    running._watchdog = asyncio.create_task(running.watch_store(settings.health_interval_s))
    return running, port


async def run(settings: Settings) -> None:
    """Serve until SIGTERM or SIGINT, then drain."""
    server, port = await create_server(settings)
    # What exists now (modules, descriptors, the engine's tables) lives as long as the process:
    # out of the collector's sight, a full collection walks only what calls made since (each
    # one pauses every call in flight).
    # Then the policy freezes what lives long as it accumulates (open streams, cached records).
    gc.collect()
    gc.freeze()
    server.start_gc_policy(GcPolicy(server.metrics))
    loop = asyncio.get_running_loop()
    log.info(
        "serving",
        extra={
            "port": port,
            "store": "redis" if settings.redis_url else "embedded",
            "metrics_port": server.metrics_port,
            "http_port": server.http.port if server.http else None,
            # Which engine runs: mypyc-compiled, or the .py sources (no C compiler at build
            # time, or BASRA_ENGINE=pure).
            "engine": "compiled" if engine.COMPILED else "interpreted",
            "event_loop": loop_name(loop),
            # OTLP traces exported (the OpenTelemetry environment names an endpoint).
            "tracing": server.tracing is not None,
        },
    )
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await stopping.wait()
    log.info("draining", extra={"grace_s": settings.drain_s})
    await server.stop(settings.drain_s)
    log.info("stopped")


def serve(settings: Settings) -> None:
    """Entry point of ``basra-engine serve``."""
    logs.setup(settings.log_level)
    with asyncio.Runner(loop_factory=lambda: new_event_loop(settings.event_loop)) as runner:
        runner.run(run(settings))
