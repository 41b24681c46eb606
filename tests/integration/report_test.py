#!/usr/bin/env python3
"""report.html and compare.html (issues 17, 53), opened the way a person would: in Debian's
Chromium, driven by Selenium (chromium-driver, python3-selenium), at a 1400 px window.

- A short real run with EMA (train.best.weights: ema) and fp16 asked on a CPU writes report.html:
  no console error, nothing wider than the window, every series of metrics.jsonl drawn by one
  chart (a point per optimizer step for the per-step ones), legends list every series, a hover
  shows the value metrics.jsonl has at that point, the cards' numbers follow the pages' one
  format (the same as the charts'), the best cards say whose weights (EMA) and which metric, the
  model/data cards give backbone, parameters, input and the splits' sizes, and the DOM holds
  summary.json's best accuracy and the confusion matrix of metrics.jsonl's "best" record.
- A failed run writes a page that says so.
- A 12-run sweep (4 lr x 3 seeds): its report.html and `runner report RUN... -o compare.html`
  name runs by what differs (lr=0.01 seed=1), draw 4 seed groups (legend 4, bands), 12 single
  runs when the toggle is off, offer every metric the runs recorded, sort the table by a click,
  and highlight the best run.
Screenshots of each page go to OUT_DIR. No network: no external URL anywhere.
Usage: report_test.py RUNNER SOURCE_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from engine_lib import check, finish, metrics  # noqa: E402  (this folder)

RUNNER, SOURCE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
FMNIST = "/usr/share/datasets/fashion-mnist"
CHROMEDRIVER = "/usr/bin/chromedriver"


def number3(v):
    """The pages' number format, written from its rule (html_page.hpp)."""
    if v is None or v != v or v in (float("inf"), float("-inf")):
        return "n/a"
    if v == 0:
        return "0"
    a = abs(v)
    if a < 1e-3 or a >= 1e6:
        mantissa, exponent = f"{v:.2e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{'-' if int(exponent) < 0 else '+'}{abs(int(exponent))}"
    import math
    magnitude = math.floor(math.log10(a))
    if magnitude >= 3:
        unit = 10 ** (magnitude - 2)
        return str(int(round(v / unit) * unit))
    text = f"{v:.{2 - magnitude}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(a)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def open_page(driver, path, name):
    """Loads the page, checks the console and the width, keeps a full-page screenshot."""
    driver.set_window_size(1400, 1000)
    driver.get("file://" + os.path.abspath(path))
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    check(not errors, f"{name}: no JavaScript error in the console: {errors[:3]}")
    width = driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]")
    check(width[0] <= width[1], f"{name}: the page is no wider than the 1400 px window: {width}")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(height + 140, 6000))
    driver.save_screenshot(os.path.join(OUT, name + ".png"))
    driver.set_window_size(1400, 1000)
    check(os.path.getsize(os.path.join(OUT, name + ".png")) > 20000, f"{name}: a screenshot")


def hover(driver, chart, dataset, index):
    """Moves the mouse onto a point of `chart` (a JS expression); returns the tooltip's lines."""
    from selenium.webdriver.common.action_chains import ActionChains
    canvas = driver.execute_script(f"const c = {chart}; c.canvas.scrollIntoView({{block: 'center'}});"
                                   "return c.canvas;")
    x, y, w, h = driver.execute_script(
        f"const c = {chart}; const p = c.getDatasetMeta({dataset}).data[{index}];"
        "const r = c.canvas.getBoundingClientRect(); return [p.x, p.y, r.width, r.height];")
    ActionChains(driver).move_to_element_with_offset(canvas, int(x - w / 2), int(y - h / 2)).perform()
    return driver.execute_script(
        f"const t = {chart}.tooltip; return t && t.opacity > 0 ? "
        "[t.title.join(' ')].concat(t.body.map(b => b.lines).flat()) : [];")


def report_page(driver, run_dir):
    page = os.path.join(run_dir, "report.html")
    text = open(page).read()
    check(not re.search(r"(src|href)=\"(https?:)?//", text), "the page loads nothing from a network")
    open_page(driver, page, "report")
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    charts = driver.execute_script(
        "return runnerCharts.map(c => ({id: c.canvas.closest('.chart-box').id,"
        " legend: c.legend.legendItems.length, datasets: c.data.datasets.map(d =>"
        " ({key: d.runnerKey, epoch: d.runnerPerEpoch, n: (d._data || d.data).length}))}))")
    check(len(driver.find_elements("css selector", ".chart-box canvas")) == len(charts),
          "one canvas a chart")
    drawn = {}
    for c in charts:
        check(c["legend"] == len(c["datasets"]), f"{c['id']}: a legend entry a series")
        for d in c["datasets"]:
            check((d["key"], d["epoch"]) not in drawn, f"{d['key']} drawn once")
            drawn[(d["key"], d["epoch"])] = (c["id"], d["n"])
    # Every number metrics.jsonl records is on some chart (a loss scale of 1 without a scaler
    # and a GPU memory of 0 on a CPU say nothing and are left out).
    steps, epochs = metrics(run_dir, "step"), metrics(run_dir, "epoch")
    for kind, records in (("step", steps), ("epoch", epochs)):
        keys = {k for r in records for k, v in r.items()
                if k not in ("kind", "step", "epoch") and (isinstance(v, (int, float)) or v is None)}
        for k in sorted(keys):
            values = [r.get(k) for r in records]
            if (k == "scale" and all(v == 1 for v in values)) or \
               (k == "peak_gpu_mib" and all(v == 0 for v in values)):
                continue
            where = drawn.get((k, kind == "epoch"))
            check(where is not None, f"metrics.jsonl's {kind} series {k} has a chart")
            if where:
                check(where[1] == len(records), f"{k}: a point per {kind} record: {where[1]} of {len(records)}")
    check(drawn.get(("loss", False), ("", 0))[1] == summary["optimizer_steps"],
          "the training loss has a point per optimizer step")
    ids = [c["id"] for c in charts]
    check("chart-metric-accuracy" in ids and "chart-loss" in ids and "chart-lr" in ids,
          f"loss, accuracy and lr charts: {ids}")
    acc = next((c for c in charts if c["id"] == "chart-metric-accuracy"), {"datasets": []})
    check({d["key"] for d in acc["datasets"]} == {"val_accuracy", "ema_val_accuracy"},
          "the accuracy chart has the model's and the EMA's curves")
    # Epochs are whole on the epoch axis, the ticks round.
    ticks = driver.execute_script(
        "const c = runnerCharts.find(c => c.canvas.closest('.chart-box').id === 'chart-metric-accuracy');"
        "return [c.scales.x.ticks.map(t => t.value), c.scales.y.ticks.map(t => t.label)];")
    check(ticks[0] and all(float(v).is_integer() for v in ticks[0]), f"whole epochs: {ticks[0]}")
    check(all(len(re.sub(r"[^0-9]", "", t.split("e")[0]).lstrip("0")) <= 3 for t in ticks[1]),
          f"round y ticks: {ticks[1]}")
    # A hover shows the step and metrics.jsonl's value there, in the pages' format.
    lines = hover(driver, "runnerCharts.find(c => c.canvas.closest('.chart-box').id === 'chart-loss')", 0, 5)
    want = f"training loss (per step): {number3(steps[5]['loss'])}"
    check(want in lines and any(f"optimizer step {steps[5]['step']}" in l for l in lines),
          f"hovering the 6th step shows {want!r}: {lines}")

    cards = driver.execute_script(
        "return Array.from(document.querySelectorAll('.card')).map(c => ({id: c.id,"
        " label: c.querySelector('.k').textContent, value: c.querySelector('.v').textContent,"
        " raw: c.querySelector('.v').dataset.value, note: (c.querySelector('.n') || {}).textContent,"
        " js: c.querySelector('.v').dataset.value === undefined ? null :"
        " [runner.number3(parseFloat(c.querySelector('.v').dataset.value)),"
        "  runner.si3(parseFloat(c.querySelector('.v').dataset.value))]}))")
    by_id = {c["id"]: c for c in cards}
    for c in cards:
        if c["raw"] is None:
            continue
        shown = c["value"].split(" ")[0]
        check(shown in c["js"], f"{c['id']}: {c['value']!r} is the pages' format of {c['raw']}")
        if c["id"].startswith("card-best-"):
            check(shown == number3(float(c["raw"])) == c["js"][0],
                  f"{c['id']}: C++, the page's script and the rule agree: {shown}")
    best = by_id.get("card-best-accuracy", {})
    check(best.get("value") == number3(summary["best_metrics"]["accuracy"]),
          f"the best accuracy card shows summary.json's {summary['best_metrics']['accuracy']}")
    check("(EMA)" in best.get("label", "") and "EMA weights of epoch" in (best.get("note") or "")
          and "chosen by the highest EMA validation accuracy" in (best.get("note") or "")
          and "the model's own best" in (best.get("note") or ""),
          f"the best card says whose weights and which metric: {best}")
    check(by_id.get("card-model", {}).get("value") == "small_cnn" and
          by_id.get("card-parameters", {}).get("raw") == str(summary["model"]["parameters"]) and
          by_id.get("card-input", {}).get("value") == "1 x 28 x 28" and
          by_id.get("card-data", {}).get("value") == "train 1280 · val 300 · test 50" and
          by_id.get("card-classes", {}).get("value") == "10",
          f"model and data cards: {[by_id.get(k) for k in ('card-model', 'card-parameters', 'card-data')]}")
    device, batch, precision = (by_id.get(k, {}) for k in ("card-device", "card-batch", "card-precision"))
    check("cpu" in device.get("value", "") and "1 process" in (device.get("note") or "")
          and "64 per process x 1 process" in (batch.get("note") or ""),
          f"device and batch cards in words: {device} {batch}")
    check(summary["precision"] == precision.get("value") and "config: fp16" in (precision.get("note") or ""),
          f"the precision card says what ran and that the config asked for fp16: {precision}")
    # train.profile's section: summary.json's profile, as cards and the ops' table.
    profile = summary.get("profile", {})
    heading = driver.execute_script(
        "const s = document.querySelector('#profile summary'); return s ? s.textContent : ''")
    check("Profile of optimizer steps 3-6" in heading, f"the profile section names its steps: {heading!r}")
    for key in ("host_ms_per_step", "between_steps_ms", "host_ops_per_step", "device_reads_per_step"):
        card = by_id.get("card-profile-" + key, {})
        check(key in profile and card.get("raw") is not None and float(card["raw"]) == profile[key],
              f"the profile card {key} shows summary.json's {profile.get(key)}: {card}")
    check("card-profile-kernels_per_step" not in by_id, "no GPU cards for a CPU run")
    ops = driver.execute_script(
        "return Array.from(document.querySelectorAll('#profile-ops tr')).slice(1)"
        ".map(r => r.querySelector('td').textContent)")
    check(ops and ops == [op["name"] for op in profile.get("top_host_ops", [])],
          f"the profile's ops table lists summary.json's top ops in order: {ops}")
    dom = driver.page_source
    check(not re.search(r">[^<]*(train_images_per_s|peak_rss_mib_all_ranks|world_size)", dom),
          "no internal key names in the page's text")
    best_record = metrics(run_dir, "best")
    check(bool(best_record), "metrics.jsonl has the best epoch's confusion matrix")
    if best_record:
        got = driver.execute_script(
            "return Array.from(document.querySelectorAll('#confusion-matrix tr')).slice(1)"
            ".map(r => Array.from(r.querySelectorAll('td')).map(td => td.textContent))")
        want = [[str(v) for v in row] for row in best_record[-1]["confusion_matrix"]]
        check(got == want, "the DOM's confusion matrix has metrics.jsonl's counts")
    rows = driver.execute_script("return document.querySelectorAll('#per-class tr').length")
    check(rows == 11, f"per-class precision/recall/F1: 10 classes ({rows - 1})")
    check(dom.count("data:image/png;base64,") >= 8, "a grid of misclassified validation images")


def compare_page(driver, page, name, runs):
    """A page of the 12 runs `runs` (their folders): names, groups, selectors, table."""
    open_page(driver, page, name)
    state = driver.execute_script(
        "return {legends: runnerCharts.map(c => c.legend.legendItems.map(i => i.text)),"
        " options: Array.from(document.querySelectorAll('#metric-1 option')).map(o => o.value),"
        " bands: runnerCharts.map(c => c.data.datasets.filter(d => d.fill === '-1').length)}")
    check(all(len(l) == 4 for l in state["legends"]),
          f"{name}: 4 legend entries, one a seed group: {state['legends']}")
    check(all(any(t.startswith("lr=0.01 (3 seeds)") for t in l) for l in state["legends"]),
          f"{name}: groups named by the setting that differs: {state['legends']}")
    check(state["bands"] == [4, 4], f"{name}: a min-max band a group: {state['bands']}")
    recorded = set()
    for run in runs:
        for kind in ("step", "epoch"):
            for r in metrics(run, kind):
                recorded |= {(k if kind == "epoch" else "step:" + k) for k, v in r.items()
                             if k not in ("kind", "step", "epoch") and isinstance(v, (int, float))}
    check(set(state["options"]) == recorded,
          f"{name}: a selector entry for every metric the runs recorded: {sorted(set(state['options']) ^ recorded)}")
    lines = hover(driver, "runnerCharts[1]", 2, 1)  # a group's mean, second epoch
    check(len(lines) >= 2 and re.search(r"\(3 seeds\) mean: [0-9.e+-]+$", lines[-1]) is not None,
          f"{name}: hovering a group's line shows its mean: {lines}")
    driver.find_element("id", "group-seeds").click()
    singles = driver.execute_script("return runnerCharts.map(c => c.legend.legendItems.map(i => i.text))")
    check(all(len(l) == 12 for l in singles), f"{name}: 12 single runs with grouping off")
    check("lr=0.01 seed=2" in singles[0], f"{name}: runs named lr=... seed=...: {singles[0][:3]}")
    driver.execute_script("const s = document.getElementById('metric-1');"
                          "s.value = 'val_loss'; s.dispatchEvent(new Event('change'));")
    chosen = driver.execute_script("return [runnerCharts[0].runnerMetric,"
                                   " runnerCharts[0].data.datasets.filter(d => d.data.length).length]")
    check(chosen == ["val_loss", 12], f"{name}: the selector redraws the chart: {chosen}")
    # The table: 12 rows, the best one highlighted, a click on "best accuracy" sorts by it.
    table = driver.execute_script(
        "const t = document.getElementById('runs'); const h = Array.from(t.tHead.rows[0].cells);"
        "return {head: h.map(c => [c.textContent, c.title]), best: t.querySelector('tr.best .name a').textContent}")
    header = [h[0] for h in table["head"]]
    check(["lr", "optimizer.lr"] in table["head"] and ["seed", "seed"] in table["head"],
          f"{name}: short keys, the full key on hover: {table['head']}")
    accuracy = {}
    for run in runs:
        s = json.load(open(os.path.join(run, "summary.json")))
        cfg = open(os.path.join(run, "config.yaml")).read()
        lr = re.search(r"^  lr: (\S+)", cfg, re.M).group(1)
        seed = re.search(r"^seed: (\S+)", cfg, re.M).group(1)
        accuracy[f"lr={lr} seed={seed}"] = s["best_metrics"]["accuracy"]
    top = max(accuracy.values())
    check(accuracy.get(table["best"]) == top, f"{name}: the highlighted run has the best accuracy: {table['best']}")
    column = header.index("best accuracy")
    th = driver.find_elements("css selector", "#runs thead th")[column]
    th.click()
    th.click()  # descending
    order = driver.execute_script(
        f"return Array.from(document.querySelectorAll('#runs tbody tr')).map(r => r.cells[{column}].dataset.sort)")
    values = [float(v) for v in order]
    check(len(values) == 12 and values == sorted(values, reverse=True),
          f"{name}: a click on best accuracy sorts the runs by it: {values}")


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} missing (apt-get install dataset-fashion-mnist)")
        return 77
    try:
        import selenium  # noqa: F401
    except ImportError:
        print("SKIP: python3-selenium missing (make deps installs it for the tests)")
        return 77
    if not shutil.which("chromium") or not os.path.exists(CHROMEDRIVER):
        print("SKIP: chromium or chromium-driver missing (make deps installs them for the tests)")
        return 77
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="runner_report_")
    driver = browser()
    try:
        base = [RUNNER, "run", os.path.join(SOURCE, "experiments", "quickstart.yaml"),
                "--set", "launch.num_processes=1", "--set", "data.limit.train=1280",
                "--set", "data.limit.val=300", "--set", "data.limit.test=50",
                "--set", "scheduler.warmup_steps=2", "--set", "train.epochs=3",
                "--set", "train.log_every_steps=2"]
        run_dir = os.path.join(tmp, "run")
        # EMA picks the best weights; precision fp16 on a CPU: the report says what ran, and why.
        p = subprocess.run(base + ["--set", f"output.run_dir={run_dir}", "--set", "precision=fp16",
                                   "--set", "train.ema.enabled=true", "--set", "train.ema.decay=0.8",
                                   "--set", "train.best.weights=ema",
                                   "--set", "train.profile.enabled=true",
                                   "--set", "train.profile.skip_steps=2",
                                   "--set", "train.profile.steps=4"],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, "the run finishes")
        if not os.path.isfile(os.path.join(run_dir, "report.html")):
            print(p.stdout[-2000:], p.stderr[-2000:])
            return 1
        report_page(driver, run_dir)

        # runner lr-find's page: the losses against a log lr axis, the suggestion marked.
        lr_dir = os.path.join(tmp, "lr")
        p = subprocess.run([RUNNER, "lr-find", os.path.join(SOURCE, "experiments", "quickstart.yaml"),
                            "--set", "data.limit.train=1280", "--set", "data.limit.val=300",
                            "--steps", "30", "-o", lr_dir], capture_output=True, text=True, timeout=300)
        lr_page = os.path.join(lr_dir, "lr_find.html")
        check(os.path.isfile(lr_page), f"runner lr-find writes lr_find.html: {p.stdout[-500:]} {p.stderr[-500:]}")
        if os.path.isfile(lr_page):
            open_page(driver, lr_page, "lr_find")
            scale, labels, points, card = driver.execute_script(
                "const c = runnerCharts[0]; return [c.scales.x.type, c.data.datasets.map(d => d.label),"
                " c.data.datasets[0].data.length,"
                " document.querySelector('#suggested-lr .v').textContent]")
            with open(os.path.join(lr_dir, "lr_find.json")) as f:
                suggested = json.load(f).get("suggested_lr")
            check(scale == "logarithmic" and labels[:2] == ["loss", "smoothed"] and points == 30,
                  f"lr_find.html: loss and smoothed loss over 30 steps on a log lr axis: {scale} {labels} {points}")
            want = number3(suggested) if suggested is not None else "none"
            check(card == want and (suggested is None or labels[2:] == [f"suggested {want}"]),
                  f"lr_find.html: the suggested lr {suggested} in its card and as a line: {card} {labels}")

        # A failed run: the report says so, with what it had.
        failed_dir = os.path.join(tmp, "failed")
        p = subprocess.run(base + ["--set", f"output.run_dir={failed_dir}", "--set", "optimizer.lr=1e30",
                                   "--set", "train.max_nonfinite_steps=1"],
                           capture_output=True, text=True, timeout=300)
        failed_page = os.path.join(failed_dir, "report.html")
        check(p.returncode == 1 and os.path.isfile(failed_page) and "failed: " in open(failed_page).read(),
              "a failed run writes report.html saying it failed")
        if os.path.isfile(failed_page):
            open_page(driver, failed_page, "report_failed")

        # A sweep of 12 runs: 4 learning rates x 3 seeds, 3 epochs each.
        sweep_dir = os.path.join(tmp, "sweep")
        os.makedirs(sweep_dir)
        lib = os.path.join(SOURCE, "tests", "integration", "lib.sh")
        subprocess.run(["bash", "-c", f'source "{lib}"; write_tiny_experiment base.yaml "{FMNIST}"'],
                       cwd=sweep_dir, check=True)
        with open(os.path.join(sweep_dir, "grid.yaml"), "w") as f:
            f.write("base: base.yaml\noutput: out\nset: {train.epochs: 3}\n"
                    "grid:\n  optimizer.lr: [0.0003, 0.001, 0.003, 0.01]\n  seed: [1, 2, 3]\n")
        p = subprocess.run([RUNNER, "sweep", "grid.yaml", "--parallel", "2"], cwd=sweep_dir,
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"the 12-point sweep finishes: {p.stdout[-500:]}")
        points = os.path.join(sweep_dir, "out", "grid")
        runs = sorted(os.path.join(points, d) for d in os.listdir(points)
                      if os.path.isfile(os.path.join(points, d, "summary.json")))
        check(len(runs) == 12, f"12 runs: {len(runs)}")
        compare_page(driver, os.path.join(points, "report.html"), "sweep", runs)
        compare = os.path.join(tmp, "compare.html")
        p = subprocess.run([RUNNER, "report", *runs, "-o", compare], capture_output=True,
                           text=True, timeout=120)
        check(p.returncode == 0 and os.path.isfile(compare), "runner report RUN... -o compare.html")
        if os.path.isfile(compare):
            compare_page(driver, compare, "compare", runs)
        # Two runs that differ in many settings: named by each, the columns fit the window.
        p = subprocess.run([RUNNER, "report", run_dir, failed_dir, "-o", compare],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "runner report of two different runs")
        open_page(driver, compare, "compare_two")
        heads = driver.execute_script(
            "return Array.from(document.querySelectorAll('#runs thead th')).map(c => c.title)")
        check("optimizer.lr" in heads and "train.max_nonfinite_steps" in heads and "precision" in heads,
              f"a column per setting that differs, the full key on hover: {heads}")
        check(driver.execute_script("return document.getElementById('scaling') === null"),
              "no Scaling section where fewer than two runs finished with different global batches")

        # Runs of two global batches: the Scaling section charts images/s and the ranking metric
        # against the global batch (log axis), a line per processes and precision.
        half_dir = os.path.join(tmp, "half")
        p = subprocess.run(base + ["--set", f"output.run_dir={half_dir}", "--set", "train.batch_size=32",
                                   "--set", "train.epochs=1"], capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"a run at batch 32 finishes: {p.stdout[-500:]}")
        scaling = os.path.join(tmp, "scaling.html")
        p = subprocess.run([RUNNER, "report", run_dir, half_dir, "-o", scaling], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 0 and os.path.isfile(scaling), "runner report of two batch sizes")
        if os.path.isfile(scaling):
            open_page(driver, scaling, "compare_scaling")
            charts = driver.execute_script(
                "return runnerScalingCharts.map(c => [c.scales.x.type,"
                " c.data.datasets.map(d => [d.label, d.data.map(p => [p.x, p.y])])])")
            want = []
            for d in (run_dir, half_dir):
                with open(os.path.join(d, "summary.json")) as f:
                    s = json.load(f)
                want.append((f"{s['world_size']} process(es), {s['precision']}", s["global_batch"],
                             round(s["train_images_per_s"], 3)))
            got = [(label, x, round(y, 3)) for label, points in (charts[0][1] if charts else [])
                   for x, y in points]
            check(len(charts) == 2 and all(c[0] == "logarithmic" for c in charts) and
                  sorted(got) == sorted(want),
                  f"Scaling: images/s at each global batch on a log axis, a line per processes and "
                  f"precision: {charts} want {want}")
    finally:
        driver.quit()
        shutil.rmtree(tmp, ignore_errors=True)
    finish()  # exits 1 when a check failed
    return 0


if __name__ == "__main__":
    sys.exit(main())
