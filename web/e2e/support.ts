// What scenarios share beyond table.ts: the service's API over the
// Connect protocol's JSON (a seeded match, each seat's first legal play as the page would make
// it, the next deal), so that a scenario reaches a position for certain and the page only
// follows it; and checks of the page that hold on every screen.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL } from "./table.js";

export interface Card {
  readonly rank: string;
  readonly suit: string;
}

/** What these scenarios read of a MatchView (the Connect JSON omits defaults: 0, "", false). */
export interface View {
  readonly version: string;
  readonly seat?: number;
  readonly hand?: Card[];
  readonly floor?: Card[];
  readonly status: string;
  readonly toPlay?: number;
  readonly dealer?: number;
  readonly handNumber?: number;
  readonly lastCapturer?: number;
  readonly winnerSide?: number;
  readonly sides?: { side?: number; seats?: number[]; score?: number; basras?: number }[];
}

export interface Event {
  readonly version: string;
  readonly cardPlayed?: { seat?: number; card: Card; captured?: Card[]; basra?: boolean; trail?: boolean };
  readonly floorCollected?: { seat?: number; cards?: Card[] };
  readonly handScored?: object;
  readonly matchEnded?: { winnerSide?: number };
}

/** One call of the service (unary, Connect JSON); fails with the service's answer. */
export async function call<T>(method: string, body: object, token?: string): Promise<T> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers["authorization"] = `Bearer ${token}`;
  const answer = await fetch(`${BASE_URL}/basra.v1.BasraService/${method}`, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await answer.text();
  assert.equal(answer.status, 200, `${method}: ${text}`);
  return JSON.parse(text) as T;
}

/** A seeded match of two seats (the server runs with --allow-seeds): the same seed deals the
 * same cards, and with every seat playing its first legal play the whole match is the same on
 * every run. */
export interface Seeded {
  readonly matchId: string;
  /** Each seat's token, by seat. */
  readonly tokens: readonly string[];
  readonly view: View;
}

export async function seededMatch(seed: number, rules = "eram", seats = 2): Promise<Seeded> {
  const created = await call<{ matchId: string; seatTokens: { seat?: number; token: string }[]; view: View }>("CreateMatch", {
    rules, seats, seat: 0, seed: String(seed), requestId: crypto.randomUUID(),
  });
  const tokens = Array.from({ length: seats }, (_, seat) => created.seatTokens.find((held) => (held.seat ?? 0) === seat)?.token ?? "");
  return { matchId: created.matchId, tokens, view: created.view };
}

/** The link that seats its holder at `seat` with its token (the page reads it from the
 * fragment). */
export function seatLink(match: Seeded, seat: number): string {
  return `${BASE_URL}/#${new URLSearchParams({ match: match.matchId, seat: String(seat), token: match.tokens[seat] ?? "" })}`;
}

export async function view(match: Seeded, seat: number): Promise<View> {
  return (await call<{ view: View }>("GetMatch", { matchId: match.matchId }, match.tokens[seat])).view;
}

/** Plays the seat to play's first legal play, as the page's first card does: the hand's first
 * card, trailing when it captures nothing, else its first plan. Returns the play's events and
 * the view after it. */
export async function playFirst(match: Seeded): Promise<{ events: Event[]; view: View }> {
  const before = await view(match, 0);
  const seat = before.toPlay ?? 0;
  const token = match.tokens[seat];
  const mine = await view(match, seat);
  const card = mine.hand?.[0];
  assert.ok(card, `seat ${seat} has a card to play`);
  const { cards } = await call<{ cards: { card: Card; trails?: boolean; plans?: { id: number }[] }[] }>("ListPlans", { matchId: match.matchId, card }, token);
  const plans = cards[0];
  const body = { matchId: match.matchId, card, expectedVersion: mine.version, requestId: crypto.randomUUID() };
  const played = plans?.trails ? { ...body, trail: true } : { ...body, planId: plans?.plans?.[0]?.id ?? 0 };
  const answer = await call<{ events?: Event[]; view: View }>("Play", played, token);
  return { events: answer.events ?? [], view: answer.view };
}

/** Plays first legal plays until the hand ends; returns every event of the hand's plays. */
export async function playHand(match: Seeded, each?: (events: Event[], view: View) => Promise<void>): Promise<{ events: Event[]; view: View }> {
  const events: Event[] = [];
  for (;;) {
    const played = await playFirst(match);
    events.push(...played.events);
    if (each) await each(played.events, played.view);
    if (played.view.status !== "MATCH_STATUS_PLAYING") return { events, view: played.view };
  }
}

/** Deals the next hand with a seat's token. */
export async function deal(match: Seeded, seat: number): Promise<View> {
  const before = await view(match, seat);
  return (await call<{ view: View }>("Deal", { matchId: match.matchId, expectedVersion: before.version, requestId: crypto.randomUUID() }, match.tokens[seat])).view;
}

/** Waits until the page shows `version` or later. */
export async function reach(page: Page, version: number | string): Promise<void> {
  await page.waitForFunction((v) => Number(document.getElementById("app")?.dataset["version"] ?? -1) >= v, Number(version));
}

/** How far the page scrolls sideways (0 when it fits its width). */
export async function sideways(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

/** Checks that the page fits its width in English, Arabic and Persian, through the page's own
 * language switch (the state stays), and ends in English. */
export async function fitsInEveryLanguage(page: Page, where: string): Promise<void> {
  for (const lang of ["en", "ar", "fa"]) {
    await page.selectOption("#language", lang);
    await page.waitForFunction((l) => document.documentElement.lang === l, lang);
    assert.equal(await sideways(page), 0, `${where} (${lang}) scrolls sideways at ${page.viewportSize()?.width} px`);
  }
  await page.selectOption("#language", "en");
  console.log(`fits: ${where}`);
}

const RANK_INDEX: Record<string, string> = {
  RANK_ACE: "A", RANK_TWO: "2", RANK_THREE: "3", RANK_FOUR: "4", RANK_FIVE: "5", RANK_SIX: "6", RANK_SEVEN: "7",
  RANK_EIGHT: "8", RANK_NINE: "9", RANK_TEN: "10", RANK_JACK: "J", RANK_QUEEN: "Q", RANK_KING: "K",
};
const SUIT_SYMBOL: Record<string, string> = { SUIT_CLUBS: "♣", SUIT_DIAMONDS: "♦", SUIT_HEARTS: "♥", SUIT_SPADES: "♠" };

/** A card as the table draws its face: "10♦". */
export function face(card: Card): string {
  return `${RANK_INDEX[card.rank] ?? "?"}${SUIT_SYMBOL[card.suit] ?? "?"}`;
}

/** A card's code as the page's data-card carries it: "10D". */
export function code(card: Card): string {
  return `${RANK_INDEX[card.rank] ?? "?"}${card.suit.replace("SUIT_", "")[0] ?? "?"}`;
}

/** "Your turn" in each language the table speaks (the start of i18n.ts's yourTurn). */
const YOUR_TURN = ["Your turn", "دورك", "نوبت شماست"];

/** What a screen must never show: "Your turn" while no card of the hand can be played
 * ("turn"), an empty list under "What happened" ("log"). */
export type Wrong = "turn" | "log";

// A plain script (no named functions: it runs as given in the page before the table's own): on
// every redraw it notes each wrong screen of the kinds in CHECKS.
const WATCHER = `
  window.__wrong = [];
  new MutationObserver(() => {
    const version = document.getElementById("app")?.dataset.version ?? "-";
    const turn = (document.getElementById("turn")?.textContent ?? "").trim();
    if (CHECKS.includes("turn") && ${JSON.stringify(YOUR_TURN)}.some((words) => turn.startsWith(words)) && document.querySelector("#hand button:not([disabled])") === null) {
      window.__wrong.push("v" + version + ": the status says " + JSON.stringify(turn) + " and no card can be played" + (document.getElementById("sheet") ? " (a score sheet is open)" : ""));
    }
    const log = document.querySelector(".log");
    if (CHECKS.includes("log") && log && log.querySelectorAll("li").length === 0) window.__wrong.push("v" + version + ": an empty list under " + JSON.stringify(log.querySelector("h2")?.textContent ?? ""));
  }).observe(document, { childList: true, subtree: true, characterData: true });
`;

/** Watches the page from its next load on for the wrong screens of the kinds given (see
 * WATCHER). */
export async function watchForWrongScreens(page: Page, checks: readonly Wrong[]): Promise<void> {
  await page.addInitScript({ content: `const CHECKS = ${JSON.stringify(checks)};\n${WATCHER}` });
}

/** What the page showed wrong since it loaded (a reload starts a new list). */
export async function wrongScreens(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __wrong: string[] }).__wrong);
}
