// The pictures of the table (`make screenshot` writes them to web/screenshots/; the suite to a
// temporary folder): the lobby, the table mid-hand at 2 and 4 seats, a capture choice, a basra
// moment, the score sheet, Arabic at 360 px and the spectator's view. Played against the bots,
// with reduced motion so that every card is where it lands and a moment shows still.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL, launch, myTurnOrSheet, nextHand, player, screenshot, startMatch, waitPast } from "./table.js";

const taken = new Set<string>();
async function picture(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  taken.add(name);
}

/** Plays my turns until the hand ends, taking the pictures of the moments on the way. */
async function playHand(page: Page, prefix: string): Promise<void> {
  for (let turn = 0; ; turn++) {
    const now = await myTurnOrSheet(page);
    if (now.sheet) return;
    if (turn === 3 && !taken.has(`${prefix}-mid-hand`)) await picture(page, `${prefix}-mid-hand`);
    if (!taken.has("basra-moment") && (await page.locator('#moment[data-kind="basra"]').count()) > 0) await picture(page, "basra-moment");
    const chooser = page.locator('#hand button:not([data-plans="0"]):not([data-plans="1"])').first();
    if (!taken.has("capture-choice") && (await chooser.count()) > 0) {
      await chooser.click();
      await page.locator("#plans button[data-plan]").first().hover();
      await picture(page, "capture-choice");
      await page.locator("#plans button[data-plan]").first().click();
    } else {
      await page.locator("#hand button:not([disabled])").first().click();
    }
    await waitPast(page, now.version);
    if (!taken.has("basra-moment") && (await page.locator('#moment[data-kind="basra"]').count()) > 0) await picture(page, "basra-moment");
  }
}

const browser = await launch();
try {
  const me = await player(browser, "en-US", 800);
  await me.page.emulateMedia({ reducedMotion: "reduce" });
  await me.page.goto(BASE_URL);
  await me.page.locator("#start:not([disabled])").waitFor();
  await picture(me.page, "lobby");
  await startMatch(me.page);
  const link = await me.page.locator("#watch-link").inputValue();
  const watcher = await player(browser, "en-US", 800);
  await watcher.page.emulateMedia({ reducedMotion: "reduce" });
  await watcher.page.goto(link);
  await watcher.page.locator("#app[data-role=spectator]").waitFor();
  for (let hand = 1; hand <= 3; hand++) {
    await playHand(me.page, "table-2-seats");
    if (hand === 1) {
      await me.page.locator("#sheet table").waitFor();
      await picture(me.page, "score-sheet");
      await picture(watcher.page, "spectator");
    }
    if (taken.has("basra-moment") && taken.has("capture-choice")) break;
    if ((await me.page.locator("#new-match").count()) > 0) break;
    await nextHand(me.page);
  }

  const four = await player(browser, "en-US", 800);
  await four.page.emulateMedia({ reducedMotion: "reduce" });
  await four.page.goto(BASE_URL);
  await startMatch(four.page, { rules: "egyptian", seats: 4, others: ["strong", "greedy", "random"] });
  await playHand(four.page, "table-4-seats");

  const arabic = await player(browser, "ar-EG", 360);
  await arabic.page.emulateMedia({ reducedMotion: "reduce" });
  await arabic.page.setViewportSize({ width: 360, height: 740 });
  await arabic.page.goto(BASE_URL);
  await startMatch(arabic.page, { rules: "egyptian", seats: 4, others: ["strong", "strong", "strong"] });
  await arabic.page.waitForFunction(() => document.getElementById("app")?.dataset["turn"] === "you" && document.querySelector("#hand button:not([disabled])") !== null);
  await picture(arabic.page, "arabic-360px");

  for (const name of ["lobby", "table-2-seats-mid-hand", "table-4-seats-mid-hand", "score-sheet", "spectator", "arabic-360px"]) {
    assert.ok(taken.has(name), `picture ${name}`);
  }
  assert.deepEqual([...me.errors, ...watcher.errors, ...four.errors, ...arabic.errors], []);
  console.log(`pictures: ${[...taken].sort().join(", ")}`);
} finally {
  await browser.close();
}
