"""Session fixtures: one real redis-server for the whole test session; Hypothesis profiles; the
test tiers."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from hypothesis import settings

from tests.support import RedisProcess

# CI runs are reproducible: the same examples every run, no example database, and a failure
# prints the blob that replays it. Local runs draw new examples every time and twice as many
# (tests scale their counts with tests.profiles.examples), keeping failures in .hypothesis/.
# BASRA_HYPOTHESIS_PROFILE=ci reproduces CI locally.
settings.register_profile(
    "ci", max_examples=100, derandomize=True, database=None, print_blob=True, deadline=None
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(
    "ci"
    if os.environ.get("CI", "").lower() == "true"
    else os.environ.get("BASRA_HYPOTHESIS_PROFILE", "dev")
)


# The tiers (docs/testing.md): `make test` runs `-m "not full"`, `make test-all` everything.
# A directory's tests are in the tier of its directory, so a new test file lands in a tier by
# where it is; a test may also carry `full` itself, or `core` to run in `make test` from a
# directory of the full tier.
FULL_TIER_DIRECTORIES: Final = frozenset(
    {"load", "deploy", "packaging", "web", "bench", "mutation"}
)
TESTS: Final = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    full = pytest.mark.full
    for item in items:
        parts = item.path.resolve().relative_to(TESTS).parts
        if (
            len(parts) > 1
            and parts[0] in FULL_TIER_DIRECTORIES
            and item.get_closest_marker("core") is None
        ):
            item.add_marker(full)


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
    # Closed at once: a client left to the garbage collector warns of its open socket (an
    # error under filterwarnings) in whichever test happens to collect it.
    with redis_process.client() as client:
        client.flushall()
    return redis_process.url


@pytest.fixture
def aof_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of the test's own with AOF on, so a restart keeps what was written."""
    process = RedisProcess(tmp_path / "redis", appendonly=True)
    process.start()
    yield process
    process.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of the test's own, not started: each test starts it when it needs to
    (and may stop it; it is stopped at the end either way)."""
    process = RedisProcess(tmp_path / "redis")
    yield process
    process.stop()


@pytest.fixture(autouse=True)
def _engine_caches_cleared_under_mutation() -> None:
    """Under mutmut (`make mutation`), every test computes afresh: a result cached by an earlier
    test would hide which tests reach a function (mutmut runs only those on its mutants) and
    would keep a mutant's answers from showing."""
    if "MUTANT_UNDER_TEST" not in os.environ:
        return
    for name, module in list(sys.modules.items()):
        if name.startswith("basra.engine"):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()
    game = sys.modules.get("basra.engine.game")
    if game is not None:  # legal_plans' one remembered answer
        vars(game)["_LAST_PLANS"][0] = vars(game)["NOTHING_ASKED"]


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
            "`make engine/src/basra/engine/.compiled` (or run with BASRA_ENGINE=pure)",
            returncode=4,
        )
