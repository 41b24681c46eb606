// Dataset `webdataset`: samples in tar shards, WebDataset's convention (what timm's
// --dataset wds/... reads): the files of one sample sit next to each other in a shard and share
// a key (the path up to the first dot of its name: "n01/img_000123.jpg" and
// "n01/img_000123.cls" are sample "n01/img_000123"); its image is the .jpg, .jpeg, .png or .webp
// file, its label the .cls file's integer or a field of its .json file. Shards are listed once
// (tar_index.hpp: offsets, no image bytes read), then each sample is one read at its offset.
// Remote shards (http, https, pipe:) are fetched whole (remote_shards.hpp): before the run to
// count their samples, or, where data.dataset.shard_index counts them (shard_index.hpp), when
// the run first reads them (shard_files.hpp), into data.dataset.cache_dir or a private copy.

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "array_dataset.hpp"
#include "brace_pattern.hpp"
#include "datasets.hpp"
#include "image_files.hpp"
#include "remote_shards.hpp"
#include "runner/error.hpp"
#include "shard_files.hpp"
#include "shard_index.hpp"
#include "tar_index.hpp"

namespace runner::data {
namespace {

namespace fs = std::filesystem;

struct ShardSample {
  uint32_t shard = 0;
  uint64_t offset = 0, size = 0;  ///< of its image in the shard
  int64_t label = -1;
  std::string key, extension;  ///< for messages: "train-000003.tar: sample img_42 (jpg)"
};

bool is_image_extension(const std::string& ext) {
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "webp";
}

// WebDataset's split of a member name: the key up to the first dot of the last path part, the
// extension after it, in lower case ("a/b.seg.png" -> "a/b", "seg.png").
std::pair<std::string, std::string> key_and_extension(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {name, ""};
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return {name.substr(0, dot), ext};
}

// A sample's label from the bytes of its label file: the .cls text ("7\n"), or the field
// `label_key` of its .json.
int64_t parse_label(const std::string& bytes, const std::string& extension,
                    const std::string& label_key, const std::string& where) {
  if (extension == "json") {
    nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    const auto it = doc.is_object() ? doc.find(label_key) : doc.end();
    if (it == doc.end() || !it->is_number_integer())
      throw DataError(where + ": its .json has no integer field '" + label_key +
                      "'; set data.dataset.label_key to the field that holds the class");
    return it->get<int64_t>();
  }
  try {
    size_t used = 0;
    const long long value = std::stoll(bytes, &used);
    if (bytes.find_first_not_of(" \t\r\n", used) == std::string::npos) return value;
  } catch (const std::exception&) {
  }
  throw DataError(where + ": its ." + extension + " file holds '" + bytes.substr(0, 40) +
                  "', not a class index");
}

struct SplitOptions {
  std::string root, label_key;
  FetchOptions fetch;  ///< remote shards (http, https, pipe:): where they are kept, the tries
  /// data.dataset.shard_index's counts by shard name; null: none given
  std::shared_ptr<const std::map<std::string, ShardCount>> shard_counts;
  std::string shard_index;  ///< where those counts came from, for messages
  bool color = true;
  size_t shuffle_buffer = 0;
  bool labels_required = true;  ///< train and val: every sample has a label
  int64_t classes = 0;          ///< data.dataset.classes' count; 0: not given
};

// One shard's samples, in shard order, from its local copy at `path`; `source` (its URL or
// path) names it in errors.
std::vector<ShardSample> index_shard(const std::string& path, const std::string& source,
                                     uint32_t shard, const SplitOptions& o) {
  std::vector<TarMember> members;
  try {
    members = list_tar(path);
  } catch (const DataError& error) {
    if (path == source) throw;
    const std::string what = error.what();  // named after the copy: say the URL instead
    throw DataError(source + what.substr(what.rfind(path, 0) == 0 ? path.size() : 0));
  }
  std::ifstream labels(path, std::ios::binary);
  std::vector<ShardSample> samples;
  std::vector<std::pair<std::string, std::string>> names;  // each member's key and extension
  names.reserve(members.size());
  for (const auto& m : members) names.push_back(key_and_extension(m.name));
  for (size_t i = 0; i < members.size();) {
    const std::string key = names[i].first;
    ShardSample s;
    s.shard = shard;
    s.key = key;
    const TarMember* image = nullptr;
    const TarMember* label = nullptr;
    std::string label_ext;
    for (; i < members.size() && names[i].first == key; ++i) {
      const std::string& ext = names[i].second;
      if (is_image_extension(ext)) {
        if (image)
          throw DataError(source + ": sample " + key + " has two images (" + image->name + ", " +
                          members[i].name + "); keep one image a sample");
        image = &members[i];
        s.extension = ext;
      } else if (ext == o.label_key || (o.label_key != "cls" && ext == "json")) {
        if (!label || ext == o.label_key) label = &members[i], label_ext = ext;
      }
    }
    if (!image)
      throw DataError(source + ": sample " + key +
                      " has no image (.jpg, .jpeg, .png or .webp); every key of a shard is one "
                      "sample with its image");
    s.offset = image->offset;
    s.size = image->size;
    if (label) {
      std::string bytes(label->size, '\0');
      labels.seekg(static_cast<std::streamoff>(label->offset));
      labels.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!labels) throw DataError(source + ": cannot read the label of sample " + key);
      s.label = parse_label(bytes, label_ext, o.label_key, source + ": sample " + key);
      if (s.label < 0)
        throw DataError(source + ": sample " + key + " has the negative label " +
                        std::to_string(s.label));
      if (o.labels_required && o.classes > 0 && s.label >= o.classes)
        throw DataError(source + ": sample " + key + " has label " + std::to_string(s.label) +
                        " but data.dataset.classes says " + std::to_string(o.classes) + " classes");
    } else if (o.labels_required) {
      throw DataError(source + ": sample " + key + " has no label (." + o.label_key +
                      (o.label_key == "cls" ? "" : " or a .json field '" + o.label_key + "'") +
                      "); a training or validation shard needs one a sample (set "
                      "data.dataset.label_key to where yours are)");
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

// A split's samples. A shard listed when the split was made (a local one, one in the cache, one
// fetched to count it) is known from the start; one that a shard index counts is listed when
// the run first reads it (ShardFiles fetches it then), checked to hold what the index says.
class WebDataset : public Dataset,
                   public ShardedDataset,
                   public EncodedDataset,
                   public StreamedDataset {
 public:
  WebDataset(std::vector<std::string> sources, std::vector<size_t> shard_sizes,
             std::vector<bool> listed, std::vector<ShardSample> samples, SplitOptions options,
             bool has_labels, std::string description)
      : shard_sizes_(std::move(shard_sizes)),
        samples_(std::move(samples)),
        options_(std::move(options)),
        has_labels_(has_labels),
        description_(std::move(description)),
        listed_(new std::atomic<bool>[shard_sizes_.size()]) {
    size_t first = 0;
    for (size_t k = 0; k < shard_sizes_.size(); ++k) {
      first_.push_back(first);
      first += shard_sizes_[k];
      listed_[k] = listed[k];
      streamed_ = streamed_ || !listed[k];
    }
    files_ = std::make_unique<ShardFiles>(
        std::move(sources), std::move(listed), options_.fetch,
        [this](size_t k, const std::string& path) { list_when_read(k, path); });
  }

  size_t size() const override { return samples_.size(); }
  Sample get(size_t index) const override { return decode(index, encoded(index), 1); }
  std::string encoded(size_t index) const override {
    const auto shard = files_->open(shard_of(index));
    const ShardSample& s = samples_[index];  // listed now, if it was not
    return shard->read(s.offset, s.size);
  }
  Sample decode(size_t index, const std::string& bytes, int reduction) const override {
    const ShardSample& s = known(index);
    const std::string& shard = files_->source(s.shard);
    const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8U,
                          const_cast<char*>(bytes.data()));
    Sample out;
    out.image = cv::imdecode(encoded, imdecode_flags(options_.color, reduction));
    if (out.image.empty())
      throw DataError(shard + ": sample " + s.key + ": cannot decode its ." + s.extension +
                      " image (corrupt or not that format); write the shard again or set "
                      "data.on_bad_image: skip");
    if (options_.color) cv::cvtColor(out.image, out.image, cv::COLOR_BGR2RGB);
    out.label = s.label;
    return out;
  }
  bool has_labels() const override { return has_labels_; }
  int64_t label(size_t index) const override { return known(index).label; }
  std::string describe() const override { return description_; }
  ShardLayout shard_layout() const override { return {shard_sizes_, options_.shuffle_buffer}; }
  bool streamed() const override { return streamed_; }

  /// The largest label of the samples listed so far (-1: none).
  int64_t largest_listed_label() const {
    int64_t top = -1;
    for (size_t k = 0; k < shard_sizes_.size(); ++k)
      for (size_t i = first_[k]; listed_[k] && i < first_[k] + shard_sizes_[k]; ++i)
        top = std::max(top, samples_[i].label);
    return top;
  }

 private:
  // The shard sample `index` is in, from the shards' first indices (not from the sample's own
  // entry, which the shard's first read writes while other threads look).
  size_t shard_of(size_t index) const {
    if (index >= samples_.size())
      throw std::out_of_range("webdataset: sample " + std::to_string(index) + " of " +
                              std::to_string(samples_.size()));
    return static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), index) -
                               first_.begin()) -
           1;
  }

  // Sample `index`, its shard listed first where it was not (fetching it).
  const ShardSample& known(size_t index) const {
    const size_t shard = shard_of(index);
    if (!listed_[shard].load(std::memory_order_acquire)) files_->open(shard);
    return samples_[index];
  }

  // The first read of shard `k` (under its lock): its bytes and samples, as the index said.
  void list_when_read(size_t k, const std::string& path) const {
    check_size(k, path);
    std::vector<ShardSample> found =
        index_shard(path, files_->source(k), static_cast<uint32_t>(k), options_);
    if (found.size() != shard_sizes_[k])
      throw DataError(files_->source(k) + " holds " + std::to_string(found.size()) +
                      " samples, but data.dataset.shard_index (" + options_.shard_index +
                      ") says " + std::to_string(shard_sizes_[k]) +
                      "; write the shard index again (webdataset's widsindex)");
    std::move(found.begin(), found.end(), samples_.begin() + static_cast<long>(first_[k]));
    listed_[k].store(true, std::memory_order_release);
  }

  // A shard whose size is not the index's (a wids index's filesize) changed since the index was
  // written, or a cached copy is older than the shard: its samples would not be the counted ones.
  void check_size(size_t k, const std::string& path) const {
    if (!options_.shard_counts) return;
    const auto count = options_.shard_counts->find(shard_name(files_->source(k)));
    if (count == options_.shard_counts->end() || !count->second.bytes) return;
    std::error_code error;
    const uintmax_t bytes = fs::file_size(path, error);
    if (error || bytes == *count->second.bytes) return;
    throw DataError(files_->source(k) + " is " + std::to_string(bytes) +
                    " bytes, but data.dataset.shard_index (" + options_.shard_index + ") says " +
                    std::to_string(*count->second.bytes) +
                    ": the shard changed since the index was written (or a cached copy is "
                    "older than it); write the shard index again (webdataset's widsindex) and "
                    "empty data.dataset.cache_dir");
  }

  std::vector<size_t> shard_sizes_, first_;
  mutable std::vector<ShardSample> samples_;  ///< a streamed shard's filled in when it is read
  SplitOptions options_;
  bool has_labels_;
  std::string description_;
  std::unique_ptr<std::atomic<bool>[]> listed_;
  bool streamed_ = false;
  std::unique_ptr<ShardFiles> files_;
};

// Whether each remote shard a split counts from the shard index answers (without reading it),
// a few at a time; the first that does not, in shard order, is the error.
void check_streamed_answer(const std::vector<std::string>& urls, const FetchOptions& fetch) {
  std::vector<std::string> failures(urls.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> checkers;
  for (size_t t = 0; t < std::min<size_t>(8, urls.size()); ++t)
    checkers.emplace_back([&] {
      for (size_t i = next++; i < urls.size(); i = next++) try {
          check_answers(urls[i], fetch);
        } catch (const std::exception& error) {
          failures[i] = error.what();
        }
    });
  for (std::thread& checker : checkers) checker.join();
  for (const std::string& failure : failures)
    if (!failure.empty()) throw StorageError(failure);
}

std::shared_ptr<WebDataset> make_split(const std::string& urls, const SplitOptions& o,
                                       const std::string& key) {
  std::vector<std::string> names;
  try {
    names = expand_braces(urls);
  } catch (const ConfigError& error) {
    throw ConfigError(key + ": " + error.what());
  }
  std::vector<std::string> sources;
  size_t remote = 0;
  for (const std::string& name : names) {
    if (is_remote_url(name)) {
      sources.push_back(name);
      ++remote;
      continue;
    }
    const fs::path path = fs::path(name).is_absolute() ? fs::path(name) : fs::path(o.root) / name;
    sources.push_back(path.lexically_normal().string());
  }
  if (sources.empty()) throw ConfigError(key + ": names no shard");
  std::vector<std::string> missing;
  for (const auto& shard : sources)
    if (!is_remote_url(shard) && !fs::is_regular_file(shard)) missing.push_back(shard);
  if (!missing.empty())
    throw ConfigError(key + ": " + std::to_string(missing.size()) + " of " +
                      std::to_string(sources.size()) + " shards missing, the first " +
                      missing.front() + "; check data.dataset.root and the pattern");
  std::vector<ShardSample> samples;
  std::vector<size_t> sizes;
  std::vector<bool> listed;
  std::vector<std::string> streamed;
  for (size_t k = 0; k < sources.size(); ++k) {
    const std::string& source = sources[k];
    std::string path = is_remote_url(source) ? cached_copy(source, o.fetch) : source;
    if (path.empty() && o.shard_counts) {
      const auto count = o.shard_counts->find(shard_name(source));
      if (count == o.shard_counts->end())
        throw ConfigError(key + ": " + source + ": data.dataset.shard_index (" + o.shard_index +
                          ") has no count for " + shard_name(source) +
                          "; write the index for every shard the urls name");
      ShardSample unread;  // listed when the run reads the shard
      unread.shard = static_cast<uint32_t>(k);
      samples.insert(samples.end(), count->second.samples, unread);
      sizes.push_back(count->second.samples);
      listed.push_back(false);
      streamed.push_back(source);
      continue;
    }
    if (path.empty()) {
      if (o.fetch.cache_dir.empty())
        throw ConfigError(key + ": " + source +
                          " is a remote shard: set data.dataset.shard_index to a file that says "
                          "how many samples each shard holds (the shards then stream as the run "
                          "reads them), or data.dataset.cache_dir (each is then fetched once to "
                          "count its samples, and kept)");
      try {
        path = cached_shard(source, o.fetch);  // fetched now to count its samples
      } catch (const StorageError& error) {    // the key first: the core adds where it was set
        throw StorageError(key + ": " + error.what());
      }
    }
    std::vector<ShardSample> found = index_shard(path, source, static_cast<uint32_t>(k), o);
    sizes.push_back(found.size());
    listed.push_back(true);
    std::move(found.begin(), found.end(), std::back_inserter(samples));
  }
  try {
    check_streamed_answer(streamed, o.fetch);
  } catch (const StorageError& error) {
    throw StorageError(key + ": " + error.what());
  }
  const auto labelled_sample = [](const ShardSample& s) { return s.label >= 0; };
  const bool labelled = streamed.empty()
                            ? std::all_of(samples.begin(), samples.end(), labelled_sample)
                            : o.labels_required;  // a streamed test split: its labels unread
  if (streamed.empty() && !labelled && std::any_of(samples.begin(), samples.end(), labelled_sample))
    throw DataError("data.dataset." + key +
                    ": some samples have a label and some do not (the "
                    "first without: " +
                    std::find_if(samples.begin(), samples.end(),
                                 [](const ShardSample& s) { return s.label < 0; })
                        ->key +
                    ")");
  const size_t cached = remote - streamed.size();
  std::string description = std::to_string(sources.size()) + " shard" +
                            (sources.size() == 1 ? "" : "s") + " " + urls +
                            (remote == sources.size() ? "" : " in " + o.root);
  if (cached > 0) description += ", " + std::to_string(cached) + " cached in " + o.fetch.cache_dir;
  if (!streamed.empty())
    description += ", " + std::to_string(streamed.size()) + " read as the run goes" +
                   (o.fetch.cache_dir.empty() ? " (no cache)" : " into " + o.fetch.cache_dir);
  return std::make_shared<WebDataset>(std::move(sources), std::move(sizes), std::move(listed),
                                      std::move(samples), o, labelled, description);
}

// data.dataset.cache_size in bytes: a whole number, or "20GB", "512MiB", "1.5TB" (SI and IEC
// units).
uint64_t cache_bytes(const nlohmann::json& value) {
  if (value.is_number_integer())
    return static_cast<uint64_t>(std::max<int64_t>(1, value.get<int64_t>()));
  const std::string text = value.get<std::string>();
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  std::string unit = text.substr(used);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::map<std::string, double> units = {{"", 1},
                                                      {"B", 1},
                                                      {"KB", 1e3},
                                                      {"MB", 1e6},
                                                      {"GB", 1e9},
                                                      {"TB", 1e12},
                                                      {"KiB", 1024.0},
                                                      {"MiB", 1048576.0},
                                                      {"GiB", 1073741824.0},
                                                      {"TiB", 1099511627776.0}};
  const auto it = units.find(unit);
  if (used == 0 || number <= 0 || it == units.end())
    throw ConfigError("data.dataset.cache_size: '" + text +
                      "' is not a size; write bytes, or a number with KB, MB, GB, TB, KiB, MiB, "
                      "GiB or TiB ('20GB')");
  return static_cast<uint64_t>(number * it->second);
}

// data.dataset.shard_index's counts: a path relative to the file that sets it, or a URL.
std::shared_ptr<const std::map<std::string, ShardCount>> shard_counts(const std::string& where,
                                                                      const FetchOptions& fetch) {
  std::string text;
  try {
    text = fetch_text(where, fetch);
  } catch (const StorageError& error) {
    throw StorageError(std::string("data.dataset.shard_index: ") + error.what());
  } catch (const ConfigError&) {
    throw ConfigError("data.dataset.shard_index: " + where +
                      ": cannot read it; set it to the shards' index file (a path or a URL)");
  }
  return std::make_shared<const std::map<std::string, ShardCount>>(
      parse_shard_index(text, "data.dataset.shard_index " + where));
}

DatasetSplits make_webdataset(const nlohmann::json& params, const DatasetContext& context) {
  SplitOptions o;
  o.root = resolve_path(params.at("root").get<std::string>(), context.config_dir);
  o.label_key = params.at("label_key").get<std::string>();
  o.color = params.at("mode").get<std::string>() == "color";
  o.shuffle_buffer = params.at("shuffle_buffer").get<size_t>();
  if (params.at("cache_dir").is_string())
    o.fetch.cache_dir = resolve_path(params.at("cache_dir").get<std::string>(), context.config_dir);
  if (!params.at("cache_size").is_null()) {
    if (o.fetch.cache_dir.empty())
      throw ConfigError(
          "data.dataset.cache_size limits data.dataset.cache_dir, which is not set; "
          "set cache_dir, or remove cache_size");
    o.fetch.cache_bytes = cache_bytes(params.at("cache_size"));
  }
  o.fetch.retries = params.at("retries").get<int>();
  if (!fs::is_directory(o.root))
    throw DataError("dataset webdataset: '" + o.root +
                    "' is not a folder; set data.dataset.root to the shards' folder");
  if (params.at("shard_index").is_string()) {
    o.shard_index = params.at("shard_index").get<std::string>();
    if (!is_remote_url(o.shard_index))
      o.shard_index = resolve_path(o.shard_index, context.config_dir);
    o.shard_counts = shard_counts(o.shard_index, o.fetch);
  }
  const nlohmann::json& classes = params.at("classes");
  if (classes.is_array()) {
    o.classes = static_cast<int64_t>(classes.size());
  } else if (classes.is_number_integer()) {
    o.classes = classes.get<int64_t>();
  }
  DatasetSplits splits;
  std::shared_ptr<WebDataset> train = make_split(params.at("urls").get<std::string>(), o, "urls");
  std::shared_ptr<WebDataset> val;
  splits.train = train;
  for (const auto& [key, split] : {std::pair{"val_urls", &splits.val}, {"test_urls", &splits.test}})
    if (params.at(key).is_string()) {
      SplitOptions split_options = o;
      split_options.labels_required = std::string(key) == "val_urls";
      auto made = make_split(params.at(key).get<std::string>(), split_options, key);
      if (std::string(key) == "val_urls") val = made;
      *split = made;
    }
  // Classes: data.dataset.classes names or counts them (labels index them); else labels
  // 0..largest, which needs every label before the run.
  if (o.classes > 0) {
    splits.num_classes = o.classes;
    if (classes.is_array()) splits.class_names = classes.get<std::vector<std::string>>();
    return splits;
  }
  for (const auto& [name, split] : {std::pair{"urls", train}, {"val_urls", val}})
    if (split && split->streamed())
      throw ConfigError("data.dataset.classes: the " + std::string(name) +
                        " shards are read as the run goes (counted by data.dataset.shard_index), "
                        "so their labels are not known before it: set data.dataset.classes to "
                        "the number of classes (or their names)");
  splits.num_classes =
      std::max(train->largest_listed_label(), val ? val->largest_listed_label() : -1) + 1;
  return splits;
}

}  // namespace

void register_webdataset(Registry<DatasetFactory>& registry) {
  nlohmann::json properties = {
      {"root",
       {{"type", "string"},
        {"x-runner-path", "folder"},
        {"default", "."},
        {"description",
         "Folder the shards are in (urls that are paths are relative to it). Relative to the "
         "file that sets it; default: that file's folder."}}},
      {"urls",
       {{"type", "string"},
        {"minLength", 1},
        {"description",
         "The training shards: a brace pattern as WebDataset writes it, e.g. "
         "'train-{000000..000099}.tar' (zero-padded range), '{a,b}.tar', several joined by "
         "'::'. Uncompressed tar files; every one must exist. A url may be remote, as "
         "WebDataset writes them: 'https://host/train-{000000..000099}.tar' (libcurl: "
         "redirects, TLS, ~/.netrc, headers from RUNNER_HTTP_HEADERS) or 'pipe:CMD' (a "
         "command whose stdout is the tar, e.g. 'pipe:aws s3 cp s3://b/train-000001.tar -'); "
         "remote shards need cache_dir or shard_index."}}},
      {"cache_dir",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"description",
         "Folder that keeps the remote shards (WebDataset's cache_dir): each is fetched whole "
         "once, under a temporary name renamed when whole, and read from there by every later "
         "epoch and run (one fetch at a time per folder: ranks and runs sharing it fetch each "
         "shard once). Relative to the file that sets it; created when missing. null: remote "
         "shards counted by shard_index stream each epoch (a private copy while read)."}}},
      {"cache_size",
       {{"type", {"integer", "string", "null"}},
        {"minimum", 1},
        {"pattern", "^[0-9]+(\\.[0-9]+)? ?([KMGT]i?B|B)?$"},
        {"default", nullptr},
        {"description",
         "Most the cache_dir may hold: bytes, or '20GB', '512MiB'. A shard fetched into a full "
         "cache makes the least recently read shards leave (a run reading one keeps it open "
         "until it is done). null: no limit."}}},
      {"shard_index",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"description",
         "File (a path relative to the file that sets it, or an http(s) URL) saying how many "
         "samples each shard holds: a wids shard index (webdataset's `widsindex create`: "
         "{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [{\"url\": ..., "
         "\"nsamples\": N}]}) or a map {\"train-000000.tar\": N, ...}; a shard is found by "
         "its name (the URL's last part). With it, a remote shard not in the cache is not read "
         "before the run: validate asks each URL for its first byte, and the run fetches each "
         "shard when it first reads it (checked to hold N samples). Needs classes."}}},
      {"retries",
       {{"type", "integer"},
        {"minimum", 0},
        {"default", 3},
        {"description",
         "Tries after the first for a remote shard whose fetch failed (a dropped connection "
         "continues at the byte it stopped at; a pipe command starts again), 1, 2, 4 ... "
         "seconds apart; then the run stops naming the URL. HTTP 404 and 403 are not retried."}}},
      {"val_urls",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"description", "The validation shards (labelled), as urls; null: no validation."}}},
      {"test_urls",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"description", "The test shards (labels optional), as urls; null: none."}}},
      {"shuffle_buffer",
       {{"type", "integer"},
        {"minimum", 0},
        {"default", 1000},
        {"description",
         "Samples the training stream mixes (WebDataset's shuffle(n)): each sample read "
         "replaces a random one of the buffer, which goes on to the batch. Shards are shuffled "
         "per epoch too; 0 or 1: shard order shuffled only."}}},
      {"label_key",
       {{"type", "string"},
        {"minLength", 1},
        {"default", "cls"},
        {"description",
         "Where a sample's label is: 'cls' (its .cls file, an integer), another extension "
         "(its .<label_key> file, an integer) or a field of its .json file."}}},
      {"classes",
       {{"type", {"array", "integer", "null"}},
        {"items", {{"type", "string"}}},
        {"minimum", 1},
        {"default", nullptr},
        {"description",
         "The classes: their names (label i = classes[i]) or their number; null: classes "
         "0..largest label (not with shards read as the run goes: shard_index)."}}},
      {"mode",
       {{"type", "string"},
        {"enum", {"grayscale", "color"}},
        {"default", "color"},
        {"description", "grayscale: 1-channel u8; color: 3-channel u8 in RGB order."}}}};
  registry.add(
      "webdataset", make_webdataset,
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"urls"}},
       {"description",
        "Tar shards in WebDataset's layout; a training epoch reads shard by shard, each rank "
        "its own shards (docs/data.md, Shards)."},
       {"properties", properties}},
      "Tar shards in WebDataset's layout (key.jpg + key.cls), read shard by shard");
}

}  // namespace runner::data
