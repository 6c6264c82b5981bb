"""Server settings: every one is a ``basra-engine serve`` flag and an environment variable.

Flags win over the environment; the environment wins over the defaults. ``ENVIRONMENT`` below is
the single list of variables the server reads (deploy/ wires each one; a test checks that).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class Settings:
    """How one server process runs. Immutable; build it with ``from_args`` or directly in tests."""

    listen: str = "[::]:50051"
    """gRPC listen address (host:port; port 0 picks a free port)."""
    redis_url: str | None = field(default=None, repr=False)
    """redis://, rediss:// or redis+sentinel://host:port,.../master URL (password included);
    None runs on the embedded store."""
    redis_cluster: bool = False
    """The URL points at a Redis Cluster node."""
    redis_pool_size: int = 64
    """Redis connections for calls, per server process: calls wait (within the store deadline)
    for a free one. Open WatchMatch streams use a pool of their own, one connection each."""
    match_ttl_s: int = 7 * 24 * 3600
    """A match idle this long (no write) expires from the store."""
    allow_seeds: bool = False
    """Accept caller seeds on match creation (replays and tests; never in production)."""
    api_key: str | None = field(default=None, repr=False)
    """When set, match creation requires ``x-api-key: <key>`` metadata."""
    log_level: str = "INFO"
    metrics_port: int | None = 9090
    """Prometheus metrics HTTP port (0 picks a free port; None disables)."""
    drain_s: float = 20.0
    """On SIGTERM: how long in-flight calls may finish before the server stops."""
    store_timeout_s: float = 2.0
    """Deadline of every store call; past it the call fails UNAVAILABLE."""
    health_interval_s: float = 2.0
    """How often the store is pinged for the health service."""
    events_maxlen: int = 2000
    """Versions whose events are kept per match (a two-seat hand makes 49: its deal and 48
    plays, so 2000 keep about 40 hands); older ones are trimmed."""
    max_message_bytes: int = 64 * 1024
    """Largest request or response message accepted."""
    max_concurrent_streams: int = 100
    """Concurrent calls per client connection (HTTP/2 streams)."""
    create_rate: float = 50.0
    """Matches this server may create per second (token bucket refill), per replica."""
    create_burst: int = 100
    """Matches that may be created at once before the rate applies."""
    watch_poll_s: float = 5.0
    """Longest single blocking wait of WatchMatch on the store (it then checks the match)."""
    http_listen: str | None = "[::]:8080"
    """HTTP listen address (HTTP/1.1 and HTTP/2): Connect, gRPC-Web and gRPC, /healthz and the
    web table (port 0 picks a free port; None disables)."""
    cors_origins: tuple[str, ...] = ()
    """Browser origins (scheme://host[:port], or * for any) allowed to call the HTTP port from
    another origin; none by default (the web table served on the port itself needs none)."""
    web_root: str | None = None
    """Directory served at / on the HTTP port; None: the repository's web/dist when present."""

    def __post_init__(self) -> None:
        if self.redis_url is not None and not self.redis_url.startswith(
            ("redis://", "rediss://", "unix://", "redis+sentinel://")
        ):
            raise ValueError(
                "REDIS_URL must start with redis://, rediss://, unix:// or redis+sentinel://"
            )
        positive = (
            "redis_pool_size",
            "match_ttl_s",
            "drain_s",
            "store_timeout_s",
            "health_interval_s",
            "events_maxlen",
            "max_message_bytes",
            "max_concurrent_streams",
            "create_rate",
            "create_burst",
            "watch_poll_s",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for origin in self.cors_origins:
            if origin != "*" and not _ORIGIN.fullmatch(origin):
                raise ValueError(f"CORS origin {origin!r} must be scheme://host[:port] or *")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError("log level must be DEBUG, INFO, WARNING or ERROR")


# Setting name -> environment variable. REDIS_URL is the conventional name; the rest are ours.
ENVIRONMENT: Final[Mapping[str, str]] = {
    "listen": "BASRA_LISTEN",
    "redis_url": "REDIS_URL",
    "redis_cluster": "BASRA_REDIS_CLUSTER",
    "redis_pool_size": "BASRA_REDIS_POOL_SIZE",
    "match_ttl_s": "BASRA_MATCH_TTL_SECONDS",
    "allow_seeds": "BASRA_ALLOW_SEEDS",
    "api_key": "BASRA_API_KEY",
    "log_level": "BASRA_LOG_LEVEL",
    "metrics_port": "BASRA_METRICS_PORT",
    "drain_s": "BASRA_DRAIN_SECONDS",
    "store_timeout_s": "BASRA_STORE_TIMEOUT_SECONDS",
    "health_interval_s": "BASRA_HEALTH_INTERVAL_SECONDS",
    "events_maxlen": "BASRA_EVENTS_MAXLEN",
    "max_message_bytes": "BASRA_MAX_MESSAGE_BYTES",
    "max_concurrent_streams": "BASRA_MAX_CONCURRENT_STREAMS",
    "create_rate": "BASRA_CREATE_RATE",
    "create_burst": "BASRA_CREATE_BURST",
    "watch_poll_s": "BASRA_WATCH_POLL_SECONDS",
    "http_listen": "BASRA_HTTP_LISTEN",
    "cors_origins": "BASRA_CORS_ORIGINS",
    "web_root": "BASRA_WEB_ROOT",
}

_HELP: Final = {
    "listen": "gRPC listen address",
    "redis_url": "Redis URL (redis:// or rediss://, password included); unset: embedded store",
    "redis_cluster": "the Redis URL is a Redis Cluster node",
    "redis_pool_size": "Redis connections for calls per process (WatchMatch streams: one each)",
    "match_ttl_s": "seconds an idle match is kept",
    "allow_seeds": "accept caller seeds when creating matches (tests and replays only)",
    "api_key": "API key required to create matches (x-api-key metadata)",
    "log_level": "DEBUG, INFO, WARNING or ERROR",
    "metrics_port": "Prometheus metrics HTTP port; 'off' disables",
    "drain_s": "seconds in-flight calls may finish after SIGTERM",
    "store_timeout_s": "deadline of each store call, seconds",
    "health_interval_s": "seconds between store health checks",
    "events_maxlen": "versions of events kept per match (49 per hand)",
    "max_message_bytes": "largest message accepted, bytes",
    "max_concurrent_streams": "concurrent calls per connection",
    "create_rate": "matches created per second per replica",
    "create_burst": "matches that may be created at once",
    "watch_poll_s": "longest single store wait of WatchMatch, seconds",
    "http_listen": "HTTP listen address (Connect, gRPC-Web, /healthz, web table); 'off' disables",
    "cors_origins": "comma-separated browser origins allowed cross-origin (https://host[:port])",
    "web_root": "directory served at / on the HTTP port (default: web/dist of the repository)",
}
# Other spellings of a flag: one origin reads naturally as --cors-origin.
_ALIASES: Final = {"cors_origins": ("--cors-origin",)}
# An origin as browsers send it: scheme, host, optional port; no path, no trailing slash.
_ORIGIN: Final = re.compile(
    r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per setting; defaults come from the environment, then Settings."""
    for f in fields(Settings):
        flag = flag_name(f.name)
        kind = _kind(f.name)
        if kind is bool:
            parser.add_argument(
                flag,
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=f"{_HELP[f.name]} (${ENVIRONMENT[f.name]})",
            )
        else:
            parser.add_argument(
                flag,
                *_ALIASES.get(f.name, ()),
                dest=f.name,
                default=None,
                help=f"{_HELP[f.name]} (${ENVIRONMENT[f.name]})",
            )


def from_args(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> Settings:
    """Settings from parsed flags, then the environment, then the defaults.

    Raises:
        ValueError: a value does not parse or is out of range (the message names it).
    """
    values: dict[str, Any] = {}
    for f in fields(Settings):
        raw = getattr(args, f.name, None)
        source = flag_name(f.name)
        if raw is None and ENVIRONMENT[f.name] in environ:
            raw, source = environ[ENVIRONMENT[f.name]], f"${ENVIRONMENT[f.name]}"
        if raw is None:
            continue
        try:
            values[f.name] = _parse(f.name, raw)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
    return Settings(**values)


def flag_name(setting: str) -> str:
    """The command-line flag of a setting: ``match_ttl_s`` -> ``--match-ttl-seconds``."""
    if setting.endswith("_s"):
        setting = setting[:-2] + "_seconds"
    return "--" + setting.replace("_", "-")


def _kind(name: str) -> type:
    default = Settings.__dataclass_fields__[name].default
    if isinstance(default, bool):
        return bool
    if isinstance(default, float):
        return float
    if isinstance(default, int):
        return int
    return str


def _parse(name: str, raw: object) -> object:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip()
    kind = _kind(name)
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"expected true or false, not {text!r}")
    if name == "metrics_port" and text.lower() in ("off", "none", ""):
        return None
    if name in ("redis_url", "api_key", "web_root") and not text:
        return None
    if name == "http_listen" and text.lower() in ("off", "none", ""):
        return None
    if name == "cors_origins":
        return tuple(origin.strip() for origin in text.split(",") if origin.strip())
    if kind is int:
        return int(text)
    if kind is float:
        return float(text)
    return text
