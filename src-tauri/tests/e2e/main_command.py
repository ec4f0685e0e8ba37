#!/usr/bin/python3
"""The README's main command, `bash scripts/run.sh`, on a desktop.

Run by tests/main_command.rs inside dbus-run-session with an Xvfb DISPLAY.
This script is the desktop: a tray host (the fake StatusNotifierWatcher of
tray.py) and a notification daemon on the session bus. It starts run.sh as
a terminal on that desktop would (a clean environment: PATH, HOME, DISPLAY,
the session bus, where Rust lives), sees the tray item register and name the
server that runs the job, then sends SIGINT to run.sh and checks that nothing
it started is left.
Env: REPO (the repository), LOCKWATCH_BIN, CARGO_HOME, RUSTUP_HOME, CARGO_TARGET_DIR (optional).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from support import descendants, sni_menu_labels, still_running, until
from tray import Notifications, Watcher  # also sets up the GLib main loop for dbus

import dbus
import dbus.service
from gi.repository import GLib

REPO = os.environ["REPO"]
LOCKWATCH = os.environ["LOCKWATCH_BIN"]


def main():
    bus = dbus.SessionBus()
    watcher_name = dbus.service.BusName("org.kde.StatusNotifierWatcher", bus)  # noqa: F841 - owned while it lives
    watcher = Watcher(bus)
    notify_name = dbus.service.BusName("org.freedesktop.Notifications", bus)  # noqa: F841
    Notifications(bus)
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()
    client = dbus.SessionBus(private=True)

    tmp = tempfile.mkdtemp(prefix="lockwatch-main-command-e2e-")
    out_path = f"{tmp}/run.out"
    passed, seen, run = 0, {}, None

    def ok(name):
        nonlocal passed
        passed += 1
        print(f"ok {passed}: {name}", flush=True)

    def output():
        with open(out_path, errors="replace") as f:
            return f.read()

    def record():
        seen.update(descendants(run.pid))

    def waiting(what, check, timeout):
        # Records what run.sh started while waiting, and fails at once if it ends.
        def step():
            record()
            assert run.poll() is None, f"run.sh ended ({run.returncode}) before {what}:\n{output()}"
            return check()
        return until(what, step, timeout, retry_on=(dbus.DBusException,))

    try:
        os.makedirs(f"{tmp}/run", mode=0o700)
        env = {k: os.environ[k] for k in ("PATH", "HOME", "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "CARGO_HOME", "RUSTUP_HOME", "CARGO_TARGET_DIR")
               if k in os.environ}
        env["XDG_RUNTIME_DIR"] = f"{tmp}/run"
        started = time.monotonic()
        with open(out_path, "w") as out:
            run = subprocess.Popen(["bash", "scripts/run.sh"], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   start_new_session=True)
        waiting("cargo build to finish", lambda: "Finished `dev`" in output(), 1800)
        built = time.monotonic() - started
        url = waiting("the demo's Redis URL", lambda: (re.search(r"Redis at (redis://127\.0\.0\.1:\d+)", output()) or [None, None])[1], 120)
        name, path = waiting("the tray item to register", lambda: watcher.items and watcher.items[-1], 60)
        registered = time.monotonic() - started
        ok(f"the tray item registered ({path}); run.sh's cargo build took {built:.1f} s, the item came {registered - built:.1f} s later")

        def holder():
            out = subprocess.run([LOCKWATCH, "--redis", url, "status", "--json"], capture_output=True, text=True, timeout=20).stdout
            return out and (json.loads(out).get("holder") or {}).get("node")

        node = waiting("a server holding the job", holder, 30)
        line = waiting(f"the menu naming {node}", lambda: next((l for l in sni_menu_labels(client, name, path) if node in l), None), 30)
        ok(f"the menu names the server running the job: {line!r}")
        criticals = [l for l in output().splitlines() if "CRITICAL" in l]
        assert not criticals, f"CRITICAL lines: {criticals}"

        record()
        tray = [k for k, cmd in seen.items() if cmd.endswith("lockwatch-tray")]
        assert tray, f"no tray app among {sorted(seen.values())}"
        # SIGINT to run.sh alone, as `kill -INT` from another terminal: it must stop the rest itself.
        run.send_signal(signal.SIGINT)
        try:
            run.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"run.sh did not end within 60 s of SIGINT:\n{output()}")
        deadline = time.monotonic() + 5
        while any(still_running(k) for k in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [(k, seen[k]) for k in seen if still_running(k)]
        assert not left, f"left running after SIGINT: {left}"
        port = url.rsplit(":", 1)[1]
        assert subprocess.run(["redis-cli", "-p", port, "PING"], capture_output=True, text=True).stdout.strip() != "PONG", "the demo's Redis still answers"
        ok(f"SIGINT: run.sh ended ({run.returncode}), nothing of the {len(seen)} processes it started is left")
        print(output(), flush=True)
        print(f"{passed} passed, 0 failed", flush=True)
        return 0
    except Exception as e:  # noqa: BLE001 - report and fail
        print(f"FAILED after {passed} checks: {e!r}", flush=True)
        traceback.print_exc()
        if os.path.exists(out_path):
            print(f"--- run.sh's output:\n{output()[-4000:]}", flush=True)
        print(f"{passed} passed, 1 failed", flush=True)
        return 1
    finally:
        if run and run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        for key in seen:
            if still_running(key):
                os.kill(key[0], signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
        loop.quit()


if __name__ == "__main__":
    sys.exit(main())
