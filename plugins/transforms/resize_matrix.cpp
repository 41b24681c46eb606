#include "resize_matrix.hpp"

#include <map>
#include <mutex>
#include <tuple>

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

namespace runner::data {

at::Tensor resize_matrix(int axis, int in_height, int in_width, int out_height, int out_width,
                         int interpolation) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, int, int, int>, at::Tensor> made;
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& matrix = made[{axis, in_height, in_width, out_height, out_width, interpolation}];
  if (matrix.defined()) return matrix;
  const int in = axis == 0 ? in_height : in_width, out = axis == 0 ? out_height : out_width;
  matrix = at::empty({out, in}, at::kFloat);
  auto values = matrix.accessor<float, 2>();
  cv::Mat line(in_height, in_width, CV_32F), response;
  for (int i = 0; i < in; ++i) {
    line.setTo(0);
    (axis == 0 ? line.row(i) : line.col(i)).setTo(1);
    cv::resize(line, response, cv::Size(out_width, out_height), 0, 0, interpolation);
    for (int o = 0; o < out; ++o)
      values[o][i] = axis == 0 ? response.at<float>(o, 0) : response.at<float>(0, o);
  }
  return matrix;
}

at::Tensor as_input_type(const at::Tensor& product, const at::Tensor& input) {
  if (input.scalar_type() != at::kByte) return product;
  return product.round().clamp(0, 255).to(at::kByte);
}

}  // namespace runner::data
