#!/usr/bin/python3
"""End-to-end test of the Windows build of the tray app, under Wine.

Run by tests/wine_tray.rs inside dbus-run-session with an Xvfb DISPLAY, an
XEmbed system tray (trayer) standing in for the taskbar: Wine's notification
area docks Windows tray icons there. Starts a real Redis and a worker, and
`lockwatch-tray.exe` under wine64 with the Redis address only in the
computer's defaults (%ProgramData%\lockwatch\settings.json), then checks:
1. its icon docks in the tray, and the app reads the job (its log);
2. the icon is the job's state: running's green while the worker runs the
   job, then no longer green once the last flag is off and the job stopped;
3. the toasts' AppUserModelID is registered for the user, with its name and
   an icon file that exists;
4. `lockwatch-tray.exe --test-notification`, launched again, has the running
   tray send a test notification, and what Windows answered is logged
   (Wine has no toast platform: the error);
5. launched again, the tray opens its dashboard, finds no WebView2 runtime
   (Wine has none), says so in a message box and stays up, its icon docked;
6. where the computer starts it at login (HKLM Run, as the per-computer
   installer writes), her own HKCU Run value was removed at start, so it
   does not start twice, and the computer's stays.
Env: LOCKWATCH_BIN, WINE, TRAY_EXE, WINEPREFIX.
"""
import json
import os
import subprocess
import sys
import time

from Xlib import X, display

from desktop import until, x_windows, xembed_tray_owner
from support import Run


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

    env = None
    run_key = r"Software\Microsoft\Windows\CurrentVersion\Run"

    def reg(*args):
        return subprocess.run([os.environ["WINE"], "reg", *args], env=env, capture_output=True, text=True)

    try:
        run.start_redis()
        run.lockwatch("enable", "--user", "alice", check=True)
        run.worker("wh-east-1", "--lease", "3s", "--", "sleep", "1000")
        until("wh-east-1 to hold the job", lambda: (run.holder() or {}).get("node") == "wh-east-1", 20)
        run.spawn(["trayer", "--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "200", "--height", "32"])
        until("trayer to own the system tray selection", xembed_tray_owner, 10)

        prefix = os.environ["WINEPREFIX"]
        site = os.path.join(prefix, "drive_c/ProgramData/lockwatch/settings.json")
        os.makedirs(os.path.dirname(site), exist_ok=True)
        with open(site, "w") as f:
            json.dump({"settings": {"redis_url": run.url}}, f)
        env = dict(os.environ, WINEPREFIX=prefix, WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=",
                   LOCKWATCH_USER="alice", LOCKWATCH_LOG="info")
        env.pop("LOCKWATCH_REDIS_URL", None)
        wine = [os.environ["WINE"], os.environ["TRAY_EXE"]]
        for root in ("HKLM", "HKCU"):
            reg("add", f"{root}\\{run_key}", "/v", "lockwatch", "/d", f"lockwatch-tray.exe --autostart ({root})", "/f")
        with open(log, "w") as out:
            app = run.spawn(wine, env=env, stdout=out, stderr=out)

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
        run.ok(f"the icon shows running ({share:.0%} green), then stopped once the last flag is off "
               "(the Redis address from %ProgramData%\\lockwatch\\settings.json)")

        # 3. the toasts' ID, registered for the user
        key = r"HKCU\Software\Classes\AppUserModelId\app.lockwatch.tray"
        values = {}
        for line in subprocess.run([os.environ["WINE"], "reg", "query", key], env=env, capture_output=True, text=True).stdout.splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[1].startswith("REG_"):
                values[parts[0]] = parts[2].strip()
        assert values.get("DisplayName") == "lockwatch", values
        icon_uri = values.get("IconUri", "")
        assert icon_uri.lower().startswith("c:\\") and icon_uri.endswith(".png"), values
        icon_file = os.path.join(prefix, "drive_c", *icon_uri[3:].split("\\"))
        with open(icon_file, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", icon_file
        assert "toasts registered" in app_log(), app_log()
        run.ok(f"the toasts' AppUserModelID is registered: {values}")

        # 4. a test notification, asked by a second launch, and the system's answer logged
        second = run.spawn([*wine, "--test-notification"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until("the second launch to hand over and end", lambda: second.poll() is not None, 30)
        until("the test notification in the log", lambda: "sending a test notification" in app_log(), 10)
        answer = until("the system's answer", lambda: next((l for l in app_log().splitlines()
                       if "lockwatch test notification" in l and ("cannot show a notification" in l or "notified" in l)), None), 10)
        assert "notified" in answer or "error=" in answer, answer
        run.ok(f"a test notification was sent and its fate logged: {answer.strip()[-160:]}")

        # 5. no WebView2: the dashboard is not started, a message box says why, the tray stays
        third = run.spawn(wine, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until("the third launch to hand over and end", lambda: third.poll() is not None, 30)
        until("the missing runtime in the log", lambda: "no web view runtime" in app_log(), 10)
        assert "WebView2 Runtime" in app_log(), app_log()
        box = until("the message box", lambda: next((w for w in x_windows() if w[2] == "lockwatch"), None), 20)
        if os.environ.get("SCREENSHOT_DIR"):
            time.sleep(1)  # let Wine paint it
            subprocess.run(["import", "-window", "root", os.path.join(os.environ["SCREENSHOT_DIR"], "wine-no-webview2-en.png")], check=True, timeout=20)
        assert "dashboard opened" not in app_log(), app_log()
        assert app.poll() is None, f"the app ended:\n{app_log()}"
        assert docked(x_windows()), "the icon left the tray"
        run.ok(f"no WebView2: a message box ({box[1]}) says so, no dashboard process, the tray stays up and docked")

        # 6. the computer starts it at login: her own value went at start, the computer's stayed
        assert "the user's own entry is removed" in app_log(), app_log()
        assert reg("query", f"HKCU\\{run_key}", "/v", "lockwatch").returncode != 0, "her own Run value stayed"
        assert "(HKLM)" in reg("query", f"HKLM\\{run_key}", "/v", "lockwatch").stdout, "the computer's Run value went"
        run.ok("with the computer's HKLM Run value, her own HKCU one was removed at start; the computer's stays")
        os.remove(site)
        return run.finish()
    except Exception as e:  # noqa: BLE001 - report and fail
        run.failed(e)
        run.show_log("the app's log", log)
        return run.finish(failed=1)
    finally:
        if env:
            reg("delete", f"HKLM\\{run_key}", "/v", "lockwatch", "/f")
        run.cleanup()


if __name__ == "__main__":
    sys.exit(main())
