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
In the desktop's language (LOCALE); with SCREENSHOT_DIR set, the window is
kept there as switch-off-<lang>.png.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN, LOCALE (default en_US.UTF-8), SCREENSHOT_DIR.
"""
import os
import signal
import subprocess
import sys
import time

import dbus

from desktop import Desktop, app_env, below, close_window, descendants, shown_window, still_running, until, x_windows
from support import Run

LOCALE = os.environ.get("LOCALE", "en_US.UTF-8")
ZH = LOCALE.startswith("zh_CN")
# What the app's catalog says (menu-flip, dialog-off-title, note-stopped, menu-own-off, the status line).
FLIP = "由我启用" if ZH else "Enabled for me"
TITLE = "停用 outbound" if ZH else "Switch outbound off"
STOPPED = "outbound 已停止" if ZH else "outbound stopped"
CONFIRMED = "✓ 您已于 " if ZH else "✓ You switched it off at "
RUNNING = "outbound：运行中 · " if ZH else "outbound: running on "
REASON = "maintenance window 42"
SHOTS = os.environ.get("SCREENSHOT_DIR") or None


def main():
    desktop = Desktop(capabilities=["body", "actions"])
    notes, tray = desktop.notes, desktop.item
    run = Run("switch-off")
    app = None

    def flag():
        return run.redis("HGET", "{outbound}:enabled:alice", "on")

    def dialogs():
        """The dashboard's processes asking why the job goes off."""
        return {k: c for k, c in below(app.pid).items() if "--dashboard=off?job=outbound" in c}

    def ask():
        """Unticks the box and waits for the window: (process key, window id)."""
        tray.click(FLIP)

        def asking():
            assert flag() == "1", f"the flag flipped before anyone was asked: on={flag()!r}"
            return next(iter(dialogs()), None)
        child = until("a dashboard process on off?job=outbound", asking, 20)
        wid = until(f"a mapped window titled {TITLE!r}", lambda: shown_window(TITLE), 30)
        return child, wid

    try:
        run.start_redis()
        run.grant("alice", "alice-pw")
        # alice alone has the job on: unticking it stops the job everywhere.
        assert run.lockwatch("enable", "--user", "alice").returncode == 0
        run.worker("srv-a", "--lease", "3s", "--stop-grace", "1s", "--", "sh", "-c", "while :; do sleep 0.2; done")
        until("the job running", run.holder, 15)

        env = app_env(run.tmp, lang=LOCALE, LOCKWATCH_REDIS_URL=f"redis://alice:alice-pw@127.0.0.1:{run.port}",
                      LOCKWATCH_USER="alice", LOCKWATCH_LOG="info")
        app = run.start_app(env, "app.log")
        desktop.wait_for_item(app, 15, "the tray item")
        until("the box checked", lambda: (tray.entry(FLIP) or (0, "", 0))[2] == 1, 15, retry_on=(dbus.DBusException,))
        until("the menu saying where it runs", lambda: tray.entry(RUNNING), 15)

        # 1. the last one unticks: a window asks why, the flag stays on
        child, wid = ask()
        time.sleep(2)
        assert flag() == "1", f"the flag changed before the window was answered: on={flag()!r}"
        if SHOTS:
            name = f"switch-off-{'zh' if ZH else 'en'}.png"
            subprocess.run(["import", "-window", wid, os.path.join(SHOTS, name)], check=True, timeout=20)
        assert STOPPED not in notes.summaries(), notes.summaries()
        assert app.poll() is None, "the tray app ended"
        run.ok(f"unticking opened {TITLE!r} ({wid}) in pid {child[0]}; the flag still on 2 s later; no {STOPPED!r}")

        # 2. closing the window keeps the job on and ends the dashboard's process
        close_window(wid)
        until("the dashboard's process to end", lambda: not still_running(child), 15)
        until("the window gone", lambda: shown_window(TITLE) is None, 10)
        time.sleep(1)
        assert flag() == "1", f"closing the window changed the flag: on={flag()!r}"
        assert app.poll() is None, "the tray app ended with its window"
        until("the box checked again", lambda: (tray.entry(FLIP) or (0, "", 0))[2] == 1, 10)
        assert tray.entry(CONFIRMED) is None, tray.entries()
        run.ok("closing the window kept the flag on, ended the dashboard's process, and the tray runs on")

        # 3. answering it: the reason goes with the flip; the tray confirms, does not notify
        child, wid = ask()
        until("the reason field focused", lambda: subprocess.run(["xdotool", "windowfocus", "--sync", wid], capture_output=True, timeout=10).returncode == 0, 10)
        time.sleep(1)  # the page focuses its field once its script ran
        subprocess.run(["xdotool", "type", "--delay", "30", REASON], check=True, timeout=30)
        subprocess.run(["xdotool", "key", "Return"], check=True, timeout=10)
        until("alice's flag off in Redis", lambda: flag() == "0", 15)
        until("the reason in the job's history", lambda: REASON in run.lockwatch("history").stdout, 10)
        until("the dashboard's process to end", lambda: not still_running(child), 15)
        line = until("the confirmation in the menu", lambda: tray.entry(CONFIRMED), 10)
        until("the box unchecked", lambda: tray.entry(FLIP)[2] == 0, 10)
        until("the job stopped", lambda: not run.holder(), 20)
        time.sleep(3)  # long enough for a "stopped" note to be sent
        assert STOPPED not in notes.summaries(), notes.summaries()
        assert app.poll() is None, "the tray app ended"
        run.ok(f"answered: flag off with {REASON!r} in the history, menu says {line[1]!r}, no {STOPPED!r}")
        return run.finish()
    except Exception as e:  # report what was seen and the app's log, then fail
        run.failed(e)
        run.show([("flag", flag), ("notifications", notes.summaries), ("menu", tray.entries),
                  ("processes", lambda: descendants(app.pid) if app else {}),
                  ("windows", lambda: [w for w in x_windows() if w[2]]), ("history", lambda: run.lockwatch("history").stdout)])
        run.show_log("app.log", os.path.join(run.tmp, "app.log"), 4000)
        return run.finish(failed=1)
    finally:
        run.cleanup(signal.SIGTERM)
        desktop.stop()


if __name__ == "__main__":
    sys.exit(main())
