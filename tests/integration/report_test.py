#!/usr/bin/env python3
"""report.html (issue 17), opened the way a person would: a short real run writes it; headless
Chromium renders it (a screenshot, no console errors) and its DOM holds the best accuracy of
summary.json and the confusion matrix of metrics.jsonl's "best" record; a failed run writes one
that says why; `runner report A B -o compare.html` puts runs side by side. The page needs no
network (no external URL anywhere).
Usage: report_test.py RUNNER SOURCE_DIR [SCREENSHOT.png]
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from engine_lib import check, finish, metrics  # noqa: E402  (this folder)

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
SHOT = sys.argv[3] if len(sys.argv) > 3 else None
FMNIST = "/usr/share/datasets/fashion-mnist"
class Tables(html.parser.HTMLParser):
    """Cell texts of each table by id, and the text of elements by id."""

    def __init__(self):
        super().__init__()
        self.tables, self.texts, self.stack, self.cell = {}, {}, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.stack.append(a.get("id"))
            self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self.stack:
            self.tables[self.stack[-1]].append([])
        elif tag in ("td", "th") and self.stack:
            self.cell = ""
        if a.get("id"):
            self.texts[a["id"]] = ""
            self.current_id = a["id"]

    def handle_endtag(self, tag):
        if tag == "table" and self.stack:
            self.stack.pop()
        elif tag in ("td", "th") and self.stack and self.cell is not None:
            self.tables[self.stack[-1]][-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data
        for k in self.texts:
            self.texts[k] += data


def chromium(*args):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                           "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} missing (apt-get install dataset-fashion-mnist)")
        return 77
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        print("FAIL: chromium is not installed (make deps installs Debian's chromium)")
        return 1
    tmp = tempfile.mkdtemp(prefix="runner_report_")
    try:
        base = [RUNNER, "run", os.path.join(SOURCE, "experiments", "quickstart.yaml"),
                "--set", "launch.num_processes=1", "--set", "data.limit.train=1280",
                "--set", "data.limit.val=300", "--set", "data.limit.test=50",
                "--set", "scheduler.warmup_steps=2", "--set", "train.epochs=2",
                "--set", "train.log_every_steps=2"]
        run_dir = os.path.join(tmp, "run")
        # precision fp16 on a CPU: the report says what ran instead, and why.
        p = subprocess.run(base + ["--set", f"output.run_dir={run_dir}", "--set", "precision=fp16"],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, "the run finishes")
        page = os.path.join(run_dir, "report.html")
        check(os.path.isfile(page), "the run wrote report.html")
        if not os.path.isfile(page):
            print(p.stdout[-2000:], p.stderr[-2000:])
            return 1
        text = open(page).read()
        check(not re.search(r"(src|href)=\"(https?:)?//", text), "the page loads nothing from a network")

        shot = os.path.join(tmp, "report.png")
        r = chromium(f"--screenshot={shot}", "--window-size=1280,2400", "file://" + page)
        check(os.path.isfile(shot) and os.path.getsize(shot) > 10000, "Chromium renders a screenshot")
        if SHOT and os.path.isfile(shot):
            shutil.copy(shot, SHOT)
        console = [l for l in r.stderr.splitlines() if "CONSOLE" in l and ("rror" in l or "Uncaught" in l)]
        check(not console, f"the page logs no console errors: {console[:3]}")
        dom = chromium("--dump-dom", "file://" + page).stdout
        parsed = Tables()
        parsed.feed(dom)

        summary = json.load(open(os.path.join(run_dir, "summary.json")))
        best_acc = summary["best_metrics"]["accuracy"]
        check(f"{best_acc:.4f}" in parsed.texts.get("best-metrics", ""),
              f"the DOM shows the best accuracy {best_acc:.4f}")
        # A point per optimizer step (20: 1280 images / 64 x 2 epochs), though log_every_steps
        # is 2; lr, throughput and data wait have their curves too.
        steps = summary["optimizer_steps"]
        for chart in ("chart-loss", "chart-lr", "chart-throughput", "chart-data-wait"):
            svg = re.search(r'<svg[^>]*id="%s".*?</svg>' % chart, dom, re.S)
            lines = re.findall(r'<polyline points="([^"]*)"', svg.group(0)) if svg else []
            points = len(lines[0].split()) if lines else 0
            check(points == steps, f"{chart} has a point per step: {points} of {steps}")
        cards = {k: v for k, v in parsed.texts.items() if k.startswith("card-")}
        check("images/s" in cards.get("card-speed", "") and "cpu" in cards.get("card-device", "")
              and "1 process" in cards.get("card-device", "")
              and "64 per process x 1 process" in cards.get("card-batch", "")
              and "MiB" in cards.get("card-memory", "") and " s" in cards.get("card-time", ""),
              f"the cards carry human labels and units: {cards}")
        check(summary["precision"] in cards.get("card-precision", "") and
              "config: fp16" in cards.get("card-precision", "") and summary["precision"] != "fp16",
              f"the precision card says what ran and that the config asked for fp16: {cards.get('card-precision')}")
        check(not re.search(r"train_images_per_s|peak_rss_mib|world_size", dom),
              "no internal key names on the page")
        best = metrics(run_dir, "best")
        check(bool(best), "metrics.jsonl has the best epoch's confusion matrix")
        if best:
            want = [[str(v) for v in row] for row in best[-1]["confusion_matrix"]]
            got = [row[1:] for row in parsed.tables.get("confusion-matrix", [])[1:]]
            check(got == want, "the DOM's confusion matrix has metrics.jsonl's counts")
            check(sum(map(sum, best[-1]["confusion_matrix"])) == 300,
                  "the matrix counts every validation sample once")
        check(len(parsed.tables.get("per-class", [])) == 11, "per-class precision/recall/F1: 10 classes")
        check(dom.count("data:image/png;base64,") >= 8, "a grid of misclassified validation images")

        # A failed run: the report says so, with what it had.
        failed_dir = os.path.join(tmp, "failed")
        p = subprocess.run(base + ["--set", f"output.run_dir={failed_dir}", "--set", "optimizer.lr=1e30",
                                   "--set", "train.max_nonfinite_steps=1"],
                           capture_output=True, text=True, timeout=300)
        failed_page = os.path.join(failed_dir, "report.html")
        check(p.returncode == 1 and os.path.isfile(failed_page) and "failed: " in open(failed_page).read(),
              "a failed run writes report.html saying it failed")

        # Several runs side by side.
        compare = os.path.join(tmp, "compare.html")
        p = subprocess.run([RUNNER, "report", run_dir, failed_dir, "-o", compare],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and os.path.isfile(compare), "runner report A B -o compare.html")
        if os.path.isfile(compare):
            cmp = Tables()
            cmp.feed(open(compare).read())
            check(len(cmp.tables.get("runs", [])) == 3, "the comparison lists both runs")
            header = cmp.tables.get("runs", [[]])[0]
            check("optimizer.lr" in header and "train.max_nonfinite_steps" in header and
                  "precision" in header,
                  f"the comparison has a column per setting that differs: {header}")
            rows = cmp.tables.get("runs", [])[1:]
            check(rows and all(r[0].startswith("quickstart") for r in rows),
                  f"runs are named by experiment: {rows}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()  # exits 1 when a check failed
    return 0


if __name__ == "__main__":
    sys.exit(main())
