"""BasraService over HTTP: Connect (binary and JSON), gRPC-Web and gRPC on one port, with CORS,
a plain ``GET /healthz`` and the web table's static files.

The RPCs are the transport-neutral core's (``Servicer.handle``): this module only turns HTTP
headers into a ``Caller`` and a ``ServiceError`` into a Connect error whose details are the same
google.rpc messages the gRPC port sends (ErrorInfo, BadRequest, RetryInfo). connectrpc (the
official Python Connect runtime) speaks the three protocols; messages stay google.protobuf ones
(our own codecs below), and connectrpc's own message runtime only wraps the detail bytes.

Served by hypercorn as it ships (``hypercorn.asyncio.serve``), in the server's own event loop:
HTTP/1.1 and cleartext HTTP/2 (prior knowledge or upgrade), with the trailers gRPC needs. The
bounds on what a client may hold (calls, requests still arriving, responses it does not read)
are this application's, through hypercorn's public configuration and the ASGI interface only
(docs/design.md, "The HTTP port", says why hypercorn and what each bound costs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import mimetypes
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc
from connectrpc.code import Code
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor_pb2 import MethodOptions
from google.protobuf.message import DecodeError, Message
from hypercorn.asyncio import serve
from hypercorn.config import Config as HypercornConfig
from protobuf.wkt import Any as DetailAny

from basra.service.config import Settings
from basra.service.errors import ServiceError
from basra.service.limits import TOO_MANY_CALLS, PendingLimitError, RequestDeadline
from basra.service.metrics import Metrics, Tally
from basra.service.servicer import SERVICE, Caller, MalformedRequest, Servicer

log = logging.getLogger("basra.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

RPC_PREFIX: Final = f"/{SERVICE.full_name}/"
HEALTH_PATH: Final = "/healthz"
# What a browser's Connect or gRPC-Web client sends, and what it must be able to read
# (connectrpc's cors recommendations, plus our authorization and x-api-key metadata).
ALLOWED_HEADERS: Final = (
    "authorization",
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "connect-accept-encoding",
    "connect-content-encoding",
    "content-encoding",
    "accept-encoding",
    "grpc-timeout",
    "x-api-key",
    "x-grpc-web",
    "x-user-agent",
)
EXPOSED_HEADERS: Final = (
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "connect-content-encoding",
    "content-encoding",
)
PREFLIGHT_MAX_AGE_S: Final = 7200
# The repository's built web table (a source checkout: service/src/basra/service/ is four folders
# below its root); `make web` builds it. An installed service is given BASRA_WEB_ROOT.
DEFAULT_WEB_ROOT: Final = Path(__file__).resolve().parents[4] / "web" / "dist"
INDEX: Final = "index.html"
# What a built web page is made of, typed without relying on the system's mime.types (the slim
# image has none): a module script served with another type is refused by browsers.
CONTENT_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".wasm": "application/wasm",
    ".webmanifest": "application/manifest+json",
    ".txt": "text/plain; charset=utf-8",
}
CLOSE_S: Final = 1.0
"""After the drain, how long connections get to close before they are cut."""


# -- Codecs: google.protobuf messages, and a request that does not parse reaches the core -------


class _BinaryCodec:
    """Protobuf binary. A body that does not parse becomes a MalformedRequest, which the core
    rejects with INVALID_ARGUMENT and an ErrorInfo (connectrpc would answer without one)."""

    def name(self) -> str:
        return "proto"

    def encode(self, message: Message) -> bytes:
        return message.SerializeToString()

    def decode(self, data: bytes | bytearray, message_class: type[Message]) -> Any:
        try:
            return message_class.FromString(bytes(data))
        except DecodeError:
            return MalformedRequest(message_class.DESCRIPTOR.full_name)


class _JSONCodec:
    """Protobuf JSON (proto3 JSON mapping: lowerCamelCase names, 64-bit integers as strings).
    Unknown fields are ignored, as a newer client's additions must be."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        return json_format.MessageToJson(message, indent=None).encode()

    def decode(self, data: bytes | bytearray, message_class: type[Message]) -> Any:
        message = message_class()
        try:
            json_format.Parse(bytes(data), message, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError):
            return MalformedRequest(message_class.DESCRIPTOR.full_name)
        return message


# -- The adapter: headers -> Caller, ServiceError -> ConnectError ------------------------------


def connect_error(error: ServiceError) -> ConnectError:
    """The Connect form of a rejection: same code, message and google.rpc details (as Any)."""
    details = [
        ErrorDetail(DetailAny(type_url=detail.type_url, value=detail.value))
        for detail in error.status_details().details
    ]
    return ConnectError(_CODES[error.code], error.message, details)


_CODES: Final[dict[grpc.StatusCode, Code]] = {
    code: Code.CANCELED if code is grpc.StatusCode.CANCELLED else Code[code.name]
    for code in grpc.StatusCode
    if code is not grpc.StatusCode.OK
}


def _caller(ctx: RequestContext[Any, Any], ended: asyncio.Future[None]) -> Caller:
    headers = [(key.lower(), value) for key, value in ctx.request_headers.allitems()]
    return Caller(headers, ctx.client_address or "", ended)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _unary(
    core: Servicer, method: str
) -> Callable[[Any, RequestContext[Any, Any]], Awaitable[Any]]:
    async def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        ended = asyncio.get_running_loop().create_future()
        try:
            return await core.handle(method, request, _caller(ctx, ended))
        except ServiceError as error:
            raise connect_error(error) from None
        finally:
            _settle(ended)

    return call


def _streaming(
    core: Servicer, method: str, streams: set[asyncio.Future[None]]
) -> Callable[[Any, RequestContext[Any, Any]], AsyncIterator[Any]]:
    async def call(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        # connectrpc cancels a handler whose client left and closes its generator: the call's
        # end is this generator's end. A draining server ends the open ones (``streams``).
        ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        streams.add(ended)
        try:
            async for response in core.handle_stream(method, request, _caller(ctx, ended)):
                yield response
        except ServiceError as error:
            raise connect_error(error) from None
        finally:
            _settle(ended)
            streams.discard(ended)

    return call


class ConnectApp(ConnectASGIApplication[Servicer]):
    """Every RPC of the contract's service descriptor, as connectrpc endpoints over the core."""

    def __init__(
        self,
        core: Servicer,
        max_message_bytes: int,
        deadline: RequestDeadline,
        send_deadline: SendDeadline,
        refusals: Tally,
    ) -> None:
        self.deadline = deadline
        """The request deadline, and the limit on requests still arriving, of both ports."""
        self._send_deadline = send_deadline
        self._refusals = refusals
        self.calls = deadline.calls
        """The process's calls, this port's among them (open streams included)."""
        self.streams: set[asyncio.Future[None]] = set()
        """The end of every open streaming call."""
        super().__init__(
            service=core,
            endpoints=lambda core: _endpoints(core, self.streams),
            read_max_bytes=max_message_bytes,
            codecs=list(_CODECS),
            compressions=[GzipCompression()],
        )
        self._max_bytes = max_message_bytes

    @property
    def path(self) -> str:
        return "/" + SERVICE.full_name

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve an RPC call: at most the process's call limit at once on both ports, and at
        most its share from one client address (beyond, the call fails RESOURCE_EXHAUSTED at
        once, as the gRPC port answers); its request body within the request deadline (else
        DEADLINE_EXCEEDED / REQUEST_TIMEOUT), as one of a bounded number of requests still
        arriving (``basra.service.limits``); each piece of its response taken by the client
        within the response's wait (else the call is let go: ``SendDeadline``). The body is
        read first (every RPC takes one request message, so a client sends its whole body at
        once), then replayed to connectrpc, which sees the messages the server delivered."""
        calls = self.calls
        client = scope.get("client")
        peer = client[0] if client else ""
        started = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        exchange = _Exchange(receive)
        bounded = self._send_deadline.bound(sending, exchange)
        if not calls.take(peer):
            self._refusals.inc()
            with contextlib.suppress(ResponseStalledError):
                await self(scope, _refusing(_too_many_calls()), bounded)
            return
        calls.http += 1
        try:
            try:
                messages = await self.deadline.within(
                    lambda: _body_messages(exchange.receive, self._max_bytes), peer
                )
            except PendingLimitError:
                self._refusals.inc()
                await self(scope, _refusing(_too_many_calls()), bounded)
                return
            except ServiceError as error:
                await self(scope, _refusing(connect_error(error)), bounded)
                return
            if exchange.gone:
                return  # the client left before its request arrived: nobody to answer
            exchange.replay(messages)
            await self(scope, exchange.receive, bounded)
        except ResponseStalledError:
            pass  # counted by the send deadline; the stream is closed as the call returns
        finally:
            calls.http -= 1
            calls.give(peer)
            if not started:
                # A call that ends unanswered (its client left, or its connection failed and
                # hypercorn cancelled it) gets a bare response start: hypercorn would otherwise
                # answer it 500 itself and wait, for ever on a connection that is gone, to write
                # that answer's end (its connection's task and memory never freed).
                await send({"type": "http.response.start", "status": 499, "headers": []})


class ResponseStalledError(Exception):
    """A piece of a response waited longer than the send deadline for the client to take it."""


@dataclass(frozen=True)
class SendDeadline:
    """How long a piece of a response may wait for the client to take it: a client that reads
    nothing (its HTTP/2 flow-control window left shut) would otherwise hold its calls, and
    their place in the call limit, for as long as it keeps its connection."""

    seconds: float
    stalls: Tally
    """Calls let go because a piece of their response waited longer."""

    def bound(self, send: Send, exchange: _Exchange) -> Send:
        """``send``, each response body piece within ``seconds``; past it, and for every send
        after, ResponseStalledError (the call ends, and hypercorn closes its stream). Once the
        client has left (``exchange``), nothing is sent: hypercorn would wait for ever to write
        to the closed connection."""
        stalled = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal stalled
            if stalled:
                raise ResponseStalledError
            if exchange.gone:
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            try:
                async with asyncio.timeout(self.seconds):
                    await send(message)
            except TimeoutError:
                stalled = True
                self.stalls.inc()
                raise ResponseStalledError from None

        return sending


def _too_many_calls() -> ConnectError:
    """What the gRPC port answers past its limit (gRPC's own message, no details): a new error
    each time, as one raised again and again would keep every raise's traceback."""
    return ConnectError(Code.RESOURCE_EXHAUSTED, TOO_MANY_CALLS)


_ENVELOPE_BYTES: Final = 5
"""A streaming protocol's message prefix (flags, length), beyond the message itself."""


async def _body_messages(receive: Receive, max_bytes: int) -> list[dict[str, Any]]:
    """The request's body messages as the server delivers them: to its end, to the client
    leaving, or past the largest message (its envelope included): the rest is left unread for
    the protocol's own limit to refuse."""
    messages: list[dict[str, Any]] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages
        size += len(message.get("body", b""))
        if size > max_bytes + _ENVELOPE_BYTES:
            return messages


class _Exchange:
    """One call's receiving side: the server's messages, after those read ahead (``replay``);
    whether the client has left (hypercorn said ``http.disconnect``)."""

    __slots__ = ("_pending", "_receive", "gone")

    def __init__(self, receive: Receive) -> None:
        self._pending: deque[dict[str, Any]] = deque()
        self._receive = receive
        self.gone = False

    def replay(self, messages: list[dict[str, Any]]) -> None:
        """Answer ``messages`` (already read) first."""
        self._pending.extend(messages)

    async def receive(self) -> dict[str, Any]:
        if self._pending:
            return self._pending.popleft()
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.gone = True
        return message


def _refusing(error: ConnectError) -> Receive:
    """A receive that fails the call with ``error``: connectrpc answers it in the call's own
    protocol (Connect, gRPC-Web or gRPC) when it reads the request."""

    async def refuse() -> dict[str, Any]:
        raise error

    return refuse


_CODECS: Final = (_BinaryCodec(), _JSONCodec())


_IDEMPOTENCY: Final = {
    MethodOptions.IDEMPOTENCY_UNKNOWN: IdempotencyLevel.UNKNOWN,
    MethodOptions.NO_SIDE_EFFECTS: IdempotencyLevel.NO_SIDE_EFFECTS,
    MethodOptions.IDEMPOTENT: IdempotencyLevel.IDEMPOTENT,
}
"""The contract's idempotency option of each RPC, as connectrpc names it: NO_SIDE_EFFECTS RPCs
also answer Connect GET requests."""


def _endpoints(core: Servicer, streams: set[asyncio.Future[None]]) -> dict[str, Any]:
    endpoints: dict[str, Any] = {}
    for method in SERVICE.methods:
        info: MethodInfo[Any, Any] = MethodInfo(
            name=method.name,
            service_name=SERVICE.full_name,
            input=message_factory.GetMessageClass(method.input_type),
            output=message_factory.GetMessageClass(method.output_type),
            idempotency_level=_IDEMPOTENCY[method.GetOptions().idempotency_level],
            stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
        )
        endpoints[RPC_PREFIX + method.name] = (
            Endpoint.server_stream(info, _streaming(core, method.name, streams))
            if method.server_streaming
            else Endpoint.unary(info, _unary(core, method.name))
        )
    return endpoints


# -- The HTTP application: CORS, /healthz, the RPCs, the web table -----------------------------


@dataclass
class Readiness:
    """Whether /healthz answers 200: the store answered its last ping and the server is not
    draining (the same status as the gRPC health service's "" and BasraService)."""

    serving: bool = False


@dataclass(frozen=True)
class HttpApp:
    """The ASGI application of the HTTP port."""

    connect: ConnectApp
    readiness: Readiness
    cors_origins: frozenset[str] = frozenset()
    web_root: Path | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: not served (the server closes the connection)
        if scope["http_version"] == "1.1" and _framed_twice(scope):
            # RFC 9112, 6.3: a message with both is a request-smuggling risk behind a proxy;
            # answered, and the connection closed (hypercorn closes on "connection: close").
            await _respond(send, 400, b"content-length with transfer-encoding\n", _CLOSE)
            return
        origin = _header(scope, b"origin")
        cors = self._cors(origin)
        if scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method"):
            await self._preflight(cors, send)
            return
        if cors:
            send = _with_headers(send, cors)
        path: str = scope["path"]
        if path.startswith(RPC_PREFIX):
            await self.connect.serve(scope, receive, send)
        elif path == HEALTH_PATH:
            ok = self.readiness.serving
            await _respond(send, 200 if ok else 503, b"ok\n" if ok else b"not serving\n")
        else:
            await self._static(scope, send)

    def _cors(self, origin: str | None) -> list[tuple[bytes, bytes]]:
        """The CORS headers for a request from ``origin``: none unless it is allowed."""
        if origin is None or not (origin in self.cors_origins or "*" in self.cors_origins):
            return []
        return [
            (b"access-control-allow-origin", origin.encode()),
            (b"access-control-expose-headers", ", ".join(EXPOSED_HEADERS).encode()),
            (b"vary", b"Origin"),
        ]

    async def _preflight(self, cors: list[tuple[bytes, bytes]], send: Send) -> None:
        if not cors:
            # A denied origin learns nothing: no CORS headers, so the browser stops there.
            await _respond(send, 403, b"origin not allowed\n", [(b"vary", b"Origin")])
            return
        headers = [
            *cors,
            (b"access-control-allow-methods", b"POST, GET"),
            (b"access-control-allow-headers", ", ".join(ALLOWED_HEADERS).encode()),
            (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode()),
        ]
        await _respond(send, 204, b"", headers)

    async def _static(self, scope: Scope, send: Send) -> None:
        """A file of the web root (GET and HEAD only; nothing outside the root)."""
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", [(b"allow", b"GET, HEAD")])
            return
        file = self._file(scope["path"])
        if file is None:
            await _respond(send, 404, b"not found\n")
            return
        body = await asyncio.to_thread(file.read_bytes)
        kind = CONTENT_TYPES.get(file.suffix.lower()) or (
            mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        )
        headers = [
            (b"content-type", kind.encode()),
            (b"x-content-type-options", b"nosniff"),
            # The page is small and changes with each build: always revalidate.
            (b"cache-control", b"no-cache"),
        ]
        await _respond(send, 200, b"" if scope["method"] == "HEAD" else body, headers, len(body))

    def _file(self, path: str) -> Path | None:
        if self.web_root is None:
            return None
        relative = path.lstrip("/") or INDEX
        if any(part.startswith(".") for part in relative.split("/")):
            return None  # dotfiles (.env, .git) are never served, whatever the web root holds
        candidate = (self.web_root / relative).resolve()
        if not candidate.is_relative_to(self.web_root):
            return None
        if candidate.is_dir():
            candidate = candidate / INDEX
        return candidate if candidate.is_file() else None


_CLOSE: Final = ((b"connection", b"close"),)


def _framed_twice(scope: Scope) -> bool:
    """Whether a request carries both Content-Length and Transfer-Encoding."""
    names = {key.lower() for key, _ in scope.get("headers", ())}
    return b"content-length" in names and b"transfer-encoding" in names


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _with_headers(send: Send, extra: Sequence[tuple[bytes, bytes]]) -> Send:
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    headers: Iterable[tuple[bytes, bytes]] = (),
    length: int | None = None,
) -> None:
    all_headers = [
        *(
            []
            if any(k == b"content-type" for k, _ in headers)
            else [(b"content-type", b"text/plain; charset=utf-8")]
        ),
        (b"content-length", str(len(body) if length is None else length).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def build_app(
    core: Servicer,
    settings: Settings,
    readiness: Readiness,
    deadline: RequestDeadline,
    metrics: Metrics,
) -> HttpApp:
    """The HTTP port's application over ``core``."""
    web_root = Path(settings.web_root) if settings.web_root else DEFAULT_WEB_ROOT
    send_deadline = SendDeadline(settings.response_wait_s, metrics.http_streams_stalled)
    return HttpApp(
        connect=ConnectApp(
            core,
            settings.max_message_bytes,
            deadline,
            send_deadline,
            metrics.http_streams_refused,
        ),
        readiness=readiness,
        cors_origins=frozenset(settings.cors_origins),
        web_root=web_root.resolve() if web_root.is_dir() else None,
    )


# -- The server ----------------------------------------------------------------------------------


@dataclass
class HttpServer:
    """hypercorn serving the HTTP port in this event loop."""

    port: int
    app: HttpApp
    config: HypercornConfig
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    @property
    def failed(self) -> bool:
        """hypercorn ended without being asked to stop (it should never)."""
        return self._task is not None and self._task.done() and not self._stopping.is_set()

    async def stop(self, grace_s: float | None) -> None:
        """Stop accepting; in-flight calls (open streams included) get ``grace_s`` seconds.

        Then the open WatchMatch streams are ended (cleanly: the client resumes from its last
        complete version, as after any drain) and every connection gets ``CLOSE_S`` more to
        close before hypercorn cuts it.
        """
        if self._task is None:
            return
        self.config.graceful_timeout = (grace_s or 0.0) + CLOSE_S
        self._stopping.set()
        if grace_s:
            await asyncio.wait({self._task}, timeout=grace_s)
        for ended in list(self.app.connect.streams):
            _settle(ended)
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def hypercorn_config(settings: Settings) -> HypercornConfig:
    """hypercorn's configuration of the HTTP port: its shipped protections kept (a connection
    closed after ``keep_alive_max_requests`` requests, against HTTP/2 Rapid Reset), with the
    service's bounds on connections, headers and idleness."""
    config = HypercornConfig()
    config.accesslog = None  # never log request lines: their query strings may hold secrets
    config.errorlog = log  # through the JSON formatter, which clips fields and redacts secrets
    config.include_server_header = False
    config.h2_max_concurrent_streams = settings.http_max_concurrent_streams
    config.keep_alive_max_requests = settings.http_max_requests_per_connection
    # A connection from which nothing arrives for this long is closed: hypercorn's idle timer
    # covers HTTP/1.1 and HTTP/2 connections between calls, not one that never opened a stream.
    config.read_timeout = math.ceil(settings.http_read_timeout_s)
    # hypercorn listens with a backlog of 100: in a burst of connections (clients reconnecting
    # at once, or a flood) those past it wait in the kernel unaccepted and are reset after its
    # SYN-ACK retries. The kernel caps this at net.core.somaxconn, as on the gRPC port.
    config.backlog = socket.SOMAXCONN
    return config


async def start_http(app: HttpApp, settings: Settings) -> HttpServer:
    """Listen on ``settings.http_listen`` and serve ``app``; returns once listening."""
    assert settings.http_listen is not None
    config = hypercorn_config(settings)
    listening = _listen(settings.http_listen, config.backlog)
    port = int(listening.getsockname()[1])
    # hypercorn serves the socket by its descriptor (its public "fd://" bind), and closes it.
    config.bind = [f"fd://{listening.detach()}"]
    server = HttpServer(port, app, config)
    server._task = asyncio.create_task(
        serve(
            # Our ASGI types are plain dicts, hypercorn's TypedDicts.
            app,  # type: ignore[arg-type]
            config,
            shutdown_trigger=server._stopping.wait,
            mode="asgi",
        )
    )
    return server


def _listen(listen: str, backlog: int) -> socket.socket:
    """A socket bound to ``listen`` (HOST:PORT, [IPv6]:PORT) and listening at once, so that
    port 0 is known before hypercorn starts and connections made before it accepts wait in the
    backlog instead of being refused."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, ValueError) as exc:
        raise OSError(f"cannot listen for HTTP on {listen}: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen for HTTP on {listen}: {exc.strerror}") from exc
    sock.setblocking(False)
    return sock
