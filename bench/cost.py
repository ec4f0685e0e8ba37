"""What idle watchers cost Redis, and how long one probe takes.

A private Redis holds a realistic job: 20 users' flags and two workers'
heartbeats (one holding, its job running `sleep`). Redis's own CPU
(`INFO cpu`, used_cpu_sys + used_cpu_user) is read every STEP seconds over
a window without watchers (the baseline: workers, expiry, serverCron), then
with 100 and with 1,000 idle watchers in one process (the Rust driver); the
cost per watcher is each step's rate above the baseline's median, divided
by the number of watchers.
"""
import json
import os
import statistics
import subprocess
import time

from common import DRIVER, Cluster, Procs, until

USERS = 20
STEP_S = 5


def setup(redis_server, procs, dir):
    c = Cluster(redis_server, procs, dir)
    for i in range(USERS):
        c.lockwatch("enable", "--user", f"user{i + 1:02}")
    c.worker("srv-a")
    until("srv-a's job to start", lambda: c.started("srv-a"), 30)
    c.worker("srv-b")
    until("srv-b's heartbeat", lambda: c.beating("srv-b"), 30)
    return c


def rates(redis_server, window_s):
    """Redis CPU seconds per second, one value per STEP_S of the window."""
    out = []
    before, t_before = redis_server.cpu(), time.monotonic()
    for _ in range(max(1, int(window_s // STEP_S))):
        time.sleep(STEP_S)
        after, t_after = redis_server.cpu(), time.monotonic()
        out.append((after - before) / (t_after - t_before))
        before, t_before = after, t_after
    return out


def commands(redis_server):
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in redis_server.r.info("commandstats").items()}


def probe_latency(redis_server, batches, count):
    out = subprocess.run([DRIVER, "probe", redis_server.url, "outbound", str(batches), str(count)],
                         capture_output=True, text=True, timeout=300, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [r["p50_us"] for r in rows], [r["p99_us"] for r in rows]


def run(redis_server, scratch, window_s, counts, probe_batches, log):
    dir = os.path.join(scratch, "cost")
    os.makedirs(dir)
    procs = Procs(dir)
    figures, extra = {}, {}
    try:
        setup(redis_server, procs, dir)
        time.sleep(3)
        baseline = rates(redis_server, window_s)
        base = statistics.median(baseline)
        extra["baseline_redis_cpu_us_per_s"] = [b * 1e6 for b in baseline]
        log(f"  baseline (2 workers, no watchers): Redis {base * 1e6:.0f} µs CPU per s")
        p50, p99 = probe_latency(redis_server, probe_batches, 1000)
        figures["probe_p50_us"], figures["probe_p99_us"] = p50, p99
        log(f"  probe: p50 {statistics.median(p50):.0f} µs, p99 {statistics.median(p99):.0f} µs")
        for n in counts:
            p = procs.spawn(f"watchers-{n}", [DRIVER, "watchers", redis_server.url, "outbound", str(n)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            line = p.stdout.readline().decode().split()
            if len(line) != 3 or line[0] != "ready":
                raise RuntimeError(f"the {n} watchers did not start (see {dir}/watchers-{n}.log)")
            unknown = int(line[2])
            time.sleep(3)
            calls_before, t_before = commands(redis_server), time.monotonic()
            window = rates(redis_server, window_s)
            calls_after, elapsed = commands(redis_server), time.monotonic() - t_before
            p.stdin.close()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
            per_watcher = [(r - base) / n * 1e6 for r in window]
            figures[f"redis_cpu_{n}_us"] = per_watcher
            per_call = {cmd: (calls_after.get(cmd, 0) - calls_before.get(cmd, 0)) / elapsed / n
                        for cmd in calls_after}
            extra[f"commands_per_watcher_per_s_{n}"] = {k: round(v, 3) for k, v in per_call.items() if v > 0.001}
            extra[f"watchers_unknown_{n}"] = unknown
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_call.items(), key=lambda kv: -kv[1]) if v > 0.01)
            log(f"  {n} watchers: {statistics.median(per_watcher):.0f} µs Redis CPU per watcher per s; "
                f"commands per watcher per s: {shown}" + (f"; {unknown} could not read the job" if unknown else ""))
            time.sleep(2)
    finally:
        procs.kill_all()
    return figures, extra
