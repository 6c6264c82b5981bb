"""One test per HTTP/2 abuse class, each against a real server process with the shipped limits,
on a few attacking connections from 127.0.0.2 while an honest client on 127.0.0.1 plays
(``tests.h2attacks.withstand`` says what each must leave true; here an honest call must be
answered, within ``ANSWERED_S`` on a machine that may be loaded, and the load tier holds it to
1 s), and the classes that hold the
most memory in repeated waves against one process (``tests.h2attacks.withstand_waves``). The
same attacks at 250 and 500 connections are in the load tier
(``tests/load/test_http2_abuse_load.py``). Rapid Reset on the gRPC port is tested the same
way (``tests.h2attacks.withstand_rapid_reset_on_grpc``)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.h2attacks import (
    ANSWERED_S,
    ATTACKS,
    HOLDING_MOST,
    serving,
    withstand,
    withstand_rapid_reset_on_grpc,
    withstand_waves,
)

CONNECTIONS: Final = 16
RESET_ON_GRPC: Final = (2, 3.0)
"""Rapid Reset on the gRPC port: connections, and seconds each sends its batches."""


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_http2_attack_leaves_honest_clients_served(name: str, tmp_path: Path) -> None:
    with serving(tmp_path, deadline_s=ANSWERED_S) as served:
        withstand(served, name, CONNECTIONS)


@pytest.mark.parametrize("name", HOLDING_MOST)
def test_waves_of_an_http2_attack_leave_no_memory_behind(name: str, tmp_path: Path) -> None:
    with serving(tmp_path, deadline_s=ANSWERED_S) as served:
        withstand_waves(served, name, CONNECTIONS)


def test_rapid_reset_on_the_grpc_port_leaves_honest_calls_served(tmp_path: Path) -> None:
    """HEADERS then RST_STREAM on the gRPC port, in batches of 100, from a few connections:
    every honest gRPC call answered within its deadline, none cancelled, and the memory given
    back once the attackers leave."""
    with serving(tmp_path, deadline_s=ANSWERED_S) as served:
        withstand_rapid_reset_on_grpc(served, *RESET_ON_GRPC)
