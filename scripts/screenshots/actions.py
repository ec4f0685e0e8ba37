#!/usr/bin/python3
"""Stands in for dmenu under dunst: shows the actions it is given, for a screenshot.

dunst hands each action as "#Name (summary)"; the list shows the names, once
each (the click on the note, "default", is named like its Open dashboard button).
"""
import re
import subprocess
import sys

import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk, GLib

names = []
for line in sys.stdin:
    found = re.match(r"#(.*?) \(", line.strip())
    name = found.group(1) if found else line.strip()
    if name and name not in names:
        names.append(name)
w = Gtk.Window(title="actions")
w.set_decorated(False)
box = Gtk.ListBox()
for name in names:
    lab = Gtk.Label(label=name, xalign=0)
    lab.set_margin_start(10); lab.set_margin_end(10); lab.set_margin_top(4); lab.set_margin_bottom(4)
    box.add(lab)
w.add(box)
# Right below the notes, as wide: where dunst's window is (xdotool), else where dunstrc puts it.
x, y, width = 820, 150, 440
try:
    shell = subprocess.run(["xdotool", "search", "--class", "Dunst", "getwindowgeometry", "--shell"],
                           capture_output=True, text=True, timeout=5).stdout
    g = dict(l.split("=", 1) for l in shell.splitlines() if "=" in l)
    x, y, width = int(g["X"]), int(g["Y"]) + int(g["HEIGHT"]) + 12, int(g["WIDTH"])
except (OSError, KeyError, ValueError, subprocess.TimeoutExpired):
    pass
w.move(x, y)
w.set_default_size(width, -1)
w.show_all()
GLib.timeout_add(8000, Gtk.main_quit)
Gtk.main()
