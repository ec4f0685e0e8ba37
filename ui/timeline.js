// Pure shaping of the job's history for the page. The history itself (runs,
// failovers, restarts, deaths, flag flips) is built by the library
// (`lockwatch::history`) and arrives as items {kind, at_ms, …}, each
// incident with its outage; nothing here decides what happened or for how
// long, it only lays the items out.

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
 * {at, kind, from, to, cause, why, downMs, stillDown}. How long nobody ran
 * the job comes with each (`outage`, measured by `lockwatch::history`).
 */
export function incidents(items) {
  return items
    .filter((i) => INCIDENTS.includes(i.kind))
    .map((i) => {
      const death = i.kind === "death";
      return {
        at: i.at_ms,
        kind: i.kind,
        from: death ? (i.node ?? null) : holder(i.from),
        to: death ? null : holder(i.to),
        cause: i.cause ?? null,
        why: i.reason ?? "",
        downMs: i.outage?.down_ms ?? null,
        stillDown: i.outage?.still_down ?? false,
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
