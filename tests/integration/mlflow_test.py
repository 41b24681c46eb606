"""output.trackers with a real MLflow server (issue 43): `mlflow server` from the project venv on
a loopback port. A 2-rank run is one MLflow run (params, per-step and per-epoch metrics equal to
metrics.jsonl's, artifacts byte for byte, FINISHED); an interrupted then resumed run is one run,
FINISHED, each step once; a sweep's 3 points are 3 runs tagged with their settings; a server
killed mid-run: the run finishes (exit 0, one warning, the pending file) and `runner track`
delivers the rest once the server is back; validate: an unreachable server is a warning, a
deleted experiment name exit 2 at file:line.
Usage: mlflow_test.py RUNNER SOURCE_DIR  (run with the project venv's python)"""
import glob
import json
import re
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from engine_lib import RUNNER, check, finish, free_port, metrics, only_run_dir, ranks_args, run, tmpdir, write

MLFLOW = os.path.join(os.path.dirname(sys.executable), "mlflow")
if not os.path.exists(MLFLOW):
    print(f"skipped: no mlflow in {os.path.dirname(sys.executable)} (make deps installs requirements.txt)")
    sys.exit(77)

CONFIG = """
name: tracked
seed: 3
launch: {{device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: synthetic, train_size: {train}, val_size: 64, test_size: 0, height: 16, width: 16, noise: 0.6}}
  train_transforms: [{{name: normalize, mean: 0.5, std: 0.25}}]
  eval_transforms: [{{name: normalize, mean: 0.5, std: 0.25}}]
  num_workers: 1
model: {{backbone: small_cnn, in_chans: 1, num_classes: 10}}
optimizer: {{name: adamw, lr: 3.0e-3}}
metrics: [{{name: accuracy}}, {{name: loss}}]
train: {{epochs: {epochs}, batch_size: 16, log_every_steps: 1, deterministic: true, best: {{metric: accuracy}}}}
predict: {{enabled: false}}
output:
  trackers:
    - name: mlflow
      tracking_uri: {uri}
      experiment: {experiment}
      retries: 1
      tags: {{team: vision}}
      artifacts: [config.yaml, summary.json, report.html, checkpoints/best.pt]
"""


class Server:
    """`mlflow server` with a SQLite store and an artifact root in `folder` (kept across restarts)."""

    def __init__(self, folder):
        self.folder = folder
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self):
        log = open(os.path.join(self.folder, "server.log"), "a")
        self.process = subprocess.Popen(
            [MLFLOW, "server", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
             "--backend-store-uri", f"sqlite:///{self.folder}/store.db",
             "--artifacts-destination", os.path.join(self.folder, "artifacts")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(240):
            try:
                self.get("experiments/search", {"max_results": "1"})
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        check(False, "mlflow server did not start: " + open(os.path.join(self.folder, "server.log")).read()[-2000:])
        sys.exit(1)

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def get(self, endpoint, query):
        url = f"{self.uri}/api/2.0/mlflow/{endpoint}?" + urllib.parse.urlencode(query)
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)

    def post(self, endpoint, body):
        req = urllib.request.Request(f"{self.uri}/api/2.0/mlflow/{endpoint}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def runs(self, experiment):
        e = self.get("experiments/get-by-name", {"experiment_name": experiment})["experiment"]
        return self.post("runs/search", {"experiment_ids": [e["experiment_id"]], "max_results": 100}).get("runs", [])

    def history(self, run_id, key):
        return self.get("metrics/get-history", {"run_id": run_id, "metric_key": key}).get("metrics", [])

    def artifact(self, run, path):
        root = run["info"]["artifact_uri"][len("mlflow-artifacts:/"):]
        with urllib.request.urlopen(f"{self.uri}/api/2.0/mlflow-artifacts/artifacts/{root}/{path}", timeout=30) as r:
            return r.read()


def tags_of(run):
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def params_of(run):
    return {p["key"]: p["value"] for p in run["data"].get("params", [])}


def same_history(server, run_id, run_dir, what):
    """MLflow's train/loss and val/accuracy histories equal metrics.jsonl's, each step once."""
    for kind, key, record_key in (("step", "train/loss", "loss"), ("epoch", "val/accuracy", "val_accuracy")):
        want = [(r["step"], r[record_key]) for r in metrics(run_dir, kind)]
        got = sorted((m["step"], m["value"]) for m in server.history(run_id, key))
        check(len(want) > 0 and got == sorted(want),
              f"{what}: MLflow's {key} is not metrics.jsonl's:\n  mlflow  {got[:8]}... ({len(got)})\n"
              f"  jsonl   {want[:8]}... ({len(want)})")


def experiment_file(tmp, name, server, experiment, epochs=2, train=256):
    return write(os.path.join(tmp, name + ".yaml"),
                 CONFIG.format(uri=server.uri, experiment=experiment, epochs=epochs, train=train))


def two_ranks_finished(server, tmp):
    exp = experiment_file(tmp, "two", server, "two-ranks")
    root = os.path.join(tmp, "runs")
    code, out = run("run", [exp, "--set", f"output.root={root}"] + ranks_args(2), timeout=300)
    run_dir = only_run_dir(root, "tracked")
    runs = server.runs("two-ranks")
    check(len(runs) == 1, f"a 2-rank run should be one MLflow run, got {len(runs)}")
    if not runs:
        return
    r = runs[0]
    check(r["info"]["status"] == "FINISHED", f"status {r['info']['status']}, expected FINISHED")
    params = params_of(r)
    check(params.get("train.batch_size") == "16" and params.get("model.backbone") == "small_cnn",
          f"the resolved config is not the run's params: {dict(list(params.items())[:10])}")
    tags = tags_of(r)
    check(tags.get("team") == "vision" and tags.get("runner.world_size") == "2"
          and tags.get("runner.status") == "finished",
          f"tags: {tags}")
    with open(os.path.join(run_dir, "run.json")) as f:
        check(json.load(f).get("trackers", {}).get("mlflow", {}).get("run_id") == r["info"]["run_id"],
              "run.json does not keep the MLflow run's id")
    same_history(server, r["info"]["run_id"], run_dir, "2 ranks")
    for path in ("config.yaml", "summary.json", "report.html", "checkpoints/best.pt"):
        with open(os.path.join(run_dir, path), "rb") as f:
            local = f.read()
        try:
            remote = server.artifact(r, path)
        except urllib.error.URLError as e:
            remote = None
            check(False, f"artifact {path} not downloadable: {e}")
        check(remote == local, f"artifact {path} differs from the run folder's ({len(remote or b'')} vs {len(local)} bytes)")
    check("tracker 'mlflow'" not in out, f"a healthy server gave a warning:\n{out[-1500:]}")


def interrupted_then_resumed(server, tmp):
    exp = experiment_file(tmp, "intr", server, "resumed", epochs=3, train=1536)
    root = os.path.join(tmp, "intr_runs")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen([RUNNER, "run", exp, "--set", f"output.root={root}"] + ranks_args(2),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.time() + 120
    run_dir = None
    while time.time() < deadline:
        found = glob.glob(os.path.join(root, "tracked", "*", "metrics.jsonl"))
        if found and len(metrics(os.path.dirname(found[0]), "step")) >= 12:
            run_dir = os.path.dirname(found[0])
            break
        time.sleep(0.1)
    # As `timeout` delivers it: to the command, then to its group.
    os.kill(p.pid, signal.SIGTERM)
    os.killpg(p.pid, signal.SIGTERM)
    p.communicate(timeout=120)
    check(p.returncode == 143, f"an interrupted run exits 143, got {p.returncode}")
    if run_dir is None:
        check(False, "the run to interrupt wrote no steps")
        return
    runs = server.runs("resumed")
    check(len(runs) == 1 and runs[0]["info"]["status"] == "KILLED",
          f"an interrupted run is one KILLED MLflow run: {[x['info']['status'] for x in runs]}")
    run("run", ["--resume", run_dir] + ranks_args(2), timeout=300)
    runs = server.runs("resumed")
    check(len(runs) == 1, f"a resumed run continues its MLflow run: {len(runs)} runs")
    if runs:
        check(runs[0]["info"]["status"] == "FINISHED", f"resumed: status {runs[0]['info']['status']}")
        steps = [m["step"] for m in server.history(runs[0]["info"]["run_id"], "train/loss")]
        check(len(steps) == len(set(steps)), f"resumed: steps logged twice: {sorted(steps)}")
        same_history(server, runs[0]["info"]["run_id"], run_dir, "resumed")


def sweep_of_three(server, tmp):
    exp = experiment_file(tmp, "base", server, "swept", epochs=1, train=128)
    sweep = write(os.path.join(tmp, "sw.yaml"), f"""
base: {exp}
output: {os.path.join(tmp, 'sweeps')}
points:
  - {{train.batch_size: 8}}
  - {{train.batch_size: 16}}
  - {{train.batch_size: 32}}
""")
    run("sweep", [sweep], timeout=600)
    runs = server.runs("swept")
    check(len(runs) == 3, f"a sweep of 3 points is 3 MLflow runs, got {len(runs)}")
    sizes = sorted(tags_of(r).get("sweep.train.batch_size", "?") for r in runs)
    check(sizes == ["16", "32", "8"], f"each point's setting as a tag: {sizes}")
    check(all(tags_of(r).get("runner.sweep") == "sw" for r in runs),
          f"runner.sweep tags: {[tags_of(r).get('runner.sweep') for r in runs]}")


def server_killed_mid_run(server, tmp):
    exp = experiment_file(tmp, "kill", server, "killed", epochs=4, train=3072)
    root = os.path.join(tmp, "kill_runs")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen([RUNNER, "run", exp, "--set", f"output.root={root}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    # Kill the server once the run has sent it something.
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            runs = server.runs("killed")
            if runs and server.history(runs[0]["info"]["run_id"], "train/loss"):
                break
        except (urllib.error.URLError, KeyError):
            pass
        time.sleep(0.2)
    server.kill()
    out = p.communicate(timeout=300)[0].decode(errors="replace")
    check(p.returncode == 0, f"a run whose tracker's server died finishes: exit {p.returncode}\n{out[-2000:]}")
    warnings = [line for line in out.splitlines() if "tracker 'mlflow'" in line]
    check(len(warnings) == 1, f"one warning line, got {len(warnings)}:\n" + "\n".join(warnings))
    check(warnings and "(after 2 tries)" in warnings[0], f"retries: 1 tries twice: {warnings}")
    run_dir = only_run_dir(root, "tracked")
    pending = os.path.join(run_dir, "trackers", "mlflow.pending.jsonl")
    check(os.path.exists(pending), "no trackers/mlflow.pending.jsonl after the server died")
    # While the server is down, `runner track` says so and keeps the file.
    run("track", [run_dir], expect=1)
    check(os.path.exists(pending), "a failed `runner track` lost the pending file")
    server.start()
    _, out = run("track", [run_dir], expect=0)
    check(not os.path.exists(pending), "the pending file stays after `runner track` sent it")
    runs = server.runs("killed")
    check(len(runs) == 1, f"the pending records go to the same MLflow run: {len(runs)} runs")
    if runs:
        check(runs[0]["info"]["status"] == "FINISHED", f"after track: status {runs[0]['info']['status']}")
        same_history(server, runs[0]["info"]["run_id"], run_dir, "after runner track")
        try:
            server.artifact(runs[0], "summary.json")
        except urllib.error.URLError as e:
            check(False, f"summary.json not sent by runner track: {e}")


def silent_server():
    """A port that takes connections and never answers."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s


def tracker_keys(server, tmp):
    # run_name names the MLflow run; log_params: false sends no params.
    exp = experiment_file(tmp, "keys", server, "keys", epochs=1, train=64)
    with open(exp) as f:
        text = f.read().replace("retries: 1", "retries: 1\n      run_name: custom-run\n      log_params: false")
    write(exp, text)
    run("run", [exp, "--set", f"output.root={os.path.join(tmp, 'keys_runs')}"], timeout=120)
    runs = server.runs("keys")
    check(len(runs) == 1 and runs[0]["info"]["run_name"] == "custom-run",
          f"run_name: custom-run names the MLflow run: {[r['info']['run_name'] for r in runs]}")
    check(runs and not params_of(runs[0]), f"log_params: false sends no params: {params_of(runs[0]) if runs else ''}")
    check(runs and "runner.run_dir" in tags_of(runs[0]), "log_params: false still sends the tags")
    # A run that fails (here its prediction cannot be written: the file name is a folder) is FAILED.
    exp = experiment_file(tmp, "fails", server, "failing", epochs=1, train=64)
    code, out = run("run", [exp, "--set", f"output.root={os.path.join(tmp, 'fail_runs')}",
                            "--set", "predict.enabled=true", "--set", "predict.split=val",
                            "--set", "predict.output=checkpoints"], timeout=120, expect=1)
    runs = server.runs("failing")
    check(len(runs) == 1 and runs[0]["info"]["status"] == "FAILED"
          and tags_of(runs[0]).get("runner.status") == "failed" and tags_of(runs[0]).get("runner.end_reason"),
          f"a failed run is FAILED with its reason: {[(r['info']['status'], tags_of(r)) for r in runs]}")
    # timeout_s bounds a request to a server that never answers.
    silent = silent_server()
    exp = experiment_file(tmp, "silent", Server(tmp), "anything")
    with open(exp) as f:
        text = f.read()
    text = re.sub(r"tracking_uri: \S+", f"tracking_uri: http://127.0.0.1:{silent.getsockname()[1]}", text)
    write(exp, text.replace("retries: 1", "retries: 1\n      timeout_s: 1"))
    started = time.time()
    _, out = run("validate", [exp], expect=0)
    took = time.time() - started
    check(re.search(r"timed out after 1\d\d\d milliseconds", out) is not None and took < 20,
          f"timeout_s: 1 should give up on a silent server after about 1 s ({took:.1f} s):\n{out}")
    silent.close()


def guarded_server():
    """An MLflow-like server that refuses every request without `Authorization: Bearer s3cret`
    (as a server behind a token does) and otherwise knows no experiment."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.headers.get("Authorization") == "Bearer s3cret"
            body = ({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no such experiment"} if ok
                    else {"error_code": "UNAUTHENTICATED", "message": "a token is required"})
            data = json.dumps(body).encode()
            self.send_response(404 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def credentials(tmp):
    httpd = guarded_server()
    exp = experiment_file(tmp, "guarded", Server(tmp), "anything")
    with open(exp) as f:
        text = re.sub(r"tracking_uri: \S+", f"tracking_uri: http://127.0.0.1:{httpd.server_address[1]}", f.read())
    write(exp, text)
    _, out = run("validate", [exp], expect=2)
    check("guarded.yaml:" in out and "HTTP 401" in out and "MLFLOW_TRACKING_TOKEN" in out,
          f"refused credentials should be exit 2 saying which variables to set:\n{out}")
    os.environ["MLFLOW_TRACKING_TOKEN"] = "s3cret"
    try:
        _, out = run("validate", [exp], expect=0)
    finally:
        del os.environ["MLFLOW_TRACKING_TOKEN"]
    check("warning" not in out, f"MLFLOW_TRACKING_TOKEN should be sent as a bearer token:\n{out}")
    httpd.shutdown()


def validate_checks(server, tmp):
    # Nothing listens on this port: a warning, the file is valid.
    down = experiment_file(tmp, "down", Server(tmp), "anything")
    _, out = run("validate", [down], expect=0)
    check("warning:" in out and "did not answer" in out, f"an unreachable server should be a warning:\n{out}")
    # An experiment deleted on the server keeps its name there: the run could not be tracked.
    server.post("experiments/create", {"name": "gone"})
    e = server.get("experiments/get-by-name", {"experiment_name": "gone"})["experiment"]
    server.post("experiments/delete", {"experiment_id": e["experiment_id"]})
    gone = experiment_file(tmp, "gone", server, "gone")
    _, out = run("validate", [gone], expect=2)
    check("gone.yaml:" in out and "output.trackers.0" in out and "deleted" in out,
          f"a deleted experiment should be exit 2 naming the file, key and why:\n{out}")
    _, out = run("run", [gone, "--dry-run"], expect=2)
    check("deleted" in out, f"--dry-run should refuse it too:\n{out[-1500:]}")


def main():
    tmp = tmpdir()
    server = Server(tmp)
    server.start()
    try:
        two_ranks_finished(server, tmp)
        interrupted_then_resumed(server, tmp)
        sweep_of_three(server, tmp)
        validate_checks(server, tmp)
        tracker_keys(server, tmp)
        credentials(tmp)
        server_killed_mid_run(server, tmp)
    finally:
        if server.process and server.process.poll() is None:
            server.kill()
    finish()


main()
