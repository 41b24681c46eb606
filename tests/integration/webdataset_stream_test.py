#!/usr/bin/env python3
"""WebDataset shards streamed as the run reads them (issue 72): experiments/make_shards.py's
Fashion-MNIST shards and its shards.json (a wids shard index) served by a real nginx, read by
2 ranks with data.dataset.shard_index:

- validate reads no shard but what its checks need (the training shard of its one step, the
  first and last validation samples'): each URL is asked for its first byte (a 206 in nginx's log); a 404 and a dead host are one line, exit 2, as are a shard
  the index does not list and streamed shards without data.dataset.classes;
- a 2-rank run with no cache reads every sample once an epoch (summary.json's samples.train)
  and trains loss for loss as the same run on the local shards, as do `pipe:curl -s -f` urls;
- nginx killed mid-epoch and back 1.5 s later (inside the retries' window): the run goes on,
  equal to the local run; killed for good: every rank stops with last.pt and one line naming
  the URL, the rank and the byte; `runner run --resume` once it is back ends equal;
- a shard holding another count than the index says is one line;
- a cache with data.dataset.cache_size holds at most that, the least recently read shards gone;
  partial files an hour old (a process killed mid-fetch) are removed, in the cache and $TMPDIR.
Usage: webdataset_stream_test.py RUNNER SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import time

from engine_lib import check, finish, free_port, metrics, run, write
from nginx_server import Nginx, served_shards, wait_for_gets

SOURCE = sys.argv[2]
EXPERIMENT = os.path.join(SOURCE, "experiments", "fashion_shards.yaml")
TRAIN_SHARDS = [f"/train-{k:06d}.tar" for k in range(8)]


def epoch_results(folder):
    return [(round(r["loss"], 5), r.get("val_accuracy")) for r in metrics(folder, "epoch")]


def train_samples(folder):
    with open(os.path.join(folder, "summary.json")) as f:
        return json.load(f)["samples"]["train"]


def main():
    made = served_shards(SOURCE)
    if not isinstance(made, tuple):
        return made
    tmp, shards = made
    scratch = os.path.join(tmp, "scratch")  # the runs' TMPDIR: where private copies go
    os.makedirs(scratch)
    os.environ["TMPDIR"] = scratch
    two_ranks = ["--set", "launch.num_processes=2", "--set", f"launch.master_port={free_port()}",
                 "--set", "train.epochs=2", "--set", "predict.enabled=false",
                 "--set", "data.dataset.test_urls=null"]

    def remote(base, *more):
        return ["--set", "data.dataset.root=.",  # the experiment's own folder: no shards there
                "--set", f"data.dataset.urls={base}/train-{{000000..000007}}.tar",
                "--set", f"data.dataset.val_urls={base}/val-{{000000..000001}}.tar",
                "--set", f"data.dataset.shard_index={base}/shards.json"] + list(more)

    def start(args):
        return subprocess.Popen([sys.argv[1]] + args, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=dict(os.environ, OMP_NUM_THREADS="1"))

    servers = []
    try:
        local = os.path.join(tmp, "local")
        code, out = run("run", [EXPERIMENT, "--set", f"data.dataset.root={shards}",
                                "--set", f"output.run_dir={local}"] + two_ranks, timeout=300)
        expected = epoch_results(local) if code == 0 else None
        check(code == 0 and expected and train_samples(local) == 2000,
              f"the local run: {out[-800:]}")

        server = Nginx(os.path.join(tmp, "nginx"), shards)
        servers.append(server)
        server.start()
        base = f"http://127.0.0.1:{server.port}"

        # validate: every URL asked for its first byte, only what one step reads fetched whole.
        code, out = run("validate", [EXPERIMENT] + two_ranks + remote(base), timeout=300)
        probes = sorted(path for path, status in server.gets() if status == "206")
        whole = server.full_gets(TRAIN_SHARDS)
        check(code == 0 and len(probes) == 10 and len(set(probes)) == 10 and len(whole) <= 1,
              f"validate asks each of the 10 URLs once ({probes}) and reads at most the training "
              f"shard of its one step ({whole}): {out[-600:]}")

        # A 2-rank run, no cache: every sample once an epoch, loss for loss the local run.
        before = len(server.full_gets(TRAIN_SHARDS))
        streamed = os.path.join(tmp, "streamed")
        # What a rank killed mid-fetch an hour ago left: the next run's first fetch removes it.
        for name in ("runner-shard-99999-0.tar.part-99999-0", "runner-shard-99999-1.tar"):
            left = write(os.path.join(scratch, name), "x" * 100)
            os.utime(left, (time.time() - 3600,) * 2)
        code, out = run("run", [EXPERIMENT, "--set", f"output.run_dir={streamed}"] + two_ranks +
                        remote(base), timeout=300)
        fetched = server.full_gets(TRAIN_SHARDS)[before:]
        check(code == 0 and epoch_results(streamed) == expected and
              train_samples(streamed) == 2000,
              f"the streamed run trains as the local one, 2000 samples an epoch: {out[-800:]}")
        check(sorted(set(fetched)) == TRAIN_SHARDS and len(fetched) <= 2 * 8 + 2,
              f"each training shard fetched (a private copy, as often as an epoch needs it): "
              f"{fetched}")
        check(not os.listdir(scratch), f"no private copy left behind, hour-old ones (whole and "
              f"partial) removed: {os.listdir(scratch)}")

        # pipe:curl -s -f, counted by the local copy of the index: the same training.
        piped = os.path.join(tmp, "piped")
        code, out = run("run", [EXPERIMENT, "--set", f"output.run_dir={piped}"] + two_ranks +
                        remote(f"pipe:curl -s -f {base}", "--set",
                               f"data.dataset.shard_index={shards}/shards.json"), timeout=300)
        check(code == 0 and epoch_results(piped) == expected,
              f"pipe:curl -s -f urls stream as the http ones: {out[-800:]}")

        # nginx killed mid-epoch (after 7 whole shards: the preflight's, and 3 a rank: a first batch past a
        # shuffle buffer of 2 shards) and back 1.5 s later: the retries
        # (1, 2, 4 s apart) carry the run on, equal to the local run.
        slow = Nginx(os.path.join(tmp, "nginx_slow"), shards, "limit_rate 1m;")
        servers.append(slow)
        slow.start()
        slow_base = f"http://127.0.0.1:{slow.port}"
        survived = os.path.join(tmp, "survived")
        started = start(["run", EXPERIMENT, "--set", f"output.run_dir={survived}"] + two_ranks +
                        remote(slow_base, "--set", "data.dataset.retries=3"))
        got_before_kill = wait_for_gets(slow, TRAIN_SHARDS, 7, started)
        slow.kill()
        time.sleep(1.5)
        slow.start()
        out = started.communicate(timeout=300)[0].decode(errors="replace")
        check(started.returncode == 0 and epoch_results(survived) == expected and
              got_before_kill == 7 and len(set(slow.full_gets(TRAIN_SHARDS))) == 8,
              f"killed after {got_before_kill} shards and back: the run goes on, equal to the "
              f"local one: {out[-800:]}")

        # Killed for good: every rank stops with last.pt and one line; resumed once it is back.
        cut = os.path.join(tmp, "cut")
        gone = Nginx(os.path.join(tmp, "nginx_gone"), shards, "limit_rate 1m;")
        servers.append(gone)
        gone.start()
        gone_base = f"http://127.0.0.1:{gone.port}"
        started = start(["run", EXPERIMENT, "--set", f"output.run_dir={cut}"] + two_ranks +
                        remote(gone_base, "--set", "data.dataset.retries=1"))
        wait_for_gets(gone, TRAIN_SHARDS, 7, started)
        gone.kill()
        out = started.communicate(timeout=300)[0].decode(errors="replace")
        # The ranks' one agreed line (the launcher prefixes a rank's own output with [rank N]).
        said = sorted({re.sub(r"^\[rank \d+\] ", "", line) for line in out.splitlines()
                       if "runner: error" in line})
        check(started.returncode not in (0, None) and len(said) == 1 and "epoch 1, batch" in said[0] and
              gone_base + "/" in said[0] and "rank " in said[0] and "at byte" in said[0] and
              "checkpoints/last.pt" in said[0] and "--resume" in said[0] and
              os.path.exists(os.path.join(cut, "checkpoints", "last.pt")),
              f"the server gone: one line naming the URL, the rank and the byte, last.pt kept: "
              f"{said or out[-1200:]}")
        check(not os.listdir(scratch), f"the stopped ranks left no partial copy behind: "
              f"{os.listdir(scratch)}")
        gone.start()
        code, out = run("run", ["--resume", cut], timeout=300)
        check(code == 0 and epoch_results(cut) == expected,
              f"resumed once the server is back: equal to the local run "
              f"({epoch_results(cut) if code == 0 else out[-800:]} vs {expected})")

        # A cache of at most 3 shards: the run trains as the local one, the cache stays small.
        cache = os.path.join(tmp, "cache")
        limit = 3 * os.path.getsize(os.path.join(shards, "train-000000.tar"))
        limited = os.path.join(tmp, "limited")
        os.makedirs(cache)
        stale = write(os.path.join(cache, "00-train-000009.tar.part-99999-0"), "x" * 100)
        os.utime(stale, (time.time() - 3600,) * 2)
        fresh = write(os.path.join(cache, "00-train-000009.tar.part-99998-0"), "y")
        code, out = run("run", [EXPERIMENT, "--set", f"output.run_dir={limited}"] + two_ranks +
                        remote(base, "--set", f"data.dataset.cache_dir={cache}",
                               "--set", f"data.dataset.cache_size={limit}"), timeout=300)
        check(not os.path.exists(stale) and os.path.exists(fresh),
              "in the cache, a partial file untouched for an hour (a fetch killed) is removed, a "
              "fresh one (another command's fetch under way) kept")
        os.remove(fresh)
        kept = [n for n in os.listdir(cache) if not n.startswith(".")]
        held = sum(os.path.getsize(os.path.join(cache, n)) for n in kept)
        check(code == 0 and epoch_results(limited) == expected and 0 < held <= limit and
              all(n.endswith(".tar") for n in kept),
              f"cache_size {limit}: the cache holds {held} bytes ({kept}), the run trains as "
              f"the local one: {out[-800:]}")

        # What users get wrong: one line, exit 2, before any rank.
        index = write(os.path.join(shards, "bad.json"), json.dumps(
            {"nothing-0.tar": 10, "train-000000.tar": 251, "val-000000.tar": 200,
             "val-000001.tar": 200}))
        resized = json.load(open(os.path.join(shards, "shards.json")))
        for shard in resized["shardlist"]:
            if shard["url"].endswith("train-000000.tar"):
                real_size = shard["filesize"]
                shard["filesize"] += 512  # the shard written again since the index
        resized_index = write(os.path.join(shards, "resized.json"), json.dumps(resized))
        dead = f"http://127.0.0.1:{free_port()}"
        # Each line starts where the key it names was set (here a --set), as config errors do.
        for what, args, words, exit_code, at in (
                ("a missing shard (404)",
                 remote(base, "--set", f"data.dataset.urls={base}/nothing-0.tar",
                        "--set", f"data.dataset.shard_index={index}"),
                 f"{base}/nothing-0.tar: HTTP 404", 2, "--set data.dataset.urls="),
                ("a dead host", remote(dead, "--set", f"data.dataset.shard_index={base}/shards.json"),
                 f"{dead}/", 2, "--set data.dataset.urls="),
                ("a shard the index does not list",
                 remote(base, "--set", f"data.dataset.urls={base}/train-00000{{0..1}}.tar",
                        "--set", f"data.dataset.shard_index={index}"),
                 "has no count for train-000001.tar", 2, None),
                ("another count than the index says",
                 remote(base, "--set", f"data.dataset.urls={base}/train-000000.tar",
                        "--set", f"data.dataset.shard_index={index}"),
                 f"{base}/train-000000.tar holds 250 samples, but data.dataset.shard_index", None,
                 None),
                ("another size than the index says",
                 remote(base, "--set", f"data.dataset.urls={base}/train-000000.tar",
                        "--set", f"data.dataset.shard_index={resized_index}"),
                 f"{base}/train-000000.tar is {real_size} bytes, but data.dataset.shard_index",
                 None, None),
                ("no classes", remote(base, "--set", "data.dataset.classes=null"),
                 "set data.dataset.classes", 2, "--set data.dataset.classes=null: ")):
            code, out = run("validate", [EXPERIMENT] + two_ranks + args +
                            ["--set", "data.dataset.retries=0"], expect=None, timeout=120)
            lines = [line for line in out.splitlines() if line.strip()]
            check(code != 0 and (exit_code is None or code == exit_code) and len(lines) == 1 and
                  words in lines[0] and (at is None or lines[0].startswith(at)),
                  f"{what}: runner validate: exit {code}, one line saying {words!r}"
                  f"{' at ' + repr(at) if at else ''}:\n{out[-600:]}")
    finally:
        for server in servers:
            server.stop()
    return finish()


if __name__ == "__main__":
    sys.exit(main() or 0)
