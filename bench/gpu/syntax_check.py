#!/usr/bin/env python3
"""Syntax-only compile of runner's CUDA/NCCL code paths on a machine without a GPU.

Takes each TU's real compile command from <build>/compile_commands.json, drops the object output
and the precompiled header, and adds -fsyntax-only, RUNNER_WITH_CUDA, RUNNER_WITH_NCCL and the
CUDA include folder (cuda_runtime_api.h, nccl.h), so the `#if RUNNER_COMPAT_HAS_CUDA/NCCL`
branches of runner/src/compat/torch_compat.hpp compile against the installed libtorch headers.
Usage: syntax_check.py <build dir> [cuda include dir=/usr/local/cuda/include]
Exit status 0 when every TU compiles; prints the compiler's errors otherwise.
"""
import json
import os
import shlex
from concurrent.futures import ThreadPoolExecutor
import subprocess
import sys

# TUs that include the compat header or touch CUDA-only code.
UNITS = ["runner/src/dist/world.cpp", "runner/src/dist/data_parallel.cpp",
         "runner/src/engine/trainer.cpp", "runner/src/engine/device_options.cpp"]

# The compat header's own guard test: it must see CUDA and NCCL, or the check checks nothing.
PROBE = """#include "compat/torch_compat.hpp"
static_assert(runner::compat::kHasNccl, "NCCL branch not compiled: nccl.h not found?");
static_assert(runner::compat::kHasCuda, "CUDA branch not compiled: cuda_runtime_api.h?");
int main() {
  c10::Device d(c10::kCUDA, 0);
  (void)runner::compat::cuda_peak_allocated_bytes(d);
  runner::compat::cuda_reset_peak_bytes(d);
  runner::compat::set_cudnn_benchmark(true);
  (void)&runner::compat::make_nccl_group;
}
"""


def main():
    build = os.path.abspath(sys.argv[1])
    cuda = sys.argv[2] if len(sys.argv) > 2 else "/usr/local/cuda/include"
    if not os.path.exists(os.path.join(cuda, "cuda_runtime_api.h")):
        print(f"no CUDA headers in {cuda}: nothing to check", file=sys.stderr)
        return 1
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    commands = {os.path.realpath(e["file"]): e for e in
                json.load(open(os.path.join(build, "compile_commands.json")))}
    probe_path = os.path.join(build, "gpu_syntax_probe.cpp")
    with open(probe_path, "w") as f:
        f.write(PROBE)
    template = commands[os.path.realpath(os.path.join(root, UNITS[0]))]

    def check(unit):
        path = os.path.realpath(os.path.join(root, unit))
        entry = commands.get(path, template)
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c", "-include", "-MF", "-MT"):
                skip = True
                continue
            if a in ("-MD", "-Winvalid-pch") or a == entry["file"] or a.endswith(".cpp"):
                continue
            if a.startswith("-Xclang") or "cmake_pch" in a:
                continue
            out.append(a)
        # A launcher (ccache via cmake -E env) precedes the compiler: keep from the compiler on.
        start = next(i for i, a in enumerate(out) if a.endswith(("c++", "g++", "clang++")))
        cmd = out[start:] + ["-fsyntax-only", "-DRUNNER_WITH_CUDA", "-DRUNNER_WITH_NCCL",
                             "-isystem", cuda, "-I", os.path.join(root, "runner/src"),
                             "-idirafter", os.path.join(root, "bench/gpu/syntax_stubs"), path]
        result = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        return os.path.relpath(path, root), result

    units = [u for u in UNITS if os.path.exists(os.path.join(root, u))] + [probe_path]
    failures = 0
    with ThreadPoolExecutor(max_workers=2) as pool:  # the CPU machine's two cores
        for name, result in pool.map(check, units):
            print(f"{'ok' if result.returncode == 0 else 'FAILED':6} {name}")
            if result.returncode != 0:
                failures += 1
                print(result.stderr[-6000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
