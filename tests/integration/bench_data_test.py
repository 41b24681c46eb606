#!/usr/bin/env python3
"""runner bench-data and data.reduced_decode (issue 54), through the CLI: on an image_folder of
1200 x 900 JPEGs with random_resized_crop 160 first, bench-data times the pipeline, accounts
for read/decode/transforms/collate, and says how many JPEGs were decoded at 1/2, 1/4 or 1/8;
with data.reduced_decode false none are, and the one-thread decode takes longer. A rank beyond
the world or a split the data lacks is one line, exit 2.
Usage: bench_data_test.py RUNNER SOURCE_DIR
"""
import os
import re
import subprocess
import sys

import cv2
import numpy as np

from engine_lib import check, finish, run, tmpdir, write

EXPERIMENT = """
name: bench
seed: 1
launch: {{num_processes: 2, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: image_folder, root: {root}}}
  train_transforms:
    - {{name: random_resized_crop, height: 160, width: 160}}
    - {{name: horizontal_flip, p: 0.5}}
    - {{name: normalize}}
  eval_transforms: [{{name: resize, height: 160, width: 160}}, {{name: normalize}}]
  num_workers: 2
model: {{backbone: small_cnn, in_chans: 3, num_classes: 2}}
optimizer: {{name: adam, lr: 1.0e-3}}
train: {{epochs: 1, batch_size: 8}}
predict: {{enabled: false}}
"""


def main():
    tmp = tmpdir()
    rng = np.random.default_rng(0)
    for i in range(48):
        y, x = np.mgrid[0:900, 0:1200]
        image = np.stack([128 + 100 * np.sin(x * 0.01 + i), 128 + 100 * np.cos(y * 0.013),
                          128 + 80 * np.sin((x + y) * 0.007)], -1) + rng.normal(0, 6, (900, 1200, 3))
        folder = os.path.join(tmp, "images", f"c{i % 2}")
        os.makedirs(folder, exist_ok=True)
        cv2.imwrite(os.path.join(folder, f"{i}.jpg"), image.clip(0, 255).astype(np.uint8),
                    [cv2.IMWRITE_JPEG_QUALITY, 90])
    exp = write(os.path.join(tmp, "bench.yaml"), EXPERIMENT.format(root=os.path.join(tmp, "images")))

    code, out = run("bench-data", [exp])
    match = re.search(r"(\d+) of the (\d+) images were JPEGs decoded at 1/2, 1/4 or 1/8", out)
    check(code == 0 and re.search(r"pipeline +[0-9]+ images/s \(24 images", out) is not None,
          f"bench-data times rank 0's epoch (24 of 48 images on 2 ranks): {out}")
    check(all(w in out for w in ("read", "decode", "transforms", "collate")), f"the account: {out}")
    check(match is not None and int(match.group(1)) > 5,
          f"most large crops are decoded smaller: {match.group(0) if match else out}")
    decode_ms = lambda text: float(re.search(r"decode \d+% \(([0-9.]+) ms/image\)", text).group(1))
    code, whole = run("bench-data", [exp, "--set", "data.reduced_decode=false"])
    check(code == 0 and "decoded at 1/2" not in whole, f"data.reduced_decode false: whole decodes: {whole}")
    if match and code == 0:
        check(decode_ms(whole) > decode_ms(out),
              f"decoding whole takes longer: {decode_ms(whole)} vs {decode_ms(out)} ms/image")

    # --samples where it cannot write: a folder under a plain file is refused before anything
    # is read (exit 2, one line); a full disk (a tiny tmpfs) fails in one line naming the file
    # and leaves the earlier file there byte for byte, no temporary file beside it.
    plain = write(os.path.join(tmp, "plain"), "x")
    code, out = run("bench-data", [exp, "--samples", os.path.join(plain, "s.json")], expect=None)
    check(code == 2 and "is not a folder this user can write" in out and "pipeline" not in out
          and len(out.strip().splitlines()) == 1, f"--samples under a plain file: {out}")
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    if os.getuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", full],
                                           capture_output=True).returncode == 0:
        try:
            earlier = os.path.join(full, "s.json")
            run("bench-data", [exp, "--batches", "1", "--samples", earlier])
            before = open(earlier, "rb").read() if os.path.exists(earlier) else b""
            with open(os.path.join(full, "filler"), "wb") as f:
                try:
                    f.write(b"\0" * 16384)
                except OSError:
                    pass
            code, out = run("bench-data", [exp, "--epoch", "2", "--samples", earlier], expect=None)
            errors = [l for l in out.splitlines() if "error" in l]
            check(code == 1 and len(errors) == 1 and "No space left" in errors[0] and earlier in errors[0]
                  and before and open(earlier, "rb").read() == before
                  and sorted(os.listdir(full)) == ["filler", "s.json"],
                  f"--samples onto a full disk: one line, the earlier file unchanged: {code} {errors} "
                  f"{os.listdir(full)}")
        finally:
            subprocess.run(["umount", full])
    else:
        print("note: the full-disk case needs root and a tmpfs mount: skipped")

    code, out = run("bench-data", [exp, "--rank", "2"], expect=None)
    check(code == 2 and "--rank 2 is not below the experiment's 2 processes" in out
          and len(out.strip().splitlines()) == 1, f"a rank beyond the world: {out}")
    code, out = run("bench-data", [exp, "--split", "test"], expect=None)
    check(code == 2 and "has no test split" in out, f"a split the data lacks: {out}")
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
