//! What the page is handed, typed: its state at load ([`PageState`]), what
//! took effect of the settings as that changes ([`InEffect`], the
//! `in_effect` event), each job as its status changes ([`LiveJob`], the
//! `status` event), and a job's
//! history with each incident's outage ([`PageHistory`]). What a status
//! means for the user (her own flag, whether she is the last one on, the
//! silent standbys) and how long an outage lasted are the library's rules,
//! worked out here so the page decides nothing.

use lockwatch::history::{History, Item, Outage};
use lockwatch::{State, Status};
use serde::Serialize;

use crate::core::settings::{Overrides, Settings, SettingsForm};
use crate::core::state::{Inner, JobState};

/// Everything the page shows at first; updates arrive as `status`,
/// `event` and `in_effect` events. Made only from what the app knows
/// ([`PageState::of`]).
#[derive(Debug, Serialize)]
pub struct PageState {
    /// The settings as stored, and the form filled in from them.
    settings: Settings,
    form: SettingsForm,
    #[serde(flatten)]
    in_effect: InEffect,
    /// Which fields the environment overrides (the form says so).
    overridden: Overridden,
    jobs: Vec<PageJob>,
}

impl PageState {
    /// The page's state from what the app knows.
    pub fn of(inner: &Inner) -> PageState {
        let user = inner.user();
        PageState {
            settings: inner.settings.clone(),
            form: SettingsForm::of(&inner.settings),
            in_effect: InEffect::of(inner),
            overridden: Overridden::of(&inner.overrides),
            jobs: inner.jobs.iter().map(|j| PageJob::of(&j.known, &user)).collect(),
        }
    }
}

/// What took effect of the settings, as the page's head line and the
/// settings form's hints say it. The settings take effect a moment after
/// the process starts (the keyring is asked), maybe after the page loaded:
/// it is handed again as the `in_effect` event whenever it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InEffect {
    /// The supervisor and the Redis URL in effect ([`shown_url`]) while
    /// the settings take effect; else why they cannot.
    user: Option<String>,
    redis: Option<String>,
    settings_error: Option<String>,
    /// Where a password saved in the form goes; `None` while not known.
    password_goes: Option<PasswordGoes>,
}

impl InEffect {
    /// What took effect, from what the app knows.
    pub fn of(inner: &Inner) -> InEffect {
        InEffect {
            user: inner.effective.as_ref().map(|e| e.user.clone()),
            redis: inner.effective.as_ref().map(|e| shown_url(&e.shown_url)),
            settings_error: inner.settings_error.clone(),
            password_goes: PasswordGoes::of(inner),
        }
    }
}

/// The URL in effect as the page shows it: as the library redacts it
/// (the password hidden), but a user name without a password left out
/// rather than shown as `***@` (the library cannot tell such a name from a
/// password written without its colon): no credentials, no stars.
fn shown_url(redacted: &str) -> String {
    match tauri::Url::parse(redacted) {
        Ok(mut url) if url.password().is_none() && !url.username().is_empty() => {
            // Fails only for URLs without a host, which have no user name either.
            let _ = url.set_username("");
            url.to_string()
        }
        _ => redacted.to_owned(),
    }
}

/// Where a password saved in Settings goes, as this process found out when
/// the settings took effect: the keyring was asked for the password then,
/// and [`Effective::warning`](crate::core::settings::Effective) is set
/// exactly when it could not be (no keyring on this desktop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PasswordGoes {
    /// The OS keyring.
    Keyring,
    /// The memory of the app's processes, until it quits.
    Memory,
}

impl PasswordGoes {
    /// `None` while the settings do not take effect, or while the URL comes
    /// from the environment (the keyring is not asked then).
    fn of(inner: &Inner) -> Option<PasswordGoes> {
        let effective = inner.effective.as_ref().filter(|_| inner.overrides.redis_url.is_none())?;
        Some(if effective.warning.is_some() { PasswordGoes::Memory } else { PasswordGoes::Keyring })
    }
}

/// Which settings fields an environment variable overrides.
#[derive(Debug, Serialize)]
pub struct Overridden {
    pub redis_url: bool,
    pub sentinels: bool,
    pub sentinel_master: bool,
    pub cluster: bool,
    pub user: bool,
    pub job: bool,
}

impl Overridden {
    fn of(o: &Overrides) -> Overridden {
        Overridden {
            redis_url: o.redis_url.is_some(),
            sentinels: o.sentinels.is_some(),
            sentinel_master: o.sentinel_master.is_some(),
            cluster: o.cluster,
            user: o.user.is_some(),
            job: o.job.is_some(),
        }
    }
}

/// One job at load: as live, and why the user's last write of her own key
/// was refused.
#[derive(Debug, Serialize)]
pub struct PageJob {
    #[serde(flatten)]
    pub live: LiveJob,
    /// The refusal in the supervisor's words.
    pub flip_error: Option<String>,
    /// The library's sentence behind it.
    pub flip_detail: Option<String>,
}

impl PageJob {
    fn of(job: &JobState, user: &str) -> PageJob {
        let (said, detail) = job.flip_error.as_ref().map(|r| (r.said.clone(), r.detail.clone())).unzip();
        PageJob { live: LiveJob::of(job, user), flip_error: said, flip_detail: detail }
    }
}

/// A job's status and what it means for the user.
#[derive(Debug, Clone, Serialize)]
pub struct LiveJob {
    pub job: String,
    /// Latest status; `None` before the first read.
    pub status: Option<Status>,
    /// Her own flag as Redis has it; `None` while it cannot be known.
    pub own_flag: Option<bool>,
    /// Whether she is the only one with the job on (she is asked why
    /// before switching it off).
    pub last_one_on: bool,
    /// The servers other than the holder's that are silent.
    pub silent_standbys: Vec<String>,
    /// Where it goes in the list of jobs: the higher, the nearer the top
    /// ([`State::trouble_rank`], as the tray's menu orders them).
    pub rank: u8,
}

impl LiveJob {
    /// `job` as `user` sees it.
    pub fn of(job: &JobState, user: &str) -> LiveJob {
        let status = job.status.as_ref();
        LiveJob {
            job: job.job.clone(),
            status: job.status.clone(),
            own_flag: status.and_then(|s| s.own_flag(user)),
            last_one_on: status.is_some_and(|s| s.last_one_on(user)),
            silent_standbys: status
                .map(|s| s.silent_standbys().into_iter().map(str::to_owned).collect())
                .unwrap_or_default(),
            rank: status.map_or(State::Unknown, |s| s.state).trouble_rank(),
        }
    }
}

/// A job's history, each incident with its outage.
#[derive(Debug, Serialize)]
pub struct PageHistory {
    /// Redis time it was built at, ms.
    pub now_ms: u64,
    pub items: Vec<PageItem>,
}

/// One line of the history, as the library built it, and for an
/// incident, how long nobody ran the job.
#[derive(Debug, Serialize)]
pub struct PageItem {
    #[serde(flatten)]
    pub item: Item,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outage: Option<Outage>,
}

impl From<History> for PageHistory {
    fn from(history: History) -> PageHistory {
        let outages: Vec<Option<Outage>> = (0..history.items.len()).map(|i| history.outage(i)).collect();
        let items = history.items.into_iter().zip(outages).map(|(item, outage)| PageItem { item, outage }).collect();
        PageHistory { now_ms: history.now_ms, items }
    }
}

#[cfg(test)]
mod tests {
    use lockwatch::State;
    use lockwatch::history::What;
    use lockwatch::status::HolderRef;

    use super::*;
    use crate::core::error::AppError;
    use crate::core::fixtures::known;
    use crate::core::i18n::Lang;
    use crate::core::passwords::PasswordStore;
    use crate::core::refusal::Refusal;
    use crate::core::state::AppState;

    #[test]
    fn a_job_comes_with_what_the_library_makes_of_it_for_the_user() {
        let mut job = known(State::Running, Some("a"), &["alice"]);
        job.flip_error = Some(Refusal { said: "said".into(), detail: "detail".into() });
        let page = serde_json::to_value(PageJob::of(&job, "alice")).unwrap();
        assert_eq!(page["job"], "outbound");
        assert_eq!(page["status"]["state"], "running");
        assert_eq!((page["own_flag"].as_bool(), page["last_one_on"].as_bool()), (Some(true), Some(true)));
        assert_eq!((page["flip_error"].as_str(), page["flip_detail"].as_str()), (Some("said"), Some("detail")));
        let bob = LiveJob::of(&job, "bob");
        assert_eq!((bob.own_flag, bob.last_one_on), (Some(false), false));
        let connecting = LiveJob::of(&JobState { job: "outbound".into(), ..JobState::default() }, "alice");
        assert_eq!((connecting.own_flag, connecting.last_one_on, connecting.status.is_none()), (None, false, true));
    }

    /// A keyring with `password` for every account, or none at all.
    struct Keyring(Result<Option<&'static str>, ()>);

    impl PasswordStore for Keyring {
        fn get(&self, _: &str) -> Result<Option<String>, AppError> {
            self.0.map(|p| p.map(str::to_owned)).map_err(|()| AppError::Keyring("no Secret Service".into()))
        }
        fn set(&self, _: &str, _: &str) -> Result<(), AppError> {
            Ok(())
        }
    }

    /// The page's state with the team's URL, logging in as alice, and `keyring`.
    fn page_with(keyring: Keyring, overrides: Overrides) -> serde_json::Value {
        let settings = Settings {
            redis_url: "redis://db:6379".into(),
            user: "alice".into(),
            login_as_name: true,
            ..Settings::default()
        };
        let state = AppState::new(settings.clone(), overrides.clone(), Lang::En);
        state.lock().effective = Some(settings.effective(&overrides, &keyring).unwrap());
        serde_json::to_value(PageState::of(&state.lock())).unwrap()
    }

    #[test]
    fn the_page_shows_no_stars_where_there_are_no_credentials() {
        let page = page_with(Keyring(Ok(None)), Overrides::default());
        assert_eq!(page["redis"], "redis://db:6379", "a user name alone is no credential");
        assert_eq!(page["user"], "alice");
        let page = page_with(Keyring(Ok(Some("s3cret"))), Overrides::default());
        assert_eq!(page["redis"], "redis://alice:***@db:6379");
        let env = Overrides { redis_url: Some("redis://bob:pw@db:6379".into()), ..Overrides::default() };
        assert_eq!(page_with(Keyring(Ok(None)), env)["redis"], "redis://bob:***@db:6379");
        assert_eq!(shown_url("redis://***@db:6379/2"), "redis://db:6379/2");
        assert_eq!(shown_url("not a url ***@x"), "not a url ***@x");
    }

    #[test]
    fn the_page_knows_whether_a_password_goes_to_the_keyring() {
        assert_eq!(page_with(Keyring(Ok(None)), Overrides::default())["password_goes"], "keyring");
        assert_eq!(page_with(Keyring(Err(())), Overrides::default())["password_goes"], "memory");
        let env = Overrides { redis_url: Some("redis://db:6379".into()), ..Overrides::default() };
        assert!(page_with(Keyring(Err(())), env)["password_goes"].is_null(), "the keyring is not asked");
    }

    #[test]
    fn an_incident_of_the_history_comes_with_its_outage() {
        let holder = |node: &str| HolderRef { field: format!("{node}:1"), node: Some(node.into()) };
        let run = What::Run { node: Some("a".into()), field: None, fence: None, until_ms: Some(4_000), end: None };
        let failover = What::Failover {
            from: holder("a"),
            to: holder("b"),
            cause: lockwatch::history::End::Silent,
            reason: "x".into(),
            down_ms: None,
        };
        let history = History {
            now_ms: 10_000,
            items: vec![Item { at_ms: 0, what: run }, Item { at_ms: 9_000, what: failover }],
        };
        let page = serde_json::to_value(PageHistory::from(history)).unwrap();
        assert_eq!(page["now_ms"], 10_000);
        assert_eq!(page["items"][0]["kind"], "run");
        assert!(page["items"][0].get("outage").is_none(), "a run is no incident");
        assert_eq!(page["items"][1]["kind"], "failover");
        assert_eq!(page["items"][1]["outage"], serde_json::json!({ "down_ms": 5_000, "still_down": false }));
    }
}
