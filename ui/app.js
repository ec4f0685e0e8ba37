// The dashboard's entry: loads the app state once, then lives on the
// `status` and `event` events the app pushes; switches views by the URL hash.
// The page's words come with the state, from the app's catalog.

import { setTexts, t, translate } from "./i18n.js";
import { renderLive } from "./live.js";
import { renderHistory } from "./history.js";
import { renderSettings } from "./settings.js";
import { renderOff } from "./off.js";

const tauri = window.__TAURI__;
const views = ["live", "history", "settings"];
/** The small "switch off" window's view (`#off?job=NAME`): no tabs, no live updates. */
const OFF = "off";
export const app = { state: null, statuses: new Map(), invoke: tauri.core.invoke };

function currentView() {
  const [name, flag] = location.hash.slice(1).split("?");
  return { name: views.includes(name) ? name : "live", flag };
}

// The "no tray" banner is said once; dismissed, it stays away while the window is open.
let noTrayDismissed = false;
document.querySelector("#notray .dismiss").addEventListener("click", () => {
  noTrayDismissed = true;
  document.getElementById("notray").hidden = true;
});

function show() {
  const { name, flag } = currentView();
  if (location.hash.startsWith(`#${OFF}?`)) {
    const job = new URLSearchParams(location.hash.split("?")[1]).get("job") ?? "";
    renderOff(document.getElementById("view-live"), app, job);
    return;
  }
  for (const v of views) {
    document.getElementById(`view-${v}`).hidden = v !== name;
    const link = document.getElementById(`nav-${v}`);
    if (v === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (flag === "notray" && !noTrayDismissed) document.getElementById("notray").hidden = false;
  render(name);
}

function render(name = currentView().name) {
  if (!app.state || location.hash.startsWith(`#${OFF}?`)) return;
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
  document.getElementById("connection").textContent = app.state.redis ? t("page-connection", { redis: app.state.redis, user: app.state.user }) : app.state.settings_error ?? "";
  render();
}

window.addEventListener("hashchange", show);
tauri.event.listen("status", (e) => {
  const entry = app.statuses.get(e.payload.job) ?? { job: e.payload.job };
  entry.status = e.payload;
  app.statuses.set(e.payload.job, entry);
  if (currentView().name === "live" && !location.hash.startsWith(`#${OFF}?`)) render("live");
});
tauri.event.listen("event", () => {
  if (currentView().name === "history") render("history");
});
reload().then(show);
