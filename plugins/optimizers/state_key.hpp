#pragma once
// The key of a parameter's entry in a torch::optim::Optimizer's state map: libtorch 1.13 keys by
// the TensorImpl address printed as text, 2.x by the address itself.

#include <sstream>
#include <string>
#include <type_traits>

#include <torch/torch.h>

namespace runner::optim {

template <class Map>
typename Map::key_type state_key(const Map&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<typename Map::key_type>(p.unsafeGetTensorImpl());
  }
}

}  // namespace runner::optim
