#!/usr/bin/python3
"""End-to-end test of the dashboard in the real WebKitGTK webview.

Run by tests/dashboard.rs with an Xvfb DISPLAY inside dbus-run-session. Drives
the app through tauri-driver (W3C WebDriver, plain HTTP) against a real Redis
and two real workers: the live view, the own toggle, a failover in the
history, field-by-field validation, settings that survive a restart, and
signing in on a desktop without a keyring (this session bus has no Secret
Service): the tray first says "Sign in", then runs once the password is
saved in the dashboard's own process.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN, TAURI_DRIVER, SCREENSHOT_DIR (optional).
"""
import base64
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import dbus

import desktop as harness
import support
from support import free_port

TRAY = os.environ["LOCKWATCH_TRAY_BIN"]
DRIVER = os.environ["TAURI_DRIVER"]
SHOTS = os.environ.get("SCREENSHOT_DIR") or None


def until(what, check, timeout):
    # A WebDriver request may fail while the driver or the page is not ready yet.
    return harness.until(what, check, timeout, retry_on=(urllib.error.URLError, OSError, KeyError))


def release_app_name():
    """True once no app holds the single-instance name; kills a straggler."""
    name = "app.lockwatch.tray.SingleInstance"
    if harness.ask_bus("NameHasOwner", name) != "true":
        return True
    pid = harness.ask_bus("GetConnectionUnixProcessID", name)
    if pid and pid.isdigit():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    return False


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


class Session:
    """One app run under its own tauri-driver, with its own environment."""

    def __init__(self, env, log):
        self.port, native = free_port(), free_port()
        self.log = log
        with open(log, "ab") as out:
            self.driver = subprocess.Popen([DRIVER, "--port", str(self.port), "--native-port", str(native)], env=env,
                                           stdout=out, stderr=out, start_new_session=True)
        until("tauri-driver", lambda: self.driver.poll() is None and socket.create_connection(("127.0.0.1", self.port), 0.2).close() is None, 15)
        caps = {"capabilities": {"alwaysMatch": {"tauri:options": {"application": TRAY, "args": []}, "browserName": "wry"}}}
        # The driver listens before its WebKitWebDriver is ready: retry the first request.
        self.id = until("a WebDriver session", lambda: self.call("POST", "/session", caps)["sessionId"], 20)
        until("the page", lambda: self.js("return document.readyState") == "complete" and self.js("return !!document.querySelector('#view-live')"), 20)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"{}").get("value")

    def js(self, script, *args):
        # The driver's link to WebKitWebDriver sometimes drops a request; every
        # script this test sends is safe to send again (reads, the hash, set
        # values, clicks that check first or submit the same form).
        for attempt in range(3):
            try:
                return self.call("POST", f"/session/{self.id}/execute/sync", {"script": script, "args": list(args)})
            except ConnectionError:
                if attempt == 2:
                    raise
                time.sleep(0.3)

    def element(self, css):
        value = self.call("POST", f"/session/{self.id}/element", {"using": "css selector", "value": css})
        return next(v for k, v in value.items() if k.endswith("cecf"))

    def click(self, css):
        # A DOM click, as keyboard and mouse both end in one; WebKitWebDriver's
        # synthesized pointer events add nothing here but flakiness.
        found = self.js("const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e", css)
        assert found, f"nothing matches {css}"

    def set_checked(self, css, want):
        # Clicks only when needed, so a resent request cannot toggle twice.
        found = self.js("const e = document.querySelector(arguments[0]); if (e && e.checked !== arguments[1]) e.click(); return !!e", css, want)
        assert found, f"nothing matches {css}"

    def type(self, css, text):
        # Set as a user's typing leaves it (value, then an input event); the
        # form reads its fields on submit.
        found = self.js("const e = document.querySelector(arguments[0]); if (!e) return false;"
                        " e.focus(); e.value = arguments[1]; e.dispatchEvent(new Event('input', {bubbles: true})); return true", css, text)
        assert found, f"nothing matches {css}"

    def text(self, css):
        return self.js("const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null", css)

    def view(self, name):
        self.js(f"location.hash = '#{name}'")
        until(f"the {name} view", lambda: self.js(f"return !document.getElementById('view-{name}').hidden"), 5)

    def screenshot(self, name):
        if SHOTS:
            time.sleep(0.5)  # let the webview paint what the checks just saw
            png = base64.b64decode(self.call("GET", f"/session/{self.id}/screenshot"))
            with open(os.path.join(SHOTS, name), "wb") as f:
                f.write(png)

    def tray_pid(self):
        """The tray app's process (the driver started it; the dashboard is its child)."""
        return next(pid for (pid, _), cmd in harness.descendants(self.driver.pid).items()
                    if cmd.split()[0] == TRAY and "--dashboard=" not in cmd)

    def close(self):
        try:
            self.call("DELETE", f"/session/{self.id}")
        except Exception:  # noqa: BLE001 - the driver may already be gone
            pass
        try:
            os.killpg(self.driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.driver.wait()
        # The next run must not meet this one: the app is single-instance, and
        # a second launch hands over to a first that is still on the bus.
        until("the app to be gone", lambda: not group_alive(self.driver.pid), 10)
        until("the single-instance name to be free", release_app_name, 10)


# What is wrong with how the settings form is laid out, as the webview drew
# it: a box apart from its words (at a line's end, its words on the next),
# words broken over two lines, a placeholder cut off.
LAYOUT_PROBLEMS = """
const problems = [];
const form = document.querySelector('form.settings');
for (const label of form.querySelectorAll('fieldset label, label.check')) {
  const box = label.querySelector('input').getBoundingClientRect();
  const range = document.createRange();
  range.selectNodeContents(label.querySelector('span'));
  const lines = [...range.getClientRects()];
  const words = label.textContent.trim();
  if (lines.length !== 1 && label.closest('fieldset')) problems.push(`words over ${lines.length} lines: ${words}`);
  const first = lines[0];
  const middle = (r) => (r.top + r.bottom) / 2;
  if (Math.abs(middle(box) - middle(first)) > first.height / 2 || box.right > first.left) problems.push(`box apart from its words: ${words}`);
}
const ctx = document.createElement('canvas').getContext('2d');
for (const input of form.querySelectorAll('input[placeholder]')) {
  if (!input.placeholder || input.offsetParent === null) continue;
  const style = getComputedStyle(input);
  ctx.font = style.font;
  const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  if (ctx.measureText(input.placeholder).width > room) problems.push(`placeholder cut: ${input.placeholder}`);
}
return { width: window.innerWidth, problems };
"""


def layout_checked(s, lang):
    """The settings form's layout problems with Advanced open, as the webview lays it out; none expected."""
    s.js("document.querySelector('form.settings details.advanced').open = true")
    seen = s.js(LAYOUT_PROBLEMS)
    s.screenshot(f"settings-{lang}.png")
    s.js("document.querySelector('form.settings details.advanced').open = false")
    assert not seen["problems"], f"the settings form at {seen['width']} px in {lang}: {seen['problems']}"
    return seen["width"]


def main():
    run = support.Run("dashboard")
    url, port, sessions = run.url, run.port, []

    def open_app(**extra):
        # The page's words follow the desktop's language; these checks read English.
        env = harness.app_env(run.tmp, lang="en_US.UTF-8", LOCKWATCH_OPEN_DASHBOARD="1", LOCKWATCH_USER="alice", **extra)
        s = Session(env, f"{run.tmp}/app-{len(sessions) + 1}.log")
        sessions.append(s)
        return s

    # A tray host and notification daemon of this script's own, on the bus
    # before any app starts: a daemon the host has installed (dunst) would
    # be started on demand and own the name.
    desktop = harness.Desktop()
    try:
        run.start_redis()
        run.lockwatch("enable", "--user", "alice", check=True)
        workers = {}
        for node in ["srv-a", "srv-b"]:
            workers[node] = run.worker(node, "--lease", "3s", "--stop-grace", "1s", "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done")
        holder = until("a holder", run.holder, 10)["node"]

        # 1. the live view shows the truth, pushed, on the right server
        s = open_app(LOCKWATCH_REDIS_URL=url)
        card = '[data-job="outbound"]'
        until("Running", lambda: s.text(f"{card} .badge .word") == "Running", 15)
        until(f"server {holder}", lambda: s.text(f"{card} dd.server") == holder, 10)
        s.screenshot("dashboard-live.png")
        run.ok(f"live view: Running on {holder}")

        # 2. the own toggle writes alice's flag, both ways
        # alice is the last one on: she is asked why, and nothing is flipped until she answers
        s.set_checked(f"{card} input.mine", False)
        until("the switch-off form", lambda: s.js(f"return !!document.querySelector('{card} form.off')"), 5)
        assert run.redis("HGET", "{outbound}:enabled:alice", "on") == "1", "flipped before she answered"
        s.click(f"{card} form.off .cancel")
        until("the form gone, still on", lambda: not s.js(f"return !!document.querySelector('{card} form.off')"), 5)
        assert s.js(f"return document.querySelector('{card} input.mine').checked") is True
        s.set_checked(f"{card} input.mine", False)
        until("the switch-off form again", lambda: s.js(f"return !!document.querySelector('{card} form.off')"), 5)
        s.type(f"{card} form.off input[name=reason]", "stock count tonight")
        s.js(f"document.querySelector('{card} form.off').requestSubmit()")
        until("alice's flag off", lambda: run.redis("HGET", "{outbound}:enabled:alice", "on") == "0", 10)
        assert run.redis("HGET", "{outbound}:enabled:alice", "reason") == "stock count tonight"
        until("Stopped", lambda: s.text(f"{card} .badge .word") == "Stopped", 10)
        s.set_checked(f"{card} input.mine", True)
        until("alice's flag on", lambda: run.redis("HGET", "{outbound}:enabled:alice", "on") == "1", 10)
        until("Running again", lambda: s.text(f"{card} .badge .word") == "Running", 10)
        run.ok("the own toggle turns the job off (asked why, as the last one on) and on")

        # 2b. bob's "I'm on it", said on the command line, shows in alice's dashboard
        run.redis("SADD", "{outbound}:users", "bob")  # a registered supervisor, who has not switched it on
        run.lockwatch("ack", "--user", "bob", "--note", "looking at wh-a", check=True)
        line = until("bob on it", lambda: next((li for li in (s.js(f"return [...document.querySelectorAll('{card} .on-it li')].map(l => l.textContent)") or []) if li.startswith("bob since")), None), 10)
        assert line.endswith(": looking at wh-a"), line
        run.ok(f"acks in the webview: {line}")

        # 3. kill -9 of the holder: the other server shows, and the failover is in the history
        holder = until("a holder", run.holder, 10)["node"]
        other = "srv-b" if holder == "srv-a" else "srv-a"
        workers[holder].kill()
        until(f"server {other}", lambda: s.text(f"{card} dd.server") == other, 3 + 6)
        s.view("history")
        row = until("the failover row", lambda: s.js(
            "return [...document.querySelectorAll('table.failovers tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
            ".find(c => c[1] === 'failover' && c[2] === arguments[0] && c[3] === arguments[1]) ?? null", holder, other), 10)
        flip = until("alice's flip in the history", lambda: s.js(
            "return [...document.querySelectorAll('table.flips tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
            ".find(c => c[1] === 'alice' && c[2] === 'off') ?? null"), 10)
        assert flip[3] not in ("", "–") and flip[4] == "stock count tonight", flip
        legend = s.text("#view-history .legend")
        assert "hatched: nobody ran it" in legend, legend
        s.click('.zoom button[data-window="1h"]')
        until("the 1 h strip", lambda: s.text("#view-history .card h2") == "outbound: the last 1 h", 10)
        s.screenshot("dashboard-history.png")
        run.ok(f"failover {holder} → {other} in the history: {row}; alice's flip from {flip[3]}: {flip[4]!r}; the strip zooms")

        # 4. bad input is refused field by field, nothing saved
        s.view("settings")
        width = layout_checked(s, "en")
        run.ok(f"the settings form at {width} px in English: each box beside its words, no placeholder cut off")
        s.type("#poll", "fast")
        s.click("form.settings button[type=submit]")
        until("poll marked invalid", lambda: s.js("return document.getElementById('poll').getAttribute('aria-invalid')") == "true", 5)
        assert s.text("#poll-error"), "no sentence for the poll field"
        assert not os.path.exists(f"{run.tmp}/home/.local/share/app.lockwatch.tray/settings.json"), "invalid settings were saved"
        assert s.js("return document.querySelector('form.settings details.advanced').open") is True, "the refused field is folded away"
        assert s.js("return getComputedStyle(document.querySelector('header')).position") == "sticky"
        run.ok(f"invalid poll refused: {s.text('#poll-error')} (opened under Advanced; the tabs stay in view)")

        # 4b. Test connection tries what is in effect: LOCKWATCH_REDIS_URL, not the form's default URL
        s.click("form.settings button.test")
        tested = until("the test's answer", lambda: (lambda r: r if r and not r.endswith("…") and r != "Testing…" else None)(s.text("form.settings .result")), 15)
        assert tested.startswith(f"Connected to 127.0.0.1:{port} ") and "\n" not in tested, tested
        # The holder killed in 3 is counted as silent, not as a worker.
        assert tested.endswith("one worker alive, 1 silent."), tested
        run.ok(f"Test connection: {tested}")

        # 4c. Send a test notification: the tray, the process that notifies, sends it
        s.click("form.settings button.notify-test")
        said = until("the button's answer", lambda: s.text("form.settings .notify-result") or None, 5)
        assert said.startswith("Sent: it shows in a few seconds."), said

        def tray_said():
            with open(s.log, errors="replace") as f:
                return "sending a test notification" in f.read()
        until("the tray to send it", tray_said, 10)
        until("the test notification on the desktop", lambda: "lockwatch test notification" in desktop.notes.summaries(), 10)
        run.ok(f"Send a test notification: {said!r}, and the tray sent it to the desktop")
        s.close()

        # 4d. several jobs: a list, the one in trouble (stock: no such job, unknown) on top; a click opens a job's card
        s = open_app(LOCKWATCH_REDIS_URL=url, LOCKWATCH_JOB="outbound,stock")
        rows_js = "return [...document.querySelectorAll('table.job-list tbody tr')].map(r => [r.dataset.job, r.querySelector('.word').textContent])"
        rows = until("the list, stock first", lambda: (lambda r: r if r and r[0] == ["stock", "Unknown"] and r[1] == ["outbound", "Running"] else None)(s.js(rows_js)), 15)
        shown = "return [...document.querySelectorAll('article.card')].filter(c => !c.hidden).map(c => c.dataset.job)"
        assert s.js(shown) == ["stock"], s.js(shown)
        s.click('table.job-list tr[data-job="outbound"] button.open')
        until("the outbound card alone", lambda: s.js(shown) == ["outbound"], 5)
        assert s.text('article.card[data-job="outbound"] .badge .word') == "Running"
        s.screenshot("dashboard-jobs.png")
        run.ok(f"two jobs listed, trouble first: {rows}; a click opened outbound's card")
        s.close()

        # 5. settings saved in one run hold in the next
        s = open_app()
        s.view("settings")
        s.type("#redis_url", url)
        s.type("#heartbeat_grace", "7s")
        # Meanwhile the tray's menu mutes notifications (the tray's process writes the file, as here):
        # saving the form must keep that.
        store = f"{run.tmp}/home/.local/share/app.lockwatch.tray/settings.json"
        os.makedirs(os.path.dirname(store), exist_ok=True)
        muted_until = int(time.time() * 1000) + 3_600_000
        with open(store, "w") as f:
            json.dump({"settings": {"mute_until_ms": muted_until}}, f)
        s.click("form.settings button[type=submit]")
        until("Saved", lambda: (s.text("form.settings .result") or "").startswith("Saved"), 10)
        with open(store) as f:
            kept = json.load(f)["settings"].get("mute_until_ms")
        assert kept == muted_until, f"saving the form undid the tray's mute: {kept}"
        # The dashboard runs in a process of its own: the tray's process
        # must take the saved settings too, and watch the new Redis.
        tray = s.tray_pid()
        until("the tray app to watch the saved Redis", lambda: harness.tcp_links(tray, port) > 0, 15)
        s.close()
        s = open_app()
        s.view("settings")
        until("the saved URL", lambda: s.js("return document.getElementById('redis_url').value") == url, 10)
        assert s.js("return document.getElementById('heartbeat_grace').value") == "7s"
        s.view("live")
        until("Running from the saved settings", lambda: s.text(f"{card} .badge .word") == "Running", 15)
        run.ok("settings survive a restart and take effect; the tray's mute made meanwhile is kept")

        # 5b. saved in Chinese, it says so in Chinese, and the form holds together in Chinese too
        s.view("settings")
        s.js("const l = document.getElementById('language'); l.value = 'zh-CN'; l.dispatchEvent(new Event('change', {bubbles: true}))")
        s.click("form.settings button[type=submit]")
        said = until("Saved, in Chinese", lambda: (lambda r: r if r and r.startswith("已保存") else None)(s.text("form.settings .result")), 10)
        assert said == "已保存，正在按新设置监控。", said
        assert s.text("#nav-settings") == "设置"
        width = layout_checked(s, "zh")
        run.ok(f"saved in Chinese: {said!r}; the form at {width} px in Chinese: each box beside its words, no placeholder cut off")
        s.close()

        # 6. no keyring: a Redis that wants a password, one URL for the team; she signs in from Settings
        port2 = free_port()
        admin = f"redis://default:admin-pw@127.0.0.1:{port2}"
        run.spawn(["redis-server", "--port", str(port2), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--dir", run.tmp, "--requirepass", "admin-pw"])
        cli = lambda *a: subprocess.run(["redis-cli", "-p", str(port2), "--no-auth-warning", "-a", "admin-pw", *a],
                                        capture_output=True, text=True, timeout=10).stdout.strip()
        until("the second redis", lambda: cli("PING") == "PONG", 10)
        bin_ = os.environ["LOCKWATCH_BIN"]
        for line in subprocess.run([bin_, "acl", "--user", "carol"], capture_output=True, text=True, check=True).stdout.splitlines():
            cli(*shlex.split(line))
        cli("ACL", "SETUSER", "carol", ">carol-pw")
        subprocess.run([bin_, "--redis", admin, "enable", "--user", "carol"], check=True, capture_output=True)
        run.spawn([bin_, "--redis", admin, "worker", "--node", "srv-c", "--lease", "3s", "--", "sleep", "1000"])
        os.makedirs(f"{run.tmp}/etc/lockwatch", exist_ok=True)
        with open(f"{run.tmp}/etc/lockwatch/settings.json", "w") as f:
            json.dump({"settings": {"redis_url": f"redis://127.0.0.1:{port2}", "login_as_name": True}}, f)
        os.remove(store)
        before = len(desktop.notes.summaries())
        desktop.host.items.clear()
        s = Session(harness.app_env(run.tmp, lang="en_US.UTF-8", LOCKWATCH_OPEN_DASHBOARD="1"), f"{run.tmp}/app-sign-in.log")
        sessions.append(s)
        tray = desktop.item
        def head():
            """The tray menu's line for the job, once the tray has registered."""
            if not tray.registered():
                return None
            try:
                return next((e[1] for e in tray.entries() if e[1].startswith("outbound: ")), None)
            except dbus.DBusException:
                return None
        said = until("the tray to ask her to sign in", lambda: (lambda h: h if h and "Sign in: Settings → Password" in h else None)(head()), 20)
        until("the sign-in notification", lambda: "lockwatch: sign in to Redis" in desktop.notes.summaries()[before:], 10)
        assert desktop.notes.summaries()[before:].count("lockwatch: sign in to Redis") == 1, desktop.notes.summaries()
        s.view("settings")
        # No password yet, and no keyring here: the head line shows no stars, the field says where one would go.
        head_line = until("the head line", lambda: (lambda h: h if h and h.startswith("redis://") else None)(s.text("#connection")), 10)
        assert head_line.startswith(f"redis://127.0.0.1:{port2} · as ") and "***" not in head_line, head_line
        hint = until("the password field's hint", lambda: (lambda p: p if p and "leave empty" not in p else None)(s.js("return document.getElementById('password').placeholder")), 10)
        assert hint == "no keyring here: kept in memory until lockwatch quits", hint
        s.type("#user", "carol")
        s.type("#password", "carol-pw")
        s.click("form.settings button[type=submit]")
        saved = until("Saved", lambda: (lambda r: r if r and r.startswith("Saved") else None)(s.text("form.settings .result")), 10)
        assert "no keyring" in saved, f"this desktop was to have no keyring: {saved}"
        running = until("the tray running as carol", lambda: (lambda h: h if h and h.startswith("outbound: running on srv-c") else None)(head()), 20)
        with open(s.log, errors="replace") as f:
            assert "carol-pw" not in f.read(), "the password is in the log"
        run.ok(f"no keyring: the head line read {head_line!r}, the password field {hint!r}; the tray said {said!r} and notified once; after Save in Settings it reads {running!r}")
        return run.finish()
    except Exception as e:  # noqa: BLE001 - report and fail
        run.failed(e)
        for s in sessions:
            run.show_log(s.log, s.log)
        return run.finish(failed=1)
    finally:
        desktop.stop()
        # Workers and Redis first: nothing below may keep them alive.
        run.stop_all()
        for s in sessions:
            try:
                s.close()
            except Exception as e:  # noqa: BLE001 - cleanup must go on
                print(f"cleanup: {e!r}", flush=True)
        run.cleanup()


if __name__ == "__main__":
    sys.exit(main())
