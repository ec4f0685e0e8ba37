//! The reaper's control pipe: the worker's commands (`T`, `K`, `D<ms>;`),
//! parsed, and served until the job must die.

use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};

use super::deadline::Deadline;
use super::tree::kill_tree;

/// What the worker asked for on the control pipe.
#[derive(Debug, PartialEq, Eq)]
enum Ask {
    Terminate,
    Kill,
    Deadline(u64),
}

/// Takes the complete commands off the front of `pending`; what is left
/// is the start of a command still arriving. Unknown bytes are skipped.
fn parse_asks(pending: &mut Vec<u8>) -> Vec<Ask> {
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

/// Set when the control pipe ended without a `K` first: the worker's
/// files were closed by its death (a live worker says `K` before it lets
/// its end go).
static ENDED_WITHOUT_A_WORD: AtomicBool = AtomicBool::new(false);

/// Whether the control pipe ended without a `K` first: the worker is dying.
pub(super) fn ended_without_a_word() -> bool {
    ENDED_WITHOUT_A_WORD.load(Ordering::SeqCst)
}

/// Serves the control pipe until the job must die: on `K`, on the
/// pipe's end (the worker is gone: nothing may outlive it), or when the
/// dead-man deadline passes without a later one.
pub(super) fn serve_control(mut control: File) {
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
            ENDED_WITHOUT_A_WORD.store(true, Ordering::SeqCst);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
