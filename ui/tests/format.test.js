import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { duration, flagsLostText, holderName, leaseText, noStandbyText, reasonText, serversText, stateInfo } from "../format.js";
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
  assert.equal(holderName({ field: "a:1", node: null }), "a server that gave no name");
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
  // As the app sends a job: the status, and the silent standbys the library found in it.
  const entry = { job: "outbound", status, silent_standbys: ["srv-b"] };
  assert.equal(noStandbyText(entry), "⚠ No backup server: srv-b is silent; nothing takes the job over if it stops here.");
  assert.equal(noStandbyText({ ...entry, status: { ...status, no_standby: null } }), null);
  assert.equal(noStandbyText({ job: "outbound", status: null, silent_standbys: [] }), null, "connecting");
  assert.equal(flagsLostText(entry), null);
  assert.equal(
    flagsLostText({ ...entry, status: { ...status, flags_lost: ["alice", "bob"] } }),
    "⚠ Redis lost alice, bob's switch while it was on (nobody switched it off). It still counts as on until it is switched on or off again.",
  );
  assert.equal(serversText({ nodes: [] }), "–");
  setTexts(texts("zh-CN"));
  try {
    assert.equal(serversText(status), "srv-a, srv-b（已无响应 11 秒）");
    assert.match(noStandbyText(entry), /^⚠ 没有备用服务器：srv-b 已无响应/);
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
