"""Each HTTP/2 abuse class at 250 and at 500 attacking connections from 127.0.0.2, against a
real server process with the shipped limits, while an honest client on 127.0.0.1 plays: what
``tests.h2attacks.withstand`` asserts (honest calls answered within their deadline, /healthz
ready, peak RSS under 90 % of the pod's memory limit and back down after, no call of the
attack left running). ``make test`` runs each class on a few connections
(``tests/service/test_http2_abuse.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.h2attacks import ATTACKS, serving, withstand


@pytest.mark.parametrize(
    ("name", "connections"), [(name, count) for count in (250, 500) for name in ATTACKS]
)
def test_an_http2_attack_at_scale_leaves_honest_clients_served(
    name: str, connections: int, tmp_path: Path
) -> None:
    with serving(tmp_path) as served:
        withstand(served, name, connections)
