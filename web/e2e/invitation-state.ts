// An invitation link says what it opens before anyone types a name (GetInvitation): an open
// seat asks for a name; a claimed one says "taken" at once, with no name form; one that no
// longer works (replaced by a new invitation, or mistyped) says so at once and asks for a new
// link; the tab that claimed the seat, opening its link again, goes back to its table; a name the
// service refuses says which rule it broke. The match
// is made through the API with an invitation for seat 1; each visitor is a browser of its own.
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { BASE_URL, claimSeat, launch, player, storedTokens } from "./table.js";
import { call } from "./support.js";

const TAKEN = "Someone has taken this seat with this invitation already.";
const GONE = "This invitation no longer works";

// Before the page's own script: notes whether the name form was ever drawn.
const FORM_WATCHER = `
  window.__formShown = false;
  new MutationObserver(() => {
    if (document.getElementById("claim-form")) window.__formShown = true;
  }).observe(document, { childList: true, subtree: true });
`;

/** Opens a link in a new browser and waits until the page has decided: the name form, or a
 * message with the lobby free again. Returns what it showed, and whether the name form was ever
 * drawn. */
async function visit(browser: Browser, link: string): Promise<{ page: Page; errors: string[]; form: boolean; alert: string }> {
  const { page, errors } = await player(browser);
  await page.addInitScript({ content: FORM_WATCHER });
  await page.goto(link);
  await page.locator("#claim-form, #alert:not(:empty)").first().waitFor();
  await page.locator("#claim-form, #start:not([disabled])").first().waitFor();
  const form = await page.evaluate(() => (window as unknown as { __formShown: boolean }).__formShown);
  return { page, errors, form, alert: await page.locator("#alert").innerText() };
}

const browser = await launch();
try {
  const created = await call<{ matchId: string; seatTokens: { seat?: number; token: string }[]; invitations: { seat: number; code: string }[] }>("CreateMatch", {
    rules: "eram", seats: 2, seat: 0, invitations: true, displayName: "Layla", requestId: crypto.randomUUID(),
  });
  const creatorToken = created.seatTokens.find((held) => (held.seat ?? 0) === 0)?.token ?? "";
  const code = created.invitations.find((invitation) => invitation.seat === 1)?.code ?? "";
  const link = (invitation: string, seat = 1): string => `${BASE_URL}/#${new URLSearchParams({ match: created.matchId, seat: String(seat), invite: invitation })}`;

  // Open: the name form, for the seat the service names (counted from 1), whatever the link
  // says; the claim seats its visitor.
  const first = await visit(browser, link(code, 0));
  assert.ok(first.form, "an open invitation asks for a name");
  assert.match(await first.page.locator("#claim-form").innerText(), /Seat 2 is kept for you/);
  await claimSeat(first.page, link(code), "Sam");

  // Claimed: "taken" at once, no name form, nothing kept.
  const late = await visit(browser, link(code));
  assert.equal(late.form, false, "no name form for a claimed invitation");
  assert.match(late.alert, new RegExp(`^${TAKEN}`));
  assert.deepEqual(await storedTokens(late.page), []);
  assert.equal(await late.page.evaluate(() => sessionStorage.getItem("basra.invite")), null, "the invitation is forgotten");

  // The tab that claimed the seat opens its link again: it is back at its table, not told it
  // is taken.
  await first.page.goto(link(code));
  await first.page.waitForFunction(() => location.hash === "");
  await first.page.locator("#app[data-version]").waitFor();
  assert.equal(await first.page.locator("#alert").innerText(), "");
  assert.equal((await storedTokens(first.page)).length, 1);

  // Replaced: the creator gives the seat a new invitation; the old link no longer works.
  const reissued = await call<{ invitation: { code: string } }>("ReissueInvitation", { matchId: created.matchId, seat: 1 }, creatorToken);
  const replaced = await visit(browser, link(code));
  assert.equal(replaced.form, false, "no name form for a replaced invitation");
  assert.match(replaced.alert, new RegExp(`^${GONE}.*ask the player who invited you for a new link\\.$`));
  // Mistyped: the same.
  const mistyped = await visit(browser, link(`${reissued.invitation.code.slice(0, -2)}xy`));
  assert.equal(mistyped.form, false, "no name form for a mistyped invitation");
  assert.match(mistyped.alert, new RegExp(`^${GONE}`));
  // The new link asks for a name again.
  const renewed = await visit(browser, link(reissued.invitation.code));
  assert.ok(renewed.form, "the new invitation asks for a name");
  // A name the service refuses is refused in words that say which rule, and the form stays:
  // a look-alike of the creator's (a Cyrillic a), then one that shows nothing (a Hangul filler).
  const refusals: [name: string, says: string][] = [
    ["L\u0430yla", "it looks like the name of seat 1 at this table"],
    ["\u3164", "this one shows nothing on screen"],
  ];
  for (const [name, says] of refusals) {
    await renewed.page.fill("#name", name);
    await renewed.page.click("#claim-seat");
    await renewed.page.locator("#alert", { hasText: says }).waitFor();
    await renewed.page.locator("#claim-form").waitFor();
  }

  const errors = [first, late, replaced, mistyped, renewed].flatMap((visitor) => visitor.errors);
  assert.deepEqual(errors, []);
  console.log("invitation states: open, taken at once, no longer works at once, back to its table, names refused by rule");
} finally {
  await browser.close();
}
