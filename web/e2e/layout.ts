// The table on a phone (360x740), measured from bounding boxes: in every rule system and seat
// count, at the deal and at every turn of the first hand, the player's own hand is inside the
// viewport without scrolling, and no card overlaps a heading or a button it is not part of
// (the raised chosen card included). Right to left too: the matches alternate English, Arabic
// and Persian. Under prefers-reduced-motion, as here, no captured card flies to a pile.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL, launch, motion, myTurnOrSheet, player, recordMotion, startMatch, waitPast } from "./table.js";

const MATCHES: readonly [string, number][] = [
  ["eram", 2], ["egyptian", 2], ["egyptian", 4], ["jordanian", 2], ["jordanian", 4], ["lobashev", 2],
  ["lobashev", 4], ["persian", 2], ["persian", 3], ["persian", 4], ["persian-partnership", 4],
];
const LOCALES = ["en-US", "ar-EG", "fa-IR"];
const [WIDTH, HEIGHT] = [360, 740];

/** What is wrong with the layout now: the hand outside the viewport, a card over a heading or a
 * button it is not part of. Read at the top of the page (no scrolling). */
async function problems(page: Page): Promise<string[]> {
  return page.evaluate(({ width, height }) => {
    window.scrollTo(0, 0);
    const found: string[] = [];
    const hand = document.querySelector(".hand");
    if (hand) {
      for (const element of [hand, ...hand.querySelectorAll("[data-card]")]) {
        const box = element.getBoundingClientRect();
        if (box.top < 0 || box.left < 0 || box.bottom > height || box.right > width) {
          found.push(`${(element as HTMLElement).dataset["card"] ?? "the hand"} at ${Math.round(box.left)},${Math.round(box.top)}-${Math.round(box.right)},${Math.round(box.bottom)}`);
        }
      }
    }
    const cards = [...document.querySelectorAll(".card")];
    const others = [...document.querySelectorAll("h1, h2, h3, button, summary, select")];
    for (const card of cards) {
      const a = card.getBoundingClientRect();
      for (const other of others) {
        if (other === card || other.contains(card) || card.contains(other)) continue;
        if (getComputedStyle(other).visibility === "hidden" || other.closest("[hidden]")) continue;
        const b = other.getBoundingClientRect();
        if (b.width === 0 || b.height === 0 || other.classList.contains("visually-hidden")) continue;
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (x > 0.5 && y > 0.5) found.push(`${(card as HTMLElement).dataset["card"] ?? "a card"} over ${other.tagName.toLowerCase()} "${(other.textContent ?? "").trim().slice(0, 30)}"`);
      }
    }
    return found;
  }, { width: WIDTH, height: HEIGHT });
}

const browser = await launch();
try {
  for (const [at, [rules, seats]] of MATCHES.entries()) {
    const locale = LOCALES[at % LOCALES.length] ?? "en-US";
    const me = await player(browser, locale, WIDTH);
    const page = me.page;
    // Cards land at once: the boxes are measured where they stay.
    await page.emulateMedia({ reducedMotion: "reduce" });
    await page.setViewportSize({ width: WIDTH, height: HEIGHT });
    await recordMotion(page);
    await page.goto(BASE_URL);
    await startMatch(page, { rules, seats, others: Array(seats - 1).fill("strong") });
    let turns = 0;
    let worst = 0;
    for (;;) {
      const now = await myTurnOrSheet(page);
      if (now.sheet) break;
      const where = `${rules} ${seats} seats (${locale}) turn ${turns + 1}`;
      assert.deepEqual(await problems(page), [], where);
      worst = Math.max(worst, await page.evaluate(() => document.querySelector(".hand")?.getBoundingClientRect().bottom ?? 0));
      const chooser = page.locator('#hand button:not([data-plans="0"]):not([data-plans="1"])').first();
      if ((await chooser.count()) > 0) {
        // The chosen card is raised, and the choice opens: still nothing overlaps.
        await chooser.click();
        await page.locator("#plans button[data-plan]").first().waitFor();
        assert.deepEqual(await problems(page), [], `${where}, a card chosen`);
        await page.locator("#plans button[data-plan]").first().click();
      } else {
        await page.locator("#hand button:not([disabled])").first().click();
      }
      turns += 1;
      await waitPast(page, now.version);
    }
    assert.ok(turns > 0);
    // Reduced motion: no captured card flies (the plays were drawn all the same).
    const batches = await motion(page);
    assert.ok(batches.some((batch) => batch.plays.length > 0), "plays drawn");
    assert.deepEqual(batches.flatMap((batch) => batch.flights), [], "no card flies under reduced motion");
    assert.deepEqual(me.errors, []);
    console.log(`${rules} ${seats} seats (${locale}): ${turns} turns, the hand's lowest edge at ${Math.round(worst)} of ${HEIGHT} px`);
    await me.context.close();
  }
  console.log("layout: the hand on screen and no card over a heading or button, every turn");
} finally {
  await browser.close();
}
