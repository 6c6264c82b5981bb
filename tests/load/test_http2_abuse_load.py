"""Each HTTP/2 abuse class at 250 and at 500 attacking connections from 127.0.0.2, against a
real server process with the shipped limits, while an honest client on 127.0.0.1 plays: what
``tests.h2attacks.withstand`` asserts (honest calls answered within their deadline, /healthz
ready, peak RSS under 90 % of the pod's memory limit and back down after, no call of the
attack left running); and the classes that hold the most memory in repeated waves against one
process, each wave held as one attack is and the RSS back, soon after the last, to within a few
MiB of where the first left it (``tests.h2attacks.withstand_waves``). ``make test`` runs each on
a few connections (``tests/service/test_http2_abuse.py``).

The gRPC port's own: Rapid Reset there at 250 and 500 connections, and half-open requests (250
and 500 connections x 100 streams) on it alone and on both ports at once, while an honest client
plays on the gRPC port (``tests.h2attacks.withstand_rapid_reset_on_grpc``,
``withstand_half_open_on_grpc``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

import pytest

from tests.h2attacks import (
    ATTACKS,
    HOLDING_MOST,
    HonestCallCancelledError,
    HonestCallLateError,
    MemoryKeptError,
    PeakPastLimitError,
    serving,
    withstand,
    withstand_half_open_on_grpc,
    withstand_rapid_reset_on_grpc,
    withstand_waves,
)

KEPT_BY_THE_ALLOCATORS: Final = pytest.mark.xfail(
    strict=False,
    raises=MemoryKeptError,
    reason=(
        "a shut flow-control window at 500 connections leaves the RSS 58 to 66 MiB above where "
        "it was (peak 141 MiB against a 512 Mi limit): the allocators keep what the attack took "
        "for reuse, so the 64 MiB bound on what is kept is missed in about one run in three"
    ),
)
"""The one case whose memory does not always come back within the bound once the attackers
leave (docs/performance.md), in one attack or in any of its waves. Only that check may fail
(``raises``): every other assertion of ``withstand`` and ``withstand_waves`` still fails the
test."""

RESETS_OUTRUN_THE_LOOP: Final = pytest.mark.xfail(
    strict=False,
    raises=HonestCallLateError,
    reason=(
        "Rapid Reset on 250 and 500 connections: hyper hands the application every stream the "
        "attackers open and reset at once (granian has no bound on reset streams per "
        "connection), and the event loop works through their refusals while honest calls wait, "
        "past 1 s in most runs at 500 connections and in some waves at 250"
    ),
)
"""Rapid Reset at scale, whose honest calls are not always answered within their deadline
(docs/performance.md). Only that check may fail (``raises``)."""


SLOW_AT_500: Final = pytest.mark.xfail(
    strict=False,
    raises=HonestCallLateError,
    reason=(
        "half-open requests and a shut window on 500 connections: an honest call waits up to "
        "about 0.75 s while the attack's connections open (the attackers and the server share "
        "the machine's two cores), past 1 s in some runs"
    ),
)
"""Two classes at 500 connections whose honest calls come close to their deadline, and pass it
in some runs (docs/performance.md). Only that check may fail (``raises``)."""


def marks(name: str, connections: int) -> list[pytest.MarkDecorator]:
    """The known failures of one case: see the markers above. A shut window on 500
    connections has two, each the only check that may fail."""
    if (name, connections) == ("window_never_opens", 500):
        return [
            pytest.mark.xfail(
                strict=False,
                raises=(MemoryKeptError, HonestCallLateError),
                reason=f"{KEPT_BY_THE_ALLOCATORS.kwargs['reason']}; {SLOW_AT_500.kwargs['reason']}",
            )
        ]
    if name == "rapid_reset":
        return [RESETS_OUTRUN_THE_LOOP]
    if (name, connections) == ("half_open", 500):
        return [SLOW_AT_500]
    return []


def at_scale(names: Iterable[str]) -> pytest.MarkDecorator:
    """Each of ``names`` at 250 and 500 connections, with its known failures (``marks``)."""
    cases = [
        pytest.param(name, count, marks=marks(name, count))
        for count in (250, 500)
        for name in names
    ]
    return pytest.mark.parametrize(("name", "connections"), cases)


@at_scale(ATTACKS)
def test_an_http2_attack_at_scale_leaves_honest_clients_served(
    name: str, connections: int, tmp_path: Path
) -> None:
    with serving(tmp_path) as served:
        withstand(served, name, connections)


@at_scale(HOLDING_MOST)
def test_waves_of_an_http2_attack_at_scale_leave_no_memory_behind(
    name: str, connections: int, tmp_path: Path
) -> None:
    with serving(tmp_path) as served:
        withstand_waves(served, name, connections)


QUEUED_BEHIND_THE_ATTACK: Final = pytest.mark.xfail(
    strict=False,
    raises=(HonestCallLateError, HonestCallCancelledError, MemoryKeptError, PeakPastLimitError),
    reason=(
        "gRPC core queues every call whose headers arrive, in one queue per server, until "
        "grpc.aio's loop takes it, one at a time, and a call reset or refused there still "
        "passes through that queue: an honest call waits behind every stream the attack "
        "opened (seconds at 250 connections; some are cancelled there), and under Rapid Reset "
        "the RSS reaches 320 to 640 MiB and stays hundreds of MiB up (docs/performance.md, "
        "the gRPC port under abuse)"
    ),
)
"""The gRPC port's attacks at scale, whose honest calls wait behind the attack's own. Only
lateness, a cancelled honest call, the peak and the memory kept may fail (``raises``): a
refused honest call or a call of the attack left running still fails the test."""


@pytest.mark.parametrize("connections", [250, 500])
@QUEUED_BEHIND_THE_ATTACK
def test_rapid_reset_on_the_grpc_port_at_scale_leaves_honest_calls_served(
    connections: int, tmp_path: Path
) -> None:
    with serving(tmp_path) as served:
        withstand_rapid_reset_on_grpc(served, connections, 10.0)


@pytest.mark.parametrize("both", [False, True], ids=["grpc", "both-ports"])
@pytest.mark.parametrize("connections", [250, 500])
@QUEUED_BEHIND_THE_ATTACK
def test_half_open_requests_on_the_grpc_port_at_scale_leave_honest_calls_served(
    connections: int, both: bool, tmp_path: Path
) -> None:
    with serving(tmp_path) as served:
        withstand_half_open_on_grpc(served, connections, 100, both=both)
