// The live view: per job a big state with words and a glyph, the reason,
// the server, heartbeat, lease, fence, who is on it ("I'm on it") and who
// keeps it enabled; the user's own toggle. Updated in place so nothing jumps. The words are the app's
// (i18n.js); the card is drawn anew when the language changes. Each job
// arrives as the app sends it (`LiveJob`): the status, her own flag and
// whether she is the last one on, decided by the library.

import { clock, duration, flagsLostText, holderName, leaseText, noStandbyText, reasonText, serversText, stamp, stateInfo } from "./format.js";
import { language, t } from "./i18n.js";
import { offForm } from "./off.js";

export function renderLive(root, app) {
  // Among several jobs, a list (the worst trouble first, as the tray's menu)
  // opens one job's card at a time; one job is its card alone.
  const many = app.statuses.size > 1;
  if (many) renderList(root, app);
  else root.querySelector(".job-list")?.remove();
  for (const [job, entry] of app.statuses) {
    let card = root.querySelector(`article.card[data-job="${CSS.escape(job)}"]`);
    if (card && card.dataset.lang !== language()) {
      card.remove();
      card = null;
    }
    if (!card) {
      card = document.createElement("article");
      card.className = "card";
      card.dataset.job = job;
      card.dataset.lang = language();
      card.innerHTML = `
        <div class="job-head">
          <h2 class="job-name"></h2>
          <div class="badge" role="status" aria-live="polite"><span class="glyph" aria-hidden="true"><span></span></span><span class="word"></span></div>
          <label class="toggle"><input type="checkbox" class="mine"> <span class="mine-label"></span></label>
        </div>
        <div class="off-slot"></div>
        <p class="reason"></p>
        <p class="standby" hidden></p>
        <dl class="facts">
          <div><dt>${t("page-server")}</dt><dd class="server"></dd></div>
          <div><dt>${t("page-heartbeat")}</dt><dd class="beat"></dd></div>
          <div><dt>${t("page-since")}</dt><dd class="since"></dd></div>
          <div><dt>${t("page-checked")}</dt><dd class="checked"></dd></div>
          <div><dt>${t("page-servers")}</dt><dd class="servers"></dd></div>
        </dl>
        <details class="advanced"><summary>${t("page-advanced")}</summary>
          <dl class="facts">
            <div class="wide"><dt>${t("page-details")}</dt><dd class="detail"></dd></div>
            <div><dt>${t("page-lease")}</dt><dd class="ttl"></dd></div>
            <div><dt>${t("page-fence")}</dt><dd class="fence"></dd></div>
          </dl>
        </details>
        <h3 class="on-it-head">${t("page-on-it")}</h3>
        <ul class="on-it"></ul>
        <h3>${t("page-who")}</h3>
        <table><thead><tr><th>${t("page-col-user")}</th><th>${t("page-col-enabled")}</th><th>${t("page-col-since")}</th><th>${t("page-col-host")}</th></tr></thead><tbody class="flags"></tbody></table>
        <p class="error" aria-live="assertive"></p>`;
      card.querySelector(".job-name").textContent = job;
      card.querySelector(".mine").addEventListener("change", async (ev) => {
        const box = ev.target;
        // The last one on is asked why (optional) before the job stops everywhere.
        if (!box.checked && app.statuses.get(job)?.last_one_on) {
          box.checked = true;
          box.disabled = true;
          const slot = card.querySelector(".off-slot");
          slot.replaceChildren(offForm(app, job, () => {
            slot.replaceChildren();
            box.disabled = false;
          }));
          slot.querySelector("input").focus();
          return;
        }
        box.disabled = true;
        card.querySelector(".error").textContent = "";
        try {
          await app.invoke("set_enabled", { job, on: box.checked });
        } catch (err) {
          card.querySelector(".error").textContent = t("page-not-changed", { error: err });
        } finally {
          box.disabled = false;
        }
      });
      root.append(card);
    }
    card.hidden = many && job !== app.selected;
    fill(card, entry, app.state.user);
  }
}

/** The jobs in the list's order: the app's rank first (trouble, the worst on top), then as configured. */
export function listOrder(statuses) {
  return [...statuses.values()].map((entry, i) => ({ entry, i })).sort((a, b) => (b.entry.rank ?? 0) - (a.entry.rank ?? 0) || a.i - b.i).map(({ entry }) => entry);
}

/** The list of jobs: state, name, server and what it means; a click (or Enter) opens the job's card below. */
function renderList(root, app) {
  const ordered = listOrder(app.statuses);
  if (!app.statuses.has(app.selected)) app.selected = ordered[0]?.job;
  let list = root.querySelector(".job-list");
  if (list && list.dataset.lang !== language()) {
    list.remove();
    list = null;
  }
  if (!list) {
    list = document.createElement("table");
    list.className = "job-list";
    list.dataset.lang = language();
    list.innerHTML = `<caption>${t("page-jobs")}</caption>
      <thead><tr><th>${t("page-col-state")}</th><th>${t("page-col-job")}</th><th>${t("page-server")}</th><th>${t("page-col-meaning")}</th></tr></thead><tbody></tbody>`;
    root.prepend(list);
  }
  const body = list.querySelector("tbody");
  const rows = ordered.map(({ job, status }) => {
    let row = [...body.rows].find((r) => r.dataset.job === job);
    if (!row) {
      row = document.createElement("tr");
      row.dataset.job = job;
      row.innerHTML = `<td class="state"><span class="glyph" aria-hidden="true"><span></span></span><span class="word"></span></td><td><button type="button" class="open"></button></td><td class="server"></td><td class="meaning"></td>`;
      row.querySelector(".open").textContent = job;
      row.addEventListener("click", () => {
        app.selected = job;
        renderLive(root, app);
      });
    }
    const state = status?.state ?? "unknown";
    const info = stateInfo(state);
    row.querySelector(".state").className = `state state-${state}`;
    row.querySelector(".state").title = info.hint;
    row.querySelector(".glyph span").textContent = info.glyph;
    row.querySelector(".word").textContent = info.word;
    row.querySelector(".server").textContent = holderName(status?.holder);
    row.querySelector(".meaning").textContent = reasonText(status);
    if (job === app.selected) row.setAttribute("aria-current", "true");
    else row.removeAttribute("aria-current");
    return row;
  });
  // Moved only when the order changed, so a focused row keeps its focus.
  if (rows.some((row, i) => body.rows[i] !== row)) body.replaceChildren(...rows);
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
  card.querySelector(".reason").textContent = reasonText(s);
  // The engineers' own sentence, under Advanced.
  card.querySelector(".detail").textContent = s?.reason ?? "–";
  const standby = card.querySelector(".standby");
  standby.textContent = [flagsLostText(entry), noStandbyText(entry)].filter(Boolean).join(" ");
  standby.hidden = !standby.textContent;
  card.querySelector(".servers").textContent = serversText(s);
  const now = s?.checked_at_ms;
  card.querySelector(".server").textContent = holderName(s?.holder);
  card.querySelector(".beat").textContent = beatText(s?.holder?.heartbeat_age_ms);
  card.querySelector(".ttl").textContent = leaseText(s);
  card.querySelector(".fence").textContent = s?.lock?.fence ?? "–";
  // A state seen for the first time just now (a job never enabled) has no length worth a "0 ms".
  const held = s?.since_ms ? now - s.since_ms : 0;
  card.querySelector(".since").textContent = !s?.since_ms ? "–" : held >= 1000 ? t("page-since-value", { time: stamp(s.since_ms, now), duration: duration(held) }) : stamp(s.since_ms, now);
  card.querySelector(".checked").textContent = now ? clock(now) : "–";
  const mine = card.querySelector(".mine");
  // The app's word on her own flag: true, false, or null while it cannot be known.
  const own = entry.own_flag ?? null;
  // A checkbox has no "not known": indeterminate, disabled, and said in words.
  if (!mine.disabled || own == null) mine.checked = own === true;
  mine.indeterminate = own == null;
  mine.disabled = own == null;
  card.querySelector(".mine-label").textContent = t(own == null ? "page-mine-unknown" : "page-mine");
  if (entry.flip_error) {
    // The supervisor's sentence; Redis's own words on hover.
    const error = card.querySelector(".error");
    error.textContent = t("page-not-changed", { error: entry.flip_error });
    error.title = entry.flip_detail ?? "";
  }
  const acks = s?.acks ?? [];
  card.querySelector(".on-it-head").hidden = acks.length === 0;
  const onIt = acks.map((a) => {
    const li = document.createElement("li");
    const who = a.user === user ? t("page-you", { user: a.user }) : a.user;
    const args = { user: who, since: clock(a.at_ms), until: clock(a.until_ms), note: a.note };
    li.textContent = t(a.note ? "page-on-it-note" : "page-on-it-line", args);
    return li;
  });
  card.querySelector(".on-it").replaceChildren(...onIt);
  const rows = (s?.flags ?? []).map((f) => {
    const tr = document.createElement("tr");
    const since = f.at_ms ? t("page-since-value", { time: clock(f.at_ms), duration: t("page-ago", { duration: duration(now - f.at_ms) }) }) : "–";
    const who = f.user === user ? t("page-you", { user: f.user }) : f.user;
    const on = t(f.on == null ? "page-unreadable" : f.on ? "page-yes" : "page-no");
    for (const text of [who, on, since, f.host ?? "–"]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  });
  card.querySelector(".flags").replaceChildren(...rows);
}

/** A heartbeat's age as a person reads it: "just now" within a second, else in whole seconds and up. */
export function beatText(ageMs) {
  if (ageMs == null) return "–";
  if (ageMs < 1000) return t("page-just-now");
  return t("page-ago", { duration: duration(Math.floor(ageMs / 1000) * 1000) });
}
