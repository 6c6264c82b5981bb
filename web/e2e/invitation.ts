// Invitations on the network: the table served over plain HTTP at this machine's network address
// (not localhost: Chromium then treats the page as an insecure context, as a friend's browser on
// the same Wi-Fi does), three browsers. The creator, named, starts a three-seat match with an
// invited person and the strong bot; the page holds its own token only and copies no link (no
// clipboard outside secure contexts: it selects the link and says so). The invited person claims
// the seat under a name (a name with a direction control is refused first, nothing changed); a
// third browser opening the same link is told the seat is taken and gets none. They play. The
// creator then gives the seat a new invitation: the first claimant's page is told and loses the
// seat, the old link is refused, the player claims the new link from another browser and plays
// on; the creator's page shows names, who has joined and who is connected throughout.
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { BASE_URL, inviteLink, launch, playFirst, player, screenshot, seatToken, seen, startMatch, storedTokens, waitPast, type Player } from "./table.js";

const NAME = "سارا"; // written right to left, inside English pages
const browser = await launch();
try {
  const host = new URL(BASE_URL).hostname;
  assert.ok(host !== "localhost" && !host.startsWith("127.") && host !== "[::1]", `a network address: ${host}`);
  const creator = await player(browser);
  await creator.page.goto(BASE_URL);
  // What an insecure context lacks: the page must not depend on it.
  const context = await creator.page.evaluate(() => ({
    secure: window.isSecureContext,
    randomUUID: typeof (crypto as { randomUUID?: unknown }).randomUUID,
    clipboard: "clipboard" in navigator,
  }));
  assert.deepEqual(context, { secure: false, randomUUID: "undefined", clipboard: false });

  await creator.page.locator("#start:not([disabled])").waitFor();
  await creator.page.fill("#name", "Layla");
  await startMatch(creator.page, { rules: "persian", seats: 3, others: ["person", "strong"] });
  assert.equal((await storedTokens(creator.page)).length, 1, "the creator's page holds its own token only");
  assert.equal(await creator.page.locator('.seat[data-seat="2"] h2').innerText(), "Strong bot (seat 3)");
  const link = await inviteLink(creator.page, 1);
  assert.match(new URL(link).hash, /^#match=[^&]+&seat=1&invite=[^&]+$/, "the link carries an invitation, not a token");
  assert.equal(new URL(link).host, new URL(BASE_URL).host);
  await creator.page.locator('.seat[data-seat="1"][data-claim="open"]', { hasText: "Invited" }).waitFor();

  // Copy: no clipboard here, so the link is selected and the page says to copy it.
  await creator.page.click("#copy-invite-1");
  await creator.page.locator("#alert", { hasText: "This browser cannot copy here" }).waitFor();
  assert.ok(await creator.page.evaluate(() => {
    const input = document.activeElement as HTMLInputElement | null;
    return input?.id === "invite-1-link" && input.selectionStart === 0 && input.selectionEnd === input.value.length;
  }), "the link is selected");

  // The invited person: a name with a right-to-left override is refused, nothing changes.
  const invited = await player(browser);
  await invited.page.goto(link);
  await invited.page.locator("#claim-form", { hasText: "Seat 2 is kept for you" }).waitFor();
  assert.equal(new URL(invited.page.url()).hash, "", "the invitation is erased from the address bar");
  await invited.page.fill("#name", "\u202Eevil");
  await invited.page.click("#claim-seat");
  await invited.page.locator("#alert", { hasText: "Choose another name: it holds an invisible control or direction character" }).waitFor();
  assert.equal(await invited.page.locator("#claim-form").count(), 1, "still asked for a name");
  assert.deepEqual(await storedTokens(invited.page), []);
  await invited.page.reload(); // the invitation survives a reload of the form
  await invited.page.locator("#claim-form").waitFor();
  await invited.page.fill("#name", `  ${NAME}  `);
  await invited.page.click("#claim-seat");
  await invited.page.locator("#app[data-version]").waitFor();
  assert.equal((await seatToken(invited.page)).seat, 1);
  assert.equal((await storedTokens(invited.page)).length, 1, "the invited page holds its own token only");
  // Names, bidi-isolated in their own element, trimmed by the service; claimed and connected.
  await creator.page.locator('.seat[data-seat="1"][data-claim="claimed"][data-connected="true"] h2 bdi', { hasText: NAME }).waitFor();
  assert.equal(await creator.page.locator('.seat[data-seat="1"] h2 bdi').innerText(), NAME);
  assert.equal(await creator.page.locator("#invite-1-link").count(), 0, "a claimed seat's link is gone");
  assert.match(await creator.page.locator('#invites .invite[data-seat="1"]').innerText(), new RegExp(`Seat 2: \u2068${NAME}\u2069 has joined`));
  await invited.page.locator('.seat[data-seat="0"] h2 bdi', { hasText: "Layla" }).waitFor();
  await creator.page.locator("#log li", { hasText: "took seat 2" }).waitFor();

  // A third browser opens the same link: the seat is taken, it gets none.
  const late = await player(browser);
  await late.page.goto(link);
  // Said at once (GetInvitation), before any name is asked.
  await late.page.locator("#alert", { hasText: "Someone has taken this seat with this invitation already" }).waitFor();
  await late.page.locator("#start").waitFor();
  assert.equal(await late.page.locator("#claim-seat").count(), 0, "no name is asked for a taken seat");
  assert.equal(await late.page.locator("#app[data-version]").count(), 0, "no table");
  assert.deepEqual(await storedTokens(late.page), []);
  assert.match(await creator.page.locator('.seat[data-seat="1"] h2').innerText(), new RegExp(NAME), "the seat is still hers");

  // They play (over plain HTTP at a network address: request ids without crypto.randomUUID).
  const people = new Map<number, Player>([[0, creator], [1, invited]]);
  const played = await playPeople(creator.page, people, 4);
  await screenshot(creator.page, "invitation-creator");

  // She lost her seat (say, her phone died): the creator gives it a new invitation.
  await creator.page.click("#reissue-1");
  await creator.page.locator("#reissue-dialog[open]", { hasText: NAME }).waitFor();
  await creator.page.click("#reissue-confirm");
  await creator.page.locator("#alert", { hasText: "Seat 2 has a new invitation link" }).waitFor();
  const renewed = await inviteLink(creator.page, 1);
  assert.notEqual(renewed, link);
  await creator.page.locator('.seat[data-seat="1"][data-claim="open"]').waitFor();
  // Her old page is told, and sits nowhere.
  await invited.page.locator("#alert", { hasText: "gave your seat a new invitation" }).waitFor();
  await invited.page.locator("#start").waitFor();
  assert.deepEqual(await storedTokens(invited.page), []);
  // From another browser: the old link is refused, the new one seats her again.
  const again = await player(browser);
  await again.page.goto(link);
  await again.page.locator("#alert", { hasText: "This invitation no longer works" }).waitFor();
  assert.equal(await again.page.locator("#claim-seat").count(), 0, "no name is asked for a replaced link");
  await again.page.goto(renewed);
  await again.page.fill("#name", NAME);
  await again.page.click("#claim-seat");
  await again.page.locator("#app[data-version]").waitFor();
  await creator.page.locator('.seat[data-seat="1"][data-claim="claimed"][data-connected="true"]').waitFor();
  people.set(1, again);
  const more = await playPeople(creator.page, people, 2, 1);

  // She closes her page: the creator's table shows her away.
  await again.page.close();
  await creator.page.locator('.seat[data-seat="1"][data-connected="false"]', { hasText: "Away" }).waitFor();
  await screenshot(creator.page, "invitation-away");
  const errors = [creator, invited, late].flatMap((who) => who.errors).concat(again.errors);
  assert.deepEqual(errors, []);
  console.log(`invitation: claimed at ${host}, refused twice, reissued, ${played + more} plays by people`);
} finally {
  await browser.close();
}

/** Plays the people's turns (the bot plays its own) until `count` plays, the last of them by
 * `last` when given; returns the number played. */
async function playPeople(table: Page, people: Map<number, Player>, count: number, last?: number): Promise<number> {
  let plays = 0;
  for (;;) {
    await table.waitForFunction((humans) => humans.includes(Number(document.getElementById("app")?.dataset["toPlay"])), [...people.keys()]);
    const { toPlay, version } = await seen(table);
    const seat = Number(toPlay);
    const mover = people.get(seat);
    assert.ok(mover);
    await mover.page.waitForFunction(() => document.getElementById("app")?.dataset["turn"] === "you" && document.querySelector("#hand button:not([disabled])") !== null);
    await playFirst(mover.page);
    await waitPast(table, version);
    plays += 1;
    if (plays >= count && (last === undefined || seat === last)) return plays;
  }
}
