"""Pieces the benchmarks share: private redis-servers, child processes that
are all gone when a run ends, a reader that stamps each line a child prints
with its arrival time, the workers' journal, and CPU time from /proc
(memory is bench/memory.py's).

Times are wall-clock seconds (time.time()): Redis TIME, the job's `date
+%s.%N` and the peers' stamps all read the same clock on this machine, so
they compare directly.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# BENCH_PROFILE=debug tries the bench itself out on debug builds; figures
# worth keeping come from release builds.
TARGET = os.path.join(ROOT, "target", os.environ.get("BENCH_PROFILE", "release"))
LOCKWATCH = os.path.join(TARGET, "lockwatch")
TRAY = os.path.join(TARGET, "lockwatch-tray")
# An empty Tauri tray app (bench/empty-tray), the tray's memory floor.
EMPTY_TRAY = os.path.join(TARGET, "empty-tray")
DRIVER = os.path.join(TARGET, "examples", "lockwatch-bench")
PEERS = os.path.join(ROOT, "bench", "peers.py")
PYTHON = "/usr/bin/python3"
# Where the desktop harness lives (the module `desktop`, which the tray's
# end-to-end tests run on): tray.py imports it, so its PYTHONPATH holds this
# beside bench/.
DESKTOP = os.path.join(ROOT, "src-tauri", "tests", "e2e")

# The names of every Redis hash field and stream kind, as src/schema.rs
# declares them (bench/schema.json, kept current by that module's tests).
with open(os.path.join(ROOT, "bench", "schema.json")) as f:
    SCHEMA = json.load(f)
FLAG, BEAT, ENTRY, KIND = SCHEMA["flag"], SCHEMA["beat"], SCHEMA["entry"], SCHEMA["kind"]

# What a worker logs (LOCKWATCH_LOG): what it decides on a hand-over (taking,
# waiting, letting go, claiming its name) and its reaper's word; the files
# stay in the run's directory.
WORKER_LOG = os.environ.get("BENCH_WORKER_LOG", "warn,lockwatch=debug")

# The job: one journal line when it starts (the moment it "runs"), then
# idle in `sleep` below the shell.
JOURNAL = 'echo "$(date +%s.%N) $LOCKWATCH_NODE $LOCKWATCH_FENCE" >> "$BENCH_JOURNAL"'
JOURNAL_JOB = f"{JOURNAL}; while :; do sleep 1000000; done"
# The same, but the job's process is then a program (`sleep`), not a shell.
PROGRAM_JOB = f"{JOURNAL}; exec sleep 1000000"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what, check, timeout, every=0.02):
    """Polls `check` until it returns something true, and returns that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


class Redis:
    """A private redis-server in `dir` on a free loopback port, stock settings
    (no persistence, no keyspace notifications)."""

    def __init__(self, dir):
        self.port = free_port()
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        self.log = open(os.path.join(dir, "redis.log"), "w")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"redis://127.0.0.1:{self.port}"
        self.r = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)
        until("redis-server to answer", self._ping, 10, every=0.05)

    def _ping(self):
        try:
            return self.r.ping()
        except redis.ConnectionError:
            return False

    def cpu(self):
        """Redis's own CPU time so far, in seconds."""
        info = self.r.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


class Procs:
    """Children of one run, each in its own process group, all killed at the end."""

    def __init__(self, dir):
        self.dir = dir
        self.live = []

    def spawn(self, name, args, stdin=None, stdout=None, env=None):
        log = open(os.path.join(self.dir, f"{name}.log"), "ab")
        p = subprocess.Popen(args, stdin=stdin, stdout=stdout if stdout is not None else log, stderr=log,
                             env=env, start_new_session=True)
        self.live.append(p)
        return p

    def kill_all(self):
        for p in reversed(self.live):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()
        self.live.clear()


class Lines:
    """Reads a child's stdout in a thread: each line, parsed as JSON when it
    is JSON, with the wall time it arrived."""

    def __init__(self, proc):
        self.items = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, out):
        for raw in out:
            at = time.time()
            line = raw.decode(errors="replace").strip()
            try:
                value = json.loads(line)
            except ValueError:
                value = line
            with self.cond:
                self.items.append((at, value))
                self.cond.notify_all()

    def wait_for(self, what, pred, timeout, after=0.0):
        """The first (time, value) that arrived after `after` and satisfies `pred`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for at, value in self.items:
                    if at > after and pred(value):
                        return at, value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout} s waiting for {what}; saw {self.items[-3:]}")
                self.cond.wait(left)


def journal(path):
    """The job starts so far: [(time, node)]."""
    try:
        with open(path) as f:
            return [(float(t), node) for t, node, *_ in (line.split() for line in f if line.strip())]
    except FileNotFoundError:
        return []


def cpu_ns(pid):
    """CPU time of all the process's threads, in ns (schedstat: finer than
    the 10 ms clock ticks of /proc/PID/stat)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
    except OSError:
        return None
    return total


def cpu_ticks_s(pid):
    """utime + stime of the process (threads that ended included), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


class Cluster:
    """A job on one Redis with its workers, as the faults need it."""

    def __init__(self, redis_server, procs, dir, job="outbound"):
        self.redis = redis_server
        self.r = redis_server.r
        self.procs = procs
        self.job = job
        self.journal = os.path.join(dir, f"journal-{time.monotonic_ns()}.txt")
        self.workers = {}
        # A fresh counter, as the demo starts its own Redis: the first holder
        # then starts at once instead of waiting out a lease on a new Redis.
        self.r.set(f"{{{job}}}:fence", 0, nx=True)

    def lockwatch(self, *args, check=True):
        out = subprocess.run([LOCKWATCH, "--redis", self.redis.url, "--job", self.job, *args],
                             capture_output=True, text=True, timeout=30)
        if check and out.returncode != 0:
            raise RuntimeError(f"lockwatch {' '.join(args)} failed: {out.stderr.strip()}")
        return out

    def worker(self, node, *opts, job=JOURNAL_JOB, lease="30s", log_name=None):
        """Starts `node`'s worker; its stderr (and its reaper's) goes to
        `<log_name or worker-NODE>.log` in the run's directory, at a level
        that shows its hand-over decisions."""
        env = dict(os.environ, BENCH_JOURNAL=self.journal, LOCKWATCH_LOG=WORKER_LOG)
        p = self.procs.spawn(log_name or f"worker-{node}", [LOCKWATCH, "--redis", self.redis.url, "--job", self.job, "worker",
                                                "--node", node, "--lease", lease, *opts, "--", "sh", "-c", job], env=env)
        self.workers[node] = p
        return p

    def journal_lines(self):
        """Every job start so far: [(time, node)]."""
        return journal(self.journal)

    def started(self, node, after=0.0):
        """When `node`'s job wrote its journal line after `after`, or None."""
        return next((t for t, n in journal(self.journal) if n == node and t > after), None)

    def beating(self, node):
        return self.r.hget(f"{{{self.job}}}:node:{node}", BEAT["BEAT_MS"]) is not None

    def unlock_subscribers(self):
        return self.r.pubsub_numsub(f"redisson_lock__channel:{{{self.job}}}:lock")[0][1]

    def watch(self, name="watch"):
        p = self.procs.spawn(name, [LOCKWATCH, "--redis", self.redis.url, "--job", self.job, "watch", "--json"],
                             stdout=subprocess.PIPE)
        lines = Lines(p)
        lines.wait_for("the watcher's first status", lambda v: isinstance(v, dict) and v.get("event") == "status", 15)
        return lines


class Peer:
    """One peers.py process and its stamped lines."""

    def __init__(self, procs, name, role, port, key, lease=30):
        self.proc = procs.spawn(name, [PYTHON, PEERS, role, str(port), key, str(lease)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lines = Lines(self.proc)

    def stamp(self, kind, timeout, after=0.0):
        """The time the peer printed for `kind` ("held", "released", …)."""
        _, value = self.lines.wait_for(kind, lambda v: isinstance(v, dict) and kind in v, timeout, after)
        return value[kind]

    def release(self):
        self.proc.stdin.write(b"release\n")
        self.proc.stdin.flush()

    def kill(self):
        os.kill(self.proc.pid, signal.SIGKILL)
