// Runs side by side are named by what differs, briefly, and seeds of one setting are grouped.

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "output/run_naming.hpp"

namespace {

using Config = std::map<std::string, std::string>;
using runner::output::name_runs;

Config run(const std::string& lr, const std::string& seed, const std::string& dir) {
  return {{"name", "sweep"},
          {"optimizer.lr", lr},
          {"seed", seed},
          {"output.run_dir", dir},
          {"train.epochs", "3"}};
}

TEST(RunNaming, NamesRunsByTheSettingsThatDifferWithShortKeys) {
  const auto naming = name_runs({run("0.001", "1", "a"), run("0.003", "2", "b")}, {"a", "b"});
  EXPECT_EQ(naming.differing, (std::vector<std::string>{"optimizer.lr", "seed"}))
      << "output.* never names a run";
  EXPECT_EQ(naming.labels, (std::vector<std::string>{"lr=0.001 seed=1", "lr=0.003 seed=2"}));
  EXPECT_EQ(naming.short_key.at("optimizer.lr"), "lr");
  EXPECT_EQ(naming.shared, (std::vector<std::string>{"name", "train.epochs"}));
  EXPECT_TRUE(naming.groups.empty()) << "no two runs differ only by seed";
}

TEST(RunNaming, KeysThatWouldReadAlikeKeepMoreParts) {
  Config a = {{"optimizer.lr", "1"}, {"lr_find.lr", "1"}, {"x.model.drop", "1"}},
         b = {{"optimizer.lr", "2"}, {"lr_find.lr", "3"}, {"y.model.drop", "4"}};
  const auto naming = name_runs({a, b}, {"a", "b"});
  EXPECT_EQ(naming.short_key.at("optimizer.lr"), "optimizer.lr");
  EXPECT_EQ(naming.short_key.at("lr_find.lr"), "lr_find.lr");
  EXPECT_EQ(naming.short_key.at("x.model.drop"), "x.model.drop");
}

TEST(RunNaming, RunsThatDifferOnlyBySeedFormAGroup) {
  std::vector<Config> configs;
  for (const char* lr : {"0.001", "0.01"})
    for (const char* seed : {"1", "2", "3"}) configs.push_back(run(lr, seed, lr));
  configs.push_back(run("0.1", "1", "z"));
  const auto naming = name_runs(configs, std::vector<std::string>(configs.size(), "d"));
  ASSERT_EQ(naming.groups.size(), configs.size());
  EXPECT_EQ(naming.groups[0], "lr=0.001 (3 seeds)");
  EXPECT_EQ(naming.groups[2], "lr=0.001 (3 seeds)");
  EXPECT_EQ(naming.groups[3], "lr=0.01 (3 seeds)");
  EXPECT_EQ(naming.groups[6], "lr=0.1 (1 seed)");
  EXPECT_EQ(naming.labels[4], "lr=0.01 seed=2") << "each run keeps its own name";
}

TEST(RunNaming, TheSameConfigTwiceIsToldApartByItsFolder) {
  const auto naming = name_runs({run("1", "1", "a"), run("1", "1", "b")}, {"a", "b"});
  EXPECT_EQ(naming.labels, (std::vector<std::string>{"a", "b"}))
      << "nothing differs: the folders name them";
  const auto twice =
      name_runs({run("1", "1", "a"), run("1", "1", "b"), run("2", "1", "c")}, {"a", "b", "c"});
  EXPECT_EQ(twice.labels, (std::vector<std::string>{"lr=1 (a)", "lr=1 (b)", "lr=2"}));
}

TEST(RunNaming, LongValuesAreCutInNames) {
  Config a = {{"data.train_transforms", std::string(60, 'x')}},
         b = {{"data.train_transforms", "y"}};
  const auto naming = name_runs({a, b}, {"a", "b"});
  EXPECT_EQ(naming.labels[0], "train_transforms=" + std::string(21, 'x') + "...");
}

}  // namespace
