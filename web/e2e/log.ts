// "What happened" against the strong bot: never an empty list (the section waits for its first
// line), and a reload keeps its lines: the page fetches the match's latest events again
// (WatchMatch from a few versions back) instead of starting from nothing.
import assert from "node:assert/strict";
import { BASE_URL, launch, myTurnOrSheet, playFirst, player, startMatch, waitPast, type Seen } from "./table.js";
import { watchForWrongScreens, wrongScreens } from "./support.js";

const browser = await launch();
try {
  const { page, errors } = await player(browser);
  await watchForWrongScreens(page, ["log"]);
  await page.goto(BASE_URL);
  await startMatch(page, { others: ["strong"] });
  // The deal is told at once, before anyone has played.
  await page.locator("#log li").first().waitFor();
  let now: Seen = await myTurnOrSheet(page);
  for (let plays = 0; plays < 3 && !now.sheet; plays++) {
    await playFirst(page);
    now = await myTurnOrSheet(page);
    assert.ok(now.version > 1);
  }
  const before = await page.locator("#log li").allInnerTexts();
  assert.ok(before.length >= 5, `lines before the reload: ${before.join(" | ")}`);
  assert.deepEqual(await wrongScreens(page), []);

  await page.reload();
  await page.waitForFunction((v) => Number(document.getElementById("app")?.dataset["version"] ?? -1) === v, now.version);
  await page.waitForFunction((count) => document.querySelectorAll("#log li").length >= count, before.length);
  assert.deepEqual(await page.locator("#log li").allInnerTexts(), before, "the same lines after the reload");
  // The language switch rewrites the rebuilt lines too.
  await page.selectOption("#language", "fa");
  assert.equal(await page.locator("#log li").count(), before.length);
  assert.notDeepEqual(await page.locator("#log li").allInnerTexts(), before);
  await page.selectOption("#language", "en");

  // The table goes on after the reload: the next play joins the rebuilt lines.
  const after = await myTurnOrSheet(page);
  if (!after.sheet) {
    await playFirst(page);
    await waitPast(page, after.version);
    await page.waitForFunction((last) => [...document.querySelectorAll("#log li")].at(-1)?.textContent !== last, before.at(-1));
  }
  assert.deepEqual(await wrongScreens(page), []);
  assert.deepEqual(errors, []);
  console.log(`log: ${before.length} lines kept across a reload at version ${now.version}`);
} finally {
  await browser.close();
}
