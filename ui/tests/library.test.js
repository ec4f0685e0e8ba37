import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { CAUSES } from "../history.js";
import { EVENTS } from "../settings.js";

// The library's words as the tray's tests write them (LOCKWATCH_UPDATE_TEXTS=1).
const library = JSON.parse(readFileSync(new URL("./library.json", import.meta.url), "utf8"));

test("the settings offer every event the library tells, each once, and none it does not", () => {
  assert.deepEqual(EVENTS.map(([kind]) => kind), library.events);
  for (const [kind, id] of EVENTS) assert.equal(id, `page-event-${kind}`);
});

test("the history has words for every way the library says a run ended", () => {
  assert.deepEqual(Object.keys(CAUSES).sort(), [...library.ends].sort());
});
