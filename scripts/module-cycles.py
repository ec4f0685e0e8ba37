#!/usr/bin/env python3
"""Prints the import circles among a crate's top-level modules.

Usage: scripts/module-cycles.py SRC_DIR   (e.g. src, src-tauri/src)
A module `a` uses `b` when the code of a file of `a` (not its comments or
tests) names `crate::b` (in a `use` or a path; `crate::{b, c}` counts each). Prints each group of modules that
reach each other (a strongly connected component of more than one), and
exits 1 when there is one; exits 0 and says so when there is none.
"""
import os
import re
import sys


def top_module(src, path):
    rel = os.path.relpath(path, src)
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def main():
    src = sys.argv[1]
    edges = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            module = top_module(src, path)
            if module in ("lib", "main", "bin"):
                continue
            text = open(path, encoding="utf-8").read()
            # Tests may reach anywhere, and comments name what they like: only the code counts.
            text = text.split("#[cfg(test)]")[0]
            text = "\n".join(line.split("//")[0] for line in text.splitlines())
            used = set(re.findall(r"crate::(\w+)", text))
            for group in re.findall(r"crate::\{([^}]*)\}", text):
                used |= {w.split("::")[0].strip() for w in group.split(",") if w.strip()}
            edges.setdefault(module, set()).update(u for u in used if u != module and u != "self")
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    if not out:
        print(f"{src}: no import circle among {len(edges)} modules")
        return 0
    for group in out:
        print(f"{src}: circle: {' ⇄ '.join(group)}")
        for a in group:
            print(f"    {a} uses {', '.join(sorted(b for b in edges[a] if b in group))}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
