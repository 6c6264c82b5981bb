// Helpers of the browser tests: Debian's Chromium driven by playwright-core (no browser is ever
// downloaded), and what a test reads of the table. The tests run from pytest
// (tests/web/test_table.py), which starts the service and passes its address in BASE_URL.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

export const BASE_URL = process.env["BASE_URL"] ?? "http://127.0.0.1:8080";
const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
const SCREENSHOTS = process.env["SCREENSHOTS"];
/** How long one expected change of the page may take before the test fails (not a timing
 * assertion: a bound on waiting for a condition). */
export const PATIENCE_MS = 30_000;

export async function launch(): Promise<Browser> {
  // --no-sandbox: the tests may run as root (CI), where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"], headless: true });
}

/** A player's browser: its own context (its own sessionStorage), language and screen size. */
export interface Player {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Uncaught errors of the page's script: a test ends by checking there were none. */
  readonly errors: string[];
}

export async function player(browser: Browser, locale = "en-US", width = 800): Promise<Player> {
  const context = await browser.newContext({ locale, viewport: { width, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(PATIENCE_MS);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") console.log(`[browser ${locale}] ${message.text()}`);
  });
  return { context, page, errors };
}

export async function screenshot(page: Page, name: string, path?: string): Promise<void> {
  const target = path ?? (SCREENSHOTS ? join(SCREENSHOTS, `${name}.png`) : undefined);
  if (!target) return;
  if (!path && SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
  // Animations finished: the picture shows where every card lands.
  await page.screenshot({ path: target, fullPage: true, animations: "disabled" });
  console.log(`screenshot ${target}`);
}

/** What one seat's (or a spectator's) page shows, read from the DOM. */
export interface Seen {
  readonly version: number;
  /** "you" when it is this page's seat's turn, "other" when another seat's, "" between hands. */
  readonly turn: string;
  /** The seat to play ("" between hands). */
  readonly toPlay: string;
  readonly status: string;
  /** "seat" or "spectator". */
  readonly role: string;
  /** data-card of the hand's cards. */
  readonly hand: string[];
  readonly floor: string[];
  /** data-card of every element of the whole document. */
  readonly everyCard: string[];
  /** The face-down cards drawn for each other seat, by seat. */
  readonly backs: Record<number, number>;
  /** data-card of the stock's bottom card, when the page shows it. */
  readonly bottom: string;
  /** data-card of every card element outside the public places (the hand, the floor, the last
   * play, the bottom card): a page that drew another seat's card would show one here. */
  readonly elsewhere: string[];
  /** Whether a hand's score sheet is open (between hands, or until the player goes on). */
  readonly sheet: boolean;
  readonly text: string;
}

export async function seen(page: Page): Promise<Seen> {
  // No named helpers inside evaluate: tsx would wrap them in a __name() the page lacks.
  return page.evaluate(() => ({
    version: Number(document.getElementById("app")?.dataset["version"] ?? -1),
    turn: document.getElementById("app")?.dataset["turn"] ?? "",
    toPlay: document.getElementById("app")?.dataset["toPlay"] ?? "",
    status: document.getElementById("app")?.dataset["status"] ?? "",
    role: document.getElementById("app")?.dataset["role"] ?? "",
    hand: Array.from(document.querySelectorAll<HTMLElement>("#hand [data-card]"), (e) => e.dataset["card"] ?? ""),
    floor: Array.from(document.querySelectorAll<HTMLElement>("#floor [data-card]"), (e) => e.dataset["card"] ?? ""),
    everyCard: Array.from(document.querySelectorAll<HTMLElement>("[data-card]"), (e) => e.dataset["card"] ?? ""),
    backs: Object.fromEntries(
      Array.from(document.querySelectorAll<HTMLElement>(".seat[data-seat]"), (e) => [Number(e.dataset["seat"]), e.querySelectorAll(".card.back").length]),
    ),
    bottom: document.querySelector<HTMLElement>("#bottom [data-card]")?.dataset["card"] ?? "",
    elsewhere: Array.from(document.querySelectorAll<HTMLElement>("[data-card]"), (e) => e)
      .filter((e) => e.closest("#hand, #floor, #last-play, #bottom") === null)
      .map((e) => e.dataset["card"] ?? ""),
    sheet: document.getElementById("sheet") !== null,
    text: document.body.innerText,
  }));
}

/** Who plays a seat: one of the service's bots at its level, or a person. */
export type Who = "strong" | "greedy" | "random" | "person";

/** Starts a match from the lobby: the rule system, the seat count, who plays each seat after
 * the first (the lobby's default, the strong bot, when not given) and the options to tick
 * ("rubber", "bottom-card-shown"); the page sits at seat 0. */
export async function startMatch(
  page: Page,
  options: { rules?: string; seats?: number; others?: readonly Who[]; ticked?: readonly string[] } = {},
): Promise<void> {
  await page.locator("#start:not([disabled])").waitFor();
  if (options.rules) await page.selectOption("#rules", options.rules);
  if (options.seats) await page.selectOption("#seats", String(options.seats));
  for (const [at, player] of (options.others ?? []).entries()) await page.selectOption(`#seat-${at + 1}`, player);
  for (const id of options.ticked ?? []) await page.check(`#${id}`);
  await page.click("#start");
  await page.locator("#app[data-version]").waitFor();
}

/** The invitation link of a seat, as the creator's page shows it. */
export async function inviteLink(page: Page, seat: number): Promise<string> {
  return page.locator(`#invite-${seat}-link`).inputValue();
}

/** Opens an invitation link, gives a name and takes the seat (ClaimSeat); waits for the table. */
export async function claimSeat(page: Page, link: string, name: string): Promise<void> {
  await page.goto(link);
  await page.locator("#claim-form").waitFor();
  await page.fill("#name", name);
  await page.click("#claim-seat");
  await page.locator("#app[data-version]").waitFor();
}

/** The seat and its token as a page keeps them (sessionStorage): each page holds its own seat's
 * token only. */
export async function seatToken(page: Page): Promise<{ matchId: string; seat: number; token: string }> {
  const saved = await page.evaluate(() => JSON.parse(sessionStorage.getItem("basra.table") ?? "{}"));
  return { matchId: saved.me.matchId, seat: saved.me.seat, token: saved.me.token };
}

/** Every token a page keeps in sessionStorage (its own seat's, or a watch token): a page that
 * held another seat's token would show two. */
export async function storedTokens(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    for (let at = 0; at < sessionStorage.length; at++) {
      const raw = sessionStorage.getItem(sessionStorage.key(at) ?? "") ?? "";
      for (const match of raw.matchAll(/"token":"([^"]*)"/g)) found.push(match[1] ?? "");
    }
    return found;
  });
}

const RANKS: Record<string, string> = {
  RANK_ACE: "A", RANK_TWO: "2", RANK_THREE: "3", RANK_FOUR: "4", RANK_FIVE: "5", RANK_SIX: "6", RANK_SEVEN: "7",
  RANK_EIGHT: "8", RANK_NINE: "9", RANK_TEN: "10", RANK_JACK: "J", RANK_QUEEN: "Q", RANK_KING: "K",
};

/** Each seat's hand as the service knows it (GetMatch with each seat's token, over the Connect
 * protocol's JSON), with the version they were read at: the oracle of the privacy checks. */
export async function serverHands(matchId: string, tokens: Map<number, string>): Promise<{ version: number; hands: Map<number, string[]> }> {
  const hands = new Map<number, string[]>();
  const versions = new Set<number>();
  for (const [seat, token] of tokens) {
    const answer = await fetch(`${BASE_URL}/basra.v1.BasraService/GetMatch`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ matchId }),
    });
    assert.equal(answer.status, 200, await answer.clone().text());
    const { view } = (await answer.json()) as { view: { version: string; hand?: { rank: string; suit: string }[] } };
    versions.add(Number(view.version));
    hands.set(seat, (view.hand ?? []).map((card) => (RANKS[card.rank] ?? "?") + card.suit.replace("SUIT_", "")[0]));
  }
  assert.equal(versions.size, 1, "every seat read at one version");
  return { version: [...versions][0] ?? -1, hands };
}

/** Waits until the page shows a version after `version` and is not busy with a move. */
export async function waitPast(page: Page, version: number): Promise<Seen> {
  await page.waitForFunction((v) => Number(document.getElementById("app")?.dataset["version"] ?? -1) > v, version);
  return seen(page);
}

/** Waits until it is this page's turn with its hand live, or a score sheet is open, or the match
 * is over; returns what it shows. */
export async function myTurnOrSheet(page: Page): Promise<Seen> {
  await page.waitForFunction(() => {
    const app = document.getElementById("app");
    if (document.getElementById("sheet") !== null || app?.dataset["status"] === "match-over") return true;
    return app?.dataset["turn"] === "you" && document.querySelector("#hand button:not([disabled])") !== null;
  });
  return seen(page);
}

/** The score sheet's button: deals the next hand, or goes on to it when a bot (or another
 * player) dealt it already; waits until the sheet is closed. */
export async function nextHand(page: Page): Promise<void> {
  await page.locator("#sheet #next-hand:not([disabled])").click();
  await page.locator("#sheet").waitFor({ state: "detached" });
}

/** Waits until the page shows exactly `version`. */
export async function waitAt(page: Page, version: number): Promise<Seen> {
  await page.waitForFunction((v) => Number(document.getElementById("app")?.dataset["version"] ?? -1) === v, version);
  return seen(page);
}

/** Plays the hand's first playable card by mouse. One click plays a card whose outcome is
 * forced (it trails, or it has a single plan); a card with a choice shows its plans, and the
 * first is taken, after checking that hovering it highlights the floor cards it takes. Returns
 * the card played. */
export async function playFirst(page: Page): Promise<string> {
  const card = page.locator("#hand button:not([disabled])").first();
  const code = (await card.getAttribute("data-card")) ?? "";
  const choices = Number(await card.getAttribute("data-plans"));
  await card.click();
  if (choices <= 1) return code;
  const choice = page.locator("#plans button[data-plan]").first();
  await choice.waitFor();
  assert.equal(await page.locator("#plans button[data-plan]").count(), choices, "every plan offered");
  assert.equal(await page.locator(`#hand [data-card="${code}"]`).getAttribute("aria-pressed"), "true");
  const takes = (await choice.getAttribute("data-takes"))?.split(" ").filter(Boolean) ?? [];
  await choice.hover();
  for (const taken of takes) {
    assert.match((await page.locator(`#floor [data-card="${taken}"]`).getAttribute("class")) ?? "", /\btaking\b/, `${taken} highlighted`);
  }
  await choice.click();
  return code;
}

/** The page's language and direction. */
export async function direction(page: Page): Promise<{ lang: string; dir: string; computed: string }> {
  return page.evaluate(() => ({
    lang: document.documentElement.lang,
    dir: document.documentElement.dir,
    computed: getComputedStyle(document.getElementById("app")!).direction,
  }));
}

/** Whether the page fits its viewport's width (no sideways scrolling). */
export async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

/** Asks the test (pytest) to do something to the service, and waits until it is done. */
export async function ask(request: string): Promise<void> {
  console.log(`REQUEST ${request}`);
  const line = await new Promise<string>((resolve) => {
    process.stdin.once("data", (data) => {
      // Reading keeps stdin open, and with it the process: done with it.
      process.stdin.destroy();
      resolve(String(data).trim());
    });
  });
  assert.equal(line, `DONE ${request}`);
}

export function disjoint(a: readonly string[], b: readonly string[]): string[] {
  const other = new Set(b);
  return a.filter((code) => other.has(code));
}

/** What the page animated, batch by batch (one batch per MutationObserver callback, so one per
 * redraw): each new last play drawn (its seat, the cards it captured, whether a basra), each
 * captured card that flew to a pile (the card, the seat it flew to), and each moment shown. */
export interface MotionBatch {
  readonly version: number;
  readonly plays: { seat: number; captured: string[]; basra: boolean; key: string }[];
  readonly flights: { card: string; to: number }[];
  readonly moments: { kind: string; text: string }[];
}

// A plain script (no named functions: it runs as given in the page before the table's own).
const MOTION_RECORDER = `
  window.__motion = [];
  new MutationObserver((mutations) => {
    const batch = { version: Number(document.getElementById("app")?.dataset.version ?? -1), plays: [], flights: [], moments: [] };
    for (const mutation of mutations) {
      for (const node of mutation.addedNodes) {
        if (!(node instanceof HTMLElement)) continue;
        if (node.classList.contains("flying")) batch.flights.push({ card: node.dataset.flies, to: Number(node.dataset.to) });
        for (const play of [node, ...node.querySelectorAll("#last-play")].filter((e) => e.id === "last-play")) {
          const captured = [...play.querySelectorAll(".mini[data-card]:not(.played)")].map((e) => e.dataset.card);
          const played = play.querySelector(".played")?.dataset.card ?? "";
          // A play is its hand's, its seat's and its card's: the same seat may play the same card in another hand.
          const hand = document.getElementById("app")?.dataset.hand ?? "";
          batch.plays.push({ seat: Number(play.dataset.seat), captured, basra: play.classList.contains("basra"), key: hand + ":" + play.dataset.seat + ":" + played });
        }
        for (const moment of [node, ...node.querySelectorAll("#moment")].filter((e) => e.id === "moment")) {
          batch.moments.push({ kind: moment.dataset.kind, text: moment.textContent });
        }
      }
    }
    if (batch.plays.length || batch.flights.length || batch.moments.length) window.__motion.push(batch);
  }).observe(document, { childList: true, subtree: true });
`;

/** Records what the page animates from its next load on (see MotionBatch). */
export async function recordMotion(page: Page): Promise<void> {
  await page.addInitScript({ content: MOTION_RECORDER });
}

export async function motion(page: Page): Promise<MotionBatch[]> {
  return page.evaluate(() => (window as unknown as { __motion: MotionBatch[] }).__motion);
}
