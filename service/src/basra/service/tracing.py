"""OpenTelemetry traces: a server span per call on both ports, child spans for the store's round
trips and the engine's work, a span per bot move, exported over OTLP/gRPC.

Tracing is on when the standard OpenTelemetry environment names an OTLP endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); the SDK reads the
rest of it (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` and
``_ARG``, ``OTEL_BSP_*``, ``OTEL_PROPAGATORS``). Without an endpoint ``from_environment`` answers
None and the service makes no span at all: every traced path is one ``is None`` test.

The spans are made by hand in the transport-neutral core (``Servicer.handle``), not by the gRPC
instrumentation's interceptor or connectrpc's: the gRPC port has no interceptor on purpose (each
costs every call), and the HTTP port serves plain Connect unary calls without connectrpc's
interceptors. One place then traces every call of both ports alike.

What a span holds is chosen, never copied: the RPC's names, codes and reasons, a match id,
versions, command and script names. Never a token, an API key, a request or response body, or a
key or argument of a store command.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Final

import grpc
from opentelemetry import context, propagate, trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.propagators.textmap import Getter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode

from basra.service.errors import ServiceError

log = logging.getLogger("basra.tracing")

EXPORT_AT_EXIT_S: Final = 2.0
"""How long the spans still batched get to reach the collector as the server stops."""

ENVIRONMENT: Final = frozenset(
    {
        "OTEL_SDK_DISABLED",
        "OTEL_TRACES_EXPORTER",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
        "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG",
        "OTEL_PROPAGATORS",
        "OTEL_BSP_SCHEDULE_DELAY",
        "OTEL_BSP_MAX_QUEUE_SIZE",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        "OTEL_BSP_EXPORT_TIMEOUT",
    }
)
"""The standard OpenTelemetry settings that shape the service's traces (read here or by the
SDK): the ones a deployment may set."""
SERVICE_NAME: Final = "basra-engine"
"""The service name when ``OTEL_SERVICE_NAME`` (or ``service.name`` in
``OTEL_RESOURCE_ATTRIBUTES``) gives none."""
RPC_SERVICE: Final = "basra.v1.BasraService"
SAMPLERS: Final = frozenset(
    {
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    }
)
"""The SDK's built-in samplers (``OTEL_TRACES_SAMPLER``)."""
_RATIO_SAMPLERS: Final = frozenset({"traceidratio", "parentbased_traceidratio"})

# Server spans report these codes as errors (the RPC semantic conventions): the others are the
# caller's mistakes, answered as designed.
_SERVER_FAULTS: Final = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
_NO_SPAN: Final = nullcontext()
_ROOT: Final = context.Context()
"""The parent of a call that carries no trace: a new trace starts."""
_DELIVERY: Final = {"rpc.system": "grpc", "rpc.service": RPC_SERVICE, "rpc.method": "WatchMatch"}
_KEPT_SUMMARIES: Final = 64

Metadata = Sequence[tuple[str, Any]]


class _MetadataGetter(Getter[Metadata]):
    """The W3C headers (``traceparent``, ``tracestate``, ``baggage``) of a call's metadata: gRPC
    metadata or HTTP headers, as (lower-case key, value) pairs."""

    def get(self, carrier: Metadata, key: str) -> list[str] | None:
        found = [value for name, value in carrier if name == key and isinstance(value, str)]
        return found or None

    def keys(self, carrier: Metadata) -> list[str]:
        return [name for name, _ in carrier]


_GETTER: Final = _MetadataGetter()


def protocol(metadata: Metadata) -> tuple[str, str]:
    """The port a call came in on (``grpc`` or ``http``) and its protocol (``grpc``,
    ``grpc_web`` or ``connect_rpc``), from its metadata: the gRPC port's metadata never holds a
    ``content-type`` (gRPC takes it), the HTTP port's headers always do."""
    for name, value in metadata:
        if name == "content-type":
            return _protocol(value)
    return _protocol(None)


def _protocol(content_type: object) -> tuple[str, str]:
    """``protocol`` from a call's ``content-type`` (None: it has none)."""
    if content_type is None:
        return "grpc", "grpc"
    kind = content_type if isinstance(content_type, str) else ""
    if kind.startswith("application/grpc-web"):
        return "http", "grpc_web"
    if kind.startswith("application/grpc"):
        return "http", "grpc"
    return "http", "connect_rpc"


class ServerCall:
    """A call's server span, current in the context until ``end``."""

    __slots__ = ("_token", "protocol", "span")

    def __init__(self, span: Span, token: object, protocol: str) -> None:
        self.span = span
        self._token = token
        self.protocol = protocol

    def failed(self, error: ServiceError) -> None:
        """The call answers ``error``: its code, its ``basra.v1`` reason."""
        span = self.span
        if not span.is_recording():
            return
        span.set_attribute("rpc.grpc.status_code", error.code.value[0])
        span.set_attribute("basra.error.reason", error.reason)
        if self.protocol == "connect_rpc":
            span.set_attribute("rpc.connect_rpc.error_code", _connect_code(error.code))
        if error.code in _SERVER_FAULTS:
            span.set_attribute("error.type", error.code.name)
            span.set_status(Status(StatusCode.ERROR, error.reason))

    def cancelled(self) -> None:
        """The call ended because its client left (or the server stopped)."""
        if self.span.is_recording():
            self.span.set_attribute("rpc.grpc.status_code", grpc.StatusCode.CANCELLED.value[0])

    def detach(self) -> None:
        """Not current any more (the span goes on: a stream's setup span, ended later)."""
        if self._token is not None:
            context.detach(self._token)  # type: ignore[arg-type]
            self._token = None

    def end(self, ok: bool) -> None:
        """End the span (``ok``: the call answered OK) and make it not current."""
        self.detach()
        if ok and self.span.is_recording():
            self.span.set_attribute("rpc.grpc.status_code", 0)
        self.span.end()


def _connect_code(code: grpc.StatusCode) -> str:
    return "canceled" if code is grpc.StatusCode.CANCELLED else code.name.lower()


class Tracing:
    """The server's tracer provider and the spans the service makes.

    Every traced call pays for its spans on the event loop (the SDK builds each one) and on the
    export thread (each is encoded to OTLP there), so what is per method or per store round trip
    is worked out once: span names and attribute sets are kept, the caller's context is
    extracted only when its metadata carries a header the propagators read, and the engine's
    spans are never made current (nothing runs under them)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("basra.service")
        # The headers the configured propagators (OTEL_PROPAGATORS) read: a call carrying none
        # of them starts a new trace without running them.
        self._fields = frozenset(propagate.get_global_textmap().fields)
        self._servers: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
        self._stores: dict[str, dict[str, str | int]] = {}

    def server(self, method: str, metadata: Metadata, match_id: str) -> ServerCall:
        """Start the server span of a call of ``method`` (a child of the caller's
        ``traceparent``, its ``baggage`` kept in the context) and make it current."""
        content_type: object = None
        carried = False
        fields = self._fields
        for name, value in metadata:
            if name == "content-type":
                content_type = value
            elif name in fields:
                carried = True
        parent = propagate.extract(metadata, getter=_GETTER) if carried else _ROOT
        port, system = _protocol(content_type)
        known = self._servers.get((method, system))
        if known is None:
            known = self._servers[method, system] = _server_span(method, port, system)
        name, attributes = known
        if match_id:
            attributes = {**attributes, "basra.match_id": match_id[:64]}
        span = self.tracer.start_span(name, parent, SpanKind.SERVER, attributes)
        token = context.attach(trace.set_span_in_context(span, parent))
        return ServerCall(span, token, system)

    def engine(self, name: str) -> AbstractContextManager[Any]:
        """A span for the engine's ``name`` (``apply``, ``deal``, ``plans``, ``new_match``) in
        a traced call or bot move: a child of its span, never current itself (nothing runs
        under it)."""
        if not trace.get_current_span().is_recording():
            return _NO_SPAN
        return _Ended(self.tracer.start_span(f"basra.engine.{name}"))

    def delivered(self, setup: SpanContext, version: int) -> None:
        """A WatchMatch stream sent ``version`` whole: one instant span, a child of the stream's
        setup span, with one ``basra.watch.delivered`` event (a span's events need a span that
        is still open, and the stream's may stay open for hours)."""
        parent = trace.set_span_in_context(trace.NonRecordingSpan(setup))
        span = self.tracer.start_span(
            f"{RPC_SERVICE}/WatchMatch delivery", parent, SpanKind.SERVER, _DELIVERY
        )
        span.add_event("basra.watch.delivered", {"basra.version": version})
        span.end()

    def bot_move(
        self, match_id: str, version: int, level: str, seat: int, deal: bool, cause: SpanContext
    ) -> Span:
        """The span of a bot's move at ``version`` of ``match_id`` (a deal of the next hand, or
        a play): the root of a trace of its own, linked to ``cause``.

        A bot moves after the pace, outside any call: the call whose change handed the bot its
        turn (``cause``, the span current when the replica noticed the move was due) has
        answered by then, and a bots-only match hands each move on to the next for as long as
        it lasts. A child of the cause would end after its parent and make one trace of a whole
        match; a link relates the two traces as OpenTelemetry relates work that outlives the
        work that caused it. ``cause`` is invalid when nothing traced noticed the move: the span
        then has no link.

        The caller makes it current while the move is committed: the commit's engine and store
        spans are its children."""
        attributes: dict[str, str | int] = {
            "basra.match_id": match_id[:64],
            "basra.version": version,
            "basra.bot.level": level,
            "basra.bot.seat": seat,
            "basra.bot.action": "deal" if deal else "play",
        }
        links = (trace.Link(cause),) if cause.is_valid else ()
        return self.tracer.start_span("basra.bot.move", _ROOT, SpanKind.INTERNAL, attributes, links)

    def bot_think(self, move: Span, level: str, pool: bool) -> Span:
        """The span of a bot's thinking (``pool``: in the thinking processes, waiting for one
        included), a child of its ``move``."""
        return self.tracer.start_span(
            "basra.bot.think",
            trace.set_span_in_context(move, _ROOT),
            attributes={
                "basra.bot.level": level,
                "basra.bot.thinking": "process_pool" if pool else "event_loop",
            },
        )

    def store(self, summary: str, commands: int) -> Span | None:
        """A client span for one store round trip of ``commands`` commands (``summary``: their
        names and script names, never keys or arguments), when a traced call makes it."""
        if not trace.get_current_span().is_recording():
            return None
        attributes = self._stores.get(summary)
        if attributes is None:
            attributes = _store_attributes(summary, commands)
            # The summaries are the store's fixed commands and scripts: a handful.
            if len(self._stores) < _KEPT_SUMMARIES:
                self._stores[summary] = attributes
        return self.tracer.start_span(summary, kind=SpanKind.CLIENT, attributes=attributes)

    def shutdown(self, timeout_s: float = EXPORT_AT_EXIT_S) -> bool:
        """Export what is left and stop, within ``timeout_s`` (blocks: call it from a thread).

        The SDK's own shutdown waits up to 30 s for a collector that takes connections and
        never answers; it runs in a daemon thread instead, given ``timeout_s``, so the process
        stops on time and its exit ends whatever export is still waiting. Answers whether the
        export finished (False: the spans still batched are lost, and a warning says so).
        """
        stopping = threading.Thread(
            target=self.provider.shutdown, name="basra-traces-shutdown", daemon=True
        )
        stopping.start()
        stopping.join(timeout_s)
        if stopping.is_alive():
            log.warning(
                "traces not exported at exit: the collector did not answer in time",
                extra={"timeout_s": timeout_s},
            )
            return False
        return True


class _Ended:
    """Ends a span that is not current when its ``with`` block ends; a failure is named by its
    type only (its text may quote a hand's cards), the call's span says how the call ended."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:
            self._span.set_attribute("error.type", kind.__name__)
        self._span.end()


def _server_span(method: str, port: str, system: str) -> tuple[str, dict[str, str]]:
    """The name and the attributes every server span of ``method`` over ``system`` has."""
    return f"{RPC_SERVICE}/{method}", {
        "rpc.system": "grpc" if system != "connect_rpc" else "connect_rpc",
        "rpc.service": RPC_SERVICE,
        "rpc.method": method,
        "basra.port": port,
        "basra.protocol": system,
    }


def _store_attributes(summary: str, commands: int) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {
        "db.system": "redis",
        "db.system.name": "redis",
        "db.operation.name": summary.split(" ", 1)[0] if commands == 1 else "PIPELINE",
        "db.query.summary": summary,
    }
    if commands > 1:
        attributes["db.operation.batch.size"] = commands
    return attributes


def store_failed(span: Span, error: BaseException) -> None:
    """The round trip of ``span`` failed with ``error`` (its type only: a reply's text may quote
    what was sent)."""
    span.set_attribute("error.type", type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, type(error).__name__))


def from_environment() -> Tracing | None:
    """Tracing as the OpenTelemetry environment configures it, or None when it names no OTLP
    endpoint (or ``OTEL_SDK_DISABLED`` is true, or ``OTEL_TRACES_EXPORTER`` is ``none``).

    Raises:
        ValueError: a setting the service cannot honour (another exporter or protocol, an unknown
            sampler, a sampler argument that is not a ratio): configuration fails closed.
    """
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter == "none":
        return None
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if not endpoint:
        return None
    if exporter != "otlp":
        raise ValueError(f"OTEL_TRACES_EXPORTER must be otlp or none, not {exporter!r}")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        wanted = env.get(name, "grpc").strip().lower()
        if wanted != "grpc":
            raise ValueError(f"{name} must be grpc (OTLP over gRPC), not {wanted!r}")
    sampler = env.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
    if sampler not in SAMPLERS:
        raise ValueError(f"OTEL_TRACES_SAMPLER must be one of {sorted(SAMPLERS)}, not {sampler!r}")
    argument = env.get("OTEL_TRACES_SAMPLER_ARG")
    if sampler in _RATIO_SAMPLERS and argument is not None:
        try:
            ratio = float(argument)
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"OTEL_TRACES_SAMPLER_ARG must be a ratio 0..1, not {argument!r}")
    # The SDK reads the rest itself: the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES),
    # the sampler, the batching (OTEL_BSP_*) and the exporter's endpoint, headers and timeout.
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    # Shut down by the server's stop, within a bound (Tracing.shutdown), never by the SDK's
    # exit handler, which would wait for an unanswering collector as long as it likes.
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return Tracing(provider)
