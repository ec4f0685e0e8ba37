// The settings view: the form the app filled in (durations as "10s"), its
// fields judged by the app as they change and on saving; the password goes
// to the OS keyring; "Test connection" says in one sentence what worked or
// failed.

import { INPUTS, formOf, placeVerdict } from "./validate.js";

const EVENTS = ["died", "data_lost", "failover", "restarted", "conflict", "stalled", "recovered", "started", "stopped", "unreachable", "reachable"];

export function renderSettings(root, app, reload) {
  const s = app.state.settings;
  const filled = app.state.form;
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
  for (const name of INPUTS) form.elements[name].value = filled[name] ?? "";
  for (const box of form.querySelectorAll('input[name="notify"]')) box.checked = s.notify.includes(box.value);
  for (const [field, env] of [["redis_url", "LOCKWATCH_REDIS_URL"], ["user", "LOCKWATCH_USER"], ["jobs", "LOCKWATCH_JOB"]]) {
    if (over[field === "jobs" ? "job" : field]) note(form, field, `Overridden by ${env} while it is set.`);
  }
  const result = root.querySelector(".result");
  result.textContent = app.settingsNote ?? "";
  app.settingsNote = null;
  const current = () => formOf(Object.fromEntries(INPUTS.map((n) => [n, form.elements[n].value])), [...form.querySelectorAll('input[name="notify"]:checked')].map((b) => b.value));
  const show = (errors, only) => {
    clearErrors(form);
    const { byField, elsewhere } = placeVerdict(errors);
    for (const [field, msg] of Object.entries(byField)) if (!only || only.has(field)) note(form, field, msg, true);
    return { marked: Object.keys(byField).length > 0, elsewhere };
  };

  // The app's verdict on the fields the user has changed so far.
  const touched = new Set();
  form.addEventListener("change", async (ev) => {
    if (!INPUTS.includes(ev.target.name)) return;
    touched.add(ev.target.name);
    show(await app.invoke("validate_settings", { form: current() }), touched);
  });
  root.querySelector(".test").addEventListener("click", async () => {
    result.textContent = "Testing…";
    result.textContent = await app.invoke("test_connection", { form: current() });
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const warning = await app.invoke("save_settings", { form: current() });
      // The view is drawn anew from the saved state: carry the message over.
      app.settingsNote = warning ? `Saved. ${warning}` : "Saved; watching with the new settings.";
      await reload();
    } catch (err) {
      if (!err?.fields) {
        clearErrors(form);
        result.textContent = `Not saved: ${err}`;
        return;
      }
      const { elsewhere } = show(err.fields);
      form.querySelector("[aria-invalid=true]")?.focus();
      result.textContent = ["Not saved: see the marked fields.", ...elsewhere].join(" ");
    }
  });
}

function note(form, field, msg, invalid = false) {
  const input = form.elements[field];
  if (!input) return;
  const p = document.createElement("p");
  p.className = invalid ? "field-error" : "field-error muted";
  p.id = invalid ? `${field}-error` : `${field}-note`;
  p.textContent = msg;
  input.after(p);
  if (invalid) {
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", p.id);
  }
}

function clearErrors(form) {
  for (const p of form.querySelectorAll(".field-error:not(.muted)")) p.remove();
  for (const i of form.querySelectorAll("[aria-invalid]")) {
    i.removeAttribute("aria-invalid");
    i.removeAttribute("aria-describedby");
  }
}
