#!/usr/bin/env python3
"""Checks that the engines decide without I/O: nothing an engine's code
reaches through its imports (`crate::…`, `super::…`; tests aside) does I/O.

Usage: scripts/engine-imports.py   (from the repository's root)
The engines are the status engine (`status`), the watcher's pacing
(`watcher::pace`), the worker's (`work::engine`) with the wait it asks
(`work::handover`) and its judge of lost flags (`work::lost`), and the history's flip budget.
A file does I/O when its code names tokio, a Redis call, the file system,
processes, sockets or libc; the clock's module may be named for its type,
and an engine's own code never reads the time. Modules declared under
`#[cfg(test)]` are tests, which may reach anywhere. Prints each engine that reaches such a file,
by which path, and exits 1; exits 0 and says so when none does.
"""
import importlib.util
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("module_cycles", os.path.join(here, "module-cycles.py"))
cycles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cycles)

ENGINES = ["status", "work::engine", "work::handover", "work::lost", "history::budget", "watcher::pace"]
IO = re.compile(r"\btokio::|\.query_async\(|\bquery\(|redis::aio|redis::cmd|std::fs\b|std::process\b|std::net\b|\blibc::")
# The clock's module reads the time, but holds its type too: an engine may
# name the type, never read the time itself (checked below).
TIME_ONLY = {"clock"}
READS_TIME = re.compile(r"\b(Boot|Instant|SystemTime)::now\(")


def test_only(src, module):
    """Whether `module` (a::b::c) is declared under #[cfg(test)] in its parent, or below one that is."""
    parts = module.split("::")
    for k in range(1, len(parts)):
        parent = os.path.join(src, *parts[: k - 1]) if k > 1 else src
        name = parts[k - 1] if k > 1 else None
        files = [os.path.join(parent, name + ".rs"), os.path.join(parent, name, "mod.rs")] if name else [os.path.join(src, "lib.rs")]
        text = next((open(f, encoding="utf-8").read() for f in files if os.path.exists(f)), "")
        if re.search(r"#\[cfg\(test\)\]\s*(pub(\([\w:]+\))?\s+)?mod\s+" + re.escape(parts[k]) + r"\s*;", text):
            return True
    return False


def main():
    found, edges = cycles.graph("src", True)
    found = {m: paths for m, paths in found.items() if not test_only("src", m)}
    doing = {m for m, paths in found.items() if m not in TIME_ONLY and any(IO.search(cycles.code_of(p)) for p in paths)}
    bad = 0
    for engine in ENGINES:
        # Its own files: the module and everything below it.
        start = [m for m in found if m == engine or m.startswith(engine + "::")]
        for m in start:
            for path in found[m]:
                if READS_TIME.search(cycles.code_of(path)):
                    bad += 1
                    print(f"{engine}: {path} reads the time itself; the time comes in with each call")
        via = {m: [m] for m in start}
        todo = list(start)
        while todo:
            m = todo.pop()
            for n in sorted(edges.get(m, ())):
                if n in found and n not in via:
                    via[n] = via[m] + [n]
                    todo.append(n)
        reached = sorted(m for m in via if m in doing)
        for m in reached:
            bad += 1
            print(f"{engine}: reaches {m}, which does I/O: {' → '.join(via[m])}")
        if not reached:
            print(f"{engine}: decides without I/O ({len(via)} modules reached)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
