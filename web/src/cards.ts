// Cards as the table shows them: the short code every card element carries ("10H": rank then
// C, D, H or S, as in the API guide) and the face drawn locally (index and suit symbol).
import { Rank, Suit, type Card } from "../gen/basra/v1/game_pb";

const RANK_CODES: Record<Rank, string> = {
  [Rank.UNSPECIFIED]: "?",
  [Rank.ACE]: "A",
  [Rank.TWO]: "2",
  [Rank.THREE]: "3",
  [Rank.FOUR]: "4",
  [Rank.FIVE]: "5",
  [Rank.SIX]: "6",
  [Rank.SEVEN]: "7",
  [Rank.EIGHT]: "8",
  [Rank.NINE]: "9",
  [Rank.TEN]: "10",
  [Rank.JACK]: "J",
  [Rank.QUEEN]: "Q",
  [Rank.KING]: "K",
};

const SUIT_CODES: Record<Suit, string> = {
  [Suit.UNSPECIFIED]: "?",
  [Suit.CLUBS]: "C",
  [Suit.DIAMONDS]: "D",
  [Suit.HEARTS]: "H",
  [Suit.SPADES]: "S",
};

const SUIT_SYMBOLS: Record<Suit, string> = {
  [Suit.UNSPECIFIED]: "?",
  [Suit.CLUBS]: "♣",
  [Suit.DIAMONDS]: "♦",
  [Suit.HEARTS]: "♥",
  [Suit.SPADES]: "♠",
};

/** The card's code, such as "10H" or "JD": the value of its data-card attribute. */
export function cardCode(card: Card): string {
  return RANK_CODES[card.rank] + SUIT_CODES[card.suit];
}

/** The index printed in the card's corner: "A", "2" … "10", "J", "Q", "K". */
export function rankIndex(card: Card): string {
  return RANK_CODES[card.rank];
}

export function suitSymbol(card: Card): string {
  return SUIT_SYMBOLS[card.suit];
}

export function isRed(card: Card): boolean {
  return card.suit === Suit.DIAMONDS || card.suit === Suit.HEARTS;
}
