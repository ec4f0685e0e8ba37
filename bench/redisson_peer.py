"""Hand-overs from a real Redisson holder to a lockwatch worker, beside the
worker → worker one: node-redisson 1.0.4 (tests/redisson/hold.mjs, a port of
Java Redisson's RLock: same hash, watchdog and unlock message; installed by
`npm ci` in tests/redisson) holds `{outbound}:lock` while a worker (lease
30 s) stands by.

- unlock: Redisson unlocks (DEL + PUBLISH 0) → the worker's job runs, from
  its last tick into its journal, written just before it calls unlock (its
  `unlocked` line comes after the call's answer, which the worker may beat);
- kill: Redisson's process SIGKILLed → the worker's job runs, which waits for
  the lock's expiry (nothing of Redisson's says it stopped): the watchdog's
  timeout at most, `BENCH_REDISSON_WATCHDOG_MS` (default 5,000 ms, renewed
  every third; Java's default is 30 s).

Without node or the npm modules, `available()` says why and the rows say so.
"""
import os
import random
import shutil
import signal
import subprocess
import time

from common import JOURNAL_JOB, ROOT, Lines, until

HELPER = os.path.join(ROOT, "tests", "redisson")
WATCHDOG_MS = int(os.environ.get("BENCH_REDISSON_WATCHDOG_MS", "5000"))


def available():
    """None when node-redisson can run here, else why not (one sentence)."""
    if not shutil.which("node"):
        return "node is not installed (apt-get install nodejs), so no Redisson holder ran"
    if not os.path.isdir(os.path.join(HELPER, "node_modules", "node-redisson")):
        return "node-redisson is not installed in tests/redisson (run npm ci there), so no Redisson holder ran"
    return None


class Holder:
    """node-redisson holding the job's lock (hold.mjs); its lines `locked <ms>`, `unlocked <ms>`."""

    def __init__(self, procs, name, url, hold, journal):
        self.proc = procs.spawn(name, ["node", os.path.join(HELPER, "hold.mjs"), url, journal, hold, str(WATCHDOG_MS)],
                                stdout=subprocess.PIPE)
        self.lines = Lines(self.proc)

    def said(self, what, timeout):
        """When (wall time, s) it said `what`, as it printed it."""
        _, line = self.lines.wait_for(f"node-redisson to say {what}",
                                      lambda v: isinstance(v, str) and v.startswith(what + " "), timeout)
        return int(line.split()[1]) / 1000


def standing_by(c, node):
    """`node`'s worker beats and listens for the unlock: it waits for the lock."""
    until(f"{node}'s heartbeat", lambda: c.beating(node), 30)
    until(f"{node} subscribed to the unlock channel", lambda: c.unlock_subscribers() >= 1, 30)


def unlock_run(redis_server, dir, procs, c):
    """Redisson holds 3 s while the worker starts and waits, then unlocks."""
    c.lockwatch("enable", "--user", "alice")
    ticks = os.path.join(dir, "redisson-journal.txt")
    holder = Holder(procs, "redisson-unlock", redis_server.url, "3000", ticks)
    holder.said("locked", 20)
    c.worker("srv-a")
    standing_by(c, "srv-a")
    if not c.r.exists(f"{{{c.job}}}:lock") or c.started("srv-a"):
        raise RuntimeError("Redisson let go before the worker stood by: nothing handed over")
    holder.said("unlocked", 20)
    with open(ticks) as f:
        last_tick = max(int(line.split()[2]) for line in f if line.strip()) / 1e9
    started = until("srv-a's job after the unlock", lambda: c.started("srv-a", after=last_tick), 60, every=0.005)
    return {"redisson_unlock_ms": (started - last_tick) * 1000}


def kill_run(redis_server, dir, procs, c):
    """Redisson holds (its watchdog renewing) while the worker waits; then
    its process is SIGKILLed at a random phase of the renewals."""
    c.lockwatch("enable", "--user", "alice")
    holder = Holder(procs, "redisson-kill", redis_server.url, "forever", os.path.join(dir, "redisson-journal.txt"))
    holder.said("locked", 20)
    c.worker("srv-a")
    standing_by(c, "srv-a")
    time.sleep(random.uniform(0.5, 0.5 + WATCHDOG_MS / 3000))
    lock = f"{{{c.job}}}:lock"
    held, pttl = c.r.hkeys(lock), c.r.pttl(lock)
    t0 = time.time()
    os.kill(holder.proc.pid, signal.SIGKILL)
    # Gone once Redisson's field is (the worker takes the lock at once after).
    gone = until("Redisson's lock to expire", lambda: c.r.hkeys(lock) != held and time.time(),
                 WATCHDOG_MS / 1000 + 10, every=0.002)
    started = until("srv-a's job after the kill", lambda: c.started("srv-a", after=t0), WATCHDOG_MS / 1000 + 40, every=0.005)
    return {"redisson_kill_job_s": started - t0, "redisson_kill_expiry_s": gone - t0,
            "redisson_kill_after_expiry_ms": (started - gone) * 1000, "redisson_kill_pttl_ms": pttl}
