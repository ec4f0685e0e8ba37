import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { INPUTS, formOf, placeVerdict } from "../validate.js";

test("the form is read into what the app takes, as typed", () => {
  const form = formOf({ redis_url: " redis://db ", poll: "fast", jobs: "outbound, inbound" }, ["died"]);
  assert.deepEqual(Object.keys(form).sort(), [...INPUTS, "notify"].sort());
  assert.equal(form.redis_url, " redis://db ", "the app trims, by its own rule");
  assert.equal(form.poll, "fast", "a bad duration reaches the app, which says what is wrong");
  assert.equal(form.password, "");
  assert.deepEqual(form.notify, ["died"]);
});

test("the app's verdict goes to the fields it names, the first message each", () => {
  const { byField, elsewhere } = placeVerdict([
    { field: "poll", message: "Poll interval \"fast\": not a duration" },
    { field: "jobs", message: "Job \"a b\": first" },
    { field: "jobs", message: "Job \"c d\": second" },
    { field: "lock_key", message: "Lock key \"a b\": no spaces" },
  ]);
  assert.deepEqual(byField, { poll: "Poll interval \"fast\": not a duration", jobs: "Job \"a b\": first" });
  assert.deepEqual(elsewhere, ["Lock key \"a b\": no spaces"], "a setting without an input is still said");
  assert.deepEqual(placeVerdict([]), { byField: {}, elsewhere: [] });
  assert.deepEqual(placeVerdict(undefined), { byField: {}, elsewhere: [] });
});

test("no input rule lives in the page: the settings view asks the app", () => {
  // The rules (names, durations, ranges, URLs) are the library's; a copy
  // here would drift from what the command line and the app accept.
  for (const file of ["validate.js", "settings.js"]) {
    const src = readFileSync(new URL(`../${file}`, import.meta.url), "utf8");
    assert.doesNotMatch(src, /parseDuration|3_600_000|\[A-Za-z0-9|rediss\?:/, file);
  }
  const view = readFileSync(new URL("../settings.js", import.meta.url), "utf8");
  assert.match(view, /invoke\("validate_settings"/);
  assert.match(view, /invoke\("save_settings"/);
});
