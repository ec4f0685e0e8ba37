//! A job's stdout and stderr, forwarded to the worker's by threads of their
//! own, each chunk a sign of life.

use std::io::{self, PipeReader, Read, Write};

use super::Liveness;

#[derive(Debug, Clone, Copy)]
pub(super) enum Output {
    Stdout,
    Stderr,
}

/// Copies the job's output to the worker's on a thread of its own: a stdout
/// nobody reads blocks this thread and, through the pipe, the job; never
/// the async runtime. A closed output is drained, so the job goes on.
pub(super) fn forward(mut from: PipeReader, liveness: Liveness, to: Output) -> io::Result<()> {
    std::thread::Builder::new().name("job-output".to_owned()).spawn(move || {
        let mut buf = vec![0u8; 8192];
        let mut open = true;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            liveness.beat();
            if open {
                let chunk = &buf[..n];
                let written = match to {
                    Output::Stdout => {
                        let mut out = io::stdout().lock();
                        out.write_all(chunk).and_then(|()| out.flush())
                    }
                    Output::Stderr => io::stderr().lock().write_all(chunk),
                };
                open = written.is_ok();
            }
        }
    })?;
    Ok(())
}
