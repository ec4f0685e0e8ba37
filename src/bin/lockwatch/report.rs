//! `lockwatch report`: each job's figures over the last stretch of its
//! history (uptime, runs, failovers, restarts, deaths, how long nobody ran
//! it, who switched it off and why), for people, as JSON lines, or as CSV
//! for a spreadsheet.

use std::io::{self, Write};
use std::time::Duration;

use anyhow::Result;

use super::args::Global;
use super::render::utc;
use lockwatch::clock::millis;
use lockwatch::duration::human_duration;
use lockwatch::history::{self, Report};

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

/// Prints the report of the last `since` (Redis time) of every job
/// `--job` names, in the order named; a job Redis holds nothing of is said
/// on stderr instead, and the exit code is then 1.
pub async fn run(g: &Global, since: Duration, format: Format) -> Result<u8> {
    let target = g.target()?;
    let mut conn = target.manager().await?;
    let (mut reports, mut absent) = (Vec::new(), false);
    for name in g.jobs() {
        let job = g.job_named(&name);
        let history = history::load(&mut conn, &job.keys(), target.endpoint(), None, &job.engine()).await?;
        if history.items.is_empty() {
            // Nothing at all: a name mistyped, or the wrong Redis, not a job that never ran.
            eprintln!(
                "lockwatch: nothing of the job {name} is on {} (no history, no flag): check the job's name and the Redis address",
                target.endpoint()
            );
            absent = true;
            continue;
        }
        let to = history.now_ms;
        reports.push((name, history.report(to.saturating_sub(millis(since)), to)));
    }
    let mut out = io::stdout().lock();
    if format == Format::Csv {
        writeln!(out, "{}", CSV_HEADER.join(","))?;
    }
    for (job, report) in &reports {
        match format {
            Format::Text => write!(out, "{}", text(job, report))?,
            Format::Json => {
                let mut value = serde_json::to_value(report)?;
                if let Some(fields) = value.as_object_mut() {
                    fields.insert("job".to_owned(), job.clone().into());
                }
                writeln!(out, "{value}")?;
            }
            Format::Csv => writeln!(out, "{}", csv_row(job, report).join(","))?,
        }
    }
    out.flush()?;
    Ok(u8::from(absent))
}

/// One job's report for people.
pub fn text(job: &str, r: &Report) -> String {
    let mut out = format!("{job}, {} to {} ({})\n", utc(r.from_ms), utc(r.to_ms), human_duration(r.to_ms - r.from_ms));
    let uptime = match (r.uptime, r.enabled_ms, r.not_running_ms) {
        (Some(share), Some(enabled), Some(down)) => format!(
            "{:.1} % of {} enabled (not running {})",
            share * 100.0,
            human_duration(enabled),
            human_duration(down)
        ),
        (None, Some(_), _) => "nobody had it enabled".to_owned(),
        _ => "not known: the history holds no flag".to_owned(),
    };
    out += &format!("  uptime        {uptime}\n");
    out += &format!("  running       {}\n", human_duration(r.running_ms));
    out += &format!(
        "  runs          {} ({} failover{}, {} restart{}, {} death{})\n",
        r.runs,
        r.failovers,
        plural(r.failovers),
        r.restarts,
        plural(r.restarts),
        r.deaths,
        plural(r.deaths)
    );
    if r.outage_total_ms > 0 {
        out += &format!(
            "  outages       {} in all, the longest {}\n",
            human_duration(r.outage_total_ms),
            human_duration(r.outage_longest_ms)
        );
    }
    for off in &r.switched_off {
        let from = off.host.as_ref().map(|h| format!(" from {h}")).unwrap_or_default();
        let why = off.reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default();
        out += &format!("  switched off  {} by {}{from}{why}\n", utc(off.at_ms), off.user);
    }
    out
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

const CSV_HEADER: [&str; 14] = [
    "job",
    "from",
    "to",
    "enabled_s",
    "running_s",
    "not_running_s",
    "uptime_percent",
    "runs",
    "failovers",
    "restarts",
    "deaths",
    "outage_total_s",
    "outage_longest_s",
    "switched_off",
];

/// One job's row, each cell quoted as a spreadsheet needs it.
fn csv_row(job: &str, r: &Report) -> Vec<String> {
    let secs = |ms: u64| format!("{:.1}", ms as f64 / 1000.0);
    let known = |ms: Option<u64>| ms.map(secs).unwrap_or_default();
    let offs: Vec<String> = r
        .switched_off
        .iter()
        .map(|o| {
            let why = o.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
            format!("{} {}{why}", utc(o.at_ms), o.user)
        })
        .collect();
    [
        job.to_owned(),
        utc(r.from_ms),
        utc(r.to_ms),
        known(r.enabled_ms),
        secs(r.running_ms),
        known(r.not_running_ms),
        r.uptime.map(|u| format!("{:.2}", u * 100.0)).unwrap_or_default(),
        r.runs.to_string(),
        r.failovers.to_string(),
        r.restarts.to_string(),
        r.deaths.to_string(),
        secs(r.outage_total_ms),
        secs(r.outage_longest_ms),
        offs.join("; "),
    ]
    .iter()
    .map(|cell| csv_cell(cell))
    .collect()
}

/// A CSV cell: quoted when it holds a comma, a quote or a line break; and a
/// text a spreadsheet would run as a formula (a supervisor's reason
/// starting with `=`, `+`, `-` or `@`) kept as text with a leading `'`.
fn csv_cell(cell: &str) -> String {
    let cell = if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{cell}") } else { cell.to_owned() };
    if cell.contains([',', '"', '\n', '\r']) { format!("\"{}\"", cell.replace('"', "\"\"")) } else { cell }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockwatch::history::SwitchedOff;

    fn report() -> Report {
        Report {
            from_ms: 0,
            to_ms: 86_400_000,
            enabled_ms: Some(28_800_000),
            running_ms: 28_140_000,
            not_running_ms: Some(660_000),
            uptime: Some(28_140_000.0 / 28_800_000.0),
            runs: 3,
            failovers: 1,
            restarts: 0,
            deaths: 1,
            outage_total_ms: 630_000,
            outage_longest_ms: 600_000,
            switched_off: vec![SwitchedOff {
                at_ms: 57_600_000,
                user: "alice".into(),
                host: Some("pc-7".into()),
                reason: Some("=HYPERLINK(\"x\"), stock count".into()),
            }],
        }
    }

    #[test]
    fn the_text_says_the_figures_for_people() {
        assert_eq!(
            text("outbound", &report()),
            "outbound, 1970-01-01 00:00:00 UTC to 1970-01-02 00:00:00 UTC (24 h 0 min)\n\
             \x20 uptime        97.7 % of 8 h 0 min enabled (not running 11 min 0 s)\n\
             \x20 running       7 h 49 min\n\
             \x20 runs          3 (1 failover, 0 restarts, 1 death)\n\
             \x20 outages       10 min 30 s in all, the longest 10 min 0 s\n\
             \x20 switched off  1970-01-01 16:00:00 UTC by alice from pc-7: =HYPERLINK(\"x\"), stock count\n"
        );
    }

    #[test]
    fn a_csv_row_quotes_what_needs_it_and_runs_no_formula() {
        let row = csv_row("outbound", &report());
        assert_eq!(row.len(), CSV_HEADER.len());
        assert_eq!(row[6], "97.71");
        assert_eq!(row[13], "\"1970-01-01 16:00:00 UTC alice (=HYPERLINK(\"\"x\"\"), stock count)\"");
        assert_eq!(csv_cell("=1+1"), "'=1+1");
        assert_eq!(csv_cell("-3, \"x\""), "\"'-3, \"\"x\"\"\"");
        assert_eq!(csv_cell("plain"), "plain");
    }
}
