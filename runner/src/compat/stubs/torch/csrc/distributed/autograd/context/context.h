#pragma once
// Stand-in for a header Debian's libtorch 1.13 does not install but c10d/reducer.hpp includes.
// Only the two names reducer.hpp mentions; runner never uses distributed autograd. On the
// include path only when the real header is missing (see runner/CMakeLists.txt).

#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
