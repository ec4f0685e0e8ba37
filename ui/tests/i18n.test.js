import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { clock, duration, leaseText, reasonText, stateInfo } from "../format.js";
import { language, setTexts, t } from "../i18n.js";

const texts = (tag) => JSON.parse(readFileSync(new URL(`./texts.${tag}.json`, import.meta.url), "utf8"));

const running = {
  state: "running",
  reason: "running on wh-east-1 (lock field a:1, heartbeat 1 s ago, lease 25 s left)",
  holder: { field: "a:1", node: "wh-east-1", heartbeat_age_ms: 1200 },
  lock: { kind: "redisson", holders: ["a:1"], ttl_ms: 25_000 },
  checked_at_ms: 5,
};

test("the page speaks Chinese from the app's messages", () => {
  setTexts(texts("zh-CN"));
  try {
    assert.equal(language(), "zh-CN");
    assert.equal(duration(303_000), "5 分 3 秒");
    assert.equal(duration(850), "850 毫秒");
    assert.equal(stateInfo("running").word, "运行中");
    assert.equal(stateInfo("stale").word, "无响应");
    assert.equal(stateInfo("nonsense").word, "未知");
    assert.equal(t("page-ago", { duration: duration(12_000) }), "12 秒前");
    assert.equal(leaseText(running), "25 秒");
    assert.equal(reasonText(running), "正在 wh-east-1 上运行。", "its own sentence from the fields, not the English one");
    const stale = { ...running, state: "stale", holder: { ...running.holder, heartbeat_age_ms: 42_000 } };
    assert.equal(reasonText(stale), "wh-east-1 占着此任务，但已有 42 秒没有响应：可能卡住或正在退出。");
    assert.equal(reasonText({ state: "unknown", checked_at_ms: null, reason: "Redis at db:6379 cannot be reached" }), "无法读取 Redis，状态未知（并不代表已停止）。");
    const lost = { state: "unknown", checked_at_ms: 5, reason: "Redis lost the job's data (the fence counter is gone)" };
    assert.equal(reasonText(lost), `无法从 Redis 中的数据判断状态：${lost.reason}`, "only the library knows: its sentence after a lead in Chinese");
    assert.match(clock(Date.UTC(2024, 0, 1, 10, 2, 3)), /^\d\d:02:03$/);
  } finally {
    setTexts(texts("en"));
  }
});

test("in English the page says it as plainly as in Chinese: no lock, lease or field", () => {
  setTexts(texts("en"));
  assert.equal(reasonText(running), "Running on wh-east-1.");
  const stale = { ...running, state: "stale", holder: { ...running.holder, heartbeat_age_ms: 42_000 } };
  assert.equal(reasonText(stale), "wh-east-1 has the job, but has not checked in for 42 s: it may be stuck or shutting down.");
  for (const state of ["running", "stale", "down", "pending", "stopped", "conflict"]) {
    assert.doesNotMatch(reasonText({ ...running, state }), /lock|lease|field|fence/i, state);
  }
  assert.equal(reasonText(undefined), "Connecting…");
  assert.equal(stateInfo("pending").word, "Pending");
  assert.equal(duration(7_380_000), "2 h 3 min");
});

test("arguments are filled in by name; a missing message shows its id", () => {
  setTexts({ lang: "en", messages: { "page-x": "{a} and {b}, {a} again, {c} kept" } });
  try {
    assert.equal(t("page-x", { a: 1, b: "two" }), "1 and two, 1 again, {c} kept");
    assert.equal(t("page-missing"), "page-missing");
  } finally {
    setTexts(texts("en"));
  }
});

test("both languages have every message the other has", () => {
  const en = Object.keys(texts("en").messages).sort();
  assert.deepEqual(Object.keys(texts("zh-CN").messages).sort(), en);
  assert.ok(en.length > 80);
});

test("the page keeps no words of its own: every label comes from the app", () => {
  // A literal English label in a view would not follow the language. The
  // history view is not converted yet and is left out here.
  for (const file of readdirSync(new URL("..", import.meta.url))) {
    if (!/\.(js|html)$/.test(file) || ["history.js", "timeline.js", "boot.js"].includes(file)) continue;
    const text = readFileSync(new URL(`../${file}`, import.meta.url), "utf8").replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
    for (const word of ["Enabled for me", "Not changed", "Running", "Heartbeat", "Saved", "Test connection", "Notify me", "Dismiss", "Live", "Connecting"]) {
      // As text: right after a quote or a tag, not inside a name such as noTrayDismissed.
      assert.ok(!new RegExp(`[>"'\`]\\s*${word}`).test(text), `${file} still says "${word}" itself`);
    }
  }
});

test("the Language dropdown names the automatic choice in the page's language, not by its key", async () => {
  // Imported before any catalog is set, as the page loads its modules.
  const { languageChoices } = await import("../settings.js");
  for (const [tag, auto] of [["zh-CN", "自动（跟随桌面）"], ["en", "Automatic (from the desktop)"]]) {
    setTexts(texts(tag));
    assert.deepEqual(languageChoices(), [["auto", auto], ["en", "English"], ["zh-CN", "简体中文"]]);
  }
});
