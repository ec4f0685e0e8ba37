//! A systemd unit's run as `worker-gone` sees it, made by hand: a control
//! group of its own named `*.service` (in the legacy `name=systemd`
//! hierarchy on a hybrid host, else the unified one) and an invocation id,
//! with processes started in it as systemd starts `ExecStart=` and
//! `ExecStopPost=`. Needs root and a writable cgroup filesystem:
//! [`Unit::make`] says so and returns `None` otherwise.

use std::path::PathBuf;
use std::process::Command;

/// One run of a made-up unit; its control group is removed on drop.
pub struct Unit {
    dir: PathBuf,
    /// The invocation id systemd would hand its processes.
    pub invocation: String,
}

impl Unit {
    /// A fresh unit run, or `None` (said on stderr) where the test cannot make one.
    pub fn make() -> Option<Unit> {
        let root = ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.join("cgroup.procs").exists())?;
        let invocation = uuid::Uuid::new_v4().simple().to_string();
        let dir = root.join(format!("lockwatch-test-{}.service", &invocation[..12]));
        if let Err(err) = std::fs::create_dir(&dir) {
            eprintln!("cannot make a control group under {} ({err}): this test needs root", root.display());
            return None;
        }
        Some(Unit { dir, invocation })
    }

    /// `cmd` to be started inside the unit, with the environment systemd
    /// gives its processes (`stop_post`: as `ExecStopPost=`, after the main
    /// process was killed).
    pub fn wrap(&self, cmd: &Command, stop_post: bool) -> Command {
        let mut wrapped = Command::new("sh");
        wrapped
            .arg("-c")
            .arg(r#"echo $$ > "$UNIT_PROCS" && exec "$@""#)
            .arg("sh")
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .env("UNIT_PROCS", self.dir.join("cgroup.procs"))
            .env("INVOCATION_ID", &self.invocation);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        if stop_post {
            wrapped.env("SERVICE_RESULT", "signal").env("EXIT_CODE", "killed").env("EXIT_STATUS", "KILL");
        }
        wrapped
    }

    /// The processes in the unit now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// SIGKILL to every process of the unit, as systemd does when its main
    /// process dies (`KillMode=mixed`), until none is left (2 s at most);
    /// the processes left, if any.
    pub fn kill_all(&self) -> Vec<i32> {
        for _ in 0..100 {
            let pids = self.pids();
            if pids.is_empty() {
                return pids;
            }
            for pid in pids {
                // SAFETY: SIGKILL to processes the test started in its own unit.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.pids()
    }
}

impl Drop for Unit {
    fn drop(&mut self) {
        self.kill_all();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Whether this test runs as root (and may make namespaces and units).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}
