// Transform `shift_scale_rotate`: albumentations' ShiftScaleRotate (one affine warp).

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include "resize_matrix.hpp"
#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

/// The five numbers one sample draws: coin, angle, scale, dx, dy.
constexpr int kDraws = 5;

/// The forward warp of one sample: getRotationMatrix2D about the centre, then the shift.
cv::Mat warp_matrix(int64_t rows, int64_t cols, const double* drawn) {
  const cv::Point2f center(cols / 2.0f, rows / 2.0f);
  cv::Mat m = cv::getRotationMatrix2D(center, drawn[1], drawn[2]);
  m.at<double>(0, 2) += drawn[3] * cols;
  m.at<double>(1, 2) += drawn[4] * rows;
  return m;
}

class ShiftScaleRotateTransform : public Transform {
 public:
  ShiftScaleRotateTransform(double shift, double scale, double rotate, int interpolation,
                            int border, double value, double p)
      : shift_(shift),
        scale_(scale),
        rotate_(rotate),
        interpolation_(interpolation),
        border_(border),
        value_(value),
        p_(p) {}

  void apply(cv::Mat& image, Rng& rng) const override {
    double drawn[kDraws];
    draw_all(rng, drawn);
    if (drawn[0] == 0) return;
    cv::Mat out;
    cv::warpAffine(image, out, warp_matrix(image.rows, image.cols, drawn), image.size(),
                   interpolation_, border_, cv::Scalar::all(value_));
    image = out;
  }

 protected:
  void draw_all(Rng& rng, double* out) const {
    out[0] = draw_coin(rng, p_) ? 1 : 0;
    out[1] = rng.uniform(-rotate_, rotate_);
    out[2] = rng.uniform(1.0 - scale_, 1.0 + scale_);
    out[3] = rng.uniform(-shift_, shift_);
    out[4] = rng.uniform(-shift_, shift_);
  }

  double shift_, scale_, rotate_;
  int interpolation_, border_;
  double value_, p_;
};

/// The per-sample transform for parameters grid_sample cannot reproduce.
class ShiftScaleRotateWithoutBatchedForm : public ShiftScaleRotateTransform,
                                           public WithoutBatchedForm {
 public:
  ShiftScaleRotateWithoutBatchedForm(std::string why, double shift, double scale, double rotate,
                                     int interpolation, int border, double value, double p)
      : ShiftScaleRotateTransform(shift, scale, rotate, interpolation, border, value, p),
        why_(std::move(why)) {}
  std::string why_not_batched() const override { return why_; }

 private:
  std::string why_;
};

/// The batched form: each sample's inverse warp as a sampling grid for grid_sample, which
/// interpolates as warpAffine does (bilinear, bicubic with a = -0.75, nearest) but at exact
/// coordinates, where warpAffine quantizes them to 1/32 pixel: a sharp edge may differ by a few
/// levels. Border modes: replicate is grid_sample's border, reflect its reflection about the
/// pixel edges, reflect_101 its reflection about the edge pixels' centres (align_corners), and
/// constant zeros plus value x the share of each output drawn from outside (exact, as the
/// interpolations are linear in the pixel values).
class BatchedShiftScaleRotate : public ShiftScaleRotateTransform, public BatchedTransform {
 public:
  using ShiftScaleRotateTransform::ShiftScaleRotateTransform;

  int draws_per_sample() const override { return kDraws; }
  void draw(Rng& rng, int64_t /*height*/, int64_t /*width*/, double* out) const override {
    draw_all(rng, out);
  }

  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    const int64_t rows = images.size(2), cols = images.size(3);
    const auto drawn = draws.accessor<double, 2>();
    std::vector<int64_t> warped;
    std::vector<double> inverses;  // [warped, 2, 3]: output pixel -> source pixel
    for (int64_t b = 0; b < images.size(0); ++b) {
      if (drawn[b][0] == 0) continue;
      double sample[kDraws];
      for (int k = 0; k < kDraws; ++k) sample[k] = drawn[b][k];
      cv::Mat inverse;
      cv::invertAffineTransform(warp_matrix(rows, cols, sample), inverse);
      inverses.insert(inverses.end(), inverse.ptr<double>(0), inverse.ptr<double>(0) + 6);
      warped.push_back(b);
    }
    if (warped.empty()) return images;
    const auto count = static_cast<int64_t>(warped.size());
    const auto device = images.device();
    const at::Tensor which = at::tensor(warped, at::kLong).to(device);
    const at::Tensor inverse =
        at::from_blob(inverses.data(), {count, 2, 3}, at::kDouble).to(device, at::kFloat);
    // Output pixel centres (x, y, 1) mapped to source pixel coordinates, then to grid_sample's
    // [-1, 1]; align_corners puts -1 and 1 on the edge pixels' centres, where reflect_101
    // reflects.
    const auto on = at::TensorOptions().dtype(at::kFloat).device(device);
    const at::Tensor ys = at::arange(rows, on).view({rows, 1}).expand({rows, cols});
    const at::Tensor xs = at::arange(cols, on).view({1, cols}).expand({rows, cols});
    const at::Tensor centres = at::stack({xs, ys, at::ones({rows, cols}, on)}, -1);
    const at::Tensor source =
        at::matmul(centres.view({1, rows * cols, 3}), inverse.transpose(1, 2));
    const bool align_corners = border_ == cv::BORDER_REFLECT_101;
    const at::Tensor size = at::tensor({static_cast<float>(cols), static_cast<float>(rows)}, on);
    const at::Tensor grid =
        (align_corners ? source * 2 / (size - 1).clamp_min(1) - 1 : (source * 2 + 1) / size - 1)
            .view({count, rows, cols, 2});
    const at::Tensor input = images.index_select(0, which).to(at::kFloat);
    at::Tensor out = at::grid_sampler(input, grid, grid_mode(), grid_padding(), align_corners);
    if (border_ == cv::BORDER_CONSTANT && value_ != 0) {
      const at::Tensor inside = at::grid_sampler(at::ones({count, 1, rows, cols}, on), grid,
                                                 grid_mode(), grid_padding(), align_corners);
      out = out + (1 - inside) * value_;
    }
    return images.clone().index_copy_(0, which, as_input_type(out, images));
  }

 private:
  /// grid_sample's interpolation: 0 bilinear, 1 nearest, 2 bicubic (warpAffine does area as
  /// linear).
  int64_t grid_mode() const {
    if (interpolation_ == cv::INTER_NEAREST) return 1;
    if (interpolation_ == cv::INTER_CUBIC) return 2;
    return 0;
  }
  /// grid_sample's padding: 0 zeros, 1 border, 2 reflection.
  int64_t grid_padding() const {
    if (border_ == cv::BORDER_CONSTANT) return 0;
    if (border_ == cv::BORDER_REPLICATE) return 1;
    return 2;
  }
};

std::shared_ptr<Transform> make_shift_scale_rotate(const nlohmann::json& params) {
  const double shift = params.at("shift_limit").get<double>();
  const double scale = params.at("scale_limit").get<double>();
  const double rotate = params.at("rotate_limit").get<double>();
  const std::string interpolation = params.at("interpolation").get<std::string>();
  const std::string border = params.at("border_mode").get<std::string>();
  const double value = params.at("value").get<double>();
  const double p = params.at("p").get<double>();
  std::string why;
  if (border == "wrap") why = "border_mode wrap (grid_sample has no wrapping border)";
  if (interpolation != "nearest" && interpolation != "linear" && interpolation != "cubic" &&
      interpolation != "area")
    why = "interpolation " + interpolation + " (grid_sample has nearest, linear and cubic)";
  if (!why.empty())
    return std::make_shared<ShiftScaleRotateWithoutBatchedForm>(why, shift, scale, rotate,
                                                                interpolation_flag(interpolation),
                                                                border_flag(border), value, p);
  return std::make_shared<BatchedShiftScaleRotate>(
      shift, scale, rotate, interpolation_flag(interpolation), border_flag(border), value, p);
}

}  // namespace

void register_shift_scale_rotate(Registry<TransformFactory>& registry) {
  registry.add(
      "shift_scale_rotate", make_shift_scale_rotate,
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "albumentations ShiftScaleRotate. Random draws, always all in this order: coin, angle = "
        "U(-rotate_limit, rotate_limit) degrees (counter-clockwise), s = U(1-scale_limit, "
        "1+scale_limit), dx = U(-shift_limit, shift_limit), dy = likewise. M = "
        "getRotationMatrix2D((W/2, H/2), angle, s) with (dx*W, dy*H) added to its translation; "
        "out = warpAffine(in, M, same size, interpolation, border_mode, value). Batched form "
        "(data.device cpu/cuda): grid_sample at exact coordinates (warpAffine rounds them to 1/32 "
        "pixel, so sharp edges may differ by a few levels); none for border_mode wrap or "
        "interpolation lanczos4, linear_exact, nearest_exact."},
       {"properties",
        {{"shift_limit",
          {{"type", "number"},
           {"minimum", 0},
           {"default", 0.0625},
           {"description", "Largest shift as a fraction of width/height."}}},
         {"scale_limit",
          {{"type", "number"},
           {"minimum", 0},
           {"maximum", 1},
           {"default", 0.1},
           {"description", "Scale factor drawn from [1 - l, 1 + l]."}}},
         {"rotate_limit",
          {{"type", "number"},
           {"minimum", 0},
           {"default", 45},
           {"description", "Largest rotation in degrees."}}},
         {"interpolation", interpolation_schema("linear")},
         {"border_mode",
          {{"type", "string"},
           {"enum", {"constant", "replicate", "reflect", "wrap", "reflect_101"}},
           {"default", "reflect_101"},
           {"description", "How pixels outside the image are filled (cv::BORDER_<MODE>)."}}},
         {"value",
          {{"type", "number"},
           {"default", 0},
           {"description", "Fill value for border_mode constant."}}},
         {"p", schemas::transform_p(0.5)}}}},
      "Random shift, scale and rotation in one affine warp");
}

}  // namespace runner::data
