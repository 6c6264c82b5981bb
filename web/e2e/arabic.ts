// The table in Arabic, from the browser's language: right to left, the game's own words, usable
// at 360 px wide; then Persian and English through the language switch.
import assert from "node:assert/strict";
import { BASE_URL, direction, fitsWidth, launch, player, screenshot, startMatch } from "./table.js";

const browser = await launch();
try {
  const { page, errors } = await player(browser, "ar-EG", 360);
  await page.goto(BASE_URL);
  assert.deepEqual(await direction(page), { lang: "ar", dir: "rtl", computed: "rtl" });
  assert.equal(await page.locator("h1").innerText(), "باصرة");
  // The lobby: the rule systems by their Arabic names (the service's), the seat counts in Arabic words.
  await page.locator("#start:not([disabled])").waitFor();
  assert.ok((await page.locator("#rules option").allInnerTexts()).includes("مصرية، إلى ١٠١"));
  await page.selectOption("#rules", "egyptian");
  assert.deepEqual(await page.locator("#seats option").allInnerTexts(), ["لاعبان", "٤ لاعبين في فريقين"]);
  await page.selectOption("#rules", "eram");
  assert.ok(await fitsWidth(page), "the lobby fits 360 px");
  await screenshot(page, "arabic-lobby-360px");
  await startMatch(page);
  await page.locator("#hand [data-card]").first().waitFor();
  assert.equal(await page.locator("#hand-heading").innerText(), "ورقك");
  // Card names as players say them: a suit of سباتي، ديناري، كبة، بستوني.
  const label = (await page.locator("#hand [data-card]").first().getAttribute("aria-label")) ?? "";
  assert.match(label, /(سباتي|ديناري|كبة|بستوني)$/);
  // Numbers in Arabic-Indic digits ("٤ ورقة في اليد" and the like).
  assert.match(await page.locator("#stock").innerText(), /[٠-٩]/);
  assert.ok(await fitsWidth(page), "no sideways scrolling at 360 px");
  await screenshot(page, "arabic-360px");

  await page.selectOption("#language", "fa");
  assert.deepEqual(await direction(page), { lang: "fa", dir: "rtl", computed: "rtl" });
  assert.equal(await page.locator("h1").innerText(), "بصره");
  assert.equal(await page.locator("#hand-heading").innerText(), "دست شما");
  assert.match(await page.locator("#stock").innerText(), /[۰-۹]/);
  await screenshot(page, "persian-360px");

  await page.selectOption("#language", "en");
  assert.deepEqual(await direction(page), { lang: "en", dir: "ltr", computed: "ltr" });
  assert.equal(await page.locator("#hand-heading").innerText(), "Your hand");
  // The choice is kept: a reload stays in English although the browser prefers Arabic.
  await page.reload();
  await page.locator("#hand [data-card]").first().waitFor();
  assert.deepEqual(await direction(page), { lang: "en", dir: "ltr", computed: "ltr" });
  assert.deepEqual(errors, []);
  console.log("Arabic and Persian right to left, English left to right");
} finally {
  await browser.close();
}
