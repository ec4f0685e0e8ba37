//! The settings: stored, layered, overridden, checked and read from the form.

use std::collections::HashMap;
use std::sync::Mutex;

use super::*;
use crate::core::error::{AppError, FieldError};
use crate::core::passwords::PasswordStore;
use lockwatch::supervise::flags;

struct Memory(Mutex<HashMap<String, String>>);
impl PasswordStore for Memory {
    fn get(&self, account: &str) -> Result<Option<String>, AppError> {
        Ok(self.0.lock().unwrap().get(account).cloned())
    }
    fn set(&self, account: &str, password: &str) -> Result<(), AppError> {
        self.0.lock().unwrap().insert(account.into(), password.into());
        Ok(())
    }
}
struct NoKeyring;
impl PasswordStore for NoKeyring {
    fn get(&self, _: &str) -> Result<Option<String>, AppError> {
        Err(AppError::Keyring("no Secret Service on the session bus".into()))
    }
    fn set(&self, _: &str, _: &str) -> Result<(), AppError> {
        Err(AppError::Keyring("no Secret Service on the session bus".into()))
    }
}

fn form() -> SettingsForm {
    SettingsForm::of(&Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() })
}

fn fields(bad: &[FieldError]) -> Vec<Field> {
    bad.iter().map(|e| e.field).collect()
}

#[test]
fn the_password_comes_from_the_keyring_and_is_never_shown() {
    let store = Memory(Mutex::new(HashMap::from([("alice@db:6379".to_owned(), "p@ss w".to_owned())])));
    let s = Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() };
    let e = s.effective(&Overrides::default(), &store).unwrap();
    assert_eq!(e.user, "alice");
    assert_eq!(e.shown_url, "redis://alice:***@db:6379");
}

#[test]
fn one_url_for_the_team_logs_each_supervisor_in_as_herself() {
    let store = Memory(Mutex::new(HashMap::from([("alice@db:6379".to_owned(), "pw".to_owned())])));
    let shared = Settings { redis_url: "redis://db:6379".into(), user: "alice".into(), ..Settings::default() };
    assert_eq!(shared.login_url(&Overrides::default()), "redis://db:6379", "off: a shared requirepass stays `default`");
    let s = Settings { login_as_name: true, ..shared };
    let e = s.effective(&Overrides::default(), &store).unwrap();
    assert_eq!((e.target.user(), e.shown_url.as_str()), (Some("alice"), "redis://alice:***@db:6379"));
    let named = Settings { redis_url: "redis://ops@db:6379".into(), ..s.clone() };
    assert_eq!(named.login_url(&Overrides::default()), "redis://ops@db:6379", "a user in the URL stays");
    let bob = Overrides { user: Some("bob".into()), ..Overrides::default() };
    assert_eq!(s.login_url(&bob), "redis://bob@db:6379");
    let nobody = Settings { user: String::new(), ..s };
    let login = flags::default_user(None).unwrap();
    assert_eq!(
        nobody.login_url(&Overrides::default()),
        format!("redis://{login}@db:6379"),
        "Your name empty: her login"
    );
    let shared_nobody = Settings { login_as_name: false, ..nobody };
    assert_eq!(shared_nobody.login_url(&Overrides::default()), "redis://db:6379", "off: still `default`");
    assert_eq!(
        lockwatch::address::with_user("unix:///run/redis.sock?db=1", Some("alice")),
        "unix:///run/redis.sock?db=1&user=alice"
    );
}

#[test]
fn the_environment_names_several_jobs_as_the_command_line_does() {
    let o = Overrides { job: Some("outbound, inbound,stock".into()), ..Overrides::default() };
    let e = Settings::default().effective(&o, &NoKeyring).unwrap();
    let jobs: Vec<&str> = e.jobs.iter().map(|j| j.0.job.as_str()).collect();
    assert_eq!(jobs, ["outbound", "inbound", "stock"]);
}

#[test]
fn environment_overrides_the_store_and_the_user_order_holds() {
    let s = Settings { redis_url: "redis://alice@db:6379".into(), user: "carol".into(), ..Settings::default() };
    let o = Overrides {
        redis_url: Some("redis://bob:pw@other:7000".into()),
        user: None,
        job: Some("inbound".into()),
        lock_key: Some("inLock".into()),
        ..Overrides::default()
    };
    let e = s.effective(&o, &NoKeyring).unwrap();
    assert_eq!(e.target.host(), "other:7000");
    assert_eq!(e.user, "carol", "the setting comes before the URL's ACL user");
    assert_eq!(e.jobs[0].0.job, "inbound");
    assert_eq!(e.jobs[0].0.lock, "inLock");
    assert!(e.warning.is_none(), "the keyring is not asked when the URL comes from the environment");
    let o = Overrides { user: Some("dave".into()), ..o };
    assert_eq!(s.effective(&o, &NoKeyring).unwrap().user, "dave");
    let plain = Settings { redis_url: "redis://alice@db:6379".into(), ..Settings::default() };
    assert_eq!(plain.effective(&Overrides::default(), &NoKeyring).unwrap().user, "alice");
}

#[test]
fn the_cluster_box_or_the_environment_makes_a_cluster_and_refuses_sentinels_beside_it() {
    let form = SettingsForm { cluster: true, ..SettingsForm::of(&Settings::default()) };
    let accepted = form.accept(&Settings::default()).unwrap().settings;
    assert!(accepted.cluster);
    assert!(accepted.effective(&Overrides::default(), &NoKeyring).unwrap().target.is_cluster());
    let both = SettingsForm { sentinels: "a:1".into(), sentinel_master: "m".into(), ..form };
    let bad = both.accept(&Settings::default()).unwrap_err();
    assert_eq!(bad[0].field, Field::Cluster, "{bad:?}");
    let o = Overrides { cluster: true, ..Overrides::default() };
    assert!(Settings::default().effective(&o, &NoKeyring).unwrap().target.is_cluster());
}

#[test]
fn sentinels_from_the_form_or_the_environment_take_effect_as_a_pair() {
    let form = SettingsForm {
        sentinels: " 10.0.0.1:26379,10.0.0.2:26379 ".into(),
        sentinel_master: "mymaster".into(),
        ..SettingsForm::of(&Settings::default())
    };
    let accepted = form.accept(&Settings::default()).unwrap().settings;
    assert_eq!(accepted.sentinels, "10.0.0.1:26379,10.0.0.2:26379");
    let e = accepted.effective(&Overrides::default(), &NoKeyring).unwrap();
    assert!(e.target.host().starts_with("mymaster (Sentinel 10.0.0.1:26379,10.0.0.2:26379)"), "{}", e.target.host());

    let half = SettingsForm { sentinel_master: String::new(), ..form.clone() };
    let bad = half.accept(&Settings::default()).unwrap_err();
    assert_eq!(bad[0].field, Field::SentinelMaster, "{bad:?}");
    let portless = SettingsForm { sentinels: "db".into(), ..form };
    let bad = portless.accept(&Settings::default()).unwrap_err();
    assert_eq!(bad[0].field, Field::Sentinels, "{bad:?}");
    assert!(bad[0].message.contains("HOST:PORT"), "{bad:?}");

    let o = Overrides { sentinels: Some("127.0.0.1:1".into()), ..Overrides::default() };
    let err = Settings::default().effective(&o, &NoKeyring).err().unwrap().to_string();
    assert!(err.starts_with("Sentinel primary name") && err.contains("go together"), "{err}");
    let o = Overrides { sentinel_master: Some("m".into()), ..o };
    assert!(Settings::default().effective(&o, &NoKeyring).unwrap().target.host().starts_with("m (Sentinel"));
}

#[test]
fn a_bad_override_is_refused_naming_its_variable() {
    let o = Overrides { job: Some("out bound".into()), ..Overrides::default() };
    let err = Settings::default().effective(&o, &NoKeyring).err().unwrap().to_string();
    assert_eq!(
        err,
        "Job \"out bound\": a job name is 1 to 100 characters without spaces or braces (from LOCKWATCH_JOB)"
    );
}

#[test]
fn the_settings_take_effect_as_the_spec_says() {
    let s = Settings {
        jobs: vec![JobSettings { name: "inbound".into(), lock_key: Some("inLock".into()), heartbeats: false }],
        poll_ms: 250,
        heartbeat_grace_ms: 7_000,
        ..Settings::default()
    };
    let e = s.effective(&Overrides::default(), &NoKeyring).unwrap();
    let (keys, options) = &e.jobs[0];
    assert_eq!((keys.lock.as_str(), options.poll), ("inLock", Duration::from_millis(250)));
    assert!(!options.engine.heartbeats);
    assert_eq!(options.engine.heartbeat_grace_ms, 7_000);
}

#[test]
fn no_keyring_is_said_once_not_fatal() {
    let e = Settings::default().effective(&Overrides::default(), &NoKeyring).unwrap();
    assert!(e.warning.unwrap().contains("no OS keyring"));
}

#[test]
fn a_password_typed_in_the_url_goes_to_the_keyring_not_the_file() {
    for (url, stored) in [
        ("redis://alice:pw@db:1", "redis://alice@db:1"),
        ("rediss://:pw@db", "rediss://db"),
        // The redis crate reads a socket's password from the query.
        ("unix:///run/redis.sock?pass=pw", "unix:///run/redis.sock"),
    ] {
        let accepted = SettingsForm { redis_url: url.into(), ..form() }.accept(&Settings::default()).unwrap();
        assert_eq!(accepted.settings.redis_url, stored);
        assert_eq!(accepted.password.as_deref(), Some("pw"));
    }
    let typed = SettingsForm { redis_url: "redis://alice:pw@db".into(), password: "field".into(), ..form() };
    assert_eq!(typed.accept(&Settings::default()).unwrap().password.as_deref(), Some("field"));
}

#[test]
fn the_form_reads_back_what_was_stored() {
    let stored = Settings {
        redis_url: "redis://alice@db:6379".into(),
        jobs: vec![
            JobSettings { name: "outbound".into(), lock_key: Some("outLock".into()), heartbeats: false },
            JobSettings::default(),
        ],
        heartbeat_grace_ms: 7_000,
        poll_ms: 1_500,
        mute_until_ms: Some(42),
        ..Settings::default()
    };
    let f = SettingsForm::of(&stored);
    assert_eq!((f.heartbeat_grace.as_str(), f.poll.as_str(), f.jobs.as_str()), ("7s", "1500ms", "outbound, outbound"));
    let again = SettingsForm { jobs: "outbound, inbound".into(), ..f }.accept(&stored).unwrap().settings;
    assert_eq!(again.jobs[0], stored.jobs[0], "a job's lock key and mode stay when the form keeps it");
    assert_eq!(again.jobs[1], JobSettings { name: "inbound".into(), ..JobSettings::default() });
    assert_eq!((again.heartbeat_grace_ms, again.poll_ms, again.mute_until_ms), (7_000, 1_500, Some(42)));
}

#[test]
fn validation_names_each_bad_field_once_in_the_forms_order() {
    let bad = SettingsForm {
        redis_url: "http://x".into(),
        user: "a b".into(),
        jobs: " , ".into(),
        poll: "fast".into(),
        start_grace: "2h".into(),
        heartbeat_grace: "10".into(),
        ..form()
    }
    .accept(&Settings::default())
    .unwrap_err();
    assert_eq!(
        fields(&bad),
        [Field::RedisUrl, Field::User, Field::Jobs, Field::Poll, Field::HeartbeatGrace, Field::StartGrace]
    );
    let said: Vec<&str> = bad.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(said[1], "Your name \"a b\": a name is 1 to 64 letters, digits, '.', '_', '@' or '-'");
    assert_eq!(said[2], "Job \" , \": no job is given; give one or more job names separated by commas");
    assert_eq!(said[3], "Poll interval \"fast\": not a duration; write a number and a unit: 500ms, 10s, 5m or 1h");
    assert_eq!(said[4], "Heartbeat grace \"10\": give a unit: 500ms, 10s, 5m or 1h");
    assert_eq!(said[5], "Start grace \"2h\": out of range; give 0s to 1h");
    assert!(form().accept(&Settings::default()).is_ok());
    assert!(Settings::default().validate().is_empty());
}

#[test]
fn the_job_rule_is_the_command_lines() {
    // Earlier the app refused only spaces and braces but said "use letters,
    // digits, '-', '_' or '.'", and let a tab through; now it is one rule.
    let tab = Settings {
        jobs: vec![JobSettings { name: "out\tbound".into(), ..JobSettings::default() }],
        ..Settings::default()
    };
    assert_eq!(fields(&tab.validate().into_iter().map(FieldError::from).collect::<Vec<_>>()), [Field::Jobs]);
    let unicode = SettingsForm { jobs: "出库".into(), ..form() };
    assert!(unicode.accept(&Settings::default()).is_ok());
}

#[test]
fn a_settings_file_of_an_earlier_version_still_loads() {
    // As version 0.1 wrote it, including an empty lock key for "none"
    // and a field this version no longer knows.
    let old = r#"{
        "redis_url": "redis://alice@db:6379", "tls_ca": null, "user": "alice",
        "jobs": [{"name": "outbound", "lock_key": "", "heartbeats": true}, {"name": "inbound", "lock_key": "inLock", "heartbeats": false}],
        "poll_ms": 1000, "heartbeat_grace_ms": 7000, "failover_window_ms": 5000, "start_grace_ms": 10000,
        "notify": ["died", "failover"], "mute_until_ms": null, "autostart": true, "theme": "dark"
    }"#;
    let s: Settings = serde_json::from_str(old).unwrap();
    assert!(s.validate().is_empty(), "{:?}", s.validate());
    let e = s.effective(&Overrides::default(), &NoKeyring).unwrap();
    assert_eq!(e.jobs[0].0.lock, "{outbound}:lock");
    assert_eq!(e.jobs[1].0.lock, "inLock");
    assert_eq!(e.jobs[0].1.engine.heartbeat_grace_ms, 7_000);
    assert_eq!(e.notify, [EventKind::Died, EventKind::Failover]);
    assert!(s.autostart);
    assert_eq!(s.language, Language::Auto, "a file from before the language setting speaks the desktop's");
    let sparse: Settings = serde_json::from_str(r#"{"user":"alice","jobs":[{"name":"outbound"}]}"#).unwrap();
    assert_eq!(sparse.user, "alice");
    assert!(sparse.jobs[0].heartbeats);
    assert_eq!(sparse.poll_ms, ms(watcher::Options::default().poll), "the library's interval");
}

#[test]
fn the_language_is_chosen_in_the_form_and_stored() {
    let chosen = SettingsForm { language: Language::ZhHans, ..form() }.accept(&Settings::default()).unwrap();
    assert_eq!(chosen.settings.language, Language::ZhHans);
    assert_eq!(SettingsForm::of(&chosen.settings).language, Language::ZhHans);
    let stored = serde_json::to_value(&chosen.settings).unwrap();
    assert_eq!(stored["language"], "zh-CN");
    let page: SettingsForm = serde_json::from_str(r#"{"redis_url":"redis://db","jobs":"outbound"}"#).unwrap();
    assert_eq!(page.language, Language::Auto, "a form without the field keeps the default");
}
