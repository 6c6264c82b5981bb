// Lighthouse (pinned in package.json; its default, mobile configuration) on the lobby and on a
// seat's table, in Debian's Chromium through chrome-launcher: accessibility at least 95,
// performance at least 90, best practices at least 95 on each.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as chromeLauncher from "chrome-launcher";
import lighthouse from "lighthouse";
import { BASE_URL } from "./table.js";

const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
const FLOORS: Record<string, number> = { accessibility: 95, performance: 90, "best-practices": 95 };

/** A match against nobody (the other seat never plays): its seat 0 link opens the table. */
async function tableLink(): Promise<string> {
  const answer = await fetch(`${BASE_URL}/basra.v1.BasraService/CreateMatch`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ rules: "egyptian", seats: 4, seat: 0, requestId: randomUUID() }),
  });
  assert.equal(answer.status, 200, await answer.clone().text());
  const { matchId, seatTokens } = (await answer.json()) as { matchId: string; seatTokens: { seat?: number; token: string }[] };
  const token = seatTokens.find((seat) => (seat.seat ?? 0) === 0)?.token ?? "";
  return `${BASE_URL}/#match=${matchId}&seat=0&token=${token}`;
}

const chrome = await chromeLauncher.launch({ chromePath: CHROMIUM, chromeFlags: ["--headless=new", "--no-sandbox"] });
const failures: string[] = [];
try {
  for (const [page, url] of [["lobby", `${BASE_URL}/`], ["table", await tableLink()]] as const) {
    const result = await lighthouse(url, { port: chrome.port, output: "json", logLevel: "error", onlyCategories: Object.keys(FLOORS) });
    assert.ok(result, "lighthouse answered");
    const scores = Object.fromEntries(Object.keys(FLOORS).map((id) => [id, Math.round((result.lhr.categories[id]?.score ?? 0) * 100)]));
    console.log(`lighthouse ${page} (lighthouse ${result.lhr.lighthouseVersion}, ${result.lhr.configSettings.formFactor}): ${JSON.stringify(scores)}`);
    // The metrics behind the performance score, to read a low one.
    const metrics = ["first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "cumulative-layout-shift", "speed-index"];
    console.log(`  ${metrics.map((id) => `${id} ${result.lhr.audits[id]?.displayValue ?? "?"}`).join(", ")}`);
    for (const [id, floor] of Object.entries(FLOORS)) {
      if ((scores[id] ?? 0) < floor) failures.push(`${page} ${id} ${scores[id]} < ${floor}`);
    }
    if (page === "table") assert.ok(!result.lhr.runWarnings.some((warning) => /redirect/i.test(warning)), "the table itself was measured");
  }
} finally {
  await chrome.kill();
}
assert.deepEqual(failures, []);
console.log("lighthouse: every floor met");
