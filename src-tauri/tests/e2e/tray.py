#!/usr/bin/python3
"""End-to-end test of the tray app on a real session bus and X display.

Run by tests/tray.rs inside dbus-run-session with an Xvfb DISPLAY. This script
owns a fake StatusNotifierWatcher (the tray host) and a fake notification
daemon, starts its own redis-server and two workers, then the real app, and
checks what a supervisor would see: the tray item, its icon, the menu,
notifications, the own flag, an ACL refusal, the mute and a Redis outage,
in the language of the desktop's locale.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN, ICONS (the repo's icons/ dir),
LOCALE (the app's LANG, e.g. zh_CN.UTF-8; default en_US.UTF-8).
"""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from support import free_port, until

import dbus
import dbus.mainloop.glib
import dbus.service
import gi

gi.require_version("GdkPixbuf", "2.0")
from gi.repository import GdkPixbuf, GLib  # noqa: E402

LOCKWATCH = os.environ["LOCKWATCH_BIN"]
TRAY = os.environ["LOCKWATCH_TRAY_BIN"]
ICONS = os.environ["ICONS"]
LEASE = "3s"
LOCALE = os.environ.get("LOCALE", "en_US.UTF-8")

# What a supervisor reads, per language (the app's catalog says it; these are the expectations).
WORDS = {
    "en": {
        "running_on": "outbound: running on ",
        "failover": "outbound moved from {a} to {b}",
        "failover_body": ": {b} runs it now.",
        "actions": ["Open dashboard", "Snooze 1 h", "I'm on it"],
        "died_on": "outbound died on {server}",
        "refused_body": "Redis does not let bob change this. Ask the Redis admin to grant the rules `lockwatch acl --user bob` prints.",
        "flip": "Enabled for me",
        "refused": "Your flag for outbound was not changed",
        "refused_line": "⚠ Your change was not saved: details in the dashboard",
        "mute_1h": "For 1 hour",
        "mute": "Mute notifications",
        "unmute": "Unmute",
        "muted": "Notifications muted until ",
        "unmute_left": "Unmute (",
        "unreachable": "Redis unreachable: job states unknown",
        "autostart": "Start at login",
    },
    "zh": {
        "running_on": "outbound：运行中 · ",
        "failover": "outbound 已从 {a} 切换到 {b}",
        "failover_body": "：现在由 {b} 运行。",
        "actions": ["打开监控面板", "静音 1 小时", "我来处理"],
        "died_on": "outbound 已宕机（最后运行于 {server}）",
        "refused_body": "Redis 不允许 bob 修改此项。请让 Redis 管理员授予 `lockwatch acl --user bob` 输出的规则。",
        "flip": "由我启用",
        "refused": "您对 outbound 的启用设置未更改",
        "refused_line": "⚠ 您的更改未保存，详情见监控面板",
        "mute_1h": "1 小时",
        "mute": "通知静音",
        "unmute": "恢复通知",
        "muted": "通知已静音，至 ",
        "unmute_left": "恢复通知（还剩 ",
        "unreachable": "无法连接 Redis：任务状态未知",
        "autostart": "登录时自动启动",
    },
}
W = WORDS["zh" if LOCALE.startswith(("zh_CN", "zh_SG", "zh_Hans")) else "en"]

dbus.mainloop.glib.threads_init()
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)


class Watcher(dbus.service.Object):
    """A tray host: records the items that register."""

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

    @dbus.service.signal("org.kde.StatusNotifierWatcher", signature="s")
    def StatusNotifierItemRegistered(self, service):
        pass


class Notifications(dbus.service.Object):
    """A notification daemon that reads body markup and shows buttons:
    records each note (summary, body, urgency, actions, hints) and can
    press a button as a user would (the ActionInvoked signal)."""

    def __init__(self, bus):
        self.seen = []
        self.lock = threading.Lock()
        super().__init__(bus, "/org/freedesktop/Notifications")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout):
        with self.lock:
            pairs = [(str(actions[i]), str(actions[i + 1])) for i in range(0, len(actions) - 1, 2)]
            note = {"summary": str(summary), "body": str(body), "urgency": int(hints.get("urgency", 1)),
                    "actions": pairs, "sound": str(hints["sound-name"]) if "sound-name" in hints else None}
            self.seen.append(note)
            note["id"] = len(self.seen)
            return note["id"]

    @dbus.service.method("org.freedesktop.Notifications", out_signature="as")
    def GetCapabilities(self):
        return ["body", "body-markup", "actions"]

    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("fake", "lockwatch-tests", "1", "1.2")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="u")
    def CloseNotification(self, nid):
        pass

    @dbus.service.signal("org.freedesktop.Notifications", signature="us")
    def ActionInvoked(self, nid, key):
        pass

    def summaries(self):
        with self.lock:
            return [n["summary"] for n in self.seen]

    def note(self, summary):
        with self.lock:
            return next((n for n in self.seen if n["summary"] == summary), None)

    def body(self, summary):
        n = self.note(summary)
        return n and n["body"]

    def press(self, summary, label):
        """Presses the button labelled `label` on the note titled `summary`."""
        n = self.note(summary)
        key = next(k for k, text in n["actions"] if text == label)
        GLib.idle_add(lambda: self.ActionInvoked(dbus.UInt32(n["id"]), key) and False)
        return key

    def click(self, summary):
        """Clicks the note itself (its default action)."""
        n = self.note(summary)
        assert any(k == "default" for k, _ in n["actions"]), n
        GLib.idle_add(lambda: self.ActionInvoked(dbus.UInt32(n["id"]), "default") and False)


class Run:
    def __init__(self):
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="lockwatch-tray-e2e-")
        self.port = free_port()
        self.passed = 0

    def spawn(self, args, **kw):
        p = subprocess.Popen(args, stdout=kw.pop("stdout", subprocess.DEVNULL), stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
        self.procs.append(p)
        return p

    def redis(self, *args, user=None):
        cmd = ["redis-cli", "-p", str(self.port)]
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=10).stdout.strip()

    def lockwatch(self, *args):
        out = subprocess.run([LOCKWATCH, "--redis", f"redis://127.0.0.1:{self.port}", *args], capture_output=True, text=True, timeout=20)
        return out

    def ok(self, name):
        self.passed += 1
        print(f"ok {self.passed}: {name}", flush=True)

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def cleanup(self):
        for p in reversed(self.procs):
            self.stop(p, signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)


def pixels(path):
    """Digest of a PNG's decoded pixels: the tray re-encodes the icon it is given."""
    return hashlib.sha256(GdkPixbuf.Pixbuf.new_from_file(path).get_pixels()).hexdigest()


def icon_states():
    return {pixels(os.path.join(ICONS, f"state-{s}.png")): s for s in ["running", "pending", "stale", "down", "stopped", "conflict", "unknown"]}


def main():
    bus = dbus.SessionBus()
    watcher_name = dbus.service.BusName("org.kde.StatusNotifierWatcher", bus)
    watcher = Watcher(bus)
    notify_name = dbus.service.BusName("org.freedesktop.Notifications", bus)
    notes = Notifications(bus)
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()
    client = dbus.SessionBus(private=True)
    states = icon_states()

    run = Run()
    app = None
    try:
        redis = run.spawn(["redis-server", "--port", str(run.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", run.tmp])
        until("redis", lambda: run.redis("PING") == "PONG", 10)
        acl = subprocess.run([LOCKWATCH, "acl", "--user", "alice"], capture_output=True, text=True, check=True).stdout
        for line in acl.splitlines():
            run.redis(*line.split())
        run.redis("ACL", "SETUSER", "alice", ">alice-pw")
        assert run.lockwatch("enable", "--user", "alice").returncode == 0
        assert run.lockwatch("enable", "--user", "bob").returncode == 0
        workers = {}
        for node in ["srv-a", "srv-b"]:
            workers[node] = run.spawn([LOCKWATCH, "--redis", f"redis://127.0.0.1:{run.port}", "worker", "--node", node, "--lease", LEASE, "--stop-grace", "1s", "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done"])

        home = os.path.join(run.tmp, "home")
        runtime = os.path.join(run.tmp, "run")
        os.makedirs(home)
        os.makedirs(runtime, mode=0o700)

        def start_app(user, second=False):
            env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANGUAGE")}
            env = dict(env, LANG=LOCALE, HOME=home, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=f"{home}/.config", XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
                       LOCKWATCH_REDIS_URL=f"redis://alice:alice-pw@127.0.0.1:{run.port}", LOCKWATCH_USER=user, LOCKWATCH_LOG="info")
            if not second:
                watcher.items.clear()
            log = open(os.path.join(run.tmp, f"app-{user}{'-second' if second else ''}.log"), "w")
            return run.spawn([TRAY], env=env, stderr=log, stdout=log)

        def item():
            return watcher.items[-1] if watcher.items else None

        def prop(name):
            sender, path = item()
            obj = client.get_object(sender, path)
            return obj.Get("org.kde.StatusNotifierItem", name, dbus_interface=dbus.PROPERTIES_IFACE)

        def shown_state():
            try:
                return states.get(pixels(str(prop("IconName"))))
            except (GLib.Error, dbus.DBusException):
                return None

        def menu():
            sender, _ = item()
            return client.get_object(sender, str(prop("Menu"))), sender

        def entries():
            obj, _ = menu()
            _, layout = obj.GetLayout(0, -1, dbus.Array([], signature="s"), dbus_interface="com.canonical.dbusmenu")
            out = []

            def walk(node):
                nid, props, children = node
                out.append((int(nid), str(props.get("label", "")), int(props.get("toggle-state", -1)), bool(props.get("enabled", True))))
                for child in children:
                    walk(child)
            walk(layout)
            return out

        def entry(prefix):
            for e in entries():
                if e[1].replace("_", "").startswith(prefix):
                    return e
            return None

        def click(prefix):
            obj, _ = menu()
            nid = entry(prefix)[0]
            obj.Event(dbus.Int32(nid), "clicked", dbus.Int32(0, variant_level=1), dbus.UInt32(int(time.time())), dbus_interface="com.canonical.dbusmenu")

        # a. the item registers with the tray host
        app = start_app("alice")
        until("the tray item to register", item, 15)
        run.ok(f"the tray item registered: {item()[1]}")

        # b. the icon shows running, the menu says where
        until("the running icon", lambda: shown_state() == "running", 15)
        holder = until("a holder", lambda: run.lockwatch("status", "--json").stdout and __import__("json").loads(run.lockwatch("status", "--json").stdout)["holder"], 10)
        until("the status line naming the server", lambda: (entry(W["running_on"]) or (0, ""))[1].find(holder["node"]) > 0, 10)
        line = entry(W["running_on"])
        assert line[3], f"the status line is drawn greyed out: {line}"
        run.ok(f"icon running, menu says {line[1]!r}, not greyed out")

        # c. kill -9 of the holding worker: one failover notification naming both
        other = "srv-b" if holder["node"] == "srv-a" else "srv-a"
        workers[holder["node"]].kill()
        want = W["failover"].format(a=holder["node"], b=other)
        until(f"notification '{want}'", lambda: want in notes.summaries(), 3 + 8)
        body = notes.body(want)
        assert W["failover_body"].format(b=other) in body, body
        until("the menu naming the new server", lambda: other in (entry(W["running_on"]) or (0, ""))[1], 10)
        run.ok(f"failover notified: {want} / {body}")

        # c1. said once, with buttons; "I'm on it" on the note acknowledges in Redis
        assert "moved" not in body and "切换" not in body, f"the body repeats the title: {body}"
        labels = [text for _, text in notes.note(want)["actions"]]
        assert labels[1:] == W["actions"], labels
        notes.press(want, W["actions"][2])
        until("alice's ack in Redis", lambda: run.redis("EXISTS", "{outbound}:ack:alice") == "1", 10)
        run.ok(f"the failover note offers {labels[1:]}; {W['actions'][2]!r} wrote alice's ack")

        # c2. the last server killed: a critical note naming it, with a sound; snooze and open act
        workers[other].kill()
        died = W["died_on"].format(server=other)
        until(f"notification '{died}'", lambda: died in notes.summaries(), 20)
        n = notes.note(died)
        assert n["urgency"] == 2 and n["sound"] == "dialog-warning", n
        notes.press(died, W["actions"][1])
        until("the mute title after the snooze", lambda: entry(W["muted"]) is not None, 10)
        click(W["unmute_left"])
        until("the plain mute title again", lambda: entry(W["muted"]) is None and entry(W["mute"]) is not None, 10)
        def dashboard_shown():
            found = subprocess.run(["xwininfo", "-name", "lockwatch"], capture_output=True, text=True)
            return "Map State: IsViewable" in found.stdout
        assert not dashboard_shown(), "the dashboard was open before the click"
        # A daemon closes a note once one of its buttons is pressed: the click goes to a note still open.
        notes.click(notes.summaries()[0])
        until("the dashboard window", dashboard_shown, 15)
        run.ok(f"died on {other}: critical with a sound; its snooze muted; a click on a note opened the dashboard")

        # d. the checkbox flips alice's own flag, both ways
        assert entry(W["flip"])[2] == 1, entries()
        click(W["flip"])
        until("alice's flag off in Redis", lambda: run.redis("HGET", "{outbound}:enabled:alice", "on") == "0", 10)
        until("the box unchecked", lambda: entry(W["flip"])[2] == 0, 10)
        until("the flip confirmed in the menu", lambda: entry("✓") is not None, 10)
        click(W["flip"])
        until("alice's flag on in Redis", lambda: run.redis("HGET", "{outbound}:enabled:alice", "on") == "1", 10)
        run.ok(f"{W['flip']} writes the own flag, off and on, confirmed by {entry('✓')[1]!r}")

        # e. an ACL refusal reverts the box and notifies
        run.stop(app)
        app = start_app("bob")
        until("bob's tray item", item, 15)
        until("bob's box checked", lambda: (entry(W["flip"]) or (0, "", 0))[2] == 1, 15)

        # e0. a second launch hands over to the running app, which opens its dashboard
        assert not dashboard_shown(), "bob's app opened a window by itself"
        first_item = item()
        second = start_app("bob", second=True)
        until("the second launch to end", lambda: second.poll() is not None, 15)
        watcher.items[:] = [first_item]  # whatever the second one registered went with it
        until("the running app's dashboard", dashboard_shown, 15)
        assert app.poll() is None, "the first app quit"
        run.ok(f"single instance: a second launch ended (exit {second.returncode}) and the running app opened its dashboard")

        # e1. start at login writes the desktop's autostart entry, and removes it
        autostart = os.path.join(home, ".config", "autostart")
        desktop_entries = lambda: [n for n in os.listdir(autostart) if n.endswith(".desktop")] if os.path.isdir(autostart) else []
        assert desktop_entries() == [], desktop_entries()
        click(W["autostart"])
        until("an autostart entry", lambda: desktop_entries() != [], 10)
        desktop = open(os.path.join(autostart, desktop_entries()[0])).read()
        assert f"Exec={TRAY}" in desktop or TRAY in desktop, desktop
        until("the box checked", lambda: (entry(W["autostart"]) or (0, "", 0))[2] == 1, 10)
        click(W["autostart"])
        until("the autostart entry gone", lambda: desktop_entries() == [], 10)
        run.ok(f"start at login writes {desktop_entries() or 'and removes'} the desktop entry")
        before = len(notes.summaries())
        click(W["flip"])
        until("the refusal notification", lambda: W["refused"] in notes.summaries()[before:], 10)
        assert notes.body(W["refused"]) == W["refused_body"], notes.body(W["refused"])
        until("a warning line in the menu", lambda: any(e[1].startswith("⚠") for e in entries()), 10)
        warning = next(e for e in entries() if e[1].startswith("⚠"))
        assert warning[1] == W["refused_line"] and warning[3], f"a short, readable line: {warning}"
        until("the box back to the server's truth", lambda: entry(W["flip"])[2] == 1, 10)
        assert run.redis("HGET", "{outbound}:enabled:bob", "on") == "1"
        run.ok(f"a refused flip springs back, says {warning[1]!r} in the menu and notifies")

        # e2. muting shows until when in the submenu's title, and the time left
        click(W["mute_1h"])
        until("the mute title with the time left", lambda: entry(W["muted"]) is not None and entry(W["unmute_left"]) is not None, 10)
        run.ok(f"muted: the menu says {entry(W['muted'])[1]!r} and {entry(W['unmute_left'])[1]!r}")
        click(W["unmute_left"])
        until("the plain mute title again", lambda: entry(W["muted"]) is None and entry(W["mute"]) is not None, 10)

        # f. Redis killed: one "unreachable", the icon unknown, never stopped
        before = len(notes.summaries())
        redis.kill()
        redis.wait()
        until("the unreachable notification", lambda: W["unreachable"] in notes.summaries()[before:], 15)
        until("the unknown icon", lambda: shown_state() == "unknown", 10)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            assert shown_state() != "stopped", "the icon showed stopped while Redis was down"
            time.sleep(0.1)
        count = notes.summaries()[before:].count(W["unreachable"])
        assert count == 1, notes.summaries()[before:]
        run.ok("Redis down: exactly one unreachable notification, icon unknown, never stopped")
        print(f"{run.passed} passed, 0 failed", flush=True)
        return 0
    except Exception as e:  # report, with what was seen and the app's log, then fail
        print(f"FAILED after {run.passed} checks: {e}", flush=True)
        for what, get in [("status", lambda: run.lockwatch("status").stdout), ("icon", lambda: (str(prop("IconName")), shown_state())), ("menu", lambda: entries()), ("notifications", lambda: notes.seen), ("windows", lambda: [l for l in subprocess.run(["xwininfo", "-root", "-tree"], capture_output=True, text=True).stdout.splitlines() if "lockwatch" in l])]:
            try:
                print(f"--- {what}: {get()}", flush=True)
            except Exception as err:  # noqa: BLE001 - diagnostics only
                print(f"--- {what}: unavailable ({err})", flush=True)
        for root, _, files in os.walk(os.path.join(run.tmp, "home")):
            for f in files:
                if f.endswith((".log", ".desktop")):
                    path = os.path.join(root, f)
                    print(f"--- {path}:\n" + open(path, errors="replace").read()[-3000:], flush=True)
        for name in sorted(os.listdir(run.tmp)):
            if name.startswith("app-"):
                print(f"--- {name}:\n" + open(os.path.join(run.tmp, name)).read()[-3000:], flush=True)
        print(f"{run.passed} passed, 1 failed", flush=True)
        return 1
    finally:
        run.cleanup()
        loop.quit()


if __name__ == "__main__":
    sys.exit(main())
