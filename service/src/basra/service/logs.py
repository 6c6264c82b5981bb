"""Structured JSON logs, one object per line, with secrets redacted before they are written.

The service never puts a seat token or an API key in a log record; the redaction here is the
second line of defence: anything shaped like a seat token, or an authorization or api-key value,
is masked in every message and field. Every field is cut to ``FIELD_LIMIT`` characters (``clip``).
A record made while a traced call is served carries its ``trace_id`` and ``span_id``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
from typing import Any, Final

from opentelemetry import trace

_SECRET: Final = re.compile(
    r"(?i)(bearer\s+)[^\s\"'\\,}]+|(x-api-key[\"']?\s*[:=,]\s*[\"']?)[^\s\"',}]+|\b[A-Za-z0-9_-]{43}\b"
)
FIELD_LIMIT: Final = 100
"""Longest logged field value, characters (a match id is at most 64)."""
MESSAGE_LIMIT: Final = 1000
"""Longest logged message, characters (a library's message may quote what a client sent)."""
TRACEBACK_LIMIT: Final = 8000
"""Longest logged traceback, characters: its last frames and the error, which say the most."""
_STANDARD: Final = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


def clip(value: object, limit: int = FIELD_LIMIT) -> object:
    """A logged field as sent, cut to ``limit`` characters: a field can hold whatever a client
    sent (a 64 KB match_id made a 64 KB log line per call). Numbers pass unchanged."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}...[{len(value) - limit} more characters]"
    return value


def redact(text: str) -> str:
    """``text`` with seat tokens and keys masked."""

    def mask(match: re.Match[str]) -> str:
        prefix = match.group(1) or match.group(2) or ""
        return prefix + "[REDACTED]"

    return _SECRET.sub(mask, text)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and the record's extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": clip(record.getMessage(), MESSAGE_LIMIT),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = clip(value)
        # The trace of the call being served (basra.service.tracing), when it has one: the
        # line and its span find each other.
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            entry["trace_id"] = trace.format_trace_id(span.trace_id)
            entry["span_id"] = trace.format_span_id(span.span_id)
        if record.exc_info:
            text = self.formatException(record.exc_info)
            if len(text) > TRACEBACK_LIMIT:
                cut = len(text) - TRACEBACK_LIMIT
                text = f"[{cut} characters cut]...{text[cut:]}"
            entry["exc"] = text
        return redact(json.dumps(entry, default=str, ensure_ascii=False))


LIBRARY_LOGGERS: Final = ("opentelemetry",)
"""Libraries whose own records (the OTLP exporter's failures, say) would otherwise reach
Python's last-resort handler: plain text on stderr, outside the JSON lines."""


def setup(level: str, stream: Any = None) -> None:
    """Send every ``basra`` log record to ``stream`` (stderr) as JSON lines, and the warnings
    of ``LIBRARY_LOGGERS`` with them."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("basra")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        library.handlers[:] = [handler]
        library.setLevel(max(logging.WARNING, root.level))
        library.propagate = False


def log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: what asyncio would print on stderr (a task's or a
    callback's uncaught error, a connection's crash) logged through the JSON formatter instead,
    so it is clipped and its secrets redacted like every other line. Only the message and the
    exception are logged: the context's other entries (transports, protocols, handles) may
    hold whatever a client sent."""
    error = context.get("exception")
    logging.getLogger("basra.loop").error(
        str(context.get("message", "unhandled error in the event loop")),
        exc_info=error if isinstance(error, BaseException) else None,
    )
