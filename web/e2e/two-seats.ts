// Two people, two browsers: seat 0 starts a match against a friend, seat 1 claims its seat from
// the invitation link under a name, and they play the whole match by mouse. At every step both pages must agree
// on the table, and neither page may ever hold a card of the other seat's hand.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL, claimSeat, disjoint, inviteLink, launch, nextHand, playFirst, player, screenshot, seen, startMatch, storedTokens, waitAt, waitPast, type Player, type Seen } from "./table.js";

const browser = await launch();
try {
  const a = await player(browser);
  const b = await player(browser);
  await a.page.goto(BASE_URL);
  await startMatch(a.page, { others: ["person"] });
  const link = await inviteLink(a.page, 1);
  const url = new URL(link);
  // The invitation travels in the fragment only (never in the path or the query), and no token
  // with it: the creator's page holds its own seat's token only.
  assert.equal(url.search, "");
  assert.match(url.hash, /^#match=[^&]+&seat=1&invite=[^&]+$/);
  assert.equal((await storedTokens(a.page)).length, 1, "the creator's page holds one token, its own");
  await claimSeat(b.page, link, "Sam");
  assert.equal(new URL(b.page.url()).hash, "", "the page erases the invitation from the address bar");
  const [tokenA, tokenB] = [await storedTokens(a.page), await storedTokens(b.page)];
  assert.equal(tokenB.length, 1, "the invited page holds one token, its own seat's");
  assert.notEqual(tokenA[0], tokenB[0]);
  // The creator's page names the invited player once the claim arrives.
  await a.page.locator('.seat[data-seat="1"][data-claim="claimed"] h2 bdi', { hasText: "Sam" }).waitFor();

  // Leave asks first: "Stay" keeps the seat (and the table).
  await a.page.click("#leave");
  await a.page.locator("#leave-dialog[open]").waitFor();
  await a.page.click("#leave-cancel");
  await a.page.locator("#leave-dialog").waitFor({ state: "detached" });
  assert.notEqual(await a.page.evaluate(() => sessionStorage.getItem("basra.table")), null, "the seat is kept");

  let version = (await seen(a.page)).version;
  await waitAt(b.page, version);
  let plays = 0;
  let hands = 0;
  let actor: Player;
  for (;;) {
    const [sa, sb] = [await waitAt(a.page, version), await waitAt(b.page, version)];
    check(sa, sb);
    if (sa.status === "match-over") break;
    if (sa.status === "hand-over") {
      hands += 1;
      // Both see the same score sheet, a column per seat in seat order; either player may
      // deal the next hand (the sheet shows once Score has answered).
      await a.page.locator("#sheet table").waitFor();
      await b.page.locator("#sheet table").waitFor();
      assert.deepEqual(await sheet(a.page), await sheet(b.page));
      if (hands === 1) await screenshot(a.page, "two-seats-score-sheet");
      actor = hands % 2 ? b : a;
      await nextHand(actor.page);
      // The other player's sheet stays open on the next hand until they go on to it.
      const other = actor === a ? b : a;
      const dealt = (await waitPast(actor.page, version)).version;
      await waitAt(other.page, dealt);
      assert.match(await other.page.locator("#next-hand").innerText(), /^Go on to hand \d+$/);
      await nextHand(other.page);
    } else {
      actor = sa.turn === "you" ? a : b;
      if (plays === 5) await screenshot(actor.page, "two-seats-mid-hand");
      await playFirst(actor.page);
      plays += 1;
    }
    version = (await waitPast(actor.page, version)).version;
  }
  const [ra, rb] = [await a.page.locator("#result").innerText(), await b.page.locator("#result").innerText()];
  assert.ok(/^You won/.test(ra) !== /^You won/.test(rb), `exactly one winner: ${ra} / ${rb}`);
  await screenshot(a.page, "two-seats-result");
  // A new match starts from the lobby, the finished seat forgotten.
  await a.page.click("#new-match");
  await a.page.locator("#start").waitFor();
  assert.equal(await a.page.evaluate(() => sessionStorage.getItem("basra.table")), null);
  assert.deepEqual([...a.errors, ...b.errors], []);
  console.log(`played ${plays} cards over ${hands} hands: ${ra}`);
} finally {
  await browser.close();
}

/** What both pages must agree on, and the privacy of each hand. */
function check(a: Seen, b: Seen): void {
  assert.deepEqual(disjoint(a.everyCard, b.hand), [], "seat 0's page holds none of seat 1's cards");
  assert.deepEqual(disjoint(b.everyCard, a.hand), [], "seat 1's page holds none of seat 0's cards");
  assert.deepEqual(a.floor, b.floor, "one floor");
  assert.equal(a.backs[1], b.hand.length);
  assert.equal(b.backs[0], a.hand.length);
  assert.equal(a.status, b.status);
  if (a.status === "playing") assert.deepEqual([a.turn, b.turn].sort(), ["other", "you"]);
}

/** The score sheet's rows: [seat 0's value, seat 1's]. */
async function sheet(page: Page): Promise<string[][]> {
  return page.locator("#sheet tbody tr").evaluateAll((rows) =>
    rows.map((row) => [...row.querySelectorAll("td")].map((cell) => cell.textContent ?? "")));
}
