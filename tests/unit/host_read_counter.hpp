#pragma once
// Counts the host reads of device values while it lives: Tensor::item and friends end in
// aten::_local_scalar_dense (or aten::item). Reads inside the fused optimizer kernels do not
// count: on CPU they read their lr tensor with item() (host memory), their CUDA twins read it on
// the device.

#include <atomic>
#include <string>

#include <ATen/record_function.h>

namespace runner::test {

class HostReadCounter {
 public:
  HostReadCounter() {
    reads_ = 0;
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(
            [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
              if (fused(fn)) ++inside_fused_;
              const std::string name = fn.name();
              if (inside_fused_ == 0 &&
                  (name == "aten::_local_scalar_dense" || name == "aten::item"))
                ++reads_;
              return nullptr;
            },
            [](const at::RecordFunction& fn, at::ObserverContext*) {
              if (fused(fn)) --inside_fused_;
            })
            .scopes({at::RecordScope::FUNCTION}));
  }
  ~HostReadCounter() { at::removeCallback(handle_); }
  HostReadCounter(const HostReadCounter&) = delete;
  HostReadCounter& operator=(const HostReadCounter&) = delete;

  /// Reads since construction.
  static int reads() { return reads_.load(); }

 private:
  static bool fused(const at::RecordFunction& fn) {
    return std::string(fn.name()).rfind("aten::_fused_", 0) == 0;
  }
  static inline std::atomic<int> reads_{0};
  static inline thread_local int inside_fused_ = 0;
  at::CallbackHandle handle_;
};

}  // namespace runner::test
