//! The defaults an IT admin pushes to every desktop: one `settings.json` for
//! the machine (`/etc/lockwatch/settings.json` on Linux,
//! `%ProgramData%\lockwatch\settings.json` on Windows; `LOCKWATCH_SITE_SETTINGS`
//! names another), in the format of a user's own file. Layered from the
//! bottom: the built-in defaults, the machine's, the user's own (which holds
//! only what she changed), then the environment's overrides.
//!
//! Never a password: one found in the machine's URL is dropped and said, as
//! every password belongs in the supervisor's own keyring.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{STORE_KEY, Settings};
use crate::core::error::SystemError;

/// Where the machine's defaults are looked for.
pub fn path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("LOCKWATCH_SITE_SETTINGS") {
        return Some(PathBuf::from(path));
    }
    if cfg!(windows) {
        std::env::var_os("ProgramData").map(|dir| PathBuf::from(dir).join("lockwatch").join("settings.json"))
    } else {
        Some(PathBuf::from("/etc/lockwatch/settings.json"))
    }
}

/// The machine's defaults (none when there is no file), and a sentence when
/// the file could not be used or held a password.
pub fn read() -> (Map<String, Value>, Option<String>) {
    let Some(path) = path() else { return (Map::new(), None) };
    let (defaults, problem) = match std::fs::read(&path) {
        Ok(bytes) => parse(&bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return (Map::new(), None),
        Err(err) => (Map::new(), Some(format!("cannot be read ({err}); the built-in defaults are used"))),
    };
    let problem = problem.map(|p| format!("{}: {p}", path.display()));
    if let Some(p) = &problem {
        tracing::warn!("{p}");
    }
    (defaults, problem)
}

/// The defaults a file's text holds, and what was wrong with it.
fn parse(bytes: &[u8]) -> (Map<String, Value>, Option<String>) {
    let file: Value = match serde_json::from_slice(bytes) {
        Ok(file) => file,
        Err(err) => return (Map::new(), Some(format!("not JSON ({err}); the built-in defaults are used"))),
    };
    let Some(Value::Object(mut defaults)) = file.get(STORE_KEY).cloned() else {
        let said =
            format!("holds no \"{STORE_KEY}\" object, as a user's settings.json does; the built-in defaults are used");
        return (Map::new(), Some(said));
    };
    if let Err(err) = serde_json::from_value::<Settings>(Value::Object(defaults.clone())) {
        return (Map::new(), Some(format!("{err}; the built-in defaults are used")));
    }
    let mut problem = None;
    if let Some(Value::String(url)) = defaults.get("redis_url") {
        let (bare, password) = lockwatch::address::split_password(url);
        if password.is_some() {
            defaults.insert("redis_url".into(), Value::String(bare));
            problem = Some(
                "redis_url holds a password, which is not used: each supervisor's password goes in her own OS keyring (Settings → Password)"
                    .to_owned(),
            );
        }
    }
    (defaults, problem)
}

/// The settings in effect: `user`'s fields over `site`'s over the built-in
/// defaults. Fields of the wrong type in `user` are an error.
pub fn layered(site: &Map<String, Value>, user: Option<&Value>) -> Result<Settings, SystemError> {
    let mut merged = site.clone();
    match user {
        Some(Value::Object(own)) => merged.extend(own.clone()),
        Some(other) => return Err(SystemError::not_an_object("\"settings\"", other)),
        None => {}
    }
    Ok(serde_json::from_value(Value::Object(merged))?)
}

/// What a user's file keeps of `settings`: the fields that differ from the
/// defaults beneath them, so a default the admin changes later reaches her.
pub fn own(settings: &Settings, site: &Map<String, Value>) -> Result<Value, SystemError> {
    let beneath = serde_json::to_value(layered(site, None)?)?;
    let all = match serde_json::to_value(settings)? {
        Value::Object(all) => all,
        other => return Err(SystemError::not_an_object("the settings", &other)),
    };
    let changed = all.into_iter().filter(|(field, value)| beneath.get(field) != Some(value)).collect();
    Ok(Value::Object(changed))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::core::i18n::Language;

    fn site(text: &str) -> Map<String, Value> {
        let (defaults, problem) = parse(text.as_bytes());
        assert_eq!(problem, None, "{text}");
        defaults
    }

    #[test]
    fn the_user_s_own_fields_win_over_the_machine_s_and_those_over_the_built_in_ones() {
        let machine =
            site(r#"{"settings": {"redis_url": "redis://redis.wh:6379", "poll_ms": 5000, "language": "zh-CN"}}"#);
        let mine = json!({ "poll_ms": 2000 });
        let s = layered(&machine, Some(&mine)).unwrap();
        assert_eq!((s.redis_url.as_str(), s.poll_ms, s.language), ("redis://redis.wh:6379", 2000, Language::ZhHans));
        assert_eq!(s.sound, Settings::default().sound, "built in beneath both");
        assert_eq!(layered(&Map::new(), None).unwrap(), Settings::default());
        assert!(layered(&machine, Some(&json!({ "poll_ms": "fast" }))).is_err());
    }

    #[test]
    fn a_user_s_file_keeps_only_what_she_changed_so_the_admin_s_later_defaults_reach_her() {
        let machine = site(r#"{"settings": {"redis_url": "redis://redis.wh:6379"}}"#);
        let mut s = layered(&machine, None).unwrap();
        s.user = "alice".into();
        let kept = own(&s, &machine).unwrap();
        assert_eq!(kept, json!({ "user": "alice" }));
        let moved = site(r#"{"settings": {"redis_url": "redis://redis2.wh:6379"}}"#);
        let s = layered(&moved, Some(&kept)).unwrap();
        assert_eq!((s.redis_url.as_str(), s.user.as_str()), ("redis://redis2.wh:6379", "alice"));
        // Set back to what is beneath: nothing of hers is left to keep.
        assert_eq!(own(&layered(&moved, None).unwrap(), &moved).unwrap(), json!({}));
    }

    #[test]
    fn the_example_the_desktop_package_ships_is_used_as_it_is() {
        let example = include_str!("../../../../packaging/desktop/settings.example.json");
        let s = layered(&site(example), None).unwrap();
        assert_eq!((s.redis_url.as_str(), s.language), ("rediss://redis.warehouse.example:6380", Language::ZhHans));
        assert!(s.login_as_name);
    }

    #[test]
    fn a_password_in_the_machine_s_url_is_dropped_and_said() {
        let (defaults, problem) = parse(br#"{"settings": {"redis_url": "redis://alice:s3cret@redis.wh:6379/0"}}"#);
        assert_eq!(defaults["redis_url"], "redis://alice@redis.wh:6379/0");
        let said = problem.unwrap();
        assert!(said.contains("password") && !said.contains("s3cret"), "{said}");
    }

    #[test]
    fn a_file_that_is_no_settings_is_said_in_one_sentence_and_the_built_in_defaults_used() {
        for text in ["not json", "[]", r#"{"redis_url": "redis://x"}"#, r#"{"settings": {"poll_ms": "fast"}}"#] {
            let (defaults, problem) = parse(text.as_bytes());
            assert!(defaults.is_empty(), "{text}");
            let said = problem.unwrap_or_default();
            assert!(said.ends_with("the built-in defaults are used") && !said.contains('\n'), "{text}: {said}");
        }
    }
}
