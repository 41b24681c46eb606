// Predictions as files: Kaggle's submission (ids from the sample submission beside the test
// file, else 1..N) and the probabilities CSV.

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "output/predictions_writer.hpp"
#include "runner/error.hpp"
#include "temp_files.hpp"

namespace runner::output {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const torch::Tensor kLogits = torch::tensor({{0.0f, 3.0f}, {2.0f, 0.0f}, {0.0f, 1.0f}});

TEST(PredictionsWriter, KaggleNumbersTheRowsFromOne) {
  runner::testing::TempDir dir;
  const auto out = dir.path() / "submission.csv";
  EXPECT_EQ(write_predictions(kLogits, "kaggle", "", out), 3u);
  EXPECT_EQ(read(out), "ImageId,Label\n1,1\n2,0\n3,1\n");
}

TEST(PredictionsWriter, KaggleTakesTheIdsOfTheSampleSubmission) {
  runner::testing::TempDir dir;
  const std::string test = dir.write("test.csv", "pixel0\n0\n0\n0\n");
  dir.write("sample_submission.csv", "id,label\nx7,0\nx3,0\nx9,0\n");
  const auto out = dir.path() / "submission.csv";
  write_predictions(kLogits, "kaggle", test, out);
  EXPECT_EQ(read(out), "ImageId,Label\nx7,1\nx3,0\nx9,1\n");
  dir.write("sample_submission.csv", "id,label\nx7,0\n");
  try {
    write_predictions(kLogits, "kaggle", test, out);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("has 1 rows but the test split has 3"), std::string::npos)
        << e.what();
  }
}

TEST(PredictionsWriter, CsvHasEachClassProbability) {
  runner::testing::TempDir dir;
  const auto out = dir.path() / "p.csv";
  write_predictions(kLogits, "csv", "", out);
  const std::string text = read(out);
  EXPECT_EQ(text.substr(0, text.find('\n')), "index,label,prob_0,prob_1");
  EXPECT_NE(text.find("\n1,0,0.880797,0.119203\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace runner::output
