//! `lockwatch history`: the job's shared history, oldest first, as JSON
//! lines or one line per item for people (UTC).

use std::io::{self, Write};
use std::time::Duration;

use anyhow::Result;

use super::args::Global;
use super::render::utc;
use lockwatch::duration::human_duration;
use lockwatch::history::{self, Item, What};

/// Prints the history of the last `since` (or all the stream holds) of
/// every job `--job` names, oldest first; with several jobs each item
/// names its job (`"job"` in JSON, the name in front for people).
pub async fn run(g: &Global, json: bool, since: Option<Duration>) -> Result<u8> {
    let target = g.target()?;
    let mut conn = target.manager().await?;
    let jobs = g.jobs();
    let mut items: Vec<(String, Item)> = Vec::new();
    for name in &jobs {
        let job = g.job_named(name);
        let history = history::load(&mut conn, &job.keys(), target.endpoint(), since, &job.engine()).await?;
        items.extend(history.items.into_iter().map(|item| (name.clone(), item)));
    }
    items.sort_by_key(|(_, item)| item.at_ms);
    let several = jobs.len() > 1;
    let mut out = io::stdout().lock();
    for (job, item) in &items {
        match (json, several) {
            (true, false) => writeln!(out, "{}", serde_json::to_string(item)?)?,
            (true, true) => {
                let mut value = serde_json::to_value(item)?;
                if let Some(fields) = value.as_object_mut() {
                    fields.insert("job".to_owned(), job.clone().into());
                }
                writeln!(out, "{value}")?;
            }
            (false, false) => writeln!(out, "{}", line(item))?,
            (false, true) => writeln!(out, "{job}: {}", line(item))?,
        }
    }
    out.flush()?;
    Ok(0)
}

/// One item for people.
pub fn line(item: &Item) -> String {
    let name = |node: &Option<String>| node.clone().unwrap_or_else(|| "(unnamed server)".to_owned());
    let fence = |f: &Option<i64>| f.map(|f| format!(" (fence {f})")).unwrap_or_default();
    let down = |d: &Option<u64>| d.map(|d| format!(", nobody ran it for {}", human_duration(d))).unwrap_or_default();
    let what = match &item.what {
        What::Run { node, fence: f, until_ms, end, .. } => {
            let until = match (until_ms, end) {
                (Some(u), Some(end)) => format!(" until {}: {}", utc(*u), end.sentence()),
                _ => ", still running".to_owned(),
            };
            format!("run      {}{}{until}", name(node), fence(f))
        }
        What::Failover { from, to, reason, down_ms, .. } => {
            format!("failover {from} → {to}: {reason}{}", down(down_ms))
        }
        What::Restart { to, reason, down_ms, .. } => format!("restart  {to}: {reason}{}", down(down_ms)),
        What::Death { node, fence: f, reason, .. } => format!("death    {}{}: {reason}", name(node), fence(f)),
        What::Stopped { node, fence: f } => format!("stopped  {}{}: nobody has the job enabled", name(node), fence(f)),
        What::Flag { user, on, host, reason } => {
            let from = host.as_ref().map(|h| format!(" from {h}")).unwrap_or_default();
            let why = reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default();
            format!("flag     {user} switched it {}{from}{why}", if *on { "on" } else { "off" })
        }
        What::Ack { user, until_ms, note } => {
            let why = if note.is_empty() { String::new() } else { format!(": {note}") };
            format!("ack      {user} is on it until {}{why}", utc(*until_ms))
        }
    };
    format!("{} {what}", utc(item.at_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockwatch::history::End;
    use lockwatch::status::HolderRef;

    #[test]
    fn lines_say_what_happened_in_utc() {
        let holder = |n: &str| HolderRef { field: format!("{n}:1"), node: Some(n.to_owned()) };
        let failover = Item {
            at_ms: 1_700_000_000_000,
            what: What::Failover {
                from: holder("srv-a"),
                to: holder("srv-b"),
                cause: End::Silent,
                reason: End::Silent.sentence().to_owned(),
                down_ms: None,
            },
        };
        assert_eq!(
            line(&failover),
            "2023-11-14 22:13:20 UTC failover srv-a → srv-b: the server stopped without a word (killed, crashed or cut off from Redis)"
        );
        let flag = Item {
            at_ms: 0,
            what: What::Flag {
                user: "alice".into(),
                on: false,
                host: Some("pc-7".into()),
                reason: Some("stock count".into()),
            },
        };
        assert_eq!(line(&flag), "1970-01-01 00:00:00 UTC flag     alice switched it off from pc-7: stock count");
    }
}
