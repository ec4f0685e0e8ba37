import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { duration, holderName, lastOneOn, leaseText, noStandbyText, ownFlag, reasonText, serversText, stateInfo } from "../format.js";
import { setTexts } from "../i18n.js";

// The app's own catalog, as the page gets it (written from it by a Rust test).
export const texts = (tag) => JSON.parse(readFileSync(new URL(`./texts.${tag}.json`, import.meta.url), "utf8"));
setTexts(texts("en"));

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
});

test("pending is a state of its own, amber and waiting", () => {
  assert.equal(stateInfo("pending").word, "Pending");
  assert.notEqual(stateInfo("pending").glyph, stateInfo("unknown").glyph);
});

test("while Redis cannot be read the lease is not known, never free", () => {
  const blank = { state: "unknown", checked_at_ms: null, lock: { kind: null, holders: [], ttl_ms: null } };
  assert.equal(leaseText(blank), "not known");
  const unreadable = { state: "unknown", checked_at_ms: 5, lock: { kind: "unreadable", holders: [], ttl_ms: null } };
  assert.equal(leaseText(unreadable), "not known");
  assert.equal(leaseText({ state: "down", checked_at_ms: 5, lock: { kind: "none", holders: [], ttl_ms: null } }), "free");
  assert.equal(leaseText({ state: "running", checked_at_ms: 5, lock: { kind: "redisson", holders: ["a:1"], ttl_ms: 12_400 } }), "12 s");
  assert.equal(leaseText({ state: "running", checked_at_ms: 5, lock: { kind: "redisson", holders: ["a:1"], ttl_ms: null } }), "no expiry");
  assert.equal(leaseText(undefined), "–");
});

test("the own flag is not known while Redis cannot be read, known after a data loss", () => {
  const blank = { state: "unknown", checked_at_ms: null, enabled_users: [], flags: [] };
  assert.equal(ownFlag(blank, "alice"), null);
  const lost = { state: "unknown", checked_at_ms: 5, enabled_users: [], flags: [] };
  assert.equal(ownFlag(lost, "alice"), false);
  const on = { state: "running", checked_at_ms: 5, enabled_users: ["alice"], flags: [{ user: "alice", on: true }] };
  assert.equal(ownFlag(on, "alice"), true);
  const unreadable = { state: "unknown", checked_at_ms: 5, enabled_users: [], flags: [{ user: "alice", on: null }] };
  assert.equal(ownFlag(unreadable, "alice"), null);
  assert.equal(ownFlag(undefined, "alice"), null);
});

test("only the last one with the job on is asked why before switching off", () => {
  const s = { checked_at_ms: 5, enabled_users: ["alice"] };
  assert.equal(lastOneOn(s, "alice"), true);
  assert.equal(lastOneOn(s, "bob"), false);
  assert.equal(lastOneOn({ ...s, enabled_users: ["alice", "bob"] }, "alice"), false);
  assert.equal(lastOneOn({ ...s, checked_at_ms: null }, "alice"), false, "not known, not asked");
  assert.equal(lastOneOn(undefined, "alice"), false);
});

test("the servers line names each server, a silent one with how long, and a lost standby says which", () => {
  const status = {
    state: "running",
    holder: { field: "a:1", node: "srv-a" },
    no_standby: "no standby: srv-b (heartbeat 11 s old) silent; if srv-a stops, no server takes the job over",
    nodes: [
      { node: "srv-a", fresh: true, heartbeat_age_ms: 300 },
      { node: "srv-b", fresh: false, heartbeat_age_ms: 11_000 },
    ],
  };
  assert.equal(serversText(status), "srv-a, srv-b (silent 11 s)");
  assert.equal(noStandbyText(status), "⚠ No standby: srv-b is silent; nothing takes the job over if it stops here.");
  assert.equal(noStandbyText({ ...status, no_standby: null }), null);
  assert.equal(serversText({ nodes: [] }), "–");
  setTexts(texts("zh-CN"));
  try {
    assert.equal(serversText(status), "srv-a, srv-b（已无响应 11 秒）");
    assert.match(noStandbyText(status), /^⚠ 没有备用服务器：srv-b 已无响应/);
  } finally {
    setTexts(texts("en"));
  }
});

test("a heartbeat's age reads as a person says it: just now, then whole seconds", async () => {
  const { beatText } = await import("../live.js");
  setTexts(texts("en"));
  assert.equal(beatText(null), "–");
  assert.equal(beatText(412), "just now");
  assert.equal(beatText(2_780), "2 s ago");
  setTexts(texts("zh-CN"));
  try {
    assert.equal(beatText(412), "刚刚");
    assert.equal(beatText(61_900), "1 分 1 秒前");
  } finally {
    setTexts(texts("en"));
  }
});
