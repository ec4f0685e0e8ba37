"""Crash hand-overs, repeated: `kill -9` of the holding worker (two workers,
lease 30 s by default) at a phase of its renewal cycle, the killed worker
started again at once (as systemd's Restart= would) and so the new standby;
each takeover measured from the kill to the first journal line of the job
that runs next (the job's own output), on whichever server takes it.

Phases (`--takeover-phase`, env BENCH_TAKEOVER_PHASE):

- random: anywhere in the holder's renewal cycle (lease/3);
- after-renewal: within milliseconds after the holder's watchdog renewed
  (its heartbeat's `renewed_ms` moved);
- before-renewal: in the last 60 ms before its next renewal is due;
- mid-look: around the standby's next look (its heartbeat is written at the
  end of each look, a tick apart), early by about what the reaper takes to
  let go, so that the unlock message lands while the standby is busy;
- busy: at a random phase, on a busy host: the holder's threads on CPU 0
  beside a process spinning there, at the lowest priority (nice 19), so
  that killed they die one at a time, slowly (a reaper once took its worker
  for alive in that moment and the lease ran out: 29.4 s);
- mixed: the five in turn.

Every worker (and, in its log, its reaper) writes to a file of its own in
the run's directory, at `LOCKWATCH_LOG=warn,lockwatch=debug` (the bench's
`BENCH_WORKER_LOG` overrides it). A takeover slower than `SLOW_S` is
reported with those files and the lines around it, and the job's event
stream of that moment.
"""
import datetime
import os
import random
import re
import signal
import subprocess
import time

from common import BEAT, ENTRY, JOURNAL_JOB, KIND, PYTHON, until

SLOW_S = 1.0
PHASES = ("random", "after-renewal", "before-renewal", "mid-look", "busy")
TICK_MS = 1000


def beat(c, node):
    return c.r.hgetall(f"{{{c.job}}}:node:{node}")


def holder(c):
    """The node whose heartbeat names the lock's field, or None."""
    fields = c.r.hkeys(f"{{{c.job}}}:lock")
    for node in c.r.smembers(f"{{{c.job}}}:nodes"):
        if beat(c, node).get(BEAT["LOCK_FIELD"]) in fields and fields:
            return node
    return None


def renewal_base_ms(b):
    """When the holder's lease was last confirmed, as its heartbeat says (Redis ms)."""
    return max(int(b.get(BEAT["RENEWED_MS"]) or 0), int(b.get(BEAT["STARTED_MS"]) or 0))


def stream_since(c, after_s, until_s=None):
    """The job's event stream entries from `after_s` (wall time, s), as (time, fields)."""
    start = f"{int(after_s * 1000)}-0"
    end = f"{int(until_s * 1000)}-0" if until_s else "+"
    return [(int(i.split("-")[0]) / 1000, f) for i, f in c.r.xrange(f"{{{c.job}}}:events", start, end)]


STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z")


def stamped(line):
    m = STAMP.match(line)
    if not m:
        return None
    return datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp()


def log_lines(path, t_from, t_to, tail=0):
    """The lines of a worker's log written between `t_from` and `t_to` (the
    worker's own lines carry a time; its reaper's do not, and count with the
    line before them), and its last `tail` lines whatever their time."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    picked, at = [], None
    for i, line in enumerate(lines):
        at = stamped(line) or at
        if (at is not None and t_from <= at <= t_to) or i >= len(lines) - tail:
            picked.append(line)
    return picked


class Pair:
    """Two workers on one job, each process's log a file of its own."""

    def __init__(self, c, log):
        self.c = c
        self.log = log
        self.starts = {}
        self.logs = {}

    def start(self, node):
        n = self.starts[node] = self.starts.get(node, 0) + 1
        name = f"worker-{node}-{n}"
        self.logs[node] = os.path.join(self.c.procs.dir, f"{name}.log")
        return self.c.worker(node, job=JOURNAL_JOB, log_name=name)

    def standby_ready(self, running, subscribers, within):
        """The other node's current worker beats idle, the name its own, and
        every worker listens for the unlock."""
        node = "srv-b" if running == "srv-a" else "srv-a"
        pid = str(self.c.workers[node].pid)

        def ready():
            b = beat(self.c, node)
            idle = b.get(BEAT["STATE"]) == "idle"
            return b.get(BEAT["PID"]) == pid and idle and self.c.unlock_subscribers() >= subscribers

        until(f"{node}'s worker to stand by", ready, within, every=0.01)


def proc_tree(root):
    """{pid: (ppid, state, name)} of `root` and every process below it, from /proc."""
    links = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        links[int(entry)] = (int(rest[1]), rest[0], name)
    found, i = [root], 0
    while i < len(found):
        found += [p for p, (pp, _, _) in links.items() if pp == found[i] and p not in found]
        i += 1
    return {p: links[p] for p in found if p in links}


def proc_says(pid):
    """What /proc says of a process: its state, parent, what it waits in, per thread."""
    out = []
    try:
        for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            rest = stat[stat.rindex(")") + 2:].split()
            try:
                with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                    wchan = f.read().strip()
            except OSError:
                wchan = "?"
            out.append(f"tid {tid} state {rest[0]} ppid {rest[1]} wchan {wchan}")
    except OSError as e:
        out.append(f"gone ({e.strerror})")
    return out


def hog_cpu_0():
    """A process spinning on CPU 0, until killed."""
    return subprocess.Popen([PYTHON, "-c", "import os\nos.sched_setaffinity(0, {0})\nwhile True: pass"])


def starve(pid):
    """Every thread of `pid` on CPU 0 at the lowest priority (nice 19)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), {0})
            os.setpriority(os.PRIO_PROCESS, int(tid), 19)
        except OSError:
            pass


def kill_moment(c, killed, standby, phase, lease_ms):
    """Waits for the moment of `phase` and returns (wall time to kill at, what it aimed at)."""
    every = lease_ms // 3
    if phase == "after-renewal":
        seen = beat(c, killed).get(BEAT["RENEWED_MS"])
        until("the holder's next renewal", lambda: beat(c, killed).get(BEAT["RENEWED_MS"]) != seen, every / 1000 + 5,
              every=0.002)
        return time.time(), "renewed just now"
    if phase == "mid-look":
        seen = beat(c, standby).get(BEAT["BEAT_MS"])
        until("the standby's next beat", lambda: beat(c, standby).get(BEAT["BEAT_MS"]) != seen, 5, every=0.002)
        # The next look starts a tick after this beat; the reaper takes a few
        # tens of ms to let go: aim its unlock at the look.
        early = random.uniform(-0.02, 0.12)
        return time.time() + TICK_MS / 1000 - early, f"{early * 1000:.0f} ms before the standby's next look"
    base = renewal_base_ms(beat(c, killed)) / 1000
    now = time.time()
    if phase == "before-renewal":
        offset = every / 1000 - random.uniform(0.0, 0.06)
    else:
        offset = random.uniform(0, every / 1000)
    at = base + offset
    while at < now + 0.05:
        at += every / 1000
    return at, f"{(at - base) % (every / 1000):.3f} s into the renewal cycle"


def rounds(c, n, phase, log, lease_ms=30_000, out=None):
    """`n` crash hand-overs on one job; returns [dict per round], appended to
    `out` as they end (what was measured stays when a later round fails)."""
    out = [] if out is None else out
    pair = Pair(c, log)
    c.lockwatch("enable", "--user", "alice")
    pair.start("srv-a")
    until("srv-a's job to start", lambda: c.started("srv-a"), 30)
    pair.start("srv-b")
    until("srv-b's heartbeat", lambda: c.beating("srv-b"), 30)
    until("both workers subscribed to the unlock channel", lambda: c.unlock_subscribers() >= 2, 30)
    subscribers = c.unlock_subscribers()
    for i in range(n):
        killed = until("a holder whose job runs", lambda: holder(c), 60)
        standby = "srv-b" if killed == "srv-a" else "srv-a"
        this = PHASES[i % len(PHASES)] if phase == "mixed" else phase
        at, aim = kill_moment(c, killed, standby, this, lease_ms)
        below = proc_tree(c.workers[killed].pid)
        hog = None
        if this == "busy":
            hog = hog_cpu_0()
            at = max(at, time.time() + 0.3)
            aim += ", its threads starved of CPU"
        time.sleep(max(0.0, at - time.time() - (0.3 if hog else 0)))
        if hog:
            starve(c.workers[killed].pid)
            time.sleep(max(0.0, at - time.time()))
        t0 = time.time()
        os.kill(c.workers[killed].pid, signal.SIGKILL)
        c.workers[killed].wait()
        dead_log = pair.logs[killed]
        pair.start(killed)
        ran = lambda: next(((t, n) for t, n in c.journal_lines() if t > t0), None)  # noqa: E731
        seen = {}
        try:
            ran_at, node = until("the job to run again", ran, SLOW_S, every=0.005)
        except TimeoutError:
            # Slow: what is left of the killed worker's tree, as it waits.
            seen = {pid: proc_says(pid) for pid in below}
            ran_at, node = until("the job to run again", ran, lease_ms / 1000 * 2 + 30, every=0.005)
        finally:
            if hog:
                hog.kill()
                hog.wait()
        took = ran_at - t0
        r = {"takeover_s": took, "on": node, "phase": this, "aim": aim}
        events = stream_since(c, t0 - 0.5, ran_at + 0.5)
        died = next((t for t, f in events if f.get(ENTRY["TYPE"]) == KIND["DIED"] and f.get(ENTRY["NODE"]) == killed),
                    None)
        if died is not None:
            r["let_go_ms"] = (died - t0) * 1000
        shown = f"  takeover {i + 1}/{n} ({this}, {aim}): {took:.3f} s, on {node}"
        if died is not None:
            shown += f" (its reaper let go after {r['let_go_ms']:.0f} ms)"
        log(shown)
        if took > SLOW_S:
            files = [(dead_log, 20)] + [(path, 0) for path in pair.logs.values()]
            r["slow"] = report_slow(c, f"takeover {i + 1}/{n}, kill -9 of {killed}'s worker ({this}, {aim})", files,
                                    t0, ran_at, log, below, seen)
        out.append(r)
        pair.standby_ready(node, subscribers, lease_ms / 1000 * 2 + 30)
    return out


def report_slow(c, title, files, t0, ran_at, log, below=None, seen=None):
    """Says where the time of a slow takeover went: the killed worker's tree
    before the kill and as it waited (when known), the logs' paths and their
    lines around it (`files`: [(path, how many last lines to show whatever
    their time)]), and the job's events; returns the text."""
    lines = [f"  SLOW: {title}: {ran_at - t0:.3f} s after the kill at {t0:.3f}"]
    if below:
        lines.append(f"    the killed worker's tree before the kill, and {SLOW_S:g} s after it:")
        for pid, (ppid, state, name) in below.items():
            lines.append(f"      {pid} ({name}, parent {ppid}, {state}): " + "; ".join((seen or {}).get(pid, ["?"])))
    lines.append("    logs:")
    for path, tail in files:
        lines.append(f"    {path}")
        lines += [f"      {line}" for line in log_lines(path, t0 - 2, ran_at + 1, tail)]
    lines.append("    event stream:")
    for at, f in stream_since(c, t0 - 0.5, ran_at + 0.5):
        rest = " ".join(f"{k}={v}" for k, v in f.items() if k not in (ENTRY["TYPE"], ENTRY["NODE"]))
        lines.append(f"      {at:.3f} (+{at - t0:.3f} s) {f.get(ENTRY['NODE'])} {f.get(ENTRY['TYPE'])} {rest}")
    text = "\n".join(lines)
    log(text)
    return text
