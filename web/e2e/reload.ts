// Against the service's strong bot: play by keyboard, reload mid-hand, and go on where the table
// was. The bot's plays reach this seat through WatchMatch like anyone's, so a bot's reply after
// the reload also proves the stream was resumed.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL, launch, playFirst, player, screenshot, seen, startMatch, storedTokens, waitPast } from "./table.js";

const browser = await launch();
try {
  const me = await player(browser);
  const page = me.page;
  await page.goto(BASE_URL);
  await startMatch(page);
  // The other seat is the service's: the page holds its own seat's token and no invitation.
  assert.equal((await storedTokens(page)).length, 1, "one token: this page's own seat's");
  const stored = await page.evaluate(() => JSON.parse(sessionStorage.getItem("basra.table") ?? "{}"));
  assert.deepEqual(stored.invites ?? {}, {}, "no invitation: the other seat is a bot");
  assert.equal(await page.locator('.seat[data-seat="1"] h2').innerText(), "Strong bot (seat 2)");

  // A few plays, the first one by keyboard only: Tab to a card, Enter, Enter on its first choice.
  for (let move = 0; move < 3; move++) {
    const before = await myTurn(page);
    if (move === 0) await playByKeyboard(page);
    else await playFirst(page);
    await waitPast(page, before.version);
  }

  await showAPlan(page);
  const before = await seen(page);
  await screenshot(page, "bot-plans");
  await page.reload();
  const after = await myTurn(page);
  assert.equal(after.version, before.version, "the same version after the reload");
  assert.deepEqual(after.hand, before.hand, "the same hand");
  assert.deepEqual(after.floor, before.floor, "the same floor");
  assert.deepEqual(after.backs, before.backs);

  // The table goes on: my play, then the bot's answer through the resumed stream.
  await playFirst(page);
  const next = await myTurn(page, after.version + 1);
  assert.ok(next.version >= after.version + 2, "my play and the bot's");
  assert.match(await page.locator("#log").innerText(), /Strong bot \(seat 2\)/, "the bot's play in the log, named with its level");

  // A typed rejection reads as a sentence: a link with a forged token for this match.
  const { matchId } = await page.evaluate(() => JSON.parse(sessionStorage.getItem("basra.table") ?? "{}").me);
  const forged = await me.context.newPage();
  // GetMatch is held until the lobby has been looked at: the lobby is drawn at once, and its
  // Start must wait while the link's match loads (else the page could sit at two matches).
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  await forged.route(/\/GetMatch$/, async (route) => {
    await released;
    await route.continue();
  });
  await forged.goto(`${BASE_URL}/#match=${matchId}&seat=1&token=forged-token`);
  const start = forged.locator("#start");
  await forged.locator("#rules option").first().waitFor({ state: "attached" }); // the rule systems: Start waits for nothing else
  assert.ok(await start.isDisabled(), "no new match while the link's match loads");
  release();
  // The rejection: wait for the message itself, then the lobby is free again.
  const alert = forged.locator("#alert");
  await alert.filter({ hasText: /\S/ }).waitFor();
  assert.equal(await alert.innerText(), "This seat's key does not belong to the match.");
  assert.ok(await start.isEnabled(), "the lobby is free once the link is refused");
  assert.deepEqual(me.errors, []);
  console.log(`resumed at version ${after.version}, went on to ${next.version}`);
} finally {
  await browser.close();
}

/** Waits until it is my turn (the bot has answered) past `version`. */
async function myTurn(page: Page, version = -1) {
  await page.waitForFunction(
    (v) => {
      const app = document.getElementById("app");
      return app?.dataset["turn"] === "you" && Number(app.dataset["version"]) > v && document.querySelector("#hand button:not([disabled])") !== null;
    },
    version,
  );
  return seen(page);
}

async function playByKeyboard(page: Page): Promise<void> {
  const cards = page.locator("#hand button");
  const first = cards.first();
  // Tab through the page until the first card of the hand has the focus.
  for (let presses = 0; presses < 40; presses++) {
    await page.keyboard.press("Tab");
    if (await first.evaluate((element) => element === document.activeElement)) break;
  }
  // The arrow key moves along the hand: the second card of the first deal's four.
  await page.keyboard.press("ArrowRight");
  const second = cards.nth(1);
  assert.ok(await second.evaluate((element) => element === document.activeElement), "ArrowRight moves to the next card");
  const code = (await second.getAttribute("data-card")) ?? "";
  const choices = Number(await second.getAttribute("data-plans"));
  const before = (await seen(page)).version;
  await page.keyboard.press("Enter");
  if (choices > 1) {
    // A choice: the focus moves to the card's first plan; Escape goes back to the card, Enter
    // again, Enter on its first plan.
    await page.waitForFunction(() => document.activeElement?.closest("#plans") !== null);
    assert.equal(await page.locator(`#hand [data-card="${code}"]`).getAttribute("aria-pressed"), "true");
    await page.keyboard.press("Escape");
    await page.waitForFunction((c) => (document.activeElement as HTMLElement | null)?.dataset["card"] === c, code);
    assert.equal(await page.locator("#plans").count(), 0);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.activeElement?.closest("#plans") !== null);
    await page.keyboard.press("Enter");
  }
  // A forced card (it trails, or it has one plan) is played by its own Enter.
  const after = await waitPast(page, before);
  assert.ok(!after.hand.includes(code), `${code} was played`);
}

/** Chooses a card that has several capture plans, so that its plans show and the floor cards
 * the first would take are marked; while no card of the hand has a choice, plays on (a dozen
 * plays at most, so that the hand goes on after the reload). */
async function showAPlan(page: Page): Promise<void> {
  for (let move = 0; move < 12; move++) {
    const card = page.locator('#hand button:not([data-plans="0"]):not([data-plans="1"])').first();
    if ((await card.count()) > 0) {
      await card.click();
      await page.locator("#plans button[data-plan]").first().hover();
      return;
    }
    const { version, status } = await seen(page);
    if (status !== "playing") return;
    await playFirst(page);
    await myTurn(page, version + 1);
  }
}
