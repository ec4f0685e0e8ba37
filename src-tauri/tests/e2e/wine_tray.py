#!/usr/bin/python3
"""End-to-end test of the Windows build of the tray app, under Wine.

Run by tests/wine_tray.rs inside dbus-run-session with an Xvfb DISPLAY, an
XEmbed system tray (trayer) standing in for the taskbar: Wine's notification
area docks Windows tray icons there. Starts a real Redis and a worker, and
`lockwatch-tray.exe` under wine64, then checks:
1. its icon docks in the tray, and the app reads the job (its log);
2. the icon is the job's state: running's green while the worker runs the
   job, then no longer green once the last flag is off and the job stopped.
Env: LOCKWATCH_BIN, WINE, TRAY_EXE, WINEPREFIX.
"""
import os
import sys

from Xlib import X, display

from support import Run, until, x_windows, xembed_tray_owner


def docked(tree):
    """The windows inside trayer's panel that Wine's explorer.exe owns."""
    panel = next((i for i, w in enumerate(tree) if w[3] == ["panel", "trayer"]), None)
    if panel is None:
        return []
    inside = []
    for w in tree[panel + 1:]:
        if w[0] <= tree[panel][0]:
            break
        inside.append(w)
    return [w for w in inside if "explorer.exe" in w[3]]


def green_share(window_id):
    """The share of the window's pixels that are running's green."""
    x = display.Display()
    w = x.create_resource_object("window", int(window_id, 16))
    g = w.get_geometry()
    data = w.get_image(0, 0, g.width, g.height, X.ZPixmap, 0xFFFFFFFF).data
    pixels = [data[i:i + 4] for i in range(0, len(data), 4)]  # B, G, R, X
    green = sum(1 for b, gr, r, _ in pixels if gr > 100 and gr > r + 40 and gr > b + 20)
    x.close()
    return green / max(1, len(pixels))


def main():
    run = Run("wine-tray")
    log = os.path.join(run.tmp, "tray.log")

    def app_log():
        with open(log, errors="replace") as f:
            return f.read()

    try:
        run.start_redis()
        run.lockwatch("enable", "--user", "alice", check=True)
        run.worker("wh-east-1", "--lease", "3s", "--", "sleep", "1000")
        until("wh-east-1 to hold the job", lambda: (run.holder() or {}).get("node") == "wh-east-1", 20)
        run.spawn(["trayer", "--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "200", "--height", "32"])
        until("trayer to own the system tray selection", xembed_tray_owner, 10)

        env = dict(os.environ, WINEPREFIX=os.environ["WINEPREFIX"], WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=",
                   LOCKWATCH_REDIS_URL=run.url, LOCKWATCH_USER="alice", LOCKWATCH_LOG="info")
        with open(log, "w") as out:
            app = run.spawn([os.environ["WINE"], os.environ["TRAY_EXE"]], env=env, stdout=out, stderr=out)

        # 1. docked, and reading the job
        icon = until("the icon docked in the tray", lambda: (docked(x_windows()) or [None])[0], 60)
        until("the app to watch the job", lambda: "watching" in app_log(), 20)
        assert "notification area" in app_log(), app_log()
        assert app.poll() is None, f"the app ended:\n{app_log()}"
        run.ok(f"the icon docks in the tray ({icon[1]}) and the app watches the job")

        # 2. the icon follows the job's state
        until("the running icon (green)", lambda: green_share(icon[1]) > 0.08, 20)
        share = green_share(icon[1])
        run.lockwatch("disable", "--user", "alice", check=True)
        until("the job to stop", lambda: run.holder() is None, 20)
        until("the icon no longer green", lambda: green_share(icon[1]) < 0.02, 20)
        run.ok(f"the icon shows running ({share:.0%} green), then stopped once the last flag is off")
        return run.finish()
    except Exception as e:  # noqa: BLE001 - report and fail
        run.failed(e)
        run.show_log("the app's log", log)
        return run.finish(failed=1)
    finally:
        run.cleanup()


if __name__ == "__main__":
    sys.exit(main())
