#include "transform_params.hpp"

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include "runner/error.hpp"

namespace runner::data {

at::Tensor sample_mask(const at::Tensor& draws_column, const at::Tensor& like) {
  return draws_column.ne(0).to(like.device()).view({-1, 1, 1, 1});
}

int interpolation_flag(const std::string& name) {
  if (name == "nearest") return cv::INTER_NEAREST;
  if (name == "linear") return cv::INTER_LINEAR;
  if (name == "cubic") return cv::INTER_CUBIC;
  if (name == "area") return cv::INTER_AREA;
  if (name == "lanczos4") return cv::INTER_LANCZOS4;
  if (name == "linear_exact") return cv::INTER_LINEAR_EXACT;
  if (name == "nearest_exact") return cv::INTER_NEAREST_EXACT;
  throw ConfigError("unknown interpolation '" + name +
                    "' (use nearest, linear, cubic, area, lanczos4, linear_exact, nearest_exact)");
}

nlohmann::json interpolation_schema(const std::string& default_name) {
  return {
      {"type", "string"},
      {"enum", {"nearest", "linear", "cubic", "area", "lanczos4", "linear_exact", "nearest_exact"}},
      {"default", default_name},
      {"description", "OpenCV interpolation (cv::INTER_<NAME>)."}};
}

int border_flag(const std::string& name) {
  if (name == "constant") return cv::BORDER_CONSTANT;
  if (name == "replicate") return cv::BORDER_REPLICATE;
  if (name == "reflect") return cv::BORDER_REFLECT;
  if (name == "wrap") return cv::BORDER_WRAP;
  if (name == "reflect_101") return cv::BORDER_REFLECT_101;
  throw ConfigError("unknown border mode '" + name +
                    "' (use constant, replicate, reflect, wrap, reflect_101)");
}

}  // namespace runner::data
