#include "rand_augment_ops.hpp"

#include <algorithm>
#include <cmath>

#include "runner/error.hpp"

namespace runner::data::rand_augment {
namespace {

// One 256-entry table per channel applied to the image (Pillow's Image.point).
cv::Mat apply_luts(const cv::Mat& image, const std::vector<std::array<uint8_t, 256>>& luts) {
  cv::Mat out = image.clone();
  const int c = image.channels();
  for (int y = 0; y < out.rows; ++y) {
    uint8_t* row = out.ptr<uint8_t>(y);
    for (int x = 0; x < out.cols * c; ++x) row[x] = luts[static_cast<size_t>(x % c)][row[x]];
  }
  return out;
}

std::vector<std::array<uint8_t, 256>> same_lut(const cv::Mat& image,
                                               const std::array<uint8_t, 256>& lut) {
  return std::vector<std::array<uint8_t, 256>>(static_cast<size_t>(image.channels()), lut);
}

std::vector<std::array<int64_t, 256>> histograms(const cv::Mat& image) {
  const int c = image.channels();
  std::vector<std::array<int64_t, 256>> h(static_cast<size_t>(c));
  for (auto& one : h) one.fill(0);
  for (int y = 0; y < image.rows; ++y) {
    const uint8_t* row = image.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols * c; ++x) ++h[static_cast<size_t>(x % c)][row[x]];
  }
  return h;
}

// ImageOps.autocontrast (cutoff 0): each channel stretched from its lowest to its highest value.
cv::Mat auto_contrast(const cv::Mat& image) {
  std::vector<std::array<uint8_t, 256>> luts;
  for (const auto& h : histograms(image)) {
    std::array<uint8_t, 256> lut{};
    int lo = 0, hi = 255;
    while (lo < 256 && h[static_cast<size_t>(lo)] == 0) ++lo;
    while (hi >= 0 && h[static_cast<size_t>(hi)] == 0) --hi;
    for (int i = 0; i < 256; ++i) {
      if (hi <= lo) {
        lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
        continue;
      }
      const double scale = 255.0 / (hi - lo), offset = -lo * scale;
      const int v = static_cast<int>(i * scale + offset);  // Python's int(): toward zero
      lut[static_cast<size_t>(i)] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
    luts.push_back(lut);
  }
  return apply_luts(image, luts);
}

// ImageOps.equalize: Pillow's integer histogram equalisation per channel.
cv::Mat equalize(const cv::Mat& image) {
  std::vector<std::array<uint8_t, 256>> luts;
  for (const auto& h : histograms(image)) {
    std::array<uint8_t, 256> lut{};
    for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
    int64_t total = 0, last = 0, nonzero = 0;
    for (int i = 0; i < 256; ++i)
      if (h[static_cast<size_t>(i)])
        total += h[static_cast<size_t>(i)], last = h[static_cast<size_t>(i)], ++nonzero;
    if (nonzero > 1) {
      const int64_t step = (total - last) / 255;
      if (step != 0) {
        int64_t n = step / 2;
        for (int i = 0; i < 256; ++i) {
          lut[static_cast<size_t>(i)] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
          n += h[static_cast<size_t>(i)];
        }
      }
    }
    luts.push_back(lut);
  }
  return apply_luts(image, luts);
}

// Image.blend(degenerate, image, factor) on u8: Pillow's float interpolation, truncated, and
// clipped when the factor extrapolates.
cv::Mat blend(const cv::Mat& degenerate, const cv::Mat& image, double factor) {
  const float alpha = static_cast<float>(factor);
  cv::Mat out(image.size(), image.type());
  const bool inside = alpha >= 0 && alpha <= 1.0f;
  for (int y = 0; y < image.rows; ++y) {
    const uint8_t* a = degenerate.ptr<uint8_t>(y);
    const uint8_t* b = image.ptr<uint8_t>(y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols * image.channels(); ++x) {
      const float v = static_cast<float>(static_cast<int>(a[x])) +
                      alpha * static_cast<float>(static_cast<int>(b[x]) - static_cast<int>(a[x]));
      if (inside)
        o[x] = static_cast<uint8_t>(v);
      else
        o[x] = v <= 0.0f ? 0 : v >= 255.0f ? 255 : static_cast<uint8_t>(v);
    }
  }
  return out;
}

// Pillow's RGB -> L: (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16.
cv::Mat to_gray(const cv::Mat& image) {
  if (image.channels() == 1) return image.clone();
  cv::Mat gray(image.size(), CV_8UC1);
  for (int y = 0; y < image.rows; ++y) {
    const uint8_t* in = image.ptr<uint8_t>(y);
    uint8_t* out = gray.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols; ++x)
      out[x] = static_cast<uint8_t>(
          (in[3 * x] * 19595 + in[3 * x + 1] * 38470 + in[3 * x + 2] * 7471 + 0x8000) >> 16);
  }
  return gray;
}

cv::Mat gray_like(const cv::Mat& gray, const cv::Mat& image) {
  if (image.channels() == 1) return gray;
  cv::Mat out;
  cv::merge(std::vector<cv::Mat>{gray, gray, gray}, out);
  return out;
}

// ImageFilter.SMOOTH: 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13 in float, +0.5, truncated; the
// one-pixel border kept (Pillow's ImagingFilter3x3).
cv::Mat smooth(const cv::Mat& image) {
  cv::Mat out = image.clone();
  const int c = image.channels();
  const float k[9] = {1 / 13.0f, 1 / 13.0f, 1 / 13.0f, 1 / 13.0f, 5 / 13.0f,
                      1 / 13.0f, 1 / 13.0f, 1 / 13.0f, 1 / 13.0f};
  for (int y = 1; y < image.rows - 1; ++y) {
    const uint8_t* up = image.ptr<uint8_t>(y - 1);
    const uint8_t* mid = image.ptr<uint8_t>(y);
    const uint8_t* down = image.ptr<uint8_t>(y + 1);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 1; x < image.cols - 1; ++x)
      for (int b = 0; b < c; ++b) {
        const int i = x * c + b;
        // Pillow's order: the row below with kernel[0..2], this row [3..5], the row above [6..8].
        float ss = 0.5f;
        ss += static_cast<float>(down[i - c]) * k[0] + static_cast<float>(down[i]) * k[1] +
              static_cast<float>(down[i + c]) * k[2];
        ss += static_cast<float>(mid[i - c]) * k[3] + static_cast<float>(mid[i]) * k[4] +
              static_cast<float>(mid[i + c]) * k[5];
        ss += static_cast<float>(up[i - c]) * k[6] + static_cast<float>(up[i]) * k[7] +
              static_cast<float>(up[i + c]) * k[8];
        ss = ss < 0.0f ? 0.0f : ss > 255.0f ? 255.0f : ss;
        o[i] = static_cast<uint8_t>(ss);
      }
  }
  return out;
}

// Image.transform(size, AFFINE, a, resample, fillcolor): output pixel (x, y) samples the input
// at (a0 (x+.5) + a1 (y+.5) + a2, a3 (x+.5) + a4 (y+.5) + a5), Pillow's bilinear or bicubic
// filter with clamped neighbours; a point outside the input keeps the fill colour.
cv::Mat affine(const cv::Mat& image, const std::array<double, 6>& a, bool bicubic,
               const std::array<double, 3>& fill) {
  const int c = image.channels(), w = image.cols, h = image.rows;
  cv::Mat out(image.size(), image.type());
  const auto xclip = [w](int x) { return x < 0 ? 0 : x < w ? x : w - 1; };
  const auto yclip = [h](int y) { return y < 0 ? 0 : y < h ? y : h - 1; };
  for (int y = 0; y < h; ++y) {
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x) {
      const double xo = x + 0.5, yo = y + 0.5;
      double xin = a[0] * xo + a[1] * yo + a[2];
      double yin = a[3] * xo + a[4] * yo + a[5];
      if (xin < 0.0 || xin >= w || yin < 0.0 || yin >= h) {
        for (int b = 0; b < c; ++b)
          o[x * c + b] = static_cast<uint8_t>(fill[static_cast<size_t>(std::min(b, 2))]);
        continue;
      }
      xin -= 0.5;
      yin -= 0.5;
      const int xf = static_cast<int>(std::floor(xin)), yf = static_cast<int>(std::floor(yin));
      const double dx = xin - xf, dy = yin - yf;
      for (int b = 0; b < c; ++b) {
        const auto at = [&](int row, int col) {
          return static_cast<double>(image.ptr<uint8_t>(row)[col * c + b]);
        };
        double v;
        if (!bicubic) {
          const int x0 = xclip(xf), x1 = xclip(xf + 1), y0 = yclip(yf);
          double v1 = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * dx;
          double v2 = v1;
          if (yf + 1 >= 0 && yf + 1 < h)
            v2 = at(yf + 1, x0) + (at(yf + 1, x1) - at(yf + 1, x0)) * dx;
          v = v1 + (v2 - v1) * dy;
          o[x * c + b] = static_cast<uint8_t>(v);
          continue;
        }
        const auto cubic = [](double v1, double v2, double v3, double v4, double d) {
          const double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4,
                       p4 = -v1 + v2 - v3 + v4;
          return p1 + d * (p2 + d * (p3 + d * p4));
        };
        const int xs = xf - 1, ys = yf - 1;
        const int x0 = xclip(xs), x1 = xclip(xs + 1), x2 = xclip(xs + 2), x3 = xclip(xs + 3);
        const auto row = [&](int r) {
          return cubic(at(r, x0), at(r, x1), at(r, x2), at(r, x3), dx);
        };
        const double r1 = row(yclip(ys));
        const double r2 = ys + 1 >= 0 && ys + 1 < h ? row(ys + 1) : r1;
        const double r3 = ys + 2 >= 0 && ys + 2 < h ? row(ys + 2) : r2;
        const double r4 = ys + 3 >= 0 && ys + 3 < h ? row(ys + 3) : r3;
        v = cubic(r1, r2, r3, r4, dy);
        o[x * c + b] = v <= 0.0 ? 0 : v >= 255.0 ? 255 : static_cast<uint8_t>(v);
      }
    }
  }
  return out;
}

double round15(double v) { return std::round(v * 1e15) / 1e15; }  // Python's round(v, 15)

}  // namespace

std::string op_name(Op op, bool increasing) {
  static const char* names[kOpCount] = {"AutoContrast", "Equalize",      "Invert",       "Rotate",
                                        "Posterize",    "Solarize",      "SolarizeAdd",  "Color",
                                        "Contrast",     "Brightness",    "Sharpness",    "ShearX",
                                        "ShearY",       "TranslateXRel", "TranslateYRel"};
  std::string name = names[static_cast<int>(op)];
  if (increasing && (op == Op::kPosterize || op == Op::kSolarize || op == Op::kColor ||
                     op == Op::kContrast || op == Op::kBrightness || op == Op::kSharpness))
    name += "Increasing";
  return name;
}

bool is_affine(Op op) {
  return op == Op::kRotate || op == Op::kShearX || op == Op::kShearY || op == Op::kTranslateXRel ||
         op == Op::kTranslateYRel;
}

bool takes_sign(Op op, bool increasing) {
  if (is_affine(op)) return true;
  const bool enhance =
      op == Op::kColor || op == Op::kContrast || op == Op::kBrightness || op == Op::kSharpness;
  return enhance && increasing;
}

double op_argument(Op op, bool increasing, double magnitude, bool negate) {
  const double level = magnitude / 10.0;  // timm's _LEVEL_DENOM
  const double sign = negate ? -1.0 : 1.0;
  switch (op) {
    case Op::kAutoContrast:
    case Op::kEqualize:
    case Op::kInvert:
      return 0;
    case Op::kRotate:
      return sign * level * 30.0;
    case Op::kPosterize: {
      const int bits = static_cast<int>(level * 4);
      return increasing ? 4 - bits : bits;
    }
    case Op::kSolarize: {
      const int thresh = std::min(256, static_cast<int>(level * 256));
      return increasing ? 256 - thresh : thresh;
    }
    case Op::kSolarizeAdd:
      return std::min(128, static_cast<int>(level * 110));
    case Op::kColor:
    case Op::kContrast:
    case Op::kBrightness:
    case Op::kSharpness:
      if (increasing) return std::max(0.1, 1.0 + sign * level * 0.9);
      return level * 1.8 + 0.1;
    case Op::kShearX:
    case Op::kShearY:
      return sign * level * 0.3;
    case Op::kTranslateXRel:
    case Op::kTranslateYRel:
      return sign * level * 0.45;  // timm's translate_pct
  }
  return 0;
}

std::optional<std::array<double, 6>> affine_matrix(Op op, double arg, int64_t rows, int64_t cols) {
  switch (op) {
    case Op::kRotate: {
      double degrees = std::fmod(arg, 360.0);
      if (degrees < 0) degrees += 360.0;
      if (degrees == 0) return std::nullopt;  // Pillow's fast path: the image as it is
      const double angle = -degrees * M_PI / 180.0;
      const double cx = static_cast<double>(cols) / 2.0, cy = static_cast<double>(rows) / 2.0;
      std::array<double, 6> m = {round15(std::cos(angle)),  round15(std::sin(angle)), 0.0,
                                 round15(-std::sin(angle)), round15(std::cos(angle)), 0.0};
      m[2] = m[0] * -cx + m[1] * -cy + m[2] + cx;
      m[5] = m[3] * -cx + m[4] * -cy + m[5] + cy;
      return m;
    }
    case Op::kShearX:
      return std::array<double, 6>{1, arg, 0, 0, 1, 0};
    case Op::kShearY:
      return std::array<double, 6>{1, 0, 0, arg, 1, 0};
    case Op::kTranslateXRel:
      return std::array<double, 6>{1, 0, arg * static_cast<double>(cols), 0, 1, 0};
    case Op::kTranslateYRel:
      return std::array<double, 6>{1, 0, 0, 0, 1, arg * static_cast<double>(rows)};
    default:
      return std::nullopt;
  }
}

cv::Mat apply_op(const cv::Mat& image, Op op, double arg, bool bicubic,
                 const std::array<double, 3>& fill) {
  if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3))
    throw DataError(
        "transform rand_augment: it takes u8 images of 1 or 3 channels (timm applies it to PIL "
        "images): list it before normalize in data.train_transforms");
  std::array<uint8_t, 256> lut{};
  switch (op) {
    case Op::kAutoContrast:
      return auto_contrast(image);
    case Op::kEqualize:
      return equalize(image);
    case Op::kInvert:
      for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(255 - i);
      return apply_luts(image, same_lut(image, lut));
    case Op::kPosterize: {
      const int bits = static_cast<int>(arg);
      if (bits >= 8) return image.clone();
      const int mask = ~((1 << (8 - bits)) - 1);
      for (int i = 0; i < 256; ++i) lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i & mask);
      return apply_luts(image, same_lut(image, lut));
    }
    case Op::kSolarize:
      for (int i = 0; i < 256; ++i)
        lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i < arg ? i : 255 - i);
      return apply_luts(image, same_lut(image, lut));
    case Op::kSolarizeAdd:
      for (int i = 0; i < 256; ++i)
        lut[static_cast<size_t>(i)] =
            static_cast<uint8_t>(i < 128 ? std::min(255, i + static_cast<int>(arg)) : i);
      return apply_luts(image, same_lut(image, lut));
    case Op::kColor:
      return blend(gray_like(to_gray(image), image), image, arg);
    case Op::kContrast: {
      const cv::Mat gray = to_gray(image);
      double sum = 0;
      for (int y = 0; y < gray.rows; ++y)
        for (int x = 0; x < gray.cols; ++x) sum += gray.ptr<uint8_t>(y)[x];
      const int mean = static_cast<int>(sum / static_cast<double>(gray.total()) + 0.5);
      return blend(cv::Mat(image.size(), image.type(), cv::Scalar::all(mean)), image, arg);
    }
    case Op::kBrightness:
      return blend(cv::Mat::zeros(image.size(), image.type()), image, arg);
    case Op::kSharpness:
      return blend(smooth(image), image, arg);
    case Op::kRotate:
    case Op::kShearX:
    case Op::kShearY:
    case Op::kTranslateXRel:
    case Op::kTranslateYRel: {
      const auto m = affine_matrix(op, arg, image.rows, image.cols);
      return m ? affine(image, *m, bicubic, fill) : image.clone();
    }
  }
  return image.clone();
}

}  // namespace runner::data::rand_augment
