// The bot: this page playing the other seat through the same RPCs a person's page uses, with
// its own seat token. Its policy is deliberately simple, a sparring partner and not a player:
// take the capture that scores a basra, else the one that takes the most cards; when no card
// can capture, lay the lowest card on the floor.
import type { CardPlans } from "../gen/basra/v1/game_pb";
import type { Card } from "../gen/basra/v1/game_pb";

export interface BotMove {
  readonly card: Card;
  /** The plan to take; 0 with trail set when the card stays on the floor. */
  readonly planId: number;
  readonly trail: boolean;
}

export function chooseMove(hand: readonly CardPlans[]): BotMove | undefined {
  let best: BotMove | undefined;
  let bestScore = -1;
  for (const { card, plans, trails } of hand) {
    if (!card) continue;
    // Plans come best first (most cards, then most special points), so plan 1 is the card's best.
    const plan = plans[0];
    if (plan) {
      const score = (plan.basra ? 100 : 0) + plan.captures.length;
      if (score > bestScore) [best, bestScore] = [{ card, planId: plan.id, trail: false }, score];
    } else if (trails && bestScore < 0 && (!best || card.rank < best.card.rank)) {
      best = { card, planId: 0, trail: true };
    }
  }
  return best;
}
