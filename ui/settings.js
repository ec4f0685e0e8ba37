// The settings view: a form checked field by field before saving; the
// password goes to the OS keyring; "Test connection" says in one sentence
// what worked or failed.

import { compact, parseDuration, validate } from "./validate.js";

const EVENTS = ["died", "data_lost", "failover", "restarted", "conflict", "stalled", "recovered", "started", "stopped", "unreachable", "reachable"];

export function renderSettings(root, app, reload) {
  const s = app.state.settings;
  const over = app.state.overridden ?? {};
  root.innerHTML = `
    <article class="card">
      <h2>Settings</h2>
      <form class="settings" novalidate>
        <label for="redis_url">Redis URL</label><input type="url" id="redis_url" name="redis_url" autocomplete="off" spellcheck="false">
        <label for="password">Password</label><input type="password" id="password" name="password" autocomplete="off" placeholder="kept in the OS keyring; leave empty to keep">
        <label for="tls_ca">TLS CA file (PEM)</label><input type="text" id="tls_ca" name="tls_ca" placeholder="only for a private CA">
        <label for="user">Your name</label><input type="text" id="user" name="user" placeholder="default: the Redis user, else your login">
        <label for="jobs">Jobs</label><input type="text" id="jobs" name="jobs" placeholder="outbound, inbound">
        <label for="poll">Poll interval</label><input type="text" id="poll" name="poll">
        <label for="heartbeat_grace">Heartbeat grace</label><input type="text" id="heartbeat_grace" name="heartbeat_grace">
        <label for="failover_window">Failover window</label><input type="text" id="failover_window" name="failover_window">
        <label for="start_grace">Start grace</label><input type="text" id="start_grace" name="start_grace">
        <fieldset><legend>Notify me when the job…</legend>${EVENTS.map((e) => `<label><input type="checkbox" name="notify" value="${e}"> ${e}</label>`).join(" ")}</fieldset>
        <div class="buttons"><button type="submit" class="primary">Save</button><button type="button" class="test">Test connection</button><span class="result" aria-live="polite"></span></div>
      </form>
    </article>`;
  const form = root.querySelector("form");
  const set = (name, value) => (form.elements[name].value = value ?? "");
  set("redis_url", s.redis_url);
  set("tls_ca", s.tls_ca);
  set("user", s.user);
  set("jobs", s.jobs.map((j) => j.name).join(", "));
  set("poll", compact(s.poll_ms));
  set("heartbeat_grace", compact(s.heartbeat_grace_ms));
  set("failover_window", compact(s.failover_window_ms));
  set("start_grace", compact(s.start_grace_ms));
  for (const box of form.querySelectorAll('input[name="notify"]')) box.checked = s.notify.includes(box.value);
  for (const [field, env] of [["redis_url", "LOCKWATCH_REDIS_URL"], ["user", "LOCKWATCH_USER"], ["jobs", "LOCKWATCH_JOB"]]) {
    if (over[field === "jobs" ? "job" : field]) note(form, field, `Overridden by ${env} while it is set.`);
  }
  const result = root.querySelector(".result");
  result.textContent = app.settingsNote ?? "";
  app.settingsNote = null;
  root.querySelector(".test").addEventListener("click", async () => {
    result.textContent = "Testing…";
    const v = values(form);
    result.textContent = await app.invoke("test_connection", { url: v.redis_url, password: v.password || null, tlsCa: v.tls_ca || null, job: v.jobs.split(",")[0]?.trim() || null });
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const v = values(form);
    const errors = validate(v);
    if (Object.keys(errors).length) {
      for (const [field, msg] of Object.entries(errors)) note(form, field, msg, true);
      form.querySelector("[aria-invalid=true]")?.focus();
      result.textContent = "Not saved: see the marked fields.";
      return;
    }
    const previous = new Map(s.jobs.map((j) => [j.name, j]));
    const settings = {
      ...s,
      redis_url: v.redis_url.trim(),
      tls_ca: v.tls_ca.trim() || null,
      user: v.user.trim(),
      jobs: v.jobs.split(",").map((j) => j.trim()).filter(Boolean).map((name) => previous.get(name) ?? { name, lock_key: null, heartbeats: true }),
      poll_ms: parseDuration(v.poll),
      heartbeat_grace_ms: parseDuration(v.heartbeat_grace),
      failover_window_ms: parseDuration(v.failover_window),
      start_grace_ms: parseDuration(v.start_grace),
      notify: [...form.querySelectorAll('input[name="notify"]:checked')].map((b) => b.value),
    };
    try {
      const warning = await app.invoke("save_settings", { settings, password: v.password || null });
      // The view is drawn anew from the saved state: carry the message over.
      app.settingsNote = warning ? `Saved. ${warning}` : "Saved; watching with the new settings.";
      await reload();
    } catch (err) {
      for (const [field, msg] of err?.fields ?? []) note(form, field.split(".")[0].replace(/_ms$/, ""), msg, true);
      result.textContent = err?.fields ? "Not saved: see the marked fields." : `Not saved: ${err}`;
    }
  });
}

function values(form) {
  const v = {};
  for (const name of ["redis_url", "password", "tls_ca", "user", "jobs", "poll", "heartbeat_grace", "failover_window", "start_grace"]) v[name] = form.elements[name].value;
  return v;
}

function note(form, field, msg, invalid = false) {
  const input = form.elements[field];
  if (!input) return;
  const p = document.createElement("p");
  p.className = invalid ? "field-error" : "field-error muted";
  p.id = `${field}-error`;
  p.textContent = msg;
  input.after(p);
  if (invalid) {
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", p.id);
  }
}

function clearErrors(form) {
  for (const p of form.querySelectorAll(".field-error")) p.remove();
  for (const i of form.querySelectorAll("[aria-invalid]")) i.removeAttribute("aria-invalid");
}
