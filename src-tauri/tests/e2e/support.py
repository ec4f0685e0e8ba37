"""Helpers shared by the end-to-end scripts beside this file."""
import os
import socket
import time


def free_port():
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def xembed_tray_owner(display=None):
    """The window that owns this X screen's system tray selection
    (`_NET_SYSTEM_TRAY_S<screen>`: an XEmbed tray runs), or 0."""
    import ctypes
    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XDefaultScreen.argtypes = [ctypes.c_void_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XGetSelectionOwner.restype = ctypes.c_ulong
    x11.XGetSelectionOwner.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(display.encode() if display else None)
    if not dpy:
        raise RuntimeError("cannot open the X display")
    try:
        atom = x11.XInternAtom(dpy, f"_NET_SYSTEM_TRAY_S{x11.XDefaultScreen(dpy)}".encode(), 0)
        return x11.XGetSelectionOwner(dpy, atom)
    finally:
        x11.XCloseDisplay(dpy)


def x_windows(root="-root"):
    """The X window tree under `root` (`-root`, or `-id <id>`), as
    (depth, id, name, classes) tuples, from `xwininfo -tree`."""
    import re
    import subprocess
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


def still_running(key):
    """True while the process (pid, start time) runs; a zombie has ended."""
    pid, start = key
    p = proc(pid)
    return bool(p) and p["start"] == start and p["state"] not in ("Z", "X")


def sni_menu_labels(bus, name, path):
    """The labels of a StatusNotifierItem's menu (served over
    com.canonical.dbusmenu), in menu order; `name` and `path` as the item
    registered with the tray host."""
    import dbus
    item = bus.get_object(name, path)
    menu = item.Get("org.kde.StatusNotifierItem", "Menu", dbus_interface=dbus.PROPERTIES_IFACE)
    _, layout = bus.get_object(name, menu).GetLayout(0, -1, dbus.Array([], signature="s"), dbus_interface="com.canonical.dbusmenu")
    labels = []

    def walk(node):
        _, props, children = node
        labels.append(str(props.get("label", "")))
        for child in children:
            walk(child)
    walk(layout)
    return labels
