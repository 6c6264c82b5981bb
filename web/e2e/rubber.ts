// A rubber (Egyptian, two seats) against the service's greedy bot, played until its first game
// is won: the game-winning play brings the game's moment, naming the game and who won it, and
// the score sheet counts the won game; the rubber goes on with game 2. (When the bot deals the
// next hand, it does so at once, so the sheet may already show game 2.)
import assert from "node:assert/strict";
import { BASE_URL, launch, motion, myTurnOrSheet, nextHand, playFirst, player, recordMotion, startMatch, waitPast, type MotionBatch } from "./table.js";

const browser = await launch();
try {
  const me = await player(browser);
  const page = me.page;
  await recordMotion(page);
  await page.goto(BASE_URL);
  await startMatch(page, { rules: "egyptian", others: ["greedy"], ticked: ["rubber"] });
  assert.equal(await page.locator("#game").innerText(), "Game 1 of the rubber");

  let hands = 0;
  for (;;) {
    const now = await myTurnOrSheet(page);
    if (now.sheet) {
      hands += 1;
      await page.locator("#sheet table").waitFor();
      const games = await page.locator(".scores td.games").allInnerTexts();
      if (games.includes("1 game won")) break;
      await nextHand(page);
      continue;
    }
    await playFirst(page);
    await waitPast(page, now.version);
  }
  assert.deepEqual((await page.locator(".scores td.games").allInnerTexts()).sort(), ["0 games won", "1 game won"]);
  const moments = (await motion(page) as MotionBatch[]).flatMap((batch) => batch.moments);
  // The moment is recorded at each redraw while it shows: one text, however many redraws.
  const games = [...new Set(moments.filter((moment) => moment.kind === "game").map((moment) => moment.text))];
  assert.equal(games.length, 1, `one game moment: ${JSON.stringify(games)}`);
  assert.match(games[0]!, /^Game 1 goes to (you|Greedy bot \(seat 2\))\.$/i);
  assert.ok(!moments.some((moment) => moment.kind === "match"), "the rubber goes on");

  await nextHand(page);
  await page.waitForFunction(() => document.getElementById("game")?.textContent === "Game 2 of the rubber");
  assert.deepEqual((await page.locator(".scores td.games").allInnerTexts()).sort(), ["0 games won", "1 game won"]);
  assert.deepEqual(me.errors, []);
  console.log(`rubber: game 1 won after ${hands} hands: ${games[0]!}`);
} finally {
  await browser.close();
}
