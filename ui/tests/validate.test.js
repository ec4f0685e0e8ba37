import { test } from "node:test";
import assert from "node:assert/strict";
import { compact, parseDuration, validate } from "../validate.js";

const good = { redis_url: "redis://alice@db:6379", user: "alice", jobs: "outbound", poll: "1s", heartbeat_grace: "10s", failover_window: "5s", start_grace: "10s" };

test("a good form has no errors", () => {
  assert.deepEqual(validate(good), {});
});

test("each bad field gets its own sentence", () => {
  const errors = validate({ ...good, redis_url: "http://x", user: "a b", jobs: " , ", poll: "fast", start_grace: "2h" });
  assert.deepEqual(Object.keys(errors).sort(), ["jobs", "poll", "redis_url", "start_grace", "user"]);
});

test("a password in the URL is refused: it belongs in the keyring", () => {
  assert.match(validate({ ...good, redis_url: "redis://alice:pw@db:6379" }).redis_url, /password field/);
});

test("durations parse like the CLI's", () => {
  assert.equal(parseDuration("500ms"), 500);
  assert.equal(parseDuration("1.5m"), 90_000);
  assert.equal(parseDuration("2"), 2000);
  assert.equal(parseDuration("soon"), null);
});

test("compact durations parse back to the same value", () => {
  for (const ms of [250, 1000, 10_000, 90_000, 300_000, 3_600_000]) {
    assert.equal(parseDuration(compact(ms)), ms, compact(ms));
  }
});
