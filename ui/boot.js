// Loaded before the modules: any failure of the page is shown, not hidden.
function showFailure(message) {
  const hint = document.getElementById("hint");
  if (!hint) return;
  hint.textContent = `The dashboard failed: ${message}`;
  hint.hidden = false;
}
window.addEventListener("error", (e) => showFailure(e.message || String(e.error)));
window.addEventListener("unhandledrejection", (e) => showFailure(String(e.reason?.message ?? e.reason)));
