// `runner`: a tiny front program that sets the OpenMP environment, then becomes runner-engine
// (the real program, in the same folder) with the same arguments and process id.
//
// Why a separate program: libgomp reads its environment once, while libtorch is being loaded,
// before any code of runner-engine runs. Its default spins each idle intra-op thread for about
// 3 ms after every parallel region; runner's loader threads and the other ranks on the same
// cores then wait for cores that only spin. Measured on 2 cores (bench/RESULTS.md): the same
// throughput on an idle machine, up to 1.5x more images/s when the cores are shared.

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

/// Bounded spinning (~0.1 ms) unless the user chose a wait policy or spin count.
void set_openmp_defaults() {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
    ::setenv("GOMP_SPINCOUNT", "10000", 1);
}

/// The folder holding this program, from /proc/self/exe (symlinks resolved).
std::string own_folder() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  buffer[n] = '\0';
  std::string path(buffer);
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

int main(int argc, char** argv) {
  (void)argc;
  set_openmp_defaults();
  const std::string engine = own_folder() + "/runner-engine";
  ::execv(engine.c_str(), argv);
  std::fprintf(stderr,
               "runner: cannot start %s: %s; runner-engine must sit beside runner (reinstall "
               "runner, or rebuild with `make build`)\n",
               engine.c_str(), std::strerror(errno));
  return 127;
}
