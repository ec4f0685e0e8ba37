#!/usr/bin/python3
"""End-to-end test of how the tray app finds its tray, on a real X display.

Run by tests/tray_host.rs inside dbus-run-session with an Xvfb DISPLAY and no
StatusNotifierWatcher on the bus:
1. with an XEmbed system tray (trayer) the icon is embedded in it, the app
   says it found that tray, opens no dashboard, and prints no CRITICAL line;
2. with no tray at all it opens the dashboard with a "No tray" banner, which
   a click dismisses (in the real webview, through tauri-driver).
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN, TAURI_DRIVER.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

from support import free_port, until, x_windows, xembed_tray_owner

TRAY = os.environ["LOCKWATCH_TRAY_BIN"]


def main():
    tmp = tempfile.mkdtemp(prefix="lockwatch-tray-host-e2e-")
    port = free_port()
    procs, passed = [], 0
    env = dict(os.environ, HOME=f"{tmp}/home", XDG_RUNTIME_DIR=f"{tmp}/run", XDG_CONFIG_HOME=f"{tmp}/home/.config",
               XDG_DATA_HOME=f"{tmp}/home/.local/share", XDG_CACHE_HOME=f"{tmp}/home/.cache",
               LOCKWATCH_REDIS_URL=f"redis://127.0.0.1:{port}", LOCKWATCH_LOG="info")
    env.pop("LOCKWATCH_OPEN_DASHBOARD", None)
    log = f"{tmp}/app.log"

    def ok(name):
        nonlocal passed
        passed += 1
        print(f"ok {passed}: {name}", flush=True)

    def app_log():
        with open(log, errors="replace") as f:
            return f.read()

    try:
        os.makedirs(f"{tmp}/home")
        os.makedirs(f"{tmp}/run", mode=0o700)
        procs.append(subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        assert subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.NameHasOwner", "string:org.kde.StatusNotifierWatcher"],
                              capture_output=True, text=True).stdout.split()[-1] == "false", "a StatusNotifierWatcher is on the bus"

        # 1. an XEmbed tray: the icon goes there, no dashboard, no CRITICAL
        trayer = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "200", "--height", "24"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(trayer)
        until("trayer to own the system tray selection", xembed_tray_owner, 10)

        def panel_shown():
            panel = next((w for w in x_windows() if w[3] == ["panel", "trayer"]), None)
            info = subprocess.run(["xwininfo", "-id", panel[1]], capture_output=True, text=True).stdout if panel else ""
            return "IsViewable" in info

        until("trayer's panel on screen", panel_shown, 10)
        with open(log, "w") as out:
            app = subprocess.Popen([TRAY], env=env, stdout=out, stderr=out)
        procs.append(app)

        def icon_in_trayer():
            tree = x_windows()
            panel = next((i for i, w in enumerate(tree) if w[3] == ["panel", "trayer"]), None)
            if panel is None:
                return False
            inside = []
            for w in tree[panel + 1:]:
                if w[0] <= tree[panel][0]:
                    break
                inside.append(w)
            return any("lockwatch" in " ".join(w[3]) for w in inside)

        until("the app's icon embedded in trayer", icon_in_trayer, 20)
        # The app decides at start-up, before its icon is embedded; give a window time to show.
        time.sleep(3)
        dashboards = [w for w in x_windows() if w[2] == "lockwatch"]
        assert not dashboards, f"the dashboard opened although a tray shows the icon: {dashboards}\n{app_log()}"
        assert "opening the dashboard" not in app_log(), app_log()
        until("the app to say which tray it found", lambda: "tray host found" in app_log(), 10)
        assert app.poll() is None, f"the app ended: {app_log()}"
        line = next(l for l in app_log().splitlines() if "tray host found" in l)
        ok(f"XEmbed tray: icon embedded, no dashboard ({line.split('INFO ')[-1]})")
        criticals = [l for l in app_log().splitlines() if "CRITICAL" in l]
        assert not criticals, f"CRITICAL lines at start: {criticals}"
        ok("no CRITICAL line at start")
        app.terminate()
        app.wait(10)
        trayer.terminate()
        trayer.wait(10)
        until("the tray selection to be free", lambda: xembed_tray_owner() == 0, 10)

        # 2. no tray at all: the dashboard opens with a banner that a click dismisses
        from dashboard import Session  # noqa: E402 - needs TAURI_DRIVER, only this part uses it
        s = Session(env, f"{tmp}/driver.log")
        try:
            until("the banner", lambda: s.js("const b = document.getElementById('notray'); return !!b && !b.hidden"), 15)
            text = s.text("#notray .text")
            assert text and "No tray" in text, text
            s.click("#notray button.dismiss")
            until("the banner gone", lambda: s.js("return document.getElementById('notray').hidden"), 5)
            s.view("history")
            s.view("live")
            assert s.js("return document.getElementById('notray').hidden"), "the banner came back"
            ok(f"no tray: dashboard with a dismissable banner ({text[:40]}…)")
        finally:
            s.close()
        print(f"{passed} passed, 0 failed", flush=True)
        return 0
    except Exception as e:  # noqa: BLE001 - report and fail
        print(f"FAILED after {passed} checks: {e!r}", flush=True)
        traceback.print_exc()
        if os.path.exists(log):
            print(f"--- app log:\n{app_log()[-3000:]}", flush=True)
        print(f"{passed} passed, 1 failed", flush=True)
        return 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
