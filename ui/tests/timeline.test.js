import { test } from "node:test";
import assert from "node:assert/strict";
import { failoverLog, segments } from "../timeline.js";

const e = (ms, fields) => ({ id: `${ms}-0`, fields });

test("a killed holder's time ends where the next one acquires: one failover, down time unknown", () => {
  const entries = [
    e(1000, { type: "acquired", node: "a", fence: "1" }),
    e(1010, { type: "job-started", node: "a" }),
    e(9000, { type: "acquired", node: "b", fence: "2" }),
  ];
  assert.deepEqual(segments(entries, 0, 10_000), [
    { start: 0, end: 1000, node: null, fence: null },
    { start: 1000, end: 9000, node: "a", fence: "1" },
    { start: 9000, end: 10_000, node: "b", fence: "2" },
  ]);
  assert.deepEqual(failoverLog(entries), [{ at: 9000, kind: "failover", from: "a", to: "b", downMs: null }]);
});

test("a clean hand-over has a measured down time; a loss is a death", () => {
  const entries = [
    e(1000, { type: "acquired", node: "a", fence: "1" }),
    e(5000, { type: "released", node: "a", fence: "1" }),
    e(5021, { type: "acquired", node: "b", fence: "2" }),
    e(8000, { type: "lost", node: "b", fence: "2", reason: "the lock is no longer ours" }),
  ];
  const log = failoverLog(entries);
  assert.equal(log.length, 2);
  assert.deepEqual(log[1], { at: 5021, kind: "failover", from: "a", to: "b", downMs: 21 });
  assert.equal(log[0].kind, "death");
  const segs = segments(entries, 0, 10_000);
  assert.deepEqual(segs.map((s) => s.node), [null, "a", null, "b", null]);
});

test("segments are clipped to the window and cover it without gaps", () => {
  const entries = [e(1000, { type: "acquired", node: "a", fence: "1" })];
  const segs = segments(entries, 5000, 6000);
  assert.deepEqual(segs, [{ start: 5000, end: 6000, node: "a", fence: "1" }]);
});

test("the same server again after a clean release is a restart, not a failover", () => {
  const entries = [
    e(1000, { type: "acquired", node: "a", fence: "1" }),
    e(2000, { type: "released", node: "a", fence: "1" }),
    e(3000, { type: "acquired", node: "a", fence: "2" }),
    e(4000, { type: "lost", node: "a", fence: "2", reason: "expired" }),
    e(4500, { type: "acquired", node: "a", fence: "3" }),
  ];
  const log = failoverLog(entries);
  assert.deepEqual(log.map((f) => f.kind), ["failover", "death"]);
  assert.deepEqual(log[0], { at: 4500, kind: "failover", from: "a", to: "a", downMs: 500 });
});

test("a stop by the supervisors, resumed on the other server, is not a failover", () => {
  const entries = [
    e(1000, { type: "acquired", node: "a", fence: "1" }),
    e(2000, { type: "released", node: "a", fence: "1", reason: "nobody has the job enabled" }),
    e(3000, { type: "acquired", node: "b", fence: "2" }),
    e(4000, { type: "released", node: "b", fence: "2", reason: "worker stopping" }),
    e(4021, { type: "acquired", node: "a", fence: "3" }),
  ];
  assert.deepEqual(failoverLog(entries), [{ at: 4021, kind: "failover", from: "b", to: "a", downMs: 21 }]);
});
