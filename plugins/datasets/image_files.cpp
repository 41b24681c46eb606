#include "image_files.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "array_dataset.hpp"
#include "runner/data/image_file.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

class ImageFilesDataset : public Dataset,
                          public FileBackedDataset,
                          public MultiLabelDataset,
                          public EncodedDataset {
 public:
  ImageFilesDataset(std::vector<std::string> files, std::vector<std::vector<int64_t>> label_sets,
                    bool color, std::string description, bool has_labels)
      : files_(std::move(files)),
        label_sets_(std::move(label_sets)),
        color_(color),
        description_(std::move(description)),
        has_labels_(has_labels) {}
  size_t size() const override { return files_.size(); }
  Sample get(size_t index) const override {
    const std::string& path = files_.at(index);
    Sample s;
    s.image = read_image_file(path, color_);
    s.label = label(index);
    return s;
  }
  std::string encoded(size_t index) const override {
    std::ifstream in(files_.at(index), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) throw DataError(files_.at(index) + ": cannot read the file");
    return bytes;
  }
  Sample decode(size_t index, const std::string& bytes, int reduction) const override {
    const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8U,
                          const_cast<char*>(bytes.data()));
    Sample s;
    s.image = cv::imdecode(encoded, imdecode_flags(color_, reduction));
    if (s.image.empty())
      throw DataError(files_.at(index) + ": cannot decode the image; remove or replace it");
    if (color_) cv::cvtColor(s.image, s.image, cv::COLOR_BGR2RGB);
    s.label = label(index);
    return s;
  }
  bool has_labels() const override { return has_labels_; }
  int64_t label(size_t index) const override {
    const auto& set = label_sets_.at(index);
    return set.empty() ? -1 : set.front();
  }
  std::vector<int64_t> labels_of(size_t index) const override { return label_sets_.at(index); }
  std::string describe() const override { return description_; }
  std::string file(size_t index) const override { return files_.at(index); }

 private:
  std::vector<std::string> files_;
  std::vector<std::vector<int64_t>> label_sets_;
  bool color_;
  std::string description_;
  bool has_labels_;
};

}  // namespace

int imdecode_flags(bool color, int reduction) {
  switch (reduction) {
    case 2:
      return color ? cv::IMREAD_REDUCED_COLOR_2 : cv::IMREAD_REDUCED_GRAYSCALE_2;
    case 4:
      return color ? cv::IMREAD_REDUCED_COLOR_4 : cv::IMREAD_REDUCED_GRAYSCALE_4;
    case 8:
      return color ? cv::IMREAD_REDUCED_COLOR_8 : cv::IMREAD_REDUCED_GRAYSCALE_8;
    default:
      return color ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE;
  }
}

bool is_image_file(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::vector<std::string> known = {".png",  ".jpg", ".jpeg", ".bmp", ".tif", ".tiff",
                                                 ".webp", ".pgm", ".ppm",  ".pbm", ".pnm"};
  return std::find(known.begin(), known.end(), ext) != known.end();
}

nlohmann::json image_files_properties() {
  nlohmann::json properties = {
      {"mode",
       {{"type", "string"},
        {"enum", {"grayscale", "color"}},
        {"default", "color"},
        {"description", "grayscale: 1-channel u8; color: 3-channel u8 in RGB order."}}}};
  properties.update(split_schema_properties(0));
  return properties;
}

std::shared_ptr<Dataset> image_files_dataset(std::vector<std::string> files,
                                             std::vector<int64_t> labels, bool color,
                                             std::string description, bool has_labels) {
  std::vector<std::vector<int64_t>> sets;
  sets.reserve(labels.size());
  for (const int64_t l : labels) sets.push_back(l < 0 ? std::vector<int64_t>{} : std::vector{l});
  return image_files_dataset(std::move(files), std::move(sets), color, std::move(description),
                             has_labels);
}

std::shared_ptr<Dataset> image_files_dataset(std::vector<std::string> files,
                                             std::vector<std::vector<int64_t>> label_sets,
                                             bool color, std::string description, bool has_labels) {
  return std::make_shared<ImageFilesDataset>(std::move(files), std::move(label_sets), color,
                                             std::move(description), has_labels);
}

}  // namespace runner::data
