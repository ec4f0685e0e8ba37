"""The desktop harness: what the app's end-to-end scripts beside this file
and the tray benchmark (bench/tray.py) both need to run the tray app as on
a desktop.

In order: waiting; the app's environment and start; a fake desktop on the
session bus (tray host, notification daemon) and the tray item's menu; the
processes below the app; X windows; what a process maps and the links it
holds. One script's run (its temp dir, Redis and count of checks) is the
tests' own, in support.py.
"""
import contextlib
import ctypes
import os
import re
import signal
import subprocess
import threading
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib


def until(what, check, timeout, retry_on=()):
    """Polls `check` every 100 ms until it returns something true, and returns
    that; exceptions of the `retry_on` types count as "not yet"."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
            last = value
        except retry_on as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def app_env(root, lang=None, **settings):
    """The environment the tray app runs in, as on a fresh account: this
    one's, with HOME and the XDG directories under `root` (`root`/home and
    `root`/run, created), without the caller's LOCKWATCH_OPEN_DASHBOARD or
    LOCKWATCH_REDIS_URL, with the machine's defaults looked for in
    `root`/etc/lockwatch/settings.json, and with `settings` on top
    (LOCKWATCH_USER=…).
    With `lang`, the desktop's language: LANG, and no LC_ALL, LC_MESSAGES
    or LANGUAGE to override it."""
    home, runtime = os.path.join(root, "home"), os.path.join(root, "run")
    os.makedirs(home, exist_ok=True)
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    dropped = {"LOCKWATCH_OPEN_DASHBOARD", "LOCKWATCH_REDIS_URL"} | ({"LC_ALL", "LC_MESSAGES", "LANGUAGE"} if lang else set())
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(HOME=home, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=f"{home}/.config",
               XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
               LOCKWATCH_SITE_SETTINGS=f"{root}/etc/lockwatch/settings.json")
    if lang:
        env["LANG"] = lang
    env.update(settings)
    return env


def start_app(tray, env, log, args=()):
    """Starts the tray app `tray` with `args` in `env`, its stdout and stderr into the file `log`."""
    with open(log, "w") as out:
        return subprocess.Popen([tray, *args], env=env, stdout=out, stderr=out)


def ask_bus(method, name):
    """The session bus's answer to org.freedesktop.DBus.`method`(`name`)
    (NameHasOwner: "true"/"false"), or None when it gives none."""
    out = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                          f"org.freedesktop.DBus.{method}", f"string:{name}"], capture_output=True, text=True)
    return out.stdout.split()[-1] if out.returncode == 0 and out.stdout.split() else None


class TrayHost(dbus.service.Object):
    """A tray host (StatusNotifierWatcher): records the items that register,
    as (bus name, object path)."""

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
    """A notification daemon that shows buttons and reads what `capabilities`
    say (body markup or not): records each note (summary, body, urgency,
    actions, sound) and can press a button as a user would (the
    ActionInvoked signal)."""

    def __init__(self, bus, capabilities):
        self.seen = []
        self.capabilities = list(capabilities)
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
        return self.capabilities

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


class TrayItem:
    """The tray item the app registered last with `host`: its properties and
    its menu (com.canonical.dbusmenu), read over a connection of the
    script's own. The menu is read afresh on each call: every rebuild
    renumbers its entries."""

    def __init__(self, host):
        self.host = host
        self.bus = None

    def connection(self):
        if self.bus is None:
            self.bus = dbus.SessionBus(private=True)
        return self.bus

    def registered(self):
        """(bus name, object path) of the item, or None before one registers."""
        return self.host.items[-1] if self.host.items else None

    def prop(self, name):
        sender, path = self.host.items[-1]
        return self.connection().get_object(sender, path).Get("org.kde.StatusNotifierItem", name, dbus_interface=dbus.PROPERTIES_IFACE)

    def entries(self):
        """The menu's entries in order, as (id, label, toggle state or -1, enabled)."""
        return self._read()[1]

    def entry(self, prefix):
        """The first entry whose label, mnemonic underscores aside, starts with `prefix`, or None."""
        return self._find(self.entries(), prefix)

    def click(self, prefix):
        """Clicks the entry `entry(prefix)` finds, as a user would."""
        menu, entries = self._read()
        nid = self._find(entries, prefix)[0]
        menu.Event(dbus.Int32(nid), "clicked", dbus.Int32(0, variant_level=1), dbus.UInt32(int(time.time())), dbus_interface="com.canonical.dbusmenu")

    def _read(self):
        menu_path = str(self.prop("Menu"))
        sender, _ = self.host.items[-1]
        menu = self.connection().get_object(sender, menu_path)
        _, layout = menu.GetLayout(0, -1, dbus.Array([], signature="s"), dbus_interface="com.canonical.dbusmenu")
        entries = []

        def walk(node):
            nid, props, children = node
            entries.append((int(nid), str(props.get("label", "")), int(props.get("toggle-state", -1)), bool(props.get("enabled", True))))
            for child in children:
                walk(child)
        walk(layout)
        return menu, entries

    @staticmethod
    def _find(entries, prefix):
        return next((e for e in entries if e[1].replace("_", "").startswith(prefix)), None)


class Desktop:
    """What a desktop with a tray offers the app on the session bus: a tray
    host (`host`, with the app's `item`) and a notification daemon (`notes`)
    that reads `capabilities`, served from a GLib main loop in a thread of
    their own until `stop`."""

    def __init__(self, capabilities=("body", "body-markup", "actions")):
        dbus.mainloop.glib.threads_init()
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.SessionBus()
        # Owned while the desktop lives.
        self.names = [dbus.service.BusName("org.kde.StatusNotifierWatcher", bus),
                      dbus.service.BusName("org.freedesktop.Notifications", bus)]
        self.host = TrayHost(bus)
        self.notes = Notifications(bus, capabilities)
        self.item = TrayItem(self.host)
        self.loop = GLib.MainLoop()
        threading.Thread(target=self.loop.run, daemon=True).start()

    def wait_for_item(self, app, timeout, what="the tray item to register"):
        """Waits for a tray item (clear `host.items` before a new app starts)
        and returns it; fails at once if `app` ends first."""
        def registered():
            if app.poll() is not None:
                raise RuntimeError(f"the app exited ({app.returncode}) before its tray item registered")
            return self.item.registered()
        return until(what, registered, timeout)

    def stop(self):
        self.loop.quit()


def descendants(pid):
    """The processes `pid` started, and theirs, as {(pid, start time): command line}
    read from /proc (the start time tells a process from a later one with its pid)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            p = proc(int(entry))
            if p:
                procs[int(entry)] = p
    found, parents = {}, [pid]
    while parents:
        parent = parents.pop()
        for child, p in procs.items():
            if p["ppid"] == parent:
                parents.append(child)
                found[(child, p["start"])] = p["cmdline"]
    return found


def below(pid):
    """The live processes `pid` started (and theirs): {(pid, start time): command line}."""
    return {k: v for k, v in descendants(pid).items() if still_running(k)}


def proc(pid):
    """State, parent, start time and command line of a process, or None once it is reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return {"state": fields[0], "ppid": int(fields[1]), "start": int(fields[19]), "cmdline": cmdline}


def kill_left(keys):
    """SIGKILL to each process (pid, start time) of `keys` that still runs."""
    for key in keys:
        if still_running(key):
            try:
                os.kill(key[0], signal.SIGKILL)
            except ProcessLookupError:
                pass


def still_running(key):
    """True while the process (pid, start time) runs; a zombie has ended."""
    pid, start = key
    p = proc(pid)
    return bool(p) and p["start"] == start and p["state"] not in ("Z", "X")


class _ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int), ("display", ctypes.c_void_p),
                ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong), ("format", ctypes.c_int), ("l", ctypes.c_long * 5)]


class _XEvent(ctypes.Union):
    _fields_ = [("xclient", _ClientMessage), ("pad", ctypes.c_long * 24)]


@contextlib.contextmanager
def _x_display(display=None):
    """libX11 (through ctypes) and a connection to `display` (default: $DISPLAY), closed after."""
    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XDefaultScreen.argtypes = [ctypes.c_void_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XGetSelectionOwner.restype = ctypes.c_ulong
    x11.XGetSelectionOwner.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.POINTER(_XEvent)]
    x11.XFlush.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(display.encode() if display else None)
    if not dpy:
        raise RuntimeError("cannot open the X display")
    try:
        yield x11, dpy
    finally:
        x11.XCloseDisplay(dpy)


def xembed_tray_owner(display=None):
    """The window that owns this X screen's system tray selection
    (`_NET_SYSTEM_TRAY_S<screen>`: an XEmbed tray runs), or 0."""
    with _x_display(display) as (x11, dpy):
        atom = x11.XInternAtom(dpy, f"_NET_SYSTEM_TRAY_S{x11.XDefaultScreen(dpy)}".encode(), 0)
        return x11.XGetSelectionOwner(dpy, atom)


def x_windows(root="-root"):
    """The X window tree under `root` (`-root`, or `-id <id>`), as
    (depth, id, name, classes) tuples, from `xwininfo -tree`."""
    for attempt in range(5):
        # A window that goes away while xwininfo walks the tree makes it fail: walk again.
        run = subprocess.run(["xwininfo", *root.split(), "-tree"], capture_output=True, text=True)
        if run.returncode == 0:
            break
        if attempt == 4:
            raise RuntimeError(f"xwininfo failed: {run.stderr.strip()}")
        time.sleep(0.1)
    out = run.stdout
    windows = []
    for line in out.splitlines():
        m = re.match(r'^(\s*)(0x[0-9a-f]+) (?:"(.*)"|\(has no name\)):\s*(\((?:"[^"]*"\s*)*\))?', line)
        if m:
            classes = re.findall(r'"([^"]*)"', m.group(4) or "")
            windows.append((len(m.group(1)), m.group(2), m.group(3) or "", classes))
    return windows


def viewable(window_id):
    """True while the window ("0x…") is mapped and all its ancestors are: on screen."""
    info = subprocess.run(["xwininfo", "-id", window_id], capture_output=True, text=True).stdout
    return "Map State: IsViewable" in info


def shown_window(name):
    """The id of a window titled `name` that is on screen, or None."""
    return next((w[1] for w in x_windows() if w[2] == name and viewable(w[1])), None)


def close_window(window_id, display=None):
    """What a window manager's close button does: a WM_DELETE_WINDOW client
    message to the window (`window_id` as int or "0x…")."""
    if isinstance(window_id, str):
        window_id = int(window_id, 16)
    with _x_display(display) as (x11, dpy):
        ev = _XEvent()
        ev.xclient.type = 33  # ClientMessage
        ev.xclient.window = window_id
        ev.xclient.message_type = x11.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
        ev.xclient.format = 32
        ev.xclient.l[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
        ev.xclient.l[1] = 0  # CurrentTime
        if not x11.XSendEvent(dpy, window_id, 0, 0, ctypes.byref(ev)):
            raise RuntimeError(f"cannot send WM_DELETE_WINDOW to {window_id:#x}")
        x11.XFlush(dpy)


# Parts of the names of a GL driver's files (Mesa's DRI driver, LLVM) and of the web view's libraries.
GL_DRIVER = ("libLLVM", "_dri.so", "libgallium")


def mapped(pid, parts):
    """The files mapped into `pid` whose path holds one of `parts`."""
    with open(f"/proc/{pid}/maps") as f:
        return sorted({line.split()[-1] for line in f if any(k in line for k in parts)})


def tcp_links(pid, port):
    """How many TCP connections process `pid` holds to loopback `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[2].split(":")[1], 16) == port and fields[3] == "01":  # ESTABLISHED
                inodes.add(fields[9])
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            count += 1
    return count
