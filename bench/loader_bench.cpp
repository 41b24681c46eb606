// Loader throughput on Fashion-MNIST with the original's training chain (hflip p=.5, vflip
// p=.5, brightness/contrast p=.2, Lanczos 28->56, normalize(0.1310, 0.30854), collate), for 0,
// 1 and 2 worker threads, against the floor: the same OpenCV operations done one after another
// in a tight loop in one thread; then data.device: cpu, the split decoded once into one uint8
// tensor and each batch augmented whole by the batched transforms, with 1 and 2 ATen threads.
// Also the peak RSS while streaming.
//
// Usage: loader_bench [images=30000] [batch=64]

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <torch/torch.h>
#include <opencv2/imgproc.hpp>

#include "data/loader.hpp"
#include "runner/registries.hpp"

using namespace runner::data;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

const char* kChain = R"([
  {"name": "horizontal_flip", "p": 0.5},
  {"name": "vertical_flip", "p": 0.5},
  {"name": "random_brightness_contrast", "p": 0.2, "brightness_limit": 0.2,
   "contrast_limit": 0.2, "brightness_by_max": true},
  {"name": "resize", "height": 56, "width": 56, "interpolation": "lanczos4"},
  {"name": "normalize", "mean": 0.1310, "std": 0.30854, "max_pixel_value": 255.0}])";

/// The floor: the same work written out by hand, one thread, no queue, no virtual calls.
double floor_images_per_s(const Dataset& data, size_t images, size_t batch) {
  const float mean = 0.1310f * 255.0f, inv = 1.0f / (0.30854f * 255.0f);
  const double t0 = now();
  double checksum = 0;
  for (size_t start = 0; start < images; start += batch) {
    const size_t n = std::min(batch, images - start);
    torch::Tensor out = torch::empty({static_cast<int64_t>(n), 1, 56, 56}, torch::kFloat32);
    float* dst = out.data_ptr<float>();
    for (size_t k = 0; k < n; ++k) {
      const size_t index = start + k;
      Sample s = data.get(index);
      Rng rng(0, 0, index);
      cv::Mat img = s.image, tmp;
      if (rng.uniform() < 0.5) {
        cv::flip(img, tmp, 1);
        img = tmp;
      }
      if (rng.uniform() < 0.5) {
        cv::flip(img, tmp, 0);
        img = tmp;
      }
      const bool bc = rng.uniform() < 0.2;
      const double alpha = 1.0 + rng.uniform(-0.2, 0.2), beta = rng.uniform(-0.2, 0.2);
      if (bc) {
        cv::Mat lut(1, 256, CV_8U);
        for (int i = 0; i < 256; ++i)
          lut.at<uint8_t>(i) = static_cast<uint8_t>(std::min(
              255.0f,
              std::max(0.0f, i * static_cast<float>(alpha) + static_cast<float>(beta * 255))));
        cv::LUT(img, lut, tmp);
        img = tmp;
      }
      cv::Mat big;
      cv::resize(img, big, cv::Size(56, 56), 0, 0, cv::INTER_LANCZOS4);
      float* plane = dst + k * 56 * 56;
      for (int y = 0; y < 56; ++y) {
        const uint8_t* row = big.ptr<uint8_t>(y);
        for (int x = 0; x < 56; ++x) plane[y * 56 + x] = (row[x] - mean) * inv;
      }
    }
    checksum += out[0][0][0][0].item<float>();
  }
  const double t = now() - t0;
  std::fprintf(stderr, "(floor checksum %g)\n", checksum);
  return images / t;
}

double loader_images_per_s(std::shared_ptr<Dataset> data, size_t images, size_t batch,
                           size_t workers, double* wait_share,
                           std::shared_ptr<const ResidentSplit> resident = nullptr) {
  LoaderOptions o;
  o.batch_size = batch;
  o.num_workers = workers;
  o.prefetch = 4;
  o.resident = std::move(resident);
  DataLoader loader(runner::data::limit_dataset(data, images),
                    build_pipeline(nlohmann::json::parse(kChain), runner::registries().transforms),
                    o);
  const double t0 = now();
  loader.start_epoch(0);
  size_t seen = 0;
  while (auto b = loader.next()) seen += static_cast<size_t>(b->size);
  const double t = now() - t0;
  *wait_share = loader.stats().wait_seconds / t;
  return seen / t;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t images = argc > 1 ? std::stoul(argv[1]) : 30000;
  const size_t batch = argc > 2 ? std::stoul(argv[2]) : 64;
  runner::register_builtin_plugins(runner::registries());
  const long rss_start = peak_rss_kb();
  at::set_num_threads(1);
  cv::setNumThreads(0);  // OpenCV's own pool would compete with the loader's threads
  const auto& entry = runner::registries().datasets.at("mnist");
  nlohmann::json params = {{"root", nullptr}, {"num_classes", 10},      {"test", false},
                           {"val_split", 0},  {"split_shuffle", false}, {"split_seed", nullptr}};
  auto train = entry.factory(params, DatasetContext{}).train;
  const long rss_dataset = peak_rss_kb();
  std::printf("Fashion-MNIST train: %zu images; timing %zu images, batch %zu\n", train->size(),
              images, batch);
  std::printf("peak RSS at start: %.1f MiB; after loading the dataset: %.1f MiB\n",
              rss_start / 1024.0, rss_dataset / 1024.0);
  const double floor = floor_images_per_s(*train, images, batch);
  std::printf("floor (hand-written loop, 1 thread): %.0f images/s\n", floor);
  for (size_t workers : {0, 1, 2}) {
    double wait = 0;
    const double rate = loader_images_per_s(train, images, batch, workers, &wait);
    std::printf(
        "loader, %zu worker%s: %.0f images/s (%.0f%% of floor per thread; consumer "
        "waited %.0f%% of the time)\n",
        workers, workers == 1 ? "" : "s", rate, 100.0 * rate / floor / std::max<size_t>(workers, 1),
        100.0 * wait);
  }
  std::printf("peak RSS after streaming: %.1f MiB (dataset + prefetch queue)\n",
              peak_rss_kb() / 1024.0);
  // data.device: cpu. Decoding is once per run (kept across epochs and evaluations).
  const auto limited = runner::data::limit_dataset(train, images);
  const double t0 = now();
  const auto resident = make_resident_split(*limited, torch::kCPU);
  std::printf("data.device cpu: decoding %zu images into one tensor took %.2f s (once per run)\n",
              images, now() - t0);
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (size_t workers : {0, 1}) {
      double wait = 0;
      const double rate = loader_images_per_s(train, images, batch, workers, &wait, resident);
      std::printf(
          "batched on cpu, %d ATen thread%s, %zu worker%s: %.0f images/s (%.2fx the floor; "
          "consumer waited %.0f%% of the time)\n",
          threads, threads == 1 ? "" : "s", workers, workers == 1 ? "" : "s", rate, rate / floor,
          100.0 * wait);
    }
  }
  at::set_num_threads(1);
  return 0;
}
