#!/usr/bin/python3
"""Runs a command and samples /proc for its whole process tree (ranks, loader workers, launcher).
Usage: monitor.py <out.json> -- <command...>
Writes {"start_unix_time", "wall_seconds", "rc", "peak_rss_mib", "peak_pss_mib", "max_processes"}:
peak of the SUM over the tree (RSS counts shared library pages once per process; PSS splits
shared pages between the processes that share them). RSS is sampled every 50 ms from statm
(cheap); PSS every 0.5 s from smaps_rollup, which walks every page table of the process. Sampling
PSS every 50 ms while listing all of /proc cost the measured run 10-20% of its images/s on 2 cores
(runner small_cnn: 800 vs 890-990 img/s unmonitored), so the monitor now stays out of the way."""
import json
import os
import subprocess
import sys
import time


def children(pid):
    """Direct children of pid, from /proc/<pid>/task/<tid>/children (no scan of all of /proc)."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(root):
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_KIB
    except (OSError, ValueError, IndexError):
        return 0


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    out, cmd = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    start = time.time()
    proc = subprocess.Popen(cmd)
    peak_rss = peak_pss = max_procs = 0
    sample = 0
    while proc.poll() is None:
        pids = tree(proc.pid)
        peak_rss = max(peak_rss, sum(rss_kib(p) for p in pids))
        if sample % 10 == 0:
            peak_pss = max(peak_pss, sum(pss_kib(p) for p in pids))
        max_procs = max(max_procs, len(pids))
        sample += 1
        time.sleep(0.05)
    with open(out, "w") as f:
        json.dump({"start_unix_time": start, "wall_seconds": time.time() - start, "rc": proc.returncode,
                   "peak_rss_mib": peak_rss / 1024, "peak_pss_mib": peak_pss / 1024,
                   "max_processes": max_procs}, f)
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
