// A server restart in the middle of a hand between two people: both pages lose their stream
// (and any call in flight), reconnect on their own, resume WatchMatch after the last complete
// version, and the match goes on from where it was: nothing lost, nothing played twice.
import assert from "node:assert/strict";
import { ask, BASE_URL, claimSeat, inviteLink, launch, playFirst, player, seen, startMatch, waitAt, waitPast } from "./table.js";

const browser = await launch();
try {
  const a = await player(browser);
  const b = await player(browser);
  await a.page.goto(BASE_URL);
  await startMatch(a.page, { others: ["person"] });
  await claimSeat(b.page, await inviteLink(a.page, 1), "Robin");
  // The claim is the match's latest change: the claimant's page shows its version.
  let version = (await seen(b.page)).version;
  for (let move = 0; move < 2; move++) {
    const mover = (await waitAt(a.page, version)).turn === "you" ? a : b;
    await playFirst(mover.page);
    version = (await waitPast(mover.page, version)).version;
  }
  const beforeA = await waitAt(a.page, version);
  await waitAt(b.page, version);

  await ask("restart");

  // Whoever's turn it is plays on the restarted server; the other page sees it arrive.
  const mover = beforeA.turn === "you" ? a : b;
  const watcher = mover === a ? b : a;
  const played = await playFirst(mover.page);
  const afterMover = await waitPast(mover.page, version);
  const afterWatcher = await waitAt(watcher.page, afterMover.version);
  assert.equal(afterMover.version, version + 1, "one play, played once");
  assert.ok(!afterMover.hand.includes(played));
  assert.equal(afterWatcher.backs[mover === a ? 0 : 1], afterMover.hand.length);
  assert.deepEqual(afterWatcher.floor, afterMover.floor);
  assert.equal(await watcher.page.locator("#alert").innerText(), "", "reconnected: no message left");
  // A page that cannot reach the server greys its table under a banner, nothing on it live
  // (the table is inert), until the server answers again: the mover's page goes offline and
  // learns of the other seat's play through its open stream, but cannot fetch its view.
  await mover.context.setOffline(true);
  await playFirst(watcher.page);
  await mover.page.locator("body.offline #app[inert]").waitFor({ state: "attached" });
  assert.match(await mover.page.locator("#alert").innerText(), /^Connection lost/);
  await mover.context.setOffline(false);
  await mover.page.locator("body:not(.offline) #app:not([inert])").waitFor({ state: "attached" });
  assert.equal(await mover.page.locator("#alert").innerText(), "", "back: the banner is gone");
  await waitAt(mover.page, afterMover.version + 1);
  assert.deepEqual([...a.errors, ...b.errors], []);
  console.log(`restart at version ${version}: the match went on to ${afterMover.version}`);
} finally {
  await browser.close();
}
