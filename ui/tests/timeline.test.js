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

test("failovers, restarts and deaths are shown as the library named them, newest first, down for what it measured", () => {
  const items = [
    run(1000, "a", 5000),
    { kind: "failover", at_ms: 5021, from: h("a"), to: h("b"), cause: "shutdown", reason: "worker stopping", down_ms: 21, outage: { down_ms: 21, still_down: false } },
    { kind: "restart", at_ms: 7000, node: "b", from: h("b"), to: h("b"), cause: "expired", reason: "the lease could not be renewed in time (Redis unreachable)", down_ms: 500, outage: { down_ms: 500, still_down: false } },
    { kind: "death", at_ms: 8000, node: "b", fence: 3, cause: "silent", reason: "the server stopped without a word (killed, crashed or cut off from Redis)", outage: { down_ms: 2000, still_down: true } },
    { kind: "stopped", at_ms: 9000, node: "b", fence: 3 },
  ];
  assert.deepEqual(incidents(items), [
    { at: 8000, kind: "death", from: "b", to: null, cause: "silent", why: "the server stopped without a word (killed, crashed or cut off from Redis)", downMs: 2000, stillDown: true },
    { at: 7000, kind: "restart", from: "b", to: "b", cause: "expired", why: "the lease could not be renewed in time (Redis unreachable)", downMs: 500, stillDown: false },
    { at: 5021, kind: "failover", from: "a", to: "b", cause: "shutdown", why: "worker stopping", downMs: 21, stillDown: false },
  ]);
});

test("an outage the history cannot measure is not known, never a number made up here", () => {
  const items = [run(0, "a", 4000), { kind: "failover", at_ms: 9000, from: h("a"), to: h("b"), cause: "silent", reason: "x", down_ms: null, outage: { down_ms: null, still_down: false } }];
  const [row] = incidents(items);
  assert.deepEqual([row.downMs, row.stillDown], [null, false]);
  const bare = [{ kind: "death", at_ms: 1, node: "a", cause: "silent", reason: "" }];
  assert.deepEqual([incidents(bare)[0].downMs, incidents(bare)[0].stillDown], [null, false], "no outage sent, none shown");
});

test("a holder no heartbeat names is shown by its lock field", () => {
  const items = [{ kind: "failover", at_ms: 1, from: { field: "u:1", node: null }, to: h("b"), reason: "" }];
  assert.equal(incidents(items)[0].from, "u:1");
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
