// "Switch off": the last supervisor with a job on may say why before it
// stops everywhere. A small form, in the dashboard's card or in the small
// window the tray opens; never a blocking prompt. The reason goes with the
// flip into the job's shared history.

import { t } from "./i18n.js";

/**
 * A form asking for the reason; `done(true)` after the flag is off,
 * `done(false)` on cancel. A refusal is said in the form.
 */
export function offForm(app, job, done) {
  const form = document.createElement("form");
  form.className = "off";
  form.innerHTML = `
    <p class="off-last"></p>
    <label>${t("page-off-reason")} <input type="text" name="reason" maxlength="200" autocomplete="off" placeholder="${t("page-off-reason-hint")}"></label>
    <div class="buttons"><button type="submit" class="primary">${t("page-off-confirm")}</button><button type="button" class="cancel">${t("page-off-cancel")}</button></div>
    <p class="error" aria-live="assertive"></p>`;
  form.querySelector(".off-last").textContent = t("page-off-last", { job });
  form.querySelector(".cancel").addEventListener("click", () => done(false));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const error = form.querySelector(".error");
    error.textContent = "";
    const reason = form.elements.reason.value.trim();
    try {
      await app.invoke("set_enabled", { job, on: false, reason: reason || null });
      done(true);
    } catch (err) {
      error.textContent = t("page-not-changed", { error: err });
    }
  });
  return form;
}

/** The small window's view: the form alone; the window closes when it is answered. */
export function renderOff(root, app, job) {
  document.body.classList.add("dialog");
  const form = offForm(app, job, () => app.invoke("close_dialog"));
  root.replaceChildren(form);
  form.elements.reason.focus();
  // The window takes the size its words need, in any language and font.
  requestAnimationFrame(() => {
    const page = document.documentElement;
    app.invoke("fit_dialog", { width: page.scrollWidth, height: form.getBoundingClientRect().bottom + 16 }).catch(() => {});
  });
}
