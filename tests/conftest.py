"""Session fixtures: one real redis-server for the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import RedisProcess


@pytest.fixture(scope="session")
def redis_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server started for this test session, stopped at its end."""
    process = RedisProcess(tmp_path_factory.mktemp("redis"))
    process.start()
    yield process
    process.stop()


@pytest.fixture
def redis_url(redis_process: RedisProcess) -> str:
    """The session Redis, emptied before each test."""
    redis_process.client().flushall()
    return redis_process.url


@pytest.fixture
def aof_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of the test's own with AOF on, so a restart keeps what was written."""
    process = RedisProcess(tmp_path / "redis", appendonly=True)
    process.start()
    yield process
    process.stop()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test a compiled engine older than its sources: it would not be the code read."""
    import basra.engine

    if not basra.engine.COMPILED:
        return
    engine = Path(basra.engine.__file__).parent
    built = min(p.stat().st_mtime for p in engine.glob("*.so"))
    sources = [p for p in engine.glob("*.py") if p.name != "__init__.py"]  # never compiled
    stale = [p.name for p in sources if p.stat().st_mtime > built]
    if stale:
        pytest.exit(
            f"the compiled engine is older than {', '.join(sorted(stale))}: rebuild it with "
            "`make basra/engine/.compiled` (or run with BASRA_ENGINE=pure)",
            returncode=4,
        )
