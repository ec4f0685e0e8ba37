import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { setTexts } from "../i18n.js";
import { passwordHint, savedText } from "../settings.js";

const texts = (tag) => JSON.parse(readFileSync(new URL(`./texts.${tag}.json`, import.meta.url), "utf8"));

test("the password field says where a password goes, and no keyring where the app found none", () => {
  setTexts(texts("en"));
  assert.equal(passwordHint("keyring"), "kept in the OS keyring; leave empty to keep");
  assert.equal(passwordHint("memory"), "no keyring here: kept in memory until lockwatch quits");
  assert.doesNotMatch(passwordHint(null), /keyring/, "not known yet: no claim either way");
  setTexts(texts("zh-CN"));
  try {
    assert.equal(passwordHint("memory"), "本机没有系统密码库：只保存在内存中，直到 lockwatch 退出");
    assert.doesNotMatch(passwordHint(undefined), /密码库/);
  } finally {
    setTexts(texts("en"));
  }
});

test("Saved is said in the words in effect, with the no-keyring note in them too", () => {
  setTexts(texts("zh-CN"));
  try {
    assert.equal(savedText({ password_in_memory: false }), "已保存，正在按新设置监控。");
    assert.equal(
      savedText({ password_in_memory: true }),
      "已保存。这台电脑没有系统密码库：密码只保存在内存中，lockwatch 退出后，下次启动时需重新输入。",
    );
  } finally {
    setTexts(texts("en"));
  }
  assert.equal(savedText({ password_in_memory: false }), "Saved; watching with the new settings.");
});
