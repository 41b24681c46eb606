// Plots: the PNG exists, has the expected size and shows every series in its colour.

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "output/plot.hpp"
#include "runner/error.hpp"

namespace {

namespace fs = std::filesystem;
using runner::output::PlotPanel;
using runner::output::PlotSeries;

/// Pixels of exactly `index`'s series colour in `image`.
int pixels_of_series(const cv::Mat& image, size_t index) {
  const auto bgr = runner::output::series_colour_bgr(index);
  int count = 0;
  for (int r = 0; r < image.rows; ++r)
    for (int c = 0; c < image.cols; ++c) {
      const auto& p = image.at<cv::Vec3b>(r, c);
      count += p[0] == bgr[0] && p[1] == bgr[1] && p[2] == bgr[2];
    }
  return count;
}

// Files stay in the temporary folder for a person to look at.
const fs::path kOut = fs::temp_directory_path() / "runner_plot_test";

TEST(Plot, TrainingCurvesHaveThreePanelsAndEverySeries) {
  PlotSeries train{"train loss", {}, {}}, val{"val loss", {}, {}}, acc{"val accuracy", {}, {}},
      lr{"lr", {}, {}};
  for (int step = 0; step <= 600; step += 5) {
    train.x.push_back(step);
    train.y.push_back(2.3 * std::exp(-step / 150.0) + 0.3 + 0.05 * std::sin(step));
    lr.x.push_back(step);
    lr.y.push_back(0.05 * (1 + std::cos(M_PI * step / 600.0)) / 2);
  }
  for (int epoch = 1; epoch <= 6; ++epoch) {
    val.x.push_back(epoch * 100);
    val.y.push_back(2.0 * std::exp(-epoch / 1.5) + 0.35);
    acc.x.push_back(epoch);
    acc.y.push_back(0.9 - 0.4 * std::exp(-epoch / 1.2));
  }
  const fs::path png = kOut / "training_curves.png";
  fs::remove(png);
  runner::output::PlotOptions options;
  options.title = "mnist_ddp_fp16 (2 processes, fp16)";
  runner::output::save_plot(png,
                            {PlotPanel{"Loss", "optimizer step", "loss", {train, val}},
                             PlotPanel{"Validation", "epoch", "accuracy", {acc}},
                             PlotPanel{"Learning rate", "optimizer step", "lr", {lr}}},
                            options);
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20000u);
  const cv::Mat image = cv::imread(png.string());
  ASSERT_FALSE(image.empty());
  EXPECT_EQ(image.cols, 3 * options.panel_width);
  EXPECT_EQ(image.rows, options.panel_height + 40);
  // Panel 1 draws series 0 and 1; panels 2 and 3 draw their only series in colour 0.
  EXPECT_GT(pixels_of_series(image, 0), 1000);
  EXPECT_GT(pixels_of_series(image, 1), 100);
  EXPECT_EQ(pixels_of_series(image, 2), 0) << "no panel has a third series";
}

TEST(Plot, SweepSummaryOnALogBatchAxis) {
  std::vector<PlotSeries> throughput, accuracy;
  const char* names[] = {"1 proc fp32", "1 proc fp16", "2 procs fp32", "2 procs fp16"};
  for (int line = 0; line < 4; ++line) {
    PlotSeries t{names[line], {}, {}}, a{names[line], {}, {}};
    for (double batch : {64.0, 128.0, 256.0, 512.0}) {
      const double global = batch * (line < 2 ? 1 : 2);
      t.x.push_back(global);
      t.y.push_back(1500 * (1 + line) * std::log2(global) / 9);
      a.x.push_back(global);
      a.y.push_back(0.9 - 0.01 * std::log2(global) - 0.002 * line);
    }
    throughput.push_back(t);
    accuracy.push_back(a);
  }
  const fs::path png = kOut / "summary.png";
  fs::remove(png);
  PlotPanel left{"Throughput", "global batch size", "images/s", throughput, true};
  PlotPanel right{"Validation accuracy", "global batch size", "accuracy", accuracy, true};
  runner::output::save_plot(png, {left, right}, {"bs_sweep"});
  const cv::Mat image = cv::imread(png.string());
  ASSERT_FALSE(image.empty());
  for (size_t s = 0; s < 4; ++s) EXPECT_GT(pixels_of_series(image, s), 200) << "series " << s;
}

TEST(Plot, GapsAndEmptyPanelsDoNotBreakTheFigure) {
  PlotSeries gappy{"loss", {0, 1, 2, 3, 4}, {1.0, NAN, 0.5, INFINITY, 0.25}};
  PlotSeries constant{"lr", {0, 1, 2}, {0.1, 0.1, 0.1}};
  const fs::path png = kOut / "gaps.png";
  runner::output::save_plot(
      png, {PlotPanel{"gaps", "step", "loss", {gappy}}, PlotPanel{"flat", "step", "lr", {constant}},
            PlotPanel{"empty", "step", "none", {}}});
  const cv::Mat image = cv::imread(png.string());
  ASSERT_FALSE(image.empty());
  EXPECT_GT(pixels_of_series(image, 0), 50);
}

TEST(Plot, AnUnwritablePathIsAnError) {
  EXPECT_THROW(runner::output::save_plot("/proc/runner_no/plot.png", {PlotPanel{}}), runner::Error);
}

TEST(Plot, SweepSummaryHelper) {
  // Points arrive in sweep order (not sorted by batch); two (processes, precision) lines.
  std::vector<runner::output::SweepPoint> points = {{1, "fp32", 256, 900, 0.85},
                                                    {1, "fp32", 64, 700, 0.87},
                                                    {2, "fp16", 128, 1500, 0.86},
                                                    {1, "fp32", 128, 800, 0.86},
                                                    {2, "fp16", 512, 2500, 0.83}};
  const fs::path summary = kOut / "summary_helper.png";
  runner::output::save_sweep_summary(summary, points, "accuracy", "bs_sweep");
  const cv::Mat sweep = cv::imread(summary.string());
  ASSERT_FALSE(sweep.empty());
  EXPECT_GT(pixels_of_series(sweep, 0), 200);
  EXPECT_GT(pixels_of_series(sweep, 1), 200);
  EXPECT_EQ(pixels_of_series(sweep, 2), 0) << "only two (processes, precision) lines";
}

}  // namespace
