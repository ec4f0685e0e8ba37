// The dashboard's entry: loads the app state once, then lives on the
// `status` and `event` events the app pushes. Which view it shows is the
// app's word (a `view`, as `link::View` serializes it: asked for once with
// the `view` command, then handed over as this window's own `view` events);
// the tabs switch by the URL hash. The page's words come from the app's catalog.

import { setTexts, t, translate } from "./i18n.js";
import { renderLive } from "./live.js";
import { renderHistory } from "./history.js";
import { renderSettings, showHints } from "./settings.js";
import { renderOff } from "./off.js";

const tauri = window.__TAURI__;
const tabs = ["live", "history", "settings"];
/** `off`: the job this window asks about, when it is the small "switch off" window (no tabs, no live updates). */
export const app = { state: null, statuses: new Map(), invoke: tauri.core.invoke, off: null };

function currentTab() {
  const name = location.hash.slice(1);
  return tabs.includes(name) ? name : "live";
}

// The "no tray" banner is said once; dismissed, it stays away while the window is open.
let noTrayDismissed = false;
document.querySelector("#notray .dismiss").addEventListener("click", () => {
  noTrayDismissed = true;
  document.getElementById("notray").hidden = true;
});

/** Shows the view the app asks for: a tab (the live one maybe with the no-tray banner), or the switch-off form alone. */
function open(view) {
  if (view.view === "switch_off") {
    app.off = view.job;
    renderOff(document.getElementById("view-live"), app, view.job);
    return;
  }
  if (view.no_tray && !noTrayDismissed) document.getElementById("notray").hidden = false;
  if (location.hash === `#${view.view}`) show();
  else location.hash = `#${view.view}`;
}

function show() {
  if (app.off != null) return;
  const name = currentTab();
  for (const v of tabs) {
    document.getElementById(`view-${v}`).hidden = v !== name;
    const link = document.getElementById(`nav-${v}`);
    if (v === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  render(name);
}

function render(name = currentTab()) {
  if (!app.state || app.off != null) return;
  if (name === "live") renderLive(document.getElementById("view-live"), app);
  if (name === "history") renderHistory(document.getElementById("view-history"), app);
  if (name === "settings") renderSettings(document.getElementById("view-settings"), app, reload);
}

async function reload() {
  const [state, texts] = await Promise.all([app.invoke("get_state"), app.invoke("page_texts")]);
  setTexts(texts);
  document.documentElement.lang = texts.lang;
  translate(document);
  window.lockwatchFailed = t("page-failed");
  app.state = state;
  app.statuses = new Map(app.state.jobs.map((j) => [j.job, j]));
  showConnection();
  render();
}

/** The head line: the Redis and user in effect, else why the settings cannot take effect. */
function showConnection() {
  document.getElementById("connection").textContent = app.state.redis ? t("page-connection", { redis: app.state.redis, user: app.state.user }) : app.state.settings_error ?? "";
}

window.addEventListener("hashchange", show);
// A job's status with what it means for the user (`LiveJob`); a refused flip's words stay as they were.
tauri.event.listen("status", (e) => {
  const entry = app.statuses.get(e.payload.job) ?? {};
  Object.assign(entry, e.payload);
  app.statuses.set(e.payload.job, entry);
  if (currentTab() === "live" && app.off == null) render("live");
});
// What took effect of the settings changed (they took effect after the page
// loaded, or anew): the head line and the form's hints follow, the form
// itself is left as she is filling it in.
tauri.event.listen("in_effect", (e) => {
  if (!app.state) return;
  Object.assign(app.state, e.payload);
  showConnection();
  showHints(document.getElementById("view-settings"), app);
});
tauri.event.listen("event", () => {
  if (currentTab() === "history" && app.off == null) render("history");
});
// A view handed over before the page has its words waits for them.
let loaded = false;
let waiting = null;
tauri.webviewWindow
  .getCurrentWebviewWindow()
  .listen("view", (e) => {
    if (loaded) open(e.payload);
    else waiting = e.payload;
  })
  .then(() => Promise.all([app.invoke("view"), reload()]))
  .then(([view]) => {
    loaded = true;
    open(waiting ?? view);
  });
