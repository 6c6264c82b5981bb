// A spectator watches two people play: seat 0 hands on the spectator link, a third browser opens
// it and follows the match live through WatchMatch with a read-only watch token. Its page shows
// the public table (the floor, every seat's hand size, the scores, the plays as they arrive) and
// never any seat's cards; it survives a reload and a server restart like a seat's page. The
// match is Egyptian with every seat seeing the stock's bottom card, so that card is public and
// the spectator sees it too.
import assert from "node:assert/strict";
import { ask, BASE_URL, claimSeat, disjoint, inviteLink, launch, playFirst, player, screenshot, seen, startMatch, waitAt, waitPast, type Player, type Seen } from "./table.js";

const browser = await launch();
try {
  const a = await player(browser);
  const b = await player(browser);
  const s = await player(browser);
  await a.page.goto(BASE_URL);
  await startMatch(a.page, { rules: "egyptian", others: ["person"], ticked: ["bottom-card-shown"] });
  await claimSeat(b.page, await inviteLink(a.page, 1), "Robin");
  const link = await a.page.locator("#watch-link").inputValue();
  const url = new URL(link);
  // The watch token travels in the fragment only, and is not a seat's token.
  assert.equal(url.search, "");
  assert.match(url.hash, /^#match=[^&]+&watch=[^&]+$/);
  const seatToken = await a.page.evaluate(() => JSON.parse(sessionStorage.getItem("basra.table") ?? "{}").me.token);
  assert.notEqual(new URLSearchParams(url.hash.slice(1)).get("watch"), seatToken);
  await s.page.goto(link);
  await s.page.locator("#app[data-role=spectator]").waitFor();
  assert.equal(new URL(s.page.url()).hash, "", "the page erases the token from the address bar");

  // The claim is the match's latest change: the claimant's page shows its version.
  let version = (await seen(b.page)).version;
  assert.notEqual((await waitAt(s.page, version)).bottom, "", "the public bottom card, on the spectator's page too");
  let plays = 0;
  for (;;) {
    const [sa, sb, ss] = [await waitAt(a.page, version), await waitAt(b.page, version), await waitAt(s.page, version)];
    check(sa, sb, ss);
    if (sa.status !== "playing") break;
    if (plays === 6) {
      // A reload: the spectator comes back to the same table, and watches on.
      await s.page.reload();
      check(sa, sb, await waitAt(s.page, version));
    }
    if (plays === 12) await ask("restart");
    if (plays === 8) await screenshot(s.page, "spectator-mid-hand");
    const actor: Player = sa.turn === "you" ? a : b;
    await playFirst(actor.page);
    plays += 1;
    version = (await waitPast(actor.page, version)).version;
    // The play arrives on the spectator's page: its log tells it as the other seat's page does
    // (the line names the seat and both cards, so it is this play's).
    const watcher = actor === a ? b : a;
    await waitAt(s.page, version);
    await waitAt(watcher.page, version);
    // Seat 0's creator gave no name; seat 1's player sat down as Robin.
    const label = actor === a ? "Player (seat 1)" : "Robin";
    const told = (await watcher.page.locator("#log li").allInnerTexts()).filter((line) => line.includes(label)).at(-1);
    assert.ok(told, `the other seat's page tells ${label}'s play`);
    assert.ok((await s.page.locator("#log li").allInnerTexts()).includes(told), `the spectator sees it too: ${told}`);
  }
  // The hand's end: the spectator sees the score sheet, and cannot deal.
  await s.page.locator("#sheet table").waitFor();
  assert.equal(await s.page.locator("#next-hand").count(), 0);
  await screenshot(s.page, "spectator-score-sheet");
  assert.equal(await s.page.locator("#alert").innerText(), "", "reconnected: no message left");
  assert.deepEqual([...a.errors, ...b.errors, ...s.errors], []);
  console.log(`the spectator watched ${plays} plays to the end of the hand`);
} finally {
  await browser.close();
}

/** The spectator's page shows the public table of both seats' pages and none of their cards. */
function check(a: Seen, b: Seen, s: Seen): void {
  assert.equal(s.role, "spectator");
  assert.deepEqual(s.hand, [], "no hand on a spectator's page");
  assert.deepEqual(disjoint(s.everyCard, [...a.hand, ...b.hand]), [], "no seat's card on the spectator's page");
  assert.deepEqual(s.floor, a.floor);
  assert.equal(s.bottom, a.bottom);
  assert.equal(b.bottom, a.bottom);
  assert.deepEqual(s.backs, { 0: a.hand.length, 1: b.hand.length });
  assert.equal(s.status, a.status);
  assert.equal(s.turn, a.status === "playing" ? "other" : "", "never the spectator's turn");
  assert.equal(s.toPlay, a.toPlay);
  assert.ok(!s.text.includes("Your hand"));
}
