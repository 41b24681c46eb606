// Dataset `webdataset`: samples in tar shards, WebDataset's convention (what timm's
// --dataset wds/... reads): the files of one sample sit next to each other in a shard and share
// a key (the path up to the first dot of its name: "n01/img_000123.jpg" and
// "n01/img_000123.cls" are sample "n01/img_000123"); its image is the .jpg, .jpeg, .png or .webp
// file, its label the .cls file's integer or a field of its .json file. Shards are listed once
// (tar_index.hpp: offsets, no image bytes read), then each sample is one read at its offset.
// Remote shards (http, https, pipe:) are fetched whole into data.dataset.cache_dir first
// (remote_shards.hpp) and read from there.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "array_dataset.hpp"
#include "brace_pattern.hpp"
#include "datasets.hpp"
#include "image_files.hpp"
#include "remote_shards.hpp"
#include "runner/error.hpp"
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

class WebDataset : public Dataset, public ShardedDataset, public EncodedDataset {
 public:
  WebDataset(std::vector<std::string> shards, std::vector<size_t> shard_sizes,
             std::vector<ShardSample> samples, bool color, size_t shuffle_buffer, bool has_labels,
             std::string description)
      : shards_(std::move(shards)),
        shard_sizes_(std::move(shard_sizes)),
        samples_(std::move(samples)),
        color_(color),
        shuffle_buffer_(shuffle_buffer),
        has_labels_(has_labels),
        description_(std::move(description)) {}

  size_t size() const override { return samples_.size(); }
  Sample get(size_t index) const override { return decode(index, encoded(index), 1); }
  std::string encoded(size_t index) const override {
    const ShardSample& s = samples_.at(index);
    return read_bytes(shards_[s.shard], s.offset, s.size);
  }
  Sample decode(size_t index, const std::string& bytes, int reduction) const override {
    const ShardSample& s = samples_.at(index);
    const std::string& shard = shards_[s.shard];
    const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8U,
                          const_cast<char*>(bytes.data()));
    Sample out;
    out.image = cv::imdecode(encoded, imdecode_flags(color_, reduction));
    if (out.image.empty())
      throw DataError(shard + ": sample " + s.key + ": cannot decode its ." + s.extension +
                      " image (corrupt or not that format); write the shard again or set "
                      "data.on_bad_image: skip");
    if (color_) cv::cvtColor(out.image, out.image, cv::COLOR_BGR2RGB);
    out.label = s.label;
    return out;
  }
  bool has_labels() const override { return has_labels_; }
  int64_t label(size_t index) const override { return samples_.at(index).label; }
  std::string describe() const override { return description_; }
  ShardLayout shard_layout() const override { return {shard_sizes_, shuffle_buffer_}; }

 private:
  std::vector<std::string> shards_;
  std::vector<size_t> shard_sizes_;
  std::vector<ShardSample> samples_;
  bool color_;
  size_t shuffle_buffer_;
  bool has_labels_;
  std::string description_;
};

struct SplitOptions {
  std::string root, label_key;
  FetchOptions fetch;  ///< remote shards (http, https, pipe:): where they are kept, the tries
  bool color = true;
  size_t shuffle_buffer = 0;
  bool labels_required = true;  ///< train and val: every sample has a label
};

// One shard's samples, appended to `samples`; returns how many.
size_t index_shard(const std::string& path, uint32_t shard, const SplitOptions& o,
                   std::vector<ShardSample>& samples) {
  const std::vector<TarMember> members = list_tar(path);
  std::ifstream labels(path, std::ios::binary);
  const size_t before = samples.size();
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
          throw DataError(path + ": sample " + key + " has two images (" + image->name + ", " +
                          members[i].name + "); keep one image a sample");
        image = &members[i];
        s.extension = ext;
      } else if (ext == o.label_key || (o.label_key != "cls" && ext == "json")) {
        if (!label || ext == o.label_key) label = &members[i], label_ext = ext;
      }
    }
    if (!image)
      throw DataError(path + ": sample " + key +
                      " has no image (.jpg, .jpeg, .png or .webp); every key of a shard is one "
                      "sample with its image");
    s.offset = image->offset;
    s.size = image->size;
    if (label) {
      std::string bytes(label->size, '\0');
      labels.seekg(static_cast<std::streamoff>(label->offset));
      labels.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!labels) throw DataError(path + ": cannot read the label of sample " + key);
      s.label = parse_label(bytes, label_ext, o.label_key, path + ": sample " + key);
      if (s.label < 0)
        throw DataError(path + ": sample " + key + " has the negative label " +
                        std::to_string(s.label));
    } else if (o.labels_required) {
      throw DataError(path + ": sample " + key + " has no label (." + o.label_key +
                      (o.label_key == "cls" ? "" : " or a .json field '" + o.label_key + "'") +
                      "); a training or validation shard needs one a sample (set "
                      "data.dataset.label_key to where yours are)");
    }
    samples.push_back(std::move(s));
  }
  return samples.size() - before;
}

std::shared_ptr<Dataset> make_split(const std::string& urls, const SplitOptions& o,
                                    const std::string& key) {
  std::vector<std::string> names;
  try {
    names = expand_braces(urls);
  } catch (const ConfigError& error) {
    throw ConfigError(key + ": " + error.what());
  }
  std::vector<std::string> shards;
  size_t remote = 0;
  for (const std::string& name : names) {
    if (is_remote_url(name)) {
      if (o.fetch.cache_dir.empty())
        throw ConfigError(key + ": " + name +
                          " is a remote shard: set data.dataset.cache_dir to a folder that keeps "
                          "the shards read from it (remote shards are read through that cache)");
      shards.push_back(name);
      ++remote;
      continue;
    }
    const fs::path path = fs::path(name).is_absolute() ? fs::path(name) : fs::path(o.root) / name;
    shards.push_back(path.lexically_normal().string());
  }
  if (shards.empty()) throw ConfigError(key + ": names no shard");
  std::vector<std::string> missing;
  for (const auto& shard : shards)
    if (!is_remote_url(shard) && !fs::is_regular_file(shard)) missing.push_back(shard);
  if (!missing.empty())
    throw ConfigError(key + ": " + std::to_string(missing.size()) + " of " +
                      std::to_string(shards.size()) + " shards missing, the first " +
                      missing.front() + "; check data.dataset.root and the pattern");
  // Each remote shard fetched whole into the cache once (front to back), then read as a file.
  for (std::string& shard : shards)
    if (is_remote_url(shard)) shard = cached_shard(shard, o.fetch);
  std::vector<ShardSample> samples;
  std::vector<size_t> sizes;
  for (size_t k = 0; k < shards.size(); ++k)
    sizes.push_back(index_shard(shards[k], static_cast<uint32_t>(k), o, samples));
  const bool labelled = std::all_of(samples.begin(), samples.end(),
                                    [](const ShardSample& s) { return s.label >= 0; });
  if (!labelled && std::any_of(samples.begin(), samples.end(),
                               [](const ShardSample& s) { return s.label >= 0; }))
    throw DataError("data.dataset." + key +
                    ": some samples have a label and some do not (the "
                    "first without: " +
                    std::find_if(samples.begin(), samples.end(),
                                 [](const ShardSample& s) { return s.label < 0; })
                        ->key +
                    ")");
  const std::string description =
      std::to_string(shards.size()) + " shard" + (shards.size() == 1 ? "" : "s") + " " + urls +
      (remote == shards.size() ? "" : " in " + o.root) +
      (remote > 0 ? ", " + std::to_string(remote) + " cached in " + o.fetch.cache_dir : "");
  return std::make_shared<WebDataset>(std::move(shards), std::move(sizes), std::move(samples),
                                      o.color, o.shuffle_buffer, labelled, description);
}

int64_t largest_label(const std::shared_ptr<Dataset>& split) {
  int64_t top = -1;
  if (split)
    for (size_t i = 0; i < split->size(); ++i) top = std::max(top, split->label(i));
  return top;
}

DatasetSplits make_webdataset(const nlohmann::json& params, const DatasetContext& context) {
  SplitOptions o;
  o.root = resolve_path(params.at("root").get<std::string>(), context.config_dir);
  o.label_key = params.at("label_key").get<std::string>();
  o.color = params.at("mode").get<std::string>() == "color";
  o.shuffle_buffer = params.at("shuffle_buffer").get<size_t>();
  if (params.at("cache_dir").is_string())
    o.fetch.cache_dir = resolve_path(params.at("cache_dir").get<std::string>(), context.config_dir);
  o.fetch.retries = params.at("retries").get<int>();
  if (!fs::is_directory(o.root))
    throw DataError("dataset webdataset: '" + o.root +
                    "' is not a folder; set data.dataset.root to the shards' folder");
  DatasetSplits splits;
  splits.train = make_split(params.at("urls").get<std::string>(), o, "urls");
  for (const auto& [key, split] : {std::pair{"val_urls", &splits.val}, {"test_urls", &splits.test}})
    if (params.at(key).is_string()) {
      SplitOptions split_options = o;
      split_options.labels_required = std::string(key) == "val_urls";
      *split = make_split(params.at(key).get<std::string>(), split_options, key);
    }
  // Classes: data.dataset.classes names them (labels index it); else labels 0..largest.
  const int64_t top = std::max(largest_label(splits.train), largest_label(splits.val));
  if (params.at("classes").is_array()) {
    splits.class_names = params.at("classes").get<std::vector<std::string>>();
    splits.num_classes = static_cast<int64_t>(splits.class_names.size());
    if (top >= splits.num_classes)
      throw DataError("dataset webdataset: a sample has label " + std::to_string(top) +
                      " but data.dataset.classes names " + std::to_string(splits.num_classes) +
                      " classes");
  } else {
    splits.num_classes = top + 1;
  }
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
         "remote shards need cache_dir."}}},
      {"cache_dir",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"description",
         "Folder that keeps the remote shards (WebDataset's cache_dir): each is fetched whole "
         "once, under a temporary name renamed when whole, and read from there by every later "
         "epoch and run. Relative to the file that sets it; created when missing."}}},
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
       {{"type", {"array", "null"}},
        {"items", {{"type", "string"}}},
        {"default", nullptr},
        {"description", "Class names, label i = classes[i]; null: classes 0..largest label."}}},
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
