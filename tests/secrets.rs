//! Passwords never reach the terminal: a wrong password, an unreachable
//! server or a malformed URL, in every URL form the redis crate accepts,
//! gives one sentence on stderr that does not contain the password.

mod common;

use common::*;

const SECRET: &str = "Sup3r-s3cret";

/// Runs `lockwatch --redis URL ARGS…` and returns (exit code, stdout + stderr).
fn lockwatch(url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = lockwatch_command().env("LOCKWATCH_LOG", "debug").args(["--redis", url]).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn no_failure_prints_the_password_in_any_url_form() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("redis.sock");
    let sock = sock.to_str().unwrap();
    let server = RedisServer::with_args(&["--unixsocket", sock, "--unixsocketperm", "700"]);
    let mut admin = server.conn();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("alice")
        .arg("on")
        .arg(">right")
        .arg("+@all")
        .arg("~*")
        .query(&mut admin)
        .unwrap();
    // The job exists (a job this Redis never saw is `unknown`, exit 3).
    flag(&mut admin, "outbound", "alice", false);
    let port = server.port;
    let gone = dir.path().join("gone.sock");
    let gone = gone.to_str().unwrap();
    let dead = free_port();
    let s = SECRET;
    let urls = [
        // A wrong password.
        format!("redis://alice:{s}@127.0.0.1:{port}"),
        format!("redis://:{s}@127.0.0.1:{port}"),
        format!("redis://alice:{s}@127.0.0.1:{port}/2?protocol=resp3"),
        format!("valkey://alice:{s}@127.0.0.1:{port}"),
        format!("redis+unix://{sock}?user=alice&pass={s}"),
        format!("unix://{sock}?pass={s}"),
        format!("unix:{sock}?user=alice&pass={s}"),
        format!("valkey+unix://{sock}?pass={s}&db=1"),
        // TLS against a server that does not speak it.
        format!("rediss://alice:{s}@127.0.0.1:{port}"),
        format!("rediss://alice:{s}@127.0.0.1:{port}/#insecure"),
        // Nobody there.
        format!("redis://alice:{s}@127.0.0.1:{dead}"),
        format!("rediss://alice:{s}@127.0.0.1:{dead}"),
        format!("redis+unix://{gone}?user=alice&pass={s}"),
        format!("unix:{gone}?pass={s}"),
        // Not a URL the crate can use.
        format!("redis://alice:{s}@127.0.0.1:{port}/notadb"),
        format!("redis://alice:{s}@127.0.0.1:port"),
        format!("unix://{sock}?pass={s}&db=x"),
        format!("redis:alice:{s}@127.0.0.1:{port}"),
        format!("redis://alice:pa/{s}@127.0.0.1:{port}"),
        format!("redis://alice:12/{s}@127.0.0.1:{port}"),
        format!("redis://alice:pa?{s}@127.0.0.1:{port}"),
        format!("redis://alice:pa#{s}@127.0.0.1:{port}"),
        format!("redis://127.0.0.1:{port}/?password={s}&protocol=9"),
        format!("http://alice:{s}@127.0.0.1:{port}"),
    ];
    // One thread per run: the TLS ones wait out a handshake timeout.
    let commands = [&["status"][..], &["status", "--json"], &["enable", "--user", "alice"]];
    let leaks: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = urls
            .iter()
            .flat_map(|url| commands.iter().map(move |args| (url, *args)))
            .map(|(url, args)| {
                scope.spawn(move || {
                    let (code, stdout, stderr) = lockwatch(url, args);
                    assert_ne!(code, Some(0), "{url} {args:?} should fail: {stdout}{stderr}");
                    let said = stderr.lines().any(|l| l.starts_with("lockwatch: "))
                        || stdout.to_lowercase().contains("unknown");
                    assert!(said, "{url} {args:?}: {stdout}{stderr}");
                    (stdout.contains(SECRET) || stderr.contains(SECRET))
                        .then(|| format!("{url} {args:?}:\n{stdout}{stderr}"))
                })
            })
            .collect();
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    });
    assert!(leaks.is_empty(), "the password was printed:\n{}", leaks.join("\n"));

    // The right password in the socket forms works (they are real forms).
    for url in [format!("redis+unix://{sock}?user=alice&pass=right"), format!("unix:{sock}?user=alice&pass=right")] {
        let (code, stdout, stderr) = lockwatch(&url, &["status", "--json"]);
        assert_eq!(code, Some(0), "{url}: {stdout}{stderr}");
    }
}
