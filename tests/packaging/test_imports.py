"""The client side stands apart from the server: importing it loads no server module."""

from __future__ import annotations

import subprocess
import sys

import pytest

# A boundary of the code, checked in seconds: in `make test` too (docs/testing.md).
pytestmark = pytest.mark.core


def test_the_client_and_its_programs_import_nothing_of_the_server() -> None:
    code = (
        "import sys\n"
        "import basra.client, basra.client.aio, basra.client.demo, basra.client.play\n"
        "import basra.client.match\n"
        "print(sorted(m for m in sys.modules if m.startswith('basra.service')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
