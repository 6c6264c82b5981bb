"""The engine runs compiled (mypyc, setup.py) or from its sources, and says which.

`make unit` runs the whole suite both ways (BASRA_ENGINE=pure the second time), so the golden
transcripts, every rule test and the service's tests hold for both engines; these tests check the
switch.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from importlib import import_module
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import basra.engine
from basra.engine.chance import below, seeded, shuffle

ENGINE = Path(basra.engine.__file__).parent
MODULES = tuple(
    import_module(f"basra.engine.{path.stem}")
    for path in sorted(ENGINE.glob("*.py"))
    if path.name != "__init__.py"
)


def run_engine(choice: str, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BASRA_ENGINE": choice}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )


def is_extension(path: str) -> bool:
    return path.endswith(tuple(EXTENSION_SUFFIXES))


def test_compiled_says_whether_every_module_is_compiled() -> None:
    compiled = [is_extension(m.__file__ or "") for m in MODULES]
    assert compiled == [basra.engine.COMPILED] * len(MODULES), "all compiled, or none"
    assert not is_extension(basra.engine.__file__ or ""), "__init__ chooses: never compiled"


def test_pure_loads_every_module_from_its_source_even_beside_compiled_ones() -> None:
    result = run_engine(
        "pure",
        "import sys, basra.engine\n"
        "mods = [m for n, m in sys.modules.items() if n.startswith('basra.engine.')]\n"
        "assert len(mods) >= 10, mods\n"
        "print(basra.engine.COMPILED, sorted({m.__file__.rsplit('.', 1)[-1] for m in mods}))",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "['py']"]


def test_compiled_refuses_to_run_the_sources() -> None:
    result = run_engine("compiled", "import basra.engine")
    if basra.engine.COMPILED or any(ENGINE.glob("game.*.so")):
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode != 0
        assert "BASRA_ENGINE=compiled but the engine runs from its .py sources" in result.stderr


def test_an_unknown_choice_is_refused() -> None:
    result = run_engine("fast", "import basra.engine")
    assert result.returncode != 0
    assert "BASRA_ENGINE='fast': use pure, compiled, or leave it unset" in result.stderr


def test_both_engines_play_the_same_match_to_the_same_bytes() -> None:
    # The golden transcripts check each engine against the files; this checks them against each
    # other on a whole match of random plays, state bytes after every step.
    code = (
        "import hashlib, random\n"
        "from basra.engine import Phase, apply, deal_next_hand, encode, new_match\n"
        "from basra.engine.bots import random_play\n"
        "rng = random.Random(5); state, _ = new_match(99); digest = hashlib.sha256()\n"
        "while state.phase is not Phase.MATCH_OVER:\n"
        "    if state.phase is Phase.HAND_OVER: state, events = deal_next_hand(state)\n"
        "    else: state, events = apply(state, random_play(state, rng))\n"
        "    digest.update(encode(state)); digest.update(repr(events).encode())\n"
        "print(digest.hexdigest())"
    )
    pure, default = run_engine("pure", code), run_engine("", code)
    assert pure.returncode == 0, pure.stderr
    assert default.returncode == 0, default.stderr
    assert pure.stdout == default.stdout


@pytest.mark.parametrize("key", ["basra/0/hand/1", "basra/18446744073709551615/hand/7", "é"])
def test_the_engine_shuffle_is_randoms_card_for_card(key: str) -> None:
    # Deals replay from stored seeds: the written-out shuffle must stay random.Random's.
    expected, got = list(range(52)), list(range(52))
    random.Random(key).shuffle(expected)
    generator = seeded(key)
    shuffle(got, generator)
    assert got == expected
    after = random.Random(key)
    after.shuffle(list(range(52)))
    assert generator.getrandbits(64) == after.getrandbits(64), "the same draws consumed"


@pytest.mark.parametrize("bound", [1, 2, 3, 12, 52, 1000])
def test_below_draws_what_randrange_and_choice_draw(bound: int) -> None:
    ours, theirs, chooser = random.Random(bound), random.Random(bound), random.Random(bound)
    items = list(range(bound))
    drawn = [below(ours, bound) for _ in range(200)]
    assert drawn == [theirs.randrange(bound) for _ in range(200)]
    assert drawn == [chooser.choice(items) for _ in range(200)]


class _CountedDraws(random.Random):
    """A generator of random.Random's kind that draws its own way: here, counting its draws."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.draws = 0

    def getrandbits(self, k: int, /) -> int:
        self.draws += 1
        return super().getrandbits(k)


@pytest.mark.parametrize("bound", [1, 3, 52])
def test_below_draws_through_a_subclass_own_getrandbits(bound: int) -> None:
    # random.Random itself is drawn from without looking the method up; a subclass is asked.
    ours, theirs = _CountedDraws(bound), _CountedDraws(bound)
    drawn = [below(ours, bound) for _ in range(50)]
    assert drawn == [theirs.randrange(bound) for _ in range(50)]
    assert ours.draws == theirs.draws >= 50
