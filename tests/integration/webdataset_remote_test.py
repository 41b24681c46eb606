#!/usr/bin/env python3
"""WebDataset shards where people keep them (issue 72, first part): experiments/make_shards.py's
Fashion-MNIST shards served by a real HTTP server (Debian's nginx-light, started here on a free
port with its own config and root, stopped after) and read through `pipe:cat`, each kept in
data.dataset.cache_dir:

- a run whose urls are http:// trains exactly as the run on the local files (the same epoch
  losses and accuracies), each shard fetched once (nginx's access log), the cache holding whole
  shards only; with the server stopped, a second run reads the cache;
- pipe:cat urls train as the local files do;
- a server that is down when the run starts is retried with backoff: started 2 s later, the run
  trains; a server killed mid-shard (nginx's limit_rate slowing it) and back 0.3 s later: the
  fetch continues at the byte it stopped at (HTTP Range, a 206 in the access log), the cached
  shard is whole and the run trains as the local one; two commands filling one cache at once
  fetch each shard once;
- what users get wrong is one line, exit 2, before any rank starts: a 404 (the URL and the
  status), a pipe command that fails (its exit status and stderr), a remote url without
  cache_dir.
Usage: webdataset_remote_test.py RUNNER SOURCE_DIR
"""
import os
import subprocess
import sys
import time

from engine_lib import check, finish, metrics, run
from nginx_server import Nginx, served_shards

SOURCE = sys.argv[2]
EXPERIMENT = os.path.join(SOURCE, "experiments", "fashion_shards.yaml")


def epoch_results(folder):
    return [(round(r["loss"], 5), r.get("val_accuracy")) for r in metrics(folder, "epoch")]


def main():
    made = served_shards(SOURCE)
    if not isinstance(made, tuple):
        return made
    tmp, shards = made
    server = Nginx(os.path.join(tmp, "nginx"), shards)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    one_rank = ["--set", "launch.num_processes=1", "--set", "train.epochs=2",
                "--set", "predict.enabled=false"]

    def remote(prefix, cache):
        return ["--set", "data.dataset.root=.",  # the experiment's own folder: no shards there
                "--set", f"data.dataset.urls={prefix}train-{{000000..000007}}.tar",
                "--set", f"data.dataset.val_urls={prefix}val-{{000000..000001}}.tar",
                "--set", "data.dataset.test_urls=null", "--set", f"data.dataset.cache_dir={cache}"]

    try:
        local = os.path.join(tmp, "local")
        code, out = run("run", [EXPERIMENT, "--set", f"data.dataset.root={shards}",
                                "--set", "data.dataset.test_urls=null", "--set",
                                f"output.run_dir={local}"] + one_rank, timeout=300)
        expected = epoch_results(local) if code == 0 else None
        check(code == 0 and expected, f"the local run: {out[-800:]}")

        # Over http: the same training, each shard fetched once, whole shards in the cache.
        cache = os.path.join(tmp, "cache")
        http_run = os.path.join(tmp, "http")
        code, out = run("run", [EXPERIMENT, "--set", f"output.run_dir={http_run}"] + one_rank +
                        remote(base + "/", cache), timeout=300)
        check(code == 0 and epoch_results(http_run) == expected,
              f"the http run trains as the local one: {out[-800:]}")
        fetched = sorted(path for path, status in server.gets())
        check(fetched == sorted([f"/train-{k:06d}.tar" for k in range(8)] +
                                [f"/val-{k:06d}.tar" for k in range(2)]),
              f"each shard fetched once: {fetched}")
        cached = sorted(n for n in os.listdir(cache) if not n.startswith(".")) \
            if os.path.isdir(cache) else []
        check(len(cached) == 10 and all(name.endswith(".tar") for name in cached) and
              all(os.path.getsize(os.path.join(cache, n)) ==
                  os.path.getsize(os.path.join(shards, n.split("-", 1)[1])) for n in cached),
              f"the cache holds the 10 whole shards, named after them: {cached}")
        server.stop()
        again = os.path.join(tmp, "again")
        code, out = run("run", [EXPERIMENT, "--set", f"output.run_dir={again}"] + one_rank +
                        remote(base + "/", cache), timeout=300)
        check(code == 0 and epoch_results(again) == expected,
              f"with the server stopped, the cache serves the shards: {out[-800:]}")

        # pipe: a command whose stdout is the shard.
        piped = os.path.join(tmp, "piped")
        code, out = run("run", [EXPERIMENT, "--set", f"output.run_dir={piped}"] + one_rank +
                        remote(f"pipe:cat {shards}/", os.path.join(tmp, "cache_pipe")), timeout=300)
        check(code == 0 and epoch_results(piped) == expected,
              f"pipe:cat urls train as the local files: {out[-800:]}")

        # A server down at the start: retried with backoff (1, 2, 4 s), up 2 s later: it trains.
        late = os.path.join(tmp, "late")
        command = [sys.argv[1], "run", EXPERIMENT, "--set", f"output.run_dir={late}"] + one_rank + \
            remote(base + "/", os.path.join(tmp, "cache_late"))
        started = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, OMP_NUM_THREADS="1"))
        time.sleep(2)
        server.start()
        out = started.communicate(timeout=300)[0].decode(errors="replace")
        check(started.returncode == 0 and epoch_results(late) == expected,
              f"a server up after the first try: retried, trained: {out[-800:]}")

        # The server killed mid-shard and back 0.3 s later: the fetch continues at the byte it
        # stopped at (a 206 answer to a Range request), and the cached shards are whole.
        slow = Nginx(os.path.join(tmp, "nginx_slow"), shards, "limit_rate 100k;")
        slow.start()
        cut_cache = os.path.join(tmp, "cache_cut")
        cut = os.path.join(tmp, "cut")
        command = [sys.argv[1], "run", EXPERIMENT, "--set", f"output.run_dir={cut}"] + one_rank + \
            remote(f"http://127.0.0.1:{slow.port}/", cut_cache)
        started = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, OMP_NUM_THREADS="1"))
        partial = 0
        for _ in range(400):
            parts = [n for n in os.listdir(cut_cache) if ".part-" in n] \
                if os.path.isdir(cut_cache) else []
            partial = os.path.getsize(os.path.join(cut_cache, parts[0])) if parts else 0
            if partial > 20000:
                break
            time.sleep(0.025)
        slow.kill()
        time.sleep(0.3)
        slow.start()
        out = started.communicate(timeout=300)[0].decode(errors="replace")
        slow.stop()
        ranged = [path for path, status in slow.gets() if status == "206"]
        check(partial > 20000 and started.returncode == 0 and epoch_results(cut) == expected and
              len(ranged) >= 1,
              f"cut mid-shard at byte {partial}: continued with Range ({ranged}), trained as "
              f"the local run: {out[-800:]}")
        kept = [n for n in os.listdir(cut_cache) if not n.startswith(".")]
        whole = all(open(os.path.join(cut_cache, n), "rb").read() ==
                    open(os.path.join(shards, n.split("-", 1)[1]), "rb").read() for n in kept)
        check(whole and len(kept) == 10, f"the cut shard is cached whole: {kept}")

        # Two commands filling one cache at once (as a torchrun world's ranks do): each shard is
        # fetched once, the second command waits for the first's fetches and reads them.
        shared = Nginx(os.path.join(tmp, "nginx_shared"), shards, "limit_rate 400k;")
        shared.start()
        both = [subprocess.Popen([sys.argv[1], "validate", EXPERIMENT] + one_rank +
                                 remote(f"http://127.0.0.1:{shared.port}/",
                                        os.path.join(tmp, "cache_shared")),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                for _ in range(2)]
        outs = [p.communicate(timeout=300)[0].decode(errors="replace") for p in both]
        shared.stop()
        fetched = sorted(path for path, status in shared.gets())
        check(all(p.returncode == 0 for p in both) and len(fetched) == 10 == len(set(fetched)),
              f"two commands on one cache fetch each shard once: {fetched}: {outs[0][-300:]}")

        # One line, exit 2, before any rank: a 404, a failing command, no cache_dir.
        for what, extra, words in (
                ("a missing shard (404)", ["--set", f"data.dataset.urls={base}/nothing-{{0..1}}.tar",
                                           "--set", "data.dataset.retries=0"],
                 f"{base}/nothing-0.tar: HTTP 404"),
                ("a command that fails", ["--set", "data.dataset.urls=pipe:cat /no/such.tar"],
                 "pipe:cat /no/such.tar: the command exited with status 1: cat: /no/such.tar"),
                ("no cache_dir", ["--set", "data.dataset.cache_dir=null"],
                 "set data.dataset.shard_index to a file that says how many samples each shard "
                 "holds")):
            folder = os.path.join(tmp, "bad")
            args = [EXPERIMENT] + one_rank + remote(base + "/", os.path.join(tmp, "cache_bad")) + \
                extra + ["--set", "data.dataset.retries=1"] * (what != "a missing shard (404)")
            for command, more in (("validate", []), ("run", ["--set", f"output.run_dir={folder}"])):
                code, out = run(command, args + more, expect=None, timeout=120)
                lines = [line for line in out.splitlines() if line.strip()]
                check(code == 2 and len(lines) == 1 and words in lines[0] and "rank" not in out,
                      f"{what}: runner {command}: exit {code}, one line saying {words!r}:\n{out[-600:]}")
            check(not os.path.exists(folder), f"{what}: the run folder was made")
        leftovers = [n for n in os.listdir(os.path.join(tmp, "cache_bad")) if n != ".fetch.lock"] \
            if os.path.isdir(os.path.join(tmp, "cache_bad")) else []
        check(not leftovers, f"a failed fetch leaves nothing in the cache: {leftovers}")
    finally:
        server.stop()
    return finish()


if __name__ == "__main__":
    sys.exit(main() or 0)
