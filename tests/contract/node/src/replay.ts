// Replays every golden vector (tests/contract/vectors/*.json) against the servers a test started.
//
//   tsx src/replay.ts TARGETS.json [VECTORS_DIR]
//
// TARGETS.json maps each vector's name to the "host:port" of a server started with the settings
// that vector asks for; VECTORS_DIR defaults to tests/contract/vectors. Prints
// "ok <name> (<steps> steps)" for each vector that matches and the first difference of each that
// does not, and exits 1 when any vector failed or had no server.

import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { connect } from "./basra.js";
import { replay, VectorError, type Vector } from "./golden.js";

const DEFAULT_VECTORS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "vectors");

async function main(): Promise<number> {
  const targetsFile = process.argv[2];
  if (targetsFile === undefined) {
    console.error("usage: replay.ts TARGETS.json [VECTORS_DIR]");
    return 2;
  }
  const targets = JSON.parse(readFileSync(targetsFile, "utf8")) as Record<string, string>;
  const vectors = process.argv[3] ?? DEFAULT_VECTORS;
  const files = readdirSync(vectors).filter((f) => f.endsWith(".json")).sort();
  let failed = 0;
  for (const file of files) {
    const name = basename(file, ".json");
    const target = targets[name];
    if (target === undefined) {
      console.log(`FAIL ${name}: no server was started for it`);
      failed++;
      continue;
    }
    const vector = JSON.parse(readFileSync(join(vectors, file), "utf8")) as Vector;
    try {
      const steps = await replay(vector, connect(target));
      console.log(`ok ${name} (${steps} steps)`);
    } catch (error) {
      // A difference is reported as such; anything else (a bug, a dead server) with its stack.
      const text = error instanceof VectorError ? error.message : error instanceof Error ? error.stack : error;
      console.log(`FAIL ${name}: ${String(text)}`);
      failed++;
    }
  }
  console.log(`${files.length - failed} of ${files.length} vectors replayed`);
  return failed === 0 && files.length > 0 ? 0 : 1;
}

// Exit explicitly: idle HTTP/2 sessions would otherwise keep the process alive a while.
process.exit(await main());
