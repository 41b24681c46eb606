#include <spdlog/version.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iostream>
#include <opencv2/core/version.hpp>
#include <set>
#include <thread>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/environment_report.hpp"
#include "runner/error.hpp"

namespace runner::cli {
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

}  // namespace

nlohmann::json environment_report() {
  nlohmann::json env;
  env["runner"] = RUNNER_VERSION;
  env["libtorch"] = TORCH_VERSION;
  env["opencv"] = CV_VERSION;
  env["spdlog"] = std::to_string(SPDLOG_VER_MAJOR) + "." + std::to_string(SPDLOG_VER_MINOR) + "." +
                  std::to_string(SPDLOG_VER_PATCH);
  env["blas"] = loaded_blas();
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
  env["torch_threads"] = torch::get_num_threads();
  env["torch_interop_threads"] = torch::get_num_interop_threads();
  return env;
}

int command_env(const Args& args) {
  CommandLine cl("env", "[--json]",
                 "Prints versions (runner, libtorch, CUDA/cuDNN/NCCL if any, OpenCV, BLAS),\n"
                 "devices and thread counts.");
  cl.flag("json", nullptr, "Print JSON");
  if (!cl.parse(args)) return 0;
  const auto env = environment_report();
  if (cl.has("json")) {
    std::cout << env.dump(2) << "\n";
    return 0;
  }
  std::cout << "runner          " << env["runner"].get<std::string>() << "\n"
            << "libtorch        " << env["libtorch"].get<std::string>() << "\n"
            << "OpenCV          " << env["opencv"].get<std::string>() << "\n"
            << "spdlog          " << env["spdlog"].get<std::string>() << "\n"
            << "BLAS            " << env["blas"].get<std::string>() << "\n"
            << "CUDA            "
            << (env["cuda_available"].get<bool>()
                    ? std::to_string(env["cuda_devices"].get<int>()) + " device(s)"
                    : std::string("not available (CPU only)"))
            << "\n"
            << "cuDNN           "
            << (env["cudnn_available"].get<bool>() ? "available" : "not available") << "\n"
            << "NCCL            " << env["nccl"].get<std::string>() << "\n"
            << "Gloo            " << env["gloo"].get<std::string>() << "\n"
            << "CPU cores       " << env["cpu_cores"].get<unsigned>() << "\n"
            << "torch threads   " << env["torch_threads"].get<int>() << " intra-op, "
            << env["torch_interop_threads"].get<int>() << " inter-op\n";
  return 0;
}

}  // namespace runner::cli
