"""lockwatch's benchmarks: run by `bash bench/run.sh [--quick]` (which builds
the release binaries first). Prints a table (median, min and max of each
measure next to its goal) and writes the figures as JSON.

Figures, never pass/fail: the machine is shared and noisy, so each measure is
the median of several runs, and the machine (cores, load) is printed with it.
Sections: faults (detection, hand-over, the peers under the same faults),
cost (Redis CPU per idle watcher, probe latency), tray (the app and a worker
idle, the app's memory beside an empty Tauri tray app's; the dashboard
opened and closed).
"""
import argparse
import collections
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import cost
import faults
import tray_memory
from common import DESKTOP, DRIVER, EMPTY_TRAY, LOCKWATCH, PYTHON, ROOT, TRAY, Cluster, Procs, Redis, until

# id -> (group, label, unit, goal (at most), goal as text, note)
MEASURES = {
    "detect_s": ("detection", "kill -9 of the holder → watcher's first event", "s", 0.5, "≤ 0.5 s", ""),
    "detect_alone_s": ("detection", "the same, no other worker left to tell it", "s", 2, "≤ 2 s", ""),
    "frozen_s": ("detection", "Redis frozen (SIGSTOP) → `unreachable`, 2 workers", "s", 3, "≤ 3 s", ""),
    "failover_ms": ("detection", "new holder takes the lock → `failover` event", "ms", None, "keep (18 ms)", ""),
    "stall_s": ("detection", "job silent → `stalled` event, past --stall-after 2s", "s", None, "—", ""),
    "first_start_s": ("hand-over", "new Redis, no fence yet: worker start → job runs", "s", None, "= lease (5 s)",
                      "by design: a holder of data Redis lost may still run the job, so the first waits a lease"),
    "takeover_s": ("hand-over", "kill -9 of the holder's worker → other server's job runs", "s", 1, "≤ 1 s",
                   "its reaper lets go of the lock once the job's tree is reaped; lease 30 s"),
    "crash_takeover_s": ("hand-over", "the same N× in a row, killed one restarted as standby", "s", 1, "≤ 1 s, all n",
                         "kill -9 at a phase of the holder's renewal cycle (--takeover-phase); from the job's own output"),
    "redisson_unlock_ms": ("hand-over", "Redisson (node-redisson) unlock → worker's job runs", "ms", 1000, "≤ 1 s",
                           "tests/redisson/hold.mjs; from its last tick, just before it calls unlock; worker lease 30 s"),
    "redisson_kill_job_s": ("hand-over", "Redisson holder SIGKILLed → worker's job runs", "s", None, "≈ lock's expiry",
                            "nothing of Redisson's says it stopped: its lock expires (lockWatchdogTimeout)"),
    "restart_s": ("hand-over", "kill -9 of the worker, started again at once → its job runs", "s", 1, "≤ 1 s",
                  "the same server, no other; includes the new process's start; lease 30 s"),
    "handover_ms": ("hand-over", "SIGTERM of the holder → other server's job runs", "ms", None, "—", ""),
    "handover_program_ms": ("hand-over", "the same, the job a program (`exec sleep`)", "ms", None, "—", ""),
    "flag_off_ms": ("hand-over", "last flag off → a Redisson waiter holds the lock", "ms", 200, "≤ 200 ms",
                    "from the flag write (Redis time)"),
    "redispy_kill_s": ("peers", "redis-py Lock: holder kill -9 → waiter holds", "s", None, "peer", ""),
    "redispy_release_ms": ("peers", "redis-py Lock: release → waiter holds", "ms", None, "peer", ""),
    "redisson_kill_s": ("peers", "Redisson-style: holder kill -9 → waiter holds", "s", None, "peer", ""),
    "redisson_release_ms": ("peers", "Redisson-style: unlock → waiter holds", "ms", None, "peer", ""),
    "exists_kill_s": ("peers", "EXISTS poller (1 s): holder kill -9 → noticed", "s", None, "peer", ""),
    "exists_release_ms": ("peers", "EXISTS poller (1 s): release → noticed", "ms", None, "peer", ""),
    "redis_cpu_sep_100_us": ("redis cost", "Redis CPU per idle watcher, 100 separate processes", "µs/s", 20,
                             "≤ 20 µs/s", "each a `lockwatch watch` of its own, as desktops run"),
    "redis_cpu_sep_1000_us": ("redis cost", "Redis CPU per idle watcher, 1,000 separate processes", "µs/s", 20,
                              "≤ 20 µs/s", ""),
    "redis_cpu_100_us": ("redis cost", "Redis CPU per idle watcher, 100 in one process", "µs/s", 20, "≤ 20 µs/s",
                         "timers that line up: beside the separate figure, not instead of it"),
    "redis_cpu_1000_us": ("redis cost", "Redis CPU per idle watcher, 1,000 in one process", "µs/s", 20, "≤ 20 µs/s", ""),
    "flood_reads_per_process": ("redis cost", "wake flood, 200 msg/s: reads of the job per process per s", "/s", 5,
                                "a few (≤ 5 /s)", "20 watcher processes and 2 workers; a wake-up reads at most every 250 ms"),
    "flood_cpu_ms": ("redis cost", "wake flood, 200 msg/s: Redis CPU", "ms/s", None, "—", ""),
    "probe_p50_us": ("redis cost", "one probe round trip, p50 (per batch of 1,000)", "µs", None, "—", ""),
    "probe_p99_us": ("redis cost", "one probe round trip, p99 (per batch of 1,000)", "µs", None, "—", ""),
    "tray_rss_mb": ("tray", "tray app idle RSS, window never opened", "MB", None, "— (judged against the empty app)",
                    "shared library pages the kernel can drop count here"),
    "empty_rss_mb": ("tray", "empty Tauri tray app idle RSS (bench/empty-tray)", "MB", None, "—",
                     "the floor: Tauri, a tray icon, a Quit menu, no window; same desktop, settle and window"),
    "tray_rss_ratio": ("tray", "tray app idle RSS ÷ empty app's (step by step)", "×", 1.2, "≤ 1.2 ×", ""),
    "empty_no_gl_rss_mb": ("tray", "empty app idle RSS, GDK_GL=disable as the app sets", "MB", None, "—",
                           "like for like: the app skips GTK's GLX probe, which loads Mesa and LLVM"),
    "tray_rss_ratio_no_gl": ("tray", "tray app idle RSS ÷ empty app's with GDK_GL=disable", "×", 1.2, "≤ 1.2 ×", ""),
    "tray_private_dirty_mb": ("tray", "tray app idle Private_Dirty (kernel cannot drop)", "MB", 20, "≤ 20 MB", ""),
    "empty_private_dirty_mb": ("tray", "empty app idle Private_Dirty", "MB", None, "—", ""),
    "empty_no_gl_private_dirty_mb": ("tray", "empty app idle Private_Dirty, GDK_GL=disable", "MB", None, "—", ""),
    "tray_pss_mb": ("tray", "tray app idle PSS, window never opened", "MB", None, "—", "shared library pages split"),
    "empty_pss_mb": ("tray", "empty app idle PSS", "MB", None, "—", ""),
    "tray_cpu_pct": ("tray", "tray app idle CPU (% of one core), window never opened", "%", 0.5, "≤ 0.5 %", ""),
    "dashboard_open_mb": ("tray", "dashboard open: RSS of app + dashboard + WebKit", "MB", None, "—",
                          "a sum of RSS: pages the processes share count in each"),
    "tray_after_dashboard_mb": ("tray", "dashboard opened+closed: RSS vs never opened", "MB", 10, "≤ +10 MB",
                                "the app and every process below it"),
    "tray_after_dashboard_rss_mb": ("tray", "dashboard opened+closed: tray process RSS vs idle", "MB", 10,
                                    "≤ +10 MB, all n", "the tray's process alone, after each cycle"),
    "tray_after_dashboard_private_dirty_mb": ("tray", "dashboard opened+closed: tray Private_Dirty vs idle", "MB",
                                              10, "≤ +10 MB, all n", ""),
    "tray_after_dashboard_pss_mb": ("tray", "dashboard opened+closed: tray process PSS vs idle", "MB", None, "—", ""),
    "worker_rss_mb": ("tray", "worker idle RSS (holding, job in `sleep`)", "MB", None, "—", ""),
    "worker_cpu_pct": ("tray", "worker idle CPU (% of one core, holding)", "%", None, "—", ""),
}

# Judged on their largest value, not their median: memory that a dashboard
# leaves behind grows cycle by cycle, so the last cycles are the worst.
BY_MAX = {"tray_after_dashboard_rss_mb", "tray_after_dashboard_private_dirty_mb", "crash_takeover_s"}

# Where the time of a hand-over goes, from the worker's event stream (Redis
# time of each entry): shown as a note under the measure.
BREAKDOWN = {
    "handover_ms": ("from the SIGTERM", [("term_job_stopped_ms", "job stopped"), ("term_released_ms", "lock released")]),
    "flag_off_ms": ("from the flag write", [("flag_noticed_ms", "worker noticed"), ("flag_job_stopped_ms", "job stopped"),
                                            ("flag_released_ms", "lock released")]),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def loadavg():
    return round(os.getloadavg()[0], 2)


def machine():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_gb = int(f.readline().split()[1]) / 1024 / 1024
    git = lambda *a: subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    redis_version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()[2]
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "memory_gb": round(mem_gb, 1),
        "kernel": platform.release(),
        "redis": redis_version.removeprefix("v="),
        "commit": git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--", "src", "src-tauri") else ""),
        "load_1min_start": loadavg(),
    }


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def fmt(v):
    if v is None:
        return "—"
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"


def table(measures, info, command):
    out = [f"lockwatch bench — {info['date']} — {command}",
           f"machine: {info['cores']} cores ({info['cpu']}), {info['memory_gb']} GB, Linux {info['kernel']}, "
           f"redis {info['redis']}, commit {info['commit']}",
           f"load (1-min average): {info['load_1min_start']} at start, {info['load_1min_end']} at end, "
           f"{min(info['load_samples'])}–{max(info['load_samples'])} between sections",
           ""]
    head = f"{'measure':<56} {'unit':>5} {'median':>8} {'min':>8} {'max':>8} {'n':>3}  {'goal':<16} met"
    out += [head, "-" * len(head)]
    group = None
    for m in measures:
        if m["group"] != group:
            group = m["group"]
            out.append(f"[{group}]")
        met = {True: "yes", False: "NO", None: ""}[m["met"]]
        out.append(f"  {m['label']:<54} {m['unit']:>5} {fmt(m['median']):>8} {fmt(m['min']):>8} {fmt(m['max']):>8} "
                   f"{m['runs']:>3}  {m['goal_text']:<16} {met}")
    out.append("n: runs of a fault; 5-s steps of one idle window (redis cost, tray); batches of 1,000 probes")
    notes = [f"  {m['label']}: {m['note']}" for m in measures if m["note"]]
    if notes:
        out += ["", "notes:", *notes]
    return "\n".join(out)


def start_xvfb():
    """An Xvfb on a display nobody uses (high numbers: others' tests take :0 and :99)."""
    for number in range(140, 240):
        if os.path.exists(f"/tmp/.X{number}-lock") or os.path.exists(f"/tmp/.X11-unix/X{number}"):
            continue
        xvfb = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            until("Xvfb", lambda: xvfb.poll() is not None or os.path.exists(f"/tmp/.X11-unix/X{number}"), 10)
        except TimeoutError:
            xvfb.kill()
            xvfb.wait()
            continue
        if xvfb.poll() is None:
            return xvfb, number
        xvfb.wait()
    raise RuntimeError("no free X display between :140 and :239 for Xvfb")


def tray_section(redis_server, scratch, seconds, cycles, failures):
    """The app and two workers on a job enabled for alice, under Xvfb."""
    dir = os.path.join(scratch, "tray")
    os.makedirs(dir)
    redis_server.r.flushall()
    procs = Procs(dir)
    c = Cluster(redis_server, procs, dir)
    xvfb = None
    try:
        xvfb, number = start_xvfb()
        c.lockwatch("enable", "--user", "alice")
        c.worker("srv-a")
        # A fresh Redis has no fence counter: the first holder waits a lease (30 s) before its job starts.
        until("srv-a's job to start", lambda: c.started("srv-a"), 75)
        c.worker("srv-b")
        until("srv-b's heartbeat", lambda: c.beating("srv-b"), 30)
        env = dict(os.environ, DISPLAY=f":{number}", PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "bench"), DESKTOP]))
        args = ["dbus-run-session", "--", PYTHON, os.path.join(ROOT, "bench", "tray.py"), TRAY, EMPTY_TRAY,
                redis_server.url, str(seconds), "5", str(cycles), str(c.workers["srv-a"].pid)]
        run = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # Three idle windows (the empty app's two first), then the cycles.
        watchdog = threading.Timer(3 * seconds + cycles * 60 + 300, run.kill)
        watchdog.start()
        # The tray script's progress, without the session bus's chatter.
        for line in run.stderr:
            if not line.startswith(b"dbus-daemon"):
                log(line.decode(errors="replace").rstrip())
        stdout = run.stdout.read()
        run.wait(30)
        watchdog.cancel()
        result = json.loads(stdout.decode().strip().splitlines()[-1])
        if "error" in result:
            failures.append(f"tray: {result['error']}")
            log(result.get("app_log_tail", ""))
        return result
    except (TimeoutError, RuntimeError, ValueError, IndexError, subprocess.SubprocessError) as e:
        failures.append(f"tray: {e}")
        log(f"  tray: failed: {e}")
        return {}
    finally:
        procs.kill_all()
        if xvfb:
            xvfb.kill()
            xvfb.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs and short windows (~5 min) instead of 5 runs (~10 min)")
    parser.add_argument("--only", default="faults,cost,tray", help="comma-separated sections: faults, cost, tray")
    parser.add_argument("--out", help="JSON file (default bench/results/<date>[-quick].json)")
    parser.add_argument("--takeovers", type=int, default=int(os.environ.get("BENCH_TAKEOVERS", "0")) or None,
                        help="kill -9 hand-overs in a row (env BENCH_TAKEOVERS; default 5, --quick 3)")
    parser.add_argument("--takeover-phase", default=os.environ.get("BENCH_TAKEOVER_PHASE", "random"),
                        choices=("random", "after-renewal", "before-renewal", "mid-look", "busy", "mixed"),
                        help="when in the holder's renewal cycle each is killed (env BENCH_TAKEOVER_PHASE)")
    args = parser.parse_args()
    sections = set(args.only.split(","))
    runs, window, tray_s, cycles = (3, 10, 20, 2) if args.quick else (5, 30, 60, 5)
    takeovers = args.takeovers or (3 if args.quick else 5)
    command = "bash bench/run.sh" + (" --quick" if args.quick else "") + ("" if args.only == "faults,cost,tray" else f" --only {args.only}")
    if args.takeovers:
        command += f" --takeovers {args.takeovers}"
    if args.takeover_phase != "random":
        command += f" --takeover-phase {args.takeover_phase}"
    needed = [LOCKWATCH] + [DRIVER] * ("cost" in sections) + [TRAY, EMPTY_TRAY] * ("tray" in sections)
    for path in needed:
        if not os.path.exists(path):
            sys.exit(f"bench: {path} is missing; build it with bash bench/run.sh (or cargo build --release "
                     "-p lockwatch -p lockwatch-tray -p empty-tray --bins --example lockwatch-bench)")

    info = machine()
    info["date"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    info["load_samples"] = [info["load_1min_start"]]
    log(f"machine: {info['cores']} cores, load {info['load_1min_start']}; {'quick' if args.quick else 'full'} run: {runs} runs per measure")
    scratch = tempfile.mkdtemp(prefix="lockwatch-bench-")
    # The faults' runs, each worker's log (and its reaper's lines) in them, are kept.
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S") + ("-quick" if args.quick else "")
    run_dir = os.path.join(ROOT, "bench", "results", "runs", stamp)
    figures, failures, extra, notes, skipped = {}, [], {}, {}, {}
    started = time.monotonic()
    redis_server = Redis(os.path.join(scratch, "redis"))
    try:
        if "faults" in sections:
            log("faults: kill -9, SIGTERM, last flag off, hung job (lockwatch and peers side by side)")
            os.makedirs(run_dir)
            log(f"faults: the workers' logs go to {os.path.relpath(run_dir, ROOT)}")
            f, fail, skipped = faults.run(redis_server, run_dir, runs, log, takeovers, args.takeover_phase)
            figures.update(f)
            failures += fail
            for key in ("crash_let_go_ms", "crash_slow", "crash_phase", "redisson_kill_expiry_s",
                        "redisson_kill_after_expiry_ms", "redisson_kill_pttl_ms"):
                extra[key] = figures.pop(key, [])
            extra["first_event_after_kill"] = dict(collections.Counter(figures.pop("first_event", [])))
            extra["disable_cli_ms"] = figures.pop("disable_cli_ms", [])
            for _, steps in BREAKDOWN.values():
                for step, _ in steps:
                    extra[step] = figures.pop(step, [])
            info["load_samples"].append(loadavg())
        if "cost" in sections:
            log(f"cost: Redis CPU over {window} s idle windows, 20 users' flags, 2 workers")
            redis_server.r.flushall()
            f, e = cost.run(redis_server, scratch, window, (100, 1000), 5, log)
            figures.update(f)
            extra.update(e)
            extra["flood_idle_cpu_ms"] = figures.pop("flood_idle_cpu_ms", [])
            info["load_samples"].append(loadavg())
        if "tray" in sections:
            log(f"tray: an empty Tauri tray app (as built, then with GDK_GL=disable), then the release app, each idle "
                f"{tray_s} s under Xvfb with a tray host; "
                f"then the dashboard {cycles}× opened and closed")
            t = tray_section(redis_server, scratch, tray_s, cycles, failures)
            if "idle" in t:
                figures["tray_rss_mb"] = t["idle"]["tray"]["rss_mb"]
                figures["tray_cpu_pct"] = t["idle"]["tray"]["cpu_pct"]
                figures["tray_pss_mb"] = t["idle"]["tray"]["pss_mb_steps"]
                figures["tray_private_dirty_mb"] = t["idle"]["tray"]["private_dirty_mb"]
                figures["worker_rss_mb"] = t["idle"]["workers"][0]["rss_mb"]
                figures["worker_cpu_pct"] = t["idle"]["workers"][0]["cpu_pct"]
                libs = t["idle"]["tray"].get("libs", {})
                web = sum(mb for name, mb in libs.items() if name.startswith(("libwebkit2gtk", "libjavascriptcore", "libflite")))
                notes["tray_rss_mb"] = (f"of which {t['idle']['tray']['anon_mb']:.0f} MB anonymous (the app's own); "
                                        "the rest are pages of mapped files: "
                                        + ", ".join(f"{name} {mb:.1f}" for name, mb in list(libs.items())[:4])
                                        + (f"; {web:.0f} MB of them WebKit, JavaScriptCore and flite, which only the"
                                           " dashboard's process should load" if web else "; no web view library"))
            for run, suffix in (("empty", ""), ("empty_no_gl", "_no_gl")):
                empty = t.get("idle", {}).get(run)
                if not empty:
                    continue
                figures[f"{run}_rss_mb"] = empty["rss_mb"]
                figures[f"{run}_private_dirty_mb"] = empty["private_dirty_mb"]
                figures[f"{run}_pss_mb"] = empty["pss_mb_steps"]
                if "tray" in t["idle"]:
                    figures[f"tray_rss_ratio{suffix}"] = [a / b for a, b in zip(t["idle"]["tray"]["rss_mb"], empty["rss_mb"])
                                                          if a is not None and b]
            if t.get("dashboard"):
                figures["tray_after_dashboard_mb"] = [d["above_idle_mb"] for d in t["dashboard"]]
                for field in ("rss_mb", "private_dirty_mb", "pss_mb"):
                    figures[f"tray_after_dashboard_{field}"] = [d["vs_idle"].get(field) for d in t["dashboard"]]
                figures["dashboard_open_mb"] = [d["open_tree_mb"] for d in t["dashboard"]]
                left = {k: v for k, v in t["dashboard"][-1]["closed_tree"].items() if k != "lockwatch-tray"}
                notes["tray_after_dashboard_mb"] = (
                    f"anonymous memory {t['idle']['tray']['anon_mb']:.0f} → {t['dashboard'][-1]['closed_anon_mb']:.0f} MB"
                    + "".join(f"; {name} stays ({mb:.0f} MB)" for name, mb in left.items()))
            t.pop("app_log_tail", None)
            extra["tray"] = t
            info["load_samples"].append(loadavg())
    finally:
        redis_server.stop()
    info["load_1min_end"] = loadavg()
    info["duration_s"] = round(time.monotonic() - started)

    measures = []
    for mid, (group, label, unit, goal, goal_text, note) in MEASURES.items():
        values = [v for v in figures.get(mid, []) if v is not None]
        if not values and mid in skipped:
            measures.append({"id": mid, "group": group, "label": label, "unit": unit, "values": [], "median": None,
                             "min": None, "max": None, "runs": 0, "goal": goal, "goal_text": goal_text, "met": None,
                             "note": f"not measured: {skipped[mid]}"})
            continue
        if not values:
            continue
        s = summary(values)
        note = "; ".join(filter(None, [note, notes.get(mid, "")]))
        if mid == "crash_takeover_s":
            over = sum(v > 1 for v in values)
            lets = extra.get("crash_let_go_ms")
            note = (f"{len(values)} kills ({(extra.get('crash_phase') or ['random'])[0]} phase), {over} over 1 s"
                    + (f"; reapers let go {fmt(min(lets))}–{fmt(max(lets))} ms after the kill" if lets else "")
                    + "; " + note)
        if mid == "redisson_kill_job_s" and extra.get("redisson_kill_expiry_s"):
            note += (f"; lockWatchdogTimeout {faults.redisson_peer.WATCHDOG_MS / 1000:g} s: the lock expired after "
                     f"{fmt(statistics.median(extra['redisson_kill_expiry_s']))} s, the job ran "
                     f"{fmt(statistics.median(extra['redisson_kill_after_expiry_ms']))} ms later (medians)")
        if mid == "detect_s" and extra.get("first_event_after_kill"):
            note = "first event: " + ", ".join(f"{k} ×{n}" for k, n in extra["first_event_after_kill"].items())
        if mid in BREAKDOWN:
            start, steps = BREAKDOWN[mid]
            parts = [f"{what} {fmt(statistics.median(extra[step]))} ms" for step, what in steps if extra.get(step)]
            note = "; ".join(filter(None, [note, f"medians {start}: " + ", ".join(parts)]))
        if mid == "flood_cpu_ms" and extra.get("flood_idle_cpu_ms"):
            note = f"the same 22 processes idle: {fmt(statistics.median(extra['flood_idle_cpu_ms']))} ms/s"
        if mid == "flag_off_ms" and extra.get("disable_cli_ms"):
            note += f"; `lockwatch disable` start → flag written: {statistics.median(extra['disable_cli_ms']):.0f} ms more"
        measures.append({"id": mid, "group": group, "label": label, "unit": unit, "values": [round(v, 3) for v in values],
                         **{k: round(v, 3) if isinstance(v, float) else v for k, v in s.items()},
                         "goal": goal, "goal_text": goal_text,
                         "met": None if goal is None else s["max" if mid in BY_MAX else "median"] <= goal,
                         "note": note})
    print(table(measures, info, command))
    if extra.get("tray", {}).get("idle", {}).get("tray"):
        print("\n" + tray_memory.side_by_side(extra["tray"]))
    if extra.get("crash_slow"):
        print("\ntakeovers over 1 s (the logs are kept):\n" + "\n".join(extra["crash_slow"]))
    if failures:
        print("\nfailed runs (left out of the figures):\n" + "\n".join(f"  {f}" for f in failures))
    if "faults" in sections:
        print(f"workers' logs: {os.path.relpath(run_dir, ROOT)}")
    out = args.out or os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}{'-quick' if args.quick else ''}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"command": command, "machine": info, "measures": measures, "failures": failures, "extra": extra}, f, indent=1)
        f.write("\n")
    print(f"\nwritten: {os.path.relpath(out, ROOT)} (took {info['duration_s']} s)")
    if not failures:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"logs of this run: {scratch}")


if __name__ == "__main__":
    main()
