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
import threading
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib
from Xlib import X, display, protocol

from common import anon_mb, cpu_ns, cpu_ticks_s, pss_mb, rss_mb, tree_pids, until

dbus.mainloop.glib.threads_init()
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)


class TrayHost(dbus.service.Object):
    """Just enough of a StatusNotifierWatcher for the app to register."""

    def __init__(self, bus):
        self.items = []
        super().__init__(bus, "/StatusNotifierWatcher")

    @dbus.service.method("org.kde.StatusNotifierWatcher", in_signature="s", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        self.items.append(f"{sender}{service}" if service.startswith("/") else service)

    @dbus.service.method("org.kde.StatusNotifierWatcher", in_signature="s")
    def RegisterStatusNotifierHost(self, service):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        return self.GetAll(interface)[prop]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s"),
                "IsStatusNotifierHostRegistered": True, "ProtocolVersion": dbus.Int32(0)}


class Notifications(dbus.service.Object):
    """Swallows notifications, so no real daemon gets activated."""

    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/Notifications")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout):
        return 1

    @dbus.service.method("org.freedesktop.Notifications", out_signature="as")
    def GetCapabilities(self):
        return ["body"]

    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("bench", "lockwatch", "1", "1.2")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="u")
    def CloseNotification(self, nid):
        pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


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


def close(x, window):
    """What a window manager's close button does: WM_DELETE_WINDOW."""
    protocols, delete = x.intern_atom("WM_PROTOCOLS"), x.intern_atom("WM_DELETE_WINDOW")
    event = protocol.event.ClientMessage(window=window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0]))
    window.send_event(event, event_mask=X.NoEventMask)
    x.flush()


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
    bus = dbus.SessionBus()
    names = [dbus.service.BusName("org.kde.StatusNotifierWatcher", bus), dbus.service.BusName("org.freedesktop.Notifications", bus)]
    served = [TrayHost(bus), Notifications(bus)]  # kept for the whole run
    host = served[0]
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()

    home = tempfile.mkdtemp(prefix="lockwatch-bench-tray-")
    runtime = os.path.join(home, "run")
    os.makedirs(runtime, mode=0o700)
    env = dict(os.environ, HOME=home, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=f"{home}/.config",
               XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
               LOCKWATCH_REDIS_URL=url, LOCKWATCH_USER="alice")
    env.pop("LOCKWATCH_OPEN_DASHBOARD", None)
    app_log = open(os.path.join(home, "app.log"), "w")
    app = subprocess.Popen([tray], env=env, stdout=app_log, stderr=app_log)
    result = {"names": [str(n.get_name()) for n in names]}
    try:
        until("the tray item to register", lambda: host.items or app.poll() is not None, 60, every=0.1)
        if app.poll() is not None:
            raise RuntimeError(f"the app exited ({app.returncode}) before its tray item registered")
        log(f"  tray item registered: {host.items[-1]}; settling 10 s")
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
            window = until("the dashboard window", lambda: dashboard(x, app.pid), 30, every=0.1)
            time.sleep(5)
            opened, opened_tree = rss_mb(app.pid), tree_rss(app.pid)
            close(x, window)
            until("the dashboard to close", lambda: dashboard(x, app.pid) is None, 15, every=0.1)
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
    except (TimeoutError, RuntimeError, OSError, subprocess.SubprocessError) as e:
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
        loop.quit()
        app_log.close()
        result["app_log_tail"] = open(os.path.join(home, "app.log")).read()[:2500]
        subprocess.run(["rm", "-rf", home])
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
