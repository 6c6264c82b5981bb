"""Structured JSON logs, one object per line, with secrets redacted before they are written.

The service never puts a seat token or an API key in a log record; the redaction here is the
second line of defence: anything shaped like a seat token, or an authorization or api-key value,
is masked in every message and field.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any, Final

_SECRET: Final = re.compile(
    r"(?i)(bearer\s+)\S+|(x-api-key[\"']?\s*[:=,]\s*[\"']?)[^\s\"',}]+|\b[A-Za-z0-9_-]{43}\b"
)
_STANDARD: Final = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


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
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, default=str, ensure_ascii=False))


def setup(level: str, stream: Any = None) -> None:
    """Send every ``basra`` log record to ``stream`` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("basra")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
