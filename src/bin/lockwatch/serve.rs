//! `lockwatch serve`: the robots file read, then the library's serve loop
//! until SIGTERM or SIGINT; or, with `--check`, a test message to each
//! robot and each robot's answer on stdout.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use lockwatch::serve::deliver::{Answer, Retry};
use lockwatch::serve::robots;

use super::args::Global;

pub(super) async fn run(
    g: &Global,
    robots_file: Option<&Path>,
    metrics: Option<SocketAddr>,
    check: bool,
    node: Option<String>,
    repeat_window: Duration,
) -> Result<u8> {
    let robots = match robots_file {
        Some(path) => {
            let robots = robots::load(path, |var| std::env::var(var).ok())?;
            if let Some(warning) = robots::exposed(path) {
                eprintln!("lockwatch: {warning}");
            }
            robots
        }
        None => Vec::new(),
    };
    let target = g.target()?;
    let node = node.unwrap_or_else(|| lockwatch::work::identity::default_names(target.endpoint()).0);
    if check {
        let answers = lockwatch::serve::check(&robots, &node).await;
        let mut out = std::io::stdout().lock();
        for (robot, answer) in robots.iter().zip(&answers) {
            let line = match answer {
                Answer::Sent { said } => format!("sent; it answered {said}"),
                Answer::Refused { sentence, .. } => format!("NOT sent: {sentence}"),
                Answer::TooFast { said } => format!("NOT sent: it says too fast ({said}); try again in a minute"),
                Answer::Failed { sentence } => format!("NOT sent: {sentence}"),
            };
            writeln!(out, "{}: {line}", robot.label)?;
        }
        return Ok(u8::from(answers.iter().any(|a| !matches!(a, Answer::Sent { .. }))));
    }
    let stop = lockwatch::work::worker::stop_signals("stopping")?;
    let options = lockwatch::serve::Options {
        node,
        robots,
        metrics,
        repeat_window,
        retry: Retry::default(),
        watch: g.watch_options(),
    };
    let jobs = g.jobs().iter().map(|name| g.job_named(name).keys()).collect();
    lockwatch::serve::run(target, jobs, options, stop).await?;
    Ok(0)
}
