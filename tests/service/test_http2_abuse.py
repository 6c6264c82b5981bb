"""One test per HTTP/2 abuse class, each against a real server process with the shipped limits,
on a few attacking connections from 127.0.0.2 while an honest client on 127.0.0.1 plays
(``tests.h2attacks.withstand`` says what each must leave true). The same attacks at 250 and 500
connections are in the load tier (``tests/load/test_http2_abuse_load.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.h2attacks import ATTACKS, serving, withstand

CONNECTIONS: Final = 16


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_http2_attack_leaves_honest_clients_served(name: str, tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        withstand(served, name, CONNECTIONS)
