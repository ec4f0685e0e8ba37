//! The job's reaper: a small process between the worker and the job that
//! takes the job's whole process tree down with it, so that nothing the job
//! started outlives the worker's right to run it.
//!
//! The worker re-executes its own binary with [`VAR`] set; the binary's
//! `main` calls [`enter_if_asked`] first, which turns it into the reaper.
//! The reaper is a child subreaper (Linux), so every descendant of the job
//! stays below it, `setsid` or not, and is found by walking `/proc`. It runs
//! the job with an untouched stdout, stderr and exit status (its own exit
//! status is the job's), and it obeys a control pipe from the worker:
//!
//! - `T`: SIGTERM to every descendant (a clean stop);
//! - `K`, or the pipe's end (the worker died, even by `kill -9`): SIGKILL to
//!   every descendant, then exit;
//! - `D<ms>;`: the deadline, on the [`clock`](crate::clock), by which the
//!   worker must send a later one. The reaper is a dead-man switch: when the
//!   deadline passes, it SIGKILLs every descendant by itself, whatever the
//!   worker is doing (stopped by SIGSTOP or a debugger, stuck, swapping, or
//!   the host suspended), so the job never outlives the lease the worker
//!   last had confirmed. No deadline sent, none enforced.
//!
//! When the job's own process ends, whatever it left running is killed too.
//! When the worker died, and the last of the job's tree is reaped, the
//! reaper lets go of the worker's lock ([`orphan`](super::orphan)), so the
//! next holder need not wait out the lease.
//! The worker never SIGKILLs the reaper itself: that would orphan the tree.
//! Should anyone else (`kill -9`, the OOM killer), the worker is a child
//! subreaper too ([`adopt_orphans`]): the job's processes fall to it, and it
//! kills them the moment it sees the reaper gone ([`sweep`]).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set in the reaper's environment by the worker: `<control fd>,<report fd>,<worker pid>`, and
/// `,<orphan fd>,<log fd>` when it passed what it takes to let go of the lock
/// ([`Orphan`](super::orphan::Orphan)) and where to say so (the worker's own stderr).
pub const VAR: &str = "LOCKWATCH_REAPER";

/// Whether this binary called [`enter_if_asked`], and so can serve as the reaper.
static AVAILABLE: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main` of a binary that runs workers with
/// [`Work::Command`](crate::work::job::Work::Command). Started as a job's reaper,
/// it runs the job and exits with the job's status, never returning;
/// otherwise it notes that this binary can serve as the reaper and returns.
/// Without it, jobs run as direct children of the worker, and descendants
/// that leave the job's process group can outlive it.
pub fn enter_if_asked() {
    #[cfg(unix)]
    if let Some(spec) = std::env::var_os(VAR) {
        unix::serve(&spec)
    }
    AVAILABLE.store(true, Ordering::SeqCst);
}

/// True when this process can re-execute itself as a job's reaper.
#[cfg(unix)]
pub(crate) fn available() -> bool {
    AVAILABLE.load(Ordering::SeqCst)
}

#[cfg(unix)]
pub(crate) use unix::{Control, Link, adopt_orphans, sweep};

#[cfg(unix)]
mod unix {
    use std::ffi::{OsStr, OsString};
    use std::fs::File;
    use std::io::{self, Read, Write};
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::time::Duration;

    use tokio::io::AsyncReadExt;
    use tokio::process::Command;

    use super::VAR;
    use crate::work::orphan::{self, Orphan};

    /// How long the worker waits for the reaper to say it started the job.
    const START_PATIENCE: Duration = Duration::from_secs(10);

    /// What a pipe takes without a reader (Linux's smallest pipe buffer is a page).
    const PIPE_FITS: usize = 4096;

    // ---- the worker's side ----

    /// Makes the worker the subreaper of everything its jobs start: were a
    /// job's reaper killed, the job's processes are reparented to the
    /// worker (not to init), where [`sweep`] finds them. For a process that
    /// starts no other child than its jobs' reapers: the worker.
    pub(crate) fn adopt_orphans() {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag of this process.
            if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
                let err = io::Error::last_os_error();
                tracing::warn!(error = %err, "cannot adopt the processes of a job whose reaper is killed");
            }
        }
    }

    /// Kills and reaps whatever still runs below the worker once its job's
    /// reaper has ended: normally nothing (the reaper took the job's tree
    /// along); after the reaper was killed, what the job left. Returns how
    /// many processes it killed. Call only when no reaper runs.
    pub(crate) fn sweep() -> usize {
        let mut killed: Vec<i32> = Vec::new();
        // Each round kills what is below, and reaps the worker's own
        // children among them; their children fall to the worker in turn.
        for _ in 0..50 {
            let below = descendants();
            if below.is_empty() {
                break;
            }
            for pid in &below {
                // SAFETY: kill(2) and a non-blocking waitpid(2) on pids that were below us a moment ago.
                unsafe {
                    libc::kill(*pid, libc::SIGKILL);
                    libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG);
                }
                if !killed.contains(pid) {
                    killed.push(*pid);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        killed.len()
    }

    /// The worker's end of a reaper's control pipe.
    #[derive(Debug)]
    pub(crate) struct Control(std::io::PipeWriter);

    impl Control {
        /// Asks for SIGTERM to every process of the job.
        pub(crate) fn terminate(&self) {
            self.send(b"T");
        }

        /// Asks for SIGKILL to every process of the job.
        pub(crate) fn kill(&self) {
            self.send(b"K");
        }

        /// Sets the dead-man deadline: unless a later one comes first, the
        /// reaper kills the job's whole tree at `at` by itself.
        pub(crate) fn deadline(&self, at: crate::clock::Boot) {
            self.send(format!("D{};", at.as_millis()).as_bytes());
        }

        fn send(&self, command: &[u8]) {
            // Non-blocking, a few bytes (below PIPE_BUF, so written whole or
            // not at all) into a pipe nobody else writes: it cannot block; a
            // reaper that is gone already is no error.
            let _ = (&self.0).write(command);
        }
    }

    /// The pipes between the worker and a reaper about to start.
    pub(crate) struct Link {
        control: std::io::PipeWriter,
        control_child: std::io::PipeReader,
        report: std::io::PipeReader,
        report_child: std::io::PipeWriter,
        /// The reaper's end of the pipe that holds the [`Orphan`], already
        /// written, and a copy of the worker's stderr for the reaper to say
        /// what it did once the worker is gone.
        orphan_child: Option<(std::io::PipeReader, OwnedFd)>,
    }

    impl Link {
        /// Makes the pipes and points `cmd`, a reaper command from
        /// [`Link::command`], at them; `orphan`, when given, is written
        /// whole into a pipe of its own before the reaper starts.
        pub(crate) fn new(cmd: &mut Command, orphan: Option<&Orphan>) -> io::Result<Link> {
            let (control_child, control) = std::io::pipe()?;
            let (report, report_child) = std::io::pipe()?;
            set_nonblocking(control.as_raw_fd())?;
            let orphan_child = match orphan.map(orphan_pipe).transpose()?.flatten() {
                Some(reader) => Some((reader, io::stderr().as_fd().try_clone_to_owned()?)),
                None => None,
            };
            let mut fds = vec![control_child.as_raw_fd(), report_child.as_raw_fd()];
            let mut spec = format!("{},{},{}", fds[0], fds[1], std::process::id());
            if let Some((reader, log)) = &orphan_child {
                fds.extend([reader.as_raw_fd(), log.as_raw_fd()]);
                spec.push_str(&format!(",{},{}", reader.as_raw_fd(), log.as_raw_fd()));
            }
            cmd.env(VAR, spec);
            // SAFETY: runs in the forked child before exec; fcntl is
            // async-signal-safe. The pipes are close-on-exec for every other
            // child; only the reaper keeps these two ends.
            unsafe {
                cmd.pre_exec(move || {
                    for &fd in &fds {
                        if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                            return Err(io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
            Ok(Link { control, control_child, report, report_child, orphan_child })
        }

        /// The reaper: this very binary (`/proc/self/exe` survives an
        /// upgrade that replaced the file), in a process group of its own so
        /// a terminal's Ctrl-C reaches only the worker.
        pub(crate) fn command(program: &OsStr) -> io::Result<Command> {
            let exe = if cfg!(target_os = "linux") {
                std::path::PathBuf::from("/proc/self/exe")
            } else {
                std::env::current_exe()?
            };
            let mut cmd = Command::new(exe);
            cmd.arg0("lockwatch-reaper").arg(program).process_group(0);
            Ok(cmd)
        }

        /// After the spawn: keeps the worker's ends, and learns the job's pid
        /// or why it could not be started.
        pub(crate) fn started(self) -> (Control, impl Future<Output = io::Result<u32>>) {
            let Link { control, control_child, report, report_child, orphan_child } = self;
            drop((control_child, report_child, orphan_child));
            let pid = async move {
                let mut report = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(report))?;
                let mut text = String::new();
                tokio::time::timeout(START_PATIENCE, report.read_to_string(&mut text))
                    .await
                    .map_err(|_| io::Error::other("the job's reaper did not start it in time"))??;
                parse_report(&text)
            };
            (Control(control), pid)
        }
    }

    /// A pipe holding `orphan`, its writing end closed: the reaper reads it
    /// whole at its start. `None` when it would not fit the pipe's buffer
    /// (the write would block): the lease then runs out as before.
    fn orphan_pipe(orphan: &Orphan) -> io::Result<Option<std::io::PipeReader>> {
        let bytes = orphan.encode();
        if bytes.is_empty() || bytes.len() > PIPE_FITS {
            tracing::warn!(
                "cannot hand the job's reaper what it takes to let go of the lock; after a crash the lease runs out"
            );
            return Ok(None);
        }
        let (reader, mut writer) = std::io::pipe()?;
        writer.write_all(&bytes)?;
        Ok(Some(reader))
    }

    fn parse_report(text: &str) -> io::Result<u32> {
        let text = text.trim();
        if let Some(err) = text.strip_prefix('!') {
            let (code, message) = err.split_once(' ').unwrap_or((err, ""));
            return Err(match code.parse::<i32>() {
                Ok(code) if code > 0 => io::Error::from_raw_os_error(code),
                _ => io::Error::other(message.to_owned()),
            });
        }
        text.parse().map_err(|_| io::Error::other("the job's reaper ended before starting it"))
    }

    fn set_nonblocking(fd: RawFd) -> io::Result<()> {
        // SAFETY: fcntl on a descriptor this process owns.
        let ok = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags != -1 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) != -1
        };
        if ok { Ok(()) } else { Err(io::Error::last_os_error()) }
    }

    // ---- the reaper's side ----

    /// The job's pid, once started (0 before).
    static JOB: AtomicI32 = AtomicI32::new(0);
    /// Set once the job's process has been reaped: its pid may be reused.
    static JOB_REAPED: AtomicBool = AtomicBool::new(false);

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
            && parent() != worker
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

    /// What the worker asked for on the control pipe.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum Ask {
        Terminate,
        Kill,
        Deadline(u64),
    }

    /// Takes the complete commands off the front of `pending`; what is left
    /// is the start of a command still arriving. Unknown bytes are skipped.
    pub(super) fn parse_asks(pending: &mut Vec<u8>) -> Vec<Ask> {
        let mut asks = Vec::new();
        let mut i = 0;
        while i < pending.len() {
            match pending[i] {
                b'T' => asks.push(Ask::Terminate),
                b'K' => asks.push(Ask::Kill),
                b'D' => {
                    let Some(end) = pending[i..].iter().position(|b| *b == b';') else { break };
                    let digits = std::str::from_utf8(&pending[i + 1..i + end]).ok();
                    if let Some(ms) = digits.and_then(|d| d.parse().ok()) {
                        asks.push(Ask::Deadline(ms));
                    }
                    i += end;
                }
                _ => {}
            }
            i += 1;
        }
        pending.drain(..i);
        asks
    }

    /// Serves the control pipe until the job must die: on `K`, on the
    /// pipe's end (the worker is gone: nothing may outlive it), or when the
    /// dead-man deadline passes without a later one.
    fn serve_control(mut control: File) {
        let mut deadline = Deadline::new();
        let mut pending = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            if deadline.passed() {
                kill_tree(libc::SIGKILL);
                return;
            }
            if !deadline.wait_for(&control) {
                continue;
            }
            let n = match control.read(&mut buf) {
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => 0,
            };
            if n == 0 {
                kill_tree(libc::SIGKILL);
                return;
            }
            pending.extend_from_slice(&buf[..n]);
            for ask in parse_asks(&mut pending) {
                match ask {
                    Ask::Terminate => kill_tree(libc::SIGTERM),
                    Ask::Kill => {
                        kill_tree(libc::SIGKILL);
                        return;
                    }
                    Ask::Deadline(ms) => deadline.set(ms),
                }
            }
        }
    }

    /// The dead-man deadline, on the worker's clock. On Linux a timerfd on
    /// `CLOCK_BOOTTIME` wakes the reaper at it, also when it passed while
    /// the host was suspended; elsewhere the wait is cut into short slices.
    struct Deadline {
        at: Option<u64>,
        #[cfg(target_os = "linux")]
        timer: Option<OwnedFd>,
    }

    impl Deadline {
        fn new() -> Deadline {
            #[cfg(target_os = "linux")]
            {
                // SAFETY: timerfd_create takes no pointers; a negative
                // answer is an error, else a descriptor we now own.
                let fd = unsafe { libc::timerfd_create(libc::CLOCK_BOOTTIME, libc::TFD_CLOEXEC) };
                let timer = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
                Deadline { at: None, timer }
            }
            #[cfg(not(target_os = "linux"))]
            Deadline { at: None }
        }

        fn set(&mut self, ms: u64) {
            self.at = Some(ms);
            #[cfg(target_os = "linux")]
            if let Some(timer) = &self.timer {
                let spec = libc::itimerspec {
                    it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
                    it_value: libc::timespec {
                        tv_sec: libc::time_t::try_from(ms / 1000).unwrap_or(libc::time_t::MAX),
                        tv_nsec: libc::c_long::try_from(ms % 1000 * 1_000_000).unwrap_or(0),
                    },
                };
                // SAFETY: arms our own timerfd with a valid itimerspec.
                unsafe {
                    libc::timerfd_settime(timer.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
            }
        }

        fn passed(&self) -> bool {
            self.at.is_some_and(|at| crate::clock::Boot::now().as_millis() >= at)
        }

        /// Waits until the control pipe has something to read (true) or the
        /// deadline may have passed (false).
        fn wait_for(&self, control: &File) -> bool {
            let mut fds = vec![libc::pollfd { fd: control.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
            let mut timeout: libc::c_int = -1;
            #[cfg(target_os = "linux")]
            if let (Some(_), Some(timer)) = (self.at, &self.timer) {
                fds.push(libc::pollfd { fd: timer.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            }
            // Without a timer (not Linux, or none could be made), in slices.
            if fds.len() == 1
                && let Some(at) = self.at
            {
                let left = at.saturating_sub(crate::clock::Boot::now().as_millis());
                timeout = libc::c_int::try_from(left.min(100)).unwrap_or(100);
            }
            // SAFETY: poll on descriptors we own, with the array's true length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            n > 0 && fds[0].revents != 0
        }
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

    /// Sends `sig` to every process below the reaper: first, in one call,
    /// to the job's process group (while its leader is not reaped, so the
    /// group is the job's), which holds all but what left it; then to every
    /// process a walk of `/proc` finds, which on a host with thousands of
    /// processes takes tens of milliseconds.
    fn kill_tree(sig: libc::c_int) {
        let job = JOB.load(Ordering::SeqCst);
        if job > 0 && !JOB_REAPED.load(Ordering::SeqCst) {
            // SAFETY: kill(2) on the job's own process group.
            unsafe { libc::kill(-job, sig) };
        }
        for pid in descendants() {
            // SAFETY: kill(2) on a pid that was below us a moment ago.
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// Every process below this one, read from `/proc`.
    #[cfg(target_os = "linux")]
    fn descendants() -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
        let links: Vec<(i32, i32)> = dir
            .filter_map(|entry| {
                let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                Some((pid, parent_in_stat(&stat)?))
            })
            .collect();
        below(std::process::id() as i32, &links)
    }

    /// Without /proc's parent links, the job's process group is all that
    /// can be reached (while its leader's pid still names it).
    #[cfg(not(target_os = "linux"))]
    fn descendants() -> Vec<i32> {
        let job = JOB.load(Ordering::SeqCst);
        if job > 0 && !JOB_REAPED.load(Ordering::SeqCst) { vec![-job] } else { Vec::new() }
    }

    /// The parent pid in a `/proc/<pid>/stat` line (the name may hold anything, even `)`).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(super) fn parent_in_stat(stat: &str) -> Option<i32> {
        let (_, rest) = stat.rsplit_once(')')?;
        rest.split_whitespace().nth(1)?.parse().ok()
    }

    /// All pids below `root`, given (pid, parent) links.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(super) fn below(root: i32, links: &[(i32, i32)]) -> Vec<i32> {
        let mut found = vec![root];
        let mut i = 0;
        while i < found.len() {
            let parent = found[i];
            for (pid, ppid) in links {
                // Links read at slightly different times may not form a tree.
                if *ppid == parent && !found.contains(pid) {
                    found.push(*pid);
                }
            }
            i += 1;
        }
        found.remove(0);
        found
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn parents_are_read_from_stat_lines_with_odd_names() {
            assert_eq!(parent_in_stat("42 (sh) S 7 42 42 0 -1"), Some(7));
            assert_eq!(parent_in_stat("43 (a) b (c)) R 42 43 7 0"), Some(42));
            assert_eq!(parent_in_stat("garbage"), None);
        }

        #[test]
        fn the_tree_below_a_process_is_found_whatever_the_order() {
            let links = [(5, 4), (2, 1), (3, 2), (4, 3), (9, 8), (6, 1), (1, 5)];
            let mut found = below(1, &links);
            found.sort();
            assert_eq!(found, [2, 3, 4, 5, 6]);
            assert!(below(9, &links).is_empty());
        }

        #[test]
        fn control_commands_are_parsed_whole_and_a_partial_one_waits() {
            let mut pending = b"TD1234;K".to_vec();
            assert_eq!(parse_asks(&mut pending), [Ask::Terminate, Ask::Deadline(1234), Ask::Kill]);
            assert!(pending.is_empty());
            let mut pending = b"D99;D100".to_vec();
            assert_eq!(parse_asks(&mut pending), [Ask::Deadline(99)]);
            assert_eq!(pending, b"D100");
            pending.extend_from_slice(b"0;xD;");
            assert_eq!(parse_asks(&mut pending), [Ask::Deadline(1000)], "garbage and an empty deadline are skipped");
            assert!(pending.is_empty());
        }

        #[test]
        fn the_reapers_report_is_a_pid_or_an_error() {
            assert_eq!(parse_report("1234").unwrap(), 1234);
            let err = parse_report("!2 No such file or directory (os error 2)").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
            assert!(parse_report("").is_err());
        }
    }
}
