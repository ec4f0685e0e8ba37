// The settings view: the form the app filled in (durations as "10s"), its
// fields judged by the app as they change and on saving; the password goes
// to the OS keyring, or to memory where the app found none; "Test
// connection" says in one sentence what worked or failed; "Send a test
// notification" has the tray send one. Its words are the app's (i18n.js),
// "Saved" too: said once the saved settings' words are loaded, as saving
// may change the language.

import { t } from "./i18n.js";
import { INPUTS, formOf, placeVerdict } from "./validate.js";

/** Each event the settings can choose, with the message that names it. */
export const EVENTS = [
  ["died", "page-event-died"],
  ["data_lost", "page-event-data_lost"],
  ["failover", "page-event-failover"],
  ["restarted", "page-event-restarted"],
  ["conflict", "page-event-conflict"],
  ["stalled", "page-event-stalled"],
  ["recovered", "page-event-recovered"],
  ["started", "page-event-started"],
  ["stopped", "page-event-stopped"],
  ["unreachable", "page-event-unreachable"],
  ["reachable", "page-event-reachable"],
  ["standby_lost", "page-event-standby_lost"],
  ["standby_back", "page-event-standby_back"],
];

/**
 * The "Language" choices as [value, label]. A language is named in itself
 * (a user who cannot read the current one still finds their own), so those
 * two are no message of the catalog; "as the desktop" is, and is looked up
 * when the form is drawn, once the catalog is there.
 */
export function languageChoices() {
  return [
    ["auto", t("page-language-auto")],
    ["en", "English"],
    ["zh-CN", "简体中文"],
  ];
}

/** The password field's placeholder: where a password typed there goes, as the app found out (`password_goes`). */
export function passwordHint(goes) {
  return t({ keyring: "page-password-hint", memory: "page-password-hint-memory" }[goes] ?? "page-password-hint-kept");
}

/** "Saved", in the words in effect, from what `save_settings` answered. */
export function savedText(saved) {
  return saved.password_in_memory ? t("page-saved-note", { note: t("page-password-in-memory") }) : t("page-saved");
}

/** The hints of what took effect, in the form drawn under `root` (if any): where a password goes, whose name an empty field means. */
export function showHints(root, app) {
  const form = root.querySelector("form.settings");
  if (!form) return;
  form.elements.password.placeholder = passwordHint(app.state.password_goes);
  // Empty, the field means the user in effect (the URL's, else her login), unless the environment names one.
  const user = !app.state.overridden?.user && app.state.user;
  form.elements.user.placeholder = user ? t("page-user-default", { user }) : "";
}

export function renderSettings(root, app, reload) {
  const s = app.state.settings;
  const filled = app.state.form;
  const over = app.state.overridden ?? {};
  root.innerHTML = `
    <article class="card">
      <h2>${t("page-settings")}</h2>
      <form class="settings" novalidate>
        <label for="language">${t("page-language")}</label><select id="language" name="language">${languageChoices().map(([value, label]) => `<option value="${value}">${label}</option>`).join("")}</select>
        <label for="redis_url">${t("page-redis-url")}</label><input type="url" id="redis_url" name="redis_url" autocomplete="off" spellcheck="false">
        <label for="password">${t("page-password")}</label><input type="password" id="password" name="password" autocomplete="off">
        <label for="user">${t("page-user")}</label><input type="text" id="user" name="user" data-help="user-help"><p class="field-help muted" id="user-help">${t("page-user-hint")}</p>
        <label for="jobs">${t("page-jobs")}</label><input type="text" id="jobs" name="jobs" placeholder="outbound, inbound">
        <fieldset><legend>${t("page-notify")}</legend>${EVENTS.map(([e, id]) => `<label><input type="checkbox" name="notify" value="${e}"><span>${t(id)}</span></label>`).join("")}</fieldset>
        <label class="check"><input type="checkbox" id="sound" name="sound"><span>${t("page-sound")}</span></label>
        <div class="buttons"><button type="button" class="notify-test">${t("page-notify-test")}</button><span class="notify-result" aria-live="polite"></span></div>
        <details class="advanced"><summary>${t("page-advanced")}</summary><div>
        <label for="tls_ca">${t("page-tls-ca")}</label><input type="text" id="tls_ca" name="tls_ca" placeholder="${t("page-tls-ca-hint")}">
        <label for="sentinels">${t("page-sentinels")}</label><input type="text" id="sentinels" name="sentinels" spellcheck="false" placeholder="${t("page-sentinels-hint")}">
        <label for="sentinel_master">${t("page-sentinel-master")}</label><input type="text" id="sentinel_master" name="sentinel_master" spellcheck="false" placeholder="${t("page-sentinel-master-hint")}">
        <label class="check"><input type="checkbox" id="cluster" name="cluster"><span>${t("page-cluster")}</span></label>
        <label for="poll">${t("page-poll")}</label><input type="text" id="poll" name="poll">
        <label for="heartbeat_grace">${t("page-heartbeat-grace")}</label><input type="text" id="heartbeat_grace" name="heartbeat_grace">
        <label for="failover_window">${t("page-failover-window")}</label><input type="text" id="failover_window" name="failover_window">
        <label for="start_grace">${t("page-start-grace")}</label><input type="text" id="start_grace" name="start_grace">
        </div></details>
        <div class="buttons"><button type="submit" class="primary">${t("page-save")}</button><button type="button" class="test">${t("page-test")}</button><span class="result" aria-live="polite"></span></div>
      </form>
    </article>`;
  const form = root.querySelector("form");
  for (const name of INPUTS) form.elements[name].value = filled[name] ?? "";
  for (const box of form.querySelectorAll('input[name="notify"]')) box.checked = s.notify.includes(box.value);
  form.elements.language.value = filled.language ?? "auto";
  form.elements.cluster.checked = Boolean(filled.cluster);
  form.elements.sound.checked = filled.sound ?? true;
  showHints(root, app);
  for (const input of form.querySelectorAll("[data-help]")) input.setAttribute("aria-describedby", input.dataset.help);
  for (const [field, env] of [["redis_url", "LOCKWATCH_REDIS_URL"], ["sentinels", "LOCKWATCH_SENTINEL"], ["sentinel_master", "LOCKWATCH_SENTINEL_MASTER"], ["cluster", "LOCKWATCH_CLUSTER"], ["user", "LOCKWATCH_USER"], ["jobs", "LOCKWATCH_JOB"]]) {
    if (over[field === "jobs" ? "job" : field]) note(form, field, t("page-overridden", { variable: env }));
  }
  const result = root.querySelector(".result");
  result.textContent = app.saved ? savedText(app.saved) : "";
  app.saved = null;
  const current = () => ({ ...formOf(Object.fromEntries(INPUTS.map((n) => [n, form.elements[n].value])), [...form.querySelectorAll('input[name="notify"]:checked')].map((b) => b.value), form.elements.language.value, form.elements.sound.checked), cluster: form.elements.cluster.checked });
  const show = (errors, only) => {
    clearErrors(form);
    const { byField, elsewhere } = placeVerdict(errors);
    for (const [field, msg] of Object.entries(byField)) if (!only || only.has(field)) note(form, field, msg, true);
    // A refused engineering field (TLS, Sentinel, cluster, timings) is not left folded away.
    if (form.querySelector(".advanced [aria-invalid=true]")) form.querySelector(".advanced").open = true;
    return { marked: Object.keys(byField).length > 0, elsewhere };
  };

  // The app's verdict on the fields the user has changed so far.
  const touched = new Set();
  form.addEventListener("change", async (ev) => {
    if (!INPUTS.includes(ev.target.name) && ev.target.name !== "cluster") return;
    touched.add(ev.target.name);
    show(await app.invoke("validate_settings", { form: current() }), touched);
  });
  root.querySelector(".test").addEventListener("click", async () => {
    result.textContent = t("page-testing");
    result.title = "";
    const tested = await app.invoke("test_connection", { form: current() });
    result.textContent = tested.line;
    result.title = tested.detail ?? "";
  });
  root.querySelector(".notify-test").addEventListener("click", async () => {
    const said = root.querySelector(".notify-result");
    try {
      await app.invoke("test_notification");
      said.textContent = t("page-notify-test-sent");
    } catch (err) {
      said.textContent = String(err);
    }
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      // The view is drawn anew from the saved state, maybe in another
      // language: the answer is carried over and said in the new words.
      app.saved = await app.invoke("save_settings", { form: current() });
      await reload();
    } catch (err) {
      if (!err?.fields) {
        clearErrors(form);
        result.textContent = t("page-not-saved", { error: err });
        return;
      }
      const { elsewhere } = show(err.fields);
      form.querySelector("[aria-invalid=true]")?.focus();
      result.textContent = [t("page-not-saved-fields"), ...elsewhere].join(" ");
    }
  });
}

function note(form, field, msg, invalid = false) {
  const input = form.elements[field];
  if (!input) return;
  // A checkbox's note goes below the label that holds it and its words.
  const anchor = input.closest("label.check") ?? input;
  const p = document.createElement("p");
  p.className = invalid ? "field-error" : "field-error muted";
  p.id = invalid ? `${field}-error` : `${field}-note`;
  p.textContent = msg;
  anchor.after(p);
  if (invalid) {
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", [p.id, input.dataset.help].filter(Boolean).join(" "));
  }
}

function clearErrors(form) {
  for (const p of form.querySelectorAll(".field-error:not(.muted)")) p.remove();
  for (const i of form.querySelectorAll("[aria-invalid]")) {
    i.removeAttribute("aria-invalid");
    if (i.dataset.help) i.setAttribute("aria-describedby", i.dataset.help);
    else i.removeAttribute("aria-describedby");
  }
}
