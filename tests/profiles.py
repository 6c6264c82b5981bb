"""Example counts that follow the loaded Hypothesis profile (registered in tests/conftest.py)."""

from __future__ import annotations

from hypothesis import settings


def examples(n: int) -> int:
    """A test's example count: ``n`` under the CI profile, more under the longer local one."""
    profile = settings.default
    assert profile is not None
    return max(1, n * profile.max_examples // 100)
