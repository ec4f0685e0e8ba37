// The history view: a 24-hour strip of who ran the job and a log of
// failovers and deaths, from the job's Redis event stream, so every
// supervisor sees the same history.

import { clock, duration } from "./format.js";
import { failoverLog, segments } from "./timeline.js";

const DAY = 24 * 3_600_000;
const PALETTE = ["#2563eb", "#1f9d55", "#b5179e", "#e07a00", "#0f766e", "#7c3aed"];

export async function renderHistory(root, app) {
  const parts = await Promise.all(
    [...app.statuses.keys()].map(async (job) => {
      const status = app.statuses.get(job)?.status;
      const now = status?.checked_at_ms ?? Date.now();
      let entries = [];
      let error = "";
      try {
        entries = await app.invoke("history", { job });
      } catch (err) {
        error = String(err);
      }
      return { job, now, entries, error };
    }),
  );
  root.replaceChildren(...parts.map(card));
}

function card({ job, now, entries, error }) {
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
  const segs = segments(entries, now - DAY, now);
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
  const log = failoverLog(entries);
  const h3 = document.createElement("h3");
  h3.textContent = "Failovers and deaths";
  el.append(h3);
  if (log.length === 0) {
    const p = document.createElement("p");
    p.className = "muted";
    p.textContent = "None recorded.";
    el.append(p);
    return el;
  }
  const table = document.createElement("table");
  table.className = "failovers";
  table.innerHTML = "<thead><tr><th>When</th><th>What</th><th>From</th><th>To</th><th>Down for</th></tr></thead>";
  const body = document.createElement("tbody");
  for (const f of log.slice(0, 200)) {
    const tr = document.createElement("tr");
    for (const text of [clock(f.at), f.kind === "failover" ? "failover" : `died (${f.reason})`, f.from ?? "–", f.to ?? "–", f.downMs != null ? duration(f.downMs) : "lease ran out"]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(body);
  el.append(table);
  return el;
}
