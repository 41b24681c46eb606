#include "rand_augment_batched.hpp"

#include <ATen/ATen.h>

namespace runner::data::rand_augment {
namespace {

at::Tensor column(const std::vector<double>& values, const at::Tensor& like, at::ScalarType type) {
  return at::tensor(values, at::kDouble).to(like.device(), type).view({-1, 1, 1});
}

// Pillow's RGB -> L, (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16, as [n, 1, H, W] int64.
at::Tensor gray_of(const at::Tensor& x) {
  const at::Tensor v = x.to(at::kLong);
  if (x.size(1) == 1) return v;
  const at::Tensor weighted =
      v.select(1, 0) * 19595 + v.select(1, 1) * 38470 + v.select(1, 2) * 7471 + 0x8000;
  return at::bitwise_right_shift(weighted, 16).unsqueeze(1);
}

// Image.blend(degenerate, image, alpha) on u8: a + alpha (b - a) in float32, clipped, truncated.
at::Tensor blend(const at::Tensor& degenerate, const at::Tensor& image, const at::Tensor& alpha) {
  const at::Tensor a = degenerate.to(at::kFloat), b = image.to(at::kFloat);
  return (a + alpha.view({-1, 1, 1, 1}) * (b - a)).clamp(0, 255).trunc().to(at::kByte);
}

// The table ops (AutoContrast, Equalize, Invert, Posterize, Solarize, SolarizeAdd, Brightness,
// Contrast) as one 256-entry table per image and channel, gathered.
at::Tensor table_ops(const at::Tensor& x, const std::vector<SampleOp>& ops) {
  const int64_t n = x.size(0), c = x.size(1);
  std::vector<double> codes, arguments;
  for (const auto& o : ops) {
    codes.push_back(static_cast<int>(o.op));
    arguments.push_back(o.argument);
  }
  const at::Tensor code = column(codes, x, at::kLong), arg = column(arguments, x, at::kDouble);
  const at::Tensor alpha = column(arguments, x, at::kFloat);  // Pillow's float(factor)
  const at::Tensor pixels = x.reshape({n, c, -1}).to(at::kLong);
  const auto longs = at::TensorOptions().dtype(at::kLong).device(x.device());
  const at::Tensor i = at::arange(256, longs).view({1, 1, 256});
  const at::Tensor fi = i.to(at::kFloat), di = i.to(at::kDouble);
  const auto is = [&](Op op) { return code == static_cast<int64_t>(op); };
  at::Tensor table = i.expand({n, c, 256});

  // AutoContrast: each channel stretched from its lowest to its highest value (Python's int()).
  const at::Tensor lo = std::get<0>(pixels.min(2, true)), hi = std::get<0>(pixels.max(2, true));
  const at::Tensor spread = hi > lo;
  const at::Tensor scale = 255.0 / at::where(spread, hi - lo, 1).to(at::kDouble);
  const at::Tensor offset = (-lo).to(at::kDouble) * scale;
  const at::Tensor stretched = (di * scale + offset).trunc().clamp(0, 255).to(at::kLong);
  table = at::where(is(Op::kAutoContrast) & spread, stretched, table);

  // Equalize: Pillow's integer equalisation of each channel's histogram.
  const at::Tensor histogram =
      at::zeros({n, c, 256}, longs).scatter_add_(2, pixels, at::ones_like(pixels));
  const at::Tensor total = histogram.sum(2, true);
  const at::Tensor last = histogram.gather(2, hi);
  const at::Tensor step = at::div(total - last, 255, "floor");
  const at::Tensor equalizes = histogram.gt(0).sum(2, true).gt(1) & step.ne(0);
  const at::Tensor safe_step = at::where(step.ne(0), step, 1);
  const at::Tensor below = histogram.cumsum(2) - histogram;  // pixels under each value
  const at::Tensor equalized =
      at::div(at::div(step, 2, "floor") + below, safe_step, "floor").clamp_max(255);
  table = at::where(is(Op::kEqualize) & equalizes, equalized, table);

  table = at::where(is(Op::kInvert), 255 - i, table);

  // Posterize: bits = argument; 8 or more keeps the image.
  const at::Tensor bits = arg.to(at::kLong);
  const at::Tensor mask = -at::pow(2, (8 - bits).clamp_min(0));
  table = at::where(is(Op::kPosterize) & bits.lt(8), at::bitwise_and(i, mask), table);

  table = at::where(is(Op::kSolarize), at::where(di < arg, i, 255 - i), table);
  const at::Tensor added = (i + arg.to(at::kLong)).clamp_max(255);
  table = at::where(is(Op::kSolarizeAdd), at::where(i < 128, added, i), table);

  // Brightness: blend with black; Contrast: blend with the grey image's rounded mean.
  const auto blended = [&](const at::Tensor& a) {
    return (a + alpha * (fi - a)).clamp(0, 255).trunc().to(at::kLong);
  };
  table = at::where(is(Op::kBrightness), blended(at::zeros_like(alpha)), table);
  const at::Tensor gray = gray_of(x);
  const double count = static_cast<double>(gray.size(2) * gray.size(3));
  const at::Tensor mean =
      (gray.sum({1, 2, 3}).to(at::kDouble) / count + 0.5).trunc().to(at::kFloat).view({n, 1, 1});
  table = at::where(is(Op::kContrast), blended(mean), table);

  return table.gather(2, pixels).to(at::kByte).view_as(x);
}

// ImageFilter.SMOOTH ([1 1 1; 1 5 1; 1 1 1] / 13) in float32 in Pillow's order of sums (the row
// below first), +0.5, truncated; the one-pixel border kept.
at::Tensor smooth(const at::Tensor& x) {
  const int64_t h = x.size(2), w = x.size(3);
  at::Tensor out = x.clone();
  if (h < 3 || w < 3) return out;
  const at::Tensor f = x.to(at::kFloat);
  const auto tap = [&](int64_t dy, int64_t dx) {
    return f.slice(2, 1 + dy, h - 1 + dy).slice(3, 1 + dx, w - 1 + dx);
  };
  const at::Tensor one = at::scalar_tensor(1 / 13.0f, f.options());
  const at::Tensor five = at::scalar_tensor(5 / 13.0f, f.options());
  const auto row = [&](int64_t dy, const at::Tensor& middle) {
    return (tap(dy, -1) * one + tap(dy, 0) * middle) + tap(dy, 1) * one;
  };
  const at::Tensor ss = ((row(1, one) + 0.5f) + row(0, five)) + row(-1, one);
  out.slice(2, 1, h - 1).slice(3, 1, w - 1).copy_(ss.clamp(0, 255).trunc());
  return out;
}

// Pillow's cubic through four taps at fraction d (its bicubic filter's polynomial).
at::Tensor cubic(const at::Tensor& v1, const at::Tensor& v2, const at::Tensor& v3,
                 const at::Tensor& v4, const at::Tensor& d) {
  const at::Tensor p2 = -v1 + v3;
  const at::Tensor p3 = ((2 * (v1 - v2)) + v3) - v4;
  const at::Tensor p4 = ((-v1 + v2) - v3) + v4;
  return v2 + d * (p2 + d * (p3 + d * p4));
}

// Image.transform(AFFINE) of each sample with its matrix (`matrices` [n, 6]), all bilinear or
// all bicubic, in float64 with Pillow's clamped neighbours; outside points take `fill`.
at::Tensor affine(const at::Tensor& x, const std::vector<double>& matrices, bool bicubic,
                  const std::array<double, 3>& fill) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const auto doubles = at::TensorOptions().dtype(at::kDouble).device(x.device());
  const at::Tensor m = at::tensor(matrices, at::kDouble).to(x.device()).view({n, 6});
  const auto entry = [&](int64_t k) { return m.select(1, k).view({n, 1, 1}); };
  const at::Tensor xo = (at::arange(w, doubles) + 0.5).view({1, 1, w});
  const at::Tensor yo = (at::arange(h, doubles) + 0.5).view({1, h, 1});
  at::Tensor xin = (entry(0) * xo + entry(1) * yo) + entry(2);
  at::Tensor yin = (entry(3) * xo + entry(4) * yo) + entry(5);
  const at::Tensor outside = ((xin < 0) | (xin >= w) | (yin < 0) | (yin >= h)).unsqueeze(1);
  xin = xin - 0.5;
  yin = yin - 0.5;
  const at::Tensor xf = xin.floor(), yf = yin.floor();
  const at::Tensor dx = (xin - xf).unsqueeze(1), dy = (yin - yf).unsqueeze(1);
  const at::Tensor xi = xf.to(at::kLong), yi = yf.to(at::kLong);
  const at::Tensor source = x.to(at::kDouble).reshape({n, c, h * w});
  const auto at_ = [&](const at::Tensor& row, const at::Tensor& col) {
    const at::Tensor index = (row * w + col).view({n, 1, h * w}).expand({n, c, h * w});
    return source.gather(2, index).view({n, c, h, w});
  };
  const auto clip_x = [&](const at::Tensor& t) { return t.clamp(0, w - 1); };
  const auto clip_y = [&](const at::Tensor& t) { return t.clamp(0, h - 1); };
  const auto in_rows = [&](const at::Tensor& t) { return ((t >= 0) & (t < h)).unsqueeze(1); };
  at::Tensor v;
  if (!bicubic) {
    const at::Tensor x0 = clip_x(xi), x1 = clip_x(xi + 1), y0 = clip_y(yi), y1 = yi + 1;
    const at::Tensor a0 = at_(y0, x0);
    const at::Tensor v1 = a0 + (at_(y0, x1) - a0) * dx;
    const at::Tensor b0 = at_(clip_y(y1), x0);
    const at::Tensor v2 = at::where(in_rows(y1), b0 + (at_(clip_y(y1), x1) - b0) * dx, v1);
    v = v1 + (v2 - v1) * dy;
  } else {
    const at::Tensor xs = xi - 1, ys = yi - 1;
    const at::Tensor x0 = clip_x(xs), x1 = clip_x(xs + 1), x2 = clip_x(xs + 2), x3 = clip_x(xs + 3);
    const auto row = [&](const at::Tensor& r) {
      return cubic(at_(r, x0), at_(r, x1), at_(r, x2), at_(r, x3), dx);
    };
    const at::Tensor r1 = row(clip_y(ys));
    const at::Tensor r2 = at::where(in_rows(ys + 1), row(clip_y(ys + 1)), r1);
    const at::Tensor r3 = at::where(in_rows(ys + 2), row(clip_y(ys + 2)), r2);
    const at::Tensor r4 = at::where(in_rows(ys + 3), row(clip_y(ys + 3)), r3);
    v = cubic(r1, r2, r3, r4, dy);
  }
  std::vector<double> colour;
  for (int64_t b = 0; b < c; ++b)
    colour.push_back(fill[static_cast<size_t>(std::min<int64_t>(b, 2))]);
  const at::Tensor fill_colour = at::tensor(colour, at::kDouble).to(x.device()).view({1, c, 1, 1});
  return at::where(outside, fill_colour, v.clamp(0, 255)).trunc().to(at::kByte);
}

bool is_table_op(Op op) { return op != Op::kColor && op != Op::kSharpness && !is_affine(op); }

}  // namespace

at::Tensor apply_ops(const at::Tensor& images, const std::vector<SampleOp>& ops,
                     const std::array<double, 3>& fill) {
  const int64_t rows = images.size(2), cols = images.size(3);
  // The samples of each kind of work: tables, Color, Sharpness, bilinear and bicubic affines.
  std::vector<int64_t> tables, colours, sharpens, bilinears, bicubics;
  std::vector<SampleOp> table_samples;
  std::vector<double> colour_alphas, sharpen_alphas, bilinear_matrices, bicubic_matrices;
  for (size_t s = 0; s < ops.size(); ++s) {
    const SampleOp& o = ops[s];
    if (!o.applied) continue;
    const auto sample = static_cast<int64_t>(s);
    if (is_table_op(o.op)) {
      tables.push_back(sample);
      table_samples.push_back(o);
    } else if (o.op == Op::kColor) {
      colours.push_back(sample);
      colour_alphas.push_back(o.argument);
    } else if (o.op == Op::kSharpness) {
      sharpens.push_back(sample);
      sharpen_alphas.push_back(o.argument);
    } else if (const auto m = affine_matrix(o.op, o.argument, rows, cols)) {
      (o.bicubic ? bicubics : bilinears).push_back(sample);
      auto& matrices = o.bicubic ? bicubic_matrices : bilinear_matrices;
      matrices.insert(matrices.end(), m->begin(), m->end());
    }
  }
  at::Tensor out = images;
  const auto update = [&](const std::vector<int64_t>& samples, const auto& transform) {
    if (samples.empty()) return;
    const at::Tensor which = at::tensor(samples, at::kLong).to(images.device());
    if (out.is_same(images)) out = images.clone();
    out.index_copy_(0, which, transform(out.index_select(0, which)));
  };
  update(tables, [&](const at::Tensor& x) { return table_ops(x, table_samples); });
  update(colours, [&](const at::Tensor& x) {
    const at::Tensor gray = gray_of(x).to(at::kByte).expand_as(x);
    return blend(gray, x, at::tensor(colour_alphas, at::kDouble).to(x.device(), at::kFloat));
  });
  update(sharpens, [&](const at::Tensor& x) {
    return blend(smooth(x), x, at::tensor(sharpen_alphas, at::kDouble).to(x.device(), at::kFloat));
  });
  update(bilinears, [&](const at::Tensor& x) { return affine(x, bilinear_matrices, false, fill); });
  update(bicubics, [&](const at::Tensor& x) { return affine(x, bicubic_matrices, true, fill); });
  return out;
}

}  // namespace runner::data::rand_augment
