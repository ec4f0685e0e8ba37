"""Faults and hand-overs: lockwatch and its peers under the same fault, in the
same run, on one private Redis (each peer on a key of its own).

- kill: `kill -9` of the holding worker (two workers, lease 30 s) and, at the
  same instant, of a redis-py Lock holder, a Redisson-style holder (each with
  a waiter) and a lone Redisson-style holder watched by an EXISTS poller.
- term: SIGTERM of the holding worker; the peers' holders release cleanly.
  term-program: the same when the job's process is a program (`exec sleep`)
  rather than a shell.
- flag: the last flag off (`lockwatch disable`) with a Redisson-style waiter
  queued on the worker's lock.
- stall: the job stops printing (`--stall-after 2s`) until `stalled`.
- alone: `kill -9` of the only worker (no server left to tell it).
- restart: `kill -9` of the only worker, started again at once.
- frozen: Redis stopped (SIGSTOP) under two beating workers, until `unreachable`.
- first: a new Redis (no fence counter yet): enable → the job runs, which
  waits one lease by design (a holder of lost data may still run it).
- redisson-unlock, redisson-kill: a real Redisson (node-redisson) holder
  unlocks, or is SIGKILLed, while a worker waits (bench/redisson_peer.py).
- takeovers: `kill -9` of the holder's worker N times in a row at a phase of
  its renewal cycle, the killed one started again as the standby
  (bench/takeover.py).

Each run's directory (under bench/results/runs/) keeps every worker's log,
its reaper's lines in it; a takeover slower than 1 s is reported with them.
"""
import contextlib
import os
import random
import re
import signal
import time

import redisson_peer
import takeover
from common import BEAT, ENTRY, FLAG, JOURNAL_JOB, KIND, PROGRAM_JOB, Cluster, Peer, Procs, until

STALL_AFTER_S = 2.0
HOLDERS = ("rp_holder", "rs_holder", "solo_holder")
# Where the scenarios say what they found beyond their figures (a slow takeover).
LOG = print


@contextlib.contextmanager
def rig(redis_server, dir):
    """A job on the bench's Redis and the run's children, all gone when the run ends."""
    procs = Procs(dir)
    try:
        yield procs, Cluster(redis_server, procs, dir)
    finally:
        procs.kill_all()


def is_event(name=None):
    return lambda v: isinstance(v, dict) and v.get("event") not in (None, "status") and (name is None or v["event"] == name)


def start_peers(procs, port):
    """A holder and a waiter each of redis-py's Lock and the Redisson style,
    and a lone Redisson-style holder under an EXISTS poller."""
    p = {
        "rp_holder": Peer(procs, "rp-holder", "redispy-holder", port, "rp-lock"),
        "rs_holder": Peer(procs, "rs-holder", "redisson-holder", port, "{rs}:lock"),
        "solo_holder": Peer(procs, "solo-holder", "redisson-holder", port, "{solo}:lock"),
    }
    for name in HOLDERS:
        p[name].stamp("held", 15)
    p["rp_waiter"] = Peer(procs, "rp-waiter", "redispy-waiter", port, "rp-lock")
    p["rs_waiter"] = Peer(procs, "rs-waiter", "redisson-waiter", port, "{rs}:lock")
    p["poller"] = Peer(procs, "poller", "exists-poller", port, "{solo}:lock")
    p["rp_waiter"].stamp("waiting", 15)
    p["rs_waiter"].stamp("waiting", 15)
    p["poller"].stamp("seen", 15)
    return p


def stream_times(c, node, after=0.0):
    """{entry type: Redis time (s) of its first entry after `after`} on the
    job's event stream for `node`: when the worker noticed, stopped, released."""
    out = {}
    for entry_id, fields in c.r.xrange(f"{{{c.job}}}:events"):
        at = int(entry_id.split("-")[0]) / 1000
        if fields.get(ENTRY["NODE"]) == node and at >= after:
            out.setdefault(fields.get(ENTRY["TYPE"]), at)
    return out


def two_workers(c, job=JOURNAL_JOB):
    """srv-a holds and runs the job, srv-b stands by and listens for the unlock."""
    c.lockwatch("enable", "--user", "alice")
    c.worker("srv-a", job=job)
    until("srv-a's job to start", lambda: c.started("srv-a"), 30)
    c.worker("srv-b", job=job)
    until("srv-b's heartbeat", lambda: c.beating("srv-b"), 30)
    until("both workers subscribed to the unlock channel", lambda: c.unlock_subscribers() >= 2, 30)


def kill_run(redis_server, dir):
    with rig(redis_server, dir) as (procs, c):
        two_workers(c)
        watch = c.watch()
        peers = start_peers(procs, redis_server.port)
        # The watcher has seen both heartbeats; a random phase against the
        # once-a-second polls and heartbeats, so runs do not all hit the same.
        time.sleep(1.5 + random.random())
        t0 = time.time()
        os.kill(c.workers["srv-a"].pid, signal.SIGKILL)
        for name in HOLDERS:
            peers[name].kill()
        first_at, first = watch.wait_for("an event after the kill", is_event(), 60, after=t0)
        failover_at, _ = watch.wait_for("the failover event", is_event("failover"), 60, after=t0)
        b_started = until("srv-b's job to start", lambda: c.started("srv-b"), 60)
        acquired = int(c.r.hget("{outbound}:node:srv-b", BEAT["STARTED_MS"])) / 1000
        if b_started - t0 > takeover.SLOW_S:
            logs = [(os.path.join(dir, "worker-srv-a.log"), 20), (os.path.join(dir, "worker-srv-b.log"), 0)]
            takeover.report_slow(c, f"kill: srv-b's job (first event {first['event']})", logs, t0, b_started, LOG)
        return {
            "detect_s": first_at - t0,
            "first_event": first["event"],
            "failover_ms": (failover_at - acquired) * 1000,
            "takeover_s": b_started - t0,
            "redispy_kill_s": peers["rp_waiter"].stamp("held", 60) - t0,
            "redisson_kill_s": peers["rs_waiter"].stamp("held", 60) - t0,
            "exists_kill_s": peers["poller"].stamp("gone", 60) - t0,
        }


def term_run(redis_server, dir):
    with rig(redis_server, dir) as (procs, c):
        two_workers(c)
        peers = start_peers(procs, redis_server.port)
        t0 = time.time()
        c.workers["srv-a"].send_signal(signal.SIGTERM)
        for name in HOLDERS:
            peers[name].release()
        b_started = until("srv-b's job to start", lambda: c.started("srv-b", after=t0), 30)
        released = {name: peers[name].stamp("released", 15) for name in HOLDERS}
        steps = until("the worker's released entry",
                      lambda: (t := stream_times(c, "srv-a")).get(KIND["RELEASED"]) and t, 10)
        return {
            "handover_ms": (b_started - t0) * 1000,
            "term_job_stopped_ms": (steps[KIND["JOB_EXITED"]] - t0) * 1000,
            "term_released_ms": (steps[KIND["RELEASED"]] - t0) * 1000,
            "redispy_release_ms": (peers["rp_waiter"].stamp("held", 15) - released["rp_holder"]) * 1000,
            "redisson_release_ms": (peers["rs_waiter"].stamp("held", 15) - released["rs_holder"]) * 1000,
            "exists_release_ms": (peers["poller"].stamp("gone", 15) - released["solo_holder"]) * 1000,
        }


def term_program_run(redis_server, dir):
    """SIGTERM hand-over when the job's process is a program, not a shell."""
    with rig(redis_server, dir) as (procs, c):
        two_workers(c, job=PROGRAM_JOB)
        t0 = time.time()
        c.workers["srv-a"].send_signal(signal.SIGTERM)
        b_started = until("srv-b's job to start", lambda: c.started("srv-b", after=t0), 30)
        return {"handover_program_ms": (b_started - t0) * 1000}


def flag_run(redis_server, dir):
    with rig(redis_server, dir) as (procs, c):
        c.lockwatch("enable", "--user", "alice")
        c.worker("srv-a")
        until("srv-a's job to start", lambda: c.started("srv-a"), 30)
        waiter = Peer(procs, "lw-waiter", "redisson-waiter", redis_server.port, "{outbound}:lock")
        waiter.stamp("waiting", 15)
        time.sleep(0.5 + random.random())  # a random phase against the worker's once-a-second look
        t_cmd = time.time()
        c.lockwatch("disable", "--user", "alice")
        flag_written = int(c.r.hget("{outbound}:enabled:alice", FLAG["TIME"])) / 1000
        held = waiter.stamp("held", 30)
        # The worker records its release right after it; the waiter may be quicker.
        steps = until("the worker's released entry",
                      lambda: (t := stream_times(c, "srv-a", after=flag_written)).get(KIND["RELEASED"]) and t, 10)
        return {
            "flag_off_ms": (held - flag_written) * 1000,
            "disable_cli_ms": (flag_written - t_cmd) * 1000,
            "flag_noticed_ms": (steps[KIND["FLAGS_CHANGED"]] - flag_written) * 1000,
            "flag_job_stopped_ms": (steps[KIND["JOB_EXITED"]] - flag_written) * 1000,
            "flag_released_ms": (steps[KIND["RELEASED"]] - flag_written) * 1000,
        }


def stall_run(redis_server, dir):
    hang = os.path.join(dir, "hang")
    with rig(redis_server, dir) as (procs, c):
        # Prints its time every 0.1 s until told to hang, then stays silent.
        job = f'while [ ! -e "{hang}" ]; do date +%s.%N; sleep 0.1; done; exec sleep 1000000'
        c.lockwatch("enable", "--user", "alice")
        c.worker("srv-a", "--stall-after", f"{STALL_AFTER_S:g}s", job=job)
        until("the job running", lambda: c.lockwatch("status", check=False).returncode == 0, 30, every=0.2)
        watch = c.watch()
        time.sleep(1.0 + random.random())
        t_hang = time.time()
        open(hang, "w").close()
        event_at, _ = watch.wait_for("the stalled event", is_event("stalled"), 30, after=t_hang)
        with open(os.path.join(dir, "worker-srv-a.log")) as f:
            last = max(float(m) for m in re.findall(r"^(\d{9,}\.\d+)$", f.read(), re.M))
        return {"stall_s": event_at - (last + STALL_AFTER_S)}


def alone_run(redis_server, dir):
    """The holder killed with no other worker to announce it."""
    with rig(redis_server, dir) as (procs, c):
        c.lockwatch("enable", "--user", "alice")
        c.worker("srv-a")
        until("srv-a's job to start", lambda: c.started("srv-a"), 30)
        watch = c.watch()
        time.sleep(1.0 + random.random())
        t0 = time.time()
        os.kill(c.workers["srv-a"].pid, signal.SIGKILL)
        first_at, _ = watch.wait_for("an event after the kill", is_event(), 60, after=t0)
        return {"detect_alone_s": first_at - t0}


def restart_run(redis_server, dir):
    """The only worker killed and started again at once, as systemd's Restart= or an admin would."""
    with rig(redis_server, dir) as (procs, c):
        c.lockwatch("enable", "--user", "alice")
        c.worker("srv-a")
        until("srv-a's job to start", lambda: c.started("srv-a"), 30)
        time.sleep(1.0 + random.random())
        t0 = time.time()
        os.kill(c.workers["srv-a"].pid, signal.SIGKILL)
        c.worker("srv-a")
        return {"restart_s": until("srv-a's job to start again", lambda: c.started("srv-a", after=t0), 60) - t0}


def frozen_run(redis_server, dir):
    """Redis frozen while two workers beat: the watcher says unreachable."""
    with rig(redis_server, dir) as (procs, c):
        two_workers(c)
        watch = c.watch()
        time.sleep(2.0 + random.random())
        t0 = time.time()
        os.kill(redis_server.proc.pid, signal.SIGSTOP)
        try:
            at, _ = watch.wait_for("the unreachable event", is_event("unreachable"), 30, after=t0)
        finally:
            os.kill(redis_server.proc.pid, signal.SIGCONT)
        return {"frozen_s": at - t0}


FIRST_LEASE_S = 5


def first_run(redis_server, dir):
    """The first holder on a Redis with no fence counter waits one lease."""
    with rig(redis_server, dir) as (procs, c):
        c.r.delete("{outbound}:fence")
        c.lockwatch("enable", "--user", "alice")
        t0 = time.time()
        c.worker("srv-a", lease=f"{FIRST_LEASE_S}s")
        return {"first_start_s": until("srv-a's job to start", lambda: c.started("srv-a"), 60) - t0}


def redisson(measure):
    def scenario(redis_server, dir):
        with rig(redis_server, dir) as (procs, c):
            return measure(redis_server, dir, procs, c)
    return scenario


SCENARIOS = {"kill": kill_run, "alone": alone_run, "restart": restart_run, "frozen": frozen_run, "first": first_run, "term": term_run,
             "term-program": term_program_run, "flag": flag_run, "stall": stall_run,
             "redisson-unlock": redisson(redisson_peer.unlock_run), "redisson-kill": redisson(redisson_peer.kill_run)}


def takeovers_run(redis_server, dir, n, phase, log, out):
    """`n` crash hand-overs in a row on one pair of workers, into `out`."""
    with rig(redis_server, dir) as (procs, c):
        takeover.rounds(c, n, phase, log, out=out)


def run(redis_server, scratch, runs, log, takeovers=5, phase="random"):
    """Each scenario `runs` times on a flushed Redis, then `takeovers` crash
    hand-overs in a row at `phase`; returns {figure: [values]}, the
    failures seen, and {figure: why it has no values}."""
    global LOG
    LOG = log
    figures, failures, skipped = {}, [], {}
    why_not = redisson_peer.available()
    if why_not:
        skipped = {"redisson_unlock_ms": why_not, "redisson_kill_job_s": why_not}
        log(f"  redisson: skipped: {why_not}")
    for name, scenario in SCENARIOS.items():
        if name.startswith("redisson") and why_not:
            continue
        # The flag's figure spreads over the worker's 1 s look; its runs are cheap.
        n = runs * 2 if name == "flag" else runs
        for i in range(n):
            redis_server.r.flushall()
            dir = os.path.join(scratch, f"{name}-{i + 1}")
            os.makedirs(dir)
            started = time.monotonic()
            try:
                result = scenario(redis_server, dir)
            except (TimeoutError, RuntimeError, KeyError, ValueError) as e:
                failures.append(f"{name} run {i + 1}: {e}")
                log(f"  {name} {i + 1}/{n}: failed: {e}")
                continue
            for key, value in result.items():
                figures.setdefault(key, []).append(value)
            shown = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items())
            log(f"  {name} {i + 1}/{n} ({time.monotonic() - started:.0f} s): {shown}")
    if takeovers:
        redis_server.r.flushall()
        dir = os.path.join(scratch, "takeovers")
        os.makedirs(dir)
        log(f"  takeovers: kill -9 of the holder's worker {takeovers}× in a row ({phase} phase), "
            f"the killed one started again as the standby; logs in {dir}")
        rounds = []
        try:
            takeovers_run(redis_server, dir, takeovers, phase, log, rounds)
        except (TimeoutError, RuntimeError, KeyError, ValueError) as e:
            failures.append(f"takeovers, after {len(rounds)} of {takeovers}: {e}")
            log(f"  takeovers: failed after {len(rounds)}: {e}")
        figures["crash_takeover_s"] = [r["takeover_s"] for r in rounds]
        figures["crash_let_go_ms"] = [r["let_go_ms"] for r in rounds if "let_go_ms" in r]
        figures["crash_slow"] = [r["slow"] for r in rounds if "slow" in r]
        figures["crash_phase"] = [phase]
    return figures, failures, skipped
