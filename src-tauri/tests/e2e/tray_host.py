#!/usr/bin/python3
"""End-to-end test of how the tray app finds its tray, on a real X display.

Run by tests/tray_host.rs inside dbus-run-session with an Xvfb DISPLAY and no
StatusNotifierWatcher on the bus:
1. with an XEmbed system tray (trayer) the icon is embedded in it, the app
   says it found that tray, opens no dashboard, and prints no CRITICAL line,
   also in a session without XDG_RUNTIME_DIR where the shared temporary
   `tray-icon` folder cannot be used (another user's, on a shared PC);
   its Redis comes from the machine's defaults (an admin's settings.json),
   whose password it drops, saying so without the password;
2. with no tray at all it opens the dashboard with a "No tray" banner, which
   a click dismisses (in the real webview, through tauri-driver).
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN, TAURI_DRIVER.
"""
import json
import os
import sys
import time

from desktop import app_env, ask_bus, tcp_links, until, viewable, x_windows, xembed_tray_owner
from support import Run


def main():
    run = Run("tray-host")
    log = f"{run.tmp}/app.log"

    def app_log():
        with open(log, errors="replace") as f:
            return f.read()

    try:
        # The machine's defaults, as an admin pushes them, wrongly with a password in the URL.
        site = f"{run.tmp}/etc/lockwatch/settings.json"
        os.makedirs(os.path.dirname(site))
        with open(site, "w") as f:
            json.dump({"settings": {"redis_url": f"redis://default:pushed-secret@127.0.0.1:{run.port}"}}, f)
        env = app_env(run.tmp, LOCKWATCH_SITE_SETTINGS=site, LOCKWATCH_LOG="info")
        run.start_redis()
        assert ask_bus("NameHasOwner", "org.kde.StatusNotifierWatcher") == "false", "a StatusNotifierWatcher is on the bus"

        # 1. an XEmbed tray: the icon goes there, no dashboard, no CRITICAL
        trayer = run.spawn(["trayer", "--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "200", "--height", "24"])
        until("trayer to own the system tray selection", xembed_tray_owner, 10)

        def panel_shown():
            panel = next((w for w in x_windows() if w[3] == ["panel", "trayer"]), None)
            return panel is not None and viewable(panel[1])

        until("trayer's panel on screen", panel_shown, 10)
        # The icon library's shared fallback, unusable as another user's would be.
        shared = f"{run.tmp}/shared-tmp"
        os.makedirs(shared)
        open(f"{shared}/tray-icon", "w").close()
        no_runtime_dir = {k: v for k, v in env.items() if k != "XDG_RUNTIME_DIR"}
        app = run.start_app(dict(no_runtime_dir, TMPDIR=shared), "app.log")

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
        run.ok(f"XEmbed tray: icon embedded, no dashboard ({line.split('INFO ')[-1]})")
        until("the app to watch the Redis the machine's defaults name", lambda: tcp_links(app.pid, run.port) > 0, 10)
        dropped = next((l for l in app_log().splitlines() if "redis_url holds a password" in l), None)
        assert dropped and "pushed-secret" not in app_log(), app_log()
        run.ok(f"Redis from the machine's defaults; {dropped.split('WARN ')[-1]}")
        criticals = [l for l in app_log().splitlines() if "CRITICAL" in l]
        assert not criticals, f"CRITICAL lines at start: {criticals}"
        run.ok("no CRITICAL line at start")
        app.terminate()
        app.wait(10)
        trayer.terminate()
        trayer.wait(10)
        until("the tray selection to be free", lambda: xembed_tray_owner() == 0, 10)

        # 2. no tray at all: the dashboard opens with a banner that a click dismisses
        from dashboard import Session  # noqa: E402 - needs TAURI_DRIVER, only this part uses it
        s = Session(env, f"{run.tmp}/driver.log")
        try:
            until("the banner", lambda: s.js("const b = document.getElementById('notray'); return !!b && !b.hidden"), 15)
            text = s.text("#notray .text")
            assert text and "No tray" in text, text
            s.click("#notray button.dismiss")
            until("the banner gone", lambda: s.js("return document.getElementById('notray').hidden"), 5)
            s.view("history")
            s.view("live")
            assert s.js("return document.getElementById('notray').hidden"), "the banner came back"
            run.ok(f"no tray: dashboard with a dismissable banner ({text[:40]}…)")
        finally:
            s.close()
        return run.finish()
    except Exception as e:  # noqa: BLE001 - report and fail
        run.failed(e)
        run.show_log("app log", log)
        return run.finish(failed=1)
    finally:
        run.cleanup()


if __name__ == "__main__":
    sys.exit(main())
