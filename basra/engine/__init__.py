"""The Basra rules engine: every rule system of RULES.md and VARIANTS.md; pure, standard library
only, no I/O.

    state, events = new_match(seed=42)                      # ERAM, two seats
    state, events = new_match(7, match_profile("egyptian", 4))  # two partnerships
    card = state.hands[state.turn][0]
    plans = legal_plans(state, card)
    state, events = apply(state, Play(state.turn, card, plan=1 if plans else None))

``State`` is immutable; every function returns a new one. ``view`` is what one seat may see;
``codec.encode``/``codec.decode`` store a state in about 110 bytes (two seats, mid-hand).
"""

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

__all__ = [
    "CARDS",
    "ERAM",
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
