// A whole match against the service's strong bot, with motion on: the bot's plays arrive on the
// WatchMatch stream like anyone's; every capture's cards fly from the floor to the capturer's
// pile; a basra's moment names who made it (the end of a hand, a bigger moment, wins over a basra
// on its last play); the end of each hand and of the match have their moments. The page never holds a token but its own.
import assert from "node:assert/strict";
import { BASE_URL, launch, motion, myTurnOrSheet, nextHand, playFirst, player, recordMotion, screenshot, startMatch, storedTokens, waitPast, type MotionBatch } from "./table.js";

const browser = await launch();
try {
  const me = await player(browser);
  const page = me.page;
  await recordMotion(page);
  await page.goto(BASE_URL);
  await startMatch(page, { others: ["strong"] });
  assert.equal(await page.locator('.seat[data-seat="1"] h2').innerText(), "Strong bot (seat 2)");
  assert.equal((await storedTokens(page)).length, 1, "the page holds its own seat's token only");

  let plays = 0;
  let hands = 0;
  for (;;) {
    const now = await myTurnOrSheet(page);
    if (now.sheet) {
      hands += 1;
      await page.locator("#sheet table").waitFor();
      if ((await page.locator("#new-match").count()) > 0) break;
      await nextHand(page);
      continue;
    }
    await playFirst(page);
    plays += 1;
    await waitPast(page, now.version);
  }
  const result = await page.locator("#result").innerText();
  assert.match(result, /^(You won the match\.|Strong bot \(seat 2\) won the match\.)$/);
  await screenshot(page, "strong-bot-result");

  // What moved, redraw by redraw: a play is new the first time it is drawn.
  const batches: MotionBatch[] = await motion(page);
  let last = "";
  let captures = 0;
  let flights = 0;
  let basras = 0;
  const problems: string[] = [];
  for (const batch of batches) {
    const play = batch.plays.at(-1);
    const fresh = play !== undefined && play.key !== last;
    if (play) last = play.key;
    for (const flight of batch.flights) {
      // A card flies only with the capture that took it, to the capturer's seat.
      if (!fresh || flight.to !== play.seat || !play.captured.includes(flight.card)) problems.push(`v${batch.version}: ${flight.card} flew to seat ${flight.to} after ${JSON.stringify(play)}`);
    }
    flights += batch.flights.length;
    if (!fresh) continue;
    if (play.captured.length > 0) captures += 1;
    // My captures start from my own table, where every captured card lay on the floor.
    if (play.seat === 0 && batch.flights.length !== play.captured.length) problems.push(`v${batch.version}: my capture of ${play.captured.join(" ")} flew ${batch.flights.length} cards`);
    // A basra's moment names who made it, unless the same play ended the hand (a bigger moment).
    if (play.basra && !batch.moments.some((moment) => moment.kind !== "basra")) {
      basras += 1;
      const named = play.seat === 0 ? "Your basra!" : "Basra for Strong bot (seat 2)!";
      if (!batch.moments.some((moment) => moment.kind === "basra" && moment.text === named)) problems.push(`v${batch.version}: basra by seat ${play.seat} without "${named}": ${JSON.stringify(batch.moments)}`);
    }
  }
  const kinds = new Set(batches.flatMap((batch) => batch.moments.map((moment) => moment.kind)));
  assert.deepEqual(problems, []);
  assert.ok(captures > 0 && flights > 0, `captures flew: ${captures} captures, ${flights} cards`);
  // A whole match has basras (each is worth 10 points; the strong bot seeks them).
  assert.ok(basras > 0, "a basra's moment was seen");
  assert.ok(kinds.has("hand"), "a moment at the end of a hand");
  assert.ok(batches.some((batch) => batch.moments.some((moment) => moment.kind === "match" && moment.text === result)), "the match's moment says the result");
  // No copy of a flying card stays behind once it has landed.
  await page.waitForFunction(() => document.querySelectorAll(".flying").length === 0);
  assert.deepEqual(me.errors, []);
  console.log(`strong bot: ${plays} plays over ${hands} hands, ${captures} captures (${flights} cards flew), ${basras} basras: ${result}`);
} finally {
  await browser.close();
}
