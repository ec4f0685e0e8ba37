#!/usr/bin/python3
"""End-to-end test of the dashboard's life beside the tray, on a real X display.

Run by tests/dashboard_life.rs inside dbus-run-session with an Xvfb DISPLAY.
Owns a fake tray host and notification daemon (the app runs as on a desktop
with a tray), starts a real Redis, a worker and the app, then checks:
1. with the window never opened, nothing of the web view runs, and neither
   the web view's libraries nor a GL driver are loaded into the app;
2. a second launch opens the dashboard (a window, WebKit running);
3. closing the window (WM_DELETE_WINDOW, as a window manager's close button)
   ends everything the dashboard started, WebKit's web and network
   processes included, and the tray app lives on, still without the web
   view or GL;
4. the dashboard opens again, and closes again the same way;
5. a tray app that ends takes its open dashboard with it.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

from support import GL_DRIVER, WEB_VIEW, close_window, descendants, free_port, mapped, still_running, until, x_windows

LOCKWATCH = os.environ["LOCKWATCH_BIN"]
TRAY = os.environ["LOCKWATCH_TRAY_BIN"]

dbus.mainloop.glib.threads_init()
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)


class TrayHost(dbus.service.Object):
    """Just enough of a StatusNotifierWatcher for the app to register."""

    def __init__(self, bus):
        self.items = []
        super().__init__(bus, "/StatusNotifierWatcher")

    @dbus.service.method("org.kde.StatusNotifierWatcher", in_signature="s", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        self.items.append(f"{sender}{service}")

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
        return ("fake", "lockwatch-tests", "1", "1.2")


def dashboards():
    return [w for w in x_windows() if w[2] == "lockwatch"]


def below(pid):
    """The live processes the app started (and theirs): {(pid, start): command line}."""
    return {k: v for k, v in descendants(pid).items() if still_running(k)}


def webkit(procs):
    return sorted(os.path.basename(c.split()[0]) for c in procs.values() if "WebKit" in c)


def main():
    bus = dbus.SessionBus()
    names = [dbus.service.BusName("org.kde.StatusNotifierWatcher", bus), dbus.service.BusName("org.freedesktop.Notifications", bus)]
    host, notes = TrayHost(bus), Notifications(bus)
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()

    tmp = tempfile.mkdtemp(prefix="lockwatch-dashboard-life-e2e-")
    port = free_port()
    url = f"redis://127.0.0.1:{port}"
    procs, passed, app = [], 0, None
    env = dict(os.environ, HOME=f"{tmp}/home", XDG_RUNTIME_DIR=f"{tmp}/run", XDG_CONFIG_HOME=f"{tmp}/home/.config",
               XDG_DATA_HOME=f"{tmp}/home/.local/share", XDG_CACHE_HOME=f"{tmp}/home/.cache",
               LOCKWATCH_REDIS_URL=url, LOCKWATCH_USER="alice", LOCKWATCH_LOG="info")
    env.pop("LOCKWATCH_OPEN_DASHBOARD", None)
    log = f"{tmp}/app.log"

    def ok(name):
        nonlocal passed
        passed += 1
        print(f"ok {passed}: {name}", flush=True)

    def app_log():
        with open(log, errors="replace") as f:
            return f.read()[-3000:]

    def open_dashboard():
        second = subprocess.run([TRAY], env=env, capture_output=True, timeout=30)
        assert second.returncode == 0, f"the second launch failed: {second}"
        window = until("the dashboard window", lambda: (dashboards() or [None])[0], 30)
        until("WebKit's web process", lambda: "WebKitWebProcess" in webkit(below(app.pid)), 30)
        return window

    def close_dashboard(window):
        """Closes the window; returns the processes that ended with it."""
        started = below(app.pid)
        close_window(window[1])
        until("the dashboard window to close", lambda: not dashboards(), 15)
        # Checked one by one: an orphan is no longer below the app, but runs.
        until("everything the dashboard started to end",
              lambda: not below(app.pid) and not [k for k in started if still_running(k)], 20)
        assert app.poll() is None, f"the tray app ended with its dashboard:\n{app_log()}"
        return sorted(os.path.basename(c.split()[0]) for c in started.values())

    try:
        os.makedirs(f"{tmp}/home")
        os.makedirs(f"{tmp}/run", mode=0o700)
        procs.append(subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        until("redis", lambda: subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True, text=True).stdout.strip() == "PONG", 10)
        subprocess.run([LOCKWATCH, "--redis", url, "enable", "--user", "alice"], check=True, capture_output=True)
        procs.append(subprocess.Popen([LOCKWATCH, "--redis", url, "worker", "--node", "srv-a", "--lease", "3s", "--", "sleep", "1000"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        # 1. never opened: no web view, no GL
        with open(log, "w") as out:
            app = subprocess.Popen([TRAY], env=env, stdout=out, stderr=out)
        until("the tray item to register", lambda: host.items or app.poll() is not None, 30)
        assert app.poll() is None, f"the app ended:\n{app_log()}"
        time.sleep(2)  # what a start loads, it has loaded by now
        assert not dashboards(), f"a window opened: {dashboards()}"
        assert not webkit(below(app.pid)), f"WebKit runs with no window open: {webkit(below(app.pid))}"
        assert not mapped(app.pid, GL_DRIVER), f"a GL driver is loaded with no window open: {mapped(app.pid, GL_DRIVER)}"
        assert not mapped(app.pid, WEB_VIEW), f"the tray app loaded the web view: {mapped(app.pid, WEB_VIEW)}"
        ok("never opened: no web view runs or is loaded, no GL driver loaded")

        # 2. a second launch opens it
        window = open_dashboard()
        ok(f"a second launch opens the dashboard ({', '.join(webkit(below(app.pid)))})")

        # 3. closing it ends all it started; the tray lives on, still without GL
        ended = close_dashboard(window)
        assert not mapped(app.pid, GL_DRIVER), f"a GL driver stayed in the tray app: {mapped(app.pid, GL_DRIVER)}"
        assert not mapped(app.pid, WEB_VIEW), f"the web view is loaded in the tray app: {mapped(app.pid, WEB_VIEW)}"
        ok(f"closed: {', '.join(ended)} ended; the tray lives on, without the web view or GL")

        # 4. again
        close_dashboard(open_dashboard())
        ok("opened and closed again")

        # 5. the tray app ends with its dashboard open: the dashboard ends too
        open_dashboard()
        started = below(app.pid)
        app.terminate()
        app.wait(10)
        until("the dashboard and WebKit to end with the tray app", lambda: not [k for k in started if still_running(k)], 20)
        until("the dashboard window to go", lambda: not dashboards(), 10)
        ok("the dashboard ends with the tray app")
        print(f"{passed} passed, 0 failed", flush=True)
        return 0
    except Exception as e:  # noqa: BLE001 - report and fail
        print(f"FAILED after {passed} checks: {e!r}", flush=True)
        traceback.print_exc()
        if os.path.exists(log):
            print(f"--- app log:\n{app_log()}", flush=True)
        print(f"{passed} passed, 1 failed", flush=True)
        return 1
    finally:
        leftovers = list(below(app.pid)) if app and app.poll() is None else []
        if app and app.poll() is None:
            app.kill()
            app.wait()
        for pid, _ in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in procs:
            p.kill()
            p.wait()
        loop.quit()
        del names, notes
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
