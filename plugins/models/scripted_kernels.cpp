#include "scripted_kernels.hpp"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/passes/inliner.h>
#include <torch/library.h>
#include <torch/script.h>

#include "depthwise_conv.hpp"
#include "runner/error.hpp"
#include "runner/models/batch_norm.hpp"

namespace runner::models {
namespace {

/// (a, b) of an int[2] argument, which TorchScript may also pass as one value for both.
std::pair<int64_t, int64_t> pair_of(const std::vector<int64_t>& v) {
  return v.size() == 1 ? std::pair{v[0], v[0]} : std::pair{v.at(0), v.at(1)};
}

/// aten::conv2d, with runner's depthwise convolution where it applies: a CPU input, one
/// [1, k, k] filter per channel with k odd, padding (k - 1) / 2, no dilation, the same stride
/// both ways.
torch::Tensor scripted_conv2d(const torch::Tensor& input, const torch::Tensor& weight,
                              const std::optional<torch::Tensor>& bias, std::vector<int64_t> stride,
                              std::vector<int64_t> padding, std::vector<int64_t> dilation,
                              int64_t groups) {
  const int64_t k = weight.dim() == 4 ? weight.size(2) : 0;
  const auto [stride_y, stride_x] = pair_of(stride);
  const auto [pad_y, pad_x] = pair_of(padding);
  const auto [dilation_y, dilation_x] = pair_of(dilation);
  const bool depthwise = input.is_cpu() && input.dim() == 4 && weight.dim() == 4 && groups > 1 &&
                         input.size(1) == groups && weight.size(0) == groups &&
                         weight.size(1) == 1 && weight.size(3) == k && k % 2 == 1 &&
                         pad_y == (k - 1) / 2 && pad_x == pad_y && dilation_y == 1 &&
                         dilation_x == 1 && stride_x == stride_y;
  if (depthwise) return depthwise_conv2d(input, weight, bias.value_or(torch::Tensor()), stride_y);
  return at::conv2d(input, weight, bias, stride, padding, dilation, groups);
}

torch::Tensor scripted_batch_norm(const torch::Tensor& input,
                                  const std::optional<torch::Tensor>& weight,
                                  const std::optional<torch::Tensor>& bias,
                                  const std::optional<torch::Tensor>& running_mean,
                                  const std::optional<torch::Tensor>& running_var, bool training,
                                  double momentum, double eps, bool cudnn_enabled) {
  const torch::Tensor none;
  return models::batch_norm(input, weight.value_or(none), bias.value_or(none),
                            running_mean.value_or(none), running_var.value_or(none), training,
                            momentum, eps, cudnn_enabled);
}

// ATen's signatures, so that a rewritten node keeps its inputs. A BatchNorm updates its running
// statistics in place, which its schema (as aten::batch_norm's) does not say: conservative alias
// analysis keeps the interpreter from reordering or merging it.
TORCH_LIBRARY(runner, m) {
  m.def(torch::schema("runner::conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, "
                      "int[2] padding, int[2] dilation, int groups) -> Tensor",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        &scripted_conv2d);
  m.def(torch::schema("runner::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? "
                      "running_mean, Tensor? running_var, bool training, float momentum, float "
                      "eps, bool cudnn_enabled) -> Tensor",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        &scripted_batch_norm);
}

/// Whether `node` is aten::conv2d with int-list padding (not the "same"/"valid" string form) and
/// groups that are not the constant 1.
bool grouped_conv2d(const torch::jit::Node* node) {
  static const auto aten_conv2d = c10::Symbol::fromQualString("aten::conv2d");
  if (node->kind() != aten_conv2d || node->inputs().size() != 7) return false;
  if (node->input(4)->type()->kind() == c10::TypeKind::StringType) return false;
  const std::optional<c10::IValue> groups = torch::jit::toIValue(node->input(6));
  return !(groups && groups->isInt() && groups->toInt() == 1);
}

const c10::Symbol kRunnerConv2d = c10::Symbol::fromQualString("runner::conv2d");
const c10::Symbol kRunnerBatchNorm = c10::Symbol::fromQualString("runner::batch_norm");

void rewrite(torch::jit::Block* block) {
  static const auto aten_batch_norm = c10::Symbol::fromQualString("aten::batch_norm");
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* node = *it++;  // on before the node is replaced
    for (torch::jit::Block* inner : node->blocks()) rewrite(inner);
    if (grouped_conv2d(node)) {
      node->replaceWithNewSymbol(kRunnerConv2d);
      node->destroy();
    } else if (node->kind() == aten_batch_norm && node->inputs().size() == 9) {
      node->replaceWithNewSymbol(kRunnerBatchNorm);
      node->destroy();
    }
  }
}

void count_calls(const torch::jit::Block* block, ScriptedKernelCalls& calls) {
  for (const torch::jit::Node* node : block->nodes()) {
    for (const torch::jit::Block* inner : node->blocks()) count_calls(inner, calls);
    calls.grouped_convolutions += node->kind() == kRunnerConv2d;
    calls.batch_norms += node->kind() == kRunnerBatchNorm;
  }
}

}  // namespace

ScriptedKernelCalls rewrite_to_runner_kernels(torch::jit::Module& script) {
  for (const torch::jit::Method& method : script.get_methods()) {
    const std::shared_ptr<torch::jit::Graph> graph = method.graph();
    // The layers' own methods and functions (F.batch_norm) into this one, where their calls
    // can be replaced for this model alone.
    torch::jit::Inline(*graph);
    rewrite(graph->block());
  }
  ScriptedKernelCalls calls;
  if (const auto forward = script.find_method("forward"))
    count_calls(forward->graph()->block(), calls);
  return calls;
}

ScriptedKernelCalls use_runner_kernels(torch::jit::Module& script) {
  const char* choice = std::getenv("RUNNER_SCRIPTED_KERNELS");
  const std::string kernels = choice ? choice : "";
  if (kernels == "aten") return {};
  if (!kernels.empty() && kernels != "runner")
    throw ConfigError("RUNNER_SCRIPTED_KERNELS=" + kernels +
                      ": expected runner (the default) or aten; unset it or set one of them");
  return rewrite_to_runner_kernels(script);
}

}  // namespace runner::models
