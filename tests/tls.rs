//! `rediss://` against a real TLS-only redis-server whose certificate is
//! signed by a private CA made here with openssl, given with `--tls-ca`:
//! `status`, and a worker's presence subscription (its own connection).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl must be installed");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA and a server certificate for 127.0.0.1 signed by it.
fn make_certs(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=lockwatch test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
}

#[test]
fn status_and_a_workers_presence_over_tls_with_a_private_ca() {
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let p = |f: &str| certs.path().join(f).display().to_string();
    let port = free_port();
    let server = RedisServer::with_args(&[
        "--port",
        "0",
        "--tls-port",
        &port.to_string(),
        "--tls-cert-file",
        &p("server.crt"),
        "--tls-key-file",
        &p("server.key"),
        "--tls-ca-cert-file",
        &p("ca.crt"),
        "--tls-auth-clients",
        "no",
    ]);
    let url = format!("rediss://127.0.0.1:{port}");
    let lockwatch = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_lockwatch"))
            .args(["--redis", &url])
            .args(extra)
            .args(["status", "--json"])
            .output()
            .unwrap()
    };
    // Wait until the TLS port answers through lockwatch itself: it reads
    // the job, which this new Redis has never seen.
    let read = |out: &std::process::Output| {
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        json["reason"].as_str().is_some_and(|r| r.starts_with("no job named outbound on this Redis"))
    };
    let mut out = lockwatch(&["--tls-ca", &p("ca.crt")]);
    for _ in 0..50 {
        if read(&out) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        out = lockwatch(&["--tls-ca", &p("ca.crt")]);
    }
    assert!(read(&out), "{}", String::from_utf8_lossy(&out.stdout));

    // Without the CA, the server's certificate is not trusted: unknown, with a TLS hint.
    let out = lockwatch(&[]);
    assert_eq!(out.status.code(), Some(3));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["state"], "unknown");
    assert!(json["reason"].as_str().unwrap().contains("TLS"), "{json}");

    // A worker over TLS holds its presence there (a connection of its own,
    // with the CA): its kill -9 is told dying, not after the heartbeat's grace.
    let cli = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
        cmd.args(["--redis", &url, "--tls-ca", &p("ca.crt")]).args(args);
        cmd
    };
    assert!(cli(&["enable", "--user", "alice"]).output().unwrap().status.success());
    let mut worker = cli(&["worker", "--node", "srv-a", "--lease", "30s", "--", "sleep", "60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let state = || -> serde_json::Value {
        serde_json::from_slice(&cli(&["status", "--json"]).output().unwrap().stdout).unwrap_or_default()
    };
    let until = |what: &str, check: &dyn Fn(&serde_json::Value) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
        loop {
            let json = state();
            if check(&json) {
                return json;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: {json}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    // A new Redis has no fence counter: the holder waits a lease before it
    // starts the job, and holds the lock meanwhile.
    until("srv-a holding", &|j| j["holder"]["node"] == "srv-a");
    // The beat that says the presence is held follows the subscription.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    worker.kill().unwrap();
    worker.wait().unwrap();
    let json = until("dying", &|j| j["state"] == "stale");
    assert!(json["reason"].as_str().unwrap().contains("connection to Redis closed"), "{json}");
    drop(server);
}
