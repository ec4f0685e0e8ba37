import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { setTexts } from "../i18n.js";
import { WINDOWS, flipRows, incidentRows } from "../history.js";

const texts = (tag) => JSON.parse(readFileSync(new URL(`./texts.${tag}.json`, import.meta.url), "utf8"));
const h = (node) => ({ field: `${node}:1`, node });
// As the tray's `history` command sends them: the library's items, each incident with its outage.
const death = { kind: "death", at_ms: 1000, node: "wh-east-1", fence: 1, cause: "expired", reason: "the lease could not be renewed in time (Redis unreachable)" };
const items = [
  { kind: "run", at_ms: 0, node: "wh-east-1", field: "a:1", fence: 1, until_ms: 1000, end: "expired" },
  { ...death, outage: { down_ms: 90_000, still_down: false } },
  { kind: "run", at_ms: 91_000, node: "wh-west-1", field: "b:1", fence: 2, until_ms: null, end: null },
  { kind: "failover", at_ms: 95_000, from: h("wh-west-1"), to: h("wh-east-1"), cause: "silent", reason: "x", down_ms: 4000, outage: { down_ms: 4000, still_down: false } },
  { kind: "flag", at_ms: 99_000, user: "bob", on: false, host: "desk-7", reason: "stock count tonight" },
];

test("the history speaks English: down for is a duration, every flip says who, where from and why", () => {
  setTexts(texts("en"));
  const rows = incidentRows(items, 100_000);
  assert.deepEqual(rows.map((r) => r.slice(1)), [
    ["failover", "wh-west-1", "wh-east-1", "the server stopped without a word (killed, crashed or cut off from Redis)", "4 s"],
    ["died", "wh-east-1", "–", "it could not reach Redis in time to keep the job (Redis unreachable, or the server paused)", "1 min 30 s"],
  ]);
  assert.deepEqual(flipRows(items, 100_000).map((r) => r.slice(1)), [["bob", "off", "desk-7", "stock count tonight"]]);
});

test("the history speaks Chinese", () => {
  setTexts(texts("zh-CN"));
  try {
    const rows = incidentRows(items, 100_000);
    assert.deepEqual(rows.map((r) => r.slice(1)), [
      ["切换", "wh-west-1", "wh-east-1", "服务器未留下任何记录就停止了（被终止、崩溃或与 Redis 断开）", "4 秒"],
      ["意外停止", "wh-east-1", "–", "未能及时连上 Redis 保住任务（无法连接 Redis，或服务器暂停）", "1 分 30 秒"],
    ]);
    assert.deepEqual(flipRows(items, 100_000).map((r) => r.slice(1)), [["bob", "停用", "desk-7", "stock count tonight"]]);
    const still = incidentRows([items[0], { ...death, outage: { down_ms: 60_000, still_down: true } }], 61_000)[0];
    assert.equal(still[5], "1 分 0 秒（仍中断）");
  } finally {
    setTexts(texts("en"));
  }
});

test("the strip zooms over an hour, a day or a week", () => {
  assert.deepEqual(WINDOWS.map(([k, ms]) => [k, ms]), [["1h", 3_600_000], ["24h", 86_400_000], ["7d", 604_800_000]]);
});

test("a time on another day than now carries its date; one on now's day only the time", () => {
  setTexts(texts("en"));
  const now = new Date(2026, 10, 27, 12, 0, 0).getTime();
  const flip = (at_ms) => ({ kind: "flag", at_ms, user: "bob", on: true });
  const when = (at) => flipRows([flip(at)], now)[0][0];
  assert.match(when(now - 30 * 3_600_000), /^\d{2}\D\d{2} \d{2}:\d{2}:\d{2}$/);
  assert.match(when(now - 3_600_000), /^\d{2}:\d{2}:\d{2}$/);
});
