#!/usr/bin/python3
"""The README's main command, `bash scripts/run.sh`, on a desktop.

Run by tests/main_command.rs inside dbus-run-session with an Xvfb DISPLAY.
This script is the desktop: a tray host (the fake StatusNotifierWatcher of
desktop.py) and a notification daemon on the session bus. It starts run.sh as
a terminal on that desktop would (a clean environment: PATH, HOME, DISPLAY,
the session bus, where Rust lives), sees the tray item register and name the
server that runs the job, then sends SIGINT to run.sh and checks that nothing
it started is left.
Env: REPO (the repository), LOCKWATCH_BIN, CARGO_HOME, RUSTUP_HOME, CARGO_TARGET_DIR (optional).
"""
import os
import re
import signal
import subprocess
import sys
import time

import dbus

from desktop import Desktop, descendants, kill_left, still_running, until
from support import Run, holder

REPO = os.environ["REPO"]


def main():
    desktop = Desktop()
    test = Run("main-command")
    out_path = f"{test.tmp}/run.out"
    seen, run = {}, None

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
        os.makedirs(f"{test.tmp}/run", mode=0o700)
        env = {k: os.environ[k] for k in ("PATH", "HOME", "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "CARGO_HOME", "RUSTUP_HOME", "CARGO_TARGET_DIR")
               if k in os.environ}
        env["XDG_RUNTIME_DIR"] = f"{test.tmp}/run"
        started = time.monotonic()
        with open(out_path, "w") as out:
            run = subprocess.Popen(["bash", "scripts/run.sh"], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   start_new_session=True)
        waiting("cargo build to finish", lambda: "Finished `dev`" in output(), 1800)
        built = time.monotonic() - started
        url = waiting("the demo's Redis URL", lambda: (re.search(r"Redis at (redis://127\.0\.0\.1:\d+)", output()) or [None, None])[1], 120)
        _, path = waiting("the tray item to register", desktop.item.registered, 60)
        registered = time.monotonic() - started
        test.ok(f"the tray item registered ({path}); run.sh's cargo build took {built:.1f} s, the item came {registered - built:.1f} s later")

        node = waiting("a server holding the job", lambda: (holder(url) or {}).get("node"), 30)
        line = waiting(f"the menu naming {node}", lambda: next((e[1] for e in desktop.item.entries() if node in e[1]), None), 30)
        test.ok(f"the menu names the server running the job: {line!r}")
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
        test.ok(f"SIGINT: run.sh ended ({run.returncode}), nothing of the {len(seen)} processes it started is left")
        print(output(), flush=True)
        return test.finish()
    except Exception as e:  # noqa: BLE001 - report and fail
        test.failed(e)
        test.show_log("run.sh's output", out_path, 4000)
        return test.finish(failed=1)
    finally:
        if run and run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        kill_left(seen)
        test.cleanup()
        desktop.stop()


if __name__ == "__main__":
    sys.exit(main())
