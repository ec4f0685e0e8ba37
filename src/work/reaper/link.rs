//! The worker's side of a reaper: the pipes made before it starts (control,
//! report, and the [`Orphan`] it would need), the command that starts it,
//! and the control end the worker keeps to stop the job.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::VAR;
use crate::work::orphan::Orphan;

/// How long the worker waits for the reaper to say it started the job.
const START_PATIENCE: Duration = Duration::from_secs(10);

/// What a pipe takes without a reader (Linux's smallest pipe buffer is a page).
const PIPE_FITS: usize = 4096;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reapers_report_is_a_pid_or_an_error() {
        assert_eq!(parse_report("1234").unwrap(), 1234);
        let err = parse_report("!2 No such file or directory (os error 2)").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(parse_report("").is_err());
    }
}
