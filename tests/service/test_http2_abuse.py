"""One test per HTTP/2 abuse class, each against a real server process with the shipped limits,
on a few attacking connections from 127.0.0.2 while an honest client on 127.0.0.1 plays
(``tests.h2attacks.withstand`` says what each must leave true), and the classes that hold the
most memory in repeated waves against one process (``tests.h2attacks.withstand_waves``). The
same attacks at 250 and 500 connections are in the load tier
(``tests/load/test_http2_abuse_load.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.h2attacks import ATTACKS, HOLDING_MOST, serving, withstand, withstand_waves

CONNECTIONS: Final = 16


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_http2_attack_leaves_honest_clients_served(name: str, tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        withstand(served, name, CONNECTIONS)


@pytest.mark.parametrize("name", HOLDING_MOST)
def test_waves_of_an_http2_attack_leave_no_memory_behind(name: str, tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        withstand_waves(served, name, CONNECTIONS)
