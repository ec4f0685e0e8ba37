#!/usr/bin/python3
"""End-to-end test of the dashboard's life beside the tray, on a real X display.

Run by tests/dashboard_life.rs inside dbus-run-session with an Xvfb DISPLAY.
Owns a fake tray host and notification daemon (the app runs as on a desktop
with a tray), starts a real Redis, a worker and the app, then checks:
1. with the window never opened, nothing of the web view runs (no WebKit
   process; the tray's process links WebKit, as every Tauri app does, and
   never starts it) and no GL driver is loaded into the app;
2. a second launch opens the dashboard (a window, WebKit running);
3. closing the window (WM_DELETE_WINDOW, as a window manager's close button)
   ends everything the dashboard started, WebKit's web and network
   processes included, and the tray app lives on, still without WebKit's
   processes or GL;
4. the dashboard opens again, and closes again the same way;
5. a tray app that ends takes its open dashboard with it.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN.
"""
import os
import signal
import subprocess
import sys
import time

from desktop import GL_DRIVER, Desktop, app_env, below, close_window, kill_left, mapped, still_running, until, x_windows
from support import Run

TRAY = os.environ["LOCKWATCH_TRAY_BIN"]


def dashboards():
    return [w for w in x_windows() if w[2] == "lockwatch"]


def webkit(procs):
    return sorted(os.path.basename(c.split()[0]) for c in procs.values() if "WebKit" in c)


def main():
    desktop = Desktop(capabilities=["body"])
    run = Run("dashboard-life")
    app = None

    def app_log():
        with open(os.path.join(run.tmp, "app.log"), errors="replace") as f:
            return f.read()[-3000:]

    def open_dashboard():
        second = subprocess.run([TRAY], env=env, capture_output=True, timeout=30)
        assert second.returncode == 0, f"the second launch failed: {second}"
        window = until("the dashboard window", lambda: (dashboards() or [None])[0], 30)
        until("WebKit's web process", lambda: "WebKitWebProcess" in webkit(below(app.pid)), 30)
        return window

    def close_dashboard(window):
        """Closes the window; returns the processes that ended with it."""
        started = below(app.pid)
        close_window(window[1])
        until("the dashboard window to close", lambda: not dashboards(), 15)
        # Checked one by one: an orphan is no longer below the app, but runs.
        until("everything the dashboard started to end",
              lambda: not below(app.pid) and not [k for k in started if still_running(k)], 20)
        assert app.poll() is None, f"the tray app ended with its dashboard:\n{app_log()}"
        return sorted(os.path.basename(c.split()[0]) for c in started.values())

    try:
        env = app_env(run.tmp, LOCKWATCH_REDIS_URL=run.url, LOCKWATCH_USER="alice", LOCKWATCH_LOG="info")
        run.start_redis()
        run.lockwatch("enable", "--user", "alice", check=True)
        run.worker("srv-a", "--lease", "3s", "--", "sleep", "1000")

        # 1. never opened: no web view, no GL
        app = run.start_app(env, "app.log")
        desktop.wait_for_item(app, 30)
        time.sleep(2)  # what a start loads, it has loaded by now
        assert not dashboards(), f"a window opened: {dashboards()}"
        assert not webkit(below(app.pid)), f"WebKit runs with no window open: {webkit(below(app.pid))}"
        assert not mapped(app.pid, GL_DRIVER), f"a GL driver is loaded with no window open: {mapped(app.pid, GL_DRIVER)}"
        run.ok("never opened: no web view runs, no GL driver loaded")

        # 2. a second launch opens it
        window = open_dashboard()
        run.ok(f"a second launch opens the dashboard ({', '.join(webkit(below(app.pid)))})")

        # 3. closing it ends all it started; the tray lives on, still without GL
        ended = close_dashboard(window)
        assert not mapped(app.pid, GL_DRIVER), f"a GL driver stayed in the tray app: {mapped(app.pid, GL_DRIVER)}"
        assert not webkit(below(app.pid)), f"WebKit outlived its window: {webkit(below(app.pid))}"
        run.ok(f"closed: {', '.join(ended)} ended; the tray lives on, without WebKit's processes or GL")

        # 4. again
        close_dashboard(open_dashboard())
        run.ok("opened and closed again")

        # 5. the tray app ends with its dashboard open: the dashboard ends too
        open_dashboard()
        started = below(app.pid)
        app.terminate()
        app.wait(10)
        until("the dashboard and WebKit to end with the tray app", lambda: not [k for k in started if still_running(k)], 20)
        until("the dashboard window to go", lambda: not dashboards(), 10)
        run.ok("the dashboard ends with the tray app")
        return run.finish()
    except Exception as e:  # noqa: BLE001 - report and fail
        run.failed(e)
        run.show_log("app log", os.path.join(run.tmp, "app.log"))
        return run.finish(failed=1)
    finally:
        leftovers = list(below(app.pid)) if app and app.poll() is None else []
        if app:
            run.stop(app, signal.SIGKILL)
        kill_left(leftovers)
        run.cleanup()
        desktop.stop()


if __name__ == "__main__":
    sys.exit(main())
