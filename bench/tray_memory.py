"""The tray section's memory, side by side as bench.py prints it under its
table: the app and the empty Tauri tray app idle (RSS, Private_Dirty, Pss),
each next to its goal; the app after its dashboard was opened and closed;
and which mappings hold each one's Private_Dirty.

Goals (the issue's): idle Private_Dirty ≤ 20 MB; idle RSS ≤ 1.2 × the
empty app's; after the dashboard, back within 10 MB of idle. The RSS goal
is shown against both empty runs: as Tauri makes it, and with GDK_GL=disable
as the app runs itself (see tray.py).
"""
import statistics

PRIVATE_DIRTY_MAX_MB = 20
RSS_RATIO_MAX = 1.2
BACK_WITHIN_MB = 10
# Largest Private_Dirty holders shown per app.
TOP = 8
# The columns: (key in tray.py's "idle", heading).
APPS = [("tray", "lockwatch-tray"), ("empty", "empty-tray"), ("empty_no_gl", "empty, no GL")]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def met(ok):
    return "met" if ok else "NOT met"


def mb(v):
    return "—" if v is None else f"{v:.1f}"


def holders(top):
    return ", ".join(f"{name} {v:.1f}" for name, v in list(top.items())[:TOP]) or "—"


def idle_medians(figs):
    """{field: median} of one app's idle window, or {} without figures."""
    if not figs:
        return {}
    return {"rss_mb": median(figs["rss_mb"]), "private_dirty_mb": median(figs["private_dirty_mb"]),
            "pss_mb": median(figs["pss_mb_steps"])}


def rss_goal(app_rss, empty_rss):
    if not empty_rss:
        return "no figures"
    ratio = app_rss / empty_rss
    return f"{met(ratio <= RSS_RATIO_MAX)} ({ratio:.2f} ×; ≤ {RSS_RATIO_MAX * empty_rss:.1f} MB)"


def side_by_side(t):
    """The lines for the tray result `t` of tray.py (its JSON object)."""
    idle = t["idle"]
    cols = [(head, idle_medians(idle.get(key))) for key, head in APPS]
    app = cols[0][1]
    out = [f"tray memory, side by side (MB; medians of {idle['window_s']:.0f}-s idle windows after {t['settle_s']} s "
           "settling, one app at a time on the same fake desktop):",
           "  " + f"{'':<14}" + "".join(f"{head:>16}" for head, _ in cols) + "   goal"]

    def row(label, field, goal):
        return "  " + f"{label:<14}" + "".join(f"{mb(c.get(field)):>16}" for _, c in cols) + f"   {goal}"

    dirty = app.get("private_dirty_mb")
    over = f" ({dirty - PRIVATE_DIRTY_MAX_MB:+.1f} MB)" if dirty is not None and dirty > PRIVATE_DIRTY_MAX_MB else ""
    out += [row("RSS", "rss_mb", f"≤ {RSS_RATIO_MAX} × empty-tray: {rss_goal(app['rss_mb'], cols[1][1].get('rss_mb'))}"),
            " " * (16 + 16 * len(cols)) + f"   ≤ {RSS_RATIO_MAX} × empty, no GL: "
            + rss_goal(app["rss_mb"], cols[2][1].get("rss_mb")),
            row("Private_Dirty", "private_dirty_mb",
                f"≤ {PRIVATE_DIRTY_MAX_MB} MB: {met(dirty is not None and dirty <= PRIVATE_DIRTY_MAX_MB)}{over}"),
            row("Pss", "pss_mb", "—")]
    cycles = t.get("dashboard", [])
    if cycles:
        last = cycles[-1]
        out.append(f"  after the dashboard opened and closed {len(cycles)}×: the tray's process alone after the last "
                   "cycle (change against its last idle reading); the goal holds for every cycle:")
        for label, field in (("RSS", "rss_mb"), ("Private_Dirty", "private_dirty_mb"), ("Pss", "pss_mb")):
            deltas = [c["vs_idle"][field] for c in cycles if c["vs_idle"].get(field) is not None]
            now = last["closed_mb"] if field == "rss_mb" else last.get(f"closed_{field}")
            cell = f"{mb(now)} ({last['vs_idle'].get(field, 0):+.1f})"
            goal = "—" if field == "pss_mb" or not deltas else \
                f"back within {BACK_WITHIN_MB} MB: {met(max(deltas) <= BACK_WITHIN_MB)} (largest {max(deltas):+.1f})"
            out.append("  " + f"{label:<14}{cell:>16}" + " " * 32 + f"   {goal}")
    out.append("  largest Private_Dirty holders, idle (MB; an [anon: …] kind is a guess from the mapping's shape):")
    for key, head in APPS:
        if idle.get(key):
            out.append(f"    {head + ':':<16}{holders(idle[key].get('private_dirty_top', {}))}")
    if t.get("after_dashboard_private_dirty_top"):
        out.append(f"    {'lockwatch-tray after the dashboard:'} {holders(t['after_dashboard_private_dirty_top'])}")
    gl = [f"{head}: {', '.join(idle[key].get('gl_driver') or []) or 'none'}" for key, head in APPS if idle.get(key)]
    out.append("  GL driver mapped (GTK's GLX probe): " + "; ".join(gl))
    return "\n".join(out)
