// The page's words. They come from the app's catalog (the `page_texts`
// command: one catalog, in Rust, for the tray, the notifications and this
// page); this module keeps them and fills in their `{name}` arguments.

let messages = {};
let lang = "en";

/** Takes the app's answer to `page_texts`: `{ lang, messages }`. */
export function setTexts(texts) {
  messages = texts?.messages ?? {};
  lang = texts?.lang ?? "en";
}

/** The language tag in effect ("en", "zh-CN"). */
export function language() {
  return lang;
}

/**
 * Message `id` with its `{name}` arguments filled in. A message the app
 * does not have shows as its id: a visible slip, never a blank.
 */
export function t(id, args = {}) {
  const template = messages[id];
  if (template == null) return id;
  return template.replace(/\{(\w+)\}/g, (whole, name) => (name in args ? String(args[name]) : whole));
}

/** Sets the text (or an attribute) of every element marked `data-t` (`data-t-title`, `data-t-aria-label`) under `root`. */
export function translate(root) {
  for (const el of root.querySelectorAll("[data-t]")) el.textContent = t(el.dataset.t);
  for (const [attr, key] of [["title", "tTitle"], ["aria-label", "tAriaLabel"]]) {
    for (const el of root.querySelectorAll(`[data-t-${attr}]`)) el.setAttribute(attr, t(el.dataset[key]));
  }
}
