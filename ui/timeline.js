// Pure history building: from the job's Redis event stream (as the worker
// writes it: acquired, released, lost, job-started, job-exited, …) to a
// timeline of who ran the job and a log of failovers and deaths.

import { streamMs } from "./format.js";

/** Stream entries ({id, fields}) in time order, with `at` in ms. */
export function normalize(entries) {
  return entries
    .map((e) => ({ ...e.fields, id: e.id, at: streamMs(e.id) }))
    .filter((e) => e.at != null)
    .sort((a, b) => a.at - b.at);
}

/**
 * Segments covering [from, to]: {start, end, node|null, fence}.
 * A holding runs from `acquired` to the holder's `released`/`lost`, or to the
 * next `acquired` when the holder vanished (killed: its lease ran out).
 */
export function segments(entries, from, to) {
  const events = normalize(entries);
  const out = [];
  let current = null;
  const close = (end) => {
    if (current) out.push({ ...current, end });
    current = null;
  };
  for (const e of events) {
    if (e.type === "acquired") {
      close(e.at);
      current = { start: e.at, node: e.node ?? null, fence: e.fence ?? null };
    } else if ((e.type === "released" || e.type === "lost") && current && e.node === current.node) {
      close(e.at);
    }
  }
  close(to);
  // Fill the gaps with "nobody ran it", clip to the window.
  const filled = [];
  let cursor = from;
  for (const s of out) {
    const start = Math.max(s.start, from);
    const end = Math.min(s.end, to);
    if (end <= from || start >= to) continue;
    if (start > cursor) filled.push({ start: cursor, end: start, node: null, fence: null });
    filled.push({ ...s, start, end });
    cursor = end;
  }
  if (cursor < to) filled.push({ start: cursor, end: to, node: null, fence: null });
  return filled;
}

/**
 * Failovers and deaths, newest first: {at, kind: "failover"|"death", from, to, downMs}.
 * A failover is a new holding on another server (or a new fence) after one
 * ended; `downMs` is the time nobody held it, when known.
 */
export function failoverLog(entries) {
  const events = normalize(entries);
  const log = [];
  let holder = null; // {node, fence, endedAt|null, released}
  for (const e of events) {
    if (e.type === "acquired") {
      if (holder) {
        const downMs = holder.endedAt != null ? e.at - holder.endedAt : null;
        // Another server, or the same one again after losing the lock (or
        // vanishing): a failover. The same server after a clean release
        // (everyone disabled it, then enabled it) is a restart, not logged.
        // A release because nobody had it enabled is a stop: whichever server
        // starts it next, that is a restart, not a failover.
        const cleanRestart = holder.stopped || (holder.node === e.node && holder.released);
        if ((holder.node !== e.node || holder.fence !== e.fence) && !cleanRestart) {
          log.push({ at: e.at, kind: "failover", from: holder.node, to: e.node, downMs });
        }
      }
      holder = { node: e.node, fence: e.fence, endedAt: null, released: false };
    } else if (e.type === "lost" && holder && e.node === holder.node) {
      holder.endedAt = e.at;
      log.push({ at: e.at, kind: "death", from: e.node, to: null, downMs: null, reason: e.reason ?? "lost the lock" });
    } else if (e.type === "released" && holder && e.node === holder.node) {
      holder.endedAt = e.at;
      holder.released = true;
      holder.stopped = /nobody has the job enabled/.test(e.reason ?? "");
    }
  }
  return log.reverse();
}
