"""The tray app idle beside an empty Tauri tray app, and after its
dashboard was opened and closed.

Runs inside `dbus-run-session` with DISPLAY on an Xvfb (bench.py starts
both). Owns a fake tray host (org.kde.StatusNotifierWatcher, so the apps
register their items as on a desktop with a tray) and a fake notification
daemon. One app at a time, so none shares its libraries' pages with
another (Pss):

1. the empty app (bench/empty-tray: Tauri, a tray icon, a Quit menu, no
   window), the floor any Tauri tray app pays;
2. the empty app again with GDK_GL=disable, which the app sets for itself:
   without it GTK's GLX probe loads the GL driver (Mesa, LLVM) into the
   empty app, so this one is the like-for-like floor;
3. the release app watching the bench's Redis.

Each registers its tray item, settles SETTLE seconds, then is read every
STEP seconds of an idle window: CPU from the threads' schedstat, VmRSS,
and Private_Dirty and Pss from smaps_rollup (bench/memory.py); at the end,
which mappings hold its Private_Dirty. The workers' pids given are read
over the app's window.

Then, CYCLES times: a second launch (the app is single-instance: it opens
the running app's dashboard, in a process of its own below the app), 5 s
for the page, WM_DELETE_WINDOW to the window (what a window manager's close
button sends), 10 s, then the app's memory again (the tray's process alone,
and against its last idle reading) and VmRSS of the app with every process
below it (the dashboard, WebKit's web and network processes).

Usage: tray.py TRAY_BIN EMPTY_BIN REDIS_URL SECONDS STEP CYCLES WORKER_PID… ;
prints progress to stderr and one JSON object to stdout.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from Xlib import X, display

from common import cpu_ns, cpu_ticks_s
# The fake desktop, the app's environment and start, the processes below it
# and a window manager's close: the desktop harness the tray's end-to-end
# tests run on (src-tauri/tests/e2e/desktop.py, on PYTHONPATH: see common.DESKTOP).
from desktop import GL_DRIVER, Desktop, app_env, close_window, descendants, mapped, start_app, until
from memory import by_mapping, rollup, rss_mb

# Seconds from the tray item's registration to the idle window, for every app.
SETTLE = 10
# How many of the largest Private_Dirty holders each app's figures keep.
TOP = 12
# The empty app's runs: (name in the figures, what to say, environment on top).
EMPTY_RUNS = [("empty", "empty tray app", {}),
              ("empty_no_gl", "empty tray app, GDK_GL=disable", {"GDK_GL": "disable"})]


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


def files_mb(pid):
    """{file name: resident MB} of the files `pid` maps (libraries, its
    executable), largest first."""
    return {k: round(v, 1) for k, v in by_mapping(pid, "Rss").items() if not k.startswith("[")}


def idle_window(pids, seconds, step):
    """Per process: CPU % of one core per step, its memory (`rollup`) at
    each step, and CPU % over the whole window from the clock ticks."""
    cpu = {p: [] for p in pids}
    mem = {p: [] for p in pids}
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
            mem[p].append(rollup(p))
        t_last = now
    total = {p: (cpu_ticks_s(p) - ticks[p]) / (time.monotonic() - start) * 100
             for p in pids if ticks[p] is not None and cpu_ticks_s(p) is not None}
    return cpu, mem, total


def steps(mem, field):
    return [m[field] if m else None for m in mem]


def app_figures(pid, cpu, mem, total):
    """An app's idle figures: the per-step series, the last reading's
    totals, and what holds its memory."""
    last = mem[-1] or {}
    return {"cpu_pct": cpu, "rss_mb": steps(mem, "rss_mb"), "cpu_pct_whole_window": total,
            "private_dirty_mb": steps(mem, "private_dirty_mb"), "pss_mb_steps": steps(mem, "pss_mb"),
            "anon_mb": last.get("anon_mb"), "pss_mb": last.get("pss_mb"),
            "private_dirty_top": by_mapping(pid, "Private_Dirty", TOP),
            "gl_driver": [os.path.basename(f) for f in mapped(pid, GL_DRIVER)],
            "libs": files_mb(pid), "tree_rss_mb": tree_rss(pid), "tree": tree_by_name(pid),
            "threads": len(os.listdir(f"/proc/{pid}/task"))}


def stop(app):
    """Ends `app` and whatever it started."""
    kids = tree_pids(app.pid)[1:]
    app.terminate()
    try:
        app.wait(10)
    except subprocess.TimeoutExpired:
        app.kill()
        app.wait()
    for p in kids:
        try:
            os.kill(p, 9)
        except OSError:
            pass


def empty_idle(desktop, empty_bin, scratch, seconds, step, name, what, extra):
    """The empty app's idle figures, `extra` added to its environment; it
    ends before the next app starts."""
    env = app_env(os.path.join(scratch, name), **extra)
    app = start_app(empty_bin, env, os.path.join(scratch, f"{name}.log"))
    try:
        bus_name, path = desktop.wait_for_item(app, 60, f"the {what}'s tray item to register")
        log(f"  {what}: item registered: {bus_name}{path}; settling {SETTLE} s, then {seconds:.0f} s idle")
        time.sleep(SETTLE)
        cpu, mem, total = idle_window([app.pid], seconds, step)
        return app_figures(app.pid, cpu[app.pid], mem[app.pid], total.get(app.pid))
    finally:
        stop(app)
        desktop.host.items.clear()


def after_dashboard(app, idle):
    """The tray's process after a dashboard closed: its memory, and the
    change against `idle` (its last idle reading)."""
    now = rollup(app.pid)
    if now is None:
        raise RuntimeError(f"the app ended ({app.poll()}) after its dashboard closed")
    return {"closed": now, "vs_idle": {k: now[k] - idle[k] for k in ("rss_mb", "private_dirty_mb", "pss_mb")
                                       if now.get(k) is not None and idle.get(k) is not None}}


def main():
    tray, empty_bin, url = sys.argv[1], sys.argv[2], sys.argv[3]
    seconds, step, cycles = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    workers = [int(p) for p in sys.argv[7:]]
    desktop = Desktop(capabilities=["body"])
    scratch = tempfile.mkdtemp(prefix="lockwatch-bench-tray-")
    result = {"names": [str(n.get_name()) for n in desktop.names], "settle_s": SETTLE, "idle": {}}
    for name, what, extra in EMPTY_RUNS:
        try:
            result["idle"][name] = empty_idle(desktop, empty_bin, scratch, seconds, step, name, what, extra)
        except (AssertionError, RuntimeError, OSError, subprocess.SubprocessError) as e:
            result["error"] = "; ".join(filter(None, [result.get("error"), f"{what}: {e}"]))
            log(f"  {what}: {e}")
    env = app_env(scratch, LOCKWATCH_REDIS_URL=url, LOCKWATCH_USER="alice")
    app = start_app(tray, env, os.path.join(scratch, "app.log"))
    try:
        name, path = desktop.wait_for_item(app, 60)
        log(f"  tray item registered: {name}{path}; settling {SETTLE} s, then {seconds:.0f} s idle")
        time.sleep(SETTLE)
        pids = [app.pid, *workers]
        cpu, mem, total = idle_window(pids, seconds, step)
        result["idle"].update({"window_s": seconds, "step_s": step,
                               "tray": app_figures(app.pid, cpu[app.pid], mem[app.pid], total.get(app.pid)),
                               "workers": [{"pid": w, "cpu_pct": cpu[w], "rss_mb": steps(mem[w], "rss_mb"),
                                            "cpu_pct_whole_window": total.get(w), "tree_rss_mb": tree_rss(w)}
                                           for w in workers]})
        idle = mem[app.pid][-1] or {}
        idle_tree = tree_rss(app.pid)
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
            back = after_dashboard(app, idle)
            after, after_tree = back["closed"].get("rss_mb"), tree_rss(app.pid)
            # Against the tree: what the dashboard left anywhere, in the app
            # or in processes that outlive the window, counts.
            result["dashboard"].append({"open_mb": opened, "open_tree_mb": opened_tree, "closed_mb": after,
                                        "closed_tree_mb": after_tree, "above_idle_mb": after_tree - idle_tree,
                                        "closed_pss_mb": back["closed"].get("pss_mb"),
                                        "closed_private_dirty_mb": back["closed"].get("private_dirty_mb"),
                                        "vs_idle": back["vs_idle"],
                                        "closed_tree": tree_by_name(app.pid), "closed_anon_mb": back["closed"].get("anon_mb"),
                                        "second_launch_exit": second.returncode})
            d = back["vs_idle"]
            log(f"  dashboard {i + 1}/{cycles}: open: app {opened:.0f} MB, with the dashboard and WebKit {opened_tree:.0f} MB; "
                f"closed: app RSS {after:.0f} MB ({d.get('rss_mb', 0):+.1f}), Private_Dirty "
                f"{back['closed'].get('private_dirty_mb', 0):.1f} MB ({d.get('private_dirty_mb', 0):+.1f}), "
                f"with all below it {after_tree:.0f} MB ({after_tree - idle_tree:+.1f} MB vs never opened)")
        if cycles:
            result["after_dashboard_private_dirty_top"] = by_mapping(app.pid, "Private_Dirty", TOP)
    except (AssertionError, RuntimeError, OSError, subprocess.SubprocessError) as e:
        result["error"] = "; ".join(filter(None, [result.get("error"), str(e)]))
        log(f"  tray: {e}")
    finally:
        stop(app)
        desktop.stop()
        result["app_log_tail"] = open(os.path.join(scratch, "app.log")).read()[:2500]
        subprocess.run(["rm", "-rf", scratch])
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
