// The end of a hand, on a seeded match whose plays the API makes while the page of the seat that
// leads the next hand follows them (seed 7: a basra in the first hand, and cards left on the
// floor at its end for the last capturer). Checked: a basra's count stands apart from the pile's
// count (on screen and in the text a screen reader reads), in every language; once the hand is
// over the strip under the floor shows the leftover floor going to the last capturer as a play
// of its own, and the log tells it in the past tense; the status never says "Your turn" while
// no card can be played, not even under the score sheet once another seat has dealt the next
// hand to this one.
import assert from "node:assert/strict";
import { launch, player } from "./table.js";
import { code, deal, face, playHand, reach, seatLink, seededMatch, watchForWrongScreens, wrongScreens, type Event } from "./support.js";

const SEED = 7;
const LANGUAGES = ["en", "ar", "fa"];

const browser = await launch();
try {
  const match = await seededMatch(SEED);
  // The dealer of the first hand leads the second: its page is the one a dealt hand waits for.
  const me = match.view.dealer ?? 0;
  const other = 1 - me;
  const { page, errors } = await player(browser);
  await watchForWrongScreens(page, ["turn"]);
  await page.goto(seatLink(match, me));
  await page.locator("#app[data-version]").waitFor();

  let basras = 0;
  const { events, view: ended } = await playHand(match, async (played: Event[], after) => {
    if (!played.some((event) => event.cardPlayed?.basra)) return;
    // A basra: the API waits while the page shows it, in every language.
    basras += 1;
    await reach(page, after.version);
    for (const lang of LANGUAGES) {
      await page.selectOption("#language", lang);
      const standings = await page.locator(".standing:has(.badge.basras)").all();
      assert.ok(standings.length > 0, "the basra is counted on its seat");
      for (const standing of standings) {
        const parts = await standing.evaluate((element) => {
          const badge = element.querySelector(".badge.basras") as HTMLElement;
          const pile = element.querySelector(".pile") as HTMLElement;
          const text = element.textContent ?? "";
          const [a, b] = [pile.getBoundingClientRect(), badge.getBoundingClientRect()];
          const rtl = getComputedStyle(element).direction === "rtl";
          return {
            text,
            before: text.slice(0, text.indexOf(badge.textContent ?? "")),
            // The room between the pile's count and the badge, in reading order, on one line.
            gap: a.top === b.top || Math.abs(a.bottom - b.bottom) < 2 ? (rtl ? a.left - b.right : b.left - a.right) : Infinity,
          };
        });
        assert.match(parts.before, /\s$/u, `${lang}: the basra count runs into the text before it: ${JSON.stringify(parts.text)}`);
        assert.ok(parts.gap >= 4, `${lang}: the basra badge touches the pile's count on screen (${parts.gap} px): ${parts.text}`);
      }
    }
    await page.selectOption("#language", "en");
  });
  assert.ok(basras > 0, `seed ${SEED} has a basra in its first hand`);

  // The hand is over: the last card's play, then the leftover floor's.
  const last = events.filter((event) => event.cardPlayed).at(-1)?.cardPlayed;
  const collected = events.find((event) => event.floorCollected)?.floorCollected;
  assert.ok(last && collected && (collected.cards ?? []).length > 0, `seed ${SEED} leaves cards on the floor for the last capturer`);
  const taker = collected.seat ?? 0;
  await reach(page, ended.version);
  await page.locator("#sheet").waitFor();
  assert.equal(await page.locator("#last-play .played").getAttribute("data-card"), code(last.card), "the last card's play stays");
  const strip = page.locator("#floor-taken");
  assert.equal(await strip.count(), 1, "the leftover floor is drawn as a play");
  assert.equal(await strip.getAttribute("data-seat"), String(taker), "the leftover floor's play names its taker");
  assert.deepEqual(await strip.locator(".card.mini").allInnerTexts().then((texts) => texts.map((text) => text.replace(/\s/g, ""))), (collected.cards ?? []).map(face));
  const who = taker === me ? "You" : `Player \\(seat ${taker + 1}\\)`;
  assert.match(await strip.locator(".what").innerText(), new RegExp(`^${who} took what was left on the floor\\.$`));
  // The log tells it in the past tense like the plays before it, with the cards, in every
  // language.
  const PAST: Record<string, RegExp> = {
    en: new RegExp(`^${who} took what was left on the floor: .+\\.$`),
    ar: /^ذهب .*ما بقي على الأرض.*: .+\.$/u,
    fa: /^باقی‌ماندهٔ زمین به .+ رسید: .+\.$/u,
  };
  for (const lang of LANGUAGES) {
    await page.selectOption("#language", lang);
    const lines = await page.locator("#log li").allInnerTexts();
    const past = PAST[lang] ?? /$^/;
    assert.equal(lines.filter((line) => past.test(line)).length, 1, `${lang}: the log tells where the leftover floor went, in the past tense: ${lines.join(" | ")}`);
    assert.match(await strip.locator(".what").innerText(), lang === "en" ? /took/ : lang === "ar" ? /^ذهب/ : /رسید\.$/u);
  }
  await page.selectOption("#language", "en");
  assert.equal(await page.locator("#turn").innerText(), "Hand 1 is over.");

  // Another seat deals the next hand, which this seat leads: the sheet stays open, and the
  // status does not call a turn the page offers no card for.
  const dealt = await deal(match, other);
  assert.equal(dealt.toPlay, me, `seat ${me + 1} leads the second hand`);
  await reach(page, dealt.version);
  assert.equal(await page.locator("#sheet").count(), 1, "the sheet stays open");
  assert.equal(await page.locator("#hand button").count(), 0);
  assert.doesNotMatch(await page.locator("#turn").innerText(), /Your turn/);
  assert.equal(await page.locator("#floor-taken").count(), 0, "the new hand's floor has no leftover");
  // Going on shows the hand: now it is "Your turn".
  await page.locator("#next-hand").click();
  await page.locator("#hand button:not([disabled])").first().waitFor();
  assert.equal(await page.locator("#turn").innerText(), "Your turn: choose a card.");
  assert.deepEqual(await wrongScreens(page), []);
  assert.deepEqual(errors, []);
  console.log(`hand end: seat ${taker + 1} took ${(collected.cards ?? []).map(face).join(" ")}; ${basras} basras`);
} finally {
  await browser.close();
}
