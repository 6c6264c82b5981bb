"""The service's own counters and histograms export what prometheus_client's would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from basra.service.metrics import Tally, Timing

BUCKETS = (0.001, 0.01, 0.1)


def exposition(registry: CollectorRegistry) -> set[str]:
    """The sample lines, without the ``_created`` ones prometheus_client adds."""
    lines = generate_latest(registry).decode().splitlines()
    return {line for line in lines if not line.startswith("#") and "_created" not in line}


def test_tally_and_timing_export_the_samples_of_a_counter_and_a_histogram() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    calls = Tally("calls", "Calls", ["method", "code"], registry=ours)
    plays = Tally("plays", "Plays", registry=ours)
    latency = Timing("latency_seconds", "Latency", ["method"], BUCKETS, registry=ours)
    their_calls = Counter("calls", "Calls", ["method", "code"], registry=theirs)
    their_plays = Counter("plays", "Plays", registry=theirs)
    their_latency = Histogram(
        "latency_seconds", "Latency", ["method"], buckets=BUCKETS, registry=theirs
    )
    for method, code in [("Play", "OK"), ("Play", "OK"), ("Deal", "ABORTED")]:
        calls.labels(method, code).inc()
        their_calls.labels(method, code).inc()
    plays.inc(3)
    their_plays.inc(3)
    # On a bound, below the first, between, above the last: "le" counts a value on its bound.
    for value in (0.001, 0.0001, 0.05, 0.01, 7.0):
        latency.labels("Play").observe(value)
        their_latency.labels("Play").observe(value)
    assert exposition(ours) == exposition(theirs)
    assert plays.value == 3
