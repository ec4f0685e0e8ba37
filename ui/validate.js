// The settings form and the app's verdict on it. No input rule lives here:
// the app checks every field by the library's rules (the same the command
// line uses) and answers field by field; this module only reads the form
// into what the app takes and places the answer on the form's fields.

/** The form's text inputs, top to bottom; the app's field names are the same. */
export const INPUTS = ["redis_url", "password", "tls_ca", "sentinels", "sentinel_master", "user", "jobs", "poll", "heartbeat_grace", "failover_window", "start_grace"];

/** What the app's settings commands take, from the inputs' values, the checked events, the chosen language and the sound choice. */
export function formOf(values, notify, language, sound) {
  const form = { notify: [...notify] };
  if (language != null) form.language = language;
  if (sound != null) form.sound = Boolean(sound);
  for (const name of INPUTS) form[name] = String(values[name] ?? "");
  return form;
}

/**
 * The app's verdict ([{field, message}]) placed on the form: the first
 * message of each field that has an input, and the rest (settings the form
 * does not show, such as a stored lock key) to say beside the buttons.
 */
export function placeVerdict(errors) {
  const byField = {};
  const elsewhere = [];
  for (const { field, message } of errors ?? []) {
    if (INPUTS.includes(field)) byField[field] ??= message;
    else elsewhere.push(message);
  }
  return { byField, elsewhere };
}
