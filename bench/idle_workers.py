"""What idle workers cost Redis: its CPU over a window (30 s by default)
after 15 s of settling, as ms per 30 s and as a share of one core, and the
commands that took the longest. Each job has 20 users' flags on and two
workers (srv-a holding, srv-b standing by), running `sleep`.

    /usr/bin/python3 bench/idle_workers.py target/release/lockwatch LEASE [WINDOW_S]

It needs Debian's python3-redis (`apt-get install python3-redis`), as the
rest of the bench does.

Environment: JOBS (default 1) jobs; WORKERS (default 2) per job, 0 for the
baseline of the same Redis with nothing but the data; DESKS (default 0)
separate `lockwatch watch` processes, each on the first DESK_JOBS (default
1) jobs, the desks' cost (the connections Redis has are printed too);
SETTLE_S (default 15) before the window (a desk settles to its steady pace
after three poll intervals: give desks 45). PAIRS (default 0) with desks:
that many pairs of windows more on the same Redis, the desks paused
(SIGSTOP) in one and running in the other (RESUME_S, default 35, after
they resume: a paused desk counts Redis as silent and looks again), and
the desks' cost each desk as the difference, free of the workers' drift
between runs.
"""
import os
import signal
import subprocess
import sys
import time

import redis

from common import free_port


def cpu_s(r):
    info = r.info("cpu")
    return info["used_cpu_sys"] + info["used_cpu_user"]


def main():
    lockwatch, lease = sys.argv[1], sys.argv[2]
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    jobs = [f"job{i:02}" for i in range(int(os.environ.get("JOBS", "1")))]
    nodes = ("srv-a", "srv-b")[: int(os.environ.get("WORKERS", "2"))]
    desks = int(os.environ.get("DESKS", "0"))
    port = free_port()
    logs = f"/tmp/lockwatch-idle/{port}"
    os.makedirs(logs, exist_ok=True)
    server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                               "--dir", logs], stdout=subprocess.DEVNULL)
    children = []
    try:
        r = redis.Redis(port=port, decode_responses=True)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        url = f"redis://127.0.0.1:{port}"
        for job in jobs:
            # A fence counter, as a Redis that has run lockwatch before has:
            # on a new Redis the first start waits a lease.
            r.set(f"{{{job}}}:fence", 1)
            for i in range(20):
                subprocess.run([lockwatch, "--redis", url, "--job", job, "enable", "--user", f"user{i + 1:02}"],
                               check=True, capture_output=True)
        for job in jobs:
            for node in nodes:
                log = open(f"{logs}/{job}-{node}.log", "w")
                children.append(subprocess.Popen(
                    [lockwatch, "--redis", url, "--job", job, "worker", "--node", node, "--lease", lease,
                     "--", "sleep", "100000"], stdout=subprocess.DEVNULL, stderr=log))
            # The first server of each job holds it.
            time.sleep(0.2)
        watched = ",".join(jobs[: int(os.environ.get("DESK_JOBS", "1"))])
        for _ in range(desks):
            children.append(subprocess.Popen([lockwatch, "--redis", url, "--job", watched, "watch", "--json"],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(float(os.environ.get("SETTLE_S", "15")))
        r.config_resetstat()
        c0, t0 = cpu_s(r), time.monotonic()
        time.sleep(window)
        c1, t1 = cpu_s(r), time.monotonic()
        stats = {k.removeprefix("cmdstat_"): v for k, v in r.info("commandstats").items()}
        per_30s = 1000 * (c1 - c0) * 30 / (t1 - t0)
        clients = r.info("clients")["connected_clients"]
        print(f"{len(jobs)} job(s), {len(nodes)} worker(s) each, {desks} desk(s) on {watched.count(',') + 1} job(s), "
              f"lease {lease}: Redis CPU {per_30s:.0f} ms per 30 s ({per_30s / 300:.2f} % of a core), "
              f"{clients} connections")
        for name, v in sorted(stats.items(), key=lambda kv: -kv[1]["usec"])[:int(os.environ.get("TOP", "10"))]:
            print(f"  {name:14} {v['calls']:7} calls  {v['usec_per_call']:8.1f} µs/call  {v['usec'] / 1000:8.1f} ms")
        pairs = int(os.environ.get("PAIRS", "0")) if desks else 0
        each = []
        for _ in range(pairs):
            for desk in children[-desks:]:
                desk.send_signal(signal.SIGSTOP)
            c0, t0 = cpu_s(r), time.monotonic()
            time.sleep(window)
            paused = (cpu_s(r) - c0) / (time.monotonic() - t0)
            for desk in children[-desks:]:
                desk.send_signal(signal.SIGCONT)
            time.sleep(float(os.environ.get("RESUME_S", "35")))
            c0, t0 = cpu_s(r), time.monotonic()
            time.sleep(window)
            running = (cpu_s(r) - c0) / (time.monotonic() - t0)
            each.append(1e6 * (running - paused) / desks)
            print(f"  paused {1000 * paused * 30:.0f} ms, running {1000 * running * 30:.0f} ms per 30 s: "
                  f"{each[-1]:.0f} µs/s a desk")
        if each:
            print(f"each desk: {sum(each) / len(each):.0f} µs of Redis CPU per second ({min(each):.0f}–{max(each):.0f})")
    finally:
        for child in children:
            # A desk left paused would keep its SIGTERM pending.
            child.send_signal(signal.SIGCONT)
            child.terminate()
        for child in children:
            child.wait()
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
