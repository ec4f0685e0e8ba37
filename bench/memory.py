"""A process's memory, from /proc: VmRSS, the totals of smaps_rollup
(Private_Dirty: what the kernel cannot drop, as it can clean file pages;
Pss: shared pages split between the processes that map them), and the
same fields per mapping from smaps, to see what holds them.

Sizes are MB (MiB); every reader returns None (or nothing) once the
process is gone.
"""
import os

MB = 1024  # smaps counts kB

# Anonymous mappings glibc makes, told apart by their shape: a thread's
# malloc arena reserves 64 MiB at a 64-MiB boundary (rw- then ---), a
# thread's stack sits right above its guard page (---).
ARENA = 64 * 1024 * 1024


def rss_mb(pid):
    """VmRSS in MB, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / MB
    except OSError:
        pass
    return None


def rollup(pid):
    """{"rss_mb", "private_dirty_mb", "pss_mb", "anon_mb"} of `pid`, or None."""
    rss = rss_mb(pid)
    fields = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    fields[parts[0].rstrip(":")] = int(parts[1]) / MB
    except OSError:
        return None
    if rss is None:
        return None
    return {"rss_mb": rss, "private_dirty_mb": fields.get("Private_Dirty"), "pss_mb": fields.get("Pss"),
            "anon_mb": fields.get("Anonymous")}


def _mappings(pid):
    """Each mapping of `pid` as (start, end, perms, name, {field: kB})."""
    maps, current = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if "-" in parts[0] and not parts[0].endswith(":"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                current = (start, end, parts[1], " ".join(parts[5:]), {})
                maps.append(current)
            elif current and len(parts) == 3 and parts[2] == "kB":
                current[4][parts[0].rstrip(":")] = int(parts[1])
    return maps


def _label(maps, i):
    """What mapping `i` is: a file's name, a kernel name ([heap], [stack]),
    or for an unnamed anonymous one its likely owner (see ARENA)."""
    start, end, perms, name, _ = maps[i]
    if name.startswith("/"):
        return os.path.basename(name.removesuffix(" (deleted)"))
    if name:
        return name
    prev = maps[i - 1] if i > 0 else None
    nxt = maps[i + 1] if i + 1 < len(maps) else None
    if start % ARENA == 0 and nxt and nxt[0] == end and nxt[2].startswith("---") and not nxt[3] \
            and (nxt[1] - start) == ARENA:
        return "[anon: malloc arena]"
    if start % ARENA == 0 and end - start == ARENA and perms.startswith("rw"):
        return "[anon: malloc arena]"
    if prev and prev[1] == start and prev[2].startswith("---") and not prev[3]:
        return "[anon: thread stack]"
    return "[anon]"


def by_mapping(pid, field="Private_Dirty", top=None):
    """{what: MB} of `field` summed over the mappings of each file or kind
    (see `_label`), largest first, the `top` largest only if given; {}
    when the process is gone."""
    try:
        maps = _mappings(pid)
    except OSError:
        return {}
    out = {}
    for i, m in enumerate(maps):
        kb = m[4].get(field, 0)
        if kb:
            label = _label(maps, i)
            out[label] = out.get(label, 0) + kb / MB
    ranked = sorted(out.items(), key=lambda kv: -kv[1])[:top]
    return {k: round(v, 2) for k, v in ranked}
