#!/usr/bin/python3
"""End-to-end test of the tray's "switch off" window, on a real X display.

Run by tests/switch_off.rs inside dbus-run-session with an Xvfb DISPLAY.
Owns a fake tray host and notification daemon, starts a real Redis, a worker
and the app for alice, the only one with the job on, then checks:
1. unticking "Enabled for me" does not flip the flag: the dashboard's process
   starts on `--dashboard=off?job=outbound` and maps a window titled
   "Switch outbound off"; the flag is still on 2 s later; no "stopped" note;
2. closing that window (WM_DELETE_WINDOW, as a window manager's close button)
   keeps the flag on and ends the dashboard's process; the tray lives on;
3. unticking again and answering the window (a reason typed, Enter on the
   form) turns the flag off with the reason in the job's history; the tray
   confirms it in its menu and does not notify the stop the user asked for.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN.
"""
import json
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

from support import close_window, descendants, free_port, still_running, until, x_windows

LOCKWATCH = os.environ["LOCKWATCH_BIN"]
TRAY = os.environ["LOCKWATCH_TRAY_BIN"]
FLIP = "Enabled for me"
TITLE = "Switch outbound off"  # dialog-off-title in locales/en.ftl
STOPPED = "outbound stopped"  # note-stopped
CONFIRMED = "✓ You switched it off at "  # menu-own-off
REASON = "maintenance window 42"

dbus.mainloop.glib.threads_init()
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)


class TrayHost(dbus.service.Object):
    """Just enough of a StatusNotifierWatcher for the app to register."""

    def __init__(self, bus):
        self.items = []
        super().__init__(bus, "/StatusNotifierWatcher")

    @dbus.service.method("org.kde.StatusNotifierWatcher", in_signature="s", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        path = service if service.startswith("/") else "/StatusNotifierItem"
        name = sender if service.startswith("/") else service
        self.items.append((name, path))

    @dbus.service.method("org.kde.StatusNotifierWatcher", in_signature="s")
    def RegisterStatusNotifierHost(self, service):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        return self.GetAll(interface)[prop]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        items = dbus.Array([f"{n}{p}" for n, p in self.items], signature="s")
        return {"RegisteredStatusNotifierItems": items, "IsStatusNotifierHostRegistered": True, "ProtocolVersion": dbus.Int32(0)}


class Notifications(dbus.service.Object):
    """A notification daemon that records the summaries it is sent."""

    def __init__(self, bus):
        self.seen = []
        self.lock = threading.Lock()
        super().__init__(bus, "/org/freedesktop/Notifications")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout):
        with self.lock:
            self.seen.append(str(summary))
            return len(self.seen)

    @dbus.service.method("org.freedesktop.Notifications", out_signature="as")
    def GetCapabilities(self):
        return ["body", "actions"]

    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("fake", "lockwatch-tests", "1", "1.2")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="u")
    def CloseNotification(self, nid):
        pass

    def summaries(self):
        with self.lock:
            return list(self.seen)


def main():
    bus = dbus.SessionBus()
    names = [dbus.service.BusName("org.kde.StatusNotifierWatcher", bus), dbus.service.BusName("org.freedesktop.Notifications", bus)]
    host = TrayHost(bus)
    notes = Notifications(bus)
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()
    client = dbus.SessionBus(private=True)

    tmp = tempfile.mkdtemp(prefix="lockwatch-switch-off-e2e-")
    port = free_port()
    procs = []
    passed = 0
    app = None

    def ok(what):
        nonlocal passed
        passed += 1
        print(f"ok {passed}: {what}", flush=True)

    def spawn(args, **kw):
        p = subprocess.Popen(args, stdout=kw.pop("stdout", subprocess.DEVNULL), stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
        procs.append(p)
        return p

    def redis(*args):
        return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10).stdout.strip()

    def lockwatch(*args):
        return subprocess.run([LOCKWATCH, "--redis", f"redis://127.0.0.1:{port}", *args], capture_output=True, text=True, timeout=20)

    def flag():
        return redis("HGET", "{outbound}:enabled:alice", "on")

    def entries():
        sender, path = host.items[-1]
        menu = client.get_object(sender, path).Get("org.kde.StatusNotifierItem", "Menu", dbus_interface=dbus.PROPERTIES_IFACE)
        obj = client.get_object(sender, str(menu))
        _, layout = obj.GetLayout(0, -1, dbus.Array([], signature="s"), dbus_interface="com.canonical.dbusmenu")
        out = []

        def walk(node):
            nid, props, children = node
            out.append((int(nid), str(props.get("label", "")).replace("_", ""), int(props.get("toggle-state", -1))))
            for child in children:
                walk(child)
        walk(layout)
        return obj, out

    def entry(prefix):
        return next((e for e in entries()[1] if e[1].startswith(prefix)), None)

    def click(prefix):
        # Ids are renumbered by every rebuild of the menu: look the item up just before.
        obj, found = entries()
        nid = next(e[0] for e in found if e[1].startswith(prefix))
        obj.Event(dbus.Int32(nid), "clicked", dbus.Int32(0, variant_level=1), dbus.UInt32(int(time.time())), dbus_interface="com.canonical.dbusmenu")

    def dialogs():
        """The dashboard's processes asking why the job goes off."""
        return {k: c for k, c in descendants(app.pid).items() if "--dashboard=off?job=outbound" in c and still_running(k)}

    def dialog_window():
        """The id of the mapped window titled TITLE, or None."""
        for _, wid, name, _ in x_windows():
            if name == TITLE:
                info = subprocess.run(["xwininfo", "-id", wid], capture_output=True, text=True).stdout
                if "Map State: IsViewable" in info:
                    return wid
        return None

    def ask():
        """Unticks the box and waits for the window: (process key, window id)."""
        click(FLIP)

        def asking():
            assert flag() == "1", f"the flag flipped before anyone was asked: on={flag()!r}"
            return next(iter(dialogs()), None)
        child = until("a dashboard process on off?job=outbound", asking, 20)
        wid = until(f"a mapped window titled {TITLE!r}", dialog_window, 30)
        return child, wid

    try:
        spawn(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp])
        until("redis", lambda: redis("PING") == "PONG", 10)
        for line in subprocess.run([LOCKWATCH, "acl", "--user", "alice"], capture_output=True, text=True, check=True).stdout.splitlines():
            redis(*line.split())
        redis("ACL", "SETUSER", "alice", ">alice-pw")
        # alice alone has the job on: unticking it stops the job everywhere.
        assert lockwatch("enable", "--user", "alice").returncode == 0
        spawn([LOCKWATCH, "--redis", f"redis://127.0.0.1:{port}", "worker", "--node", "srv-a", "--lease", "3s", "--stop-grace", "1s",
               "--", "sh", "-c", "while :; do sleep 0.2; done"])
        until("the job running", lambda: (json.loads(lockwatch("status", "--json").stdout or "{}") or {}).get("holder"), 15)

        home = os.path.join(tmp, "home")
        runtime = os.path.join(tmp, "run")
        os.makedirs(home)
        os.makedirs(runtime, mode=0o700)
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANGUAGE")}
        env.update(LANG="en_US.UTF-8", HOME=home, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=f"{home}/.config",
                   XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
                   LOCKWATCH_REDIS_URL=f"redis://alice:alice-pw@127.0.0.1:{port}", LOCKWATCH_USER="alice", LOCKWATCH_LOG="info")
        app = spawn([TRAY], env=env, stdout=open(os.path.join(tmp, "app.log"), "w"), stderr=subprocess.STDOUT)
        until("the tray item", lambda: host.items, 15)
        until("the box checked", lambda: (entry(FLIP) or (0, "", 0))[2] == 1, 15, retry_on=(dbus.DBusException,))
        until("the menu saying where it runs", lambda: entry("outbound: running on "), 15)

        # 1. the last one unticks: a window asks why, the flag stays on
        child, wid = ask()
        time.sleep(2)
        assert flag() == "1", f"the flag changed before the window was answered: on={flag()!r}"
        assert STOPPED not in notes.summaries(), notes.summaries()
        assert app.poll() is None, "the tray app ended"
        ok(f"unticking opened {TITLE!r} ({wid}) in pid {child[0]}; the flag still on 2 s later; no {STOPPED!r}")

        # 2. closing the window keeps the job on and ends the dashboard's process
        close_window(wid)
        until("the dashboard's process to end", lambda: not still_running(child), 15)
        until("the window gone", lambda: dialog_window() is None, 10)
        time.sleep(1)
        assert flag() == "1", f"closing the window changed the flag: on={flag()!r}"
        assert app.poll() is None, "the tray app ended with its window"
        until("the box checked again", lambda: (entry(FLIP) or (0, "", 0))[2] == 1, 10)
        assert entry(CONFIRMED) is None, entries()[1]
        ok("closing the window kept the flag on, ended the dashboard's process, and the tray runs on")

        # 3. answering it: the reason goes with the flip; the tray confirms, does not notify
        child, wid = ask()
        until("the reason field focused", lambda: subprocess.run(["xdotool", "windowfocus", "--sync", wid], capture_output=True, timeout=10).returncode == 0, 10)
        time.sleep(1)  # the page focuses its field once its script ran
        subprocess.run(["xdotool", "type", "--delay", "30", REASON], check=True, timeout=30)
        subprocess.run(["xdotool", "key", "Return"], check=True, timeout=10)
        until("alice's flag off in Redis", lambda: flag() == "0", 15)
        until("the reason in the job's history", lambda: REASON in lockwatch("history").stdout, 10)
        until("the dashboard's process to end", lambda: not still_running(child), 15)
        line = until("the confirmation in the menu", lambda: entry(CONFIRMED), 10)
        until("the box unchecked", lambda: entry(FLIP)[2] == 0, 10)
        until("the job stopped", lambda: not (json.loads(lockwatch("status", "--json").stdout or "{}") or {}).get("holder"), 20)
        time.sleep(3)  # long enough for a "stopped" note to be sent
        assert STOPPED not in notes.summaries(), notes.summaries()
        assert app.poll() is None, "the tray app ended"
        ok(f"answered: flag off with {REASON!r} in the history, menu says {line[1]!r}, no {STOPPED!r}")
        print(f"{passed} passed, 0 failed", flush=True)
        return 0
    except Exception as e:  # report what was seen and the app's log, then fail
        print(f"FAILED after {passed} checks: {e}", flush=True)
        traceback.print_exc(file=sys.stdout)
        for what, get in [("flag", flag), ("notifications", notes.summaries), ("menu", lambda: entries()[1]),
                          ("processes", lambda: descendants(app.pid) if app else {}),
                          ("windows", lambda: [w for w in x_windows() if w[2]]), ("history", lambda: lockwatch("history").stdout)]:
            try:
                print(f"--- {what}: {get()}", flush=True)
            except Exception as err:  # noqa: BLE001 - diagnostics only
                print(f"--- {what}: unavailable ({err})", flush=True)
        try:
            print("--- app.log:\n" + open(os.path.join(tmp, "app.log"), errors="replace").read()[-4000:], flush=True)
        except OSError:
            pass
        print(f"{passed} passed, 1 failed", flush=True)
        return 1
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        loop.quit()
        del names


if __name__ == "__main__":
    sys.exit(main())
