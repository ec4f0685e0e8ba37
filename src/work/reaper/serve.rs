//! The reaper's own process: starts the job (its arguments), serves the
//! control pipe and the stop signals, reaps the job's whole tree, lets go
//! of a dead worker's lock, and exits as the job did.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::atomic::Ordering;

use super::VAR;
use super::control::{ended_without_a_word, serve_control};
use super::tree::{JOB, JOB_REAPED, kill_tree};
use crate::work::orphan::{self, Orphan};

/// Runs as the reaper: starts the job (this process's arguments), serves
/// the control pipe and signals, and exits as the job did.
pub(super) fn serve(spec: &OsStr) -> ! {
    let Some(Spec { control, report, worker, orphan: orphan_fds }) = parse_spec(spec) else {
        eprintln!("lockwatch: {VAR} is set, but this process was not started by a lockwatch worker; unset {VAR}");
        std::process::exit(2);
    };
    // SAFETY: the worker passed these two descriptors for this process
    // alone; nothing else here owns them.
    let (control, mut report) = unsafe { (File::from_raw_fd(control), File::from_raw_fd(report)) };
    for fd in [control.as_raw_fd(), report.as_raw_fd()] {
        // SAFETY: fcntl on our own descriptor; the job must not inherit it.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: the worker passed these descriptors for this process alone.
    let orphan = orphan_fds.map(|(fd, log)| unsafe { (File::from_raw_fd(fd), File::from_raw_fd(log)) });
    let orphan = orphan.and_then(|(pipe, mut log)| {
        // SAFETY: fcntl on our own descriptor; the job must not inherit it.
        unsafe { libc::fcntl(log.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        let orphan = read_orphan(pipe);
        if orphan.is_none() {
            let _ = writeln!(log, "lockwatch-reaper: cannot read what the worker handed over; after a crash its lock expires with the lease");
        }
        orphan.map(|o| (o, log))
    });
    let signals = stop_signals();
    // SAFETY: plain signal-mask and prctl calls on this single-threaded
    // process, before any thread starts (threads inherit the mask). Not
    // dumpable: the job, running as the same user, cannot read what it
    // was handed (the Redis password) from its memory.
    unsafe {
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut());
        #[cfg(target_os = "linux")]
        {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP);
        }
    }
    // The worker may have died before the parent-death signal was set.
    if parent() != worker {
        std::process::exit(1);
    }

    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some((program, args)) = args.split_first() else {
        let _ = write!(report, "!0 no command given");
        std::process::exit(127);
    };
    let mut job = std::process::Command::new(program);
    job.args(args).env_remove(VAR).process_group(0);
    // SAFETY: sigprocmask and prctl are async-signal-safe. The job must
    // not inherit the reaper's blocked stop signals (a program that is
    // not a shell would ignore SIGTERM and sit out the stop grace); and
    // should the reaper itself be SIGKILLed, the job's main process still dies.
    unsafe {
        job.pre_exec(move || {
            libc::sigprocmask(libc::SIG_UNBLOCK, &signals, std::ptr::null_mut());
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    match job.spawn() {
        Ok(child) => {
            JOB.store(child.id() as i32, Ordering::SeqCst);
            let _ = write!(report, "{}", child.id());
        }
        Err(err) => {
            let _ = write!(report, "!{} {err}", err.raw_os_error().unwrap_or(0));
            std::process::exit(127);
        }
    }
    drop(report);

    std::thread::spawn(move || serve_control(control));
    std::thread::spawn(move || {
        loop {
            let mut sig = 0;
            // SAFETY: sigwait on signals every thread has blocked.
            if unsafe { libc::sigwait(&signals, &mut sig) } != 0 {
                continue;
            }
            if sig != libc::SIGHUP {
                kill_tree(libc::SIGTERM);
            } else if parent() != worker {
                kill_tree(libc::SIGKILL);
            }
        }
    });

    let status = reap_all();
    // The whole tree is reaped. A worker gone (its reaper reparented)
    // holds the lock no more: let go of it now, not at the lease's end.
    if let Some((orphan, mut log)) = orphan
        && worker_gone(worker)
    {
        orphan.let_go(&mut log);
    }
    exit_as(status)
}

/// Reads what the worker handed over to let go of its lock, whole, and closes the pipe.
fn read_orphan(file: File) -> Option<Orphan> {
    let mut bytes = Vec::new();
    file.take(orphan::MAX_LEN as u64).read_to_end(&mut bytes).ok()?;
    Orphan::decode(&bytes)
}

/// What [`VAR`] says: the pipes' descriptors, the worker's pid, and
/// the orphan's pipe and the log's descriptor when the worker passed them.
struct Spec {
    control: RawFd,
    report: RawFd,
    worker: i32,
    orphan: Option<(RawFd, RawFd)>,
}

fn parse_spec(spec: &OsStr) -> Option<Spec> {
    let parts: Vec<i32> = spec.to_str()?.split(',').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let (control, report, worker, orphan) = match parts[..] {
        [control, report, worker] => (control, report, worker, None),
        [control, report, worker, orphan, log] if orphan > 2 && log > 2 => {
            (control, report, worker, Some((orphan, log)))
        }
        _ => return None,
    };
    (control > 2 && report > 2 && worker == parent()).then_some(Spec { control, report, worker, orphan })
}

/// How long a reaper whose control pipe ended without a word waits to be
/// handed to its new parent: the kernel does that a moment after it closed
/// the dying worker's files, longer on a busy host.
const REPARENT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the worker is gone: this reaper has another parent now. A worker
/// killed dies thread by thread; its control pipe ends when its last thread's
/// files are closed, and only a moment later is this reaper handed on (until
/// then its parent is one of the worker's dying threads), so the job's tree
/// may be reaped in between: after a pipe that ended without a word, the
/// new parent is waited for a little. A worker that lives (stopped, stuck)
/// stays the parent, and its lock its own.
fn worker_gone(worker: i32) -> bool {
    if parent() != worker {
        return true;
    }
    if !ended_without_a_word() {
        return false;
    }
    let deadline = std::time::Instant::now() + REPARENT_PATIENCE;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
        if parent() != worker {
            return true;
        }
    }
    false
}

fn parent() -> i32 {
    // SAFETY: getppid cannot fail.
    unsafe { libc::getppid() }
}

fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Reaps every child until none is left; returns the job's wait status.
/// Once the job's own process has ended, everything it left is killed.
fn reap_all() -> Option<libc::c_int> {
    let job = JOB.load(Ordering::SeqCst);
    let mut job_status = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid out pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == -1 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // No child left, and so no descendant: every descendant has
            // an ancestor among our children, or is one (subreaper).
            return job_status;
        }
        if pid == job {
            job_status = Some(status);
            JOB_REAPED.store(true, Ordering::SeqCst);
        }
        if job_status.is_some() {
            kill_tree(libc::SIGKILL);
        }
    }
}

/// Exits with the job's status: its exit code, or its signal.
fn exit_as(status: Option<libc::c_int>) -> ! {
    let Some(status) = status else { std::process::exit(1) };
    if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status));
    }
    let sig = libc::WTERMSIG(status);
    // SAFETY: resets the signal's action for this thread and raises it,
    // so the worker sees the job's signal; no core dump of the reaper.
    unsafe {
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
