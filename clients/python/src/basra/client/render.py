"""Match messages as text for people: the one renderer of ``demo`` and ``play``.

Cards are shown in one notation, chosen by ``--cards``: ``symbols`` (``10♦ Q♠``) or
``letters`` (``10D QS``), as ``basra-engine plans`` shows them. Nothing here assumes two seats:
the seat count comes from the messages. Seats and sides are numbered from 1, as people count
them and as the web table shows them; the messages number them from 0 (``number``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import grpc

from basra.client.cards import CardLike, text
from basra.client.errors import BasraError
from basra.v1 import errors_pb2, game_pb2


def number(seat: int) -> int:
    """The number people read for a seat (or a side) of the API: the API counts from 0, people
    from 1."""
    return seat + 1


def seat_name(seat: int) -> str:
    """``seat N`` for the API's seat ``N - 1``."""
    return f"seat {number(seat)}"


def seats_name(seats: Iterable[int]) -> str:
    """Seats joined as partners are written: ``1+3`` for the API's seats 0 and 2."""
    return "+".join(str(number(s)) for s in seats)


@dataclass(frozen=True)
class Renderer:
    """Texts for events, plays, plans and scoreboards in one card notation."""

    symbols: bool = True

    def cards(self, items: Iterable[CardLike]) -> str:
        return text(items, symbols=self.symbols)

    def card(self, card: CardLike) -> str:
        return text([card], symbols=self.symbols)

    def plan(self, plan: game_pb2.Plan) -> str:
        flags = "".join(f", {f}!" for f in ("basra", "sweep") if getattr(plan, f))
        return f"takes {self.cards(plan.captures)}{flags}"

    def played(self, played: game_pb2.CardPlayed, who: str, detail: str = "") -> str:
        """``who`` plays a card: what it took (then ``detail``), or that it stays on the floor."""
        if played.trail:
            return f"{who} {self.card(played.card)}: it stays on the floor"
        flags = "".join(f"  {f.upper()}!" for f in ("basra", "sweep") if getattr(played, f))
        return f"{who} {self.card(played.card)}: takes {self.cards(played.captured)}{detail}{flags}"

    def event(self, event: game_pb2.MatchEvent) -> str | None:
        """One line for an event other than a play (None for plays: callers word those)."""
        kind = event.WhichOneof("event")
        if kind == "hand_started":
            e = event.hand_started
            return (
                f"== Hand {e.hand}: dealer {seat_name(e.dealer)}, {seat_name(e.leader)} leads; "
                f"floor {self.cards(e.floor)}"
            )
        if kind == "cards_dealt":
            e2 = event.cards_dealt
            return (
                f"   deal {e2.deal}: {e2.cards_each} cards each, {e2.stock_left} left in the stock"
            )
        if kind == "floor_collected":
            e3 = event.floor_collected
            who = seat_name(e3.seat) if e3.HasField("seat") else "nobody"
            return f"   leftover {self.cards(e3.cards)} goes to {who} (not a basra)"
        if kind == "hand_scored":
            e4 = event.hand_scored
            # With partnerships, each side once ("side 1 (seats 1+3)"), not each seat.
            teams = len(e4.score.sides) < len(e4.score.seats)
            scored = (
                [(_side_label(t.side, t.seats), t) for t in e4.score.sides]
                if teams
                else [(seat_name(t.seat), t) for t in e4.score.seats]
            )
            parts = [
                f"{label}: {s.cards} cards, majority {s.majority}"
                + (f" + carry {s.carry}" if s.carry else "")
                + f", specials {s.specials}, basras {s.basras} = {s.total}"
                for label, s in scored
            ]
            extra = "  (tie at the target: an extra hand)" if e4.extra_hand else ""
            totals = " - ".join(map(str, e4.side_totals if teams else e4.totals))
            return (
                f"   hand {e4.score.hand} scored: "
                + "; ".join(parts)
                + f"\n   totals {totals}, carry {e4.score.carry_after}{extra}"
            )
        return None

    def scoreboard(self, board: game_pb2.Scoreboard, names: Sequence[str]) -> list[str]:
        """Every hand's totals, the match totals and the winner."""
        if len(board.side_totals) < len(board.totals):
            return self._sides_scoreboard(board, names)
        seats = range(len(board.totals))
        lines = [
            "",
            "Scoreboard",
            f"  {'hand':>4} {'dealer':>6} "
            + " ".join(f"{seat_name(s):>7}" for s in seats)
            + f" {'carry':>6}",
        ]
        for hand in board.hands:
            totals = " ".join(f"{s.total:>7}" for s in hand.seats)
            dealer = number(hand.dealer)
            lines.append(f"  {hand.hand:>4} {dealer:>6} {totals} {hand.carry_after:>6}")
        lines.append(f"  {'total':>11} " + " ".join(f"{t:>7}" for t in board.totals))
        if board.HasField("winner"):
            others = " - ".join(str(t) for s, t in enumerate(board.totals) if s != board.winner)
            lines.append(
                f"Seat {number(board.winner)} ({names[board.winner]}) wins, "
                f"{board.totals[board.winner]} to {others}."
            )
        return lines

    def _sides_scoreboard(self, board: game_pb2.Scoreboard, names: Sequence[str]) -> list[str]:
        """The scoreboard of a partnership game: one column per side."""
        members = [
            [seat for seat, side in enumerate(board.seat_sides) if side == s]
            for s in range(len(board.side_totals))
        ]
        labels = ["side " + seats_name(seats) for seats in members]
        lines = [
            "",
            "Scoreboard",
            f"  {'hand':>4} {'dealer':>6} "
            + " ".join(f"{x:>9}" for x in labels)
            + f" {'carry':>6}",
        ]
        for hand in board.hands:
            totals = " ".join(f"{s.total:>9}" for s in hand.sides)
            dealer = number(hand.dealer)
            lines.append(f"  {hand.hand:>4} {dealer:>6} {totals} {hand.carry_after:>6}")
        lines.append(f"  {'total':>11} " + " ".join(f"{t:>9}" for t in board.side_totals))
        if board.HasField("winner_side"):
            won = board.winner_side
            who = ", ".join(f"{seat_name(s)} {names[s]}" for s in members[won])
            others = " - ".join(str(t) for s, t in enumerate(board.side_totals) if s != won)
            lines.append(f"Side {number(won)} ({who}) wins, {board.side_totals[won]} to {others}.")
        return lines


def _side_label(side: int, seats: Sequence[int]) -> str:
    return f"side {number(side)} (seats {seats_name(seats)})"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# What each reason means to a command-line user, keyed by the generated basra.v1.ErrorReason.
EXPLANATIONS: Final[Mapping[errors_pb2.ErrorReason.ValueType, str]] = {
    errors_pb2.ERROR_REASON_NOT_YOUR_TURN: "It is not your turn: seat {turn} plays now.",
    errors_pb2.ERROR_REASON_CARD_NOT_IN_HAND: "You do not hold {card}.",
    errors_pb2.ERROR_REASON_PLAN_REQUIRED: (
        "{card} can capture in {plan_count} ways: choose one of the plans."
    ),
    errors_pb2.ERROR_REASON_UNKNOWN_PLAN: "{card} has no plan {plan_id}.",
    errors_pb2.ERROR_REASON_CAPTURE_REQUIRED: (
        "{card} can capture, and capture is mandatory: it cannot trail."
    ),
    errors_pb2.ERROR_REASON_HAND_IN_PROGRESS: "The hand is still being played.",
    errors_pb2.ERROR_REASON_HAND_OVER: "This hand is over: deal the next one first.",
    # The winner is a side; side N holds seat N, alone or with a partner.
    errors_pb2.ERROR_REASON_MATCH_OVER: "The match is over: seat {winner}'s side won.",
    errors_pb2.ERROR_REASON_VERSION_MISMATCH: (
        "The table changed while you were choosing: look again and replay."
    ),
    errors_pb2.ERROR_REASON_STORE_UNAVAILABLE: (
        "The server cannot reach its match store right now: try again shortly."
    ),
    errors_pb2.ERROR_REASON_API_KEY_MISSING: (
        "This server needs an API key to create matches: pass --api-key."
    ),
    errors_pb2.ERROR_REASON_API_KEY_INVALID: (
        "The API key was refused: check the value given to --api-key."
    ),
    errors_pb2.ERROR_REASON_SEEDS_DISABLED: "This server does not accept seeds: leave out --seed.",
    errors_pb2.ERROR_REASON_RATE_LIMITED: (
        "Too many matches are being created: wait {retry_after_s} s and try again."
    ),
    errors_pb2.ERROR_REASON_MATCH_NOT_FOUND: "The match no longer exists (it may have expired).",
    errors_pb2.ERROR_REASON_TOKEN_INVALID: "The server did not accept this seat's token.",
    errors_pb2.ERROR_REASON_INVITATION_INVALID: (
        "This invitation does not open a seat of the match: ask its creator for a new one."
    ),
    errors_pb2.ERROR_REASON_INVITATION_CLAIMED: (
        "Seat {seat} was claimed already with this invitation: ask the match's creator to "
        "invite you again."
    ),
    errors_pb2.ERROR_REASON_SEAT_TOKEN_REVOKED: (
        "The match's creator gave seat {seat} to someone else: this seat's token no longer works."
    ),
    errors_pb2.ERROR_REASON_NOT_MATCH_CREATOR: "Only the seat that created the match can do that.",
    errors_pb2.ERROR_REASON_DISPLAY_NAME_INVALID: (
        "That name cannot be used: 1 to 32 characters, without control or direction characters."
    ),
}


NAME_RULES: Final[Mapping[str, str]] = {
    "length": "That name cannot be used: give 1 to 32 characters.",
    "character": (
        "That name cannot be used: it holds {code_point}, a control, direction or invisible "
        "character."
    ),
    "blank": "That name shows nothing on screen: give one with letters, digits or signs.",
    "marks": "That name stacks too many accents on one letter: give it fewer.",
    "confusable": (
        "That name looks like the name of seat {seat} at this table: choose one that reads "
        "differently."
    ),
}
"""DISPLAY_NAME_INVALID by its ``rule`` (metadata): what to change in the name."""


def reason_enum(reason: str) -> errors_pb2.ErrorReason.ValueType | None:
    """The generated enum value of an ErrorInfo reason (None for a reason this client does not
    know: a newer server may send one)."""
    try:
        return errors_pb2.ErrorReason.Value(f"ERROR_REASON_{reason}")
    except ValueError:
        return None


def explain(error: BasraError, target: str) -> str:
    """A failed call in words a command-line user understands, with what to do about it."""
    if error.unreachable:
        return f"No server answers at {target}: start one with `make run`."
    if error.code == grpc.StatusCode.DEADLINE_EXCEEDED and not error.reason:
        return f"The server at {target} did not answer in time: is it overloaded or stuck?"
    reason = reason_enum(error.reason) if error.reason else None
    template = None if reason is None else EXPLANATIONS.get(reason)
    if reason == errors_pb2.ERROR_REASON_DISPLAY_NAME_INVALID:
        template = NAME_RULES.get(error.metadata.get("rule", ""), template)
    if template is None:
        return f"The server refused: {error.message} ({error.reason or error.code.name})"
    try:
        return template.format(**_counted_from_1(error.metadata))
    except KeyError:
        return template


SEAT_METADATA: Final = frozenset({"seat", "turn", "winner"})
"""The ErrorInfo metadata that name a seat (or, ``winner``, a side), numbered from 0."""


def _counted_from_1(metadata: Mapping[str, str]) -> dict[str, str]:
    """The metadata with each seat numbered as people count (``number``)."""
    return {
        key: str(number(int(value))) if key in SEAT_METADATA and value.isdigit() else value
        for key, value in metadata.items()
    }
