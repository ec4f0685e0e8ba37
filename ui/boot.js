// Loaded before the modules: any failure of the page is shown, not hidden.
// In the app's words once they are loaded (app.js sets the template); the
// failure may be that they could not be, hence the English fallback.
function showFailure(message) {
  const hint = document.getElementById("hint");
  if (!hint) return;
  const template = window.lockwatchFailed ?? "The dashboard failed: {message}";
  hint.textContent = template.replace("{message}", message);
  hint.hidden = false;
}
window.addEventListener("error", (e) => showFailure(e.message || String(e.error)));
window.addEventListener("unhandledrejection", (e) => showFailure(String(e.reason?.message ?? e.reason)));
