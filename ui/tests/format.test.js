import { test } from "node:test";
import assert from "node:assert/strict";
import { duration, holderName, stateInfo, streamMs } from "../format.js";

test("durations read like the CLI's", () => {
  assert.equal(duration(850), "850 ms");
  assert.equal(duration(12_400), "12 s");
  assert.equal(duration(245_000), "4 min 5 s");
  assert.equal(duration(7_380_000), "2 h 3 min");
  assert.equal(duration(null), "–");
});

test("every state has a word and a glyph; unknown is the fallback", () => {
  for (const s of ["running", "stale", "down", "stopped", "conflict", "unknown"]) {
    assert.ok(stateInfo(s).word && stateInfo(s).glyph, s);
  }
  assert.equal(stateInfo("nonsense").word, "Unknown");
});

test("holder names prefer the server", () => {
  assert.equal(holderName({ field: "a:1", node: "wh-east-1" }), "wh-east-1");
  assert.equal(holderName({ field: "a:1", node: null }), "lock field a:1");
  assert.equal(streamMs("1700000000123-4"), 1700000000123);
});
