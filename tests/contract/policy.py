"""The first-choice policy, which the Python and the TypeScript clients both follow.

The seat to move asks ListPlans for its whole hand and plays the first card listed with that
card's first plan (plan 1), or trails it when it has none; seat 0 deals each next hand. ListPlans
lists the hand in the order dealt, so the policy is deterministic and any two clients following
it play the same match from the same seed. ``node/src/client.ts`` is the TypeScript side.
"""

from __future__ import annotations

from basra.client.match import MatchClient
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2

MAX_CALLS = 5_000
"""A match takes about 300 plays and deals; more means the policy is not ending it."""


def play_first_choice(client: MatchClient) -> pb.ScoreResponse:
    """Play the client's match to its end with the first-choice policy; the final Score."""
    for _ in range(MAX_CALLS):
        view = client.view(0)
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            return client.score(0)
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            client.deal(0, expected_version=view.version)
            continue
        first = client.plans(view.turn)[0]
        plan_id = first.plans[0].id if first.plans else 0
        client.play(view.turn, first.card, plan_id, expected_version=view.version)
    raise AssertionError(f"the match did not end within {MAX_CALLS} calls")
