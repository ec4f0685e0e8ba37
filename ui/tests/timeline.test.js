import { test } from "node:test";
import assert from "node:assert/strict";
import { flips, incidents, segments } from "../timeline.js";

// Items as `lockwatch::history` builds them (the tray's `history` command).
const run = (at_ms, node, until_ms, fence = "1") => ({ kind: "run", at_ms, node, field: `${node}:1`, fence, until_ms, end: until_ms == null ? null : "silent" });
const h = (node) => ({ field: `${node}:1`, node });

test("runs become a strip that covers the window, a run still going reaching its end", () => {
  const items = [run(1000, "a", 9000, 1), { kind: "failover", at_ms: 9000, from: h("a"), to: h("b"), cause: "silent", reason: "x", down_ms: null }, run(9000, "b", null, 2)];
  assert.deepEqual(segments(items, 0, 10_000), [
    { start: 0, end: 1000, node: null, fence: null },
    { start: 1000, end: 9000, node: "a", fence: 1 },
    { start: 9000, end: 10_000, node: "b", fence: 2 },
  ]);
});

test("segments are clipped to the window, gaps are nobody", () => {
  const items = [run(1000, "a", 2000), run(3000, "b", null)];
  assert.deepEqual(segments(items, 1500, 6000).map((s) => [s.start, s.end, s.node]), [
    [1500, 2000, "a"],
    [2000, 3000, null],
    [3000, 6000, "b"],
  ]);
  assert.deepEqual(segments([run(1000, "a", null)], 5000, 6000), [{ start: 5000, end: 6000, node: "a", fence: "1" }]);
});

test("failovers, restarts and deaths are shown as the library named them, newest first", () => {
  const items = [
    run(1000, "a", 5000),
    { kind: "failover", at_ms: 5021, from: h("a"), to: h("b"), cause: "shutdown", reason: "worker stopping", down_ms: 21 },
    { kind: "restart", at_ms: 7000, node: "b", from: h("b"), to: h("b"), cause: "expired", reason: "the lease could not be renewed in time (Redis unreachable)", down_ms: 500 },
    { kind: "death", at_ms: 8000, node: "b", fence: 3, cause: "silent", reason: "the server stopped without a word (killed, crashed or cut off from Redis)" },
    { kind: "stopped", at_ms: 9000, node: "b", fence: 3 },
  ];
  assert.deepEqual(incidents(items, 10_000), [
    { at: 8000, kind: "death", from: "b", to: null, cause: "silent", why: "the server stopped without a word (killed, crashed or cut off from Redis)", downMs: 2000, stillDown: true },
    { at: 7000, kind: "restart", from: "b", to: "b", cause: "expired", why: "the lease could not be renewed in time (Redis unreachable)", downMs: 500, stillDown: false },
    { at: 5021, kind: "failover", from: "a", to: "b", cause: "shutdown", why: "worker stopping", downMs: 21, stillDown: false },
  ]);
});

test("a death is down for a duration: until the next run, or until now while nobody runs it", () => {
  const death = { kind: "death", at_ms: 1000, node: "a", cause: "expired", reason: "lease ran out" };
  const [still] = incidents([run(0, "a", 1000), death], 61_000);
  assert.equal(still.downMs, 60_000);
  assert.equal(still.stillDown, true);
  const [over] = incidents([run(0, "a", 1000), death, run(31_000, "b", null)], 61_000);
  assert.deepEqual([over.downMs, over.stillDown], [30_000, false]);
  for (const row of [still, over]) assert.ok(Number.isFinite(row.downMs), "a duration, never a sentence");
});

test("a silent failover is down from the old holder's last sign of life to the takeover", () => {
  const items = [run(0, "a", 4000), { kind: "failover", at_ms: 9000, from: h("a"), to: h("b"), cause: "silent", reason: "x", down_ms: null }, run(9000, "b", null)];
  assert.equal(incidents(items, 10_000)[0].downMs, 5000);
  const unknown = [{ kind: "failover", at_ms: 9000, from: h("a"), to: h("b"), cause: "silent", reason: "x", down_ms: null }];
  assert.equal(incidents(unknown, 10_000)[0].downMs, null, "no run to measure from: not known");
});

test("a holder no heartbeat names is shown by its lock field", () => {
  const items = [{ kind: "failover", at_ms: 1, from: { field: "u:1", node: null }, to: h("b"), reason: "" }];
  assert.equal(incidents(items, 2)[0].from, "u:1");
});

test("flag flips carry who, on or off, from where and why", () => {
  const items = [
    { kind: "flag", at_ms: 100, user: "alice", on: true, host: "pc-1", reason: null },
    { kind: "flag", at_ms: 200, user: "bob", on: false, host: "pc-2", reason: "stock count" },
  ];
  assert.deepEqual(flips(items), [
    { at: 200, user: "bob", on: false, host: "pc-2", reason: "stock count" },
    { at: 100, user: "alice", on: true, host: "pc-1", reason: null },
  ]);
});
