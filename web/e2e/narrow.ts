// Every screen at 360 px wide, in English, Arabic and Persian: nothing scrolls sideways (the
// document is no wider than the viewport). The screens: the lobby at every rule system and seat
// count it offers, a person's seat chosen; an invitation's name form; the creator's table of
// four seats (two side seats, invited players, links); the spectator's table; a hand's score
// sheet; the match's end (four seats each for themself, the widest sheet), its matches played
// through the API. On the tables, a seat's label keeps its parenthesis on one line ("(seat 2)"
// is never cut after "seat"), inside its seat.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL, inviteLink, launch, player, startMatch } from "./table.js";
import { deal, fitsInEveryLanguage, playFirst, reach, seatLink, seededMatch, sideways } from "./support.js";

const WIDTH = 360;
const LANGUAGES = ["en", "ar", "fa"];

/** The labels of the seats and of the scores' rows whose parenthesis ("(seat 2)") is cut over
 * two lines, or sticks out of its seat. */
async function cutLabels(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    for (const label of document.querySelectorAll<HTMLElement>(".seat h2, .scores th, #sheet thead th, #final-scores th")) {
      const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
      const texts: Text[] = [];
      for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node as Text);
      const whole = texts.map((text) => text.data).join("");
      const open = whole.lastIndexOf("(");
      const close = whole.indexOf(")", open);
      if (open < 0 || close < 0) continue;
      // Where the parenthesis starts and ends: a text node and an offset in it each (no named
      // helpers in here: tsx would wrap them in a __name() the page lacks).
      const range = document.createRange();
      let start = 0;
      for (const text of texts) {
        const end = start + text.data.length;
        if (open >= start && open < end) range.setStart(text, open - start);
        if (close >= start && close < end) range.setEnd(text, close - start + 1);
        start = end;
      }
      const lines = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
      if (lines.size > 1) found.push(`${JSON.stringify(whole)} cut over ${lines.size} lines`);
      const seat = label.closest(".seat");
      if (seat) {
        const [inner, outer] = [range.getBoundingClientRect(), seat.getBoundingClientRect()];
        if (inner.left < outer.left - 0.5 || inner.right > outer.right + 0.5) found.push(`${JSON.stringify(whole)} sticks out of its seat`);
      }
    }
    return found;
  });
}

/** The table fits, and its labels keep their parentheses, in every language. */
async function tableFits(page: Page, where: string): Promise<void> {
  await fitsInEveryLanguage(page, where);
  for (const lang of LANGUAGES) {
    await page.selectOption("#language", lang);
    assert.deepEqual(await cutLabels(page), [], `${where} (${lang})`);
  }
  await page.selectOption("#language", "en");
}

const browser = await launch();
try {
  // The lobby: every rule system, each seat count, a person invited.
  const creator = await player(browser, "en-US", WIDTH);
  const page = creator.page;
  await page.goto(BASE_URL);
  await page.locator("#start:not([disabled])").waitFor();
  for (const lang of LANGUAGES) {
    await page.selectOption("#language", lang);
    for (const rules of await page.locator("#rules option").evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value))) {
      await page.selectOption("#rules", rules);
      for (const seats of await page.locator("#seats option").evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value))) {
        await page.selectOption("#seats", seats);
        await page.selectOption("#seat-1", "person");
        assert.equal(await sideways(page), 0, `the lobby (${lang}) at ${rules}, ${seats} seats scrolls sideways at ${WIDTH} px`);
      }
    }
  }
  await page.selectOption("#language", "en");
  console.log("fits: the lobby, every rule system and seat count");

  // The creator's table: four seats, two side seats, a person invited, the links.
  await page.reload();
  await startMatch(page, { rules: "persian", seats: 4, others: ["person", "random", "strong"] });
  await page.locator("#invite-1-link").waitFor();
  await page.locator("#watch-link").waitFor();
  await tableFits(page, "the creator's table of four seats");

  // The invitation's name form.
  const guest = await player(browser, "en-US", WIDTH);
  await guest.page.goto(await inviteLink(page, 1));
  await guest.page.locator("#claim-form").waitFor();
  await fitsInEveryLanguage(guest.page, "the invitation's name form");

  // The spectator's table.
  const watcher = await player(browser, "en-US", WIDTH);
  await watcher.page.goto(await page.locator("#watch-link").inputValue());
  await watcher.page.locator("#app[data-role=spectator]").waitFor();
  await tableFits(watcher.page, "the spectator's table");

  // A score sheet and the match's end: four seats each for themself, played by the API.
  const match = await seededMatch(3, "persian", 4);
  const seat = await player(browser, "en-US", WIDTH);
  await seat.page.goto(seatLink(match, 0));
  await seat.page.locator("#app[data-version]").waitFor();
  let sheets = 0;
  for (;;) {
    const { view: now } = await playFirst(match);
    if (now.status === "MATCH_STATUS_PLAYING") continue;
    await reach(seat.page, now.version);
    if (now.status === "MATCH_STATUS_MATCH_OVER") break;
    if (sheets === 0) {
      await seat.page.locator("#sheet table").waitFor();
      await tableFits(seat.page, "a score sheet of four sides");
    }
    sheets += 1;
    await deal(match, 1);
  }
  await seat.page.locator("#match-end").waitFor();
  await tableFits(seat.page, "the match's end of four sides");
  assert.deepEqual([...creator.errors, ...guest.errors, ...watcher.errors, ...seat.errors], []);
  console.log(`narrow: every screen fits ${WIDTH} px (${sheets + 1} hands to the match's end)`);
} finally {
  await browser.close();
}
