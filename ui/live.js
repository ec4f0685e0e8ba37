// The live view: per job a big state with words and a glyph, the reason,
// the server, heartbeat, lease, fence and who keeps it enabled; the user's
// own toggle. Updated in place so nothing jumps.

import { clock, duration, holderName, leaseText, ownFlag, stateInfo } from "./format.js";

export function renderLive(root, app) {
  for (const [job, entry] of app.statuses) {
    let card = root.querySelector(`[data-job="${CSS.escape(job)}"]`);
    if (!card) {
      card = document.createElement("article");
      card.className = "card";
      card.dataset.job = job;
      card.innerHTML = `
        <div class="job-head">
          <h2 class="job-name"></h2>
          <div class="badge" role="status" aria-live="polite"><span class="glyph" aria-hidden="true"><span></span></span><span class="word"></span></div>
          <label class="toggle"><input type="checkbox" class="mine"> <span class="mine-label">Enabled for me</span></label>
        </div>
        <p class="reason"></p>
        <dl class="facts">
          <div><dt>Server</dt><dd class="server"></dd></div>
          <div><dt>Heartbeat</dt><dd class="beat"></dd></div>
          <div><dt>Lock lease left</dt><dd class="ttl"></dd></div>
          <div><dt>Fence token</dt><dd class="fence"></dd></div>
          <div><dt>Since</dt><dd class="since"></dd></div>
          <div><dt>Checked</dt><dd class="checked"></dd></div>
        </dl>
        <h3>Who has it enabled</h3>
        <table><thead><tr><th>User</th><th>Enabled</th><th>Since</th><th>From host</th></tr></thead><tbody class="flags"></tbody></table>
        <p class="error" aria-live="assertive"></p>`;
      card.querySelector(".job-name").textContent = job;
      card.querySelector(".mine").addEventListener("change", async (ev) => {
        const box = ev.target;
        box.disabled = true;
        card.querySelector(".error").textContent = "";
        try {
          await app.invoke("set_enabled", { job, on: box.checked });
        } catch (err) {
          card.querySelector(".error").textContent = `Not changed: ${err}`;
        } finally {
          box.disabled = false;
        }
      });
      root.append(card);
    }
    fill(card, entry, app.state.user);
  }
}

function fill(card, entry, user) {
  const s = entry.status;
  const state = s?.state ?? "unknown";
  const info = stateInfo(state);
  const badge = card.querySelector(".badge");
  badge.className = `badge state-${state}`;
  badge.title = info.hint;
  badge.querySelector(".glyph span").textContent = info.glyph;
  badge.querySelector(".word").textContent = info.word;
  card.querySelector(".reason").textContent = s?.reason ?? "Connecting…";
  const now = s?.checked_at_ms;
  card.querySelector(".server").textContent = holderName(s?.holder);
  card.querySelector(".beat").textContent = s?.holder?.heartbeat_age_ms != null ? `${duration(s.holder.heartbeat_age_ms)} ago` : "–";
  card.querySelector(".ttl").textContent = leaseText(s);
  card.querySelector(".fence").textContent = s?.lock?.fence ?? "–";
  card.querySelector(".since").textContent = s?.since_ms ? `${clock(s.since_ms)} (${duration(now - s.since_ms)})` : "–";
  card.querySelector(".checked").textContent = now ? clock(now) : "–";
  const mine = card.querySelector(".mine");
  const own = ownFlag(s, user);
  // A checkbox has no "not known": indeterminate, disabled, and said in words.
  if (!mine.disabled || own == null) mine.checked = own === true;
  mine.indeterminate = own == null;
  mine.disabled = own == null;
  card.querySelector(".mine-label").textContent = own == null ? "Enabled for me: not known" : "Enabled for me";
  if (entry.flip_error) card.querySelector(".error").textContent = `Not changed: ${entry.flip_error}`;
  const rows = (s?.flags ?? []).map((f) => {
    const tr = document.createElement("tr");
    const since = f.at_ms ? `${clock(f.at_ms)} (${duration(now - f.at_ms)} ago)` : "–";
    for (const text of [f.user + (f.user === user ? " (you)" : ""), f.on == null ? "unreadable" : f.on ? "yes" : "no", since, f.host ?? "–"]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  });
  card.querySelector(".flags").replaceChildren(...rows);
}
