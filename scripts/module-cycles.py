#!/usr/bin/env python3
"""Prints the import circles among a crate's modules.

Usage: scripts/module-cycles.py SRC_DIR [--files]   (e.g. src, src-tauri/src)
A module `a` uses `b` when the code of `a` (not its comments or tests)
names `crate::b` (in a `use` or a path; `crate::{b, c}` counts each), or,
with --files, `super::b`. By default the modules are the crate's top-level
ones (a folder counts as one, whatever its files use among themselves);
with --files every file is a module of its own (`connect::sharded`), so a
circle between the files of one folder shows too, while a folder's
`mod.rs` and its own files may use each other. Prints each group of
modules that reach each other (a strongly connected component of more than
one), and exits 1 when there is one; exits 0 and says so when there is none.
"""
import os
import re
import sys


def module_of(src, path, files):
    """The module a file is, as a path: `connect` or, with files, `connect::sharded`."""
    parts = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts if files else parts[:1]


def code_of(path):
    """A file's code: no tests (they may reach anywhere), no comments."""
    text = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def used_paths(text, module):
    """Every module path the code names, from the crate's root."""
    paths = [p.split("::") for p in re.findall(r"crate::((?:\w+::)*\w+)", text)]
    for group in re.findall(r"crate::\{([^}]*)\}", text):
        paths += [[w.split("::")[0].strip()] for w in group.split(",") if w.strip()]
    # `super::` is a module's parent (a folder's mod.rs is the folder itself).
    for p in re.findall(r"super::((?:\w+::)*\w+)", text):
        paths.append(module[:-1] + p.split("::"))
    return paths


def graph(src, files):
    """The crate's modules (name → its files) and what each uses (name → names)."""
    found = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                module = module_of(src, path, files)
                if module and module[0] not in ("lib", "main", "bin"):
                    found.setdefault("::".join(module), []).append(path)
    edges = {}
    for module, paths in found.items():
        edges[module] = set()
        for path in paths:
            for p in used_paths(code_of(path), module.split("::")):
                # The longest known module the path names.
                target = next(("::".join(p[:k]) for k in range(len(p), 0, -1) if "::".join(p[:k]) in found), None)
                related = target is None or target == module or target.startswith(module + "::") or module.startswith(target + "::")
                if not related:
                    edges[module].add(target)
    return found, edges


def main():
    args = sys.argv[1:]
    files = "--files" in args
    src = next(a for a in args if not a.startswith("--"))
    _, edges = graph(src, files)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
    what = "files" if files else "modules"
    if not out:
        print(f"{src}: no import circle among {len(edges)} {what}")
        return 0
    for group in out:
        print(f"{src}: circle: {' ⇄ '.join(group)}")
        for a in group:
            print(f"    {a} uses {', '.join(sorted(b for b in edges[a] if b in group))}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
