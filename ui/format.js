// Pure formatting for the dashboard: durations, times, state words and
// sentences, in the language the app chose (see i18n.js). What a status
// means for the user (her own flag, the last one on, silent standbys) comes
// decided with it from the app.

import { language, t } from "./i18n.js";

/** A duration for people: "850 ms", "12 s", "4 min 5 s", "2 h 3 min" (or "4 分 5 秒"). */
export function duration(ms) {
  if (ms == null || !Number.isFinite(ms)) return "–";
  ms = Math.max(0, Math.round(ms));
  if (ms < 1000) return t("duration-ms", { ms });
  if (ms < 60_000) return t("duration-s", { s: Math.floor(ms / 1000) });
  if (ms < 3_600_000) return t("duration-min", { min: Math.floor(ms / 60_000), s: Math.floor(ms / 1000) % 60 });
  return t("duration-h", { h: Math.floor(ms / 3_600_000), min: Math.floor(ms / 60_000) % 60 });
}

/** Local clock time of an epoch-ms instant, 24 h: "14:03:07". */
export function clock(ms) {
  if (ms == null) return "–";
  return new Date(ms).toLocaleTimeString(language(), { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/**
 * A time of day, with its date in front when it falls on another day than
 * `now` (the 24 h and 7 d views, a state held since yesterday).
 */
export function stamp(ms, now) {
  if (ms == null) return "–";
  const day = (x) => new Date(x).toDateString();
  if (now == null || day(ms) === day(now)) return clock(ms);
  const date = new Date(ms).toLocaleDateString(language(), { month: "2-digit", day: "2-digit" });
  return `${date} ${clock(ms)}`;
}

/** The message ids and glyph of each state: never colour alone. */
export const STATES = {
  running: { word: "page-state-running", hint: "page-hint-running", glyph: "✔" },
  stale: { word: "page-state-stale", hint: "page-hint-stale", glyph: "⚠" },
  down: { word: "page-state-down", hint: "page-hint-down", glyph: "✖" },
  pending: { word: "page-state-pending", hint: "page-hint-pending", glyph: "◔" },
  stopped: { word: "page-state-stopped", hint: "page-hint-stopped", glyph: "❚❚" },
  conflict: { word: "page-state-conflict", hint: "page-hint-conflict", glyph: "◆" },
  unknown: { word: "page-state-unknown", hint: "page-hint-unknown", glyph: "?" },
};

/** The state's word, hint and glyph, falling back to unknown. */
export function stateInfo(state) {
  const ids = STATES[state] ?? STATES.unknown;
  return { word: t(ids.word), hint: t(ids.hint), glyph: ids.glyph };
}

/**
 * What the status means, in a sentence built from its fields (the catalog
 * may also choose the library's own English sentence, `reason`). Where only
 * that sentence knows (an unknown state Redis did answer), it is shown after
 * a lead in the page's language.
 */
export function reasonText(status) {
  if (!status) return t("page-connecting");
  const reason = status.reason ?? "";
  const args = { reason, server: holderName(status.holder) };
  if (status.checked_at_ms == null) return t("page-reason-unreadable", args);
  switch (status.state) {
    case "running":
      return t("page-reason-running", args);
    case "stale":
      if (!status.holder?.node || status.holder.heartbeat_age_ms == null) return t("page-reason-stale-unnamed", args);
      return t("page-reason-stale", { ...args, age: duration(status.holder.heartbeat_age_ms) });
    case "down":
      return t("page-reason-down", args);
    case "pending":
      if (status.pending_until_ms == null) return t("page-reason-pending-open", args);
      return t("page-reason-pending", { ...args, until: clock(status.pending_until_ms) });
    case "stopped":
      return t("page-reason-stopped", args);
    case "conflict":
      return t("page-reason-conflict", args);
    default:
      return t("page-reason-unknown", args);
  }
}

/**
 * The lock's lease left, in words. A status with no read behind it
 * (`checked_at_ms` null: Redis could not be read) or an unreadable lock
 * says "not known", never "free".
 */
export function leaseText(status) {
  if (!status) return "–";
  const lock = status.lock ?? {};
  if (status.checked_at_ms == null || lock.kind == null || lock.kind === "unreadable") return t("page-not-known");
  if (!lock.holders?.length) return t("page-free");
  return lock.ttl_ms != null ? duration(lock.ttl_ms) : t("page-no-expiry");
}

/**
 * The servers a job's status knows, for one line: each by name, a silent
 * one with how long; "–" when none wrote a heartbeat.
 */
export function serversText(status) {
  const nodes = status?.nodes ?? [];
  if (nodes.length === 0) return "–";
  return nodes
    .map((n) => (n.fresh || n.heartbeat_age_ms == null ? n.node : t("page-node-silent", { server: n.node, duration: duration(n.heartbeat_age_ms) })))
    .join(", ");
}

/**
 * "No backup server: srv-b is silent" while the job runs with none left, naming
 * the silent servers the app found (`silent_standbys`); null otherwise.
 */
export function noStandbyText(entry) {
  if (!entry?.status?.no_standby) return null;
  return t("page-no-standby", { server: (entry.silent_standbys ?? []).join(", ") });
}

/**
 * "Redis lost the switch of alice…" while a worker says so (`flags_lost`):
 * the job stays as it was with nobody shown keeping it on; null otherwise.
 */
export function flagsLostText(entry) {
  const users = entry?.status?.flags_lost ?? [];
  if (!users.length) return null;
  return t("page-flags-lost", { users: users.join(t("list-separator")) });
}

/** "wh-east-1" or the lock field when no heartbeat names it. */
export function holderName(holder) {
  if (!holder) return "–";
  return holder.node ?? t("page-lock-field", { field: holder.field });
}
