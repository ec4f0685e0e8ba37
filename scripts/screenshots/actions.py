#!/usr/bin/python3
"""Stands in for dmenu under dunst: shows the actions it is given, for a screenshot."""
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk, GLib
lines = [l.rstrip("\n") for l in sys.stdin if l.strip()]
w = Gtk.Window(title="actions")
w.set_decorated(False)
box = Gtk.ListBox()
for l in lines:
    lab = Gtk.Label(label=l, xalign=0)
    lab.set_margin_start(10); lab.set_margin_end(10); lab.set_margin_top(4); lab.set_margin_bottom(4)
    box.add(lab)
w.add(box)
w.move(818, 196)
w.set_default_size(440, -1)
w.show_all()
GLib.timeout_add(8000, Gtk.main_quit)
Gtk.main()
