// Pure validation of the settings form: one sentence per bad field, before
// anything is sent to the app (which checks again).

const USER = /^[A-Za-z0-9._@-]{1,64}$/;
const JOB = /^[^\s{}]{1,100}$/;

/** Milliseconds from "500ms", "30s", "5m", "1h" or a bare number of seconds; null if bad. */
export function parseDuration(text) {
  const m = String(text).trim().match(/^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?$/);
  if (!m) return null;
  const factor = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 }[m[2] ?? "s"];
  return Math.round(Number(m[1]) * factor);
}

/** A duration as the form writes it: "500ms", "10s", "5m", "1h". */
export function compact(ms) {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** {field: sentence} for each bad field of the form's values; empty when all are good. */
export function validate(form) {
  const errors = {};
  const url = String(form.redis_url ?? "").trim();
  if (!/^rediss?:\/\/[^\s]+$/.test(url)) {
    errors.redis_url = "Give a Redis URL like redis://host:6379 or rediss://user@host:6380.";
  } else if (/^rediss?:\/\/[^/@]*:[^/@]*@/.test(url)) {
    errors.redis_url = "Put the password in the password field, not in the URL: it goes to the keyring.";
  }
  if (form.user && !USER.test(form.user)) {
    errors.user = "Use 1 to 64 letters, digits, '.', '_', '@' or '-'.";
  }
  const jobs = String(form.jobs ?? "").split(",").map((j) => j.trim()).filter(Boolean);
  if (jobs.length === 0) errors.jobs = "Watch at least one job (names separated by commas).";
  else if (!jobs.every((j) => JOB.test(j))) errors.jobs = "Job names may not contain spaces or braces.";
  const ranges = {
    poll: [100, 3_600_000, "Poll interval"],
    heartbeat_grace: [500, 3_600_000, "Heartbeat grace"],
    failover_window: [0, 3_600_000, "Failover window"],
    start_grace: [0, 3_600_000, "Start grace"],
  };
  for (const [field, [min, max, label]] of Object.entries(ranges)) {
    const ms = parseDuration(form[field] ?? "");
    if (ms == null) errors[field] = `${label}: write a duration like 500ms, 10s or 5m.`;
    else if (ms < min || ms > max) errors[field] = `${label} must be between ${min} ms and 1 h.`;
  }
  return errors;
}
