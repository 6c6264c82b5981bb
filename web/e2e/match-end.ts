// The match's end, on a seeded match of two seats whose plays the API makes while seat 1's page
// follows (seed 1: seat 0 wins, and the last hand leaves cards on the floor for seat 1). The
// page ends the match properly: who won, each side's final score (the winner first), a clear
// way to a new match, in every language; the last play and the leftover floor's stay under the
// floor; seats are counted from 1 wherever the page names one; the status never says "Your
// turn".
import assert from "node:assert/strict";
import { launch, player } from "./table.js";
import { deal, face, playFirst, reach, seatLink, seededMatch, view, watchForWrongScreens, wrongScreens, type Event } from "./support.js";

const SEED = 1;
const ME = 1;

const browser = await launch();
try {
  const match = await seededMatch(SEED);
  const { page, errors } = await player(browser);
  await watchForWrongScreens(page, ["turn", "log"]);
  await page.goto(seatLink(match, ME));
  await page.locator("#app[data-version]").waitFor();
  let last: Event[] = [];
  for (;;) {
    const played = await playFirst(match);
    last = played.events;
    if (played.view.status === "MATCH_STATUS_MATCH_OVER") break;
    if (played.view.status === "MATCH_STATUS_HAND_OVER") await deal(match, 0);
  }
  const final = await view(match, ME);
  const winner = final.winnerSide ?? 0;
  assert.equal(winner, 0, `seed ${SEED}: seat 1 (the API's seat 0) wins`);
  await reach(page, final.version);

  const end = page.locator("#match-end");
  await end.waitFor();
  assert.equal(await end.locator("h2").innerText(), "The match is over");
  assert.equal(await page.locator("#result").innerText(), "Player (seat 1) won the match.");
  // Each side's final score, the winner first and marked.
  const rows = await end.locator("#final-scores tbody tr").evaluateAll((trs) =>
    trs.map((tr) => [tr.querySelector("th")?.textContent ?? "", tr.querySelector("td.score")?.textContent ?? ""]));
  const score = (side: number): number => final.sides?.find((summary) => (summary.side ?? 0) === side)?.score ?? 0;
  assert.deepEqual(rows, [
    ["Player (seat 1) Winner", `${score(0)} points`],
    ["You", `${score(1)} points`],
  ]);
  assert.equal(await end.locator("caption").innerText(), "Final scores");
  // The last hand's sheet stays under it; the status calls no turn.
  assert.equal(await page.locator("#sheet table").count(), 1);
  assert.equal(await page.locator("#next-hand").count(), 0);
  assert.equal((await page.locator("#turn").innerText()).trim(), "");

  // Under the floor: the last card's play, then the leftover floor's, which went to this seat.
  const collected = last.find((event) => event.floorCollected)?.floorCollected;
  assert.ok(collected && (collected.seat ?? 0) === ME && (collected.cards ?? []).length > 0, `seed ${SEED}: the last hand leaves cards for seat ${ME + 1}`);
  await page.locator("#last-play .played").waitFor();
  assert.equal(await page.locator("#floor-taken .what").innerText(), "You took what was left on the floor.");
  assert.deepEqual((await page.locator("#floor-taken .card.mini").allInnerTexts()).map((text) => text.replace(/\s/g, "")), (collected.cards ?? []).map(face));
  assert.equal((await page.locator("#log li").allInnerTexts()).filter((line) => line.startsWith("You took what was left on the floor: ")).length, 1);

  // Seats counted from 1: the page never names a seat 0.
  assert.doesNotMatch(await page.locator("body").innerText(), /\(seat 0\)|seat 0\b/);

  // The end in Arabic and Persian: their words, their digits.
  const WORDS: Record<string, { heading: string; digits: RegExp }> = {
    ar: { heading: "انتهت المباراة", digits: /^[٠-٩]+ نقطة$/ },
    fa: { heading: "بازی تمام شد", digits: /^[۰-۹]+ امتیاز$/ },
  };
  for (const [lang, { heading, digits }] of Object.entries(WORDS)) {
    await page.selectOption("#language", lang);
    assert.equal(await end.locator("h2").innerText(), heading);
    for (const cell of await end.locator("td.score").allInnerTexts()) assert.match(cell, digits, `${lang}: ${cell}`);
    assert.equal(await end.locator("#new-match").count(), 1);
  }
  await page.selectOption("#language", "en");

  // A new match: back to the lobby, this seat forgotten.
  assert.equal(await page.locator("#new-match").innerText(), "Start a new match");
  await page.locator("#new-match").click();
  await page.locator("#start:not([disabled])").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("basra.table")), null);
  assert.deepEqual(await wrongScreens(page), []);
  assert.deepEqual(errors, []);
  console.log(`match end: ${score(0)} to ${score(1)}, the leftover floor (${(collected.cards ?? []).map(face).join(" ")}) shown`);
} finally {
  await browser.close();
}
