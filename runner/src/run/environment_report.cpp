#include "run/environment_report.hpp"

#include "runner_build_info.hpp"

#include <ATen/Version.h>
#include <spdlog/version.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cstdlib>
#include <fstream>
#include <opencv2/core/version.hpp>
#include <set>
#include <thread>

#include "runner/models/compute_copies.hpp"
#include "util/cpu_features.hpp"

namespace runner::run {

namespace {

// The BLAS libraries actually mapped into this process (libtorch's linear layers use them).
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> libs;
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash + 1);
    if (file.find("blas") != std::string::npos || file.find("mkl") != std::string::npos ||
        file.find("lapack") != std::string::npos)
      libs.insert(file);
  }
  std::string out;
  for (const auto& l : libs) out += (out.empty() ? "" : ", ") + l;
  return out.empty() ? "none loaded" : out;
}

// Where the libraries that decide how a run computes were loaded from (/proc/self/maps): an
// installed runner, a second libtorch or CUDA runtime on the loader's path show here.
nlohmann::json loaded_libraries() {
  static const char* const kWatched[] = {
      "librunner_core", "librunner_builtins", "libtorch_cpu", "libtorch_cuda",
      "libc10.",        "libcudart",          "libnccl",      "libcudnn.",
      "libopencv_core"};
  std::ifstream maps("/proc/self/maps");
  nlohmann::json found = nlohmann::json::object();
  std::string line;
  while (std::getline(maps, line)) {
    const auto path_at = line.find('/');
    if (path_at == std::string::npos) continue;
    const std::string path = line.substr(path_at);
    const std::string file = path.substr(path.rfind('/') + 1);
    for (const char* prefix : kWatched)
      if (file.rfind(prefix, 0) == 0 && file.find(".so") != std::string::npos) found[file] = path;
  }
  return found;
}

}  // namespace

nlohmann::json environment_report() {
  nlohmann::json env;
  env["runner"] = RUNNER_VERSION;
  env["libtorch"] = TORCH_VERSION;
  env["opencv"] = CV_VERSION;
  env["spdlog"] = std::to_string(SPDLOG_VER_MAJOR) + "." + std::to_string(SPDLOG_VER_MINOR) + "." +
                  std::to_string(SPDLOG_VER_PATCH);
  env["blas"] = loaded_blas();
  // What the binary can do (built with) apart from what this machine offers (available).
  env["cuda_built"] = RUNNER_BUILD_CUDA_VERSION;
  env["cuda_available"] = torch::cuda::is_available();
  env["cuda_devices"] = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  env["cudnn_available"] = torch::cuda::cudnn_is_available();
#ifdef USE_C10D_NCCL
  env["nccl"] = "compiled in";
#else
  env["nccl"] = "not in this libtorch";
#endif
#ifdef USE_C10D_GLOO
  env["gloo"] = "compiled in";
#else
  env["gloo"] = "not in this libtorch";
#endif
  env["cpu_cores"] = std::thread::hardware_concurrency();
  // What precision: bf16 (and fp16) run as on this CPU.
  const std::string bf16 = util::native_bf16_feature();
  env["cpu_native_bf16"] = bf16.empty() ? nlohmann::json(false) : nlohmann::json(bf16);
  // Which of ATen's CPU kernels run (ATEN_CPU_CAPABILITY may choose), and what follows for the
  // optimizer-written bf16 copies (their writer probes those kernels).
  env["aten_cpu_capability"] = at::get_cpu_capability();
  env["cpu_aten_capability"] = util::cpu_aten_capability();
  const char* variable = std::getenv("ATEN_CPU_CAPABILITY");
  env["aten_cpu_capability_variable"] = variable ? nlohmann::json(variable) : nlohmann::json();
  const std::string refusal = util::aten_capability_refusal();
  env["aten_cpu_capability_refusal"] = refusal.empty() ? nlohmann::json() : nlohmann::json(refusal);
  // The writer's probe runs ATen's kernels: not where they would stop the process.
  env["bf16_weight_copies"] =
      refusal.empty() ? models::compute_copy_writer() : "not probed: " + refusal;
  env["torch_threads"] = torch::get_num_threads();
  env["torch_interop_threads"] = torch::get_num_interop_threads();
  env["libraries"] = loaded_libraries();
  return env;
}

}  // namespace runner::run
