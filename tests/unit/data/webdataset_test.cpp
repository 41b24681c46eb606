// The `webdataset` dataset: brace patterns as WebDataset writes them, tar offsets from
// libarchive equal to the bytes GNU tar wrote (pax and GNU long names too), samples grouped by
// key with their .cls or .json label, and the shards a user gets wrong named in one line.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "data/data_test_util.hpp"
#include "datasets/brace_pattern.hpp"
#include "datasets/shard_index.hpp"
#include "datasets/tar_index.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string png(uint8_t value) {
  std::vector<uchar> out;
  cv::imencode(".png", cv::Mat(4, 6, CV_8UC1, cv::Scalar(value)), out);
  return std::string(out.begin(), out.end());
}

// GNU tar of `folder`'s files (sorted, so sample files sit together) into `tar`.
void tar(const std::string& folder, const std::string& tar_path,
         const std::string& format = "gnu") {
  const std::string command =
      "tar --sort=name --format=" + format + " -cf '" + tar_path + "' -C '" + folder + "' .";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(BracePattern, RangesListsAndSeveralPatternsAsWebDatasetWritesThem) {
  EXPECT_EQ(expand_braces("train-{000..003}.tar"),
            (std::vector<std::string>{"train-000.tar", "train-001.tar", "train-002.tar",
                                      "train-003.tar"}));
  EXPECT_EQ(expand_braces("s{8..11}.tar"),
            (std::vector<std::string>{"s8.tar", "s9.tar", "s10.tar", "s11.tar"}))
      << "unpadded bounds, unpadded names";
  EXPECT_EQ(expand_braces("{a,b}-{0..1}.tar"),
            (std::vector<std::string>{"a-0.tar", "a-1.tar", "b-0.tar", "b-1.tar"}));
  EXPECT_EQ(expand_braces("x{a,b{1..2}}"), (std::vector<std::string>{"xa", "xb1", "xb2"}));
  EXPECT_EQ(expand_braces("a.tar::b-{00..01}.tar"),
            (std::vector<std::string>{"a.tar", "b-00.tar", "b-01.tar"}));
  EXPECT_EQ(expand_braces("plain.tar"), (std::vector<std::string>{"plain.tar"}));
  EXPECT_THROW(expand_braces("train-{000..003.tar"), ConfigError);
  EXPECT_THROW(expand_braces("train-{a..c}.tar"), ConfigError);
  EXPECT_THROW(expand_braces("train-}.tar"), ConfigError);
}

TEST(TarIndex, OffsetsAreWhereTheBytesAreForEveryHeaderKind) {
  TempDir dir("tar_index");
  const std::string long_dir(130, 'd');  // past ustar's 100 characters: extra header blocks
  write(dir.file("files/a.png"), png(1));
  write(dir.file("files/a.cls"), "3\n");
  write(dir.file("files/" + long_dir + "/b.png"), png(2));
  write(dir.file("files/empty.txt"), "");
  for (const std::string format : {"gnu", "pax", "ustar"}) {
    if (format == "ustar") fs::remove_all(dir.file("files/" + long_dir));
    const std::string shard = dir.file(format + ".tar");
    tar(dir.file("files"), shard, format);
    const auto members = list_tar(shard);
    ASSERT_EQ(members.size(), format == "ustar" ? 3u : 4u) << format;
    for (const auto& m : members)
      EXPECT_EQ(read_bytes(shard, m.offset, m.size), file_bytes(dir.file("files/" + m.name)))
          << format << ": " << m.name;
  }
}

TEST(TarIndex, TruncatedCompressedAndMissingShardsAreNamed) {
  TempDir dir("tar_bad");
  for (int i = 0; i < 4; ++i)
    write(dir.file("files/" + std::to_string(i) + ".png"), png(i) + std::string(3000, 'x'));
  const std::string shard = dir.file("whole.tar");
  tar(dir.file("files"), shard);
  const std::string bytes = file_bytes(shard);
  write(dir.file("cut.tar"), bytes.substr(0, 5000));
  try {
    list_tar(dir.file("cut.tar"));
    FAIL() << "a truncated shard lists";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.tar"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  ASSERT_EQ(std::system(("gzip -k '" + shard + "'").c_str()), 0);
  try {
    list_tar(shard + ".gz");
    FAIL() << "a gzip shard lists";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("compressed (gzip)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(list_tar(dir.file("nope.tar")), DataError);
  EXPECT_THROW(read_bytes(dir.file("cut.tar"), 4000, 2000), DataError) << "past its end";
}

// Shards of `per_shard` samples each: key NNNN, image NNNN.png (value = sample number), label
// NNNN.cls = number % 10.
std::string write_shards(const TempDir& dir, int shards, int per_shard) {
  for (int k = 0; k < shards; ++k) {
    const std::string folder = dir.file("s" + std::to_string(k));
    for (int i = 0; i < per_shard; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "%04d", k * per_shard + i);
      write(folder + "/" + key + ".png", png(static_cast<uint8_t>(k * per_shard + i)));
      write(folder + "/" + key + ".cls", std::to_string((k * per_shard + i) % 10) + "\n");
    }
    char name[32];
    std::snprintf(name, sizeof name, "train-%02d.tar", k);
    tar(folder, dir.file(name));
  }
  return dir.str();
}

TEST(WebDatasetDataset, SamplesByKeyWithTheirLabelsAndShardLayout) {
  TempDir dir("wds_read");
  const std::string root = write_shards(dir, 3, 4);
  const DatasetSplits s = testing::make_dataset("webdataset", {{"root", root},
                                                               {"urls", "train-{00..02}.tar"},
                                                               {"mode", "grayscale"},
                                                               {"shuffle_buffer", 7}});
  ASSERT_EQ(s.train->size(), 12u);
  EXPECT_EQ(s.num_classes, 10);
  for (size_t i = 0; i < 12; ++i) {
    const Sample sample = s.train->get(i);
    EXPECT_EQ(sample.image.at<uint8_t>(0, 0), i) << "sample " << i << " in archive order";
    EXPECT_EQ(sample.label, static_cast<int64_t>(i % 10));
  }
  const ShardLayout layout = shard_layout(*s.train);
  EXPECT_EQ(layout.sizes, (std::vector<size_t>{4, 4, 4}));
  EXPECT_EQ(layout.shuffle_buffer, 7u);
  EXPECT_EQ(shard_layout(*limit_dataset(s.train, 6)).sizes, (std::vector<size_t>{4, 2}))
      << "data.limit keeps the shards it covers";
}

TEST(WebDatasetDataset, AJsonFieldCanHoldTheLabel) {
  TempDir dir("wds_json");
  write(dir.file("f/x1.jpg"), [] {
    std::vector<uchar> out;
    cv::imencode(".jpg", cv::Mat(8, 8, CV_8UC3, cv::Scalar(0, 0, 255)), out);
    return std::string(out.begin(), out.end());
  }());
  write(dir.file("f/x1.json"), R"({"class_id": 4, "caption": "red"})");
  tar(dir.file("f"), dir.file("one.tar"));
  const DatasetSplits s = testing::make_dataset(
      "webdataset", {{"root", dir.str()}, {"urls", "one.tar"}, {"label_key", "class_id"}});
  ASSERT_EQ(s.train->size(), 1u);
  EXPECT_EQ(s.train->label(0), 4);
  const Sample sample = s.train->get(0);
  EXPECT_GT(sample.image.at<cv::Vec3b>(0, 0)[0], 200) << "RGB order: red first";
}

// The DataError `params` give, or "" when none.
std::string webdataset_error(const nlohmann::json& params) {
  try {
    testing::make_dataset("webdataset", params);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WebDatasetDataset, WhatUsersGetWrongIsOneLineNamingShardAndSample) {
  TempDir dir("wds_bad");
  const std::string root = write_shards(dir, 2, 2);
  EXPECT_NE(webdataset_error({{"root", root}, {"urls", "train-{00..03}.tar"}})
                .find("2 of 4 shards missing, the first " + dir.file("train-02.tar")),
            std::string::npos);
  write(dir.file("nolabel/k1.png"), png(1));
  tar(dir.file("nolabel"), dir.file("nolabel.tar"));
  EXPECT_NE(webdataset_error({{"root", root}, {"urls", "nolabel.tar"}})
                .find("sample k1 has no label (.cls"),
            std::string::npos);
  write(dir.file("noimage/k2.cls"), "1");
  tar(dir.file("noimage"), dir.file("noimage.tar"));
  EXPECT_NE(webdataset_error({{"root", root}, {"urls", "noimage.tar"}})
                .find("noimage.tar: sample k2 has no image"),
            std::string::npos);
  write(dir.file("two/k3.png"), png(1));
  write(dir.file("two/k3.jpg"), png(1));
  write(dir.file("two/k3.cls"), "1");
  tar(dir.file("two"), dir.file("two.tar"));
  EXPECT_NE(
      webdataset_error({{"root", root}, {"urls", "two.tar"}}).find("sample k3 has two images"),
      std::string::npos);
  write(dir.file("bad/k4.png"), "not a png at all");
  write(dir.file("bad/k4.cls"), "1");
  tar(dir.file("bad"), dir.file("bad.tar"));
  const DatasetSplits s =
      testing::make_dataset("webdataset", {{"root", root}, {"urls", "bad.tar"}});
  try {
    s.train->get(0);
    FAIL() << "a corrupt image decodes";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.tar: sample k4: cannot decode its .png image"),
              std::string::npos)
        << e.what();
  }
}

// data.dataset.shard_index: wids' index (a URL or path per shard, found by its last part) and
// a plain map of names to counts; anything else is one line naming the file.
TEST(ShardIndex, WidsIndexAndSizeMapCountEachShardByItsName) {
  const auto wids = parse_shard_index(
      R"({"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": [
           {"url": "https://host/data/train-000000.tar", "nsamples": 250, "filesize": 583680},
           {"url": "train-000001.tar", "nsamples": 249}]})",
      "shards.json");
  ASSERT_EQ(wids.size(), 2u);
  EXPECT_EQ(wids.at("train-000000.tar").samples, 250u);
  EXPECT_EQ(wids.at("train-000000.tar").bytes.value_or(0), 583680u);
  EXPECT_EQ(wids.at("train-000001.tar").samples, 249u);
  EXPECT_FALSE(wids.at("train-000001.tar").bytes);
  const auto sizes = parse_shard_index(R"({"a.tar": 3, "b/c.tar": 4})", "sizes.json");
  EXPECT_EQ(sizes.at("a.tar").samples, 3u);
  EXPECT_EQ(sizes.at("c.tar").samples, 4u);
  for (const std::string bad : {"[1, 2]", "not json", R"({"a.tar": "many"})",
                                R"({"shardlist": [{"url": "a.tar"}]})", R"({"shardlist": 3})"}) {
    try {
      parse_shard_index(bad, "idx.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("idx.json", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace runner::data
