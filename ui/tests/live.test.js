import { test } from "node:test";
import assert from "node:assert/strict";
import { listOrder } from "../live.js";

const entry = (job, rank) => ({ job, rank, status: null });

test("the list puts trouble first, the worst on top, and keeps the rest in their configured order", () => {
  const statuses = new Map(
    [entry("outbound", 0), entry("inbound", 3), entry("stock", 0), entry("labels", 5), entry("erp", 3)].map((e) => [e.job, e]),
  );
  assert.deepEqual(
    listOrder(statuses).map((e) => e.job),
    ["labels", "inbound", "erp", "outbound", "stock"],
  );
});

test("a job the app sent no rank for stays in its place", () => {
  const statuses = new Map([entry("a", undefined), entry("b", 4), entry("c", undefined)].map((e) => [e.job, e]));
  assert.deepEqual(
    listOrder(statuses).map((e) => e.job),
    ["b", "a", "c"],
  );
});
