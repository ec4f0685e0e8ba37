"""One end-to-end script's run: its temp dir, Redis and processes, the
`lockwatch` CLI on them, and its count of checks. The desktop the app runs
on is desktop.py's, which the tray benchmark shares.
"""
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback

from desktop import start_app, until


def free_port():
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def holder(url):
    """The job's holder as `lockwatch status --json` tells it on `url`
    (a dict with its "node"), or None while nobody holds it."""
    out = subprocess.run([os.environ["LOCKWATCH_BIN"], "--redis", url, "status", "--json"],
                         capture_output=True, text=True, timeout=20).stdout
    return (json.loads(out or "{}") or {}).get("holder")


class Run:
    """One script's run: a temp dir, a free port for its Redis, the processes
    it started (all stopped at the end) and its count of passed checks.
    The `lockwatch` CLI and the tray app are LOCKWATCH_BIN and LOCKWATCH_TRAY_BIN."""

    def __init__(self, name):
        self.tmp = tempfile.mkdtemp(prefix=f"lockwatch-{name}-e2e-")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.procs = []
        self.passed = 0

    def ok(self, what):
        self.passed += 1
        print(f"ok {self.passed}: {what}", flush=True)

    def failed(self, error):
        """Says which check failed and where; the script adds what it saw, then `finish(failed=1)`."""
        print(f"FAILED after {self.passed} checks: {error!r}", flush=True)
        traceback.print_exc(file=sys.stdout)

    def show(self, sights):
        """Prints what a failed run saw: each (what, get) as `--- what: get()`,
        or why it could not be had."""
        for what, get in sights:
            try:
                print(f"--- {what}: {get()}", flush=True)
            except Exception as err:  # noqa: BLE001 - diagnostics only
                print(f"--- {what}: unavailable ({err})", flush=True)

    def show_log(self, title, path, tail=3000):
        """Prints the end of the file `path` under `--- title:`, if there is one."""
        try:
            with open(path, errors="replace") as f:
                print(f"--- {title}:\n{f.read()[-tail:]}", flush=True)
        except OSError:
            pass

    def finish(self, failed=0):
        """The last line, which the Rust test reads; the script's exit code."""
        print(f"{self.passed} passed, {failed} failed", flush=True)
        return 1 if failed else 0

    def spawn(self, args, **kw):
        """Starts `args` (output dropped unless `stdout`/`stderr` say otherwise); stopped by `cleanup`."""
        p = subprocess.Popen(args, stdout=kw.pop("stdout", subprocess.DEVNULL), stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
        self.procs.append(p)
        return p

    def start_redis(self):
        """A redis-server of this run's own on `port`, answering."""
        p = self.spawn(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.tmp])
        until("redis", lambda: self.redis("PING") == "PONG", 10)
        return p

    def redis(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True, timeout=10).stdout.strip()

    def lockwatch(self, *args, check=False):
        return subprocess.run([os.environ["LOCKWATCH_BIN"], "--redis", self.url, *args], capture_output=True, text=True, timeout=20, check=check)

    def holder(self):
        return holder(self.url)

    def grant(self, user, password):
        """The Redis user `user` with the rules `lockwatch acl` prints for it, and a password."""
        for line in self.lockwatch("acl", "--user", user, check=True).stdout.splitlines():
            # The selectors come quoted: "(~{outbound}:enabled:alice +hset)".
            self.redis(*shlex.split(line))
        self.redis("ACL", "SETUSER", user, f">{password}")

    def worker(self, node, *args):
        """A `lockwatch worker` on this run's Redis: `args` are its lease, grace and job."""
        return self.spawn([os.environ["LOCKWATCH_BIN"], "--redis", self.url, "worker", "--node", node, *args])

    def start_app(self, env, log, args=()):
        """The tray app with `args` in `env`, its output in the file `log` of the temp dir; stopped by `cleanup`."""
        p = start_app(os.environ["LOCKWATCH_TRAY_BIN"], env, os.path.join(self.tmp, log), args)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM):
        """Sends `sig` to `p` and waits; SIGKILL after 5 s."""
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        p.wait()

    def stop_all(self, sig=signal.SIGKILL):
        """Stops what the run started, the last started first."""
        for p in reversed(self.procs):
            self.stop(p, sig)

    def cleanup(self, sig=signal.SIGKILL):
        self.stop_all(sig)
        shutil.rmtree(self.tmp, ignore_errors=True)
