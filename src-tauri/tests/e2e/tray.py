#!/usr/bin/python3
"""End-to-end test of the tray app on a real session bus and X display.

Run by tests/tray.rs inside dbus-run-session with an Xvfb DISPLAY. This script
owns a fake StatusNotifierWatcher (the tray host) and a fake notification
daemon, starts its own redis-server and two workers, then the real app, and
checks what a supervisor would see: the tray item, its icon, the menu,
notifications, the own flag, an ACL refusal, the mute and a Redis outage,
in the language of the desktop's locale.
Env: LOCKWATCH_BIN, LOCKWATCH_TRAY_BIN, ICONS (the repo's icons/ dir),
LOCALE (the app's LANG, e.g. zh_CN.UTF-8; default en_US.UTF-8).
"""
import hashlib
import html
import json
import os
import subprocess
import sys
import time

import dbus
import gi
from gi.repository import GLib

from desktop import Desktop, app_env, shown_window, until
from support import Run

gi.require_version("GdkPixbuf", "2.0")
from gi.repository import GdkPixbuf  # noqa: E402

TRAY = os.environ["LOCKWATCH_TRAY_BIN"]
ICONS = os.environ["ICONS"]
LEASE = "3s"
LOCALE = os.environ.get("LOCALE", "en_US.UTF-8")

# What a supervisor reads, per language (the app's catalog says it; these are the expectations).
WORDS = {
    "en": {
        "running_on": "outbound: running on ",
        # Two servers, one killed: the failover says none is left to take over.
        "failover": "outbound moved from {a} to {b}; no other server is left to take it over",
        "failover_body": ": {b} runs it now.",
        "actions": ["Open dashboard", "Mute 1 h", "I'm on it"],
        "died_on": "outbound died on {server}",
        "refused_body": "Redis user alice may change only alice's keys, not bob's: set Your name to alice in Settings, or sign in to Redis as bob.",
        "flip": "Enabled for me",
        "refused": "Your switch for outbound was not changed",
        "refused_line": "⚠ Your change was not saved: details in the dashboard",
        "mute_1h": "For 1 hour",
        "mute": "Mute notifications",
        "unmute": "Unmute",
        "muted": "Notifications muted until ",
        "unmute_left": "Unmute (",
        "own_on_it": "You have been on it since ",
        "unreachable": "Redis unreachable: job states unknown",
        "autostart": "Start at login",
        "autostart_machine": "Start at login (set for this computer)",
        "test": "lockwatch test notification",
        "sign_in": "outbound: unknown. Sign in: Settings → Password",
    },
    "zh": {
        "running_on": "outbound：运行中 · ",
        "failover": "outbound 已从 {a} 切换到 {b}，已没有其他服务器可以接管",
        "failover_body": "：现在由 {b} 运行。",
        "actions": ["打开监控面板", "静音 1 小时", "我来处理"],
        "died_on": "outbound 在 {server} 上意外停止",
        "refused_body": "Redis 用户 alice 只能修改 alice 自己的设置，不能修改 bob 的：请在设置中把“您的名字”改为 alice，或以 bob 的身份登录 Redis。",
        "flip": "由我启用",
        "refused": "您对 outbound 的启用设置未能更改",
        "refused_line": "⚠ 您的更改未保存，详情见监控面板",
        "mute_1h": "1 小时",
        "mute": "通知静音",
        "unmute": "恢复通知",
        "muted": "通知已静音至 ",
        "unmute_left": "恢复通知（还剩 ",
        "own_on_it": "您自 ",
        "unreachable": "无法连接 Redis：任务状态未知",
        "autostart": "登录时自动启动",
        "autostart_machine": "登录时自动启动（本机统一设置）",
        "test": "lockwatch 测试通知",
        "sign_in": "outbound：未知。请登录：设置 → 密码",
    },
}
W = WORDS["zh" if LOCALE.startswith(("zh_CN", "zh_SG", "zh_Hans")) else "en"]

def pixels(path):
    """Digest of a PNG's decoded pixels: the tray re-encodes the icon it is given."""
    return hashlib.sha256(GdkPixbuf.Pixbuf.new_from_file(path).get_pixels()).hexdigest()


def icon_states():
    return {pixels(os.path.join(ICONS, f"state-{s}.png")): s for s in ["running", "pending", "stale", "down", "stopped", "conflict", "unknown"]}


def main():
    desktop = Desktop()
    notes, tray = desktop.notes, desktop.item
    states = icon_states()
    run = Run("tray")
    app = None
    try:
        redis = run.start_redis()
        run.grant("alice", "alice-pw")
        assert run.lockwatch("enable", "--user", "alice").returncode == 0
        assert run.lockwatch("enable", "--user", "bob").returncode == 0
        workers = {}
        for node in ["srv-a", "srv-b"]:
            workers[node] = run.worker(node, "--lease", LEASE, "--stop-grace", "1s", "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done")

        def start_app(user, second=False, args=(), **extra):
            env = app_env(run.tmp, lang=LOCALE, LOCKWATCH_REDIS_URL=f"redis://alice:alice-pw@127.0.0.1:{run.port}", LOCKWATCH_USER=user, LOCKWATCH_LOG="info", **extra)
            if not second:
                desktop.host.items.clear()
            return run.start_app(env, f"app-{user}{'-second' if second else ''}{''.join(args)}.log", args)

        def shown_state():
            try:
                return states.get(pixels(str(tray.prop("IconName"))))
            except (GLib.Error, dbus.DBusException):
                return None

        def dashboard_shown():
            return shown_window("lockwatch") is not None

        # a. the item registers with the tray host
        app = start_app("alice")
        desktop.wait_for_item(app, 15)
        run.ok(f"the tray item registered: {tray.registered()[1]}")

        # b. the icon shows running, the menu says where
        until("the running icon", lambda: shown_state() == "running", 15)
        holder = until("a holder", run.holder, 10)
        until("the status line naming the server", lambda: (tray.entry(W["running_on"]) or (0, ""))[1].find(holder["node"]) > 0, 10)
        line = tray.entry(W["running_on"])
        assert line[3], f"the status line is drawn greyed out: {line}"
        assert tray.entry(W["unmute"]) is None, "Unmute offered while nothing is muted"
        run.ok(f"icon running, menu says {line[1]!r}, not greyed out; no Unmute")

        # c. kill -9 of the holding worker: one failover notification naming both
        other = "srv-b" if holder["node"] == "srv-a" else "srv-a"
        workers[holder["node"]].kill()
        want = W["failover"].format(a=holder["node"], b=other)
        until(f"notification '{want}'", lambda: want in notes.summaries(), 3 + 8)
        body = notes.body(want)
        assert W["failover_body"].format(b=other) in body, body
        until("the menu naming the new server", lambda: other in (tray.entry(W["running_on"]) or (0, ""))[1], 10)
        run.ok(f"failover notified: {want} / {body}")

        # c1. said once, with buttons; "I'm on it" on the note acknowledges in Redis
        assert "moved" not in body and "切换" not in body, f"the body repeats the title: {body}"
        labels = [text for _, text in notes.note(want)["actions"]]
        assert labels[1:] == W["actions"], labels
        notes.press(want, W["actions"][2])
        until("alice's ack in Redis", lambda: run.redis("EXISTS", "{outbound}:ack:alice") == "1", 10)
        own = until("her own ack in her menu", lambda: tray.entry(W["own_on_it"]), 10)
        assert "alice" not in own[1], f"her own ack names her: {own}"
        run.ok(f"the failover note offers {labels[1:]}; {W['actions'][2]!r} wrote alice's ack; her menu says {own[1]!r}")

        # c2. the last server killed: a critical note naming it, with a sound; snooze and open act
        workers[other].kill()
        died = W["died_on"].format(server=other)
        until(f"notification '{died}'", lambda: died in notes.summaries(), 20)
        n = notes.note(died)
        assert n["urgency"] == 2 and n["sound"] == "dialog-warning", n
        notes.press(died, W["actions"][1])
        until("the mute title after the snooze", lambda: tray.entry(W["muted"]) is not None, 10)
        tray.click(W["unmute_left"])
        until("the plain mute title again", lambda: tray.entry(W["muted"]) is None and tray.entry(W["mute"]) is not None, 10)
        assert tray.entry(W["unmute"]) is None, "Unmute still offered once unmuted"
        assert not dashboard_shown(), "the dashboard was open before the click"
        # A daemon closes a note once one of its buttons is pressed: the click goes to a note still open.
        notes.click(notes.summaries()[0])
        until("the dashboard window", dashboard_shown, 15)
        run.ok(f"died on {other}: critical with a sound; its snooze muted; a click on a note opened the dashboard")

        # d. the checkbox flips alice's own flag, both ways
        assert tray.entry(W["flip"])[2] == 1, tray.entries()
        tray.click(W["flip"])
        until("alice's flag off in Redis", lambda: run.redis("HGET", "{outbound}:enabled:alice", "on") == "0", 10)
        until("the box unchecked", lambda: tray.entry(W["flip"])[2] == 0, 10)
        until("the flip confirmed in the menu", lambda: tray.entry("✓") is not None, 10)
        tray.click(W["flip"])
        until("alice's flag on in Redis", lambda: run.redis("HGET", "{outbound}:enabled:alice", "on") == "1", 10)
        run.ok(f"{W['flip']} writes the own flag, off and on, confirmed by {tray.entry('✓')[1]!r}")

        # e. an ACL refusal reverts the box and notifies
        run.stop(app)
        app = start_app("bob")
        desktop.wait_for_item(app, 15, "bob's tray item")
        until("bob's box checked", lambda: (tray.entry(W["flip"]) or (0, "", 0))[2] == 1, 15)

        # e0. a second launch hands over to the running app, which opens its dashboard
        assert not dashboard_shown(), "bob's app opened a window by itself"
        first_item = tray.registered()
        second = start_app("bob", second=True)
        until("the second launch to end", lambda: second.poll() is not None, 15)
        desktop.host.items[:] = [first_item]  # whatever the second one registered went with it
        until("the running app's dashboard", dashboard_shown, 15)
        assert app.poll() is None, "the first app quit"
        run.ok(f"single instance: a second launch ended (exit {second.returncode}) and the running app opened its dashboard")

        # e0b. launched again with --test-notification, the running app sends one (muted or not)
        before = len(notes.summaries())
        second = start_app("bob", second=True, args=("--test-notification",))
        until("the second launch to end", lambda: second.poll() is not None, 15)
        desktop.host.items[:] = [first_item]
        until("the test notification", lambda: W["test"] in notes.summaries()[before:], 10)
        assert notes.body(W["test"]), notes.note(W["test"])
        run.ok(f"--test-notification: the running app sent {W['test']!r}")

        # e1. start at login writes the desktop's autostart entry, and removes it
        autostart = os.path.join(run.tmp, "home", ".config", "autostart")
        desktop_entries = lambda: [n for n in os.listdir(autostart) if n.endswith(".desktop")] if os.path.isdir(autostart) else []
        assert desktop_entries() == [], desktop_entries()
        tray.click(W["autostart"])
        until("an autostart entry", lambda: desktop_entries() != [], 10)
        own_entry = desktop_entries()[0]
        desktop_file = open(os.path.join(autostart, own_entry)).read()
        assert f"Exec={TRAY}" in desktop_file or TRAY in desktop_file, desktop_file
        until("the box checked", lambda: (tray.entry(W["autostart"]) or (0, "", 0))[2] == 1, 10)
        tray.click(W["autostart"])
        until("the autostart entry gone", lambda: desktop_entries() == [], 10)
        run.ok(f"start at login writes {desktop_entries() or 'and removes'} the desktop entry")
        before = len(notes.summaries())
        tray.click(W["flip"])
        until("the refusal notification", lambda: W["refused"] in notes.summaries()[before:], 10)
        # The body is markup: the daemon shows what it escapes (&apos; as ').
        assert html.unescape(notes.body(W["refused"])) == W["refused_body"], notes.body(W["refused"])
        until("a warning line in the menu", lambda: any(e[1].startswith("⚠") for e in tray.entries()), 10)
        warning = next(e for e in tray.entries() if e[1].startswith("⚠"))
        assert warning[1] == W["refused_line"] and warning[3], f"a short, readable line: {warning}"
        until("the box back to the server's truth", lambda: tray.entry(W["flip"])[2] == 1, 10)
        assert run.redis("HGET", "{outbound}:enabled:bob", "on") == "1"
        run.ok(f"a refused flip springs back, says {warning[1]!r} in the menu and notifies")

        # e2. muting shows until when in the submenu's title, and the time left
        tray.click(W["mute_1h"])
        until("the mute title with the time left", lambda: tray.entry(W["muted"]) is not None and tray.entry(W["unmute_left"]) is not None, 10)
        run.ok(f"muted: the menu says {tray.entry(W['muted'])[1]!r} and {tray.entry(W['unmute_left'])[1]!r}")
        tray.click(W["unmute_left"])
        until("the plain mute title again", lambda: tray.entry(W["muted"]) is None and tray.entry(W["mute"]) is not None, 10)

        # f. Redis killed: one "unreachable", the icon unknown, never stopped
        before = len(notes.summaries())
        redis.kill()
        redis.wait()
        until("the unreachable notification", lambda: W["unreachable"] in notes.summaries()[before:], 15)
        until("the unknown icon", lambda: shown_state() == "unknown", 10)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            assert shown_state() != "stopped", "the icon showed stopped while Redis was down"
            time.sleep(0.1)
        count = notes.summaries()[before:].count(W["unreachable"])
        assert count == 1, notes.summaries()[before:]
        run.ok("Redis down: exactly one unreachable notification, icon unknown, never stopped")

        # g. the computer starts it for everyone: her item ticked and greyed; her own entry, of the
        # same name, hides the computer's (XDG autostart), so it starts once and is left alone
        run.stop(app)
        machine = os.path.join(run.tmp, "xdg")
        os.makedirs(os.path.join(machine, "autostart"), exist_ok=True)
        with open(os.path.join(machine, "autostart", "lockwatch.desktop"), "w") as f:
            f.write(desktop_file)
        with open(os.path.join(autostart, own_entry), "w") as f:
            f.write(desktop_file)
        app = start_app("bob", XDG_CONFIG_DIRS=machine)
        desktop.wait_for_item(app, 15, "bob's tray item, once more")
        entry = until("the computer's start at login", lambda: tray.entry(W["autostart_machine"]), 10)
        assert entry[2] == 1 and entry[3] is False, f"ticked and greyed: {entry}"
        assert own_entry == "lockwatch.desktop" and desktop_entries() == [own_entry], desktop_entries()
        assert "--autostart" in desktop_file, desktop_file
        run.ok(f"start at login set for the computer: {entry[1]!r} ticked and greyed; her {own_entry} (with --autostart) kept")

        # h. one URL for the team, each logging in as her own name, no password yet, on a Redis whose
        # `default` user is open: the tray says "Sign in" and never reads with default's rights
        run.stop(app)
        run.start_redis()
        site = os.path.join(run.tmp, "site-settings.json")
        with open(site, "w") as f:
            json.dump({"settings": {"redis_url": run.url, "login_as_name": True}}, f)
        env = app_env(run.tmp, lang=LOCALE, LOCKWATCH_SITE_SETTINGS=site, LOCKWATCH_USER="carol", LOCKWATCH_LOG="info")
        desktop.host.items.clear()
        app = run.start_app(env, "app-carol.log")
        desktop.wait_for_item(app, 15, "carol's tray item")
        line = until("the sign-in line", lambda: tray.entry(W["sign_in"]), 15)
        until("Redis refusing carol's login", lambda: "carol" in run.redis("ACL", "LOG"), 10)
        assert shown_state() == "unknown", f"the icon shows {shown_state()} without her password"
        run.ok(f"a name and no password on an open default user: the menu says {line[1]!r}, Redis logged a refused login as carol, icon unknown")
        return run.finish()
    except Exception as e:  # report, with what was seen and the app's log, then fail
        run.failed(e)
        run.show([("status", lambda: run.lockwatch("status").stdout), ("icon", lambda: (str(tray.prop("IconName")), shown_state())),
                  ("menu", tray.entries), ("notifications", lambda: notes.seen),
                  ("windows", lambda: [l for l in subprocess.run(["xwininfo", "-root", "-tree"], capture_output=True, text=True).stdout.splitlines() if "lockwatch" in l])])
        for root, _, files in os.walk(os.path.join(run.tmp, "home")):
            for f in files:
                if f.endswith((".log", ".desktop")):
                    run.show_log(os.path.join(root, f), os.path.join(root, f))
        for name in sorted(os.listdir(run.tmp)):
            if name.startswith("app-"):
                run.show_log(name, os.path.join(run.tmp, name))
        return run.finish(failed=1)
    finally:
        run.cleanup()
        desktop.stop()


if __name__ == "__main__":
    sys.exit(main())
