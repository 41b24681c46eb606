#pragma once
// cv::resize as a linear map, for the batched forms of resize and random_resized_crop.

#include <ATen/core/Tensor.h>

namespace runner::data {

/// cv::resize from in_height x in_width to out_height x out_width with `interpolation`, along
/// one axis: [out_height, in_height] for axis 0, [out_width, in_width] for axis 1, float32 on the
/// CPU. Column i is what cv::resize makes of a line of ones at i across the other axis (the other
/// axis' weights sum to 1). Once OpenCV has chosen its method, which depends on both scales (area
/// falls back to a linear method unless both axes shrink), it works axis by axis, so
/// rows x image x columns^T reproduces it on float images to float rounding. Made once per
/// argument set and kept.
at::Tensor resize_matrix(int axis, int in_height, int in_width, int out_height, int out_width,
                         int interpolation);

/// `product` (float32, from `input` through resize matrices) in `input`'s element type: u8
/// rounds and saturates back to u8, as cv::resize does on u8 images (OpenCV works in 11-bit
/// fixed point there, so results may differ from it by one level).
at::Tensor as_input_type(const at::Tensor& product, const at::Tensor& input);

}  // namespace runner::data
