// Pure formatting for the dashboard: durations, times, state words.

/** A duration for people: "850 ms", "12 s", "4 min 5 s", "2 h 3 min". */
export function duration(ms) {
  if (ms == null || !Number.isFinite(ms)) return "–";
  ms = Math.max(0, Math.round(ms));
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Math.floor(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.floor(ms / 1000) % 60} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.floor(ms / 60_000) % 60} min`;
}

/** Local clock time of an epoch-ms instant: "14:03:07". */
export function clock(ms) {
  if (ms == null) return "–";
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/** Words and a glyph for each state: never colour alone. */
export const STATES = {
  running: { word: "Running", glyph: "✔", hint: "held, heartbeat fresh" },
  stale: { word: "Stale", glyph: "⚠", hint: "held, heartbeat old: hung or dying" },
  down: { word: "Down", glyph: "✖", hint: "enabled, but no server runs it" },
  pending: { word: "Pending", glyph: "◔", hint: "nobody runs it yet; a server should take it soon" },
  stopped: { word: "Stopped", glyph: "❚❚", hint: "nobody has it enabled" },
  conflict: { word: "Conflict", glyph: "◆", hint: "two servers claim it" },
  unknown: { word: "Unknown", glyph: "?", hint: "Redis cannot be read" },
};

/** The state's display record, falling back to unknown. */
export function stateInfo(state) {
  return STATES[state] ?? STATES.unknown;
}

/**
 * The lock's lease left, in words. A status with no read behind it
 * (`checked_at_ms` null: Redis could not be read) or an unreadable lock
 * says "not known", never "free".
 */
export function leaseText(status) {
  if (!status) return "–";
  const lock = status.lock ?? {};
  if (status.checked_at_ms == null || lock.kind == null || lock.kind === "unreadable") return "not known";
  if (!lock.holders?.length) return "free";
  return lock.ttl_ms != null ? duration(lock.ttl_ms) : "no expiry";
}

/**
 * The user's own flag as Redis has it: true, false, or null while it cannot
 * be known (no read behind the status, or the flag itself unreadable). After
 * Redis lost the job's data the flag is known, and off.
 */
export function ownFlag(status, user) {
  if (!status || status.checked_at_ms == null) return null;
  if ((status.enabled_users ?? []).includes(user)) return true;
  if ((status.flags ?? []).some((f) => f.user === user && f.on == null)) return null;
  return false;
}

/** "wh-east-1" or the lock field when no heartbeat names it. */
export function holderName(holder) {
  if (!holder) return "–";
  return holder.node ?? `lock field ${holder.field}`;
}

/** Milliseconds from a Redis stream id ("1700000000000-0"). */
export function streamMs(id) {
  const ms = Number(String(id).split("-")[0]);
  return Number.isFinite(ms) ? ms : null;
}
