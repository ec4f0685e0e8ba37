// The history view: a strip of who ran the job (the last hour, day or
// week), a log of failovers, restarts and deaths, and who switched it on and
// off, as the library builds them from the job's Redis event stream, so
// every supervisor sees the same history. Its words are the app's (i18n.js).

import { duration, stamp } from "./format.js";
import { t } from "./i18n.js";
import { flips, incidents, segments } from "./timeline.js";

const HOUR = 3_600_000;
/** The strip's spans, with the message naming each. */
export const WINDOWS = [
  ["1h", HOUR, "page-window-1h"],
  ["24h", 24 * HOUR, "page-window-24h"],
  ["7d", 7 * 24 * HOUR, "page-window-7d"],
];
const PALETTE = ["#2563eb", "#1f9d55", "#b5179e", "#e07a00", "#0f766e", "#7c3aed"];
const WHAT = { failover: "page-what-failover", restart: "page-what-restart", death: "page-what-death" };
/** The library's end tokens, in the catalog's words (its English sentence otherwise). */
export const CAUSES = {
  disabled: "page-cause-disabled",
  shutdown: "page-cause-shutdown",
  lost: "page-cause-lost",
  expired: "page-cause-expired",
  "replica-unconfirmed": "page-cause-replica-unconfirmed",
  released: "page-cause-released",
  silent: "page-cause-silent",
};

export async function renderHistory(root, app) {
  const [key, span, label] = WINDOWS.find(([k]) => k === app.historyWindow) ?? WINDOWS[1];
  const parts = await Promise.all(
    [...app.statuses.keys()].map(async (job) => {
      const status = app.statuses.get(job)?.status;
      let now = status?.checked_at_ms ?? Date.now();
      let items = [];
      let error = "";
      try {
        const history = await app.invoke("history", { job, windowMs: span });
        items = history.items;
        now = history.now_ms;
      } catch (err) {
        error = String(err);
      }
      return { job, now, items, error };
    }),
  );
  const zoom = document.createElement("div");
  zoom.className = "zoom";
  zoom.setAttribute("role", "group");
  zoom.setAttribute("aria-label", t("page-zoom"));
  for (const [k, , id] of WINDOWS) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = t(id);
    b.dataset.window = k;
    b.setAttribute("aria-pressed", String(k === key));
    b.addEventListener("click", () => {
      app.historyWindow = k;
      renderHistory(root, app);
    });
    zoom.append(b);
  }
  root.replaceChildren(zoom, ...parts.map((p) => card(p, span, t(label))));
}

/** Who ran it, as a hatched-where-nobody strip with its legend. */
export function strip(items, from, now, window) {
  const segs = segments(items, from, now);
  const nodes = [...new Set(segs.map((s) => s.node).filter(Boolean))];
  const el = document.createElement("div");
  el.className = "strip";
  el.setAttribute("role", "img");
  const runs = segs.filter((s) => s.node).map((s) => t("page-strip-run", { server: s.node, from: stamp(s.start, now), to: stamp(s.end, now) }));
  el.setAttribute("aria-label", t("page-strip-label", { runs: runs.join("; ") || t("page-strip-nobody") }));
  for (const s of segs) {
    const span = document.createElement("span");
    span.style.flexGrow = String(s.end - s.start);
    if (s.node) span.style.background = PALETTE[nodes.indexOf(s.node) % PALETTE.length];
    else span.className = "idle";
    span.title = `${s.node ?? t("page-strip-nobody")}: ${stamp(s.start, now)} – ${stamp(s.end, now)} (${duration(s.end - s.start)})`;
    el.append(span);
  }
  const legend = document.createElement("div");
  legend.className = "legend";
  const until = document.createElement("span");
  until.className = "muted";
  until.textContent = t("page-strip-until", { window, time: stamp(now, now) });
  legend.append(until);
  for (const n of [...nodes, null]) {
    const item = document.createElement("span");
    const sw = document.createElement("i");
    if (n) sw.style.background = PALETTE[nodes.indexOf(n) % PALETTE.length];
    else sw.className = "idle";
    item.append(sw, n ?? t("page-legend-nobody"));
    legend.append(item);
  }
  return [el, legend];
}

function card({ job, now, items, error }, span, window) {
  const el = document.createElement("article");
  el.className = "card";
  const h = document.createElement("h2");
  h.textContent = t("page-history-title", { job, window });
  el.append(h);
  if (error) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = error;
    el.append(p);
    return el;
  }
  el.append(...strip(items, now - span, now, window));
  const heads = ["page-col-when", "page-col-what", "page-col-from", "page-col-to", "page-col-why", "page-col-down"].map((id) => t(id));
  el.append(...table(t("page-incidents"), "failovers", heads, incidentRows(items, now)));
  const flipHeads = ["page-col-when", "page-col-who", "page-col-switched", "page-col-host", "page-col-why"].map((id) => t(id));
  el.append(...table(t("page-flips"), "flips", flipHeads, flipRows(items, now)));
  return el;
}

/** The incidents table's rows (texts): when, what, from, to, why, down for (a duration). */
export function incidentRows(items, now) {
  return incidents(items).map((f) => [
    stamp(f.at, now),
    t(WHAT[f.kind]),
    f.from ?? "–",
    f.to ?? "–",
    CAUSES[f.cause] ? t(CAUSES[f.cause]) : f.why,
    f.downMs == null ? "–" : f.stillDown ? t("page-still-down", { duration: duration(f.downMs) }) : duration(f.downMs),
  ]);
}

/** The flips table's rows (texts): when (dated when not `now`'s day), who, on or off, from which host, why. */
export function flipRows(items, now) {
  return flips(items).map((f) => [stamp(f.at, now), f.user, t(f.on ? "page-switched-on" : "page-switched-off"), f.host ?? "–", f.reason ?? "–"]);
}

/** A heading and a table of `rows` (texts), or "None recorded.". */
function table(title, className, heads, rows) {
  const h3 = document.createElement("h3");
  h3.textContent = title;
  if (rows.length === 0) {
    const p = document.createElement("p");
    p.className = "muted";
    p.textContent = t("page-none-recorded");
    return [h3, p];
  }
  const tbl = document.createElement("table");
  tbl.className = className;
  const head = document.createElement("thead");
  const hr = document.createElement("tr");
  for (const text of heads) {
    const th = document.createElement("th");
    th.textContent = text;
    hr.append(th);
  }
  head.append(hr);
  const body = document.createElement("tbody");
  for (const row of rows.slice(0, 200)) {
    const tr = document.createElement("tr");
    for (const text of row) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    body.append(tr);
  }
  tbl.append(head, body);
  return [h3, tbl];
}
