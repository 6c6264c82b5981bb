// A match of another rule system, seat count and mix of players, played to the end of its first
// hand: the service plays the bots, each invited person plays from their own browser. RULES,
// SEATS and OTHERS (who plays seats 1..: "strong", "greedy" or "random" for a bot at that level,
// "person"; comma-separated) choose the match, OPTIONS the options ticked ("rubber",
// "bottom-card-shown", comma-separated); SIDES is the number of sides the score sheet must show.
// Whenever the table waits for a person, every page is checked against the hands the service
// holds: each shows its own hand, every other seat's hand size, the same floor, and no card of
// any other person's hand; no page holds a card anywhere but its hand and the public places (so
// none of a bot's hand either, which no token can read).
import assert from "node:assert/strict";
import { BASE_URL, claimSeat, disjoint, inviteLink, launch, playFirst, player, screenshot, seatToken, seen, serverHands, startMatch, storedTokens, waitAt, waitPast, type Player, type Who } from "./table.js";

const rules = process.env["RULES"] ?? "eram";
const seats = Number(process.env["SEATS"] ?? 2);
const others = (process.env["OTHERS"] ?? "strong").split(",") as Who[];
const sides = Number(process.env["SIDES"] ?? seats);
const ticked = (process.env["OPTIONS"] ?? "").split(",").filter(Boolean);
assert.equal(others.length, seats - 1);

const browser = await launch();
try {
  const creator = await player(browser);
  await creator.page.goto(BASE_URL);
  await startMatch(creator.page, { rules, seats, others, ticked });
  // Seat 0 is the creator's; each person's seat joins from its own link.
  const people = new Map<number, Player>([[0, creator]]);
  for (const [at, who] of others.entries()) {
    if (who !== "person") continue;
    const person = await player(browser);
    await claimSeat(person.page, await inviteLink(creator.page, at + 1), `Player ${at + 2}`);
    people.set(at + 1, person);
  }
  // Each person's page holds its own seat's token only, and no bot seat has one.
  const tokens = new Map<number, string>();
  let matchId = "";
  for (const [seat, page] of people) {
    const held = await seatToken(page.page);
    assert.equal(held.seat, seat);
    assert.deepEqual(await storedTokens(page.page), [held.token], `seat ${seat}'s page holds its own token only`);
    tokens.set(seat, held.token);
    matchId = held.matchId;
  }
  // Each bot is labelled with its level on every person's page.
  const LABELS: Record<string, string> = { strong: "Strong bot", greedy: "Greedy bot", random: "Random bot" };
  for (const [at, who] of others.entries()) {
    if (who === "person") continue;
    for (const [seat, page] of people) {
      assert.equal(await page.page.locator(`.seat[data-seat="${at + 1}"] h2`).innerText(), `${LABELS[who]} (seat ${at + 2})`, `seat ${seat}'s page`);
    }
  }
  assert.match(await creator.page.locator("#rules-name").innerText(), /\S/);
  for (const [seat, page] of people) {
    // A rubber: the game's number, and the games each side has won.
    assert.equal(await page.page.locator("#game").count(), ticked.includes("rubber") ? 1 : 0, `seat ${seat}`);
    if (ticked.includes("rubber")) {
      assert.equal(await page.page.locator("#game").innerText(), "Game 1 of the rubber");
      assert.deepEqual(await page.page.locator(".scores td.games").allInnerTexts(), Array(sides).fill("0 games won"));
    }
  }

  let plays = 0;
  let last = -1;
  for (;;) {
    // The table waits for a person (their turn) or the hand is over (its sheet open: a bot may
    // have dealt the next hand already). While it waits for a person nothing moves.
    await creator.page.waitForFunction(
      ({ humans, after }) => {
        const app = document.getElementById("app");
        if (document.getElementById("sheet") !== null) return true;
        if (Number(app?.dataset["version"] ?? -1) <= after) return false;
        return humans.includes(Number(app?.dataset["toPlay"]));
      },
      { humans: [...people.keys()], after: last },
    );
    if ((await seen(creator.page)).sheet) break;
    const { version, hands } = await serverHands(matchId, tokens);
    assert.equal(version, (await seen(creator.page)).version, "the service waits for a person too");
    for (const [seat, page] of people) {
      const view = await waitAt(page.page, version);
      assert.deepEqual([...view.hand].sort(), [...(hands.get(seat) ?? [])].sort(), `seat ${seat}'s own hand`);
      for (const [other, hand] of hands) {
        if (other === seat) continue;
        assert.deepEqual(disjoint(view.everyCard, hand), [], `seat ${seat}'s page holds none of seat ${other}'s cards`);
        assert.equal(view.backs[other], hand.length, `seat ${seat}'s page shows seat ${other}'s hand size`);
      }
      assert.deepEqual(view.floor, (await seen(creator.page)).floor, "one floor");
      assert.deepEqual(view.elsewhere, [], `seat ${seat}'s page draws no card outside its hand and the public places`);
    }
    const now = await seen(creator.page);
    const mover = people.get(Number(now.toPlay));
    assert.ok(mover, `seat ${now.toPlay} is a person's`);
    if (plays === 3) await screenshot(creator.page, `${rules}-${seats}-mid-hand`);
    await playFirst(mover.page);
    plays += 1;
    last = version;
    await waitPast(mover.page, version);
  }

  // The score sheet: one column per side, its partners named together; the scores likewise.
  for (const [seat, page] of people) {
    await page.page.locator("#sheet table").waitFor();
    const columns = await page.page.locator("#sheet thead th").allInnerTexts();
    assert.equal(columns.length, sides, `seat ${seat}'s sheet has a column per side: ${columns.join(" / ")}`);
    assert.equal(await page.page.locator(".scores tr[data-side]").count(), sides);
    if (sides < seats) assert.ok(columns.some((column) => column.startsWith("You and ")), columns.join(" / "));
  }
  await screenshot(creator.page, `${rules}-${seats}-score-sheet`);
  const errors = [...people.values()].flatMap((page) => page.errors);
  assert.deepEqual(errors, []);
  console.log(`${rules} for ${seats}: ${plays} plays by people, the hand scored for ${sides} sides`);
} finally {
  await browser.close();
}
