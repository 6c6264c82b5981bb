"""Engine errors: a small hierarchy of ``ValueError`` subclasses.

Every error has a stable UPPER_SNAKE ``reason`` and string ``metadata`` so the service can map it
to one gRPC status with a ``google.rpc.ErrorInfo`` without parsing messages. Messages show the
offending input with ``!r`` and only what the player making the play may see: never another
seat's hand, never the stock.
"""

from __future__ import annotations

from typing import ClassVar


class BasraError(ValueError):
    """Base of every engine error."""

    reason: ClassVar[str] = "BASRA_ERROR"

    def __init__(self, message: str, **metadata: object) -> None:
        super().__init__(message)
        self.metadata: dict[str, str] = {k: str(v) for k, v in metadata.items()}


# Malformed input: the request itself is wrong, whatever the state.


class InvalidInputError(BasraError):
    """Input that is malformed whatever the game state (bad token, duplicate, bad seat)."""

    reason = "INVALID_INPUT"


class InvalidCardError(InvalidInputError):
    """A token that is not a card."""

    reason = "INVALID_CARD"

    def __init__(self, token: str) -> None:
        super().__init__(
            f"invalid card {token!r}: expected a rank (A 2-10 J Q K, T for 10) followed by a suit "
            "(C D H S or \u2663 \u2666 \u2665 \u2660), such as '10D'",
            token=token,
        )


class DuplicateCardError(InvalidInputError):
    """A card listed twice where a set of cards is expected."""

    reason = "DUPLICATE_CARD"

    def __init__(self, card: object) -> None:
        super().__init__(f"card {str(card)!r} appears more than once", card=card)


class InvalidSeatError(InvalidInputError):
    """A seat number outside the match's seats."""

    reason = "INVALID_SEAT"

    def __init__(self, seat: int, seats: int) -> None:
        super().__init__(f"seat {seat!r} does not exist: seats are 0..{seats - 1}", seat=seat)


class InvalidPlanIdError(InvalidInputError):
    """A plan number that can never be valid (not a positive integer)."""

    reason = "INVALID_PLAN_ID"

    def __init__(self, plan_id: int) -> None:
        super().__init__(f"plan id {plan_id!r} must be 1 or more", plan_id=plan_id)


class UnknownRulesError(InvalidInputError):
    """A rule system name that is not one of the profiles (VARIANTS.md)."""

    reason = "UNKNOWN_RULES"

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(
            f"unknown rules {name!r}: the rule systems are {', '.join(known)}", rules=name
        )


class SeatsNotAllowedError(InvalidInputError):
    """A seat count the rule system is not played by."""

    reason = "SEATS_NOT_ALLOWED"

    def __init__(self, rules: str, seats: int, allowed: tuple[int, ...]) -> None:
        super().__init__(
            f"rules {rules!r} are played by {' or '.join(map(str, allowed))} seats, not {seats!r}",
            rules=rules,
            seats=seats,
        )


class OptionNotAvailableError(InvalidInputError):
    """An option the rule system (at that seat count) does not have."""

    reason = "OPTION_NOT_AVAILABLE"

    def __init__(self, rules: str, option: str, seats: int) -> None:
        super().__init__(
            f"rules {rules!r} at {seats} seats have no option {option!r}",
            rules=rules,
            option=option,
            seats=seats,
        )


class CorruptStateError(BasraError):
    """Serialized state that does not decode to a consistent game."""

    reason = "CORRUPT_STATE"


# Illegal now: well-formed, but not allowed in the current state. The state is never changed.


class IllegalPlayError(BasraError):
    """A well-formed request that the rules do not allow in the current state."""

    reason = "ILLEGAL_PLAY"


class NotYourTurnError(IllegalPlayError):
    """Play out of turn (RULES.md: strict alternation)."""

    reason = "NOT_YOUR_TURN"

    def __init__(self, seat: int, turn: int) -> None:
        super().__init__(f"seat {seat} played out of turn: it is seat {turn}'s turn", turn=turn)


class CardNotInHandError(IllegalPlayError):
    """A card the player does not hold."""

    reason = "CARD_NOT_IN_HAND"

    def __init__(self, card: object, hand: str) -> None:
        super().__init__(f"card {str(card)!r} is not in your hand ({hand})", card=card)


class PlanRequiredError(IllegalPlayError):
    """Several plans exist and none was named (RULES.md: name one by its number)."""

    reason = "PLAN_REQUIRED"

    def __init__(self, card: object, plans: int) -> None:
        super().__init__(
            f"card {str(card)!r} has {plans} capture plans: name one (1..{plans})",
            card=card,
            plan_count=plans,
        )


class UnknownPlanError(IllegalPlayError):
    """A plan number the card does not have (including any plan for a card that trails)."""

    reason = "UNKNOWN_PLAN"

    def __init__(self, card: object, plan_id: int, plans: int) -> None:
        offer = f"its plans are 1..{plans}" if plans else "it has no capture plan and trails"
        super().__init__(
            f"card {str(card)!r} has no plan {plan_id!r}: {offer}",
            card=card,
            plan_id=plan_id,
            plan_count=plans,
        )


class CaptureRequiredError(IllegalPlayError):
    """A trail declared for a card that can capture (RULES.md: capture is mandatory)."""

    reason = "CAPTURE_REQUIRED"

    def __init__(self, card: object, plans: int) -> None:
        super().__init__(
            f"card {str(card)!r} cannot trail: capture is mandatory and it has {plans} plan(s)",
            card=card,
            plan_count=plans,
        )


class HandOverError(IllegalPlayError):
    """A play when no hand is in progress: the next hand must be dealt first."""

    reason = "HAND_OVER"

    def __init__(self, hand: int) -> None:
        super().__init__(f"hand {hand} is over: deal the next hand before playing", hand=hand)


class HandInProgressError(IllegalPlayError):
    """A deal while the current hand is still being played."""

    reason = "HAND_IN_PROGRESS"

    def __init__(self, hand: int, plays_left: int) -> None:
        super().__init__(
            f"hand {hand} is still in progress ({plays_left} plays left)",
            hand=hand,
            plays_left=plays_left,
        )


class MatchOverError(IllegalPlayError):
    """Any play or deal after the match has a winner."""

    reason = "MATCH_OVER"

    def __init__(self, winner: int) -> None:
        super().__init__(f"the match is over: seat {winner} won", winner=winner)
