"""The tray app idle, and after its dashboard was opened and closed.

Runs inside `dbus-run-session` with DISPLAY on an Xvfb (bench.py starts
both). Owns a fake tray host (org.kde.StatusNotifierWatcher, so the app
registers its item as on a desktop with a tray) and a fake notification
daemon, starts the release app watching the bench's Redis, and reads
/proc: VmRSS, and CPU from the threads' schedstat every STEP seconds of the
idle window. The workers' pids given are read over the same window.

Then, CYCLES times: a second launch (the app is single-instance: it opens
the running app's dashboard, in a process of its own below the app), 5 s
for the page, WM_DELETE_WINDOW to the window (what a window manager's close
button sends), 10 s, VmRSS again: of the app, and of the app with every
process below it (the dashboard, WebKit's web and network processes).

Usage: tray.py TRAY_BIN REDIS_URL SECONDS STEP CYCLES WORKER_PID… ; prints
progress to stderr and one JSON object to stdout.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from Xlib import X, display

from common import ROOT, anon_mb, cpu_ns, cpu_ticks_s, pss_mb, rss_mb

# The fake desktop, the app's environment and start, the processes below it
# and a window manager's close are the tray's end-to-end tests' own.
sys.path.append(os.path.join(ROOT, "src-tauri", "tests", "e2e"))
from support import Desktop, app_env, close_window, descendants, start_app, until  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def tree_pids(pid):
    """pid and all its descendants."""
    return [pid, *(p for p, _ in descendants(pid))]


def dashboard(x, pid):
    """The viewable top-level window of the app or a process below it, if any."""
    net_wm_pid = x.intern_atom("_NET_WM_PID")
    pids = set(tree_pids(pid))
    for w in x.screen().root.query_tree().children:
        try:
            prop = w.get_full_property(net_wm_pid, X.AnyPropertyType)
            if prop and prop.value[0] in pids and w.get_attributes().map_state == X.IsViewable:
                return w
        except Exception:  # noqa: BLE001 - a window may vanish while we look
            continue
    return None


def tree_rss(pid):
    return sum(rss_mb(p) or 0 for p in tree_pids(pid))


def tree_by_name(pid):
    """{process name: VmRSS MB} of the app and every process below it."""
    out = {}
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                name = os.path.basename(f.read().split(b"\0")[0].decode(errors="replace"))
        except OSError:
            continue
        out[name] = round(out.get(name, 0) + (rss_mb(p) or 0), 1)
    return out


def mapped_mb(pid):
    """{file name: resident MB} of the files `pid` maps (libraries, its
    executable), largest first, from smaps."""
    out, name = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:
                name = os.path.basename(fields[5]) if len(fields) > 5 and fields[5].startswith("/") else None
            elif fields[0] == "Rss:" and name:
                out[name] = out.get(name, 0) + int(fields[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def idle_window(pids, seconds, step):
    """Per process: CPU % of one core per step, VmRSS at each step."""
    cpu = {p: [] for p in pids}
    rss = {p: [] for p in pids}
    last = {p: cpu_ns(p) for p in pids}
    ticks = {p: cpu_ticks_s(p) for p in pids}
    t_last = time.monotonic()
    start = t_last
    for _ in range(max(1, int(seconds // step))):
        time.sleep(step)
        now = time.monotonic()
        for p in pids:
            ns = cpu_ns(p)
            if ns is not None and last[p] is not None:
                cpu[p].append((ns - last[p]) / 1e9 / (now - t_last) * 100)
            last[p] = ns
            rss[p].append(rss_mb(p))
        t_last = now
    total = {p: (cpu_ticks_s(p) - ticks[p]) / (time.monotonic() - start) * 100
             for p in pids if ticks[p] is not None and cpu_ticks_s(p) is not None}
    return cpu, rss, total


def main():
    tray, url, seconds, step, cycles = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    workers = [int(p) for p in sys.argv[6:]]
    desktop = Desktop(capabilities=["body"])
    scratch = tempfile.mkdtemp(prefix="lockwatch-bench-tray-")
    env = app_env(scratch, LOCKWATCH_REDIS_URL=url, LOCKWATCH_USER="alice")
    app = start_app(tray, env, os.path.join(scratch, "app.log"))
    result = {"names": [str(n.get_name()) for n in desktop.names]}
    try:
        name, path = desktop.wait_for_item(app, 60)
        log(f"  tray item registered: {name}{path}; settling 10 s")
        time.sleep(10)
        pids = [app.pid, *workers]
        cpu, rss, total = idle_window(pids, seconds, step)
        result["idle"] = {"window_s": seconds, "step_s": step,
                          "tray": {"cpu_pct": cpu[app.pid], "rss_mb": rss[app.pid], "cpu_pct_whole_window": total.get(app.pid),
                                   "anon_mb": anon_mb(app.pid), "pss_mb": pss_mb(app.pid), "libs": mapped_mb(app.pid), "tree_rss_mb": tree_rss(app.pid), "tree": tree_by_name(app.pid),
                                   "threads": len(os.listdir(f"/proc/{app.pid}/task"))},
                          "workers": [{"pid": w, "cpu_pct": cpu[w], "rss_mb": rss[w], "cpu_pct_whole_window": total.get(w),
                                       "tree_rss_mb": tree_rss(w)} for w in workers]}
        idle_rss, idle_tree = rss[app.pid][-1], tree_rss(app.pid)
        x = display.Display()
        result["dashboard"] = []
        for i in range(cycles):
            second = subprocess.run([tray], env=env, capture_output=True, timeout=30)
            window = until("the dashboard window", lambda: dashboard(x, app.pid), 30)
            time.sleep(5)
            opened, opened_tree = rss_mb(app.pid), tree_rss(app.pid)
            close_window(window.id)
            until("the dashboard to close", lambda: dashboard(x, app.pid) is None, 15)
            time.sleep(10)
            after, after_tree = rss_mb(app.pid), tree_rss(app.pid)
            # Against the tree: what the dashboard left anywhere, in the app
            # or in processes that outlive the window, counts.
            result["dashboard"].append({"open_mb": opened, "open_tree_mb": opened_tree, "closed_mb": after,
                                        "closed_tree_mb": after_tree, "above_idle_mb": after_tree - idle_tree,
                                        "closed_pss_mb": pss_mb(app.pid),
                                        "closed_tree": tree_by_name(app.pid), "closed_anon_mb": anon_mb(app.pid),
                                        "second_launch_exit": second.returncode})
            log(f"  dashboard {i + 1}/{cycles}: open: app {opened:.0f} MB, with the dashboard and WebKit {opened_tree:.0f} MB; "
                f"closed: app {after:.0f} MB ({after - idle_rss:+.1f}), with all below it {after_tree:.0f} MB "
                f"({after_tree - idle_tree:+.1f} MB vs never opened)")
    except (AssertionError, RuntimeError, OSError, subprocess.SubprocessError) as e:
        result["error"] = str(e)
        log(f"  tray: {e}")
    finally:
        kids = tree_pids(app.pid)[1:]
        app.terminate()
        try:
            app.wait(10)
        except subprocess.TimeoutExpired:
            app.kill()
        for p in kids:
            try:
                os.kill(p, 9)
            except OSError:
                pass
        desktop.stop()
        result["app_log_tail"] = open(os.path.join(scratch, "app.log")).read()[:2500]
        subprocess.run(["rm", "-rf", scratch])
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
