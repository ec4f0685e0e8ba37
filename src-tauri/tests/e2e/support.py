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


def close_window(window_id, display=None):
    """What a window manager's close button does: a WM_DELETE_WINDOW client
    message to the window (`window_id` as int or "0x…")."""
    import ctypes
    if isinstance(window_id, str):
        window_id = int(window_id, 16)

    class ClientMessage(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int), ("display", ctypes.c_void_p),
                    ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong), ("format", ctypes.c_int), ("l", ctypes.c_long * 5)]

    class XEvent(ctypes.Union):
        _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]

    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.POINTER(XEvent)]
    x11.XFlush.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(display.encode() if display else None)
    if not dpy:
        raise RuntimeError("cannot open the X display")
    try:
        ev = XEvent()
        ev.xclient.type = 33  # ClientMessage
        ev.xclient.window = window_id
        ev.xclient.message_type = x11.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
        ev.xclient.format = 32
        ev.xclient.l[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
        ev.xclient.l[1] = 0  # CurrentTime
        if not x11.XSendEvent(dpy, window_id, 0, 0, ctypes.byref(ev)):
            raise RuntimeError(f"cannot send WM_DELETE_WINDOW to {window_id:#x}")
        x11.XFlush(dpy)
    finally:
        x11.XCloseDisplay(dpy)


# Parts of the names of a GL driver's files (Mesa's DRI driver, LLVM) and of the web view's libraries.
GL_DRIVER = ("libLLVM", "_dri.so", "libgallium")
WEB_VIEW = ("libwebkit2gtk", "libjavascriptcoregtk", "libflite")


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
