"""What idle watchers cost Redis, how long one probe takes, and what a
flood on the wake channel costs.

A private Redis holds a realistic job: 20 users' flags and two workers'
heartbeats (one holding, its job running `sleep`). Redis's own CPU
(`INFO cpu`, used_cpu_sys + used_cpu_user) is read every STEP seconds over
a window without watchers (the baseline: workers, expiry, serverCron), then
with 100 and with 1,000 idle watchers, each a `lockwatch watch` process of
its own as on the desktops, and then all in one process (the Rust driver);
the cost per watcher is each step's rate above the baseline's median,
divided by the number of watchers. Last, 20 watcher processes and the two
workers under 200 messages a second on `{outbound}:wake`, which a
supervisor's ACL lets her send.
"""
import json
import os
import statistics
import subprocess
import time

from common import DRIVER, LOCKWATCH, Cluster, Procs, until

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


def per_second(before, after, elapsed):
    return {cmd: (after.get(cmd, 0) - before.get(cmd, 0)) / elapsed for cmd in after}


def probe_latency(redis_server, batches, count):
    out = subprocess.run([DRIVER, "probe", redis_server.url, "outbound", str(batches), str(count)],
                         capture_output=True, text=True, timeout=300, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [r["p50_us"] for r in rows], [r["p99_us"] for r in rows]


def in_process(procs, url, n, dir):
    """N watchers in one process (the Rust driver); returns a stop function."""
    p = procs.spawn(f"watchers-{n}", [DRIVER, "watchers", url, "outbound", str(n)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = p.stdout.readline().decode().split()
    if len(line) != 3 or line[0] != "ready":
        raise RuntimeError(f"the {n} watchers did not start (see {dir}/watchers-{n}.log)")

    def stop():
        p.stdin.close()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
    return int(line[2]), stop


def separate(procs, url, n, dir):
    """N `lockwatch watch --json` processes, as N desktops run them: nothing
    shared, timers that do not line up. Returns how many started unknown
    and a stop function."""
    started = []
    for i in range(n):
        started.append(procs.spawn(f"watch-{n}-{i}", [LOCKWATCH, "--redis", url, "--job", "outbound", "watch", "--json"],
                                   stdout=subprocess.PIPE))
    unknown = 0
    for p in started:
        first = p.stdout.readline()
        if not first:
            raise RuntimeError(f"a watcher of {n} exited before its first status (see {dir}/watch-{n}-*.log)")
        if json.loads(first).get("status", {}).get("state") == "unknown":
            unknown += 1

    def stop():
        for p in started:
            p.terminate()
        for p in started:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        procs.live = [p for p in procs.live if p not in started]
    return unknown, stop


def flood(redis_server, procs, window_s, watchers, rate, log):
    """A supervisor's flood on the wake channel: Redis CPU and reads per
    process per second, idle and while `rate` messages a second go out."""
    url = redis_server.url
    unknown, stop = separate(procs, url, watchers, procs.dir)
    try:
        time.sleep(3)
        idle = statistics.median(rates(redis_server, window_s))
        before, t0 = commands(redis_server), time.monotonic()
        sent, cpu = 0, []
        cpu_before, t_cpu = redis_server.cpu(), time.monotonic()
        while time.monotonic() - t0 < window_s:
            redis_server.r.publish("{outbound}:wake", "flood")
            sent += 1
            time.sleep(max(0.0, t0 + sent / rate - time.monotonic()))
            if time.monotonic() - t_cpu >= STEP_S:
                now = redis_server.cpu()
                cpu.append((now - cpu_before) / (time.monotonic() - t_cpu))
                cpu_before, t_cpu = now, time.monotonic()
        after, elapsed = commands(redis_server), time.monotonic() - t0
    finally:
        stop()
    # Probe calls: the workers' other scripts (heartbeat, lock) are evalsha.
    reads = sum(after.get(c, 0) - before.get(c, 0) for c in ("fcall_ro", "evalsha_ro", "eval_ro"))
    per_process = reads / elapsed / (watchers + 2)
    log(f"  flood ({sent / elapsed:.0f} messages/s on the wake channel, {watchers} watchers, 2 workers): Redis "
        f"{statistics.median(cpu) * 1e3:.1f} ms CPU per s (idle {idle * 1e3:.1f}); {per_process:.2f} reads per process per s")
    return {"flood_cpu_ms": [c * 1e3 for c in cpu], "flood_idle_cpu_ms": [idle * 1e3],
            "flood_reads_per_process": [per_process]}


def run(redis_server, scratch, window_s, counts, probe_batches, log):
    dir = os.path.join(scratch, "cost")
    os.makedirs(dir)
    procs = Procs(dir)
    figures, extra = {}, {}
    try:
        setup(redis_server, procs, dir)
        time.sleep(3)
        calls_before, t_before = commands(redis_server), time.monotonic()
        baseline = rates(redis_server, window_s)
        base_calls = per_second(calls_before, commands(redis_server), time.monotonic() - t_before)
        base = statistics.median(baseline)
        extra["baseline_redis_cpu_us_per_s"] = [b * 1e6 for b in baseline]
        log(f"  baseline (2 workers, no watchers): Redis {base * 1e6:.0f} µs CPU per s")
        p50, p99 = probe_latency(redis_server, probe_batches, 1000)
        figures["probe_p50_us"], figures["probe_p99_us"] = p50, p99
        log(f"  probe: p50 {statistics.median(p50):.0f} µs, p99 {statistics.median(p99):.0f} µs")
        for how, start in (("separate", separate), ("in one process", in_process)):
            for n in counts:
                unknown, stop = start(procs, redis_server.url, n, dir)
                try:
                    time.sleep(3)
                    calls_before, t_before = commands(redis_server), time.monotonic()
                    window = rates(redis_server, window_s)
                    calls_after, elapsed = commands(redis_server), time.monotonic() - t_before
                finally:
                    stop()
                per_watcher = [(r - base) / n * 1e6 for r in window]
                tag = f"{n}" if how == "in one process" else f"sep_{n}"
                figures[f"redis_cpu_{tag}_us"] = per_watcher
                # The watchers' own: the workers' calls (the baseline's) taken out.
                rates_now = per_second(calls_before, calls_after, elapsed)
                per_call = {cmd: (v - base_calls.get(cmd, 0)) / n for cmd, v in rates_now.items()}
                extra[f"commands_per_watcher_per_s_{tag}"] = {k: round(v, 3) for k, v in per_call.items() if v > 0.001}
                extra[f"watchers_unknown_{tag}"] = unknown
                shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_call.items(), key=lambda kv: -kv[1]) if v > 0.01)
                log(f"  {n} watchers, {how}: {statistics.median(per_watcher):.1f} µs Redis CPU per watcher per s; "
                    f"commands per watcher per s: {shown}" + (f"; {unknown} could not read the job" if unknown else ""))
                time.sleep(2)
        figures.update(flood(redis_server, procs, window_s, 20, 200, log))
    finally:
        procs.kill_all()
    return figures, extra
