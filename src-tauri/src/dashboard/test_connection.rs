//! "Test connection" in Settings: what would take effect, tried once on
//! the form's first job, and said in one line.

use lockwatch::input::{self, ConnectionSpec};
use lockwatch::probe::probe;
use serde::Serialize;

use crate::core::i18n::Tr;
use crate::core::settings::{Overrides, SettingsForm};

/// What "Test connection" answers: one line, and the library's sentence
/// behind a failure for the curious.
#[derive(Debug, Serialize)]
pub struct Tested {
    pub line: String,
    pub detail: Option<String>,
}

/// Tries the form: the URL, password and Sentinels it gives, unless the
/// environment overrides them (as the watchers will use it), on its first job.
pub async fn test_form(form: SettingsForm, overrides: &Overrides, login_as_name: bool, tr: &Tr) -> Tested {
    let bad = |sentence: String| Tested { line: sentence, detail: None };
    let url = match &overrides.redis_url {
        Some(url) => url.clone(),
        None => {
            let (url, typed) = lockwatch::address::split_password(form.redis_url.trim());
            let name = overrides.user.as_deref().or(Some(form.user.trim()).filter(|u| !u.is_empty()));
            let name = name.filter(|_| login_as_name);
            let url = lockwatch::address::with_user(&url, name);
            match Some(form.password).filter(|p| !p.is_empty()).or(typed) {
                Some(p) => lockwatch::address::with_password(&url, &p),
                None => url,
            }
        }
    };
    let tls_ca = Some(form.tls_ca.trim()).filter(|c| !c.is_empty()).map(Into::into);
    // The environment's Sentinel inputs replace the form's as a pair, and its cluster switch adds to the box,
    // as in `Settings::effective`.
    let topology = match (&overrides.sentinels, &overrides.sentinel_master) {
        (None, None) => input::Topology::from_inputs(Some(&form.sentinels), Some(&form.sentinel_master)),
        (s, m) => input::Topology::from_inputs(s.as_deref(), m.as_deref()),
    }
    .or_cluster(form.cluster || overrides.cluster);
    let connection = ConnectionSpec { url, tls_ca, topology };
    if let Some(invalid) = connection.check().into_iter().next() {
        return bad(invalid.to_string());
    }
    let jobs = overrides.job.clone().unwrap_or(form.jobs);
    let job = match input::job_names(&jobs) {
        Ok(names) => names.into_iter().next().unwrap_or_else(|| lockwatch::keys::DEFAULT_JOB.to_owned()),
        Err(invalid) => return bad(invalid.to_string()),
    };
    let target = match connection.target() {
        Ok(t) => t,
        Err(e) => return bad(e.to_string()),
    };
    let user = target.user().unwrap_or_default().to_owned();
    let failed = |err: lockwatch::Error| {
        use lockwatch::error::RedisFailure;
        let why = match err.redis_failure() {
            Some(RedisFailure::Unreachable) => "unreachable",
            Some(RedisFailure::Auth) => "login",
            Some(RedisFailure::Permission) => "not-allowed",
            _ => "other",
        };
        let args = [("host", target.host().into()), ("why", why.into()), ("user", user.as_str().into())];
        Tested { line: tr.ta("test-failed", &args), detail: Some(err.to_string()) }
    };
    let mut conn = match target.manager().await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let keys = lockwatch::Keys::new(&job);
    match probe(&mut conn, &keys, target.endpoint()).await {
        Ok(snap) => {
            let grace = lockwatch::status::Config::default().heartbeat_grace_ms;
            let alive = snap.beats.iter().filter(|b| b.alive(snap.time_ms, grace)).count();
            Tested {
                line: tr.ta(
                    "test-connected",
                    &[
                        ("host", target.host().into()),
                        ("job", keys.job.as_str().into()),
                        ("users", snap.flags.len().into()),
                        ("workers", alive.into()),
                        ("silent", (snap.beats.len() - alive).into()),
                    ],
                ),
                detail: None,
            }
        }
        Err(e) => failed(e),
    }
}
