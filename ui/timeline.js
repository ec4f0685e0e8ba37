// Pure shaping of the job's history for the page. The history itself (runs,
// failovers, restarts, deaths, flag flips) is built by the library
// (`lockwatch::history`) and arrives as items {kind, at_ms, …}; nothing
// here decides what happened, it only lays the items out.

/**
 * Segments covering [from, to]: {start, end, node|null, fence}, from the
 * history's runs (a run still going ends at `to`), gaps as "nobody".
 */
export function segments(items, from, to) {
  const runs = items
    .filter((i) => i.kind === "run")
    .map((r) => ({ start: r.at_ms, end: r.until_ms ?? to, node: r.node ?? null, fence: r.fence ?? null }))
    .sort((a, b) => a.start - b.start);
  const filled = [];
  let cursor = from;
  for (const s of runs) {
    const start = Math.max(s.start, from, cursor);
    const end = Math.min(s.end, to);
    if (end <= start) continue;
    if (start > cursor) filled.push({ start: cursor, end: start, node: null, fence: null });
    filled.push({ ...s, start, end });
    cursor = end;
  }
  if (cursor < to) filled.push({ start: cursor, end: to, node: null, fence: null });
  return filled;
}

/** The history's kinds of incident. */
const INCIDENTS = ["failover", "restart", "death"];

/** A holder as the library names it: its server, else its lock field. */
function holder(h) {
  if (!h) return null;
  return h.node ?? h.field ?? null;
}

/**
 * Failovers, restarts and deaths, newest first, as table rows:
 * {at, kind, from, to, cause, why, downMs, stillDown}. A death is down
 * until the next run began, or still at `now` when none did.
 */
export function incidents(items, now) {
  const runs = items.filter((i) => i.kind === "run");
  const starts = runs.map((r) => r.at_ms).sort((a, b) => a - b);
  // A holder that went without a word has no end time of its own: the gap
  // then runs from its run's last sign of life to the takeover.
  const lastSign = (node, at) => Math.max(...runs.filter((r) => r.node === node && r.until_ms != null && r.until_ms <= at).map((r) => r.until_ms));
  return items
    .filter((i) => INCIDENTS.includes(i.kind))
    .map((i) => {
      const death = i.kind === "death";
      const next = death ? starts.find((s) => s >= i.at_ms) : undefined;
      const downMs = death ? (next ?? now) - i.at_ms : (i.down_ms ?? i.at_ms - lastSign(i.from?.node, i.at_ms));
      return {
        at: i.at_ms,
        kind: i.kind,
        from: death ? (i.node ?? null) : holder(i.from),
        to: death ? null : holder(i.to),
        cause: i.cause ?? null,
        why: i.reason ?? "",
        downMs: Number.isFinite(downMs) ? downMs : null,
        stillDown: death && next == null,
      };
    })
    .reverse();
}

/** Flag flips, newest first: {at, user, on, host, reason}. */
export function flips(items) {
  return items
    .filter((i) => i.kind === "flag")
    .map((i) => ({ at: i.at_ms, user: i.user, on: i.on, host: i.host ?? null, reason: i.reason ?? null }))
    .reverse();
}
