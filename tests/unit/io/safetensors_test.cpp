#include "io/safetensors.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runner/error.hpp"

namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("runner_io_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Writes a raw safetensors file: the 8-byte length, `header`, then `data_bytes` zero bytes.
std::string write_raw(const std::string& name, const std::string& header, size_t data_bytes,
                      uint64_t declared_length = UINT64_MAX) {
  std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary);
  uint64_t n = declared_length == UINT64_MAX ? header.size() : declared_length;
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
  return path;
}

// The DataError message for reading `path`, or "" if it did not throw DataError.
std::string read_error(const std::string& path) {
  try {
    runner::io::read_safetensors(path);
  } catch (const runner::DataError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripKeepsEveryDtypeShapeValueAndOrder) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"z.f32", torch::randn({2, 3, 4})},
      {"a.f64", torch::randn({5}, torch::kFloat64)},
      {"m.f16", torch::randn({3, 2}).to(torch::kHalf)},
      {"b.bf16", torch::randn({7}).to(torch::kBFloat16)},
      {"i64.scalar", torch::tensor(int64_t{1234567890123})},
      {"i32", torch::randint(-1000, 1000, {4}, torch::kInt32)},
      {"i16", torch::randint(-1000, 1000, {4}, torch::kInt16)},
      {"i8", torch::randint(-100, 100, {3}, torch::kInt8)},
      {"u8", torch::randint(0, 255, {2, 2}, torch::kUInt8)},
      {"bool", torch::rand({5}) > 0.5},
      {"empty", torch::zeros({0, 3})},
      {"transposed", torch::arange(6, torch::kFloat).reshape({2, 3}).t()},
  };
  std::string path = temp_path("roundtrip.safetensors");
  runner::io::write_safetensors(path, tensors, {{"format", "pt"}, {"note", "hi"}});
  runner::io::TensorFile file = runner::io::read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(file.tensors[i].first, tensors[i].first);
    const torch::Tensor& got = file.tensors[i].second;
    EXPECT_EQ(got.scalar_type(), tensors[i].second.scalar_type()) << tensors[i].first;
    EXPECT_EQ(got.sizes(), tensors[i].second.sizes()) << tensors[i].first;
    EXPECT_TRUE(torch::equal(got, tensors[i].second)) << tensors[i].first;
  }
  EXPECT_EQ(file.metadata.at("note"), "hi");
  EXPECT_TRUE(file.find("u8").defined());
  EXPECT_FALSE(file.find("nope").defined());
  // The data section starts 8-byte aligned, as the format recommends.
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  std::remove(path.c_str());
}

TEST(Safetensors, ReadsTimmReferenceFile) {
  const char* shared = std::getenv("RUNNER_SHARED_DIR");
  const std::string path = std::string(shared && *shared ? shared : RUNNER_SHARED_DIR) +
                           "/reference/timm/resnet10t.in1c10.safetensors";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "no " << path << " (it exists beside the project's own checkouts only; "
                 << "tests/unit/timm reads files written by the real safetensors package)";
  auto file = runner::io::read_safetensors(path);
  ASSERT_FALSE(file.tensors.empty());
  EXPECT_EQ(file.tensors.front().first, "conv1.0.weight");
  EXPECT_EQ(file.find("conv1.1.num_batches_tracked").scalar_type(), torch::kInt64);
  EXPECT_EQ(file.find("conv1.1.num_batches_tracked").dim(), 0);
  EXPECT_EQ(file.metadata.at("model"), "resnet10t");
}

TEST(Safetensors, WriteLeavesNoTemporaryAndReplacesOldFile) {
  std::string path = temp_path("replace.safetensors");
  runner::io::write_safetensors(path, {{"x", torch::ones({2})}});
  runner::io::write_safetensors(path, {{"y", torch::zeros({3})}});
  auto file = runner::io::read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].first, "y");
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(entry.path().string().find(path + ".tmp"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Safetensors, WriteRejectsDuplicateNamesAndUnwritableFolders) {
  EXPECT_THROW(runner::io::write_safetensors(temp_path("dup.safetensors"),
                                             {{"x", torch::ones({1})}, {"x", torch::ones({1})}}),
               runner::Error);
  EXPECT_THROW(
      runner::io::write_safetensors("/nonexistent-dir/x.safetensors", {{"x", torch::ones({1})}}),
      runner::Error);
}

struct Malformed {
  const char* name;
  std::string header;
  size_t data_bytes;
  uint64_t declared_length;
  const char* expected;  // a piece of the message
};

TEST(Safetensors, MalformedFilesAreClearDataErrorsNamingTheFile) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<Malformed> cases = {
      {"huge_length", "{}", 0, uint64_t{1} << 62, "header length"},
      {"length_past_end", "{}", 0, 100, "header length"},
      {"not_json", "{nope", 0, UINT64_MAX, "not valid JSON"},
      {"array", "[1,2,3]", 0, UINT64_MAX, "not a JSON object"},
      {"unknown_dtype", R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2,
       UINT64_MAX, "unsupported dtype"},
      {"negative_dim", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, UINT64_MAX,
       "non-negative"},
      {"size_mismatch", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, UINT64_MAX,
       "needs 12 bytes"},
      {"out_of_range", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 8, UINT64_MAX,
       "outside"},
      {"reversed", R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8, UINT64_MAX,
       "outside"},
      {"overlap", "{" + ok_entry + R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
       UINT64_MAX, "overlap"},
      {"numel_overflow",
       R"({"w":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8,
       UINT64_MAX, "needs more bytes"},
      {"missing_key", R"({"w":{"dtype":"F32","shape":[2]}})", 8, UINT64_MAX, "lacks"},
      {"bad_metadata", R"({"__metadata__":{"a":1}})", 0, UINT64_MAX, "__metadata__"},
      {"deep", std::string(100, '[') + std::string(100, ']'), 0, UINT64_MAX, "deep"},
  };
  for (const auto& c : cases) {
    std::string path =
        write_raw(std::string(c.name) + ".safetensors", c.header, c.data_bytes, c.declared_length);
    std::string message = read_error(path);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(message.find(path), std::string::npos) << c.name << ": " << message;
    std::remove(path.c_str());
  }
  std::string short_path = temp_path("short.safetensors");
  std::ofstream(short_path) << "abc";
  EXPECT_NE(read_error(short_path).find("shorter"), std::string::npos);
  std::remove(short_path.c_str());
  EXPECT_NE(read_error(temp_path("missing.safetensors")).find("does not exist"), std::string::npos);
}

}  // namespace
