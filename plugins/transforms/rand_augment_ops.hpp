#pragma once
// The image operations of timm's RandAugment (timm/data/auto_augment.py) on u8 images of 1 or 3
// channels, with Pillow's arithmetic (timm applies them to PIL images): its LUTs, its blend of
// ImageEnhance, its SMOOTH filter and its affine transform with bilinear or bicubic sampling
// and a fill colour, so that runner's results equal timm's.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace runner::data::rand_augment {

/// timm's _RAND_TRANSFORMS order (the Increasing variants at the same index).
enum class Op {
  kAutoContrast,
  kEqualize,
  kInvert,
  kRotate,
  kPosterize,
  kSolarize,
  kSolarizeAdd,
  kColor,
  kContrast,
  kBrightness,
  kSharpness,
  kShearX,
  kShearY,
  kTranslateXRel,
  kTranslateYRel,
};
inline constexpr int kOpCount = 15;

/// timm's name of `op` (the Increasing form where `increasing` and timm has one).
std::string op_name(Op op, bool increasing);

/// Whether timm's level_to_arg of `op` negates its argument at random (one coin drawn).
bool takes_sign(Op op, bool increasing);
/// Whether `op` is an affine transform (one interpolation choice drawn).
bool is_affine(Op op);

/// timm's level_to_arg: the op's argument at `magnitude` (0..10); `negate`: the random sign's
/// coin said negate.
double op_argument(Op op, bool increasing, double magnitude, bool negate);

/// The affine ops' matrix as Pillow's Image.transform takes it (output pixel centre -> input
/// point); nullopt for the other ops and for a rotation by a multiple of 360 degrees (Pillow
/// returns the image as it is).
std::optional<std::array<double, 6>> affine_matrix(Op op, double argument, int64_t rows,
                                                   int64_t cols);

/// Applies `op` with `argument` to `image` (u8, 1 or 3 channels, RGB order), as timm's
/// NAME_TO_OP does on a PIL image. `bicubic`: the affine ops' resampling (else bilinear);
/// `fill`: the colour of what an affine op uncovers.
cv::Mat apply_op(const cv::Mat& image, Op op, double argument, bool bicubic,
                 const std::array<double, 3>& fill);

}  // namespace runner::data::rand_augment
