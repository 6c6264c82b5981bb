// The rule systems' names and lines come from the service (ListRules' RuleSystem.wordings), in
// the page's language: the lobby's choices, the line under them, the table's status and How to
// play. ListRules' answer is marked on its way to the page (each name gets its language, "[en]")
// so that what the page shows can only be the service's words, and two rule systems lose
// wordings: lobashev its Persian one (the page falls back to the English wording), jordanian
// every one (the page shows its title).
import assert from "node:assert/strict";
import { BASE_URL, launch, player, startMatch } from "./table.js";

interface Wording { language: string; name: string; description: string }
interface System { name: string; title: string; wordings?: Wording[] }

const browser = await launch();
try {
  const { page, errors } = await player(browser);
  let served: System[] = [];
  await page.route(/\/basra\.v1\.BasraService\/ListRules$/, async (route) => {
    const answer = await route.fetch();
    const body = (await answer.json()) as { rules: System[] };
    for (const system of body.rules) {
      system.wordings = (system.wordings ?? []).map((wording) => ({ ...wording, name: `${wording.name} [${wording.language}]` }));
      if (system.name === "lobashev") system.wordings = system.wordings.filter((wording) => wording.language !== "fa");
      if (system.name === "jordanian") system.wordings = [];
    }
    served = body.rules;
    await route.fulfill({ response: answer, json: body });
  });
  await page.goto(BASE_URL);
  await page.locator("#start:not([disabled])").waitFor();
  assert.ok(served.length >= 6, "ListRules answered");

  /** What the page should show of a rule system in a language: its wording there, else the
   * English one, else its title. */
  const expected = (system: System, lang: string): { name: string; description: string | undefined } => {
    const wording = system.wordings?.find((candidate) => candidate.language === lang) ?? system.wordings?.find((candidate) => candidate.language === "en");
    return { name: wording?.name ?? system.title, description: wording?.description };
  };
  for (const lang of ["en", "ar", "fa"]) {
    await page.selectOption("#language", lang);
    assert.deepEqual(await page.locator("#rules option").allInnerTexts(), served.map((system) => expected(system, lang).name), `${lang}: the choices`);
    for (const system of served) {
      await page.selectOption("#rules", system.name);
      const line = expected(system, lang).description;
      if (line) {
        assert.equal(await page.locator("#rules-description").innerText(), line, `${lang}: ${system.name}'s line`);
        assert.equal(await page.locator("#rules").getAttribute("aria-describedby"), "rules-description");
      } else {
        assert.equal(await page.locator("#rules-description").count(), 0, `${lang}: ${system.name} has no line`);
      }
    }
    // How to play names every rule system the service words, with its line.
    const listed = await page.locator("#how-to-play dl.systems dt").allTextContents();
    assert.deepEqual(listed, served.filter((system) => expected(system, lang).description).map((system) => expected(system, lang).name), `${lang}: How to play`);
  }
  assert.ok((await page.locator("#rules option").allInnerTexts()).includes("Six-card deals (Lobashev) [en]"), "fa: lobashev in English");
  assert.ok((await page.locator("#rules option").allInnerTexts()).some((text) => text === served.find((system) => system.name === "jordanian")?.title), "fa: jordanian by its title");

  // The table names its match's rule system the same way.
  await page.selectOption("#language", "en");
  await startMatch(page, { rules: "eram" });
  const eram = served.find((system) => system.name === "eram");
  assert.ok(eram);
  assert.equal(await page.locator("#rules-name").innerText(), expected(eram, "en").name);
  await page.selectOption("#language", "ar");
  assert.equal(await page.locator("#rules-name").innerText(), expected(eram, "ar").name);
  assert.equal(await page.locator("#how-to-play .note").textContent(), `هذه المباراة: ${expected(eram, "ar").name}.`);
  await page.selectOption("#language", "en");
  assert.deepEqual(errors, []);
  console.log(`rule names: ${served.length} rule systems named by the service in en, ar and fa`);
} finally {
  await browser.close();
}
