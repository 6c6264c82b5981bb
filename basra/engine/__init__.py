"""The Basra rules engine (ERAM profile, RULES.md): pure, standard library only, no I/O.

    state, events = new_match(seed=42)
    plans = legal_plans(state, state.hands[state.turn][0])
    state, events = apply(state, Play(state.turn, card, plan=1))

``State`` is immutable; every function returns a new one. ``view`` is what one seat may see;
``codec.encode``/``codec.decode`` store a state in about 120 bytes.
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
    PlanRequiredError,
    UnknownPlanError,
)
from basra.engine.events import (
    CardPlayed,
    CardsDealt,
    Event,
    FloorCollected,
    HandScored,
    HandStarted,
    MatchEnded,
)
from basra.engine.game import apply, deal_next_hand, legal_plans, legal_plays, new_match
from basra.engine.plans import MAX_PLANS, Plan, capture_plans
from basra.engine.profile import ERAM, TRADITIONAL, Profile, SevenMeasure
from basra.engine.state import HandScore, Phase, Play, SeatHandScore, State
from basra.engine.view import SeatView, view

__all__ = [
    "CARDS",
    "ERAM",
    "MAX_PLANS",
    "TRADITIONAL",
    "BasraError",
    "CaptureRequiredError",
    "Card",
    "CardNotInHandError",
    "CardPlayed",
    "CardsDealt",
    "CorruptStateError",
    "DuplicateCardError",
    "Event",
    "FloorCollected",
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
    "MatchEnded",
    "MatchOverError",
    "NotYourTurnError",
    "Phase",
    "Plan",
    "PlanRequiredError",
    "Play",
    "Profile",
    "SeatHandScore",
    "SeatView",
    "SevenMeasure",
    "State",
    "UnknownPlanError",
    "apply",
    "capture_plans",
    "deal_next_hand",
    "decode",
    "encode",
    "format_cards",
    "legal_plans",
    "legal_plays",
    "new_match",
    "parse_cards",
    "view",
]
