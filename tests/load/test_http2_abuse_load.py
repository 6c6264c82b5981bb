"""Each HTTP/2 abuse class at 250 and at 500 attacking connections from 127.0.0.2, against a
real server process with the shipped limits, while an honest client on 127.0.0.1 plays: what
``tests.h2attacks.withstand`` asserts (honest calls answered within their deadline, /healthz
ready, peak RSS under 90 % of the pod's memory limit and back down after, no call of the
attack left running). ``make test`` runs each class on a few connections
(``tests/service/test_http2_abuse.py``).

The cases hypercorn does not hold at this scale are xfails naming what fails and the figure
measured (strict where they fail by far, whatever the machine's load): each passes once the
HTTP port's server holds it (docs/design.md, "The HTTP port").
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.h2attacks import ATTACKS, serving, withstand
from tests.service.test_http2_abuse import RAPID_RESET_NOT_HELD

_KEPT: Final = (
    "hypercorn builds every stream of the attack in Python before the call limits refuse it, "
    "and the allocator keeps what they took: the RSS stays {after} MiB after the attackers "
    "leave, {base} MiB before (make bench, abuse_{name}_{count}_after_mib; honest calls also "
    "waited up to {slowest} s)"
)
_LATE: Final = (
    "hypercorn builds every stream of the attack in Python on the event loop before the call "
    "limits refuse it: honest calls queue behind them, up to {slowest} s on a busy machine "
    "(make bench, abuse_{name}_{count}_honest_slowest_s)"
)
NOT_HELD: Final = {
    ("continuation_flood", 500): (
        "hypercorn buffers each connection's CONTINUATION frames until h2 refuses the header "
        "block: peak RSS 686 MiB, past 90 % of the pod's limit (make bench, "
        "abuse_continuation_flood_500_peak_mib)"
    ),
}
"""The cases hypercorn 0.18 misses by far, whatever the machine's load: strict xfails."""
UNSTEADY: Final = {
    ("continuation_flood", 250): _KEPT.format(
        after=355, base=68, name="continuation_flood", count=250, slowest=0.13
    ),
    ("header_list_past_the_limit", 250): _KEPT.format(
        after=213, base=68, name="header_list_past_the_limit", count=250, slowest=1.3
    ),
    ("header_list_past_the_limit", 500): _KEPT.format(
        after=295, base=68, name="header_list_past_the_limit", count=500, slowest=2.75
    ),
    ("window_never_opens", 250): _KEPT.format(
        after=201, base=68, name="window_never_opens", count=250, slowest=1.59
    ),
    ("window_never_opens", 500): _KEPT.format(
        after=316, base=68, name="window_never_opens", count=500, slowest=2.16
    ),
    ("half_open", 250): _KEPT.format(after=151, base=68, name="half_open", count=250, slowest=1.37),
    ("half_open", 500): _KEPT.format(after=255, base=68, name="half_open", count=500, slowest=4.01),
    ("settings_and_ping_flood", 250): _LATE.format(
        slowest=6.25, name="settings_and_ping_flood", count=250
    ),
    ("settings_and_ping_flood", 500): _LATE.format(
        slowest=8.54, name="settings_and_ping_flood", count=500
    ),
}
"""The cases hypercorn 0.18 misses in most runs on a busy two-core machine, by an honest call's
deadline or by memory the allocator has not given back yet (the header-list flood at 250 held
in one run of three): the machine's load and the allocator decide, so not strict."""


def _case(name: str, connections: int) -> object:
    if name == "rapid_reset":
        return pytest.param(name, connections, marks=RAPID_RESET_NOT_HELD)
    if (name, connections) in NOT_HELD:
        mark = pytest.mark.xfail(strict=True, reason=NOT_HELD[name, connections])
        return pytest.param(name, connections, marks=mark)
    if (name, connections) in UNSTEADY:
        mark = pytest.mark.xfail(strict=False, reason=UNSTEADY[name, connections])
        return pytest.param(name, connections, marks=mark)
    return pytest.param(name, connections)


@pytest.mark.parametrize(
    ("name", "connections"), [_case(name, count) for count in (250, 500) for name in ATTACKS]
)
def test_an_http2_attack_at_scale_leaves_honest_clients_served(
    name: str, connections: int, tmp_path: Path
) -> None:
    with serving(tmp_path) as served:
        withstand(served, name, connections)
