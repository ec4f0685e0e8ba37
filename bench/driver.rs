//! The benchmark's in-process driver (`bench/run.sh` builds and runs it; no
//! test does). Two commands:
//!
//! - `watchers URL JOB N`: N idle watchers of one job in one process, as N
//!   desktops would each run one. Prints `ready <n> <unknown>` once every
//!   watcher has its first status (`unknown`: how many could not read the
//!   job), then idles until its stdin closes.
//! - `probe URL JOB BATCHES COUNT`: times COUNT one-round-trip probes per
//!   batch on one connection and prints one JSON line per batch with the
//!   p50 and p99 in µs.

use std::io::Read as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use lockwatch::connect::Target;
use lockwatch::watcher::{Options, Watcher};
use lockwatch::{Keys, State};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["watchers", url, job, n] => runtime.block_on(watchers(url, job, n.parse().context("N: a number")?)),
        ["probe", url, job, batches, count] => runtime.block_on(probes(
            url,
            job,
            batches.parse().context("BATCHES: a number")?,
            count.parse().context("COUNT: a number")?,
        )),
        _ => bail!("usage: lockwatch-bench watchers URL JOB N | probe URL JOB BATCHES COUNT"),
    }
}

async fn watchers(url: &str, job: &str, n: usize) -> Result<()> {
    let target = Target::new(url, None)?;
    let keys = Keys::new(job);
    let watchers: Vec<Watcher> =
        (0..n).map(|_| Watcher::spawn(target.clone(), keys.clone(), Options::default())).collect();
    let mut unknown = 0;
    for watcher in &watchers {
        let mut status = watcher.status();
        let first = tokio::time::timeout(Duration::from_secs(60), status.wait_for(Option::is_some))
            .await
            .context("a watcher had no status after 60 s")?
            .context("a watcher stopped")?
            .clone();
        if first.is_none_or(|s| s.state == State::Unknown) {
            unknown += 1;
        }
    }
    println!("ready {n} {unknown}");
    // Idle until the driver closes our stdin (or dies).
    tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await??;
    for watcher in watchers {
        watcher.stop().await;
    }
    Ok(())
}

async fn probes(url: &str, job: &str, batches: usize, count: usize) -> Result<()> {
    let target = Target::new(url, None)?;
    let keys = Keys::new(job);
    let mut conn = target.manager().await?;
    // Loads the script and warms the connection.
    lockwatch::probe::probe(&mut conn, &keys, target.endpoint()).await?;
    for _ in 0..batches {
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            let start = Instant::now();
            lockwatch::probe::probe(&mut conn, &keys, target.endpoint()).await?;
            times.push(start.elapsed());
        }
        times.sort();
        let at = |q: usize| times.get((times.len() * q / 100).min(times.len().saturating_sub(1))).copied();
        let us = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e6);
        println!("{}", serde_json::json!({ "p50_us": us(at(50)), "p99_us": us(at(99)), "count": count }));
    }
    Ok(())
}
