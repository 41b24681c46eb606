#!/usr/bin/python3
"""Runs a command and samples /proc for its whole process tree (ranks, loader workers, launcher).
Usage: monitor.py <out.json> -- <command...>
Writes {"start_unix_time", "wall_seconds", "rc", "peak_rss_mib", "peak_pss_mib", "max_processes"}:
peak of the SUM over the tree, sampled every 50 ms (RSS counts shared library pages once per
process; PSS splits shared pages between the processes that share them)."""
import json
import os
import subprocess
import sys
import time


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError):
            pass
    return kids


def tree(root):
    kids, out, todo = children_map(), [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def memory_kib(pid):
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def main():
    out, cmd = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    start = time.time()
    proc = subprocess.Popen(cmd)
    peak_rss = peak_pss = max_procs = 0
    while proc.poll() is None:
        pids = tree(proc.pid)
        rss = pss = 0
        for p in pids:
            r, s = memory_kib(p)
            rss, pss = rss + r, pss + s
        peak_rss, peak_pss, max_procs = max(peak_rss, rss), max(peak_pss, pss), max(max_procs, len(pids))
        time.sleep(0.05)
    with open(out, "w") as f:
        json.dump({"start_unix_time": start, "wall_seconds": time.time() - start, "rc": proc.returncode,
                   "peak_rss_mib": peak_rss / 1024, "peak_pss_mib": peak_pss / 1024,
                   "max_processes": max_procs}, f)
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
