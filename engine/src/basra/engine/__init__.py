"""The Basra rules engine: every rule system of RULES.md and VARIANTS.md; pure, standard library
only, no I/O.

    state, events = new_match(seed=42)                      # ERAM, two seats
    state, events = new_match(7, match_profile("egyptian", 4))  # two partnerships
    card = state.hands[state.turn][0]
    plans = legal_plans(state, card)
    state, events = apply(state, Play(state.turn, card, plan=1 if plans else None))

``State`` is immutable; every function returns a new one. ``view`` is what one seat may see;
``codec.encode``/``codec.decode`` store a state in about 110 bytes (two seats, mid-hand).

Computer players (``engine.bots``) decide from one seat's view and the match's rules, never
from the state, at three levels (``random``, ``greedy``, ``strong``: a Monte Carlo search over
the cards the seat cannot see; ``engine.strong``, docs/bots.md):

    from basra.engine.bots import choose
    card, plan = choose("strong", view(state, state.turn), state.profile, random.Random(1))
    play = Play(state.turn, card, plan) if plan else Play(state.turn, card, trail=True)

The modules below may be compiled with mypyc (``setup.py``; ``make`` builds them in place when a
C compiler is present): ``COMPILED`` says which engine this process runs. ``BASRA_ENGINE=pure`` in
the environment forces the ``.py`` sources even beside the compiled modules (the suite runs
both ways); ``BASRA_ENGINE=compiled`` makes the import fail unless the compiled
modules load. This package's ``__init__`` is never compiled, so it can choose.
"""

import os as _os
import sys as _sys
from importlib.machinery import SOURCE_SUFFIXES as _SOURCE_SUFFIXES
from importlib.machinery import FileFinder as _FileFinder
from importlib.machinery import SourceFileLoader as _SourceFileLoader
from typing import Final as _Final

_CHOICE: _Final = _os.environ.get("BASRA_ENGINE", "")
if _CHOICE not in ("", "pure", "compiled"):
    raise ImportError(f"BASRA_ENGINE={_CHOICE!r}: use pure, compiled, or leave it unset")
if _CHOICE == "pure":
    # The submodules are found through this directory's path-entry finder: one that knows only
    # source files never sees the compiled modules next to them.
    _sys.path_importer_cache[__path__[0]] = _FileFinder(
        __path__[0], (_SourceFileLoader, _SOURCE_SUFFIXES)
    )

from basra.engine import game
from basra.engine.cards import CARDS, Card, format_cards, parse_cards
from basra.engine.codec import decode, encode
from basra.engine.errors import (
    BasraError,
    CaptureRequiredError,
    CardNotInHandError,
    CorruptStateError,
    DuplicateCardError,
    HandInProgressError,
    HandOverError,
    IllegalPlayError,
    InvalidCardError,
    InvalidInputError,
    InvalidPlanIdError,
    InvalidSeatError,
    MatchOverError,
    NotYourTurnError,
    OptionNotAvailableError,
    PlanRequiredError,
    SeatsNotAllowedError,
    UnknownPlanError,
    UnknownRulesError,
)
from basra.engine.events import (
    CardPlayed,
    CardsDealt,
    Event,
    FloorCollected,
    GameEnded,
    HandScored,
    HandStarted,
    MatchEnded,
)
from basra.engine.game import (
    apply,
    deal_next_hand,
    legal_plans,
    legal_plays,
    new_match,
    next_dealer,
)
from basra.engine.plans import MAX_PLANS, Plan, capture_plans
from basra.engine.profile import (
    ERAM,
    RULE_SYSTEMS,
    PointTable,
    Profile,
    RuleSystem,
    match_profile,
    rule_system,
)
from basra.engine.rules import BasraValue, BottomCard, MajorityTie, SevenRule
from basra.engine.state import (
    GameResult,
    HandScore,
    LastPlay,
    Phase,
    Play,
    SeatHandScore,
    SideHandScore,
    State,
)
from basra.engine.view import SeatView, view
from basra.engine.wording import LANGUAGES, Wording

COMPILED: _Final = not game.__file__.endswith(".py")
"""Whether the engine's modules run compiled (mypyc) rather than from their ``.py`` sources."""
if _CHOICE == "compiled" and not COMPILED:
    raise ImportError(
        "BASRA_ENGINE=compiled but the engine runs from its .py sources: build it (make, or "
        "BASRA_ENGINE_COMPILE=yes with a C compiler and mypy installed, see setup.py)"
    )

__all__ = [
    "CARDS",
    "COMPILED",
    "ERAM",
    "LANGUAGES",
    "MAX_PLANS",
    "RULE_SYSTEMS",
    "BasraError",
    "BasraValue",
    "BottomCard",
    "CaptureRequiredError",
    "Card",
    "CardNotInHandError",
    "CardPlayed",
    "CardsDealt",
    "CorruptStateError",
    "DuplicateCardError",
    "Event",
    "FloorCollected",
    "GameEnded",
    "GameResult",
    "HandInProgressError",
    "HandOverError",
    "HandScore",
    "HandScored",
    "HandStarted",
    "IllegalPlayError",
    "InvalidCardError",
    "InvalidInputError",
    "InvalidPlanIdError",
    "InvalidSeatError",
    "LastPlay",
    "MajorityTie",
    "MatchEnded",
    "MatchOverError",
    "NotYourTurnError",
    "OptionNotAvailableError",
    "Phase",
    "Plan",
    "PlanRequiredError",
    "Play",
    "PointTable",
    "Profile",
    "RuleSystem",
    "SeatHandScore",
    "SeatView",
    "SeatsNotAllowedError",
    "SevenRule",
    "SideHandScore",
    "State",
    "UnknownPlanError",
    "UnknownRulesError",
    "Wording",
    "apply",
    "capture_plans",
    "deal_next_hand",
    "decode",
    "encode",
    "format_cards",
    "legal_plans",
    "legal_plays",
    "match_profile",
    "new_match",
    "next_dealer",
    "parse_cards",
    "rule_system",
    "view",
]
