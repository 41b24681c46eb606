#!/usr/bin/env bash
# Run HERE (Debian 12, apt works): gathers runner's non-torch dependencies for the GPU test
# machine (no internet, no apt) into .gpu-deps/, which travels with the working tree.
#   .gpu-deps/debs/       the Debian packages (compressed: what travels; < 64 MiB in all)
#   .gpu-deps/stubs/      C sources of stand-ins for libraries OpenCV's imgcodecs links but runner
#                         never calls (GDAL, GDCM, OpenEXR: their closure is hundreds of MiB)
#   .gpu-deps/fashion-mnist/  the Fashion-MNIST IDX files (the real-format workload)
# gpu_check.sh unpacks the packages there (dpkg -x, or ar + tar) and builds the stubs.
# Usage: bench/gpu/prepare_deps.sh [dest=.gpu-deps]
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-.gpu-deps}
mkdir -p "$dest/debs" "$dest/stubs" "$dest/fashion-mnist"

# Headers + CMake configs (dev, no recursion: their compile-time deps are not needed) and the
# runtime closure of the shared libraries, found with readelf (GDAL/GDCM/OpenEXR stubbed below).
dev=(libyaml-cpp-dev libspdlog-dev libfmt-dev libboost1.74-dev libboost-program-options1.74-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev nlohmann-json3-dev
  libvalijson-dev libgloo-dev zlib1g-dev libgtest-dev)
runtime=(libyaml-cpp0.7 libspdlog1.10 libfmt9 libboost-program-options1.74.0 libopencv-core406
  libopencv-imgproc406 libopencv-imgcodecs406 libtbb12 libblas3 liblapack3 libgfortran5
  libquadmath0 libglx0 libglvnd0 libx11-6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libjpeg62-turbo
  libpng16-16 libtiff6 libwebp7 libopenjp2-7 libjbig0 liblerc4 libdeflate0 libzstd1 zlib1g)
(cd "$dest/debs" && apt-get download "${dev[@]}" "${runtime[@]}" 2>&1 | grep -v unsandboxed || true)

# Stand-ins: every symbol libopencv_imgcodecs needs from a stubbed library, aborting if called.
python3 - "$dest/stubs" <<'PY'
import re, subprocess, sys
out = sys.argv[1]
lib = "/usr/lib/x86_64-linux-gnu/libopencv_imgcodecs.so.406"
needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
undef = set(l.split()[-1].split("@")[0] for l in subprocess.run(
    ["nm", "-D", "--undefined-only", lib], capture_output=True, text=True).stdout.splitlines())
for soname in re.findall(r"\[(lib(?:gdal|gdcm|OpenEXR)[^\]]*)\]", needed):
    real = "/usr/lib/x86_64-linux-gnu/" + soname
    lines = subprocess.run(["nm", "-D", "-S", "--defined-only", real], capture_output=True,
                           text=True).stdout.splitlines()
    src = ["#include <stdio.h>", f"/* stand-in for {soname}: runner never decodes via it */",
           "static long stub_called(const char* name) {",
           f'  fprintf(stderr, "runner: stub of {soname} called: %s (returns 0)\\n", name);',
           "  return 0;", "}"]
    for n, line in enumerate(lines):
        parts = line.split()
        name = parts[-1].split("@")[0]
        if name not in undef:
            continue
        kind = parts[-2]
        if kind in ("T", "W", "i"):
            src.append(f'long f{n}(void) __asm__("{name}");'
                       f' long f{n}(void) {{ return stub_called("{name}"); }}')
        else:  # data (typeinfo, vtables): right size, zero-filled
            size = int(parts[1], 16) if len(parts) == 4 else 8
            src.append(f'char d{n}[{size}] __asm__("{name}") = {{0}};')
    open(f"{out}/{soname}.c", "w").write("\n".join(src) + "\n")
PY
# The 10000 test images serve as both splits: the check runs a fixed number of steps, and the
# 26 MiB training file would not fit beside the packages.
fm=/usr/share/datasets/fashion-mnist
for part in images-idx3 labels-idx1; do
  cp "$fm/t10k-$part-ubyte.gz" "$dest/fashion-mnist/t10k-$part-ubyte.gz"
  cp "$fm/t10k-$part-ubyte.gz" "$dest/fashion-mnist/train-$part-ubyte.gz"
done
du -sh "$dest"/*
total=$(du -sm "$dest" | cut -f1)
echo "total ${total} MiB (must stay under 64 MiB to travel)"
[ "$total" -lt 64 ]
