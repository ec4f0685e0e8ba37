// The history view: a 24-hour strip of who ran the job, a log of
// failovers, restarts and deaths, and who switched it on and off, as the
// library builds them from the job's Redis event stream, so every
// supervisor sees the same history.

import { clock, duration } from "./format.js";
import { flips, incidents, segments } from "./timeline.js";

const DAY = 24 * 3_600_000;
const PALETTE = ["#2563eb", "#1f9d55", "#b5179e", "#e07a00", "#0f766e", "#7c3aed"];

export async function renderHistory(root, app) {
  const parts = await Promise.all(
    [...app.statuses.keys()].map(async (job) => {
      const status = app.statuses.get(job)?.status;
      let now = status?.checked_at_ms ?? Date.now();
      let items = [];
      let error = "";
      try {
        const history = await app.invoke("history", { job, windowMs: DAY });
        items = history.items;
        now = history.now_ms;
      } catch (err) {
        error = String(err);
      }
      return { job, now, items, error };
    }),
  );
  root.replaceChildren(...parts.map(card));
}

function card({ job, now, items, error }) {
  const el = document.createElement("article");
  el.className = "card";
  const h = document.createElement("h2");
  h.textContent = `${job}: last 24 hours`;
  el.append(h);
  if (error) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = error;
    el.append(p);
    return el;
  }
  const segs = segments(items, now - DAY, now);
  const nodes = [...new Set(segs.map((s) => s.node).filter(Boolean))];
  const strip = document.createElement("div");
  strip.className = "strip";
  strip.setAttribute("role", "img");
  strip.setAttribute("aria-label", `Timeline: ${segs.filter((s) => s.node).map((s) => `${s.node} from ${clock(s.start)} to ${clock(s.end)}`).join("; ") || "nobody ran it"}`);
  for (const s of segs) {
    const span = document.createElement("span");
    span.style.flexGrow = String(s.end - s.start);
    if (s.node) span.style.background = PALETTE[nodes.indexOf(s.node) % PALETTE.length];
    else span.className = "idle";
    span.title = `${s.node ?? "nobody"}: ${clock(s.start)} – ${clock(s.end)} (${duration(s.end - s.start)})`;
    strip.append(span);
  }
  const legend = document.createElement("div");
  legend.className = "legend";
  legend.innerHTML = `<span class="muted">24 h until ${clock(now)}</span>`;
  for (const n of [...nodes, null]) {
    const item = document.createElement("span");
    const sw = document.createElement("i");
    if (n) sw.style.background = PALETTE[nodes.indexOf(n) % PALETTE.length];
    else sw.className = "idle";
    item.append(sw, n ?? "nobody");
    legend.append(item);
  }
  el.append(strip, legend);
  el.append(...table("Failovers, restarts and deaths", "failovers", ["When", "What", "From", "To", "Why", "Down for"],
    incidents(items).map((f) => [clock(f.at), f.what, f.from ?? "–", f.to ?? "–", f.why, f.downMs != null ? duration(f.downMs) : "–"])));
  el.append(...table("Who switched it on and off", "flips", ["When", "Who", "Switched", "From", "Why"],
    flips(items).map((f) => [clock(f.at), f.user, f.on ? "on" : "off", f.host ?? "–", f.reason ?? "–"])));
  return el;
}

/** A heading and a table of `rows` (texts), or "None recorded.". */
function table(title, className, heads, rows) {
  const h3 = document.createElement("h3");
  h3.textContent = title;
  if (rows.length === 0) {
    const p = document.createElement("p");
    p.className = "muted";
    p.textContent = "None recorded.";
    return [h3, p];
  }
  const t = document.createElement("table");
  t.className = className;
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
  t.append(head, body);
  return [h3, t];
}
