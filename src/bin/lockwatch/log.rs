//! Log lines to stderr without ever blocking the caller: a thread of its
//! own writes them from a bounded queue. A stderr nobody reads stalls that
//! thread only, never the runtime that renews the lease and kills the job;
//! lines that find the queue full are dropped and counted, and the count
//! is written once stderr moves again.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// Lines kept while stderr is stuck, before new ones are dropped.
const QUEUE: usize = 1024;

/// How long [`Flush`] waits at exit for queued lines to be written.
const FLUSH_PATIENCE: Duration = Duration::from_secs(1);

enum Message {
    Line(Vec<u8>),
    /// Answered once every line queued before it was written.
    Flush(SyncSender<()>),
}

/// Hands log lines to the writer thread; a [`MakeWriter`] for tracing.
#[derive(Clone)]
pub(super) struct Stderr {
    queue: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

/// Waits (briefly) on drop until the lines logged so far were written.
pub(super) struct Flush(Stderr);

impl Stderr {
    /// Starts the writer thread; `None` if it cannot be started.
    pub(super) fn spawn() -> Option<(Stderr, Flush)> {
        let (queue, lines) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let counter = dropped.clone();
        std::thread::Builder::new().name("log-writer".to_owned()).spawn(move || write_lines(&lines, &counter)).ok()?;
        let stderr = Stderr { queue, dropped };
        Some((stderr.clone(), Flush(stderr)))
    }
}

fn write_lines(lines: &Receiver<Message>, dropped: &AtomicU64) {
    for message in lines {
        match message {
            Message::Line(line) => {
                let mut err = io::stderr().lock();
                let lost = dropped.swap(0, Ordering::Relaxed);
                if lost > 0 {
                    let _ = writeln!(err, "lockwatch: {lost} log lines were dropped while stderr was not read");
                }
                let _ = err.write_all(&line);
            }
            Message::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl Drop for Flush {
    fn drop(&mut self) {
        let (done, written) = sync_channel(1);
        if self.0.queue.try_send(Message::Flush(done)).is_ok() {
            let _ = written.recv_timeout(FLUSH_PATIENCE);
        }
    }
}

/// One log line, queued when tracing drops it after writing.
pub(super) struct Line {
    text: Vec<u8>,
    to: Stderr,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        if let Err(TrySendError::Full(_)) = self.to.queue.try_send(Message::Line(text)) {
            self.to.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line { text: Vec::new(), to: self.clone() }
    }
}
