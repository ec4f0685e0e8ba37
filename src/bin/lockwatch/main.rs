//! The `lockwatch` command: arguments, then one function per command, each
//! calling the library. Errors end here, printed once as a sentence on stderr.
//!
//! Exit codes, Nagios style for `status`: 0 running or stopped, 1 stale or
//! pending, 2 down or conflict, 3 unknown. Every other command: 0 on success,
//! 1 on failure. Every command: 3 for a command line it cannot use (an
//! unknown option or command, a missing argument, a bad value), because a
//! typo in a monitoring system's check is UNKNOWN, never CRITICAL; 0 after
//! `--help` or `--version`, which print to stdout.

mod args;
#[cfg(unix)]
mod demo;
mod history;
mod log;
mod render;
mod report;
mod serve;
mod usage;

/// `lockwatch demo` off Unix (Windows): the demo runs its workers' job as a
/// `sh` loop and stops them with SIGTERM, so here it only says so.
#[cfg(not(unix))]
mod demo {
    /// Says in one sentence why there is no demo here and what to do instead.
    pub(super) async fn run(_: &super::Global) -> anyhow::Result<u8> {
        anyhow::bail!(
            "the demo runs on Linux and other Unix systems only: it starts a local redis-server and two workers running a shell loop; on Windows, point the tray app or `lockwatch --redis redis://HOST:6379 status` at your own Redis instead"
        )
    }
}

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use serde_json::json;

use lockwatch::input;
use lockwatch::probe::probe;
use lockwatch::status::{Engine, State};
use lockwatch::supervise::acl::Server;
use lockwatch::supervise::flags;
use lockwatch::watcher::Watcher;
use lockwatch::work::lease::Lease;

use args::{Cli, Command, Global};

fn main() -> ExitCode {
    // Started by a worker as its job's reaper, this never returns.
    lockwatch::work::reaper::enter_if_asked();
    let cli = match usage::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    // A worker and a serve process say what they do (take, let go, post); other commands only what goes wrong.
    let level = if matches!(cli.command, Command::Worker { .. } | Command::Serve { check: false, .. }) {
        "warn,lockwatch=info"
    } else {
        "warn"
    };
    let filter = || tracing_subscriber::EnvFilter::try_from_env("LOCKWATCH_LOG").unwrap_or_else(|_| level.into());
    let ansi = io::IsTerminal::is_terminal(&io::stderr());
    // Log lines go out from a thread of their own: a stderr nobody reads
    // must never hold up the runtime that renews the lease and kills the job.
    let flush = match log::Stderr::spawn() {
        Some((stderr, flush)) => {
            tracing_subscriber::fmt().with_env_filter(filter()).with_writer(stderr).with_ansi(ansi).init();
            Some(flush)
        }
        None => {
            tracing_subscriber::fmt().with_env_filter(filter()).with_writer(io::stderr).with_ansi(ansi).init();
            None
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("lockwatch: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let failure_code = match cli.command {
        Command::Status { .. } => State::Unknown.exit_code(),
        _ => 1,
    };
    let outcome = runtime.block_on(run(cli));
    drop(flush);
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("lockwatch: {err:#}");
            ExitCode::from(failure_code)
        }
    }
}

async fn run(mut cli: Cli) -> Result<u8> {
    if cli.global.jobs() == [lockwatch::registry::EVERY_JOB] && matches!(cli.command, Command::Acl { .. }) {
        // The registry is written by every worker's user: rights are not granted from it.
        anyhow::bail!("acl --job '*': name the jobs whose rules to print, as --job outbound,inbound");
    }
    if cli.global.jobs() == [lockwatch::registry::EVERY_JOB] && reads_several(&cli.command) {
        cli.global.job = every_job(&cli.global).await?.join(",");
    }
    let g = &cli.global;
    let jobs = g.jobs();
    if jobs == [lockwatch::registry::EVERY_JOB] {
        anyhow::bail!(
            "--job '*' names every job this Redis knows; only status, watch, history, report, serve and a supervisor's acl take several: give this command one job"
        );
    }
    if jobs.len() > 1 && !reads_several(&cli.command) {
        anyhow::bail!(
            "--job names {} jobs; only status, watch, history, report, serve and a supervisor's acl take several: give this command one job",
            jobs.len()
        );
    }
    if jobs.len() > 1 && g.lock_key.is_some() {
        anyhow::bail!("--lock-key names one job's lock, and --job names {}: give one job with it", jobs.len());
    }
    match &cli.command {
        Command::Status { json } => status_once(g, *json).await,
        Command::Watch { json } => watch(g, *json).await,
        Command::Enable { user, reason } => flip(g, user.as_deref(), true, reason.as_deref()).await,
        Command::Disable { user, reason } => flip(g, user.as_deref(), false, reason.as_deref()).await,
        Command::Ack { user, lasts, note } => ack(g, user.as_deref(), *lasts, note.as_deref()).await,
        Command::Unack { user } => unack(g, user.as_deref()).await,
        Command::History { json, since } => history::run(g, *json, *since).await,
        Command::Report { since, json, csv } => {
            let format = match (json, csv) {
                (true, _) => report::Format::Json,
                (_, true) => report::Format::Csv,
                _ => report::Format::Text,
            };
            report::run(g, *since, format).await
        }
        Command::Worker { node, lease, every, stall_after, stop_grace, command } => {
            // Before anything else: a stop request from now on is a clean stop.
            let stop =
                lockwatch::work::worker::stop_signals("stopping the job, if it runs here, and releasing the lock")?;
            let target = g.target()?;
            // A name given is this server's alone; the default gives way on a cloned host.
            let (node, fallback_node) = match node {
                Some(node) => (node.clone(), None),
                None => {
                    let (host, fallback) = lockwatch::work::identity::default_names(target.endpoint());
                    (host, Some(fallback))
                }
            };
            let opts = lockwatch::work::worker::Options {
                node,
                fallback_node,
                lease: Lease::new(*lease),
                every: *every,
                stall_after: *stall_after,
                tick: Lease::new(*lease).look_every(),
                stop_grace: *stop_grace,
                work: lockwatch::work::job::Work::Command(command.clone()),
                connection: Some(g.connection()),
            };
            lockwatch::work::worker::run(target, g.keys(), opts, stop).await?;
            Ok(0)
        }
        Command::Serve { robots, metrics, check, node, repeat_window } => {
            serve::run(g, robots.as_deref(), *metrics, *check, node.clone(), *repeat_window).await
        }
        Command::WorkerGone { node, lease } => {
            let target = g.target()?;
            let nodes = match node {
                Some(node) => vec![node.clone()],
                None => {
                    let (host, fallback) = lockwatch::work::identity::default_names(target.endpoint());
                    vec![host, fallback]
                }
            };
            let mut conn = target.manager().await?;
            let keys = g.keys();
            use lockwatch::work::orphan::Gone;
            let released = lockwatch::work::orphan::after_unit_stopped(&mut conn, &keys, &nodes, Lease::new(*lease));
            match released.await? {
                Gone::Released { node, fence } => eprintln!(
                    "lockwatch: the worker of node {node} died holding the lock (fence {fence}); nothing of its unit runs any more: released it"
                ),
                Gone::Kept(why) => eprintln!("lockwatch: worker-gone released nothing: {why}"),
                Gone::Nothing => {}
            }
            Ok(0)
        }
        Command::Demo => demo::run(g).await,
        Command::Acl { user, worker, redis_version } => {
            let server = match redis_version {
                Some(version) => Server::from_version(version).ok_or_else(|| {
                    anyhow!("--redis-version {version}: lockwatch needs Redis 6.2 or later (or Valkey); give a version such as 6.2 or 7.2")
                })?,
                None => server_of(g).await?,
            };
            let database = g.target()?.database();
            let mut out = io::stdout().lock();
            if let Some(worker) = worker {
                // Checked by its parser, as --user is; `--worker --user U` as well as `--worker U`.
                let worker = match (worker.as_deref(), user.as_deref()) {
                    (Some(w), Some(u)) if w != u => {
                        anyhow::bail!(
                            "acl --worker {w} --user {u}: name the workers' Redis user once, as --worker USER or --worker --user USER"
                        )
                    }
                    (Some(w), _) | (None, Some(w)) => w,
                    (None, None) => anyhow::bail!(
                        "acl --worker: name the workers' Redis user, as --worker USER or --worker --user USER"
                    ),
                };
                for line in lockwatch::supervise::acl::worker_rules(&g.keys(), worker, server, database) {
                    writeln!(out, "{line}")?;
                }
                eprintln!(
                    "lockwatch: pipe this line into redis-cli as an admin, set the workers' password with: ACL SETUSER {worker} ><password>, and give the workers a LOCKWATCH_REDIS_URL with that user"
                );
                return Ok(0);
            }
            let user = user.as_deref().ok_or(lockwatch::Error::NoUser)?;
            let jobs: Vec<_> = jobs.iter().map(|name| g.job_named(name).keys()).collect();
            for line in lockwatch::supervise::acl::rules(&jobs, user, server, database) {
                writeln!(out, "{line}")?;
            }
            writeln!(out, "{}", lockwatch::supervise::acl::SERVER_LIMITS)?;
            if let Some(open) = server.left_open(user) {
                eprintln!("lockwatch: {open}.");
            }
            eprintln!(
                "lockwatch: pipe these lines into redis-cli as an admin, then set {user}'s password with: ACL SETUSER {user} ><password>; the last line, once per server, closes any ordinary connection that leaves more than 64 MB of replies unread (no ACL rule can bound that); leave it out if another application on this Redis reads more at once"
            );
            eprintln!(
                "lockwatch: these rules bound {user} only once Redis's default user is closed (ACL SETUSER default off, after making an admin user): while it is open, anyone who reaches Redis has every right"
            );
            Ok(0)
        }
    }
}

/// The kind of server `lockwatch acl` writes rules for: the one `--redis`
/// names when it answers, else Redis 7 (said on stderr). On Redis 7 it also
/// loads lockwatch's read function there, which the rules let supervisors
/// and workers call, replacing any library of its name.
async fn server_of(g: &Global) -> Result<Server> {
    let target = g.target()?;
    let asked = async {
        let mut conn = target.manager().await.map_err(|e| e.to_string())?;
        let info: String = redis::cmd("INFO").arg("server").query_async(&mut conn).await.map_err(|e| e.to_string())?;
        if let Err(err) = lockwatch::probe::load_function(&mut conn).await
            && !err.to_string().contains("unknown command")
        {
            eprintln!(
                "lockwatch: could not load lockwatch's read function on {} ({err}); run this again as an admin of that Redis",
                target.endpoint()
            );
        }
        Ok::<_, String>(info)
    };
    let why = match tokio::time::timeout(Duration::from_secs(3), asked).await {
        Ok(Ok(info)) => {
            let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_owned();
            return Server::from_version(&version).ok_or_else(|| {
                anyhow!(
                    "the Redis at {} is version {version}; lockwatch needs Redis 6.2 or later (or Valkey)",
                    target.endpoint()
                )
            });
        }
        Ok(Err(err)) => err,
        Err(_) => "it did not answer within 3 s".to_owned(),
    };
    eprintln!(
        "lockwatch: could not ask {} for its version ({why}); these rules are for Redis 7 and later (Valkey too): for Redis 6.2 add --redis-version 6.2",
        target.endpoint()
    );
    Ok(Server::Modern)
}

/// Each job `--job` names, read on one connection: one block each (one
/// JSON object, or an array of them for several), and the worst exit code
/// of all.
async fn status_once(g: &Global, json: bool) -> Result<u8> {
    let target = g.target()?;
    let mut conn = target.manager().await;
    let mut eviction = None;
    let mut statuses = Vec::new();
    for name in g.jobs() {
        let job = g.job_named(&name);
        let keys = job.keys();
        let mut engine = Engine::new(&keys.job, &keys.lock, job.engine());
        let read = match conn.as_mut() {
            Ok(conn) => {
                let read = probe(conn, &keys, target.endpoint()).await;
                // Asked beside the first read; a user refused INFO is told nothing.
                if read.is_ok() && statuses.is_empty() {
                    eviction = lockwatch::eviction::check(conn, target.endpoint()).await.ok().flatten();
                }
                read.map_err(|e| e.to_string())
            }
            // The one sentence of why, for each job (the error is not Clone).
            Err(err) => Err(err.to_string()),
        };
        let mut step = match read {
            Ok(snapshot) => engine.handle_read(&snapshot),
            Err(why) => engine.handle_failure(why, 0),
        };
        step.status.eviction = eviction.clone();
        statuses.push(step.status);
    }
    let mut out = io::stdout().lock();
    match (json, statuses.as_slice()) {
        (true, [one]) => writeln!(out, "{}", serde_json::to_string(one)?)?,
        (true, all) => writeln!(out, "{}", serde_json::to_string(all)?)?,
        (false, all) => {
            for s in all {
                write!(out, "{}", render::status(s))?;
            }
        }
    }
    Ok(worst(statuses.iter().map(lockwatch::Status::exit_code)))
}

/// The worst of several exit codes: critical (2), then unknown (3), then
/// warning (1), then OK (0).
fn worst(codes: impl Iterator<Item = u8>) -> u8 {
    let rank = |code: u8| match code {
        2 => 3,
        3 => 2,
        1 => 1,
        _ => 0,
    };
    codes.max_by_key(|c| rank(*c)).unwrap_or(0)
}

/// Watches every job `--job` names: each job's first status, then every
/// event of any of them as it comes (each names its job), until Ctrl-C.
async fn watch(g: &Global, json: bool) -> Result<u8> {
    let target = g.target()?;
    let jobs = g.jobs().iter().map(|name| g.job_named(name)).map(|job| (job.keys(), job.watch_options())).collect();
    let watchers = Watcher::spawn_all(target, jobs);
    // Every watcher's events on one channel, in the order they come.
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    for watcher in &watchers {
        let mut rx = watcher.events();
        let tx = tx.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(event) => {
                        if tx.send(event).is_err() {
                            break;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "events were dropped");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }
    drop(tx);
    for watcher in &watchers {
        let mut status = watcher.status();
        let first = loop {
            status.changed().await.context("the watcher stopped")?;
            if let Some(s) = status.borrow_and_update().clone() {
                break s;
            }
        };
        let mut out = io::stdout().lock();
        if json {
            writeln!(out, "{}", json!({ "event": "status", "status": first }))?;
        } else {
            write!(out, "{}", render::status(&first))?;
        }
        out.flush()?;
    }
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Some(event) = event else { break };
        let mut out = io::stdout().lock();
        if json {
            writeln!(out, "{}", serde_json::to_string(&event)?)?;
        } else {
            writeln!(out, "{}", render::event(&event))?;
        }
        out.flush()?;
    }
    for watcher in watchers {
        watcher.stop().await;
    }
    Ok(0)
}

async fn flip(g: &Global, user: Option<&str>, on: bool, reason: Option<&str>) -> Result<u8> {
    let target = g.target()?;
    let user = whose(&target, user)?;
    input::check_user(&user).map_err(lockwatch::Error::from)?;
    let keys = g.keys();
    let mut conn = target.manager().await?;
    let host = flags::this_host();
    let flip = flags::Flip { user: &user, on, host: &host, reason };
    let flipped = flags::set_flag(&mut conn, &keys, &flip).await?;
    let word = if on { "enabled" } else { "disabled" };
    println!("{} {word} job {} for {}", render::utc(flipped.at_ms), keys.job, flipped.user);
    if let Some(warning) = flipped.warning {
        eprintln!("lockwatch: {warning}");
    }
    Ok(0)
}

async fn ack(g: &Global, user: Option<&str>, lasts: std::time::Duration, note: Option<&str>) -> Result<u8> {
    let target = g.target()?;
    let user = whose(&target, user)?;
    let keys = g.keys();
    let mut conn = target.manager().await?;
    let asked = lockwatch::supervise::ack::Ack { user: &user, lasts, note: note.unwrap_or_default() };
    let acked = lockwatch::supervise::ack::set_ack(&mut conn, &keys, &asked).await?;
    println!(
        "{} {} is on job {} until {}",
        render::utc(acked.at_ms),
        acked.user,
        keys.job,
        render::utc(acked.until_ms)
    );
    if let Some(warning) = acked.warning {
        eprintln!("lockwatch: {warning}");
    }
    Ok(0)
}

async fn unack(g: &Global, user: Option<&str>) -> Result<u8> {
    let target = g.target()?;
    let user = whose(&target, user)?;
    let keys = g.keys();
    let mut conn = target.manager().await?;
    let had = lockwatch::supervise::ack::clear_ack(&mut conn, &keys, &user).await?;
    if had {
        println!("{user} is no longer on job {}", keys.job);
    } else {
        println!("{user} was not on job {}", keys.job);
    }
    Ok(0)
}

/// The user a flip or an ack is for: the one given, else the Redis ACL
/// user of the URL, else the login name.
fn whose(target: &lockwatch::connect::Target, user: Option<&str>) -> Result<String> {
    Ok(match user {
        Some(user) => user.to_owned(),
        None => flags::default_user(target.user())?,
    })
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe))
}

/// Whether `command` reads several jobs (`--job a,b,c` or `'*'`).
fn reads_several(command: &Command) -> bool {
    matches!(
        command,
        Command::Status { .. }
            | Command::Watch { .. }
            | Command::History { .. }
            | Command::Report { .. }
            | Command::Serve { .. }
            | Command::Acl { worker: None, .. }
    )
}

/// Every job the registry of this Redis names (`--job '*'`).
async fn every_job(g: &args::Global) -> Result<Vec<String>> {
    let target = g.target()?;
    let mut conn = target.manager().await?;
    let jobs = lockwatch::registry::jobs(&mut conn, target.endpoint()).await?;
    if jobs.is_empty() {
        anyhow::bail!(
            "no job is registered on {} (each worker adds its job to {} when it starts): name the jobs with --job a,b,c",
            target.endpoint(),
            lockwatch::keys::JOBS
        );
    }
    Ok(jobs)
}
