"""Server settings: every one is a ``basra-engine serve`` flag and an environment variable.

Each setting is declared once, below, with ``setting(default, environment variable, help)``:
its flag (``flag_name``), its ``--help`` line and its entry in ``ENVIRONMENT`` (the single list
of variables the server reads; deploy/ wires each one, a test checks that) all come from there.

Flags win over the environment; the environment wins over the defaults. Configuration fails
closed: a variable that is set but empty is an error (an empty ``BASRA_API_KEY`` must not mean
"no key"), and the server needs a store chosen explicitly: a Redis URL, or ``--store embedded``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, Final

# Accepted Redis URL schemes; the --redis-url help and the check below both use this.
REDIS_SCHEMES: Final = (
    "redis://",
    "rediss://",
    "redis+sentinel://",
    "rediss+sentinel://",
    "unix://",
)
STORES: Final = ("embedded", "redis")
# An origin as browsers send it: scheme, host, optional port; no path, no trailing slash.
_ORIGIN: Final = re.compile(
    r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)
_REFUSED: Final = object()
"""A setting's meaning of an empty value when it has none: the value is refused (fail closed)."""
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
# The event loops the server can run on (basra.service.server.new_event_loop builds them).
EVENT_LOOPS: Final = ("uvloop", "asyncio")


def setting(
    default: Any,
    env: str,
    help: str,
    *,
    secret: bool = False,
    parse: Callable[[str], object] | None = None,
    empty: object = _REFUSED,
    aliases: tuple[str, ...] = (),
) -> Any:
    """Declare a setting: its default, environment variable and help (the flag is derived).

    ``empty`` is what an empty value means for the few settings where "none" is a value (no
    CORS origins); for every other setting an empty value is refused. ``aliases`` are other
    spellings of the flag.
    """
    return field(
        default=default,
        repr=not secret,
        metadata={
            "env": env,
            "help": help,
            "parse": parse,
            "secret": secret,
            "empty": empty,
            "aliases": aliases,
        },
    )


def constant(default: Any, why: str) -> Any:
    """Declare a constant of the server: a value no operator turns, so it has no flag and no
    variable, with ``why`` it is what it is. Tests build ``Settings`` with other values (a
    presence interval of a tenth of a second) to reach a case without waiting for it."""
    return field(default=default, metadata={"env": None, "why": why, "secret": False})


def _port_or_off(text: str) -> int | None:
    if text.lower() == "off":
        return None
    if not text.isdigit() or not 0 <= (port := int(text)) <= 65535:
        raise ValueError(f"must be a port 0-65535 or 'off', not {text!r}")
    return port


@dataclass(frozen=True)
class _OneOf:
    """The parser of a setting that takes one of a few names, in any case; its flag's metavar
    lists them."""

    names: tuple[str, ...]

    def __call__(self, text: str) -> str:
        if text.lower() not in self.names:
            raise self._refusal(text)
        return text.lower()

    def exactly(self, name: str) -> None:
        """Check that ``name`` is one of the names as written (code compares them).

        Raises:
            ValueError: it is not.
        """
        if name not in self.names:
            raise self._refusal(name)

    def _refusal(self, text: str) -> ValueError:
        return ValueError(f"must be {' or '.join(self.names)}, not {text!r}")

    @property
    def metavar(self) -> str:
        return "{" + ",".join(self.names) + "}"


_store: Final = _OneOf(STORES)


def _log_level(text: str) -> str:
    if text.upper() not in LOG_LEVELS:
        raise ValueError(f"must be {', '.join(LOG_LEVELS[:-1])} or {LOG_LEVELS[-1]}, not {text!r}")
    return text.upper()


_event_loop: Final = _OneOf(EVENT_LOOPS)


def _redis_url(text: str) -> str:
    if not text.startswith(REDIS_SCHEMES):
        raise ValueError(
            f"must start with {', '.join(REDIS_SCHEMES)} (not shown: it may hold a password)"
        )
    return text


LISTEN_FORMS: Final = (
    "give HOST:PORT with a host name of this machine (localhost:8080), an IPv4 address "
    "(127.0.0.1:8080, 0.0.0.0:8080) or an IPv6 address in brackets ([::1]:8080, [::]:8080)"
)
"""What a listen address may be: the end of every error about one."""


def split_listen(text: str) -> tuple[str, int]:
    """HOST:PORT or [IPv6]:PORT as (host, port); an empty host is every IPv4 address.

    Raises:
        ValueError: no port, a port out of range, or an IPv6 address without brackets.
    """
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{text!r} has no port from 0 to 65535: {LISTEN_FORMS}")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"{text!r} opens a bracket it does not close: {LISTEN_FORMS}")
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r} needs its IPv6 address in brackets: {LISTEN_FORMS}")
    return host or "0.0.0.0", int(port)  # noqa: S104 (the operator's choice of address)


def resolve_listen(text: str) -> tuple[list[str], int]:
    """The addresses (IP literals) a listen address binds, and its port: every address its host
    resolves to, in the resolver's order and each once, as the gRPC port binds them
    (``localhost``: the IPv4 and IPv6 loopback, where the host has both).

    Raises:
        OSError: the host resolves to no address, in one line that says what would work.
    """
    host, port = split_listen(text)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise OSError(f"{host!r} is not an address of this machine: {LISTEN_FORMS}") from None
    return list(dict.fromkeys(str(address[4][0]) for address in found)), port


def _listen(text: str) -> str:
    split_listen(text)
    return text


def _listen_or_off(text: str) -> str | None:
    return None if text.lower() == "off" else _listen(text)


def _origins(text: str) -> tuple[str, ...]:
    origins = tuple(origin.strip() for origin in text.split(",") if origin.strip())
    for origin in origins:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(f"holds CORS origin {origin!r}: must be scheme://host[:port] or *")
    return origins


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"must be a whole number, not {text!r}") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, not {text!r}") from None
    if not math.isfinite(value):  # nan compares false with every bound; inf lifts them all
        raise ValueError(f"must be a finite number, not {text!r}")
    return value


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be true or false, not {text!r}")


@dataclass(frozen=True, slots=True)
class Settings:
    """How one server process runs. Immutable; build it with ``from_args`` or directly in tests
    (built in code, no ``redis_url`` means the embedded store)."""

    listen: str = setting(
        "[::]:50051",
        "BASRA_LISTEN",
        "gRPC listen address HOST:PORT (a host name, an IPv4 address or [IPv6]; port 0 picks "
        "a free port)",
        parse=_listen,
    )
    store: str | None = setting(
        None,
        "BASRA_STORE",
        "where matches live: 'redis' (needs --redis-url) or 'embedded' (this process only, "
        "lost on exit: development); unset: redis when a Redis URL is given, else an error",
        parse=_store,
    )
    redis_url: str | None = setting(
        None,
        "REDIS_URL",
        "Redis URL, password included: redis://, rediss:// (TLS), redis+sentinel://, "
        "rediss+sentinel:// (TLS to the sentinels and the master) or unix://",
        secret=True,
        parse=_redis_url,
    )
    redis_cluster: bool = setting(
        False, "BASRA_REDIS_CLUSTER", "the Redis URL points at a Redis Cluster node"
    )
    redis_pool_size: int = setting(
        64,
        "BASRA_REDIS_POOL_SIZE",
        "most Redis connections for calls per process (per node, on a Cluster): each call in "
        "flight takes one for its round trip; calls beyond it wait within the store deadline",
    )
    match_ttl_s: int = setting(
        7 * 24 * 3600, "BASRA_MATCH_TTL_SECONDS", "seconds an idle match (no write) is kept"
    )
    finished_ttl_s: int = setting(
        3600,
        "BASRA_FINISHED_TTL_SECONDS",
        "seconds a finished match (MatchEnded) is kept for reading its result and replaying its "
        "events, instead of the idle time",
    )
    allow_seeds: bool = setting(
        False,
        "BASRA_ALLOW_SEEDS",
        "accept caller seeds when creating matches (tests and replays; never in production)",
    )
    api_key: str | None = setting(
        None,
        "BASRA_API_KEY",
        "API key required to create matches (x-api-key metadata); unset: none required",
        secret=True,
    )
    log_level: str = setting(
        "INFO", "BASRA_LOG_LEVEL", "DEBUG, INFO, WARNING or ERROR", parse=_log_level
    )
    event_loop: str = setting(
        "uvloop",
        "BASRA_EVENT_LOOP",
        "the event loop the server runs on: 'uvloop' (libuv, less CPU per call) or 'asyncio' "
        "(the standard library's)",
        parse=_event_loop,
    )
    metrics_host: str | None = setting(
        None,
        "BASRA_METRICS_HOST",
        "address the metrics HTTP server binds; unset: the host of --listen",
    )
    metrics_port: int | None = setting(
        9090,
        "BASRA_METRICS_PORT",
        "Prometheus metrics HTTP port (0 picks a free port; 'off' disables)",
        parse=_port_or_off,
    )
    drain_s: float = setting(
        20.0,
        "BASRA_DRAIN_SECONDS",
        "on SIGTERM or SIGINT, seconds in-flight calls may finish (0: stop at once, development)",
    )
    store_timeout_s: float = setting(
        2.0,
        "BASRA_STORE_TIMEOUT_SECONDS",
        "deadline of each store call, seconds; past it the call fails UNAVAILABLE",
    )
    health_interval_s: float = setting(
        2.0, "BASRA_HEALTH_INTERVAL_SECONDS", "seconds between store health checks"
    )
    max_concurrent_streams: int = setting(
        100,
        "BASRA_MAX_CONCURRENT_STREAMS",
        "concurrent calls per client connection on the gRPC port (HTTP/2 streams)",
    )
    max_concurrent_rpcs: int = setting(
        12000,
        "BASRA_MAX_CONCURRENT_RPCS",
        "concurrent calls per process, open WatchMatch streams included; beyond it calls fail "
        "RESOURCE_EXHAUSTED at once",
    )
    max_calls_per_peer: int = setting(
        6000,
        "BASRA_MAX_CALLS_PER_PEER",
        "concurrent calls per process from one client address (both ports; behind a proxy "
        "every call comes from the proxy's addresses); beyond it calls fail RESOURCE_EXHAUSTED",
    )
    max_pending_requests: int = setting(
        2000,
        "BASRA_MAX_PENDING_REQUESTS",
        "calls per process whose request message is still arriving (both ports); beyond it "
        "calls fail RESOURCE_EXHAUSTED at once",
    )
    max_pending_per_peer: int = setting(
        500,
        "BASRA_MAX_PENDING_PER_PEER",
        "calls from one client address whose request message is still arriving",
    )
    http_max_concurrent_streams: int = setting(
        16,
        "BASRA_HTTP_MAX_CONCURRENT_STREAMS",
        "concurrent calls per client connection on the HTTP port (HTTP/2 streams): a stream "
        "past it is refused (REFUSED_STREAM, which clients retry) before the call limits see "
        "it",
    )
    http_read_timeout_s: float = setting(
        10.0,
        "BASRA_HTTP_READ_TIMEOUT_SECONDS",
        "an HTTP/1.1 connection that sends no complete request head for this long (from its "
        "opening, or from its last response) is closed; with --http2-cleartext, an HTTP/2 "
        "connection from which nothing arrives for this long is pinged, and closed unless the "
        "answer arrives within as long again (WatchMatch streams of a live client stay open)",
    )
    http2_cleartext: bool = setting(
        False,
        "BASRA_HTTP2_CLEARTEXT",
        "the HTTP port speaks cleartext HTTP/2 (prior knowledge or upgrade) besides HTTP/1.1, "
        "for a gateway that speaks it to the pods; a connection that sends nothing is then "
        "never timed out, so the port must sit behind such a gateway (browsers never use "
        "cleartext HTTP/2)",
    )
    http_max_connections: int = setting(
        16384,
        "BASRA_HTTP_MAX_CONNECTIONS",
        "connections the HTTP port serves at once (at most half the process's file "
        "descriptors); the next wait in the kernel's backlog until one closes",
    )
    request_timeout_s: float = setting(
        10.0,
        "BASRA_REQUEST_TIMEOUT_SECONDS",
        "seconds a call's request message may take to arrive after its headers; past it the "
        "call fails DEADLINE_EXCEEDED and gives back its place",
    )
    create_rate: float = setting(
        50.0,
        "BASRA_CREATE_RATE",
        "matches created per second per replica, all callers together (token bucket refill)",
    )
    create_burst: int = setting(
        100, "BASRA_CREATE_BURST", "matches that may be created at once per replica"
    )
    caller_create_rate: float = setting(
        10.0,
        "BASRA_CALLER_CREATE_RATE",
        "matches created per second by one caller (its API key, else its address), per replica",
    )
    caller_create_burst: int = setting(
        50, "BASRA_CALLER_CREATE_BURST", "matches one caller may create at once, per replica"
    )
    http_listen: str | None = setting(
        "[::]:8080",
        "BASRA_HTTP_LISTEN",
        "HTTP listen address (HTTP/1.1 and HTTP/2): Connect and gRPC-Web (gRPC calls are "
        "answered UNIMPLEMENTED: gRPC is served on --listen), /healthz and the web table "
        "(port 0 picks a free port; 'off' disables)",
        parse=_listen_or_off,
    )
    cors_origins: tuple[str, ...] = setting(
        (),
        "BASRA_CORS_ORIGINS",
        "comma-separated browser origins (scheme://host[:port], or * for any) allowed to call "
        "the HTTP port from another origin; empty: none (the web table served on the port "
        "itself needs none)",
        parse=_origins,
        empty=(),
        aliases=("--cors-origin",),
    )
    web_root: str | None = setting(
        None,
        "BASRA_WEB_ROOT",
        "directory served at / on the HTTP port; unset or empty: the repository's web/dist "
        "when present",
        empty=None,
    )

    bot_pace_s: float = setting(
        0.4,
        "BASRA_BOT_PACE_SECONDS",
        "seconds at least between the change that hands a bot seat its turn and the bot's move, "
        "so people see each play (0: at once, tests)",
    )
    bot_workers: int = setting(
        1,
        "BASRA_BOT_WORKERS",
        "processes that think for the strong bots of this replica, off its event loop (about "
        "the pod's CPUs less one)",
    )
    bot_strong_seconds: float = setting(
        0.5,
        "BASRA_BOT_STRONG_SECONDS",
        "most seconds a strong bot searches for one move (it stops after the world in "
        "progress; its budget of rollouts usually ends the search well before)",
    )
    bot_move_deadline_s: float = setting(
        2.0,
        "BASRA_BOT_MOVE_DEADLINE_SECONDS",
        "most seconds a strong bot's search may run in a thinking process (more than "
        "--bot-strong-seconds); past it the bot makes the greedy move instead and the process "
        "is replaced (a stuck search)",
    )
    bot_queue: int = setting(
        64,
        "BASRA_BOT_QUEUE",
        "strong bot moves that may wait for a thinking process per replica, moves of matches "
        "with a person served first; past it a waiting move of a match of bots only makes room "
        "(else the new move does) and is made greedy instead",
    )
    bot_only_matches: int = setting(
        32,
        "BASRA_BOT_ONLY_MATCHES",
        "live matches of bots only (no person seat) per replica, every caller together: "
        "creating one more is refused RESOURCE_EXHAUSTED until one ends",
    )
    bot_only_matches_per_caller: int = setting(
        4,
        "BASRA_BOT_ONLY_MATCHES_PER_CALLER",
        "live matches of bots only one caller (its API key, else its address) may have per "
        "replica: creating one more is refused RESOURCE_EXHAUSTED until one ends",
    )

    # Constants: no operator turns these (each says why it is what it is); tests set them.
    response_wait_s: float = constant(
        10.0,
        "how long a piece of a response on the HTTP port waits for its client to take it "
        "before the call is let go: a client that reads nothing for that long has left, and its "
        "call must not hold a place in the call limits",
    )
    events_maxlen: int = constant(
        2000,
        "versions whose events are kept per match (a two-seat hand makes 49: its deal and 48 "
        "plays; older ones are trimmed): more than a match plays, so WatchMatch resumes from any "
        "version of it, and a bound on a match's memory in Redis",
    )
    max_message_bytes: int = constant(
        64 * 1024,
        "largest request or response message: many times the largest the contract makes (a "
        "view with every history entry), small enough that a hostile body costs little",
    )
    rate_limit_callers: int = constant(
        10000,
        "callers whose creation rate is tracked at once per replica (least recent forgotten): "
        "a fixed memory bound of under a megabyte, far more callers than create at once",
    )
    watch_poll_s: float = constant(
        5.0,
        "seconds between checks (PING) of the shared WatchMatch reader's Redis connection: a "
        "silently dropped connection is found within this plus the store deadline",
    )
    presence_interval_s: float = constant(
        5.0,
        "seconds between renewals of the presence of the seats whose WatchMatch streams this "
        "replica serves (one Redis round trip per 500 matches): how soon other replicas' "
        "streams see a seat come or go",
    )
    presence_ttl_s: float = constant(
        15.0,
        "seconds a seat stays connected after its stream's last renewal when its replica stops "
        "without a goodbye: three renewals, so one failed renewal does not make a seat flicker",
    )

    def __post_init__(self) -> None:
        if self.redis_url is not None:
            try:
                _redis_url(self.redis_url)
            except ValueError as exc:
                raise SettingError("redis_url", str(exc)) from None
        if self.store == "redis" and self.redis_url is None:
            raise SettingError("store", "redis needs a Redis URL (--redis-url or $REDIS_URL)")
        if self.store == "embedded" and self.redis_url is not None:
            raise SettingError("store", "embedded conflicts with the Redis URL also given")
        try:
            _origins(",".join(self.cors_origins))
        except ValueError as exc:
            raise SettingError("cors_origins", str(exc)) from None
        try:
            if self.log_level is not None:
                _log_level(self.log_level)
        except ValueError as exc:
            raise SettingError("log_level", str(exc)) from None
        # Exactly, not in any case as the parsers read them: the code compares these names.
        for name, parser, value in (
            ("store", _store, self.store),
            ("event_loop", _event_loop, self.event_loop),
        ):
            try:
                if value is not None:
                    parser.exactly(value)
            except ValueError as exc:
                raise SettingError(name, str(exc)) from None
        if self.api_key is not None and not self.api_key.strip():
            raise SettingError("api_key", "is empty: give a key, or leave it unset for none")
        if self.drain_s < 0:
            raise SettingError("drain_s", "must be 0 or more")
        if self.bot_pace_s < 0:
            raise SettingError("bot_pace_s", "must be 0 or more")
        if self.bot_move_deadline_s <= self.bot_strong_seconds:
            raise SettingError(
                "bot_move_deadline_s",
                "must be more than the strong bot's search time (--bot-strong-seconds)",
            )
        if self.presence_ttl_s <= self.presence_interval_s:
            raise SettingError(
                "presence_ttl_s",
                "must be more than the renewal interval (presence_interval_s)",
            )
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise SettingError(f.name, f"must be a finite number, not {value!r}")
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and f.name not in ("drain_s", "metrics_port", "bot_pace_s")
                and value <= 0
            ):
                raise SettingError(f.name, "must be positive")


class SettingError(ValueError):
    """A setting's value is out of range; the message names the setting as the user gave it."""

    def __init__(self, setting_name: str, problem: str) -> None:
        named = setting_name if setting_name in CONSTANTS else flag_name(setting_name)
        super().__init__(f"{named} {problem}")
        self.setting = setting_name
        self.problem = problem


def _fields() -> tuple[Field[Any], ...]:
    """The settings: every field but the constants."""
    return tuple(f for f in fields(Settings) if f.metadata["env"] is not None)


CONSTANTS: Final[Mapping[str, str]] = {
    f.name: f.metadata["why"] for f in fields(Settings) if f.metadata["env"] is None
}
"""Constant name -> why it is what it is."""


REFUSED_VARIABLES: Final[Mapping[str, str]] = {
    "BASRA_HTTP_MAX_REQUESTS_PER_CONNECTION": (
        "hyper bounds reset streams itself, and an HTTP connection serves any number of requests"
    ),
}
"""Variables that look like settings but set nothing, each with why: ``from_args`` refuses them
when set, so that an operator's value does not silently do nothing."""


def constant_variable(name: str) -> str:
    """The variable a constant would have as a setting: ``watch_poll_s`` ->
    ``BASRA_WATCH_POLL_SECONDS``. ``from_args`` refuses it when set, so a value set for it
    does not silently do nothing."""
    return "BASRA_" + flag_name(name).removeprefix("--").replace("-", "_").upper()


ENVIRONMENT: Final[Mapping[str, str]] = {f.name: f.metadata["env"] for f in _fields()}
"""Setting name -> environment variable. REDIS_URL is the conventional name; the rest are ours."""


def flag_name(setting_name: str) -> str:
    """The command-line flag of a setting: ``match_ttl_s`` -> ``--match-ttl-seconds``."""
    if setting_name.endswith("_s"):
        setting_name = setting_name[:-2] + "_seconds"
    return "--" + setting_name.replace("_", "-")


def shown(value: object) -> str:
    """A default as --help and the operator guide write it."""
    if value is None:
        return "unset"
    if value == ():
        return "empty"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _parser_of(f: Field[Any]) -> Callable[[str], object]:
    parse: Callable[[str], object] | None = f.metadata["parse"]
    if parse is not None:
        return parse
    if isinstance(f.default, bool):
        return _bool
    if isinstance(f.default, float):
        return _number
    if isinstance(f.default, int):
        return _whole
    return str


def _parse(f: Field[Any], raw: str) -> object:
    """A flag's or variable's text as the setting's value; an empty value is refused unless
    the setting gives it a meaning."""
    text = raw.strip()
    if not text:
        if f.metadata["empty"] is not _REFUSED:
            return f.metadata["empty"]
        raise ValueError("is set but empty: give a value, or unset it for the default")
    return _parser_of(f)(text)


_NOT_GIVEN: Final = object()
"""The argparse default of every flag: ``from_args`` tells a flag given (even one whose value
is None, like ``--metrics-port off``) from one left to the environment."""


def add_arguments(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Add one flag per setting; --help shows the real default and the variable. Returns each
    setting's flag by setting name."""
    actions: dict[str, argparse.Action] = {}
    for f in _fields():
        hint = f"{f.metadata['help']} (default: {shown(f.default)}; ${f.metadata['env']})"
        if isinstance(f.default, bool):
            actions[f.name] = parser.add_argument(
                flag_name(f.name),
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=_NOT_GIVEN,
                help=hint,
            )
            continue

        def convert(text: str, f: Field[Any] = f) -> object:
            try:
                return _parse(f, text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        metavar = f.name.upper().removesuffix("_S")
        if f.name.endswith("_s"):
            metavar += "_SECONDS"
        actions[f.name] = parser.add_argument(
            flag_name(f.name),
            *f.metadata["aliases"],
            dest=f.name,
            default=_NOT_GIVEN,
            type=convert,
            metavar=parse.metavar if isinstance(parse := f.metadata["parse"], _OneOf) else metavar,
            help=hint,
        )
    return actions


def from_args(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> Settings:
    """Settings from parsed flags, then the environment, then the defaults.

    Raises:
        ValueError: a value does not parse, is empty or out of range, no store was chosen, or
            a variable that sets nothing is set (a constant's, ``REFUSED_VARIABLES``); the
            message names the flag or variable the value came from.
    """
    for name, why in CONSTANTS.items():
        if (variable := constant_variable(name)) in environ:
            raise ValueError(f"${variable} is not a setting: the server holds it fixed ({why})")
    for variable, why in REFUSED_VARIABLES.items():
        if variable in environ:
            raise ValueError(f"${variable} is not a setting: {why}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for f in _fields():
        value = getattr(args, f.name, _NOT_GIVEN)
        sources[f.name] = flag_name(f.name)
        given = value is not _NOT_GIVEN
        if not given and f.metadata["env"] in environ:
            given = True
            variable = f.metadata["env"]
            sources[f.name] = f"${variable}"
            try:
                value = _parse(f, environ[variable])
            except ValueError as exc:
                raise ValueError(f"${variable} {exc}") from None
        if given:
            values[f.name] = value
    try:
        settings = Settings(**values)
    except SettingError as exc:
        raise ValueError(f"{sources[exc.setting]} {exc.problem}") from None
    if settings.store is None and settings.redis_url is None:
        raise ValueError(
            "no store chosen: give --redis-url (or $REDIS_URL) for Redis, or pass "
            "--store embedded (or BASRA_STORE=embedded) for a store in this process only"
        )
    return settings
