
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "run/environment_report.hpp"
#include "runner/error.hpp"

namespace runner::cli {
namespace {

// "built with 13.0; 1 device(s)" / "built with 13.0; no device here (CPU only)" / "not built in".
std::string cuda_line(const nlohmann::json& env) {
  const auto built = env["cuda_built"].get<std::string>();
  if (built.empty()) return "not built in (CPU-only libtorch)";
  const std::string devices = env["cuda_available"].get<bool>()
                                  ? std::to_string(env["cuda_devices"].get<int>()) + " device(s)"
                                  : std::string("no device here (runs on CPU)");
  return "built with " + built + "; " + devices;
}

// "this CPU runs up to avx512; ATEN_CPU_CAPABILITY unset", or the variable's choice, or why
// ATen would stop under it.
std::string aten_capability_source(const nlohmann::json& env) {
  const std::string cpu = "this CPU runs up to " + env["cpu_aten_capability"].get<std::string>();
  if (env["aten_cpu_capability_refusal"].is_string())
    return cpu + "; " + env["aten_cpu_capability_refusal"].get<std::string>();
  if (env["aten_cpu_capability_variable"].is_string())
    return "ATEN_CPU_CAPABILITY=" + env["aten_cpu_capability_variable"].get<std::string>() + "; " +
           cpu;
  return cpu + "; ATEN_CPU_CAPABILITY unset";
}

}  // namespace

int command_env(const Args& args) {
  CommandLine cl("env", "[--json]",
                 "Prints versions (runner, libtorch, CUDA/cuDNN/NCCL if any, OpenCV, BLAS),\n"
                 "devices, thread counts and where runner's, libtorch's and CUDA's libraries\n"
                 "were loaded from.");
  cl.flag("json", nullptr, "Print JSON");
  if (!cl.parse(args)) return 0;
  const auto env = run::environment_report();
  if (cl.has("json")) {
    std::cout << env.dump(2) << "\n";
    return 0;
  }
  std::cout << "runner          " << env["runner"].get<std::string>() << "\n"
            << "libtorch        " << env["libtorch"].get<std::string>() << "\n"
            << "OpenCV          " << env["opencv"].get<std::string>() << "\n"
            << "spdlog          " << env["spdlog"].get<std::string>() << "\n"
            << "BLAS            " << env["blas"].get<std::string>() << "\n"
            << "CUDA            " << cuda_line(env) << "\n"
            << "cuDNN           "
            << (env["cudnn_available"].get<bool>() ? "available" : "not available") << "\n"
            << "NCCL            " << env["nccl"].get<std::string>() << "\n"
            << "Gloo            " << env["gloo"].get<std::string>() << "\n"
            << "CPU cores       " << env["cpu_cores"].get<unsigned>() << "\n"
            << "ATen CPU        " << env["aten_cpu_capability"].get<std::string>() << " kernels ("
            << aten_capability_source(env) << "); native bf16: "
            << (env["cpu_native_bf16"].is_string() ? env["cpu_native_bf16"].get<std::string>()
                                                   : std::string("no"))
            << "\n"
            << "bf16 copies     " << env["bf16_weight_copies"].get<std::string>() << "\n"
            << "torch threads   " << env["torch_threads"].get<int>() << " intra-op, "
            << env["torch_interop_threads"].get<int>() << " inter-op\n"
            << "loaded from\n";
  for (const auto& [file, path] : env["libraries"].items())
    std::cout << "  " << file << std::string(file.size() < 24 ? 24 - file.size() : 1, ' ')
              << path.get<std::string>() << "\n";
  return 0;
}

}  // namespace runner::cli
