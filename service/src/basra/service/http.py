"""BasraService over HTTP: Connect (binary and JSON) and gRPC-Web on one port, with CORS, a
plain ``GET /healthz`` and the web table's static files; a gRPC call here is answered
UNIMPLEMENTED with a message naming the gRPC port.

The RPCs are the transport-neutral core's (``Servicer.handle``): this module only turns HTTP
headers into a ``Caller`` and a ``ServiceError`` into a Connect error whose details are the same
google.rpc messages the gRPC port sends (ErrorInfo, BadRequest, RetryInfo). connectrpc (the
official Python Connect runtime) speaks the three protocols; messages stay google.protobuf ones
(our own codecs below), and connectrpc's own message runtime only wraps the detail bytes.

Served by granian (hyper's HTTP/1.1, and cleartext HTTP/2 when a gateway needs it, in Rust)
embedded in the server's own event loop through its public embedding API (``Server`` of
``granian.server.embed``, ASGI without lifespan). The bounds on what a client may hold (calls,
requests still arriving, responses it does not read) are this application's, through the ASGI
interface; those on streams, headers and idle connections are hyper's, through granian's public
options (docs/design.md, "The HTTP port", says why granian and what each bound costs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import mimetypes
import resource
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
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
from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings, HTTP2Settings
from granian.log import LogLevels
from granian.server.embed import Server
from protobuf.wkt import Any as DetailAny

from basra.service.config import Settings, resolve_listen
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
        exchange = _Exchange(receive)
        bounded = self._send_deadline.bound(send, exchange)
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
        after, ResponseStalledError (the call ends, and granian closes its stream). Once the
        client has left (``exchange``), nothing is sent: nobody is there to read it."""
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
    whether the client has left (the server said ``http.disconnect``)."""

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
    protocol (Connect or gRPC-Web) when it reads the request."""

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
        if not _headers_decode(scope):
            # connectrpc decodes every header as UTF-8: one that is not is a client's error,
            # answered here before it could raise inside the library (an HTTP 500).
            await _respond(send, 400, b"header values must be UTF-8 text\n")
            return
        origin = _header(scope, b"origin")
        cors = self._cors(origin)
        if scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method"):
            await self._preflight(cors, send)
            return
        if cors:
            send = _with_headers(send, cors)
        path: str = scope["path"]
        if path.startswith(RPC_PREFIX) and _is_grpc(scope):
            await _respond_grpc_elsewhere(send)
        elif path.startswith(RPC_PREFIX):
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
        """The web root's file ``path`` names, or None: nothing outside the root, no dotfile,
        and no path that cannot name one of its files (a NUL, past ``MAX_PATH`` characters or
        ``MAX_PATH_PARTS`` parts) ever reaches the file system."""
        if self.web_root is None:
            return None
        relative = path.lstrip("/") or INDEX
        parts = relative.split("/")
        if len(relative) > MAX_PATH or len(parts) > MAX_PATH_PARTS or "\0" in relative:
            return None
        if any(part.startswith(".") for part in parts):
            return None  # dotfiles (.env, .git) are never served, whatever the web root holds
        try:
            candidate = (self.web_root / relative).resolve()
            if not candidate.is_relative_to(self.web_root):
                return None
            if candidate.is_dir():
                candidate = candidate / INDEX
            return candidate if candidate.is_file() else None
        except (OSError, ValueError):
            return None  # a name the file system refuses (too long a part, say) is no file


MAX_PATH: Final = 1024
"""The longest path (characters) the web root is searched for: its files' are a few dozen."""
MAX_PATH_PARTS: Final = 16
"""The most parts (between slashes) a path the web root is searched for may have."""


def _headers_decode(scope: Scope) -> bool:
    """Whether every header of the request is UTF-8 text (what connectrpc decodes them as)."""
    try:
        for key, value in scope.get("headers", ()):
            bytes(key).decode()
            bytes(value).decode()
    except UnicodeDecodeError:
        return False
    return True


GRPC_ELSEWHERE: Final = (
    "gRPC is served on the gRPC port; this HTTP port serves Connect and gRPC-Web"
)
"""What a gRPC call on the HTTP port is answered (UNIMPLEMENTED): granian, which serves this
port, passes no response trailers through ASGI, and a gRPC response ends with them."""


def _is_grpc(scope: Scope) -> bool:
    """Whether a request is a gRPC call (``application/grpc``, ``application/grpc+proto``...),
    not a gRPC-Web one."""
    kind = (_header(scope, b"content-type") or "").lower()
    return kind.startswith("application/grpc") and not kind.startswith("application/grpc-web")


async def _respond_grpc_elsewhere(send: Send) -> None:
    """A trailers-only gRPC response: the status is in the headers, the stream ends with
    them (no body, no trailers)."""
    headers = [
        (b"content-type", b"application/grpc"),
        (b"grpc-status", str(grpc.StatusCode.UNIMPLEMENTED.value[0]).encode()),
        (b"grpc-message", GRPC_ELSEWHERE.encode()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


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
class _Listener:
    """One granian server, listening on one address of the HTTP port."""

    server: Server
    task: asyncio.Task[None]

    def stop(self) -> None:
        """Stop accepting. When granian's serve loop has already ended by itself its workers
        may still be serving: they are stopped as its own shutdown does."""
        if self.task.done():
            self.task = asyncio.create_task(self.server.shutdown())  # type: ignore[no-untyped-call]
        self.server.stop()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        """Give the server ``CLOSE_S`` to finish, then end its task."""
        await asyncio.wait({self.task}, timeout=CLOSE_S)
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@dataclass
class HttpServer:
    """granian serving the HTTP port in this event loop: one server per address its host
    resolves to (``localhost``: the IPv4 and the IPv6 loopback, where the host has both), as
    the gRPC port binds every address of its host."""

    port: int
    app: HttpApp
    listeners: tuple[_Listener, ...]
    _stopping: bool = False

    @property
    def failed(self) -> bool:
        """granian ended without being asked to stop (it should never)."""
        return not self._stopping and any(one.task.done() for one in self.listeners)

    async def stop(self, grace_s: float | None) -> None:
        """Stop accepting; in-flight calls (open streams included) get ``grace_s`` seconds.

        Then the open WatchMatch streams are ended (cleanly: the client resumes from its last
        complete version, as after any drain) and every connection gets ``CLOSE_S`` more to
        close. A connection still open then (a client that reads nothing, or never answers
        the closing HTTP/2 ping) is left to the process's exit: granian stops waiting for it.
        """
        if self._stopping:
            return
        self._stopping = True
        for one in self.listeners:
            one.stop()
        if grace_s:
            await asyncio.wait({one.task for one in self.listeners}, timeout=grace_s)
        for ended in list(self.app.connect.streams):
            _settle(ended)
        await asyncio.gather(*(one.close() for one in self.listeners))


STARTUP_S: Final = 10.0
"""How long granian gets to listen before the start fails."""


async def start_http(app: HttpApp, settings: Settings) -> HttpServer:
    """Listen on ``settings.http_listen`` (every address its host resolves to) and serve
    ``app``; returns once granian accepts connections on each (port 0: on the free port the
    kernel chose for the first, taken on the others too).

    Raises:
        OSError: the address does not resolve to this host's, the port is in use, or
            granian stopped or did not listen within ``STARTUP_S``.
    """
    assert settings.http_listen is not None
    listen = settings.http_listen
    raise_open_files()
    hosts, port = resolve_listen(listen)
    listeners: list[_Listener] = []
    try:
        for address in hosts:
            one, port = await _listen_on(app, settings, listen, address, port, len(hosts))
            listeners.append(one)
    except BaseException:
        for one in listeners:
            one.stop()
            await one.close()
        raise
    return HttpServer(port, app, tuple(listeners))


async def _listen_on(
    app: HttpApp, settings: Settings, listen: str, host: str, port: int, share: int
) -> tuple[_Listener, int]:
    """One granian server on (host, port), serving a ``share``-th of the connections the
    port serves at once; returns it with the port it listens on."""
    # granian binds its own socket with SO_REUSEPORT: one bound here first (not listening, so
    # it takes no connection) tells a port in use from a free one, and holds port 0's choice
    # until granian listens beside it.
    held = _hold(listen, host, port)
    try:
        port = int(held.getsockname()[1])
        probe = _probe_host(host)
        if await _accepts(probe, port):
            raise OSError(f"cannot listen for HTTP on {listen}: the port is in use")
        server = Server(app, **granian_options(settings, host, port, share))
        task = asyncio.create_task(server.serve(), name=f"basra-http-{host}")
        try:
            await _until_listening(listen, probe, port, task)
        except BaseException:
            server.stop()  # type: ignore[no-untyped-call]
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise
    finally:
        held.close()
    return _Listener(server, task), port


def granian_options(settings: Settings, host: str, port: int, share: int = 1) -> dict[str, Any]:
    """granian's embedded server options for one address of the HTTP port (one of ``share``):
    the ASGI interface without lifespan, HTTP/1.1 (and with ``http2_cleartext`` cleartext
    HTTP/2, prior knowledge or upgrade), with the service's bounds on streams, headers and idle
    connections; its logs through ours.

    HTTP/1.1 alone times out a connection that sends nothing (hyper's header timeout runs from
    the connection's opening); granian's HTTP/1.1-or-HTTP/2 mode reads the first bytes to pick
    the protocol with no timer, so such connections stay as long as their clients keep them
    (docs/design.md, "The HTTP port")."""
    read_timeout_ms = math.ceil(settings.http_read_timeout_s * 1000)
    return {
        "address": host,
        "port": port,
        "interface": Interfaces.ASGINL,
        "http": HTTPModes.auto if settings.http2_cleartext else HTTPModes.http1,
        "websockets": False,
        # Connections not yet accepted wait in the kernel's whole backlog (capped there at
        # net.core.somaxconn, as on the gRPC port): past a short one, a burst of connections
        # (clients reconnecting at once) would be reset unserved.
        "backlog": socket.SOMAXCONN,
        # granian serves at most this many connections at once; the next wait in the backlog.
        "backpressure": max(1, connections_served_at_once(settings) // share),
        "http1_settings": HTTP1Settings(header_read_timeout=read_timeout_ms),
        "http2_settings": HTTP2Settings(
            max_concurrent_streams=settings.http_max_concurrent_streams,
            max_headers_size=MAX_HEADERS_BYTES,
            # A connection from which nothing arrives for the read timeout is pinged, and
            # closed unless the answer arrives within as long again.
            keep_alive_interval=read_timeout_ms,
            keep_alive_timeout=math.ceil(settings.http_read_timeout_s),
        ),
        # Never an access log (request lines hold query strings, which may hold secrets);
        # granian's own records through the JSON formatter (``_relay_granian_logs``).
        "log_access": False,
        "log_enabled": True,
        "log_level": LogLevels.warning,
        "log_dictconfig": _relay_granian_logs(),
    }


def connections_served_at_once(settings: Settings) -> int:
    """How many connections granian serves at once: ``http_max_connections``, but never more
    than half the file descriptors the process may open, which would leave none for the gRPC
    port, the store or files (``raise_open_files`` lifts the soft limit to the hard one at
    start)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return settings.http_max_connections
    return max(1, min(settings.http_max_connections, soft // 2))


def raise_open_files() -> int:
    """Lift the process's soft limit on open files to its hard limit (as Go's runtime does):
    the HTTP port serves as many connections as ``http_max_connections`` says only if the
    process may open twice as many files. Answers the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


MAX_HEADERS_BYTES: Final = 65536
"""The largest header list of an HTTP/2 request (decoded): a request's own headers are a few
hundred bytes, and granian's default of 16 MiB would let a flood of oversized header lists hold
that much per stream before hyper refuses it."""


class _Relay(logging.Handler):
    """Hands granian's log records to ``basra.http.granian``, so that they go through the
    service's JSON formatter (clipped, secrets redacted) like every other line."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == _EXPERIMENTAL:
            return  # logged at each start; docs/design.md says why the port takes that risk
        if _GRANIAN_LOG.isEnabledFor(record.levelno):
            _GRANIAN_LOG.handle(logging.makeLogRecord({**vars(record), "name": _GRANIAN_LOG.name}))


_GRANIAN_LOG: Final = logging.getLogger("basra.http.granian")
_EXPERIMENTAL: Final = "Embedded server is experimental!"
_GRANIAN_LOGGERS: Final = ("_granian", "granian.access")
"""granian's loggers: its server's (the Rust side's records included) and its access log's."""


def _relay_granian_logs() -> dict[str, Any]:
    """granian's logging configuration (applied by its server as it is built): granian's
    loggers keep no handler of their own and print nothing; each hands its records to the
    relay, added here once per process. Incremental, so that no other logger's handlers are
    touched."""
    for name in _GRANIAN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(handler, _Relay) for handler in logger.handlers):
            logger.addHandler(_Relay())
    return {
        "version": 1,
        "incremental": True,
        # In place of granian's own (stdout handlers with their formats): none.
        "formatters": {},
        "handlers": {},
        "loggers": {name: {"propagate": False} for name in _GRANIAN_LOGGERS},
    }


def _hold(listen: str, host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) as granian binds its own (SO_REUSEPORT), not listening."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise OSError(f"cannot listen for HTTP on {listen}: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen for HTTP on {listen}: {exc.strerror}") from exc
    return sock


def _probe_host(host: str) -> str:
    """Where this host reaches a server listening on ``host``."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # noqa: S104


async def _accepts(host: str, port: int) -> bool:
    """Whether a server accepts connections on (host, port)."""
    try:
        _, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


_LISTEN_POLL_S: Final = 0.005


async def _until_listening(listen: str, host: str, port: int, task: asyncio.Task[None]) -> None:
    """Return once granian accepts connections on (host, port): its listener is bound in its
    own threads, and its embedding API has no signal for it, so the port is tried until it
    accepts, within ``STARTUP_S``; granian's task ending first is a failed start."""
    try:
        async with asyncio.timeout(STARTUP_S):
            while not await _accepts(host, port):
                if task.done():
                    error = None if task.cancelled() else task.exception()
                    raise OSError(f"cannot listen for HTTP on {listen}: granian stopped ({error})")
                await asyncio.sleep(_LISTEN_POLL_S)
    except TimeoutError:
        raise OSError(
            f"cannot listen for HTTP on {listen}: granian did not listen within {STARTUP_S:g} s"
        ) from None
