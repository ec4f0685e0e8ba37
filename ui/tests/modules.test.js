import { test } from "node:test";
import assert from "node:assert/strict";

// The views touch the DOM only when called; importing them checks every
// import binding, which a browser would otherwise report only at run time.
test("every view module links", async () => {
  for (const m of ["live.js", "history.js", "settings.js", "off.js"]) {
    const mod = await import(`../${m}`);
    assert.ok(Object.keys(mod).length > 0, m);
  }
});
