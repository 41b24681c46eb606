#include "run/data_checks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "data/folder_dataset.hpp"
#include "log/logging.hpp"
#include "output/progress.hpp"
#include "runner/error.hpp"
#include "util/image_header.hpp"
#include "util/quiet_stderr.hpp"

namespace runner::run {
namespace {

struct SplitToCheck {
  const char* name;  ///< "training", "validation", "test"
  std::shared_ptr<data::Dataset> dataset;
  const data::Pipeline* transforms;
  const char* transforms_key;
};

std::string image_size_text(const cv::Mat& image) {
  return std::to_string(image.cols) + "x" + std::to_string(image.rows) + "x" +
         std::to_string(image.channels());
}

// "FILE" or "sample N of the test split (DESCRIPTION)".
std::string sample_name(const SplitToCheck& split, size_t index) {
  const std::string file = data::sample_file(*split.dataset, index);
  if (!file.empty()) return file;
  return "sample " + std::to_string(index) + " of the " + split.name + " split (" +
         split.dataset->describe() + ")";
}

// The sample decoded, or the DataError it gives as a check's one line.
data::Sample decode(const SplitToCheck& split, size_t index) {
  try {
    const util::QuietStderr quiet;  // libpng's "libpng error: ..." says less than our line
    return split.dataset->get(index);
  } catch (const Error& error) {
    throw ConfigError(std::string("data.check: ") + error.what());
  }
}

// Width and height of sample `index`: from the file's header when the check may, else decoded.
std::pair<int, int> sample_size(const SplitToCheck& split, size_t index, bool headers) {
  const std::string file = data::sample_file(*split.dataset, index);
  if (headers && !file.empty()) {
    std::optional<util::ImageHeader> header;
    try {
      header = util::read_image_header(file);
    } catch (const Error& error) {
      throw ConfigError(std::string("data.check: ") + error.what());
    }
    if (header) return {header->width, header->height};
  }
  const data::Sample sample = decode(split, index);
  return {sample.image.cols, sample.image.rows};
}

// Images of another size than the first must come out of the transforms as the first does:
// one sample of each size goes through them.
void check_sizes_meet(const config::Experiment& e, const SplitToCheck& split,
                      const std::map<std::pair<int, int>, size_t>& first_of_size) {
  if (first_of_size.size() < 2) return;
  const size_t reference =
      std::min_element(first_of_size.begin(), first_of_size.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; })
          ->second;
  data::Sample first = decode(split, reference);
  split.transforms->apply(first, e.options.seed, 0, reference);
  for (const auto& [size, index] : first_of_size) {
    if (index == reference) continue;
    data::Sample other = decode(split, index);
    const std::string raw = std::to_string(size.first) + "x" + std::to_string(size.second);
    split.transforms->apply(other, e.options.seed, 0, index);
    if (other.image.size() == first.image.size() &&
        other.image.channels() == first.image.channels())
      continue;
    throw ConfigError(e.marks.key_mark(std::string("/data/") + split.transforms_key).to_string() +
                      ": " + sample_name(split, index) + " is " + raw + " and comes out of data." +
                      split.transforms_key + " as " + image_size_text(other.image) + ", but " +
                      sample_name(split, reference) + " as " + image_size_text(first.image) +
                      ": the " + split.name +
                      " batches cannot stack them; add a resize to one size to data." +
                      split.transforms_key + ", or remove the image");
  }
}

// What a look at each sample of a split found: the first sample of each size, and the
// samples that cannot be used (by index, with the check's line).
struct SplitLook {
  std::map<std::pair<int, int>, size_t> first_of_size;
  std::map<size_t, std::string> bad;
};

// Looks at samples begin, begin + stride, ... (one loader thread's share).
void look_at_samples(const SplitToCheck& split, bool headers, size_t begin, size_t stride,
                     std::atomic<size_t>& done, SplitLook& look) {
  for (size_t i = begin; i < split.dataset->size(); i += stride) {
    try {
      look.first_of_size.emplace(sample_size(split, i, headers), i);
    } catch (const ConfigError& error) {
      look.bad.emplace(i, error.what());
    }
    ++done;
  }
}

// Every sample of the split, on the machine's cores (decoding 70000 files one at a time takes
// minutes), with a progress line where it takes long.
SplitLook look_at_split(const SplitToCheck& split, bool headers) {
  const size_t n = split.dataset->size();
  const size_t threads =
      std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::max<size_t>(1, n / 64));
  std::vector<SplitLook> looks(threads);
  std::atomic<size_t> done{0};
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t)
    workers.emplace_back(look_at_samples, std::cref(split), headers, t, threads, std::ref(done),
                         std::ref(looks[t]));
  output::Progress progress(true, log::stdout_is_terminal(), std::max<int64_t>(1, n / 10));
  progress.start(std::string("data.check ") + (headers ? "header" : "full") + ", " + split.name,
                 static_cast<int64_t>(n), 0, /*quiet_seconds=*/3.0);
  while (done < n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    progress.update(static_cast<int64_t>(done.load()), 0.0, NAN);
  }
  for (std::thread& worker : workers) worker.join();
  progress.finish();
  SplitLook all;
  for (const SplitLook& look : looks) {
    all.bad.insert(look.bad.begin(), look.bad.end());
    for (const auto& [size, index] : look.first_of_size) {
      auto [it, added] = all.first_of_size.emplace(size, index);
      if (!added) it->second = std::min(it->second, index);
    }
  }
  return all;
}

void check_split(const config::Experiment& e, const SplitToCheck& split) {
  const std::string& level = e.options.data.check;
  const data::Dataset& dataset = *split.dataset;
  // In-memory datasets (idx, csv) decoded every sample when they loaded: a header check has
  // nothing to read.
  if (level == "header" && (dataset.size() == 0 || data::sample_file(dataset, 0).empty())) return;
  const SplitLook look = look_at_split(split, level == "header");
  if (!look.bad.empty()) {
    // The first bad sample in dataset order, as a sequential look would have named it.
    if (e.options.data.on_bad_image != "skip") throw ConfigError(look.bad.begin()->second);
    std::vector<std::string> names;
    for (const auto& [index, why] : look.bad) names.push_back(sample_name(split, index));
    spdlog::warn(
        "data.on_bad_image skip: {} sample(s) of the {} split cannot be used and will be "
        "left out: {} (first: {})",
        look.bad.size(), split.name, data::listing_names(names, 3),
        look.bad.begin()->second.substr(look.bad.begin()->second.find(": ") + 2));
  }
  check_sizes_meet(e, split, look.first_of_size);
}

// Samples of each class in `dataset`, every label of a multi-label sample counted (labels
// outside [0, classes) left out).
std::vector<int64_t> class_counts(const data::Dataset* dataset, int64_t classes) {
  std::vector<int64_t> count(static_cast<size_t>(classes), 0);
  const bool several = dynamic_cast<const data::MultiLabelDataset*>(dataset) != nullptr;
  for (size_t i = 0; dataset && dataset->has_labels() && i < dataset->size(); ++i) {
    const std::vector<int64_t> labels =
        several ? data::sample_labels(*dataset, i) : std::vector<int64_t>{dataset->label(i)};
    for (const int64_t label : labels)
      if (label >= 0 && label < classes) ++count[static_cast<size_t>(label)];
  }
  return count;
}

// "'cat' (label 3), 'dog' (label 4) and 2 more" of the classes `pick` says.
template <class Pick>
std::string classes_text(const data::DatasetSplits& splits, size_t classes, Pick pick) {
  std::string text;
  size_t shown = 0, more = 0;
  for (size_t c = 0; c < classes; ++c) {
    if (!pick(c)) continue;
    if (shown == 3) {
      ++more;
      continue;
    }
    text += std::string(shown++ ? ", " : "") + "'" +
            (c < splits.class_names.size() ? splits.class_names[c] : std::to_string(c)) +
            "' (label " + std::to_string(c) + ")";
  }
  return more ? text + " and " + std::to_string(more) + " more" : text;
}

// A class the data names (an image_folder class folder) with no sample at all is a mistake.
// One whose samples all went elsewhere (validation by an unshuffled val_split, or beyond
// data.limit.train), or a class count a dataset declares (a Kaggle CSV's 10 digits) that a
// small file does not fill, is said in a warning.
void check_classes(const config::Experiment& e, const data::DatasetSplits& splits) {
  if (!splits.train || !splits.train->has_labels() || splits.num_classes <= 0) return;
  // Labels read as the run goes (remote shards a shard index counts) are not fetched for this.
  if (data::is_streamed(*splits.train) || (splits.val && data::is_streamed(*splits.val))) return;
  const auto classes = static_cast<size_t>(splits.num_classes);
  const auto train = class_counts(splits.train.get(), splits.num_classes);
  const auto val = class_counts(splits.val.get(), splits.num_classes);
  const auto none_in_train = [&](size_t c) { return train[c] == 0; };
  const auto none_at_all = [&](size_t c) { return train[c] == 0 && val[c] == 0; };
  const std::string missing = classes_text(splits, classes, none_in_train);
  if (missing.empty()) return;
  const std::string absent = classes_text(splits, classes, none_at_all);
  const std::string what = "the training split has no sample of class " + missing + " (of " +
                           std::to_string(classes) + " classes)";
  if (absent.empty() || splits.class_names.empty() || e.options.data.limit_train) {
    spdlog::warn("{}: {}; the model still has an output for each", what,
                 !absent.empty() && !splits.class_names.empty() ? "data.limit.train took them"
                 : absent.empty() ? "the validation split holds them all (shuffle the split?)"
                                  : "the dataset declares more classes than its labels use");
    return;
  }
  if (e.options.data.allow_empty_classes) return;
  throw ConfigError(e.marks.key_mark("/data/dataset").to_string() +
                    ": data.dataset: the data has no sample of class " + absent + " (of " +
                    std::to_string(classes) +
                    " classes): the model would learn classes it never sees; add their images "
                    "(or remove an empty class folder), or set data.allow_empty_classes: true");
}

}  // namespace

void check_samples(const config::Experiment& e, const train::RunParts& parts) {
  check_classes(e, parts.splits);
  if (e.options.data.check == "none") return;
  const SplitToCheck splits[] = {
      {"training", parts.splits.train, &parts.train_pipeline, "train_transforms"},
      {"validation", parts.splits.val, &parts.eval_pipeline, "eval_transforms"},
      {"test", parts.splits.test, &parts.eval_pipeline, "eval_transforms"}};
  for (const SplitToCheck& split : splits)
    if (split.dataset) check_split(e, split);
}

}  // namespace runner::run
