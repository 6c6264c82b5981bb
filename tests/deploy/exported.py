"""The metrics the server exports, read from its own Prometheus registry."""

from __future__ import annotations

from basra.service.metrics import Metrics


def metric_names() -> set[str]:
    """The server's metrics as operators query them: counters with ``_total``."""
    return {
        family.name + ("_total" if family.type == "counter" else "")
        for family in Metrics.create().registry.collect()
    }


def exported_series() -> set[str]:
    """Every series name the server's registry can export (``_total``, ``_bucket``, ...)."""
    names: set[str] = set()
    for family in Metrics.create().registry.collect():
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
        names |= {family.name + suffix for suffix in suffixes.get(family.type, ("",))}
    return names
