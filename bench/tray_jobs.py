"""The tray app watching 1 job and watching many: its Private_Dirty memory
when idle, its connections to Redis, and the time from a `kill -9` of one
job's only worker to the notification of that job's death.

Runs inside `dbus-run-session` with DISPLAY on an X server (Xvfb):

    xvfb-run -a dbus-run-session -- /usr/bin/python3 bench/tray_jobs.py \\
        target/release/lockwatch target/release/lockwatch-tray [COUNTS]

COUNTS (default "1,50") are the numbers of jobs, one run each on a fresh
Redis: every job enabled by alice and run by one worker (`sleep`, lease
30 s); the tray (alice's) watches them all. It registers its tray item,
settles SETTLE seconds, is read 5 times 2 s apart (the median is printed),
then the last job's worker is killed and the fake notification daemon
times its note. Needs python3-redis, python3-dbus and python3-xlib, as
the rest of the bench.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import redis

sys.path[:0] = [os.path.dirname(__file__), os.path.join(os.path.dirname(__file__), "..", "src-tauri", "tests", "e2e")]
from common import free_port  # noqa: E402
from desktop import Desktop, app_env, start_app, until  # noqa: E402
from memory import rollup  # noqa: E402

SETTLE = 20


def connections(pid, port):
    """How many TCP connections `pid` has to `port` (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return sum(1 for r in rows if r[9] in inodes and int(r[2].split(":")[1], 16) == port)


def run(lockwatch, tray, count, desktop, scratch):
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL)
    workers, app = [], None
    try:
        r = redis.Redis(port=port, decode_responses=True)
        until("redis", lambda: r.ping(), 10, retry_on=(redis.ConnectionError,))
        url = f"redis://127.0.0.1:{port}"
        jobs = [f"job{i:02}" for i in range(count)]
        for job in jobs:
            r.set(f"{{{job}}}:fence", 1)
            subprocess.run([lockwatch, "--redis", url, "--job", job, "enable", "--user", "alice"],
                           check=True, capture_output=True)
            workers.append(subprocess.Popen(
                [lockwatch, "--redis", url, "--job", job, "worker", "--node", "srv-a", "--lease", "30s",
                 "--", "sleep", "100000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        until("every job running", lambda: all(r.hlen(f"{{{job}}}:lock") for job in jobs), 60)
        root = tempfile.mkdtemp(dir=scratch)
        env = app_env(root, LOCKWATCH_REDIS_URL=url, LOCKWATCH_USER="alice", LOCKWATCH_JOB=",".join(jobs))
        desktop.host.items.clear()
        app = start_app(tray, env, os.path.join(root, "app.log"))
        desktop.wait_for_item(app, 60)
        time.sleep(SETTLE)
        dirty = []
        for _ in range(5):
            dirty.append(rollup(app.pid)["private_dirty_mb"])
            time.sleep(2)
        conns = connections(app.pid, port)
        before = len(desktop.notes.seen)
        workers[-1].kill()
        killed = time.monotonic()
        until("the death's notification", lambda: len(desktop.notes.seen) > before, 30)
        told_ms = (time.monotonic() - killed) * 1000
        note = desktop.notes.seen[before]
        print(f"{count:3} job(s): Private_Dirty {statistics.median(dirty):5.1f} MB, {conns} connection(s) to Redis, "
              f"kill -9 to notification {told_ms:5.0f} ms ({note['summary']!r})", flush=True)
    finally:
        if app:
            app.kill()
            app.wait()
        for w in workers:
            w.kill()
            w.wait()
        server.terminate()
        server.wait()


def main():
    lockwatch, tray = sys.argv[1], sys.argv[2]
    counts = [int(n) for n in (sys.argv[3] if len(sys.argv) > 3 else "1,50").split(",")]
    desktop = Desktop()
    with tempfile.TemporaryDirectory() as scratch:
        try:
            for count in counts:
                run(lockwatch, tray, count, desktop, scratch)
        finally:
            desktop.stop()


if __name__ == "__main__":
    main()
